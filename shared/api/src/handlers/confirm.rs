//! POST /instance-ai/confirm/:requestId `{approved, userInput?, answers?, scope?}`:
//! the first decision wins (a second gets 409); only the thread's owner may decide.

use crate::http_util::{json, json_body, path_param};
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match confirm(app, &req).await {
        Ok(()) => json(200, &serde_json::json!({ "ok": true })),
        Err(e) => e.into_response(),
    }
}

async fn confirm(app: &App, req: &Request) -> Result<(), ApiError> {
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let request_id = match path_param(req, "requestId") {
        Some(r) if protocol::ids::is_valid_path_id(&r) => r,
        _ => return Err(ApiError::NotFound("confirmation request not found".into())),
    };
    let body: agent::run::ConfirmRequest = json_body(req)?;
    let rt = app.agent().await?;
    Ok(agent::run::confirm(&rt, &request_id, &user, &body).await?)
}
