//! The crate's one error type.

use expression::ExpressionError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The workflow JSON is malformed or inconsistent (validation).
    #[error("invalid workflow: {0}")]
    InvalidWorkflow(String),
    /// A node type the engine does not implement: never silently passed through.
    #[error("node \"{node}\" has unknown type \"{node_type}\"")]
    UnknownNodeType { node: String, node_type: String },
    /// A node at a version, or with a parameter value, the engine does not
    /// implement ([`crate::nodes::unsupported`]): refused before the run.
    #[error("node \"{node}\": {message}")]
    Unsupported { node: String, message: String },
    #[error("node \"{0}\" not found in workflow")]
    NodeNotFound(String),
    /// A node failed while executing (n8n's NodeOperationError / NodeApiError).
    #[error("{message}")]
    Node {
        message: String,
        description: Option<String>,
        http_code: Option<String>,
    },
    #[error(transparent)]
    Expression(#[from] ExpressionError),
    /// A request refused by the SSRF guard or the host allow-list.
    #[error("request to {0} refused: address is not allowed")]
    Forbidden(String),
    #[error("execution was canceled")]
    Canceled,
    #[error("execution timed out after {0} ms")]
    Timeout(u64),
    /// A host service (credentials, files, data tables, sub-workflows) failed.
    #[error("host service failed: {0}")]
    Host(String),
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

impl EngineError {
    /// Shorthand for a node operation error.
    pub fn node(message: impl Into<String>) -> Self {
        EngineError::Node { message: message.into(), description: None, http_code: None }
    }

    pub fn node_with(message: impl Into<String>, description: impl Into<String>) -> Self {
        EngineError::Node { message: message.into(), description: Some(description.into()), http_code: None }
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
