//! Small nodes: triggers, test data, No Op, Stop and Error.

use serde_json::{json, Value};

use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

/// Triggers emit what the host handed to the execution (default `[{json:{}}]`).
pub fn trigger(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    match ctx.input_arc(0) {
        Some(items) if !items.is_empty() => Ok(NodeOutput::Data(vec![items.clone()])),
        _ => Ok(NodeOutput::one(vec![Item::new(json!({}))])),
    }
}

/// Test-only node: its `data` parameter as items.
pub fn test_data(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let data = ctx.param("data", 0, Value::Array(vec![]))?;
    let data = match data {
        Value::String(s) => serde_json::from_str(&s).map_err(|e| EngineError::node(format!("invalid test data: {e}")))?,
        other => other,
    };
    let items = match data {
        Value::Array(a) => a.into_iter().map(|j| Item::new(j)).collect(),
        other => vec![Item::new(other)],
    };
    Ok(NodeOutput::one(items))
}

/// Passes its input through without copying it.
pub fn no_op(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()]))
}

pub fn stop_and_error(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.param_str("errorType", 0, "errorMessage")? == "errorObject" {
        let obj = ctx.param("errorObject", 0, json!({}))?;
        let obj = match obj {
            Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
            o => o,
        };
        let msg = obj
            .get("message")
            .or_else(|| obj.get("description"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| obj.to_string());
        return Err(EngineError::Node { message: msg, description: obj.get("description").and_then(|d| d.as_str()).map(str::to_string), http_code: None });
    }
    Err(EngineError::node(ctx.param_str("errorMessage", 0, "")?))
}
