//! Workflow executions on the engine, with the store as the host.
//!
//! The few calls everything else uses:
//! - [`Executor::start_execution`]: snapshot the workflow, write the
//!   execution record (`new`) with its document, enqueue it on the Runs queue.
//! - [`Executor::run_execution`]: what the `executor` function does per
//!   message: claim the record with a lease (conditional write), run the
//!   engine on a blocking thread while renewing the lease and polling the
//!   cancel flag, then store run data and a final status, or park it as
//!   `waiting` with the engine's serialized state (no process holds it).
//!   While it runs, its run data is stored as nodes finish, throttled
//!   (`progress`), and each sub-workflow it calls gets an `integrated`
//!   execution of its own, linked to it (`children`).
//! - [`Executor::stop_execution`]: cancel flag (running) or direct cancel
//!   (`new`, `waiting`).
//! - [`Executor::execute_and_wait`]: the tools' call: start and wait for
//!   a final status, through the queue or inline ([`Dispatch`]).
//! - [`Sweeper::resume_due`] / [`Sweeper::mark_crashed`]: the minute sweep.
//! - [`Executor::test_credential`] / [`Executor::lookup`] /
//!   [`Executor::oauth_connect`]: a credential's connection test (`probe`),
//!   a resource lookup (`lookup`) and an OAuth2 connect's code exchange
//!   (`connect`), run here or sent to the executor function (`jobs`).
//! - [`Executor::handle_queue_batch`]: the SQS consumer's body (execution
//!   messages, schedule ticks: `ticks`, and jobs).
//! - [`Executor::waiting_on`] / [`Executor::resume_waiting`]: a webhook call
//!   or form submission resumes a Wait node (`resume`).
//!
//! An execution an HTTP caller waits for (`StartRequest::respond`) stores
//! its answer as soon as it has one (`respond`); a failed production run
//! starts its error workflow (`error_workflow`). Finished executions expire
//! after the configured retention (DynamoDB TTL); waiting ones never do.
//!
//! Delivery is at least once: a message for an execution that is finished,
//! running under a live lease, or waiting and not yet due does nothing; a
//! running execution whose lease expired is marked `crashed`, never re-run
//! (its effects are unknown).

mod children;
mod connect;
mod document;
pub mod error;
mod error_workflow;
mod host;
mod jobs;
mod lookup;
mod probe;
mod progress;
mod records;
mod models;
mod respond;
mod stream;
mod resume;
mod sweep;
mod ticks;

pub use error::ExecutionError;
pub use host::{project_credential, HttpPolicy};
pub use jobs::{compile_workflow_here, CompiledWorkflow, LookupCall};
use jobs::{Answer, Job};
pub use store::data::executions::{ExecutionMode, ExecutionStatus};
pub use document::Respond;
pub use resume::{ResumeRefused, WaitingOn};
pub use sweep::{SweepReport, Sweeper};
pub use ticks::{ScheduleTick, TickMessage, TickOutcome};

use crate::document::StartData;
use crate::error::Result;
use crate::records::{Claim, Records};
use engine::{CancelToken, Engine, EngineSettings, Graph, Host, Item, RunOptions};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::data::db;
use store::data::executions::{DataSelection, NewExecution};
use store::data::InstanceData;
use store::deployment::{QueueId, TableId};
use store::{AwsClients, Config};
use tracing::Instrument;

/// An execution id (time-ordered; the store assigns it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExecutionId(pub String);

impl ExecutionId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExecutionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ExecutionId {
    fn from(s: &str) -> Self {
        ExecutionId(s.to_owned())
    }
}

/// Which workflow to run. Stored workflows are snapshotted at start.
#[derive(Debug, Clone)]
pub enum WorkflowRef {
    /// The current draft (manual runs, `test_workflow`).
    Draft(String),
    /// The published version; an unpublished workflow is refused.
    Published(String),
    /// One saved version.
    Version {
        workflow_id: String,
        version_id: String,
    },
    /// Unsaved n8n workflow JSON (`nodes`, `connections`, `settings`, optional
    /// `id`/`name`), run with the credentials and tables of `project_id`.
    Inline { workflow: Value, project_id: String },
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct StartRequest {
    pub workflow: WorkflowRef,
    pub mode: ExecutionMode,
    /// Pinned nodes do not execute; they output these items.
    pub pin_data: BTreeMap<String, Vec<Item>>,
    /// Trigger to start from (default: the first enabled trigger).
    pub trigger: Option<String>,
    /// Items the trigger outputs (default one empty item).
    pub trigger_items: Option<Vec<Item>>,
    /// The trigger output they leave on (a multi-method Webhook's method).
    pub trigger_output: usize,
    /// Stop after this node (run-step): only it and its ancestors run.
    pub destination: Option<String>,
    /// With `destination`: where the target's input comes from instead of
    /// running the nodes above it.
    pub step_seed: Option<StepSeed>,
    /// This execution's time limit (capped by [`ExecutorSettings::max_timeout`]);
    /// the workflow's `settings.executionTimeout` applies too, the lower wins.
    pub timeout: Option<Duration>,
    pub retry_of: Option<String>,
    /// An HTTP caller waits for the answer (webhook, form).
    pub respond: Option<Respond>,
    /// A verification run: which nodes are simulated (pinned with
    /// fixtures), kept as the saved execution's `resultData.simulation`.
    pub simulation: Option<Value>,
    /// With a tool as `destination` (a run-step through the Tool Executor):
    /// what its `$fromAI` calls get, by argument name (or a free-text input).
    pub tool_arguments: Option<Value>,
}

impl StartRequest {
    pub fn new(workflow: WorkflowRef, mode: ExecutionMode) -> Self {
        StartRequest {
            workflow,
            mode,
            pin_data: BTreeMap::new(),
            trigger: None,
            trigger_items: None,
            trigger_output: 0,
            destination: None,
            step_seed: None,
            timeout: None,
            retry_of: None,
            respond: None,
            simulation: None,
            tool_arguments: None,
        }
    }
}

/// A run-step's input other than the chain above the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum StepSeed {
    /// Replay this execution's run data for the nodes above the target.
    #[serde(rename_all = "camelCase")]
    Reuse { execution_id: String },
    /// Feed these items to the target; every node above it gets a placeholder.
    Mock { items: Vec<Item> },
}

