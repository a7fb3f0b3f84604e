//! The JSON-RPC layer and a few tools against moto, without HTTP: what the
//! api adapter hands to `transport::handle_post` after authentication.

use http::HeaderMap;
use mcp_server::scopes::{Scope, Scopes};
use mcp_server::transport::{handle_post, Caller};
use mcp_server::McpServer;
use protocol::UserId;
use serde_json::{json, Value};
use store::testing::TestEnv;

async fn server() -> McpServer {
    let env = TestEnv::new().await;
    McpServer::new(&env.clients, &env.config).await.expect("server")
}

async fn post(s: &McpServer, user: &str, body: Value) -> (u16, Option<Value>) {
    let r = handle_post(s, &Caller::api_key(UserId::from(user.to_owned())), "http://localhost", &HeaderMap::new(), body.to_string().as_bytes()).await;
    (r.status, r.body)
}

#[tokio::test]
async fn scopes_filter_the_tool_list_and_refuse_calls_beyond_them() {
    let s = server().await;
    let read_only = Caller { user: UserId::from("u-scoped".to_owned()), scopes: Scopes::parse("mcp:read").unwrap() };
    let send = |body: Value| {
        let (s, caller) = (&s, &read_only);
        async move { handle_post(s, caller, "https://mcp.example.com", &HeaderMap::new(), body.to_string().as_bytes()).await }
    };
    let r = send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).await;
    assert_eq!(r.status, 200);
    let names: Vec<String> = r.body.unwrap()["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    assert!(names.contains(&"search_workflows".to_owned()) && names.contains(&"validate_workflow".to_owned()), "{names:?}");
    for hidden in ["create_data_table", "execute_workflow", "publish_workflow", "add_data_table_rows"] {
        assert!(!names.contains(&hidden.to_owned()), "{hidden} is beyond mcp:read: {names:?}");
    }
    assert!(names.iter().all(|n| mcp_server::tools::scope_of(n) == Some(Scope::Read)));

    let r = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_data_table", "arguments": {"name": "t", "columns": [{"name": "a", "type": "string"}]}}})).await;
    assert_eq!(r.status, 403);
    let challenge = &r.headers.iter().find(|(k, _)| *k == "www-authenticate").unwrap().1;
    assert!(challenge.contains("error=\"insufficient_scope\"") && challenge.contains("scope=\"mcp:read mcp:write\""), "{challenge}");
    assert!(challenge.contains("resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\""), "{challenge}");
    let body = r.body.unwrap();
    assert_eq!(body["id"], 2);
    assert!(body["error"]["message"].as_str().unwrap().contains("create_data_table needs the mcp:write scope"), "{body}");
    // Nothing was created: the caller's search finds no table.
    let r = send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_data_tables", "arguments": {}}})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.unwrap()["result"]["structuredContent"]["count"], 0);
}

async fn call(s: &McpServer, user: &str, name: &str, args: Value) -> Value {
    let (status, body) = post(s, user, json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": args}})).await;
    assert_eq!(status, 200);
    body.expect("a response")["result"].clone()
}

#[tokio::test]
async fn json_rpc_framing() {
    let s = server().await;
    let (status, body) = post(&s, "u1", json!({"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {"protocolVersion": "2099-01-01"}})).await;
    assert_eq!(status, 200);
    let body = body.unwrap();
    assert_eq!(body["id"], "a");
    assert_eq!(body["result"]["protocolVersion"], mcp_server::transport::SUPPORTED_VERSIONS[0], "unknown version: we offer ours");
    let (status, body) = post(&s, "u1", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    assert_eq!((status, body), (202, None));
    let (_, body) = post(&s, "u1", json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "notifications/x"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])).await;
    let batch = body.unwrap();
    assert_eq!(batch.as_array().map(Vec::len), Some(2), "one answer per request");
    assert_eq!(batch[1]["result"]["tools"].as_array().map(Vec::len), Some(27));
    let (_, body) = post(&s, "u1", json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}})).await;
    assert_eq!(body.unwrap()["error"]["code"], -32602);
}

#[tokio::test]
async fn tools_report_errors_as_results() {
    let s = server().await;
    let r = call(&s, "u2", "nope", json!({})).await;
    assert_eq!(r["isError"], true);
    let r = call(&s, "u2", "add_data_table_rows", json!({"dataTableId": "t", "projectId": "p", "rows": "many"})).await;
    assert_eq!(r["isError"], true);
    assert!(r["content"][0]["text"].as_str().unwrap().contains("invalid arguments"));
    let r = call(&s, "u2", "get_workflow_details", json!({"workflowId": "missing"})).await;
    assert_eq!(r["isError"], true);
    assert!(r["content"][0]["text"].as_str().unwrap().contains("not found"));
}

