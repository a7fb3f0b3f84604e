//! Model providers behind one trait.
//!
//! A [`ModelProvider`] turns a [`ModelRequest`] (system prompt, provider-neutral
//! [`Message`] history, [`ToolDefinition`]s) into a stream of [`ModelChunk`]s:
//! reasoning and text deltas, tool-input starts, complete tool calls and one
//! final [`ModelChunk::Finish`]. Every provider speaks the same contract:
//!
//! - **Exactly one `Finish`** ends a successful stream; nothing follows it.
//! - **An error ends the stream**: the last item is `Err(ModelError)`.
//! - **Cancellation ends the stream silently**: when the token fires the
//!   stream stops promptly (checked between chunks and during backoff) with
//!   neither `Finish` nor an error. The caller owns the token, so it knows.
//! - **Transient failures are retried** (429 honouring `retry-after`, 5xx,
//!   connection resets, provider "overloaded" events) with exponential
//!   backoff, but only while no chunk has been emitted; once output has
//!   started a failure surfaces as an error (re-running would duplicate it).
//!
//! Selection is by the `INSTANCE_AI_MODEL` string, see [`ModelSpec`] and
//! [`provider_from_config`].

pub mod anthropic;
pub mod ollama;
#[cfg(feature = "bedrock")]
pub mod bedrock;
mod http;
pub mod openai;
pub mod scripted;
pub mod sse;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
pub use tokio_util::sync::CancellationToken;

/// The configuration key that selects the model; named in config errors.
pub const MODEL_ENV: &str = "INSTANCE_AI_MODEL";

// ---------------------------------------------------------------------------
// Conversation types
// ---------------------------------------------------------------------------

/// One entry of the conversation history, independent of any provider's
/// wire format. Serializable so the run loop can checkpoint the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "role",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Message {
    /// A user's chat message.
    User { text: String },
    /// One model turn, its parts in the order the model produced them.
    Assistant { parts: Vec<AssistantPart> },
    /// The result of one tool call, answering an `AssistantPart::ToolCall`
    /// with the same id. `content` is what the model sees (the run loop
    /// serializes and, for outside data, wraps it before putting it here).
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { text: text.into() }
    }
}

/// A part of an assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum AssistantPart {
    /// Reasoning ("thinking"). `signature` is the provider's opaque token
    /// (Anthropic, Bedrock/Claude) that must accompany the reasoning when it
    /// is sent back; reasoning without one is not replayed to the provider.
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    Text {
        text: String,
    },
    ToolCall {
        id: String,
        name: String,
        args: serde_json::Value,
    },
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: serde_json::Value,
}

/// How an HTTP provider reaches its server, beyond its own settings: the
/// client to use (the workflow engine passes one whose resolver is its SSRF
/// guard), extra request headers and extra top-level body fields (a chat
/// model node's sampling options). The default builds the provider's own
/// client and adds nothing.
#[derive(Debug, Clone, Default)]
pub struct Transport {
    pub client: Option<reqwest::Client>,
    pub headers: Vec<(String, String)>,
    /// Merged into the request body last (they win over the provider's own).
    pub extra_body: serde_json::Map<String, serde_json::Value>,
}

impl Transport {
    pub(crate) fn client(&self, provider: &str) -> Result<reqwest::Client, ModelError> {
        match &self.client {
            Some(c) => Ok(c.clone()),
            None => http::client(provider),
        }
    }

