//! AI nodes end to end in the engine: an n8n "trigger → AI Agent (OpenAI
//! Chat Model, Window Buffer Memory, HTTP Request Tool, Call Workflow Tool)"
//! workflow, as n8n exports it, against a local server speaking OpenAI's
//! chat-completions format; every sub-node call in run data, in order.

#[path = "support/openai.rs"]
mod openai;

use std::sync::Arc;

use engine::data::TaskData;
use engine::host::{CredentialsProvider, WorkflowProvider};
use engine::{Engine, EngineSettings, ExecutionState, ExecutionStatus, Graph, Host, Item, RunOptions};
use serde_json::{json, Value};

struct Creds(String);
impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String> {
        match cred_type {
            "openAiApi" if reference["id"] == "openai-1" => Ok(json!({"apiKey": "sk-test", "url": format!("{}/v1", self.0)})),
            other => Err(format!("no credential {other} {reference}")),
        }
    }
}

struct Workflows;
impl WorkflowProvider for Workflows {
    fn get_workflow(&self, id: &str) -> Result<Value, String> {
        if id != "wf-lookup" {
            return Err(format!("no workflow {id}"));
        }
        Ok(json!({
            "id": "wf-lookup", "name": "Lookup customer",
            "nodes": [
                {"parameters": {"inputSource": "passthrough"}, "name": "When Executed by Another Workflow", "type": "n8n-nodes-base.executeWorkflowTrigger", "typeVersion": 1.1, "position": [0, 0]},
                {"parameters": {"jsCode": "return [{json: {customerId: $json.customerId, name: $json.customerId === 'C42' ? 'Ada Lovelace' : 'unknown', plan: 'pro'}}];"},
                 "name": "Find", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [200, 0]}
            ],
            "connections": {"When Executed by Another Workflow": {"main": [[{"node": "Find", "type": "main", "index": 0}]]}}
        }))
    }
}

/// The workflow as n8n 1.x exports it (ids and positions included).
fn support_workflow(base: &str, max_iterations: u32) -> Value {
    json!({
        "id": "wf-support", "name": "Support agent",
        "nodes": [
            {"parameters": {}, "id": "b1", "name": "When clicking ‘Test workflow’", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
            {"parameters": {"promptType": "define", "text": "={{ $json.chatInput }}", "options": {"systemMessage": "You are a support assistant.", "maxIterations": max_iterations, "returnIntermediateSteps": true}},
             "id": "b2", "name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [220, 0]},
            {"parameters": {"model": {"__rl": true, "value": "gpt-4o-mini", "mode": "list", "cachedResultName": "gpt-4o-mini"}, "options": {"temperature": 0.2}},
             "id": "b3", "name": "OpenAI Chat Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [100, 220],
             "credentials": {"openAiApi": {"id": "openai-1", "name": "OpenAi account"}}},
            {"parameters": {"sessionIdType": "customKey", "sessionKey": "={{ $json.sessionId }}", "contextWindowLength": 5},
             "id": "b4", "name": "Window Buffer Memory", "type": "@n8n/n8n-nodes-langchain.memoryBufferWindow", "typeVersion": 1.3, "position": [240, 220]},
            {"parameters": {"toolDescription": "Get the current weather for a city", "url": format!("{base}/weather"), "sendQuery": true,
                            "parametersQuery": {"values": [{"name": "city"}]},
                            "placeholderDefinitions": {"values": [{"name": "city", "description": "The city's name", "type": "string"}]}},
             "id": "b5", "name": "Get Weather", "type": "@n8n/n8n-nodes-langchain.toolHttpRequest", "typeVersion": 1.1, "position": [380, 220]},
            {"parameters": {"description": "Look a customer up by id", "workflowId": {"__rl": true, "value": "wf-lookup", "mode": "list", "cachedResultName": "Lookup customer"},
                            "workflowInputs": {"mappingMode": "defineBelow", "value": {"customerId": "={{ $fromAI('customerId', 'The customer id', 'string') }}"},
                                               "matchingColumns": [], "schema": [{"id": "customerId", "displayName": "customerId", "type": "string"}]}},
             "id": "b6", "name": "Lookup Customer", "type": "@n8n/n8n-nodes-langchain.toolWorkflow", "typeVersion": 2.1, "position": [520, 220]}
        ],
        "connections": {
            "When clicking ‘Test workflow’": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
            "OpenAI Chat Model": {"ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]},
            "Window Buffer Memory": {"ai_memory": [[{"node": "AI Agent", "type": "ai_memory", "index": 0}]]},
            "Get Weather": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]},
            "Lookup Customer": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"}
    })
}

fn engine(base: &str, allow_private: bool) -> Engine {
    let settings = EngineSettings { allow_private_network: allow_private, ..Default::default() };
    let host = Host { credentials: Some(Arc::new(Creds(base.to_owned()))), workflows: Some(Arc::new(Workflows)), ..Default::default() };
    Engine::new(settings, host)
}

fn run(engine: &Engine, wf: &Value, input: Value) -> ExecutionState {
    let opts = RunOptions { trigger_items: Some(vec![Item::new(input)]), ..Default::default() };
    engine.run(&Graph::from_json(wf).unwrap(), opts).unwrap().0
}

fn output(st: &ExecutionState, node: &str) -> Value {
    Value::clone(&st.node_output(node, 0).unwrap_or_else(|| panic!("{node} has no output: {:?}", st.error))[0].json)
}

fn runs<'s>(st: &'s ExecutionState, node: &str) -> &'s [TaskData] {
    st.run_data.get(node).map(Vec::as_slice).unwrap_or_default()
}

