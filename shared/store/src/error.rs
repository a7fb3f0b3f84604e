use thiserror::Error;

/// Everything the store can fail with. Callers map it to their own answer
/// (HTTP status, tool error) in one place.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("configuration: {0}")]
    Config(#[from] crate::config::ConfigError),
    #[error("{service} request failed: {message}")]
    Aws { service: &'static str, message: String },
    #[error("not found: {0}")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("corrupt record: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Wraps an SDK error with its full source chain: the SDK's Display alone
    /// says only "service error".
    pub fn dynamo<E: std::error::Error>(err: E) -> Self {
        StoreError::Aws { service: "dynamodb", message: chain(&err) }
    }

    pub fn sqs<E: std::error::Error>(err: E) -> Self {
        StoreError::Aws { service: "sqs", message: chain(&err) }
    }
}

fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