#[tokio::test]
async fn rate_limit_refuses_with_a_clear_error() {
    let s = server().await;
    for _ in 0..3 {
        s.limiter.check_with("u3", "test_workflow", 3, 3600).await.expect("under the limit");
    }
    let e = s.limiter.check_with("u3", "test_workflow", 3, 3600).await.unwrap_err().to_string();
    assert!(e.contains("3 calls per 3600 s"), "{e}");
    s.limiter.check_with("u4", "test_workflow", 3, 3600).await.expect("per user");
}

#[tokio::test]
async fn data_tables_end_to_end_in_process() {
    let s = server().await;
    let projects = call(&s, "u5", "search_projects", json!({})).await;
    let pid = projects["structuredContent"]["data"][0]["id"].as_str().unwrap().to_owned();
    let t = call(&s, "u5", "create_data_table", json!({"projectId": pid, "name": "t1", "columns": [{"name": "a", "type": "string"}]})).await;
    assert_eq!(t["isError"], false, "{t}");
    let id = t["structuredContent"]["id"].as_str().unwrap().to_owned();
    let rows: Vec<Value> = (0..1001).map(|i| json!({"a": i.to_string()})).collect();
    let r = call(&s, "u5", "add_data_table_rows", json!({"dataTableId": id, "projectId": pid, "rows": rows})).await;
    assert_eq!(r["isError"], true);
    assert_eq!(s.instance.data.data_tables.count_rows(&id).await.unwrap(), 0, "nothing half-written");
    let r = call(&s, "u6", "add_data_table_rows", json!({"dataTableId": id, "projectId": pid, "rows": [{"a": "x"}]})).await;
    assert_eq!(r["isError"], true, "another user cannot write: {r}");
}

fn text(r: &Value) -> String {
    r["content"][0]["text"].as_str().unwrap_or_default().to_lowercase()
}

