//! Runs as data (Agent table): the thread's single run slot, one *chain*
//! item per agent of a run (the orchestrator and each background agent),
//! the thread's conversation history and its always-allow list.
//!
//! Keys:
//! - slot: attributes `activeRunId` / `lastRunId` / `title` on the thread
//!   item `(thread#<t>, meta)` (owned by [`crate::threads`]); taking and
//!   releasing the slot also stamps `lastActivityAt` and the thread's place
//!   in its owner's list (`gsi1`, see [`crate::threads::Threads::list`]);
//! - chain: `(run#<r>, agent#<a>)` — state, claimed step number, lease,
//!   cancel flag, open tool calls, the checkpoint (compressed);
//! - history: `(thread#<t>, history)` — the conversation the next run starts from;
//! - allow: `(thread#<t>, allow#<grant key>)` — "always allow" decisions (the key scoped as the tool says, e.g. `workflows:publish:<workflowId>`).
//!
//! A chain parked on an execution (`waiting`) names its wait record in
//! `suspendedRequest`; the wait record is a suspension item (`req#<id>`) whose
//! `kind` is `execution`. Parking is one transaction with the execution's
//! `waiter` attribute (see [`crate::data::executions`]), so a chain only ever
//! waits on an execution that had not yet settled.
//!
//! A chain that may need the sweep (queued, running, finishing, or suspended
//! with a deadline) sits in the sparse `gsi1` index under `runlease#<shard>`
//! with `gsi1sk = <leaseUntil ms, 13 digits>#<run>#<agent>`, so the sweep
//! reads only expired leases. Every transition is a conditional write on the
//! chain's `state` and `step`: a duplicate or late actor fails the condition.

use crate::data::db::{self, b, get_b, get_s, key, n, s, Item, Table};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use protocol::ids::{AgentId, RunId, ThreadId};
use protocol::UserId;
use std::collections::BTreeMap;

/// The orchestrator's agent id in every run (the root of the agent tree).
pub const ORCHESTRATOR: &str = "agent-001";
/// Shards of the lease index (spreads writes of many active runs).
pub const LEASE_SHARDS: u32 = 8;
/// How long a chain may stay `finishing` (slot released, `run-finish` not yet
/// confirmed written) before the sweep writes the `run-finish` itself.
pub const FINISHING_LEASE_MS: u64 = 30_000;

pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainState {
    /// A step message is (or is about to be) on the queue.
    Queued,
    /// A step holds the lease.
    Running,
    /// Waiting for a human decision (a suspension record).
    Suspended,
    /// Parked on a workflow execution (a wait record): the executor's
    /// completion, or the sweep at the wait's deadline, sends the resume step.
    Waiting,
    /// Slot released; `run-finish` / `agent-completed` is being written.
    Finishing,
    Finished,
}

impl ChainState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChainState::Queued => "queued",
            ChainState::Running => "running",
            ChainState::Suspended => "suspended",
            ChainState::Waiting => "waiting",
            ChainState::Finishing => "finishing",
            ChainState::Finished => "finished",
        }
    }

    fn parse(v: &str) -> Result<Self, StoreError> {
        Ok(match v {
            "queued" => ChainState::Queued,
            "running" => ChainState::Running,
            "suspended" => ChainState::Suspended,
            "waiting" => ChainState::Waiting,
            "finishing" => ChainState::Finishing,
            "finished" => ChainState::Finished,
            other => return Err(StoreError::Corrupt(format!("unknown chain state {other:?}"))),
        })
    }
}

/// One agent's chain of steps.
#[derive(Debug, Clone)]
pub struct Chain {
    pub run_id: RunId,
    pub thread_id: ThreadId,
    pub user_id: UserId,
    pub agent_id: AgentId,
    pub role: String,
    pub parent_id: Option<String>,
    pub task_id: Option<String>,
    pub state: ChainState,
    /// The last claimed step number (0 before the first step).
    pub step: u64,
    pub lease_until: u64,
    pub cancel: bool,
    /// Tool calls recorded as started and not yet settled: id → tool name.
    pub open_tools: BTreeMap<String, String>,
    /// The checkpoint, decompressed (opaque to the store).
    pub checkpoint: Option<Vec<u8>>,
    pub suspended_request: Option<String>,
    pub finish_status: Option<String>,
    pub finish_reason: Option<String>,
    /// Course corrections sent to a background agent, not yet consumed.
    pub corrections: Vec<String>,
    pub created_at: u64,
    /// The project the thread is bound to (see [`NewChain::project_id`]).
    pub project_id: Option<String>,
}

impl Chain {
    pub fn is_orchestrator(&self) -> bool {
        self.agent_id.0 == ORCHESTRATOR
    }
}

