//! Published workflows run on their triggers, end to end through the local
//! cloud: workflows are published with the MCP tool, then called as any
//! client would (plain HTTP requests to webhook, form and resume URLs);
//! executions are checked with MCP `search_executions` / `get_execution`.
//! Schedules fire from the local EventBridge Scheduler emulation at minute
//! boundaries, so that test takes up to about a minute and a half.

use local_cloud::{start, Options, Running};
use protocol::UserId;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use store::data::credentials::{NewCredential, SecretData};
use store::data::workflows::{NewWorkflow, WorkflowBody, WorkflowUpdate};
use store::data::InstanceData;
use store::testing::TestEnv;

const KEY: &str = "alice-key-for-trigger-tests";

struct Stack {
    cloud: Running,
    http: reqwest::Client,
    data: InstanceData,
    alice: UserId,
    project: String,
}

async fn stack(tune: impl FnOnce(&mut store::Config)) -> Stack {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), KEY.into())];
    tune(&mut config);
    let cloud = start(Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: true })
        .await
        .expect("local cloud starts");
    let data = InstanceData::new(&cloud.app.clients, &cloud.app.config).expect("instance data");
    let alice = UserId::from("alice".to_owned());
    let (user, _) = data.projects.create_user(&alice, "alice@example.com", Some("Alice"), None).await.expect("user");
    Stack { cloud, http: reqwest::Client::new(), data, alice, project: user.personal_project_id }
}

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({"id": name, "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0]})
}

fn chain(nodes: Vec<Value>) -> WorkflowBody {
    let mut conns = serde_json::Map::new();
    for w in nodes.windows(2) {
        conns.insert(w[0]["name"].as_str().unwrap().into(), json!({"main": [[{"node": w[1]["name"], "type": "main", "index": 0}]]}));
    }
    WorkflowBody { nodes: Value::Array(nodes), connections: Value::Object(conns), settings: json!({"executionOrder": "v1"}), pin_data: json!({}), meta: json!({}) }
}

fn set(name: &str, field: &str, value: &str) -> Value {
    node(name, "n8n-nodes-base.set", 3.4, json!({"assignments": {"assignments": [{"id": "1", "name": field, "value": value, "type": "string"}]}, "options": {}}))
}

impl Stack {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.cloud.base_url())
    }

    async fn workflow(&self, name: &str, body: WorkflowBody) -> String {
        let wf = self
            .data
            .workflows
            .create(NewWorkflow { name: name.into(), description: None, project_id: self.project.clone(), folder_id: None, body, available_in_mcp: true }, &self.alice)
            .await
            .expect("workflow");
        wf.meta.id
    }

    /// A tool call over `/mcp`; the structured result, or `Err(text)` for a tool error.
    async fn tool(&self, name: &str, args: Value) -> Result<Value, String> {
        let r: Value = self
            .http
            .post(self.url("/mcp"))
            .header("authorization", format!("Bearer {KEY}"))
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

    async fn publish(&self, id: &str) -> Result<Value, String> {
        self.tool("publish_workflow", json!({"workflowId": id})).await
    }

    async fn executions(&self, workflow: &str) -> Vec<Value> {
        let page = self.tool("search_executions", json!({"workflowId": workflow, "limit": 100})).await.expect("search_executions");
        page["data"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until `n` executions of the workflow are in a final or waiting state.
    async fn settled(&self, workflow: &str, n: usize, within: Duration) -> Vec<Value> {
        let end = Instant::now() + within;
        loop {
            let all = self.executions(workflow).await;
            let done: Vec<Value> =
                all.iter().filter(|e| matches!(e["status"].as_str(), Some("success" | "error" | "waiting" | "canceled" | "crashed"))).cloned().collect();
            if done.len() >= n || Instant::now() > end {
                assert!(done.len() >= n, "{n} settled executions of {workflow} expected, found {all:?}");
                return done;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn run_data(&self, workflow: &str, execution: &str) -> Value {
        self.tool("get_execution", json!({"workflowId": workflow, "executionId": execution, "includeData": true})).await.expect("get_execution")
    }
}

fn output(exec: &Value, node: &str) -> Value {
    exec["data"]["resultData"]["runData"][node][0]["data"]["main"][0][0]["json"].clone()
}

fn multipart(boundary: &str, parts: &[(&str, Option<(&str, &str)>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file, data) in parts {
        body.extend(format!("--{boundary}\r\n").as_bytes());
        match file {
            Some((filename, mime)) => body.extend(
                format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {mime}\r\n\r\n").as_bytes(),
            ),
            None => body.extend(format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes()),
        }
        body.extend(*data);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn webhooks_answer_in_every_response_mode_and_refuse_what_they_must() {
    let s = stack(|c| {
        c.webhook_response_wait_secs = 2;
        c.webhook_max_body_bytes = 64 * 1024;
    })
    .await;
    let cred = s
        .data
        .credentials
        .create(NewCredential {
            name: "Orders caller".into(),
            kind: "httpBasicAuth".into(),
            description: None,
            project_id: s.project.clone(),
            is_managed: false,
            is_global: false,
            secret: SecretData::new(json!({"user": "ann", "password": "s3cret-pw"})),
        })
        .await
        .expect("credential");

    // onReceived, basic auth.
    let mut hook = node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "orders", "authentication": "basicAuth", "options": {"responseData": "accepted"}}));
    hook["credentials"] = json!({"httpBasicAuth": {"id": cred.id, "name": "Orders caller"}});
    let orders = s.workflow("Orders in", chain(vec![hook, node("Store", "n8n-nodes-base.noOp", 1.0, json!({}))])).await;
    assert!(s.http.post(s.url("/webhook/orders")).json(&json!({"n": 1})).send().await.unwrap().status() == 404, "not published yet");
    s.publish(&orders).await.expect("publish");
    let r = s.http.post(s.url("/webhook/orders")).json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Basic realm=\"Webhook\"");
    let r = s.http.post(s.url("/webhook/orders")).header("authorization", "Bearer not-basic").json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 401, "a wrong auth header");
    let r = s.http.post(s.url("/webhook/orders")).basic_auth("ann", Some("wrong")).json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 403, "wrong credentials");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.executions(&orders).await.is_empty(), "nothing ran for a refused request");
    let r = s.http.post(s.url("/webhook/orders")).basic_auth("ann", Some("s3cret-pw")).json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "accepted");
    let done = s.settled(&orders, 1, Duration::from_secs(20)).await;
    assert_eq!((done[0]["status"].as_str(), done[0]["mode"].as_str()), (Some("success"), Some("webhook")));
    let run = s.run_data(&orders, done[0]["id"].as_str().unwrap()).await;
    assert_eq!(output(&run, "Store")["body"], json!({"n": 1}));
    assert!(!run.to_string().contains("s3cret-pw"), "the credential never shows");

    // A body past the limit is refused and runs nothing.
    let big = vec![b'x'; 100 * 1024];
    let r = s.http.post(s.url("/webhook/orders")).basic_auth("ann", Some("s3cret-pw")).body(big).send().await.unwrap();
    assert_eq!(r.status(), 413);

    // lastNode on a 5-node workflow with a dynamic path.
    let mut users = node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "GET", "path": "users/:id", "responseMode": "lastNode"}));
    users["webhookId"] = json!("u-hook");
    let check = node("Known", "n8n-nodes-base.if", 2.2, json!({"conditions": {"options": {"caseSensitive": true, "leftValue": "", "typeValidation": "strict"}, "conditions": [{"id": "c", "leftValue": "={{ $json.id }}", "rightValue": "42", "operator": {"type": "string", "operation": "equals"}}], "combinator": "and"}, "options": {}}));
    let lookup = s
        .workflow(
            "User lookup",
            chain(vec![
                users,
                set("Id", "id", "={{ $json.params.id }}"),
                check,
                set("Greet", "greeting", "=hello user {{ $json.id }}"),
                node("Done", "n8n-nodes-base.noOp", 1.0, json!({})),
            ]),
        )
        .await;
    s.publish(&lookup).await.expect("publish");
    let r = s.http.get(s.url("/webhook/u-hook/users/42")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    assert_eq!(r.json::<Value>().await.unwrap()["greeting"], "hello user 42");
    assert_eq!(s.http.post(s.url("/webhook/u-hook/users/42")).send().await.unwrap().status(), 404, "GET only");

    // responseNode: the answer comes from Respond to Webhook; the run goes on.
    let echo = s
        .workflow(
            "Echo",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "echo", "responseMode": "responseNode"})),
                node("Respond", "n8n-nodes-base.respondToWebhook", 1.1, json!({"respondWith": "text", "responseBody": "=got {{ $json.body.msg }}", "options": {"responseCode": 201, "responseHeaders": {"entries": [{"name": "X-Done", "value": "yes"}]}}})),
                set("After", "after", "responded"),
            ]),
        )
        .await;
    s.publish(&echo).await.expect("publish");
    let r = s.http.post(s.url("/webhook/echo")).json(&json!({"msg": "hi"})).send().await.unwrap();
    assert_eq!((r.status().as_u16(), r.headers()["x-done"].to_str().unwrap()), (201, "yes"));
    assert_eq!(r.text().await.unwrap(), "got hi");
    let pre = s
        .http
        .request(reqwest::Method::OPTIONS, s.url("/webhook/echo"))
        .header("origin", "https://app.example")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 204, "CORS preflight");
    assert_eq!(pre.headers()["access-control-allow-methods"], "OPTIONS, POST");
    let done = s.settled(&echo, 1, Duration::from_secs(20)).await;
    assert_eq!(output(&s.run_data(&echo, done[0]["id"].as_str().unwrap()).await, "After")["after"], "responded");

    // An upload comes back as the first entry's binary.
    let upload = s
        .workflow(
            "Upload",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "upload", "responseMode": "lastNode", "responseData": "firstEntryBinary", "responseBinaryPropertyName": "doc"})),
                node("Pass", "n8n-nodes-base.noOp", 1.0, json!({})),
            ]),
        )
        .await;
    s.publish(&upload).await.expect("publish");
    let body = multipart("XyZ", &[("note", None, b"a note"), ("doc", Some(("report.csv", "text/csv")), b"a,b\n1,2\n")]);
    let r = s.http.post(s.url("/webhook/upload")).header("content-type", "multipart/form-data; boundary=XyZ").body(body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/csv");
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"a,b\n1,2\n");

    // Past the wait bound: 202 with the execution id; the run finishes anyway.
    let slow = s
        .workflow(
            "Slow",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "slow", "responseMode": "lastNode"})),
                node("Pause", "n8n-nodes-base.wait", 1.1, json!({"resume": "timeInterval", "amount": 4, "unit": "seconds"})),
                set("Late", "late", "yes"),
            ]),
        )
        .await;
    s.publish(&slow).await.expect("publish");
    let r = s.http.post(s.url("/webhook/slow")).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let body: Value = r.json().await.unwrap();
    let id = body["executionId"].as_str().expect("execution id").to_owned();
    let done = s.settled(&slow, 1, Duration::from_secs(30)).await;
    assert_eq!((done[0]["id"].as_str(), done[0]["status"].as_str()), (Some(id.as_str()), Some("success")));

    // A second workflow on a taken path is refused at publish time.
    let clash = s.workflow("Clash", chain(vec![node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "orders"}))])).await;
    let err = s.publish(&clash).await.expect_err("conflict");
    assert!(err.contains("already taken") && err.contains("Orders in"), "{err}");

    // Test URLs run the saved draft (mode manual); production URLs do not.
    let draft = s
        .workflow(
            "Draft",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "GET", "path": "draft-hook", "responseMode": "lastNode"})),
                set("Out", "mode", "={{ $('Webhook').item.json.executionMode }}"),
            ]),
        )
        .await;
    assert_eq!(s.http.get(s.url("/webhook/draft-hook")).send().await.unwrap().status(), 404);
    let r = s.http.get(s.url("/webhook-test/draft-hook")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["mode"], "test");
    assert_eq!(s.settled(&draft, 1, Duration::from_secs(10)).await[0]["mode"], "manual");

    // Unpublished: the URL answers 404 again.
    s.tool("unpublish_workflow", json!({"workflowId": orders})).await.expect("unpublish");
    let r = s.http.post(s.url("/webhook/orders")).basic_auth("ann", Some("s3cret-pw")).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), 404);
    s.publish(&clash).await.expect("the path is free again");
    s.cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bearer_auth_and_allowed_origins_answer_as_n8n_does() {
    let s = stack(|_| {}).await;
    let cred = s
        .data
        .credentials
        .create(NewCredential {
            name: "Partner token".into(),
            kind: "httpBearerAuth".into(),
            description: None,
            project_id: s.project.clone(),
            is_managed: false,
            is_global: false,
            secret: SecretData::new(json!({"token": "tok-3xyz"})),
        })
        .await
        .expect("credential");

    // Bearer auth with a list of allowed origins.
    let mut hook = node(
        "Webhook",
        "n8n-nodes-base.webhook",
        2.0,
        json!({"httpMethod": "POST", "path": "partner", "authentication": "bearerAuth", "options": {"responseData": "ok", "allowedOrigins": "https://a.example, https://b.example"}}),
    );
    hook["credentials"] = json!({"httpBearerAuth": {"id": cred.id, "name": "Partner token"}});
    let partner = s.workflow("Partner in", chain(vec![hook, node("Store", "n8n-nodes-base.noOp", 1.0, json!({}))])).await;
    s.publish(&partner).await.expect("publish (bearerAuth and allowedOrigins are accepted)");
    let url = s.url("/webhook/partner");

    // n8n: a missing or wrong bearer header is 403 "Authorization data is wrong!"
    let r = s.http.post(&url).header("origin", "https://b.example").json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 403, "no header");
    assert_eq!(r.headers()["www-authenticate"], "Basic realm=\"Webhook\"");
    assert_eq!(r.headers()["access-control-allow-origin"], "https://b.example", "a refusal carries the CORS headers");
    assert!(r.text().await.unwrap().contains("Authorization data is wrong!"));
    let r = s.http.post(&url).bearer_auth("tok-wrong").json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 403, "a wrong token");
    let r = s.http.post(&url).basic_auth("tok-3xyz", Some("")).json(&json!({"n": 1})).send().await.unwrap();
    assert_eq!(r.status(), 403, "another scheme");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.executions(&partner).await.is_empty(), "nothing ran for a refused request");

    // The right token runs; an allowed origin is echoed, with the path's methods.
    let r = s.http.post(&url).bearer_auth("tok-3xyz").header("origin", "https://b.example").json(&json!({"n": 2})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["access-control-allow-origin"], "https://b.example");
    assert_eq!(r.headers()["access-control-allow-methods"], "OPTIONS, POST");
    assert!(r.headers().get("access-control-max-age").is_none(), "max-age is for preflights");
    assert_eq!(r.text().await.unwrap(), "ok");
    let done = s.settled(&partner, 1, Duration::from_secs(20)).await;
    assert_eq!(done[0]["status"], "success");
    let run = s.run_data(&partner, done[0]["id"].as_str().unwrap()).await;
    assert_eq!(output(&run, "Store")["body"], json!({"n": 2}));
    // the run data the agent and MCP clients read keep the scheme, not the token
    assert_eq!(output(&run, "Store")["headers"]["authorization"], "Bearer [redacted]");
    assert!(!run.to_string().contains("tok-3xyz"), "the token is nowhere in the run data");
    // An origin not on the list gets the list's first entry (the browser refuses the answer).
    let r = s.http.post(&url).bearer_auth("tok-3xyz").header("origin", "https://evil.example").json(&json!({"n": 3})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["access-control-allow-origin"], "https://a.example");
    // No Origin, no CORS headers.
    let r = s.http.post(&url).bearer_auth("tok-3xyz").json(&json!({"n": 4})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("access-control-allow-origin").is_none());
    s.settled(&partner, 3, Duration::from_secs(20)).await;

    // A preflight is answered without running anything, with the node's policy.
    let preflight = |origin: &'static str| {
        s.http
            .request(reqwest::Method::OPTIONS, &url)
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization, content-type")
            .send()
    };
    let pre = preflight("https://a.example").await.unwrap();
    assert_eq!(pre.status(), 204);
    assert_eq!(pre.headers()["access-control-allow-origin"], "https://a.example");
    assert_eq!(pre.headers()["access-control-allow-methods"], "OPTIONS, POST");
    assert_eq!(pre.headers()["access-control-max-age"], "300");
    assert_eq!(pre.headers()["access-control-allow-headers"], "authorization, content-type");
    assert!(pre.bytes().await.unwrap().is_empty());
    let pre = preflight("https://evil.example").await.unwrap();
    assert_eq!((pre.status().as_u16(), pre.headers()["access-control-allow-origin"].to_str().unwrap()), (204, "https://a.example"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.executions(&partner).await.len(), 3, "a preflight starts no execution");

    // The default ("*", or the option unset): the caller's origin is echoed.
    let open = s
        .workflow(
            "Open",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "GET", "path": "open", "options": {"allowedOrigins": "*"}})),
                node("Done", "n8n-nodes-base.noOp", 1.0, json!({})),
            ]),
        )
        .await;
    s.publish(&open).await.expect("publish");
    let r = s.http.get(s.url("/webhook/open")).header("origin", "https://anyone.example").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["access-control-allow-origin"], "https://anyone.example");
    assert_eq!(r.headers()["access-control-allow-methods"], "OPTIONS, GET");
    let pre = s
        .http
        .request(reqwest::Method::OPTIONS, s.url("/webhook/open"))
        .header("origin", "null")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!((pre.status().as_u16(), pre.headers()["access-control-allow-origin"].to_str().unwrap()), (204, "*"), "a file:// page");
    assert!(pre.headers().get("access-control-allow-headers").is_none());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(s.executions(&open).await.len(), 1, "only the GET ran");
    s.cloud.shutdown().await;
}

