//! An n8n AI Agent workflow (OpenAI Chat Model, Window Buffer Memory, HTTP
//! Request Tool, Call Workflow Tool) saved and run through the instance
//! against moto and a local server speaking OpenAI's chat-completions
//! format: credentials from the credential store, memory in DynamoDB across
//! runs, token usage on the execution, and `get-node-output` showing every
//! model and tool call in order.

#[path = "../../engine/tests/support/openai.rs"]
#[allow(dead_code)]
mod openai;

use instance::builder::BuildRequest;
use instance::credentials::NewCredentialInput;
use instance::executions::view::Values;
use instance::executions::{RunRequest, TriggerInput};
use instance::{Caller, Instance};
use protocol::UserId;
use serde_json::{json, Value};
use store::data::executions::DataSelection;
use store::testing::TestEnv;

async fn instance() -> Instance {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    let mut inst = Instance::new(&env.clients, &config).await.unwrap();
    inst.run_in_process();
    inst.values = Values::Shown;
    inst
}

async fn build(inst: &Instance, caller: &Caller, wf: &Value) -> String {
    let built = inst.build_workflow(caller, BuildRequest { source: wf.to_string(), ..BuildRequest::default() }).await.unwrap();
    assert!(built.success, "{built:?}");
    built.workflow_id.unwrap()
}

fn lookup_workflow() -> Value {
    json!({
        "name": "Lookup customer",
        "nodes": [
            {"parameters": {"inputSource": "passthrough"}, "name": "When Executed by Another Workflow", "type": "n8n-nodes-base.executeWorkflowTrigger", "typeVersion": 1.1, "position": [0, 0]},
            {"parameters": {"jsCode": "return [{json: {customerId: $json.customerId, name: $json.customerId === 'C42' ? 'Ada Lovelace' : 'unknown'}}];"},
             "name": "Find", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [200, 0]}
        ],
        "connections": {"When Executed by Another Workflow": {"main": [[{"node": "Find", "type": "main", "index": 0}]]}}
    })
}

