//! Bearer authentication: `Authorization: Bearer <api key>` on every route
//! but `GET /healthz`; the WebSocket `$connect` carries it as `?token=`.
//! `/mcp` also takes OAuth access tokens ([`authenticate_mcp`]); no other
//! route does (they are bound to the MCP resource).

use crate::{ApiError, App};
use http::HeaderMap;
use mcp_server::{scopes::Scopes, transport::Caller};
use protocol::UserId;
use store::oauth::TokenKind;

/// The key in an `Authorization: Bearer …` header, if well-formed.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The caller's user id, or 401.
pub async fn authenticate(app: &App, headers: &HeaderMap) -> Result<UserId, ApiError> {
    let token = bearer_token(headers)
        .ok_or_else(|| ApiError::Unauthorized("missing bearer token: send `Authorization: Bearer <api key>`".into()))?;
    authenticate_key(app, token).await
}

/// The owner of `key`, or 401.
pub async fn authenticate_key(app: &App, key: &str) -> Result<UserId, ApiError> {
    let keys = app
        .api_keys
        .as_ref()
        .ok_or_else(|| ApiError::Internal("this function has no API keys table".into()))?;
    // Keys are short strings; anything huge is not a key and is not hashed.
    if key.len() > 512 {
        return Err(ApiError::Unauthorized("invalid API key".into()));
    }
    keys.lookup(key).await?.ok_or_else(|| ApiError::Unauthorized("invalid API key".into()))
}

/// Why `/mcp` refused a request's credentials.
#[derive(Debug)]
pub enum McpAuthError {
    /// 401 with the OAuth challenge; `Some(why)` when a token was presented.
    Unauthorized(Option<String>),
    Failed(ApiError),
}

/// The caller of `/mcp`: an OAuth access token issued for `resource` (this
/// server's, RFC 8707 audience) with its scopes, or an API key with every
/// scope. A token for any other resource is refused.
pub async fn authenticate_mcp(app: &App, headers: &HeaderMap, resource: &str) -> Result<Caller, McpAuthError> {
    let token = bearer_token(headers).ok_or(McpAuthError::Unauthorized(None))?;
    match TokenKind::of(token) {
        Some(TokenKind::Access) => {
            let store = app.oauth.as_ref().ok_or_else(|| McpAuthError::Failed(ApiError::Internal("this function has no OAuth table".into())))?;
            let record = store
                .access_token(token)
                .await
                .map_err(|e| McpAuthError::Failed(e.into()))?
                .ok_or_else(|| McpAuthError::Unauthorized(Some("the access token is invalid, expired or revoked".into())))?;
            if record.resource != resource {
                tracing::warn!(client = %record.client_id, audience = %record.resource, "access token for another resource refused");
                return Err(McpAuthError::Unauthorized(Some(format!(
                    "the access token was issued for {}, not for this server ({resource})",
                    record.resource
                ))));
            }
            let scopes = Scopes::parse(&record.scope).unwrap_or_default();
            Ok(Caller { user: record.user(), scopes })
        }
        Some(TokenKind::Refresh) => Err(McpAuthError::Unauthorized(Some("a refresh token is not an access token: exchange it at /token".into()))),
        None => match authenticate_key(app, token).await {
            Ok(user) => Ok(Caller::api_key(user)),
            Err(ApiError::Unauthorized(m)) => Err(McpAuthError::Unauthorized(Some(m))),
            Err(e) => Err(McpAuthError::Failed(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, v.parse().unwrap());
        h
    }

    #[test]
    fn parses_bearer_tokens() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bearer   abc ")), Some("abc"));
        assert_eq!(bearer_token(&headers("Basic abc")), None);
        assert_eq!(bearer_token(&headers("Bearer ")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }
}
