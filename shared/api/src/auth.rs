//! Bearer authentication: `Authorization: Bearer <api key>` on every route
//! but `GET /healthz`; the WebSocket `$connect` carries it as `?token=`.

use crate::{ApiError, App};
use http::HeaderMap;
use protocol::UserId;

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