/// A sub-node run's json under its connection type: (input, output).
fn call(task: &TaskData, conn: &str) -> (Value, Value) {
    let first = |d: Option<&engine::data::TaskOutputs>| d.and_then(|d| d.other.get(conn)).and_then(|o| o[0].as_ref()).map(|o| Value::clone(&o.items()[0].json)).unwrap_or(Value::Null);
    (first(task.input_override.as_ref()), first(task.data.as_ref()))
}

#[test]
fn the_agent_calls_both_tools_remembers_the_session_and_records_every_call() {
    let server = openai::start();
    let engine = engine(&server.base, true);
    let wf = support_workflow(&server.base, 10);
    let st = run(&engine, &wf, json!({"chatInput": "What's the weather in Paris for customer C42?", "sessionId": "s-tools"}));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);

    let out = output(&st, "AI Agent");
    let answer = out["output"].as_str().unwrap();
    assert!(answer.contains("18°C") && answer.contains("Ada Lovelace"), "the answer uses both tools' results: {answer}");
    let steps = out["intermediateSteps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0]["action"]["tool"], "Get_Weather");
    assert_eq!(steps[0]["action"]["toolInput"], json!({"city": "Paris"}));
    assert_eq!(steps[1]["action"]["tool"], "Lookup_Customer");
    assert_eq!(server.weather_calls(), vec!["Paris".to_owned()], "the HTTP tool called the weather API with the model's city");

    // The model saw both tools with their schemas, and the system message.
    let sent = server.completions();
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0]["model"], "gpt-4o-mini");
    assert_eq!(sent[0]["messages"][0], json!({"role": "system", "content": "You are a support assistant."}));
    let tools = sent[0]["tools"].as_array().unwrap();
    let weather = tools.iter().find(|t| t["function"]["name"] == "Get_Weather").unwrap();
    assert_eq!(weather["function"]["parameters"]["properties"]["city"]["description"], "The city's name");
    let lookup = tools.iter().find(|t| t["function"]["name"] == "Lookup_Customer").unwrap();
    assert_eq!(lookup["function"]["parameters"]["required"], json!(["customerId"]));
    assert_eq!(lookup["function"]["description"], "Look a customer up by id");

    // Each call is a run of its sub-node, inputs and outputs under the connection type.
    let model = runs(&st, "OpenAI Chat Model");
    assert_eq!(model.len(), 3, "one run per model call");
    // n8n's N8nLlmTracing shapes: the conversation as one prompt string, the generation's text
    let (input, out0) = call(&model[0], "ai_languageModel");
    assert_eq!(input["messages"], json!(["System: You are a support assistant.\nHuman: What's the weather in Paris for customer C42?"]));
    assert!(input["estimatedTokens"].as_u64().unwrap() > 0);
    assert_eq!(input["options"]["model"], "gpt-4o-mini");
    assert_eq!(input["options"]["temperature"], 0.2);
    assert_eq!(out0["response"]["generations"][0][0]["text"], "Checking the weather.");
    assert_eq!(out0["response"]["generations"][0][0]["generationInfo"]["finish_reason"], "tool_calls");
    assert_eq!(out0["tokenUsage"]["promptTokens"], 20);
    let (input2, _) = call(&model[1], "ai_languageModel");
    assert!(input2["messages"][0].as_str().unwrap().ends_with("AI: Checking the weather.\nTool: {\"city\":\"Paris\",\"temperature\":\"18°C\",\"sky\":\"sunny\"}"), "{input2}");
    assert_eq!(model[0].source[0].as_ref().unwrap().previous_node, "AI Agent");
    let weather_runs = runs(&st, "Get Weather");
    assert_eq!(weather_runs.len(), 1);
    let (w_in, w_out) = call(&weather_runs[0], "ai_tool");
    assert_eq!(w_in, json!({"query": {"city": "Paris"}}));
    assert!(w_out["response"].as_str().unwrap().contains("18°C"));
    let lookup_runs = runs(&st, "Lookup Customer");
    let (l_in, l_out) = call(&lookup_runs[0], "ai_tool");
    assert_eq!(l_in, json!({"query": {"customerId": "C42"}}));
    assert_eq!(l_out, json!({"customerId": "C42", "name": "Ada Lovelace", "plan": "pro"}), "the sub-workflow's item, as n8n records it");
    let memory = runs(&st, "Window Buffer Memory");
    assert_eq!(memory.len(), 2, "load, then save");
    let (load_in, load_out) = call(&memory[0], "ai_memory");
    assert_eq!(load_in["action"], "loadMemoryVariables");
    assert_eq!(load_in["values"]["input"], "What's the weather in Paris for customer C42?");
    assert_eq!(load_in["values"]["system_message"], "You are a support assistant.");
    assert_eq!(load_out["chatHistory"], json!([]));
    let (save_in, save_out) = call(&memory[1], "ai_memory");
    assert_eq!(save_in["action"], "saveContext");
    assert_eq!(save_in["output"]["output"], answer);
    assert_eq!(save_out["chatHistory"][0]["id"], json!(["langchain_core", "messages", "HumanMessage"]));
    assert_eq!(save_out["chatHistory"][1]["kwargs"]["content"], answer);

    // In call order: memory load, model, weather, model, lookup, model, memory save.
    let mut order: Vec<(i64, usize, &str)> = vec![];
    for (name, rs) in &st.run_data {
        for (i, r) in rs.iter().enumerate() {
            if r.input_override.is_some() {
                order.push((r.start_time, i, name.as_str()));
            }
        }
    }
    order.sort();
    let names: Vec<&str> = order.iter().map(|o| o.2).collect();
    let expected = ["Window Buffer Memory", "OpenAI Chat Model", "Get Weather", "OpenAI Chat Model", "Lookup Customer", "OpenAI Chat Model", "Window Buffer Memory"];
    // start times are milliseconds: equal ones keep their per-node order, so check each node's sequence and the interleaving where it is visible
    assert_eq!(names.len(), expected.len());
    for n in ["Window Buffer Memory", "OpenAI Chat Model", "Get Weather", "Lookup Customer"] {
        assert_eq!(names.iter().filter(|x| **x == n).count(), expected.iter().filter(|x| **x == n).count(), "{n}");
    }
    assert!(order.windows(2).all(|w| w[0].0 <= w[1].0));

    // Tokens: the three model calls' usage, summed on the execution.
    let sum: u64 = model.iter().map(|r| call(r, "ai_languageModel").1["tokenUsage"]["totalTokens"].as_u64().unwrap()).sum();
    assert!(sum > 0);
    assert_eq!(st.token_usage.total_tokens, sum);
    assert_eq!(st.token_usage.completion_tokens, 21);

    // A second run with the same session key: memory carries the first exchange.
    let st2 = run(&engine, &wf, json!({"chatInput": "What did I ask before?", "sessionId": "s-tools"}));
    assert_eq!(st2.status, ExecutionStatus::Success, "{:?}", st2.error);
    assert_eq!(output(&st2, "AI Agent")["output"], "Earlier you asked: What's the weather in Paris for customer C42?");
    let history = call(&runs(&st2, "Window Buffer Memory")[0], "ai_memory").1["chatHistory"].clone();
    assert_eq!(history.as_array().unwrap().len(), 2);
    assert_eq!(history[1]["id"][2], "AIMessage");
    // Another session starts empty.
    let st3 = run(&engine, &wf, json!({"chatInput": "What did I ask before?", "sessionId": "s-other"}));
    assert_eq!(output(&st3, "AI Agent")["output"], "You have not asked anything before.");
}