/// Where `execute_and_wait` runs the execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// Enqueue on the Runs queue and poll the record (the default for
    /// tools: the executor function has the 900 s budget and its own
    /// concurrency; the caller only waits). If the wait times out the
    /// execution goes on, and the outcome says `running`.
    Queue,
    /// Run in this process (no queue consumer needed: tests). The
    /// execution's timeout is capped at the wait, so it never outlives the
    /// caller. Only an executor made [`Executor::running_here`] can.
    Inline,
}

/// Where an execution stands, as tools report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionOutcome {
    pub execution_id: ExecutionId,
    pub status: ExecutionStatus,
    /// Why it failed, was canceled or crashed (never any secret).
    pub error: Option<String>,
    /// When a `waiting` execution resumes (ISO 8601).
    pub wait_till: Option<String>,
}

impl ExecutionOutcome {
    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }
}

/// Why `run_execution` did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    NotFound,
    /// Already success/error/canceled/crashed: a duplicate delivery.
    AlreadyFinished,
    /// Another executor holds a live lease.
    RunningElsewhere,
    /// `waiting` and its time has not come.
    NotDue,
    /// Found `running` with an expired lease: marked `crashed`, not re-run.
    MarkedCrashed,
    /// The lease was lost mid-run (e.g. the sweep marked it crashed); the
    /// result was discarded.
    LostLease,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunResult {
    /// This call ran it to a final status, or parked it as `waiting`.
    Ran(ExecutionOutcome),
    Skipped(SkipReason),
}

/// Tunables, fixed per process.
#[derive(Debug, Clone)]
pub struct ExecutorSettings {
    pub http: HttpPolicy,
    /// How long a run's claim lasts without renewal (renewed every third of it).
    pub lease: Duration,
    /// Upper bound of any execution's timeout: below the executor
    /// function's 900 s, leaving time to store the result.
    pub max_timeout: Duration,
    /// How often a running execution checks its cancel flag.
    pub cancel_poll: Duration,
    /// Waits up to this long sleep in-process; longer ones park the execution.
    pub inline_wait: Duration,
    /// Seconds to keep execution records (TTL); `None` keeps them.
    pub retention_secs: Option<u64>,
    /// A running execution's run data is stored at most this often as nodes
    /// finish (the final write is always made); `None` stores it only at
    /// the end or when it parks.
    pub progress_interval: Option<Duration>,
    /// Where webhooks are served (`$execution.resumeUrl`, error data URLs).
    pub public_url: Option<String>,
    /// Service origins sent elsewhere (`INSTANCE_AI_SERVICE_ORIGIN_OVERRIDES`:
    /// local stand-ins of a service in development and tests).
    pub origin_overrides: std::collections::BTreeMap<String, String>,
    /// How long a job sent to the executor function (a connection test, a
    /// lookup: `jobs`) is waited for: above the job's own 20 s request
    /// timeout and below API Gateway's 30 s, which the credentials routes
    /// and the OAuth callback answer behind.
    pub job_wait: Duration,
}

impl Default for ExecutorSettings {
    fn default() -> Self {
        ExecutorSettings {
            http: HttpPolicy::PublicOnly,
            lease: Duration::from_secs(60),
            max_timeout: Duration::from_secs(840),
            cancel_poll: Duration::from_secs(1),
            inline_wait: Duration::from_secs(65),
            retention_secs: None,
            progress_interval: Some(Duration::from_secs(1)),
            public_url: None,
            origin_overrides: Default::default(),
            job_wait: Duration::from_secs(25),
        }
    }
}

impl ExecutorSettings {
    /// The defaults, with what the configuration sets: the HTTP policy
    /// (`INSTANCE_AI_HTTP_*`), the progress interval, retention and the
    /// public URL.
    pub fn from_config(config: &Config) -> Self {
        ExecutorSettings {
            http: HttpPolicy::from_config(config),
            progress_interval: config.execution_progress_ms.map(Duration::from_millis),
            retention_secs: config.execution_retention_secs,
            public_url: config.public_url.clone(),
            origin_overrides: origin_overrides(config.var(ORIGIN_OVERRIDES)),
            ..ExecutorSettings::default()
        }
    }

    /// What the engine may reach: the HTTP policy and the origin overrides.
    pub fn apply_http(&self, settings: &mut EngineSettings) {
        self.http.apply(settings);
        settings.origin_overrides = self.origin_overrides.clone();
    }
}

/// `origin=replacement` pairs, comma-separated (`https://sheets.googleapis.com=http://127.0.0.1:9001`).
pub const ORIGIN_OVERRIDES: &str = "INSTANCE_AI_SERVICE_ORIGIN_OVERRIDES";

fn origin_overrides(v: Option<&str>) -> std::collections::BTreeMap<String, String> {
    v.unwrap_or_default()
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(from, to)| (from.trim().trim_end_matches('/').to_owned(), to.trim().trim_end_matches('/').to_owned()))
        .filter(|(from, to)| !from.is_empty() && !to.is_empty())
        .collect()
}

