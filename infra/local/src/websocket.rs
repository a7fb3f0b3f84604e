//! The WebSocket API and its `@connections` management endpoint.
//!
//! `ws://…/ws?token=…` runs `$connect` through the gateway function before
//! the upgrade is accepted (a non-200 answer refuses the connection, as API
//! Gateway does); each frame is routed by its `action` (else `$default`);
//! closing runs `$disconnect`. `POST/GET/DELETE /@connections/{id}` is the
//! Management API the AWS SDK talks to; an unknown or closed connection
//! answers `410 Gone`.

use crate::routing::url_pairs;
use api::App;
use axum::body::Body as AxumBody;
use axum::extract::ws::{rejection::WebSocketUpgradeRejection, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, Path, Request};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use store::deployment::WS_ROUTES;
use tokio::sync::mpsc;

/// What every local edge handler holds: the App, and the WebSocket
/// connections that `$default` routing and `@connections` need.
#[derive(Clone)]
pub struct State {
    pub app: Arc<App>,
    pub connections: Registry,
    pub meter: Arc<crate::metering::Meter>,
}

/// API Gateway's limit on one WebSocket message.
pub const MAX_FRAME_BYTES: usize = 128 * 1024;

enum Outbound {
    Frame(Message),
    Close,
}

struct Connection {
    tx: mpsc::UnboundedSender<Outbound>,
    connected_at: time::OffsetDateTime,
    last_active: time::OffsetDateTime,
    source_ip: String,
    user_agent: String,
}

/// Open connections by id.
#[derive(Clone, Default)]
pub struct Registry(Arc<Mutex<HashMap<String, Connection>>>);

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Connection>> {
        // A panic while holding the lock leaves the map usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn new_connection_id() -> String {
    // API Gateway ids look like `L0SM9cOFvHcCIhw=`: URL-safe enough once encoded.
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{}=", &id[..15])
}

fn iso(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// `GET /ws`: `$connect`, then the upgrade.
pub async fn upgrade(
    axum::extract::State(state): axum::extract::State<State>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
    req: Request,
) -> Response {
    let ws = match ws {
        Ok(ws) => ws,
        Err(e) => {
            return api::ApiError::BadRequest(format!("expected a WebSocket upgrade: {e}")).into_response().map(AxumBody::new)
        }
    };
    let id = new_connection_id();
    let user_agent =
        req.headers().get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let mut headers = serde_json::Map::new();
    for (k, v) in req.headers() {
        headers.insert(k.as_str().to_owned(), Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()));
    }
    let query: serde_json::Map<String, Value> =
        url_pairs(req.uri().query().unwrap_or_default()).into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    let mut event = base_event(&state, &id, "$connect", "CONNECT", peer);
    event["headers"] = Value::Object(headers);
    if !query.is_empty() {
        event["queryStringParameters"] = Value::Object(query);
    }
    let answer = invoke(&state, event).await;
    if answer.status_code != 200 {
        let body = match answer.body {
            Some(aws_lambda_events::encodings::Body::Text(t)) => AxumBody::from(t),
            _ => AxumBody::empty(),
        };
        let status = http::StatusCode::from_u16(answer.status_code as u16).unwrap_or(http::StatusCode::FORBIDDEN);
        return (status, [(http::header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let now = time::OffsetDateTime::now_utc();
    state.connections.lock().insert(
        id.clone(),
        Connection { tx, connected_at: now, last_active: now, source_ip: peer.ip().to_string(), user_agent },
    );
    let failed_state = state.clone();
    let failed_id = id.clone();
    ws.max_message_size(MAX_FRAME_BYTES)
        .on_failed_upgrade(move |_| {
            // The client left before the upgrade finished.
            tokio::spawn(async move { disconnect(&failed_state, &failed_id, peer, 1006).await });
        })
        .on_upgrade(move |socket| serve_connection(state, id, socket, rx, peer))
}

async fn serve_connection(
    state: State,
    id: String,
    socket: WebSocket,
    mut rx: mpsc::UnboundedReceiver<Outbound>,
    peer: SocketAddr,
) {
    let (mut sink, mut stream) = socket.split();
    let writer = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outbound::Frame(m) => {
                    if sink.send(m).await.is_err() {
                        break;
                    }
                }
                Outbound::Close => {
                    let _ = sink.send(Message::Close(None)).await;
                    break;
                }
            }
        }
    });
    let mut code = 1000;
    while let Some(msg) = stream.next().await {
        let body = match msg {
            Ok(Message::Text(t)) => t.to_string(),
            Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
            Ok(Message::Close(frame)) => {
                code = frame.map(|f| f.code).unwrap_or(1005);
                break;
            }
            Ok(_) => continue,
            Err(_) => {
                code = 1006;
                break;
            }
        };
        if let Some(c) = state.connections.lock().get_mut(&id) {
            c.last_active = time::OffsetDateTime::now_utc();
        }
        state.meter.websocket_in(body.len());
        let route = route_key(&body);
        let mut event = base_event(&state, &id, &route, "MESSAGE", peer);
        event["body"] = Value::String(body);
        // Frames of one connection are handled in order, as one Lambda
        // invocation at a time would see them.
        invoke(&state, event).await;
    }
    disconnect(&state, &id, peer, code).await;
    writer.abort();
}

