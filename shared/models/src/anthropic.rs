//! Anthropic Messages API, streaming (`POST {base}/v1/messages`, SSE).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::http::{self, SseChunkDecoder};
use super::sse::SseEvent;
use super::{
    drive, AssistantPart, CancellationToken, FinishReason, Message, ModelChunk, ModelError,
    ModelErrorKind, ModelProvider, ModelRequest, ModelStream, RetryPolicy, Transport, Usage,
};

const PROVIDER: &str = "anthropic";
const API_VERSION: &str = "2023-06-01";

#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    pub api_key: String,
    pub model: String,
    /// Without `/v1` (like the official SDKs' `ANTHROPIC_BASE_URL`).
    pub base_url: String,
    pub max_tokens: u32,
    /// Extended thinking budget in tokens; `None` leaves thinking off.
    pub thinking_budget: Option<u32>,
    /// Mark the system prompt, the tools and the history so far as cache
    /// breakpoints: every step of a run resends them, and cached input is
    /// far cheaper and faster.
    pub prompt_caching: bool,
    pub retry: RetryPolicy,
    pub transport: Transport,
}

impl AnthropicConfig {
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        AnthropicConfig {
            api_key: api_key.into(),
            model: model.into(),
            base_url: "https://api.anthropic.com".to_string(),
            max_tokens: 8192,
            thinking_budget: None,
            prompt_caching: true,
            retry: RetryPolicy::default(),
            transport: Transport::default(),
        }
    }
}

pub struct AnthropicProvider {
    inner: Arc<Inner>,
}

struct Inner {
    config: AnthropicConfig,
    client: reqwest::Client,
    url: String,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        if let Some(budget) = config.thinking_budget {
            // The API rejects a budget that leaves no room for the answer.
            if budget >= config.max_tokens {
                return Err(ModelError::config(
                    PROVIDER,
                    format!(
                        "thinking budget ({budget}) must be below max_tokens ({})",
                        config.max_tokens
                    ),
                ));
            }
        }
        let client = config.transport.client(PROVIDER)?;
        let url = http::join(&config.base_url, "v1/messages");
        Ok(AnthropicProvider {
            inner: Arc::new(Inner {
                config,
                client,
                url,
            }),
        })
    }
}

impl ModelProvider for AnthropicProvider {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.inner.config.model
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let inner = self.inner.clone();
        let mut body = request_body(&inner.config, &request);
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
                    let mut headers = vec![
                        ("x-api-key", inner.config.api_key.clone()),
                        ("anthropic-version", API_VERSION.to_string()),
                    ];
                    headers.extend(inner.config.transport.headers.iter().map(|(k, v)| (k.as_str(), v.clone())));
                    let response =
                        http::post_sse(&inner.client, PROVIDER, &inner.url, &headers, &body)
                            .await?;
                    Ok(http::decode(
                        PROVIDER.to_string(),
                        response,
                        Decoder::default(),
                    ))
                })
            }),
        )
    }
}

/// The request body: the history as Anthropic content blocks, consecutive
/// same-role messages merged (tool results of one turn go in one user
/// message, and the API wants user/assistant alternation).
pub fn request_body(config: &AnthropicConfig, request: &ModelRequest) -> Value {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", text_block(text).into_iter().collect::<Vec<_>>()),
            Message::Assistant { parts } => (
                "assistant",
                parts.iter().filter_map(assistant_block).collect(),
            ),
            Message::ToolResult {
                tool_call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content, "is_error": is_error}),
                ],
            ),
        };
        if blocks.is_empty() {
            continue; // the API rejects empty content
        }
        match messages.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    let cache = json!({"type": "ephemeral"});
    if config.prompt_caching {
        // The last block of the history (thinking blocks cannot carry it).
        if let Some(block) = messages
            .last_mut()
            .and_then(|(_, blocks)| blocks.last_mut())
        {
            if block.get("type").and_then(Value::as_str) != Some("thinking") {
                block["cache_control"] = cache.clone();
            }
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({
        "model": config.model,
        "max_tokens": config.max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        let mut system = json!({"type": "text", "text": request.system});
        if config.prompt_caching {
            system["cache_control"] = cache.clone();
        }
        body["system"] = json!([system]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        if config.prompt_caching {
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = cache;
            }
        }
        body["tools"] = json!(tools);
    }
    if let Some(budget) = config.thinking_budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    body
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn assistant_block(part: &AssistantPart) -> Option<Value> {
    match part {
        // Thinking is only accepted back with its signature.
        AssistantPart::Reasoning {
            text,
            signature: Some(sig),
        } => Some(json!({"type": "thinking", "thinking": text, "signature": sig})),
        AssistantPart::Reasoning {
            signature: None, ..
        } => None,
        AssistantPart::Text { text } => text_block(text),
        AssistantPart::ToolCall { id, name, args } => {
            Some(json!({"type": "tool_use", "id": id, "name": name, "input": args}))
        }
    }
}

enum Block {
    Text,
    Thinking,
    ToolUse {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// Redacted thinking and block types we do not know: ignored.
    Other,
}

/// Maps Anthropic stream events to chunks.
#[derive(Default)]
pub struct Decoder {
    blocks: HashMap<u64, Block>,
    usage: Usage,
    stop_reason: Option<String>,
    started: bool,
}

fn field<'a>(value: &'a Value, pointer: &str) -> Result<&'a Value, ModelError> {
    value.pointer(pointer).ok_or_else(|| {
        ModelError::protocol(
            PROVIDER,
            format!(
                "stream event lacks {pointer}: {}",
                http::truncate(&value.to_string(), 200)
            ),
        )
    })
}

fn str_field<'a>(value: &'a Value, pointer: &str) -> Result<&'a str, ModelError> {
    field(value, pointer)?.as_str().ok_or_else(|| {
        ModelError::protocol(
            PROVIDER,
            format!("stream event field {pointer} is not a string"),
        )
    })
}

