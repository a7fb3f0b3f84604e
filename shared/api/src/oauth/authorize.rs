//! `/authorize`: GET validates the request and shows the consent page;
//! POST (the consent form) checks the CSRF token, validates the request
//! again, signs the person in with their API key and, on approval, sends
//! the browser back with a single-use code bound to the PKCE challenge,
//! the resource and the scopes the person ticked.
//!
//! Until the client and its redirect URI are known good nothing is sent
//! to the redirect URI (an error page is shown instead); after that,
//! errors go back to the client as `error`/`state`/`iss` parameters.

use super::consent::{self, View, CSRF_COOKIE};
use super::params::Params;
use super::redirect_uri;
use super::OAuthError;
use crate::{auth, ApiError, App};
use base64::Engine;
use http::header::{self, HeaderMap, HeaderValue};
use lambda_http::{Body, Response};
use mcp_server::scopes::Scopes;
use mcp_server::transport::resource_url;
use rand::RngCore;
use store::oauth::{ClientRecord, OAuthStore};
use subtle::ConstantTimeEq;

/// A validated authorization request.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    pub client: ClientRecord,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub code_challenge: String,
    pub resource: String,
    /// What the client asked for (all scopes when it named none).
    pub scopes: Scopes,
}

/// Why a request cannot go on, and where the person learns it.
#[derive(Debug)]
pub enum Refusal {
    /// Shown on our page: the redirect URI is not trusted (yet).
    Page(String),
    /// Sent back to the client.
    Redirect(String),
    Server(OAuthError),
}

/// The parameters the consent form carries back to POST.
const CARRIED: &[&str] = &["response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"];

pub async fn validate(store: &OAuthStore, origin: &str, p: &Params) -> Result<AuthorizationRequest, Refusal> {
    let client_id = p.get("client_id").ok_or_else(|| Refusal::Page("The request names no client (client_id is missing).".into()))?;
    let client = store.client(client_id).await.map_err(|e| Refusal::Server(e.into()))?.ok_or_else(|| {
        Refusal::Page(format!("No client {client_id:?} is registered here; the client must register (again) before it connects."))
    })?;
    let redirect_uri = match p.get("redirect_uri") {
        Some(r) if client.redirect_uris.iter().any(|reg| redirect_uri::matches(reg, r)) => r.to_owned(),
        Some(r) => return Err(Refusal::Page(format!("The redirect URI {r:?} is not one this client registered."))),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => return Err(Refusal::Page("redirect_uri is required: this client registered several.".into())),
    };
    let state = p.get("state").map(str::to_owned);
    let fail = |e: OAuthError| Refusal::Redirect(redirect_to(&redirect_uri, &error_params(&e, state.as_deref(), origin)));
    if state.as_ref().is_some_and(|s| s.len() > 1024) {
        return Err(fail(OAuthError::InvalidRequest("state must be at most 1024 characters".into())));
    }
    if p.get("response_type") != Some("code") {
        return Err(fail(OAuthError::UnsupportedResponseType("response_type must be code".into())));
    }
    if !client.grant_types.iter().any(|g| g == "authorization_code") {
        return Err(fail(OAuthError::UnauthorizedClient("this client did not register the authorization_code grant".into())));
    }
    let code_challenge = p
        .get("code_challenge")
        .ok_or_else(|| fail(OAuthError::InvalidRequest("PKCE is required: send code_challenge and code_challenge_method=S256".into())))?;
    let well_formed = (43..=128).contains(&code_challenge.len())
        && code_challenge.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'));
    if !well_formed {
        return Err(fail(OAuthError::InvalidRequest("code_challenge must be the base64url SHA-256 of the code verifier (43 characters)".into())));
    }
    if p.get("code_challenge_method") != Some("S256") {
        return Err(fail(OAuthError::InvalidRequest("code_challenge_method must be S256 (plain is not supported)".into())));
    }
    let ours = resource_url(origin);
    let resource = match p.get("resource") {
        None => ours,
        Some(r) if r.trim_end_matches('/') == ours => ours,
        Some(r) => {
            return Err(fail(OAuthError::InvalidTarget(format!("this server issues tokens only for {ours}, not for {r}"))));
        }
    };
    let scopes = match p.get("scope") {
        None => Scopes::all(),
        Some(s) => match Scopes::parse(s) {
            Ok(s) if s.is_empty() => Scopes::all(),
            Ok(s) => s,
            Err(unknown) => return Err(fail(OAuthError::InvalidScope(format!("unknown scope {unknown:?}; supported: {}", Scopes::all())))),
        },
    };
    Ok(AuthorizationRequest { client, redirect_uri, state, code_challenge: code_challenge.to_owned(), resource, scopes })
}

