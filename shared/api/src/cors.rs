//! CORS for the web page's origin (`INSTANCE_AI_WEB_ORIGIN`). In AWS the
//! SSE endpoint is a Function URL, another origin than the page on the HTTP
//! API, so the browser asks first (the bearer header makes every request
//! "non-simple"). The Function URL has no CORS configuration of its own:
//! preflights reach the handler, and this module is the one place that
//! answers them, locally and in AWS alike.

use http::header::{self, HeaderMap, HeaderValue};

/// Request headers the page sends to the SSE endpoint.
const ALLOW_HEADERS: &str = "authorization, last-event-id, accept, cache-control";

/// The `Access-Control-Allow-Origin` value for a request: `*` when any
/// origin is configured, the request's own origin when it is listed,
/// otherwise none (the browser then refuses the page the response).
pub fn allow_origin(origins: &[String], headers: &HeaderMap) -> Option<HeaderValue> {
    if origins.iter().any(|o| o == "*") {
        return Some(HeaderValue::from_static("*"));
    }
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    let listed = origins.iter().any(|o| o.eq_ignore_ascii_case(origin.trim_end_matches('/')));
    listed.then(|| HeaderValue::from_str(origin).ok()).flatten()
}

/// Adds the CORS answer to a response (errors too, so the page can read
/// the JSON error of a 401 or 404).
pub fn decorate<B>(resp: &mut http::Response<B>, origins: &[String], req_headers: &HeaderMap) {
    if origins.is_empty() {
        return;
    }
    let h = resp.headers_mut();
    h.append(header::VARY, HeaderValue::from_static("Origin"));
    if let Some(v) = allow_origin(origins, req_headers) {
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, v);
    }
}

/// The answer to a preflight (`OPTIONS`): 204, with the allowance when the
/// origin may call, without it (a refusal the browser enforces) otherwise.
pub fn preflight<B: Default>(origins: &[String], req_headers: &HeaderMap, methods: &'static str) -> http::Response<B> {
    let mut resp = http::Response::new(B::default());
    *resp.status_mut() = http::StatusCode::NO_CONTENT;
    decorate(&mut resp, origins, req_headers);
    if resp.headers().contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) {
        let h = resp.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(methods));
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOW_HEADERS));
        h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_origin(o: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        h
    }

    #[test]
    fn only_listed_origins_are_allowed() {
        let origins = vec!["https://app.example.com".to_owned()];
        assert_eq!(allow_origin(&origins, &with_origin("https://app.example.com")).unwrap(), "https://app.example.com");
        assert!(allow_origin(&origins, &with_origin("https://evil.example")).is_none());
        assert!(allow_origin(&origins, &HeaderMap::new()).is_none());
        assert_eq!(allow_origin(&["*".to_owned()], &with_origin("https://x.io")).unwrap(), "*");
    }

    #[test]
    fn preflight_allows_the_bearer_and_cursor_headers_for_listed_origins_only() {
        let origins = vec!["https://app.example.com".to_owned()];
        let ok: http::Response<()> = preflight(&origins, &with_origin("https://app.example.com"), "GET, OPTIONS");
        assert_eq!(ok.status(), 204);
        let allowed = ok.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS].to_str().unwrap();
        assert!(allowed.contains("authorization") && allowed.contains("last-event-id"));
        let no: http::Response<()> = preflight(&origins, &with_origin("https://evil.example"), "GET, OPTIONS");
        assert!(!no.headers().contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN));
        assert!(!no.headers().contains_key(header::ACCESS_CONTROL_ALLOW_HEADERS));
        let off: http::Response<()> = preflight(&[], &with_origin("https://app.example.com"), "GET, OPTIONS");
        assert!(off.headers().is_empty(), "no configuration, no CORS");
    }
}
