//! The Chat Trigger's hosted chat, end to end through the local cloud: an
//! n8n "Chat Trigger → AI Agent (OpenAI Chat Model, Window Buffer Memory,
//! HTTP Request Tool, Call Workflow Tool)" workflow as n8n exports it,
//! published with the MCP tool, against a local server speaking OpenAI's
//! chat-completions wire format (streamed, with tool calls). A real HTTP
//! client reads the streamed answer from the streaming URL as it arrives;
//! the second message gets the first one's context from memory; the page,
//! `loadPreviousSession`, every model and tool call in the execution, and
//! the chat's authentication are checked as a client sees them.

#[path = "../../shared/engine/tests/support/openai.rs"]
#[allow(dead_code)]
mod openai;

use local_cloud::{start, Options, Running};
use protocol::UserId;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use store::data::credentials::{NewCredential, SecretData};
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::data::InstanceData;
use store::testing::TestEnv;

const ALICE: &str = "alice-key-for-chat-tests";
const BOB: &str = "bob-key-for-chat-tests";

struct Stack {
    cloud: Running,
    http: reqwest::Client,
    data: InstanceData,
    alice: UserId,
    project: String,
}

async fn stack() -> Stack {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), ALICE.into()), ("bob".into(), BOB.into())];
    // the model server and the weather API listen on 127.0.0.1
    config.http_allow_private_network = true;
    let cloud = start(Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: false }).await.expect("local cloud starts");
    let data = InstanceData::new(&cloud.app.clients, &cloud.app.config).expect("instance data");
    let alice = UserId::from("alice".to_owned());
    let (user, _) = data.projects.create_user(&alice, "alice@example.com", Some("Alice"), None).await.expect("user");
    data.projects.create_user(&UserId::from("bob".to_owned()), "bob@example.com", Some("Bob"), None).await.expect("user");
    Stack { cloud, http: reqwest::Client::new(), data, alice, project: user.personal_project_id }
}