fn agent_workflow(base: &str, credential_id: &str, lookup_id: &str) -> Value {
    json!({
        "name": "Support agent",
        "nodes": [
            {"parameters": {}, "name": "Manual", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
            {"parameters": {"promptType": "define", "text": "={{ $json.chatInput }}", "options": {"systemMessage": "You are a support assistant."}},
             "name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [220, 0]},
            {"parameters": {"model": {"__rl": true, "value": "gpt-4o-mini", "mode": "list"}, "options": {}},
             "name": "OpenAI Chat Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [100, 220],
             "credentials": {"openAiApi": {"id": credential_id, "name": "OpenAI"}}},
            {"parameters": {"sessionIdType": "customKey", "sessionKey": "={{ $json.sessionId }}", "contextWindowLength": 5},
             "name": "Window Buffer Memory", "type": "@n8n/n8n-nodes-langchain.memoryBufferWindow", "typeVersion": 1.3, "position": [240, 220]},
            {"parameters": {"toolDescription": "Get the current weather for a city", "url": format!("{base}/weather"), "sendQuery": true,
                            "parametersQuery": {"values": [{"name": "city"}]}},
             "name": "Get Weather", "type": "@n8n/n8n-nodes-langchain.toolHttpRequest", "typeVersion": 1.1, "position": [380, 220]},
            {"parameters": {"description": "Look a customer up by id", "workflowId": {"__rl": true, "value": lookup_id, "mode": "list"},
                            "workflowInputs": {"mappingMode": "defineBelow", "value": {"customerId": "={{ $fromAI('customerId', 'The customer id', 'string') }}"}}},
             "name": "Lookup Customer", "type": "@n8n/n8n-nodes-langchain.toolWorkflow", "typeVersion": 2.1, "position": [520, 220]}
        ],
        "connections": {
            "Manual": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
            "OpenAI Chat Model": {"ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]},
            "Window Buffer Memory": {"ai_memory": [[{"node": "AI Agent", "type": "ai_memory", "index": 0}]]},
            "Get Weather": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]},
            "Lookup Customer": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"}
    })
}

async fn run(inst: &Instance, caller: &Caller, workflow_id: &str, input: Value) -> String {
    let req = RunRequest { workflow_id: workflow_id.to_owned(), input: input.as_object().cloned().map_or(TriggerInput::None, TriggerInput::Data), ..RunRequest::default() };
    let started = inst.start_run(caller, &req).await.unwrap();
    // what the executor function does with the Runs queue's message
    inst.executor.run_execution(&started.execution_id).await.unwrap();
    inst.wait_settled(&started.execution_id, std::time::Duration::from_secs(60)).await.unwrap();
    let out = inst.finish_run(caller, &started, false).await.unwrap();
    assert_eq!(out.status, "success", "{out:?}");
    started.execution_id
}

#[tokio::test]
async fn an_agent_workflow_runs_with_stored_credentials_and_memory_and_shows_every_call() {
    let server = openai::start();
    let inst = instance().await;
    let alice = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&alice).await.unwrap();
    let cred = inst
        .create_credential(&alice, NewCredentialInput { name: "OpenAI".into(), kind: "openAiApi".into(), data: json!({"apiKey": "sk-test", "url": format!("{}/v1", server.base)}), description: None, project_id: None })
        .await
        .unwrap();
    let lookup = build(&inst, &alice, &lookup_workflow()).await;
    let wf = build(&inst, &alice, &agent_workflow(&server.base, &cred.id, &lookup)).await;

    let first = run(&inst, &alice, &wf, json!({"chatInput": "What's the weather in Paris for customer C42?", "sessionId": "chat-1"})).await;
    let answer = inst.execution_node_output(&alice, &first, "AI Agent", None, None).await.unwrap();
    let text = answer.outputs[0].items[0]["json"]["output"].as_str().unwrap().to_owned();
    assert!(text.contains("18°C") && text.contains("Ada Lovelace"), "{text}");

    // every model call, in order, with what it was sent
    let model = inst.execution_node_output(&alice, &first, "OpenAI Chat Model", None, None).await.unwrap();
    assert_eq!(model.total_runs, Some(3));
    let calls = &model.outputs[0].items;
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0]["label"], "node:OpenAI Chat Model[call 1][0][0]");
    // n8n's shapes: the generation's text and finish reason; the prompt as one string
    assert_eq!(calls[0]["json"]["response"]["generations"][0][0]["generationInfo"]["finish_reason"], "tool_calls");
    assert_eq!(calls[1]["json"]["response"]["generations"][0][0]["generationInfo"]["finish_reason"], "tool_calls");
    assert_eq!(calls[2]["json"]["response"]["generations"][0][0]["generationInfo"]["finish_reason"], "stop");
    let last_prompt = calls[2]["input"]["messages"][0].as_str().unwrap();
    assert_eq!(last_prompt.matches("\nTool: ").count(), 2, "the last call saw both tool results: {last_prompt}");
    let tool = inst.execution_node_output(&alice, &first, "Get Weather", None, None).await.unwrap();
    assert_eq!(tool.outputs[0].items[0]["input"], json!({"query": {"city": "Paris"}}));
    let lookup_call = inst.execution_node_output(&alice, &first, "Lookup Customer", None, None).await.unwrap();
    assert_eq!(lookup_call.outputs[0].items[0]["json"]["name"], "Ada Lovelace");

    // token usage on the execution document
    let doc = inst.data.executions.get_data(&first, &DataSelection::default()).await.unwrap().unwrap();
    let tokens = doc.pointer("/resultData/tokenUsage").cloned().unwrap_or(Value::Null);
    assert_eq!(tokens["completionTokens"], 21, "{tokens}");
    assert!(tokens["totalTokens"].as_u64().unwrap() > 21);

    // memory in DynamoDB carries the first exchange into a second run of the same session
    let stored = inst.data.chat_memory.load(&wf, "chat-1").await.unwrap();
    assert_eq!(stored.len(), 2);
    let second = run(&inst, &alice, &wf, json!({"chatInput": "What did I ask before?", "sessionId": "chat-1"})).await;
    let answer = inst.execution_node_output(&alice, &second, "AI Agent", None, None).await.unwrap();
    assert_eq!(answer.outputs[0].items[0]["json"]["output"], "Earlier you asked: What's the weather in Paris for customer C42?");
    assert_eq!(inst.data.chat_memory.load(&wf, "chat-1").await.unwrap().len(), 4);

    // a stranger sees none of it
    let mallory = Caller::new(UserId("mallory".into()));
    assert!(inst.execution_node_output(&mallory, &first, "OpenAI Chat Model", None, None).await.is_err());
}

