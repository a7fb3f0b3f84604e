//! Adapters from the Lambda runtime to our plain handler fns, so each
//! function's `main.rs` stays a few lines.

use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_http::{Body, Request, Response};
use lambda_runtime::{service_fn, LambdaEvent};
use std::convert::Infallible;
use std::future::Future;

pub use lambda_runtime::Error;

/// Serves a buffered HTTP handler (API Gateway HTTP API).
pub async fn serve_http<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Response<Body>> + Send,
{
    lambda_http::run(service_fn(move |req| {
        let fut = handler(req);
        async move { Ok::<_, Infallible>(fut.await) }
    }))
    .await
}

/// Serves a streaming HTTP handler (Function URL with `RESPONSE_STREAM`).
pub async fn serve_streaming<F, Fut, B>(handler: F) -> Result<(), Error>
where
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Response<B>> + Send,
    B: http_body::Body + Unpin + Send + 'static,
    B::Data: Into<bytes::Bytes> + Send,
    B::Error: Into<Error> + Send + std::fmt::Debug,
{
    lambda_http::run_with_streaming_response(service_fn(move |req| {
        // Boxed: the SSE handler's future is deep enough to overflow the
        // compiler's layout query depth when nested in the runtime's.
        let fut = Box::pin(handler(req));
        async move { Ok::<_, Infallible>(fut.await) }
    }))
    .await
}

/// Serves a WebSocket API route handler.
pub async fn serve_websocket<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(ApiGatewayWebsocketProxyRequest) -> Fut,
    Fut: Future<Output = ApiGatewayProxyResponse> + Send,
{
    lambda_runtime::run(service_fn(move |event: LambdaEvent<ApiGatewayWebsocketProxyRequest>| {
        let fut = handler(event.payload);
        async move { Ok::<_, Infallible>(fut.await) }
    }))
    .await
}

/// Serves an SQS batch handler (`ReportBatchItemFailures`).
pub async fn serve_sqs<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn(SqsEvent) -> Fut,
    Fut: Future<Output = SqsBatchResponse> + Send,
{
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let fut = handler(event.payload);
        async move { Ok::<_, Infallible>(fut.await) }
    }))
    .await
}

/// Serves a scheduled (EventBridge) handler.
pub async fn serve_scheduled<F, Fut>(handler: F) -> Result<(), Error>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), crate::ApiError>> + Send,
{
    lambda_runtime::run(service_fn(move |_event: LambdaEvent<serde_json::Value>| {
        let fut = handler();
        async move { fut.await.map_err(|e| Error::from(e.to_string())) }
    }))
    .await
}

/// A batch response that reports every record of `event` failed: SQS keeps
/// them and redelivers after the visibility timeout (then the DLQ).
pub fn fail_all(event: SqsEvent) -> SqsBatchResponse {
    failures(event.records.into_iter().filter_map(|r| r.message_id))
}

/// A batch response listing these message ids as failed.
pub fn failures(ids: impl IntoIterator<Item = String>) -> SqsBatchResponse {
    let mut resp = SqsBatchResponse::default();
    resp.batch_item_failures = ids
        .into_iter()
        .map(|id| {
            let mut f = aws_lambda_events::sqs::BatchItemFailure::default();
            f.item_identifier = id;
            f
        })
        .collect();
    resp
}