impl Stack {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.cloud.base_url())
    }

    async fn workflow(&self, name: &str, wf: &Value) -> String {
        let body = WorkflowBody {
            nodes: wf["nodes"].clone(),
            connections: wf["connections"].clone(),
            settings: wf.get("settings").cloned().unwrap_or(json!({})),
            pin_data: json!({}),
            meta: json!({}),
        };
        let created = self
            .data
            .workflows
            .create(NewWorkflow { name: name.into(), description: None, project_id: self.project.clone(), folder_id: None, body, available_in_mcp: true }, &self.alice)
            .await
            .expect("workflow");
        created.meta.id
    }

    async fn tool(&self, name: &str, args: Value) -> Result<Value, String> {
        let r: Value = self
            .http
            .post(self.url("/mcp"))
            .header("authorization", format!("Bearer {ALICE}"))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let result = &r["result"];
        if result["isError"] == true {
            return Err(result["content"][0]["text"].as_str().unwrap_or_default().to_owned());
        }
        Ok(result["structuredContent"].clone())
    }

    async fn credential(&self, kind: &str, secret: Value) -> String {
        self.data
            .credentials
            .create(NewCredential { name: kind.into(), kind: kind.into(), description: None, project_id: self.project.clone(), is_managed: false, is_global: false, secret: SecretData::new(secret) })
            .await
            .expect("credential")
            .id
    }

    /// The workflow's settled executions, oldest first.
    async fn executions(&self, workflow: &str, n: usize) -> Vec<Value> {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let page = self.tool("search_executions", json!({"workflowId": workflow, "limit": 100})).await.unwrap();
            let mut done: Vec<Value> = page["data"].as_array().cloned().unwrap_or_default().into_iter().filter(|e| e["status"] == "success" || e["status"] == "error").collect();
            if done.len() >= n || Instant::now() > end {
                assert!(done.len() >= n, "{n} settled executions expected: {done:?}");
                done.reverse();
                return done;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The chat workflow as n8n 1.x exports it (the memory also hangs off the
/// trigger, for Load Previous Session).
fn chat_workflow(base: &str, credential: &str, lookup: &str, webhook_id: &str) -> Value {
    json!({
        "nodes": [
            {"parameters": {"public": true, "options": {"responseMode": "streaming", "loadPreviousSession": "memory", "title": "Support"}},
             "id": "c1", "name": "When chat message received", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "typeVersion": 1.2, "position": [0, 0], "webhookId": webhook_id},
            {"parameters": {"options": {"systemMessage": "You are a support assistant.", "returnIntermediateSteps": true}},
             "id": "c2", "name": "AI Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 2.1, "position": [220, 0]},
            {"parameters": {"model": {"__rl": true, "value": "gpt-4o-mini", "mode": "list", "cachedResultName": "gpt-4o-mini"}, "options": {}},
             "id": "c3", "name": "OpenAI Chat Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [100, 220],
             "credentials": {"openAiApi": {"id": credential, "name": "OpenAi account"}}},
            {"parameters": {"contextWindowLength": 5}, "id": "c4", "name": "Window Buffer Memory", "type": "@n8n/n8n-nodes-langchain.memoryBufferWindow", "typeVersion": 1.3, "position": [240, 220]},
            {"parameters": {"toolDescription": "Get the current weather for a city", "url": format!("{base}/weather"), "sendQuery": true,
                            "parametersQuery": {"values": [{"name": "city"}]},
                            "placeholderDefinitions": {"values": [{"name": "city", "description": "The city's name", "type": "string"}]}},
             "id": "c5", "name": "Get Weather", "type": "@n8n/n8n-nodes-langchain.toolHttpRequest", "typeVersion": 1.1, "position": [380, 220]},
            {"parameters": {"description": "Look a customer up by id", "workflowId": {"__rl": true, "value": lookup, "mode": "list", "cachedResultName": "Lookup customer"},
                            "workflowInputs": {"mappingMode": "defineBelow", "value": {"customerId": "={{ $fromAI('customerId', 'The customer id', 'string') }}"},
                                               "matchingColumns": [], "schema": [{"id": "customerId", "displayName": "customerId", "type": "string"}]}},
             "id": "c6", "name": "Lookup Customer", "type": "@n8n/n8n-nodes-langchain.toolWorkflow", "typeVersion": 2.1, "position": [520, 220]}
        ],
        "connections": {
            "When chat message received": {"main": [[{"node": "AI Agent", "type": "main", "index": 0}]]},
            "OpenAI Chat Model": {"ai_languageModel": [[{"node": "AI Agent", "type": "ai_languageModel", "index": 0}]]},
            "Window Buffer Memory": {"ai_memory": [[{"node": "AI Agent", "type": "ai_memory", "index": 0}, {"node": "When chat message received", "type": "ai_memory", "index": 0}]]},
            "Get Weather": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]},
            "Lookup Customer": {"ai_tool": [[{"node": "AI Agent", "type": "ai_tool", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"}
    })
}

fn lookup_workflow() -> Value {
    json!({
        "nodes": [
            {"parameters": {"inputSource": "passthrough"}, "name": "When Executed by Another Workflow", "type": "n8n-nodes-base.executeWorkflowTrigger", "typeVersion": 1.1, "position": [0, 0]},
            {"parameters": {"jsCode": "return [{json: {customerId: $json.customerId, name: $json.customerId === 'C42' ? 'Ada Lovelace' : 'unknown'}}];"},
             "name": "Find", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [200, 0]}
        ],
        "connections": {"When Executed by Another Workflow": {"main": [[{"node": "Find", "type": "main", "index": 0}]]}}
    })
}

/// A chat message sent to `url`, its answer read as it arrives: the lines
/// with the time each arrived, and when the answer ended.
async fn stream(http: &reqwest::Client, url: &str, session: &str, text: &str) -> (Vec<(Instant, Value)>, Instant) {
    let mut resp = http.post(url).json(&json!({"action": "sendMessage", "sessionId": session, "chatInput": text})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    let mut lines = vec![];
    let mut pending = String::new();
    while let Some(bytes) = resp.chunk().await.unwrap() {
        let at = Instant::now();
        pending.push_str(std::str::from_utf8(&bytes).unwrap());
        while let Some(nl) = pending.find('\n') {
            let line: String = pending.drain(..=nl).collect();
            lines.push((at, serde_json::from_str::<Value>(line.trim()).unwrap()));
        }
    }
    assert!(pending.trim().is_empty(), "every line ends with a newline");
    (lines, Instant::now())
}

fn text(lines: &[(Instant, Value)]) -> String {
    lines.iter().filter(|(_, l)| l["type"] == "item").map(|(_, l)| l["content"].as_str().unwrap_or_default()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_published_chat_streams_the_agent_answer_remembers_the_session_and_records_every_call() {
    let model = openai::start();
    let s = stack().await;
    let credential = s.credential("openAiApi", json!({"apiKey": "sk-test", "url": format!("{}/v1", model.base)})).await;
    let lookup = s.workflow("Lookup customer", &lookup_workflow()).await;
    let hook = format!("chat-{}", uuid_like());
    let wf = s.workflow("Support chat", &chat_workflow(&model.base, &credential, &lookup, &hook)).await;
    s.tool("publish_workflow", json!({"workflowId": wf})).await.expect("published");

    // The hosted page: its texts, and messages posted to the streaming URL.
    let page = s.http.get(s.url(&format!("/webhook/{hook}/chat"))).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("script-src 'sha256-"), "{csp}");
    let html = page.text().await.unwrap();
    let stream_url = s.url(&format!("/stream/webhook/{hook}/chat"));
    assert!(html.contains(&format!("\"webhookUrl\":\"{stream_url}\"")), "{html}");
    assert!(html.contains("\"enableStreaming\":true") && html.contains("\"loadPreviousSession\":\"memory\"") && html.contains("\"title\":\"Support\""));

    // First message: the answer streams in pieces, as the model writes it.
    let (lines, ended) = stream(&s.http, &stream_url, "session-1", "What's the weather in Paris for customer C42? Answer in pieces.").await;
    assert_eq!(lines.first().unwrap().1["type"], "begin", "{lines:?}");
    assert_eq!(lines.last().unwrap().1["type"], "end");
    assert!(lines.iter().all(|(_, l)| l["metadata"]["nodeName"] == "AI Agent" && l["metadata"]["nodeId"] == "c2"));
    let answer = text(&lines);
    assert!(answer.contains("18°C") && answer.contains("Ada Lovelace"), "both tools' results reach the answer: {answer}");
    let items: Vec<&(Instant, Value)> = lines.iter().filter(|(_, l)| l["type"] == "item").collect();
    let (first, last) = (items.first().unwrap().0, items.last().unwrap().0);
    assert!(last.duration_since(first) >= Duration::from_millis(900), "the pieces arrived over time ({:?}), not at once", last.duration_since(first));
    assert!(ended.duration_since(first) >= Duration::from_millis(900), "the first piece arrived while the answer was still being written");

    // Second message, same session: memory carries the first exchange.
    let (lines, _) = stream(&s.http, &stream_url, "session-1", "What did I ask before?").await;
    assert_eq!(text(&lines), "Earlier you asked: What's the weather in Paris for customer C42? Answer in pieces.");
    // another session knows nothing
    let (lines, _) = stream(&s.http, &stream_url, "session-2", "What did I ask before?").await;
    assert_eq!(text(&lines), "You have not asked anything before.");

    // Load Previous Session: the memory's messages as the chat widget reads them.
    let prev: Value = s
        .http
        .post(s.url(&format!("/webhook/{hook}/chat")))
        .json(&json!({"action": "loadPreviousSession", "sessionId": "session-1"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = prev["data"].as_array().unwrap();
    assert_eq!(data.len(), 4, "{prev}");
    assert_eq!(data[0]["id"], json!(["langchain_core", "messages", "HumanMessage"]));
    assert_eq!(data[0]["kwargs"]["content"], "What's the weather in Paris for customer C42? Answer in pieces.");
    assert_eq!(data[1]["id"][2], "AIMessage");

    // The first execution: every model and tool call, in call order.
    let runs = s.executions(&wf, 3).await;
    let first = s.tool("get_execution", json!({"workflowId": wf, "executionId": runs[0]["id"], "includeData": true})).await.unwrap();
    let run_data = first.pointer("/data/resultData/runData").or_else(|| first.pointer("/execution/data/resultData/runData")).cloned().unwrap_or_else(|| panic!("run data: {first}"));
    let mut calls: Vec<(i64, String)> = vec![];
    for (node, runs) in run_data.as_object().unwrap() {
        for r in runs.as_array().unwrap() {
            if r.get("inputOverride").is_some() {
                calls.push((r["startTime"].as_i64().unwrap(), node.clone()));
            }
        }
    }
    calls.sort();
    let order: Vec<&str> = calls.iter().map(|c| c.1.as_str()).filter(|n| *n != "Window Buffer Memory").collect();
    assert_eq!(order, ["OpenAI Chat Model", "Get Weather", "OpenAI Chat Model", "Lookup Customer", "OpenAI Chat Model"], "{calls:?}");
    assert_eq!(run_data["Get Weather"][0]["inputOverride"]["ai_tool"][0][0]["json"], json!({"query": {"city": "Paris"}}));
    assert_eq!(run_data["Lookup Customer"][0]["data"]["ai_tool"][0][0]["json"]["name"], "Ada Lovelace");
    assert_eq!(model.weather_calls(), vec!["Paris".to_owned()]);
    let sent = model.completions();
    assert!(sent.iter().all(|c| c["stream"] == true), "every model call streamed");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_embedded_chat_for_project_members_answers_when_the_last_node_finishes() {
    let model = openai::start();
    let s = stack().await;
    let credential = s.credential("openAiApi", json!({"apiKey": "sk-test", "url": format!("{}/v1", model.base)})).await;
    let hook = format!("members-{}", uuid_like());
    let wf = s
        .workflow(
            "Members chat",
            &json!({
                "nodes": [
                    {"parameters": {"public": true, "mode": "webhook", "authentication": "n8nUserAuth", "options": {}},
                     "name": "Chat", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "typeVersion": 1.1, "position": [0, 0], "webhookId": hook},
                    {"parameters": {"options": {}}, "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 0]},
                    {"parameters": {"model": "gpt-4o-mini", "options": {}}, "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1, "position": [200, 200],
                     "credentials": {"openAiApi": {"id": credential, "name": "OpenAI"}}}
                ],
                "connections": {
                    "Chat": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
                    "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
                }
            }),
        )
        .await;
    s.tool("publish_workflow", json!({"workflowId": wf})).await.expect("published");
    let url = s.url(&format!("/webhook/{hook}/chat"));
    let msg = json!({"action": "sendMessage", "sessionId": "m1", "chatInput": "hello"});
    let anonymous = s.http.post(&url).json(&msg).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let stranger = s.http.post(&url).bearer_auth(BOB).json(&msg).send().await.unwrap();
    assert_eq!(stranger.status(), 403, "bob is not a member of alice's project");
    let member = s.http.post(&url).bearer_auth(ALICE).header("origin", "https://site.example").json(&msg).send().await.unwrap();
    assert_eq!(member.status(), 200);
    assert_eq!(member.headers()["access-control-allow-origin"], "https://site.example", "n8n echoes the origin under the default \"*\"");
    let answer: Value = member.json().await.unwrap();
    assert_eq!(answer, json!({"output": "You said: hello"}));
    // embedded: no hosted page
    assert_eq!(s.http.get(&url).send().await.unwrap().status(), 404);
    assert!(model.completions().iter().all(|c| c["stream"] == true));
}

fn uuid_like() -> String {
    format!("{:x}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streaming_webhook_answers_on_its_streaming_url() {
    let model = openai::start();
    let s = stack().await;
    let credential = s.credential("openAiApi", json!({"apiKey": "sk-test", "url": format!("{}/v1", model.base)})).await;
    let path = format!("ask-{}", uuid_like());
    let wf = s
        .workflow(
            "Streaming webhook",
            &json!({
                "nodes": [
                    {"parameters": {"httpMethod": "POST", "path": path, "responseMode": "streaming", "options": {}}, "name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2.1, "position": [0, 0], "webhookId": "w1"},
                    {"parameters": {"promptType": "define", "text": "={{ $json.body.q }}", "options": {}}, "id": "a1", "name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 2.2, "position": [200, 0]},
                    {"parameters": {"model": "gpt-4o-mini", "options": {}}, "name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [200, 200],
                     "credentials": {"openAiApi": {"id": credential, "name": "OpenAI"}}}
                ],
                "connections": {
                    "Webhook": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
                    "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
                }
            }),
        )
        .await;
    s.tool("publish_workflow", json!({"workflowId": wf})).await.expect("published");
    // the HTTP API cannot carry it, and says where to go
    let api = s.http.post(s.url(&format!("/webhook/{path}"))).json(&json!({"q": "hi"})).send().await.unwrap();
    assert_eq!(api.status(), 501);
    assert!(api.text().await.unwrap().contains(&format!("/stream/webhook/{path}")));
    let mut resp = s.http.post(s.url(&format!("/stream/webhook/{path}"))).json(&json!({"q": "tell me in pieces"})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut body = String::new();
    while let Some(b) = resp.chunk().await.unwrap() {
        body.push_str(std::str::from_utf8(&b).unwrap());
    }
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.first().unwrap()["type"], "begin");
    assert_eq!(lines.last().unwrap()["type"], "end");
    let text: String = lines.iter().filter(|l| l["type"] == "item").map(|l| l["content"].as_str().unwrap()).collect();
    assert_eq!(text, "You said: tell me in pieces");
}

/// Load Previous Session with a memory whose session key is an expression:
/// one the webhook function evaluates itself, and one that takes JavaScript,
/// which the executor function resolves (the webhook functions link no
/// JavaScript sandbox). Both read the session the memory stored.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_key_expression_loads_its_session_with_or_without_javascript() {
    let model = openai::start();
    let s = stack().await;
    let credential = s.credential("openAiApi", json!({"apiKey": "sk-test", "url": format!("{}/v1", model.base)})).await;
    let lookup = s.workflow("Lookup customer", &lookup_workflow()).await;
    let cases = [("={{ $json.sessionId }}", "visitor-7"), ("={{ $json.sessionId.toUpperCase() + '-' + $json.sessionId.length }}", "VISITOR-7-9")];
    for (key, stored_under) in cases {
        let hook = format!("keyed-{}", uuid_like());
        let mut wf = chat_workflow(&model.base, &credential, &lookup, &hook);
        wf["nodes"][3]["parameters"] = json!({"sessionIdType": "customKey", "sessionKey": key, "contextWindowLength": 5});
        let id = s.workflow("Keyed chat", &wf).await;
        s.tool("publish_workflow", json!({"workflowId": id})).await.expect("published");
        let said = [json!({"role": "user", "content": format!("asked under {key}")}), json!({"role": "assistant", "content": "noted"})];
        s.data.chat_memory.save(&id, stored_under, &said).await.expect("memory saved");

        let load = |session: &str| {
            s.http.post(s.url(&format!("/webhook/{hook}/chat"))).json(&json!({"action": "loadPreviousSession", "sessionId": session})).send()
        };
        let prev: Value = load("visitor-7").await.unwrap().json().await.unwrap();
        let data = prev["data"].as_array().unwrap_or_else(|| panic!("{key}: {prev}"));
        assert_eq!(data.len(), 2, "{key}: {prev}");
        assert_eq!(data[0]["kwargs"]["content"], format!("asked under {key}"));
        assert_eq!(data[1]["id"][2], "AIMessage");
        // another visitor's key holds nothing
        let other: Value = load("visitor-8").await.unwrap().json().await.unwrap();
        assert_eq!(other["data"], json!([]), "{key}: {other}");
    }
}
