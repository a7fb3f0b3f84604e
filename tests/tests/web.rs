//! The web page end to end: the local cloud in-process with the scripted
//! model (`tests/fixtures/web_script.json`) and stand-in domain tools, then
//!
//! - over plain HTTP: the page and its assets (hashed names, caching, gzip,
//!   CSP), CORS on the SSE endpoint, `GET /instance-ai/threads` and the
//!   per-task cancel route;
//! - in Debian's Chromium driven by Playwright (`tests/web/browser_e2e.py`,
//!   run with `$INSTANCE_AI_PYTHON`): every state of the page, a screenshot
//!   of each under `<target>/tmp/web-e2e/`, and the page's weight and time
//!   to first rendered event, printed.
//!
//! The page is served from `http://127.0.0.1:<port>` and told to read SSE
//! from `http://sse.localhost:<port>` — another origin, as the Function URL
//! is in AWS — so the browser really goes through CORS. In the browser test
//! that origin is a TCP proxy the script runs, so it can drop the streams.

use agent::tools::{Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use local_cloud::{start, Options, Running};
use protocol::events::{ConfirmationRequest, DomainAccess, Severity};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::testing::TestEnv;

const ALICE: &str = "alice-key-for-web-tests";
const BOB: &str = "bob-key-for-web-tests";

/// `workflows`: list answers three; delete needs approval (named, with
/// details); setup opens the per-node setup card.
struct Workflows;

impl Tool for Workflows {
    fn name(&self) -> &'static str {
        "workflows"
    }
    fn description(&self) -> &'static str {
        "Workflows (test stand-in)"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"action": {"type": "string"}, "workflowId": {"type": "string"}}, "required": ["action"]})
    }
    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let mut req = ConfirmationRequest::approval("", "", "workflows", Map::new(), Severity::Warning, "");
        let gate = match args["action"].as_str() {
            Some("delete") => {
                let id = args["workflowId"].as_str().unwrap_or_default();
                req.message = format!("Archive workflow {id}? It stops running and moves to the archive.");
                req.resource_name = Some(format!("Scratch {id}"));
                req.approval_details = Some(json!({"workflow": format!("Scratch {id}"), "nodes": 4, "lastRun": "2 days ago"}));
                Some(Gate::permission(req, "workflows.delete"))
            }
            Some("setup") => {
                req.severity = Severity::Info;
                req.message = "Finish setting up Invoice digest".into();
                req.workflow_id = args["workflowId"].as_str().map(str::to_owned);
                req.setup_requests = Some(vec![
                    json!({"node": {"name": "Fetch invoices", "type": "n8n-nodes-base.httpRequest"}, "credentialType": "httpHeaderAuth", "isTrigger": false}),
                    json!({"node": {"name": "Every morning", "type": "n8n-nodes-base.scheduleTrigger"}, "isTrigger": true, "parameterIssues": ["Pick the hour it should run"]}),
                ]);
                Some(Gate::question(req, Vec::new()))
            }
            _ => None,
        };
        Box::pin(async move { Ok(gate) })
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match args["action"].as_str() {
                Some("list") => ToolOutcome::Done(json!({"workflows": [
                    {"id": "1", "name": "Weather", "active": true},
                    {"id": "2", "name": "CRM sync", "active": false},
                    {"id": "3", "name": "Backup", "active": true}
                ]})),
                Some("setup") => ToolOutcome::Done(json!({"completedNodes": [], "nodesStillNeedingSetup": ["Fetch invoices"]})),
                _ => ToolOutcome::Done(json!({"archived": args["workflowId"]})),
            }
        })
    }
}

/// `fetch-page`: asks for access to the URL's host.
struct FetchPage;

