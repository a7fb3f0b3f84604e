//! Web search and page fetches against local servers: a stub speaking
//! Brave's and SearXNG's JSON, an article inside boilerplate, a PDF, text,
//! a page that tries to instruct the model; caches, limits and the guard.

#[path = "support/pages.rs"]
mod pages;

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use research::{FetchQuery, Provider, Research, SearchQuery, Settings};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Hits {
    brave: AtomicUsize,
    searxng: AtomicUsize,
    article: AtomicUsize,
    last_brave_query: std::sync::Mutex<String>,
}

async fn serve() -> (String, Arc<Hits>) {
    let hits = Arc::new(Hits::default());
    let app = axum::Router::new()
        .route("/brave/res/v1/web/search", get(|State(h): State<Arc<Hits>>, headers: HeaderMap, Query(q): Query<HashMap<String, String>>| async move {
            h.brave.fetch_add(1, Ordering::SeqCst);
            *h.last_brave_query.lock().unwrap() = q.get("q").cloned().unwrap_or_default();
            if headers.get("x-subscription-token").and_then(|v| v.to_str().ok()) != Some("brave-test-key") {
                return (axum::http::StatusCode::UNAUTHORIZED, axum::Json(json!({"type": "ErrorResponse"}))).into_response();
            }
            let count: usize = q.get("count").and_then(|c| c.parse().ok()).unwrap_or(20);
            let results: Vec<Value> = (0..count.min(8)).map(|i| {
                let host = if i % 2 == 0 { "docs.example.com" } else { "blog.other.org" };
                json!({"title": format!("Result {i}"), "url": format!("https://{host}/r{i}"), "description": format!("About <strong>webhooks</strong> {i}"), "page_age": "2026-03-03T10:00:00", "type": "search_result"})
            }).collect();
            axum::Json(json!({"type": "search", "query": {"original": q.get("q")}, "web": {"type": "search", "results": results}})).into_response()
        }))
        .route("/searx/search", get(|State(h): State<Arc<Hits>>, Query(q): Query<HashMap<String, String>>| async move {
            h.searxng.fetch_add(1, Ordering::SeqCst);
            assert_eq!(q.get("format").map(String::as_str), Some("json"));
            axum::Json(json!({"query": q.get("q"), "number_of_results": 2, "results": [
                {"url": "https://searx.example.net/one", "title": "One", "content": "first hit", "engine": "duckduckgo", "publishedDate": null},
                {"url": "https://searx.example.net/two", "title": "Two", "content": "second hit", "engine": "bing", "publishedDate": "2026-01-02T00:00:00"}
            ]}))
        }))
        .route("/article", get(|State(h): State<Arc<Hits>>| async move {
            h.article.fetch_add(1, Ordering::SeqCst);
            ([("content-type", "text/html; charset=utf-8")], pages::ARTICLE_HTML)
        }))
        .route("/moved", get(|| async { Redirect::permanent("/article") }))
        .route("/injection", get(|| async { ([("content-type", "text/html")], pages::INJECTION_HTML) }))
        .route("/report.pdf", get(|| async { ([("content-type", "application/pdf")], pages::pdf()) }))
        .route("/notes.md", get(|| async { ([("content-type", "text/markdown")], "# Notes\n\nPlain *markdown* stays as it is.\n") }))
        .route("/image.png", get(|| async { ([("content-type", "image/png")], vec![0x89u8, b'P', b'N', b'G']) }))
        .with_state(hits.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), hits)
}

fn research(search: Provider) -> Arc<Research> {
    let policy = outbound::Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] };
    Research::new(outbound::Client::new(policy, Arc::new(outbound::SystemResolver)).unwrap(), Settings { search })
}

fn brave(base: &str) -> Provider {
    Provider::Brave { url: url::Url::parse(&format!("{base}/brave/res/v1/web/search")).unwrap(), api_key: "brave-test-key".into() }
}

fn q(query: &str, max: Option<usize>, domains: Option<Vec<&str>>) -> SearchQuery {
    SearchQuery { query: query.into(), max_results: max, include_domains: domains.map(|d| d.into_iter().map(String::from).collect()) }
}

#[tokio::test]
async fn brave_answers_and_is_cached() {
    let (base, hits) = serve().await;
    let r = research(brave(&base));
    let abort = CancellationToken::new();
    let out = r.web_search(q("webhook retries", Some(3), None), &abort).await.unwrap();
    assert_eq!(out.provider, "brave");
    assert_eq!(out.results.len(), 3);
    assert_eq!(out.results[0].title, "Result 0");
    assert_eq!(out.results[0].snippet, "About webhooks 0", "tags stripped");
    assert_eq!(out.results[0].published_date.as_deref(), Some("2026-03-03T10:00:00"));
    assert!(!out.cached);
    let again = r.web_search(q("webhook retries", Some(3), None), &abort).await.unwrap();
    assert!(again.cached);
    assert_eq!(again.results, out.results);
    assert_eq!(hits.brave.load(Ordering::SeqCst), 1, "the second search came from the cache");

    let only = r.web_search(q("webhook retries", Some(10), Some(vec!["https://www.example.com"])), &abort).await.unwrap();
    assert!(!only.results.is_empty() && only.results.iter().all(|h| h.url.starts_with("https://docs.example.com/")), "{:?}", only.results);
    assert_eq!(hits.last_brave_query.lock().unwrap().as_str(), "webhook retries (site:example.com)");
}

