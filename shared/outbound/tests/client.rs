//! The guarded client against a local server: the allow-list, DNS answers
//! naming private addresses, redirects re-checked (and headers not carried to
//! another origin), the body cap, the deadline and the abort signal.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use outbound::{Client, FetchError, Policy, Refusal, Request, Resolver, SystemResolver};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

async fn serve() -> String {
    let app = axum::Router::new()
        .route("/ok", get(|| async { ([("content-type", "text/plain")], "hello") }))
        .route("/big", get(|| async { "x".repeat(100_000) }))
        .route("/slow", get(|| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            "late"
        }))
        .route("/to-private", get(|| async { Redirect::temporary("http://10.1.2.3/secret") }))
        .route("/to-localhost", get(|headers: HeaderMap| async move {
            let port = headers.get("host").and_then(|h| h.to_str().ok()).and_then(|h| h.rsplit(':').next()).unwrap_or("80").to_owned();
            Redirect::temporary(&format!("http://localhost:{port}/headers"))
        }))
        .route("/to-ok", get(|| async { Redirect::permanent("/headers") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route("/headers", get(|headers: HeaderMap| async move {
            let key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).unwrap_or("none").to_owned();
            (StatusCode::OK, key).into_response()
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn local_only() -> Client {
    Client::new(Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into(), "localhost".into()] }, Arc::new(SystemResolver)).unwrap()
}

fn req(url: &str) -> Request {
    Request::get(url::Url::parse(url).unwrap())
}

#[tokio::test]
async fn an_allowed_local_server_answers_and_the_body_is_capped() {
    let base = serve().await;
    let c = local_only();
    let r = c.get(req(&format!("{base}/ok")), &CancellationToken::new()).await.unwrap();
    assert_eq!((r.status, r.body.as_slice(), r.content_type.as_deref(), r.truncated), (200, &b"hello"[..], Some("text/plain"), false));
    let mut big = req(&format!("{base}/big"));
    big.max_bytes = 1000;
    let r = c.get(big, &CancellationToken::new()).await.unwrap();
    assert_eq!((r.body.len(), r.truncated), (1000, true));
}

#[tokio::test]
async fn private_addresses_are_refused_without_the_policy() {
    let base = serve().await;
    let c = Client::new(Policy::default(), Arc::new(SystemResolver)).unwrap();
    let e = c.get(req(&format!("{base}/ok")), &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(e, FetchError::Refused(Refusal::Forbidden(_))), "{e}");

    // A public-looking name that resolves to loopback is refused on connect.
    struct Rebind;
    impl Resolver for Rebind {
        fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
            Ok(vec!["127.0.0.1".parse().unwrap()])
        }
    }
    let c = Client::new(Policy::default(), Arc::new(Rebind)).unwrap();
    let port = base.rsplit(':').next().unwrap();
    let e = c.get(req(&format!("http://public.example:{port}/ok")), &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(e, FetchError::Refused(Refusal::Forbidden(_))), "{e}");
}

#[tokio::test]
async fn redirects_are_checked_again_and_keep_headers_on_their_origin() {
    let base = serve().await;
    let only_loopback_ip = Client::new(Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] }, Arc::new(SystemResolver)).unwrap();
    let abort = CancellationToken::new();
    let e = only_loopback_ip.get(req(&format!("{base}/to-private")), &abort).await.unwrap_err();
    assert!(matches!(e, FetchError::Refused(_)), "{e}");
    let e = only_loopback_ip.get(req(&format!("{base}/to-localhost")), &abort).await.unwrap_err();
    assert!(matches!(e, FetchError::Refused(_)), "{e}");

    let c = local_only();
    let r = c.get(req(&format!("{base}/to-ok")).header("x-api-key", "k1"), &abort).await.unwrap();
    assert_eq!((r.body.as_slice(), r.requests, r.final_url.path()), (&b"k1"[..], 2, "/headers"));
    let r = c.get(req(&format!("{base}/to-localhost")).header("x-api-key", "k1"), &abort).await.unwrap();
    assert_eq!(r.body, b"none", "the key is not sent to another origin");
    let e = c.get(req(&format!("{base}/loop")), &abort).await.unwrap_err();
    assert!(matches!(e, FetchError::TooManyRedirects { max: 5, .. }), "{e}");
}

#[tokio::test]
async fn the_deadline_and_the_abort_signal_stop_a_request_in_flight() {
    let base = serve().await;
    let c = local_only();
    let mut slow = req(&format!("{base}/slow"));
    slow.timeout = Duration::from_millis(300);
    let t = Instant::now();
    let e = c.get(slow, &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(e, FetchError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));

    let abort = CancellationToken::new();
    let a = abort.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        a.cancel();
    });
    let t = Instant::now();
    let e = c.get(req(&format!("{base}/slow")), &abort).await.unwrap_err();
    assert_eq!(e, FetchError::Cancelled);
    assert!(t.elapsed() < Duration::from_secs(3));
}
