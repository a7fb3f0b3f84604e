//! Everything the run loop needs, built once per process (Lambda init) and
//! shared by every invocation: repositories, the event log (whose head cache
//! must be shared), the publisher, the queue, the model and the tools.

use crate::error::AgentError;
use crate::model::{ModelError, ModelProvider};
use crate::tools::policy::Policy;
use crate::tools::Registry;
use protocol::events::{Event, EventPayload};
use protocol::ids::{AgentId, RunId, ThreadId};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use store::connections::Connections;
use store::deployment::{QueueId, TableId};
use store::{AwsClients, Config, EventLog, EventWriter, Publisher, Runs, Suspensions};

/// The knobs of the run loop (from [`Config`]).
#[derive(Debug, Clone)]
pub struct Settings {
    pub max_steps: u32,
    /// Lease of a queued or running step; the sweep acts after it.
    pub step_lease: Duration,
    /// Wall time a step uses before it checkpoints and re-enqueues itself.
    pub step_budget: Duration,
    pub confirmation_timeout: Option<Duration>,
    /// How often a running step reads the cancel flag (cancel is seen within
    /// this plus one read).
    pub cancel_poll: Duration,
    /// How long a tool waits inline for a workflow execution before the
    /// chain parks on it (`INSTANCE_AI_EXECUTION_INLINE_WAIT_MS`).
    pub inline_wait: Duration,
}

impl Settings {
    pub fn from_config(config: &Config) -> Result<Settings, AgentError> {
        let inline_wait = match config.var(INLINE_WAIT_VARIABLE).map(str::trim) {
            None => DEFAULT_INLINE_WAIT,
            Some(v) => Duration::from_millis(v.parse::<u64>().map_err(|_| {
                AgentError::Invalid(format!("{INLINE_WAIT_VARIABLE} is malformed: expected a number of milliseconds, got {v:?}"))
            })?),
        };
        Ok(Settings {
            max_steps: config.max_steps,
            step_lease: Duration::from_secs(config.step_lease_secs),
            step_budget: Duration::from_secs(config.step_budget_secs),
            confirmation_timeout: config.confirmation_timeout_secs.map(Duration::from_secs),
            cancel_poll: Duration::from_millis(250),
            inline_wait,
        })
    }
}

pub const INLINE_WAIT_VARIABLE: &str = "INSTANCE_AI_EXECUTION_INLINE_WAIT_MS";

/// Why 2 s: parking costs a fixed amount — one more step invocation (its
/// claim, checkpoint and the result's reads: about 15 more DynamoDB requests
/// and a few hundred ms of step time, `cargo bench -p e2e --bench
/// execution_run`) — worth about one second of a 1 GB step waiting, which
/// also polls (the cancel flag 4×/s, the execution ≤1×/s). A bound near that
/// break-even keeps a quick run (most test runs finish well under 2 s) in one
/// step, with no queue hop in the chat's latency, and caps what a slow run
/// wastes before it stops costing step time at 2 s.
pub const DEFAULT_INLINE_WAIT: Duration = Duration::from_secs(2);

/// One step message on the Steps queue: `(runId, agentId, step)`, plus the
/// request id when it resumes a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepMessage {
    pub run_id: String,
    pub agent_id: String,
    pub step: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Set when the step resumes a call parked on an execution: the wait
    /// record's id (the chain is `waiting` on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_id: Option<String>,
}

pub struct Runtime {
    pub settings: Settings,
    pub runs: Runs,
    pub suspensions: Suspensions,
    pub log: EventLog,
    pub publisher: Option<Publisher>,
    pub sqs: aws_sdk_sqs::Client,
    /// `None` in a function that may not send steps.
    pub steps_queue: Option<String>,
    /// The configured model, or why there is none (reported on the run).
    pub model: Result<Arc<dyn ModelProvider>, ModelError>,
    pub tools: Registry,
    pub system_prompt: String,
    /// The admin approval policy (`INSTANCE_AI_APPROVAL_POLICY`).
    pub policy: Policy,
    /// The domain layer the domain tools act on; `None` in functions that do
    /// not run tools (chat, cancel), whose deployment grants no instance tables.
    pub instance: Option<Arc<instance::Instance>>,
    /// Project memberships, for a thread's first message that names a
    /// project (the chat function reads them without the domain layer);
    /// `None` without an Instance table.
    pub projects: Option<store::data::Projects>,
    /// Stops executions a cancelled run waits on; `None` where the function
    /// has no Executions table.
    pub executions: Option<executions::Sweeper>,
    /// Turns the sweep on when a run starts (`None` where `SWEEP_SCHEDULE`
    /// is not configured: tests that run no sweep).
    pub sweep: Option<store::sweep_schedule::SweepFlag>,
    /// The guarded outbound client (the SSRF guard's policy from
    /// `INSTANCE_AI_HTTP_*`), shared by the tools that read the web.
    pub outbound: outbound::Client,
    /// Web search and page reads, with their process-wide caches.
    pub research: Arc<research::Research>,
    /// `searchModels`' catalog, cached for the process.
    pub models: Arc<research::Catalog>,
    /// Files attached to chat messages (Agent table).
    pub attachments: store::data::Attachments,
    /// The MCP servers users may connect (`INSTANCE_AI_MCP_SERVERS`) and
    /// each user's connections (Agent table).
    pub mcp_servers: crate::mcp::McpServers,
    pub mcp_connections: store::data::McpConnections,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("settings", &self.settings)
            .field("model", &self.model.as_ref().map(|m| format!("{}:{}", m.provider(), m.model())))
            .field("tools", &self.tools.names())
            .finish()
    }
}