/// Respond to Webhook as n8n's 1.4 and 1.5 answer: the caller gets the
/// answer while the Response output (`enableResponseOutput`) hands
/// `{response: {body, headers, statusCode}}` to the next node; on a
/// streaming webhook, 1.5 sends its answer as the stream's chunks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn respond_to_webhook_1_4_response_output_and_1_5_streaming_end_to_end() {
    let s = stack(|_| {}).await;
    let nodes = vec![
        node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "receipt", "responseMode": "responseNode"})),
        node(
            "Respond",
            "n8n-nodes-base.respondToWebhook",
            1.4,
            json!({"enableResponseOutput": true, "respondWith": "json", "responseBody": "={{ JSON.stringify({got: $json.body.msg}) }}", "options": {"responseCode": 202}}),
        ),
        set("Input", "seen", "={{ $json.body.msg }}"),
        set("Sent", "status", "={{ $json.response.statusCode }} {{ $json.response.body.got }}"),
    ];
    let connections = json!({
        "Webhook": {"main": [[{"node": "Respond", "type": "main", "index": 0}]]},
        "Respond": {"main": [[{"node": "Input", "type": "main", "index": 0}], [{"node": "Sent", "type": "main", "index": 0}]]}
    });
    let body = WorkflowBody { nodes: Value::Array(nodes), connections, settings: json!({"executionOrder": "v1"}), pin_data: json!({}), meta: json!({}) };
    let receipt = s.workflow("Receipt", body).await;
    s.publish(&receipt).await.expect("publish");
    let r = s.http.post(s.url("/webhook/receipt")).json(&json!({"msg": "hi"})).send().await.unwrap();
    assert_eq!(r.status(), 202);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"got": "hi"}));
    let done = s.settled(&receipt, 1, Duration::from_secs(20)).await;
    assert_eq!(done[0]["status"], "success");
    let exec = s.run_data(&receipt, done[0]["id"].as_str().unwrap()).await;
    let response = &exec["data"]["resultData"]["runData"]["Respond"][0]["data"]["main"][1][0]["json"];
    assert_eq!(response, &json!({"response": {"body": {"got": "hi"}, "headers": {}, "statusCode": 202}}), "{exec}");
    assert_eq!(output(&exec, "Sent")["status"], "202 hi");
    assert_eq!(output(&exec, "Input")["seen"], "hi");

    // 1.5 on a webhook that streams: the answer is the stream's chunks
    let tell = s
        .workflow(
            "Tell",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.1, json!({"httpMethod": "POST", "path": "tell", "responseMode": "streaming"})),
                node("Respond", "n8n-nodes-base.respondToWebhook", 1.5, json!({"respondWith": "text", "responseBody": "=you said {{ $json.body.msg }}"})),
            ]),
        )
        .await;
    s.publish(&tell).await.expect("publish");
    let mut resp = s.http.post(s.url("/stream/webhook/tell")).json(&json!({"msg": "hi"})).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut text = String::new();
    while let Some(b) = resp.chunk().await.unwrap() {
        text.push_str(std::str::from_utf8(&b).unwrap());
    }
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap_or_default()).collect();
    assert_eq!(kinds, ["begin", "item", "end"], "{text}");
    assert_eq!((lines[1]["content"].as_str(), lines[1]["metadata"]["nodeName"].as_str()), (Some("you said hi"), Some("Respond")));
    s.cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_form_renders_and_its_submission_runs() {
    let s = stack(|_| {}).await;
    let form = node(
        "Form",
        "n8n-nodes-base.formTrigger",
        2.2,
        json!({"path": "contact", "formTitle": "Contact us", "formDescription": "We answer <quickly>", "responseMode": "onReceived",
               "formFields": {"values": [
                   {"fieldLabel": "Name", "requiredField": true},
                   {"fieldLabel": "Email", "fieldType": "email"},
                   {"fieldLabel": "Topic", "fieldType": "dropdown", "fieldOptions": {"values": [{"option": "Sales"}, {"option": "Support"}]}}
               ]},
               "options": {"respondWithOptions": {"values": {"respondWith": "text", "formSubmittedText": "Thanks, we will write soon"}}}}),
    );
    let id = s.workflow("Contact", chain(vec![form, node("Keep", "n8n-nodes-base.noOp", 1.0, json!({}))])).await;
    s.publish(&id).await.expect("publish");
    let r = s.http.get(s.url("/form/contact")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-security-policy"].to_str().unwrap().contains("default-src 'none'"));
    let page = r.text().await.unwrap();
    for needle in ["<form method=\"post\"", "name=\"field-0\"", "Contact us", "We answer &lt;quickly&gt;", "<option value=\"Support\">"] {
        assert!(page.contains(needle), "{needle} in {page}");
    }
    assert!(!page.contains("<script"), "no JavaScript");
    // A plain HTML form post (urlencoded) without the required field: the page again, nothing runs.
    let r = s.http.post(s.url("/form/contact")).header("content-type", "application/x-www-form-urlencoded").body("field-1=a%40b.c").send().await.unwrap();
    assert_eq!(r.status(), 400);
    let again = r.text().await.unwrap();
    assert!(again.contains("&quot;Name&quot; is required") && again.contains("value=\"a@b.c\""), "{again}");
    let body = multipart("FB", &[("field-0", None, b"Ada"), ("field-1", None, b"ada@example.com"), ("field-2", None, b"Support")]);
    let r = s.http.post(s.url("/form/contact")).header("content-type", "multipart/form-data; boundary=FB").body(body).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("Thanks, we will write soon"));
    let done = s.settled(&id, 1, Duration::from_secs(20)).await;
    assert_eq!((done[0]["status"].as_str(), done[0]["mode"].as_str()), (Some("success"), Some("webhook")));
    let item = output(&s.run_data(&id, done[0]["id"].as_str().unwrap()).await, "Keep");
    assert_eq!((item["Name"].as_str(), item["Email"].as_str(), item["Topic"].as_str()), (Some("Ada"), Some("ada@example.com"), Some("Support")));
    assert_eq!(item["formMode"], "production");
    assert_eq!(s.executions(&id).await.len(), 1, "the refused submission ran nothing");
    s.cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_on_webhook_resumes_by_its_url_and_an_error_workflow_runs_on_failure() {
    let s = stack(|_| {}).await;
    let approval = s
        .workflow(
            "Approval",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "approve"})),
                set("Link", "url", "={{ $execution.resumeUrl }}"),
                node("Wait", "n8n-nodes-base.wait", 1.1, json!({"resume": "webhook", "httpMethod": "POST", "responseMode": "lastNode"})),
                set("Decision", "decision", "={{ $json.body.answer }}"),
            ]),
        )
        .await;
    s.publish(&approval).await.expect("publish");
    assert_eq!(s.http.post(s.url("/webhook/approve")).send().await.unwrap().status(), 200);
    let waiting = s.settled(&approval, 1, Duration::from_secs(20)).await;
    assert_eq!(waiting[0]["status"], "waiting");
    let exec = waiting[0]["id"].as_str().unwrap().to_owned();
    let url = output(&s.run_data(&approval, &exec).await, "Link")["url"].as_str().unwrap().to_owned();
    assert_eq!(url, s.url(&format!("/webhook-waiting/{exec}")));
    assert_eq!(s.http.get(&url).send().await.unwrap().status(), 404, "the Wait listens to POST");
    let r = s.http.post(&url).json(&json!({"answer": "yes"})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["decision"], "yes");
    // The answer is out before the run has recorded its end.
    let end = Instant::now() + Duration::from_secs(10);
    while s.executions(&approval).await[0]["status"] != "success" {
        assert!(Instant::now() < end, "the resumed execution finishes");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(s.http.post(&url).json(&json!({"answer": "again"})).send().await.unwrap().status(), 409, "resumed once");

    // Error workflow: the failing production run starts it with n8n's error data.
    let handler = s
        .workflow(
            "On failure",
            chain(vec![node("Error Trigger", "n8n-nodes-base.errorTrigger", 1.0, json!({})), node("Seen", "n8n-nodes-base.noOp", 1.0, json!({}))]),
        )
        .await;
    let mut failing = chain(vec![
        node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "fails"})),
        node("Boom", "n8n-nodes-base.stopAndError", 1.0, json!({"errorMessage": "boom"})),
    ]);
    failing.settings = json!({"executionOrder": "v1", "errorWorkflow": handler});
    let failing = s.workflow("Fragile", failing).await;
    s.publish(&failing).await.expect("publish");
    assert_eq!(s.http.post(s.url("/webhook/fails")).send().await.unwrap().status(), 200);
    let failed = s.settled(&failing, 1, Duration::from_secs(20)).await;
    assert_eq!(failed[0]["status"], "error");
    let handled = s.settled(&handler, 1, Duration::from_secs(20)).await;
    assert_eq!((handled[0]["mode"].as_str(), handled[0]["status"].as_str()), (Some("error"), Some("success")));
    let seen = output(&s.run_data(&handler, handled[0]["id"].as_str().unwrap()).await, "Seen");
    assert_eq!(seen["execution"]["id"], failed[0]["id"]);
    assert_eq!(seen["workflow"], json!({"id": failing, "name": "Fragile"}));
    assert_eq!(seen["execution"]["lastNodeExecuted"], "Boom");
    assert!(seen["execution"]["error"]["message"].as_str().unwrap().contains("boom"), "{seen}");
    s.cloud.shutdown().await;
}

