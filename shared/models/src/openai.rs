//! OpenAI Chat Completions, streaming (`POST {base}/chat/completions`, SSE
//! `data:` chunks ending with `[DONE]`). Also serves OpenAI-compatible
//! servers (Ollama, vLLM, llama.cpp server), which speak the same format.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::http::{self, SseChunkDecoder};
use super::sse::SseEvent;
use super::{
    drive, AssistantPart, CancellationToken, FinishReason, Message, ModelChunk, ModelError,
    ModelErrorKind, ModelProvider, ModelRequest, ModelStream, RetryPolicy, Transport, Usage,
};

#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// `openai` or `openai-compatible`, as reported in errors.
    pub provider: String,
    pub api_key: Option<String>,
    pub model: String,
    /// Including the version path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub retry: RetryPolicy,
    pub transport: Transport,
}

impl OpenAiConfig {
    pub fn openai(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            provider: "openai".to_string(),
            api_key: Some(api_key.into()),
            model: model.into(),
            base_url: "https://api.openai.com/v1".to_string(),
            retry: RetryPolicy::default(),
            transport: Transport::default(),
        }
    }

    pub fn compatible(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<String>,
    ) -> Self {
        OpenAiConfig {
            provider: "openai-compatible".to_string(),
            api_key,
            model: model.into(),
            base_url: base_url.into(),
            retry: RetryPolicy::default(),
            transport: Transport::default(),
        }
    }
}

pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: OpenAiConfig,
    client: reqwest::Client,
    url: String,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let client = config.transport.client(&config.provider)?;
        let url = http::join(&config.base_url, "chat/completions");
        Ok(OpenAiProvider {
            inner: Arc::new(Inner {
                config,
                client,
                url,
            }),
        })
    }
}

impl ModelProvider for OpenAiProvider {
    fn provider(&self) -> &str {
        &self.inner.config.provider
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
            inner.config.provider.clone(),
            inner.config.retry,
            cancel,
            Box::new(move || {
                let inner = inner.clone();
                let body = body.clone();
                Box::pin(async move {
                    let provider = inner.config.provider.clone();
                    let mut headers: Vec<(&str, String)> = match &inner.config.api_key {
                        Some(key) => vec![("authorization", format!("Bearer {key}"))],
                        None => Vec::new(),
                    };
                    headers.extend(inner.config.transport.headers.iter().map(|(k, v)| (k.as_str(), v.clone())));
                    let response =
                        http::post_sse(&inner.client, &provider, &inner.url, &headers, &body)
                            .await?;
                    Ok(http::decode(
                        provider.clone(),
                        response,
                        Decoder::new(provider),
                    ))
                })
            }),
        )
    }
}

/// The request body. Reasoning is not sent back: Chat Completions has no
/// input field for it (and DeepSeek-style servers reject it).
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
                        AssistantPart::ToolCall { id, name, args } => Some(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": args.to_string()},
                        })),
                        _ => None,
                    })
                    .collect();
                if text.is_empty() && calls.is_empty() {
                    continue;
                }
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !calls.is_empty() {
                    m["tool_calls"] = json!(calls);
                }
                messages.push(m);
            }
            Message::ToolResult {
                tool_call_id,
                content,
                ..
            } => messages
                .push(json!({"role": "tool", "tool_call_id": tool_call_id, "content": content})),
        }
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
    }
    body
}

#[derive(Default)]
struct PendingCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    announced: bool,
}

/// Maps Chat Completions chunks to model chunks. Tool calls arrive split
/// across chunks, keyed by `index`; they are emitted whole once the model
/// has finished (`finish_reason` or `[DONE]`).
pub struct Decoder {
    provider: String,
    calls: BTreeMap<u64, PendingCall>,
    finish_reason: Option<String>,
    calls_flushed: bool,
    usage: Usage,
}

impl Decoder {
    pub fn new(provider: impl Into<String>) -> Self {
        Decoder {
            provider: provider.into(),
            calls: BTreeMap::new(),
            finish_reason: None,
            calls_flushed: false,
            usage: Usage::default(),
        }
    }

    fn protocol(&self, message: String) -> ModelError {
        ModelError::protocol(self.provider.clone(), message)
    }