/// What a new chain starts with.
#[derive(Debug, Clone)]
pub struct NewChain {
    pub run_id: RunId,
    pub thread_id: ThreadId,
    pub user_id: UserId,
    pub agent_id: AgentId,
    pub role: String,
    pub parent_id: Option<String>,
    pub task_id: Option<String>,
    pub checkpoint: Vec<u8>,
    /// The lease of the first queued step.
    pub lease_until: u64,
    /// The project the thread is bound to (writes go there); `None`: the
    /// user's personal project. For a run, the project its chat POST named:
    /// only a thread's first message binds one, [`Runs::start_run`] refuses
    /// another later.
    pub project_id: Option<String>,
}

/// Why a run slot could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotError {
    /// The thread belongs to someone else (answer as if it did not exist).
    NotOwner,
    /// A run is active on the thread.
    Busy(RunId),
    /// The run named a project the thread is not bound to (its first
    /// message bound another one, or none: `None`, the personal project).
    OtherProject(Option<String>),
}

/// The activity of a thread for `/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadActivity {
    pub active_run: Option<RunId>,
    pub is_suspended: bool,
    pub title: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Runs {
    table: Table,
}

pub fn chain_key(run: &RunId, agent: &AgentId) -> Item {
    key(format!("run#{run}"), format!("agent#{agent}"))
}

fn thread_key(thread: &ThreadId) -> Item {
    key(format!("thread#{thread}"), "meta")
}

fn shard(run: &RunId) -> u32 {
    // FNV-1a: stable across processes (std's hasher is randomised).
    let mut h: u32 = 0x811c_9dc5;
    for byte in run.0.bytes() {
        h ^= u32::from(byte);
        h = h.wrapping_mul(0x0100_0193);
    }
    h % LEASE_SHARDS
}

/// The `gsi1` partitions that hold chain leases (what the sweep watches).
pub fn lease_partitions() -> Vec<String> {
    (0..LEASE_SHARDS).map(|k| format!("runlease#{k}")).collect()
}

fn lease_pk(run: &RunId) -> String {
    format!("runlease#{}", shard(run))
}

fn lease_sk(until: u64, run: &RunId, agent: &AgentId) -> String {
    format!("{until:013}#{run}#{agent}")
}

fn get_n(item: &Item, name: &str) -> u64 {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
        _ => 0,
    }
}

