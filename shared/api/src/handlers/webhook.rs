//! Webhook, form and Wait resume URLs (`/webhook/…`, `/webhook-test/…`,
//! `/webhook-waiting/…`, `/form/…`, `/form-test/…`, `/form-waiting/…`).
//! Public routes: the workflow's node decides who may call them (its
//! authentication and access options), not an API key. The work is
//! `triggers::Triggers`; this adapter maps API Gateway's request and the
//! reply.

use crate::{ApiError, App};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use store::deployment::TableId;
use triggers::{HttpReply, HttpRequest, TriggerError, Triggers};

/// Built once per process (the local cloud runs several apps: keyed by table).
pub(crate) async fn service(app: &App) -> Result<Triggers, TriggerError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Triggers>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = app.config.table(TableId::Executions).unwrap_or_default().to_owned();
    if let Some(t) = cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(t);
    }
    let t = Triggers::from_config(&app.clients, &app.config).await?;
    if let Ok(mut m) = cache.lock() {
        m.insert(key, t.clone());
    }
    Ok(t)
}

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    let triggers = match service(app).await {
        Ok(t) => t,
        Err(e) => return ApiError::Internal(e.to_string()).into_response(),
    };
    match Box::pin(triggers.handle(http_request(&req))).await {
        Ok(reply) => response(reply),
        Err(e) => error_response(e),
    }
}

pub(crate) fn http_request(req: &Request) -> HttpRequest {
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let source_ip = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
        _ => None,
    };
    let host = header("host").unwrap_or_else(|| "localhost".into());
    let scheme = header("x-forwarded-proto").unwrap_or_else(|| if host.starts_with("127.") || host.starts_with("localhost") { "http".into() } else { "https".into() });
    let query = url::form_urlencoded::parse(req.uri().query().unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    HttpRequest {
        method: req.method().as_str().to_ascii_uppercase(),
        path: req.raw_http_path().to_owned(),
        query,
        headers,
        body: crate::http_util::body_bytes(req).to_vec(),
        source_ip,
        base_url: format!("{scheme}://{host}"),
    }
}

fn response(reply: HttpReply) -> Response<Body> {
    let mut builder = Response::builder().status(reply.status);
    for (n, v) in &reply.headers {
        builder = builder.header(n.as_str(), v.as_str());
    }
    let body = if reply.body.is_empty() { Body::Empty } else { Body::Binary(reply.body) };
    builder.body(body).unwrap_or_else(|_| ApiError::Internal("invalid webhook response headers".into()).into_response())
}

pub(crate) fn error_response(e: TriggerError) -> Response<Body> {
    let (e, extra) = match e {
        TriggerError::WithHeaders { error, headers } => (*error, headers),
        e => (e, Vec::new()),
    };
    let challenge = matches!(&e, TriggerError::Refused(r) if r.challenge);
    let mut resp = ApiError::from(e).into_response();
    if challenge {
        resp.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Basic realm=\"Webhook\""));
    }
    for (n, v) in extra {
        // names and values come from our own code and the request's Origin; skip any that would not be valid
        if let (Ok(n), Ok(v)) = (http::HeaderName::from_bytes(n.as_bytes()), http::HeaderValue::from_str(&v)) {
            resp.headers_mut().insert(n, v);
        }
    }
    resp
}
