//! The crate's one error type (`api::ApiError` maps it to HTTP statuses).

use engine::webhook::Refusal;
use executions::ExecutionError;
use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    /// No workflow answers this URL (or the execution is not waiting).
    #[error("{0}")]
    NotFound(String),
    /// The request is malformed (a body that does not parse, a bad form).
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The URL exists but not for this method.
    #[error("{0}")]
    MethodNotAllowed(String),
    /// Publishing: a path another live workflow holds; or several drafts
    /// share one test URL; or a second resume of one execution.
    #[error("{0}")]
    Conflict(String),
    /// The node's access or authentication options refused the request.
    #[error("{}", .0.message)]
    Refused(Refusal),
    /// The workflow cannot answer as configured (e.g. `responseNode` without
    /// a Respond to Webhook node).
    #[error("{0}")]
    Misconfigured(String),
    /// The workflow is invalid for publishing (a bad path, cron expression, ...).
    #[error("{0}")]
    Invalid(String),
    /// Something the issue leaves for later (streaming responses, ...).
    #[error("{0}")]
    NotSupported(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Execution(#[from] ExecutionError),
    #[error("scheduler request failed: {0}")]
    Scheduler(String),
    /// An error answered with these headers too (CORS: n8n sets them
    /// before the node runs, so a refusal carries them).
    #[error("{error}")]
    WithHeaders { error: Box<TriggerError>, headers: Vec<(String, String)> },
}

pub type Result<T, E = TriggerError> = std::result::Result<T, E>;