/// A Runs queue message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunMessage {
    pub execution_id: ExecutionId,
}

/// One SQS record as the consumer sees it.
#[derive(Debug, Clone)]
pub struct QueueRecord {
    pub message_id: String,
    pub body: Option<String>,
}

/// Grace after the timeout for the engine to notice it (it checks between
/// nodes and inside HTTP requests), before the run is abandoned.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The execution service of one process; cheap to clone.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    data: InstanceData,
    sweeper: Sweeper,
    settings: ExecutorSettings,
    here: Option<Arc<dyn RunsHere>>,
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The work an executor does itself when asked to (`Dispatch::Inline`).
/// Reached only through this object, which only [`Executor::running_here`]
/// makes: a function that never calls it (every one but the executor, whose
/// queue consumer runs the work directly) links none of the engine's node
/// code, whatever features the build unified.
trait RunsHere: Send + Sync {
    fn run<'a>(&'a self, executor: &'a Executor, id: &'a str) -> BoxFuture<'a, Result<RunResult>>;
    fn job<'a>(&'a self, executor: &'a Executor, job: Job) -> BoxFuture<'a, Result<Answer>>;
}

struct Here;

impl RunsHere for Here {
    fn run<'a>(&'a self, executor: &'a Executor, id: &'a str) -> BoxFuture<'a, Result<RunResult>> {
        Box::pin(executor.run_execution(id))
    }

    fn job<'a>(&'a self, executor: &'a Executor, job: Job) -> BoxFuture<'a, Result<Answer>> {
        Box::pin(executor.do_job(job))
    }
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("settings", &self.inner.settings)
            .finish()
    }
}

fn mode_str(mode: ExecutionMode) -> String {
    serde_json::to_value(mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "manual".into())
}

/// The executions' part of the sweep's schedule: running leases and waits
/// in the Executions table (`None` when `SWEEP_SCHEDULE` is not configured).
pub fn sweep_flag(clients: &AwsClients, config: &Config) -> Result<Option<store::sweep_schedule::SweepFlag>> {
    let watched = records::WATCHED_INDEXES.iter().map(|i| (*i).to_owned()).collect();
    Ok(store::sweep_schedule::flag(clients, config, TableId::Executions, "executions", watched)?)
}

pub(crate) fn iso_in(d: Duration) -> String {
    db::iso(time::OffsetDateTime::now_utc() + d)
}

pub(crate) fn describe(e: &engine::NodeError) -> String {
    match &e.node {
        Some(n) => format!("{} (node {n:?})", e.message),
        None => e.message.clone(),
    }
}

impl Executor {
    pub fn new(
        data: InstanceData,
        sqs: aws_sdk_sqs::Client,
        runs_queue_url: impl Into<String>,
        settings: ExecutorSettings,
    ) -> Self {
        let sweeper = Sweeper::new(&data.executions, sqs, runs_queue_url);
        Executor {
            inner: Arc::new(Inner {
                data,
                sweeper,
                settings,
                here: None,
            }),
        }
    }

    /// Repositories, key provider and Runs queue from the configuration
    /// (once per process, at init).
    pub async fn from_config(
        clients: &AwsClients,
        config: &Config,
        settings: ExecutorSettings,
    ) -> Result<Self> {
        let data = InstanceData::new(clients, config)?;
        let url = config.queue_url(QueueId::Runs)?.to_owned();
        let steps = config.queue_url(QueueId::Steps).ok().map(str::to_owned);
        Ok(Executor::new(data, clients.sqs.clone(), url, settings).notifying(steps).watched_by(sweep_flag(clients, config)?))
    }

    /// Runs executions and jobs in this process when a caller asks for
    /// `Dispatch::Inline` (tests; the executor function does its queue's
    /// work directly). Without it, `Inline` is refused.
    pub fn running_here(self) -> Self {
        self.with_inner(|inner| inner.here = Some(Arc::new(Here)))
    }

    /// What this process runs itself (`Dispatch::Inline`).
    pub(crate) fn here(&self) -> Result<&dyn RunsHere> {
        self.inner.here.as_deref().ok_or_else(|| {
            ExecutionError::Invalid("this function does not run executions itself: it sends them to the executor function".into())
        })
    }

    /// Turns the sweep on at each claim (`None`: no sweep schedule, tests).
    pub fn watched_by(self, sweep: Option<store::sweep_schedule::SweepFlag>) -> Self {
        self.with_inner(|inner| inner.sweeper.records.sweep = sweep)
    }

    /// Sends each settled execution's waiter message to `steps_queue_url`
    /// (the agent's Steps queue): see [`Sweeper::notify`].
    pub fn notifying(self, steps_queue_url: Option<String>) -> Self {
        self.with_inner(|inner| inner.sweeper.steps_queue_url = steps_queue_url)
    }