impl Tool for FetchPage {
    fn name(&self) -> &'static str {
        "fetch-page"
    }
    fn description(&self) -> &'static str {
        "Fetches a web page (test stand-in)"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]})
    }
    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let url = args["url"].as_str().unwrap_or_default().to_owned();
        let host = url.split('/').nth(2).unwrap_or_default().to_owned();
        let mut req = ConfirmationRequest::approval("", "", "fetch-page", Map::new(), Severity::Info, format!("Fetch {url}?"));
        req.domain_access = Some(DomainAccess { url, host });
        let gate = Gate::permission(req, "research.fetch-url");
        Box::pin(async move { Ok(Some(gate)) })
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, _args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::Done(json!({"status": 200, "title": "Pricing"})) })
    }
}

/// `credentials(action="setup")`: the credential card.
struct Credentials;

impl Tool for Credentials {
    fn name(&self) -> &'static str {
        "credentials"
    }
    fn description(&self) -> &'static str {
        "Credentials (test stand-in)"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"action": {"type": "string"}, "credentials": {"type": "array"}}, "required": ["action"]})
    }
    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let mut req = ConfirmationRequest::approval("", "", "credentials", Map::new(), Severity::Info, "Connect Slack to post the alerts");
        let mut requests = args["credentials"].as_array().cloned().unwrap_or_default();
        for r in &mut requests {
            r["existingCredentials"] = json!([]);
        }
        req.credential_requests = Some(requests);
        let gate = Gate::question(req, Vec::new());
        Box::pin(async move { Ok(Some(gate)) })
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, _args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::Done(json!({"success": true})) })
    }
}

/// A tool that takes a minute unless aborted.
struct Slow;

impl Tool for Slow {
    fn name(&self) -> &'static str {
        "slow"
    }
    fn description(&self) -> &'static str {
        "Takes a long time (test)"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, _args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            tokio::select! {
                _ = ctx.abort.cancelled() => ToolOutcome::Failed("aborted".into()),
                _ = tokio::time::sleep(Duration::from_secs(60)) => ToolOutcome::Done(json!({"slow": "done"})),
            }
        })
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The cloud, with the page told that SSE lives on another origin
/// (`sse.localhost:<sse_port>`: the cloud's own port, or the browser test's
/// proxy in front of it).
async fn cloud() -> Running {
    let port = free_port();
    cloud_with_sse(port, port).await
}

async fn cloud_with_sse(port: u16, sse_port: u16) -> Running {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), ALICE.into()), ("bob".into(), BOB.into())];
    config.model = Some(format!("scripted:{}/fixtures/web_script.json", env!("CARGO_MANIFEST_DIR")));
    config.web_origins = vec![format!("http://127.0.0.1:{port}")];
    config.events_url = Some(format!("http://sse.localhost:{sse_port}"));
    let running = start(Options { config, prefix: env.prefix.clone(), port, run_consumers: true, run_schedules: false })
        .await
        .expect("local cloud starts");
    let mut rt = agent::Runtime::from_config(&running.app.config, &running.app.clients).await.expect("runtime");
    for tool in [Arc::new(Workflows) as Arc<dyn Tool>, Arc::new(FetchPage), Arc::new(Credentials), Arc::new(Slow)] {
        rt.tools.register(tool);
    }
    rt.settings.cancel_poll = Duration::from_millis(200);
    running.app.agent.set(Arc::new(rt)).expect("runtime not yet built");
    running
}