/// GET: the consent page.
pub async fn show(store: &OAuthStore, origin: &str, headers: &HeaderMap, query: &[u8]) -> Response<Body> {
    let nonce = random_token();
    let p = match Params::parse(query) {
        Ok(p) => p,
        Err(e) => return consent::html(400, consent::error_page(&e.to_string(), &nonce), &nonce, None),
    };
    let req = match validate(store, origin, &p).await {
        Ok(r) => r,
        Err(refusal) => return refused(refusal, &nonce),
    };
    let csrf = cookie(headers, CSRF_COOKIE).filter(|c| c.len() == 43).unwrap_or_else(random_token);
    let mut resp = consent_page(&req, &p, &csrf, &nonce, None, 200);
    set_csrf_cookie(&mut resp, &csrf, origin);
    resp
}

/// POST: the person's decision.
pub async fn decide(app: &App, store: &OAuthStore, origin: &str, headers: &HeaderMap, body: &[u8]) -> Response<Body> {
    let nonce = random_token();
    let page_error = |m: &str| consent::html(400, consent::error_page(m, &nonce), &nonce, None);
    let p = match Params::parse_form_with_choices(body) {
        Ok(p) => p,
        Err(e) => return page_error(&e.to_string()),
    };
    if !same_origin(headers, origin) {
        return page_error("This form was sent from another site.");
    }
    let csrf_ok = match (cookie(headers, CSRF_COOKIE), p.get("csrf")) {
        (Some(c), Some(f)) => bool::from(c.as_bytes().ct_eq(f.as_bytes())),
        _ => false,
    };
    if !csrf_ok {
        return page_error("This form has expired or was not sent from the consent page (cookies must be enabled).");
    }
    let req = match validate(store, origin, &p).await {
        Ok(r) => r,
        Err(refusal) => return refused(refusal, &nonce),
    };
    let csrf = p.get("csrf").unwrap_or_default().to_owned();
    match p.get("decision") {
        Some("deny") => {
            tracing::info!(client = %req.client.client_id, "oauth consent denied");
            let e = OAuthError::AccessDenied("the person denied the request".into());
            return see_other(&redirect_to(&req.redirect_uri, &error_params(&e, req.state.as_deref(), origin)));
        }
        Some("approve") => {}
        _ => return consent_page(&req, &p, &csrf, &nonce, Some("Choose Approve or Deny."), 400),
    }
    let Some(key) = p.get("api_key") else {
        return consent_page(&req, &p, &csrf, &nonce, Some("Sign in with your API key to approve."), 401);
    };
    let user = match auth::authenticate_key(app, key).await {
        Ok(u) => u,
        Err(ApiError::Unauthorized(_)) => return consent_page(&req, &p, &csrf, &nonce, Some("That API key is not valid."), 401),
        Err(e) => return OAuthError::Server(e.to_string()).into_response(),
    };
    let mut granted = Scopes::none();
    for choice in p.scope_choices() {
        match mcp_server::scopes::Scope::parse(choice) {
            Some(s) if req.scopes.contains(s) => granted.insert(s),
            _ => return consent_page(&req, &p, &csrf, &nonce, Some("A scope was ticked that the client did not ask for."), 400),
        }
    }
    if granted.is_empty() {
        return consent_page(&req, &p, &csrf, &nonce, Some("Tick at least one permission, or choose Deny."), 400);
    }
    let code = match store
        .issue_code(&req.client.client_id, &user, &req.redirect_uri, &req.code_challenge, &req.resource, &granted.to_string())
        .await
    {
        Ok(c) => c,
        Err(e) => return OAuthError::from(e).into_response(),
    };
    tracing::info!(user = %user.0, client = %req.client.client_id, scope = %granted, "oauth consent approved");
    let mut params = vec![("code", code)];
    if let Some(s) = &req.state {
        params.push(("state", s.clone()));
    }
    params.push(("iss", origin.to_owned()));
    see_other(&redirect_to(&req.redirect_uri, &params))
}

