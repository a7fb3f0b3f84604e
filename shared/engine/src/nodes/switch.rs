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
    let mut outs: Vec<Vec<Item>> = vec![];
    for (i, item) in input.iter().enumerate() {
        let routed = if mode == "expression" { by_expression(ctx, &mut outs, i) } else { by_rules(ctx, &mut outs, i) };
        match routed {
            Ok(targets) => {
                for o in targets {
                    outs[o].push(with_pair(item, i));
                }
            }
            // n8n puts the error on the first output, without a pairedItem
            Err(e) if ctx.continue_on_fail() && !matches!(e, crate::error::EngineError::Canceled) => {
                if outs.is_empty() {
                    outs.push(vec![]);
                }
                outs[0].push(Item::new(serde_json::json!({ "error": e.to_string() })));
            }
            Err(e) => return Err(e),
        }
    }
    if outs.is_empty() {
        outs.push(vec![]);
    }
    Ok(NodeOutput::many(outs))
}

/// n8n's `checkIndexRange`: `index` must name one of `n` outputs.
fn check_index(n: usize, index: &Value) -> Result<Option<usize>> {
    if index.is_null() {
        // `undefined` passes n8n's checks and routes nowhere
        return Ok(None);
    }
    let o = js_to_number(index);
    if o == n as f64 {
        return Err(crate::error::EngineError::node_with(
            format!("The ouput {} is not allowed. ", super::js_string(index)),
            format!("Output indexes are zero based, if you want to use the extra output use {}", o - 1.0),
        ));
    }
    if o < 0.0 || o > n as f64 {
        return Err(crate::error::EngineError::node_with(
            format!("The ouput {} is not allowed", super::js_string(index)),
            format!("It has to be between 0 and {}", n as i64 - 1),
        ));
    }
    Ok((o.fract() == 0.0).then_some(o as usize))
}

/// Expression mode: `numberOutputs` outputs (made at the first item), the
/// item goes to `output`.
fn by_expression(ctx: &mut NodeContext<'_>, outs: &mut Vec<Vec<Item>>, i: usize) -> Result<Vec<usize>> {
    let n = ctx.param_f64("numberOutputs", i, 4.0)?.max(0.0) as usize;
    if i == 0 {
        *outs = vec![vec![]; n];
    }
    let o = ctx.param("output", i, Value::Null)?;
    let o = check_index(outs.len(), &o)?;
    Ok(o.filter(|o| *o < outs.len()).into_iter().collect())
}

/// Rules mode: one output per rule (+ the fallback output `extra`), the
/// first matching rule's output (or every match's), else the fallback.
fn by_rules(ctx: &mut NodeContext<'_>, outs: &mut Vec<Vec<Item>>, i: usize) -> Result<Vec<usize>> {
    let rules = ctx.raw("rules.values").and_then(|v| v.as_array()).cloned().unwrap_or_default();
    if rules.is_empty() {
        return Ok(vec![]);
    }
    let all_matching = ctx.param_bool("options.allMatchingOutputs", i, false)?;
    let fallback = ctx.param("options.fallbackOutput", i, Value::Null)?;
    let extra = fallback.as_str() == Some("extra");
    if i == 0 {
        *outs = vec![vec![]; rules.len() + usize::from(extra)];
    }
    let mut opts = filter_options(ctx, "rules.values.0.conditions");
    let mut targets = vec![];
    for (r, rule) in rules.iter().enumerate() {
        let cond = rule.get("conditions").cloned().unwrap_or(Value::Null);
        if let Some(s) = cond.pointer("/options/caseSensitive").and_then(|v| v.as_bool()) {
            opts.case_sensitive = s && ctx.raw("options.ignoreCase").and_then(|v| v.as_bool()) != Some(true);
        }
        if execute_filter_with(&cond, &opts, i, &mut |v| ctx.resolve(v, i))? {
            check_index(outs.len(), rule.get("output").unwrap_or(&Value::Null))?;
            targets.push(r);
            if !all_matching {
                return Ok(targets);
            }
        }
    }
    if targets.is_empty() && !fallback.is_null() && fallback.as_str() != Some("none") {
        if extra {
            return Ok(vec![outs.len() - 1]);
        }
        if let Some(f) = check_index(outs.len(), &fallback)? {
            if f < outs.len() {
                targets.push(f);
            }
        }
    }
    Ok(targets)
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
