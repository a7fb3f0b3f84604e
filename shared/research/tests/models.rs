//! searchModels' catalog against a local models.dev-shaped server that goes
//! down, hangs, and answers slowly: the hour's cache, the stale snapshot
//! within a day, nothing after it, the five-second deadline, and one
//! cancelled caller leaving the shared refresh to the others.

use axum::extract::State;
use axum::routing::get;
use research::models::{Freshness, Status};
use research::{Catalog, ModelQuery};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Server {
    down: AtomicBool,
    delay_ms: AtomicU64,
    hits: AtomicUsize,
}

fn model(id: &str, name: &str, date: Option<&str>, input: &[&str], output: &[&str], status: Option<&str>) -> Value {
    let mut m = json!({"id": id, "name": name, "attachment": false, "reasoning": true, "tool_call": true,
        "modalities": {"input": input, "output": output}, "open_weights": false,
        "cost": {"input": 3, "output": 15, "cache_read": 0.3}, "limit": {"context": 200000, "output": 64000}});
    if let Some(d) = date {
        m["release_date"] = json!(d);
        m["last_updated"] = json!(d);
    }
    if let Some(s) = status {
        m["status"] = json!(s);
    }
    m
}

fn catalog() -> Value {
    let t = ["text"];
    json!({
        "anthropic": {"id": "anthropic", "name": "Anthropic", "models": {
            "claude-sonnet-4-5": model("claude-sonnet-4-5", "Claude Sonnet 4.5", Some("2025-09-29"), &["text", "image"], &t, None),
            "claude-3-5-sonnet-latest": model("claude-3-5-sonnet-latest", "Claude Sonnet 3.5 (latest)", Some("2024-10-22"), &t, &t, None),
            "claude-3-5-sonnet-20241022": model("claude-3-5-sonnet-20241022", "Claude Sonnet 3.5", Some("2024-10-22"), &t, &t, None),
            "claude-2": model("claude-2", "Claude 2", Some("2023-07-11"), &t, &t, Some("deprecated")),
            "claude-next": model("claude-next", "Claude Next (preview)", Some("2026-01-15"), &t, &t, Some("beta")),
            "claude-undated": model("claude-undated", "Claude Undated", Some("someday"), &t, &t, None)
        }},
        "openai": {"id": "openai", "models": {
            "gpt-image-1": model("gpt-image-1", "GPT Image", Some("2025-04-23"), &["text"], &["image"], None),
            "text-embedding-3-large": model("text-embedding-3-large", "Embedding", Some("2024-01-25"), &t, &[], None),
            "gpt-4o": model("gpt-4o", "GPT-4o", Some("2024-05-13"), &["text", "image"], &t, None)
        }}
    })
}

async fn serve() -> (url::Url, Arc<Server>) {
    let s = Arc::new(Server::default());
    let app = axum::Router::new()
        .route("/api.json", get(|State(s): State<Arc<Server>>| async move {
            s.hits.fetch_add(1, Ordering::SeqCst);
            let delay = s.delay_ms.load(Ordering::SeqCst);
            if delay > 0 {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            if s.down.load(Ordering::SeqCst) {
                return (axum::http::StatusCode::SERVICE_UNAVAILABLE, axum::Json(json!({"error": "down"})));
            }
            (axum::http::StatusCode::OK, axum::Json(catalog()))
        }))
        .with_state(s.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url::Url::parse(&format!("http://{addr}/api.json")).unwrap(), s)
}

fn new_catalog(url: url::Url) -> Arc<Catalog> {
    let policy = outbound::Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] };
    Arc::new(Catalog::new(outbound::Client::new(policy, Arc::new(outbound::SystemResolver)).unwrap(), url))
}

fn q(provider: &str, query: Option<&str>, limit: Option<usize>) -> ModelQuery {
    ModelQuery { provider: provider.into(), query: query.map(str::to_owned), limit }
}

