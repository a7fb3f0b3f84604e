//! Runs n8n's own node fixtures (conformance/n8n/**) by the rules of
//! conformance/README.md: pinData is the expected output, the run starts at
//! the trigger with `[{json:{}}]`, every pinned node must run exactly once and
//! its first output must deep-equal the pinned items (pairedItem and binary
//! dropped). HTTP fixtures are answered by a local mock built from mocks.json.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use engine::host::FileProvider;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::Value;

fn conformance_dir() -> PathBuf {
    match std::env::var("CONFORMANCE_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
    }
}

/// The fake file system of n8n's Crypto test: /test/binary.data = "test".
struct FakeFiles;
impl FileProvider for FakeFiles {
    fn read(&self, selector: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
        if selector == "/test/binary.data" {
            Ok(vec![(selector.to_string(), b"test".to_vec())])
        } else {
            Err(format!("no such file: {selector}"))
        }
    }
}

/// Jest `toEqual` on JSON: numbers by value, keys in any order.
fn deep_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| deep_eq(v, w))),
        _ => a == b,
    }
}

// ---- mock HTTP server -------------------------------------------------------

#[derive(Clone)]
struct Mock {
    method: String,
    path: String,
    status: u16,
    request_body: Value,
    response_body: Value,
    request_headers: BTreeMap<String, String>,
}

fn query_pairs(q: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = url::form_urlencoded::parse(q.as_bytes()).into_owned().collect();
    v.sort();
    v
}

fn same_target(mock_path: &str, path: &str, query: &str) -> bool {
    let (mp, mq) = mock_path.split_once('?').unwrap_or((mock_path, ""));
    mp == path && query_pairs(mq) == query_pairs(query)
}

struct MockServer {
    base: String,
    _stop: std::sync::mpsc::Sender<()>,
}

fn start_mock(mocks: Vec<Mock>) -> MockServer {
    use axum::body::Bytes;
    use axum::http::{HeaderMap, Method, StatusCode, Uri};
    use axum::response::IntoResponse;

    let state = Arc::new(Mutex::new(mocks));
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            addr_tx.send(listener.local_addr().expect("addr")).expect("send addr");
            let handler = move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = state.clone();
                async move {
                    let mut mocks = state.lock().expect("lock");
                    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let pos = mocks.iter().position(|m| {
                        m.method.eq_ignore_ascii_case(method.as_str())
                            && same_target(&m.path, uri.path(), uri.query().unwrap_or(""))
                            && (m.request_body.is_null() || deep_eq(&m.request_body, &json_body))
                            && m.request_headers.iter().all(|(k, v)| headers.get(k.as_str()).and_then(|h| h.to_str().ok()) == Some(v.as_str()))
                    });
                    match pos {
                        Some(p) => {
                            let m = mocks.remove(p);
                            let code = StatusCode::from_u16(m.status).unwrap_or(StatusCode::OK);
                            (code, axum::Json(m.response_body)).into_response()
                        }
                        None => (StatusCode::NOT_IMPLEMENTED, format!("no mock for {method} {uri}")).into_response(),
                    }
                }
            };
            let app = axum::Router::new().fallback(handler);
            let server = axum::serve(listener, app);
            tokio::select! {
                _ = server => {},
                _ = tokio::task::spawn_blocking(move || { let _ = stop_rx.recv(); }) => {},
            }
        });
    });
    let addr = addr_rx.recv().expect("mock server address");
    MockServer { base: format!("http://{addr}"), _stop: stop_tx }
}

fn mocks_for(dir: &Path, fixture: &str) -> (Vec<Mock>, Option<String>) {
    let Ok(text) = std::fs::read_to_string(dir.join("mocks.json")) else { return (vec![], None) };
    let all: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
    let mut base = None;
    let mocks = all
        .iter()
        .filter(|m| m["fixture"] == fixture)
        .map(|m| {
            base = m["baseUrl"].as_str().map(str::to_string);
            Mock {
                method: m["method"].as_str().unwrap_or("GET").to_string(),
                path: m["path"].as_str().unwrap_or("/").to_string(),
                status: m["statusCode"].as_u64().unwrap_or(200) as u16,
                request_body: m["requestBody"].clone(),
                response_body: m["responseBody"].clone(),
                request_headers: m["requestHeaders"]
                    .as_object()
                    .map(|o| o.iter().map(|(k, v)| (k.to_lowercase(), v.as_str().unwrap_or("").to_string())).collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    (mocks, base)
}

// ---- runner -------------------------------------------------------------------

fn run_fixture(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut wf: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let expected = wf.as_object_mut().and_then(|o| o.remove("pinData")).unwrap_or(Value::Null);
    let fixture = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let dir = path.parent().unwrap_or(Path::new("."));
    let (mocks, base) = mocks_for(dir, fixture);
    let _server = if let (false, Some(base)) = (mocks.is_empty(), base) {
        let server = start_mock(mocks);
        // Point the fixture's URLs at the local mock.
        let rewritten = serde_json::to_string(&wf).map_err(|e| e.to_string())?.replace(&base, &server.base);
        wf = serde_json::from_str(&rewritten).map_err(|e| e.to_string())?;
        Some(server)
    } else {
        None
    };
    let graph = Graph::from_json(&wf).map_err(|e| e.to_string())?;
    let settings = EngineSettings { allow_private_network: true, ..Default::default() };
    let host = Host { files: Some(Arc::new(FakeFiles)), ..Default::default() };
    let engine = Engine::new(settings, host);
    let (state, _) = engine.run(&graph, RunOptions::default()).map_err(|e| e.to_string())?;
    let mut problems = vec![];
    for (node, want) in expected.as_object().into_iter().flatten() {
        let Some(runs) = state.run_data.get(node) else {
            problems.push(format!("node '{node}' did not run"));
            continue;
        };
        let got: Vec<Value> = runs
            .iter()
            .map(|r| Value::Array(r.output(0).map(|items| items.iter().map(|i| serde_json::json!({ "json": i.json })).collect()).unwrap_or_default()))
            .collect();
        let want_runs = Value::Array(vec![Value::Array(
            want.as_array().into_iter().flatten().map(|i| serde_json::json!({ "json": i["json"] })).collect(),
        )]);
        if !deep_eq(&Value::Array(got.clone()), &want_runs) {
            problems.push(format!("node '{node}': expected {want_runs} got {}", Value::Array(got)));
        }
    }
    if state.status != ExecutionStatus::Success {
        problems.push(format!("status {:?}: {:?}", state.status, state.error.map(|e| e.message)));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n    "))
    }
}

fn fixtures(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(fixtures(&p));
        } else if p.extension().is_some_and(|x| x == "json") && p.file_name().is_some_and(|f| f != "mocks.json") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn conformance() {
    let root = conformance_dir().join("n8n");
    let files = fixtures(&root);
    assert!(!files.is_empty(), "no fixtures found under {}", root.display());
    let filter = std::env::var("FIXTURE").ok();
    let mut failed = vec![];
    let mut passed = 0;
    for f in &files {
        let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        if filter.as_ref().is_some_and(|x| !name.contains(x.as_str())) {
            continue;
        }
        match run_fixture(f) {
            Ok(()) => passed += 1,
            Err(e) => failed.push((name, e)),
        }
    }
    println!("fixtures: {} passed, {} failed", passed, failed.len());
    for (name, e) in &failed {
        println!("  FAILED {name}\n    {e}");
    }
    assert!(failed.is_empty(), "{} fixture(s) failed", failed.len());
}
