//! Session restore: the answers of `GET /instance-ai/threads/:id/messages`
//! and `GET /instance-ai/threads/:id/status`, folded from the event log.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `GET …/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThreadStatus {
    pub has_active_run: bool,
    pub is_suspended: bool,
    pub background_tasks: Vec<BackgroundTask>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackgroundTask {
    pub task_id: String,
    pub role: String,
    pub agent_id: String,
    /// `running` (only unfinished tasks are listed).
    pub status: String,
    /// Epoch seconds.
    pub started_at: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One rich message (`InstanceAiMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub role: Role,
    pub run_id: String,
    /// Epoch ms of the first event of the message, if stamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    /// User text, or the orchestrator's text.
    pub content: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// Assistant only: true while the run has no `run-finish`.
    #[serde(default)]
    pub is_streaming: bool,
    /// Assistant only: `completed` | `cancelled` | `error` | `interrupted` | `active`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Assistant only: the orchestrator and its sub-agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_tree: Option<AgentNode>,
    /// Id of the last event folded into this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentNode {
    pub agent_id: String,
    pub role: String,
    /// `active` | `completed` | `cancelled` | `error`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub text_content: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    pub tool_calls: Vec<ToolCallState>,
    /// Text, reasoning and tool calls in the order they happened.
    pub timeline: Vec<TimelineEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub children: Vec<AgentNode>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum TimelineEntry {
    Text { content: String },
    Reasoning { content: String },
    ToolCall {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
    },
    Child {
        #[serde(rename = "agentId")]
        agent_id: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallState {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub is_loading: bool,
    /// `pending` | `done` | `error` | `interrupted` | `awaiting-confirmation`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Value>,
}

/// `GET …/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessagesPage {
    pub thread_id: String,
    pub messages: Vec<Message>,
    /// The SSE cursor position when this page was read: connect with
    /// `lastEventId = nextEventId - 1`.
    pub next_event_id: u64,
    /// More (older) runs exist: ask again with `?before=<this runId>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before: Option<String>,
}
