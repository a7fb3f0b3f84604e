//! Chat models: the sub-nodes `lmChatOpenAi` (any OpenAI-compatible base
//! URL, from the node's options or the credential), `lmChatAnthropic` and
//! `lmChatOllama` run on the `models` crate's providers — the agent's own,
//! one wire format each — through this execution's SSRF-guarded client and
//! runtime; `lmChatAwsBedrock` (and any model a host supplies itself) comes
//! from the host's `ChatModelProvider` as a provider of the same trait. Every
//! call streams: the text reaches `on_text` as it arrives (the Chat
//! Trigger's streamed answer), within the node's per-call timeout, retries
//! and the execution's cancel.

use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use models::{AssistantPart, ModelChunk, ModelProvider, ModelRequest, RetryPolicy, ToolDefinition, Transport, TurnBuilder};

use super::{locator_value, NodeContext};
use crate::data::TokenUsage;
use crate::error::{EngineError, Result};
use crate::run::Env;

/// One message of a conversation, provider-neutral (memory stores it in this form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System { content: String },
    User { content: String },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty", rename = "toolCalls")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        name: String,
        content: String,
    },
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (an object).
    pub parameters: Value,
}

#[derive(Debug, Clone)]
pub struct ChatRequest<'r> {
    pub messages: &'r [Message],
    pub tools: &'r [ToolSpec],
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: TokenUsage,
    /// As OpenAI names it: `stop`, `tool_calls`, `length`, `content_filter`.
    pub finish_reason: String,
}

/// What a model node asks for, its parameters resolved: the engine builds
/// its own providers from it, and a host builds the ones it supplies.
#[derive(Debug, Clone)]
pub struct ModelSetup {
    pub node_type: String,
    pub node_name: String,
    pub model: String,
    /// The node's credential (decrypted), when its type takes one.
    pub credential: Option<Value>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<i64>,
    pub top_p: Option<f64>,
    pub timeout: Duration,
    pub max_retries: u32,
    /// The node's whole `options` collection, resolved (provider-specific ones).
    pub options: Map<String, Value>,
    /// The endpoint the node would call, the engine's origin overrides applied
    /// (Bedrock: `https://bedrock-runtime.<region>.amazonaws.com`).
    pub endpoint: Option<String>,
}

/// A chat model a model sub-node supplies: a provider and the node's call limits.
pub struct ChatModel {
    provider: Box<dyn ModelProvider>,
    timeout: Duration,
    options: Value,
}

impl ChatModel {
    pub fn new(provider: Box<dyn ModelProvider>, timeout: Duration, options: Value) -> Self {
        ChatModel { provider, timeout, options }
    }

    /// The call options as run data shows them (no secrets).
    pub fn options(&self) -> &Value {
        &self.options
    }

    /// One call: the answer's text reaches `on_text` as it streams in.
    pub fn chat(&self, env: &Env, req: &ChatRequest<'_>, on_text: &mut dyn FnMut(&str)) -> Result<ChatResponse> {
        let request = model_request(req);
        let cancel = models::CancellationToken::new();
        let mut stream = self.provider.stream(request, cancel.clone());
        let mut limit = self.timeout;
        if let Some(d) = env.deadline {
            limit = limit.min(d.saturating_duration_since(std::time::Instant::now()));
        }
        let watch_cancel = env.cancel.clone();
        let outcome = crate::nodes::http::block_on(env, async {
            let read = async {
                let mut turn = TurnBuilder::new();
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(|e| model_error(&e))?;
                    if let ModelChunk::TextDelta(t) = &chunk {
                        on_text(t);
                    }
                    turn.push(&chunk);
                }
                Ok::<_, EngineError>(turn)
            };
            let watch = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if watch_cancel.is_canceled() {
                        cancel.cancel();
                        return;
                    }
                }
            };
            tokio::select! {
                r = tokio::time::timeout(limit, read) => r.unwrap_or_else(|_| Err(EngineError::node_with(
                    format!("The model did not answer within {} ms", limit.as_millis()),
                    "raise the model node's Timeout option, or check that the model server is reachable",
                ))),
                _ = watch => Err(EngineError::Canceled),
            }
        })??;
        let Some((reason, usage)) = outcome.finish() else {
            // the provider's stream ends without a finish only when cancelled
            return Err(if env.cancel.is_canceled() { EngineError::Canceled } else { EngineError::node("The model's answer ended early") });
        };
        let tool_calls = outcome
            .parts()
            .iter()
            .filter_map(|p| match p {
                AssistantPart::ToolCall { id, name, args } => Some(ToolCall { id: id.clone(), name: name.clone(), arguments: args.clone() }),
                _ => None,
            })
            .collect();
        Ok(ChatResponse {
            content: outcome.text(),
            tool_calls,
            usage: TokenUsage { prompt_tokens: usage.input_tokens, completion_tokens: usage.output_tokens, total_tokens: usage.input_tokens + usage.output_tokens },
            finish_reason: match reason {
                models::FinishReason::Stop => "stop".into(),
                models::FinishReason::ToolCalls => "tool_calls".into(),
                models::FinishReason::Length => "length".into(),
                models::FinishReason::ContentFilter => "content_filter".into(),
                models::FinishReason::Other(o) => o.clone(),
            },
        })
    }
}

