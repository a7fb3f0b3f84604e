//! Streamable HTTP in stateless mode: one POST carries one JSON-RPC message
//! (or a batch) and gets one `application/json` answer; no sessions, no SSE
//! stream (GET is 405), so it fits a buffered Lambda request/response.
//!
//! We wrote this layer instead of adapting rmcp's streamable HTTP server:
//! rmcp's server is a long-lived tower service with a session manager and
//! per-session tasks; a Lambda invocation is one request → one response, and
//! the surface we need (initialize, ping, tools/list, tools/call,
//! notifications) is a few dozen lines of JSON-RPC.

use crate::server::{McpServer, RequestCtx};
use http::{HeaderMap, Method};
use protocol::UserId;
use serde_json::{json, Value};

/// Versions we speak, newest first. The first is what `initialize` offers
/// when the client asks for one we do not know.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// What a request without `MCP-Protocol-Version` is taken to speak (the MCP
/// spec: assume 2025-03-26 for backwards compatibility).
pub const DEFAULT_VERSION: &str = "2025-03-26";
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// Largest request body we parse (a workflow in SDK code is far smaller).
pub const MAX_BODY: usize = 2 << 20;

/// A transport answer, independent of the HTTP library around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<Value>,
}

impl Reply {
    fn json(status: u16, body: Value) -> Reply {
        Reply { status, headers: vec![("content-type", "application/json".into())], body: Some(body) }
    }

    fn empty(status: u16) -> Reply {
        Reply { status, headers: Vec::new(), body: None }
    }

    pub fn body_bytes(&self) -> Vec<u8> {
        self.body.as_ref().map(|b| serde_json::to_vec(b).unwrap_or_default()).unwrap_or_default()
    }
}

/// A JSON-RPC error object without an id (transport-level refusals).
pub fn rpc_error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// Checks that need no credentials, in the order a client learns most from:
/// a foreign `Origin` (DNS rebinding) is 403 whatever else is wrong; GET
/// (we offer no server-to-client stream) is 405; HEAD is the auth probe and
/// gets the bearer challenge. `None`: go on and authenticate.
pub fn precheck(method: &Method, headers: &HeaderMap, allowed_origins: &[String]) -> Option<Reply> {
    if let Some(origin) = headers.get(http::header::ORIGIN) {
        let ok = origin
            .to_str()
            .map(|o| allowed_origins.iter().any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(o.trim_end_matches('/'))))
            .unwrap_or(false);
        if !ok {
            return Some(Reply::json(403, rpc_error(Value::Null, INVALID_REQUEST, "Forbidden: this Origin is not allowed to call the MCP server")));
        }
    }
    if method == Method::HEAD {
        return Some(unauthorized());
    }
    if method != Method::POST {
        let mut r = Reply::json(
            405,
            rpc_error(Value::Null, INVALID_REQUEST, "Method not allowed: this MCP server is stateless; send JSON-RPC with POST /mcp"),
        );
        r.headers.push(("allow", "POST".into()));
        return Some(r);
    }
    None
}

/// 401 with the bearer challenge (MCP clients look for `WWW-Authenticate`).
pub fn unauthorized() -> Reply {
    let mut r = Reply::json(401, json!({"error": {"code": "unauthorized", "message": "send `Authorization: Bearer <api key>`"}}));
    r.headers.push(("www-authenticate", "Bearer".into()));
    r
}

/// The protocol version the request speaks, or a 400 naming the ones we do.
pub fn protocol_version(headers: &HeaderMap) -> Result<&'static str, Reply> {
    match headers.get(PROTOCOL_VERSION_HEADER) {
        None => Ok(DEFAULT_VERSION),
        Some(v) => {
            let v = v.to_str().unwrap_or_default().trim();
            SUPPORTED_VERSIONS.iter().find(|s| **s == v).copied().ok_or_else(|| {
                let mut body = rpc_error(
                    Value::Null,
                    INVALID_REQUEST,
                    format!("Bad Request: unsupported MCP-Protocol-Version {v:?}; supported: {}", SUPPORTED_VERSIONS.join(", ")),
                );
                // Clients that probe newer revisions read the list and fall back to `initialize`.
                body["error"]["data"] = json!({"supported": SUPPORTED_VERSIONS, "requested": v});
                Reply::json(400, body)
            })
        }
    }
}

