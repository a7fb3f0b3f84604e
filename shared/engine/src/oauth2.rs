//! OAuth2 credentials at work (RFC 6749, RFC 7636, RFC 7523): a type's
//! OAuth2 settings, the authorization URL with PKCE a person connects
//! through, the code exchange, and requests with a connected credential's
//! access token — refreshed when it has expired or a request is answered
//! 401, at most once per request; a refused refresh token is reported as
//! "reconnect the credential", never a crash. Also the JWT bearer grant of a
//! service account (Google's: a JWT signed with its private key).
//!
//! Token data (what the host stores encrypted and hands back as the
//! credential's `oauthTokenData`): `access_token`, `token_type`,
//! `refresh_token`, `expires_at` (Unix seconds), `scope`.
//! Every token request goes through the HTTP Request node's client (SSRF
//! guard, origin overrides) and never follows a redirect.

use base64::Engine as _;
use serde_json::{json, Map, Value};
use sha2::Digest;

use crate::catalog::credential_types::{credential_type, CredentialType};
use crate::error::{EngineError, Result};
use crate::nodes::http::{self, Request, Response};
use crate::run::Env;

/// A token is refreshed this long before it expires (clock skew, the request's own time).
const EXPIRY_MARGIN_SECS: i64 = 60;
/// The lifetime of a service account's assertion (Google's maximum).
const ASSERTION_SECS: i64 = 3600;
/// A token request's own deadline (a connect's code exchange answers its
/// caller within `executions`' 25 s job wait).
const TOKEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// How a credential gets its tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// A person connects through the provider's authorization page (with PKCE).
    AuthorizationCode,
    /// The same, for a public client (no client secret).
    Pkce,
    /// The client id and secret are exchanged for a token, no person involved.
    ClientCredentials,
}

/// The OAuth2 settings of one credential: the type's fixed fields (a
/// service's URLs and scopes) over the person's.
#[derive(Debug, Clone)]
pub struct Settings {
    pub grant: Grant,
    pub auth_url: String,
    pub token_url: String,
    pub client_id: String,
    pub client_secret: String,
    pub scope: String,
    /// Extra query of the authorization URL (`access_type=offline&prompt=consent`).
    pub auth_query: String,
    /// The client authenticates in the token request's body, not with a Basic header.
    pub client_auth_in_body: bool,
}

/// A field of credential data: a `hidden` field is the type's own (a person
/// does not choose a service's token URL or scopes), any other the data's,
/// else its default.
pub fn field(t: &CredentialType, data: &Value, name: &str) -> String {
    let p = t.properties.iter().find(|p| p.name == name);
    let v = match p {
        Some(p) if p.prop_type == "hidden" => Some(&p.default),
        _ => data.get(name).filter(|v| !v.is_null()).or(p.map(|p| &p.default)),
    };
    v.map(crate::nodes::js_string).unwrap_or_default().trim().to_owned()
}

fn grant_of(value: &str) -> Option<Grant> {
    match value {
        "authorizationCode" => Some(Grant::AuthorizationCode),
        "pkce" => Some(Grant::Pkce),
        "clientCredentials" => Some(Grant::ClientCredentials),
        _ => None,
    }
}

impl Settings {
    /// The settings of `data` as a credential of `cred_type`; `None` when the
    /// type is no OAuth2 type (it has no `grantType` field).
    pub fn of(cred_type: &str, data: &Value) -> Option<Settings> {
        let t = credential_type(cred_type)?;
        t.properties.iter().find(|p| p.name == "grantType")?;
        let f = |name: &str| field(t, data, name);
        Some(Settings {
            grant: grant_of(&f("grantType")).unwrap_or(Grant::ClientCredentials),
            auth_url: f("authUrl"),
            token_url: f("accessTokenUrl"),
            client_id: f("clientId"),
            client_secret: f("clientSecret"),
            scope: f("scope"),
            auth_query: f("authQueryParameters"),
            client_auth_in_body: f("authentication") == "body",
        })
    }

