//! Ollama's native chat API, streaming (`POST {base}/api/chat`): the
//! answer is newline-delimited JSON, one object per line, the last with
//! `done: true` and the token counts. Tool calls arrive whole (arguments as
//! an object), so each is announced and emitted at once.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};

use super::http;
use super::{
    drive, AssistantPart, CancellationToken, FinishReason, Message, ModelChunk, ModelError,
    ModelErrorKind, ModelProvider, ModelRequest, ModelStream, RetryPolicy, Transport, Usage,
};

const PROVIDER: &str = "ollama";

#[derive(Debug, Clone)]
pub struct OllamaConfig {
    /// The server, without `/api` (`http://localhost:11434`).
    pub base_url: String,
    pub model: String,
    /// Sent as a bearer token (Ollama behind an authenticating proxy, ollama.com).
    pub api_key: Option<String>,
    pub retry: RetryPolicy,
    pub transport: Transport,
}

impl OllamaConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OllamaConfig { base_url: base_url.into(), model: model.into(), api_key: None, retry: RetryPolicy::default(), transport: Transport::default() }
    }
}

pub struct OllamaProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: OllamaConfig,
    client: reqwest::Client,
    url: String,
}

impl OllamaProvider {
    pub fn new(config: OllamaConfig) -> Result<Self, ModelError> {
        let client = config.transport.client(PROVIDER)?;
        let url = http::join(&config.base_url, "api/chat");
        Ok(OllamaProvider { inner: Arc::new(Inner { config, client, url }) })
    }
}

impl ModelProvider for OllamaProvider {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.inner.config.model
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let inner = self.inner.clone();
        let mut body = request_body(&inner.config.model, &request);
        inner.config.transport.extend_body(&mut body);
        let body = Arc::new(body);
        drive(
            PROVIDER.to_string(),
            inner.config.retry,
            cancel,
            Box::new(move || {
                let inner = inner.clone();
                let body = body.clone();
                Box::pin(async move {
                    let mut headers: Vec<(&str, String)> = match &inner.config.api_key {
                        Some(key) => vec![("authorization", format!("Bearer {key}"))],
                        None => Vec::new(),
                    };
                    headers.extend(inner.config.transport.headers.iter().map(|(k, v)| (k.as_str(), v.clone())));
                    let response = http::post_sse(&inner.client, PROVIDER, &inner.url, &headers, &body).await?;
                    Ok(decode(response))
                })
            }),
        )
    }
}

/// The request body: the history in Ollama's message form.
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        match message {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { parts } => {
                let text: String = parts
                    .iter()
                    .filter_map(|p| match p {
                        AssistantPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<Value> = parts
                    .iter()
                    .filter_map(|p| match p {
                        AssistantPart::ToolCall { name, args, .. } => Some(json!({"function": {"name": name, "arguments": args}})),
                        _ => None,
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = json!({"role": "assistant", "content": text});
                if !calls.is_empty() {
                    m["tool_calls"] = json!(calls);
                }
                messages.push(m);
            }
            Message::ToolResult { tool_name, content, .. } => {
                messages.push(json!({"role": "tool", "content": content, "tool_name": tool_name}))
            }
        }
    }
    let mut body = json!({"model": model, "messages": messages, "stream": true});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
            .collect();
    }
    body
}

/// Maps the answer's lines to chunks (pure, so unit-testable).
#[derive(Default)]
pub struct Decoder {
    calls: usize,
    done: bool,
}

impl Decoder {
    /// Chunks for one line; a `Finish` among them ends the stream.
    pub fn line(&mut self, line: &str) -> Result<Vec<ModelChunk>, ModelError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(vec![]);
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| ModelError::protocol(PROVIDER, format!("malformed stream line: {e}: {}", http::truncate(line, 200))))?;
        if let Some(error) = v.get("error") {
            let message = error.as_str().map(str::to_owned).unwrap_or_else(|| error.to_string());
            return Err(ModelError::new(PROVIDER, ModelErrorKind::Api, message));
        }
        let mut out = Vec::new();
        if let Some(message) = v.get("message") {
            if let Some(t) = message.get("thinking").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                out.push(ModelChunk::ReasoningDelta(t.to_owned()));
            }
            if let Some(t) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                out.push(ModelChunk::TextDelta(t.to_owned()));
            }
            for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                let Some(name) = call.pointer("/function/name").and_then(Value::as_str) else {
                    return Err(ModelError::protocol(PROVIDER, "tool call without a function name"));
                };
                let id = call.get("id").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| format!("call_{}", self.calls));
                self.calls += 1;
                let args = match call.pointer("/function/arguments") {
                    Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                    Some(Value::String(s)) => serde_json::from_str(s)
                        .map_err(|e| ModelError::protocol(PROVIDER, format!("arguments of tool call {id} ({name}) are not valid JSON: {e}")))?,
                    Some(a) => a.clone(),
                    None => json!({}),
                };
                out.push(ModelChunk::ToolInputStart { id: id.clone(), name: name.to_owned() });
                out.push(ModelChunk::ToolCall { id, name: name.to_owned(), args });
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            let reason = match v.get("done_reason").and_then(Value::as_str) {
                _ if self.calls > 0 => FinishReason::ToolCalls,
                Some("stop") | None => FinishReason::Stop,
                Some("length") => FinishReason::Length,
                Some(other) => FinishReason::Other(other.to_owned()),
            };
            let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
            out.push(ModelChunk::Finish { reason, usage: Usage { input_tokens: n("prompt_eval_count"), output_tokens: n("eval_count") } });
        }
        Ok(out)
    }

    /// The body ended: an error unless the last line said `done`.
    pub fn end(&self) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        Err(ModelError::new(PROVIDER, ModelErrorKind::Connection, "stream ended before done").retryable(true))
    }
}

