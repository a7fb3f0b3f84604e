//! The WebSocket API: `$connect` (authenticates `?token=`), `$disconnect`
//! (forgets the connection and its subscriptions), and the message routes
//! selected by the frame's `action`: `subscribe` and `unsubscribe`.
//!
//! Subscribe without gap or duplicate: the subscription is written as
//! `replaying` at the client's cursor; the handler replays `seq > cursor` in
//! order; when a read comes back short it flips the subscription to `live`
//! in one transaction with a check that `cursor + 1` does not exist yet
//! (`Connections::go_live`). If an event landed meanwhile the flip fails and
//! the handler replays again. Once live, every later event is posted by the
//! publisher that appended it, which posts only ids above the cursor the
//! subscription went live at. Each event reaches the connection once.

use crate::{ApiError, App};
use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use protocol::events::{ClientAction, WsFrame};
use protocol::ids::{ConnectionId, ThreadId};
use protocol::UserId;
use store::connections::{Connections, GoLive};
use store::deployment::TableId;
use store::{EventLog, Publisher, Threads};

/// Events per replay read.
const REPLAY_PAGE: u32 = 100;
/// Time to keep replaying and retrying the flip on a thread that never stops
/// growing (each round replays what arrived); within the gateway's 30 s.
const SUBSCRIBE_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

pub async fn handle(app: &App, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    let route = event.request_context.route_key.clone().unwrap_or_default();
    let Some(connection) = event.request_context.connection_id.clone().map(ConnectionId) else {
        return respond(Err(ApiError::BadRequest("event has no connection id".into())));
    };
    let result = match route.as_str() {
        "$connect" => connect(app, &connection, &event).await,
        "$disconnect" => disconnect(app, &connection).await,
        _ => message(app, &connection, event.body.as_deref()).await,
    };
    respond(result)
}

fn connections(app: &App) -> Result<Connections, ApiError> {
    let table = app.config.table(TableId::Connections).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Connections::new(app.clients.dynamo.clone(), table))
}

fn publisher(app: &App) -> Result<Publisher, ApiError> {
    Ok(Publisher::new(connections(app)?, app.clients.connections.clone()))
}

async fn connect(app: &App, id: &ConnectionId, event: &ApiGatewayWebsocketProxyRequest) -> Result<(), ApiError> {
    let token = event
        .query_string_parameters
        .first("token")
        .ok_or_else(|| ApiError::Unauthorized("missing ?token=<api key> on connect".into()))?;
    let user = crate::auth::authenticate_key(app, token).await?;
    connections(app)?.open(id, &user).await?;
    tracing::info!(connection = %id, user = %user, "connected");
    Ok(())
}

async fn disconnect(app: &App, id: &ConnectionId) -> Result<(), ApiError> {
    connections(app)?.close_with_subscriptions(id).await?;
    Ok(())
}

/// A frame on an open connection. Answers go back through the Management API
/// (a WebSocket route's return value reaches no client without a route response).
async fn message(app: &App, id: &ConnectionId, body: Option<&str>) -> Result<(), ApiError> {
    let Some(user) = connections(app)?.owner(id).await? else {
        return Err(ApiError::Unauthorized("connection is not authenticated".into()));
    };
    let result = match parse_action(body) {
        Ok(ClientAction::Subscribe { thread_id, last_event_id }) => {
            subscribe(app, id, &user, &thread_id, last_event_id.unwrap_or(0)).await
        }
        Ok(ClientAction::Unsubscribe { thread_id }) => unsubscribe(app, id, &thread_id).await,
        Err(e) => Err(e),
    };
    if let Err(e) = &result {
        post(app, id, &serde_json::to_vec(&e.body()).unwrap_or_default()).await;
    }
    result
}

fn parse_action(body: Option<&str>) -> Result<ClientAction, ApiError> {
    let hint = r#"send {"action":"subscribe","threadId":"…","lastEventId":0} or {"action":"unsubscribe","threadId":"…"}"#;
    let body = body.filter(|b| !b.trim().is_empty()).ok_or_else(|| ApiError::BadRequest(format!("empty frame; {hint}")))?;
    serde_json::from_str(body).map_err(|e| ApiError::BadRequest(format!("invalid frame ({e}); {hint}")))
}

