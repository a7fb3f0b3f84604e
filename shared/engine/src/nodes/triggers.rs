//! Webhook, Form, Schedule and Error Triggers: they emit what the host
//! handed the execution (the request, the submission, the tick, the
//! failure), on the output the host chose (a Webhook listening to several
//! methods has one output per method). Run by hand, one empty item.

use serde_json::{json, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{Item, Items};
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let outputs = match ctx.node.parameters.get("httpMethod") {
        Some(Value::Array(methods)) if ctx.node.node_type == crate::webhook::WEBHOOK_TYPE => methods.len().max(1),
        _ => 1,
    };
    let given = ctx.inputs.iter().position(|i| i.as_ref().is_some_and(|items| !items.is_empty()));
    let mut outs: Vec<Items> = (0..outputs.max(given.map_or(0, |g| g + 1))).map(|_| Items::default()).collect();
    match given {
        Some(k) => outs[k] = ctx.input_arc(k).unwrap_or_default(),
        None => outs[0] = std::sync::Arc::new(vec![Item::new(json!({}))]),
    }
    Ok(NodeOutput::Data(outs))
}