    /// Whether a person connects the credential (authorization code, PKCE).
    pub fn connects(&self) -> bool {
        matches!(self.grant, Grant::AuthorizationCode | Grant::Pkce)
    }
}

/// Whether credentials of `cred_type` can be connected by a person: the type
/// fixes an authorization-code grant or offers one.
pub fn may_connect(cred_type: &str) -> bool {
    let Some(p) = credential_type(cred_type).and_then(|t| t.properties.iter().find(|p| p.name == "grantType")) else { return false };
    let connects = |v: &Value| v.as_str().and_then(grant_of).is_some_and(|g| g != Grant::ClientCredentials);
    connects(&p.default) || (p.prop_type != "hidden" && p.options.iter().flatten().any(|o| o.get("value").is_some_and(connects)))
}

/// A PKCE pair (RFC 7636 §4.1-4.2): a verifier of 64 unreserved characters
/// and its S256 challenge.
pub fn pkce_pair() -> (String, String) {
    use rand::RngCore;
    let mut bytes = [0u8; 48];
    rand::rng().fill_bytes(&mut bytes);
    let verifier = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The provider's authorization URL a person is sent to (RFC 6749 §4.1.1
/// with the PKCE challenge), the type's extra query appended.
pub fn authorization_url(s: &Settings, redirect_uri: &str, state: &str, code_challenge: &str) -> Result<String> {
    if !s.connects() {
        return Err(EngineError::node("This credential uses the client credentials grant: it needs no connecting"));
    }
    let mut url = url::Url::parse(&s.auth_url).map_err(|_| EngineError::node("The OAuth2 credential has no valid Authorization URL"))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(EngineError::node("The OAuth2 Authorization URL must be an http(s) URL"));
    }
    if s.client_id.is_empty() {
        return Err(EngineError::node("The OAuth2 credential needs a Client ID"));
    }
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code");
        q.append_pair("client_id", &s.client_id);
        q.append_pair("redirect_uri", redirect_uri);
        if !s.scope.is_empty() {
            q.append_pair("scope", &s.scope);
        }
        q.append_pair("state", state);
        q.append_pair("code_challenge", code_challenge);
        q.append_pair("code_challenge_method", "S256");
        for (k, v) in url::form_urlencoded::parse(s.auth_query.trim_start_matches('?').as_bytes()) {
            q.append_pair(&k, &v);
        }
    }
    Ok(url.into())
}

/// Why a token request did not give a token.
#[derive(Debug)]
pub enum TokenError {
    /// The token endpoint's RFC 6749 §5.2 refusal (`invalid_grant`, …).
    Refused { status: u16, code: String, description: Option<String> },
    /// Anything else (unreachable, not JSON, no access token).
    Failed(EngineError),
}

impl TokenError {
    fn into_engine(self, what: &str) -> EngineError {
        match self {
            TokenError::Refused { status, code, description } => EngineError::Node {
                message: format!("The token URL refused the {what} ({code}{})", description.map(|d| format!(": {d}")).unwrap_or_default()),
                description: None,
                http_code: Some(status.to_string()),
            },
            TokenError::Failed(e) => e,
        }
    }
}

