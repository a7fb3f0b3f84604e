//! Which handler fn runs each function: the same fns the Lambda binaries
//! wire in their `main.rs`.

use api::handlers;
use api::App;
use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use axum::body::Body as AxumBody;
use crate::metering::Meter;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Instant;
use store::deployment::FunctionId;

/// Runs an HTTP function and turns its response into one the server can send,
/// streaming the body as the handler produces it (metered until the handler
/// returns: a streamed body's time is not counted).
pub async fn http(app: &App, meter: &Meter, function: FunctionId, req: lambda_http::Request) -> http::Response<AxumBody> {
    let started = Instant::now();
    let response = http_handler(app, function, req).await;
    meter.invoked(function, started.elapsed());
    response
}

async fn http_handler(app: &App, function: FunctionId, req: lambda_http::Request) -> http::Response<AxumBody> {
    match function {
        FunctionId::Health => boxed(handlers::health::handle(app, req).await),
        FunctionId::Chat => boxed(handlers::chat::handle(app, req).await),
        FunctionId::Confirm => boxed(handlers::confirm::handle(app, req).await),
        FunctionId::Cancel => boxed(handlers::cancel::handle(app, req).await),
        FunctionId::Threads => boxed(handlers::threads::handle(app, req).await),
        FunctionId::Mcp => boxed(handlers::mcp::handle(app, req).await),
        FunctionId::Events => boxed(handlers::events::handle(app, req).await),
        FunctionId::Webhook => boxed(handlers::webhook::handle(app, req).await),
        FunctionId::Web => boxed(handlers::web::handle(app, req).await),
        FunctionId::Credentials => boxed(handlers::credentials::handle(app, req).await),
        FunctionId::OAuth => boxed(handlers::oauth::handle(app, req).await),
        other => {
            tracing::error!(function = ?other, "function has an HTTP route but no HTTP handler");
            boxed(api::ApiError::Internal(format!("{other:?} is not an HTTP function")).into_response())
        }
    }
}

fn boxed<B>(resp: http::Response<B>) -> http::Response<AxumBody>
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    resp.map(AxumBody::new)
}

pub async fn websocket(app: &App, meter: &Meter, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    let started = Instant::now();
    let response = handlers::gateway::handle(app, event).await;
    meter.invoked(FunctionId::Gateway, started.elapsed());
    response
}

pub type SqsHandler = Arc<dyn Fn(SqsEvent) -> BoxFuture<'static, SqsBatchResponse> + Send + Sync>;

/// The consumer of a queue.
pub fn sqs_handler(app: Arc<App>, meter: Arc<Meter>, function: FunctionId) -> SqsHandler {
    Arc::new(move |event| {
        let (app, meter) = (app.clone(), meter.clone());
        Box::pin(async move {
            let started = Instant::now();
            let response = match function {
                FunctionId::Step => handlers::step::handle(&app, event).await,
                FunctionId::Executor => handlers::executor::handle(&app, event).await,
                other => {
                    tracing::error!(function = ?other, "function consumes a queue but has no SQS handler");
                    api::lambda::fail_all(event)
                }
            };
            meter.invoked(function, started.elapsed());
            response
        })
    })
}

pub async fn scheduled(app: &App, meter: &Meter, function: FunctionId) {
    let started = Instant::now();
    let result = match function {
        FunctionId::Sweep => handlers::sweep::handle(app).await,
        other => Err(api::ApiError::Internal(format!("{other:?} has a schedule but no scheduled handler"))),
    };
    meter.invoked(function, started.elapsed());
    if let Err(e) = result {
        tracing::error!(function = ?function, error = %e, "scheduled run failed");
    }
}
