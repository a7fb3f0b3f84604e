//! Chat models: the sub-nodes `lmChatOpenAi` (any OpenAI-compatible base
//! URL, from the node's options or the credential) and `lmChatAnthropic`,
//! each a [`ChatModel`] speaking its provider's wire format through the
//! engine's SSRF-guarded transport (`nodes::http::send`), with the node's
//! per-call timeout and retries.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::{locator_value, NodeContext};
use crate::data::TokenUsage;
use crate::error::{EngineError, Result};
use crate::nodes::http::{send, Redirects, Request};
use crate::run::Env;

/// One message of a conversation, provider-neutral.
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
}

/// A chat model a model sub-node supplies.
pub trait ChatModel {
    fn chat(&self, env: &Env, req: &ChatRequest<'_>) -> Result<ChatResponse>;
    /// The call options as run data shows them (no secrets).
    fn options(&self) -> Value;
}

/// The model `node` (an `ai_languageModel` sub-node) supplies, its parameters
/// resolved for item `item`.
pub fn supply(ctx: &mut NodeContext<'_>, item: usize) -> Result<Box<dyn ChatModel>> {
    if let Some(hosted) = ctx.env.host.chat_models.as_ref().and_then(|p| p.model(ctx.node)) {
        return hosted.map_err(EngineError::Host);
    }
    let common = Common::read(ctx, item)?;
    match ctx.node.node_type.as_str() {
        "@n8n/n8n-nodes-langchain.lmChatOpenAi" => Ok(Box::new(OpenAi::new(ctx, item, common)?)),
        "@n8n/n8n-nodes-langchain.lmChatAnthropic" => Ok(Box::new(Anthropic::new(ctx, item, common)?)),
        other => Err(EngineError::node(format!("{other} is not a chat model this instance supports"))),
    }
}

/// Options every model node has.
#[derive(Debug, Clone)]
struct Common {
    model: String,
    temperature: Option<f64>,
    max_tokens: Option<i64>,
    top_p: Option<f64>,
    timeout: Duration,
    max_retries: u32,
}

impl Common {
    fn read(ctx: &mut NodeContext<'_>, item: usize) -> Result<Self> {
        let default_model = if ctx.node.node_type.ends_with("lmChatAnthropic") { "claude-3-5-sonnet-20240620" } else { "gpt-4o-mini" };
        let model = ctx.param_opt("model", item)?.map(|v| locator_value(&v)).filter(|m| !m.is_empty()).unwrap_or_else(|| default_model.to_owned());
        let num = |v: Option<Value>| v.and_then(|v| v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok())));
        let temperature = num(ctx.param_opt("options.temperature", item)?);
        let max_tokens = num(ctx.param_opt("options.maxTokens", item)?).or(num(ctx.param_opt("options.maxTokensToSample", item)?)).map(|n| n as i64).filter(|n| *n > 0);
        let top_p = num(ctx.param_opt("options.topP", item)?);
        let timeout_ms = num(ctx.param_opt("options.timeout", item)?).filter(|t| *t > 0.0).unwrap_or(60_000.0);
        let max_retries = num(ctx.param_opt("options.maxRetries", item)?).unwrap_or(2.0).clamp(0.0, 10.0) as u32;
        Ok(Common { model, temperature, max_tokens, top_p, timeout: Duration::from_millis(timeout_ms as u64), max_retries })
    }
}

/// Sends a JSON POST, retrying 429/5xx and transport failures `retries` times.
fn post(env: &Env, url: &str, headers: Vec<(String, String)>, body: &Value, timeout: Duration, retries: u32) -> Result<Value> {
    let url = url::Url::parse(url).map_err(|e| EngineError::node(format!("Invalid model base URL '{url}': {e}")))?;
    let mut headers = headers;
    headers.push(("content-type".into(), "application/json".into()));
    let req = Request { method: reqwest::Method::POST, url, headers, body: Some(serde_json::to_vec(body)?), timeout, redirects: Redirects::NONE, insecure: false, digest: None };
    let mut attempt = 0;
    loop {
        let res = send(env, &req);
        let retry = match &res {
            Ok(r) => r.status == 429 || r.status >= 500,
            Err(EngineError::Canceled | EngineError::Forbidden(_)) => false,
            Err(_) => true,
        };
        if retry && attempt < retries {
            attempt += 1;
            if crate::run::sleep_cancellable(Duration::from_millis(250 * 2u64.pow(attempt - 1)), env) {
                return Err(EngineError::Canceled);
            }
            continue;
        }
        let resp = res?;
        let text = String::from_utf8_lossy(&resp.body).into_owned();
        if !(200..300).contains(&resp.status) {
            let detail: String = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| text.chars().take(300).collect());
            return Err(EngineError::Node { message: format!("The model provider answered {}: {detail}", resp.status), description: None, http_code: Some(resp.status.to_string()) });
        }
        return serde_json::from_str(&text).map_err(|e| EngineError::node(format!("The model provider's answer is not JSON: {e}")));
    }
}

