//! The one place errors become HTTP answers: `{"error":{"code","message"}}`
//! with the status the code implies.

use lambda_http::{Body, Response};
use protocol::{ErrorBody, ErrorCode};
use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    NotSupported(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::BadRequest(_) => ErrorCode::BadRequest,
            ApiError::Unauthorized(_) => ErrorCode::Unauthorized,
            ApiError::Forbidden(_) => ErrorCode::Forbidden,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::MethodNotAllowed(_) => ErrorCode::MethodNotAllowed,
            ApiError::Conflict(_) => ErrorCode::Conflict,
            ApiError::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            ApiError::NotSupported(_) => ErrorCode::NotSupported,
            ApiError::Unavailable(_) => ErrorCode::Unavailable,
            ApiError::Internal(_) => ErrorCode::Internal,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.code(), self.to_string())
    }

    pub fn into_response(self) -> Response<Body> {
        if let ApiError::Internal(detail) = &self {
            // The detail is for the log only; the client gets a generic message.
            tracing::error!(error = %detail, "internal error");
        }
        let status = self.code().status();
        let mut resp = crate::http_util::json(status, &self.body());
        if status == 401 {
            resp.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(m) => ApiError::NotFound(m),
            StoreError::Conflict(m) => ApiError::Conflict(m),
            StoreError::Invalid(m) => ApiError::BadRequest(m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

#[cfg(feature = "agent")]
impl From<agent::AgentError> for ApiError {
    fn from(e: agent::AgentError) -> Self {
        use agent::AgentError as A;
        match e {
            A::Store(s) => s.into(),
            A::Invalid(m) => ApiError::BadRequest(m),
            A::TooLarge(m) => ApiError::PayloadTooLarge(m),
            A::NotFound(m) => ApiError::NotFound(m),
            A::Conflict(m) => ApiError::Conflict(m),
            A::Instance(i) => i.into(),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

#[cfg(feature = "instance")]
impl From<instance::InstanceError> for ApiError {
    fn from(e: instance::InstanceError) -> Self {
        use instance::InstanceError as I;
        match e {
            I::Invalid(m) | I::Code(m) => ApiError::BadRequest(m),
            I::NotFound(m) => ApiError::NotFound(format!("not found: {m}")),
            I::Forbidden(m) => ApiError::Forbidden(m),
            I::Conflict(m) => ApiError::Conflict(m),
            I::Engine(m) => ApiError::BadRequest(format!("execution failed: {m}")),
            I::Unavailable(m) => ApiError::Unavailable(m),
            I::Internal(m) => ApiError::Internal(m),
        }
    }
}

#[cfg(feature = "executions")]
impl From<executions::ExecutionError> for ApiError {
    fn from(e: executions::ExecutionError) -> Self {
        use executions::ExecutionError as E;
        match e {
            E::Store(s) => s.into(),
            E::NotFound(m) => ApiError::NotFound(m),
            E::Invalid(m) => ApiError::BadRequest(m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

#[cfg(feature = "triggers")]
impl From<triggers::TriggerError> for ApiError {
    fn from(e: triggers::TriggerError) -> Self {
        use triggers::TriggerError as T;
        match e {
            T::NotFound(m) => ApiError::NotFound(m),
            T::BadRequest(m) | T::Invalid(m) => ApiError::BadRequest(m),
            T::PayloadTooLarge(m) => ApiError::PayloadTooLarge(m),
            T::MethodNotAllowed(m) => ApiError::MethodNotAllowed(m),
            T::Conflict(m) => ApiError::Conflict(m),
            T::Refused(r) => match r.status {
                401 => ApiError::Unauthorized(r.message),
                403 => ApiError::Forbidden(r.message),
                _ => ApiError::Internal(r.message),
            },
            // The workflow, not the caller, is at fault: say what to fix.
            T::Misconfigured(m) => ApiError::Unavailable(m),
            T::NotSupported(m) => ApiError::NotSupported(m),
            T::Store(s) => s.into(),
            T::Execution(x) => x.into(),
            T::Scheduler(m) => ApiError::Internal(m),
            T::WithHeaders { error, .. } => ApiError::from(*error),
        }
    }
}

/// A function failed to start.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error(transparent)]
    Config(#[from] store::config::ConfigError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_details_stay_in_the_log() {
        let resp = ApiError::Internal("dynamodb: secret table name".into()).into_response();
        assert_eq!(resp.status(), 500);
        let body = std::str::from_utf8(resp.body().as_ref()).unwrap().to_owned();
        assert_eq!(body, r#"{"error":{"code":"internal","message":"internal error"}}"#);
    }

    #[test]
    fn unauthorized_carries_the_bearer_challenge() {
        let resp = ApiError::Unauthorized("missing".into()).into_response();
        assert_eq!(resp.status(), 401);
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    }
}
