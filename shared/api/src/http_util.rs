//! Small helpers for building and reading HTTP messages.

use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

/// A JSON response.
pub fn json<T: Serialize>(status: u16, value: &T) -> Response<Body> {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::Binary(body))
        .unwrap_or_else(|_| Response::new(Body::Empty))
}

/// A path parameter (`{threadId}`), as API Gateway passes it.
pub fn path_param(req: &Request, name: &str) -> Option<String> {
    req.path_parameters().first(name).map(str::to_owned)
}

/// A query string parameter.
pub fn query_param(req: &Request, name: &str) -> Option<String> {
    req.query_string_parameters().first(name).map(str::to_owned)
}

/// The request body as bytes (API Gateway may deliver text or base64-decoded binary).
pub fn body_bytes(req: &Request) -> &[u8] {
    match req.body() {
        Body::Empty => &[],
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => &[],
    }
}

/// Parses a JSON request body into `T`, with a message that says what was wrong.
pub fn json_body<T: serde::de::DeserializeOwned>(req: &Request) -> Result<T, crate::ApiError> {
    let bytes = body_bytes(req);
    if bytes.is_empty() {
        return Err(crate::ApiError::BadRequest("request body is empty; expected JSON".into()));
    }
    serde_json::from_slice(bytes).map_err(|e| crate::ApiError::BadRequest(format!("invalid JSON body: {e}")))
}

/// A path parameter, also for requests without API Gateway's
/// `pathParameters` (a Function URL sends only the raw path): matches the
/// raw path against `pattern` (`/instance-ai/events/{threadId}`).
pub fn route_param(req: &Request, pattern: &str, name: &str) -> Option<String> {
    if let Some(v) = path_param(req, name) {
        return Some(v);
    }
    let path = req.raw_http_path();
    let mut actual = path.trim_matches('/').split('/');
    for segment in pattern.trim_matches('/').split('/') {
        let a = actual.next()?;
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) if param == name => {
                return percent_decode(a).filter(|v| !v.is_empty());
            }
            Some(_) => {}
            None if segment == a => {}
            None => return None,
        }
    }
    None
}

fn percent_decode(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s).decode_utf8().ok().map(|c| c.into_owned())
}

/// Text or an attribute value escaped for our server-rendered pages (the
/// OAuth consent page, the credential connected page).
pub fn html_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_params_come_from_the_raw_path_of_a_function_url() {
        let event = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../events/events.json")).unwrap();
        let req = lambda_http::request::from_str(&event).unwrap();
        assert_eq!(route_param(&req, "/instance-ai/events/{threadId}", "threadId").as_deref(), Some("thread-1"));
        assert_eq!(route_param(&req, "/other/{threadId}", "threadId"), None);
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
    }
}
