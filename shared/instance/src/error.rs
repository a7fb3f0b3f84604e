//! The crate's one error type. Front doors map it: the MCP server to a tool
//! result with `isError`, the agent to a `tool-error` the model reads, the
//! REST routes to `api::ApiError` (one status per variant).

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    /// A rule of the operation was broken (names, limits, state, input).
    #[error("{0}")]
    Invalid(String),
    /// Missing, or not the caller's: strangers learn nothing more.
    #[error("not found: {0}")]
    NotFound(String),
    /// The caller can see the resource but lacks the permission.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    /// Workflow code that did not compile or evaluate.
    #[error("workflow code: {0}")]
    Code(String),
    #[error("execution failed: {0}")]
    Engine(String),
    /// Nothing answered in time (the executor function): try again.
    #[error("{0}")]
    Unavailable(String),
    /// Details go to the log; callers get a generic message.
    #[error("internal error")]
    Internal(String),
}

impl From<StoreError> for InstanceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => InstanceError::NotFound(m),
            StoreError::Conflict(m) => InstanceError::Conflict(m),
            StoreError::Invalid(m) => InstanceError::Invalid(m),
            other => InstanceError::Internal(other.to_string()),
        }
    }
}

impl From<triggers::TriggerError> for InstanceError {
    fn from(e: triggers::TriggerError) -> Self {
        use triggers::TriggerError as T;
        match e {
            T::NotFound(m) => InstanceError::NotFound(m),
            T::Conflict(m) => InstanceError::Conflict(m),
            T::Invalid(m) | T::BadRequest(m) | T::NotSupported(m) | T::Misconfigured(m) => InstanceError::Invalid(m),
            T::Store(s) => s.into(),
            other => InstanceError::Internal(other.to_string()),
        }
    }
}

impl InstanceError {
    /// The text a caller (person or model) sees; internal details are logged.
    pub fn message(&self) -> String {
        if let InstanceError::Internal(detail) = self {
            tracing::error!(error = %detail, "instance operation failed");
        }
        self.to_string()
    }
}
