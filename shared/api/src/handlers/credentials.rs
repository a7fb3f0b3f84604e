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
//! - `GET    /instance-ai/credential-types[?query=]` → `{types: [{type, displayName, fields, …}]}`
//!
//! Every answer is metadata: no response carries secret data. Owners only:
//! another user's credential is 404.

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
}

fn target(req: &Request) -> Result<Target, ApiError> {
    let path = req.raw_http_path();
    let path = path.trim_end_matches('/');
    if path == "/instance-ai/credential-types" {
        return Ok(Target::Types);
    }
    if path == "/instance-ai/credentials" {
        return Ok(Target::Collection);
    }
    let id = |pattern| route_param(req, pattern, "credentialId").filter(|id| protocol::ids::is_valid_path_id(id));
    if path.ends_with("/test") {
        if let Some(id) = id("/instance-ai/credentials/{credentialId}/test") {
            return Ok(Target::Test(id));
        }
    } else if let Some(id) = id("/instance-ai/credentials/{credentialId}") {
        return Ok(Target::One(id));
    }
    Err(ApiError::NotFound("no such route".into()))
}

async fn route(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let target = target(req)?;
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
    }
}
