//! Ending a chain: exactly one `run-finish` per run (one `agent-completed`
//! per background agent). Whoever wins the conditional move to `finishing`
//! (a step, cancel, or the sweep) settles the open tool calls and writes the
//! final event; the slot is released in that same move, before `run-finish`
//! is published. A crash between the move and the event leaves the chain
//! `finishing` with a short lease, and the sweep writes the event.

use crate::background;
use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::model::Message;
use crate::runtime::{event, Runtime};
use protocol::events::{
    AgentCompleted, AgentStatus, EventPayload, RunFinish, RunStatus, ThreadTitleUpdated, ToolError, ToolResult,
};
use serde_json::json;
use store::runs::{Chain, ChainState};
use store::EventWriter;
use tokio::sync::Mutex;

/// How open tool calls are settled when their chain ends without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Stop/cancel: a cancelled tool result.
    Cancelled,
    /// The process died: `tool-interrupted`, effect unverified.
    Interrupted,
    /// The run failed: a `tool-error`.
    Failed,
}

pub const INTERRUPTED_MESSAGE: &str = "Interrupted by a process restart — effect unverified; verify before retrying.";

pub fn status_str(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Completed => "completed",
        RunStatus::Cancelled => "cancelled",
        RunStatus::Error => "error",
        RunStatus::Interrupted => "interrupted",
    }
}

pub fn parse_status(s: &str) -> RunStatus {
    match s {
        "completed" => RunStatus::Completed,
        "cancelled" => RunStatus::Cancelled,
        "interrupted" => RunStatus::Interrupted,
        _ => RunStatus::Error,
    }
}

/// The event that settles one open call, and what the model reads for it.
fn settle_payload(kind: Settle, call_id: &str) -> (EventPayload, String) {
    match kind {
        Settle::Cancelled => {
            let result = json!({"cancelled": true, "message": "Cancelled by the user before the tool finished."});
            (EventPayload::ToolResult(ToolResult { tool_call_id: call_id.to_owned(), result: result.clone() }), result.to_string())
        }
        Settle::Interrupted => (
            EventPayload::ToolInterrupted(ToolError { tool_call_id: call_id.to_owned(), error: INTERRUPTED_MESSAGE.into() }),
            INTERRUPTED_MESSAGE.to_owned(),
        ),
        Settle::Failed => {
            let msg = "The run ended before this tool call ran.".to_owned();
            (EventPayload::ToolError(ToolError { tool_call_id: call_id.to_owned(), error: msg.clone() }), msg)
        }
    }
}

/// A title from the first user message (first line, at most 60 characters).
fn title_from(ckpt: &Checkpoint) -> Option<String> {
    let first = ckpt.messages.iter().find_map(|m| match m {
        Message::User { text } => Some(text.as_str()),
        _ => None,
    })?;
    let line = first.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    Some(title)
}

pub struct Ending {
    pub status: RunStatus,
    pub reason: Option<String>,
    /// A background agent's result text.
    pub result: Option<String>,
}