fn bearer(key: &str) -> (String, String) {
    ("authorization".into(), format!("Bearer {key}"))
}

/// OpenAI chat completions (and every server that speaks them).
struct OpenAi {
    base: String,
    api_key: String,
    organization: Option<String>,
    common: Common,
    extra: Map<String, Value>,
}

impl OpenAi {
    fn new(ctx: &mut NodeContext<'_>, item: usize, common: Common) -> Result<Self> {
        let cred = ctx.credential("openAiApi")?;
        let from_options = ctx.param_str("options.baseURL", item, "")?;
        let from_cred = cred.get("url").and_then(Value::as_str).unwrap_or_default().to_owned();
        let base = [from_options, from_cred].into_iter().find(|s| !s.trim().is_empty()).unwrap_or_else(|| "https://api.openai.com/v1".into());
        let mut extra = Map::new();
        for (param, key) in [("options.frequencyPenalty", "frequency_penalty"), ("options.presencePenalty", "presence_penalty")] {
            if let Some(v) = ctx.param_opt(param, item)?.filter(Value::is_number) {
                extra.insert(key.into(), v);
            }
        }
        if ctx.param_str("options.responseFormat", item, "text")? == "json_object" {
            extra.insert("response_format".into(), json!({"type": "json_object"}));
        }
        Ok(OpenAi {
            base: base.trim_end_matches('/').to_owned(),
            api_key: cred.get("apiKey").map(crate::nodes::js_string).unwrap_or_default(),
            organization: cred.get("organizationId").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned),
            common,
            extra,
        })
    }
}

fn openai_messages(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { content, tool_calls } if tool_calls.is_empty() => json!({"role": "assistant", "content": content}),
            Message::Assistant { content, tool_calls } => json!({
                "role": "assistant",
                "content": if content.is_empty() { Value::Null } else { json!(content) },
                "tool_calls": tool_calls.iter().map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}})).collect::<Vec<_>>(),
            }),
            Message::Tool { tool_call_id, content, .. } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        })
        .collect()
}

impl ChatModel for OpenAi {
    fn chat(&self, env: &Env, req: &ChatRequest<'_>) -> Result<ChatResponse> {
        let mut body = json!({"model": self.common.model, "messages": openai_messages(req.messages)});
        let o = body.as_object_mut().expect("object literal");
        if !req.tools.is_empty() {
            o.insert("tools".into(), req.tools.iter().map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})).collect());
        }
        if let Some(t) = self.common.temperature {
            o.insert("temperature".into(), json!(t));
        }
        if let Some(m) = self.common.max_tokens {
            o.insert("max_tokens".into(), json!(m));
        }
        if let Some(p) = self.common.top_p {
            o.insert("top_p".into(), json!(p));
        }
        o.extend(self.extra.clone());
        let mut headers = vec![bearer(&self.api_key)];
        if let Some(org) = &self.organization {
            headers.push(("openai-organization".into(), org.clone()));
        }
        let v = post(env, &format!("{}/chat/completions", self.base), headers, &body, self.common.timeout, self.common.max_retries)?;
        let msg = v.pointer("/choices/0/message").ok_or_else(|| EngineError::node("The model's answer has no choices[0].message"))?;
        let tool_calls = msg
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        let args = c.pointer("/function/arguments").cloned().unwrap_or(Value::Null);
                        // arguments arrive as a JSON string
                        let arguments = match &args {
                            Value::String(s) if s.trim().is_empty() => json!({}),
                            Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                            _ => args,
                        };
                        ToolCall {
                            id: c.get("id").map(crate::nodes::js_string).unwrap_or_default(),
                            name: c.pointer("/function/name").map(crate::nodes::js_string).unwrap_or_default(),
                            arguments,
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let n = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let usage = TokenUsage { prompt_tokens: n("/usage/prompt_tokens"), completion_tokens: n("/usage/completion_tokens"), total_tokens: n("/usage/total_tokens") };
        Ok(ChatResponse { content: msg.get("content").and_then(Value::as_str).unwrap_or_default().to_owned(), tool_calls, usage })
    }

    fn options(&self) -> Value {
        json!({"model": self.common.model, "baseURL": self.base, "temperature": self.common.temperature, "max_tokens": self.common.max_tokens, "timeout": self.common.timeout.as_millis() as u64, "max_retries": self.common.max_retries})
    }
}

