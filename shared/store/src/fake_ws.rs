//! Test support: a tiny stand-in for the API Gateway Management API
//! (`POST /@connections/{id}`) that records what each connection received
//! and answers 410 Gone for connections marked gone — moto accepts any
//! connection id and never answers 410.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

#[derive(Clone, Default)]
struct Shared {
    received: Arc<Mutex<HashMap<String, Vec<String>>>>,
    gone: Arc<Mutex<HashSet<String>>>,
}

/// A running fake; dropped with the test's runtime.
#[derive(Clone)]
pub struct FakeManagementApi {
    pub url: String,
    shared: Shared,
}

impl FakeManagementApi {
    pub async fn start() -> FakeManagementApi {
        let shared = Shared::default();
        let app = Router::new().route("/@connections/{id}", post(post_frame)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake management API");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeManagementApi { url: format!("http://{addr}"), shared }
    }

    /// From now on, posts to `id` answer 410 Gone.
    pub fn mark_gone(&self, id: &str) {
        if let Ok(mut g) = self.shared.gone.lock() {
            g.insert(id.to_owned());
        }
    }

    /// Frames `id` received, in arrival order.
    pub fn received(&self, id: &str) -> Vec<String> {
        self.shared.received.lock().map(|r| r.get(id).cloned().unwrap_or_default()).unwrap_or_default()
    }

    /// Forgets what `id` received so far.
    pub fn clear(&self, id: &str) {
        if let Ok(mut r) = self.shared.received.lock() {
            r.remove(id);
        }
    }
}

async fn post_frame(State(shared): State<Shared>, Path(id): Path<String>, body: axum::body::Bytes) -> StatusCode {
    if shared.gone.lock().map(|g| g.contains(&id)).unwrap_or(false) {
        return StatusCode::GONE;
    }
    if let Ok(mut r) = shared.received.lock() {
        r.entry(id).or_default().push(String::from_utf8_lossy(&body).into_owned());
    }
    StatusCode::OK
}
