//! The step SQS consumer: one agent step per message.

use crate::App;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};

/// Runs each record's step. A record is reported failed (and redelivered)
/// only when its step could not even be claimed; after the claim, failures
/// end the run instead, since a redelivery would be dropped as a duplicate.
pub async fn handle(app: &App, batch: SqsEvent) -> SqsBatchResponse {
    let rt = match app.agent().await {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "agent runtime unavailable");
            return crate::lambda::fail_all(batch);
        }
    };
    let mut failed = Vec::new();
    for record in batch.records {
        let id = record.message_id.clone().unwrap_or_default();
        let msg = match record.body.as_deref().map(serde_json::from_str::<agent::StepMessage>) {
            Some(Ok(m)) => m,
            other => {
                // Kept for the dead-letter queue, where someone can look at it.
                tracing::error!(message_id = %id, error = ?other.map(|r| r.err().map(|e| e.to_string())), "malformed step message");
                failed.push(id);
                continue;
            }
        };
        // Boxed: a step's future is large (the tools, the domain layer, the
        // engine), too large for a worker thread's stack in a debug build.
        if let Err(e) = Box::pin(agent::step::run_step(&rt, msg)).await {
            tracing::error!(message_id = %id, error = %e, "step not claimed; will be redelivered");
            failed.push(id);
        }
    }
    crate::lambda::failures(failed)
}