/// A local Bedrock runtime: `POST /model/{id}/converse-stream` answered as
/// AWS event-stream frames (messageStart, content block deltas, a tool use
/// with its input in pieces, messageStop, metadata), a calculator call
/// first, then an answer quoting the tool result it was sent.
fn bedrock_server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<(String, String, Value)>>>) {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(vec![]));
    let state = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/model/{model}/converse-stream",
                axum::routing::post(move |axum::extract::Path(model): axum::extract::Path<String>, headers: axum::http::HeaderMap, body: bytes::Bytes| {
                    let state = state.clone();
                    async move {
                        let body: Value = serde_json::from_slice(&body).unwrap_or_default();
                        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                        state.lock().unwrap().push((model, auth, body.clone()));
                        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
                        let result = msgs.iter().flat_map(|m| m["content"].as_array().cloned().unwrap_or_default()).find_map(|b| b.pointer("/toolResult/content/0/text").and_then(Value::as_str).map(str::to_owned));
                        let mut events: Vec<(&str, Value)> = vec![("messageStart", json!({"role": "assistant"}))];
                        let stop = match result {
                            None => {
                                events.push(("contentBlockStart", json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "calculator"}}})));
                                events.push(("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"input\": "}}})));
                                events.push(("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "\"6 * 7\"}"}}})));
                                events.push(("contentBlockStop", json!({"contentBlockIndex": 0})));
                                "tool_use"
                            }
                            Some(r) => {
                                events.push(("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "The answer "}})));
                                events.push(("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": format!("is {r}")}})));
                                events.push(("contentBlockStop", json!({"contentBlockIndex": 0})));
                                "end_turn"
                            }
                        };
                        events.push(("messageStop", json!({"stopReason": stop})));
                        events.push(("metadata", json!({"usage": {"inputTokens": 30, "outputTokens": 6, "totalTokens": 36}, "metrics": {"latencyMs": 5}})));
                        let mut out = Vec::new();
                        for (kind, payload) in events {
                            let msg = Message::new(payload.to_string().into_bytes())
                                .add_header(Header::new(":event-type", HeaderValue::String(kind.to_owned().into())))
                                .add_header(Header::new(":content-type", HeaderValue::String("application/json".to_owned().into())))
                                .add_header(Header::new(":message-type", HeaderValue::String("event".to_owned().into())));
                            aws_smithy_eventstream::frame::write_message_to(&msg, &mut out).unwrap();
                        }
                        ([("content-type", "application/vnd.amazon.eventstream")], out)
                    }
                }),
            );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{}", rx.recv().unwrap()), seen)
}

