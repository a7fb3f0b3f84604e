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
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
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
