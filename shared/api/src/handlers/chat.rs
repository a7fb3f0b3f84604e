//! POST /instance-ai/chat/:threadId → `{"runId": "run_…"}`; 409 while a run is active.

use crate::http_util::{json, json_body, path_param};
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};
use protocol::ids::ThreadId;

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match chat(app, &req).await {
        Ok(run) => json(200, &serde_json::json!({ "runId": run })),
        Err(e) => e.into_response(),
    }
}

async fn chat(app: &App, req: &Request) -> Result<String, ApiError> {
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let thread = thread_param(req)?;
    let body: agent::run::ChatRequest = json_body(req)?;
    let rt = app.agent().await?;
    Ok(agent::run::start(&rt, &thread, &user, &body).await?.0)
}

/// The `{threadId}` path parameter, validated (ids go into DynamoDB keys).
pub(crate) fn thread_param(req: &Request) -> Result<ThreadId, ApiError> {
    match path_param(req, "threadId") {
        Some(t) if protocol::ids::is_valid_path_id(&t) => Ok(ThreadId(t)),
        _ => Err(ApiError::BadRequest("threadId must be 1-128 characters of [A-Za-z0-9_.:-]".into())),
    }
}
