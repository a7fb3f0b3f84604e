//! Build → verify → patch → publish, end to end: the local cloud (HTTP,
//! SSE, the Steps and Runs queues), the scripted model, moto, and a local
//! HTTP service standing in for the outside world.
//!
//! A Webhook → Set → If → (Slack post with a credential | HTTP POST)
//! workflow is built from a workspace file, the model giving Slack's
//! fixture; verification simulates both writes (the service records that
//! nothing reached it; Slack's origin is not even reachable from the
//! executor, so a real call would have failed the run), reaches every node
//! and labels the run simulated in `executions(get)`; the typo in Slack's
//! text expression comes back as a `resolvedParameterWarnings` entry; the
//! verdict `needs_patch` is followed by a workspace edit, a rebuild and a
//! second verification, `verified`, and a publish whose card says it is
//! verified and that needs no acknowledgement. A second, never verified
//! workflow is refused publish until the call acknowledges it, and its
//! card says so.

mod agent_common;

use agent::model::ModelProvider;
use agent_common::*;
use axum::http::StatusCode;
use instance::credentials::NewCredentialInput;
use instance::{Caller, Instance};
use protocol::events::EventType;
use protocol::UserId;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A service that counts every request it gets.
async fn service() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let app = axum::Router::new().fallback(move || {
        let h = h.clone();
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            (StatusCode::OK, axum::Json(json!({"ok": true})))
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}"), hits)
}

fn link(from: &str, to: &str) -> Value {
    json!({from: {"main": [[{"node": to, "type": "main", "index": 0}]]}})
}

/// Webhook → Shape (Set) → Has email (If) → true: Post to Slack (Slack
/// message, slackApi credential) and Notify (HTTP POST to the service);
/// false: nothing.
fn signup(base: &str, cred: &str, text_expr: &str) -> String {
    let mut conns = serde_json::Map::new();
    for c in [link("Hook", "Shape"), link("Shape", "Has email")] {
        conns.extend(c.as_object().unwrap().clone());
    }
    conns.insert("Has email".into(), json!({"main": [[{"node": "Post to Slack", "type": "main", "index": 0}, {"node": "Notify", "type": "main", "index": 0}], []]}));
    serde_json::to_string_pretty(&json!({
        "name": "Signup notifier",
        "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": "signup-e2e"}},
            {"name": "Shape", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [200, 0], "parameters": {"assignments": {"assignments": [{"id": "1", "name": "email", "value": "={{ $json.body.email }}", "type": "string"}]}}},
            {"name": "Has email", "type": "n8n-nodes-base.if", "typeVersion": 2.2, "position": [400, 0], "parameters": {"conditions": {"options": {"caseSensitive": true, "leftValue": "", "typeValidation": "strict"}, "combinator": "and", "conditions": [{"id": "c1", "leftValue": "={{ $json.email }}", "rightValue": "", "operator": {"type": "string", "operation": "notEmpty", "singleValue": true}}]}, "options": {}}},
            {"name": "Post to Slack", "type": "n8n-nodes-base.slack", "typeVersion": 2.3, "position": [600, -100], "parameters": {
                "select": "channel", "channelId": {"__rl": true, "value": "C0SIGNUPS", "mode": "id"}, "text": text_expr, "otherOptions": {"includeLinkToWorkflow": false}},
             "credentials": {"slackApi": {"id": cred, "name": "Team Slack"}}},
            {"name": "Notify", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [600, 100], "parameters": {
                "method": "POST", "url": format!("{base}/notify"), "sendBody": true, "bodyParameters": {"parameters": [{"name": "email", "value": "={{ $json.email }}"}]}, "options": {}}}
        ],
        "connections": conns
    }))
    .unwrap()
}

/// Webhook → Post (HTTP POST).
fn digest(base: &str) -> String {
    serde_json::to_string_pretty(&json!({
        "name": "Digest poster",
        "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": "digest-e2e"}},
            {"name": "Post", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {"method": "POST", "url": format!("{base}/digest"), "options": {}}}
        ],
        "connections": link("Hook", "Post")
    }))
    .unwrap()
}

fn tool(name: &str, args: Value) -> Value {
    json!({"name": name, "args": args})
}

fn from(turn: usize, pointer: &str) -> Value {
    json!({"$fromResult": {"turn": turn, "call": 0, "pointer": pointer}})
}

fn conversation(calls: Vec<Value>) -> Value {
    let mut turns: Vec<Value> = calls.into_iter().map(|c| json!({"toolCalls": [c]})).collect();
    turns.push(json!({"text": "Done."}));
    Value::Array(turns)
}

