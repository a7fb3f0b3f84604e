//! Where a person types a secret: the REST API the page's credential cards
//! (and curl) use. The agent and the model never see what goes through it.
//!
//! - `GET    /instance-ai/credentials[?type=&name=&limit=&offset=]` → `{data, total, hasMore}`
//! - `POST   /instance-ai/credentials` `{name, type, data, description?, projectId?}` → 201 the credential
//! - `GET    /instance-ai/credentials/{credentialId}` → the credential, `scopes`, `nodesWithAccess`
//! - `PATCH  /instance-ai/credentials/{credentialId}` `{name?, description?, data?}` → the credential
//!   (`data` replaces the secret whole; it is never read back)
//! - `DELETE /instance-ai/credentials/{credentialId}` → `{success: true}`
//! - `POST   /instance-ai/credentials/{credentialId}/test` → `{success, message}`
//! - `GET    /instance-ai/credential-types[?query=]` → `{types: [{type, displayName, fields, connect, …}]}`
//! - `GET    /instance-ai/credentials/{credentialId}/oauth2/auth` → `302` to the provider's
//!   authorization page (`Accept: application/json`: `{authorizationUrl, expiresIn}`)
//! - `GET    /instance-ai/oauth2/callback?code=&state=` (no API key: the provider sends the
//!   browser here; the single-use `state` decides) → an HTML page saying the credential is connected
//!
//! Every answer is metadata: no response carries secret data or a token.
//! Owners only: another user's credential is 404.

use crate::http_util::{body_bytes, json, json_body, query_param, route_param};
use crate::{ApiError, App};
use instance::credentials::{search_types, CredentialPatch, NewCredentialInput};
use instance::Caller;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::json;
use store::data::credentials::CredentialQuery;

/// A request body larger than this is refused before it is parsed.
const MAX_BODY: usize = 64 * 1024;

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match route(app, &req).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

enum Target {
    Collection,
    One(String),
    Test(String),
    Types,
    Connect(String),
    Callback,
}

/// Where providers send the browser back (the redirect URI to register with them).
pub const CALLBACK_PATH: &str = "/instance-ai/oauth2/callback";

fn target(req: &Request) -> Result<Target, ApiError> {
    let path = req.raw_http_path();
    let path = path.trim_end_matches('/');
    if path == "/instance-ai/credential-types" {
        return Ok(Target::Types);
    }
    if path == "/instance-ai/credentials" {
        return Ok(Target::Collection);
    }
    if path == CALLBACK_PATH {
        return Ok(Target::Callback);
    }
    let id = |pattern| route_param(req, pattern, "credentialId").filter(|id| protocol::ids::is_valid_path_id(id));
    if path.ends_with("/test") {
        if let Some(id) = id("/instance-ai/credentials/{credentialId}/test") {
            return Ok(Target::Test(id));
        }
    } else if path.ends_with("/oauth2/auth") {
        if let Some(id) = id("/instance-ai/credentials/{credentialId}/oauth2/auth") {
            return Ok(Target::Connect(id));
        }
    } else if let Some(id) = id("/instance-ai/credentials/{credentialId}") {
        return Ok(Target::One(id));
    }
    Err(ApiError::NotFound("no such route".into()))
}

