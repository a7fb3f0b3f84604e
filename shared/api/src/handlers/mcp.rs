//! The MCP server (`/mcp`): Streamable HTTP, stateless. The transport and
//! the tools live in `mcp_server`; this adapter does the HTTP checks in the
//! order the transport prescribes, authenticates (API keys as every other
//! route, or OAuth access tokens bound to this resource), and turns the
//! transport's reply into a response.

use crate::{auth, App};
use lambda_http::{Body, Request, Response};
use mcp_server::transport::{self, Reply};
use mcp_server::McpServer;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use store::deployment::TableId;

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    let origin = match crate::oauth::Settings::from_config(&app.config) {
        Ok(s) => s.origin(req.headers()),
        Err(e) => return crate::ApiError::Internal(e.to_string()).into_response(),
    };
    if let Some(reply) = transport::precheck(req.method(), req.headers(), &app.config.allowed_origins, &origin) {
        return into_response(reply);
    }
    let caller = match auth::authenticate_mcp(app, req.headers(), &transport::resource_url(&origin)).await {
        Ok(c) => c,
        Err(auth::McpAuthError::Unauthorized(why)) => return into_response(transport::unauthorized(&origin, why.as_deref())),
        Err(auth::McpAuthError::Failed(e)) => return e.into_response(),
    };
    let server = match server(app).await {
        Ok(s) => s,
        Err(e) => return crate::ApiError::Internal(e.to_string()).into_response(),
    };
    let reply = transport::handle_post(&server, &caller, &origin, req.headers(), crate::http_util::body_bytes(&req)).await;
    into_response(reply)
}

/// The server is built once per process and configuration (the repositories
/// and key provider are clients, never built per request); the local cloud
/// runs several configurations in one process, hence the map.
async fn server(app: &App) -> Result<Arc<McpServer>, mcp_server::McpError> {
    static SERVERS: OnceLock<Mutex<HashMap<String, Arc<McpServer>>>> = OnceLock::new();
    let key = app.config.table(TableId::Instance).unwrap_or_default().to_owned();
    let map = SERVERS.get_or_init(Default::default);
    if let Some(s) = map.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(s);
    }
    let built = Arc::new(McpServer::new(&app.clients, &app.config).await?);
    if let Ok(mut m) = map.lock() {
        m.entry(key).or_insert_with(|| built.clone());
    }
    Ok(built)
}

fn into_response(reply: Reply) -> Response<Body> {
    let body = match reply.body {
        Some(_) => Body::Binary(reply.body_bytes()),
        None => Body::Empty,
    };
    let mut builder = Response::builder().status(reply.status);
    for (k, v) in &reply.headers {
        builder = builder.header(*k, v.as_str());
    }
    builder.body(body).unwrap_or_else(|_| Response::new(Body::Empty))
}
