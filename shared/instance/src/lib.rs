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
//! (executions started and awaited through `executions`).
//!
//! Boundary: no AWS types in the public API beyond the store's repositories
//! ([`store::data::InstanceData`]).

pub mod access;
pub mod catalog;
pub mod error;
pub mod ops;
pub mod runner;
pub mod sdk;
pub mod validate;

pub use access::Caller;
pub use error::InstanceError;

use executions::{Dispatch, Executor, ExecutorSettings};
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
    /// Publish, unpublish, archive: the workflow's webhook paths and schedules.
    pub activation: triggers::Activation,
}

impl Instance {
    pub async fn new(clients: &AwsClients, config: &Config) -> Result<Instance, InstanceError> {
        let data = InstanceData::new(clients, config).await?;
        let runs = config.queue_url(QueueId::Runs).map_err(|e| InstanceError::Internal(e.to_string()))?;
        let executor = Executor::new(data.clone(), clients.sqs.clone(), runs, ExecutorSettings::from_config(config));
        let activation = triggers::Activation::new(data.clone(), triggers::Schedules::from_config(clients, config));
        Ok(Instance { data, executor, dispatch: Dispatch::Queue, activation })
    }
}