    pub(crate) fn extend_body(&self, body: &mut serde_json::Value) {
        if let Some(o) = body.as_object_mut() {
            for (k, v) in &self.extra_body {
                o.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Everything one model call needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

/// One item of a model's streamed output.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelChunk {
    ReasoningDelta(String),
    /// The opaque signature closing the current reasoning block (Anthropic
    /// `signature_delta`, Bedrock reasoning signature). Store it with the
    /// reasoning (`AssistantPart::Reasoning::signature`); never shown.
    ReasoningSignature(String),
    TextDelta(String),
    /// A tool call's arguments started streaming (→ `tool-input-start`).
    ToolInputStart {
        id: String,
        name: String,
    },
    /// A complete tool call, arguments assembled and parsed (→ `tool-call`).
    ToolCall {
        id: String,
        name: String,
        args: serde_json::Value,
    },
    /// The last chunk of a successful stream.
    Finish {
        reason: FinishReason,
        usage: Usage,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model ended its turn.
    Stop,
    /// The model wants its tool calls executed.
    ToolCalls,
    /// The output token limit was hit.
    Length,
    /// A content filter / guardrail / refusal stopped the output.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The stream every provider returns.
pub type ModelStream = BoxStream<'static, Result<ModelChunk, ModelError>>;

/// A language model. Object-safe: the run loop holds an `Arc<dyn ModelProvider>`
/// built once at init and reused for every invocation.
pub trait ModelProvider: Send + Sync {
    /// Provider name as reported in errors (`anthropic`, `openai`, ...).
    fn provider(&self) -> &str;
    /// Model name/id sent to the provider.
    fn model(&self) -> &str;
    /// Start one model call. Nothing happens until the stream is polled.
    /// See the module docs for the stream contract (one `Finish`, errors
    /// end the stream, cancellation ends it silently, retries before output).
    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream;
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelErrorKind {
    /// Bad or missing configuration (model string, API key, script file).
    Config,
    /// Could not reach the provider, or the connection broke.
    Connection,
    /// The provider answered with a non-success HTTP status.
    Http,
    /// The provider reported an error inside the stream.
    Api,
    /// The stream was malformed (bad SSE, bad JSON, ended early).
    Protocol,
    /// The scripted provider has no turn for this call.
    Script,
}

/// The one error type of the model layer. Maps onto the protocol's `error`
/// event (`content` = message, `provider`, `statusCode`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{provider}: {message}")]
pub struct ModelError {
    pub provider: String,
    pub kind: ModelErrorKind,
    pub status_code: Option<u16>,
    /// Whether trying again later may succeed.
    pub retryable: bool,
    pub message: String,
    /// The provider's `retry-after`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl ModelError {
    pub fn new(
        provider: impl Into<String>,
        kind: ModelErrorKind,
        message: impl Into<String>,
    ) -> Self {
        ModelError {
            provider: provider.into(),
            kind,
            status_code: None,
            retryable: false,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn config(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(provider, ModelErrorKind::Config, message)
    }

    pub fn protocol(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(provider, ModelErrorKind::Protocol, message)
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status_code = Some(status);
        self
    }

    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    pub fn with_retry_after(mut self, after: Option<Duration>) -> Self {
        self.retry_after = after;
        self
    }
}

/// Whether an HTTP status is worth retrying: rate limits, timeouts and
/// server-side failures (529 is Anthropic's "overloaded").
pub fn status_is_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429) || (500..=599).contains(&status)
}

// ---------------------------------------------------------------------------
// Retries
// ---------------------------------------------------------------------------

/// Exponential backoff for failures that happen before any output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Cap for the computed backoff.
    pub max_delay: Duration,
    /// A `retry-after` longer than this is not waited for: a Lambda step
    /// should fail visibly rather than sleep for minutes.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The delay before retry number `retry` (1-based), or `None` to give up.
    fn delay_for(&self, error: &ModelError, retry: u32) -> Option<Duration> {
        if !error.retryable || retry > self.max_retries {
            return None;
        }
        if let Some(after) = error.retry_after {
            return (after <= self.max_retry_after).then_some(after);
        }
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        let full = self.base_delay.saturating_mul(factor).min(self.max_delay);
        // "Equal jitter": half fixed, half random, so many Lambdas throttled
        // at once do not retry in lockstep.
        Some(full / 2 + full.mul_f64(rand::random::<f64>() / 2.0))
    }
}

/// Opens one attempt: the provider's request, answering with the decoded
/// chunk stream (or the error that prevented it).
pub(crate) type Attempt =
    Box<dyn FnMut() -> futures::future::BoxFuture<'static, Result<ModelStream, ModelError>> + Send>;

/// Runs attempts with the retry policy and the cancellation token; this is
/// the one place where the stream contract (see module docs) is enforced.
pub(crate) fn drive(
    provider: String,
    policy: RetryPolicy,
    cancel: CancellationToken,
    mut attempt: Attempt,
) -> ModelStream {
    Box::pin(async_stream::stream! {
        let mut retry = 0u32;
        'attempts: loop {
            let opened = tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                opened = attempt() => opened,
            };
            let mut inner = match opened {
                Ok(inner) => inner,
                Err(error) => {
                    retry += 1;
                    match policy.delay_for(&error, retry) {
                        Some(delay) => {
                            tracing::warn!(provider = %error.provider, status = ?error.status_code, ?delay, retry, error = %error.message, "model call failed, retrying");
                            if !sleep_unless_cancelled(delay, &cancel).await {
                                return;
                            }
                            continue 'attempts;
                        }
                        None => {
                            yield Err(error);
                            return;
                        }
                    }
                }
            };
            let mut emitted = false;
            loop {
                let next = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return,
                    next = inner.next() => next,
                };
                match next {
                    // Decoders report a premature end themselves; this keeps
                    // "ended silently" meaning "cancelled" even if one does not.
                    None => {
                        yield Err(ModelError::protocol(provider, "stream ended without a finish"));
                        return;
                    }
                    Some(Ok(chunk)) => {
                        emitted = true;
                        let done = matches!(chunk, ModelChunk::Finish { .. });
                        yield Ok(chunk);
                        if done {
                            return;
                        }
                    }
                    Some(Err(error)) => {
                        if !emitted {
                            retry += 1;
                            if let Some(delay) = policy.delay_for(&error, retry) {
                                tracing::warn!(provider = %error.provider, ?delay, retry, error = %error.message, "model stream failed before output, retrying");
                                if !sleep_unless_cancelled(delay, &cancel).await {
                                    return;
                                }
                                continue 'attempts;
                            }
                        }
                        yield Err(error);
                        return;
                    }
                }
            }
        }
    })
}

/// Sleeps; false if cancelled meanwhile.
async fn sleep_unless_cancelled(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

// ---------------------------------------------------------------------------
// Assembling a turn
// ---------------------------------------------------------------------------

/// Folds a chunk stream into the assistant [`Message`] to append to the
/// history (and collects the tool calls to execute). Consecutive deltas of
/// one kind are merged into one part; order is preserved.
#[derive(Debug, Clone, Default)]
pub struct TurnBuilder {
    parts: Vec<AssistantPart>,
    finish: Option<(FinishReason, Usage)>,
}

impl TurnBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, chunk: &ModelChunk) {
        match chunk {
            ModelChunk::ReasoningDelta(delta) => match self.parts.last_mut() {
                Some(AssistantPart::Reasoning {
                    text,
                    signature: None,
                }) => text.push_str(delta),
                _ => self.parts.push(AssistantPart::Reasoning {
                    text: delta.clone(),
                    signature: None,
                }),
            },
            ModelChunk::ReasoningSignature(sig) => match self.parts.last_mut() {
                Some(AssistantPart::Reasoning { signature, .. }) if signature.is_none() => {
                    *signature = Some(sig.clone())
                }
                // A signature for an empty reasoning block still has to be replayed.
                _ => self.parts.push(AssistantPart::Reasoning {
                    text: String::new(),
                    signature: Some(sig.clone()),
                }),
            },
            ModelChunk::TextDelta(delta) => match self.parts.last_mut() {
                Some(AssistantPart::Text { text }) => text.push_str(delta),
                _ => self.parts.push(AssistantPart::Text {
                    text: delta.clone(),
                }),
            },
            ModelChunk::ToolInputStart { .. } => {}
            ModelChunk::ToolCall { id, name, args } => self.parts.push(AssistantPart::ToolCall {
                id: id.clone(),
                name: name.clone(),
                args: args.clone(),
            }),
            ModelChunk::Finish { reason, usage } => self.finish = Some((reason.clone(), *usage)),
        }
    }

    pub fn parts(&self) -> &[AssistantPart] {
        &self.parts
    }

    /// `(reason, usage)` once the `Finish` chunk was pushed.
    pub fn finish(&self) -> Option<&(FinishReason, Usage)> {
        self.finish.as_ref()
    }

    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                AssistantPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    pub fn tool_calls(&self) -> Vec<(&str, &str, &serde_json::Value)> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                AssistantPart::ToolCall { id, name, args } => {
                    Some((id.as_str(), name.as_str(), args))
                }
                _ => None,
            })
            .collect()
    }

    pub fn into_message(self) -> Message {
        Message::Assistant { parts: self.parts }
    }
}