#[test]
fn max_iterations_stop_the_loop_and_a_slow_model_times_out() {
    let server = openai::start();
    let engine = engine(&server.base, true);
    let mut wf = support_workflow(&server.base, 3);
    wf["nodes"].as_array_mut().unwrap().push(json!({"parameters": {}, "name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1, "position": [600, 220]}));
    wf["connections"]["Calculator"] = json!({"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]});
    let st = run(&engine, &wf, json!({"chatInput": "loop forever", "sessionId": "s-loop"}));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st, "AI Agent")["output"], "Agent stopped due to max iterations.");
    assert_eq!(runs(&st, "OpenAI Chat Model").len(), 3);
    assert_eq!(runs(&st, "Calculator").len(), 3);
    assert_eq!(call(&runs(&st, "Calculator")[0], "ai_tool").1["response"], "2");

    // per-call timeout (the node's option), no retries: the call fails, and so does the agent
    wf["nodes"][2]["parameters"]["options"] = json!({"timeout": 300, "maxRetries": 0});
    let t0 = std::time::Instant::now();
    let st = run(&engine, &wf, json!({"chatInput": "be slow", "sessionId": "s-slow"}));
    assert!(t0.elapsed() < std::time::Duration::from_millis(1400), "the call was cut at its timeout");
    assert_eq!(st.status, ExecutionStatus::Error);
    let err = st.error.clone().unwrap().message;
    assert!(err.contains("did not answer within 300 ms"), "{err}");
    let model = runs(&st, "OpenAI Chat Model");
    assert_eq!(model.len(), 1);
    assert_eq!(model[0].execution_status, ExecutionStatus::Error, "the failed call is recorded on the model");
}

#[test]
fn chain_with_calculator_agent_code_tool_and_structured_output() {
    let server = openai::start();
    let engine = engine(&server.base, true);
    let wf = json!({
        "id": "wf-calc",
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
            {"parameters": {"promptType": "define", "text": "={{ $json.q }}", "hasOutputParser": true, "options": {}}, "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 0]},
            {"parameters": {"model": "gpt-4o"}, "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1, "position": [0, 200], "credentials": {"openAiApi": {"id": "openai-1", "name": "x"}}},
            {"parameters": {}, "name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1, "position": [200, 200]},
            {"parameters": {"description": "Shouts the input", "jsCode": "return query.toUpperCase() + '!';"}, "name": "Shout", "type": "@n8n/n8n-nodes-langchain.toolCode", "typeVersion": 1.3, "position": [300, 200]},
            {"parameters": {"jsonSchemaExample": "{\"result\": 1, \"unit\": \"m\"}"}, "name": "Parser", "type": "@n8n/n8n-nodes-langchain.outputParserStructured", "typeVersion": 1.2, "position": [400, 200]}
        ],
        "connections": {
            "Start": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Calculator": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
            "Shout": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
            "Parser": {"ai_outputParser": [[{"node": "Agent", "type": "ai_outputParser", "index": 0}]]}
        }
    });
    let st = run(&engine, &wf, json!({"q": "calculate 2 + 3 * 4"}));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st, "Agent")["output"], json!({"result": 14, "unit": "none"}));
    assert_eq!(call(&runs(&st, "Parser")[0], "ai_outputParser").1["response"], json!({"result": 14, "unit": "none"}));
    let sent = server.completions();
    assert!(sent[0]["messages"][0]["content"].as_str().unwrap().contains("JSON Schema"), "format instructions reach the model");

    let mut no_parser = wf.clone();
    no_parser["nodes"][1]["parameters"]["hasOutputParser"] = json!(false);
    let st = run(&engine, &no_parser, json!({"q": "run the code tool"}));
    assert_eq!(output(&st, "Agent")["output"], "The tool said HELLO!");
    assert_eq!(call(&runs(&st, "Shout")[0], "ai_tool").0, json!({"query": "hello"}));

    // Basic LLM Chain: one call, `text` out.
    let chain = json!({
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1},
            {"parameters": {"promptType": "define", "text": "={{ $json.q }}"}, "name": "Chain", "type": "@n8n/n8n-nodes-langchain.chainLlm", "typeVersion": 1.5},
            {"parameters": {"model": "gpt-4o"}, "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1, "credentials": {"openAiApi": {"id": "openai-1", "name": "x"}}}
        ],
        "connections": {
            "Start": {"main": [[{"node": "Chain", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Chain", "type": "ai_languageModel", "index": 0}]]}
        }
    });
    let st = run(&engine, &chain, json!({"q": "hi there"}));
    assert_eq!(output(&st, "Chain"), json!({"text": "You said: hi there"}));
    assert_eq!(runs(&st, "Model").len(), 1);
}

#[test]
fn a_root_without_a_model_and_a_private_model_url_fail_clearly() {
    let server = openai::start();
    let mut wf = support_workflow(&server.base, 5);
    wf["connections"].as_object_mut().unwrap().remove("OpenAI Chat Model");
    let st = run(&engine(&server.base, true), &wf, json!({"chatInput": "hi", "sessionId": "s-none"}));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().message.contains("A Chat Model sub-node must be connected"));

    // The model's base URL goes through the SSRF guard like any request.
    let st = run(&engine(&server.base, false), &support_workflow(&server.base, 5), json!({"chatInput": "hi", "sessionId": "s-ssrf"}));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap().message;
    assert!(e.contains("refused"), "{e}");
    assert!(server.completions().is_empty(), "nothing reached the server");
}

#[test]
fn a_fallback_model_and_anthropic_thinking_are_refused_before_any_call() {
    let server = openai::start();
    let mut wf = support_workflow(&server.base, 5);
    wf["nodes"][1]["typeVersion"] = json!(2.1);
    wf["nodes"][1]["parameters"]["needsFallback"] = json!(true);
    let st = run(&engine(&server.base, true), &wf, json!({"chatInput": "hi", "sessionId": "s-fallback"}));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().message.contains("fallback model (Enable Fallback Model) is not supported"));
    assert!(server.completions().is_empty(), "nothing reached the server");

    let (base, seen) = anthropic_server();
    let wf = json!({
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1},
            {"parameters": {"promptType": "define", "text": "hi"}, "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7},
            {"parameters": {"model": "claude-3-5-haiku-20241022", "options": {"thinking": true}}, "name": "Claude", "type": "@n8n/n8n-nodes-langchain.lmChatAnthropic", "typeVersion": 1.3,
             "credentials": {"anthropicApi": {"id": "a1", "name": "Anthropic"}}}
        ],
        "connections": {
            "Start": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Claude": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }
    });
    let host = Host { credentials: Some(Arc::new(AnthropicCreds(base))), ..Default::default() };
    let engine = Engine::new(EngineSettings { allow_private_network: true, ..Default::default() }, host);
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().message.contains("extended thinking (the Enable Thinking option) is not supported"));
    assert!(seen.lock().unwrap().is_empty(), "nothing reached the server");
}

#[test]
fn cancel_reaches_a_model_call_in_flight() {
    let server = openai::start();
    let engine = engine(&server.base, true);
    let wf = support_workflow(&server.base, 5);
    let cancel = engine::CancelToken::new();
    let c = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        c.cancel();
    });
    let t0 = std::time::Instant::now();
    let opts = RunOptions { trigger_items: Some(vec![Item::new(json!({"chatInput": "be slow", "sessionId": "s-cancel"}))]), cancel: Some(cancel), ..Default::default() };
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Canceled);
    assert!(t0.elapsed() < std::time::Duration::from_millis(1200), "the call stopped before the model answered ({:?})", t0.elapsed());
}

