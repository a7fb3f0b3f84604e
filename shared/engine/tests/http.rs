//! HTTP Request against a local server: credentials through the host,
//! full response, never-error, API errors, pagination.

use std::sync::Arc;

use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

fn server() -> String {
    use axum::extract::Query;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::get;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new()
                .route(
                    "/secret",
                    get(|h: HeaderMap| async move {
                        match h.get("x-api-key").and_then(|v| v.to_str().ok()) {
                            Some("k3y") => (StatusCode::OK, axum::Json(json!({ "ok": true }))),
                            _ => (StatusCode::UNAUTHORIZED, axum::Json(json!({ "ok": false }))),
                        }
                    }),
                )
                .route(
                    "/pages",
                    get(|Query(q): Query<std::collections::HashMap<String, String>>| async move {
                        let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(0);
                        let items: Vec<Value> = if page < 3 { vec![json!({ "page": page })] } else { vec![] };
                        axum::Json(Value::Array(items))
                    }),
                );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    format!("http://{}", rx.recv().unwrap())
}

struct Creds;
impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String> {
        assert_eq!(cred_type, "httpHeaderAuth");
        assert_eq!(reference["id"], "c1");
        Ok(json!({ "name": "x-api-key", "value": "k3y" }))
    }
}

fn run(params: Value, credentials: Option<Value>) -> engine::ExecutionState {
    let mut http = json!({ "name": "HTTP", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "parameters": params, "position": [0, 0] });
    if let Some(c) = credentials {
        http["credentials"] = c;
    }
    let wf = json!({
        "nodes": [{ "name": "T", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {} }, http],
        "connections": { "T": { "main": [[{ "node": "HTTP", "type": "main", "index": 0 }]] } },
        "settings": { "executionOrder": "v1" }
    });
    let settings = EngineSettings { allow_private_network: true, ..Default::default() };
    let host = Host { credentials: Some(Arc::new(Creds)), ..Default::default() };
    Engine::new(settings, host).run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap().0
}

fn out(st: &engine::ExecutionState) -> Vec<Value> {
    st.node_output("HTTP", 0).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

#[test]
fn credentials_full_response_never_error_and_api_errors() {
    let base = server();
    let st = run(
        json!({ "url": format!("{base}/secret"), "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth", "options": {} }),
        Some(json!({ "httpHeaderAuth": { "id": "c1", "name": "key" } })),
    );
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out(&st), vec![json!({ "ok": true })]);

    let st = run(json!({ "url": format!("{base}/secret"), "options": { "response": { "response": { "fullResponse": true, "neverError": true } } } }), None);
    assert_eq!(st.status, ExecutionStatus::Success);
    assert_eq!(out(&st)[0]["statusCode"], json!(401));
    assert_eq!(out(&st)[0]["body"], json!({ "ok": false }));

    let st = run(json!({ "url": format!("{base}/secret"), "options": {} }), None);
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap();
    assert_eq!(e.http_code.as_deref(), Some("401"));
    assert!(e.message.contains("Authorization failed"), "{}", e.message);
}

#[test]
fn pagination_updates_a_parameter_until_the_response_is_empty() {
    let base = server();
    let st = run(
        json!({
            "url": format!("{base}/pages"),
            "options": { "pagination": { "pagination": {
                "paginationMode": "updateAParameterInEachRequest",
                "parameters": { "parameters": [{ "type": "qs", "name": "page", "value": "={{ $pageCount }}" }] },
                "paginationCompleteWhen": "responseIsEmpty"
            } } }
        }),
        None,
    );
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out(&st), vec![json!({ "page": 0 }), json!({ "page": 1 }), json!({ "page": 2 })]);
}

#[test]
fn connection_errors_name_the_host_but_not_the_query() {
    // Nothing listens on port 9: the request fails before any response.
    let st = run(json!({ "url": "http://127.0.0.1:9/path?api_key=query-secret-123", "options": {} }), None);
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap();
    assert_eq!(e.message, "The service refused the connection - perhaps it is offline");
    let detail = e.description.unwrap_or_default();
    assert!(detail.contains("127.0.0.1:9"), "{detail}");
    assert!(!detail.contains("query-secret-123") && !detail.contains("/path"), "{detail}");
}

#[test]
fn refused_requests_name_the_host_but_not_the_query() {
    let wf = json!({
        "nodes": [
            { "name": "T", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {} },
            { "name": "HTTP", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "parameters": { "url": "http://10.1.2.3/x?token=query-secret-456", "options": {} }, "position": [0, 0] }
        ],
        "connections": { "T": { "main": [[{ "node": "HTTP", "type": "main", "index": 0 }]] } },
    });
    let st = Engine::new(EngineSettings::default(), Host::default()).run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap().0;
    let msg = st.error.map(|e| e.message).unwrap_or_default();
    assert!(msg.contains("refused") && msg.contains("10.1.2.3"), "{msg}");
    assert!(!msg.contains("query-secret-456"), "{msg}");
}
