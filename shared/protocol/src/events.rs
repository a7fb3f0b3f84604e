//! The event schema of the streaming protocol: one envelope
//! `{type, runId, agentId, userId?, responseId?, ts?, payload}` and one typed
//! payload per event type, plus the frames they travel in (SSE lines,
//! WebSocket `{"id":42,"event":{…}}`) and the WebSocket client actions.
//!
//! Parsing is strict: an unknown `type`, an unknown field or a field of the
//! wrong type is an [`EventError`] naming the event type and the field, so a
//! bad event never reaches the log (invariant 8). Optional fields are omitted
//! when absent, so every example of the spec re-serialises to itself.

use crate::ids::{AgentId, RunId, UserId};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// A protocol event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub run_id: RunId,
    pub agent_id: AgentId,
    pub user_id: Option<UserId>,
    /// Groups events of one streamed model response (text/reasoning segments).
    pub response_id: Option<String>,
    /// Epoch milliseconds, stamped at publish.
    pub ts: Option<u64>,
    pub payload: EventPayload,
}

/// Why a JSON value is not a valid event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("invalid event JSON: {0}")]
    Json(String),
    #[error("unknown event type {0:?}")]
    UnknownType(String),
    #[error("invalid {event_type} event: {message}")]
    Invalid { event_type: String, message: String },
}

macro_rules! event_types {
    ($( $variant:ident($payload:ty) = $name:literal ),+ $(,)?) => {
        /// The `type` of an event.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventType { $( $variant ),+ }

        impl EventType {
            pub const ALL: &'static [EventType] = &[ $( EventType::$variant ),+ ];

            pub fn as_str(self) -> &'static str {
                match self { $( EventType::$variant => $name ),+ }
            }

            pub fn parse(s: &str) -> Option<EventType> {
                match s { $( $name => Some(EventType::$variant), )+ _ => None }
            }
        }

        /// The typed payload; the variant is the event's `type`.
        // Events are built once and moved, never stored in bulk in memory:
        // boxing the large confirmation payload would only cost ergonomics.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum EventPayload { $( $variant($payload) ),+ }

        impl EventPayload {
            pub fn event_type(&self) -> EventType {
                match self { $( EventPayload::$variant(_) => EventType::$variant ),+ }
            }

            fn to_value(&self) -> Result<Value, serde_json::Error> {
                match self { $( EventPayload::$variant(p) => serde_json::to_value(p) ),+ }
            }

            fn from_value(t: EventType, v: Value) -> Result<EventPayload, serde_json::Error> {
                match t { $( EventType::$variant => serde_json::from_value(v).map(EventPayload::$variant) ),+ }
            }
        }
    };
}

event_types! {
    RunStart(RunStart) = "run-start",
    RunFinish(RunFinish) = "run-finish",
    TextDelta(TextDelta) = "text-delta",
    ReasoningDelta(TextDelta) = "reasoning-delta",
    TextBlock(TextBlock) = "text-block",
    ReasoningBlock(TextBlock) = "reasoning-block",
    ToolInputStart(ToolInputStart) = "tool-input-start",
    ToolCall(ToolCall) = "tool-call",
    ToolResult(ToolResult) = "tool-result",
    ToolError(ToolError) = "tool-error",
    ToolInterrupted(ToolError) = "tool-interrupted",
    AgentSpawned(AgentSpawned) = "agent-spawned",
    AgentCompleted(AgentCompleted) = "agent-completed",
    ConfirmationRequest(ConfirmationRequest) = "confirmation-request",
    TasksUpdate(TasksUpdate) = "tasks-update",
    SetupItems(SetupItems) = "setup-items",
    Status(Status) = "status",
    ThreadTitleUpdated(ThreadTitleUpdated) = "thread-title-updated",
    Error(ErrorPayload) = "error",
    FilesystemRequest(FilesystemRequest) = "filesystem-request",
}