/// An authenticated POST: parses JSON-RPC, dispatches requests, and answers
/// 202 when the body held only notifications or responses.
pub async fn handle_post(server: &McpServer, user: &UserId, headers: &HeaderMap, body: &[u8]) -> Reply {
    if let Err(r) = protocol_version(headers) {
        return r;
    }
    if body.len() > MAX_BODY {
        return Reply::json(413, rpc_error(Value::Null, INVALID_REQUEST, format!("request body exceeds {MAX_BODY} bytes")));
    }
    let parsed: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Reply::json(400, rpc_error(Value::Null, PARSE_ERROR, format!("Parse error: {e}"))),
    };
    let ctx = RequestCtx { user: user.clone(), base_url: base_url(headers) };
    match parsed {
        Value::Array(batch) => {
            if batch.is_empty() {
                return Reply::json(400, rpc_error(Value::Null, INVALID_REQUEST, "empty batch"));
            }
            let mut out = Vec::new();
            for msg in batch {
                if let Some(r) = handle_message(server, &ctx, msg).await {
                    out.push(r);
                }
            }
            if out.is_empty() {
                Reply::empty(202)
            } else {
                Reply::json(200, Value::Array(out))
            }
        }
        msg => match handle_message(server, &ctx, msg).await {
            Some(r) => Reply::json(200, r),
            None => Reply::empty(202),
        },
    }
}

/// One message: `Some(response)` for a request, `None` for a notification
/// or a client's response.
async fn handle_message(server: &McpServer, ctx: &RequestCtx, msg: Value) -> Option<Value> {
    let Value::Object(obj) = msg else {
        return Some(rpc_error(Value::Null, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC object"));
    };
    let id = obj.get("id").cloned();
    let method = obj.get("method").and_then(Value::as_str);
    let Some(method) = method else {
        // A response or error from the client (we never send requests): accepted.
        if obj.contains_key("result") || obj.contains_key("error") {
            return None;
        }
        return Some(rpc_error(id.unwrap_or(Value::Null), INVALID_REQUEST, "Invalid Request: no method"));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return id.map(|id| rpc_error(id, INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\""));
    }
    let Some(id) = id else {
        // Notifications (initialized, cancelled, ...): nothing to answer.
        return None;
    };
    if !(id.is_string() || id.is_number()) {
        return Some(rpc_error(Value::Null, INVALID_REQUEST, "Invalid Request: id must be a string or a number"));
    }
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    Some(match server.dispatch(ctx, method, params).await {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => rpc_error(id, code, message),
    })
}

/// Where links to workflows point: the host the client called.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(http::header::HOST))
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let proto = headers.get("x-forwarded-proto").and_then(|h| h.to_str().ok()).unwrap_or(
        if host.starts_with("127.0.0.1") || host.starts_with("localhost") { "http" } else { "https" },
    );
    format!("{proto}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn origin_method_and_version_checks() {
        let allowed = vec!["https://app.example.com".to_owned()];
        assert_eq!(precheck(&Method::POST, &headers(&[]), &allowed), None);
        assert_eq!(precheck(&Method::POST, &headers(&[("origin", "https://app.example.com")]), &allowed), None);
        assert_eq!(precheck(&Method::POST, &headers(&[("origin", "https://evil.example")]), &allowed).unwrap().status, 403);
        assert_eq!(precheck(&Method::GET, &headers(&[("origin", "https://evil.example")]), &allowed).unwrap().status, 403);
        assert_eq!(precheck(&Method::GET, &headers(&[]), &allowed).unwrap().status, 405);
        let head = precheck(&Method::HEAD, &headers(&[]), &allowed).unwrap();
        assert_eq!(head.status, 401);
        assert!(head.headers.contains(&("www-authenticate", "Bearer".into())));
        assert_eq!(protocol_version(&headers(&[])).unwrap(), DEFAULT_VERSION);
        assert_eq!(protocol_version(&headers(&[("mcp-protocol-version", "2025-06-18")])).unwrap(), "2025-06-18");
        assert_eq!(protocol_version(&headers(&[("mcp-protocol-version", "1999-01-01")])).unwrap_err().status, 400);
    }
}
