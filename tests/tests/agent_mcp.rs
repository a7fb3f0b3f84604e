//! `mcp-servers` and connected MCP servers' tools end to end through HTTP +
//! SSE with the scripted model, against an MCP server from the official
//! Python SDK (`tests/mcp/tool_server.py`, bearer-protected): search, the
//! "Available tools" card with the user's credential, connect (a live
//! handshake decides), the server's tools found with search_tools, loaded,
//! approved once for the session and called — results enveloped —, another
//! user sees nothing, and Stop cancels a call in flight (the server hears it).

mod agent_common;

#[path = "../../shared/mcp-client/tests/support/python_server.rs"]
mod python_server;

use agent_common::*;
use protocol::events::EventType;
use python_server::{PythonServer, TOKEN};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Recording {
    script: LateScript,
    tools: Mutex<Vec<Vec<String>>>,
}

impl agent::model::ModelProvider for Recording {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "recording"
    }
    fn stream(&self, request: agent::model::ModelRequest, cancel: agent::model::CancellationToken) -> agent::model::ModelStream {
        self.tools.lock().unwrap().push(request.tools.iter().map(|t| t.name.clone()).collect());
        self.script.stream(request, cancel)
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn call(name: &str, args: Value) -> Value {
    json!({"toolCalls": [{"name": name, "args": args}]})
}

/// The result (or error) of the call with this tool name, the n-th one.
fn result_of(frames: &[Frame], tool: &str, nth: usize) -> Result<Value, String> {
    let c = find(frames, EventType::ToolCall).into_iter().map(payload).filter(|c| c["toolName"] == tool).nth(nth).unwrap_or_else(|| panic!("no call {nth} of {tool}"));
    let done = frames
        .iter()
        .filter(|f| matches!(f.kind(), EventType::ToolResult | EventType::ToolError))
        .map(payload)
        .find(|p| p["toolCallId"] == c["toolCallId"])
        .expect("settled");
    match done.get("result") {
        Some(r) => Ok(r.clone()),
        None => Err(done["error"].as_str().unwrap_or_default().to_owned()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_user_connects_an_mcp_server_and_the_agent_calls_its_tools() {
    let server = PythonServer::start();
    let registry = json!([
        {"slug": "orders", "title": "Orders", "description": "Look up customer orders and their shipping status", "url": server.url("/mcp"), "credentialType": "httpBearerAuth", "tools": ["lookup_order", "add"]},
        {"slug": "legacy-orders", "title": "Legacy orders", "description": "The old order system", "url": server.url("/sse"), "transport": "sse", "credentialType": "httpBearerAuth"},
        {"slug": "weather", "title": "Weather", "description": "Forecasts", "url": "https://weather.example.com/mcp"}
    ]);
    let vars: Vec<(&'static str, &'static str)> = vec![("INSTANCE_AI_MCP_SERVERS", leak(registry.to_string()))];
    let setup = Setup { local_http: true, stubs: false, vars: Box::leak(vars.into_boxed_slice()), ..Setup::default() };
    let model = Arc::new(Recording::default());
    let mcp = |args: Value| call("mcp-servers", args);
    model.script.set(json!({"conversations": {
        "Connect my order system": [
            mcp(json!({"action": "connected"})),
            mcp(json!({"action": "search", "queries": ["orders shipping"]})),
            mcp(json!({"action": "connect", "serverSlugs": ["orders"], "reason": "to look up the customer's order"})),
            mcp(json!({"action": "details", "slug": "orders"})),
            call("search_tools", json!({"query": "look up order"})),
            call("load_tool", json!({"toolName": "mcp_orders__lookup_order"})),
            call("mcp_orders__lookup_order", json!({"order_id": "A-17"})),
            call("mcp_orders__lookup_order", json!({"order_id": "B-2"})),
            call("workflows_evil", json!({})),
            {"text": "Order A-17 shipped on Monday."}
        ],
        "What is connected?": [mcp(json!({"action": "connected"})), call("mcp_orders__lookup_order", json!({"order_id": "A-17"})), {"text": "Nothing."}],
        "Write the Q3 report": [call("mcp_orders__slow_report", json!({"topic": "Q3"})), {"text": "Done."}]
    }}));
    let cloud = cloud_with(setup, |c| (c.clone(), ()), Some(model.clone() as Arc<dyn agent::model::ModelProvider>)).await.0;
    let (status, cred) = cloud.post(ALICE, "/instance-ai/credentials", json!({"name": "Orders token", "type": "httpBearerAuth", "data": {"token": TOKEN}})).await;
    assert_eq!(status, 201, "{cred}");
    let cred_id = cred["id"].as_str().unwrap().to_owned();

    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    assert_eq!(cloud.chat(ALICE, &t, "Connect my order system").await.0, 200);
    let card_or_end = |f: &Frame| matches!(f.kind(), EventType::RunFinish | EventType::ConfirmationRequest);
    // The "Available tools" card: the server, its tools, the user's credential of the type it needs.
    let frames = feed.until(WAIT, card_or_end).await;
    let card = payload(frames.last().unwrap());
    assert_eq!(card["toolName"], "mcp-servers", "{card}");
    let offered = &card["mcpConnectRequest"]["servers"][0];
    assert_eq!((offered["slug"].as_str(), offered["credentialType"].as_str()), (Some("orders"), Some("httpBearerAuth")), "{card}");
    assert_eq!(offered["credentials"], json!([{"id": cred_id, "name": "Orders token"}]));
    assert!(!card.to_string().contains(TOKEN), "no secret on the card");
    assert_eq!(cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true, "answers": {"connect": {"orders": cred_id}}})).await.0, 200);
    // The first call of the server's tool asks (executeMcpTool); "always allow" covers the second.
    let frames = feed.until(WAIT, card_or_end).await;
    let card = payload(frames.last().unwrap());
    assert_eq!((card["toolName"].as_str(), card["resourceName"].as_str()), (Some("mcp_orders__lookup_order"), Some("Orders")), "{card}");
    assert_eq!(cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true, "scope": "session"})).await.0, 200);
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "completed", "{:?}", kinds(&frames));
    let seen = feed.seen.clone();

    let connected = result_of(&seen, "mcp-servers", 0).unwrap();
    assert_eq!(connected["servers"], json!([]));
    assert!(connected["hint"].as_str().unwrap().contains("search"));
    let search = result_of(&seen, "mcp-servers", 1).unwrap();
    let slugs: Vec<&str> = search["results"].as_array().unwrap().iter().map(|r| r["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["orders", "legacy-orders"], "{search}");
    let connect = result_of(&seen, "mcp-servers", 2).unwrap();
    assert_eq!(connect["connectedSlugs"], json!(["orders"]), "{connect}");
    let details = result_of(&seen, "mcp-servers", 3).unwrap();
    assert_eq!(details["tools"], json!(["add", "lookup_order", "slow_report"]), "what the server listed, not the registry's guess");
    let found = result_of(&seen, "search_tools", 0).unwrap();
    assert_eq!(found["results"][0]["name"], "mcp_orders__lookup_order", "{found}");
    let first = result_of(&seen, "mcp_orders__lookup_order", 0).unwrap();
    let content = first["content"].as_str().unwrap();
    assert!(content.starts_with("<untrusted_data source=\"mcp:orders\">\nOrder A-17: shipped on Monday."), "{content}");
    assert_eq!(first["isError"], false);
    assert!(result_of(&seen, "mcp_orders__lookup_order", 1).unwrap()["content"].as_str().unwrap().contains("Order B-2"));
    assert!(result_of(&seen, "workflows_evil", 0).unwrap_err().starts_with("Unknown tool"));
    assert!(server.log().contains("lookup_order A-17") && server.log().contains("lookup_order B-2"), "{}", server.log());
    // The server's tools were in no model call before the connection, and in the calls after the load.
    let tools = model.tools.lock().unwrap().clone();
    assert!(tools[0].contains(&"mcp-servers".to_owned()) && !tools[0].iter().any(|t| t.starts_with("mcp_")));
    assert!(tools[6].contains(&"mcp_orders__lookup_order".to_owned()), "loaded after load_tool: {:?}", tools[6]);
    assert!(!tools[6].contains(&"mcp_orders__add".to_owned()), "the other tools stay deferred");

    // Bob connected nothing and cannot call Alice's server.
    let t2 = thread();
    let mut bob = cloud.sse_events(BOB, &t2).await;
    assert_eq!(cloud.chat(BOB, &t2, "What is connected?").await.0, 200);
    let frames = bob.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(result_of(&frames, "mcp-servers", 0).unwrap()["servers"], json!([]));
    assert!(result_of(&frames, "mcp_orders__lookup_order", 0).unwrap_err().starts_with("Unknown tool"));

    // Stop during a long call: the run is cancelled at once and the server told.
    let t3 = thread();
    let mut feed = cloud.sse_events(ALICE, &t3).await;
    assert_eq!(cloud.chat(ALICE, &t3, "Write the Q3 report").await.0, 200);
    let frames = feed.until(WAIT, card_or_end).await;
    assert_eq!(cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true})).await.0, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !server.log().contains("slow_report started") {
        assert!(Instant::now() < deadline, "the call never reached the server");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped = Instant::now();
    assert_eq!(cloud.cancel(ALICE, &t3).await.0, 200);
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "cancelled");
    assert!(stopped.elapsed() < Duration::from_secs(10), "{:?}", stopped.elapsed());
    while !server.log().contains("slow_report cancelled") {
        assert!(Instant::now() < deadline, "the server never heard of the cancel: {}", server.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cloud.stop().await;
}