// ---------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------

/// A parsed `INSTANCE_AI_MODEL` value.
///
/// | value | provider |
/// |---|---|
/// | `anthropic:<model>` | Anthropic Messages API |
/// | `openai:<model>` | OpenAI Chat Completions |
/// | `openai-compatible:<base-url>:<model>` | any Chat-Completions server (Ollama, vLLM, llama.cpp) |
/// | `bedrock:<model-id>` | Amazon Bedrock ConverseStream |
/// | `scripted:<path>` | replays a JSON script (tests, local development) |
///
/// **`openai-compatible` rule**: the base URL must start with `http://` or
/// `https://`; it runs through the host, an optional `:<digits>` port and an
/// optional path, and ends at the first `:` after that; the rest is the
/// model, which may itself contain `:` (Ollama tags). So a base URL cannot
/// contain `:` in its path, and a model cannot be all digits when the URL
/// has no path. Examples:
/// `openai-compatible:http://localhost:11434/v1:llama3.1:8b` →
/// (`http://localhost:11434/v1`, `llama3.1:8b`);
/// `openai-compatible:http://[::1]:8000/v1:qwen` → (`http://[::1]:8000/v1`, `qwen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    Anthropic { model: String },
    OpenAi { model: String },
    OpenAiCompatible { base_url: String, model: String },
    Bedrock { model_id: String },
    Scripted { path: PathBuf },
}

