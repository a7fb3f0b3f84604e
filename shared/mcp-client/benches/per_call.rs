//! What one MCP exchange costs against a server from the official Python SDK
//! on this machine (tests/mcp/tool_server.py): HTTP requests and ms for
//! connecting and listing tools (what `mcp-servers(connect)` does) and for
//! one tool call in a fresh session (what each connected tool's call and the
//! engine's MCP Client Tool do), over both transports. Prints figures.
//!
//! source infra/local/env.sh && cargo bench -p mcp-client --bench per_call

#[path = "../tests/support/python_server.rs"]
mod python_server;

use mcp_client::{Endpoint, Session, Transport};
use python_server::{PythonServer, TOKEN};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const N: usize = 20;

fn p(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let server = PythonServer::start();
    let client = outbound::Client::new(outbound::Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] }, Arc::new(outbound::SystemResolver)).unwrap();
    let abort = CancellationToken::new();
    for (path, transport, label) in [("/mcp", Transport::StreamableHttp, "Streamable HTTP"), ("/sse", Transport::Sse, "HTTP+SSE")] {
        let endpoint = Endpoint { url: server.url(path).parse().unwrap(), transport, headers: vec![("authorization".into(), format!("Bearer {TOKEN}"))], timeout: Duration::from_secs(10) };
        for (what, call) in [("connect + tools/list + close", false), ("connect + tools/call + close", true)] {
            let mut ms = Vec::new();
            let mut requests = 0;
            for _ in 0..N {
                let t = Instant::now();
                let mut s = Session::connect(client.clone(), endpoint.clone(), &abort).await.unwrap();
                if call {
                    s.call_tool("add", json!({"a": 1, "b": 2}), &abort).await.unwrap();
                } else {
                    s.list_tools(&abort).await.unwrap();
                }
                requests = s.requests() + u32::from(transport == Transport::StreamableHttp);
                s.close().await;
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            println!("{label:<16} {what:<30} {requests} HTTP requests, p50 {:.1} ms, p90 {:.1} ms ({N} runs)", p(ms.clone(), 0.5), p(ms, 0.9));
        }
    }
}
