//! Runs n8n's own node fixtures by the rules of conformance/README.md, for
//! both roots: `n8n/**` (round 1, every fixture must pass) and
//! `round2/n8n/**` (round 2, failures must be listed in
//! `conformance_round2_known_failures.txt`, and a listed fixture that passes
//! fails the test, so the list only shrinks).
//!
//! As n8n's `NodeTestHarness` does: pinData is the expected output, the run
//! starts at the trigger with `[{json:{}}]` (or the fixture's `trigger`
//! request), every pinned node must run exactly once and its first output
//! must deep-equal the pinned items (pairedItem dropped; binary compared only
//! where the expected item has some, without `data`/`directory`, like
//! `assertBinaryData`). HTTP requests are answered by local mock servers built
//! from `mocks.json` (one per base URL, which the workflow is pointed at).
//! The process runs in UTC, a workflow without `settings.timezone` gets n8n's
//! default `America/New_York`. What n8n's test files set up around a fixture
//! (a frozen clock, credentials, files, the process zone it was recorded in)
//! is in `conformance_env.json` ([`FixtureEnv`]); `CONFORMANCE_ENV` names
//! another such file to merge (for fixture sets kept outside the repository).
//! No fixture of n8n's is kept in this repository: what the nodes must do is
//! in our own tests (`nodes_data.rs`, `nodes_flow.rs`, ...).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once};

use base64::Engine as _;
use engine::host::{CredentialsProvider, FileProvider};
use engine::nodes::disk::ScratchDir;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, Item, RunOptions};
use serde_json::Value;

/// n8n's default instance timezone (`GENERIC_TIMEZONE`), for workflows that set none.
const DEFAULT_TIMEZONE: &str = "America/New_York";

const KNOWN_FAILURES: &str = include_str!("conformance_round2_known_failures.txt");

fn conformance_dir() -> PathBuf {
    match std::env::var("CONFORMANCE_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
    }
}

/// n8n runs its date tests with the process in UTC; QuickJS' `Date` reads `TZ`.
fn process_in_utc() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| std::env::set_var("TZ", "UTC"));
}

/// What a fixture's n8n test file sets up around it.
#[derive(Default, Clone, serde::Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
struct FixtureEnv {
    /// Fake timers: the wall time (`YYYY-MM-DDTHH:MM:SS`, the workflow's zone)
    /// the clock starts at; in-process waits move it on instead of sleeping.
    clock: Option<String>,
    /// The zone of the process that recorded the fixture (n8n's `TZ`), when not UTC.
    host_timezone: Option<String>,
    /// `setupTests({credentials})`: data by credential type.
    credentials: BTreeMap<String, Value>,
    /// A folder whose files the workflow finds under `/test/` (n8n's harness
    /// points `C:\Test\…` paths at the test's folder).
    files: Option<PathBuf>,
    /// Where the setting comes from (not read).
    why: Option<String>,
}

/// Environments by root (`n8n`, `round2`) and fixture path in it:
/// the repository's `conformance_env.json`, merged with `CONFORMANCE_ENV`'s.
fn fixture_envs() -> BTreeMap<String, BTreeMap<String, FixtureEnv>> {
    type Envs = BTreeMap<String, BTreeMap<String, FixtureEnv>>;
    let mut envs: Envs = serde_json::from_str(include_str!("conformance_env.json")).expect("conformance_env.json");
    if let Ok(path) = std::env::var("CONFORMANCE_ENV") {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("CONFORMANCE_ENV {path}: {e}"));
        let extra: Envs = serde_json::from_str(&text).unwrap_or_else(|e| panic!("CONFORMANCE_ENV {path}: {e}"));
        let base = Path::new(&path).parent().unwrap_or(Path::new(".")).to_path_buf();
        for (root, fixtures) in extra {
            for (name, mut env) in fixtures {
                env.files = env.files.map(|f| base.join(f));
                envs.entry(root.clone()).or_default().insert(name, env);
            }
        }
    }
    envs
}

/// Credentials from the fixture's environment, by type.
struct EnvCredentials(BTreeMap<String, Value>);
impl CredentialsProvider for EnvCredentials {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        self.0.get(cred_type).cloned().ok_or_else(|| format!("the test sets up no {cred_type} credentials"))
    }
}

