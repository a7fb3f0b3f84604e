//! Respond to Webhook (every `respondWith`): records the HTTP response the
//! host sends to the webhook's caller, and passes its input on. 1.3 adds a
//! second output with the response sent (`{response: {body, headers,
//! statusCode}}`); from 1.4 only with `enableResponseOutput`. From 1.5 a run
//! whose caller waits for a stream gets the answer as chunks instead
//! (`options.enableStreaming`, on by default).

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{Item, Json, PairedItem};
use crate::error::{EngineError, Result};
use crate::stream::{ChunkKind, ChunkMetadata, StreamChunk};
use crate::webhook::{body_of, header_entries, sign_jwt, HttpResponse, ResponseBody, FORM_TRIGGER_TYPE, WEBHOOK_TYPE};

/// The parents n8n accepts as the request being answered (1.1+).
const ANSWERING_TYPES: [&str; 4] = [WEBHOOK_TYPE, FORM_TRIGGER_TYPE, crate::chat::CHAT_TRIGGER_TYPE, "n8n-nodes-base.wait"];

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let (resp, with) = match respond(ctx, &input) {
        Ok(r) => r,
        Err(e) if ctx.continue_on_fail() => {
            let item = crate::data::item_from(json!({"error": e.to_string()}), 0);
            return Ok(NodeOutput::one(vec![item]));
        }
        Err(e) => return Err(e),
    };
    let version = ctx.version();
    // n8n: only `false` itself turns streaming off
    let streaming_off = matches!(ctx.param_opt("options.enableStreaming", 0)?, Some(Value::Bool(false)));
    let streaming = version >= 1.5 && ctx.env.stream.is_some() && !streaming_off;
    send_chunks(ctx, &with, &input, &resp, streaming);
    // a streamed answer is the chunks; only a file still goes out whole
    if !streaming || with == "binary" {
        ctx.webhook_response = Some(serde_json::to_value(&resp)?);
    }
    let passed = ctx.input_arc(0).unwrap_or_default();
    if !has_response_output(ctx.node) {
        return Ok(NodeOutput::Data(vec![passed]));
    }
    // n8n pairs an item without `pairedItem` only when one item came in
    let paired = (input.len() == 1).then_some(PairedItem::Index(0));
    let item = Item { json: Json::new(json!({ "response": response_json(&resp) })), binary: None, paired_item: paired };
    Ok(NodeOutput::Data(vec![passed, Arc::new(vec![item])]))
}

/// Whether the node has n8n's second output, the response sent: always on
/// 1.3, with `enableResponseOutput` from 1.4. Read as set, not evaluated:
/// the output count must not depend on the item (n8n's is a node setting).
pub(crate) fn has_response_output(node: &crate::workflow::Node) -> bool {
    response_output(node.type_version, &node.parameters)
}

/// [`has_response_output`] from a node's version and parameters (workflow
/// validation reads them before any node is built).
pub fn response_output(version: f64, parameters: &Value) -> bool {
    version == 1.3 || (version >= 1.4 && parameters.get("enableResponseOutput").and_then(Value::as_bool) == Some(true))
}

/// The response as n8n's node returns it on its second output: the body
/// as sent (absent when there is none; a file as a serialized Node.js
/// `Buffer`, as n8n's run data holds one), the headers, the status.
fn response_json(resp: &HttpResponse) -> Value {
    let mut out = Map::new();
    let binary = matches!(resp.body, ResponseBody::Binary { .. });
    match &resp.body {
        ResponseBody::Empty => {}
        ResponseBody::Json { value } => {
            out.insert("body".into(), value.clone());
        }
        ResponseBody::Text { text } => {
            out.insert("body".into(), Value::String(text.clone()));
        }
        ResponseBody::Binary { base64 } => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(base64).unwrap_or_default();
            out.insert("body".into(), json!({ "type": "Buffer", "data": bytes }));
        }
    }
    let mut headers = Map::new();
    for (name, value) in &resp.headers {
        // n8n sets a file's length as a number
        let v = match value.parse::<u64>() {
            Ok(n) if binary && name == "content-length" => json!(n),
            _ => Value::String(value.clone()),
        };
        headers.insert(name.clone(), v);
    }
    out.insert("headers".into(), Value::Object(headers));
    out.insert("statusCode".into(), json!(resp.status));
    Value::Object(out)
}

