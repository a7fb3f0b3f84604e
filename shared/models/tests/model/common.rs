//! A local stand-in for a model provider: an axum server on 127.0.0.1
//! (port 0) that answers each request with the next scripted response,
//! streaming the body in small pieces, and records what it was sent.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use models::{ModelChunk, ModelError, ModelStream};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use futures::StreamExt;

pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

#[derive(Clone)]
pub struct MockResponse {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// The body is written in pieces of this many bytes, so events and
    /// even UTF-8 sequences straddle TCP writes.
    pub piece: usize,
    pub piece_delay: Duration,
    /// Keep the connection open after the body, sending nothing.
    pub hang: bool,
}

impl MockResponse {
    pub fn sse(body: impl Into<String>) -> Self {
        MockResponse {
            status: 200,
            headers: vec![("content-type", "text/event-stream".to_string())],
            body: body.into().into_bytes(),
            piece: 7,
            piece_delay: Duration::from_millis(1),
            hang: false,
        }
    }

    pub fn status(status: u16, body: &str) -> Self {
        MockResponse {
            status,
            headers: vec![("content-type", "application/json".to_string())],
            body: body.as_bytes().to_vec(),
            piece: usize::MAX,
            piece_delay: Duration::ZERO,
            hang: false,
        }
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }

    pub fn hang(mut self) -> Self {
        self.hang = true;
        self
    }
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

#[derive(Clone, Default)]
struct Shared {
    responses: Arc<Mutex<VecDeque<MockResponse>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

pub struct MockServer {
    pub base: String,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    pub async fn start(responses: Vec<MockResponse>) -> Self {
        let shared = Shared {
            responses: Arc::new(Mutex::new(responses.into())),
            ..Shared::default()
        };
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockServer {
            base: format!("http://{addr}"),
            shared,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("lock").clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(shared): State<Shared>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let headers = request.headers().clone();
    let bytes = axum::body::to_bytes(request.into_body(), 10 << 20)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    shared.requests.lock().expect("lock").push(Recorded {
        path,
        headers,
        body,
    });
    let next = shared.responses.lock().expect("lock").pop_front();
    let Some(mock) = next else {
        return Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("mock: no response left"))
            .expect("response");
    };
    let mut builder = Response::builder().status(mock.status);
    for (name, value) in &mock.headers {
        builder = builder.header(*name, value);
    }
    let pieces: Vec<Bytes> = mock
        .body
        .chunks(mock.piece.max(1))
        .map(Bytes::copy_from_slice)
        .collect();
    let delay = mock.piece_delay;
    let hang = mock.hang;
    let stream = async_stream::stream! {
        for piece in pieces {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            yield Ok::<_, Infallible>(piece);
        }
        if hang {
            std::future::pending::<()>().await;
        }
    };
    builder.body(Body::from_stream(stream)).expect("response")
}

/// Drains a stream: the chunks, and the error that ended it, if any.
pub async fn collect(mut stream: ModelStream) -> (Vec<ModelChunk>, Option<ModelError>) {
    let mut chunks = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(e) => {
                assert!(
                    stream.next().await.is_none(),
                    "an error must end the stream"
                );
                return (chunks, Some(e));
            }
        }
    }
    (chunks, None)
}

pub fn text_of(chunks: &[ModelChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            ModelChunk::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub fn reasoning_of(chunks: &[ModelChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            ModelChunk::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Retries fast so the tests stay quick; `retry-after` is still honoured.
pub fn fast_retry() -> models::RetryPolicy {
    models::RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
    }
}
