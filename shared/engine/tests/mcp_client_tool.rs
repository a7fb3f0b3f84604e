//! MCP Client Tool under the AI Agent, against an MCP server from the
//! official Python SDK (both transports, bearer / header credentials) and a
//! local server speaking OpenAI's chat-completions format that calls the
//! tool it is offered: tools all / selected / all-but, the call and its
//! answer in run data, the SSRF guard and a refused token as node errors.

#[path = "../../mcp-client/tests/support/python_server.rs"]
mod python_server;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::Json;
use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, ExecutionState, Graph, Host, Item, RunOptions};
use python_server::{PythonServer, TOKEN};
use serde_json::{json, Value};

/// Offered tool names of every chat-completions request.
type Offered = Arc<Mutex<Vec<Vec<String>>>>;

/// A model that calls `lookup_order` (or `add` when that is all it has) once, then answers with what it got.
fn fake_openai() -> (String, Offered) {
    let offered: Offered = Arc::default();
    let state = offered.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new()
                .route("/v1/chat/completions", axum::routing::post(|State(s): State<Offered>, Json(body): Json<Value>| async move {
                    let tools: Vec<String> = body["tools"].as_array().into_iter().flatten().filter_map(|t| t.pointer("/function/name").and_then(Value::as_str).map(str::to_owned)).collect();
                    s.lock().unwrap().push(tools.clone());
                    let observation = body["messages"].as_array().into_iter().flatten().find(|m| m["role"] == "tool").and_then(|m| m["content"].as_str().map(str::to_owned));
                    let message = match observation {
                        Some(o) => json!({"role": "assistant", "content": format!("The server said: {o}")}),
                        None => {
                            let (name, args) = if tools.iter().any(|t| t == "lookup_order") { ("lookup_order", json!({"order_id": "A-17"})) } else { ("add", json!({"a": 2, "b": 40})) };
                            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]})
                        }
                    };
                    let finish = if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" };
                    // the chat model streams: the message as one delta, then the finish
                    let mut delta = message;
                    if let Some(calls) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) {
                        for (i, c) in calls.iter_mut().enumerate() {
                            c["index"] = json!(i);
                        }
                    }
                    let chunk = |choice: Value, usage: Value| format!("data: {}\n\n", json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o-mini", "choices": [choice], "usage": usage}));
                    let body = chunk(json!({"index": 0, "delta": delta, "finish_reason": null}), Value::Null)
                        + &chunk(json!({"index": 0, "delta": {}, "finish_reason": finish}), json!({"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}))
                        + "data: [DONE]\n\n";
                    ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], body)
                }))
                .with_state(state);
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{}", rx.recv().unwrap()), offered)
}

struct Creds(String);
impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String> {
        match (cred_type, reference["id"].as_str()) {
            ("openAiApi", _) => Ok(json!({"apiKey": "sk-test", "url": format!("{}/v1", self.0)})),
            ("httpBearerAuth", Some("good")) => Ok(json!({"token": TOKEN})),
            ("httpBearerAuth", Some("bad")) => Ok(json!({"token": "wrong"})),
            ("httpHeaderAuth", Some("hdr")) => Ok(json!({"name": "Authorization", "value": format!("Bearer {TOKEN}")})),
            other => Err(format!("no credential {other:?}")),
        }
    }
}

fn workflow(openai: &str, mcp: Value) -> Value {
    let _ = openai;
    json!({
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
            {"parameters": {"promptType": "define", "text": "={{ $json.chatInput }}", "options": {}}, "name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 0]},
            {"parameters": {"model": {"__rl": true, "value": "gpt-4o-mini", "mode": "list"}, "options": {}}, "name": "OpenAI Chat Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [100, 200],
             "credentials": {"openAiApi": {"id": "openai-1", "name": "OpenAI"}}},
            mcp
        ],
        "connections": {
            "Start": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
            "OpenAI Chat Model": {"ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]},
            "MCP Client": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]}
        }
    })
}

