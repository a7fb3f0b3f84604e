//! The `oauth` function: every OAuth route of `store::deployment`, by
//! method and path. The endpoints' logic is in [`crate::oauth`]; this maps
//! HTTP onto it and sets the headers each kind of answer needs.

use crate::oauth::{authorize, metadata, register, revoke, token, OAuthError, Settings};
use crate::App;
use http::header::{self, HeaderValue};
use http::Method;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::Value;
use store::deployment::{FunctionId, ROUTES};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    let settings = match Settings::from_config(&app.config) {
        Ok(s) => s,
        Err(e) => return OAuthError::Server(e.to_string()).into_response(),
    };
    let Some(store) = app.oauth.as_ref() else {
        return OAuthError::Server("this function has no OAuth table".into()).into_response();
    };
    let origin = settings.origin(req.headers());
    let path = req.uri().path().trim_end_matches('/').to_owned();
    let method = req.method().clone();
    let headers = req.headers();
    let body = crate::http_util::body_bytes(&req);
    match (method, path.as_str()) {
        (Method::GET, "/.well-known/oauth-protected-resource" | "/.well-known/oauth-protected-resource/mcp") => {
            public_json(200, &metadata::protected_resource(&origin))
        }
        (Method::GET, "/.well-known/oauth-authorization-server") => public_json(200, &metadata::authorization_server(&origin)),
        (Method::POST, "/register") => match register::register(store, body).await {
            Ok(v) => public_json(201, &v),
            Err(e) => cors(e.into_response()),
        },
        (Method::GET, "/authorize") => authorize::show(store, &origin, headers, query(&req).as_bytes()).await,
        (Method::POST, "/authorize") => authorize::decide(app, store, &origin, headers, body).await,
        (Method::POST, "/token") => match form(headers) {
            Err(e) => cors(e.into_response()),
            Ok(()) => match token::exchange(store, &settings, &origin, headers, body).await {
                Ok(v) => public_json(200, &v),
                Err(e) => cors(e.into_response()),
            },
        },
        (Method::POST, "/revoke") => match form(headers) {
            Err(e) => cors(e.into_response()),
            Ok(()) => match revoke::revoke(store, headers, body).await {
                Ok(()) => cors(no_store(Response::new(Body::Empty))),
                Err(e) => cors(e.into_response()),
            },
        },
        (_, p) if is_route(p) => OAuthError::MethodNotAllowed(format!("{} is not served for {p}", req.method())).into_response(),
        (_, p) => OAuthError::NotFound(format!("no OAuth endpoint {p}")).into_response(),
    }
}

/// Whether `path` is one of this function's routes (`store::deployment`).
fn is_route(path: &str) -> bool {
    ROUTES.iter().any(|r| r.function == FunctionId::OAuth && r.path == path)
}

/// The raw query string (API Gateway passes it in the URI; a request
/// built without one has only the parsed parameters).
fn query(req: &Request) -> String {
    if let Some(q) = req.uri().query() {
        return q.to_owned();
    }
    let params = req.query_string_parameters();
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in params.iter() {
        out.append_pair(k, v);
    }
    out.finish()
}

/// `/token` and `/revoke` take form posts (RFC 6749 §3.2).
fn form(headers: &http::HeaderMap) -> Result<(), OAuthError> {
    let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        Ok(())
    } else {
        Err(OAuthError::InvalidRequest("send the parameters as application/x-www-form-urlencoded".into()))
    }
}

/// A JSON answer any web origin may read: discovery, registration and
/// token responses carry no cookie-based authority.
fn public_json(status: u16, v: &Value) -> Response<Body> {
    cors(no_store(crate::http_util::json(status, v)))
}

fn no_store(mut resp: Response<Body>) -> Response<Body> {
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn cors(mut resp: Response<Body>) -> Response<Body> {
    resp.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    resp
}