impl Runtime {
    /// Builds the runtime from the function's configuration. The model is
    /// resolved here once; a missing model is not an init error (chat and
    /// cancel work without one) but ends each run with an error naming
    /// `INSTANCE_AI_MODEL`.
    pub async fn from_config(config: &Config, clients: &AwsClients) -> Result<Runtime, AgentError> {
        let instance = match config.table(TableId::Instance) {
            Ok(_) => Some(Arc::new(
                instance::Instance::new(clients, config).await.map_err(|e| AgentError::Invalid(e.message()))?,
            )),
            Err(_) => None,
        };
        let model = crate::model::provider_from_config(config.model.as_deref()).await;
        if let Err(e) = &model {
            tracing::warn!(error = %e, "no usable model; runs will end with an error");
        }
        Runtime::build(config, clients, model, Registry::standard(), crate::skills::system_prompt(), instance)
    }

    /// A runtime that starts, decides, cancels and sweeps runs but runs no
    /// step: no model, no tools, no domain layer (the chat, confirm, cancel
    /// and sweep functions, whose deployment grants no instance tables), so
    /// their binaries link none of it. A step run on it ends with an error.
    pub fn control(config: &Config, clients: &AwsClients) -> Result<Runtime, AgentError> {
        let model = Err(ModelError::new("none", crate::model::ModelErrorKind::Config, "this function runs no agent steps"));
        Runtime::build(config, clients, model, Registry::empty(), String::new(), None)
    }

    fn build(
        config: &Config,
        clients: &AwsClients,
        model: Result<Arc<dyn ModelProvider>, ModelError>,
        tools: Registry,
        system_prompt: String,
        instance: Option<Arc<instance::Instance>>,
    ) -> Result<Runtime, AgentError> {
        let agent_table = config.table(TableId::Agent).map_err(store::StoreError::from)?;
        let events_table = config.table(TableId::Events).map_err(store::StoreError::from)?;
        let publisher = config
            .table(TableId::Connections)
            .ok()
            .map(|t| Publisher::new(Connections::new(clients.dynamo.clone(), t), clients.connections.clone()));
        let policy = Policy::parse(config.var(crate::tools::policy::VARIABLE)).map_err(|e| AgentError::Invalid(e.to_string()))?;
        let executions = match config.table(TableId::Executions) {
            Ok(_) => Some(executions::Sweeper::stopper_from_config(clients, config).map_err(|e| AgentError::Invalid(e.to_string()))?),
            Err(_) => None,
        };
        let sweep = store::sweep_schedule::agent_flag(clients, config).map_err(store::StoreError::from)?;
        let projects = config.table(TableId::Instance).ok().map(|t| store::data::Projects::new(store::data::db::Table::new(clients.dynamo.clone(), t)));
        let guard = outbound::Policy { allow_private: config.http_allow_private_network, allowed_hosts: config.http_allowed_hosts.clone() };
        let outbound = outbound::Client::new(guard, Arc::new(outbound::SystemResolver)).map_err(|e| AgentError::Invalid(e.to_string()))?;
        let research = research::Research::new(outbound.clone(), crate::tools::research::settings_from_config(config)?);
        let models = Arc::new(research::Catalog::new(outbound.clone(), crate::tools::search_models::catalog_url(config)?));
        Ok(Runtime {
            settings: Settings::from_config(config)?,
            runs: Runs::new(clients.dynamo.clone(), agent_table),
            suspensions: Suspensions::new(clients.dynamo.clone(), agent_table),
            log: EventLog::new(clients.dynamo.clone(), events_table),
            publisher,
            sqs: clients.sqs.clone(),
            steps_queue: config.queue_url(QueueId::Steps).ok().map(str::to_owned),
            model,
            tools,
            system_prompt,
            policy,
            instance,
            projects,
            executions,
            sweep,
            outbound,
            research,
            models,
            attachments: store::data::Attachments::new(store::data::db::Table::new(clients.dynamo.clone(), agent_table)),
            mcp_servers: crate::mcp::McpServers::from_config(config)?,
            mcp_connections: store::data::McpConnections::new(store::data::db::Table::new(clients.dynamo.clone(), agent_table)),
        })
    }

    /// A writer for one thread (one per step; the log's head cache is shared).
    pub fn writer(&self, thread: &ThreadId) -> EventWriter {
        EventWriter::new(thread.clone(), self.log.clone(), self.publisher.clone())
    }

    /// Sends a step message.
    pub async fn enqueue(&self, msg: &StepMessage) -> Result<(), AgentError> {
        let queue = self.steps_queue.as_deref().ok_or_else(|| AgentError::Queue("STEPS_QUEUE_URL is not configured".into()))?;
        let body = serde_json::to_string(msg).map_err(|e| AgentError::Queue(e.to_string()))?;
        self.sqs
            .send_message()
            .queue_url(queue)
            .message_body(body)
            .send()
            .await
            .map_err(|e| AgentError::Queue(store::StoreError::sqs(e).to_string()))?;
        Ok(())
    }

    pub fn lease_from_now(&self) -> u64 {
        store::runs::now_ms() + self.settings.step_lease.as_millis() as u64
    }
}

/// An event of `run` attributed to `agent`.
pub fn event(run: &RunId, agent: &AgentId, payload: EventPayload) -> Event {
    Event::new(run.clone(), agent.clone(), payload)
}