impl Runs {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Runs { table: Table::new(client, table) }
    }

    pub fn table_name(&self) -> &str {
        &self.table.name
    }

    fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.table.client
    }

    /// Takes the thread's run slot for `run` (creating the thread owned by
    /// `user` on first use), then creates the orchestrator's chain, queued
    /// for step 1. Two conditional writes rather than one transaction: the
    /// slot write is the arbiter, and a failed chain put gives the slot back.
    /// A thread is bound to a project by its first run that names one;
    /// later runs keep it (whether they name it or not) and one naming
    /// another is refused. The chain carries the thread's project.
    pub async fn start_run(&self, chain: &NewChain, message: &str) -> Result<Result<(), SlotError>, StoreError> {
        let now = now_ms();
        self.table.count();
        let (bind, same_project) = match &chain.project_id {
            // Only a new thread takes a project; a thread keeps what its
            // first message bound (or did not bind).
            Some(_) => (", projectId = if_not_exists(projectId, :p)", " AND (attribute_not_exists(pk) OR projectId = :p)"),
            None => ("", ""),
        };
        let mut update = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(thread_key(&chain.thread_id)))
            .update_expression(format!(
                "SET userId = :u, threadId = :t, createdAt = if_not_exists(createdAt, :now), activeRunId = :r, lastRunId = :r, \
                 lastActivityAt = :ms, gsi1pk = :upk, gsi1sk = :usk, preview = if_not_exists(preview, :pv){bind}"
            ))
            .condition_expression(format!("(attribute_not_exists(pk) OR userId = :u) AND attribute_not_exists(activeRunId){same_project}"))
            .return_values(ReturnValue::AllNew)
            .expression_attribute_values(":u", s(&chain.user_id.0))
            .expression_attribute_values(":t", s(&chain.thread_id.0))
            .expression_attribute_values(":now", n(now / 1000))
            .expression_attribute_values(":r", s(&chain.run_id.0))
            .expression_attribute_values(":ms", n(now))
            .expression_attribute_values(":upk", s(crate::threads::list_pk(&chain.user_id)))
            .expression_attribute_values(":usk", s(crate::threads::list_sk(now, &chain.thread_id)))
            .expression_attribute_values(":pv", s(crate::threads::preview_of(message)));
        if let Some(p) = &chain.project_id {
            update = update.expression_attribute_values(":p", s(p));
        }
        let bound = match update.send().await {
            Ok(out) => out.attributes.as_ref().and_then(|a| get_s(a, "projectId")).map(str::to_owned),
            Err(e) if db::is_condition_failed(&e) => {
                // Tell a stranger's thread (404) from a busy one (409).
                let item = self.table.get_raw(&format!("thread#{}", chain.thread_id), "meta").await?.unwrap_or_default();
                return match (get_s(&item, "userId"), get_s(&item, "activeRunId"), get_s(&item, "projectId")) {
                    (Some(owner), _, _) if owner != chain.user_id.0 => Ok(Err(SlotError::NotOwner)),
                    (_, Some(active), _) => Ok(Err(SlotError::Busy(RunId(active.to_owned())))),
                    (Some(_), None, bound) if chain.project_id.is_some() && chain.project_id.as_deref() != bound => {
                        Ok(Err(SlotError::OtherProject(bound.map(str::to_owned))))
                    }
                    _ => Err(StoreError::Conflict("run slot contended; try again".into())),
                };
            }
            Err(e) => return Err(StoreError::dynamo(e)),
        };
        let chain = NewChain { project_id: bound, ..chain.clone() };
        let mut item = self.chain_item(&chain, now)?;
        item.insert("message".into(), s(message));
        if let Err(e) = self.put_record(item, Some("attribute_not_exists(pk)")).await {
            self.release_slot(&chain.thread_id, &chain.run_id).await?;
            return Err(e);
        }
        Ok(Ok(()))
    }

    /// Gives the thread's slot back if `run` holds it (idempotent).
    pub async fn release_slot(&self, thread: &ThreadId, run: &RunId) -> Result<(), StoreError> {
        let now = now_ms();
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(thread_key(thread)))
            .update_expression("SET lastActivityAt = :ms, gsi1sk = :usk REMOVE activeRunId")
            .condition_expression("activeRunId = :r")
            .expression_attribute_values(":r", s(&run.0))
            .expression_attribute_values(":ms", n(now))
            .expression_attribute_values(":usk", s(crate::threads::list_sk(now, thread)))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if db::is_condition_failed(&e) => Ok(()),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Saves the thread's conversation history (too large: skipped, logged).
    pub async fn save_history(&self, thread: &ThreadId, history: &[u8]) -> Result<(), StoreError> {
        let data = db::compress(history)?;
        if data.len() > db::MAX_ITEM_PAYLOAD {
            tracing::warn!(thread = %thread, "history too large to save; the next run starts without it");
            return Ok(());
        }
        let mut item = key(format!("thread#{thread}"), "history");
        item.insert("data".into(), b(data));
        item.insert("updatedAt".into(), n(now_ms()));
        self.put_record(item, None).await.map(|_| ())
    }

    fn chain_item(&self, chain: &NewChain, now: u64) -> Result<Item, StoreError> {
        let mut item = chain_key(&chain.run_id, &chain.agent_id);
        item.insert("runId".into(), s(&chain.run_id.0));
        item.insert("threadId".into(), s(&chain.thread_id.0));
        item.insert("userId".into(), s(&chain.user_id.0));
        item.insert("agentId".into(), s(&chain.agent_id.0));
        item.insert("role".into(), s(&chain.role));
        if let Some(p) = &chain.parent_id {
            item.insert("parentId".into(), s(p));
        }
        if let Some(task) = &chain.task_id {
            item.insert("taskId".into(), s(task));
        }
        if let Some(p) = &chain.project_id {
            item.insert("projectId".into(), s(p));
        }
        item.insert("state".into(), s(ChainState::Queued.as_str()));
        item.insert("step".into(), n(0));
        item.insert("leaseUntil".into(), n(chain.lease_until));
        item.insert("cancel".into(), AttributeValue::Bool(false));
        item.insert("openTools".into(), AttributeValue::M(Default::default()));
        item.insert("ckpt".into(), b(db::compress(&chain.checkpoint)?));
        item.insert("createdAt".into(), n(now));
        item.insert("gsi1pk".into(), s(lease_pk(&chain.run_id)));
        item.insert("gsi1sk".into(), s(lease_sk(chain.lease_until, &chain.run_id, &chain.agent_id)));
        Ok(item)
    }

    /// Creates a background agent's chain, queued for step 1. `false` when it
    /// already exists (another actor spawned it: only the winner announces it).
    pub async fn create_chain(&self, chain: &NewChain) -> Result<bool, StoreError> {
        let item = self.chain_item(chain, now_ms())?;
        self.put_record(item, Some("attribute_not_exists(pk)")).await
    }

    pub async fn chain(&self, run: &RunId, agent: &AgentId) -> Result<Option<Chain>, StoreError> {
        let item = self.table.get_raw(&format!("run#{run}"), &format!("agent#{agent}")).await?;
        item.map(|i| parse_chain(&i)).transpose()
    }

    /// The user message the run was started with (orchestrator chain).
    pub async fn run_message(&self, run: &RunId) -> Result<Option<String>, StoreError> {
        let item = self.table.get_raw(&format!("run#{run}"), &format!("agent#{ORCHESTRATOR}")).await?;
        Ok(item.and_then(|i| get_s(&i, "message").map(str::to_owned)))
    }

    /// Every chain of a run (orchestrator and background agents).
    pub async fn chains(&self, run: &RunId) -> Result<Vec<Chain>, StoreError> {
        self.table.query_prefix(&format!("run#{run}"), "agent#", false).await?.iter().map(parse_chain).collect()
    }

    /// Claims step `step` (condition: the chain is queued at `step - 1`) and
    /// takes the lease. `None`: a duplicate or late delivery, to be dropped.
    pub async fn claim(&self, run: &RunId, agent: &AgentId, step: u64, lease_until: u64) -> Result<Option<Chain>, StoreError> {
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .update_expression("SET #step = :n, #state = :running, leaseUntil = :l, gsi1pk = :gpk, gsi1sk = :gsk")
            .condition_expression("#step = :prev AND #state = :queued")
            .expression_attribute_names("#step", "step")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":n", n(step))
            .expression_attribute_values(":prev", n(step.saturating_sub(1)))
            .expression_attribute_values(":running", s("running"))
            .expression_attribute_values(":queued", s("queued"))
            .expression_attribute_values(":l", n(lease_until))
            .expression_attribute_values(":gpk", s(lease_pk(run)))
            .expression_attribute_values(":gsk", s(lease_sk(lease_until, run, agent)))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Some(parse_chain(&out.attributes.unwrap_or_default())?)),
            Err(e) if db::is_condition_failed(&e) => Ok(None),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// The cancel flag and state, read consistently (polled by a running step).
    pub async fn cancel_requested(&self, run: &RunId, agent: &AgentId) -> Result<bool, StoreError> {
        self.table.count();
        let out = self
            .client()
            .get_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .projection_expression("#c")
            .expression_attribute_names("#c", "cancel")
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(matches!(out.item.as_ref().and_then(|i| i.get("cancel")), Some(AttributeValue::Bool(true))))
    }

    /// Records a tool call as started, while the step still owns the chain.
    pub async fn tool_started(&self, run: &RunId, agent: &AgentId, step: u64, call_id: &str, tool: &str) -> Result<(), StoreError> {
        self.owned_update(run, agent, step, "SET openTools.#id = :tool", &[("#id", call_id)], vec![(":tool", s(tool))]).await
    }

    /// Settles a tool call (removes it from the open set).
    pub async fn tool_settled(&self, run: &RunId, agent: &AgentId, step: u64, call_id: &str) -> Result<(), StoreError> {
        self.owned_update(run, agent, step, "REMOVE openTools.#id", &[("#id", call_id)], vec![]).await
    }

    /// Saves the checkpoint and marks the next step queued (the caller then
    /// sends the message), keeping the lease for the queued step.
    pub async fn save_and_queue(&self, run: &RunId, agent: &AgentId, step: u64, checkpoint: &[u8], lease_until: u64) -> Result<(), StoreError> {
        self.owned_update(
            run,
            agent,
            step,
            "SET ckpt = :c, #state = :queued, leaseUntil = :l, gsi1sk = :gsk REMOVE corrections",
            &[],
            vec![
                (":c", b(db::compress(checkpoint)?)),
                (":queued", s("queued")),
                (":l", n(lease_until)),
                (":gsk", s(lease_sk(lease_until, run, agent))),
            ],
        )
        .await
    }

    /// An update that only a step still owning the chain may make.
    async fn owned_update(
        &self,
        run: &RunId,
        agent: &AgentId,
        step: u64,
        update: &str,
        names: &[(&str, &str)],
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<(), StoreError> {
        self.table.count();
        let mut req = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .update_expression(update)
            .condition_expression("#step = :step AND #state = :running")
            .expression_attribute_names("#step", "step")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":step", n(step))
            .expression_attribute_values(":running", s("running"));
        for (k, v) in names {
            req = req.expression_attribute_names(*k, *v);
        }
        for (k, v) in values {
            req = req.expression_attribute_values(k, v);
        }
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) if db::is_condition_failed(&e) => {
                Err(StoreError::Conflict(format!("run {run} agent {agent}: step {step} no longer owns the chain")))
            }
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Suspends the chain on a human decision: puts the suspension record and
    /// the resume checkpoint in one transaction (the caller publishes the
    /// `confirmation-request` after it, so `/status` already says suspended).
    #[allow(clippy::too_many_arguments)]
    pub async fn suspend(
        &self,
        run: &RunId,
        agent: &AgentId,
        step: u64,
        checkpoint: &[u8],
        suspension: Item,
        request_id: &str,
        deadline: Option<u64>,
    ) -> Result<(), StoreError> {
        let t = self.table_name();
        let (update, mut values) = match deadline {
            Some(d) => (
                "SET ckpt = :c, #state = :suspended, suspendedRequest = :q, leaseUntil = :l, gsi1sk = :gsk",
                vec![(":l", n(d)), (":gsk", s(lease_sk(d, run, agent)))],
            ),
            None => ("SET ckpt = :c, #state = :suspended, suspendedRequest = :q REMOVE gsi1pk, gsi1sk", vec![]),
        };
        values.extend([
            (":c", b(db::compress(checkpoint)?)),
            (":suspended", s("suspended")),
            (":q", s(request_id)),
            (":step", n(step)),
            (":running", s("running")),
        ]);
        let chain = db::tx_update(
            t,
            chain_key(run, agent),
            update,
            Some("#step = :step AND #state = :running"),
            &[("#step", "step"), ("#state", "state")],
            values,
        )?;
        let put = db::tx_put(t, suspension, Some("attribute_not_exists(pk)"))?;
        self.table.transact(vec![chain, put], "suspend").await
    }

    /// Parks the chain on a workflow execution: one transaction of the chain
    /// (`running` at `step`, no cancel requested → `waiting` with the resume
    /// checkpoint and a sweep deadline), the wait record, and `watch` (the
    /// execution's conditional waiter write, which fails once the execution
    /// has settled). `Ok(false)`: nothing was written — the execution had
    /// settled, a cancel was requested, or the step lost the chain; the
    /// caller re-reads to tell which.
    #[allow(clippy::too_many_arguments)]
    pub async fn park(
        &self,
        run: &RunId,
        agent: &AgentId,
        step: u64,
        checkpoint: &[u8],
        wait_record: Item,
        wait_id: &str,
        deadline: u64,
        watch: aws_sdk_dynamodb::types::TransactWriteItem,
    ) -> Result<bool, StoreError> {
        let t = self.table_name();
        let chain = db::tx_update(
            t,
            chain_key(run, agent),
            "SET ckpt = :c, #state = :waiting, suspendedRequest = :q, leaseUntil = :l, gsi1pk = :gpk, gsi1sk = :gsk",
            Some("#step = :step AND #state = :running AND #cancel = :false"),
            &[("#step", "step"), ("#state", "state"), ("#cancel", "cancel")],
            vec![
                (":c", b(db::compress(checkpoint)?)),
                (":waiting", s("waiting")),
                (":q", s(wait_id)),
                (":l", n(deadline)),
                (":gpk", s(lease_pk(run))),
                (":gsk", s(lease_sk(deadline, run, agent))),
                (":step", n(step)),
                (":running", s("running")),
                (":false", AttributeValue::Bool(false)),
            ],
        )?;
        let put = db::tx_put(t, wait_record, Some("attribute_not_exists(pk)"))?;
        match self.table.transact(vec![chain, put, watch], "park").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Claims the step that resumes a chain parked on wait `wait_id`
    /// (condition: `waiting` on that wait at `step - 1`) and takes the lease.
    /// `None`: a duplicate or late resume (the execution's completion and the
    /// sweep may both send one), or the run was cancelled meanwhile.
    pub async fn claim_wait(&self, run: &RunId, agent: &AgentId, step: u64, wait_id: &str, lease_until: u64) -> Result<Option<Chain>, StoreError> {
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .update_expression("SET #step = :n, #state = :running, leaseUntil = :l, gsi1pk = :gpk, gsi1sk = :gsk REMOVE suspendedRequest")
            .condition_expression("#step = :prev AND #state = :waiting AND suspendedRequest = :q")
            .expression_attribute_names("#step", "step")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":n", n(step))
            .expression_attribute_values(":prev", n(step.saturating_sub(1)))
            .expression_attribute_values(":running", s("running"))
            .expression_attribute_values(":waiting", s("waiting"))
            .expression_attribute_values(":q", s(wait_id))
            .expression_attribute_values(":l", n(lease_until))
            .expression_attribute_values(":gpk", s(lease_pk(run)))
            .expression_attribute_values(":gsk", s(lease_sk(lease_until, run, agent)))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match result {
            Ok(out) => Ok(Some(parse_chain(&out.attributes.unwrap_or_default())?)),
            Err(e) if db::is_condition_failed(&e) => Ok(None),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Records a decision and re-queues the suspended chain for `next_step`,
    /// atomically: the first decision wins; a second one (or a decision on a
    /// run that was cancelled meanwhile) is `Ok(false)`.
    #[allow(clippy::too_many_arguments)]
    pub async fn decide(
        &self,
        run: &RunId,
        agent: &AgentId,
        request_id: &str,
        suspended_step: u64,
        decision_state: &str,
        decision_json: &str,
        lease_until: u64,
        allow: Option<(&ThreadId, &str)>,
    ) -> Result<bool, StoreError> {
        let t = self.table_name();
        let sus = db::tx_update(
            t,
            key(format!("req#{request_id}"), "meta"),
            "SET #state = :d, #decision = :j, decidedAt = :now",
            Some("#state = :pending"),
            &[("#state", "state"), ("#decision", "decision")],
            vec![(":d", s(decision_state)), (":j", s(decision_json)), (":now", n(now_ms())), (":pending", s("pending"))],
        )?;
        let chain = db::tx_update(
            t,
            chain_key(run, agent),
            "SET #state = :queued, leaseUntil = :l, gsi1pk = :gpk, gsi1sk = :gsk REMOVE suspendedRequest",
            Some("#state = :suspended AND suspendedRequest = :q AND #step = :step"),
            &[("#state", "state"), ("#step", "step")],
            vec![
                (":queued", s("queued")),
                (":l", n(lease_until)),
                (":gpk", s(lease_pk(run))),
                (":gsk", s(lease_sk(lease_until, run, agent))),
                (":suspended", s("suspended")),
                (":q", s(request_id)),
                (":step", n(suspended_step)),
            ],
        )?;
        let mut items = vec![sus, chain];
        if let Some((thread, what)) = allow {
            let mut item = key(format!("thread#{thread}"), format!("allow#{what}"));
            item.insert("createdAt".into(), n(now_ms()));
            items.push(db::tx_put(t, item, None)?);
        }
        match self.table.transact(items, "decide").await {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sets the cancel flag of a chain that is not finished. `false` when it
    /// is finished or finishing (cancel is then a no-op).
    pub async fn request_cancel(&self, run: &RunId, agent: &AgentId) -> Result<bool, StoreError> {
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .update_expression("SET #c = :t")
            .condition_expression("attribute_exists(pk) AND #state <> :finished AND #state <> :finishing")
            .expression_attribute_names("#c", "cancel")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":finished", s("finished"))
            .expression_attribute_values(":finishing", s("finishing"))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Appends a course correction for a background agent; `false` when the
    /// chain is missing or already done.
    pub async fn add_correction(&self, run: &RunId, agent: &AgentId, text: &str) -> Result<bool, StoreError> {
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .update_expression("SET corrections = list_append(if_not_exists(corrections, :empty), :c)")
            .condition_expression("attribute_exists(pk) AND #state <> :finished AND #state <> :finishing")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":empty", AttributeValue::L(vec![]))
            .expression_attribute_values(":c", AttributeValue::L(vec![s(text)]))
            .expression_attribute_values(":finished", s("finished"))
            .expression_attribute_values(":finishing", s("finishing"))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Starts finishing a chain that is in `from` (and, when given, at step
    /// `step`): records status, reason and the final checkpoint with a short
    /// lease for the sweep. This conditional write is the arbiter: `false`
    /// means someone else finished (or moved) the chain first and must not
    /// write a second `run-finish`. The winner then releases the thread's
    /// slot and saves the history ([`Runs::release`]); a crash in between
    /// leaves the chain `finishing`, and the sweep repeats that release.
    #[allow(clippy::too_many_arguments)]
    pub async fn begin_finish(
        &self,
        chain: &Chain,
        from: ChainState,
        step: Option<u64>,
        status: &str,
        reason: Option<&str>,
        history: Option<&[u8]>,
        checkpoint: Option<&[u8]>,
    ) -> Result<bool, StoreError> {
        let lease = now_ms() + FINISHING_LEASE_MS;
        let mut condition = "#state = :from".to_owned();
        if step.is_some() {
            condition.push_str(" AND #step = :step");
        }
        let mut update = "SET #state = :finishing, finishStatus = :status, finishReason = :reason, leaseUntil = :l, gsi1pk = :gpk, gsi1sk = :gsk, finishedAt = :now".to_owned();
        if checkpoint.is_some() {
            update.push_str(", ckpt = :c");
        }
        self.table.count();
        let mut req = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(&chain.run_id, &chain.agent_id)))
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":finishing", s("finishing"))
            .expression_attribute_values(":from", s(from.as_str()))
            .expression_attribute_values(":status", s(status))
            .expression_attribute_values(":reason", s(reason.unwrap_or("")))
            .expression_attribute_values(":l", n(lease))
            .expression_attribute_values(":gpk", s(lease_pk(&chain.run_id)))
            .expression_attribute_values(":gsk", s(lease_sk(lease, &chain.run_id, &chain.agent_id)))
            .expression_attribute_values(":now", n(now_ms()));
        if let Some(step) = step {
            req = req.expression_attribute_names("#step", "step").expression_attribute_values(":step", n(step));
        }
        if let Some(c) = checkpoint {
            req = req.expression_attribute_values(":c", b(db::compress(c)?));
        }
        match req.send().await {
            Ok(_) => {}
            Err(e) if db::is_condition_failed(&e) => return Ok(false),
            Err(e) => return Err(StoreError::dynamo(e)),
        }
        if chain.is_orchestrator() {
            self.release(chain, history).await?;
        }
        Ok(true)
    }

    /// The orchestrator's release: the slot, then the history.
    pub async fn release(&self, chain: &Chain, history: Option<&[u8]>) -> Result<(), StoreError> {
        self.release_slot(&chain.thread_id, &chain.run_id).await?;
        if let Some(h) = history {
            self.save_history(&chain.thread_id, h).await?;
        }
        Ok(())
    }

    /// The `run-finish` (or `agent-completed`) is written: leave the lease index.
    pub async fn end_finish(&self, run: &RunId, agent: &AgentId) -> Result<bool, StoreError> {
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(run, agent)))
            .update_expression("SET #state = :finished REMOVE gsi1pk, gsi1sk, openTools")
            .condition_expression("#state = :finishing")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":finished", s("finished"))
            .expression_attribute_values(":finishing", s("finishing"))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Takes over an expired lease for the sweep: moves the chain from the
    /// state and lease it was seen with to a fresh sweep lease. `false` when
    /// anything changed meanwhile (a live step renewed or moved it).
    pub async fn take_expired(&self, chain: &Chain) -> Result<bool, StoreError> {
        self.table.count();
        let lease = now_ms() + FINISHING_LEASE_MS;
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(chain_key(&chain.run_id, &chain.agent_id)))
            .update_expression("SET leaseUntil = :l, gsi1sk = :gsk")
            .condition_expression("#state = :s AND leaseUntil = :old AND #step = :step")
            .expression_attribute_names("#state", "state")
            .expression_attribute_names("#step", "step")
            .expression_attribute_values(":l", n(lease))
            .expression_attribute_values(":gsk", s(lease_sk(lease, &chain.run_id, &chain.agent_id)))
            .expression_attribute_values(":s", s(chain.state.as_str()))
            .expression_attribute_values(":old", n(chain.lease_until))
            .expression_attribute_values(":step", n(chain.step))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Chains whose lease expired before `now` (every shard).
    pub async fn expired(&self, now: u64) -> Result<Vec<Chain>, StoreError> {
        let mut out = Vec::new();
        for shard in 0..LEASE_SHARDS {
            let mut start: Option<Item> = None;
            loop {
                self.table.count();
                let page = self
                    .client()
                    .query()
                    .table_name(self.table_name())
                    .index_name("gsi1")
                    .key_condition_expression("gsi1pk = :pk AND gsi1sk < :now")
                    .expression_attribute_values(":pk", s(format!("runlease#{shard}")))
                    .expression_attribute_values(":now", s(format!("{now:013}")))
                    .set_exclusive_start_key(start.take())
                    .send()
                    .await
                    .map_err(StoreError::dynamo)?;
                for item in page.items() {
                    // The index is eventually consistent: re-read the chain itself.
                    let (Some(run), Some(agent)) = (get_s(item, "runId"), get_s(item, "agentId")) else { continue };
                    if let Some(c) = self.chain(&RunId(run.to_owned()), &AgentId(agent.to_owned())).await? {
                        if c.lease_until < now && c.state != ChainState::Finished {
                            out.push(c);
                        }
                    }
                }
                match page.last_evaluated_key {
                    Some(k) if !k.is_empty() => start = Some(k),
                    _ => break,
                }
            }
        }
        Ok(out)
    }

    /// The conversation history a new run starts from (decompressed).
    pub async fn history(&self, thread: &ThreadId) -> Result<Option<Vec<u8>>, StoreError> {
        let item = self.table.get_raw(&format!("thread#{thread}"), "history").await?;
        item.and_then(|i| get_b(&i, "data")).map(|d| db::decompress(&d)).transpose()
    }

    /// Sets the thread's title unless it has one; `true` when this call set it.
    pub async fn set_title_once(&self, thread: &ThreadId, title: &str) -> Result<bool, StoreError> {
        self.table.count();
        let result = self
            .client()
            .update_item()
            .table_name(self.table_name())
            .set_key(Some(thread_key(thread)))
            .update_expression("SET #title = :t")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(#title)")
            .expression_attribute_names("#title", "title")
            .expression_attribute_values(":t", s(title))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// The thread item's slot fields: `(owner, activeRunId, lastRunId)`.
    pub async fn slot(&self, thread: &ThreadId) -> Result<Option<(UserId, Option<RunId>, Option<RunId>)>, StoreError> {
        let item = self.table.get_raw(&format!("thread#{thread}"), "meta").await?;
        Ok(item.and_then(|i| {
            let owner = UserId(get_s(&i, "userId")?.to_owned());
            let active = get_s(&i, "activeRunId").map(|r| RunId(r.to_owned()));
            let last = get_s(&i, "lastRunId").map(|r| RunId(r.to_owned()));
            Some((owner, active, last))
        }))
    }

    /// `hasActiveRun` / `isSuspended` for `/status` (owner checked by the caller).
    pub async fn activity(&self, thread: &ThreadId) -> Result<ThreadActivity, StoreError> {
        let item = self.table.get_raw(&format!("thread#{thread}"), "meta").await?.unwrap_or_default();
        let active_run = get_s(&item, "activeRunId").map(|r| RunId(r.to_owned()));
        let title = get_s(&item, "title").map(str::to_owned);
        let is_suspended = match &active_run {
            Some(run) => self
                .chain(run, &AgentId(ORCHESTRATOR.into()))
                .await?
                .is_some_and(|c| c.state == ChainState::Suspended),
            None => false,
        };
        Ok(ThreadActivity { active_run, is_suspended, title })
    }

    /// The grant keys "always allowed" on the thread.
    pub async fn always_allowed(&self, thread: &ThreadId) -> Result<Vec<String>, StoreError> {
        let items = self.table.query_prefix(&format!("thread#{thread}"), "allow#", false).await?;
        Ok(items.iter().filter_map(|i| get_s(i, "sk").and_then(|sk| sk.strip_prefix("allow#")).map(str::to_owned)).collect())
    }

    /// A raw put (plans and other run-scoped records).
    pub async fn put_record(&self, item: Item, condition: Option<&str>) -> Result<bool, StoreError> {
        self.table.count();
        match self
            .client()
            .put_item()
            .table_name(self.table_name())
            .set_item(Some(item))
            .set_condition_expression(condition.map(str::to_owned))
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    pub async fn get_record(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.table.get_raw(pk, sk).await
    }

    pub fn requests(&self) -> u64 {
        self.table.requests()
    }
}

fn parse_chain(item: &Item) -> Result<Chain, StoreError> {
    let req = |name: &str| {
        get_s(item, name).map(str::to_owned).ok_or_else(|| StoreError::Corrupt(format!("chain item without {name}")))
    };
    let open_tools = match item.get("openTools") {
        Some(AttributeValue::M(m)) => m
            .iter()
            .map(|(k, v)| (k.clone(), if let AttributeValue::S(t) = v { t.clone() } else { String::new() }))
            .collect(),
        _ => BTreeMap::new(),
    };
    let corrections = match item.get("corrections") {
        Some(AttributeValue::L(l)) => l.iter().filter_map(|v| v.as_s().ok().cloned()).collect(),
        _ => Vec::new(),
    };
    Ok(Chain {
        run_id: RunId(req("runId")?),
        thread_id: ThreadId(req("threadId")?),
        user_id: UserId(req("userId")?),
        agent_id: AgentId(req("agentId")?),
        role: get_s(item, "role").unwrap_or("orchestrator").to_owned(),
        parent_id: get_s(item, "parentId").map(str::to_owned),
        task_id: get_s(item, "taskId").map(str::to_owned),
        state: ChainState::parse(&req("state")?)?,
        step: get_n(item, "step"),
        lease_until: get_n(item, "leaseUntil"),
        cancel: matches!(item.get("cancel"), Some(AttributeValue::Bool(true))),
        open_tools,
        checkpoint: get_b(item, "ckpt").map(|d| db::decompress(&d)).transpose()?,
        suspended_request: get_s(item, "suspendedRequest").map(str::to_owned),
        finish_status: get_s(item, "finishStatus").filter(|v| !v.is_empty()).map(str::to_owned),
        finish_reason: get_s(item, "finishReason").filter(|v| !v.is_empty()).map(str::to_owned),
        corrections,
        created_at: get_n(item, "createdAt"),
        project_id: get_s(item, "projectId").map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_keys_sort_by_time() {
        let r = RunId("run_1".into());
        let a = AgentId(ORCHESTRATOR.into());
        assert!(lease_sk(999, &r, &a) < lease_sk(1000, &r, &a));
        assert!(lease_sk(1000, &r, &a) < format!("{:013}", 1001u64));
        assert!(shard(&r) < LEASE_SHARDS);
    }
}
