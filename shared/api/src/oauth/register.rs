//! Dynamic client registration (RFC 7591): open, as MCP clients expect; a
//! registered client can do nothing until a signed-in person approves it.

use super::redirect_uri;
use super::OAuthError;
use mcp_server::scopes::Scopes;
use serde::Deserialize;
use serde_json::{json, Value};
use store::oauth::{ClientRecord, OAuthStore};

/// The metadata we act on; anything else a client sends is ignored (§2).
#[derive(Debug, Deserialize)]
pub struct RegistrationRequest {
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    pub client_name: Option<String>,
    pub grant_types: Option<Vec<String>>,
    pub response_types: Option<Vec<String>>,
    pub token_endpoint_auth_method: Option<String>,
    pub scope: Option<String>,
}

const MAX_REDIRECT_URIS: usize = 10;
const MAX_NAME: usize = 200;
pub const MAX_BODY: usize = 16 * 1024;

/// A client record to store (with the scope it asked for), or why the
/// request is refused.
pub fn validate(req: RegistrationRequest) -> Result<(ClientRecord, Option<String>), OAuthError> {
    if req.redirect_uris.is_empty() {
        return Err(OAuthError::InvalidRedirectUri("redirect_uris must list at least one URI".into()));
    }
    if req.redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(OAuthError::InvalidRedirectUri(format!("at most {MAX_REDIRECT_URIS} redirect_uris")));
    }
    for uri in &req.redirect_uris {
        redirect_uri::check(uri).map_err(OAuthError::InvalidRedirectUri)?;
    }
    let client_name = req.client_name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    if client_name.as_ref().is_some_and(|n| n.chars().count() > MAX_NAME || n.chars().any(char::is_control)) {
        return Err(OAuthError::InvalidClientMetadata(format!("client_name must be at most {MAX_NAME} printable characters")));
    }
    // RFC 7591 §2: authorization_code when absent.
    let grant_types = req.grant_types.unwrap_or_else(|| vec!["authorization_code".into()]);
    if let Some(g) = grant_types.iter().find(|g| !matches!(g.as_str(), "authorization_code" | "refresh_token")) {
        return Err(OAuthError::InvalidClientMetadata(format!("grant type {g:?} is not supported (authorization_code, refresh_token)")));
    }
    if !grant_types.iter().any(|g| g == "authorization_code") {
        return Err(OAuthError::InvalidClientMetadata("grant_types must include authorization_code".into()));
    }
    if let Some(rt) = &req.response_types {
        if rt.iter().any(|t| t != "code") {
            return Err(OAuthError::InvalidClientMetadata("response_types must be [\"code\"]".into()));
        }
    }
    // RFC 7591 §2: client_secret_basic when absent.
    let method = req.token_endpoint_auth_method.unwrap_or_else(|| "client_secret_basic".into());
    if !matches!(method.as_str(), "none" | "client_secret_basic" | "client_secret_post") {
        return Err(OAuthError::InvalidClientMetadata(format!(
            "token_endpoint_auth_method {method:?} is not supported (none, client_secret_basic, client_secret_post)"
        )));
    }
    if let Some(scope) = &req.scope {
        Scopes::parse(scope).map_err(|s| OAuthError::InvalidClientMetadata(format!("unknown scope {s:?}")))?;
    }
    let record = ClientRecord {
        client_id: String::new(),
        client_name,
        redirect_uris: req.redirect_uris,
        grant_types,
        token_endpoint_auth_method: method,
        secret_hash: None,
        created_at: 0,
    };
    Ok((record, req.scope))
}

/// Registers and answers the client information response (§3.2.1).
pub async fn register(store: &OAuthStore, body: &[u8]) -> Result<Value, OAuthError> {
    if body.len() > MAX_BODY {
        return Err(OAuthError::InvalidClientMetadata(format!("registration body exceeds {MAX_BODY} bytes")));
    }
    let req: RegistrationRequest = serde_json::from_slice(body)
        .map_err(|e| OAuthError::InvalidClientMetadata(format!("the body must be a JSON object of client metadata: {e}")))?;
    let (record, scope) = validate(req)?;
    let confidential = record.token_endpoint_auth_method != "none";
    let (record, secret) = store.register_client(record, confidential).await?;
    let mut out = json!({
        "client_id": record.client_id,
        "client_id_issued_at": record.created_at,
        "redirect_uris": record.redirect_uris,
        "grant_types": record.grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": record.token_endpoint_auth_method,
    });
    if let Some(name) = &record.client_name {
        out["client_name"] = json!(name);
    }
    if let Some(scope) = scope {
        out["scope"] = json!(scope);
    }
    if let Some(secret) = secret {
        out["client_secret"] = json!(secret);
        out["client_secret_expires_at"] = json!(0);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> RegistrationRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn defaults_and_refusals_follow_rfc_7591() {
        let (r, _) = validate(req(json!({"redirect_uris": ["http://127.0.0.1:5000/cb"], "client_name": "Claude"}))).unwrap();
        assert_eq!(r.grant_types, ["authorization_code"]);
        assert_eq!(r.token_endpoint_auth_method, "client_secret_basic");
        let (r, _) = validate(req(json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"], "application_type": "native"}))).unwrap();
        assert_eq!(r.token_endpoint_auth_method, "none");
        for (body, code) in [
            (json!({}), "invalid_redirect_uri"),
            (json!({"redirect_uris": ["http://evil.example/cb"]}), "invalid_redirect_uri"),
            (json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}), "invalid_client_metadata"),
            (json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["refresh_token"]}), "invalid_client_metadata"),
            (json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}), "invalid_client_metadata"),
            (json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}), "invalid_client_metadata"),
            (json!({"redirect_uris": ["https://a.example/cb"], "scope": "admin"}), "invalid_client_metadata"),
            (json!({"redirect_uris": ["https://a.example/cb"], "client_name": "x".repeat(201)}), "invalid_client_metadata"),
        ] {
            assert_eq!(validate(req(body.clone())).unwrap_err().code(), code, "{body}");
        }
    }
}