/// Anthropic's Messages API.
struct Anthropic {
    base: String,
    api_key: String,
    common: Common,
}

impl Anthropic {
    fn new(ctx: &mut NodeContext<'_>, _item: usize, common: Common) -> Result<Self> {
        let cred = ctx.credential("anthropicApi")?;
        let base = cred.get("url").and_then(Value::as_str).filter(|s| !s.trim().is_empty()).unwrap_or("https://api.anthropic.com");
        Ok(Anthropic { base: base.trim_end_matches('/').to_owned(), api_key: cred.get("apiKey").map(crate::nodes::js_string).unwrap_or_default(), common })
    }
}

impl ChatModel for Anthropic {
    fn chat(&self, env: &Env, req: &ChatRequest<'_>) -> Result<ChatResponse> {
        let system: Vec<&str> = req.messages.iter().filter_map(|m| if let Message::System { content } = m { Some(content.as_str()) } else { None }).collect();
        let mut messages: Vec<Value> = vec![];
        for m in req.messages {
            let (role, block) = match m {
                Message::System { .. } => continue,
                Message::User { content } => ("user", vec![json!({"type": "text", "text": content})]),
                Message::Assistant { content, tool_calls } => {
                    let mut blocks: Vec<Value> = if content.is_empty() { vec![] } else { vec![json!({"type": "text", "text": content})] };
                    blocks.extend(tool_calls.iter().map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})));
                    ("assistant", blocks)
                }
                Message::Tool { tool_call_id, content, .. } => ("user", vec![json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content})]),
            };
            // consecutive tool results go into one user turn
            match messages.last_mut() {
                Some(last) if last["role"] == role => {
                    if let Some(a) = last["content"].as_array_mut() {
                        a.extend(block);
                    }
                }
                _ => messages.push(json!({"role": role, "content": block})),
            }
        }
        let mut body = json!({"model": self.common.model, "max_tokens": self.common.max_tokens.unwrap_or(4096), "messages": messages});
        let o = body.as_object_mut().expect("object literal");
        if !system.is_empty() {
            o.insert("system".into(), json!(system.join("\n\n")));
        }
        if !req.tools.is_empty() {
            o.insert("tools".into(), req.tools.iter().map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters})).collect());
        }
        if let Some(t) = self.common.temperature {
            o.insert("temperature".into(), json!(t));
        }
        if let Some(p) = self.common.top_p {
            o.insert("top_p".into(), json!(p));
        }
        let headers = vec![("x-api-key".into(), self.api_key.clone()), ("anthropic-version".into(), "2023-06-01".into())];
        let v = post(env, &format!("{}/v1/messages", self.base), headers, &body, self.common.timeout, self.common.max_retries)?;
        let mut content = String::new();
        let mut tool_calls = vec![];
        for b in v.get("content").and_then(Value::as_array).into_iter().flatten() {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => content.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                Some("tool_use") => tool_calls.push(ToolCall {
                    id: b.get("id").map(crate::nodes::js_string).unwrap_or_default(),
                    name: b.get("name").map(crate::nodes::js_string).unwrap_or_default(),
                    arguments: b.get("input").cloned().unwrap_or(json!({})),
                }),
                _ => {}
            }
        }
        let n = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let (i, o) = (n("/usage/input_tokens"), n("/usage/output_tokens"));
        Ok(ChatResponse { content, tool_calls, usage: TokenUsage { prompt_tokens: i, completion_tokens: o, total_tokens: i + o } })
    }

    fn options(&self) -> Value {
        json!({"model": self.common.model, "baseURL": self.base, "temperature": self.common.temperature, "max_tokens": self.common.max_tokens.unwrap_or(4096), "timeout": self.common.timeout.as_millis() as u64, "max_retries": self.common.max_retries})
    }
}
