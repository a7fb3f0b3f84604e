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
    /// User only: the message's files (`run-start.attachments`), metadata only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<crate::attachments::AttachmentInfo>,
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
    /// Assistant only: the run's latest task checklist (`tasks-update`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Vec<crate::events::TaskItem>>,
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
    /// A background agent's title (`agent-spawned.title`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
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

/// One thread in `GET /instance-ai/threads`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSummary {
    pub thread_id: String,
    /// From `thread-title-updated`; `None` until the first run completes.
    pub title: Option<String>,
    /// The first line of the thread's first message (shown until a title).
    pub preview: Option<String>,
    /// Epoch seconds.
    pub created_at: u64,
    /// Epoch ms of the last run start or finish.
    pub last_activity_at: u64,
    pub has_active_run: bool,
}

/// `GET /instance-ai/threads[?limit=N&before=<cursor>]`: the caller's
/// threads, most recently active first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadList {
    pub threads: Vec<ThreadSummary>,
    /// More (older) threads exist: ask again with `?before=<this>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before: Option<String>,
}

// -------------------------------------------------------------------- folds

use crate::events::{EventPayload, RunStatus, StoredEvent};
use std::collections::{HashMap, HashSet};

/// One run folded from the log: the user's message and the agent tree.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFold {
    pub run_id: String,
    pub user: Option<Message>,
    pub assistant: Message,
}

struct AgentBuild {
    node: AgentNode,
    parent: Option<String>,
}

struct RunBuild {
    run_id: String,
    root: Option<String>,
    user: Option<Message>,
    created_at: Option<u64>,
    message_group_id: Option<String>,
    finished: Option<RunStatus>,
    tasks: Option<Vec<crate::events::TaskItem>>,
    agents: Vec<String>,
    nodes: HashMap<String, AgentBuild>,
    last_event_id: u64,
}

fn new_node(agent_id: &str, role: &str) -> AgentNode {
    AgentNode {
        agent_id: agent_id.to_owned(),
        role: role.to_owned(),
        status: "active".into(),
        task_id: None,
        title: None,
        text_content: String::new(),
        reasoning: String::new(),
        tool_calls: Vec::new(),
        timeline: Vec::new(),
        result: None,
        error: None,
        children: Vec::new(),
    }
}

impl RunBuild {
    fn node(&mut self, agent_id: &str) -> &mut AgentNode {
        if !self.nodes.contains_key(agent_id) {
            // An agent we never saw spawn hangs under the orchestrator.
            let parent = self.root.clone().filter(|r| r != agent_id);
            let role = if parent.is_none() { "orchestrator" } else { "agent" };
            self.nodes.insert(agent_id.to_owned(), AgentBuild { node: new_node(agent_id, role), parent });
            self.agents.push(agent_id.to_owned());
            if self.root.is_none() {
                self.root = Some(agent_id.to_owned());
            }
        }
        // Inserted just above when missing.
        &mut self.nodes.get_mut(agent_id).expect("agent node exists").node
    }

    fn tool(&mut self, agent_id: &str, tool_call_id: &str, tool_name: Option<&str>) -> &mut ToolCallState {
        let node = self.node(agent_id);
        if let Some(i) = node.tool_calls.iter().position(|t| t.tool_call_id == tool_call_id) {
            return &mut node.tool_calls[i];
        }
        node.timeline.push(TimelineEntry::ToolCall { tool_call_id: tool_call_id.to_owned() });
        node.tool_calls.push(ToolCallState {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.unwrap_or_default().to_owned(),
            args: Map::new(),
            result: None,
            error: None,
            is_loading: true,
            state: "pending".into(),
            confirmation: None,
        });
        let last = node.tool_calls.len() - 1;
        &mut node.tool_calls[last]
    }

