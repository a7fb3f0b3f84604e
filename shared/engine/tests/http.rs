//! HTTP Request against a local server: credentials through the host,
//! full response, never-error, API errors, pagination.

use std::sync::Arc;

use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

fn server() -> String {
    use axum::extract::Query;
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};
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
                )
                // what a page request sent: its content type and the form fields it carried
                .route(
                    "/form-pages",
                    post(|h: HeaderMap, body: axum::body::Bytes| async move {
                        let ct = h.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                        let text = String::from_utf8_lossy(&body).to_string();
                        let fields: Vec<(String, String)> = if ct.starts_with("multipart/form-data") {
                            text.split("Content-Disposition: form-data; name=\"")
                                .skip(1)
                                .map(|p| {
                                    let (name, rest) = p.split_once('"').unwrap_or((p, ""));
                                    let value = rest.trim_start_matches("\r\n\r\n").split("\r\n").next().unwrap_or("");
                                    (name.to_string(), value.to_string())
                                })
                                .collect()
                        } else {
                            url::form_urlencoded::parse(&body).into_owned().collect()
                        };
                        let skip: usize = fields.iter().find(|(k, _)| k == "skip").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
                        let kind = ct.split(';').next().unwrap_or("").to_string();
                        let items: Vec<Value> = if skip < 4 { vec![json!({ "kind": kind, "fields": fields })] } else { vec![] };
                        axum::Json(Value::Array(items))
                    }),
                )
                .route("/same", get(|| async { axum::Json(json!([{ "id": 1 }])) }));
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
fn pagination_merges_body_parameters_into_form_bodies() {
    let base = server();
    for (content_type, kind) in [("multipart-form-data", "multipart/form-data"), ("form-urlencoded", "application/x-www-form-urlencoded")] {
        let st = run(
            json!({
                "method": "POST",
                "url": format!("{base}/form-pages"),
                "sendBody": true,
                "contentType": content_type,
                "bodyParameters": { "parameters": [{ "name": "limit", "value": "2" }, { "name": "skip", "value": "0" }, { "name": "tag", "value": "x" }] },
                "options": { "pagination": { "pagination": {
                    "parameters": { "parameters": [{ "type": "body", "name": "skip", "value": "={{ $pageCount * 2 }}" }] }
                } } }
            }),
            None,
        );
        assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
        // every page keeps the form's other fields, in their places, and its encoding
        let fields = |skip: &str| json!({ "kind": kind, "fields": [["limit", "2"], ["skip", skip], ["tag", "x"]] });
        assert_eq!(out(&st), vec![fields("0"), fields("2")], "{content_type}");
    }
}

#[test]
fn a_failed_page_leaves_only_the_error_item() {
    let base = server();
    // The same page over and over: n8n stops after the fourth identical answer.
    let mut st = run(
        json!({
            "url": format!("{base}/same"),
            "options": { "pagination": { "pagination": { "parameters": { "parameters": [{ "name": "constant", "value": "0" }] } } } }
        }),
        None,
    );
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(st.error.take().map(|e| e.message).as_deref(), Some("The returned response was identical 5x, so requests got stopped"));

    let wf_params = json!({
        "url": format!("{base}/same"),
        "options": { "pagination": { "pagination": { "parameters": { "parameters": [{ "name": "constant", "value": "0" }] } } } }
    });
    let wf = json!({
        "nodes": [
            { "name": "T", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {} },
            { "name": "HTTP", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.1, "parameters": wf_params, "continueOnFail": true }
        ],
        "connections": { "T": { "main": [[{ "node": "HTTP", "type": "main", "index": 0 }]] } },
    });
    let settings = EngineSettings { allow_private_network: true, ..Default::default() };
    let st = Engine::new(settings, Host::default()).run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap().0;
    assert_eq!(st.status, ExecutionStatus::Success);
    // the pages fetched before the failure are not items
    let items = out(&st);
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["error"]["name"], "NodeOperationError");
    assert_eq!(items[0]["error"]["message"], "The returned response was identical 5x, so requests got stopped");
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