    /// A builder step: changes this executor's settings (copied if shared).
    fn with_inner(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| (*shared).clone());
        change(&mut inner);
        Executor { inner: Arc::new(inner) }
    }

    pub fn sweeper(&self) -> &Sweeper {
        &self.inner.sweeper
    }

    /// See [`Sweeper::resume_due`].
    pub async fn resume_due(&self) -> Result<usize> {
        self.inner.sweeper.resume_due().await
    }

    /// See [`Sweeper::mark_crashed`].
    pub async fn mark_crashed(&self) -> Result<usize> {
        self.inner.sweeper.mark_crashed().await
    }

    pub fn settings(&self) -> &ExecutorSettings {
        &self.inner.settings
    }

    /// The repositories this executor runs over.
    pub fn data(&self) -> &InstanceData {
        &self.inner.data
    }

    fn records(&self) -> &Records {
        &self.inner.sweeper.records
    }

    /// Writes the record (`new`) and its document, then enqueues it.
    pub async fn start_execution(&self, req: StartRequest) -> Result<ExecutionId> {
        let id = self.create(req).await?;
        if let Err(e) = self.inner.sweeper.enqueue(id.as_str()).await {
            let _ = self
                .records()
                .fail_unstarted(
                    id.as_str(),
                    &format!("the execution could not be queued: {e}"),
                )
                .await;
            return Err(e);
        }
        tracing::info!(executionId = %id, "execution queued");
        Ok(id)
    }

    /// The record and its document, validated, not yet queued.
    async fn create(&self, req: StartRequest) -> Result<ExecutionId> {
        let (workflow_id, snapshot) = self.snapshot(&req.workflow).await?;
        // Refuse what cannot run before anything is written.
        let graph = Graph::from_json(&snapshot)?;
        Engine::new(EngineSettings::default(), Host::default()).validate(&graph)?;
        graph.start_node(req.trigger.as_deref())?;
        if let Some(d) = &req.destination {
            graph.node_or_err(d)?;
        }
        if req.step_seed.is_some() && req.destination.is_none() {
            return Err(ExecutionError::Invalid("a step input needs the node to run".into()));
        }
        let max = self.inner.settings.max_timeout;
        let timeout = req
            .timeout
            .unwrap_or(max)
            .clamp(Duration::from_secs(1), max);
        let start = StartData {
            trigger: req.trigger,
            trigger_items: req.trigger_items,
            trigger_output: req.trigger_output,
            destination_node: req.destination,
            step_seed: req.step_seed,
            timeout_secs: timeout.as_secs().max(1),
            respond: req.respond,
            simulation: req.simulation,
            tool_arguments: req.tool_arguments,
        };
        let doc = document::initial(snapshot, &start, &req.pin_data)?;
        let exec = self
            .inner
            .data
            .executions
            .create(NewExecution {
                workflow_id,
                mode: req.mode,
                status: ExecutionStatus::New,
                started_at: None,
                retry_of: req.retry_of,
                retention_secs: self.inner.settings.retention_secs,
            })
            .await?;
        if let Err(e) = self.inner.data.executions.save_data(&exec.id, &doc).await {
            let _ = self
                .records()
                .fail_unstarted(&exec.id, &format!("the execution could not be stored: {e}"))
                .await;
            return Err(e.into());
        }
        Ok(ExecutionId(exec.id))
    }

    /// `(workflow id for the record, workflow JSON with projectId)`.
    async fn snapshot(&self, w: &WorkflowRef) -> Result<(String, Value)> {
        let wfs = &self.inner.data.workflows;
        let stored =
            |id: &str, project: &str, name: &str, body: store::data::workflows::WorkflowBody| {
                json!({
                    "id": id,
                    "name": name,
                    "projectId": project,
                    "nodes": body.nodes,
                    "connections": body.connections,
                    "settings": if body.settings.is_object() { body.settings } else { json!({}) },
                })
            };
        match w {
            WorkflowRef::Draft(id) => {
                self.live_meta(id).await?;
                let wf = wfs
                    .get(id)
                    .await?
                    .ok_or_else(|| ExecutionError::NotFound(format!("workflow {id}")))?;
                Ok((
                    id.clone(),
                    stored(id, &wf.meta.project_id, &wf.meta.name, wf.body),
                ))
            }
            WorkflowRef::Published(id) => {
                let meta = self.live_meta(id).await?;
                let active = meta.active_version_id.clone().ok_or_else(|| {
                    ExecutionError::Invalid(format!("workflow {id} is not published: publish it, or run its draft in manual mode"))
                })?;
                let v = wfs.get_version(id, &active).await?.ok_or_else(|| {
                    ExecutionError::NotFound(format!("version {active} of workflow {id}"))
                })?;
                Ok((id.clone(), stored(id, &meta.project_id, &meta.name, v.body)))
            }
            WorkflowRef::Version {
                workflow_id,
                version_id,
            } => {
                let meta = self.live_meta(workflow_id).await?;
                let v = wfs
                    .get_version(workflow_id, version_id)
                    .await?
                    .ok_or_else(|| {
                        ExecutionError::NotFound(format!(
                            "version {version_id} of workflow {workflow_id}"
                        ))
                    })?;
                Ok((
                    workflow_id.clone(),
                    stored(workflow_id, &meta.project_id, &meta.name, v.body),
                ))
            }
            WorkflowRef::Inline {
                workflow,
                project_id,
            } => {
                let Value::Object(mut wf) = workflow.clone() else {
                    return Err(ExecutionError::Invalid(
                        "workflow JSON must be an object".into(),
                    ));
                };
                let id = wf
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("unsaved")
                    .to_owned();
                wf.insert("projectId".into(), json!(project_id));
                Ok((id, Value::Object(wf)))
            }
        }
    }

    /// A workflow's metadata, refusing archived workflows.
    async fn live_meta(&self, id: &str) -> Result<store::data::workflows::WorkflowMeta> {
        let meta = self
            .inner
            .data
            .workflows
            .meta(id)
            .await?
            .ok_or_else(|| ExecutionError::NotFound(format!("workflow {id}")))?;
        if meta.is_archived {
            return Err(ExecutionError::Invalid(format!(
                "workflow {id} is archived"
            )));
        }
        Ok(meta)
    }

    /// Where an execution stands (one consistent read).
    pub async fn outcome(&self, id: &str) -> Result<ExecutionOutcome> {
        let meta = self
            .records()
            .meta(id)
            .await?
            .ok_or_else(|| ExecutionError::NotFound(format!("execution {id}")))?;
        Ok(ExecutionOutcome {
            execution_id: ExecutionId(id.to_owned()),
            status: meta.status,
            error: meta.error_message,
            wait_till: meta
                .wait_till
                .filter(|_| meta.status == ExecutionStatus::Waiting),
        })
    }

    /// Polls the record until it is finished or `waiting` (which may last
    /// days: the caller gets it at once), or `timeout` passes.
    pub async fn wait_for(&self, id: &str, timeout: Duration) -> Result<ExecutionOutcome> {
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(100);
        loop {
            let o = self.outcome(id).await?;
            if o.is_finished() || o.status == ExecutionStatus::Waiting || Instant::now() >= deadline
            {
                return Ok(o);
            }
            tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Starts an execution and waits up to `wait` for its outcome.
    pub async fn execute_and_wait(
        &self,
        req: StartRequest,
        wait: Duration,
        dispatch: Dispatch,
    ) -> Result<ExecutionOutcome> {
        match dispatch {
            Dispatch::Queue => {
                let id = self.start_execution(req).await?;
                self.wait_for(id.as_str(), wait).await
            }
            Dispatch::Inline => {
                let mut req = req;
                req.timeout = Some(req.timeout.map_or(wait, |t| t.min(wait)));
                let here = self.here()?;
                let id = self.create(req).await?;
                match here.run(self, id.as_str()).await? {
                    RunResult::Ran(o) => Ok(o),
                    RunResult::Skipped(_) => self.outcome(id.as_str()).await,
                }
            }
        }
    }

    /// Stops an execution: a running one at its next node boundary (the
    /// flag is polled), a `new` or `waiting` one at once. Idempotent; a
    /// finished execution is left as it is.
    pub async fn stop_execution(&self, id: &str) -> Result<ExecutionOutcome> {
        self.inner
            .sweeper
            .stop(id)
            .await?
            .ok_or_else(|| ExecutionError::NotFound(format!("execution {id}")))?;
        self.outcome(id).await
    }

    /// The SQS consumer's body: runs each record's execution, tick or job;
    /// returns the message ids to report failed (redelivered, then
    /// dead-lettered).
    pub async fn handle_queue_batch(
        &self,
        batch: impl IntoIterator<Item = QueueRecord>,
    ) -> Vec<String> {
        let mut failed = Vec::new();
        for record in batch {
            let msg = match record.body.as_deref().and_then(ticks::parse) {
                Some(ticks::Message::Run(m)) => m,
                Some(ticks::Message::Tick(t)) => {
                    // Boxed, as `run_execution` is: keeps the consumer's future shallow.
                    match Box::pin(self.handle_tick(&t.schedule_tick)).await {
                        Ok(outcome) => tracing::info!(workflowId = %t.schedule_tick.workflow_id, ?outcome, "schedule tick"),
                        Err(e) => {
                            tracing::error!(workflowId = %t.schedule_tick.workflow_id, error = %e, "schedule tick failed; will be redelivered");
                            failed.push(record.message_id);
                        }
                    }
                    continue;
                }
                Some(ticks::Message::Job(job)) => {
                    let job_id = job.job_id.clone();
                    if let Err(e) = Box::pin(self.answer_job(job)).await {
                        tracing::error!(jobId = %job_id, error = %e, "a job's answer could not be stored; will be redelivered");
                        failed.push(record.message_id);
                    }
                    continue;
                }
                None => {
                    // Kept for the dead-letter queue, where someone can look at it.
                    tracing::error!(message_id = %record.message_id, "malformed Runs message");
                    failed.push(record.message_id);
                    continue;
                }
            };
            match self.run_execution(msg.execution_id.as_str()).await {
                Ok(RunResult::Ran(o)) => {
                    tracing::info!(executionId = %o.execution_id, status = o.status.as_str(), "execution ran")
                }
                Ok(RunResult::Skipped(reason)) => {
                    tracing::info!(executionId = %msg.execution_id, ?reason, "delivery skipped")
                }
                Err(e) => {
                    tracing::error!(executionId = %msg.execution_id, error = %e, "execution could not be run; will be redelivered");
                    failed.push(record.message_id);
                }
            }
        }
        failed
    }

    /// Runs (or resumes) one execution, if it is runnable: see [`RunResult`].
    /// `Err` only when the store is unreachable before the claim or when
    /// recording the result failed (the message should be redelivered).
    pub async fn run_execution(&self, id: &str) -> Result<RunResult> {
        let span = tracing::info_span!("execution", executionId = %id);
        // Boxed: the run's future is deep (engine join, SDK calls); unboxed,
        // a Lambda main that nests it overflows the compiler's layout depth.
        Box::pin(self.run_traced(id).instrument(span)).await
    }

    async fn run_traced(&self, id: &str) -> Result<RunResult> {
        let records = self.records();
        let now = db::now_iso();
        let Some(meta) = records.meta(id).await? else {
            tracing::warn!("no such execution");
            return Ok(RunResult::Skipped(SkipReason::NotFound));
        };
        match meta.status {
            s if s.is_finished() => {
                // Stale index items would otherwise be found by every sweep.
                records.drop_index(id, "wait").await?;
                return Ok(RunResult::Skipped(SkipReason::AlreadyFinished));
            }
            ExecutionStatus::Running => {
                let expired = meta.lease_until.as_deref().is_none_or(|l| l < now.as_str());
                if expired && records.crash_if_expired(id, &now).await? {
                    tracing::warn!("found running with an expired lease: marked crashed");
                    self.inner.sweeper.notify(id).await;
                    return Ok(RunResult::Skipped(SkipReason::MarkedCrashed));
                }
                return Ok(RunResult::Skipped(SkipReason::RunningElsewhere));
            }
            ExecutionStatus::Waiting => {
                if let Some(w) = meta.wait_till.as_deref().filter(|w| *w > now.as_str()) {
                    records.reindex_wait(id, w).await?;
                    return Ok(RunResult::Skipped(SkipReason::NotDue));
                }
            }
            ExecutionStatus::New => {}
            _ => return Ok(RunResult::Skipped(SkipReason::AlreadyFinished)),
        }
        let owner = uuid::Uuid::new_v4().simple().to_string();
        if records
            .claim(
                id,
                meta.status,
                &owner,
                &iso_in(self.inner.settings.lease),
                &now,
            )
            .await?
            == Claim::Refused
        {
            // Someone else claimed or finished it between our read and write.
            return Ok(RunResult::Skipped(SkipReason::RunningElsewhere));
        }
        tracing::info!("claimed");
        match self.run_claimed(id, &owner).await {
            Ok(r) => Ok(r),
            Err(e) => {
                let message = format!("the executor failed: {e}");
                tracing::error!(error = %message, "run failed");
                if records
                    .finish(id, &owner, ExecutionStatus::Error, Some(&message))
                    .await?
                {
                    self.inner.sweeper.notify(id).await;
                    Ok(RunResult::Ran(ExecutionOutcome {
                        execution_id: ExecutionId(id.to_owned()),
                        status: ExecutionStatus::Error,
                        error: Some(message),
                        wait_till: None,
                    }))
                } else {
                    Ok(RunResult::Skipped(SkipReason::LostLease))
                }
            }
        }
    }

    /// The run, once claimed. Every `Ok` path has written the end state.
    async fn run_claimed(&self, id: &str, owner: &str) -> Result<RunResult> {
        let data = &self.inner.data;
        let settings = &self.inner.settings;
        let records = self.records();
        let exec = data
            .executions
            .get(id)
            .await?
            .ok_or_else(|| ExecutionError::NotFound(format!("execution {id}")))?;
        let doc = data
            .executions
            .get_data(id, &DataSelection::default())
            .await?
            .ok_or_else(|| ExecutionError::Corrupt {
                id: id.to_owned(),
                reason: "no execution document".into(),
            })?;
        let loaded = document::load(id, doc)?;
        let timeout = Duration::from_secs(loaded.start.timeout_secs)
            .clamp(Duration::from_secs(1), settings.max_timeout);
        let workflow = loaded.workflow.clone();
        let start = loaded.start.clone();
        let graph = match Graph::from_json(&loaded.workflow) {
            Ok(g) => g,
            Err(e) => {
                return self
                    .end(
                        id,
                        owner,
                        ExecutionStatus::Error,
                        &e.to_string(),
                        document::failed_before_run(&workflow, &start, &e.to_string()),
                        &host::Secrets::default(),
                    )
                    .await
            }
        };

        let mut engine_settings = EngineSettings {
            execution_timeout: Some(timeout),
            max_inline_wait: settings.inline_wait,
            mode: mode_str(exec.mode),
            public_url: settings.public_url.clone(),
            ..EngineSettings::default()
        };
        settings.apply_http(&mut engine_settings);
        let secrets = host::Secrets::default();
        let responder = start
            .respond
            .as_ref()
            .and_then(|r| respond::Responder::new(&data.executions, id, r, &graph, &secrets));
        let handle = tokio::runtime::Handle::current();
        let children = Arc::new(children::Children::new(
            children::ChildScope {
                data: data.clone(),
                records: records.clone(),
                handle: handle.clone(),
                project_id: loaded.project_id.clone(),
                owner: owner.to_owned(),
                lease: settings.lease,
                retention_secs: settings.retention_secs,
                timeout_secs: timeout.as_secs().max(1),
                progress_every: settings.progress_interval,
                secrets: secrets.clone(),
            },
            id,
            &exec.workflow_id,
        ));
        let host = host::host(
            host::Scope {
                data: data.clone(),
                handle: handle.clone(),
                project_id: loaded.project_id.clone(),
                mode: exec.mode,
                secrets: secrets.clone(),
            },
            children.clone(),
        );
        let (progress, writer) = match settings.progress_interval {
            Some(every) => {
                let sink = progress::StoreSink {
                    executions: data.executions.clone(),
                    id: id.to_owned(),
                    workflow: workflow.clone(),
                    start: start.clone(),
                    parent: None,
                    secrets: secrets.clone(),
                };
                let (hook, writer) = progress::start(&handle, sink, every);
                (Some(hook), Some(writer))
            }
            None => (None, None),
        };
        // A run-step from replayed or mocked input: the engine's partial run.
        let step_input = match (&loaded.state, &start.step_seed, &start.destination_node) {
            (None, Some(seed), Some(_)) => match self.step_input(seed).await {
                Ok(i) => Some(i),
                Err(msg) => {
                    let doc = document::failed_before_run(&workflow, &start, &msg);
                    return self.end(id, owner, ExecutionStatus::Error, &msg, doc, &secrets).await;
                }
            },
            _ => None,
        };
        let progress = respond::both(progress, responder.as_ref().and_then(|r| r.hook(&handle)));
        let (stream_hook, chunk_writer) = match start.respond.as_ref().filter(|r| r.stream) {
            Some(_) => {
                let (hook, writer) = stream::start(&handle, data.executions.clone(), id, secrets.clone());
                (Some(hook), Some(writer))
            }
            None => (None, None),
        };
        let cancel = CancelToken::new();
        let job = {
            let cancel = cancel.clone();
            let span = tracing::Span::current();
            let opts = RunOptions {
                pin_data: loaded.pin_data,
                trigger: loaded.start.trigger,
                trigger_items: loaded.start.trigger_items,
                trigger_output: loaded.start.trigger_output,
                cancel: Some(cancel.clone()),
                timeout: Some(timeout),
                execution_id: Some(id.to_owned()),
                destination: loaded.start.destination_node,
                progress: progress.clone(),
                stream: stream_hook,
                tool_arguments: loaded.start.tool_arguments.clone(),
            };
            let state = loaded.state;
            // The engine is synchronous (and its JS sandbox is not Send): it
            // runs on a blocking thread; host calls block on this runtime.
            tokio::task::spawn_blocking(move || {
                let _entered = span.enter();
                let engine = Engine::new(engine_settings, host);
                if let (Some(input), Some(target)) = (step_input, opts.destination.clone()) {
                    return engine.run_node(&graph, &target, input, opts);
                }
                match state {
                    Some(st) => engine.resume_with(
                        &graph,
                        st,
                        RunOptions {
                            cancel: Some(cancel),
                            progress,
                            ..RunOptions::default()
                        },
                    ),
                    None => engine.run(&graph, opts),
                }
            })
        };

        let begun = Instant::now();
        let mut next_renew = begun + settings.lease / 3;
        let mut canceled_by_user = false;
        let mut lost = false;
        tokio::pin!(job);
        let mut first = true;
        let joined = loop {
            if !first {
                tokio::select! {
                    r = &mut job => break Some(r),
                    _ = tokio::time::sleep(settings.cancel_poll) => {}
                }
            }
            first = false;
            let now = Instant::now();
            if now >= next_renew {
                match records.renew(id, owner, &iso_in(settings.lease)).await {
                    Ok(Some(m)) => canceled_by_user |= m.cancel_requested,
                    Ok(None) => lost = true,
                    // A missed renewal is survivable: the lease has two more thirds.
                    Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
                }
                for child in children.running_ids() {
                    if let Err(e) = records.renew(&child, owner, &iso_in(settings.lease)).await {
                        tracing::warn!(executionId = %child, error = %e, "sub-execution lease renewal failed");
                    }
                }
                next_renew = now + settings.lease / 3;
            } else if let Ok(Some(m)) = records.meta(id).await {
                canceled_by_user |= m.cancel_requested;
            }
            if canceled_by_user || lost || now >= begun + timeout + STOP_GRACE {
                cancel.cancel();
            }
            if lost {
                // The engine stops at its next check; nothing of it is stored.
                tracing::warn!("lease lost while running; the result will be discarded");
                if let Some(w) = writer {
                    w.stop().await;
                }
                return Ok(RunResult::Skipped(SkipReason::LostLease));
            }
            if now >= begun + timeout + 2 * STOP_GRACE {
                break None;
            }
        };
        // Before any final write: a progress write must never land after it.
        if let Some(w) = writer {
            let writes = w.stop().await;
            tracing::info!(progressWrites = writes, "engine finished");
        }
        // Every streamed line is stored before the final status (readers rely on it).
        if let Some(w) = chunk_writer {
            match tokio::time::timeout(STOP_GRACE, w.finish()).await {
                Ok(batches) => tracing::info!(streamBatches = batches, "streamed answer stored"),
                Err(_) => tracing::warn!("the streamed answer's writer did not finish in time"),
            }
        }
        let timeout_message = format!(
            "Execution timed out after {} s (the execution's timeout)",
            timeout.as_secs()
        );
        let failure = match joined {
            Some(Ok(Ok(run))) => Ok(run),
            None => Err(format!("{timeout_message}; the engine did not stop in time and was abandoned")),
            Some(Err(join)) => Err(format!("the engine crashed: {join}")),
            Some(Ok(Err(e))) => Err(e.to_string()),
        };
        let (mut state, _stats) = match failure {
            Ok(run) => run,
            Err(msg) => {
                let doc = document::failed_before_run(&workflow, &start, &msg);
                if let Some(r) = &responder {
                    r.at_end(None, true).await;
                }
                return self.end(id, owner, ExecutionStatus::Error, &msg, doc, &secrets).await;
            }
        };
        if !canceled_by_user {
            // A stop request that landed after the last poll still counts.
            canceled_by_user = records.meta(id).await?.is_some_and(|m| m.cancel_requested)
                && state.status != engine::ExecutionStatus::Success;
        }
        let (status, message) = match state.status {
            engine::ExecutionStatus::Success => (ExecutionStatus::Success, None),
            engine::ExecutionStatus::Error => (
                ExecutionStatus::Error,
                Some(
                    state
                        .error
                        .as_ref()
                        .map(describe)
                        .unwrap_or_else(|| "the workflow failed".into()),
                ),
            ),
            engine::ExecutionStatus::Canceled | engine::ExecutionStatus::Waiting
                if canceled_by_user =>
            {
                (
                    ExecutionStatus::Canceled,
                    Some("The execution was canceled".to_owned()),
                )
            }
            engine::ExecutionStatus::Canceled => {
                // Nobody asked to stop it: the engine's deadline fired.
                if let Some(e) = state.error.as_mut() {
                    e.message = timeout_message.clone();
                }
                (ExecutionStatus::Error, Some(timeout_message.clone()))
            }
            engine::ExecutionStatus::Waiting => (ExecutionStatus::Waiting, None),
            other => (
                ExecutionStatus::Error,
                Some(format!("the engine ended with status {other:?}")),
            ),
        };
        let error_value = match (&state.error, &message) {
            (Some(e), _) => serde_json::to_value(e).ok(),
            (None, Some(m)) if status != ExecutionStatus::Success => Some(json!({"message": m})),
            _ => None,
        };
        if status == ExecutionStatus::Waiting {
            let Some(wait_till) = state.wait_till.as_deref().and_then(db::parse_iso) else {
                let msg = "the engine parked the execution without a resume time";
                return self
                    .end(
                        id,
                        owner,
                        ExecutionStatus::Error,
                        msg,
                        document::failed_before_run(&workflow, &start, msg),
                        &secrets,
                    )
                    .await;
            };
            let mut doc =
                document::after_run(&workflow, &start, &state, error_value.as_ref(), true)?;
            secrets.scrub(&mut doc);
            // A waiting execution never expires while it waits.
            data.executions.set_expiry(id, None).await?;
            data.executions.save_data(id, &doc).await?;
            if let Some(r) = &responder {
                r.at_park(&state).await;
            }
            if !records.park(id, owner, &wait_till).await? {
                return Ok(RunResult::Skipped(SkipReason::LostLease));
            }
            tracing::info!(waitTill = %wait_till, "execution waiting");
            self.inner.sweeper.notify(id).await;
            // A wait within SQS's 15-minute delay gets its resume message now,
            // due a second after waitTill: it resumes on time instead of at
            // the next minute sweep (which stays the fallback).
            let remaining = time::OffsetDateTime::parse(
                &wait_till,
                &time::format_description::well_known::Rfc3339,
            )
            .map(|t| t - time::OffsetDateTime::now_utc())
            .ok()
            .and_then(|d| Duration::try_from(d).ok())
            .unwrap_or_default();
            if remaining <= Duration::from_secs(899) {
                let delay = Duration::from_secs(remaining.as_secs() + 1);
                if let Err(e) = self.inner.sweeper.enqueue_delayed(id, delay).await {
                    tracing::warn!(error = %e, "could not queue the resume; the sweep will");
                }
            }
            return Ok(RunResult::Ran(ExecutionOutcome {
                execution_id: ExecutionId(id.to_owned()),
                status,
                error: None,
                wait_till: Some(wait_till),
            }));
        }
        let doc = document::after_run(&workflow, &start, &state, error_value.as_ref(), false)?;
        if let Some(r) = &responder {
            r.at_end(Some(&state), status != ExecutionStatus::Success).await;
        }
        let result = self
            .end(
                id,
                owner,
                status,
                message.as_deref().unwrap_or_default(),
                doc,
                &secrets,
            )
            .await?;
        if matches!(&result, RunResult::Ran(o) if o.status == ExecutionStatus::Error) {
            let mut error = error_value.clone();
            if let Some(e) = error.as_mut() {
                secrets.scrub(e);
            }
            Box::pin(self.run_error_workflow(error_workflow::Failure {
                execution_id: id,
                mode: exec.mode,
                workflow: &workflow,
                error,
                last_node: state.last_node_executed.clone(),
                retry_of: exec.retry_of.clone(),
            }))
            .await;
        }
        Ok(result)
    }

    /// The engine input of a run-step seed; `Err` is the message the
    /// execution fails with (the replayed execution is gone or unreadable).
    async fn step_input(&self, seed: &StepSeed) -> std::result::Result<engine::partial::StepInput, String> {
        match seed {
            StepSeed::Mock { items } => Ok(engine::partial::StepInput::Mock(items.clone())),
            StepSeed::Reuse { execution_id } => {
                let doc = self
                    .inner
                    .data
                    .executions
                    .get_data(execution_id, &DataSelection::default())
                    .await
                    .map_err(|e| format!("the execution to replay ({execution_id}) could not be read: {e}"))?
                    .ok_or_else(|| format!("the execution to replay ({execution_id}) holds no run data"))?;
                let run_data = doc.pointer("/resultData/runData").cloned().unwrap_or_else(|| json!({}));
                let mut prior = engine::ExecutionState::new(execution_id.clone());
                prior.run_data = serde_json::from_value(run_data)
                    .map_err(|e| format!("the execution to replay ({execution_id}) has unreadable run data: {e}"))?;
                Ok(engine::partial::StepInput::Reuse(Box::new(prior)))
            }
        }
    }

    /// Stores the document, then the final status (in that order, so a
    /// reader that sees the status also finds the run data).
    async fn end(
        &self,
        id: &str,
        owner: &str,
        status: ExecutionStatus,
        message: &str,
        mut doc: Value,
        secrets: &host::Secrets,
    ) -> Result<RunResult> {
        secrets.scrub(&mut doc);
        let message = secrets.scrub_str(message);
        // Retention counts from the end (parts saved next carry the time).
        let expires = self.inner.settings.retention_secs.map(|r| db::now_secs() + r);
        self.inner.data.executions.set_expiry(id, expires).await?;
        self.inner.data.executions.save_data(id, &doc).await?;
        let error = (!message.is_empty()).then_some(message.as_str());
        if !self.records().finish(id, owner, status, error).await? {
            tracing::warn!("lease lost before the result was recorded");
            return Ok(RunResult::Skipped(SkipReason::LostLease));
        }
        tracing::info!(status = status.as_str(), "execution finished");
        self.inner.sweeper.notify(id).await;
        Ok(RunResult::Ran(ExecutionOutcome {
            execution_id: ExecutionId(id.to_owned()),
            status,
            error: error.map(str::to_owned),
            wait_till: None,
        }))
    }
}
