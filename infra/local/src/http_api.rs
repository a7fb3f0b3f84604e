//! The HTTP API and the streaming Function URL: each request becomes the
//! API Gateway payload-format-2.0 event AWS would send, parsed by
//! `lambda_http` exactly as in Lambda, and handed to the route's function.

use crate::routing::{match_route, url_pairs, RouteMatch};
use crate::websocket::{self, Registry, State};
use api::{ApiError, App};
use axum::body::Body as AxumBody;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use axum::routing::{any, get};
use axum::Router;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use store::deployment::Edge;

/// Request bodies above this are refused, as API Gateway does (10 MB).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

pub fn router(app: Arc<App>, connections: Registry, meter: Arc<crate::metering::Meter>) -> Router {
    let state = State { app, connections, meter };
    Router::new()
        .route("/ws", get(websocket::upgrade))
        .route("/@connections/{id}", any(websocket::management))
        .fallback(any(route_request))
        .with_state(state)
}

async fn route_request(
    axum::extract::State(state): axum::extract::State<State>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let (route, params) = match match_route(&method, &path) {
        RouteMatch::Found { route, params } => (route, params),
        RouteMatch::WrongMethod => {
            return ApiError::MethodNotAllowed(format!("{method} is not allowed on {path}")).into_response().map(into_axum);
        }
        RouteMatch::NotFound => return ApiError::NotFound(format!("no route for {method} {path}")).into_response().map(into_axum),
    };
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return ApiError::PayloadTooLarge("request body exceeds 10 MB".into()).into_response().map(into_axum),
    };
    // A Function URL (the streaming edge) has no routes: AWS sends routeKey
    // `$default` and no path parameters, so the handler reads the raw path.
    let (route_key, params) = match route.edge {
        Edge::HttpApi => (format!("{} {}", route.method.as_str(), route.path), params),
        Edge::StreamingUrl => ("$default".to_owned(), Default::default()),
    };
    state.meter.http_request(route.edge == Edge::StreamingUrl);
    let event = http_event(&parts, &body, &route_key, &params, peer);
    let lambda_req = match lambda_http::request::from_str(&event.to_string()) {
        Ok(r) => r,
        Err(e) => return ApiError::Internal(format!("local event did not parse: {e}")).into_response().map(into_axum),
    };
    crate::dispatch::http(&state.app, &state.meter, route.function, lambda_req).await
}

fn into_axum(body: lambda_http::Body) -> AxumBody {
    AxumBody::new(body)
}

/// The API Gateway HTTP API (payload format 2.0) event for a request.
pub fn http_event(
    parts: &http::request::Parts,
    body: &[u8],
    route_key: &str,
    params: &std::collections::HashMap<String, String>,
    peer: SocketAddr,
) -> Value {
    let mut headers = Map::new();
    let mut cookies = Vec::new();
    for (name, value) in &parts.headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        if name == http::header::COOKIE {
            cookies.extend(value.split("; ").map(str::to_owned));
            continue;
        }
        // API Gateway joins repeated headers with commas.
        match headers.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push(',');
                existing.push_str(&value);
            }
            _ => {
                headers.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    let raw_query = parts.uri.query().unwrap_or_default();
    let mut query = Map::new();
    for (k, v) in url_pairs(raw_query) {
        match query.get_mut(&k) {
            Some(Value::String(existing)) => {
                existing.push(',');
                existing.push_str(&v);
            }
            _ => {
                query.insert(k, Value::String(v));
            }
        }
    }
    let (body, is_base64) = match std::str::from_utf8(body) {
        _ if body.is_empty() => (Value::Null, false),
        Ok(text) => (Value::String(text.to_owned()), false),
        Err(_) => (Value::String(base64::engine::general_purpose::STANDARD.encode(body)), true),
    };
    let now = time::OffsetDateTime::now_utc();
    let user_agent = headers.get("user-agent").cloned().unwrap_or(Value::String(String::new()));
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": parts.uri.path(),
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": headers_host(&parts.headers),
            "domainPrefix": "local",
            "http": {
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": peer.ip().to_string(),
                "userAgent": user_agent,
            },
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.format(&time::format_description::well_known::Rfc2822).unwrap_or_default(),
            "timeEpoch": now.unix_timestamp() * 1000 + i64::from(now.millisecond()),
        },
        "isBase64Encoded": is_base64,
    });
    if let Some(obj) = event.as_object_mut() {
        if !query.is_empty() {
            obj.insert("queryStringParameters".into(), Value::Object(query));
        }
        if !params.is_empty() {
            obj.insert("pathParameters".into(), json!(params));
        }
        if !cookies.is_empty() {
            obj.insert("cookies".into(), json!(cookies));
        }
        if !body.is_null() {
            obj.insert("body".into(), body);
        }
    }
    event
}

fn headers_host(headers: &http::HeaderMap) -> String {
    headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("127.0.0.1").to_owned()
}