/// POSTs a token request (form-encoded, client authentication as the
/// credential says) and reads the answer's JSON.
fn token_request(env: &Env, s: &Settings, grant: &[(&str, &str)]) -> std::result::Result<Value, TokenError> {
    let url = url::Url::parse(&s.token_url).map_err(|_| TokenError::Failed(EngineError::node("The OAuth2 credential has no valid Access Token URL")))?;
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in grant {
        form.append_pair(k, v);
    }
    let mut headers = vec![("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned()), ("accept".to_owned(), "application/json".to_owned())];
    if s.client_auth_in_body || s.client_secret.is_empty() {
        form.append_pair("client_id", &s.client_id);
        if !s.client_secret.is_empty() {
            form.append_pair("client_secret", &s.client_secret);
        }
    } else {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", s.client_id, s.client_secret));
        headers.push(("authorization".to_owned(), format!("Basic {basic}")));
    }
    let resp = send_form(env, url, headers, form.finish()).map_err(TokenError::Failed)?;
    read_token_answer(&resp)
}

fn send_form(env: &Env, url: url::Url, headers: Vec<(String, String)>, body: String) -> Result<Response> {
    http::send(
        env,
        &Request {
            method: reqwest::Method::POST,
            url,
            headers,
            body: Some(body.into_bytes()),
            timeout: env.settings.http_timeout.min(TOKEN_TIMEOUT),
            // a token endpoint answers directly; the secret is not sent on elsewhere
            redirects: http::Redirects::NONE,
            insecure: false,
            digest: None,
        },
    )
}

fn read_token_answer(resp: &Response) -> std::result::Result<Value, TokenError> {
    let body: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    if resp.status >= 400 {
        return match body.get("error").and_then(Value::as_str) {
            // RFC 6749 §5.2: the codes and descriptions are meant to be shown
            Some(code) => Err(TokenError::Refused {
                status: resp.status,
                code: code.to_owned(),
                description: body.get("error_description").and_then(Value::as_str).map(str::to_owned),
            }),
            None => Err(TokenError::Failed(EngineError::Node {
                message: format!("The token URL answered {}", resp.status),
                description: None,
                http_code: Some(resp.status.to_string()),
            })),
        };
    }
    if body.get("access_token").and_then(Value::as_str).is_none_or(str::is_empty) {
        return Err(TokenError::Failed(EngineError::node("The token URL answered without an access_token")));
    }
    Ok(body)
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Token data from a token answer; a refresh that names no new refresh
/// token keeps the previous one (RFC 6749 §6).
pub fn token_data(answer: &Value, previous: Option<&Value>, now: i64) -> Value {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut out = Map::new();
    out.insert("access_token".into(), json!(s(answer, "access_token").unwrap_or_default()));
    out.insert("token_type".into(), json!(s(answer, "token_type").unwrap_or_else(|| "Bearer".into())));
    if let Some(r) = s(answer, "refresh_token").or_else(|| previous.and_then(|p| s(p, "refresh_token"))) {
        out.insert("refresh_token".into(), json!(r));
    }
    let expires_in = answer.get("expires_in").and_then(|v| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok())));
    if let Some(secs) = expires_in {
        out.insert("expires_at".into(), json!(now + secs));
    }
    if let Some(scope) = s(answer, "scope").or_else(|| previous.and_then(|p| s(p, "scope"))) {
        out.insert("scope".into(), json!(scope));
    }
    Value::Object(out)
}

/// Whether token data's access token has expired (or is about to).
pub fn expired(tokens: &Value, now: i64) -> bool {
    tokens.get("expires_at").and_then(Value::as_i64).is_some_and(|at| at - EXPIRY_MARGIN_SECS <= now)
}

/// RFC 6749 §4.1.3 with the PKCE verifier: the code the provider sent to
/// the callback, exchanged for token data.
pub fn exchange_code(env: &Env, s: &Settings, code: &str, verifier: &str, redirect_uri: &str) -> Result<Value> {
    let grant = [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect_uri), ("code_verifier", verifier)];
    let answer = token_request(env, s, &grant).map_err(|e| e.into_engine("authorization code"))?;
    Ok(token_data(&answer, None, now()))
}

/// RFC 6749 §6: new token data for `tokens`' refresh token.
pub fn refresh(env: &Env, s: &Settings, tokens: &Value) -> std::result::Result<Value, TokenError> {
    let refresh_token = tokens.get("refresh_token").and_then(Value::as_str).unwrap_or_default();
    let answer = token_request(env, s, &[("grant_type", "refresh_token"), ("refresh_token", refresh_token)])?;
    Ok(token_data(&answer, Some(tokens), now()))
}

