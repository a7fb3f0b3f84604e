//! One step of a chain: claim `(run, agent, step)` with a conditional write,
//! load the checkpoint, resume a decided suspension or run pending tool
//! calls, make at most one streamed model call, run its tool calls, then
//! save the checkpoint and enqueue the next step — or suspend, or finish.
//!
//! Cancel is a flag on the chain item: a poller reads it every
//! `Settings::cancel_poll` and fires the abort token, which ends the model
//! stream (between chunks) and races every tool handler.

use crate::checkpoint::{Checkpoint, PendingCall};
use crate::error::AgentError;
use crate::finish::{finish_chain, Ending, Settle};
use crate::model::{Message, ModelChunk, ModelError, ModelProvider, ModelRequest, TurnBuilder};
use crate::runtime::{event, Runtime, StepMessage};
use crate::tools::policy::Mode;
use crate::tools::{self, CancellationToken, Decision, ExecutionWait, Offer, Tool, ToolContext, ToolOutcome, Toolbox};
use futures::StreamExt;
use protocol::events::{
    ConfirmationRequest, ErrorPayload, EventPayload, RunStatus, TextDelta, ToolCall, ToolError, ToolInputStart,
    ToolResult,
};
use protocol::ids::{AgentId, RunId};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use store::runs::{now_ms, Chain, ChainState};
use store::suspensions::Suspension;
use store::EventWriter;
use tokio::sync::Mutex;
use tracing::Instrument;

/// How a step ends.
enum StepEnd {
    /// Save the checkpoint and enqueue the next step.
    Continue,
    /// A suspension was written; nothing more to do.
    Suspended,
    Finish(Ending),
}

fn finish(status: RunStatus, reason: Option<String>) -> StepEnd {
    StepEnd::Finish(Ending { status, reason, result: None })
}

fn cancelled() -> StepEnd {
    finish(RunStatus::Cancelled, Some("user_cancelled".into()))
}

/// Aborts the cancel poller when the step ends (or is dropped mid-way).
struct Poller(tokio::task::JoinHandle<()>);

impl Drop for Poller {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn start_poller(rt: &Arc<Runtime>, run: &RunId, agent: &AgentId, abort: CancellationToken) -> Poller {
    let (rt, run, agent) = (rt.clone(), run.clone(), agent.clone());
    Poller(tokio::spawn(async move {
        let mut tick = tokio::time::interval(rt.settings.cancel_poll);
        loop {
            tick.tick().await;
            match rt.runs.cancel_requested(&run, &agent).await {
                Ok(true) => {
                    tracing::info!(run_id = %run, agent_id = %agent, "cancel requested; aborting the step");
                    abort.cancel();
                    return;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "cannot read the cancel flag"),
            }
        }
    }))
}

/// Handles one step message. `Err` only when nothing was claimed (the
/// message should be redelivered); failures after the claim end the run.
pub async fn run_step(rt: &Arc<Runtime>, msg: StepMessage) -> Result<(), AgentError> {
    let run = RunId(msg.run_id.clone());
    let agent = AgentId(msg.agent_id.clone());
    let claimed = match &msg.wait_id {
        Some(wait) => rt.runs.claim_wait(&run, &agent, msg.step, wait, rt.lease_from_now()).await?,
        None => rt.runs.claim(&run, &agent, msg.step, rt.lease_from_now()).await?,
    };
    let Some(chain) = claimed else {
        tracing::info!(runId = %run, agentId = %agent, step = msg.step, "duplicate or late step delivery; acknowledged without effect");
        return Ok(());
    };
    let span = tracing::info_span!("run", runId = %run, threadId = %chain.thread_id, agentId = %agent, step = msg.step);
    async move {
        tracing::info!("step claimed");
        let abort = CancellationToken::new();
        if chain.cancel {
            abort.cancel();
        }
        let _poller = start_poller(rt, &run, &agent, abort.clone());
        let ckpt = match Checkpoint::decode(chain.checkpoint.as_deref()) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "unreadable checkpoint");
                Checkpoint::default()
            }
        };
        let mut step = Step {
            rt,
            open: chain.open_tools.clone(),
            chain: &chain,
            step: msg.step,
            ckpt,
            writer: Mutex::new(rt.writer(&chain.thread_id)),
            abort,
            deadline: Instant::now() + rt.settings.step_budget,
            extra_tools: Vec::new(),
        };
        let end = match step.body(msg.request_id.as_deref(), msg.wait_id.as_deref()).await {
            Ok(end) => end,
            Err(e) if e.is_lost_ownership() => {
                tracing::warn!(error = %e, "the chain moved on (cancelled or swept); this step stops");
                return Ok(());
            }
            Err(e) => {
                tracing::error!(error = %e, "step failed");
                finish(RunStatus::Error, Some(e.to_string()))
            }
        };
        if let Err(e) = step.conclude(end).await {
            tracing::error!(error = %e, "could not conclude the step; the sweep will finish the run");
        }
        Ok(())
    }
    .instrument(span)
    .await
}

