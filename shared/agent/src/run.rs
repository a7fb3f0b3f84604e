//! The run's entry points besides the step: starting a run (chat), a human
//! decision (confirm) and Stop (cancel).

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::finish::{finish_chain, Ending, Settle};
use crate::model::Message;
use crate::runtime::{event, Runtime, StepMessage};
use crate::tools::{Decision, Scope};
use protocol::events::{EventPayload, RunStart, RunStatus};
use protocol::ids::{AgentId, RunId, ThreadId};
use protocol::UserId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::runs::{ChainState, NewChain, SlotError, ORCHESTRATOR};
use tokio::sync::Mutex;

/// A user message is at most this long (characters).
pub const MAX_MESSAGE_CHARS: usize = 100_000;

/// `POST /instance-ai/chat/:threadId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChatRequest {
    pub message: String,
    /// Files for this message (`parse-file` reads them), base64, at most
    /// `protocol::attachments::MAX_ATTACHMENT_BYTES` together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<protocol::attachments::Attachment>>,
    /// Binds a new thread to this project (the user must be a member): the
    /// agent's writes go there. The thread keeps what its first message
    /// bound; a later message may repeat it or leave it out, not change it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

/// `POST /instance-ai/confirm/:requestId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfirmRequest {
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// A setup card's choices (credential ids, parameter values, skipped nodes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_credentials: Option<std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_parameters: Option<std::collections::BTreeMap<String, serde_json::Map<String, Value>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_nodes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_setup: Option<crate::tools::AutoSetup>,
}

/// What the model reads as the user's message: the text, plus the list of
/// its attachments (their contents only through `parse-file`).
fn model_text(req: &ChatRequest, attachments: &[protocol::attachments::AttachmentInfo]) -> String {
    if attachments.is_empty() {
        return req.message.clone();
    }
    format!("{}\n\n{}", req.message, crate::tools::parse_file::manifest(attachments))
}

/// Starts a run: takes the slot, writes `run-start`, enqueues step 1.
pub async fn start(rt: &Runtime, thread: &ThreadId, user: &UserId, req: &ChatRequest) -> Result<RunId, AgentError> {
    if req.message.trim().is_empty() {
        return Err(AgentError::Invalid("message must not be empty".into()));
    }
    if req.message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(AgentError::Invalid(format!("message is longer than {MAX_MESSAGE_CHARS} characters")));
    }
    // Checked and decoded before anything is written: bad input changes nothing.
    let files = protocol::attachments::decode_all(req.attachments.as_deref().unwrap_or_default()).map_err(|e| match e {
        protocol::attachments::AttachmentError::Invalid(m) => AgentError::Invalid(m),
        protocol::attachments::AttachmentError::TooLarge(m) => AgentError::TooLarge(m),
    })?;
    let infos: Vec<_> = files.iter().map(|f| f.info.clone()).collect();
    if let Some(project) = &req.project_id {
        member_of(rt, user, project).await?;
    }
    let run = RunId(format!("run_{}", uuid::Uuid::new_v4().simple()));
    let agent = AgentId(ORCHESTRATOR.into());
    let ckpt = Checkpoint {
        messages: vec![Message::user(model_text(req, &infos))],
        needs_history: true,
        attachments: infos,
        ..Checkpoint::default()
    };
    let new = NewChain {
        run_id: run.clone(),
        thread_id: thread.clone(),
        user_id: user.clone(),
        agent_id: agent.clone(),
        role: "orchestrator".into(),
        parent_id: None,
        task_id: None,
        checkpoint: ckpt.encode()?,
        lease_until: rt.lease_from_now(),
        project_id: req.project_id.clone(),
    };
    match rt.runs.start_run(&new, &req.message).await? {
        Ok(()) => {}
        Err(SlotError::NotOwner) => return Err(AgentError::NotFound(format!("thread {thread} not found"))),
        Err(SlotError::Busy(active)) => {
            return Err(AgentError::Conflict(format!("thread {thread} already has an active run ({active}); cancel it or wait for it to finish")))
        }
        Err(SlotError::OtherProject(bound)) => {
            let bound = bound.map_or_else(|| "your personal project".to_owned(), |p| format!("project {p}"));
            return Err(AgentError::Conflict(format!("thread {thread} is bound to {bound} (its first message fixed it); start a new thread to work in another project")))
        }
    }
    let writer = Mutex::new(rt.writer(thread));
    let start = RunStart {
        message_id: format!("msg_{}", uuid::Uuid::new_v4().simple()),
        trace_id: None,
        message_group_id: None,
        message: Some(req.message.clone()),
        attachments: files.iter().map(|f| f.info.clone()).collect(),
    };
    writer.lock().await.emit(event(&run, &agent, EventPayload::RunStart(start))).await?;
    // Stored with the run once its slot is taken (a refused message stores nothing).
    let stored = rt.attachments.save(thread, &run, &files).await;
    if let Err(e) = stored {
        tracing::error!(runId = %run, error = %e, "cannot store the message's attachments");
        if let Some(chain) = rt.runs.chain(&run, &agent).await? {
            let ending = Ending { status: RunStatus::Error, reason: Some("the message's attachments could not be stored".into()), result: None };
            finish_chain(rt, &writer, &chain, ChainState::Queued, Some(0), ckpt, Vec::new(), Settle::Failed, ending).await?;
        }
        return Err(e.into());
    }
    // The chain's lease is in the sweep's index: the sweep watches it from
    // now on (store::sweep_schedule), then step 1 goes out.
    let armed = match &rt.sweep {
        Some(flag) => flag.arm().await.map_err(AgentError::from),
        None => Ok(()),
    };
    let queued = match armed {
        Ok(()) => rt.enqueue(&StepMessage { run_id: run.0.clone(), agent_id: agent.0.clone(), step: 1, request_id: None, wait_id: None }).await,
        Err(e) => Err(e),
    };
    if let Err(e) = queued {
        // Nobody will ever run it: end it now rather than at the lease.
        tracing::error!(runId = %run, error = %e, "cannot start step 1");
        if let Some(chain) = rt.runs.chain(&run, &agent).await? {
            let ending = Ending { status: RunStatus::Error, reason: Some("the run could not be queued".into()), result: None };
            finish_chain(rt, &writer, &chain, ChainState::Queued, Some(0), ckpt, Vec::new(), Settle::Failed, ending).await?;
        }
        return Err(e);
    }
    tracing::info!(runId = %run, threadId = %thread, "run started");
    Ok(run)
}