/// A local server speaking Anthropic's Messages API: a `calculator` tool use
/// first, then an answer quoting the tool result it was sent.
fn anthropic_server() -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::http::HeaderMap;
    let seen = Arc::new(std::sync::Mutex::new(vec![]));
    let state = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/messages",
                axum::routing::post(move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
                    let state = state.clone();
                    async move {
                        state.lock().unwrap().push(json!({"key": headers.get("x-api-key").and_then(|v| v.to_str().ok()), "version": headers.get("anthropic-version").and_then(|v| v.to_str().ok()), "body": body}));
                        let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
                        let result = last["content"].as_array().and_then(|c| c.iter().find(|b| b["type"] == "tool_result")).map(|b| b["content"].clone());
                        // the Messages API's stream: text deltas, a tool use with its input in two pieces
                        let mut events = vec![
                            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 12, "output_tokens": 0}}}),
                            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                        ];
                        let stop = match result {
                            None => {
                                events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}}));
                                events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "compute."}}));
                                events.push(json!({"type": "content_block_stop", "index": 0}));
                                events.push(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}}}));
                                events.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"input\": "}}));
                                events.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"6 * 7\"}"}}));
                                events.push(json!({"type": "content_block_stop", "index": 1}));
                                "tool_use"
                            }
                            Some(r) => {
                                events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("The answer is {}", r.as_str().unwrap_or_default())}}));
                                events.push(json!({"type": "content_block_stop", "index": 0}));
                                "end_turn"
                            }
                        };
                        events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}));
                        events.push(json!({"type": "message_stop"}));
                        let body: String = events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())).collect();
                        ([("content-type", "text/event-stream")], body)
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

