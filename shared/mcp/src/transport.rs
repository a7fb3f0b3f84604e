//! Streamable HTTP in stateless mode: one POST carries one JSON-RPC message
//! (or a batch) and gets one `application/json` answer; no sessions, no SSE
//! stream (GET is 405), so it fits a buffered Lambda request/response.
//!
//! We wrote this layer instead of adapting rmcp's streamable HTTP server:
//! rmcp's server is a long-lived tower service with a session manager and
//! per-session tasks; a Lambda invocation is one request → one response, and
//! the surface we need (initialize, ping, tools/list, tools/call,
//! notifications) is a few dozen lines of JSON-RPC.

use crate::scopes::{Scope, Scopes};
use crate::server::{McpServer, RequestCtx};
use http::{HeaderMap, Method};
use protocol::UserId;
use serde_json::{json, Value};

/// Who an authenticated request comes from and what it may do: an API key
/// may do everything, an OAuth token what its scopes grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub user: UserId,
    pub scopes: Scopes,
}

impl Caller {
    /// An API key's caller: every tool.
    pub fn api_key(user: UserId) -> Caller {
        Caller { user, scopes: Scopes::all() }
    }
}

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
/// A tool beyond the token's scopes (answered as HTTP 403 with an
/// `insufficient_scope` challenge when it is the only message).
pub const INSUFFICIENT_SCOPE: i64 = -32003;

/// Where this server's protected resource metadata (RFC 9728) is, for the
/// `resource_metadata` parameter of its challenges.
pub fn resource_metadata_url(origin: &str) -> String {
    format!("{origin}/.well-known/oauth-protected-resource/mcp")
}

/// The resource (RFC 8707) tokens for this server are bound to.
pub fn resource_url(origin: &str) -> String {
    format!("{origin}/mcp")
}

/// Checks that need no credentials, in the order a client learns most from:
/// a foreign `Origin` (DNS rebinding) is 403 whatever else is wrong; GET
/// (we offer no server-to-client stream) is 405; HEAD is the auth probe and
/// gets the bearer challenge. `None`: go on and authenticate. `origin` is
/// where clients reach this server (for the challenge's metadata URL).
pub fn precheck(method: &Method, headers: &HeaderMap, allowed_origins: &[String], origin: &str) -> Option<Reply> {
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
        return Some(unauthorized(origin, None));
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

/// 401 with the bearer challenge: MCP clients find the authorization
/// server from `resource_metadata` (RFC 9728 §5.1). `invalid`: why a
/// presented token was refused (`error="invalid_token"`, RFC 6750 §3).
pub fn unauthorized(origin: &str, invalid: Option<&str>) -> Reply {
    let message = invalid.unwrap_or("send `Authorization: Bearer <token>`: an OAuth access token for this server, or an API key");
    let mut r = Reply::json(401, json!({"error": {"code": "unauthorized", "message": message}}));
    let mut challenge = format!(
        "Bearer resource_metadata=\"{}\", scope=\"{}\"",
        resource_metadata_url(origin),
        Scopes::all()
    );
    if let Some(why) = invalid {
        challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{}\"", quoted(why)));
    }
    r.headers.push(("www-authenticate", challenge));
    r
}

/// 403 for a call beyond the token's scopes, with the challenge a client
/// steps up from (MCP authorization, "scope challenge"): the scopes it
/// holds plus the one it lacks.
fn insufficient_scope(origin: &str, granted: Scopes, needed: Scope, body: Value) -> Reply {
    let mut wanted = granted;
    wanted.insert(needed);
    let mut r = Reply::json(403, body);
    r.headers.push((
        "www-authenticate",
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"{wanted}\", resource_metadata=\"{}\", error_description=\"this call needs the {} scope\"",
            resource_metadata_url(origin),
            needed.as_str()
        ),
    ));
    r
}