fn thread_id(raw: &str) -> Result<ThreadId, ApiError> {
    if protocol::ids::is_valid_path_id(raw) {
        Ok(ThreadId(raw.to_owned()))
    } else {
        Err(ApiError::BadRequest("threadId must be 1-128 characters of [A-Za-z0-9_.:-]".into()))
    }
}

/// Replays `seq > cursor` and goes live (see the module comment).
async fn subscribe(app: &App, id: &ConnectionId, user: &UserId, raw_thread: &str, mut cursor: u64) -> Result<(), ApiError> {
    let thread = thread_id(raw_thread)?;
    let agent_table = app.config.table(TableId::Agent).map_err(|e| ApiError::Internal(e.to_string()))?;
    // A stranger's thread answers exactly like a missing one.
    Threads::new(app.clients.dynamo.clone(), agent_table).check_owner(&thread, user).await?;
    let log = EventLog::from_config(app.clients.dynamo.clone(), &app.config).map_err(|e| ApiError::Internal(e.to_string()))?;
    let conns = connections(app)?;
    let publisher = publisher(app)?;
    let token = conns.subscribe_replaying(&thread, id, user, cursor).await?;
    let started = std::time::Instant::now();
    loop {
        if !replay(&log, &publisher, &thread, id, &mut cursor).await? {
            tracing::info!(connection = %id, "connection gone during replay");
            conns.close_with_subscriptions(id).await?;
            return Ok(());
        }
        match conns.go_live(&thread, id, &token, cursor, log.table()).await? {
            GoLive::Live => break,
            GoLive::Superseded => return Ok(()),
            // Events landed since the last read: replay them and try again.
            GoLive::Behind if started.elapsed() < SUBSCRIBE_BUDGET => {}
            GoLive::Behind => {
                conns.unsubscribe(&thread, id).await?;
                return Err(ApiError::Unavailable("the thread is too busy to subscribe; retry with lastEventId".into()));
            }
        }
    }
    let ack = serde_json::json!({"action": "subscribed", "threadId": thread.0, "lastEventId": cursor});
    post(app, id, ack.to_string().as_bytes()).await;
    tracing::info!(connection = %id, thread = %thread, cursor, "subscribed");
    Ok(())
}

/// Posts every event after `cursor` to the connection, advancing `cursor`;
/// `false` when the connection is gone.
async fn replay(
    log: &EventLog,
    publisher: &Publisher,
    thread: &ThreadId,
    id: &ConnectionId,
    cursor: &mut u64,
) -> Result<bool, ApiError> {
    loop {
        let page = log.read_after(thread, *cursor, REPLAY_PAGE).await?;
        let short = page.len() < REPLAY_PAGE as usize;
        for stored in page {
            let seq = stored.seq;
            if !publisher.post_raw(id, WsFrame::durable(seq, stored.event).to_json().as_bytes()).await {
                return Ok(false);
            }
            *cursor = seq;
        }
        if short {
            return Ok(true);
        }
    }
}

async fn unsubscribe(app: &App, id: &ConnectionId, raw_thread: &str) -> Result<(), ApiError> {
    let thread = thread_id(raw_thread)?;
    connections(app)?.unsubscribe(&thread, id).await?;
    let ack = serde_json::json!({"action": "unsubscribed", "threadId": thread.0});
    post(app, id, ack.to_string().as_bytes()).await;
    Ok(())
}

/// Posts one frame to a connection; a gone connection is forgotten, never an error.
pub async fn post(app: &App, id: &ConnectionId, data: &[u8]) {
    let Ok(publisher) = publisher(app) else { return };
    if !publisher.post_raw(id, data).await {
        if let Ok(c) = connections(app) {
            let _ = c.close_with_subscriptions(id).await;
        }
    }
}

fn respond(result: Result<(), ApiError>) -> ApiGatewayProxyResponse {
    let (status, body) = match result {
        Ok(()) => (200, None),
        Err(e) => (i64::from(e.code().status()), serde_json::to_string(&e.body()).ok().map(Body::Text)),
    };
    // Non-exhaustive upstream: fill a default rather than a struct literal.
    let mut resp = ApiGatewayProxyResponse::default();
    resp.status_code = status;
    resp.body = body;
    resp
}