struct AnthropicCreds(String);
impl CredentialsProvider for AnthropicCreds {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        assert_eq!(cred_type, "anthropicApi");
        Ok(json!({"apiKey": "sk-ant-test", "url": self.0}))
    }
}

#[test]
fn the_anthropic_chat_model_speaks_the_messages_api_with_tool_use() {
    let (base, seen) = anthropic_server();
    let wf = json!({
        "id": "wf-claude",
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1},
            {"parameters": {"promptType": "define", "text": "What is 6 times 7?", "options": {"systemMessage": "Be brief."}}, "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7},
            {"parameters": {"model": {"__rl": true, "value": "claude-3-5-haiku-20241022", "mode": "list"}, "options": {}}, "name": "Claude", "type": "@n8n/n8n-nodes-langchain.lmChatAnthropic", "typeVersion": 1.3,
             "credentials": {"anthropicApi": {"id": "a1", "name": "Anthropic"}}},
            {"parameters": {}, "name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1}
        ],
        "connections": {
            "Start": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Claude": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Calculator": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        }
    });
    let host = Host { credentials: Some(Arc::new(AnthropicCreds(base))), ..Default::default() };
    let engine = Engine::new(EngineSettings { allow_private_network: true, ..Default::default() }, host);
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st, "Agent")["output"], "The answer is 42");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["key"], "sk-ant-test");
    assert_eq!(seen[0]["version"], "2023-06-01");
    assert_eq!(seen[0]["body"]["system"], json!([{"type": "text", "text": "Be brief."}]));
    assert_eq!(seen[0]["body"]["stream"], true);
    assert_eq!(seen[0]["body"]["model"], "claude-3-5-haiku-20241022");
    assert_eq!(seen[0]["body"]["tools"][0]["name"], "calculator");
    assert_eq!(seen[0]["body"]["tools"][0]["input_schema"]["required"], json!(["input"]));
    // the second request carries the tool use and its result
    let msgs = seen[1]["body"]["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(msgs[2]["content"][0]["content"], "42");
    assert_eq!(st.token_usage.total_tokens, 34);
}

