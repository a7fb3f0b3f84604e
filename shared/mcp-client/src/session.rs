//! One MCP session: the initialize handshake, then requests and
//! notifications over the endpoint's transport.

use crate::sse::{Event, Parser};
use crate::{McpError, MAX_ANSWER_BYTES, PROTOCOL_VERSION};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    /// One POST per message; answers as JSON or an SSE stream.
    #[serde(rename = "httpStreamable")]
    StreamableHttp,
    /// The 2024-11-05 transport: a GET event stream plus POSTed messages.
    #[serde(rename = "sse")]
    Sse,
}

/// Where and how to reach a server.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: url::Url,
    pub transport: Transport,
    /// Sent with every request (authentication).
    pub headers: Vec<(String, String)>,
    /// Deadline of one exchange, its answer included.
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "empty_object")]
    pub input_schema: Value,
}

fn empty_object() -> Value {
    json!({"type": "object"})
}

/// A `tools/call` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    pub content: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
}

impl CallResult {
    /// The text parts joined (other parts named by their type).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .map(|c| match c.get("type").and_then(Value::as_str) {
                Some("text") => c.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                Some(other) => format!("[{other} content]"),
                None => c.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Pages of `tools/list` read at most (a server that keeps paging is cut off).
const MAX_TOOL_PAGES: usize = 20;
/// How long the courtesy messages (cancel notice, session close) may take.
const COURTESY: Duration = Duration::from_secs(2);

pub struct Session {
    http: outbound::Client,
    endpoint: Endpoint,
    session_id: Option<String>,
    protocol: Option<String>,
    /// HTTP+SSE: where messages are POSTed, and the open event stream.
    post_url: url::Url,
    stream: Option<(outbound::Streaming, Parser)>,
    next_id: u64,
    requests: u32,
    server: Value,
}

impl Session {
    /// Opens a session: the event stream (HTTP+SSE), `initialize`, `notifications/initialized`.
    pub async fn connect(http: outbound::Client, endpoint: Endpoint, abort: &CancellationToken) -> Result<Session, McpError> {
        let post_url = endpoint.url.clone();
        let mut s = Session { http, endpoint, session_id: None, protocol: None, post_url, stream: None, next_id: 1, requests: 0, server: Value::Null };
        if s.endpoint.transport == Transport::Sse {
            s.open_stream(abort).await?;
        }
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "instance-ai", "version": env!("CARGO_PKG_VERSION")}
        });
        let init = s.request("initialize", params, abort).await?;
        s.protocol = Some(init.get("protocolVersion").and_then(Value::as_str).unwrap_or(PROTOCOL_VERSION).to_owned());
        s.server = init.get("serverInfo").cloned().unwrap_or(Value::Null);
        s.notify("notifications/initialized", json!({}), abort).await?;
        Ok(s)
    }

    /// HTTP requests made so far.
    pub fn requests(&self) -> u32 {
        self.requests
    }

    /// The server's `serverInfo` (name, version).
    pub fn server_info(&self) -> &Value {
        &self.server
    }

    /// Every tool the server offers (all pages).
    pub async fn list_tools(&mut self, abort: &CancellationToken) -> Result<Vec<ToolInfo>, McpError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params, abort).await?;
            let list = page.get("tools").and_then(Value::as_array).ok_or_else(|| McpError::Protocol("tools/list answered without tools".into()))?;
            for t in list {
                tools.push(serde_json::from_value(t.clone()).map_err(|e| McpError::Protocol(format!("a tool of tools/list is malformed: {e}")))?);
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    /// Calls a tool. Cancelled, the server is told (`notifications/cancelled`).
    pub async fn call_tool(&mut self, name: &str, arguments: Value, abort: &CancellationToken) -> Result<CallResult, McpError> {
        let id = self.next_id;
        match self.request("tools/call", json!({"name": name, "arguments": arguments}), abort).await {
            Ok(r) => Ok(CallResult {
                content: r.get("content").and_then(Value::as_array).cloned().unwrap_or_default(),
                structured_content: r.get("structuredContent").cloned(),
                is_error: r.get("isError").and_then(Value::as_bool).unwrap_or(false),
            }),
            Err(McpError::Cancelled) => {
                let calm = CancellationToken::new();
                let notice = json!({"requestId": id, "reason": "The user stopped the run."});
                if let Err(e) = tokio::time::timeout(COURTESY, self.notify("notifications/cancelled", notice, &calm)).await.unwrap_or(Err(McpError::Timeout(COURTESY.as_millis()))) {
                    tracing::debug!(error = %e, "the cancel notice did not reach the MCP server");
                }
                Err(McpError::Cancelled)
            }
            Err(e) => Err(e),
        }
    }

    /// Ends the session (Streamable HTTP: `DELETE` with its id).
    pub async fn close(mut self) {
        self.stream = None;
        let (Some(id), Transport::StreamableHttp) = (self.session_id.clone(), self.endpoint.transport) else { return };
        let mut headers = self.endpoint.headers.clone();
        headers.push(("mcp-session-id".into(), id));
        let req = outbound::Exchange { method: reqwest::Method::DELETE, url: self.endpoint.url.clone(), headers, body: None, timeout: COURTESY };
        self.requests += 1;
        let _ = self.http.open(req, &CancellationToken::new()).await;
    }

    fn headers(&self) -> Vec<(String, String)> {
        let mut h = self.endpoint.headers.clone();
        h.push(("content-type".into(), "application/json".into()));
        h.push(("accept".into(), "application/json, text/event-stream".into()));
        if let Some(id) = &self.session_id {
            h.push(("mcp-session-id".into(), id.clone()));
        }
        if let Some(v) = &self.protocol {
            h.push(("mcp-protocol-version".into(), v.clone()));
        }
        h
    }

    async fn post(&mut self, body: &Value, abort: &CancellationToken) -> Result<outbound::Streaming, McpError> {
        let url = match self.endpoint.transport {
            Transport::StreamableHttp => self.endpoint.url.clone(),
            Transport::Sse => self.post_url.clone(),
        };
        let req = outbound::Exchange { method: reqwest::Method::POST, url, headers: self.headers(), body: Some(body.to_string().into_bytes()), timeout: self.endpoint.timeout };
        self.requests += 1;
        let resp = self.http.open(req, abort).await.map_err(McpError::from_fetch)?;
        if let Some(id) = resp.header("mcp-session-id") {
            self.session_id = Some(id.to_owned());
        }
        match resp.status {
            200..=299 => Ok(resp),
            401 | 403 => Err(McpError::Unauthorized(resp.status)),
            status => {
                let mut resp = resp;
                let body = read_all(&mut resp, 2048).await.unwrap_or_default();
                Err(McpError::Protocol(format!("HTTP {status} from the MCP server: {}", String::from_utf8_lossy(&body).trim())))
            }
        }
    }

    async fn notify(&mut self, method: &str, params: Value, abort: &CancellationToken) -> Result<(), McpError> {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.post(&body, abort).await.map(|_| ())
    }

    /// One request and its answer's `result`, within the endpoint's deadline.
    async fn request(&mut self, method: &str, params: Value, abort: &CancellationToken) -> Result<Value, McpError> {
        let id = self.next_id;
        self.next_id += 1;
        let timeout = self.endpoint.timeout;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let exchange = async {
            let resp = self.post(&body, abort).await?;
            match self.endpoint.transport {
                Transport::Sse => self.await_on_stream(id, abort).await,
                Transport::StreamableHttp => self.await_answer(resp, id, abort).await,
            }
        };
        let answer = tokio::select! {
            r = tokio::time::timeout(timeout, exchange) => r.unwrap_or(Err(McpError::Timeout(timeout.as_millis()))),
            _ = abort.cancelled() => Err(McpError::Cancelled),
        }?;
        if let Some(e) = answer.get("error") {
            return Err(McpError::Rpc {
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: e.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
            });
        }
        answer.get("result").cloned().ok_or_else(|| McpError::Protocol(format!("the answer to {method} has neither result nor error")))
    }

    /// Streamable HTTP: the answer is the JSON body, or an event of the SSE body.
    async fn await_answer(&mut self, mut resp: outbound::Streaming, id: u64, abort: &CancellationToken) -> Result<Value, McpError> {
        let kind = resp.header("content-type").unwrap_or_default().to_ascii_lowercase();
        if kind.starts_with("text/event-stream") {
            let mut parser = Parser::default();
            let mut read = 0usize;
            while let Some(chunk) = resp.chunk().await.map_err(McpError::from_fetch)? {
                read += chunk.len();
                if read > MAX_ANSWER_BYTES {
                    return Err(McpError::Protocol(format!("the answer is larger than {MAX_ANSWER_BYTES} bytes")));
                }
                for ev in parser.push(&chunk) {
                    if let Some(answer) = self.handle_event(&ev, id, abort).await? {
                        return Ok(answer);
                    }
                }
            }
            return Err(McpError::Protocol("the event stream ended without the answer".into()));
        }
        let body = read_all(&mut resp, MAX_ANSWER_BYTES).await?;
        let v: Value = serde_json::from_slice(&body).map_err(|e| McpError::Protocol(format!("the answer is not JSON: {e}")))?;
        let candidates = match v {
            Value::Array(items) => items,
            one => vec![one],
        };
        candidates.into_iter().find(|m| m.get("id").and_then(Value::as_u64) == Some(id)).ok_or_else(|| McpError::Protocol("the answer does not answer the request".into()))
    }

    /// HTTP+SSE: the answer arrives on the session's event stream.
    async fn await_on_stream(&mut self, id: u64, abort: &CancellationToken) -> Result<Value, McpError> {
        loop {
            let Some((stream, parser)) = self.stream.as_mut() else {
                return Err(McpError::Protocol("the event stream is closed".into()));
            };
            let Some(chunk) = stream.chunk().await.map_err(McpError::from_fetch)? else {
                return Err(McpError::Protocol("the server closed the event stream".into()));
            };
            for ev in parser.push(&chunk) {
                if let Some(answer) = self.handle_event(&ev, id, abort).await? {
                    return Ok(answer);
                }
            }
        }
    }

    /// A message event: our answer, or a server request answered (ping) or
    /// refused, or a notification (ignored).
    async fn handle_event(&mut self, ev: &Event, id: u64, abort: &CancellationToken) -> Result<Option<Value>, McpError> {
        if ev.event != "message" {
            return Ok(None);
        }
        let Ok(msg) = serde_json::from_str::<Value>(&ev.data) else { return Ok(None) };
        let is_answer = msg.get("result").is_some() || msg.get("error").is_some();
        if is_answer && msg.get("id").and_then(Value::as_u64) == Some(id) {
            return Ok(Some(msg));
        }
        if let (Some(method), Some(req_id)) = (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            let reply = if method == "ping" {
                json!({"jsonrpc": "2.0", "id": req_id, "result": {}})
            } else {
                json!({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": format!("{method} is not supported by this client")}})
            };
            self.post(&reply, abort).await?;
        }
        Ok(None)
    }

    /// HTTP+SSE: opens the event stream and reads where to POST.
    async fn open_stream(&mut self, abort: &CancellationToken) -> Result<(), McpError> {
        let mut headers = self.endpoint.headers.clone();
        headers.push(("accept".into(), "text/event-stream".into()));
        let req = outbound::Exchange { method: reqwest::Method::GET, url: self.endpoint.url.clone(), headers, body: None, timeout: self.endpoint.timeout };
        self.requests += 1;
        let mut resp = self.http.open(req, abort).await.map_err(McpError::from_fetch)?;
        match resp.status {
            200..=299 => {}
            401 | 403 => return Err(McpError::Unauthorized(resp.status)),
            status => return Err(McpError::Protocol(format!("HTTP {status} opening the MCP event stream"))),
        }
        let mut parser = Parser::default();
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        loop {
            let chunk = tokio::select! {
                c = tokio::time::timeout_at(deadline, resp.chunk()) => c.map_err(|_| McpError::Timeout(self.endpoint.timeout.as_millis()))?.map_err(McpError::from_fetch)?,
                _ = abort.cancelled() => return Err(McpError::Cancelled),
            };
            let Some(chunk) = chunk else { return Err(McpError::Protocol("the event stream ended before naming its endpoint".into())) };
            if let Some(ev) = parser.push(&chunk).into_iter().find(|e| e.event == "endpoint") {
                // The endpoint is relative to the stream's URL; the guard checks it when POSTed.
                self.post_url = self.endpoint.url.join(ev.data.trim()).map_err(|e| McpError::Protocol(format!("the endpoint event is not a URL: {e}")))?;
                self.stream = Some((resp, parser));
                return Ok(());
            }
        }
    }
}

async fn read_all(resp: &mut outbound::Streaming, max: usize) -> Result<Vec<u8>, McpError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(McpError::from_fetch)? {
        if body.len() + chunk.len() > max {
            return Err(McpError::Protocol(format!("the answer is larger than {max} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