#[tokio::test]
async fn eligible_models_newest_first_from_a_cache_shared_for_an_hour() {
    let (url, server) = serve().await;
    let c = new_catalog(url.clone());
    let abort = CancellationToken::new();
    let r = c.search(q(" Anthropic ", None, None), &abort).await.unwrap();
    assert_eq!(r.status, Status::Ok);
    let ids: Vec<&str> = r.models.iter().map(|m| m.id.as_str()).collect();
    // deprecated gone, the dated snapshot of a -latest alias gone, the undated last.
    assert_eq!(ids, ["claude-next", "claude-sonnet-4-5", "claude-3-5-sonnet-latest", "claude-undated"]);
    assert_eq!(r.models[3].release_date, None);
    assert_eq!((r.models[1].pricing.input, r.models[1].context_window), (Some(3.0), Some(200000)));
    assert_eq!((r.freshness, r.credential_access, r.has_more, r.requests), (Some(Freshness::Fresh), "not_checked", false, 1));
    assert_eq!(r.source, url.as_str());

    let two = c.search(q("anthropic", None, Some(2)), &abort).await.unwrap();
    assert_eq!((two.models.len(), two.has_more, two.requests), (2, true, 0));
    let sonnet = c.search(q("anthropic", Some("SONNET"), None), &abort).await.unwrap();
    assert_eq!(sonnet.models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["claude-sonnet-4-5", "claude-3-5-sonnet-latest"]);
    let openai = c.search(q("openai", None, None), &abort).await.unwrap();
    assert_eq!(openai.models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["gpt-4o"], "image and embedding models are not text-in/text-out");
    assert_eq!(c.search(q("openai", Some("zzz"), None), &abort).await.unwrap().status, Status::NoMatchingModels);
    let unknown = c.search(q("claude", None, None), &abort).await.unwrap();
    assert_eq!(unknown.status, Status::UnknownProvider);
    assert!(unknown.message.unwrap().contains("anthropic"));
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "one fetch served every call within the hour");
    for bad in [q("openai", None, Some(0)), q("openai", None, Some(11)), q(" ", None, None), q("openai", Some(&"x".repeat(101)), None)] {
        assert!(matches!(c.search(bad, &abort).await, Err(research::Error::Invalid(_))));
    }
}

#[tokio::test]
async fn a_catalog_that_goes_down_is_served_stale_for_a_day_then_not_at_all() {
    let (url, server) = serve().await;
    let c = new_catalog(url);
    let abort = CancellationToken::new();
    let fetched = c.search(q("openai", None, None), &abort).await.unwrap().fetched_at;
    server.down.store(true, Ordering::SeqCst);
    c.age_snapshot(Duration::from_secs(2 * 3600));
    let stale = c.search(q("openai", None, None), &abort).await.unwrap();
    assert_eq!((stale.status, stale.freshness, stale.requests), (Status::Ok, Some(Freshness::Stale), 1));
    assert_eq!(stale.fetched_at, fetched, "the old snapshot's time");
    c.age_snapshot(Duration::from_secs(25 * 3600));
    let gone = c.search(q("openai", None, None), &abort).await.unwrap();
    assert_eq!((gone.status, gone.models.len(), gone.freshness), (Status::CatalogUnavailable, 0, None));
    assert!(gone.message.unwrap().contains("503"));
    // Back up: fresh again.
    server.down.store(false, Ordering::SeqCst);
    assert_eq!(c.search(q("openai", None, None), &abort).await.unwrap().freshness, Some(Freshness::Fresh));
}

#[tokio::test]
async fn a_refresh_has_five_seconds_and_a_cancelled_caller_leaves_it_to_the_others() {
    let (url, server) = serve().await;
    let c = new_catalog(url);
    server.delay_ms.store(60_000, Ordering::SeqCst);
    let t = Instant::now();
    let r = c.search(q("openai", None, None), &CancellationToken::new()).await.unwrap();
    assert_eq!(r.status, Status::CatalogUnavailable);
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(4900) && took < Duration::from_secs(8), "{took:?}");

    server.delay_ms.store(700, Ordering::SeqCst);
    let before = server.hits.load(Ordering::SeqCst);
    let impatient = CancellationToken::new();
    let (c1, c2, stop) = (c.clone(), c.clone(), impatient.clone());
    let first = tokio::spawn(async move { c1.search(q("openai", None, None), &stop).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { c2.search(q("openai", None, None), &CancellationToken::new()).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    impatient.cancel();
    assert_eq!(first.await.unwrap().unwrap_err(), research::Error::Cancelled);
    let r = second.await.unwrap().unwrap();
    assert_eq!((r.status, r.freshness), (Status::Ok, Some(Freshness::Fresh)));
    assert_eq!(server.hits.load(Ordering::SeqCst) - before, 1, "one refresh, shared, not cancelled with the first caller");
}
