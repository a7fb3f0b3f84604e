//! Amazon Bedrock ConverseStream, through `aws-sdk-bedrockruntime`.
//!
//! The event mapping ([`ConverseStreamState`]) and the request conversion
//! ([`converse_messages`]) are tested locally with constructed SDK types.
//! The live path (credentials, endpoint, the SDK's event-stream decoding)
//! has no local stand-in (moto has no bedrock-runtime) and is untested here.
//!
//! The SDK's own retries are disabled so that [`super::RetryPolicy`] is the
//! only retry layer, with the same "only before output" rule as the others.
//! `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` overrides the endpoint (standard AWS
//! configuration); note a global `AWS_ENDPOINT_URL` (moto) applies too.

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::types::{
    self as bt, ContentBlock, ContentBlockDelta, ContentBlockStart, ConversationRole,
    ConverseStreamOutput, ReasoningContentBlockDelta, StopReason,
};
use aws_smithy_types::{Document, Number};
use futures::stream::BoxStream;
use serde_json::Value;

use super::{
    drive, AssistantPart, CancellationToken, FinishReason, Message, ModelChunk, ModelError,
    ModelErrorKind, ModelProvider, ModelRequest, ModelStream, RetryPolicy, Usage,
};

const PROVIDER: &str = "bedrock";

pub struct BedrockProvider {
    inner: Arc<Inner>,
}

struct Inner {
    client: aws_sdk_bedrockruntime::Client,
    model_id: String,
    options: BedrockOptions,
}

#[derive(Debug, Clone, Default)]
pub struct BedrockOptions {
    /// `inferenceConfig.maxTokens`; `None` leaves the model's default.
    pub max_tokens: Option<u32>,
    /// Claude extended thinking budget, sent as an additional model request
    /// field (`thinking: {type: enabled, budget_tokens}`); Claude models only.
    pub thinking_budget: Option<u32>,
    /// `inferenceConfig.temperature` / `topP`; `None` leaves the model's default.
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    /// Model-specific request fields (n8n's "Additional Model Request Fields").
    pub additional_fields: Option<Value>,
    pub retry: RetryPolicy,
}

/// The agent's Bedrock client's HTTPS client: the one every SDK client of
/// ours uses (`sdk_http`: HTTP/1.1, rustls on ring, Mozilla's roots).
pub fn https_client() -> aws_sdk_bedrockruntime::config::SharedHttpClient {
    sdk_http::https_client()
}

impl BedrockProvider {
    /// Uses the standard AWS configuration chain (region, credentials).
    pub async fn from_env(model_id: String, options: BedrockOptions) -> Self {
        let shared = aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(https_client()).load().await;
        let config = aws_sdk_bedrockruntime::config::Builder::from(&shared)
            .retry_config(aws_sdk_bedrockruntime::config::retry::RetryConfig::disabled())
            .build();
        Self::new(
            aws_sdk_bedrockruntime::Client::from_conf(config),
            model_id,
            options,
        )
    }

    pub fn new(
        client: aws_sdk_bedrockruntime::Client,
        model_id: String,
        options: BedrockOptions,
    ) -> Self {
        BedrockProvider {
            inner: Arc::new(Inner {
                client,
                model_id,
                options,
            }),
        }
    }
}

impl ModelProvider for BedrockProvider {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.inner.model_id
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let inner = self.inner.clone();
        let request = Arc::new(request);
        drive(
            PROVIDER.to_string(),
            inner.options.retry,
            cancel,
            Box::new(move || {
                let inner = inner.clone();
                let request = request.clone();
                Box::pin(async move {
                    let messages = converse_messages(&request.messages)?;
                    let mut call = inner
                        .client
                        .converse_stream()
                        .model_id(&inner.model_id)
                        .set_messages(Some(messages));
                    if !request.system.is_empty() {
                        call = call.system(bt::SystemContentBlock::Text(request.system.clone()));
                    }
                    if let Some(tools) = tool_config(&request)? {
                        call = call.tool_config(tools);
                    }
                    let o = &inner.options;
                    if o.max_tokens.is_some() || o.temperature.is_some() || o.top_p.is_some() {
                        let mut config = bt::InferenceConfiguration::builder();
                        if let Some(max) = o.max_tokens {
                            config = config.max_tokens(i32::try_from(max).unwrap_or(i32::MAX));
                        }
                        if let Some(t) = o.temperature {
                            config = config.temperature(t);
                        }
                        if let Some(p) = o.top_p {
                            config = config.top_p(p);
                        }
                        call = call.inference_config(config.build());
                    }
                    let mut fields = o.additional_fields.clone().unwrap_or(Value::Null);
                    if let Some(budget) = o.thinking_budget {
                        if !fields.is_object() {
                            fields = serde_json::json!({});
                        }
                        fields["thinking"] = serde_json::json!({"type": "enabled", "budget_tokens": budget});
                    }
                    if fields.is_object() {
                        call = call.additional_model_request_fields(json_to_document(&fields));
                    }
                    tracing::debug!(model = %inner.model_id, "bedrock converse_stream");
                    let output = call.send().await.map_err(|e| sdk_error(&e))?;
                    Ok(events(output.stream))
                })
            }),
        )
    }
}

