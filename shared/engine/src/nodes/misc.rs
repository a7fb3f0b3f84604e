//! Small nodes: triggers, test data, No Op, Stop and Error, Execution Data.

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

/// Execution Data (`save`): each item's `dataToSave.values[]` `{key, value}`
/// into the execution's custom data; the items pass through. v1.1 saves a
/// missing or null value as `""`, v1 refuses it as n8n's core does.
pub fn execution_data(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let op = ctx.param_str("operation", 0, "save")?;
    if op != "save" {
        return Err(EngineError::node(format!("The operation \"{op}\" is not supported")));
    }
    let nullish_as_empty = ctx.version() >= 1.1;
    for i in 0..ctx.input(0).len() {
        let values = ctx.param("dataToSave.values", i, json!([]))?;
        for pair in values.as_array().into_iter().flatten() {
            let key = match pair.get("key") {
                Some(Value::String(k)) => k.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            let value = match pair.get("value") {
                None | Some(Value::Null) if nullish_as_empty => Value::String(String::new()),
                Some(v) => v.clone(),
                None => Value::Null,
            };
            ctx.custom_data.set(&key, &value).map_err(EngineError::node)?;
        }
    }
    Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()]))
}
