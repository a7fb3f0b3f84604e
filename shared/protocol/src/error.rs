//! The one JSON error shape every endpoint answers with:
//! `{"error":{"code":"unauthorized","message":"..."}}`.

use serde::{Deserialize, Serialize};

/// Machine-readable error codes. Each maps to one HTTP status (see `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    Conflict,
    PayloadTooLarge,
    RateLimited,
    NotSupported,
    Unavailable,
    Internal,
}

impl ErrorCode {
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::BadRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::RateLimited => 429,
            ErrorCode::NotSupported => 501,
            ErrorCode::Unavailable => 503,
            ErrorCode::Internal => 500,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

impl ErrorBody {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody { error: ErrorDetail { code, message: message.into() } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_to_the_documented_shape() {
        let body = ErrorBody::new(ErrorCode::Unauthorized, "missing bearer token");
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"error":{"code":"unauthorized","message":"missing bearer token"}}"#
        );
    }
}