impl FromStr for ModelSpec {
    type Err = ModelError;

    fn from_str(value: &str) -> Result<Self, ModelError> {
        let value = value.trim();
        let bad =
            |msg: String| ModelError::config("config", format!("{MODEL_ENV}={value:?}: {msg}"));
        let Some((kind, rest)) = value.split_once(':') else {
            return Err(bad(
                "expected <provider>:<model>, e.g. anthropic:claude-sonnet-4-5".into(),
            ));
        };
        let nonempty = |s: &str, what: &str| {
            if s.trim().is_empty() {
                Err(bad(format!("missing {what}")))
            } else {
                Ok(s.trim().to_string())
            }
        };
        match kind {
            "anthropic" => Ok(ModelSpec::Anthropic { model: nonempty(rest, "model")? }),
            "openai" => Ok(ModelSpec::OpenAi { model: nonempty(rest, "model")? }),
            "bedrock" => Ok(ModelSpec::Bedrock { model_id: nonempty(rest, "model id")? }),
            "scripted" => Ok(ModelSpec::Scripted { path: PathBuf::from(nonempty(rest, "script path")?) }),
            "openai-compatible" => {
                let (base_url, model) = split_compatible(rest).map_err(bad)?;
                Ok(ModelSpec::OpenAiCompatible { base_url, model })
            }
            other => Err(bad(format!(
                "unknown provider {other:?} (expected anthropic, openai, openai-compatible, bedrock or scripted)"
            ))),
        }
    }
}