#[tokio::test]
async fn the_bedrock_chat_model_speaks_converse_stream_with_the_stored_aws_credential() {
    let (base, seen) = bedrock_server();
    let inst = instance().await;
    let alice = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&alice).await.unwrap();
    let cred = inst
        .create_credential(
            &alice,
            NewCredentialInput {
                name: "AWS".into(),
                kind: "aws".into(),
                data: json!({"region": "eu-central-1", "accessKeyId": "AKIDEXAMPLE", "secretAccessKey": "wJalrXUtnFEMI/K7MDENG", "customEndpoints": true, "bedrockRuntimeEndpoint": base}),
                description: None,
                project_id: None,
            },
        )
        .await
        .unwrap();
    let wf = json!({
        "name": "Bedrock agent",
        "nodes": [
            {"parameters": {}, "name": "Manual", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
            {"parameters": {"promptType": "define", "text": "What is 6 times 7?", "options": {"systemMessage": "Be brief."}}, "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 0]},
            {"parameters": {"modelSource": "onDemand", "model": "anthropic.claude-3-5-sonnet-20240620-v1:0", "options": {"temperature": 0.2, "maxTokensToSample": 512}},
             "name": "Bedrock", "type": "@n8n/n8n-nodes-langchain.lmChatAwsBedrock", "typeVersion": 1.1, "position": [100, 200], "credentials": {"aws": {"id": cred.id, "name": "AWS"}}},
            {"parameters": {}, "name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1, "position": [300, 200]}
        ],
        "connections": {
            "Manual": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Bedrock": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Calculator": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        }
    });
    let id = build(&inst, &alice, &wf).await;
    let exec = run(&inst, &alice, &id, json!({})).await;
    let answer = inst.execution_node_output(&alice, &exec, "Agent", None, None).await.unwrap();
    assert_eq!(answer.outputs[0].items[0]["json"]["output"], "The answer is 42");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let (model, auth, body) = &seen[0];
    assert_eq!(model, "anthropic.claude-3-5-sonnet-20240620-v1:0");
    assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") && auth.contains("/eu-central-1/bedrock/aws4_request"), "SigV4 with the credential's key and region: {auth}");
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(body["inferenceConfig"]["maxTokens"], 512);
    assert!((body["inferenceConfig"]["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert_eq!(body["toolConfig"]["tools"][0]["toolSpec"]["name"], "calculator");
    // the second call carries the tool use and its result
    let msgs = seen[1].2["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["content"][0]["toolUse"]["input"], json!({"input": "6 * 7"}));
    assert_eq!(msgs[2]["content"][0]["toolResult"]["toolUseId"], "tooluse_1");
    let model_runs = inst.execution_node_output(&alice, &exec, "Bedrock", None, None).await.unwrap();
    assert_eq!(model_runs.total_runs, Some(2));
    assert_eq!(model_runs.outputs[0].items[1]["json"]["tokenUsage"], json!({"completionTokens": 6, "promptTokens": 30, "totalTokens": 36}));
}

async fn step(inst: &Instance, caller: &Caller, req: instance::executions::StepRequest) -> Result<instance::executions::RunOutcome, String> {
    let started = inst.start_step(caller, &req).await.map_err(|e| e.to_string())?;
    inst.executor.run_execution(&started.execution_id).await.unwrap();
    inst.wait_settled(&started.execution_id, std::time::Duration::from_secs(60)).await.unwrap();
    Ok(inst.finish_run(caller, &started, false).await.unwrap())
}

#[tokio::test]
async fn a_step_on_a_tool_runs_it_through_the_tool_executor_with_the_given_arguments() {
    let server = openai::start();
    let inst = instance().await;
    let alice = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&alice).await.unwrap();
    let cred = inst
        .create_credential(&alice, NewCredentialInput { name: "OpenAI".into(), kind: "openAiApi".into(), data: json!({"apiKey": "sk-test", "url": format!("{}/v1", server.base)}), description: None, project_id: None })
        .await
        .unwrap();
    let lookup = build(&inst, &alice, &lookup_workflow()).await;
    let wf = build(&inst, &alice, &agent_workflow(&server.base, &cred.id, &lookup)).await;
    let ask = |node: &str, args: Option<Value>, mock: bool| instance::executions::StepRequest {
        workflow_id: wf.clone(),
        node_name: node.into(),
        tool_arguments: args,
        mock_input: mock.then(|| vec![json!({"chatInput": "hi", "sessionId": "s"}).as_object().cloned().unwrap()]),
        ..Default::default()
    };

    // $fromAI arguments are required
    let refused = step(&inst, &alice, ask("Lookup Customer", None, true)).await.unwrap_err();
    assert!(refused.contains("$fromAI: customerId") && refused.contains("toolArguments"), "{refused}");

    // the Call Workflow tool with the model's argument, from mocked agent input
    let out = step(&inst, &alice, ask("Lookup Customer", Some(json!({"customerId": "C42"})), true)).await.unwrap();
    assert_eq!(out.status, "success", "{out:?}");
    let s = out.step.clone().unwrap();
    assert_eq!(s.node_name, "Lookup Customer");
    assert_eq!(s.ran_through_node_names, ["AI Agent"]);
    assert_eq!(s.executed_node_names, ["Lookup Customer"], "only the tool ran: no executor, no agent, no model");
    let exec = out.execution_id.clone();
    let call = inst.execution_node_output(&alice, &exec, "Lookup Customer", None, None).await.unwrap();
    assert_eq!(call.outputs[0].items[0]["json"]["name"], "Ada Lovelace");
    assert_eq!(call.outputs[0].items[0]["input"], json!({"query": {"customerId": "C42"}}));
    assert!(inst.execution_node_output(&alice, &exec, "PartialExecutionToolExecutor", None, None).await.is_err(), "the virtual executor is not reported");
    assert!(server.completions().is_empty(), "no model was called");

    // the HTTP Request Tool's placeholder, through the chain (the manual trigger runs for real)
    let out = step(&inst, &alice, ask("Get Weather", Some(json!({"city": "Rome"})), false)).await.unwrap();
    assert_eq!(out.status, "success", "{out:?}");
    assert_eq!(server.weather_calls(), vec!["Rome".to_owned()]);
    let s = out.step.unwrap();
    assert_eq!(s.executed_node_names, ["Get Weather", "Manual"]);

    // a model is not a tool: refused, pointing at its agent
    let refused = step(&inst, &alice, ask("OpenAI Chat Model", None, true)).await.unwrap_err();
    assert!(refused.contains("run \"AI Agent\" instead"), "{refused}");
}