impl EventType {
    /// Live-only frames: never stored, never given an id (invariant 1).
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            EventType::TextDelta | EventType::ReasoningDelta | EventType::Status | EventType::FilesystemRequest
        )
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Event {
    pub fn new(run_id: impl Into<RunId>, agent_id: impl Into<AgentId>, payload: EventPayload) -> Event {
        Event { run_id: run_id.into(), agent_id: agent_id.into(), user_id: None, response_id: None, ts: None, payload }
    }

    pub fn with_response_id(mut self, id: impl Into<String>) -> Event {
        self.response_id = Some(id.into());
        self
    }

    pub fn with_ts(mut self, ts: u64) -> Event {
        self.ts = Some(ts);
        self
    }

    pub fn event_type(&self) -> EventType {
        self.payload.event_type()
    }

    pub fn is_ephemeral(&self) -> bool {
        self.event_type().is_ephemeral()
    }

    /// Parses and validates an event from JSON text.
    pub fn from_json(text: &str) -> Result<Event, EventError> {
        let value: Value = serde_json::from_str(text).map_err(|e| EventError::Json(e.to_string()))?;
        Event::from_value(value)
    }

    /// Parses and validates an event from a JSON value.
    pub fn from_value(value: Value) -> Result<Event, EventError> {
        let Value::Object(mut map) = value else {
            return Err(EventError::Json("an event must be a JSON object".into()));
        };
        let type_name = match map.remove("type") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(EventError::Json("`type` must be a string".into())),
            None => return Err(EventError::Json("missing field `type`".into())),
        };
        let event_type = EventType::parse(&type_name).ok_or_else(|| EventError::UnknownType(type_name.clone()))?;
        let invalid = |message: String| EventError::Invalid { event_type: type_name.clone(), message };
        let run_id = take_string(&mut map, "runId", true).map_err(&invalid)?.unwrap_or_default();
        let agent_id = take_string(&mut map, "agentId", true).map_err(&invalid)?.unwrap_or_default();
        let user_id = take_string(&mut map, "userId", false).map_err(&invalid)?;
        let response_id = take_string(&mut map, "responseId", false).map_err(&invalid)?;
        let ts = match map.remove("ts") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_u64().ok_or_else(|| invalid("`ts` must be epoch milliseconds (a non-negative integer)".into()))?),
        };
        let payload = map.remove("payload").ok_or_else(|| invalid("missing field `payload`".into()))?;
        if let Some(extra) = map.keys().next() {
            return Err(invalid(format!("unknown field `{extra}`")));
        }
        let payload = EventPayload::from_value(event_type, payload).map_err(|e| invalid(format!("payload: {e}")))?;
        Ok(Event {
            run_id: RunId(run_id),
            agent_id: AgentId(agent_id),
            user_id: user_id.map(UserId),
            response_id,
            ts,
            payload,
        })
    }

    /// The canonical JSON form (key order: type, runId, agentId, userId,
    /// responseId, ts, payload).
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), Value::String(self.event_type().as_str().into()));
        map.insert("runId".into(), Value::String(self.run_id.0.clone()));
        map.insert("agentId".into(), Value::String(self.agent_id.0.clone()));
        if let Some(u) = &self.user_id {
            map.insert("userId".into(), Value::String(u.0.clone()));
        }
        if let Some(r) = &self.response_id {
            map.insert("responseId".into(), Value::String(r.clone()));
        }
        if let Some(ts) = self.ts {
            map.insert("ts".into(), Value::from(ts));
        }
        // Payload structs hold only JSON-representable data, so this cannot fail.
        map.insert("payload".into(), self.payload.to_value().unwrap_or(Value::Null));
        Value::Object(map)
    }

    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }
}

fn take_string(map: &mut Map<String, Value>, key: &str, required: bool) -> Result<Option<String>, String> {
    match map.remove(key) {
        Some(Value::String(s)) => Ok(Some(s)),
        None | Some(Value::Null) if !required => Ok(None),
        None | Some(Value::Null) => Err(format!("missing field `{key}`")),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        let value = Value::deserialize(d)?;
        Event::from_value(value).map_err(D::Error::custom)
    }
}

