//! Waiting for an execution's answer: the executor stores it the moment it
//! has one (a Respond to Webhook node, or the end of a `lastNode` run);
//! this side polls one consistent Query (meta + answer) with a short,
//! growing pause. Past the configured wait — below API Gateway's 30 s —
//! the caller gets `202` with the execution id, and the run goes on.

use crate::error::Result;
use crate::request::HttpReply;
use crate::Triggers;
use engine::webhook::{self, HttpResponse};
use executions::{ExecutionId, ExecutionStatus};
use serde_json::json;
use std::time::{Duration, Instant};

/// A fresh token naming one waiting caller.
pub(crate) fn token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl Triggers {
    pub(crate) async fn await_answer(&self, id: &ExecutionId, token: &str) -> Result<HttpReply> {
        let executions = &self.executor.data().executions;
        let deadline = Instant::now() + self.settings.response_wait;
        let mut pause = Duration::from_millis(15);
        let mut last = ExecutionStatus::New;
        loop {
            if let Some(p) = executions.poll_response(id.as_str(), token).await? {
                if let Some(v) = p.response {
                    let resp: HttpResponse = serde_json::from_value(v).unwrap_or_else(|_| webhook::error_response());
                    return Ok(resp.into());
                }
                last = p.status;
                // The answer is stored before the final status: none is coming.
                if p.status.is_finished() {
                    return Ok(match p.status {
                        ExecutionStatus::Success => HttpResponse::json(200, json!({"message": "Workflow executed successfully"})),
                        ExecutionStatus::Canceled => HttpResponse::json(500, json!({"message": "The execution was canceled"})),
                        _ => webhook::error_response(),
                    }
                    .into());
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(still_running(id, last));
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 3 / 2).min(Duration::from_millis(200));
        }
    }
}

/// `202`: the answer did not come in time; the execution goes on.
pub(crate) fn still_running(id: &ExecutionId, status: ExecutionStatus) -> HttpReply {
    HttpReply::json(
        202,
        &json!({
            "message": "Workflow was started; it is still running and its result will be in the execution",
            "executionId": id,
            "status": if status == ExecutionStatus::Waiting { "waiting" } else { "running" },
        }),
    )
}
