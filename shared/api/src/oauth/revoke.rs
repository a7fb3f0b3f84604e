//! `/revoke` (RFC 7009): the client authenticates as at `/token`; a refresh
//! token revokes its whole grant, an access token itself. Unknown tokens
//! and other clients' tokens are answered 200 too (§2.2), changing nothing.

use super::client_auth;
use super::params::Params;
use super::OAuthError;
use http::HeaderMap;
use store::oauth::OAuthStore;

pub async fn revoke(store: &OAuthStore, headers: &HeaderMap, body: &[u8]) -> Result<(), OAuthError> {
    let p = Params::parse(body)?;
    let token = p.require("token")?;
    let client = client_auth::authenticate(store, headers, &p).await?;
    if token.len() <= 200 {
        store.revoke(token, &client.client_id).await?;
    }
    tracing::info!(client = %client.client_id, "oauth token revoked");
    Ok(())
}
