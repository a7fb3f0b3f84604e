//! `GET /` and `GET /assets/{asset}`: the web page ([`crate::web`]). The
//! page is public (it holds no data: every API call it makes carries the
//! user's key); assets have hashed names and are cached for a year, the
//! page itself never, and it runs under a strict Content-Security-Policy.

use crate::web::{Site, SITE};
use crate::{ApiError, App};
use http::header::{self, HeaderValue};
use lambda_http::{Body, Request, Response};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match serve(app, &req) {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

fn serve(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let head = req.method() == http::Method::HEAD;
    if req.method() != http::Method::GET && !head {
        return Err(ApiError::MethodNotAllowed("use GET".into()));
    }
    let path = req.uri().path();
    let mut resp = if path == "/" || path.is_empty() {
        let events_url = app.config.events_url.as_deref();
        let mut resp = Response::new(Body::Text(SITE.index_html(events_url)));
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let csp = HeaderValue::from_str(&Site::csp(events_url)).map_err(|e| ApiError::Internal(e.to_string()))?;
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
        resp
    } else {
        let file = path.strip_prefix("/assets/").filter(|f| !f.contains('/'));
        let asset = file.and_then(|f| SITE.asset(f)).ok_or_else(|| ApiError::NotFound(format!("no asset {path}")))?;
        let h = req.headers();
        let etag = HeaderValue::from_str(&asset.etag).map_err(|e| ApiError::Internal(e.to_string()))?;
        let not_modified = h.get(header::IF_NONE_MATCH).is_some_and(|v| v.as_bytes() == etag.as_bytes());
        let accepts_gzip = h
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|e| e.trim().split(';').next() == Some("gzip")));
        let (body, gzipped) = match (&asset.gzip, accepts_gzip) {
            _ if not_modified => (Body::Empty, false),
            (Some(gz), true) => (Body::Binary(gz.clone()), true),
            _ => (Body::Binary(asset.body.clone()), false),
        };
        let mut resp = Response::new(body);
        if not_modified {
            *resp.status_mut() = http::StatusCode::NOT_MODIFIED;
        }
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"));
        h.insert(header::ETAG, etag);
        h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        if gzipped {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        resp
    };
    let h = resp.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if head {
        *resp.body_mut() = Body::Empty;
    }
    Ok(resp)
}
