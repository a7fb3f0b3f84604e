//! Respond to Webhook (every `respondWith`): records the HTTP response the
//! host sends to the webhook's caller, and passes its input on.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::error::{EngineError, Result};
use crate::webhook::{body_of, header_entries, sign_jwt, HttpResponse, ResponseBody, FORM_TRIGGER_TYPE, WEBHOOK_TYPE};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    match respond(ctx, &input) {
        Ok(resp) => {
            ctx.webhook_response = Some(serde_json::to_value(resp)?);
            Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()]))
        }
        Err(e) if ctx.continue_on_fail() => {
            let mut out = Vec::new();
            let item = crate::data::item_from(json!({"error": e.to_string()}), 0);
            out.push(item);
            Ok(NodeOutput::one(out))
        }
        Err(e) => Err(e),
    }
}

fn respond(ctx: &mut NodeContext<'_>, input: &[crate::data::Item]) -> Result<HttpResponse> {
    if ctx.version() >= 1.1 {
        let has_webhook = ctx
            .graph
            .ancestors(&ctx.node.name)
            .iter()
            .filter_map(|n| ctx.graph.node(n))
            .any(|n| n.node_type == WEBHOOK_TYPE || n.node_type == FORM_TRIGGER_TYPE);
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
    Ok(HttpResponse { status, headers, body })
}
