//! Split In Batches / Loop Over Items as n8n runs it: v1 one output (no
//! output once the items are used up), v2 and v2.1 outputs `[loop, done]`, v3
//! `[done, loop]`. The state is n8n's node context — `items`,
//! `processedItems`, `currentRunIndex`, `maxRunIndex`, `noItemsLeft`, `done`,
//! `sourceData` — which expressions read as `$node["Name"].context`. Once the
//! items are used up, v1/v2 keep answering "done" until Reset is set; v3
//! starts over when it gets items again.

use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{Item, PairedItem};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let v = ctx.version();
    let batch = ctx.param_f64("batchSize", 0, if v >= 3.0 { 1.0 } else { 10.0 })?.max(0.0) as usize;
    let reset = ctx.param("options.reset", 0, Value::Bool(false))? == Value::Bool(true);
    let input: Vec<Item> = ctx.input(0).iter().enumerate().map(|(i, it)| Item { paired_item: Some(PairedItem::new(i, 0)), ..it.clone() }).collect();
    let source = ctx.source.first().cloned().flatten().map(|s| serde_json::to_value(s).unwrap_or(Value::Null)).unwrap_or(Value::Null);
    let mut state = match std::mem::take(ctx.node_state) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let mut returned: Vec<Item>;
    // v3: a finished loop that gets items again starts over (an inner loop
    // fed by an outer one)
    let restart = v >= 3.0 && state.get("done") == Some(&Value::Bool(true)) && !input.is_empty();
    if !state.contains_key("items") || reset || restart {
        let max_run = if batch == 0 { Value::Null } else { json!(input.len().div_ceil(batch)) };
        state.insert("currentRunIndex".into(), json!(0));
        state.insert("maxRunIndex".into(), max_run);
        state.insert("sourceData".into(), source);
        let mut rest = input;
        returned = rest.drain(..batch.min(rest.len())).collect();
        state.insert("items".into(), serde_json::to_value(&rest)?);
        if v >= 2.0 {
            state.insert("processedItems".into(), json!([]));
        }
    } else {
        let run = state.get("currentRunIndex").and_then(Value::as_u64).unwrap_or(0) + 1;
        state.insert("currentRunIndex".into(), json!(run));
        let mut rest: Vec<Item> = serde_json::from_value(state.get("items").cloned().unwrap_or(json!([]))).map_err(|e| EngineError::node(format!("Split In Batches: its saved items are unreadable: {e}")))?;
        returned = rest.drain(..batch.min(rest.len())).collect();
        state.insert("items".into(), serde_json::to_value(&rest)?);
        if v >= 2.0 {
            // what came back from the loop, paired with where it came from
            let processed = state.entry("processedItems").or_insert(json!([]));
            if let Value::Array(list) = processed {
                for (i, it) in input.into_iter().enumerate() {
                    let it = Item { paired_item: Some(PairedItem::from_value(json!({ "item": i, "sourceOverwrite": source }))), ..it };
                    list.push(serde_json::to_value(&it)?);
                }
            }
        }
        // the batch stays paired with the items that started the loop
        let origin = state.get("sourceData").cloned().unwrap_or(Value::Null);
        for it in &mut returned {
            it.paired_item = Some(PairedItem::from_value(with_source(it.paired_item.as_ref(), &origin)));
        }
    }
    // v2.1 (n8n registered it beside v2 at commit 18f7da95) marks `noItemsLeft` only once the done output
    // has fired, so a `reset` bound to it restarts the loop on the next batch
    // rather than on the last item coming back
    let v2_1 = (v - 2.1).abs() < 1e-9;
    if !v2_1 {
        let left = state.get("items").and_then(Value::as_array).is_none_or(Vec::is_empty);
        state.insert("noItemsLeft".into(), json!(left));
    } else {
        state.insert("noItemsLeft".into(), json!(returned.is_empty()));
    }
    if returned.is_empty() {
        if v < 2.0 {
            *ctx.node_state = Value::Object(state);
            // n8n returns nothing: the branch ends here
            return Ok(NodeOutput::Data(vec![]));
        }
        state.insert("done".into(), json!(true));
        let processed: Vec<Item> = serde_json::from_value(state.get("processedItems").cloned().unwrap_or(json!([])))?;
        *ctx.node_state = Value::Object(state);
        return Ok(if v >= 3.0 { NodeOutput::many(vec![processed, vec![]]) } else { NodeOutput::many(vec![vec![], processed]) });
    }
    if v >= 2.0 {
        state.insert("done".into(), json!(false));
    }
    *ctx.node_state = Value::Object(state);
    Ok(match v {
        v if v >= 3.0 => NodeOutput::many(vec![vec![], returned]),
        v if v >= 2.0 => NodeOutput::many(vec![returned, vec![]]),
        _ => NodeOutput::one(returned),
    })
}

/// n8n's `addSourceOverwrite`: the pairing, pointing at `source`.
fn with_source(p: Option<&PairedItem>, source: &Value) -> Value {
    let one = |v: Value| match v {
        Value::Number(n) => json!({ "item": n, "sourceOverwrite": source }),
        Value::Object(mut m) => {
            m.insert("sourceOverwrite".into(), source.clone());
            Value::Object(m)
        }
        _ => json!({ "item": 0, "sourceOverwrite": source }),
    };
    match p.map(PairedItem::to_value) {
        None => json!({ "item": 0, "sourceOverwrite": source }),
        Some(Value::Array(a)) => Value::Array(a.into_iter().map(one).collect()),
        Some(v) => one(v),
    }
}