/// A project the user is a member of; any other is not found.
async fn member_of(rt: &Runtime, user: &UserId, project: &str) -> Result<(), AgentError> {
    let projects = rt.projects.as_ref().ok_or_else(|| AgentError::Instance(instance::InstanceError::Internal("no instance data in this function (deployment error)".into())))?;
    let role = projects.role(user, project).await.map_err(|e| AgentError::Instance(e.into()))?;
    match role {
        Some(r) if r.can("project:read") => Ok(()),
        _ => Err(AgentError::Instance(instance::InstanceError::NotFound(format!("project {project}")))),
    }
}

/// Records a decision (the first wins) and enqueues the resume step.
pub async fn confirm(rt: &Runtime, request_id: &str, user: &UserId, req: &ConfirmRequest) -> Result<(), AgentError> {
    let sus = rt.suspensions.get_owned(request_id, user).await?;
    if sus.state != "pending" {
        return Err(AgentError::Conflict(format!("confirmation request {request_id} was already answered ({})", sus.state)));
    }
    let decision = Decision {
        approved: req.approved,
        user_input: req.user_input.clone(),
        answers: req.answers.clone(),
        scope: req.scope,
        expired: false,
        setup: crate::tools::SetupAnswer {
            credentials: req.credentials.clone(),
            node_credentials: req.node_credentials.clone(),
            node_parameters: req.node_parameters.clone(),
            skipped_nodes: req.skipped_nodes.clone(),
            auto_setup: req.auto_setup.clone(),
        },
    };
    let allow_key = match (req.approved, req.scope) {
        // Named by the tool when it asked (a record from before that: by the
        // tool or the MCP server, when this process has it).
        (true, Some(Scope::Session)) => sus.allow_key.clone().or_else(|| match rt.tools.get(&sus.tool_name) {
            Some(t) => t.allow_key(&Value::Object(sus.args.clone())),
            None if crate::mcp::is_mcp_tool(&sus.tool_name) => Some(crate::mcp::allow_key(&sus.tool_name)),
            None => None,
        }),
        _ => None,
    };
    let state = if req.approved { "approved" } else { "denied" };
    let json = serde_json::to_string(&decision).map_err(|e| AgentError::Invalid(e.to_string()))?;
    let decided = rt
        .runs
        .decide(
            &sus.run_id,
            &sus.agent_id,
            request_id,
            sus.step,
            state,
            &json,
            rt.lease_from_now(),
            allow_key.as_deref().map(|k| (&sus.thread_id, k)),
        )
        .await?;
    if !decided {
        return Err(AgentError::Conflict(format!("confirmation request {request_id} was already answered or its run ended")));
    }
    rt.enqueue(&StepMessage {
        run_id: sus.run_id.0.clone(),
        agent_id: sus.agent_id.0.clone(),
        step: sus.step + 1,
        request_id: Some(request_id.to_owned()),
        wait_id: None,
    })
    .await?;
    tracing::info!(runId = %sus.run_id, request_id, state, "decision recorded; resume queued");
    Ok(())
}