/// The execution's files: n8n's Crypto test fakes `/test/binary.data` =
/// "test"; an environment's `files` folder is copied under `/test/`.
fn test_files(env: &FixtureEnv) -> Result<ScratchDir, String> {
    let dir = ScratchDir::new();
    dir.write("/test/binary.data", b"test", false)?;
    fn copy(dir: &ScratchDir, from: &Path, to: &str) -> Result<(), String> {
        for e in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?.flatten() {
            let name = format!("{to}/{}", e.file_name().to_string_lossy());
            if e.path().is_dir() {
                copy(dir, &e.path(), &name)?;
            } else {
                dir.write(&name, &std::fs::read(e.path()).map_err(|e| e.to_string())?, false)?;
            }
        }
        Ok(())
    }
    if let Some(from) = &env.files {
        copy(&dir, from, "/test")?;
    }
    Ok(dir)
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

// ---- mock HTTP servers ------------------------------------------------------

#[derive(Clone)]
struct Mock {
    method: String,
    path: String,
    status: u16,
    request_body: Value,
    request_headers: BTreeMap<String, String>,
    response_headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// Answers any number of requests (nock's `.persist()`).
    persist: bool,
}

impl Mock {
    fn from_record(m: &Value) -> Result<Mock, String> {
        let encoding = m["responseBodyEncoding"].as_str();
        let mut response_headers: Vec<(String, String)> = m["responseHeaders"]
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k.to_lowercase(), v.as_str().unwrap_or("").to_string())).collect())
            .unwrap_or_default();
        let body = match (encoding, &m["responseBody"]) {
            (Some("base64"), Value::String(s)) => base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| format!("mock body: {e}"))?,
            (Some("utf8"), Value::String(s)) => s.clone().into_bytes(),
            (Some(other), _) => return Err(format!("mock body encoding {other:?} unknown")),
            // nock: a string body is sent as is, anything else as JSON
            (None, Value::String(s)) => s.clone().into_bytes(),
            (None, v) => {
                if !response_headers.iter().any(|(k, _)| k == "content-type") {
                    response_headers.push(("content-type".into(), "application/json".into()));
                }
                serde_json::to_vec(v).map_err(|e| e.to_string())?
            }
        };
        Ok(Mock {
            method: m["method"].as_str().unwrap_or("GET").to_string(),
            path: m["path"].as_str().unwrap_or("/").to_string(),
            status: m["statusCode"].as_u64().unwrap_or(200) as u16,
            request_body: m["requestBody"].clone(),
            request_headers: m["requestHeaders"]
                .as_object()
                .map(|o| o.iter().map(|(k, v)| (k.to_lowercase(), v.as_str().unwrap_or("").to_string())).collect())
                .unwrap_or_default(),
            response_headers,
            body,
            persist: m["persist"].as_bool().unwrap_or(false),
        })
    }
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

