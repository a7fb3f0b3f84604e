//! The agent runs and debugs workflows through the `executions` tool, end to
//! end: the local cloud (HTTP, SSE, the Steps and Runs queues polled into
//! the step and executor functions), the scripted model, moto.
//!
//! - the debugging flow the way the agent works: workflow files written to
//!   the workspace and built with `build-workflow`, `run` with webhook input and an approval ("always
//!   allow" once: the second run does not ask), `get-node-output` paging a
//!   300-item output, a failing Code node that `debug` names with its
//!   input, `get-resolved-node-parameters` showing the expression that
//!   resolved empty, a patch through `workspace_edit_file` and a rebuild by
//!   `filePath` (same workflow, new version), `run-step` in each input mode
//!   and its refusals,
//!   `stop` of a waiting Wait-node execution, `list` by status; a second
//!   user can neither run nor read the first one's executions;
//! - waits that cost no compute: a run longer than the inline bound parks
//!   the chain (state `waiting`, no step running) and the executor's
//!   completion resumes it; a completion delivered twice resumes once;
//!   cancelling the run stops the execution; a crashed execution is
//!   reported (through the sweep), not waited on forever.
//!
//! The script is bound late: a run's `$fromResult` reaches only its own
//! results, so later messages get the built workflows' ids from the test.
//! The waiting tests create their workflows through the instance layer
//! (what they check is the parking, not the build).

mod agent_common;

use agent::model::ModelProvider;
use agent_common::*;
use instance::{Caller, Instance};
use protocol::events::EventType;
use protocol::UserId;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::deployment::QueueId;

async fn cloud_late(setup: Setup) -> (Cloud, Arc<LateScript>, Instance) {
    let late = Arc::new(LateScript::default());
    let (cloud, ()) = cloud_with(setup, |c| (c.clone(), ()), Some(late.clone() as Arc<dyn ModelProvider>)).await;
    let app = &cloud.running.app;
    let inst = Instance::new(&app.clients, &app.config).await.expect("instance");
    (cloud, late, inst)
}

fn alice() -> Caller {
    Caller::new(UserId("alice".into()))
}

fn body(nodes: Value, connections: Value) -> WorkflowBody {
    WorkflowBody { nodes, connections, settings: json!({"executionOrder": "v1"}), pin_data: Value::Null, meta: Value::Null }
}

fn chain(names: &[&str]) -> Value {
    let mut c = serde_json::Map::new();
    for w in names.windows(2) {
        c.insert(w[0].into(), json!({"main": [[{"node": w[1], "type": "main", "index": 0}]]}));
    }
    Value::Object(c)
}

fn tag_node(expr: &str) -> Value {
    json!({"name": "Tag", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, 0], "parameters": {
        "assignments": {"assignments": [{"id": "1", "name": "owner", "value": expr, "type": "string"}]},
        "includeOtherFields": true, "options": {"ignoreConversionErrors": true}}})
}

/// Webhook → Explode (Code: `body.count` items) → Tag (Set: owner from an
/// expression that resolves empty) → Check (Code: throws on an empty owner).
fn order_intake(tag: &str) -> WorkflowBody {
    body(
        json!([
            {"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": "orders"}},
            {"name": "Explode", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [200, 0], "parameters": {"mode": "runOnceForAllItems",
                "jsCode": "const n = $input.first().json.body?.count ?? 3;\nreturn Array.from({length: n}, (_, i) => ({json: {i, sku: 'S' + i}}));"}},
            tag_node(tag),
            {"name": "Check", "type": "n8n-nodes-base.code", "typeVersion": 2, "position": [600, 0], "parameters": {"mode": "runOnceForAllItems",
                "jsCode": "for (const item of $input.all()) { if (!item.json.owner) throw new Error('order ' + item.json.i + ' has no owner'); }\nreturn $input.all();"}}
        ]),
        chain(&["Webhook", "Explode", "Tag", "Check"]),
    )
}

/// Manual trigger → Wait `secs` → Done.
fn waits(secs: u64) -> WorkflowBody {
    body(
        json!([
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"name": "Wait", "type": "n8n-nodes-base.wait", "typeVersion": 1.1, "position": [200, 0], "parameters": {"resume": "timeInterval", "amount": secs, "unit": "seconds"}},
            {"name": "Done", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [400, 0], "parameters": {}}
        ]),
        chain(&["Start", "Wait", "Done"]),
    )
}

async fn create(inst: &Instance, name: &str, body: WorkflowBody) -> String {
    let project = inst.write_project(&alice(), "workflow:create").await.expect("alice's project");
    let new = NewWorkflow { name: name.into(), description: None, project_id: project, folder_id: None, body, available_in_mcp: false };
    inst.data.workflows.create(new, &alice().user).await.expect("workflow created").meta.id
}

