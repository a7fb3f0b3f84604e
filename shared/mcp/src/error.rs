//! The crate's one error type. Every variant ends up as a tool result with
//! `isError: true` and a message the model can act on; none becomes a
//! JSON-RPC protocol error.

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// Arguments that do not fit the tool's input schema or rules.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// A rule of the tool was broken (names, limits, state).
    #[error("{0}")]
    Invalid(String),
    #[error("not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    Conflict(String),
    #[error("rate limit: {0}")]
    RateLimited(String),
    #[error("unknown tool {0:?}; call tools/list for the available tools")]
    UnknownTool(String),
    /// Workflow code that did not compile or evaluate.
    #[error("workflow code: {0}")]
    Code(String),
    #[error("execution failed: {0}")]
    Engine(String),
    /// Nothing answered in time: the call may be retried.
    #[error("{0}")]
    Unavailable(String),
    /// Details go to the log; the model gets a generic message.
    #[error("internal error")]
    Internal(String),
}

impl From<StoreError> for McpError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => McpError::NotFound(m),
            StoreError::Conflict(m) => McpError::Conflict(m),
            StoreError::Invalid(m) => McpError::Invalid(m),
            other => McpError::Internal(other.to_string()),
        }
    }
}

impl From<instance::InstanceError> for McpError {
    fn from(e: instance::InstanceError) -> Self {
        use instance::InstanceError as I;
        match e {
            I::Invalid(m) => McpError::Invalid(m),
            I::NotFound(m) => McpError::NotFound(m),
            I::Forbidden(m) => McpError::Forbidden(m),
            I::Conflict(m) => McpError::Conflict(m),
            I::Code(m) => McpError::Code(m),
            I::Engine(m) => McpError::Engine(m),
            I::Unavailable(m) => McpError::Unavailable(m),
            I::Internal(m) => McpError::Internal(m),
        }
    }
}

impl McpError {
    /// The text the model sees.
    pub fn message(&self) -> String {
        if let McpError::Internal(detail) = self {
            tracing::error!(error = %detail, "mcp tool failed");
        }
        self.to_string()
    }
}
