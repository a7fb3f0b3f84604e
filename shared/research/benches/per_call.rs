//! What one call of each research action costs: HTTP requests made and
//! wall time (median of runs), uncached and from the cache, against a local
//! server (Brave-shaped search, the boilerplate article, the PDF, a
//! models.dev-shaped catalog of 100 providers × 40 models). Prints figures.

#[path = "../tests/support/pages.rs"]
mod pages;

use axum::routing::get;
use research::{Catalog, FetchQuery, ModelQuery, Provider, Research, SearchQuery, Settings};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const RUNS: usize = 20;

fn big_catalog() -> Value {
    let mut providers = serde_json::Map::new();
    for p in 0..100 {
        let mut models = serde_json::Map::new();
        for m in 0..40 {
            let id = format!("model-{m}");
            models.insert(id.clone(), json!({"id": id, "name": format!("Model {m}"), "release_date": format!("2025-{:02}-01", m % 12 + 1),
                "modalities": {"input": ["text"], "output": ["text"]}, "cost": {"input": 1, "output": 2}, "limit": {"context": 128000, "output": 8000}}));
        }
        providers.insert(format!("provider-{p}"), json!({"id": format!("provider-{p}"), "models": models}));
    }
    Value::Object(providers)
}

async fn serve() -> String {
    let catalog = big_catalog().to_string();
    let app = axum::Router::new()
        .route("/brave", get(|| async {
            let results: Vec<Value> = (0..10).map(|i| json!({"title": format!("r{i}"), "url": format!("https://example.com/{i}"), "description": "snippet"})).collect();
            axum::Json(json!({"web": {"results": results}}))
        }))
        .route("/article", get(|| async { ([("content-type", "text/html")], pages::ARTICLE_HTML) }))
        .route("/report.pdf", get(|| async { ([("content-type", "application/pdf")], pages::pdf()) }))
        .route("/api.json", get(move || { let c = catalog.clone(); async move { ([("content-type", "application/json")], c) } }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn client() -> outbound::Client {
    outbound::Client::new(outbound::Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] }, Arc::new(outbound::SystemResolver)).unwrap()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

async fn measure<F, Fut>(mut f: F) -> (f64, f64)
where
    F: FnMut(bool) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        f(false).await;
        cold.push(t.elapsed());
        let t = Instant::now();
        f(true).await;
        warm.push(t.elapsed());
    }
    (median(cold), median(warm))
}

#[tokio::main]
async fn main() {
    let base = serve().await;
    let abort = CancellationToken::new();
    println!("{:<34} {:>9} {:>12} {:>12}", "call", "requests", "uncached ms", "cached ms");

    let brave = Provider::Brave { url: url::Url::parse(&format!("{base}/brave")).unwrap(), api_key: "k".into() };
    let mut shared = Research::new(client(), Settings { search: brave.clone() });
    let (cold, warm) = measure(|cached| {
        if !cached {
            shared = Research::new(client(), Settings { search: brave.clone() });
        }
        let r = shared.clone();
        let abort = abort.clone();
        async move {
            let out = r.web_search(SearchQuery { query: "webhooks".into(), max_results: Some(10), include_domains: None }, &abort).await.unwrap();
            assert_eq!(out.cached, cached);
        }
    })
    .await;
    println!("{:<34} {:>9} {:>12.2} {:>12.3}", "web-search (Brave, 10 results)", 1, cold, warm);

    for (name, path, requests) in [("fetch-url (HTML article → Markdown)", "/article", 1), ("fetch-url (2-page PDF → text)", "/report.pdf", 1)] {
        let (cold, warm) = measure(|cached| {
            if !cached {
                shared = Research::new(client(), Settings { search: Provider::None });
            }
            let r = shared.clone();
            let abort = abort.clone();
            let url = format!("{base}{path}");
            async move {
                let p = r.fetch_url(FetchQuery { url, max_content_length: None }, &abort).await.unwrap();
                assert_eq!(p.cached, cached);
            }
        })
        .await;
        println!("{:<34} {:>9} {:>12.2} {:>12.3}", name, requests, cold, warm);
    }

    let catalog_url = url::Url::parse(&format!("{base}/api.json")).unwrap();
    let size = big_catalog().to_string().len();
    let mut cat = Arc::new(Catalog::new(client(), catalog_url.clone()));
    let (cold, warm) = measure(|cached| {
        if !cached {
            cat = Arc::new(Catalog::new(client(), catalog_url.clone()));
        }
        let c = cat.clone();
        let abort = abort.clone();
        async move {
            let r = c.search(ModelQuery { provider: "provider-7".into(), query: None, limit: Some(10) }, &abort).await.unwrap();
            assert_eq!(r.requests, u32::from(!cached));
        }
    })
    .await;
    println!("{:<34} {:>9} {:>12.2} {:>12.3}", format!("searchModels ({} KB catalog)", size / 1024), 1, cold, warm);
    println!("(median of {RUNS}; requests = HTTP requests of an uncached call; a cached call makes none)");
}