/// Ends `chain` (seen in state `from`, at `step` when a step owns it).
/// `open` are the tool calls to settle. `Ok(false)`: someone else ended or
/// moved the chain first; nothing was written.
#[allow(clippy::too_many_arguments)]
pub async fn finish_chain(
    rt: &Runtime,
    writer: &Mutex<EventWriter>,
    chain: &Chain,
    from: ChainState,
    step: Option<u64>,
    mut ckpt: Checkpoint,
    open: Vec<String>,
    settle: Settle,
    ending: Ending,
) -> Result<bool, AgentError> {
    let run = &chain.run_id;
    let agent = &chain.agent_id;
    // The history must not end with calls that have no result (providers
    // refuse such a conversation on the next run).
    for call in std::mem::take(&mut ckpt.pending) {
        let (_, content) = settle_payload(settle, &call.id);
        ckpt.messages.push(Message::ToolResult { tool_call_id: call.id, tool_name: call.name, content, is_error: true });
    }
    let mut status = ending.status;
    let mut reason = ending.reason.clone();
    let mut result = ending.result.clone();
    if !chain.is_orchestrator() && status == RunStatus::Completed {
        if let Some(task) = &chain.task_id {
            if let Some((ok, note)) = background::verdict(rt, run, task).await? {
                if !note.is_empty() {
                    result = Some(note.clone());
                }
                if !ok {
                    status = RunStatus::Error;
                    reason = Some(if note.is_empty() { "checkpoint failed".into() } else { note });
                }
            }
        }
    }
    if chain.is_orchestrator() && status == RunStatus::Completed {
        // The thread's first completed turn names it.
        if let Some(title) = title_from(&ckpt) {
            if rt.runs.set_title_once(&chain.thread_id, &title).await? {
                let ev = event(run, agent, EventPayload::ThreadTitleUpdated(ThreadTitleUpdated { title }));
                writer.lock().await.emit(ev).await?;
            }
        }
    }
    let history = if chain.is_orchestrator() { Some(ckpt.history_bytes()?) } else { None };
    let ckpt_bytes = ckpt.encode()?;
    let won = rt
        .runs
        .begin_finish(chain, from, step, status_str(status), reason.as_deref(), history.as_deref(), Some(&ckpt_bytes))
        .await?;
    if !won {
        tracing::info!(run_id = %run, agent_id = %agent, "chain already ended or moved; no second finish");
        return Ok(false);
    }
    if chain.is_orchestrator() && status == RunStatus::Completed {
        // Recall for later threads; a failed index write never fails the run.
        let title = title_from(&ckpt).unwrap_or_default();
        if let Err(e) = crate::history::index_turn(rt, chain, &ckpt, &title, result.as_deref()).await {
            tracing::warn!(run_id = %run, error = %e, "the conversation index was not updated");
        }
    }
    write_final(rt, writer, chain, &open, settle, status, reason, result).await?;
    Ok(true)
}

/// Writes the settle events and the final event of a chain already moved to
/// `finishing`, then leaves the lease index. Also used by the sweep for a
/// chain found `finishing` (its writer died).
#[allow(clippy::too_many_arguments)]
pub async fn write_final(
    rt: &Runtime,
    writer: &Mutex<EventWriter>,
    chain: &Chain,
    open: &[String],
    settle: Settle,
    status: RunStatus,
    reason: Option<String>,
    result: Option<String>,
) -> Result<(), AgentError> {
    let run = &chain.run_id;
    let agent = &chain.agent_id;
    {
        let mut w = writer.lock().await;
        for id in open {
            let (payload, _) = settle_payload(settle, id);
            w.emit(event(run, agent, payload)).await?;
        }
        let payload = if chain.is_orchestrator() {
            EventPayload::RunFinish(RunFinish { status, reason: reason.clone(), archived_workflow_ids: None })
        } else {
            let (agent_status, error) = match status {
                RunStatus::Completed => (AgentStatus::Completed, None),
                RunStatus::Cancelled => (AgentStatus::Cancelled, reason.clone()),
                RunStatus::Error | RunStatus::Interrupted => (AgentStatus::Error, reason.clone()),
            };
            EventPayload::AgentCompleted(AgentCompleted {
                role: chain.role.clone(),
                result: result.clone().or(reason.clone()).unwrap_or_default(),
                error,
                status: Some(agent_status),
            })
        };
        w.emit(event(run, agent, payload)).await?;
        w.flush().await?;
    }
    rt.runs.end_finish(run, agent).await?;
    tracing::info!(run_id = %run, agent_id = %agent, status = status_str(status), "chain finished");
    if !chain.is_orchestrator() {
        background::schedule_ready(rt, run, &chain.thread_id, &chain.user_id, writer).await?;
    }
    Ok(())
}