async fn get(http: &reqwest::Client, url: &str, key: &str) -> (u16, Value) {
    let r = http.get(url).bearer_auth(key).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn post(http: &reqwest::Client, url: &str, key: &str, body: Value) -> (u16, Value) {
    let r = http.post(url).bearer_auth(key).json(&body).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Polls the messages of a thread until `done` holds (or fails after 20 s).
async fn wait_messages(http: &reqwest::Client, base: &str, thread: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, page) = get(http, &format!("{base}/instance-ai/threads/{thread}/messages"), ALICE).await;
        if status == 200 && done(&page) {
            return page;
        }
        assert!(Instant::now() < deadline, "thread {thread} never reached the state: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn page_assets_are_hashed_cached_compressed_and_under_a_strict_csp() {
    let cloud = cloud().await;
    let base = cloud.base_url();
    let http = reqwest::Client::new();
    let r = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(r.status(), 200, "the page needs no key");
    assert_eq!(r.headers()["cache-control"], "no-cache");
    let csp = r.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'") && !csp.contains("unsafe"), "{csp}");
    assert!(csp.contains(&format!("connect-src 'self' http://sse.localhost:{}", cloud.addr.port())), "{csp}");
    let html = r.text().await.unwrap();
    let app = html.split("src=\"").nth(1).and_then(|s| s.split('"').next()).unwrap().to_owned();
    assert!(app.starts_with("/assets/app.") && app.ends_with(".js") && app.len() > "/assets/app..js".len() + 8, "{app}");

    let r = http.get(format!("{base}{app}")).header("accept-encoding", "gzip").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(r.headers()["content-encoding"], "gzip");
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/javascript"));
    let etag = r.headers()["etag"].to_str().unwrap().to_owned();
    let r = http.get(format!("{base}{app}")).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(r.status(), 304);
    let plain = http.get(format!("{base}{app}")).send().await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none());
    let text = plain.text().await.unwrap();
    assert!(text.contains("from './api."), "imports point at hashed modules: {}", &text[..300.min(text.len())]);
    assert_eq!(http.get(format!("{base}/assets/app.js")).send().await.unwrap().status(), 404, "unhashed names are not served");
    assert_eq!(http.get(format!("{base}/assets/..%2Fsecret")).send().await.unwrap().status(), 404);
    cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sse_endpoint_answers_cors_for_the_page_origin_only() {
    let cloud = cloud().await;
    let base = cloud.base_url();
    let page = format!("http://127.0.0.1:{}", cloud.addr.port());
    let http = reqwest::Client::new();
    let url = format!("{base}/instance-ai/events/t-none");
    let pre = |origin: &str| {
        http.request(reqwest::Method::OPTIONS, &url)
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization,last-event-id")
            .send()
    };
    let ok = pre(&page).await.unwrap();
    assert_eq!(ok.status(), 204);
    assert_eq!(ok.headers()["access-control-allow-origin"], page.as_str());
    assert!(ok.headers()["access-control-allow-headers"].to_str().unwrap().contains("last-event-id"));
    let evil = pre("https://evil.example").await.unwrap();
    assert!(evil.headers().get("access-control-allow-origin").is_none(), "a stranger origin is not allowed");
    // The page can read errors too (here: no key).
    let r = http.get(&url).header("origin", &page).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["access-control-allow-origin"], page.as_str());
    cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn threads_list_only_the_owners_threads_newest_first_with_titles() {
    let cloud = cloud().await;
    let base = cloud.base_url();
    let http = reqwest::Client::new();
    let (status, list) = get(&http, &format!("{base}/instance-ai/threads"), ALICE).await;
    assert_eq!((status, list["threads"].as_array().map(Vec::len)), (200, Some(0)));
    for t in ["t-list-a", "t-list-b"] {
        let (status, _) = post(&http, &format!("{base}/instance-ai/chat/{t}"), ALICE, json!({"message": "List my workflows"})).await;
        assert_eq!(status, 200);
        wait_messages(&http, &base, t, |p| p["messages"].as_array().is_some_and(|m| m.iter().any(|m| m["status"] == "completed"))).await;
    }
    let (_, list) = get(&http, &format!("{base}/instance-ai/threads"), ALICE).await;
    let ids: Vec<&str> = list["threads"].as_array().unwrap().iter().map(|t| t["threadId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["t-list-b", "t-list-a"], "most recently active first");
    let first = &list["threads"][0];
    assert_eq!(first["title"], "List my workflows");
    assert_eq!(first["preview"], "List my workflows");
    assert_eq!(first["hasActiveRun"], false);
    assert!(first["lastActivityAt"].as_u64().unwrap() >= first["createdAt"].as_u64().unwrap() * 1000);
    let (_, page) = get(&http, &format!("{base}/instance-ai/threads?limit=1"), ALICE).await;
    assert_eq!(page["threads"].as_array().unwrap().len(), 1);
    let next = page["nextBefore"].as_str().unwrap();
    let (_, rest) = get(&http, &format!("{base}/instance-ai/threads?limit=1&before={next}"), ALICE).await;
    assert_eq!(rest["threads"][0]["threadId"], "t-list-a");
    assert!(rest.get("nextBefore").is_none());
    let (_, bobs) = get(&http, &format!("{base}/instance-ai/threads"), BOB).await;
    assert_eq!(bobs["threads"], json!([]), "bob sees none of alice's threads");
    assert_eq!(get(&http, &format!("{base}/instance-ai/threads"), "wrong-key").await.0, 401);
    assert_eq!(get(&http, &format!("{base}/instance-ai/threads?limit=0"), ALICE).await.0, 400);
    cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_background_task_is_stopped_by_its_own_cancel_route() {
    let cloud = cloud().await;
    let base = cloud.base_url();
    let http = reqwest::Client::new();
    let t = "t-task-cancel";
    post(&http, &format!("{base}/instance-ai/chat/{t}"), ALICE, json!({"message": "Plan a long build"})).await;
    let page = wait_messages(&http, &base, t, |p| p.to_string().contains("awaiting-confirmation")).await;
    let tree = &page["messages"][1]["agentTree"];
    let request = tree["toolCalls"][0]["confirmation"]["requestId"].as_str().unwrap().to_owned();
    assert_eq!(post(&http, &format!("{base}/instance-ai/confirm/{request}"), ALICE, json!({"approved": true})).await.0, 200);
    // The task's agent is busy in the slow tool.
    wait_messages(&http, &base, t, |p| p.to_string().contains("\"toolName\":\"slow\"")).await;
    let url = format!("{base}/instance-ai/chat/{t}/tasks/slow1/cancel");
    assert_eq!(post(&http, &url, BOB, json!({})).await.0, 404, "a stranger's task is not found");
    assert_eq!(post(&http, &format!("{base}/instance-ai/chat/{t}/tasks/nope/cancel"), ALICE, json!({})).await.0, 404);
    let (status, out) = post(&http, &url, ALICE, json!({})).await;
    assert_eq!((status, &out), (200, &json!({"taskId": "slow1", "cancelled": true})));
    let page = wait_messages(&http, &base, t, |p| {
        p["messages"][1]["agentTree"]["children"].as_array().is_some_and(|c| c.iter().any(|a| a["status"] != "active"))
    })
    .await;
    let child = &page["messages"][1]["agentTree"]["children"][0];
    assert_eq!(child["status"], "cancelled", "{child}");
    assert_eq!(child["title"], "Long import");
    let (status, out) = post(&http, &url, ALICE, json!({})).await;
    assert_eq!((status, out["cancelled"].clone()), (200, json!(false)), "idempotent: already finished");
    cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_page_works_in_chromium() {
    let chromium = std::env::var("INSTANCE_AI_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "{chromium} is missing: install Debian's chromium (infra/local/env.sh does: apt-get install -y chromium)"
    );
    let sse_port = free_port();
    let cloud = cloud_with_sse(free_port(), sse_port).await;
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-e2e");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let python = std::env::var("INSTANCE_AI_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = format!("{}/web/browser_e2e.py", env!("CARGO_MANIFEST_DIR"));
    let mut child = tokio::process::Command::new(&python)
        .arg(&script)
        .arg("--url")
        .arg(cloud.base_url())
        .arg("--alice")
        .arg(ALICE)
        .arg("--bob")
        .arg(BOB)
        .arg("--out")
        .arg(&out)
        .arg("--chromium")
        .arg(&chromium)
        .arg("--sse-port")
        .arg(sse_port.to_string())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e} (set INSTANCE_AI_PYTHON to a python with `playwright` installed)"));
    let status = tokio::time::timeout(Duration::from_secs(300), child.wait()).await.expect("browser test finishes in 5 minutes").unwrap();
    eprintln!("screenshots: {}", out.display());
    assert!(status.success(), "the browser test failed (see its output above and {})", out.display());
    cloud.shutdown().await;
}