fn model_error(e: &models::ModelError) -> EngineError {
    let code = e.status_code;
    let message = match code {
        Some(status) => format!("The model provider answered {status}: {}", strip_status(&e.message)),
        None => format!("The model call failed: {}", e.message),
    };
    EngineError::Node { message, description: None, http_code: code.map(|c| c.to_string()) }
}

/// `HTTP 401: msg` → `msg` (the status is said once).
fn strip_status(message: &str) -> &str {
    match message.strip_prefix("HTTP ") {
        Some(rest) => rest.split_once(": ").map(|(_, m)| m).unwrap_or(message),
        None => message,
    }
}

/// The engine's conversation as the providers' request.
pub fn model_request(req: &ChatRequest<'_>) -> ModelRequest {
    let mut system = vec![];
    let mut messages = vec![];
    for m in req.messages {
        match m {
            Message::System { content } => system.push(content.clone()),
            Message::User { content } => messages.push(models::Message::User { text: content.clone() }),
            Message::Assistant { content, tool_calls } => {
                let mut parts = vec![];
                if !content.is_empty() {
                    parts.push(AssistantPart::Text { text: content.clone() });
                }
                parts.extend(tool_calls.iter().map(|c| AssistantPart::ToolCall { id: c.id.clone(), name: c.name.clone(), args: c.arguments.clone() }));
                messages.push(models::Message::Assistant { parts });
            }
            Message::Tool { tool_call_id, name, content } => {
                messages.push(models::Message::ToolResult { tool_call_id: tool_call_id.clone(), tool_name: name.clone(), content: content.clone(), is_error: false })
            }
        }
    }
    let tools = req.tools.iter().map(|t| ToolDefinition { name: t.name.clone(), description: t.description.clone(), input_schema: t.parameters.clone() }).collect();
    ModelRequest { system: system.join("\n\n"), messages, tools }
}

pub const OPENAI: &str = "@n8n/n8n-nodes-langchain.lmChatOpenAi";
pub const ANTHROPIC: &str = "@n8n/n8n-nodes-langchain.lmChatAnthropic";
pub const OLLAMA: &str = "@n8n/n8n-nodes-langchain.lmChatOllama";
pub const BEDROCK: &str = "@n8n/n8n-nodes-langchain.lmChatAwsBedrock";

/// The model the sub-node `ctx.node` supplies, its parameters resolved for item `item`.
pub fn supply(ctx: &mut NodeContext<'_>, item: usize) -> Result<ChatModel> {
    let setup = setup(ctx, item)?;
    let options = shown_options(&setup);
    if let Some(hosted) = ctx.env.host.chat_models.as_ref().and_then(|p| p.provider(&setup)) {
        return Ok(ChatModel::new(hosted.map_err(EngineError::node)?, setup.timeout, options));
    }
    let retry = RetryPolicy { max_retries: setup.max_retries, ..RetryPolicy::default() };
    let provider: Box<dyn ModelProvider> = match setup.node_type.as_str() {
        OPENAI => Box::new(openai(ctx, &setup, retry)?),
        ANTHROPIC => Box::new(anthropic(ctx, &setup, retry)?),
        OLLAMA => Box::new(ollama(ctx, &setup, retry)?),
        BEDROCK => {
            return Err(EngineError::node("AWS Bedrock Chat Model: this host supplies no Bedrock client (it runs in executions, where the AWS SDK is)"));
        }
        other => return Err(EngineError::node(format!("{other} is not a chat model this instance supports"))),
    };
    Ok(ChatModel::new(provider, setup.timeout, options))
}

fn num(v: Option<Value>) -> Option<f64> {
    v.and_then(|v| v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())))
}