/// (tool name, outcome) of every call, in order.
fn outcomes(frames: &[Frame]) -> Vec<(String, Result<Value, String>)> {
    find(frames, EventType::ToolCall)
        .into_iter()
        .filter_map(|c| {
            let c = payload(c);
            let id = c["toolCallId"].clone();
            let settled = frames.iter().map(payload).find(|p| p["toolCallId"] == id && (p.get("result").is_some() || p.get("error").is_some()))?;
            let outcome = match settled.get("result") {
                Some(r) => Ok(r.clone()),
                None => Err(settled["error"].as_str().unwrap_or_default().to_owned()),
            };
            Some((c["toolName"].as_str().unwrap_or_default().to_owned(), outcome))
        })
        .collect()
}

fn ok(o: &(String, Result<Value, String>)) -> &Value {
    o.1.as_ref().unwrap_or_else(|e| panic!("{} failed: {e}", o.0))
}

/// Runs one chat to its end, approving every card; the frames and the cards.
async fn chat_through(cloud: &Cloud, feed: &mut Feed, t: &str, message: &str) -> (Vec<Frame>, Vec<Value>) {
    let (status, body) = cloud.chat(ALICE, t, message).await;
    assert_eq!(status, 200, "{body}");
    let mut all = Vec::new();
    let mut cards = Vec::new();
    loop {
        let frames = feed.until(Duration::from_secs(120), |f| matches!(f.kind(), EventType::ConfirmationRequest | EventType::RunFinish)).await;
        let last = frames.last().expect("the run goes on").clone();
        all.extend(frames);
        if last.kind() == EventType::RunFinish {
            assert_eq!(payload(&last)["status"], "completed", "{:?}", kinds(&all));
            return (all, cards);
        }
        cards.push(payload(&last));
        let (status, body) = cloud.confirm(ALICE, &request_id(&all), json!({"approved": true})).await;
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_agent_verifies_patches_and_publishes_without_sending_anything() {
    let (base, hits) = service().await;
    let late = Arc::new(LateScript::default());
    let (cloud, ()) = cloud_with(Setup { stubs: false, local_http: true, ..Setup::default() }, |c| (c.clone(), ()), Some(late.clone() as Arc<dyn ModelProvider>)).await;
    let inst = Instance::new(&cloud.running.app.clients, &cloud.running.app.config).await.expect("instance");
    let alice = Caller::new(UserId("alice".into()));
    let cred = inst
        .create_credential(&alice, NewCredentialInput { name: "Team Slack".into(), kind: "slackApi".into(), data: json!({"accessToken": "xoxb-s3cret-slack"}), description: None, project_id: None })
        .await
        .expect("credential");
    let slack_fixture = json!({"ok": true, "channel": "C0SIGNUPS", "message": {"type": "message", "text": "New signup", "ts": "1767225600.000100"}, "message_timestamp": "1767225600.000100"});

    let wf = from(1, "/workflowId");
    late.set(json!({"conversations": {
        "Build the signup notifier": conversation(vec![
            tool("workspace_write_file", json!({"path": "signup.json", "content": signup(&base, &cred.id, "={{ $json.emial }}")})),
            tool("build-workflow", json!({"filePath": "signup.json", "workItemId": "signup", "simulationFixtures": {"Post to Slack": [slack_fixture]}})),
            tool("verify-built-workflow", json!({"workItemId": "signup", "workflowId": wf, "inputData": {"email": "ada@example.com"}})),
            tool("report-verification-verdict", json!({"workItemId": "signup", "verdict": "needs_patch", "failureSignature": "Post to Slack:text empty", "failedNodeName": "Post to Slack", "patch": "fix the typo in the email expression"})),
            tool("workspace_edit_file", json!({"path": "signup.json", "oldString": "$json.emial", "newString": "$json.email"})),
            tool("build-workflow", json!({"filePath": "signup.json", "workItemId": "signup", "simulationFixtures": {"Post to Slack": [slack_fixture]}})),
            tool("verify-built-workflow", json!({"workItemId": "signup", "workflowId": wf, "inputData": {"email": "ada@example.com"}})),
            tool("report-verification-verdict", json!({"workItemId": "signup", "verdict": "verified"})),
            tool("executions", json!({"action": "get", "executionId": from(6, "/executionId")})),
            tool("workflows", json!({"action": "publish", "workflowId": wf, "approvalSummary": "Notify the team of each signup"})),
        ]),
        "Build the digest poster": conversation(vec![
            tool("workspace_write_file", json!({"path": "digest.json", "content": digest(&base)})),
            tool("build-workflow", json!({"filePath": "digest.json", "workItemId": "digest"})),
            tool("workflows", json!({"action": "publish", "workflowId": wf})),
            tool("workflows", json!({"action": "publish", "workflowId": wf, "acknowledgeUnverified": true})),
        ]),
    }}));

    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    let (frames, cards) = chat_through(&cloud, &mut feed, &t, "Build the signup notifier").await;
    let r = outcomes(&frames);
    assert_eq!(r.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>()[1..4], ["build-workflow", "verify-built-workflow", "report-verification-verdict"]);

    // The build records the plan: the trigger and both writes are simulated, Slack with the model's fixture.
    let build = ok(&r[1]);
    assert_eq!(build["workItemId"], "signup");
    assert_eq!(build["simulatedNodes"], json!(["Hook", "Post to Slack", "Notify"]), "{build}");
    let plan = build["nodeSimulationPlan"].as_array().unwrap();
    let line = |n: &str| plan.iter().find(|p| p["nodeName"] == n).unwrap().clone();
    assert_eq!((line("Post to Slack")["mode"].as_str(), line("Post to Slack")["reason"].as_str()), (Some("simulate"), Some("write-operation")));
    assert_eq!((line("Notify")["mode"].as_str(), line("Notify")["reason"].as_str()), (Some("simulate"), Some("http-write")));
    assert_eq!((line("Shape")["mode"].as_str(), line("Has email")["mode"].as_str()), (Some("execute"), Some("execute")));
    assert_eq!(build["simulationFixtures"]["Post to Slack"], json!({"source": "model", "items": 1}));
    assert_eq!(build["simulationFixtures"]["Notify"]["source"], "catalog");

    // First verification: passes with every node reached, both writes simulated, the typo reported.
    let first = ok(&r[2]);
    assert_eq!((first["success"].as_bool(), first["status"].as_str()), (Some(true), Some("success")), "{first}");
    assert_eq!(first["simulatedNodes"], json!(["Post to Slack", "Notify"]));
    let previews = first["nodePreviews"].as_array().unwrap();
    assert_eq!(
        previews.iter().map(|p| (p["nodeName"].as_str().unwrap(), p["simulated"].as_bool().unwrap())).collect::<Vec<_>>(),
        [("Hook", true), ("Shape", false), ("Has email", false), ("Post to Slack", true), ("Notify", true)]
    );
    assert!(first["simulationNote"].as_str().unwrap().contains("Simulated (fixture output, nothing sent or written): Post to Slack, Notify"), "{first}");
    let warnings = first["resolvedParameterWarnings"].as_str().expect("warnings, enveloped as untrusted");
    assert!(
        warnings.starts_with("<untrusted_data") && warnings.contains("\"nodeName\":\"Post to Slack\"") && warnings.contains("$json.emial") && warnings.contains("\"path\":\"text\""),
        "{warnings}"
    );
    assert!(!warnings.contains("Notify"), "Notify's expression resolves: {warnings}");
    assert!(!warnings.contains("s3cret"), "no secret reaches the model");
    assert_eq!(first["verification"]["claim"], "verified", "every trigger passed and every node was reached: {first}");
    assert_eq!(ok(&r[3])["state"], "patching");
    assert!(ok(&r[3])["guidance"].as_str().unwrap().contains("Patch the workflow source"), "{}", r[3].1.as_ref().unwrap());

    // The patch, the rebuild (a fresh attempt budget), and a clean verification.
    assert_eq!(ok(&r[5])["workflowId"], build["workflowId"], "the same workflow, a new version");
    let second = ok(&r[6]);
    assert_eq!((second["success"].as_bool(), second["attempt"].as_u64()), (Some(true), Some(1)), "{second}");
    assert!(second.get("resolvedParameterWarnings").is_none(), "the fixed expression resolves: {second}");
    assert_eq!(second["verification"]["claim"], "verified");
    assert_eq!(second["verification"]["evidence"]["coveredNodes"], json!(["Hook", "Shape", "Has email", "Post to Slack", "Notify"]));
    let verdict = ok(&r[7]);
    assert_eq!((verdict["state"].as_str(), verdict["claim"].as_str()), (Some("verified"), Some("verified")), "{verdict}");

    // executions(get) labels the run simulated.
    let got = ok(&r[8]);
    assert_eq!(got["executionId"], second["executionId"]);
    assert_eq!(got["simulation"]["simulatedNodes"], json!(["Post to Slack", "Notify"]), "{got}");
    let data = got["data"].as_str().expect("run data, enveloped as untrusted");
    let data: Value = serde_json::from_str(data.split_once('\n').unwrap().1.rsplit_once('\n').unwrap().0).unwrap();
    assert_eq!(data["Post to Slack"][0]["json"], slack_fixture, "Slack's output is the model's fixture: {got}");
    assert_eq!(got["simulation"]["workItemId"], "signup");

    // Published without acknowledgement; the card states the verification.
    assert_eq!(cards.len(), 1, "only the publish asks");
    assert_eq!(cards[0]["approvalDetails"]["action"], "publish");
    assert_eq!(cards[0]["approvalDetails"]["verification"]["status"], "verified", "{}", cards[0]);
    assert!(cards[0]["message"].as_str().unwrap().contains("Verified"), "{}", cards[0]);
    assert_eq!(ok(&r[9])["success"], true);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "verification sent nothing to the service");

    // Planned tasks follow the loop: a build task is told its work item, a
    // checkpoint reads the stored verification instead of re-running it.
    let rt = cloud.running.app.agent.get().expect("runtime").clone();
    let thread_id = protocol::ids::ThreadId(t.clone());
    let task = |kind: &str, deps: &[&str]| agent::background::PlannedTask {
        id: if kind == "checkpoint" { "check".into() } else { "signup".into() },
        title: "t".into(),
        kind: kind.into(),
        spec: "s".into(),
        deps: deps.iter().map(|d| (*d).to_owned()).collect(),
        workflow_id: None,
        is_supporting_workflow: None,
    };
    let build_ctx = agent::background::task_context(&rt, &thread_id, &task("build-workflow", &[])).await.unwrap();
    assert!(build_ctx.contains("workItemId \"signup\"") && build_ctx.contains("verify-built-workflow"), "{build_ctx}");
    let check_ctx = agent::background::task_context(&rt, &thread_id, &task("checkpoint", &["signup"])).await.unwrap();
    assert!(check_ctx.contains(second["executionId"].as_str().unwrap()) && check_ctx.contains("\"claim\":\"verified\""), "{check_ctx}");

    // The second workflow was never verified: refused until acknowledged.
    let (frames, cards) = chat_through(&cloud, &mut feed, &t, "Build the digest poster").await;
    let r = outcomes(&frames);
    assert_eq!(ok(&r[1])["simulatedNodes"], json!(["Hook", "Post"]));
    let refused = r[2].1.as_ref().expect_err("publishing an unverified build is refused");
    assert!(refused.contains("not verified") && refused.contains("acknowledgeUnverified"), "{refused}");
    assert_eq!(cards.len(), 1, "the refusal asked nobody; the acknowledged publish did");
    let v = &cards[0]["approvalDetails"]["verification"];
    assert_eq!((v["status"].as_str(), v["acknowledgedUnverified"].as_bool()), (Some("unverified"), Some(true)), "{}", cards[0]);
    assert!(cards[0]["message"].as_str().unwrap().contains("Not verified"), "{}", cards[0]);
    assert_eq!(ok(&r[3])["success"], true);
    let meta = inst.data.workflows.meta(ok(&r[1])["workflowId"].as_str().unwrap()).await.unwrap().unwrap();
    assert!(meta.active_version_id.is_some(), "published");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "nothing was ever sent");

    // A live test (approved) really sends — the service counts it — and,
    // reaching every planned node without pins or injected input, raises the
    // claim; a later run with injected input never lowers it.
    let digest_id = ok(&r[1])["workflowId"].clone();
    late.set(json!({"conversations": {"Try the digest live": conversation(vec![
        tool("executions", json!({"action": "run", "workflowId": digest_id})),
        tool("executions", json!({"action": "run", "workflowId": digest_id, "inputData": {"x": 1}})),
    ])}}));
    let (frames, cards) = chat_through(&cloud, &mut feed, &t, "Try the digest live").await;
    let r = outcomes(&frames);
    assert_eq!(cards.len(), 2, "live runs ask");
    assert_eq!(ok(&r[0])["status"], "success", "{:?}", r[0]);
    assert_eq!(ok(&r[0])["verificationClaim"], json!({"workItemId": "digest", "claim": "verified"}));
    assert_eq!(ok(&r[1])["verificationClaim"], json!({"workItemId": "digest", "claim": "verified"}), "not lowered");
    assert_eq!(hits.load(Ordering::SeqCst), 2, "the live runs reached the service");
    let check = inst.publish_check(&protocol::ids::ThreadId(t.clone()), digest_id.as_str().unwrap()).await.unwrap().unwrap();
    assert_eq!(check.claim, instance::verification::Claim::Verified);
    assert!(check.evidence.live_execution_id.is_some());
    cloud.stop().await;
}
