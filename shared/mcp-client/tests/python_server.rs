//! The MCP client against a server from the official Python SDK, over both
//! transports: the handshake, tools/list, tools/call, a refused token, the
//! SSRF guard, and a cancelled call the server hears about.

mod support;

use mcp_client::{Endpoint, McpError, Session, Transport};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::python_server::{PythonServer, TOKEN};
use tokio_util::sync::CancellationToken;

fn local_client() -> outbound::Client {
    let policy = outbound::Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] };
    outbound::Client::new(policy, Arc::new(outbound::SystemResolver)).unwrap()
}

fn endpoint(url: String, transport: Transport, token: &str) -> Endpoint {
    Endpoint { url: url.parse().unwrap(), transport, headers: vec![("authorization".into(), format!("Bearer {token}"))], timeout: Duration::from_secs(10) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_transports_list_and_call_tools_and_a_cancel_reaches_the_server() {
    let server = PythonServer::start();
    let abort = CancellationToken::new();
    for (path, transport) in [("/mcp", Transport::StreamableHttp), ("/sse", Transport::Sse)] {
        let mut s = Session::connect(local_client(), endpoint(server.url(path), transport, TOKEN), &abort).await.unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(s.server_info()["name"], "orders-test");
        let tools = s.list_tools(&abort).await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "lookup_order", "slow_report"], "{path}");
        assert_eq!(tools[0].description, "Add two integers.");
        assert_eq!(tools[0].input_schema["required"], json!(["a", "b"]));
        let r = s.call_tool("add", json!({"a": 2, "b": 40}), &abort).await.unwrap();
        assert_eq!((r.text(), r.is_error), ("42".to_owned(), false), "{path}");
        // initialize, initialized, tools/list, tools/call (+ the SSE stream's GET)
        assert_eq!(s.requests(), if transport == Transport::Sse { 5 } else { 4 }, "{path}");
        let bad = s.call_tool("add", json!({"a": "x"}), &abort).await.unwrap();
        assert!(bad.is_error, "{bad:?}");
        s.close().await;
    }
    assert!(server.log().contains("add 2 40"));

    // A wrong token is refused before anything runs.
    let refused = Session::connect(local_client(), endpoint(server.url("/mcp"), Transport::StreamableHttp, "wrong"), &abort).await.err().unwrap();
    assert_eq!(refused, McpError::Unauthorized(401));
    // The guard: loopback without the allow-list is refused.
    let guarded = outbound::Client::new(outbound::Policy::default(), Arc::new(outbound::SystemResolver)).unwrap();
    let e = Session::connect(guarded, endpoint(server.url("/mcp"), Transport::StreamableHttp, TOKEN), &abort).await.err().unwrap();
    assert!(matches!(e, McpError::Refused(_)), "{e:?}");

    // Stop during a long call: it ends at once, and the server is told.
    let mut s = Session::connect(local_client(), endpoint(server.url("/mcp"), Transport::StreamableHttp, TOKEN), &abort).await.unwrap();
    let stop = CancellationToken::new();
    let trigger = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    assert_eq!(s.call_tool("slow_report", json!({"topic": "q3"}), &stop).await.err(), Some(McpError::Cancelled));
    assert!(started.elapsed() < Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !server.log().contains("slow_report cancelled") {
        assert!(Instant::now() < deadline, "the server never heard of the cancel: {}", server.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
