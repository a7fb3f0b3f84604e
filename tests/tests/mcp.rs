//! The MCP server end to end: the local cloud in-process, driven over
//! Streamable HTTP by raw HTTP (transport rules) and by the official MCP
//! Python SDK client (`tests/mcp/client_e2e.py`, run with
//! `$INSTANCE_AI_PYTHON`, default `python3`, which must have `mcp` installed).

mod mcp_common;

use local_cloud::{start, Options, Running};
use protocol::UserId;
use serde_json::{json, Value};
use store::data::credentials::{NewCredential, SecretData};
use store::data::InstanceData;
use store::testing::TestEnv;

const ALICE_KEY: &str = "alice-key-for-mcp-tests";
const BOB_KEY: &str = "bob-key-for-mcp-tests";
const ALLOWED_ORIGIN: &str = "https://app.example.com";
const SECRET: &str = "SUPERSECRET-do-not-leak-8c1f";

async fn cloud() -> Running {
    cloud_with(|_| {}).await
}

async fn cloud_with(adjust: impl FnOnce(&mut store::Config)) -> Running {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    adjust(&mut config);
    config.bootstrap_keys = vec![("alice".into(), ALICE_KEY.into()), ("bob".into(), BOB_KEY.into())];
    config.allowed_origins = vec![ALLOWED_ORIGIN.into()];
    // Consumers on: MCP executions go through the Runs queue to the executor.
    start(Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: false })
        .await
        .expect("local cloud starts")
}

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transport_rules_over_http() {
    let cloud = cloud().await;
    let url = format!("{}/mcp", cloud.base_url());
    let http = reqwest::Client::new();
    let auth = format!("Bearer {ALICE_KEY}");

    let r = http.get(&url).header("authorization", &auth).send().await.unwrap();
    assert_eq!(r.status(), 405, "GET has no stream in stateless mode");

    let r = http.head(&url).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let challenge = format!("Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"", cloud.base_url());
    assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with(&challenge), "{:?}", r.headers());

    let r = http.post(&url).json(&rpc("ping", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 401, "no key");
    assert!(r.headers()["www-authenticate"].to_str().unwrap().starts_with(&challenge));
    let r = http.post(&url).header("authorization", "Bearer wrong-key-123").json(&rpc("ping", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 401, "unknown key");

    let r = http.post(&url).header("authorization", &auth).header("origin", "https://evil.example").json(&rpc("ping", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 403);
    let r = http.post(&url).header("authorization", &auth).header("origin", ALLOWED_ORIGIN).json(&rpc("ping", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 200);

    let r = http.post(&url).header("authorization", &auth).header("mcp-protocol-version", "1999-01-01").json(&rpc("ping", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let r = http.post(&url).header("authorization", &auth).header("mcp-protocol-version", "2025-06-18").json(&rpc("ping", json!({}))).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));

    let init = rpc("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}));
    let r: Value = http.post(&url).header("authorization", &auth).json(&init).send().await.unwrap().json().await.unwrap();
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    assert!(r["result"]["capabilities"]["tools"].is_object());

    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = http.post(&url).header("authorization", &auth).json(&note).send().await.unwrap();
    assert_eq!(r.status(), 202);
    assert!(r.bytes().await.unwrap().is_empty());

    let r = http.post(&url).header("authorization", &auth).body("{not json").send().await.unwrap();
    assert_eq!(r.status(), 400);

    let r: Value = http.post(&url).header("authorization", &auth).json(&rpc("no/such/method", json!({}))).send().await.unwrap().json().await.unwrap();
    assert_eq!(r["error"]["code"], -32601);

    // Tool failures are results with isError, never protocol errors.
    for (name, args, needle) in [
        ("no_such_tool", json!({}), "unknown tool"),
        ("search_workflows", json!({"limit": "ten"}), "invalid arguments"),
        ("search_workflows", json!({"limit": 500}), "at most 200"),
        ("get_workflow_details", json!({}), "workflowId"),
        ("get_workflow_details", json!({"workflowId": "x", "bogus": 1}), "bogus"),
    ] {
        let r: Value = http
            .post(&url)
            .header("authorization", &auth)
            .json(&rpc("tools/call", json!({"name": name, "arguments": args})))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(r["result"]["isError"], true, "{name}: {r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_lowercase();
        assert!(text.contains(&needle.to_lowercase()), "{name}: {text}");
    }
    cloud.shutdown().await;
}

/// Behind API Gateway an answer after 30 s never reaches the client: a run
/// longer than the wait is answered `running` with its id, and goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_longer_than_the_wait_is_answered_running_and_goes_on() {
    let cloud = cloud_with(|c| c.mcp_execution_wait_secs = 1).await;
    let url = format!("{}/mcp", cloud.base_url());
    let http = reqwest::Client::new();
    let auth = format!("Bearer {ALICE_KEY}");
    let call = |name: &'static str, args: Value| {
        let (http, url, auth) = (&http, &url, &auth);
        async move {
            let r: Value = http.post(url).header("authorization", auth).json(&rpc("tools/call", json!({"name": name, "arguments": args}))).send().await.unwrap().json().await.unwrap();
            assert_eq!(r["result"]["isError"], false, "{name}: {r}");
            r["result"]["structuredContent"].clone()
        }
    };
    let workflow = json!({"name": "Slow", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Pause", "type": "n8n-nodes-base.wait", "typeVersion": 1.1, "position": [200, 0], "parameters": {"resume": "timeInterval", "amount": 3, "unit": "seconds"}},
        {"name": "Done", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, 0], "parameters": {"assignments": {"assignments": [{"id": "d", "name": "done", "value": true, "type": "boolean"}]}}}],
        "connections": {"Start": {"main": [[{"node": "Pause", "type": "main", "index": 0}]]}, "Pause": {"main": [[{"node": "Done", "type": "main", "index": 0}]]}}});
    let wf = call("create_workflow_from_code", json!({"code": workflow.to_string()})).await["workflowId"].as_str().unwrap().to_owned();

    let started = std::time::Instant::now();
    let run = call("execute_workflow", json!({"workflowId": wf, "executionMode": "manual"})).await;
    let answered = started.elapsed();
    assert_eq!(run["status"], "running", "{run}");
    assert!(answered < std::time::Duration::from_millis(2900), "answered after the wait, before the run's end: {answered:?}");
    let exec = run["executionId"].as_str().expect("the id to follow").to_owned();
    let mut status = Value::Null;
    for _ in 0..100 {
        status = call("get_execution", json!({"workflowId": wf, "executionId": exec})).await["execution"]["status"].clone();
        if status == "success" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(status, "success", "the run went on after the answer");
    cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_sdk_client_end_to_end() {
    let cloud = cloud().await;
    // A credential with a secret that must never come back.
    let data = InstanceData::new(&cloud.app.clients, &cloud.app.config).expect("instance data");
    let alice = UserId::from("alice".to_owned());
    let (user, _) = data.projects.create_user(&alice, "alice@example.com", Some("Alice"), None).await.expect("user");
    data.credentials
        .create(NewCredential {
            name: "Orders API token".into(),
            kind: "httpHeaderAuth".into(),
            description: Some("token for the orders API".into()),
            project_id: user.personal_project_id.clone(),
            is_managed: false,
            is_global: false,
            secret: SecretData::new(json!({"name": "Authorization", "value": format!("Bearer {SECRET}")})),
        })
        .await
        .expect("credential");
    data.folders.create(&user.personal_project_id, "Clients", None).await.expect("folder");

    let summary = mcp_common::run_client_script(
        "client_e2e.py",
        &[("MCP_URL", format!("{}/mcp", cloud.base_url())), ("MCP_KEY", ALICE_KEY.into()), ("MCP_SECRET", SECRET.into())],
    )
    .await;
    let table = summary["dataTableId"].as_str().expect("data table id");
    assert_eq!(data.data_tables.count_rows(table).await.unwrap(), summary["rowsInserted"].as_u64().unwrap() as usize);
    cloud.shutdown().await;
}