/// n8n's `sendChunk` calls. All incoming items go out as chunks whenever
/// the caller waits for a stream, whatever the version or option (n8n sends
/// them unconditionally; they reach only a streaming caller); the other
/// JSON and text answers only when `streaming`.
fn send_chunks(ctx: &NodeContext<'_>, with: &str, input: &[Item], resp: &HttpResponse, streaming: bool) {
    let Some(hook) = ctx.env.stream.as_ref() else { return };
    let send = |kind: ChunkKind, item_index: usize, content: Option<String>| {
        let metadata = ChunkMetadata {
            node_id: ctx.node.id.clone(),
            node_name: ctx.node.name.clone(),
            item_index,
            run_index: ctx.run_index,
            timestamp: Some(crate::data::now_ms()),
        };
        hook.send(StreamChunk { kind, content, metadata });
    };
    // a string goes as it is, anything else as JSON text
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => super::lodash::json_stringify(other),
    };
    let content = match with {
        "allIncomingItems" => {
            for (i, item) in input.iter().enumerate() {
                send(ChunkKind::Begin, i, None);
                send(ChunkKind::Item, i, Some(text(&item.json)));
                send(ChunkKind::End, i, None);
            }
            return;
        }
        _ if !streaming => return,
        // the item itself, without `responseKey`
        "firstIncomingItem" | "firstIncomingJson" => Some(input.first().map(|i| text(&i.json)).unwrap_or_else(|| "{}".into())),
        "json" | "jwt" | "text" => match &resp.body {
            ResponseBody::Json { value } => Some(text(value)),
            ResponseBody::Text { text } => Some(text.clone()),
            _ => None,
        },
        _ => return,
    };
    send(ChunkKind::Begin, 0, None);
    send(ChunkKind::Item, 0, content);
    send(ChunkKind::End, 0, None);
}

