//! Small nodes: triggers, test data, No Op, Stop and Error, Read Binary Files.

use base64::Engine as _;
use serde_json::{json, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item};
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

fn mime_for(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "json" => "application/json",
        "txt" => "text/plain",
        "html" | "htm" => "text/html",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "pdf" => "application/pdf",
        "csv" => "text/csv",
        _ => "application/octet-stream",
    }
}

/// n8n binary data entry for raw bytes.
pub fn binary_entry(path: &str, bytes: &[u8]) -> Value {
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let ext = file_name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    json!({
        "data": base64::engine::general_purpose::STANDARD.encode(bytes),
        "mimeType": mime_for(path),
        "fileName": file_name,
        "fileExtension": ext,
        "directory": path.rsplit_once('/').map(|(d, _)| d).unwrap_or(""),
        "fileSize": format!("{} B", bytes.len()),
    })
}

/// Read Binary Files / Read/Write Files from Disk (read): through the host's file provider.
pub fn read_binary_files(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let files = ctx.env.host.files.clone().ok_or_else(|| EngineError::Host("no file provider configured".into()))?;
    let n = ctx.input(0).len().max(1);
    let mut out = vec![];
    for i in 0..n {
        let selector = ctx.param_str("fileSelector", i, "")?;
        let prop = ctx
            .param_opt("dataPropertyName", i)?
            .or(ctx.param_opt("options.dataPropertyName", i)?)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "data".into());
        let found = files.read(&selector).map_err(EngineError::Host)?;
        for (path, bytes) in found {
            let mut it = item_from(json!({}), i);
            it.binary = Some(json!({ prop.clone(): binary_entry(&path, &bytes) }).into());
            out.push(it);
        }
    }
    Ok(NodeOutput::one(out))
}
