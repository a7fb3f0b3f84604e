//! `/stream/webhook[-test]/{path}` on the events function's streaming
//! Function URL: the streaming twin of a webhook URL (HTTP APIs cannot
//! stream a Lambda response). A Chat Trigger (or a Webhook node) whose
//! response mode is `streaming` answers here line by line as its run writes
//! them; the work is `triggers::Triggers::handle_stream`. Public like the
//! webhook URLs: the node's own settings decide who may call.

use crate::sse::SseBody;
use crate::App;
use bytes::Bytes;
use lambda_http::{Request, Response};
use triggers::{StreamBody, StreamReply};

pub async fn handle(app: &App, req: Request) -> Response<SseBody> {
    let triggers = match super::webhook::service(app).await {
        Ok(t) => t,
        Err(e) => return full(super::webhook::error_response(e)),
    };
    match Box::pin(triggers.handle_stream(super::webhook::http_request(&req))).await {
        Ok(reply) => response(reply),
        Err(e) => full(super::webhook::error_response(e)),
    }
}

fn response(reply: StreamReply) -> Response<SseBody> {
    let mut builder = Response::builder().status(reply.status);
    for (n, v) in &reply.headers {
        builder = builder.header(n.as_str(), v.as_str());
    }
    let body = match reply.body {
        StreamBody::Full(b) => SseBody::full(b),
        StreamBody::Lines(mut rx) => {
            let (tx, body) = SseBody::channel();
            tokio::spawn(async move {
                while let Some(b) = rx.recv().await {
                    if tx.send(b).await.is_err() {
                        // the client left: dropping `rx` stops the reader
                        return;
                    }
                }
            });
            body
        }
    };
    builder.body(body).unwrap_or_else(|_| full(crate::ApiError::Internal("invalid streaming response headers".into()).into_response()))
}

fn full(resp: Response<lambda_http::Body>) -> Response<SseBody> {
    let (parts, body) = resp.into_parts();
    let bytes = match body {
        lambda_http::Body::Text(t) => Bytes::from(t),
        lambda_http::Body::Binary(b) => Bytes::from(b),
        _ => Bytes::new(),
    };
    Response::from_parts(parts, SseBody::full(bytes))
}