/// Splits `<base-url>:<model>`; see the rule on [`ModelSpec`].
fn split_compatible(rest: &str) -> Result<(String, String), String> {
    let usage = "expected openai-compatible:<http(s)://host[:port][/path]>:<model>";
    let after_scheme = if rest.starts_with("http://") {
        "http://".len()
    } else if rest.starts_with("https://") {
        "https://".len()
    } else {
        return Err(format!(
            "base URL must start with http:// or https:// ({usage})"
        ));
    };
    let bytes = rest.as_bytes();
    let mut i = after_scheme;
    // Host: a bracketed IPv6 literal, or up to the next '/' or ':'.
    if bytes.get(i) == Some(&b'[') {
        match rest[i..].find(']') {
            Some(close) => i += close + 1,
            None => return Err(format!("unterminated IPv6 host ({usage})")),
        }
    } else {
        while i < bytes.len() && bytes[i] != b'/' && bytes[i] != b':' {
            i += 1;
        }
    }
    if i == after_scheme {
        return Err(format!("missing host ({usage})"));
    }
    // Port: ':' + digits, followed by '/', ':' or the end.
    if bytes.get(i) == Some(&b':') {
        let digits = rest[i + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let after = i + 1 + digits;
        if digits > 0 && matches!(bytes.get(after), None | Some(b'/') | Some(b':')) {
            i = after;
        }
    }
    // Path: up to the next ':'.
    if bytes.get(i) == Some(&b'/') {
        while i < bytes.len() && bytes[i] != b':' {
            i += 1;
        }
    }
    if bytes.get(i) != Some(&b':') {
        return Err(format!("missing model after the base URL ({usage})"));
    }
    let base = rest[..i].trim_end_matches('/').to_string();
    let model = rest[i + 1..].trim();
    if model.is_empty() {
        return Err(format!("missing model after the base URL ({usage})"));
    }
    Ok((base, model.to_string()))
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSpec::Anthropic { model } => write!(f, "anthropic:{model}"),
            ModelSpec::OpenAi { model } => write!(f, "openai:{model}"),
            ModelSpec::OpenAiCompatible { base_url, model } => {
                write!(f, "openai-compatible:{base_url}:{model}")
            }
            ModelSpec::Bedrock { model_id } => write!(f, "bedrock:{model_id}"),
            ModelSpec::Scripted { path } => write!(f, "scripted:{}", path.display()),
        }
    }
}

/// Builds the provider named by the configured model string (the validated
/// `Config.model`), reading keys and URLs from the process environment:
/// `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_MAX_TOKENS`,
/// `ANTHROPIC_THINKING_BUDGET`; `OPENAI_API_KEY`, `OPENAI_BASE_URL`;
/// `OPENAI_COMPATIBLE_API_KEY` (optional); AWS's usual chain for Bedrock
/// (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME` overrides its endpoint) plus
/// `BEDROCK_MAX_TOKENS`, `BEDROCK_THINKING_BUDGET`.
/// Call once at init.
pub async fn provider_from_config(
    model: Option<&str>,
) -> Result<Arc<dyn ModelProvider>, ModelError> {
    provider_from_config_with_env(model, |key| std::env::var(key).ok()).await
}