/// A workflow's source file as the model writes it (workflow JSON).
fn source(name: &str, b: WorkflowBody) -> String {
    serde_json::to_string_pretty(&json!({"name": name, "nodes": b.nodes, "connections": b.connections, "settings": b.settings})).unwrap()
}

fn tool(name: &str, args: Value) -> Value {
    json!({"name": name, "args": args})
}

fn call(action: &str, args: Value) -> Value {
    let mut a = args;
    a["action"] = json!(action);
    json!({"name": "executions", "args": a})
}

fn from(turn: usize, pointer: &str) -> Value {
    json!({"$fromResult": {"turn": turn, "call": 0, "pointer": pointer}})
}

/// One tool call per turn, then a closing text.
fn conversation(calls: Vec<Value>) -> Value {
    let mut turns: Vec<Value> = calls.into_iter().map(|c| json!({"toolCalls": [c]})).collect();
    turns.push(json!({"text": "Done."}));
    Value::Array(turns)
}

/// The settled results of a run's tool calls, in order: `Ok(result)` or `Err(error)`.
fn results(frames: &[Frame]) -> Vec<Result<Value, String>> {
    frames
        .iter()
        .filter_map(|f| match f.kind() {
            EventType::ToolResult => Some(Ok(payload(f)["result"].clone())),
            EventType::ToolError => Some(Err(payload(f)["error"].as_str().unwrap_or_default().to_owned())),
            _ => None,
        })
        .collect()
}

fn ok(r: &Result<Value, String>) -> &Value {
    r.as_ref().unwrap_or_else(|e| panic!("expected a result, got the error {e}"))
}

fn err(r: &Result<Value, String>) -> &str {
    match r {
        Err(e) => e,
        Ok(v) => panic!("expected an error, got {v}"),
    }
}

fn untrusted(v: &Value) -> &str {
    let s = v.as_str().unwrap_or_else(|| panic!("expected an untrusted_data envelope, got {v}"));
    assert!(s.starts_with("<untrusted_data source=\"execution-output\">") && s.ends_with("</untrusted_data>"), "{s}");
    s
}

fn names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v.as_array().unwrap_or(&vec![]).iter().filter_map(|x| x.as_str().map(str::to_owned)).collect();
    n.sort();
    n
}