fn consent_page(req: &AuthorizationRequest, p: &Params, csrf: &str, nonce: &str, error: Option<&str>, status: u16) -> Response<Body> {
    let carried: Vec<(&'static str, String)> = CARRIED.iter().filter_map(|k| p.get(k).map(|v| (*k, v.to_owned()))).collect();
    let view = View { request: req, carried: &carried, csrf, nonce, error };
    consent::html(status, consent::page(&view), nonce, Some(&req.redirect_uri))
}

fn refused(refusal: Refusal, nonce: &str) -> Response<Body> {
    match refusal {
        Refusal::Page(m) => consent::html(400, consent::error_page(&m, nonce), nonce, None),
        Refusal::Redirect(to) => see_other(&to),
        Refusal::Server(e) => e.into_response(),
    }
}

fn error_params(e: &OAuthError, state: Option<&str>, origin: &str) -> Vec<(&'static str, String)> {
    let mut v = vec![("error", e.code().to_owned()), ("error_description", e.description())];
    if let Some(s) = state {
        v.push(("state", s.to_owned()));
    }
    v.push(("iss", origin.to_owned()));
    v
}

/// `redirect_uri` with `params` added to its query (it may have one).
fn redirect_to(redirect_uri: &str, params: &[(&'static str, String)]) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(mut u) => {
            {
                let mut q = u.query_pairs_mut();
                for (k, v) in params {
                    q.append_pair(k, v);
                }
            }
            u.into()
        }
        Err(_) => redirect_uri.to_owned(),
    }
}

fn see_other(location: &str) -> Response<Body> {
    let mut resp = Response::new(Body::Empty);
    *resp.status_mut() = http::StatusCode::SEE_OTHER;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(location) {
        h.insert(header::LOCATION, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    resp
}

/// A browser's form post carries `Origin` (and `Sec-Fetch-Site`); when it
/// does, it must be us.
fn same_origin(headers: &HeaderMap, origin: &str) -> bool {
    let origin_ok = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).is_none_or(|o| o.eq_ignore_ascii_case(origin));
    let site_ok = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()).is_none_or(|s| s == "same-origin" || s == "none");
    origin_ok && site_ok
}

fn set_csrf_cookie(resp: &mut Response<Body>, csrf: &str, origin: &str) {
    let secure = if origin.starts_with("https://") { "; Secure" } else { "" };
    let value = format!("{CSRF_COOKIE}={csrf}; Path=/authorize; HttpOnly; SameSite=Strict; Max-Age=1800{secure}");
    if let Ok(v) = HeaderValue::from_str(&value) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then(|| v.to_owned())
    })
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_keep_the_clients_query_and_encode_ours() {
        let to = redirect_to("http://127.0.0.1:5000/cb?x=1", &[("code", "a b".into()), ("state", "s&t".into())]);
        assert_eq!(to, "http://127.0.0.1:5000/cb?x=1&code=a+b&state=s%26t");
    }

    #[test]
    fn cookies_and_origins() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; ia_oauth_csrf=tok; b=2".parse().unwrap());
        assert_eq!(cookie(&h, CSRF_COOKIE).as_deref(), Some("tok"));
        assert!(same_origin(&h, "https://mcp.example.com"));
        h.insert(header::ORIGIN, "https://evil.example".parse().unwrap());
        assert!(!same_origin(&h, "https://mcp.example.com"));
        h.insert(header::ORIGIN, "https://mcp.example.com".parse().unwrap());
        h.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(!same_origin(&h, "https://mcp.example.com"));
    }
}
