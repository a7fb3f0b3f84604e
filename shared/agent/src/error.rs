//! The agent crate's one error type. The api crate maps it to HTTP answers.

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    /// The request is larger than allowed (413).
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("queue: {0}")]
    Queue(String),
    #[error("corrupt checkpoint: {0}")]
    Checkpoint(String),
    #[error(transparent)]
    Instance(#[from] instance::InstanceError),
}

impl AgentError {
    /// A conditional write lost: another actor owns the chain now.
    pub fn is_lost_ownership(&self) -> bool {
        matches!(self, AgentError::Store(StoreError::Conflict(_)))
    }
}
