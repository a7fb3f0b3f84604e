//! Window Buffer Memory (`memoryBufferWindow`): the last `contextWindowLength`
//! exchanges of a session, kept in the host's `ChatMemoryStore` under
//! workflow and session key (in the process when the host has none,
//! as n8n's default store). Only the human input and the final answer of
//! each turn are kept, as LangChain's buffer memory does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

use super::model::Message;
use super::NodeContext;
use crate::error::{EngineError, Result};
use crate::host::ChatMemoryStore;

/// A memory sub-node's service for one root item.
pub struct Memory {
    store: Arc<dyn ChatMemoryStore>,
    workflow: String,
    key: String,
    /// Exchanges (a user and an assistant message) to hand the model.
    window: usize,
}

/// The process-wide store used when the host provides none.
#[derive(Default)]
struct InProcess(Mutex<HashMap<String, Vec<Value>>>);

impl ChatMemoryStore for InProcess {
    fn load(&self, workflow_id: &str, session: &str) -> std::result::Result<Vec<Value>, String> {
        Ok(self.0.lock().map_err(|e| e.to_string())?.get(&format!("{workflow_id}__{session}")).cloned().unwrap_or_default())
    }
    fn save(&self, workflow_id: &str, session: &str, messages: &[Value]) -> std::result::Result<(), String> {
        self.0.lock().map_err(|e| e.to_string())?.insert(format!("{workflow_id}__{session}"), messages.to_vec());
        Ok(())
    }
}

fn in_process() -> Arc<dyn ChatMemoryStore> {
    static STORE: OnceLock<Arc<InProcess>> = OnceLock::new();
    STORE.get_or_init(Default::default).clone()
}

/// The memory `ctx.node` supplies for item `item`.
pub fn supply(ctx: &mut NodeContext<'_>, item: usize) -> Result<Memory> {
    if ctx.node.node_type != "@n8n/n8n-nodes-langchain.memoryBufferWindow" {
        return Err(EngineError::node(format!("{} is not a memory this instance supports", ctx.node.node_type)));
    }
    let v = ctx.version();
    // v1.2+: the session id comes from the input (`sessionId`) unless a custom key is set.
    let from_input = v >= 1.2 && ctx.param_str("sessionIdType", item, "fromInput")? == "fromInput";
    let key = if from_input {
        let expr = Value::String("={{ $json.sessionId }}".into());
        ctx.resolve(&expr, item)?
    } else {
        let default = if v >= 1.1 { "={{ $json.sessionId }}" } else { "chat_history" };
        match ctx.raw("sessionKey").cloned() {
            Some(k) => ctx.resolve(&k, item)?,
            None => ctx.resolve(&Value::String(default.into()), item)?,
        }
    };
    let key = match key {
        Value::Null => String::new(),
        other => crate::nodes::js_string(&other),
    };
    if key.trim().is_empty() {
        return Err(EngineError::node_with(
            "No session ID found",
            "Expected to find the session ID in an input field called 'sessionId' (this is what the chat trigger node outputs); to use something else, set 'Session ID' to 'Define below' and give a key",
        ));
    }
    let window = ctx.param_f64("contextWindowLength", item, 5.0)?.max(1.0) as usize;
    let workflow = ctx.graph.workflow.id.clone().unwrap_or_default();
    let store = ctx.env.host.chat_memory.clone().unwrap_or_else(in_process);
    Ok(Memory { store, workflow, key, window })
}

/// A message as LangChain serializes it (`BaseMessage.toJSON()`): the form
/// n8n's run data shows memory in, and the Chat Trigger answers
/// `loadPreviousSession` with (the chat widget reads `id` and `kwargs.content`).
pub fn lc_message(m: &Message) -> Value {
    let (class, content, extra) = match m {
        Message::System { content } => ("SystemMessage", content, None),
        Message::User { content } => ("HumanMessage", content, None),
        Message::Assistant { content, tool_calls } => (
            "AIMessage",
            content,
            Some(json!({
                "tool_calls": tool_calls.iter().map(|c| json!({"name": c.name, "args": c.arguments, "id": c.id, "type": "tool_call"})).collect::<Vec<_>>(),
                "invalid_tool_calls": [],
            })),
        ),
        Message::Tool { tool_call_id, content, .. } => ("ToolMessage", content, Some(json!({"tool_call_id": tool_call_id}))),
    };
    let mut kwargs = json!({"content": content, "additional_kwargs": {}, "response_metadata": {}});
    if let Some(Value::Object(extra)) = extra {
        if let Some(k) = kwargs.as_object_mut() {
            k.extend(extra);
        }
    }
    json!({"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", class], "kwargs": kwargs})
}

