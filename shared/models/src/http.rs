//! What the HTTP providers share: the client, the POST with error mapping,
//! `retry-after` parsing, and the response body as a stream of SSE events.

use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;

use super::sse::{SseDecoder, SseEvent};
use super::{status_is_retryable, ModelError, ModelErrorKind};

/// One client per provider, built once (connection pooling across calls).
pub(crate) fn client(provider: &str) -> Result<reqwest::Client, ModelError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        // Between two reads, not for the whole stream: long generations are
        // fine, a silent connection is not (providers send pings).
        .read_timeout(Duration::from_secs(180))
        .build()
        .map_err(|e| ModelError::config(provider, format!("cannot build HTTP client: {e}")))
}

/// A transport failure; retryable because resets and timeouts are transient.
pub(crate) fn transport_error(provider: &str, error: &reqwest::Error) -> ModelError {
    let what = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "connection error"
    };
    // The source chain carries the useful part ("connection reset by peer").
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    ModelError::new(
        provider,
        ModelErrorKind::Connection,
        format!("{what}: {detail}"),
    )
    .retryable(true)
}

/// POSTs a JSON body and returns the response if it is a 2xx event stream;
/// anything else becomes a `ModelError` carrying status, retryability,
/// `retry-after` and the provider's own error message.
pub(crate) async fn post_sse(
    client: &reqwest::Client,
    provider: &str,
    url: &str,
    headers: &[(&str, String)],
    body: &serde_json::Value,
) -> Result<reqwest::Response, ModelError> {
    let mut request = client
        .post(url)
        .header("accept", "text/event-stream")
        .json(body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    tracing::debug!(provider, url, "model request");
    let response = request
        .send()
        .await
        .map_err(|e| transport_error(provider, &e))?;
    let status = response.status();
    if status.is_success() {
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("application/json"));
        if !is_json {
            return Ok(response);
        }
        // A JSON answer to a streaming request: usually a proxy or a server
        // that ignored `stream: true`. Report what it said.
        let text = response.text().await.unwrap_or_default();
        return Err(ModelError::protocol(
            provider,
            format!(
                "expected an event stream, got JSON: {}",
                error_message(&text)
            ),
        )
        .with_status(status.as_u16()));
    }
    let retry_after = retry_after(response.headers());
    let text = response.text().await.unwrap_or_default();
    let code = status.as_u16();
    Err(ModelError::new(
        provider,
        ModelErrorKind::Http,
        format!("HTTP {code}: {}", error_message(&text)),
    )
    .with_status(code)
    .retryable(status_is_retryable(code))
    .with_retry_after(retry_after))
}

/// The message of an error body: `{"error":{"message":..}}` (Anthropic,
/// OpenAI), `{"message":..}`, `{"error":"..."}`, else the raw text, shortened.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = found.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        return "(empty body)".to_string();
    }
    truncate(&text, 500)
}

pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `retry-after-ms` (OpenAI) or `retry-after` in seconds (integer or
/// fractional). The HTTP-date form is not used by these providers and is
/// ignored, which falls back to exponential backoff.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let secs = get("retry-after")?.parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
}

/// The response body as SSE events. A broken connection mid-body is a
/// retryable connection error (the retry driver only retries it if nothing
/// was emitted yet).
pub(crate) fn sse_events(
    provider: String,
    response: reqwest::Response,
) -> BoxStream<'static, Result<SseEvent, ModelError>> {
    Box::pin(async_stream::stream! {
        let mut body = response.bytes_stream();
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        while let Some(bytes) = body.next().await {
            let bytes = match bytes {
                Ok(bytes) => bytes,
                Err(e) => {
                    yield Err(transport_error(&provider, &e));
                    return;
                }
            };
            if let Err(e) = decoder.push(&bytes, &mut events) {
                yield Err(ModelError::protocol(provider.clone(), e.to_string()));
                return;
            }
            for event in events.drain(..) {
                yield Ok(event);
            }
        }
        if let Err(e) = decoder.finish(&mut events) {
            yield Err(ModelError::protocol(provider.clone(), e.to_string()));
            return;
        }
        for event in events.drain(..) {
            yield Ok(event);
        }
    })
}

/// Joins a base URL and a path without doubling or dropping the slash.
pub(crate) fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// A provider's mapping from SSE events to chunks (pure, so unit-testable).
pub(crate) trait SseChunkDecoder: Send + 'static {
    /// Chunks for one event; a `Finish` among them ends the stream.
    fn event(&mut self, event: SseEvent) -> Result<Vec<super::ModelChunk>, ModelError>;
    /// The body ended without a `Finish`: the final chunks, or an error.
    fn end(&mut self) -> Result<Vec<super::ModelChunk>, ModelError>;
}

/// Runs a decoder over a response body.
pub(crate) fn decode(
    provider: String,
    response: reqwest::Response,
    mut decoder: impl SseChunkDecoder,
) -> super::ModelStream {
    Box::pin(async_stream::stream! {
        let mut events = sse_events(provider, response);
        while let Some(event) = events.next().await {
            let chunks = match event.and_then(|event| decoder.event(event)) {
                Ok(chunks) => chunks,
                Err(e) => {
                    yield Err(e);
                    return;
                }
            };
            for chunk in chunks {
                let done = matches!(chunk, super::ModelChunk::Finish { .. });
                yield Ok(chunk);
                if done {
                    return;
                }
            }
        }
        match decoder.end() {
            Ok(chunks) => for chunk in chunks { yield Ok(chunk) },
            Err(e) => yield Err(e),
        }
    })
}