/// Runs one chat to its end, confirming each approval as `confirm` says.
async fn chat_through(cloud: &Cloud, feed: &mut Feed, key: &str, t: &str, message: &str, confirm: Value) -> (Vec<Frame>, Vec<Value>) {
    let (status, body) = cloud.chat(key, t, message).await;
    assert_eq!(status, 200, "{body}");
    let mut all = Vec::new();
    let mut cards = Vec::new();
    loop {
        let frames = feed.until(Duration::from_secs(90), |f| matches!(f.kind(), EventType::ConfirmationRequest | EventType::RunFinish)).await;
        let last = frames.last().unwrap().clone();
        all.extend(frames);
        if last.kind() == EventType::RunFinish {
            return (all, cards);
        }
        cards.push(payload(&last));
        let (status, body) = cloud.confirm(key, &request_id(&all), confirm.clone()).await;
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test]
async fn the_agent_builds_runs_debugs_patches_and_steps_through_a_workflow() {
    let (cloud, late, inst) = cloud_late(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;

    // Built the way the agent works: workspace files, then build-workflow.
    late.set(json!({"conversations": {"Build the workflows": conversation(vec![
        tool("workspace_write_file", json!({"path": "orders.json", "content": source("Order intake", order_intake("={{ $json.customer }}"))})),
        tool("build-workflow", json!({"filePath": "orders.json"})),
        tool("workspace_write_file", json!({"path": "nightly.json", "content": source("Nightly wait", waits(120))})),
        tool("build-workflow", json!({"filePath": "nightly.json"})),
    ])}}));
    let (frames, _) = chat_through(&cloud, &mut feed, ALICE, &t, "Build the workflows", json!({"approved": true})).await;
    let r = results(&frames);
    let (intake, nightly) = (ok(&r[1]).clone(), ok(&r[3]).clone());
    assert!(intake["success"] == true && nightly["success"] == true, "{intake} {nightly}");
    let w1 = intake["workflowId"].as_str().unwrap().to_owned();
    let w2 = nightly["workflowId"].as_str().unwrap().to_owned();
    let first_version = inst.data.workflows.meta(&w1).await.unwrap().unwrap().version_id;

    let run = |args: Value| call("run", args);
    late.set(json!({"conversations": {
        "Run the order intake": conversation(vec![
            run(json!({"workflowId": w1, "inputData": {"count": 300}, "approvalSummary": "Create 300 test orders"})),
            run(json!({"workflowId": w1, "inputData": {"count": 300}})),
            call("get-node-output", json!({"executionId": from(1, "/executionId"), "nodeName": "Explode", "maxItems": 50})),
            call("get-node-output", json!({"executionId": from(1, "/executionId"), "nodeName": "Explode", "startIndex": 250, "maxItems": 50})),
            call("debug", json!({"executionId": from(1, "/executionId")})),
            call("get-resolved-node-parameters", json!({"executionId": from(1, "/executionId"), "nodeName": "Tag"})),
        ]),
        // The patch goes through the workspace (with a stale pin on Check that
        // step runs must not replay) and a rebuild by filePath alone.
        "Check the fix": conversation(vec![
            tool("workspace_edit_file", json!({"path": "orders.json", "oldString": "={{ $json.customer }}", "newString": "={{ $('Webhook').first().json.body.owner }}"})),
            tool("workspace_edit_file", json!({"path": "orders.json", "oldString": "\"connections\": {", "newString": "\"pinData\": {\"Check\": [{\"json\": {\"pinned\": true}}]},\n  \"connections\": {"})),
            tool("build-workflow", json!({"filePath": "orders.json"})),
            run(json!({"workflowId": w1, "inputData": {"count": 3, "owner": "ada"}})),
            call("run-step", json!({"workflowId": w1, "nodeName": "Check", "reuseExecutionId": from(3, "/executionId")})),
            call("run-step", json!({"workflowId": w1, "nodeName": "Check", "mockInput": [{"i": 7, "owner": "bob"}]})),
            call("run-step", json!({"workflowId": w1, "nodeName": "Explode"})),
            call("run-step", json!({"workflowId": w1, "nodeName": "Check", "reuseExecutionId": from(6, "/executionId")})),
            call("run-step", json!({"workflowId": w1, "nodeName": "Check", "toolArguments": {"q": 1}})),
        ]),
        "Stop the nightly wait": conversation(vec![
            run(json!({"workflowId": w2})),
            call("run-step", json!({"workflowId": w1, "nodeName": "Check", "reuseExecutionId": from(0, "/executionId")})),
            call("stop", json!({"executionId": from(0, "/executionId")})),
            call("list", json!({"workflowId": w2, "status": "canceled"})),
            call("list", json!({"status": "error"})),
            call("stop", json!({"executionId": from(0, "/executionId")})),
        ]),
    }}));

    // Run with webhook input: approved once for the session, the second run does not ask.
    let (frames, cards) = chat_through(&cloud, &mut feed, ALICE, &t, "Run the order intake", json!({"approved": true, "scope": "session"})).await;
    assert_eq!(cards.len(), 1, "only the first run asks");
    let card = &cards[0];
    assert_eq!((card["toolName"].as_str(), card["severity"].as_str()), (Some("executions"), Some("warning")));
    assert_eq!(card["resourceName"], "Order intake", "the card names the workflow, not its id");
    assert_eq!(card["message"], "Create 300 test orders");
    assert_eq!(card["approvalDetails"]["action"], "run-workflow");
    assert_eq!(card["approvalDetails"]["summary"], "Create 300 test orders");
    let r = results(&frames);
    assert_eq!(r.len(), 6, "{r:?}");
    let (first, second) = (ok(&r[0]), ok(&r[1]));
    for run in [first, second] {
        assert_eq!(run["status"], "error", "{run}");
        assert!(untrusted(&run["error"]).contains("has no owner"), "{run}");
        assert!(untrusted(&run["data"]).contains("\"sku\":\"S0\""), "{run}");
        assert!(run["truncated"].as_u64().unwrap() >= 295, "300 items cannot all reach the model: {run}");
        assert!(run["startedAt"].is_string() && run["finishedAt"].is_string());
    }
    assert_ne!(first["executionId"], second["executionId"]);
    let failed_exec = second["executionId"].as_str().unwrap().to_owned();
    // The webhook's flat input became its body.
    let explode_input = inst.data.executions.get_data(&failed_exec, &Default::default()).await.unwrap().unwrap();
    assert_eq!(explode_input["resultData"]["runData"]["Webhook"][0]["data"]["main"][0][0]["json"]["body"], json!({"count": 300}));

    // Paging through the 300 items.
    let page = ok(&r[2]);
    assert_eq!((page["totalItems"].as_u64(), page["returned"]["from"].as_u64(), page["returned"]["to"].as_u64()), (Some(300), Some(0), Some(50)));
    let items = untrusted(&page["outputs"][0]["items"]);
    assert!(items.contains("\"S49\"") && !items.contains("\"S50\""), "{items}");
    let last = ok(&r[3]);
    assert_eq!((last["returned"]["from"].as_u64(), last["returned"]["to"].as_u64()), (Some(250), Some(300)));
    assert!(untrusted(&last["outputs"][0]["items"]).contains("\"S299\""));

    // debug names the failing Code node with its input.
    let debug = ok(&r[4]);
    assert_eq!(debug["status"], "error");
    assert_eq!((debug["failedNode"]["name"].as_str(), debug["failedNode"]["type"].as_str()), (Some("Check"), Some("n8n-nodes-base.code")));
    assert!(untrusted(&debug["failedNode"]["error"]).contains("has no owner"), "{debug}");
    assert!(untrusted(&debug["failedNode"]["inputData"]).contains("\"owner\":null"), "the empty owner it got: {debug}");
    let trace: Vec<(String, String)> = debug["nodeTrace"].as_array().unwrap().iter().map(|n| (n["name"].as_str().unwrap().into(), n["status"].as_str().unwrap().into())).collect();
    assert_eq!(trace, [("Webhook".into(), "success".into()), ("Explode".into(), "success".into()), ("Tag".into(), "success".into()), ("Check".into(), "error".into())]);

    // The expression behind the empty owner.
    let resolved = ok(&r[5]);
    assert_eq!(resolved["emptyResolutions"][0]["path"], "assignments.assignments[0].value", "{resolved}");
    assert_eq!(resolved["emptyResolutions"][0]["expression"], "={{ $json.customer }}");
    assert_eq!(resolved["parameters"]["assignments"]["assignments"][0]["value"], "={{ $json.customer }}");
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");

    let (frames, cards) = chat_through(&cloud, &mut feed, ALICE, &t, "Check the fix", json!({"approved": false})).await;
    assert!(cards.is_empty(), "the session's run grant covers the workflow's steps: {cards:?}");
    let all = results(&frames);
    assert_eq!(all.len(), 9, "{all:?}");
    let rebuilt = ok(&all[2]);
    assert_eq!((rebuilt["success"].as_bool(), rebuilt["workflowId"].as_str()), (Some(true), Some(w1.as_str())), "the same workflow: {rebuilt}");
    assert_ne!(rebuilt["sourceHash"], intake["sourceHash"]);
    assert_ne!(inst.data.workflows.meta(&w1).await.unwrap().unwrap().version_id, first_version, "a new version");
    let r = &all[3..];
    let fixed_run = ok(&r[0]);
    assert_eq!(fixed_run["status"], "success", "{fixed_run}");
    assert!(untrusted(&fixed_run["data"]).contains("\"pinned\":true"), "a full run uses the saved pin: {fixed_run}");

    let reused = ok(&r[1]);
    assert_eq!((reused["status"].as_str(), reused["inputMode"].as_str(), reused["nodeName"].as_str()), (Some("success"), Some("reused-execution"), Some("Check")), "{reused}");
    assert_eq!(reused["reusedFromExecutionId"], fixed_run["executionId"]);
    assert_eq!(names(&reused["replayedNodeNames"]), ["Explode", "Tag", "Webhook"]);
    assert_eq!(names(&reused["executedNodeNames"]), ["Check"], "only what ran in this execution");
    assert_eq!(names(&reused["workflowPinnedNodeNames"]), Vec::<String>::new());
    let data = untrusted(&reused["data"]);
    assert!(data.contains("\"owner\":\"ada\"") && !data.contains("pinned"), "the target's own pin came off the run: {data}");

    let mocked = ok(&r[2]);
    assert_eq!((mocked["status"].as_str(), mocked["inputMode"].as_str()), (Some("success"), Some("mocked")), "{mocked}");
    assert_eq!(mocked["mockedNodeNames"], json!(["Tag", "Explode", "Webhook"]));
    assert_eq!(names(&mocked["executedNodeNames"]), ["Check"]);
    assert!(untrusted(&mocked["data"]).contains("\"owner\":\"bob\""));

    let chained = ok(&r[3]);
    assert_eq!((chained["status"].as_str(), chained["inputMode"].as_str()), (Some("success"), Some("chain")), "{chained}");
    assert_eq!(names(&chained["executedNodeNames"]), ["Explode", "Webhook"], "nothing after the target ran");
    assert!(untrusted(&chained["data"]).contains("\"sku\":\"S2\""));

    let e = err(&r[4]);
    assert!(e.contains("would still run \"Tag\" for real"), "{e}");
    let e = err(&r[5]);
    assert!(e.contains("toolArguments apply only to a tool node"), "{e}");
    // Refusals started nothing; the saved workflow kept its pin.
    let w1_runs = inst.list_executions(&alice(), Some(&w1), None, Some(100)).await.unwrap();
    assert_eq!(w1_runs.len(), 6, "three runs and three steps: {w1_runs:?}");
    assert!(w1_runs.iter().all(|e| e.mode == "manual" && e.workflow_name == "Order intake"));
    assert_eq!(inst.data.workflows.get(&w1).await.unwrap().unwrap().body.pin_data, json!({"Check": [{"json": {"pinned": true}}]}));

    // A Wait-node execution: run returns it waiting, stop cancels it, list finds it by status.
    let (frames, cards) = chat_through(&cloud, &mut feed, ALICE, &t, "Stop the nightly wait", json!({"approved": true})).await;
    assert_eq!(cards.len(), 1, "another workflow asks again");
    assert_eq!(cards[0]["resourceName"], "Nightly wait");
    assert_eq!(cards[0]["message"], "Run this workflow live", "no approvalSummary: a generic line");
    let r = results(&frames);
    let waiting = ok(&r[0]);
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    assert!(waiting["waitTill"].is_string());
    let e = err(&r[1]);
    assert!(e.contains("belongs to another workflow"), "{e}");
    assert_eq!(ok(&r[2])["success"], true, "{:?}", r[2]);
    let canceled = ok(&r[3])["executions"].as_array().unwrap().clone();
    assert_eq!(canceled.len(), 1, "{canceled:?}");
    assert_eq!((canceled[0]["id"].clone(), canceled[0]["workflowName"].as_str()), (waiting["executionId"].clone(), Some("Nightly wait")));
    let errors = ok(&r[4])["executions"].as_array().unwrap().clone();
    let error_ids: Vec<&Value> = errors.iter().map(|e| &e["id"]).collect();
    assert!(error_ids.contains(&&json!(failed_exec)) && errors.iter().all(|e| e["status"] == "error" && e["workflowId"] == json!(w1)), "{errors:?}");
    let again = ok(&r[5]);
    assert_eq!(again["success"], false, "a finished execution cannot be stopped: {again}");

    // A second user: nothing of alice's to read or run.
    late.set(json!({"conversations": {"Peek at alice": conversation(vec![
        call("get", json!({"executionId": failed_exec})),
        call("debug", json!({"executionId": failed_exec})),
        call("get-node-output", json!({"executionId": failed_exec, "nodeName": "Explode"})),
        call("stop", json!({"executionId": failed_exec})),
        call("run", json!({"workflowId": w1})),
        call("run-step", json!({"workflowId": w1, "nodeName": "Check"})),
        call("list", json!({})),
        call("list", json!({"workflowId": w1})),
    ])}}));
    let tb = thread();
    let mut bob = cloud.sse_events(BOB, &tb).await;
    let (frames, cards) = chat_through(&cloud, &mut bob, BOB, &tb, "Peek at alice", json!({"approved": true})).await;
    assert!(cards.is_empty(), "bob is never asked to run alice's workflow");
    let r = results(&frames);
    for (i, res) in r.iter().enumerate() {
        match i {
            6 => assert_eq!(ok(res)["executions"], json!([])),
            _ => assert!(err(res).contains("not found"), "{i}: {res:?}"),
        }
    }
    assert!(!frames.iter().any(|f| f.event.to_value().to_string().contains("S0")), "none of alice's data reached bob");
    cloud.stop().await;
}

const FAST_PARK: &[(&str, &str)] = &[("INSTANCE_AI_EXECUTION_INLINE_WAIT_MS", "300")];

async fn chain_state(cloud: &Cloud, t: &str) -> Option<store::runs::Chain> {
    let rt = cloud.running.app.agent().await.unwrap();
    let (_, active, _) = rt.runs.slot(&protocol::ids::ThreadId(t.into())).await.unwrap()?;
    rt.runs.chain(&active?, &protocol::ids::AgentId(store::runs::ORCHESTRATOR.into())).await.unwrap()
}

async fn until_waiting(cloud: &Cloud, t: &str) -> store::runs::Chain {
    for _ in 0..200 {
        if let Some(c) = chain_state(cloud, t).await.filter(|c| c.state == store::runs::ChainState::Waiting) {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the chain never parked on the execution");
}

#[tokio::test]
async fn a_run_longer_than_the_inline_bound_parks_the_chain_and_its_completion_resumes_it_once() {
    let (cloud, late, inst) = cloud_late(Setup { approval_policy: Some("runWorkflow=always_allow"), vars: FAST_PARK, ..Setup::default() }).await;
    let steady = create(&inst, "Steady", waits(3)).await;
    late.set(json!({"conversations": {"Run the steady one": conversation(vec![call("run", json!({"workflowId": steady}))])}}));
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run the steady one").await;

    // Parked: the chain waits on the execution, no step holds it.
    let parked = until_waiting(&cloud, &t).await;
    let wait_id = parked.suspended_request.clone().expect("the chain names its wait record");
    let rt = cloud.running.app.agent().await.unwrap();
    let record = rt.suspensions.get(&wait_id).await.unwrap().expect("wait record");
    let wait = record.wait.clone().expect("an execution wait");
    assert_eq!(record.state, "waiting");
    let exec = inst.data.executions.get(&wait.execution_id).await.unwrap().unwrap();
    assert!(matches!(exec.status, executions::ExecutionStatus::Running | executions::ExecutionStatus::New), "{exec:?}");

    let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(60)).await;
    let r = results(&frames);
    assert_eq!(r.len(), 1);
    let result = ok(&r[0]);
    assert_eq!((result["status"].as_str(), result["executionId"].as_str()), (Some("success"), Some(wait.execution_id.as_str())), "{result}");
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");

    // The completion delivered again (a duplicate message): nothing happens.
    let duplicate = json!({"runId": parked.run_id.0, "agentId": parked.agent_id.0, "step": parked.step + 1, "waitId": wait_id}).to_string();
    let app = &cloud.running.app;
    app.clients.sqs.send_message().queue_url(app.config.queue_url(QueueId::Steps).unwrap()).message_body(duplicate).send().await.unwrap();
    let rest = feed.drain(Duration::from_secs(3)).await;
    assert!(rest.is_empty(), "a second delivery resumed nothing: {:?}", kinds(&rest));
    assert_eq!(find(&feed.seen, EventType::ToolResult).len(), 1);
    assert_eq!(find(&feed.seen, EventType::RunFinish).len(), 1);
    cloud.stop().await;
}

#[tokio::test]
async fn a_run_past_its_timeout_is_cancelled_and_says_so() {
    let (cloud, late, inst) = cloud_late(Setup { approval_policy: Some("runWorkflow=always_allow"), vars: FAST_PARK, ..Setup::default() }).await;
    let long = create(&inst, "Long", waits(40)).await;
    late.set(json!({"conversations": {"Run the long one briefly": conversation(vec![call("run", json!({"workflowId": long, "timeout": 2000}))])}}));
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    let started = std::time::Instant::now();
    cloud.chat(ALICE, &t, "Run the long one briefly").await;
    let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(30)).await;
    assert!(started.elapsed() < Duration::from_secs(25), "stopped at its timeout, not after the 40 s wait");
    let result = ok(&results(&frames)[0]).clone();
    assert_eq!(result["status"], "error", "{result}");
    assert!(untrusted(&result["error"]).contains("timed out"), "{result}");
    let exec = inst.data.executions.get(result["executionId"].as_str().unwrap()).await.unwrap().unwrap();
    assert!(exec.status.is_finished(), "the execution ended with the run: {exec:?}");
    cloud.stop().await;
}

#[tokio::test]
async fn with_values_withheld_the_model_gets_no_item_values_or_upstream_errors() {
    let (cloud, late, inst) = cloud_late(Setup {
        approval_policy: Some("runWorkflow=always_allow"),
        vars: &[("INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES", "false")],
        ..Setup::default()
    })
    .await;
    let w1 = create(&inst, "Order intake", order_intake("={{ $json.customer }}")).await;
    late.set(json!({"conversations": {"Run it quietly": conversation(vec![
        call("run", json!({"workflowId": w1, "inputData": {"count": 2}})),
        call("get-node-output", json!({"executionId": from(0, "/executionId"), "nodeName": "Explode"})),
        call("debug", json!({"executionId": from(0, "/executionId")})),
        call("get-resolved-node-parameters", json!({"executionId": from(0, "/executionId"), "nodeName": "Tag"})),
        call("get", json!({"executionId": from(0, "/executionId")})),
    ])}}));
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run it quietly").await;
    let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(60)).await;
    let r = results(&frames);
    let run = ok(&r[0]);
    assert_eq!(run["status"], "error");
    assert!(run.get("data").is_none() && run["suppressed"].is_string(), "{run}");
    assert!(!untrusted(&run["error"]).contains("has no owner"), "an upstream error's text stays out: {run}");
    let page = ok(&r[1]);
    assert_eq!(page["totalItems"], 2, "counts are not values: {page}");
    assert!(!untrusted(&page["outputs"][0]["items"]).contains("S0") && page["suppressed"].is_string(), "{page}");
    let debug = ok(&r[2]);
    assert_eq!(debug["failedNode"]["name"], "Check", "the node that failed is still named: {debug}");
    assert!(debug["failedNode"].get("inputData").is_none() && !untrusted(&debug["failedNode"]["error"]).contains("has no owner"), "{debug}");
    let resolved = ok(&r[3]);
    assert!(resolved["parameters"].is_null() && resolved["suppressed"].is_string(), "{resolved}");
    let get = ok(&r[4]);
    assert!(get.get("data").is_none() && !untrusted(&get["nodeErrors"]).contains("has no owner"), "{get}");
    assert!(!frames.iter().any(|f| f.event.to_value().to_string().contains("\\\"S0\\\"")), "no item value in any event");
    cloud.stop().await;
}

#[tokio::test]
async fn cancelling_a_run_parked_on_an_execution_stops_both() {
    let (cloud, late, inst) = cloud_late(Setup { approval_policy: Some("runWorkflow=always_allow"), vars: FAST_PARK, ..Setup::default() }).await;
    let long = create(&inst, "Long", waits(40)).await;
    late.set(json!({"conversations": {"Run the long one": conversation(vec![call("run", json!({"workflowId": long}))])}}));
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run the long one").await;
    let parked = until_waiting(&cloud, &t).await;
    let rt = cloud.running.app.agent().await.unwrap();
    let wait = rt.suspensions.get(parked.suspended_request.as_deref().unwrap()).await.unwrap().unwrap().wait.unwrap();
    // Let the executor pick it up first: a running execution is stopped through its cancel flag.
    for _ in 0..100 {
        if inst.data.executions.get(&wait.execution_id).await.unwrap().unwrap().status == executions::ExecutionStatus::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let (status, body) = cloud.cancel(ALICE, &t).await;
    assert_eq!((status, body["cancelled"].as_bool()), (200, Some(true)), "{body}");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "cancelled");
    assert_eq!(ok(&results(&frames)[0])["cancelled"], true);
    let mut status = executions::ExecutionStatus::Running;
    for _ in 0..100 {
        status = inst.data.executions.get(&wait.execution_id).await.unwrap().unwrap().status;
        if status.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, executions::ExecutionStatus::Canceled, "the execution stopped long before its 40 s wait");
    let rest = feed.drain(Duration::from_secs(2)).await;
    assert!(rest.iter().all(|f| f.kind() != EventType::ToolResult && f.kind() != EventType::RunFinish), "{:?}", kinds(&rest));
    cloud.stop().await;
}

/// The next message on `queue`, taken off it.
async fn take(cloud: &Cloud, queue: QueueId) -> String {
    let app = &cloud.running.app;
    let url = app.config.queue_url(queue).unwrap().to_owned();
    for _ in 0..30 {
        let out = app.clients.sqs.receive_message().queue_url(&url).max_number_of_messages(1).wait_time_seconds(1).send().await.unwrap();
        if let Some(m) = out.messages.unwrap_or_default().into_iter().next() {
            app.clients.sqs.delete_message().queue_url(&url).receipt_handle(m.receipt_handle.unwrap()).send().await.unwrap();
            return m.body.unwrap();
        }
    }
    panic!("no message on {queue:?}");
}

#[tokio::test]
async fn an_execution_whose_executor_dies_is_reported_crashed_through_the_sweep() {
    let (cloud, late, inst) =
        cloud_late(Setup { consumers: false, approval_policy: Some("runWorkflow=always_allow"), vars: FAST_PARK, ..Setup::default() }).await;
    let steady = create(&inst, "Steady", waits(3)).await;
    late.set(json!({"conversations": {"Run the steady one": conversation(vec![call("run", json!({"workflowId": steady}))])}}));
    let app = cloud.running.app.clone();
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run the steady one").await;
    api::handlers::step::handle(&app, receive(&cloud).await).await;
    let parked = until_waiting(&cloud, &t).await;

    // An executor claims the execution with a short lease and dies mid-run.
    let run: executions::RunMessage = serde_json::from_str(&take(&cloud, QueueId::Runs).await).unwrap();
    let settings = executions::ExecutorSettings { lease: Duration::from_secs(2), ..executions::ExecutorSettings::default() };
    let dying = executions::Executor::new(inst.data.clone(), app.clients.sqs.clone(), app.config.queue_url(QueueId::Runs).unwrap(), settings)
        .notifying(app.config.queue_url(QueueId::Steps).ok().map(str::to_owned));
    let exec_id = run.execution_id.0.clone();
    let worker = tokio::spawn(async move { dying.run_execution(run.execution_id.as_str()).await });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    worker.abort();
    let _ = worker.await;
    assert_eq!(inst.data.executions.get(&exec_id).await.unwrap().unwrap().status, executions::ExecutionStatus::Running);

    // The sweep leaves a live lease alone; once it lapsed, the execution is crashed and the chain resumed.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    api::handlers::sweep::handle(&app).await.unwrap();
    assert_eq!(inst.data.executions.get(&exec_id).await.unwrap().unwrap().status, executions::ExecutionStatus::Crashed);
    let resume: agent::StepMessage = serde_json::from_str(&take(&cloud, QueueId::Steps).await).unwrap();
    assert_eq!((resume.step, resume.wait_id.as_deref()), (parked.step + 1, parked.suspended_request.as_deref()));
    let mut rec = aws_lambda_events::sqs::SqsMessage::default();
    rec.message_id = Some("resume".into());
    rec.body = Some(serde_json::to_string(&resume).unwrap());
    let mut ev = aws_lambda_events::sqs::SqsEvent::default();
    ev.records = vec![rec];
    api::handlers::step::handle(&app, ev).await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let result = ok(&results(&frames)[0]).clone();
    assert_eq!(result["status"], "crashed", "{result}");
    assert!(untrusted(&result["error"]).contains("stopped unexpectedly"), "{result}");
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}

/// Manual trigger → Done.
fn quick() -> WorkflowBody {
    body(
        json!([
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"name": "Done", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [200, 0], "parameters": {}}
        ]),
        chain(&["Start", "Done"]),
    )
}

