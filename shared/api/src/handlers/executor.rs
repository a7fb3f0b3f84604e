//! The executor SQS consumer.

use crate::App;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};

/// Not built yet: every record is reported failed, so SQS keeps it and,
/// after the queue's maxReceiveCount, parks it in the dead-letter queue.
/// Nothing is lost.
pub async fn handle(_app: &App, batch: SqsEvent) -> SqsBatchResponse {
    tracing::error!(records = batch.records.len(), "executor is not supported yet");
    crate::lambda::fail_all(batch)
}
