//! Client authentication at `/token` and `/revoke` (RFC 6749 §2.3): a
//! public client names itself (`client_id`, PKCE proves the rest), a
//! confidential one sends its secret by HTTP Basic or in the form, as it
//! registered.

use super::params::Params;
use super::OAuthError;
use base64::Engine;
use http::HeaderMap;
use store::oauth::{ClientRecord, OAuthStore};

pub async fn authenticate(store: &OAuthStore, headers: &HeaderMap, params: &Params) -> Result<ClientRecord, OAuthError> {
    let basic = basic_credentials(headers)?;
    let (client_id, secret) = match (&basic, params.get("client_id")) {
        (Some((id, _)), Some(form_id)) if id != form_id => {
            return Err(OAuthError::InvalidRequest("client_id in the form differs from the Authorization header".into()))
        }
        (Some((id, secret)), _) => (id.as_str(), Some(secret.as_str())),
        (None, Some(id)) => (id, params.get("client_secret")),
        (None, None) => return Err(OAuthError::InvalidClient("client authentication required: send client_id".into())),
    };
    let unknown = || OAuthError::InvalidClient("unknown client or wrong client secret".into());
    let client = store.client(client_id).await?.ok_or_else(unknown)?;
    match client.token_endpoint_auth_method.as_str() {
        "none" => Ok(client),
        _ => match secret {
            Some(secret) if client.secret_matches(secret) => Ok(client),
            _ => Err(unknown()),
        },
    }
}

/// `Authorization: Basic base64(urlencode(id):urlencode(secret))`, if sent.
fn basic_credentials(headers: &HeaderMap) -> Result<Option<(String, String)>, OAuthError> {
    let Some(value) = headers.get(http::header::AUTHORIZATION) else { return Ok(None) };
    let bad = || OAuthError::InvalidClient("malformed Basic client credentials".into());
    let value = value.to_str().map_err(|_| bad())?.trim();
    let Some((scheme, encoded)) = value.split_once(' ') else { return Err(bad()) };
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(OAuthError::InvalidClient("client credentials must use the Basic scheme".into()));
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).map_err(|_| bad())?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(bad)?;
    let dec = |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8().map(|c| c.into_owned()).map_err(|_| bad());
    Ok(Some((dec(id)?, dec(secret)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_url_decoded() {
        let mut h = HeaderMap::new();
        let enc = base64::engine::general_purpose::STANDARD.encode("my%20client:s%3Ecret");
        h.insert(http::header::AUTHORIZATION, format!("Basic {enc}").parse().unwrap());
        assert_eq!(basic_credentials(&h).unwrap(), Some(("my client".into(), "s>cret".into())));
        h.insert(http::header::AUTHORIZATION, "Bearer x".parse().unwrap());
        assert!(basic_credentials(&h).is_err());
        assert_eq!(basic_credentials(&HeaderMap::new()).unwrap(), None);
    }
}