    fn flush_calls(&mut self, out: &mut Vec<ModelChunk>) -> Result<(), ModelError> {
        if self.calls_flushed {
            return Ok(());
        }
        self.calls_flushed = true;
        for (index, call) in std::mem::take(&mut self.calls) {
            let id = call.id.unwrap_or_else(|| format!("call_{index}"));
            let Some(name) = call.name else {
                return Err(self.protocol(format!("tool call {id} has no function name")));
            };
            if !call.announced {
                out.push(ModelChunk::ToolInputStart {
                    id: id.clone(),
                    name: name.clone(),
                });
            }
            let args = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| {
                    self.protocol(format!(
                        "arguments of tool call {id} ({name}) are not valid JSON: {e}"
                    ))
                })?
            };
            out.push(ModelChunk::ToolCall { id, name, args });
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<ModelChunk>) -> Result<(), ModelError> {
        self.flush_calls(out)?;
        let reason = match self.finish_reason.as_deref() {
            Some("stop") | None => FinishReason::Stop,
            Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_string()),
        };
        out.push(ModelChunk::Finish {
            reason,
            usage: self.usage,
        });
        Ok(())
    }
}

impl SseChunkDecoder for Decoder {
    fn event(&mut self, event: SseEvent) -> Result<Vec<ModelChunk>, ModelError> {
        let mut out = Vec::new();
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(&mut out)?;
            return Ok(out);
        }
        if data.is_empty() {
            return Ok(out);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            self.protocol(format!(
                "malformed stream chunk: {e}: {}",
                http::truncate(data, 200)
            ))
        })?;
        if let Some(error) = chunk.get("error") {
            return Err(stream_error(&self.provider, error));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            if let Some(n) = usage.get("prompt_tokens").and_then(Value::as_u64) {
                self.usage.input_tokens = n;
            }
            if let Some(n) = usage.get("completion_tokens").and_then(Value::as_u64) {
                self.usage.output_tokens = n;
            }
        }
        let choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        // We ask for one completion; only choice 0 matters.
        for choice in choices
            .iter()
            .filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.get("delta") {
                // `reasoning_content`: DeepSeek, vLLM, llama.cpp; `reasoning`: Ollama, OpenRouter.
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(text) = delta
                        .get(key)
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                    {
                        out.push(ModelChunk::ReasoningDelta(text.to_string()));
                    }
                }
                if let Some(text) = delta
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    out.push(ModelChunk::TextDelta(text.to_string()));
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for (position, call) in calls.iter().enumerate() {
                        let index = call
                            .get("index")
                            .and_then(Value::as_u64)
                            .unwrap_or(position as u64);
                        if self.calls_flushed {
                            return Err(self.protocol(format!(
                                "tool call delta (index {index}) after finish_reason"
                            )));
                        }
                        let pending = self.calls.entry(index).or_default();
                        if let Some(id) = call
                            .get("id")
                            .and_then(Value::as_str)
                            .filter(|s| !s.is_empty())
                        {
                            pending.id.get_or_insert_with(|| id.to_string());
                        }
                        if let Some(function) = call.get("function") {
                            if let Some(name) = function
                                .get("name")
                                .and_then(Value::as_str)
                                .filter(|s| !s.is_empty())
                            {
                                // Some servers repeat the name on every delta; keep the first.
                                pending.name.get_or_insert_with(|| name.to_string());
                            }
                            match function.get("arguments") {
                                Some(Value::String(part)) => pending.arguments.push_str(part),
                                // Some compatible servers send the whole object.
                                Some(object @ Value::Object(_)) => {
                                    pending.arguments = object.to_string()
                                }
                                _ => {}
                            }
                        }
                        if !pending.announced {
                            if let Some(name) = &pending.name {
                                pending.announced = true;
                                let id = pending
                                    .id
                                    .clone()
                                    .unwrap_or_else(|| format!("call_{index}"));
                                pending.id = Some(id.clone());
                                out.push(ModelChunk::ToolInputStart {
                                    id,
                                    name: name.clone(),
                                });
                            }
                        }
                    }
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
                // Emit the calls now; `[DONE]` (after the usage chunk) closes.
                self.flush_calls(&mut out)?;
            }
        }
        Ok(out)
    }

    fn end(&mut self) -> Result<Vec<ModelChunk>, ModelError> {
        // Some compatible servers close without `[DONE]`; a finish_reason
        // means the answer is complete.
        if self.finish_reason.is_some() {
            let mut out = Vec::new();
            self.finish(&mut out)?;
            return Ok(out);
        }
        Err(ModelError::new(
            self.provider.clone(),
            ModelErrorKind::Connection,
            "stream ended before [DONE]",
        )
        .retryable(true))
    }
}

/// `data: {"error": {...}}` inside a stream.
fn stream_error(provider: &str, error: &Value) -> ModelError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .unwrap_or("unknown error");
    let code = error
        .get("code")
        .and_then(|c| c.as_u64().and_then(|n| u16::try_from(n).ok()));
    let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
    let transient = matches!(kind, "server_error" | "rate_limit_exceeded")
        || code.is_some_and(super::status_is_retryable);
    let mut e = ModelError::new(provider, ModelErrorKind::Api, format!("{kind}: {message}"))
        .retryable(transient);
    e.status_code = code;
    e
}