#[tokio::test]
async fn blocked_runs_are_refused_and_list_reaches_past_the_first_200_workflows() {
    let (cloud, late, inst) = cloud_late(Setup { approval_policy: Some("runWorkflow=blocked"), ..Setup::default() }).await;
    let oldest = create(&inst, "Oldest", quick()).await;
    // Its execution comes from outside the agent (the policy binds only the assistant).
    let started = inst.start_run(&alice(), &instance::executions::RunRequest { workflow_id: oldest.clone(), ..Default::default() }).await.unwrap();
    assert_eq!(inst.wait_settled(&started.execution_id, Duration::from_secs(30)).await.unwrap().status, executions::ExecutionStatus::Success);
    for i in 0..205 {
        create(&inst, &format!("Newer {i}"), quick()).await;
    }
    let q = store::data::workflows::WorkflowQuery { status: store::data::workflows::StatusFilter::All, limit: 200, ..Default::default() };
    let first_200 = inst.data.workflows.list(&alice().user, &q).await.unwrap().workflows;
    assert!(first_200.len() == 200 && first_200.iter().all(|w| w.meta.id != oldest), "the oldest workflow is past the first 200");

    late.set(json!({"conversations": {"Run what you can": conversation(vec![
        call("run", json!({"workflowId": oldest})),
        call("run-step", json!({"workflowId": oldest, "nodeName": "Done"})),
        tool("nodes", json!({"action": "execute", "type": "n8n-nodes-base.set", "version": 3.4, "config": {"parameters": {"mode": "manual",
            "assignments": {"assignments": [{"id": "a", "name": "x", "value": "1", "type": "string"}]}}}})),
        call("list", json!({})),
        call("list", json!({"status": "success", "limit": 100})),
    ])}}));
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    let (frames, cards) = chat_through(&cloud, &mut feed, ALICE, &t, "Run what you can", json!({"approved": true})).await;
    assert!(cards.is_empty(), "a blocked action never asks: {cards:?}");
    let r = results(&frames);
    for (i, refused) in r[..3].iter().enumerate() {
        let v = ok(refused);
        assert_eq!((v["blocked"].as_bool(), v["reason"].as_str()), (Some(true), Some("blocked_by_admin")), "{i}: {v}");
        assert!(v["message"].as_str().unwrap().contains("runWorkflow"), "{i}: {v}");
    }
    for listed in [&r[3], &r[4]] {
        let rows = ok(listed)["executions"].as_array().unwrap().clone();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!((rows[0]["id"].as_str(), rows[0]["workflowName"].as_str()), (Some(started.execution_id.as_str()), Some("Oldest")));
    }
    assert_eq!(inst.list_executions(&alice(), Some(&oldest), None, Some(100)).await.unwrap().len(), 1, "the blocked calls started nothing");
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}