async fn route(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let target = target(req)?;
    if let Target::Callback = target {
        return callback(app, req).await;
    }
    let user = crate::auth::authenticate(app, req.headers()).await?;
    if body_bytes(req).len() > MAX_BODY {
        return Err(ApiError::PayloadTooLarge(format!("the request body is over {MAX_BODY} bytes")));
    }
    let caller = Caller::new(user);
    let inst = app.instance().await?;
    let method = req.method().clone();
    let wrong = |allowed: &str| Err(ApiError::MethodNotAllowed(format!("use {allowed}")));
    match (target, method) {
        (Target::Types, http::Method::GET) => {
            let types = search_types(&query_param(req, "query").unwrap_or_default());
            Ok(json(200, &json!({"types": types})))
        }
        (Target::Types, _) => wrong("GET"),
        (Target::Collection, http::Method::GET) => {
            let number = |name: &str| -> Result<Option<usize>, ApiError> {
                query_param(req, name)
                    .map(|v| v.parse::<usize>().map_err(|_| ApiError::BadRequest(format!("{name} must be a non-negative integer"))))
                    .transpose()
            };
            let limit = number("limit")?;
            if limit.is_some_and(|l| !(1..=200).contains(&l)) {
                return Err(ApiError::BadRequest("limit must be 1..=200".into()));
            }
            let q = CredentialQuery {
                name: query_param(req, "name"),
                kind: query_param(req, "type"),
                limit,
                offset: number("offset")?.unwrap_or(0),
                ..CredentialQuery::default()
            };
            Ok(json(200, &inst.list_credentials(&caller, &q).await?))
        }
        (Target::Collection, http::Method::POST) => {
            let input: NewCredentialInput = json_body(req)?;
            Ok(json(201, &inst.create_credential(&caller, input).await?))
        }
        (Target::Collection, _) => wrong("GET or POST"),
        (Target::One(id), http::Method::GET) => Ok(json(200, &inst.get_credential(&caller, &id).await?)),
        (Target::One(id), http::Method::PATCH) => {
            let patch: CredentialPatch = json_body(req)?;
            Ok(json(200, &inst.update_credential(&caller, &id, patch).await?))
        }
        (Target::One(id), http::Method::DELETE) => {
            inst.delete_credential(&caller, &id).await?;
            Ok(json(200, &json!({"success": true})))
        }
        (Target::One(_), _) => wrong("GET, PATCH or DELETE"),
        (Target::Test(id), http::Method::POST) => Ok(json(200, &inst.test_credential(&caller, &id).await?)),
        (Target::Test(_), _) => wrong("POST"),
        (Target::Connect(id), http::Method::GET) => {
            let base = app.config.public_url.clone().unwrap_or_else(|| mcp_server::transport::request_origin(req.headers()));
            let start = inst.start_oauth_connect(&caller, &id, &format!("{}{CALLBACK_PATH}", base.trim_end_matches('/'))).await?;
            let wants_json = req.headers().get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("application/json"));
            if wants_json {
                return Ok(json(200, &start));
            }
            Ok(Response::builder()
                .status(302)
                .header(http::header::LOCATION, start.authorization_url)
                .header(http::header::CACHE_CONTROL, "no-store")
                .body(Body::Empty)
                .map_err(|e| ApiError::Internal(e.to_string()))?)
        }
        (Target::Connect(_), _) => wrong("GET"),
        // answered before authentication; here for completeness
        (Target::Callback, _) => callback(app, req).await,
    }
}

/// The provider's redirect: the single-use `state` (not an API key) says
/// whose connect it finishes. A plain page for the person's browser.
async fn callback(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    if req.method() != http::Method::GET {
        return Err(ApiError::MethodNotAllowed("use GET".into()));
    }
    let q = instance::credential_connect::CallbackQuery {
        state: query_param(req, "state"),
        code: query_param(req, "code"),
        error: query_param(req, "error"),
        error_description: query_param(req, "error_description"),
    };
    let inst = app.instance().await?;
    let credential = inst.finish_oauth_connect(&q).await?;
    let name = crate::http_util::html_escape(&credential.name);
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Connected</title></head><body><h1>Connected</h1><p>The credential <strong>{name}</strong> is connected. You can close this window.</p></body></html>"
    );
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(http::header::CACHE_CONTROL, "no-store")
        .header("content-security-policy", "default-src 'none'; frame-ancestors 'none'")
        .header("referrer-policy", "no-referrer")
        .body(Body::from(page))
        .map_err(|e| ApiError::Internal(e.to_string()))
}
