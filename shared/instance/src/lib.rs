//! The domain layer: every operation on the instance's workflows,
//! executions, credentials, data tables and folders, in one place. The
//! agent's tools, the MCP tools and the REST routes are front doors: they map
//! arguments, call an operation here and shape its output. An operation is
//! never written twice.
//!
//! Codemap: [`access`] (the [`Caller`] and access checks — strangers get
//! not-found), [`sdk`] (our workflow SDK: TypeScript stripping, evaluation in
//! the expression sandbox), [`validate`] (workflow JSON against the engine's
//! catalog), [`ops`] (partial workflow operations, all or nothing),
//! [`catalog`] (the builder's view of the node catalog), [`runner`]
//! (executions started and awaited through `executions`), [`workflows`]
//! (list, read, summary, versions, canvas validation, archive, publish,
//! restore), [`builder`] (source → saved workflow: compile, validate,
//! credentials, create or save; `build-workflow`), [`edit_rules`] (which
//! findings an edit did not introduce and so do not block it), [`executions`]
//! (run, run-step, get, debug, node output, resolved parameters, stop, list),
//! [`credentials`] (metadata, write-only secrets, connection tests, credential types),
//! [`nodes`] (the node catalog for agents: search, types, suggestions, and
//! one node run standalone), [`setup`] (a workflow's missing credentials and
//! parameters as setup requests; the person's answer applied in one save),
//! [`data_tables`] (tables, columns and rows; a table named by id or exact
//! name), [`workspace`] (projects, folders, tags, cleanup of test executions).
//!
//! Shape: one module per aggregate; each operation is an async method on
//! [`Instance`] taking the [`Caller`] first, returning domain types (store
//! types or the module's own), never a front door's JSON.
//!
//! Boundary: no AWS types in the public API beyond the store's repositories
//! ([`store::data::InstanceData`]).

pub mod access;
pub mod builder;
pub mod catalog;
pub mod credential_connect;
pub mod credentials;
pub mod data_tables;
pub mod docs;
pub mod edit_rules;
pub mod error;
pub mod eval_configs;
pub mod executions;
pub mod lookups;
pub mod nodes;
pub mod ops;
pub mod runner;
pub mod sdk;
pub mod setup;
pub mod validate;
pub mod verification;
pub mod workflows;
pub mod workspace;

pub use access::Caller;
pub use error::InstanceError;

use ::executions::{Dispatch, Executor, ExecutorSettings};
use store::data::InstanceData;
use store::deployment::QueueId;
use store::{AwsClients, Config};

/// Built once per process (Lambda init) and shared by every request.
#[derive(Clone, Debug)]
pub struct Instance {
    pub data: InstanceData,
    pub executor: Executor,
    /// Where executions run while an operation waits: on the executor
    /// function through the Runs queue (its budget, not the caller's).
    pub dispatch: Dispatch,
    /// Whether execution data (item values, upstream error details) may be
    /// shown to the assistant (`INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES`).
    pub values: executions::view::Values,
    /// Publish, unpublish, archive: the workflow's webhook paths and schedules.
    pub activation: triggers::Activation,
}

/// `true` (default) lets the assistant read execution data.
pub const ALLOW_VALUES_VARIABLE: &str = "INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES";

impl Instance {
    pub async fn new(clients: &AwsClients, config: &Config) -> Result<Instance, InstanceError> {
        let data = InstanceData::new(clients, config)?;
        let runs = config.queue_url(QueueId::Runs).map_err(|e| InstanceError::Internal(e.to_string()))?;
        let steps = config.queue_url(QueueId::Steps).ok().map(str::to_owned);
        let sweep = ::executions::sweep_flag(clients, config).map_err(|e| InstanceError::Internal(e.to_string()))?;
        let executor = Executor::new(data.clone(), clients.sqs.clone(), runs, ExecutorSettings::from_config(config)).notifying(steps).watched_by(sweep);
        let activation = triggers::Activation::new(data.clone(), triggers::Schedules::from_config(clients, config));
        let values = match config.var(ALLOW_VALUES_VARIABLE).map(str::trim) {
            None | Some("true") | Some("1") => executions::view::Values::Shown,
            Some("false") | Some("0") => executions::view::Values::Withheld,
            Some(other) => return Err(InstanceError::Invalid(format!("{ALLOW_VALUES_VARIABLE} is malformed: expected true or false, got {other:?}"))),
        };
        Ok(Instance { data, executor, dispatch: Dispatch::Queue, values, activation })
    }

    /// Runs executions, connection tests and lookups in this process
    /// instead of sending them to the executor function (tests).
    pub fn run_in_process(&mut self) {
        self.executor = self.executor.clone().running_here();
        self.dispatch = Dispatch::Inline;
    }
}