/// What cancel did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelOutcome {
    /// The run cancel acted on (none: nothing to cancel).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// False when the run had already finished (a no-op).
    pub cancelled: bool,
}

/// Stop: every chain of the thread's current (or last) run is stopped, the
/// orchestrator first. Idempotent.
pub async fn cancel(rt: &Runtime, thread: &ThreadId, user: &UserId) -> Result<CancelOutcome, AgentError> {
    let (owner, active, last) = rt.runs.slot(thread).await?.ok_or_else(|| thread_not_found(thread))?;
    if &owner != user {
        return Err(thread_not_found(thread));
    }
    let Some(run) = active.or(last) else { return Ok(CancelOutcome { run_id: None, cancelled: false }) };
    let mut chains = rt.runs.chains(&run).await?;
    // The orchestrator first, so its run-finish is not held up by agents.
    chains.sort_by_key(|c| !c.is_orchestrator());
    let writer = Mutex::new(rt.writer(thread));
    let mut acted = false;
    for chain in chains {
        acted |= cancel_chain(rt, &writer, &chain).await?;
    }
    tracing::info!(runId = %run, threadId = %thread, acted, "cancel handled");
    Ok(CancelOutcome { run_id: Some(run.0), cancelled: acted })
}

fn thread_not_found(thread: &ThreadId) -> AgentError {
    AgentError::NotFound(format!("thread {thread} not found"))
}

/// `NotFound` unless `user` owns `thread` (a stranger's thread looks missing).
async fn owned_slot(rt: &Runtime, thread: &ThreadId, user: &UserId) -> Result<(), AgentError> {
    match rt.runs.slot(thread).await? {
        Some((owner, _, _)) if &owner == user => Ok(()),
        _ => Err(thread_not_found(thread)),
    }
}

/// Stops one chain: a suspended one is finished at once (its pending
/// request cancelled), as is one parked on an execution (the execution is
/// stopped too); a queued or running one gets the flag its step polls
/// between model chunks and tool calls; a finished one is left alone.
/// `true` when it acted.
async fn cancel_chain(rt: &Runtime, writer: &Mutex<store::EventWriter>, chain: &store::runs::Chain) -> Result<bool, AgentError> {
    match chain.state {
        ChainState::Finishing | ChainState::Finished => Ok(false),
        ChainState::Suspended => {
            let ckpt = Checkpoint::decode(chain.checkpoint.as_deref())?;
            let open: Vec<String> = chain.open_tools.keys().cloned().collect();
            let ending = Ending { status: RunStatus::Cancelled, reason: Some("user_cancelled".into()), result: None };
            let done =
                finish_chain(rt, writer, chain, ChainState::Suspended, Some(chain.step), ckpt, open, Settle::Cancelled, ending).await?;
            if done {
                if let Some(req) = &chain.suspended_request {
                    rt.suspensions.cancel(req).await?;
                }
                Ok(true)
            } else {
                // A decision won the race and re-queued it: flag it instead.
                Ok(rt.runs.request_cancel(&chain.run_id, &chain.agent_id).await?)
            }
        }
        ChainState::Waiting => {
            // Parked on an execution: end the chain here and stop the execution.
            let ckpt = Checkpoint::decode(chain.checkpoint.as_deref())?;
            let open: Vec<String> = chain.open_tools.keys().cloned().collect();
            let ending = Ending { status: RunStatus::Cancelled, reason: Some("user_cancelled".into()), result: None };
            let done =
                finish_chain(rt, writer, chain, ChainState::Waiting, Some(chain.step), ckpt, open, Settle::Cancelled, ending).await?;
            if done {
                if let Some(id) = &chain.suspended_request {
                    stop_waited(rt, id).await?;
                }
                Ok(true)
            } else {
                // The execution settled and its resume won the race: flag the
                // resumed step (it stops the execution if still going).
                Ok(rt.runs.request_cancel(&chain.run_id, &chain.agent_id).await?)
            }
        }
        ChainState::Queued | ChainState::Running => Ok(rt.runs.request_cancel(&chain.run_id, &chain.agent_id).await?),
    }
}