fn mcp_node(version: f64, parameters: Value, credentials: Value) -> Value {
    json!({"parameters": parameters, "name": "MCP Client", "type": "@n8n/n8n-nodes-langchain.mcpClientTool", "typeVersion": version, "position": [300, 200], "credentials": credentials})
}

fn run(openai: &str, allow_private: bool, mcp: Value) -> ExecutionState {
    let settings = EngineSettings { allow_private_network: allow_private, ..Default::default() };
    let host = Host { credentials: Some(Arc::new(Creds(openai.to_owned()))), ..Default::default() };
    let engine = Engine::new(settings, host);
    let opts = RunOptions { trigger_items: Some(vec![Item::new(json!({"chatInput": "Where is my order?"}))]), ..Default::default() };
    engine.run(&Graph::from_json(&workflow(openai, mcp)).unwrap(), opts).unwrap().0
}

fn answer(st: &ExecutionState) -> String {
    let out = st.node_output("AI Agent", 0).unwrap_or_else(|| panic!("no output: {:?}", st.error));
    out[0].json["output"].as_str().unwrap().to_owned()
}

#[test]
fn the_agent_calls_an_mcp_servers_tools_over_both_transports() {
    let server = PythonServer::start();
    let (openai, offered) = fake_openai();

    // 1.2, HTTP Streamable, bearer auth, selected tools.
    let params = json!({"endpointUrl": server.url("/mcp"), "serverTransport": "httpStreamable", "authentication": "bearerAuth", "include": "selected", "includeTools": ["lookup_order", "add"]});
    let st = run(&openai, true, mcp_node(1.2, params, json!({"httpBearerAuth": {"id": "good", "name": "MCP token"}})));
    assert!(answer(&st).starts_with("The server said: Order A-17: shipped on Monday."), "{}", answer(&st));
    assert_eq!(offered.lock().unwrap()[0], ["add", "lookup_order"], "only the selected tools, as the server lists them");
    let tool_runs = &st.run_data["MCP Client"];
    assert_eq!(tool_runs.len(), 1, "one recorded tool call");
    let recorded = serde_json::to_value(&tool_runs[0]).unwrap();
    assert!(recorded.to_string().contains("A-17"), "{recorded}");
    assert!(server.log().contains("lookup_order A-17"));

    // 1 (SSE endpoint), all but lookup_order and slow_report: the model gets add only.
    let params = json!({"sseEndpoint": server.url("/sse"), "authentication": "bearerAuth", "include": "except", "excludeTools": ["lookup_order", "slow_report"]});
    let st = run(&openai, true, mcp_node(1.0, params, json!({"httpBearerAuth": {"id": "good", "name": "MCP token"}})));
    assert_eq!(answer(&st), "The server said: 42");
    assert_eq!(offered.lock().unwrap().last().unwrap(), &["add"]);

    // 2, a generic header credential, all tools.
    let params = json!({"endpointUrl": server.url("/mcp"), "serverTransport": "httpStreamable", "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth", "include": "all"});
    let st = run(&openai, true, mcp_node(2.0, params, json!({"httpHeaderAuth": {"id": "hdr", "name": "MCP header"}})));
    assert!(answer(&st).contains("Order A-17"));
    assert_eq!(offered.lock().unwrap().last().unwrap(), &["add", "lookup_order", "slow_report"]);

    // A refused token and the SSRF guard fail the node clearly.
    let params = json!({"endpointUrl": server.url("/mcp"), "serverTransport": "httpStreamable", "authentication": "bearerAuth", "include": "all"});
    let st = run(&openai, true, mcp_node(1.1, params.clone(), json!({"httpBearerAuth": {"id": "bad", "name": "wrong"}})));
    let e = st.error.expect("refused");
    assert_eq!(e.message, "Could not connect to your MCP server");
    assert!(e.description.unwrap_or_default().contains("refused the credentials (401)"));
    let st = run(&openai, false, mcp_node(1.1, params, json!({"httpBearerAuth": {"id": "good", "name": "MCP token"}})));
    let e = st.error.expect("refused by the guard");
    assert!(e.message.contains("refused"), "{}", e.message);
}