struct Step<'a> {
    rt: &'a Arc<Runtime>,
    chain: &'a Chain,
    step: u64,
    ckpt: Checkpoint,
    writer: Mutex<EventWriter>,
    abort: CancellationToken,
    deadline: Instant,
    /// Tool calls recorded as started and not settled (mirrors the chain item).
    open: BTreeMap<String, String>,
    /// The user's connected MCP servers' tools (read when the step starts).
    extra_tools: Vec<Arc<dyn Tool>>,
}

enum Exec {
    Settled,
    Suspended,
}

enum Turn {
    Done(TurnBuilder),
    Cancelled,
    Failed(ModelError),
}

impl<'a> Step<'a> {
    /// Every tool this step can reach.
    fn toolbox(&self) -> Toolbox<'a> {
        let rt: &'a Arc<Runtime> = self.rt;
        Toolbox::new(&rt.tools, self.extra_tools.clone())
    }

    /// What this agent's next model call may be offered.
    fn offer(&self) -> Offer {
        Offer {
            orchestrator: self.chain.is_orchestrator(),
            checkpoint_task: self.ckpt.task.as_ref().is_some_and(|t| t.kind == "checkpoint"),
            attachments: tools::parse_file::any_parseable(&self.ckpt.attachments),
            loaded: self.ckpt.loaded_tools.clone(),
        }
    }

    fn run_id(&self) -> &RunId {
        &self.chain.run_id
    }

    fn agent_id(&self) -> &AgentId {
        &self.chain.agent_id
    }

    async fn emit(&self, payload: EventPayload) -> Result<(), AgentError> {
        self.writer.lock().await.emit(event(self.run_id(), self.agent_id(), payload)).await?;
        Ok(())
    }

    async fn body(&mut self, request_id: Option<&str>, wait_id: Option<&str>) -> Result<StepEnd, AgentError> {
        if let Some(wait_id) = wait_id {
            // Even when cancelled: the tool stops an execution still going.
            self.resume_wait(wait_id).await?;
        }
        if self.abort.is_cancelled() {
            return Ok(cancelled());
        }
        if self.ckpt.needs_history {
            if let Some(bytes) = self.rt.runs.history(&self.chain.thread_id).await? {
                let mut history = Checkpoint::history_from(&bytes)?;
                history.append(&mut self.ckpt.messages);
                self.ckpt.messages = history;
            } else if self.chain.is_orchestrator() {
                self.add_past_conversations_cue().await;
            }
            self.ckpt.needs_history = false;
        }
        if self.chain.is_orchestrator() {
            // The user's connected MCP servers' tools (one read; none when no server is configured).
            self.extra_tools = crate::mcp::tools_for(self.rt, &self.chain.user_id).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "the connected MCP servers could not be read");
                Vec::new()
            });
        }
        for correction in &self.chain.corrections {
            self.ckpt.messages.push(Message::user(format!("Course correction from the orchestrator: {correction}")));
        }
        if let Some(request_id) = request_id {
            if let Some(end) = self.resume(request_id).await? {
                return Ok(end);
            }
        }

        if let Some(end) = self.run_pending().await? {
            return Ok(end);
        }
        if self.abort.is_cancelled() {
            return Ok(cancelled());
        }
        if Instant::now() >= self.deadline {
            return Ok(StepEnd::Continue);
        }
        if self.ckpt.model_calls >= self.rt.settings.max_steps {
            return Ok(finish(
                RunStatus::Error,
                Some(format!("the run reached its limit of {} model steps (INSTANCE_AI_MAX_STEPS)", self.rt.settings.max_steps)),
            ));
        }
        let model = match &self.rt.model {
            Ok(m) => m.clone(),
            Err(e) => return Ok(finish(RunStatus::Error, Some(e.message.clone()))),
        };
        let builder = match self.model_turn(model).await? {
            Turn::Done(b) => b,
            Turn::Cancelled => return Ok(cancelled()),
            Turn::Failed(e) => {
                self.emit(EventPayload::Error(ErrorPayload {
                    content: e.message.clone(),
                    status_code: e.status_code,
                    code: None,
                    provider: Some(e.provider.clone()),
                    technical_details: None,
                }))
                .await?;
                let reason = match e.status_code {
                    Some(code) => format!("{} model provider failed ({code}): {}", e.provider, e.message),
                    None => format!("{} model provider failed: {}", e.provider, e.message),
                };
                return Ok(finish(RunStatus::Error, Some(reason)));
            }
        };
        self.ckpt.model_calls += 1;
        let calls: Vec<PendingCall> = builder
            .tool_calls()
            .into_iter()
            .map(|(id, name, args)| PendingCall { id: id.to_owned(), name: name.to_owned(), args: args.clone() })
            .collect();
        let text = builder.text();
        self.ckpt.messages.push(builder.into_message());
        if calls.is_empty() {
            return Ok(StepEnd::Finish(Ending { status: RunStatus::Completed, reason: None, result: Some(text) }));
        }
        self.ckpt.pending = calls;
        Ok(self.run_pending().await?.unwrap_or(StepEnd::Continue))
    }

    /// Streams one model call, publishing deltas and tool calls as they come.
    async fn model_turn(&mut self, model: Arc<dyn ModelProvider>) -> Result<Turn, AgentError> {
        let mut system = match self.ckpt.task.as_ref().and_then(|t| t.context.as_deref()) {
            Some(c) => format!("{}\n\n{c}", self.rt.system_prompt),
            None => self.rt.system_prompt.clone(),
        };
        let preferences = self.user_preferences().await;
        if !preferences.is_empty() {
            system = format!("{system}\n\n{preferences}");
        }
        let request = ModelRequest {
            system,
            messages: self.ckpt.messages.clone(),
            tools: self.toolbox().definitions(&self.offer()),
        };
        let response_id = format!("{}-{}-{}", self.run_id(), self.agent_id(), self.step);
        let mut stream = model.stream(request, self.abort.clone());
        let mut builder = TurnBuilder::new();
        while let Some(item) = stream.next().await {
            let chunk = match item {
                Ok(c) => c,
                Err(e) => return Ok(Turn::Failed(e)),
            };
            builder.push(&chunk);
            let payload = match chunk {
                ModelChunk::ReasoningDelta(text) => EventPayload::ReasoningDelta(TextDelta { text }),
                ModelChunk::TextDelta(text) => EventPayload::TextDelta(TextDelta { text }),
                ModelChunk::ToolInputStart { id, name } => {
                    EventPayload::ToolInputStart(ToolInputStart { tool_call_id: id, tool_name: name })
                }
                ModelChunk::ToolCall { id, name, args } => {
                    // Recorded as started before anyone can see it: a call
                    // the UI shows is always one the sweep can settle.
                    self.rt.runs.tool_started(self.run_id(), self.agent_id(), self.step, &id, &name).await?;
                    self.open.insert(id.clone(), name.clone());
                    let args = match args {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    EventPayload::ToolCall(ToolCall { tool_call_id: id, tool_name: name, args })
                }
                ModelChunk::ReasoningSignature(_) | ModelChunk::Finish { .. } => continue,
            };
            let ev = event(self.run_id(), self.agent_id(), payload).with_response_id(response_id.clone());
            self.writer.lock().await.emit(ev).await?;
        }
        if self.abort.is_cancelled() {
            return Ok(Turn::Cancelled);
        }
        if builder.finish().is_none() {
            let provider = model.provider().to_owned();
            return Ok(Turn::Failed(ModelError::protocol(provider, "the model stream ended without finishing")));
        }
        Ok(Turn::Done(builder))
    }

    /// Runs the pending calls in order; `Some` when the step must end here.
    async fn run_pending(&mut self) -> Result<Option<StepEnd>, AgentError> {
        while let Some(call) = self.ckpt.pending.first().cloned() {
            if self.abort.is_cancelled() {
                return Ok(Some(cancelled()));
            }
            if Instant::now() >= self.deadline {
                return Ok(Some(StepEnd::Continue));
            }
            match self.execute(&call, None).await? {
                Exec::Settled => {
                    self.ckpt.pending.remove(0);
                }
                Exec::Suspended => return Ok(Some(StepEnd::Suspended)),
            }
        }
        Ok(None)
    }

    /// Applies the decision of a suspension to the call it waits on.
    async fn resume(&mut self, request_id: &str) -> Result<Option<StepEnd>, AgentError> {
        let sus = self
            .rt
            .suspensions
            .get(request_id)
            .await?
            .ok_or_else(|| AgentError::NotFound(format!("suspension {request_id} not found")))?;
        // The decision is re-checked here, not trusted from the message.
        let decision: Decision = match sus.state.as_str() {
            "approved" | "denied" | "expired" => {
                let mut d: Decision = sus.decision.clone().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
                d.approved = sus.state == "approved";
                d.expired = sus.state == "expired";
                d
            }
            other => return Err(AgentError::Conflict(format!("suspension {request_id} is {other}, not decided"))),
        };
        let Some(call) = self.ckpt.pending.first().cloned().filter(|c| c.id == sus.tool_call_id) else {
            return Err(AgentError::Checkpoint(format!("suspension {request_id} does not match the pending call")));
        };
        match self.execute(&call, Some(decision)).await? {
            Exec::Settled => {
                self.ckpt.pending.remove(0);
                Ok(None)
            }
            Exec::Suspended => Ok(Some(StepEnd::Suspended)),
        }
    }

    /// Validates, gates and runs one call, then settles it.
    async fn execute(&mut self, call: &PendingCall, decision: Option<Decision>) -> Result<Exec, AgentError> {
        let toolbox = self.toolbox();
        let offer = self.offer();
        let tool = match toolbox.callable(&offer, &call.name) {
            Some(t) => t,
            None => {
                self.settle(call, Err(format!("Unknown tool {:?}; use one of the tools you were given (search_tools finds more).", call.name))).await?;
                return Ok(Exec::Settled);
            }
        };
        // A deferred tool called by name is loaded from now on.
        if !tools::deferral::is_always_loaded(tool.name()) {
            self.ckpt.loaded_tools.insert(tool.name().to_owned());
        }
        if let Err(e) = tool.check_input(&call.args) {
            self.settle(call, Err(format!("Invalid input for {}: {e}. Fix the arguments and call the tool again.", call.name)))
                .await?;
            return Ok(Exec::Settled);
        }
        if decision.is_none() {
            let gate = {
                let ctx = self.tool_context(call, &toolbox, &offer);
                tool.gate(&ctx, &call.args).await
            };
            match gate {
                Err(e) => {
                    self.settle(call, Err(e)).await?;
                    return Ok(Exec::Settled);
                }
                Ok(None) => {}
                Ok(Some(gate)) => {
                    let mode = gate.policy.as_deref().map(|a| (a, self.rt.policy.mode(a)));
                    let ask = match mode {
                        Some((action, Mode::Blocked)) => {
                            tracing::info!(tool = %call.name, action, "blocked by the admin policy");
                            self.settle(call, Ok(tools::blocked(action))).await?;
                            return Ok(Exec::Settled);
                        }
                        Some((_, Mode::AlwaysAllow)) => false,
                        // Questions always ask; permissions unless a session grant covers them.
                        None => true,
                        Some((_, Mode::RequireApproval)) => {
                            let keys = tool.covering_keys(&call.args);
                            let granted = if keys.is_empty() {
                                false
                            } else {
                                let held = self.rt.runs.always_allowed(&self.chain.thread_id).await?;
                                keys.iter().any(|k| held.contains(k))
                            };
                            !granted
                        }
                    };
                    if ask {
                        for payload in gate.before {
                            self.emit(payload).await?;
                        }
                        self.suspend(call, gate.request).await?;
                        return Ok(Exec::Suspended);
                    }
                }
            }
        }
        let outcome = {
            let ctx = self.tool_context(call, &toolbox, &offer);
            let fut = match decision {
                None => tool.run(&ctx, call.args.clone()),
                Some(d) => tool.resume(&ctx, call.args.clone(), d),
            };
            self.race_abort(tool.handles_abort(), fut).await
        };
        match outcome {
            Some(ToolOutcome::Wait(wait)) => {
                if self.park(call, &wait).await? {
                    return Ok(Exec::Suspended);
                }
                // Settled meanwhile (or a cancel came in): finish the call now.
                let cancelled = self.rt.runs.cancel_requested(self.run_id(), self.agent_id()).await?;
                if cancelled {
                    // The tool stops the execution and reports the cancel.
                    self.abort.cancel();
                }
                let outcome = {
                    let ctx = self.tool_context(call, &toolbox, &offer);
                    tool.resume_wait(&ctx, call.args.clone(), wait, cancelled).await
                };
                self.settle_outcome(call, Some(outcome)).await?
            }
            other => self.settle_outcome(call, other).await?,
        }
        Ok(Exec::Settled)
    }

    /// Runs a handler against the abort signal, so Stop never waits on a
    /// tool; one that answers the signal itself is awaited instead.
    async fn race_abort(&self, handles_abort: bool, fut: futures::future::BoxFuture<'_, ToolOutcome>) -> Option<ToolOutcome> {
        if handles_abort {
            return Some(fut.await);
        }
        tokio::select! {
            biased;
            _ = self.abort.cancelled() => None,
            out = fut => Some(out),
        }
    }

    /// Settles a call from its handler's outcome (`None`: aborted).
    async fn settle_outcome(&mut self, call: &PendingCall, outcome: Option<ToolOutcome>) -> Result<(), AgentError> {
        match outcome {
            Some(ToolOutcome::Done(v)) => self.settle(call, Ok(v)).await,
            Some(ToolOutcome::Failed(e)) => self.settle(call, Err(e)).await,
            Some(ToolOutcome::Wait(_)) => self.settle(call, Err("the tool could not finish waiting on its execution".into())).await,
            None => {
                let v = serde_json::json!({"cancelled": true, "message": "Cancelled by the user before the tool finished."});
                self.settle(call, Ok(v)).await
            }
        }
    }

    /// Parks the chain on the execution `wait` names: the wait record, the
    /// resume checkpoint (the call still pending) and the execution's
    /// waiter (the resume step message) in one transaction. `false`: not
    /// parked — the execution settled first or a cancel was requested (the
    /// caller finishes the call at once).
    async fn park(&mut self, call: &PendingCall, wait: &ExecutionWait) -> Result<bool, AgentError> {
        let instance = self.rt.instance.as_ref().ok_or_else(|| AgentError::Invalid("this function cannot wait on executions".into()))?;
        let wait_id = format!("ew_{}", uuid::Uuid::new_v4().simple());
        let args = match &call.args {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let record = Suspension {
            request_id: wait_id.clone(),
            thread_id: self.chain.thread_id.clone(),
            run_id: self.chain.run_id.clone(),
            agent_id: self.chain.agent_id.clone(),
            user_id: self.chain.user_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args,
            step: self.step,
            state: "waiting".into(),
            decision: None,
            created_at: now_ms(),
            wait: Some(wait.clone()),
            allow_key: None,
        };
        let resume = StepMessage {
            run_id: self.run_id().0.clone(),
            agent_id: self.agent_id().0.clone(),
            step: self.step + 1,
            request_id: None,
            wait_id: Some(wait_id.clone()),
        };
        let body = serde_json::to_string(&resume).map_err(|e| AgentError::Invalid(e.to_string()))?;
        let watch = instance.data.executions.watch(&wait.execution_id, &body)?;
        self.writer.lock().await.flush().await?;
        let parked = self
            .rt
            .runs
            .park(self.run_id(), self.agent_id(), self.step, &self.ckpt.encode()?, record.to_item(), &wait_id, wait.deadline_ms, watch)
            .await?;
        if parked {
            tracing::info!(wait_id = %wait_id, executionId = %wait.execution_id, tool = %call.name, "parked on the execution");
            return Ok(true);
        }
        // Not parked: make sure this step still owns the chain.
        match self.rt.runs.chain(self.run_id(), self.agent_id()).await? {
            Some(c) if c.state == ChainState::Running && c.step == self.step => Ok(false),
            _ => Err(AgentError::Store(store::StoreError::Conflict(format!("step {} no longer owns the chain", self.step)))),
        }
    }

    /// Settles the call a wait record parked (the execution settled, or the
    /// sweep resumed it at its deadline).
    async fn resume_wait(&mut self, wait_id: &str) -> Result<(), AgentError> {
        let record = self
            .rt
            .suspensions
            .get(wait_id)
            .await?
            .ok_or_else(|| AgentError::NotFound(format!("wait record {wait_id} not found")))?;
        let wait = record.wait.clone().ok_or_else(|| AgentError::Checkpoint(format!("{wait_id} is not a wait record")))?;
        let Some(call) = self.ckpt.pending.first().cloned().filter(|c| c.id == record.tool_call_id) else {
            return Err(AgentError::Checkpoint(format!("wait record {wait_id} does not match the pending call")));
        };
        let (toolbox, offer) = (self.toolbox(), self.offer());
        let Some(tool) = toolbox.get(&call.name) else {
            return Err(AgentError::Checkpoint(format!("the tool {:?} of wait record {wait_id} is gone", call.name)));
        };
        let deadline_passed = now_ms() >= wait.deadline_ms || self.abort.is_cancelled();
        let outcome = {
            let ctx = self.tool_context(&call, &toolbox, &offer);
            let fut = tool.resume_wait(&ctx, call.args.clone(), wait, deadline_passed);
            self.race_abort(tool.handles_abort(), fut).await
        };
        self.settle_outcome(&call, outcome).await?;
        self.ckpt.pending.remove(0);
        Ok(())
    }

    /// A new thread's first message learns of the project's other
    /// conversations (`<past-conversations>`), so recall is an option the
    /// model sees; a failed read leaves the message as it was.
    async fn add_past_conversations_cue(&mut self) {
        match crate::history::past_conversations_cue(self.rt, &self.chain).await {
            Ok(Some(cue)) => {
                if let Some(Message::User { text }) = self.ckpt.messages.iter_mut().rev().find(|m| matches!(m, Message::User { .. })) {
                    text.push_str(&cue);
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "past conversations could not be read"),
        }
    }

    /// The user's saved preferences as a system prompt section (read each
    /// model call, so a preference saved in this run applies to its next
    /// call; a failed read leaves them out rather than failing the run).
    async fn user_preferences(&self) -> String {
        let Some(inst) = self.rt.instance.as_ref() else { return String::new() };
        match inst.data.agent.preferences(&self.chain.user_id).await {
            Ok(p) => tools::preferences::prompt_section(&p),
            Err(e) => {
                tracing::warn!(error = %e, "the user's preferences could not be read");
                String::new()
            }
        }
    }

    fn tool_context<'c>(&'c self, call: &'c PendingCall, toolbox: &'c Toolbox<'c>, offer: &'c Offer) -> ToolContext<'c> {
        ToolContext {
            rt: self.rt,
            run_id: &self.chain.run_id,
            thread_id: &self.chain.thread_id,
            user_id: &self.chain.user_id,
            project_id: self.chain.project_id.as_deref(),
            agent_id: &self.chain.agent_id,
            tool_call_id: &call.id,
            abort: self.abort.clone(),
            writer: &self.writer,
            toolbox,
            offer,
        }
    }

    /// Records the call settled, then publishes its result and hands it to the model.
    async fn settle(&mut self, call: &PendingCall, result: Result<Value, String>) -> Result<(), AgentError> {
        if self.open.contains_key(&call.id) {
            self.rt.runs.tool_settled(self.run_id(), self.agent_id(), self.step, &call.id).await?;
            self.open.remove(&call.id);
        }
        let (payload, content, is_error) = match result {
            Ok(v) => {
                self.ckpt.loaded_tools.extend(tools::deferral::loaded_by(&call.name, &v));
                let content = v.to_string();
                (EventPayload::ToolResult(ToolResult { tool_call_id: call.id.clone(), result: v }), content, false)
            }
            Err(e) => (EventPayload::ToolError(ToolError { tool_call_id: call.id.clone(), error: e.clone() }), e, true),
        };
        self.emit(payload).await?;
        self.ckpt.messages.push(Message::ToolResult { tool_call_id: call.id.clone(), tool_name: call.name.clone(), content, is_error });
        Ok(())
    }

    /// Writes the suspension and the resume checkpoint, then publishes the
    /// `confirmation-request` (so `/status` says suspended before any client
    /// can see the request).
    async fn suspend(&mut self, call: &PendingCall, mut request: ConfirmationRequest) -> Result<(), AgentError> {
        let request_id = format!("cr_{}", uuid::Uuid::new_v4().simple());
        let args = match &call.args {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        request.request_id = request_id.clone();
        request.tool_call_id = call.id.clone();
        request.tool_name = call.name.clone();
        request.args = args.clone();
        // The grant an "always allow" answer records, named now: `confirm`
        // reads it from the record and needs no tools of its own.
        let allow_key = self.toolbox().get(&call.name).and_then(|t| t.allow_key(&Value::Object(args.clone())));
        let sus = Suspension {
            request_id: request_id.clone(),
            thread_id: self.chain.thread_id.clone(),
            run_id: self.chain.run_id.clone(),
            agent_id: self.chain.agent_id.clone(),
            user_id: self.chain.user_id.clone(),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args,
            step: self.step,
            state: "pending".into(),
            decision: None,
            created_at: now_ms(),
            wait: None,
            allow_key,
        };
        let deadline = self.rt.settings.confirmation_timeout.map(|t| now_ms() + t.as_millis() as u64);
        // Deltas streamed so far become blocks before the request.
        self.writer.lock().await.flush().await?;
        self.rt
            .runs
            .suspend(self.run_id(), self.agent_id(), self.step, &self.ckpt.encode()?, sus.to_item(), &request_id, deadline)
            .await?;
        self.emit(EventPayload::ConfirmationRequest(request)).await?;
        self.writer.lock().await.flush().await?;
        tracing::info!(request_id = %request_id, tool = %call.name, "suspended for a human decision");
        Ok(())
    }

    /// Saves and enqueues, or ends the chain.
    async fn conclude(&mut self, end: StepEnd) -> Result<(), AgentError> {
        match end {
            StepEnd::Suspended => Ok(()),
            StepEnd::Continue => {
                self.writer.lock().await.flush().await?;
                let next = self.step + 1;
                self.rt
                    .runs
                    .save_and_queue(self.run_id(), self.agent_id(), self.step, &self.ckpt.encode()?, self.rt.lease_from_now())
                    .await?;
                self.rt
                    .enqueue(&StepMessage {
                        run_id: self.run_id().0.clone(),
                        agent_id: self.agent_id().0.clone(),
                        step: next,
                        request_id: None,
                        wait_id: None,
                    })
                    .await?;
                tracing::info!(next, "next step queued");
                Ok(())
            }
            StepEnd::Finish(ending) => {
                let settle = match ending.status {
                    RunStatus::Cancelled => Settle::Cancelled,
                    RunStatus::Interrupted => Settle::Interrupted,
                    _ => Settle::Failed,
                };
                let open: Vec<String> = self.open.keys().cloned().collect();
                let ckpt = std::mem::take(&mut self.ckpt);
                finish_chain(self.rt, &self.writer, self.chain, ChainState::Running, Some(self.step), ckpt, open, settle, ending)
                    .await?;
                Ok(())
            }
        }
    }
}