    fn finish(mut self) -> RunFold {
        // Build the tree bottom-up: children in spawn order.
        let mut children: HashMap<String, Vec<String>> = HashMap::new();
        for id in &self.agents {
            if let Some(p) = self.nodes.get(id).and_then(|b| b.parent.clone()) {
                children.entry(p).or_default().push(id.clone());
            }
        }
        fn build(id: &str, nodes: &mut HashMap<String, AgentBuild>, children: &HashMap<String, Vec<String>>) -> Option<AgentNode> {
            let mut node = nodes.remove(id)?.node;
            for c in children.get(id).into_iter().flatten() {
                if let Some(child) = build(c, nodes, children) {
                    node.children.push(child);
                }
            }
            Some(node)
        }
        let mut tree = self.root.clone().and_then(|r| build(&r, &mut self.nodes, &children));
        let status = match self.finished {
            None => "active",
            Some(RunStatus::Completed) => "completed",
            Some(RunStatus::Cancelled) => "cancelled",
            Some(RunStatus::Error) => "error",
            Some(RunStatus::Interrupted) => "interrupted",
        };
        if let Some(t) = tree.as_mut() {
            if self.finished.is_some() && t.status == "active" {
                t.status = match self.finished {
                    Some(RunStatus::Completed) => "completed",
                    Some(RunStatus::Cancelled) => "cancelled",
                    _ => "error",
                }
                .into();
            }
        }
        let assistant = Message {
            id: self.message_group_id.clone().unwrap_or_else(|| format!("{}:assistant", self.run_id)),
            role: Role::Assistant,
            run_id: self.run_id.clone(),
            created_at: self.created_at,
            content: tree.as_ref().map(|t| t.text_content.clone()).unwrap_or_default(),
            attachments: Vec::new(),
            reasoning: tree.as_ref().map(|t| t.reasoning.clone()).unwrap_or_default(),
            is_streaming: self.finished.is_none(),
            status: Some(status.into()),
            agent_tree: tree,
            last_event_id: Some(self.last_event_id),
            tasks: self.tasks,
        };
        RunFold { run_id: self.run_id, user: self.user, assistant }
    }
}

fn push_text(node: &mut AgentNode, reasoning: bool, text: &str) {
    if reasoning {
        node.reasoning.push_str(text);
        if let Some(TimelineEntry::Reasoning { content }) = node.timeline.last_mut() {
            content.push_str(text);
            return;
        }
        node.timeline.push(TimelineEntry::Reasoning { content: text.to_owned() });
    } else {
        node.text_content.push_str(text);
        if let Some(TimelineEntry::Text { content }) = node.timeline.last_mut() {
            content.push_str(text);
            return;
        }
        node.timeline.push(TimelineEntry::Text { content: text.to_owned() });
    }
}

