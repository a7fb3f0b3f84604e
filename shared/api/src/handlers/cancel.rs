//! Stop, both kinds:
//!
//! - `POST /instance-ai/chat/:threadId/cancel`: the run (idempotent);
//! - `POST /instance-ai/chat/:threadId/tasks/:taskId/cancel`: one background
//!   task (idempotent; a task the thread does not have is 404).
//!
//! Both go to `agent::run`, where the task-control tool's `cancel-task`
//! converges with them.

use crate::http_util::{json, route_param};
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};

const TASK_ROUTE: &str = "/instance-ai/chat/{threadId}/tasks/{taskId}/cancel";

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match cancel(app, &req).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

async fn cancel(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let thread = super::chat::thread_param(req)?;
    let rt = app.agent().await?;
    match route_param(req, TASK_ROUTE, "taskId") {
        Some(task) if protocol::ids::is_valid_path_id(&task) => {
            Ok(json(200, &agent::run::cancel_task(&rt, &thread, &user, &task).await?))
        }
        Some(_) => Err(ApiError::NotFound("background task not found".into())),
        None => Ok(json(200, &agent::run::cancel(&rt, &thread, &user).await?)),
    }
}
