//! `/token`: the authorization code grant (PKCE S256 verified, the code
//! spent by one conditional write) and the refresh token grant (rotation:
//! each refresh token works once; a replay revokes the whole grant).

use super::client_auth;
use super::params::Params;
use super::{OAuthError, Settings};
use http::HeaderMap;
use mcp_server::scopes::Scopes;
use mcp_server::transport::resource_url;
use serde_json::{json, Value};
use store::oauth::{pkce_matches, ExchangeError, ExchangeRefusal, IssuedTokens, OAuthStore};

pub async fn exchange(store: &OAuthStore, settings: &Settings, origin: &str, headers: &HeaderMap, body: &[u8]) -> Result<Value, OAuthError> {
    let p = Params::parse(body)?;
    let grant_type = p.require("grant_type")?;
    if !matches!(grant_type, "authorization_code" | "refresh_token") {
        return Err(OAuthError::UnsupportedGrantType(format!("grant_type {grant_type:?} is not supported (authorization_code, refresh_token)")));
    }
    let client = client_auth::authenticate(store, headers, &p).await?;
    if !client.grant_types.iter().any(|g| g == grant_type) {
        return Err(OAuthError::UnauthorizedClient(format!("this client did not register the {grant_type} grant")));
    }
    // RFC 8707: a token request may name the resource again; it must be ours.
    let ours = resource_url(origin);
    if let Some(r) = p.get("resource") {
        if r.trim_end_matches('/') != ours {
            return Err(OAuthError::InvalidTarget(format!("this server issues tokens only for {ours}, not for {r}")));
        }
    }
    let issued = match grant_type {
        "authorization_code" => {
            let code = p.require("code")?;
            let verifier = p.require("code_verifier")?;
            let redirect_uri = p.require("redirect_uri")?;
            let record = store.redeem_code(code).await.map_err(refused)?;
            if record.client_id != client.client_id {
                return Err(OAuthError::InvalidGrant("the code was issued to another client".into()));
            }
            if record.redirect_uri != redirect_uri {
                return Err(OAuthError::InvalidGrant("redirect_uri differs from the authorization request's".into()));
            }
            if !pkce_matches(verifier, &record.code_challenge) {
                return Err(OAuthError::InvalidGrant("code_verifier does not match the code_challenge".into()));
            }
            if record.resource != ours {
                return Err(OAuthError::InvalidTarget(format!("the code was issued for {}, not {ours}", record.resource)));
            }
            let mut tokens = store.open_grant(&record, settings.lifetimes).await?;
            if !client.grant_types.iter().any(|g| g == "refresh_token") {
                tokens.refresh_token.clear();
            }
            tokens
        }
        _ => {
            let refresh_token = p.require("refresh_token")?;
            let narrowed = match p.get("scope") {
                None => None,
                Some(s) => Some(Scopes::parse(s).map_err(|u| OAuthError::InvalidScope(format!("unknown scope {u:?}")))?),
            };
            let (_, tokens) = store
                .refresh(refresh_token, &client.client_id, settings.lifetimes, |granted| narrow(granted, narrowed))
                .await
                .map_err(refused)?;
            tokens
        }
    };
    Ok(response(&issued))
}

/// The scopes a refresh may ask for: at most those granted (RFC 6749 §6).
fn narrow(granted: &str, asked: Option<Scopes>) -> Option<String> {
    let granted_set = Scopes::parse(granted).ok()?;
    match asked {
        None => Some(granted.to_owned()),
        Some(a) if a.iter().all(|s| granted_set.contains(s)) && !a.is_empty() => Some(a.to_string()),
        Some(_) => None,
    }
}

fn refused(e: ExchangeError) -> OAuthError {
    match e {
        ExchangeError::Refused(ExchangeRefusal::Invalid) => OAuthError::InvalidGrant("the code or refresh token is invalid, expired or revoked".into()),
        ExchangeError::Refused(ExchangeRefusal::Replayed) => {
            OAuthError::InvalidGrant("the code or refresh token was already used; every token of this grant is now revoked".into())
        }
        ExchangeError::Refused(ExchangeRefusal::ScopeBeyondGrant) => OAuthError::InvalidScope("a refresh may only ask for scopes already granted".into()),
        ExchangeError::Store(s) => s.into(),
    }
}

fn response(t: &IssuedTokens) -> Value {
    let mut out = json!({
        "access_token": t.access_token,
        "token_type": "Bearer",
        "expires_in": t.expires_in,
        "scope": t.scope,
    });
    if !t.refresh_token.is_empty() {
        out["refresh_token"] = json!(t.refresh_token);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_may_narrow_never_widen() {
        assert_eq!(narrow("mcp:read mcp:write", None).as_deref(), Some("mcp:read mcp:write"));
        assert_eq!(narrow("mcp:read mcp:write", Some(Scopes::parse("mcp:read").unwrap())).as_deref(), Some("mcp:read"));
        assert_eq!(narrow("mcp:read", Some(Scopes::parse("mcp:read mcp:write").unwrap())), None);
    }
}
