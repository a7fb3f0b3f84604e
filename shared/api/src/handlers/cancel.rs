//! POST /instance-ai/chat/:threadId/cancel: idempotent Stop.

use crate::http_util::json;
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match cancel(app, &req).await {
        Ok(outcome) => json(200, &outcome),
        Err(e) => e.into_response(),
    }
}

async fn cancel(app: &App, req: &Request) -> Result<agent::run::CancelOutcome, ApiError> {
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let thread = super::chat::thread_param(req)?;
    let rt = app.agent().await?;
    Ok(agent::run::cancel(&rt, &thread, &user).await?)
}