/// [`provider_from_config`] with an explicit environment (for tests).
pub async fn provider_from_config_with_env(
    model: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn ModelProvider>, ModelError> {
    let model = model.map(str::trim).filter(|m| !m.is_empty()).ok_or_else(|| {
        ModelError::config(
            "config",
            format!("no model configured: set {MODEL_ENV} (e.g. anthropic:claude-sonnet-4-5, openai:gpt-4.1, bedrock:<model-id>, scripted:<path>)"),
        )
    })?;
    let spec: ModelSpec = model.parse()?;
    let env = |key: &str| {
        env(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let provider: Arc<dyn ModelProvider> = match spec {
        ModelSpec::Anthropic { model } => {
            let api_key = env("ANTHROPIC_API_KEY").ok_or_else(|| {
                ModelError::config(
                    "anthropic",
                    format!("{MODEL_ENV}=anthropic:… needs ANTHROPIC_API_KEY"),
                )
            })?;
            let mut config = anthropic::AnthropicConfig::new(api_key, model);
            if let Some(url) = env("ANTHROPIC_BASE_URL") {
                config.base_url = url;
            }
            if let Some(v) = env("ANTHROPIC_MAX_TOKENS") {
                config.max_tokens = parse_number("ANTHROPIC_MAX_TOKENS", &v)?;
            }
            if let Some(v) = env("ANTHROPIC_THINKING_BUDGET") {
                config.thinking_budget = Some(parse_number("ANTHROPIC_THINKING_BUDGET", &v)?);
            }
            Arc::new(anthropic::AnthropicProvider::new(config)?)
        }
        ModelSpec::OpenAi { model } => {
            let api_key = env("OPENAI_API_KEY").ok_or_else(|| {
                ModelError::config(
                    "openai",
                    format!("{MODEL_ENV}=openai:… needs OPENAI_API_KEY"),
                )
            })?;
            let mut config = openai::OpenAiConfig::openai(api_key, model);
            if let Some(url) = env("OPENAI_BASE_URL") {
                config.base_url = url;
            }
            Arc::new(openai::OpenAiProvider::new(config)?)
        }
        ModelSpec::OpenAiCompatible { base_url, model } => {
            let config =
                openai::OpenAiConfig::compatible(base_url, model, env("OPENAI_COMPATIBLE_API_KEY"));
            Arc::new(openai::OpenAiProvider::new(config)?)
        }
        #[cfg(not(feature = "bedrock"))]
        ModelSpec::Bedrock { .. } => {
            return Err(ModelError::config("bedrock", "this build has no Bedrock provider (the `bedrock` feature)"));
        }
        #[cfg(feature = "bedrock")]
        ModelSpec::Bedrock { model_id } => {
            let mut options = bedrock::BedrockOptions::default();
            if let Some(v) = env("BEDROCK_MAX_TOKENS") {
                options.max_tokens = Some(parse_number("BEDROCK_MAX_TOKENS", &v)?);
            }
            if let Some(v) = env("BEDROCK_THINKING_BUDGET") {
                options.thinking_budget = Some(parse_number("BEDROCK_THINKING_BUDGET", &v)?);
            }
            Arc::new(bedrock::BedrockProvider::from_env(model_id, options).await)
        }
        ModelSpec::Scripted { path } => Arc::new(scripted::ScriptedProvider::from_file(&path)?),
    };
    tracing::info!(
        provider = provider.provider(),
        model = provider.model(),
        "model provider configured"
    );
    Ok(provider)
}

fn parse_number(key: &str, value: &str) -> Result<u32, ModelError> {
    value.parse().map_err(|_| {
        ModelError::config(
            "config",
            format!("{key}={value:?} is not a positive integer"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compat(s: &str) -> Result<(String, String), String> {
        split_compatible(s)
    }

    #[test]
    fn openai_compatible_split_rule() {
        let ok = |s: &str, b: &str, m: &str| {
            assert_eq!(compat(s), Ok((b.to_string(), m.to_string())), "{s}")
        };
        ok(
            "http://localhost:11434/v1:llama3.1",
            "http://localhost:11434/v1",
            "llama3.1",
        );
        ok(
            "http://localhost:11434/v1:llama3.1:8b",
            "http://localhost:11434/v1",
            "llama3.1:8b",
        );
        ok(
            "http://localhost:8080:qwen",
            "http://localhost:8080",
            "qwen",
        );
        ok("http://localhost:qwen:7b", "http://localhost", "qwen:7b");
        ok(
            "https://vllm.internal/v1/:m",
            "https://vllm.internal/v1",
            "m",
        );
        ok("http://[::1]:8000/v1:qwen", "http://[::1]:8000/v1", "qwen");
        ok("http://127.0.0.1:8000:8b", "http://127.0.0.1:8000", "8b");
        assert!(compat("localhost:11434/v1:llama").is_err());
        assert!(compat("http://localhost:11434/v1").is_err());
        assert!(compat("http://localhost:11434/v1:").is_err());
        assert!(compat("http://localhost:11434").is_err());
        assert!(compat("http://:11434/v1:m").is_err());
    }

    #[test]
    fn spec_parse_and_display() {
        let spec: ModelSpec = "openai-compatible:http://localhost:11434/v1:llama3.1"
            .parse()
            .expect("valid");
        assert_eq!(
            spec.to_string(),
            "openai-compatible:http://localhost:11434/v1:llama3.1"
        );
        assert_eq!(
            "anthropic:claude-sonnet-4-5".parse::<ModelSpec>().ok(),
            Some(ModelSpec::Anthropic {
                model: "claude-sonnet-4-5".into()
            })
        );
        assert_eq!(
            "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0"
                .parse::<ModelSpec>()
                .ok(),
            Some(ModelSpec::Bedrock {
                model_id: "anthropic.claude-3-5-sonnet-20240620-v1:0".into()
            })
        );
        for bad in [
            "",
            "anthropic",
            "anthropic:",
            "gemini:pro",
            "openai-compatible:llama",
        ] {
            let err = bad.parse::<ModelSpec>().expect_err(bad);
            assert!(err.message.contains(MODEL_ENV), "{err}");
        }
    }

    #[test]
    fn backoff_doubles_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            ..RetryPolicy::default()
        };
        let transient = ModelError::new("p", ModelErrorKind::Http, "x").retryable(true);
        let within = |d: Option<Duration>, full: u64| {
            d.is_some_and(|d| {
                d >= Duration::from_millis(full / 2) && d <= Duration::from_millis(full)
            })
        };
        assert!(within(policy.delay_for(&transient, 1), 100));
        assert!(within(policy.delay_for(&transient, 3), 400));
        assert_eq!(policy.delay_for(&transient, 4), None);
        let limited = transient
            .clone()
            .with_retry_after(Some(Duration::from_secs(2)));
        assert_eq!(policy.delay_for(&limited, 1), Some(Duration::from_secs(2)));
        let too_long = transient
            .clone()
            .with_retry_after(Some(Duration::from_secs(600)));
        assert_eq!(policy.delay_for(&too_long, 1), None);
        assert_eq!(policy.delay_for(&transient.retryable(false), 1), None);
    }

    #[test]
    fn turn_builder_merges_deltas() {
        let mut turn = TurnBuilder::new();
        for chunk in [
            ModelChunk::ReasoningDelta("a".into()),
            ModelChunk::ReasoningDelta("b".into()),
            ModelChunk::ReasoningSignature("sig".into()),
            ModelChunk::TextDelta("Hel".into()),
            ModelChunk::TextDelta("lo".into()),
            ModelChunk::ToolInputStart {
                id: "1".into(),
                name: "t".into(),
            },
            ModelChunk::ToolCall {
                id: "1".into(),
                name: "t".into(),
                args: serde_json::json!({"a": 1}),
            },
            ModelChunk::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage::default(),
            },
        ] {
            turn.push(&chunk);
        }
        assert_eq!(turn.text(), "Hello");
        assert_eq!(turn.tool_calls().len(), 1);
        assert_eq!(
            turn.into_message(),
            Message::Assistant {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: "ab".into(),
                        signature: Some("sig".into())
                    },
                    AssistantPart::Text {
                        text: "Hello".into()
                    },
                    AssistantPart::ToolCall {
                        id: "1".into(),
                        name: "t".into(),
                        args: serde_json::json!({"a": 1})
                    },
                ]
            }
        );
    }

    #[test]
    fn message_serde_shape() {
        let m = Message::ToolResult {
            tool_call_id: "c1".into(),
            tool_name: "t".into(),
            content: "ok".into(),
            is_error: false,
        };
        let v = serde_json::to_value(&m).expect("serializes");
        assert_eq!(
            v,
            serde_json::json!({"role": "toolResult", "toolCallId": "c1", "toolName": "t", "content": "ok", "isError": false})
        );
        let back: Message = serde_json::from_value(v).expect("round trip");
        assert_eq!(back, m);
    }
}