fn hook_workflow(name: &str) -> String {
    json!({"name": name, "nodes": [
        {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": format!("mcp-{name}")}},
        {"name": "Double", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [220, 0], "parameters": {
            "assignments": {"assignments": [{"id": "d", "name": "doubled", "value": "={{ $json.body.n * 2 }}", "type": "number"}]}}}],
        "connections": {"Hook": {"main": [[{"node": "Double", "type": "main", "index": 0}]]}}})
    .to_string()
}

async fn doubled(s: &McpServer, user: &str, wf: &str, exec: &str) -> Value {
    let got = call(s, user, "get_execution", json!({"workflowId": wf, "executionId": exec, "includeData": true, "nodeNames": ["Double"]})).await;
    assert_eq!(got["isError"], false, "{got}");
    got["structuredContent"]["data"]["resultData"]["runData"]["Double"][0]["data"]["main"][0][0]["json"]["doubled"].clone()
}

/// execute_workflow and test_workflow are front doors to the instance's run
/// operation; get_execution checks the owner there (strangers: not found).
#[test]
fn executions_run_through_the_domain_and_strangers_get_not_found() {
    // Inline runs put the engine under the whole JSON-RPC call on this
    // thread's stack: more than a test thread's 2 MiB in a debug build.
    let big_stack = std::thread::Builder::new().stack_size(32 << 20);
    let t = big_stack
        .spawn(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(runs_and_strangers()))
        .unwrap();
    if let Err(panic) = t.join() {
        std::panic::resume_unwind(panic);
    }
}

async fn runs_and_strangers() {
    let mut s = server().await;
    s.instance.run_in_process();
    let created = call(&s, "u7", "create_workflow_from_code", json!({"code": hook_workflow("alice")})).await;
    assert_eq!(created["isError"], false, "{created}");
    let wf = created["structuredContent"]["workflowId"].as_str().unwrap().to_owned();

    let run = call(&s, "u7", "execute_workflow", json!({"workflowId": wf, "executionMode": "manual", "inputs": {"type": "webhook", "webhookData": {"body": {"n": 21}}}})).await;
    assert_eq!(run["structuredContent"]["status"], "success", "{run}");
    let exec = run["structuredContent"]["executionId"].as_str().unwrap().to_owned();
    assert_eq!(doubled(&s, "u7", &wf, &exec).await, json!(42), "the webhook body reached the workflow");
    let meta = call(&s, "u7", "get_execution", json!({"workflowId": wf, "executionId": exec})).await;
    assert_eq!(meta["structuredContent"]["execution"]["mode"], "manual", "{meta}");

    let r = call(&s, "u7", "execute_workflow", json!({"workflowId": wf})).await;
    assert!(r["isError"] == true && text(&r).contains("not published"), "{r}");
    let r = call(&s, "u7", "execute_workflow", json!({"workflowId": wf, "executionMode": "manual", "inputs": {"type": "chat", "chatInput": "hi"}})).await;
    assert!(r["isError"] == true && text(&r).contains("webhookdata"), "a chat message for a Webhook is refused: {r}");

    let tested = call(&s, "u7", "test_workflow", json!({"workflowId": wf, "pinData": {"Hook": [{"json": {"body": {"n": 5}}}]}})).await;
    assert_eq!(tested["structuredContent"]["status"], "success", "{tested}");
    let test_exec = tested["structuredContent"]["executionId"].as_str().unwrap().to_owned();
    assert_eq!(doubled(&s, "u7", &wf, &test_exec).await, json!(10), "the pinned trigger fed the run");
    let r = call(&s, "u7", "test_workflow", json!({"workflowId": wf, "pinData": {"Ghost": [{}]}})).await;
    assert!(r["isError"] == true && text(&r).contains("ghost"), "{r}");

    // Publish, then the default production run records the webhook mode.
    let p = call(&s, "u7", "publish_workflow", json!({"workflowId": wf})).await;
    assert_eq!(p["isError"], false, "{p}");
    let prod = call(&s, "u7", "execute_workflow", json!({"workflowId": wf, "inputs": {"type": "webhook", "webhookData": {"body": {"n": 1}}}})).await;
    assert_eq!(prod["structuredContent"]["status"], "success", "{prod}");
    let prod_exec = prod["structuredContent"]["executionId"].as_str().unwrap();
    let meta = call(&s, "u7", "get_execution", json!({"workflowId": wf, "executionId": prod_exec})).await;
    assert_eq!(meta["structuredContent"]["execution"]["mode"], "webhook", "{meta}");

    // A stranger: neither the execution nor the workflow exists for them.
    let mine = call(&s, "u8", "create_workflow_from_code", json!({"code": hook_workflow("bob")})).await;
    let bobs = mine["structuredContent"]["workflowId"].as_str().unwrap().to_owned();
    for workflow in [&wf, &bobs] {
        let r = call(&s, "u8", "get_execution", json!({"workflowId": workflow, "executionId": exec, "includeData": true})).await;
        assert!(r["isError"] == true && text(&r).contains("not found"), "{r}");
        assert!(!r.to_string().contains("doubled") && !r.to_string().contains("resultData"), "nothing of the run leaks: {r}");
    }
    let r = call(&s, "u8", "execute_workflow", json!({"workflowId": wf, "executionMode": "manual"})).await;
    assert!(r["isError"] == true && text(&r).contains("not found"), "{r}");
    // The owner asking under the wrong workflow id: not found either.
    let r = call(&s, "u7", "get_execution", json!({"workflowId": bobs, "executionId": exec})).await;
    assert!(r["isError"] == true && text(&r).contains("not found"), "{r}");
}

#[tokio::test]
async fn service_nodes_are_searchable_typed_and_suggested() {
    let s = server().await;
    let r = call(&s, "u-nodes", "search_nodes", json!({"queries": ["slack", "telegram bot", "discord webhook"]})).await;
    let text = r["structuredContent"]["results"].as_str().unwrap_or_default().to_owned();
    for node in ["n8n-nodes-base.slack", "n8n-nodes-base.telegram", "n8n-nodes-base.discord"] {
        assert!(text.contains(node), "{node} in {text}");
    }
    assert!(text.contains("post") && text.contains("sendMessage"), "discriminators listed: {text}");
    let r = call(&s, "u-nodes", "get_node_types", json!({"nodeIds": [{"nodeId": "n8n-nodes-base.slack", "resource": "message", "operation": "post"}]})).await;
    let defs = r["structuredContent"]["definitions"].as_str().unwrap_or_default().to_owned();
    assert!(defs.contains("channelId") && defs.contains("otherOptions"), "{defs}");
    assert!(!defs.contains("chat.postMessage"), "routing is how the node works, not a parameter: {defs}");
    let r = call(&s, "u-nodes", "get_suggested_nodes", json!({"categories": ["notification"]})).await;
    assert!(r["structuredContent"]["suggestions"].as_str().unwrap_or_default().contains("n8n-nodes-base.slack"), "{r}");
}