/// Serves `mocks` on a loopback port; `rewrite` maps the fixture's base URLs
/// to the mock servers' in reply headers (redirect locations).
fn start_mock(mocks: Vec<Mock>, rewrite: Arc<Mutex<Vec<(String, String)>>>) -> MockServer {
    use axum::body::Bytes;
    use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
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
                let rewrite = rewrite.clone();
                async move {
                    let mut mocks = state.lock().expect("lock");
                    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    let pos = mocks.iter().position(|m| {
                        m.method.eq_ignore_ascii_case(method.as_str())
                            && same_target(&m.path, uri.path(), uri.query().unwrap_or(""))
                            && (m.request_body.is_null() || deep_eq(&m.request_body, &json_body))
                            && m.request_headers.iter().all(|(k, v)| headers.get(k.as_str()).and_then(|h| h.to_str().ok()) == Some(v.as_str()))
                    });
                    let Some(p) = pos else {
                        return (StatusCode::NOT_IMPLEMENTED, format!("no mock for {method} {uri}")).into_response();
                    };
                    let m = if mocks[p].persist { mocks[p].clone() } else { mocks.remove(p) };
                    let code = StatusCode::from_u16(m.status).unwrap_or(StatusCode::OK);
                    let mut reply = (code, m.body).into_response();
                    // like nock: no content type unless the record names one
                    reply.headers_mut().remove(axum::http::header::CONTENT_TYPE);
                    let map = rewrite.lock().expect("lock").clone();
                    for (k, v) in &m.response_headers {
                        let v = map.iter().fold(v.clone(), |v, (from, to)| v.replace(from, to));
                        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(&v)) {
                            reply.headers_mut().insert(k, v);
                        }
                    }
                    reply
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

/// The fixture's mock records, grouped by base URL.
fn mocks_for(dir: &Path, fixture: &str) -> Result<BTreeMap<String, Vec<Mock>>, String> {
    let Ok(text) = std::fs::read_to_string(dir.join("mocks.json")) else { return Ok(BTreeMap::new()) };
    let all: Vec<Value> = serde_json::from_str(&text).map_err(|e| format!("mocks.json: {e}"))?;
    let mut out: BTreeMap<String, Vec<Mock>> = BTreeMap::new();
    for m in all.iter().filter(|m| m["fixture"] == fixture) {
        let base = m["baseUrl"].as_str().ok_or("mock without baseUrl")?.trim_end_matches('/').to_string();
        out.entry(base).or_default().push(Mock::from_record(m)?);
    }
    Ok(out)
}

// ---- runner -------------------------------------------------------------------

/// The instant a frozen clock shows: `wall` in `timezone`.
fn frozen_clock(wall: &str, timezone: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    let tz = expression::tz::Tz::get(timezone).ok_or_else(|| format!("timezone {timezone}: unknown"))?;
    let naive = chrono::NaiveDateTime::parse_from_str(wall, "%Y-%m-%dT%H:%M:%S").map_err(|e| e.to_string())?;
    let local = naive.and_local_timezone(tz).single().ok_or("ambiguous frozen time")?;
    Ok(local.with_timezone(&chrono::Utc))
}

/// Expected and actual items as compared: `json`, plus `binary` metadata when expected.
fn comparable(item: &Value, binary: bool) -> Value {
    let mut out = serde_json::Map::new();
    // Pinned data saved by n8n's editor may hold bare json objects (no `json`
    // wrapper); n8n wraps those when it loads pinData.
    let bare = item.is_object() && item.get("json").is_none() && item.get("binary").is_none();
    let json = if bare { item.clone() } else { item.get("json").cloned().unwrap_or(Value::Object(Default::default())) };
    out.insert("json".into(), json);
    if binary {
        if let Some(Value::Object(b)) = item.get("binary") {
            let cleaned = b
                .iter()
                .map(|(k, v)| {
                    let mut v = v.clone();
                    if let Value::Object(o) = &mut v {
                        for skip in ["data", "directory", "id", "bytes"] {
                            o.remove(skip);
                        }
                    }
                    (k.clone(), v)
                })
                .collect();
            out.insert("binary".into(), Value::Object(cleaned));
        }
    }
    Value::Object(out)
}

fn run_fixture(path: &Path, env: &FixtureEnv) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut wf: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let expected = wf.as_object_mut().and_then(|o| o.remove("pinData")).unwrap_or(Value::Null);
    let trigger = wf.as_object_mut().and_then(|o| o.remove("trigger"));
    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
    let dir = path.parent().unwrap_or(Path::new("."));

    // One mock server per base URL; the workflow is pointed at them.
    let rewrite = Arc::new(Mutex::new(vec![]));
    let mut servers = vec![];
    let mut wf_text = serde_json::to_string(&wf).map_err(|e| e.to_string())?;
    // n8n's harness: `C:\Test\…` file paths are the test's folder.
    wf_text = wf_text.replace("C:\\\\Test\\\\", "/test/").replace("C:/Test/", "/test/");
    for (base, mocks) in mocks_for(dir, file)? {
        let server = start_mock(mocks, rewrite.clone());
        wf_text = wf_text.replace(&base, &server.base);
        rewrite.lock().map_err(|e| e.to_string())?.push((base, server.base.clone()));
        servers.push(server);
    }
    let wf: Value = serde_json::from_str(&wf_text).map_err(|e| e.to_string())?;

    let graph = Graph::from_json(&wf).map_err(|e| e.to_string())?;
    let timezone = graph.workflow.settings.timezone.clone().unwrap_or_else(|| DEFAULT_TIMEZONE.to_string());
    let mut settings = EngineSettings {
        allow_private_network: true,
        timezone: DEFAULT_TIMEZONE.into(),
        host_timezone: env.host_timezone.clone().unwrap_or_else(|| "UTC".into()),
        clock: env.clock.as_deref().map(|wall| frozen_clock(wall, &timezone)).transpose()?,
        // a fixture that loops forever fails instead of hanging the suite
        execution_timeout: Some(std::time::Duration::from_secs(20)),
        ..Default::default()
    };
    let mut opts = RunOptions::default();
    if let Some(t) = &trigger {
        if let Some(mode) = t["mode"].as_str() {
            settings.mode = mode.to_string();
        }
        if let Some(input) = t.get("input") {
            let item: Item = serde_json::from_value(input.clone()).map_err(|e| format!("trigger input: {e}"))?;
            opts.trigger_items = Some(vec![item]);
        }
    }
    let host = Host {
        files: Some(Arc::new(test_files(env)?)),
        credentials: Some(Arc::new(EnvCredentials(env.credentials.clone()))),
        ..Default::default()
    };
    let engine = Engine::new(settings, host);
    let (state, _) = engine.run(&graph, opts).map_err(|e| e.to_string())?;
    let mut problems = vec![];
    for (node, want) in expected.as_object().into_iter().flatten() {
        let Some(runs) = state.run_data.get(node) else {
            problems.push(format!("node '{node}' did not run"));
            continue;
        };
        let want_items = want.as_array().cloned().unwrap_or_default();
        let binary = want_items.iter().any(|i| i.get("binary").is_some());
        let got: Vec<Value> = runs
            .iter()
            .map(|r| {
                let items: Vec<Value> = r.output(0).map(|items| items.iter().map(|i| serde_json::to_value(i).unwrap_or(Value::Null)).collect()).unwrap_or_default();
                Value::Array(items.iter().map(|i| comparable(i, binary)).collect())
            })
            .collect();
        let want_runs = Value::Array(vec![Value::Array(want_items.iter().map(|i| comparable(i, binary)).collect())]);
        if !deep_eq(&Value::Array(got.clone()), &want_runs) {
            problems.push(format!("node '{node}': expected {want_runs} got {}", Value::Array(got)));
        }
    }
    if std::env::var("FIXTURE_RUNS").is_ok() {
        for (node, runs) in &state.run_data {
            println!("    {node}: {} run(s)", runs.len());
        }
    }
    if state.status != ExecutionStatus::Success {
        problems.push(format!("status {:?}: {:?}", state.status, state.error.map(|e| e.message)));
    }
    drop(servers);
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

/// Runs every fixture under `root` (filtered by `FIXTURE`) in the
/// environments listed for `env_root`: (name, result).
fn run_root(root: &Path, env_root: &str) -> Vec<(String, Result<(), String>)> {
    process_in_utc();
    let envs = fixture_envs().remove(env_root).unwrap_or_default();
    let files = fixtures(root);
    assert!(!files.is_empty(), "no fixtures found under {}", root.display());
    let filter = std::env::var("FIXTURE").ok();
    files
        .iter()
        .map(|f| (f.strip_prefix(root).unwrap_or(f).display().to_string(), f))
        .filter(|(name, _)| filter.as_ref().is_none_or(|x| name.contains(x.as_str())))
        .map(|(name, f)| {
            let r = run_fixture(f, envs.get(&name).unwrap_or(&FixtureEnv::default()));
            (name, r)
        })
        .collect()
}

#[test]
fn conformance() {
    let results = run_root(&conformance_dir().join("n8n"), "n8n");
    let failed: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
    println!("fixtures: {} passed, {} failed", results.len() - failed.len(), failed.len());
    for (name, e) in &failed {
        println!("  FAILED {name}\n    {}", e.as_ref().err().map(String::as_str).unwrap_or(""));
    }
    assert!(failed.is_empty(), "{} fixture(s) failed", failed.len());
}

/// The known-failures list: fixture paths under `round2/n8n/`, `#` comments.
fn known_failures() -> BTreeSet<String> {
    KNOWN_FAILURES
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn conformance_round2() {
    let root = conformance_dir().join("round2/n8n");
    let known = known_failures();
    let all: BTreeSet<String> = fixtures(&root).iter().map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string()).collect();
    let results = run_root(&root, "round2");
    let failed: Vec<_> = results.iter().filter(|(_, r)| r.is_err()).collect();
    println!(
        "fixtures round 2: {} passed, {} failed ({} on the known-failures list)",
        results.len() - failed.len(),
        failed.len(),
        known.len()
    );
    let mut problems = vec![];
    for (name, r) in &results {
        match (r, known.contains(name)) {
            (Err(e), false) => {
                println!("  FAILED {name}\n    {e}");
                problems.push(format!("{name} failed and is not a known failure"));
            }
            (Err(e), true) => println!("  known failure {name}\n    {e}"),
            (Ok(()), true) => problems.push(format!("{name} passes: delete it from conformance_round2_known_failures.txt")),
            (Ok(()), false) => {}
        }
    }
    for k in known.difference(&all) {
        problems.push(format!("{k} is listed as a known failure but is no fixture"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