/// Folds durable events (in id order) into runs, oldest first. Ephemeral
/// events are ignored: the blocks carry their text.
pub fn fold_runs(events: &[StoredEvent]) -> Vec<RunFold> {
    let mut order: Vec<String> = Vec::new();
    let mut runs: HashMap<String, RunBuild> = HashMap::new();
    for stored in events {
        let e = &stored.event;
        let run_id = e.run_id.0.clone();
        let run = runs.entry(run_id.clone()).or_insert_with(|| {
            order.push(run_id.clone());
            RunBuild {
                run_id: run_id.clone(),
                root: None,
                user: None,
                created_at: e.ts,
                message_group_id: None,
                finished: None,
                tasks: None,
                agents: Vec::new(),
                nodes: HashMap::new(),
                last_event_id: 0,
            }
        });
        run.last_event_id = stored.seq;
        let agent = e.agent_id.0.as_str();
        match &e.payload {
            EventPayload::RunStart(p) => {
                run.root = Some(agent.to_owned());
                run.created_at = run.created_at.or(e.ts);
                run.message_group_id = p.message_group_id.clone();
                run.user = Some(Message {
                    id: p.message_id.clone(),
                    role: Role::User,
                    run_id: run_id.clone(),
                    created_at: e.ts,
                    content: p.message.clone().unwrap_or_default(),
                    attachments: p.attachments.clone(),
                    reasoning: String::new(),
                    is_streaming: false,
                    status: None,
                    agent_tree: None,
                    last_event_id: Some(stored.seq),
                    tasks: None,
                });
                run.node(agent);
            }
            EventPayload::RunFinish(p) => run.finished = Some(p.status),
            EventPayload::TextBlock(b) => push_text(run.node(agent), false, &b.text),
            EventPayload::ReasoningBlock(b) => push_text(run.node(agent), true, &b.text),
            EventPayload::ToolInputStart(p) => {
                run.tool(agent, &p.tool_call_id, Some(&p.tool_name));
            }
            EventPayload::ToolCall(p) => {
                let t = run.tool(agent, &p.tool_call_id, Some(&p.tool_name));
                t.tool_name = p.tool_name.clone();
                t.args = p.args.clone();
            }
            EventPayload::ToolResult(p) => {
                let t = run.tool(agent, &p.tool_call_id, None);
                t.result = Some(p.result.clone());
                t.is_loading = false;
                t.state = "done".into();
            }
            EventPayload::ToolError(p) => {
                let t = run.tool(agent, &p.tool_call_id, None);
                t.error = Some(p.error.clone());
                t.is_loading = false;
                t.state = "error".into();
            }
            EventPayload::ToolInterrupted(p) => {
                let t = run.tool(agent, &p.tool_call_id, None);
                t.error = Some(p.error.clone());
                t.is_loading = false;
                t.state = "interrupted".into();
            }
            EventPayload::ConfirmationRequest(p) => {
                let t = run.tool(agent, &p.tool_call_id, Some(&p.tool_name));
                t.state = "awaiting-confirmation".into();
                t.confirmation = serde_json::to_value(p).ok();
            }
            EventPayload::AgentSpawned(p) => {
                if run.root.is_none() {
                    run.node(&p.parent_id);
                }
                if !run.nodes.contains_key(agent) {
                    let mut node = new_node(agent, &p.role);
                    node.task_id = p.task_id.clone();
                    node.title = p.title.clone();
                    run.nodes.insert(agent.to_owned(), AgentBuild { node, parent: Some(p.parent_id.clone()) });
                    run.agents.push(agent.to_owned());
                }
                let parent = p.parent_id.clone();
                run.node(&parent).timeline.push(TimelineEntry::Child { agent_id: agent.to_owned() });
            }
            EventPayload::AgentCompleted(p) => {
                let node = run.node(agent);
                node.result = Some(p.result.clone());
                node.error = p.error.clone();
                node.status = match (p.status, &p.error) {
                    (Some(crate::events::AgentStatus::Cancelled), _) => "cancelled",
                    (Some(crate::events::AgentStatus::Error), _) | (None, Some(_)) => "error",
                    _ => "completed",
                }
                .into();
            }
            EventPayload::Error(p) => {
                let node = run.node(agent);
                node.error = Some(p.content.clone());
            }
            EventPayload::TasksUpdate(p) => run.tasks = Some(p.tasks.clone()),
            _ => {}
        }
    }
    order.into_iter().filter_map(|id| runs.remove(&id)).map(RunBuild::finish).collect()
}

