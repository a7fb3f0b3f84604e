//! The crate's one error type.

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ExecutionError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("configuration: {0}")]
    Config(#[from] store::config::ConfigError),
    #[error("not found: {0}")]
    NotFound(String),
    /// The workflow or request cannot run (bad JSON, unknown node type, no trigger, ...).
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("sqs request failed: {0}")]
    Queue(String),
    /// The stored execution document is unusable (missing workflow, bad engine state).
    #[error("corrupt execution {id}: {reason}")]
    Corrupt { id: String, reason: String },
    /// The engine's blocking task panicked or could not be joined.
    #[error("engine failed: {0}")]
    Engine(String),
    /// Work sent to the executor function got no answer in time (`jobs`).
    #[error("{0}")]
    Unanswered(String),
}

impl From<engine::EngineError> for ExecutionError {
    fn from(e: engine::EngineError) -> Self {
        ExecutionError::Invalid(e.to_string())
    }
}

pub type Result<T, E = ExecutionError> = std::result::Result<T, E>;
