//! The durable local stack, as `run.sh` runs it: `moto_server.py --state`
//! and `local-cloud serve` as separate processes. A workflow, a credential
//! and a thread made through the public API survive stopping both (SIGTERM,
//! and separately SIGKILL once moto reports the writes saved), and the API
//! key printed by the first start still works after each restart.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SAVE_INTERVAL_MS: &str = "200";
const TOKEN: &str = "kept-token-123456";

/// A service that answers 200 only to `Authorization: Bearer TOKEN`.
async fn token_checker() -> String {
    let app = axum::Router::new().route(
        "/ping",
        axum::routing::get(|headers: http::HeaderMap| async move {
            let bearer = headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"));
            if bearer { http::StatusCode::OK } else { http::StatusCode::UNAUTHORIZED }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Stack {
    moto: Child,
    cloud: Child,
    moto_url: String,
    base: String,
    /// The key this start printed for the user `local`.
    printed_key: String,
}

enum Stop {
    Term,
    Kill,
}

impl Stack {
    async fn start(state: &Path, data_key: &str) -> Stack {
        let moto_port = free_port();
        let python = std::env::var("INSTANCE_AI_PYTHON").unwrap_or_else(|_| "python3".into());
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("moto_server.py");
        let moto = Command::new(python)
            .arg(script)
            .args(["-H", "127.0.0.1", "-p", &moto_port.to_string(), "--save-interval-ms", SAVE_INTERVAL_MS, "--state"])
            .arg(state.join("moto.pickle"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server.py");
        let moto_url = format!("http://127.0.0.1:{moto_port}");
        let http = reqwest::Client::new();
        wait_for(|| http.get(format!("{moto_url}/moto-api/")).send(), "moto_server").await;

        let port = free_port();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/agent_script.json");
        let mut cloud = Command::new(env!("CARGO_BIN_EXE_local-cloud"))
            .arg("serve")
            .env("AWS_ENDPOINT_URL", &moto_url)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("INSTANCE_AI_PORT", port.to_string())
            .env("INSTANCE_AI_LOCAL_PREFIX", "ia")
            .env("INSTANCE_AI_LOCAL_DATA_KEY", data_key)
            .env("INSTANCE_AI_MODEL", format!("scripted:{}", script.display()))
            .env("INSTANCE_AI_LOG_FORMAT", "text")
            .env("RUST_LOG", "warn")
            .env("INSTANCE_AI_HTTP_ALLOWED_HOSTS", "127.0.0.1")
            .env("INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK", "true")
            .env_remove("INSTANCE_AI_BOOTSTRAP_KEYS")
            .env_remove("INSTANCE_AI_PUBLIC_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start local-cloud serve");
        let stdout = cloud.stdout.take().unwrap();
        // Read to the end: a closed pipe would fail the cloud's next print.
        let (key_tx, key_rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut key_tx = Some(key_tx);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(key) = line.trim().strip_prefix("API key for local: ") {
                    if let Some(tx) = key_tx.take() {
                        let _ = tx.send(key.to_owned());
                    }
                }
            }
        });
        let printed_key = key_rx.await.expect("local-cloud printed an API key");
        let base = format!("http://127.0.0.1:{port}");
        wait_for(|| http.get(format!("{base}/healthz")).send(), "local cloud").await;
        Stack { moto, cloud, moto_url, base, printed_key }
    }

    /// Waits until moto reports every write so far saved to its file.
    async fn saved(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let s: Value = reqwest::get(format!("{}/_state", self.moto_url)).await.unwrap().json().await.unwrap();
            if s["written"].as_u64() > Some(0) && s["saved"] == s["written"] {
                return;
            }
            assert!(Instant::now() < deadline, "moto never caught up saving: {s}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops the local cloud, then moto, the way `run.sh` does (SIGTERM) or
    /// as a crash would (SIGKILL).
    fn stop(mut self, how: Stop) {
        for child in [&mut self.cloud, &mut self.moto] {
            match how {
                Stop::Term => {
                    let ok = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success();
                    assert!(ok, "kill -TERM");
                }
                Stop::Kill => child.kill().unwrap(),
            }
            child.wait().unwrap();
        }
    }

    async fn call(&self, key: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = reqwest::Client::new().request(method, format!("{}{path}", self.base)).bearer_auth(key);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    async fn mcp(&self, key: &str, tool: &str, args: Value) -> Value {
        let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
        let (status, body) = self.call(key, reqwest::Method::POST, "/mcp", Some(rpc)).await;
        assert_eq!(status, 200, "{body}");
        assert_ne!(body["result"]["isError"], true, "{tool}: {body}");
        body["result"]["structuredContent"].clone()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.cloud.kill();
        let _ = self.moto.kill();
    }
}

async fn wait_for<F, Fut>(probe: F, what: &str)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !probe().await.is_ok_and(|r| r.status().is_success()) {
        assert!(Instant::now() < deadline, "{what} did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What one person made: ids to find again.
struct Made {
    workflow: String,
    credential: String,
    thread: String,
}

async fn make_things(stack: &Stack, key: &str, n: u32, service: &str) -> Made {
    let code = format!(
        "export default workflow('durable-{n}', 'Kept across restarts {n}').add(trigger({{ type: 'n8n-nodes-base.manualTrigger', version: 1, config: {{ name: 'Start' }} }}));"
    );
    let workflow = stack.mcp(key, "create_workflow_from_code", json!({"code": code})).await["workflowId"].as_str().unwrap().to_owned();
    let credential = json!({"name": format!("Kept key {n}"), "type": "httpBearerAuth", "data": {"token": TOKEN, "testUrl": format!("{service}/ping")}});
    let (status, created) = stack.call(key, reqwest::Method::POST, "/instance-ai/credentials", Some(credential)).await;
    assert_eq!(status, 201, "{created}");
    let thread = format!("durable-thread-{n}");
    let (status, body) =
        stack.call(key, reqwest::Method::POST, &format!("/instance-ai/chat/{thread}"), Some(json!({"message": "Say hello"}))).await;
    assert!(status < 300, "{status} {body}");
    // The agent's answer is in the thread (the run went through the Steps queue).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, messages) = stack.call(key, reqwest::Method::GET, &format!("/instance-ai/threads/{thread}/messages"), None).await;
        let (_, status) = stack.call(key, reqwest::Method::GET, &format!("/instance-ai/threads/{thread}/status"), None).await;
        if messages.to_string().contains("Hello! How can I help you today?") && status["hasActiveRun"] == false {
            break;
        }
        assert!(Instant::now() < deadline, "the chat turn did not finish: {messages}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Made { workflow, credential: created["id"].as_str().unwrap().to_owned(), thread }
}

/// Everything `made` holds is there, read through the public API with `key`.
async fn find_things(stack: &Stack, key: &str, made: &Made, n: u32) {
    let details = stack.mcp(key, "get_workflow_details", json!({"workflowId": made.workflow})).await;
    assert_eq!(details["workflow"]["name"], format!("Kept across restarts {n}"), "{details}");

    let (status, credential) =
        stack.call(key, reqwest::Method::GET, &format!("/instance-ai/credentials/{}", made.credential), None).await;
    assert_eq!(status, 200, "{credential}");
    assert_eq!(credential["name"], format!("Kept key {n}"));

    let (status, threads) = stack.call(key, reqwest::Method::GET, "/instance-ai/threads", None).await;
    assert_eq!(status, 200, "{threads}");
    assert!(threads.to_string().contains(&made.thread), "thread {} missing: {threads}", made.thread);
    let (status, messages) =
        stack.call(key, reqwest::Method::GET, &format!("/instance-ai/threads/{}/messages", made.thread), None).await;
    assert_eq!(status, 200);
    let text = messages.to_string();
    assert!(text.contains("Say hello") && text.contains("Hello! How can I help you today?"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_and_the_api_key_survive_sigterm_and_sigkill() {
    let state = std::env::temp_dir().join(format!("ia-durable-{}", uuid::Uuid::new_v4()));
    let data_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="; // 32 bytes, this test's only
    let service = token_checker().await;

    let first = Stack::start(&state, data_key).await;
    let key = first.printed_key.clone();
    let one = make_things(&first, &key, 1, &service).await;
    first.stop(Stop::Term);

    let second = Stack::start(&state, data_key).await;
    find_things(&second, &key, &one, 1).await;
    let (status, _) = second.call("ia_not-a-key", reqwest::Method::GET, "/instance-ai/threads", None).await;
    assert_eq!(status, 401, "an unknown key is still refused");
    let two = make_things(&second, &key, 2, &service).await;
    second.saved().await;
    second.stop(Stop::Kill);

    let third = Stack::start(&state, data_key).await;
    find_things(&third, &key, &one, 1).await;
    find_things(&third, &key, &two, 2).await;
    // The credential's secret still decrypts: its connection test reaches
    // the service with the token.
    let (status, tested) =
        third.call(&key, reqwest::Method::POST, &format!("/instance-ai/credentials/{}/test", one.credential), None).await;
    assert_eq!(status, 200, "{tested}");
    assert_eq!(tested["success"], true, "{tested}");
    drop(third);
    let _ = std::fs::remove_dir_all(&state);
}