/// RFC 6749 §4.4: the client credentials exchanged for an access token.
pub(crate) fn client_credentials_token(env: &Env, data: &Value) -> Result<String> {
    let s = Settings::of("oAuth2Api", data).ok_or_else(|| EngineError::node("not an OAuth2 credential"))?;
    if s.connects() {
        return Err(EngineError::node_with(
            "This OAuth2 credential is not connected",
            "Its grant type is authorization code: connect it (the credential's Connect link) before running the workflow.",
        ));
    }
    if s.client_id.is_empty() || s.client_secret.is_empty() {
        return Err(EngineError::node("The OAuth2 credential needs a Client ID and a Client Secret"));
    }
    let mut grant = vec![("grant_type", "client_credentials")];
    if !s.scope.is_empty() {
        grant.push(("scope", s.scope.as_str()));
    }
    let answer = token_request(env, &s, &grant).map_err(|e| e.into_engine("client credentials"))?;
    Ok(answer["access_token"].as_str().unwrap_or_default().to_owned())
}

/// RFC 7523: a service account's access token for `scopes` — a JWT it signs
/// with its private key (RS256), exchanged at `token_url`. One exchange per
/// account and scopes per execution.
pub(crate) fn jwt_bearer_token(env: &Env, token_url: &str, data: &Value, scopes: &[String]) -> Result<String> {
    let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default().trim().to_owned();
    let email = s("email");
    if email.is_empty() {
        return Err(EngineError::node("The service account credential needs its Service Account Email"));
    }
    let scope = scopes.join(" ");
    let key = format!("jwt:{email}:{scope}");
    http::cached_token(env, &key, || {
        // a key pasted from the JSON file keeps its `\n` escapes
        let pem = s("privateKey").replace("\\n", "\n");
        let signing = jsonwebtoken::EncodingKey::from_rsa_pem(pem.as_bytes())
            .map_err(|_| EngineError::node_with("The service account's private key is not a valid PEM RSA key", "Paste the private_key of the JSON key file, BEGIN and END lines included."))?;
        let delegated = s("delegatedEmail");
        let subject = if delegated.is_empty() { email.clone() } else { delegated };
        let iat = now();
        let claims = json!({"iss": email, "sub": subject, "scope": scope, "aud": token_url, "iat": iat, "exp": iat + ASSERTION_SECS});
        let assertion = jsonwebtoken::encode(&jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256), &claims, &signing)
            .map_err(|e| EngineError::node(format!("Could not sign the service account's assertion: {e}")))?;
        let url = url::Url::parse(token_url).map_err(|_| EngineError::node("invalid token URL"))?;
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer");
        form.append_pair("assertion", &assertion);
        let headers = vec![("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned()), ("accept".to_owned(), "application/json".to_owned())];
        let resp = send_form(env, url, headers, form.finish())?;
        let answer = read_token_answer(&resp).map_err(|e| e.into_engine("service account's assertion"))?;
        Ok(answer["access_token"].as_str().unwrap_or_default().to_owned())
    })
}

/// A connected (authorization-code) credential in use by a node: its
/// reference, name and current token data.
pub(crate) struct Connection {
    cred_type: String,
    reference: Value,
    settings: Settings,
    tokens: Value,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("cred_type", &self.cred_type).finish_non_exhaustive()
    }
}

impl Connection {
    /// The connection of `data` (a credential of `cred_type` the node
    /// references as `reference`), when its grant is one a person connects.
    pub fn of(cred_type: &str, reference: &Value, data: &Value) -> Option<Connection> {
        let settings = Settings::of(cred_type, data).filter(Settings::connects)?;
        Some(Connection { cred_type: cred_type.to_owned(), reference: reference.clone(), settings, tokens: data.get("oauthTokenData").cloned().unwrap_or(Value::Null) })
    }

    fn name(&self) -> String {
        self.reference.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(&self.cred_type).to_owned()
    }

