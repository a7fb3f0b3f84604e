//! `GET /healthz`: unauthenticated; answers `{"status":"ok"}` only when
//! DynamoDB and SQS both answer.

use crate::http_util::json;
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};
use serde_json::json;
use store::deployment::{QueueId, TableId};

pub async fn handle(app: &App, _req: Request) -> Response<Body> {
    match check(app).await {
        Ok(()) => json(200, &json!({"status": "ok"})),
        Err(e) => e.into_response(),
    }
}

async fn check(app: &App) -> Result<(), ApiError> {
    let table = app.config.table(TableId::ApiKeys).map_err(|e| ApiError::Internal(e.to_string()))?;
    let queue = app.config.queue_url(QueueId::Steps).map_err(|e| ApiError::Internal(e.to_string()))?;
    let dynamo = app.clients.dynamo.describe_table().table_name(table).send();
    let sqs = app
        .clients
        .sqs
        .get_queue_attributes()
        .queue_url(queue)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send();
    let (d, s) = tokio::join!(dynamo, sqs);
    d.map_err(|e| {
        tracing::warn!(error = %store::StoreError::dynamo(e), "health: dynamodb");
        ApiError::Unavailable("DynamoDB is not answering".into())
    })?;
    s.map_err(|e| {
        tracing::warn!(error = %store::StoreError::sqs(e), "health: sqs");
        ApiError::Unavailable("SQS is not answering".into())
    })?;
    Ok(())
}