impl SseChunkDecoder for Decoder {
    fn event(&mut self, event: SseEvent) -> Result<Vec<ModelChunk>, ModelError> {
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            ModelError::protocol(
                PROVIDER,
                format!(
                    "malformed stream event {:?}: {e}: {}",
                    event.event,
                    http::truncate(&event.data, 200)
                ),
            )
        })?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                self.started = true;
                if let Some(n) = data
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64)
                {
                    self.usage.input_tokens = n;
                }
                if let Some(n) = data
                    .pointer("/message/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    self.usage.output_tokens = n;
                }
            }
            "content_block_start" => {
                let index = field(&data, "/index")?.as_u64().unwrap_or(0);
                let block = field(&data, "/content_block")?;
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        // The start may already carry text (it is usually empty).
                        if let Some(text) = block
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            out.push(ModelChunk::TextDelta(text.to_string()));
                        }
                        Block::Text
                    }
                    Some("thinking") => Block::Thinking,
                    Some("tool_use") => {
                        let id = str_field(block, "/id")?.to_string();
                        let name = str_field(block, "/name")?.to_string();
                        out.push(ModelChunk::ToolInputStart {
                            id: id.clone(),
                            name: name.clone(),
                        });
                        let initial = block.get("input").cloned().unwrap_or_else(|| json!({}));
                        Block::ToolUse {
                            id,
                            name,
                            json: String::new(),
                            initial,
                        }
                    }
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let index = field(&data, "/index")?.as_u64().unwrap_or(0);
                let delta = field(&data, "/delta")?;
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get_mut(&index),
                ) {
                    (Some("text_delta"), _) => out.push(ModelChunk::TextDelta(
                        str_field(delta, "/text")?.to_string(),
                    )),
                    (Some("thinking_delta"), _) => out.push(ModelChunk::ReasoningDelta(
                        str_field(delta, "/thinking")?.to_string(),
                    )),
                    (Some("signature_delta"), _) => out.push(ModelChunk::ReasoningSignature(
                        str_field(delta, "/signature")?.to_string(),
                    )),
                    (Some("input_json_delta"), Some(Block::ToolUse { json, .. })) => {
                        json.push_str(str_field(delta, "/partial_json")?)
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(ModelError::protocol(
                            PROVIDER,
                            format!("input_json_delta for block {index}, which is not a tool_use"),
                        ))
                    }
                    _ => {} // citations and future delta types
                }
            }
            "content_block_stop" => {
                let index = field(&data, "/index")?.as_u64().unwrap_or(0);
                if let Some(Block::ToolUse {
                    id,
                    name,
                    json,
                    initial,
                }) = self.blocks.remove(&index)
                {
                    let args = if json.trim().is_empty() {
                        initial
                    } else {
                        serde_json::from_str(&json).map_err(|e| {
                            ModelError::protocol(
                                PROVIDER,
                                format!(
                                    "arguments of tool call {id} ({name}) are not valid JSON: {e}"
                                ),
                            )
                        })?
                    };
                    out.push(ModelChunk::ToolCall { id, name, args });
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(n) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = n;
                }
                if let Some(n) = data.pointer("/usage/input_tokens").and_then(Value::as_u64) {
                    self.usage.input_tokens = n;
                }
            }
            "message_stop" => {
                let reason = match self.stop_reason.as_deref() {
                    Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
                    Some("tool_use") => FinishReason::ToolCalls,
                    Some("max_tokens") => FinishReason::Length,
                    Some("refusal") => FinishReason::ContentFilter,
                    Some(other) => FinishReason::Other(other.to_string()),
                };
                out.push(ModelChunk::Finish {
                    reason,
                    usage: self.usage,
                });
            }
            "error" => return Err(stream_error(&data)),
            _ => {} // ping and future event types
        }
        Ok(out)
    }

    fn end(&mut self) -> Result<Vec<ModelChunk>, ModelError> {
        // A cut connection, retryable if nothing was emitted yet.
        let what = if self.started {
            "before message_stop"
        } else {
            "before message_start"
        };
        Err(ModelError::new(
            PROVIDER,
            ModelErrorKind::Connection,
            format!("stream ended {what}"),
        )
        .retryable(true))
    }
}

/// An in-stream `error` event; overloaded/api/rate-limit errors are
/// transient and carry the status the HTTP API would have used.
fn stream_error(data: &Value) -> ModelError {
    let kind = data
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let message = data
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("unknown error");
    let status = match kind {
        "overloaded_error" => Some(529),
        "api_error" => Some(500),
        "rate_limit_error" => Some(429),
        "timeout_error" => Some(504),
        "invalid_request_error" => Some(400),
        "authentication_error" => Some(401),
        "permission_error" => Some(403),
        "not_found_error" => Some(404),
        "request_too_large" => Some(413),
        _ => None,
    };
    let mut error = ModelError::new(PROVIDER, ModelErrorKind::Api, format!("{kind}: {message}"))
        .retryable(status.is_some_and(super::status_is_retryable));
    error.status_code = status;
    error
}
