//! The user's saved preferences (the page's card; `save_user_preference`
//! writes them), served by the threads function:
//!
//! - `GET /instance-ai/preferences` → `{preferences: [{id, content, scope, createdAt}]}`, oldest first;
//! - `PATCH /instance-ai/preferences/{preferenceId}` `{content}` → `{preference}`;
//!   too long → 400, the same text as another preference → 409;
//! - `DELETE /instance-ai/preferences/{preferenceId}` → `{deleted: true}`.
//!
//! Only the owner's own partition is read or written: another user's id is 404.

use crate::http_util::{json, json_body, route_param};
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::json as j;
use store::data::agent_records::{AgentRecords, PreferenceRejection, SavePreference};
use store::deployment::TableId;

pub const PATH: &str = "/instance-ai/preferences";
const ITEM: &str = "/instance-ai/preferences/{preferenceId}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    content: String,
}

fn records(app: &App) -> Result<AgentRecords, ApiError> {
    let table = app.config.table(TableId::Agent).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(AgentRecords::new(store::data::db::Table::new(app.clients.dynamo.clone(), table)))
}

pub async fn route(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let records = records(app)?;
    let path = req.uri().path().trim_end_matches('/');
    if path == PATH {
        if req.method() != http::Method::GET {
            return Err(ApiError::MethodNotAllowed("use GET".into()));
        }
        return Ok(json(200, &j!({"preferences": records.preferences(&user).await?})));
    }
    let id = route_param(req, ITEM, "preferenceId").filter(|i| i.len() <= 100).ok_or_else(|| ApiError::NotFound("no such preference".into()))?;
    match *req.method() {
        http::Method::PATCH => {
            let edit: Edit = json_body(req)?;
            match records.update_preference(&user, &id, &edit.content).await? {
                SavePreference::Saved { preference, .. } => Ok(json(200, &j!({"preference": preference}))),
                SavePreference::Rejected { reason: PreferenceRejection::Duplicate, message, .. } => Err(ApiError::Conflict(message)),
                SavePreference::Rejected { message, .. } => Err(ApiError::BadRequest(message)),
            }
        }
        http::Method::DELETE => {
            records.delete_preference(&user, &id).await?;
            Ok(json(200, &j!({"deleted": true})))
        }
        _ => Err(ApiError::MethodNotAllowed("use PATCH or DELETE".into())),
    }
}