#[test]
fn an_agent_from_2_1_streams_its_answer_to_a_streaming_caller() {
    use engine::stream::{ChunkKind, StreamHook};
    let server = openai::start();
    let engine = engine(&server.base, true);
    let mut wf = support_workflow(&server.base, 10);
    wf["nodes"][1]["typeVersion"] = json!(2.1);
    let chunks = Arc::new(std::sync::Mutex::new(vec![]));
    let sink = chunks.clone();
    let opts = RunOptions {
        trigger_items: Some(vec![Item::new(json!({"chatInput": "What's the weather in Paris for customer C42?", "sessionId": "s-stream"}))]),
        stream: Some(StreamHook::new(move |c| sink.lock().unwrap().push(c))),
        ..Default::default()
    };
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let chunks = chunks.lock().unwrap().clone();
    assert_eq!(chunks.first().unwrap().kind, ChunkKind::Begin);
    assert_eq!(chunks.last().unwrap().kind, ChunkKind::End);
    assert!(chunks.iter().all(|c| c.metadata.node_name == "AI Agent" && c.metadata.node_id == "b2" && c.metadata.item_index == 0 && c.metadata.run_index == 0));
    let items: Vec<&str> = chunks.iter().filter(|c| c.kind == ChunkKind::Item).map(|c| c.content.as_deref().unwrap()).collect();
    assert!(items.len() > 3, "the text arrives in pieces: {items:?}");
    let streamed: String = items.concat();
    // as n8n's event stream collects it: every model call's text, the tool-calling turn's included
    assert!(streamed.starts_with("Checking the weather.Weather: "), "{streamed}");
    assert_eq!(output(&st, "AI Agent")["output"], streamed);
    let line = chunks[0].line();
    let v: Value = serde_json::from_str(line.trim_end()).unwrap();
    assert_eq!(v["type"], "begin");
    assert!(v.get("content").is_none() && v["metadata"]["timestamp"].is_i64());
    assert!(line.ends_with('\n'));

    // the same agent at 1.7 does not stream (n8n streams from 2.1)
    let chunks = Arc::new(std::sync::Mutex::new(vec![]));
    let sink = chunks.clone();
    let wf17 = support_workflow(&server.base, 10);
    let opts = RunOptions {
        trigger_items: Some(vec![Item::new(json!({"chatInput": "hello", "sessionId": "s-17"}))]),
        stream: Some(StreamHook::new(move |c| sink.lock().unwrap().push(c))),
        ..Default::default()
    };
    engine.run(&Graph::from_json(&wf17).unwrap(), opts).unwrap();
    assert!(chunks.lock().unwrap().is_empty());

    // a failing node tells the streaming caller
    wf["connections"].as_object_mut().unwrap().remove("OpenAI Chat Model");
    let chunks = Arc::new(std::sync::Mutex::new(vec![]));
    let sink = chunks.clone();
    let opts = RunOptions {
        trigger_items: Some(vec![Item::new(json!({"chatInput": "hello", "sessionId": "s-err"}))]),
        stream: Some(StreamHook::new(move |c| sink.lock().unwrap().push(c))),
        ..Default::default()
    };
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Error);
    let chunks = chunks.lock().unwrap().clone();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].kind, ChunkKind::Error);
    assert_eq!(chunks[0].metadata.node_name, "AI Agent");
    assert!(chunks[0].content.as_deref().unwrap().contains("connect a chat model"), "{:?}", chunks[0]);
}