// ---------------------------------------------------------------- payloads

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunStart {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_group_id: Option<String>,
    /// The user's message text. Our addition (optional, ignored by clients
    /// that do not know it): session restore folds the conversation from the
    /// log alone, so the user's side travels on the event that starts the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The files the user's message carried, in order (their index is
    /// `parse-file`'s `attachmentIndex`): metadata only, never the bytes.
    /// Our addition, for the same reason as `message`; the names are those
    /// of the chat request (`fileName`, `mimeType`) plus the decoded `size`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::attachments::AttachmentInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Completed,
    Cancelled,
    Error,
    Interrupted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunFinish {
    pub status: RunStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_workflow_ids: Option<Vec<String>>,
}

/// `text-delta` / `reasoning-delta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextDelta {
    pub text: String,
}

/// `text-block` / `reasoning-block`: the full text of one segment (the
/// event's `responseId`), replacing whatever deltas a client rendered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextBlock {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolInputStart {
    pub tool_call_id: String,
    pub tool_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub result: Value,
}

/// `tool-error` / `tool-interrupted`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolError {
    pub tool_call_id: String,
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetResource {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSpawned {
    pub parent_id: String,
    pub role: String,
    pub tools: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_resource: Option<TargetResource>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Completed,
    Cancelled,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentCompleted {
    pub role: String,
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AgentStatus>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Destructive,
    Warning,
    Info,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputType {
    Approval,
    Text,
    Questions,
    PlanReview,
    ResourceDecision,
    Continue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuestionType {
    Single,
    Multi,
    Text,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Question {
    pub id: String,
    pub question: String,
    #[serde(rename = "type")]
    pub kind: QuestionType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
}

/// Task states. The spec's own example uses `completed` and `pending`, the
/// n8n schema `todo`/`done`: both spellings are accepted and kept as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Todo,
    Pending,
    InProgress,
    Done,
    Completed,
    Failed,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskItem {
    pub id: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub status: TaskStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskList {
    pub tasks: Vec<TaskItem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CredentialFlowStage {
    Generic,
    Finalize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialFlow {
    pub stage: CredentialFlowStage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainAccess {
    pub url: String,
    pub host: String,
}

/// `confirmation-request`: the base approval plus the optional rich fields.
/// Deeply nested, fast-moving shapes (credential requests, setup nodes,
/// planned tasks) stay JSON values: the tool that builds them owns them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfirmationRequest {
    pub request_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_thread_id: Option<String>,
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Map<String, Value>,
    pub severity: Severity,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_approval: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_type: Option<InputType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub questions: Option<Vec<Question>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TaskList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_items: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intro_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_requests: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_user_selection: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_flow: Option<CredentialFlow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_requests: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_access: Option<DomainAccess>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_search: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_decision: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_connect_request: Option<Value>,
    /// The asset the card is about, by name (never its id): the card's title
    /// is built from it ("Assistant wants to publish Order triage").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// Structured details of the change for the card (previews, filters,
    /// verification notices); `message` stays as the plain-text fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_details: Option<Value>,
}

impl ConfirmationRequest {
    /// A plain approval request (no rich fields).
    pub fn approval(
        request_id: impl Into<String>,
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        args: Map<String, Value>,
        severity: Severity,
        message: impl Into<String>,
    ) -> Self {
        ConfirmationRequest {
            request_id: request_id.into(),
            input_thread_id: None,
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            args,
            severity,
            message: message.into(),
            target_approval: None,
            input_type: None,
            questions: None,
            tasks: None,
            plan_items: None,
            intro_message: None,
            credential_requests: None,
            require_user_selection: None,
            credential_flow: None,
            setup_requests: None,
            workflow_id: None,
            project_id: None,
            domain_access: None,
            web_search: None,
            resource_decision: None,
            channel_config: None,
            mcp_connect_request: None,
            resource_name: None,
            approval_details: None,
        }
    }
}

/// `tasks-update`: the spec sends the task array directly under `tasks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TasksUpdate {
    pub tasks: Vec<TaskItem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_items: Option<Vec<Value>>,
}

/// `setup-items`: the full current setup checklist of one workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetupItems {
    pub workflow_id: String,
    pub items: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Status {
    /// Empty clears the indicator.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadTitleUpdated {
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorPayload {
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub technical_details: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolCall {
    pub name: String,
    pub arguments: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesystemRequest {
    pub request_id: String,
    pub tool_call: McpToolCall,
}

// ------------------------------------------------------------------ frames

/// A stored event: the log's id (`seq`) and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: u64,
    pub event: Event,
}

/// One frame on a WebSocket: `{"id":42,"event":{…}}`; ephemeral frames have
/// no `id` key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WsFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    pub event: Event,
}

impl WsFrame {
    pub fn durable(seq: u64, event: Event) -> WsFrame {
        WsFrame { id: Some(seq), event }
    }

    pub fn ephemeral(event: Event) -> WsFrame {
        WsFrame { id: None, event }
    }

    pub fn to_json(&self) -> String {
        // An event serialises infallibly (see Event::to_value).
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One SSE frame: `id:` only on durable frames.
pub fn sse_frame(id: Option<u64>, event: &Event) -> String {
    let data = event.to_json();
    match id {
        Some(id) => format!("id: {id}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A message a WebSocket client sends (the route is selected by `action`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum ClientAction {
    /// `{"action":"subscribe","threadId":"t1","lastEventId":0}`
    Subscribe {
        #[serde(rename = "threadId")]
        thread_id: String,
        #[serde(rename = "lastEventId", default, deserialize_with = "cursor", skip_serializing_if = "Option::is_none")]
        last_event_id: Option<u64>,
    },
    /// `{"action":"unsubscribe","threadId":"t1"}`
    Unsubscribe {
        #[serde(rename = "threadId")]
        thread_id: String,
    },
}

/// A cursor as a client may send it: a non-negative integer or its decimal
/// string (browsers keep `Last-Event-ID` as a string).
fn cursor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            n.as_u64().map(Some).ok_or_else(|| D::Error::custom("lastEventId must be a non-negative integer"))
        }
        Some(Value::String(s)) => parse_cursor(&s).map(Some).map_err(D::Error::custom),
        Some(_) => Err(D::Error::custom("lastEventId must be a non-negative integer")),
    }
}

/// Parses a replay cursor (`Last-Event-ID`, `?lastEventId=`).
pub fn parse_cursor(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(0);
    }
    t.parse::<u64>().map_err(|_| format!("lastEventId must be a non-negative integer, got {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_type_has_a_name_and_parses_back() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(*t));
        }
        assert_eq!(EventType::ALL.len(), 20);
    }

    #[test]
    fn ephemeral_types_are_exactly_the_live_only_ones() {
        let eph: Vec<_> = EventType::ALL.iter().filter(|t| t.is_ephemeral()).map(|t| t.as_str()).collect();
        assert_eq!(eph, ["text-delta", "reasoning-delta", "status", "filesystem-request"]);
    }

    #[test]
    fn unknown_type_is_a_clear_error() {
        let err = Event::from_value(json!({"type":"nope","runId":"r","agentId":"a","payload":{}})).unwrap_err();
        assert_eq!(err, EventError::UnknownType("nope".into()));
    }

    #[test]
    fn wrong_field_type_names_the_field() {
        let err = Event::from_value(json!({"type":"tool-call","runId":"r","agentId":"a",
            "payload":{"toolCallId":"t","toolName":5,"args":{}}}))
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("tool-call") && msg.contains("string"), "{msg}");
        let err = Event::from_value(json!({"type":"status","runId":1,"agentId":"a","payload":{"message":""}})).unwrap_err();
        assert!(err.to_string().contains("runId"), "{err}");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let err = Event::from_value(json!({"type":"status","runId":"r","agentId":"a","payload":{"message":"","x":1}}))
            .unwrap_err();
        assert!(err.to_string().contains("`x`"), "{err}");
        let err = Event::from_value(json!({"type":"status","runId":"r","agentId":"a","extra":1,"payload":{"message":""}}))
            .unwrap_err();
        assert!(err.to_string().contains("`extra`"), "{err}");
    }

    #[test]
    fn bad_enum_values_are_rejected() {
        let err = Event::from_value(json!({"type":"run-finish","runId":"r","agentId":"a","payload":{"status":"done"}}))
            .unwrap_err();
        assert!(err.to_string().contains("run-finish"), "{err}");
    }

    #[test]
    fn rich_confirmation_requests_round_trip() {
        let v = json!({"type":"confirmation-request","runId":"r","agentId":"a","userId":"u","responseId":"m","ts":17,
            "payload":{"requestId":"cr","toolCallId":"tc","toolName":"workflows","args":{"action":"setup"},
                "severity":"info","message":"Set up?","inputType":"plan-review","introMessage":"Here is the plan",
                "questions":[{"id":"q1","question":"Which?","type":"single","options":["a","b"]}],
                "tasks":{"tasks":[{"id":"t1","description":"Build","status":"todo"}]},
                "credentialRequests":[{"credentialType":"slackApi","reason":"post","existingCredentials":[]}],
                "credentialFlow":{"stage":"finalize"},"setupRequests":[{"node":{"name":"Slack"},"isTrigger":false}],
                "workflowId":"wf1","projectId":"p1","domainAccess":{"url":"https://x.io/a","host":"x.io"}}});
        let e = Event::from_value(v.clone()).unwrap();
        assert_eq!(e.to_value(), v);
        let bad = json!({"type":"confirmation-request","runId":"r","agentId":"a",
            "payload":{"requestId":"cr","toolCallId":"tc","toolName":"w","args":{},"severity":"fatal","message":"m"}});
        let err = Event::from_value(bad).unwrap_err().to_string();
        assert!(err.contains("confirmation-request") && err.contains("fatal"), "{err}");
        let bad = json!({"type":"tasks-update","runId":"r","agentId":"a","payload":{"tasks":[{"id":"t","description":"d","status":"later"}]}});
        assert!(Event::from_value(bad).is_err());
    }

    #[test]
    fn ws_frames_omit_the_id_of_ephemeral_events() {
        let e = Event::new("r", "a", EventPayload::TextDelta(TextDelta { text: "hi".into() }));
        assert_eq!(
            WsFrame::ephemeral(e.clone()).to_json(),
            r#"{"event":{"type":"text-delta","runId":"r","agentId":"a","payload":{"text":"hi"}}}"#
        );
        let f = WsFrame::durable(42, e);
        let back: WsFrame = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(back, f);
        assert!(f.to_json().starts_with(r#"{"id":42,"#));
    }

    #[test]
    fn sse_frames_carry_ids_only_when_durable() {
        let e = Event::new("r", "a", EventPayload::Status(Status { message: "x".into() }));
        assert!(sse_frame(None, &e).starts_with("data: {"));
        assert!(sse_frame(Some(3), &e).starts_with("id: 3\ndata: {"));
    }

    #[test]
    fn client_actions_parse() {
        let a: ClientAction = serde_json::from_str(r#"{"action":"subscribe","threadId":"t1","lastEventId":42}"#).unwrap();
        assert_eq!(a, ClientAction::Subscribe { thread_id: "t1".into(), last_event_id: Some(42) });
        let a: ClientAction = serde_json::from_str(r#"{"action":"subscribe","threadId":"t1","lastEventId":"7"}"#).unwrap();
        assert_eq!(a, ClientAction::Subscribe { thread_id: "t1".into(), last_event_id: Some(7) });
        let a: ClientAction = serde_json::from_str(r#"{"action":"subscribe","threadId":"t1"}"#).unwrap();
        assert_eq!(a, ClientAction::Subscribe { thread_id: "t1".into(), last_event_id: None });
        assert!(serde_json::from_str::<ClientAction>(r#"{"action":"subscribe","threadId":"t1","lastEventId":-1}"#).is_err());
        assert!(serde_json::from_str::<ClientAction>(r#"{"action":"dance"}"#).is_err());
    }
}