fn decode(response: reqwest::Response) -> ModelStream {
    Box::pin(async_stream::stream! {
        let mut body = response.bytes_stream();
        let mut decoder = Decoder::default();
        let mut pending: Vec<u8> = Vec::new();
        while let Some(bytes) = body.next().await {
            let bytes = match bytes {
                Ok(b) => b,
                Err(e) => {
                    yield Err(http::transport_error(PROVIDER, &e));
                    return;
                }
            };
            pending.extend_from_slice(&bytes);
            while let Some(at) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=at).collect();
                let chunks = match std::str::from_utf8(&line) {
                    Ok(text) => decoder.line(text),
                    Err(e) => Err(ModelError::protocol(PROVIDER, format!("stream line is not UTF-8: {e}"))),
                };
                match chunks {
                    Ok(chunks) => {
                        for chunk in chunks {
                            let done = matches!(chunk, ModelChunk::Finish { .. });
                            yield Ok(chunk);
                            if done {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        yield Err(e);
                        return;
                    }
                }
            }
        }
        // A last line without its newline.
        if !pending.is_empty() {
            match std::str::from_utf8(&pending).map_err(|e| ModelError::protocol(PROVIDER, e.to_string())).and_then(|t| decoder.line(t)) {
                Ok(chunks) => {
                    for chunk in chunks {
                        let done = matches!(chunk, ModelChunk::Finish { .. });
                        yield Ok(chunk);
                        if done {
                            return;
                        }
                    }
                }
                Err(e) => {
                    yield Err(e);
                    return;
                }
            }
        }
        if let Err(e) = decoder.end() {
            yield Err(e);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_to_chunks() {
        let mut d = Decoder::default();
        assert_eq!(d.line(r#"{"message":{"role":"assistant","content":"Hel"},"done":false}"#).unwrap(), vec![ModelChunk::TextDelta("Hel".into())]);
        let calls = d.line(r#"{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"add","arguments":{"a":1}}}]},"done":false}"#).unwrap();
        assert_eq!(calls[1], ModelChunk::ToolCall { id: "call_0".into(), name: "add".into(), args: json!({"a": 1}) });
        let fin = d.line(r#"{"done":true,"done_reason":"stop","prompt_eval_count":7,"eval_count":3}"#).unwrap();
        assert_eq!(fin, vec![ModelChunk::Finish { reason: FinishReason::ToolCalls, usage: Usage { input_tokens: 7, output_tokens: 3 } }]);
        assert!(d.end().is_ok());
        let e = Decoder::default().line(r#"{"error":"model \"x\" not found"}"#).unwrap_err();
        assert!(e.message.contains("not found"), "{e}");
        assert!(Decoder::default().end().is_err());
    }

    #[test]
    fn body_shape() {
        let req = ModelRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::Assistant { parts: vec![AssistantPart::ToolCall { id: "c".into(), name: "t".into(), args: json!({"x": 1}) }] },
                Message::ToolResult { tool_call_id: "c".into(), tool_name: "t".into(), content: "ok".into(), is_error: false },
            ],
            tools: vec![],
        };
        let b = request_body("llama3.2", &req);
        assert_eq!(b["messages"][0], json!({"role": "system", "content": "sys"}));
        assert_eq!(b["messages"][2]["tool_calls"][0]["function"]["arguments"], json!({"x": 1}));
        assert_eq!(b["messages"][3], json!({"role": "tool", "content": "ok", "tool_name": "t"}));
        assert_eq!(b["stream"], json!(true));
    }
}