/// A form whose completion redirects, in headless Chromium: the browser
/// follows the redirect to the other origin (the page's CSP names it in
/// `form-action`, which browsers also check on the redirect after a
/// submission), and the submission ran the workflow.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_form_that_redirects_ends_on_the_redirect_in_a_browser() {
    let chromium = std::env::var("INSTANCE_AI_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(std::path::Path::new(&chromium).exists(), "{chromium} is missing: install Debian's chromium");
    // The page the form sends people to, on another origin.
    let thanks = axum::Router::new().fallback(|| async { axum::response::Html("<h1>Thanks from the shop</h1>") });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let elsewhere = format!("http://localhost:{}", l.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(l, thanks).await.unwrap() });
    let s = stack(|_| {}).await;
    let form = node(
        "Form",
        "n8n-nodes-base.formTrigger",
        2.2,
        json!({"path": "signup-redirect", "formTitle": "Sign up", "formFields": {"values": [{"fieldLabel": "Name", "requiredField": true}]},
               "options": {"respondWithOptions": {"values": {"respondWith": "redirect", "redirectUrl": format!("{elsewhere}/thanks")}}}}),
    );
    let id = s.workflow("Signup", chain(vec![form, node("Keep", "n8n-nodes-base.noOp", 1.0, json!({}))])).await;
    s.publish(&id).await.expect("publish");
    let page = s.http.get(s.url("/form/signup-redirect")).send().await.unwrap();
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains(&format!("form-action 'self' {elsewhere}")), "{csp}");

    let python = std::env::var("INSTANCE_AI_PYTHON").unwrap_or_else(|_| "python3".into());
    let run = tokio::process::Command::new(&python)
        .arg(format!("{}/web/form_submit.py", env!("CARGO_MANIFEST_DIR")))
        .args(["--url", &s.url("/form/signup-redirect"), "--chromium", &chromium, "--field", "field-0=Ada"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the browser finishes in 2 minutes")
        .unwrap_or_else(|e| panic!("cannot run {python}: {e} (set INSTANCE_AI_PYTHON to a python with `playwright` installed)"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).expect("the script's JSON line");
    assert_eq!(seen["url"], format!("{elsewhere}/thanks"), "{seen}");
    assert!(seen["text"].as_str().unwrap().contains("Thanks from the shop"), "{seen}");
    let done = s.settled(&id, 1, Duration::from_secs(20)).await;
    assert_eq!(output(&s.run_data(&id, done[0]["id"].as_str().unwrap()).await, "Keep")["Name"], "Ada");
    s.cloud.shutdown().await;
}

/// A Wait "on form submitted": the run parks, `$execution.resumeFormUrl`
/// is `/form-waiting/<id>`, which renders the Wait's own form (plain HTML),
/// refuses a submission without a required field (the run keeps waiting),
/// and resumes the run once with the submitted fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_on_a_form_resumes_by_its_form_url() {
    let s = stack(|_| {}).await;
    let id = s
        .workflow(
            "Confirm plan",
            chain(vec![
                node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "plan"})),
                set("Link", "url", "={{ $execution.resumeFormUrl }}"),
                node(
                    "Ask",
                    "n8n-nodes-base.wait",
                    1.1,
                    json!({"resume": "form", "formTitle": "Confirm your plan", "formDescription": "One <last> step",
                           "formFields": {"values": [
                               {"fieldLabel": "Name", "requiredField": true},
                               {"fieldLabel": "Plan", "fieldType": "dropdown", "fieldOptions": {"values": [{"option": "Free"}, {"option": "Pro"}]}}
                           ]},
                           "options": {}}),
                ),
                set("Confirmed", "plan", "={{ $json.Plan }} for {{ $json.Name }}"),
            ]),
        )
        .await;
    s.publish(&id).await.expect("publish");
    assert_eq!(s.http.post(s.url("/webhook/plan")).json(&json!({})).send().await.unwrap().status(), 200);
    let waiting = s.settled(&id, 1, Duration::from_secs(20)).await;
    assert_eq!(waiting[0]["status"], "waiting");
    let exec = waiting[0]["id"].as_str().unwrap().to_owned();
    let url = output(&s.run_data(&id, &exec).await, "Link")["url"].as_str().unwrap().to_owned();
    assert_eq!(url, s.url(&format!("/form-waiting/{exec}")));

    let r = s.http.get(&url).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let page = r.text().await.unwrap();
    for needle in ["<form method=\"post\"", "Confirm your plan", "One &lt;last&gt; step", "name=\"field-0\"", "<option value=\"Pro\">"] {
        assert!(page.contains(needle), "{needle} in {page}");
    }
    assert!(!page.contains("<script"), "no JavaScript");
    // Without the required name: the form again, with the error; the run still waits.
    let r = s.http.post(&url).header("content-type", "application/x-www-form-urlencoded").body("field-1=Pro").send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("&quot;Name&quot; is required"));
    assert_eq!(s.executions(&id).await[0]["status"], "waiting");
    // A plain HTML form post resumes it.
    let r = s.http.post(&url).header("content-type", "application/x-www-form-urlencoded").body("field-0=Ada&field-1=Pro").send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("<h1>"), "the completion screen");
    let end = Instant::now() + Duration::from_secs(10);
    while s.executions(&id).await[0]["status"] != "success" {
        assert!(Instant::now() < end, "the resumed execution finishes: {:?}", s.executions(&id).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let done = s.run_data(&id, &exec).await;
    assert_eq!(output(&done, "Confirmed")["plan"], "Pro for Ada");
    assert_eq!(output(&done, "Ask")["formMode"], "production", "{}", output(&done, "Ask"));
    assert_eq!(s.executions(&id).await.len(), 1, "resumed, not re-run");
    // Once: a second submission (or a look) finds it finished.
    let again = s.http.post(&url).header("content-type", "application/x-www-form-urlencoded").body("field-0=Eve&field-1=Free").send().await.unwrap();
    assert_eq!(again.status(), 409);
    assert_eq!(s.http.get(&url).send().await.unwrap().status(), 409);
    // An execution that does not exist: 404.
    assert_eq!(s.http.get(s.url("/form-waiting/no-such-execution")).send().await.unwrap().status(), 404);
    s.cloud.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_schedule_fires_within_its_interval_once_per_tick_and_stops_after_unpublish() {
    let s = stack(|_| {}).await;
    let rule = |interval: Value| node("Schedule", "n8n-nodes-base.scheduleTrigger", 1.2, json!({"rule": {"interval": [interval]}}));
    let mut body = chain(vec![rule(json!({"field": "seconds", "secondsInterval": 20})), node("Tick", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    body.settings = json!({"executionOrder": "v1", "timezone": "Europe/Berlin"});
    let id = s.workflow("Heartbeat", body).await;
    s.publish(&id).await.expect("publish");
    let scheduler = &s.cloud.app.clients.scheduler;
    let group = s.cloud.app.config.scheduler.clone().unwrap().group;
    let name = format!("wf-{id}-0-0");
    let sched = scheduler.get_schedule().group_name(&group).name(&name).send().await.expect("the schedule exists");
    assert_eq!(sched.schedule_expression(), Some("cron(* * * * ? *)"));
    assert_eq!(sched.schedule_expression_timezone(), Some("Europe/Berlin"));

    // The next minute's tick fans out to :00, :20 and :40.
    let ticks = s.settled(&id, 2, Duration::from_secs(95)).await;
    assert!(ticks.iter().all(|e| e["mode"] == "trigger" && e["status"] == "success"), "{ticks:?}");
    let item = output(&s.run_data(&id, ticks[0]["id"].as_str().unwrap()).await, "Tick");
    assert!(item["Timezone"].as_str().unwrap().starts_with("CE"), "{item}");

    // Duplicate delivery of one tick: one execution.
    let meta = s.data.workflows.meta(&id).await.unwrap().unwrap();
    let tick = json!({"scheduleTick": {"workflowId": id, "versionId": meta.active_version_id, "node": "Schedule", "rule": 0,
                      "scheduledTime": "2020-01-01T00:00:00Z", "timezone": "UTC", "offset": 0}});
    let runs = s.cloud.app.config.queue_url(store::deployment::QueueId::Runs).unwrap().to_owned();
    let before = s.executions(&id).await.len();
    for _ in 0..3 {
        s.cloud.app.clients.sqs.send_message().queue_url(&runs).message_body(tick.to_string()).send().await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let stamped: Vec<Value> = s
        .executions(&id)
        .await
        .into_iter()
        .filter(|e| e["startedAt"].as_str().is_some())
        .collect();
    assert!(stamped.len() >= before + 1);
    let mut from_2020 = 0;
    for e in &stamped {
        if output(&s.run_data(&id, e["id"].as_str().unwrap()).await, "Tick")["Year"] == "2020" {
            from_2020 += 1;
        }
    }
    assert_eq!(from_2020, 1, "three deliveries of one tick, one execution");

    // Republish replaces the schedule; unpublish deletes it and later ticks do nothing.
    let mut draft = s.data.workflows.get(&id).await.unwrap().unwrap().body;
    draft.nodes[0] = rule(json!({"field": "minutes", "minutesInterval": 5}));
    s.data.workflows.update(&id, &meta.version_id, WorkflowUpdate { body: Some(draft), ..WorkflowUpdate::default() }, &s.alice).await.unwrap();
    s.publish(&id).await.expect("republish");
    let sched = scheduler.get_schedule().group_name(&group).name(&name).send().await.unwrap();
    assert_eq!(sched.schedule_expression(), Some("cron(0/5 * * * ? *)"));
    s.tool("unpublish_workflow", json!({"workflowId": id})).await.expect("unpublish");
    let gone = scheduler.get_schedule().group_name(&group).name(&name).send().await;
    assert!(gone.is_err(), "the schedule is deleted");
    let count = s.executions(&id).await.len();
    let late = json!({"scheduleTick": {"workflowId": id, "versionId": meta.active_version_id, "node": "Schedule", "rule": 0,
                      "scheduledTime": "2020-01-01T00:01:00Z", "timezone": "UTC"}});
    s.cloud.app.clients.sqs.send_message().queue_url(&runs).message_body(late.to_string()).send().await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(s.executions(&id).await.len(), count, "no execution after unpublish");

    // Archiving a published workflow deletes its schedule too.
    s.publish(&id).await.expect("publish again");
    assert!(scheduler.get_schedule().group_name(&group).name(&name).send().await.is_ok(), "published again");
    s.tool("archive_workflow", json!({"workflowId": id})).await.expect("archive");
    let gone = scheduler.get_schedule().group_name(&group).name(&name).send().await;
    assert!(gone.is_err(), "archive deletes the schedule");
    s.cloud.shutdown().await;
}