/// The node's parameters, resolved; its credential, decrypted.
fn setup(ctx: &mut NodeContext<'_>, item: usize) -> Result<ModelSetup> {
    let node_type = ctx.node.node_type.clone();
    let (default_model, credential_type) = match node_type.as_str() {
        OPENAI => ("gpt-4o-mini", Some("openAiApi")),
        ANTHROPIC => ("claude-3-5-sonnet-20240620", Some("anthropicApi")),
        OLLAMA => ("llama3.2", Some("ollamaApi")),
        BEDROCK => ("", Some("aws")),
        _ => ("", None),
    };
    let model = ctx.param_opt("model", item)?.map(|v| locator_value(&v)).filter(|m| !m.trim().is_empty()).unwrap_or_else(|| default_model.to_owned());
    if model.is_empty() {
        return Err(EngineError::node_with("No model selected", "set the model node's Model parameter"));
    }
    let temperature = num(ctx.param_opt("options.temperature", item)?);
    let max_tokens = num(ctx.param_opt("options.maxTokens", item)?)
        .or(num(ctx.param_opt("options.maxTokensToSample", item)?))
        .or(num(ctx.param_opt("options.numPredict", item)?))
        .map(|n| n as i64)
        .filter(|n| *n > 0);
    let top_p = num(ctx.param_opt("options.topP", item)?);
    let timeout_ms = num(ctx.param_opt("options.timeout", item)?).filter(|t| *t > 0.0).unwrap_or(60_000.0);
    let max_retries = num(ctx.param_opt("options.maxRetries", item)?).unwrap_or(2.0).clamp(0.0, 10.0) as u32;
    let options = match ctx.param_opt("options", item)? {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    };
    let credential = match credential_type {
        Some(t) => Some(ctx.credential(t)?),
        None => None,
    };
    let endpoint = match node_type.as_str() {
        BEDROCK => Some(bedrock_endpoint(ctx.env, credential.as_ref().unwrap_or(&Value::Null), &model)?),
        _ => None,
    };
    Ok(ModelSetup {
        node_type,
        node_name: ctx.node.name.clone(),
        model,
        credential,
        temperature,
        max_tokens,
        top_p,
        timeout: Duration::from_millis(timeout_ms as u64),
        max_retries,
        options,
        endpoint,
    })
}

/// Bedrock's runtime endpoint for the credential's region (or the region of
/// an inference-profile ARN), as n8n builds it; the credential's
/// `bedrockRuntimeEndpoint` overrides it.
fn bedrock_endpoint(env: &Env, credential: &Value, model: &str) -> Result<String> {
    let mut region = credential.get("region").and_then(Value::as_str).unwrap_or("us-east-1").to_owned();
    if let Some(rest) = model.strip_prefix("arn:") {
        // arn:<partition>:bedrock:<region>:<account>:inference-profile/<id>
        if let Some(r) = rest.split(':').nth(2).filter(|r| !r.is_empty()) {
            region = r.to_owned();
        }
    }
    if region.is_empty() || !region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return Err(EngineError::node(format!("'{region}' is not an AWS region")));
    }
    let custom = credential.get("bedrockRuntimeEndpoint").and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let domain = if region.starts_with("cn-") { "amazonaws.com.cn" } else { "amazonaws.com" };
    let raw = custom.map(str::to_owned).unwrap_or_else(|| format!("https://bedrock-runtime.{region}.{domain}"));
    Ok(crate::nodes::http::service_url(env, &raw)?.as_str().trim_end_matches('/').to_owned())
}

/// The options run data shows for a model call (LangChain's invocation
/// params as n8n logs them; no secrets).
fn shown_options(s: &ModelSetup) -> Value {
    let mut o = json!({"model": s.model, "timeout": s.timeout.as_millis() as u64, "max_retries": s.max_retries});
    if let Some(t) = s.temperature {
        o["temperature"] = json!(t);
    }
    if let Some(m) = s.max_tokens {
        o["max_tokens"] = json!(m);
    }
    if let Some(p) = s.top_p {
        o["top_p"] = json!(p);
    }
    o
}

fn base_url(ctx: &NodeContext<'_>, raw: &str) -> Result<String> {
    Ok(crate::nodes::http::service_url(ctx.env, raw)?.as_str().trim_end_matches('/').to_owned())
}

fn transport(ctx: &NodeContext<'_>) -> Result<Transport> {
    Ok(Transport { client: Some(crate::nodes::http::guarded_client(ctx.env)?), ..Transport::default() })
}

fn cred_str(c: &Option<Value>, key: &str) -> Option<String> {
    c.as_ref().and_then(|c| c.get(key)).map(crate::nodes::js_string).filter(|s| !s.trim().is_empty())
}

