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