/// API Gateway's route selection on `$request.body.action`.
fn route_key(body: &str) -> String {
    let action = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("action").and_then(Value::as_str).map(str::to_owned));
    match action {
        Some(a) if !a.starts_with('$') && WS_ROUTES.contains(&a.as_str()) => a,
        _ => "$default".to_owned(),
    }
}

/// Runs `$disconnect` once, whoever ends the connection first.
async fn disconnect(state: &State, id: &str, peer: SocketAddr, code: u16) {
    if state.connections.lock().remove(id).is_none() {
        return;
    }
    let mut event = base_event(state, id, "$disconnect", "DISCONNECT", peer);
    event["disconnectStatusCode"] = json!(code);
    event["disconnectReason"] = json!("");
    invoke(state, event).await;
}

fn base_event(state: &State, id: &str, route: &str, kind: &str, peer: SocketAddr) -> Value {
    let now = time::OffsetDateTime::now_utc();
    let connected_at = state
        .connections
        .lock()
        .get(id)
        .map(|c| c.connected_at.unix_timestamp() * 1000)
        .unwrap_or(now.unix_timestamp() * 1000);
    json!({
        "requestContext": {
            "routeKey": route,
            "eventType": kind,
            "messageDirection": "IN",
            "messageId": uuid::Uuid::new_v4().simple().to_string(),
            "connectionId": id,
            "connectedAt": connected_at,
            "domainName": state.app.config.ws_management_url.clone().unwrap_or_default(),
            "stage": "local",
            "apiId": "local",
            "requestId": uuid::Uuid::new_v4().to_string(),
            "extendedRequestId": uuid::Uuid::new_v4().to_string(),
            "requestTimeEpoch": now.unix_timestamp() * 1000,
            "identity": {"sourceIp": peer.ip().to_string()},
        },
        "isBase64Encoded": false,
    })
}

async fn invoke(state: &State, event: Value) -> aws_lambda_events::apigw::ApiGatewayProxyResponse {
    match serde_json::from_value(event) {
        Ok(event) => crate::dispatch::websocket(&state.app, &state.meter, event).await,
        Err(e) => {
            tracing::error!(error = %e, "local WebSocket event did not parse");
            let mut resp = aws_lambda_events::apigw::ApiGatewayProxyResponse::default();
            resp.status_code = 500;
            resp
        }
    }
}

/// `/@connections/{id}`: POST a frame, GET the connection, DELETE it.
pub async fn management(
    axum::extract::State(state): axum::extract::State<State>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    req: Request,
) -> Response {
    let method = req.method().clone();
    let body = match axum::body::to_bytes(req.into_body(), MAX_FRAME_BYTES + 1).await {
        Ok(b) if b.len() <= MAX_FRAME_BYTES => b,
        _ => return aws_error(413, "PayloadTooLargeException", "frame exceeds 128 KB"),
    };
    match method {
        http::Method::POST => {
            let bytes = body.len();
            let frame = match String::from_utf8(body.to_vec()) {
                Ok(text) => Message::Text(text.into()),
                Err(_) => Message::Binary(body),
            };
            let sent = state.connections.lock().get(&id).map(|c| c.tx.send(Outbound::Frame(frame)).is_ok());
            match sent {
                Some(true) => {
                    state.meter.websocket_out(bytes);
                    http::StatusCode::OK.into_response()
                }
                _ => gone(),
            }
        }
        http::Method::GET => {
            let info = state.connections.lock().get(&id).map(|c| {
                json!({
                    "connectedAt": iso(c.connected_at),
                    "lastActiveAt": iso(c.last_active),
                    "identity": {"sourceIp": c.source_ip, "userAgent": c.user_agent},
                })
            });
            match info {
                Some(info) => (http::StatusCode::OK, axum::Json(info)).into_response(),
                None => gone(),
            }
        }
        http::Method::DELETE => {
            let closed = state.connections.lock().get(&id).map(|c| c.tx.send(Outbound::Close).is_ok());
            match closed {
                Some(_) => {
                    disconnect(&state, &id, peer, 1000).await;
                    http::StatusCode::NO_CONTENT.into_response()
                }
                None => gone(),
            }
        }
        _ => aws_error(405, "MethodNotAllowedException", "use POST, GET or DELETE"),
    }
}

fn gone() -> Response {
    aws_error(410, "GoneException", "connection is gone")
}

/// An error the AWS SDK decodes (restJson1: the type travels in a header).
fn aws_error(status: u16, kind: &str, message: &str) -> Response {
    let status = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, axum::Json(json!({"message": message}))).into_response();
    if let Ok(v) = http::HeaderValue::from_str(kind) {
        resp.headers_mut().insert("x-amzn-errortype", v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_action_else_default() {
        assert_eq!(route_key(r#"{"action":"subscribe","threadId":"t"}"#), "subscribe");
        assert_eq!(route_key(r#"{"action":"$connect"}"#), "$default");
        assert_eq!(route_key(r#"{"action":"dance"}"#), "$default");
        assert_eq!(route_key("not json"), "$default");
    }
}
