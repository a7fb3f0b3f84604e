//! The WebSocket API: `$connect` (authenticates `?token=`), `$disconnect`,
//! and the message routes selected by the frame's `action`.

use crate::{ApiError, App};
use aws_lambda_events::apigw::{ApiGatewayProxyResponse, ApiGatewayWebsocketProxyRequest};
use aws_lambda_events::encodings::Body;
use protocol::ids::ConnectionId;
use store::connections::Connections;
use store::deployment::TableId;

pub async fn handle(app: &App, event: ApiGatewayWebsocketProxyRequest) -> ApiGatewayProxyResponse {
    let route = event.request_context.route_key.clone().unwrap_or_default();
    let Some(connection) = event.request_context.connection_id.clone().map(ConnectionId) else {
        return respond(Err(ApiError::BadRequest("event has no connection id".into())));
    };
    let result = match route.as_str() {
        "$connect" => connect(app, &connection, &event).await,
        "$disconnect" => disconnect(app, &connection).await,
        _ => message(app, &connection, event.body.as_deref().unwrap_or_default()).await,
    };
    respond(result)
}

fn connections(app: &App) -> Result<Connections, ApiError> {
    let table = app.config.table(TableId::Connections).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Connections::new(app.clients.dynamo.clone(), table))
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
    connections(app)?.close(id).await?;
    Ok(())
}

/// A frame on an open connection. Answers go back through the Management API
/// (a WebSocket route's return value reaches no client without a route response).
async fn message(app: &App, id: &ConnectionId, body: &str) -> Result<(), ApiError> {
    if connections(app)?.owner(id).await?.is_none() {
        return Err(ApiError::Unauthorized("connection is not authenticated".into()));
    }
    let action = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("action").and_then(|a| a.as_str()).map(str::to_owned))
        .unwrap_or_default();
    let err = ApiError::BadRequest(format!(
        "unknown action {action:?}; send {{\"action\":\"subscribe\",\"threadId\":\"…\",\"lastEventId\":0}}"
    ));
    post(app, id, &serde_json::to_vec(&err.body()).unwrap_or_default()).await;
    Err(err)
}

/// Posts one frame to a connection; a gone connection is forgotten, never an error.
pub async fn post(app: &App, id: &ConnectionId, data: &[u8]) {
    let Some(client) = &app.clients.connections else { return };
    let result = client
        .post_to_connection()
        .connection_id(&id.0)
        .data(aws_sdk_apigatewaymanagement::primitives::Blob::new(data))
        .send()
        .await;
    if let Err(e) = result {
        if e.as_service_error().is_some_and(|s| s.is_gone_exception()) {
            if let Ok(c) = connections(app) {
                let _ = c.close(id).await;
            }
        } else {
            tracing::warn!(connection = %id, error = %e, "post to connection failed");
        }
    }
}

fn respond(result: Result<(), ApiError>) -> ApiGatewayProxyResponse {
    let (status, body) = match result {
        Ok(()) => (200, None),
        Err(e) => (i64::from(e.code().status()), serde_json::to_string(&e.body()).ok().map(Body::Text)),
    };
    let mut resp = ApiGatewayProxyResponse::default();
    resp.status_code = status;
    resp.body = body;
    resp
}