/// OpenAI chat completions (and every server that speaks them).
fn openai(ctx: &mut NodeContext<'_>, s: &ModelSetup, retry: RetryPolicy) -> Result<models::openai::OpenAiProvider> {
    let from_options = s.options.get("baseURL").map(crate::nodes::js_string).filter(|u| !u.trim().is_empty());
    let raw = from_options.or_else(|| cred_str(&s.credential, "url")).unwrap_or_else(|| "https://api.openai.com/v1".into());
    let mut t = transport(ctx)?;
    if let Some(org) = cred_str(&s.credential, "organizationId") {
        t.headers.push(("openai-organization".into(), org));
    }
    let body = &mut t.extra_body;
    if let Some(v) = s.temperature {
        body.insert("temperature".into(), json!(v));
    }
    if let Some(v) = s.max_tokens {
        body.insert("max_tokens".into(), json!(v));
    }
    if let Some(v) = s.top_p {
        body.insert("top_p".into(), json!(v));
    }
    for (option, key) in [("frequencyPenalty", "frequency_penalty"), ("presencePenalty", "presence_penalty")] {
        if let Some(v) = s.options.get(option).filter(|v| v.is_number()) {
            body.insert(key.into(), v.clone());
        }
    }
    if s.options.get("responseFormat").and_then(Value::as_str) == Some("json_object") {
        body.insert("response_format".into(), json!({"type": "json_object"}));
    }
    let mut config = models::openai::OpenAiConfig::compatible(base_url(ctx, &raw)?, s.model.clone(), cred_str(&s.credential, "apiKey"));
    config.provider = "openai".into();
    config.retry = retry;
    config.transport = t;
    models::openai::OpenAiProvider::new(config).map_err(|e| model_error(&e))
}

/// Anthropic's Messages API.
fn anthropic(ctx: &mut NodeContext<'_>, s: &ModelSetup, retry: RetryPolicy) -> Result<models::anthropic::AnthropicProvider> {
    if s.options.get("thinking").and_then(Value::as_bool) == Some(true) {
        return Err(EngineError::node("Anthropic Chat Model: extended thinking (the Enable Thinking option) is not supported on this instance"));
    }
    let raw = cred_str(&s.credential, "url").unwrap_or_else(|| "https://api.anthropic.com".into());
    let mut config = models::anthropic::AnthropicConfig::new(cred_str(&s.credential, "apiKey").unwrap_or_default(), s.model.clone());
    config.base_url = base_url(ctx, &raw)?;
    config.max_tokens = s.max_tokens.map(|m| m.clamp(1, u32::MAX as i64) as u32).unwrap_or(4096);
    // LangChain's ChatAnthropic marks no cache breakpoints
    config.prompt_caching = false;
    config.retry = retry;
    let mut t = transport(ctx)?;
    if let Some(v) = s.temperature {
        t.extra_body.insert("temperature".into(), json!(v));
    }
    if let Some(v) = s.top_p {
        t.extra_body.insert("top_p".into(), json!(v));
    }
    if let Some(v) = s.options.get("topK").and_then(Value::as_f64).filter(|k| *k > 0.0) {
        t.extra_body.insert("top_k".into(), json!(v as i64));
    }
    config.transport = t;
    models::anthropic::AnthropicProvider::new(config).map_err(|e| model_error(&e))
}

/// Ollama's native chat API; the node's options go in `options` as Ollama names them.
fn ollama(ctx: &mut NodeContext<'_>, s: &ModelSetup, retry: RetryPolicy) -> Result<models::ollama::OllamaProvider> {
    let raw = cred_str(&s.credential, "baseUrl").unwrap_or_else(|| "http://localhost:11434".into());
    let mut config = models::ollama::OllamaConfig::new(base_url(ctx, &raw)?, s.model.clone());
    config.api_key = cred_str(&s.credential, "apiKey");
    config.retry = retry;
    let mut t = transport(ctx)?;
    let mut o = Map::new();
    for (option, key) in [
        ("temperature", "temperature"),
        ("topK", "top_k"),
        ("topP", "top_p"),
        ("frequencyPenalty", "frequency_penalty"),
        ("presencePenalty", "presence_penalty"),
        ("repeatPenalty", "repeat_penalty"),
        ("numCtx", "num_ctx"),
        ("numBatch", "num_batch"),
        ("numGpu", "num_gpu"),
        ("mainGpu", "main_gpu"),
        ("numThread", "num_thread"),
        ("numPredict", "num_predict"),
        ("penalizeNewline", "penalize_newline"),
        ("lowVram", "low_vram"),
        ("useMLock", "use_mlock"),
        ("useMMap", "use_mmap"),
        ("vocabOnly", "vocab_only"),
    ] {
        if let Some(v) = s.options.get(option).filter(|v| v.is_number() || v.is_boolean()) {
            // -1 means "not set" for Ollama's counts (n8n's defaults)
            if v.as_f64() == Some(-1.0) && key != "temperature" {
                continue;
            }
            o.insert(key.into(), v.clone());
        }
    }
    if !o.is_empty() {
        t.extra_body.insert("options".into(), Value::Object(o));
    }
    if let Some(k) = s.options.get("keepAlive").and_then(Value::as_str).filter(|k| !k.is_empty()) {
        t.extra_body.insert("keep_alive".into(), json!(k));
    }
    if s.options.get("format").and_then(Value::as_str) == Some("json") {
        t.extra_body.insert("format".into(), json!("json"));
    }
    config.transport = t;
    models::ollama::OllamaProvider::new(config).map_err(|e| model_error(&e))
}
