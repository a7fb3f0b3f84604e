//! Switch v3: rules (filter conditions per output) or an output-index expression.

use serde_json::Value;

use super::conditions::{execute_filter_with, js_to_number};
use super::if_node::filter_options;
use super::{NodeContext, NodeOutput};
use crate::data::{with_pair, Item};
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
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