/// A value safe inside a quoted-string of a challenge.
fn quoted(s: &str) -> String {
    s.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
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
/// 202 when the body held only notifications or responses. `origin`: where
/// clients reach this server (workflow links, challenges).
pub async fn handle_post(server: &McpServer, caller: &Caller, origin: &str, headers: &HeaderMap, body: &[u8]) -> Reply {
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
    let ctx = RequestCtx { user: caller.user.clone(), scopes: caller.scopes, base_url: origin.to_owned() };
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
            Some(r) => match needed_scope(&r) {
                Some(needed) => insufficient_scope(origin, caller.scopes, needed, r),
                None => Reply::json(200, r),
            },
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
        Err((code, message, data)) => {
            let mut e = rpc_error(id, code, message);
            if !data.is_null() {
                e["error"]["data"] = data;
            }
            e
        }
    })
}

/// The scope a JSON-RPC error says the call lacked.
fn needed_scope(response: &Value) -> Option<Scope> {
    let error = response.get("error")?;
    if error.get("code")?.as_i64()? != INSUFFICIENT_SCOPE {
        return None;
    }
    Scope::parse(error.pointer("/data/requiredScope")?.as_str()?)
}

/// The origin the client called (`scheme://host`), from `Host` (which API
/// Gateway routes by, so a client cannot name another instance there) and
/// `X-Forwarded-Proto`: where links to workflows point, and, unless the
/// deployment pins `INSTANCE_AI_PUBLIC_URL`, the resource tokens are bound
/// to. `X-Forwarded-Host` is not read: any client can send it, and a token
/// of another instance on the same store would pass the audience check.
pub fn request_origin(headers: &HeaderMap) -> String {
    let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
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
        let o = "https://mcp.example.com";
        assert_eq!(precheck(&Method::POST, &headers(&[]), &allowed, o), None);
        assert_eq!(precheck(&Method::POST, &headers(&[("origin", "https://app.example.com")]), &allowed, o), None);
        assert_eq!(precheck(&Method::POST, &headers(&[("origin", "https://evil.example")]), &allowed, o).unwrap().status, 403);
        assert_eq!(precheck(&Method::GET, &headers(&[("origin", "https://evil.example")]), &allowed, o).unwrap().status, 403);
        assert_eq!(precheck(&Method::GET, &headers(&[]), &allowed, o).unwrap().status, 405);
        let head = precheck(&Method::HEAD, &headers(&[]), &allowed, o).unwrap();
        assert_eq!(head.status, 401);
        assert!(head.headers.contains(&(
            "www-authenticate",
            "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:read mcp:execute mcp:write\"".into()
        )));
        assert_eq!(protocol_version(&headers(&[])).unwrap(), DEFAULT_VERSION);
        assert_eq!(protocol_version(&headers(&[("mcp-protocol-version", "2025-06-18")])).unwrap(), "2025-06-18");
        assert_eq!(protocol_version(&headers(&[("mcp-protocol-version", "1999-01-01")])).unwrap_err().status, 400);
    }

    #[test]
    fn challenges_name_the_metadata_and_the_missing_scope() {
        let r = unauthorized("https://h", Some("token \"expired\""));
        let (_, v) = r.headers.iter().find(|(k, _)| *k == "www-authenticate").unwrap();
        assert!(v.contains("error=\"invalid_token\", error_description=\"token expired\""), "{v}");
        let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": INSUFFICIENT_SCOPE, "message": "m", "data": {"requiredScope": "mcp:write"}}});
        let needed = needed_scope(&body).unwrap();
        let r = insufficient_scope("https://h", Scopes::parse("mcp:read").unwrap(), needed, body);
        assert_eq!(r.status, 403);
        let (_, v) = r.headers.iter().find(|(k, _)| *k == "www-authenticate").unwrap();
        assert!(v.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:read mcp:write\""), "{v}");
        assert_eq!(needed_scope(&json!({"error": {"code": INVALID_PARAMS}})), None);
    }
}