/// The run and agent of a background task of `thread`.
pub async fn find_task(rt: &Runtime, thread: &ThreadId, task_id: &str) -> Result<Option<(RunId, AgentId)>, AgentError> {
    let Some(item) = rt.runs.get_record(&format!("thread#{thread}"), &format!("task#{task_id}")).await? else {
        return Ok(None);
    };
    let field = |name: &str| store::data::db::get_s(&item, name).map(str::to_owned);
    Ok(field("runId").zip(field("agentId")).map(|(r, a)| (RunId(r), AgentId(a))))
}

/// What stopping one background task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskCancel {
    NotFound,
    AlreadyFinished,
    Cancelled,
}

/// Stops one background task of `thread` — where the spec's three cancel
/// surfaces converge: the per-task stop button
/// (`POST /chat/:threadId/tasks/:taskId/cancel`, [`cancel_task`]), the
/// orchestrator's `task-control(action="cancel-task")`, and the global Stop
/// ([`cancel`], which stops every chain of the run the same way).
pub async fn cancel_background_task(
    rt: &Runtime,
    writer: &Mutex<store::EventWriter>,
    thread: &ThreadId,
    task_id: &str,
) -> Result<TaskCancel, AgentError> {
    let Some((run, agent)) = find_task(rt, thread, task_id).await? else { return Ok(TaskCancel::NotFound) };
    let Some(chain) = rt.runs.chain(&run, &agent).await? else { return Ok(TaskCancel::NotFound) };
    let acted = cancel_chain(rt, writer, &chain).await?;
    tracing::info!(runId = %run, threadId = %thread, task_id, acted, "background task cancel handled");
    Ok(if acted { TaskCancel::Cancelled } else { TaskCancel::AlreadyFinished })
}

/// What the per-task stop did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskCancelOutcome {
    pub task_id: String,
    /// False when the task had already finished (a no-op).
    pub cancelled: bool,
}

/// `POST /instance-ai/chat/:threadId/tasks/:taskId/cancel`: the owner's
/// per-task stop. A task this thread does not have is 404. Idempotent.
pub async fn cancel_task(rt: &Runtime, thread: &ThreadId, user: &UserId, task_id: &str) -> Result<TaskCancelOutcome, AgentError> {
    owned_slot(rt, thread, user).await?;
    let writer = Mutex::new(rt.writer(thread));
    let cancelled = match cancel_background_task(rt, &writer, thread, task_id).await? {
        TaskCancel::NotFound => return Err(AgentError::NotFound(format!("background task {task_id} not found in thread {thread}"))),
        TaskCancel::AlreadyFinished => false,
        TaskCancel::Cancelled => true,
    };
    Ok(TaskCancelOutcome { task_id: task_id.to_owned(), cancelled })
}

/// Stops the execution a cancelled chain was parked on and closes its wait record.
async fn stop_waited(rt: &Runtime, wait_id: &str) -> Result<(), AgentError> {
    let Some(record) = rt.suspensions.get(wait_id).await? else { return Ok(()) };
    if let Some(wait) = &record.wait {
        match &rt.executions {
            Some(x) => match x.stop(&wait.execution_id).await {
                Ok(_) => tracing::info!(executionId = %wait.execution_id, "stopped the execution the cancelled run waited on"),
                Err(e) => tracing::error!(executionId = %wait.execution_id, error = %e, "could not stop the execution the cancelled run waited on"),
            },
            None => tracing::error!(executionId = %wait.execution_id, "this function cannot stop executions (no Executions table)"),
        }
    }
    rt.suspensions.cancel(wait_id).await?;
    Ok(())
}
