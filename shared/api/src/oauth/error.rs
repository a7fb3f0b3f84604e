//! OAuth's error form, in one place: `{"error": "<code>",
//! "error_description": "…"}` (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 8707
//! §2) with the status each code implies. The authorization endpoint sends
//! the same codes to the client's redirect URI instead (see `authorize`).

use lambda_http::{Body, Response};
use serde_json::json;
use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("{0}")]
    InvalidRequest(String),
    /// Client authentication failed (401).
    #[error("{0}")]
    InvalidClient(String),
    /// A code or refresh token that is invalid, expired, replayed or another client's.
    #[error("{0}")]
    InvalidGrant(String),
    #[error("{0}")]
    UnauthorizedClient(String),
    #[error("{0}")]
    UnsupportedGrantType(String),
    #[error("{0}")]
    UnsupportedResponseType(String),
    #[error("{0}")]
    InvalidScope(String),
    /// A `resource` this server does not issue tokens for (RFC 8707).
    #[error("{0}")]
    InvalidTarget(String),
    #[error("{0}")]
    AccessDenied(String),
    #[error("{0}")]
    InvalidRedirectUri(String),
    #[error("{0}")]
    InvalidClientMetadata(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    NotFound(String),
    /// Details go to the log; the client reads a generic description.
    #[error("internal error")]
    Server(String),
}

impl OAuthError {
    pub fn code(&self) -> &'static str {
        match self {
            OAuthError::InvalidRequest(_) | OAuthError::MethodNotAllowed(_) | OAuthError::NotFound(_) => "invalid_request",
            OAuthError::InvalidClient(_) => "invalid_client",
            OAuthError::InvalidGrant(_) => "invalid_grant",
            OAuthError::UnauthorizedClient(_) => "unauthorized_client",
            OAuthError::UnsupportedGrantType(_) => "unsupported_grant_type",
            OAuthError::UnsupportedResponseType(_) => "unsupported_response_type",
            OAuthError::InvalidScope(_) => "invalid_scope",
            OAuthError::InvalidTarget(_) => "invalid_target",
            OAuthError::AccessDenied(_) => "access_denied",
            OAuthError::InvalidRedirectUri(_) => "invalid_redirect_uri",
            OAuthError::InvalidClientMetadata(_) => "invalid_client_metadata",
            OAuthError::Server(_) => "server_error",
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            OAuthError::InvalidClient(_) => 401,
            OAuthError::AccessDenied(_) => 403,
            OAuthError::NotFound(_) => 404,
            OAuthError::MethodNotAllowed(_) => 405,
            OAuthError::Server(_) => 500,
            _ => 400,
        }
    }

    pub fn description(&self) -> String {
        if let OAuthError::Server(detail) = self {
            tracing::error!(error = %detail, "oauth internal error");
        }
        self.to_string()
    }

    pub fn into_response(self) -> Response<Body> {
        let status = self.status();
        let body = json!({"error": self.code(), "error_description": self.description()});
        let mut resp = crate::http_util::json(status, &body);
        let h = resp.headers_mut();
        h.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
        if status == 401 {
            h.insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Basic realm=\"instance-ai\""));
        }
        resp
    }
}

impl From<StoreError> for OAuthError {
    fn from(e: StoreError) -> Self {
        OAuthError::Server(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_take_the_oauth_form() {
        let resp = OAuthError::InvalidTarget("resource https://other.example/mcp is not served here".into()).into_response();
        assert_eq!(resp.status(), 400);
        let body: serde_json::Value = serde_json::from_slice(resp.body().as_ref()).unwrap();
        assert_eq!(body, json!({"error": "invalid_target", "error_description": "resource https://other.example/mcp is not served here"}));
        let resp = OAuthError::Server("dynamodb: table x".into()).into_response();
        assert_eq!(resp.status(), 500);
        assert!(!std::str::from_utf8(resp.body().as_ref()).unwrap().contains("dynamodb"));
        assert_eq!(OAuthError::InvalidClient("x".into()).into_response().status(), 401);
    }
}