    fn access_token(&self) -> Option<&str> {
        self.tokens.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty())
    }

    fn reconnect(&self, why: &str) -> EngineError {
        let name = self.name();
        EngineError::node_with(format!("Reconnect the credential {name}"), format!("{why}. Reconnect the credential {name} (its Connect link), then run the workflow again."))
    }

    /// The access token to send, refreshed first when it has expired.
    /// Returns whether it was refreshed.
    fn prepare(&mut self, env: &Env) -> Result<bool> {
        if self.access_token().is_none() {
            let name = self.name();
            return Err(EngineError::node_with(
                format!("The credential {name} is not connected"),
                format!("It holds no access token yet. Connect the credential {name} (its Connect link), then run the workflow again."),
            ));
        }
        if expired(&self.tokens, now()) {
            self.refresh(env)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// New token data: another run's fresher token when the host has one,
    /// else a refresh at the token URL, stored through the host.
    fn refresh(&mut self, env: &Env) -> Result<()> {
        let provider = env.host.credentials.clone();
        let current = self.access_token().unwrap_or_default().to_owned();
        // another execution may have refreshed already (a rotating provider
        // would refuse the refresh token this one holds)
        if let Some(stored) = provider.as_ref().and_then(|p| p.get(&self.cred_type, &self.reference).ok()).and_then(|d| d.get("oauthTokenData").cloned()) {
            let fresher = stored.get("access_token").and_then(Value::as_str).is_some_and(|t| !t.is_empty() && t != current);
            if fresher && !expired(&stored, now()) {
                self.tokens = stored;
                return Ok(());
            }
        }
        if self.tokens.get("refresh_token").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(self.reconnect("Its access token expired and it holds no refresh token"));
        }
        let next = match refresh(env, &self.settings, &self.tokens) {
            Ok(t) => t,
            Err(TokenError::Refused { code, description, .. }) => {
                let detail = description.map(|d| format!(": {d}")).unwrap_or_default();
                return Err(self.reconnect(&format!("The provider refused its refresh token ({code}{detail}); it was revoked or has expired")));
            }
            Err(TokenError::Failed(e)) => return Err(e),
        };
        if let Some(p) = provider {
            // the refreshed token serves this request either way; a host that
            // cannot store it refreshes again next time
            let _ = p.save_oauth_tokens(&self.cred_type, &self.reference, &current, &next);
        }
        self.tokens = next;
        Ok(())
    }
}

/// Sends `req` with the connection's bearer token (when there is one): an
/// expired token is refreshed first, and a 401 answer refreshes it and
/// resends — one refresh per request at most.
pub(crate) fn send_authorized(env: &Env, conn: Option<&mut Connection>, req: &mut Request, send: &mut dyn FnMut(&Request) -> Result<Response>) -> Result<Response> {
    let Some(conn) = conn else { return send(req) };
    let mut refreshed = conn.prepare(env)?;
    loop {
        let token = conn.access_token().unwrap_or_default().to_owned();
        req.set_header("Authorization", &format!("Bearer {token}"));
        let resp = send(req)?;
        if resp.status != 401 || refreshed {
            return Ok(resp);
        }
        conn.refresh(env)?;
        refreshed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_data_keeps_the_refresh_token_and_computes_expiry() {
        let first = token_data(&json!({"access_token": "a1", "refresh_token": "r1", "expires_in": 3599, "token_type": "Bearer", "scope": "s"}), None, 1000);
        assert_eq!(first, json!({"access_token": "a1", "token_type": "Bearer", "refresh_token": "r1", "expires_at": 4599, "scope": "s"}));
        let next = token_data(&json!({"access_token": "a2", "expires_in": "60"}), Some(&first), 5000);
        assert_eq!(next["refresh_token"], "r1");
        assert_eq!(next["expires_at"], 5060);
        assert!(expired(&next, 5001) && !expired(&first, 1000) && !expired(&json!({"access_token": "x"}), 1 << 40));
    }

    #[test]
    fn pkce_challenge_is_the_verifiers_s256() {
        let (v, c) = pkce_pair();
        assert!((43..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(c, base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(v.as_bytes())));
        assert_ne!(pkce_pair().0, v);
    }
}