/// A local Ollama: `/api/chat` answering in NDJSON lines, a tool call
/// first, then an answer quoting the tool result it was sent.
fn ollama_server() -> (String, Arc<std::sync::Mutex<Vec<Value>>>) {
    let seen = Arc::new(std::sync::Mutex::new(vec![]));
    let state = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().route(
                "/api/chat",
                axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                    let state = state.clone();
                    async move {
                        state.lock().unwrap().push(body.clone());
                        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
                        let tool = msgs.iter().find(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap_or_default().to_owned());
                        let line = |v: Value| format!("{v}\n");
                        let mut out = String::new();
                        match tool {
                            None => out.push_str(&line(json!({"model": body["model"], "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "calculator", "arguments": {"input": "6 * 7"}}}]}, "done": false}))),
                            Some(r) => {
                                out.push_str(&line(json!({"model": body["model"], "message": {"role": "assistant", "content": "It is "}, "done": false})));
                                out.push_str(&line(json!({"model": body["model"], "message": {"role": "assistant", "content": r}, "done": false})));
                            }
                        }
                        out.push_str(&line(json!({"model": body["model"], "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 20, "eval_count": 4})));
                        ([("content-type", "application/x-ndjson")], out)
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

struct OllamaCreds(String);
impl CredentialsProvider for OllamaCreds {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        assert_eq!(cred_type, "ollamaApi");
        Ok(json!({"baseUrl": format!("{}/", self.0)}))
    }
}

#[test]
fn the_ollama_chat_model_speaks_api_chat_with_tool_calls() {
    let (base, seen) = ollama_server();
    let wf = json!({
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1},
            {"parameters": {"promptType": "define", "text": "What is 6 times 7?", "options": {}}, "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 2},
            {"parameters": {"model": "llama3.2:latest", "options": {"temperature": 0.1, "numCtx": 4096, "topK": -1, "keepAlive": "10m", "format": "default"}}, "name": "Ollama", "type": "@n8n/n8n-nodes-langchain.lmChatOllama", "typeVersion": 1,
             "credentials": {"ollamaApi": {"id": "o1", "name": "Ollama"}}},
            {"parameters": {}, "name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1}
        ],
        "connections": {
            "Start": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Ollama": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Calculator": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        }
    });
    let host = Host { credentials: Some(Arc::new(OllamaCreds(base))), ..Default::default() };
    let engine = Engine::new(EngineSettings { allow_private_network: true, ..Default::default() }, host);
    let (st, _) = engine.run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st, "Agent")["output"], "It is 42");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["model"], "llama3.2:latest");
    assert_eq!(seen[0]["stream"], true);
    assert_eq!(seen[0]["options"], json!({"temperature": 0.1, "num_ctx": 4096}), "n8n's option names become Ollama's; -1 means unset");
    assert_eq!(seen[0]["keep_alive"], "10m");
    assert!(seen[0].get("format").is_none());
    assert_eq!(seen[0]["messages"][0], json!({"role": "system", "content": "You are a helpful assistant"}));
    assert_eq!(seen[0]["tools"][0]["function"]["name"], "calculator");
    let msgs = seen[1]["messages"].as_array().unwrap();
    assert_eq!(msgs[2]["tool_calls"][0]["function"], json!({"name": "calculator", "arguments": {"input": "6 * 7"}}));
    assert_eq!(msgs[3], json!({"role": "tool", "content": "42", "tool_name": "calculator"}));
    assert_eq!(st.token_usage.total_tokens, 48);
    let (_, out) = call(&runs(&st, "Ollama")[1], "ai_languageModel");
    assert_eq!(out["tokenUsage"], json!({"completionTokens": 4, "promptTokens": 20, "totalTokens": 24}));
}

fn chain_workflow(base: &str, node: Value) -> Value {
    let _ = base;
    json!({
        "nodes": [
            {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1},
            node,
            {"parameters": {"model": "gpt-4o-mini", "options": {}}, "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "credentials": {"openAiApi": {"id": "openai-1", "name": "x"}}}
        ],
        "connections": {
            "Start": {"main": [[{"node": "Root", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Root", "type": "ai_languageModel", "index": 0}]]}
        }
    })
}

fn run_items(engine: &Engine, wf: &Value, items: Vec<Value>) -> ExecutionState {
    let opts = RunOptions { trigger_items: Some(items.into_iter().map(Item::new).collect()), ..Default::default() };
    engine.run(&Graph::from_json(wf).unwrap(), opts).unwrap().0
}

fn out_jsons(st: &ExecutionState, node: &str, output: usize) -> Vec<Value> {
    st.node_output(node, output).map(|items| items.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

#[test]
fn the_text_classifier_routes_items_to_their_categories() {
    let server = openai::start();
    let engine = engine(&server.base, true);
    let classifier = json!({"parameters": {"inputText": "={{ $json.text }}",
        "categories": {"categories": [{"category": "Billing", "description": "money matters"}, {"category": "Technical", "description": "it broke"}]},
        "options": {"fallback": "other", "multiClass": true}},
        "name": "Root", "type": "@n8n/n8n-nodes-langchain.textClassifier", "typeVersion": 1.1});
    let wf = chain_workflow(&server.base, classifier);
    let st = run_items(&engine, &wf, vec![json!({"text": "I want a refund"}), json!({"text": "the app shows an error after a crash"}), json!({"text": "hello there"}), json!({"text": "refund for the crash"})]);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let texts = |o: usize| out_jsons(&st, "Root", o).iter().map(|j| j["text"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(texts(0), ["I want a refund", "refund for the crash"], "Billing: the input items pass through");
    assert_eq!(texts(1), ["the app shows an error after a crash", "refund for the crash"], "multiple classes may be true");
    assert_eq!(texts(2), ["hello there"], "Other");
    assert_eq!(engine::partial::output_names(Graph::from_json(&wf).unwrap().node("Root").unwrap()), ["Billing", "Technical", "Other"]);
    // the prompt: n8n's template, the schema's format instructions, the class rules
    let sent = server.completions();
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Please classify the text provided by the user into one of the following categories: Billing, Technical, and use"), "{system}");
    assert!(system.contains("Should be true if the input has category \\\"Billing\\\" (description: money matters)"), "{system}");
    assert!(system.contains("Categories are not mutually exclusive") && system.contains("select the \"fallback\" option"));
    assert_eq!(sent[0]["messages"][1], json!({"role": "user", "content": "I want a refund"}));
    assert_eq!(runs(&st, "Model").len(), 4, "one model call per item");

    // an answer that is not the schema: an error, or (auto-fixing) a second call that repairs it
    let garbled = vec![json!({"text": "garbled"})];
    let st = run_items(&engine, &wf, garbled.clone());
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().message.contains("doesn't fit required format"));
    let mut fixing = wf.clone();
    fixing["nodes"][1]["parameters"]["options"]["enableAutoFixing"] = json!(true);
    let st = run_items(&engine, &fixing, garbled);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out_jsons(&st, "Root", 0).len(), 1);
    assert_eq!(runs(&st, "Model").len(), 2);
}

#[test]
fn the_information_extractor_outputs_what_the_schema_asks_for() {
    let server = openai::start();
    let engine = engine(&server.base, true);
    let extractor = json!({"parameters": {"text": "={{ $json.text }}", "attributes": {"attributes": [
            {"name": "name", "type": "string", "description": "The person's name", "required": true},
            {"name": "born", "type": "date", "description": "Date of birth"}]}, "options": {}},
        "name": "Root", "type": "@n8n/n8n-nodes-langchain.informationExtractor", "typeVersion": 1.2});
    let wf = chain_workflow(&server.base, extractor);
    let st = run_items(&engine, &wf, vec![json!({"text": "Ada Lovelace was born on 10 December 1815."})]);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out_jsons(&st, "Root", 0), vec![json!({"output": {"name": "Ada Lovelace", "born": "1815-12-10"}})]);
    let sent = server.completions();
    let system = sent[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are an expert extraction algorithm."), "{system}");
    assert!(system.contains("\"format\":\"date\"") && system.contains("\"required\":[\"name\"]"), "{system}");

    // an unparsable answer is always repaired once (n8n's OutputFixingParser)
    let st = run_items(&engine, &wf, vec![json!({"text": "a broken answer please"})]);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out_jsons(&st, "Root", 0)[0]["output"]["name"], "Ada Lovelace");
    assert_eq!(runs(&st, "Model").len(), 2);

    // from a JSON example (1.2: every property required)
    let mut from_json = wf.clone();
    from_json["nodes"][1]["parameters"] = json!({"text": "={{ $json.text }}", "schemaType": "fromJson", "jsonSchemaExample": "{\"name\": \"x\", \"born\": \"2000-01-01\", \"age\": 3}"});
    let st = run_items(&engine, &from_json, vec![json!({"text": "Ada Lovelace"})]);
    assert_eq!(st.status, ExecutionStatus::Error, "age is required and missing even after the repair");
    from_json["nodes"][1]["typeVersion"] = json!(1.1);
    let st = run_items(&engine, &from_json, vec![json!({"text": "Ada Lovelace"})]);
    assert_eq!(st.status, ExecutionStatus::Success, "before 1.2 the example's properties are optional: {:?}", st.error);
}