/// Stored messages (as memory keeps them) in LangChain's serialized form.
pub fn lc_messages(stored: &[Value]) -> Vec<Value> {
    stored.iter().filter_map(|m| serde_json::from_value::<Message>(m.clone()).ok()).map(|m| lc_message(&m)).collect()
}

/// The session a memory sub-node of a Chat Trigger reads for a chat
/// request (n8n's `getSessionId` in a webhook: `sessionId` of the body for
/// "Connected Chat Trigger Node", else the node's `sessionKey`, resolved
/// against the body); `None` when the node is not a memory this instance keeps.
pub fn request_session(engine: &crate::Engine, graph: &crate::Graph, memory: &crate::Node, body: &Value) -> Result<Option<String>> {
    let key = session_key(memory, body, || {
        let resolved = engine.resolve_with_item(graph, &memory.name, crate::Item::new(body.clone()))?;
        Ok(Some(resolved.get("sessionKey").cloned().unwrap_or(Value::Null)))
    })?;
    // the full engine resolves every key: the inner `None` does not occur
    Ok(key.flatten())
}

/// [`request_session`] without the JavaScript sandbox: `Some(None)` when the
/// node's `sessionKey` needs it (the executor resolves it: a webhook
/// function links no QuickJS).
pub fn request_session_natively(engine: &crate::Engine, graph: &crate::Graph, memory: &crate::Node, body: &Value) -> Result<Option<Option<String>>> {
    session_key(memory, body, || engine.resolve_natively_with_item(graph, &memory.name, "sessionKey", crate::Item::new(body.clone())))
}

/// The session key of `memory` for `body`, with `resolve_key` resolving its
/// `sessionKey` expression (`Ok(None)`: it cannot).
fn session_key(memory: &crate::Node, body: &Value, resolve_key: impl FnOnce() -> Result<Option<Value>>) -> Result<Option<Option<String>>> {
    if memory.node_type != "@n8n/n8n-nodes-langchain.memoryBufferWindow" {
        return Ok(None);
    }
    let p = &memory.parameters;
    let from_input = memory.type_version >= 1.2 && p.get("sessionIdType").and_then(Value::as_str).unwrap_or("fromInput") == "fromInput";
    let key = if from_input {
        body.get("sessionId").cloned().unwrap_or(Value::Null)
    } else {
        match p.get("sessionKey") {
            // the defaults: `={{ $json.sessionId }}` (1.1+), `chat_history` (1.0)
            None if memory.type_version >= 1.1 => body.get("sessionId").cloned().unwrap_or(Value::Null),
            None => json!("chat_history"),
            Some(_) => match resolve_key()? {
                Some(key) => key,
                None => return Ok(Some(None)),
            },
        }
    };
    let key = match key {
        Value::Null => String::new(),
        other => crate::nodes::js_string(&other),
    };
    if key.trim().is_empty() {
        return Err(EngineError::node("No session ID found: send `sessionId` with the request"));
    }
    Ok(Some(Some(key)))
}

impl Memory {
    /// The window the model gets: the last `window` exchanges.
    pub fn load(&self) -> Result<Vec<Message>> {
        let all = self.store.load(&self.workflow, &self.key).map_err(EngineError::Host)?;
        let skip = all.len().saturating_sub(self.window * 2);
        Ok(all.into_iter().skip(skip).filter_map(|m| serde_json::from_value(m).ok()).collect())
    }

    /// Appends one exchange; the store keeps the last `window` exchanges.
    pub fn save(&self, input: &str, output: &str) -> Result<Vec<Message>> {
        let mut all = self.store.load(&self.workflow, &self.key).map_err(EngineError::Host)?;
        all.push(json!({"role": "user", "content": input}));
        all.push(json!({"role": "assistant", "content": output}));
        let skip = all.len().saturating_sub(self.window * 2);
        let kept: Vec<Value> = all.into_iter().skip(skip).collect();
        self.store.save(&self.workflow, &self.key, &kept).map_err(EngineError::Host)?;
        Ok(kept.into_iter().filter_map(|m| serde_json::from_value(m).ok()).collect())
    }
}