fn events(
    mut receiver: aws_sdk_bedrockruntime::primitives::event_stream::EventReceiver<
        ConverseStreamOutput,
        bt::error::ConverseStreamOutputError,
    >,
) -> BoxStream<'static, Result<ModelChunk, ModelError>> {
    Box::pin(async_stream::stream! {
        let mut state = ConverseStreamState::default();
        loop {
            let chunks = match receiver.recv().await {
                Ok(Some(event)) => state.map_event(event),
                Ok(None) => {
                    for chunk in state.finish()? {
                        yield Ok(chunk);
                    }
                    return;
                }
                Err(e) => Err(sdk_error(&e)),
            };
            for chunk in chunks? {
                yield Ok(chunk);
            }
        }
    })
}

fn build_error(what: &str, e: impl std::fmt::Display) -> ModelError {
    ModelError::protocol(PROVIDER, format!("cannot build {what}: {e}"))
}

/// The history as Converse messages: roles alternate, so consecutive
/// same-role entries are merged (tool results go in a user message).
pub fn converse_messages(history: &[Message]) -> Result<Vec<bt::Message>, ModelError> {
    let mut grouped: Vec<(ConversationRole, Vec<ContentBlock>)> = Vec::new();
    for message in history {
        let (role, blocks) = match message {
            Message::User { text } => (
                ConversationRole::User,
                if text.is_empty() {
                    vec![]
                } else {
                    vec![ContentBlock::Text(text.clone())]
                },
            ),
            Message::Assistant { parts } => {
                let mut blocks = Vec::new();
                for part in parts {
                    match part {
                        // Reasoning goes back only with its signature.
                        AssistantPart::Reasoning {
                            text,
                            signature: Some(sig),
                        } => {
                            let block = bt::ReasoningTextBlock::builder()
                                .text(text)
                                .signature(sig)
                                .build()
                                .map_err(|e| build_error("reasoning block", e))?;
                            blocks.push(ContentBlock::ReasoningContent(
                                bt::ReasoningContentBlock::ReasoningText(block),
                            ));
                        }
                        AssistantPart::Reasoning {
                            signature: None, ..
                        } => {}
                        AssistantPart::Text { text } if text.is_empty() => {}
                        AssistantPart::Text { text } => {
                            blocks.push(ContentBlock::Text(text.clone()))
                        }
                        AssistantPart::ToolCall { id, name, args } => {
                            let block = bt::ToolUseBlock::builder()
                                .tool_use_id(id)
                                .name(name)
                                .input(json_to_document(args))
                                .build()
                                .map_err(|e| build_error("tool use block", e))?;
                            blocks.push(ContentBlock::ToolUse(block));
                        }
                    }
                }
                (ConversationRole::Assistant, blocks)
            }
            Message::ToolResult {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let mut builder = bt::ToolResultBlock::builder()
                    .tool_use_id(tool_call_id)
                    .content(bt::ToolResultContentBlock::Text(content.clone()));
                if *is_error {
                    builder = builder.status(bt::ToolResultStatus::Error);
                }
                let block = builder
                    .build()
                    .map_err(|e| build_error("tool result block", e))?;
                (
                    ConversationRole::User,
                    vec![ContentBlock::ToolResult(block)],
                )
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match grouped.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => grouped.push((role, blocks)),
        }
    }
    grouped
        .into_iter()
        .map(|(role, content)| {
            bt::Message::builder()
                .role(role)
                .set_content(Some(content))
                .build()
                .map_err(|e| build_error("message", e))
        })
        .collect()
}

fn tool_config(request: &ModelRequest) -> Result<Option<bt::ToolConfiguration>, ModelError> {
    if request.tools.is_empty() {
        return Ok(None);
    }
    let mut tools = Vec::new();
    for tool in &request.tools {
        let spec = bt::ToolSpecification::builder()
            .name(&tool.name)
            .description(&tool.description)
            .input_schema(bt::ToolInputSchema::Json(json_to_document(
                &tool.input_schema,
            )))
            .build()
            .map_err(|e| build_error("tool specification", e))?;
        tools.push(bt::Tool::ToolSpec(spec));
    }
    bt::ToolConfiguration::builder()
        .set_tools(Some(tools))
        .build()
        .map(Some)
        .map_err(|e| build_error("tool configuration", e))
}

/// Maps ConverseStream events to chunks. Bedrock sends `messageStop`
/// before `metadata` (usage), so `Finish` is emitted by [`Self::finish`]
/// at the end of the stream.
#[derive(Debug, Default)]
pub struct ConverseStreamState {
    tools: HashMap<i32, (String, String, String)>,
    stop: Option<FinishReason>,
    usage: Usage,
}

impl ConverseStreamState {
    pub fn map_event(
        &mut self,
        event: ConverseStreamOutput,
    ) -> Result<Vec<ModelChunk>, ModelError> {
        let mut out = Vec::new();
        match event {
            ConverseStreamOutput::MessageStart(_) => {}
            ConverseStreamOutput::ContentBlockStart(start) => {
                if let Some(ContentBlockStart::ToolUse(tool)) = start.start {
                    out.push(ModelChunk::ToolInputStart {
                        id: tool.tool_use_id.clone(),
                        name: tool.name.clone(),
                    });
                    self.tools.insert(
                        start.content_block_index,
                        (tool.tool_use_id, tool.name, String::new()),
                    );
                }
            }
            ConverseStreamOutput::ContentBlockDelta(delta) => match delta.delta {
                Some(ContentBlockDelta::Text(text)) if !text.is_empty() => {
                    out.push(ModelChunk::TextDelta(text))
                }
                Some(ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text(
                    text,
                ))) if !text.is_empty() => out.push(ModelChunk::ReasoningDelta(text)),
                Some(ContentBlockDelta::ReasoningContent(
                    ReasoningContentBlockDelta::Signature(sig),
                )) => out.push(ModelChunk::ReasoningSignature(sig)),
                Some(ContentBlockDelta::ToolUse(tool)) => {
                    match self.tools.get_mut(&delta.content_block_index) {
                        Some((_, _, json)) => json.push_str(&tool.input),
                        None => {
                            return Err(ModelError::protocol(
                                PROVIDER,
                                format!(
                                    "tool input delta for block {} without a tool use start",
                                    delta.content_block_index
                                ),
                            ))
                        }
                    }
                }
                _ => {} // redacted reasoning, citations, images, future deltas
            },
            ConverseStreamOutput::ContentBlockStop(stop) => {
                if let Some((id, name, json)) = self.tools.remove(&stop.content_block_index) {
                    let args = if json.trim().is_empty() {
                        serde_json::json!({})
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
            ConverseStreamOutput::MessageStop(stop) => {
                self.stop = Some(match stop.stop_reason {
                    StopReason::EndTurn | StopReason::StopSequence => FinishReason::Stop,
                    StopReason::ToolUse => FinishReason::ToolCalls,
                    StopReason::MaxTokens | StopReason::ModelContextWindowExceeded => {
                        FinishReason::Length
                    }
                    StopReason::ContentFiltered | StopReason::GuardrailIntervened => {
                        FinishReason::ContentFilter
                    }
                    other => FinishReason::Other(other.as_str().to_string()),
                });
            }
            ConverseStreamOutput::Metadata(meta) => {
                if let Some(usage) = meta.usage {
                    self.usage = Usage {
                        input_tokens: u64::try_from(usage.input_tokens).unwrap_or(0),
                        output_tokens: u64::try_from(usage.output_tokens).unwrap_or(0),
                    };
                }
            }
            _ => {} // event types newer than this SDK
        }
        Ok(out)
    }

    /// The end of the event stream: `Finish`, or an error if it was cut.
    pub fn finish(&mut self) -> Result<Vec<ModelChunk>, ModelError> {
        match self.stop.take() {
            Some(reason) => Ok(vec![ModelChunk::Finish {
                reason,
                usage: self.usage,
            }]),
            None => Err(ModelError::new(
                PROVIDER,
                ModelErrorKind::Connection,
                "stream ended before messageStop",
            )
            .retryable(true)),
        }
    }
}

/// Maps an SDK error (from `send` or from the event stream) by its error
/// code, which both carry.
pub fn sdk_error<E, R>(error: &SdkError<E, R>) -> ModelError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let message = DisplayErrorContext(error).to_string();
    match error {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
            return ModelError::new(PROVIDER, ModelErrorKind::Connection, message).retryable(true)
        }
        SdkError::ConstructionFailure(_) => return ModelError::config(PROVIDER, message),
        _ => {}
    }
    let code = error.code().unwrap_or("Unknown");
    let status = code_status(code);
    let text = error
        .message()
        .map(|m| format!("{code}: {m}"))
        .unwrap_or(message);
    let mut e = ModelError::new(PROVIDER, ModelErrorKind::Api, text)
        .retryable(status.is_some_and(super::status_is_retryable));
    e.status_code = status;
    e
}

/// The HTTP status Bedrock documents for each error code.
pub fn code_status(code: &str) -> Option<u16> {
    Some(match code {
        "ThrottlingException" | "ModelNotReadyException" => 429,
        "ServiceUnavailableException" => 503,
        "InternalServerException" => 500,
        "ModelTimeoutException" => 408,
        "ModelStreamErrorException" | "ModelErrorException" => 424,
        "ValidationException" => 400,
        "AccessDeniedException" => 403,
        "ResourceNotFoundException" => 404,
        "ServiceQuotaExceededException" => 400,
        "ConflictException" => 400,
        _ => return None,
    })
}

pub fn json_to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or(0.0))
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(json_to_document).collect()),
        Value::Object(map) => Document::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), json_to_document(v)))
                .collect(),
        ),
    }
}

pub fn document_to_json(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Document::String(s) => Value::String(s.clone()),
        Document::Array(items) => Value::Array(items.iter().map(document_to_json).collect()),
        Document::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), document_to_json(v)))
                .collect(),
        ),
        #[allow(unreachable_patterns)]
        _ => Value::Null,
    }
}