/// The thread's activity state, folded from the log: a run-start without a
/// run-finish is active; a confirmation-request whose tool call has no
/// result/error/interruption, in an unfinished run, is a suspension; a
/// spawned background task without agent-completed is running.
pub fn fold_status(events: &[StoredEvent]) -> ThreadStatus {
    let mut started: Vec<String> = Vec::new();
    let mut finished: HashSet<String> = HashSet::new();
    let mut pending_confirmations: HashMap<String, String> = HashMap::new();
    let mut tasks: Vec<BackgroundTask> = Vec::new();
    let mut completed_agents: HashSet<String> = HashSet::new();
    for stored in events {
        let e = &stored.event;
        match &e.payload {
            EventPayload::RunStart(_) => started.push(e.run_id.0.clone()),
            EventPayload::RunFinish(_) => {
                finished.insert(e.run_id.0.clone());
            }
            EventPayload::ConfirmationRequest(p) => {
                pending_confirmations.insert(p.tool_call_id.clone(), e.run_id.0.clone());
            }
            EventPayload::ToolResult(p) => {
                pending_confirmations.remove(&p.tool_call_id);
            }
            EventPayload::ToolError(p) | EventPayload::ToolInterrupted(p) => {
                pending_confirmations.remove(&p.tool_call_id);
            }
            EventPayload::AgentSpawned(p) => {
                if let Some(task_id) = &p.task_id {
                    tasks.push(BackgroundTask {
                        task_id: task_id.clone(),
                        role: p.role.clone(),
                        agent_id: e.agent_id.0.clone(),
                        status: "running".into(),
                        started_at: e.ts.unwrap_or(0) / 1000,
                    });
                }
            }
            EventPayload::AgentCompleted(_) => {
                completed_agents.insert(e.agent_id.0.clone());
            }
            _ => {}
        }
    }
    ThreadStatus {
        has_active_run: started.iter().any(|r| !finished.contains(r)),
        is_suspended: pending_confirmations.values().any(|run| !finished.contains(run)),
        background_tasks: tasks.into_iter().filter(|t| !completed_agents.contains(&t.agent_id)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::*;

    fn ev(seq: u64, json: serde_json::Value) -> StoredEvent {
        StoredEvent { seq, event: Event::from_value(json).unwrap() }
    }

    fn sample() -> Vec<StoredEvent> {
        use serde_json::json;
        vec![
            ev(1, json!({"type":"run-start","runId":"r1","agentId":"a1","ts":1000,"payload":{"messageId":"m1","message":"list my workflows"}})),
            ev(2, json!({"type":"reasoning-block","runId":"r1","agentId":"a1","responseId":"x","payload":{"text":"Let me look."}})),
            ev(3, json!({"type":"tool-call","runId":"r1","agentId":"a1","payload":{"toolCallId":"tc1","toolName":"workflows","args":{"action":"list"}}})),
            ev(4, json!({"type":"tool-result","runId":"r1","agentId":"a1","payload":{"toolCallId":"tc1","result":{"n":3}}})),
            ev(5, json!({"type":"agent-spawned","runId":"r1","agentId":"a2","ts":2000,"payload":{"parentId":"a1","role":"eval-setup","tools":[],"taskId":"task-1"}})),
            ev(6, json!({"type":"text-block","runId":"r1","agentId":"a1","responseId":"y","payload":{"text":"You have 3."}})),
            ev(7, json!({"type":"run-finish","runId":"r1","agentId":"a1","payload":{"status":"completed"}})),
            ev(8, json!({"type":"tool-call","runId":"r1","agentId":"a2","payload":{"toolCallId":"tc2","toolName":"nodes","args":{}}})),
            ev(9, json!({"type":"run-start","runId":"r2","agentId":"a1","payload":{"messageId":"m2","message":"delete it"}})),
            ev(10, json!({"type":"confirmation-request","runId":"r2","agentId":"a1","payload":{"requestId":"cr1","toolCallId":"tc3","toolName":"workflows","args":{},"severity":"destructive","message":"Delete?"}})),
        ]
    }

    #[test]
    fn folds_runs_into_messages_and_trees() {
        let runs = fold_runs(&sample());
        assert_eq!(runs.len(), 2);
        let r1 = &runs[0];
        assert_eq!(r1.user.as_ref().unwrap().content, "list my workflows");
        assert_eq!(r1.assistant.content, "You have 3.");
        assert_eq!(r1.assistant.reasoning, "Let me look.");
        assert!(!r1.assistant.is_streaming);
        let tree = r1.assistant.agent_tree.as_ref().unwrap();
        assert_eq!(tree.tool_calls[0].state, "done");
        assert_eq!(tree.children.len(), 1);
        assert_eq!(tree.children[0].agent_id, "a2");
        assert_eq!(tree.children[0].tool_calls[0].tool_name, "nodes");
        let r2 = &runs[1];
        assert!(r2.assistant.is_streaming);
        assert_eq!(r2.assistant.agent_tree.as_ref().unwrap().tool_calls[0].state, "awaiting-confirmation");
    }

    #[test]
    fn folds_status() {
        let s = fold_status(&sample());
        assert!(s.has_active_run);
        assert!(s.is_suspended);
        assert_eq!(s.background_tasks.len(), 1);
        assert_eq!(s.background_tasks[0].started_at, 2);
        let s = fold_status(&sample()[..8]);
        assert!(!s.has_active_run && !s.is_suspended);
    }
}
