//! A local stand-in server that records every request, a credentials
//! provider, and a workflow runner with the service's origin sent to it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, ExecutionState, Graph, Host, RunOptions};
use serde_json::{json, Value};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    /// The query as sent (repeated names kept).
    pub raw_query: String,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the server answers.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, v: Value) -> Reply {
        Reply { status, headers: vec![("content-type", "application/json; charset=utf-8".into())], body: v.to_string().into_bytes() }
    }
    pub fn empty(status: u16) -> Reply {
        Reply { status, headers: vec![], body: vec![] }
    }
}

pub struct Server {
    pub base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Every request so far, and forgets them.
    pub fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// Serves `answer` on a free local port.
pub fn serve(answer: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Server {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    let answer = Arc::new(answer);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().fallback(move |method: axum::http::Method, uri: axum::http::Uri, headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (log, answer) = (log.clone(), answer.clone());
                async move {
                    let query = url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).into_owned().collect();
                    let headers = headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect();
                    let s = Seen { method: method.to_string(), path: uri.path().to_owned(), query, raw_query: uri.query().unwrap_or("").to_owned(), headers, body: body.to_vec() };
                    let reply = answer(&s);
                    log.lock().unwrap().push(s);
                    let mut r = axum::response::Response::builder().status(reply.status);
                    for (k, v) in reply.headers {
                        r = r.header(k, v);
                    }
                    r.body(axum::body::Body::from(reply.body)).unwrap()
                }
            });
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    Server { base: format!("http://{}", rx.recv().unwrap()), seen }
}

/// Credential data by type.
pub struct Creds(pub BTreeMap<String, Value>);

impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        self.0.get(cred_type).cloned().ok_or_else(|| format!("no {cred_type} credential"))
    }
}

pub fn engine(creds: &[(&str, Value)], overrides: &[(&str, &str)]) -> Engine {
    let settings = EngineSettings {
        allow_private_network: true,
        origin_overrides: overrides.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
        ..Default::default()
    };
    let creds = Creds(creds.iter().map(|(t, v)| (t.to_string(), v.clone())).collect());
    Engine::new(settings, Host { credentials: Some(Arc::new(creds)), ..Default::default() })
}

/// Manual Trigger → Code (returns `input`) → the service node.
pub fn run_node(engine: &Engine, node: Value, input: Value) -> ExecutionState {
    let mut node = node;
    node["name"] = json!("Service");
    node["position"] = json!([400, 0]);
    let code = format!("return {};", input);
    let wf = json!({
        "nodes": [
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
            {"name": "Input", "type": "n8n-nodes-base.code", "typeVersion": 2, "parameters": {"jsCode": code}, "position": [200, 0]},
            node
        ],
        "connections": {
            "Start": {"main": [[{"node": "Input", "type": "main", "index": 0}]]},
            "Input": {"main": [[{"node": "Service", "type": "main", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"}
    });
    engine.run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap().0
}

pub fn output(st: &ExecutionState) -> Vec<Value> {
    st.node_output("Service", 0).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}