#[tokio::test]
async fn searxng_answers_when_brave_is_not_configured_and_none_gives_nothing() {
    let (base, hits) = serve().await;
    let r = research(Provider::SearXng { base: url::Url::parse(&format!("{base}/searx/")).unwrap() });
    let out = r.web_search(q("n8n", None, None), &CancellationToken::new()).await.unwrap();
    assert_eq!(out.provider, "searxng");
    assert_eq!(out.results.iter().map(|h| h.url.as_str()).collect::<Vec<_>>(), ["https://searx.example.net/one", "https://searx.example.net/two"]);
    assert_eq!(out.results[1].published_date.as_deref(), Some("2026-01-02T00:00:00"));
    assert_eq!(hits.searxng.load(Ordering::SeqCst), 1);

    let none = research(Provider::None).web_search(q("n8n", None, None), &CancellationToken::new()).await.unwrap();
    assert_eq!((none.provider, none.results.len()), ("none", 0));
}

#[tokio::test]
async fn search_limits_are_checked() {
    let r = research(Provider::None);
    let abort = CancellationToken::new();
    for bad in [q("x", Some(0), None), q("x", Some(21), None), q("  ", None, None), q("x", None, Some(vec!["not a domain"]))] {
        assert!(matches!(r.web_search(bad.clone(), &abort).await, Err(research::Error::Invalid(_))), "{bad:?}");
    }
}

#[tokio::test]
async fn an_article_is_read_without_its_boilerplate() {
    let (base, hits) = serve().await;
    let r = research(Provider::None);
    let abort = CancellationToken::new();
    let page = r.fetch_url(FetchQuery { url: format!("{base}/moved"), max_content_length: None }, &abort).await.unwrap();
    assert_eq!(page.final_url, format!("{base}/article"));
    assert_eq!(page.content_type, "html");
    assert!(page.title.contains("Retry policies for webhooks"), "{}", page.title);
    for kept in ["exponentially", "## Idempotency keys", "Send the key in a header", "exactly-once processing"] {
        assert!(page.content.contains(kept), "lacks {kept:?}:\n{}", page.content);
    }
    for dropped in ["Careers at Example", "Privacy policy", "newsletter", "office dog", "ExampleCloud", "analytics"] {
        assert!(!page.content.contains(dropped), "keeps boilerplate {dropped:?}:\n{}", page.content);
    }
    assert!(!page.truncated && page.safety_flags.is_empty());
    assert_eq!(page.content_length, page.content.chars().count());

    let short = r.fetch_url(FetchQuery { url: format!("{base}/article"), max_content_length: Some(100) }, &abort).await.unwrap();
    assert!(short.truncated);
    assert_eq!(short.content.chars().count(), 100);
    assert_eq!(short.content_length, page.content_length);
    let cached = r.fetch_url(FetchQuery { url: format!("{base}/article"), max_content_length: Some(100) }, &abort).await.unwrap();
    assert!(cached.cached);
    assert_eq!(hits.article.load(Ordering::SeqCst), 2, "moved → article, then article once; the third read was cached");
}

#[tokio::test]
async fn pdfs_text_and_instructions_are_handled() {
    let (base, _) = serve().await;
    let r = research(Provider::None);
    let abort = CancellationToken::new();
    let pdf = r.fetch_url(FetchQuery { url: format!("{base}/report.pdf"), max_content_length: None }, &abort).await.unwrap();
    assert_eq!((pdf.content_type, pdf.page_count, pdf.title.as_str()), ("pdf", Some(2), "Q3 Report"));
    assert!(pdf.content.contains("revenue grew 12 percent") && pdf.content.contains("outlook stays positive"), "{}", pdf.content);

    let md = r.fetch_url(FetchQuery { url: format!("{base}/notes.md"), max_content_length: None }, &abort).await.unwrap();
    assert_eq!((md.content_type, md.title.as_str(), md.content.as_str()), ("text", "Notes", "# Notes\n\nPlain *markdown* stays as it is.\n"));

    let bad = r.fetch_url(FetchQuery { url: format!("{base}/injection"), max_content_length: None }, &abort).await.unwrap();
    assert!(bad.safety_flags.contains(&"ignore-previous-instructions".to_owned()), "{:?}", bad.safety_flags);
    assert!(bad.content.contains("cheapest in February"));

    let e = r.fetch_url(FetchQuery { url: format!("{base}/image.png"), max_content_length: None }, &abort).await.unwrap_err();
    assert!(matches!(e, research::Error::Unreadable(_)), "{e}");
    for (url, max) in [(format!("{base}/article"), Some(100_001)), ("ftp://example.com/x".to_owned(), None), ("not a url".to_owned(), None)] {
        assert!(matches!(r.fetch_url(FetchQuery { url, max_content_length: max }, &abort).await, Err(research::Error::Invalid(_))));
    }
}

#[tokio::test]
async fn the_guard_refuses_private_addresses() {
    let (base, _) = serve().await;
    let strict = Research::new(outbound::Client::new(outbound::Policy::default(), Arc::new(outbound::SystemResolver)).unwrap(), Settings { search: Provider::None });
    let e = strict.fetch_url(FetchQuery { url: format!("{base}/article"), max_content_length: None }, &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(e, research::Error::Refused(_)), "{e}");
    let e = strict.fetch_url(FetchQuery { url: "http://169.254.169.254/latest/meta-data/".into(), max_content_length: None }, &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(e, research::Error::Refused(_)), "{e}");
}