/// The answer and the `respondWith` it was built for.
fn respond(ctx: &mut NodeContext<'_>, input: &[Item]) -> Result<(HttpResponse, String)> {
    if ctx.version() >= 1.1 {
        let has_webhook = ctx
            .graph
            .ancestors(&ctx.node.name)
            .iter()
            .filter_map(|n| ctx.graph.node(n))
            .any(|n| ANSWERING_TYPES.contains(&n.node_type.as_str()));
        if !has_webhook {
            return Err(EngineError::node_with(
                "No Webhook node found in the workflow",
                "Insert a Webhook node to your workflow and set the “Respond” parameter to “Using Respond to Webhook Node” ",
            ));
        }
    }
    // Version 1 named the first-item option `firstIncomingJson`.
    let default = if ctx.version() >= 1.1 { "firstIncomingItem" } else { "firstIncomingJson" };
    let with = ctx.param_str("respondWith", 0, default)?;
    let mut headers: Vec<(String, String)> = header_entries(ctx.param_opt("options.responseHeaders", 0)?.as_ref())
        .into_iter()
        .map(|(n, v)| (n.to_ascii_lowercase(), v))
        .collect();
    let code_opt = match ctx.param_opt("options.responseCode", 0)? {
        Some(Value::Number(n)) => n.as_f64().map(|f| f as u16),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok().map(|f| f as u16),
        _ => None,
    };
    let mut status = code_opt.filter(|c| *c > 0).unwrap_or(200);
    let response_key = ctx.param_str("options.responseKey", 0, "")?;
    let keyed = |v: Value| {
        if response_key.is_empty() {
            v
        } else {
            let mut o = Value::Object(Map::new());
            super::set_path(&mut o, &response_key, v);
            o
        }
    };
    let body = match with.as_str() {
        "allIncomingItems" => body_of(keyed(Value::Array(input.iter().map(|i| Value::clone(&i.json)).collect()))),
        "firstIncomingItem" | "firstIncomingJson" => {
            let first = input.first().map(|i| Value::clone(&i.json)).unwrap_or_else(|| json!({}));
            body_of(keyed(first))
        }
        "json" => match ctx.param("responseBody", 0, Value::Null)? {
            Value::String(s) if s.trim().is_empty() => ResponseBody::Empty,
            Value::String(s) => ResponseBody::Json {
                value: serde_json::from_str(&s).map_err(|_| {
                    EngineError::node_with(
                        "Invalid JSON in 'Response Body' field",
                        "Check that the syntax of the JSON in the 'Response Body' parameter is valid",
                    )
                })?,
            },
            Value::Null => ResponseBody::Empty,
            other => ResponseBody::Json { value: other },
        },
        "text" => ResponseBody::Text { text: ctx.param_str("responseBody", 0, "")? },
        "jwt" => {
            let reference = ctx
                .node
                .credentials
                .as_ref()
                .and_then(|c| c.get("jwtAuth"))
                .cloned()
                .ok_or_else(|| EngineError::node("Error signing JWT token: no jwtAuth credential is selected"))?;
            let provider = ctx.env.host.credentials.clone().ok_or_else(|| EngineError::Host("no credentials provider".into()))?;
            let cred = provider.get("jwtAuth", &reference).map_err(EngineError::Host)?;
            let payload = match ctx.param("payload", 0, json!({}))? {
                Value::String(s) => serde_json::from_str(&s).map_err(|_| EngineError::node("Error signing JWT token: the payload is not JSON"))?,
                v => v,
            };
            let token = sign_jwt(&cred, &payload).map_err(|e| EngineError::node(format!("Error signing JWT token: {e}")))?;
            ResponseBody::Json { value: json!({ "token": token }) }
        }
        "binary" => {
            let item = input.first().ok_or_else(|| EngineError::node("No binary data exists on the first item!"))?;
            let binary = item.binary.as_ref().ok_or_else(|| EngineError::node("No binary data exists on the first item!"))?;
            let name = if ctx.param_str("responseDataSource", 0, "automatically")? == "set" {
                ctx.param_str("inputFieldName", 0, "data")?
            } else {
                binary
                    .as_object()
                    .and_then(|o| o.keys().next().cloned())
                    .ok_or_else(|| EngineError::node("No binary data exists on the first item!"))?
            };
            let entry = binary
                .get(name.as_str())
                .ok_or_else(|| EngineError::node(format!("The item has no binary field '{name}'")))?;
            let data = entry.get("data").and_then(Value::as_str).unwrap_or_default().to_owned();
            let len = base64::engine::general_purpose::STANDARD.decode(&data).map(|b| b.len()).unwrap_or(0);
            headers.retain(|(n, _)| n != "content-length");
            headers.push(("content-length".into(), len.to_string()));
            if !headers.iter().any(|(n, _)| n == "content-type") {
                let mime = entry.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream");
                headers.push(("content-type".into(), mime.to_owned()));
            }
            ResponseBody::Binary { base64: data }
        }
        "redirect" => {
            let url = ctx.param_str("redirectURL", 0, "")?;
            headers.retain(|(n, _)| n != "location");
            headers.push(("location".into(), url));
            status = code_opt.unwrap_or(307);
            ResponseBody::Empty
        }
        "noData" => ResponseBody::Empty,
        other => return Err(EngineError::node(format!("The Response Data option \"{other}\" is not supported!"))),
    };
    Ok((HttpResponse { status, headers, body }, with))
}
