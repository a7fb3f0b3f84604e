//! Switch: v3 rules (filter conditions per output) or an output-index
//! expression; v1 and v2 (`legacy`): one typed `value1` compared with each
//! routing rule's `value2` (If v1's comparisons), the first matching rule
//! wins, `fallbackOutput` (-1 = none); v1 has four fixed outputs and routes
//! to the rule's `output`, v2 one output per rule (`outputsAmount` in
//! expression mode).

use serde_json::Value;

use super::conditions::{execute_filter_with, js_to_number};
use super::if_node::filter_options;
use super::{NodeContext, NodeOutput};
use crate::data::{with_pair, Item};
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 3.0 {
        return legacy(ctx);
    }
    let input = ctx.input(0);
    let mode = ctx.param_str("mode", 0, "rules")?;
    if mode == "expression" {
        let n = ctx.param_f64("numberOutputs", 0, 4.0)? as usize;
        let mut outs: Vec<Vec<Item>> = vec![vec![]; n];
        for (i, item) in input.iter().enumerate() {
            let o = js_to_number(&ctx.param("output", i, Value::Null)?);
            let idx = o as usize;
            if o < 0.0 || idx >= n {
                return Err(ctx.fail(format!("The output {o} is not allowed. It has to be between 0 and {}!", n.saturating_sub(1))));
            }
            outs[idx].push(with_pair(item, i));
        }
        return Ok(NodeOutput::many(outs));
    }
    let rules = ctx.raw("rules.values").and_then(|v| v.as_array()).cloned().unwrap_or_default();
    let all_matching = ctx.raw("options.allMatchingOutputs").and_then(|v| v.as_bool()).unwrap_or(false);
    let fallback = ctx.raw("options.fallbackOutput").cloned().unwrap_or(Value::String("none".into()));
    let extra = fallback.as_str() == Some("extra");
    let n = rules.len() + usize::from(extra);
    let mut outs: Vec<Vec<Item>> = vec![vec![]; n.max(1)];
    let mut opts = filter_options(ctx, "rules.values.0.conditions");
    for (i, item) in input.iter().enumerate() {
        let mut matched = false;
        for (r, rule) in rules.iter().enumerate() {
            let cond = rule.get("conditions").cloned().unwrap_or(Value::Null);
            if let Some(s) = cond.pointer("/options/caseSensitive").and_then(|v| v.as_bool()) {
                opts.case_sensitive = s && ctx.raw("options.ignoreCase").and_then(|v| v.as_bool()) != Some(true);
            }
            if execute_filter_with(&cond, &opts, i, &mut |v| ctx.resolve(v, i))? {
                outs[r].push(with_pair(item, i));
                matched = true;
                if !all_matching {
                    break;
                }
            }
        }
        if !matched {
            if extra {
                outs[n - 1].push(with_pair(item, i));
            } else if let Some(f) = fallback.as_u64().or_else(|| fallback.as_str().and_then(|s| s.parse().ok())) {
                if let Some(o) = outs.get_mut(f as usize) {
                    o.push(with_pair(item, i));
                }
            }
        }
    }
    Ok(NodeOutput::many(outs))
}

/// Switch v1 / v2 as n8n's SwitchV1 / SwitchV2 run.
fn legacy(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    use super::if_node::{compare_v1, v1_datetime};
    let v2 = ctx.version() >= 2.0;
    let input = ctx.input(0);
    let mut outs: Vec<Vec<Item>> = if v2 { vec![] } else { vec![vec![]; 4] };
    let range = |outs: &Vec<Vec<Item>>, o: &Value| -> std::result::Result<Option<usize>, String> {
        match o {
            // n8n's range check lets a missing index through (`undefined < 0` is false)
            Value::Null => Ok(None),
            _ => {
                let n = js_to_number(o);
                if n < 0.0 || n >= outs.len() as f64 || n.is_nan() {
                    Err(format!("The ouput {} is not allowed. It has to be between 0 and {}!", super::js_string(o), outs.len() as i64 - 1))
                } else {
                    Ok(Some(n as usize))
                }
            }
        }
    };
    for (i, item) in input.iter().enumerate() {
        let routed: Result<Option<usize>> = (|| {
            let mode = ctx.param_str("mode", i, "rules")?;
            let rules = ctx.param("rules.rules", i, Value::Array(vec![]))?;
            let rules = rules.as_array().cloned().unwrap_or_default();
            if mode == "expression" {
                if v2 && i == 0 {
                    let n = ctx.param_f64("outputsAmount", i, 4.0)?.max(0.0) as usize;
                    outs = vec![vec![]; n];
                }
                let o = ctx.param("output", i, Value::from(0))?;
                return range(&outs, &o).map_err(|e| ctx.fail(e));
            }
            if v2 && i == 0 {
                outs = vec![vec![]; rules.len()];
            }
            let data_type = ctx.param_str("dataType", 0, "number")?;
            let default = match data_type.as_str() {
                "boolean" => Value::Bool(false),
                "number" => Value::from(0),
                _ => Value::String(String::new()),
            };
            let mut value1 = ctx.param("value1", i, default.clone())?;
            if data_type == "dateTime" {
                value1 = v1_datetime(&value1)?;
            }
            for (r, rule) in rules.iter().enumerate() {
                let op = rule.get("operation").and_then(Value::as_str).unwrap_or(match data_type.as_str() {
                    "dateTime" => "after",
                    "number" => "smaller",
                    _ => "equal",
                });
                let value2 = match data_type.as_str() {
                    "dateTime" => v1_datetime(rule.get("value2").unwrap_or(&Value::from(0)))?,
                    _ => rule.get("value2").cloned().unwrap_or_else(|| default.clone()),
                };
                // value1 is already a timestamp: compare it as a number
                let ty = if data_type == "dateTime" { "number" } else { data_type.as_str() };
                if compare_v1(ty, op, &value1, &value2)? {
                    let target = if v2 { Value::from(r) } else { rule.get("output").cloned().unwrap_or(Value::from(0)) };
                    range(&outs, &target).map_err(|e| ctx.fail(e))?;
                    return Ok(Some(if v2 { r } else { js_to_number(&target) as usize }));
                }
            }
            let fallback = ctx.param("fallbackOutput", i, Value::from(-1))?;
            if js_to_number(&fallback) == -1.0 {
                return Ok(None);
            }
            range(&outs, &fallback).map_err(|e| ctx.fail(e))
        })();
        match routed {
            Ok(Some(o)) => outs[o].push(with_pair(item, i)),
            Ok(None) => {}
            Err(e) if ctx.continue_on_fail() => {
                if outs.is_empty() {
                    outs.push(vec![]);
                }
                outs[0].push(Item::new(serde_json::json!({ "error": e.to_string() })));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::many(outs))
}
