//! Credential connection tests and the OAuth2 client credentials grant,
//! against a local server that checks what a real service would: the header,
//! the Basic auth of the token request, the bearer token it issued.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

const CLIENT_BASIC: &str = "Basic Y2xpZW50LTE6Y2xpZW50LXNlY3JldC0x"; // client-1:client-secret-1

/// `/ping` wants `x-api-key: k3y-value`; `/token` issues `tok-<n>` for
/// client-1's credentials (Basic header or body); `/api` wants a token it issued.
fn server() -> (String, Arc<Mutex<u32>>) {
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};
    let issued = Arc::new(Mutex::new(0u32));
    let counter = issued.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let c1 = counter.clone();
            let c2 = counter.clone();
            let app = axum::Router::new()
                .route(
                    "/ping",
                    get(|h: HeaderMap| async move {
                        match h.get("x-api-key").and_then(|v| v.to_str().ok()) {
                            Some("k3y-value") => (StatusCode::OK, "pong"),
                            _ => (StatusCode::UNAUTHORIZED, "who are you"),
                        }
                    }),
                )
                .route(
                    "/token",
                    post(move |h: HeaderMap, body: String| async move {
                        let form: HashMap<String, String> = url::form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                        let basic_ok = h.get("authorization").and_then(|v| v.to_str().ok()) == Some(CLIENT_BASIC);
                        let body_ok = form.get("client_id").map(String::as_str) == Some("client-1")
                            && form.get("client_secret").map(String::as_str) == Some("client-secret-1");
                        if form.get("grant_type").map(String::as_str) != Some("client_credentials") || !(basic_ok || body_ok) {
                            return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid_client", "error_description": "unknown client"})));
                        }
                        let mut n = c1.lock().unwrap();
                        *n += 1;
                        (StatusCode::OK, axum::Json(json!({"access_token": format!("tok-{n}"), "token_type": "bearer", "scope": form.get("scope")})))
                    }),
                )
                .route(
                    "/api",
                    get(move |h: HeaderMap| async move {
                        let n = *c2.lock().unwrap();
                        let auth = h.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                        if n > 0 && auth == format!("Bearer tok-{n}") {
                            (StatusCode::OK, axum::Json(json!({"ok": true})))
                        } else {
                            (StatusCode::UNAUTHORIZED, axum::Json(json!({"ok": false})))
                        }
                    }),
                );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{}", rx.recv().unwrap()), issued)
}

/// Hands out fixed data per type, and records what it was asked for.
struct Creds(HashMap<&'static str, Value>);
impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String> {
        assert_eq!(reference["id"], "c1");
        self.0.get(cred_type).cloned().ok_or_else(|| format!("no {cred_type} credential"))
    }
}

fn engine(data: HashMap<&'static str, Value>, allow_private: bool) -> Engine {
    let settings = EngineSettings { allow_private_network: allow_private, ..Default::default() };
    Engine::new(settings, Host { credentials: Some(Arc::new(Creds(data))), ..Default::default() })
}

fn reference() -> Value {
    json!({"id": "c1", "name": "key"})
}

#[test]
fn a_header_credential_passes_against_the_service_and_fails_with_a_wrong_value() {
    let (base, _) = server();
    let good = engine(HashMap::from([("httpHeaderAuth", json!({"name": "x-api-key", "value": "k3y-value", "testUrl": format!("{base}/ping")}))]), true);
    let o = good.test_credential("httpHeaderAuth", &reference());
    assert!(o.success, "{o:?}");
    let bad = engine(HashMap::from([("httpHeaderAuth", json!({"name": "x-api-key", "value": "wrong-value", "testUrl": format!("{base}/ping")}))]), true);
    let o = bad.test_credential("httpHeaderAuth", &reference());
    assert!(!o.success);
    assert!(o.message.contains("Authorization failed") && o.message.contains("401"), "{o:?}");
    assert!(!o.message.contains("wrong-value") && !o.message.contains("who are you"), "no secret, no body: {o:?}");
}

#[test]
fn the_test_request_passes_the_ssrf_guard_like_any_node() {
    let (base, _) = server();
    let e = engine(HashMap::from([("httpHeaderAuth", json!({"name": "x-api-key", "value": "k3y-value", "testUrl": format!("{base}/ping")}))]), false);
    let o = e.test_credential("httpHeaderAuth", &reference());
    assert!(!o.success);
    assert!(o.message.to_lowercase().contains("forbidden") || o.message.contains("refused") || o.message.contains("not allowed"), "{o:?}");
}

#[test]
fn generic_credentials_without_a_test_url_and_local_keys_say_why_they_cannot_be_tested() {
    let e = engine(HashMap::from([("httpBearerAuth", json!({"token": "t0ken-value"})), ("totpApi", json!({"secret": "BVDRSBXQB2ZEL5HE", "label": "x"}))]), true);
    let o = e.test_credential("httpBearerAuth", &reference());
    assert!(!o.success && o.message.contains("Test URL"), "{o:?}");
    let o = e.test_credential("totpApi", &reference());
    assert!(!o.success && o.message.contains("no connection test"), "{o:?}");
    let o = e.test_credential("nope", &reference());
    assert!(!o.success && o.message.contains("unknown credential type"), "{o:?}");
}

#[test]
fn oauth2_client_credentials_are_exchanged_for_a_token_the_http_node_then_sends() {
    let (base, issued) = server();
    let oauth = |auth: &str, secret: &str| {
        json!({"grantType": "clientCredentials", "accessTokenUrl": format!("{base}/token"), "clientId": "client-1",
               "clientSecret": secret, "scope": "read", "authentication": auth})
    };
    for auth in ["header", "body"] {
        let o = engine(HashMap::from([("oAuth2Api", oauth(auth, "client-secret-1"))]), true).test_credential("oAuth2Api", &reference());
        assert!(o.success, "{auth}: {o:?}");
    }
    let o = engine(HashMap::from([("oAuth2Api", oauth("header", "wrong-secret"))]), true).test_credential("oAuth2Api", &reference());
    assert!(!o.success && o.message.contains("invalid_client") && !o.message.contains("wrong-secret"), "{o:?}");

    // A workflow: one token for both requests of the execution.
    let before = *issued.lock().unwrap();
    let wf = json!({
        "nodes": [
            {"name": "T", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}},
            {"name": "HTTP", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2,
             "parameters": {"url": format!("{base}/api"), "authentication": "genericCredentialType", "genericAuthType": "oAuth2Api", "options": {}},
             "credentials": {"oAuth2Api": reference()}}
        ],
        "connections": {"T": {"main": [[{"node": "HTTP", "type": "main", "index": 0}]]}}
    });
    let items = vec![engine::Item::new(json!({})), engine::Item::new(json!({}))];
    let (st, _) = engine(HashMap::from([("oAuth2Api", oauth("header", "client-secret-1"))]), true)
        .run(&Graph::from_json(&wf).unwrap(), RunOptions { trigger_items: Some(items), ..RunOptions::default() })
        .unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(st.node_output("HTTP", 0).map(|i| i.len()), Some(2));
    assert_eq!(*issued.lock().unwrap(), before + 1, "the token is fetched once per execution");
}
