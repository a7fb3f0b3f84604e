//! Behaviour tests for the executor: error outputs, SSRF guard, waiting and
//! resuming from serialized state, cancellation, sandbox limits, partial runs.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use engine::host::Resolver;
use engine::partial::StepInput;
use engine::{CancelToken, Engine, EngineError, EngineSettings, ExecutionState, ExecutionStatus, Graph, Host, Item, RunOptions};
use serde_json::{json, Value};

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({ "id": name, "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0] })
}

fn chain(nodes: Vec<Value>) -> Value {
    // main connections in list order
    let mut conns = serde_json::Map::new();
    for w in nodes.windows(2) {
        conns.insert(w[0]["name"].as_str().unwrap_or("").into(), json!({ "main": [[{ "node": w[1]["name"], "type": "main", "index": 0 }]] }));
    }
    json!({ "nodes": nodes, "connections": conns, "settings": { "executionOrder": "v1" } })
}

fn trigger() -> Value {
    node("Trigger", "n8n-nodes-base.manualTrigger", 1.0, json!({}))
}

fn data(items: Value) -> Value {
    node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": items }))
}

fn http(url: &str) -> Value {
    node("HTTP", "n8n-nodes-base.httpRequest", 4.2, json!({ "url": url, "options": {} }))
}

fn run(wf: &Value, settings: EngineSettings, host: Host) -> ExecutionState {
    let graph = Graph::from_json(wf).expect("valid workflow");
    Engine::new(settings, host).run(&graph, RunOptions::default()).expect("run").0
}

fn out(st: &ExecutionState, node: &str, output: usize) -> Vec<Value> {
    st.run_data.get(node).and_then(|r| r.last()).and_then(|t| t.output(output)).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

#[test]
fn continue_error_output_routes_failing_item_to_error_output() {
    let mut set = node(
        "Set",
        "n8n-nodes-base.set",
        3.4,
        json!({ "assignments": { "assignments": [{ "id": "1", "name": "n", "value": "={{ $json.a }}", "type": "number" }] }, "options": {} }),
    );
    set["onError"] = json!("continueErrorOutput");
    let mut wf = chain(vec![trigger(), data(json!([{ "a": "1" }, { "a": "x" }])), set]);
    wf["nodes"].as_array_mut().unwrap().push(node("Ok", "n8n-nodes-base.noOp", 1.0, json!({})));
    wf["nodes"].as_array_mut().unwrap().push(node("Failed", "n8n-nodes-base.noOp", 1.0, json!({})));
    wf["connections"]["Set"] = json!({ "main": [[{ "node": "Ok", "type": "main", "index": 0 }], [{ "node": "Failed", "type": "main", "index": 0 }]] });
    let st = run(&wf, EngineSettings::default(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out(&st, "Ok", 0), vec![json!({ "n": 1 })]);
    let failed = out(&st, "Failed", 0);
    assert_eq!(failed.len(), 1);
    assert!(failed[0]["error"].as_str().unwrap_or("").contains("'n' expects a number"), "{failed:?}");
}

#[test]
fn stop_workflow_error_fails_the_execution() {
    let wf = chain(vec![trigger(), node("Stop", "n8n-nodes-base.stopAndError", 1.0, json!({ "errorMessage": "boom" }))]);
    let st = run(&wf, EngineSettings::default(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(st.error.as_ref().map(|e| e.message.as_str()), Some("boom"));
    assert_eq!(st.run_data["Stop"][0].error.as_ref().map(|e| e.message.as_str()), Some("boom"));
}

/// Resolves every name to one address; records what was asked.
struct FakeResolver(IpAddr, std::sync::Mutex<Vec<String>>);
impl Resolver for FakeResolver {
    fn resolve(&self, host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
        self.1.lock().unwrap().push(host.to_string());
        Ok(vec![self.0])
    }
}

fn assert_refused(url: &str, host: Host) {
    let st = run(&chain(vec![trigger(), http(url)]), EngineSettings::default(), host);
    assert_eq!(st.status, ExecutionStatus::Error, "{url} was not refused");
    let msg = st.error.map(|e| e.message).unwrap_or_default();
    assert!(msg.contains("refused"), "{url}: {msg}");
}

#[test]
fn http_refuses_loopback_link_local_and_private_resolution_by_default() {
    assert_refused("http://127.0.0.1:9/", Host::default());
    assert_refused("http://169.254.169.254/latest/meta-data/", Host::default());
    assert_refused("http://[::1]:9/", Host::default());
    assert_refused("http://localhost:9/", Host::default());
    // A hostname whose resolution is private: the fake resolver says 10.0.0.1,
    // no real DNS is used and no connection is attempted.
    let resolver = Arc::new(FakeResolver("10.0.0.1".parse().unwrap(), Default::default()));
    let host = Host { resolver: resolver.clone(), ..Default::default() };
    assert_refused("http://internal.example.com/data", host);
    assert_eq!(resolver.1.lock().unwrap().as_slice(), ["internal.example.com"]);
}

#[test]
fn http_guard_can_be_relaxed_by_the_engine_setting() {
    // With the setting on, the request goes out (to a closed loopback port) and
    // fails with a connection error instead of the guard's refusal.
    let settings = EngineSettings { allow_private_network: true, http_timeout: Duration::from_secs(5), ..Default::default() };
    let st = run(&chain(vec![trigger(), http("http://127.0.0.1:9/")]), settings, Host::default());
    assert_eq!(st.status, ExecutionStatus::Error);
    let msg = st.error.map(|e| e.message).unwrap_or_default();
    assert!(!msg.contains("refused: address"), "{msg}");
}

#[test]
fn wait_execution_resumes_from_serialized_state() {
    let wait = node("Wait", "n8n-nodes-base.wait", 1.1, json!({ "resume": "timeInterval", "amount": 2, "unit": "hours" }));
    let set = node(
        "After",
        "n8n-nodes-base.set",
        3.4,
        json!({ "assignments": { "assignments": [{ "id": "1", "name": "resumed", "value": true, "type": "boolean" }] }, "includeOtherFields": true, "options": {} }),
    );
    let wf = chain(vec![trigger(), data(json!([{ "x": 1 }])), wait, set]);
    let graph = Graph::from_json(&wf).unwrap();
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Waiting);
    assert!(st.wait_till.is_some());
    assert!(!st.run_data.contains_key("After"));
    // Persist, then continue "in another process".
    let saved = serde_json::to_string(&st).unwrap();
    let restored: ExecutionState = serde_json::from_str(&saved).unwrap();
    let (done, _) = Engine::new(EngineSettings::default(), Host::default()).resume(&graph, restored, None).unwrap();
    assert_eq!(done.status, ExecutionStatus::Success, "{:?}", done.error);
    assert_eq!(out(&done, "After", 0), vec![json!({ "x": 1, "resumed": true })]);
    assert_eq!(out(&done, "Data", 0), vec![json!({ "x": 1 })]);
}

#[test]
fn cancelled_execution_ends_canceled() {
    let wait = node("Wait", "n8n-nodes-base.wait", 1.1, json!({ "amount": 30, "unit": "seconds" }));
    let wf = chain(vec![trigger(), wait, node("Never", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    let graph = Graph::from_json(&wf).unwrap();
    let cancel = CancelToken::new();
    let c2 = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        c2.cancel();
    });
    let t0 = std::time::Instant::now();
    let opts = RunOptions { cancel: Some(cancel), ..Default::default() };
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Canceled);
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(!st.run_data.contains_key("Never"));
}

#[test]
fn execution_timeout_stops_the_run() {
    let wait = node("Wait", "n8n-nodes-base.wait", 1.1, json!({ "amount": 30, "unit": "seconds" }));
    let wf = chain(vec![trigger(), wait]);
    let graph = Graph::from_json(&wf).unwrap();
    let opts = RunOptions { timeout: Some(Duration::from_millis(200)), ..Default::default() };
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Canceled);
    assert!(st.error.unwrap().message.contains("timed out"));
}

#[test]
fn runaway_code_is_stopped_and_the_next_run_works() {
    let mut settings = EngineSettings::default();
    settings.limits.timeout = Duration::from_millis(300);
    let engine = Engine::new(settings, Host::default());
    let looping = chain(vec![trigger(), node("Code", "n8n-nodes-base.code", 2.0, json!({ "jsCode": "while (true) {}" }))]);
    let (st, _) = engine.run(&Graph::from_json(&looping).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().message.contains("timed out"));
    let fine = chain(vec![trigger(), node("Code", "n8n-nodes-base.code", 2.0, json!({ "jsCode": "return [{ ok: 1 + 1 }];" }))]);
    let (st, _) = engine.run(&Graph::from_json(&fine).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out(&st, "Code", 0), vec![json!({ "ok": 2 })]);
}

/// A version the catalog does not describe, or a parameter value on the
/// engine's refusal list, fails the run before any node runs (a disabled
/// node is not judged); the node and the reason are named.
#[test]
fn unsupported_versions_and_values_are_refused_before_the_run() {
    let refused = |n: Value| {
        let graph = Graph::from_json(&chain(vec![trigger(), n])).unwrap();
        match Engine::new(EngineSettings::default(), Host::default()).run(&graph, RunOptions::default()) {
            Err(EngineError::Unsupported { node, message }) => (node, message),
            other => panic!("expected Unsupported, got {:?}", other.map(|r| r.0.status)),
        }
    };
    let (node_name, message) = refused(node("Newer", "n8n-nodes-base.respondToWebhook", 1.6, json!({})));
    assert_eq!(node_name, "Newer");
    assert_eq!(message, "typeVersion 1.6 of n8n-nodes-base.respondToWebhook is not supported by this engine (supported: 1, 1.1, 1.2, 1.3, 1.4, 1.5)");
    let (_, message) = refused(node("Sheet", "n8n-nodes-base.extractFromFile", 1.0, json!({ "operation": "xlsx", "options": { "rawData": false } })));
    assert_eq!(message, "Not supported by this engine: formatted cell values (option rawData off) (n8n-nodes-base.extractFromFile)");
    let mut parked = node("Parked", "n8n-nodes-base.crypto", 2.0, json!({ "action": "encrypt" }));
    parked["disabled"] = json!(true);
    let graph = Graph::from_json(&chain(vec![trigger(), parked])).unwrap();
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
}

#[test]
fn unknown_node_type_fails_validation_with_its_name() {
    let wf = chain(vec![trigger(), node("Mystery", "n8n-nodes-base.doesNotExist", 1.0, json!({}))]);
    let graph = Graph::from_json(&wf).unwrap();
    match Engine::new(EngineSettings::default(), Host::default()).run(&graph, RunOptions::default()) {
        Err(EngineError::UnknownNodeType { node, node_type }) => {
            assert_eq!(node, "Mystery");
            assert_eq!(node_type, "n8n-nodes-base.doesNotExist");
        }
        other => panic!("expected UnknownNodeType, got {:?}", other.map(|r| r.0.status)),
    }
}

#[test]
fn disabled_node_passes_data_through() {
    let mut set = node("Set", "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [{ "id": "1", "name": "x", "value": 2, "type": "number" }] } }));
    set["disabled"] = json!(true);
    let wf = chain(vec![trigger(), data(json!([{ "x": 1 }])), set, node("End", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    let st = run(&wf, EngineSettings::default(), Host::default());
    assert_eq!(out(&st, "End", 0), vec![json!({ "x": 1 })]);
}

#[test]
fn pinned_nodes_do_not_execute() {
    let wf = chain(vec![trigger(), node("Stop", "n8n-nodes-base.stopAndError", 1.0, json!({ "errorMessage": "boom" })), node("End", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    let graph = Graph::from_json(&wf).unwrap();
    let mut opts = RunOptions::default();
    opts.pin_data.insert("Stop".into(), vec![Item::new(json!({ "pinned": true }))]);
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success);
    assert_eq!(out(&st, "End", 0), vec![json!({ "pinned": true })]);
}

#[test]
fn merge_waits_for_both_inputs_and_paired_items_resolve() {
    let wf = json!({
        "nodes": [
            trigger(),
            node("A", "n8n-nodes-testing.testData", 1.0, json!({ "data": [{ "id": 1 }] })),
            node("B", "n8n-nodes-testing.testData", 1.0, json!({ "data": [{ "id": 2 }] })),
            node("Merge", "n8n-nodes-base.merge", 3.0, json!({})),
            node("Label", "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [
                { "id": "1", "name": "fromA", "value": "={{ $json.id === 1 ? $('A').item.json.id : 0 }}", "type": "number" }
            ] }, "includeOtherFields": true })),
        ],
        "connections": {
            "Trigger": { "main": [[{ "node": "A", "type": "main", "index": 0 }, { "node": "B", "type": "main", "index": 0 }]] },
            "A": { "main": [[{ "node": "Merge", "type": "main", "index": 0 }]] },
            "B": { "main": [[{ "node": "Merge", "type": "main", "index": 1 }]] },
            "Merge": { "main": [[{ "node": "Label", "type": "main", "index": 0 }]] }
        },
        "settings": { "executionOrder": "v1" }
    });
    let st = run(&wf, EngineSettings::default(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(st.run_data["Merge"].len(), 1);
    assert_eq!(out(&st, "Merge", 0), vec![json!({ "id": 1 }), json!({ "id": 2 })]);
    // item 0 of Label descends from A's item 0
    assert_eq!(out(&st, "Label", 0)[0], json!({ "id": 1, "fromA": 1 }));
}

fn step_workflow() -> Graph {
    let wf = chain(vec![
        trigger(),
        data(json!([{ "n": 1 }, { "n": 2 }])),
        node("Double", "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [
            { "id": "1", "name": "d", "value": "={{ $json.n * 2 }}", "type": "number" },
            { "id": "2", "name": "missing", "value": "={{ $json.nope }}", "type": "string" }
        ] }, "includeOtherFields": true, "options": { "ignoreConversionErrors": true } })),
        node("After", "n8n-nodes-base.stopAndError", 1.0, json!({ "errorMessage": "must not run" })),
    ]);
    Graph::from_json(&wf).unwrap()
}

#[test]
fn run_step_from_chain_reuse_and_mock() {
    let g = step_workflow();
    let engine = Engine::new(EngineSettings::default(), Host::default());
    let (chain_st, _) = engine.run_node(&g, "Double", StepInput::Chain, RunOptions::default()).unwrap();
    assert_eq!(chain_st.status, ExecutionStatus::Success, "{:?}", chain_st.error);
    assert!(!chain_st.run_data.contains_key("After"));
    assert_eq!(out(&chain_st, "Double", 0)[1]["d"], json!(4));

    let (reused, _) = engine.run_node(&g, "Double", StepInput::Reuse(Box::new(chain_st.clone())), RunOptions::default()).unwrap();
    assert_eq!(reused.status, ExecutionStatus::Success);
    assert_eq!(reused.run_data["Data"][0].origin, Some(engine::data::RunOrigin::Replayed));
    assert_eq!(out(&reused, "Double", 0)[0]["d"], json!(2));

    let (mocked, _) = engine.run_node(&g, "Double", StepInput::Mock(vec![Item::new(json!({ "n": 10 }))]), RunOptions::default()).unwrap();
    assert_eq!(out(&mocked, "Double", 0), vec![json!({ "n": 10, "d": 20, "missing": null })]);
    // Every node above is mocked: the parent with the items, the ones above it a placeholder.
    assert_eq!(mocked.run_data["Data"][0].origin, Some(engine::data::RunOrigin::Mocked));
    assert_eq!(mocked.run_data["Trigger"][0].origin, Some(engine::data::RunOrigin::Mocked));
    assert_eq!(out(&mocked, "Trigger", 0), vec![json!({})]);
}

#[test]
fn resolved_parameters_report_empty_and_failed_expressions() {
    let g = step_workflow();
    let engine = Engine::new(EngineSettings::default(), Host::default());
    let (st, _) = engine.run_node(&g, "Double", StepInput::Chain, RunOptions::default()).unwrap();
    let r = engine.resolve_parameters(&g, &st, "Double", 1, None).unwrap();
    assert_eq!(r.resolved["assignments"]["assignments"][0]["value"], json!(4));
    assert_eq!(r.empty_resolutions.len(), 1);
    assert_eq!(r.empty_resolutions[0].path, "assignments.assignments[1].value");
    assert!(r.failed_expressions.is_empty());
}

#[test]
fn catalog_lists_searches_and_generates_types() {
    let all = engine::catalog::list();
    assert!(all.len() >= 30);
    for n in &all {
        assert!(engine::nodes::get(&n.name).is_some(), "catalog node {} has no implementation", n.name);
        // validation's check (no node code linked) says the same
        assert!(engine::nodes::is_implemented(&n.name), "catalog node {} is not known to validation", n.name);
    }
    for unknown in ["n8n-nodes-base.noSuchNode", "n8n-nodes-base.stickyNote", ""] {
        assert!(engine::nodes::get(unknown).is_none() && !engine::nodes::is_implemented(unknown), "{unknown}");
    }
    let found = engine::catalog::search("http api", 5);
    assert_eq!(found[0].name, "n8n-nodes-base.httpRequest");
    let ts = engine::catalog::typescript("n8n-nodes-base.dataTable").unwrap();
    assert!(ts.contains("operation?: 'insert'") && ts.contains("operation: 'get'"), "{ts}");
    assert!(ts.contains("export type DataTableParameters"), "{ts}");
    let d = engine::catalog::describe("set").unwrap();
    assert_eq!(d.name, "n8n-nodes-base.set");
}

#[test]
fn trigger_items_follow_the_trigger_shape() {
    use engine::partial::trigger_items;
    let w = trigger_items("n8n-nodes-base.webhook", Some(&json!({ "event": "signup" })), "UTC");
    assert_eq!(w[0].json, json!({ "headers": {}, "params": {}, "query": {}, "body": { "event": "signup" } }));
    let env = trigger_items("n8n-nodes-base.webhook", Some(&json!({ "query": { "a": "1" } })), "UTC");
    assert_eq!(env[0].json["query"], json!({ "a": "1" }));
    let f = trigger_items("n8n-nodes-base.formTrigger", Some(&json!({ "name": "Alice" })), "UTC");
    assert_eq!(f[0].json["formMode"], json!("instanceAi"));
    assert_eq!(f[0].json["name"], json!("Alice"));
    let c = trigger_items("@n8n/n8n-nodes-langchain.chatTrigger", Some(&json!({ "chatInput": "hi" })), "UTC");
    assert_eq!(c[0].json["chatInput"], json!("hi"));
    let s = trigger_items("n8n-nodes-base.scheduleTrigger", None, "Europe/Berlin");
    assert!(s[0].json["Timezone"].as_str().unwrap().starts_with("Europe/Berlin"));
}

#[test]
fn output_names_follow_the_editor() {
    let g = Graph::from_json(&json!({ "nodes": [
        node("If", "n8n-nodes-base.if", 2.0, json!({})),
        { "name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "parameters": {}, "onError": "continueErrorOutput" }
    ], "connections": {} })).unwrap();
    assert_eq!(engine::partial::output_names(g.node("If").unwrap()), vec!["true", "false"]);
    assert_eq!(engine::partial::output_names(g.node("Set").unwrap()), vec!["Success", "Error"]);
}

/// `(last node executed, nodes with run data)` at each progress call.
type ProgressCalls = Arc<std::sync::Mutex<Vec<(String, Vec<String>)>>>;

fn recording_hook() -> (engine::ProgressHook, ProgressCalls) {
    let calls: ProgressCalls = Arc::default();
    let seen = calls.clone();
    let hook = engine::ProgressHook::new(move |st: &ExecutionState| {
        let last = st.last_node_executed.clone().unwrap_or_default();
        seen.lock().unwrap().push((last, st.run_data.keys().cloned().collect()));
    });
    (hook, calls)
}

#[test]
fn progress_is_reported_after_each_node_on_runs_resumes_and_run_steps() {
    let wait = node("Wait", "n8n-nodes-base.wait", 1.1, json!({ "resume": "timeInterval", "amount": 2, "unit": "hours" }));
    let wf = chain(vec![trigger(), data(json!([{ "x": 1 }])), wait, node("After", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    let graph = Graph::from_json(&wf).unwrap();
    let engine = Engine::new(EngineSettings::default(), Host::default());
    let (hook, calls) = recording_hook();
    let (st, _) = engine.run(&graph, RunOptions { progress: Some(hook.clone()), ..Default::default() }).unwrap();
    assert_eq!(st.status, ExecutionStatus::Waiting);
    // The parked Wait is not a finished node run: no call for it.
    assert_eq!(
        *calls.lock().unwrap(),
        vec![("Trigger".to_owned(), vec!["Trigger".to_owned()]), ("Data".to_owned(), vec!["Data".to_owned(), "Trigger".to_owned()])]
    );
    calls.lock().unwrap().clear();
    let (done, _) = engine.resume_with(&graph, st, RunOptions { progress: Some(hook.clone()), ..Default::default() }).unwrap();
    assert_eq!(done.status, ExecutionStatus::Success, "{:?}", done.error);
    let names: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(names, ["Wait", "After"]);
    // Each call sees the run data so far, the earlier segment's included.
    assert!(calls.lock().unwrap()[1].1.contains(&"Trigger".to_owned()));

    calls.lock().unwrap().clear();
    let g = step_workflow();
    let (_, _) = engine.run_node(&g, "Double", StepInput::Mock(vec![Item::new(json!({ "n": 1 }))]), RunOptions { progress: Some(hook), ..Default::default() }).unwrap();
    let names: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(names, ["Double"], "the run-step destination is reported too");
}

/// Records the child executions Execute Workflow asks for.
#[derive(Default)]
struct FakeRecorder {
    started: std::sync::Mutex<Vec<(String, String)>>,
    finished: std::sync::Mutex<Vec<(String, Result<ExecutionStatus, String>)>>,
}

impl engine::host::SubExecutionRecorder for FakeRecorder {
    fn start(&self, workflow: &Value, parent: &str) -> Result<engine::host::SubExecution, String> {
        let mut started = self.started.lock().unwrap();
        let id = format!("child-{}", started.len() + 1);
        started.push((id.clone(), parent.to_owned()));
        let workflow_id = workflow["id"].as_str().unwrap_or("unsaved").to_owned();
        Ok(engine::host::SubExecution { execution_id: id, workflow_id, progress: None })
    }
    fn finish(&self, id: &str, outcome: Result<&ExecutionState, &str>) -> Result<(), String> {
        self.finished.lock().unwrap().push((id.to_owned(), outcome.map(|st| st.status).map_err(str::to_owned)));
        Ok(())
    }
}

#[test]
fn execute_workflow_gives_each_child_run_a_recorded_execution_when_the_host_records_them() {
    let child = chain(vec![
        node("Start", "n8n-nodes-base.executeWorkflowTrigger", 1.1, json!({ "inputSource": "passthrough" })),
        node("Id", "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [{ "id": "1", "name": "exec", "value": "={{ $execution.id }}", "type": "string" }] }, "includeOtherFields": true, "options": {} })),
    ]);
    let mut child_json = child.clone();
    child_json["id"] = json!("wf-child");
    let call = node(
        "Call",
        "n8n-nodes-base.executeWorkflow",
        1.2,
        json!({ "source": "parameter", "workflowJson": child_json.to_string(), "mode": "each", "options": {} }),
    );
    let wf = chain(vec![trigger(), data(json!([{ "a": 1 }, { "a": 2 }])), call]);
    let recorder = Arc::new(FakeRecorder::default());
    let host = Host { sub_executions: Some(recorder.clone()), ..Default::default() };
    let graph = Graph::from_json(&wf).unwrap();
    let opts = RunOptions { execution_id: Some("parent-1".into()), ..Default::default() };
    let (st, _) = Engine::new(EngineSettings::default(), host).run(&graph, opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(*recorder.started.lock().unwrap(), vec![("child-1".to_owned(), "parent-1".to_owned()), ("child-2".to_owned(), "parent-1".to_owned())]);
    assert_eq!(
        *recorder.finished.lock().unwrap(),
        vec![("child-1".to_owned(), Ok(ExecutionStatus::Success)), ("child-2".to_owned(), Ok(ExecutionStatus::Success))]
    );
    // Each child ran under its own execution id.
    assert_eq!(out(&st, "Call", 0), vec![json!({ "a": 1, "exec": "child-1" }), json!({ "a": 2, "exec": "child-2" })]);
    let meta = st.run_data["Call"][0].metadata.clone().expect("task metadata");
    let task = serde_json::to_value(&st.run_data["Call"][0]).unwrap();
    assert_eq!(task["metadata"], json!({ "subExecution": { "executionId": "child-2", "workflowId": "wf-child" }, "subExecutionsCount": 2 }), "{meta:?}");

    // Without a recorder the child runs inline and nothing links anywhere.
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert!(st.run_data["Call"][0].metadata.is_none());
}

/// A parent calling `child` (as a JSON parameter) with `params` on items `[{a:1},{a:2},{a:3}]`.
fn call_child(child: Value, version: f64, params: Value, on_error: Option<&str>) -> ExecutionState {
    let mut p = json!({ "source": "parameter", "workflowJson": child.to_string(), "options": {} });
    for (k, v) in params.as_object().cloned().unwrap_or_default() {
        p[k] = v;
    }
    let mut call = node("Call", "n8n-nodes-base.executeWorkflow", version, p);
    if let Some(e) = on_error {
        call["onError"] = json!(e);
    }
    let wf = chain(vec![trigger(), data(json!([{ "a": 1 }, { "a": 2 }, { "a": 3 }])), call]);
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    st
}

fn paired_of(st: &ExecutionState, node: &str, output: usize) -> Vec<Value> {
    st.node_output(node, output).map(|items| items.iter().map(|i| i.paired_item.as_ref().map(|p| p.to_value()).unwrap_or(Value::Null)).collect()).unwrap_or_default()
}

#[test]
fn items_handed_back_unchanged_pair_with_the_nodes_own_input() {
    // n8n re-points input items before a node runs: No Operation's items pair
    // with its input, and `$('Data').item` still finds each item's origin
    let keep = node("Keep", "n8n-nodes-base.filter", 2.2, json!({ "conditions": { "conditions": [{ "leftValue": "={{ $json.a }}", "rightValue": 0, "operator": { "type": "number", "operation": "gt" } }], "combinator": "and", "options": {} } }));
    let set = node("Set", "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [{ "id": "1", "name": "from", "value": "={{ $('Data').item.json.a }}", "type": "number" }] }, "options": {} }));
    let wf = chain(vec![trigger(), data(json!([{ "a": 0 }, { "a": 1 }, { "a": 2 }])), keep, node("Pass", "n8n-nodes-base.noOp", 1.0, json!({})), set]);
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(paired_of(&st, "Keep", 0), vec![json!(1), json!(2)], "the filter pairs with the items it kept");
    assert_eq!(paired_of(&st, "Pass", 0), vec![json!(0), json!(1)]);
    assert_eq!(out(&st, "Set", 0), vec![json!({ "from": 1 }), json!({ "from": 2 })]);
}

#[test]
fn execute_workflow_maps_inputs_onto_items_and_the_trigger_keeps_its_schema() {
    let start = |params: Value| node("Start", "n8n-nodes-base.executeWorkflowTrigger", 1.1, params);
    let child = |trigger: Value| chain(vec![trigger, node("Done", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    // the caller's mapping, typed by its schema (strings converted as 1.4 does)
    let inputs = json!({ "workflowInputs": {
        "mappingMode": "defineBelow",
        "value": { "n": "={{ $json.a * 10 }}", "label": "={{ $json.a }}" },
        "schema": [
            { "id": "n", "displayName": "n", "type": "number" },
            { "id": "label", "displayName": "label", "type": "string" },
            { "id": "a", "displayName": "a", "type": "number", "removed": true }
        ]
    } });
    let st = call_child(child(start(json!({ "inputSource": "passthrough" }))), 1.4, inputs.clone(), None);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out(&st, "Call", 0), vec![json!({ "n": 10, "label": "1" }), json!({ "n": 20, "label": "2" }), json!({ "n": 30, "label": "3" })]);
    // a value its type refuses
    let mut bad = inputs.clone();
    bad["workflowInputs"]["value"]["n"] = json!("={{ 'x' + $json.a }}");
    let st = call_child(child(start(json!({ "inputSource": "passthrough" }))), 1.4, bad, None);
    let e = st.error.expect("type error");
    assert_eq!((e.message.as_str(), e.description.as_deref()), ("Invalid input for 'n' [item 0]", Some("'n' expects a number but we got 'x1'")));
    // the trigger keeps the fields it declares (missing ones null), in its order
    let declared = start(json!({ "inputSource": "workflowInputs", "workflowInputs": { "values": [{ "name": "label", "type": "string" }, { "name": "other", "type": "any" }] } }));
    let st = call_child(child(declared), 1.4, inputs.clone(), None);
    assert_eq!(out(&st, "Call", 0)[0], json!({ "label": "1", "other": null }));
    let from_example = start(json!({ "inputSource": "jsonExample", "jsonExample": "{ \"n\": 1, \"more\": null }" }));
    let st = call_child(child(from_example), 1.4, inputs, None);
    assert_eq!(out(&st, "Call", 0)[2], json!({ "n": 30, "more": null }));
}

#[test]
fn execute_workflow_pairs_results_with_the_items_they_came_from() {
    // the child drops the first item and reverses the rest
    let child = chain(vec![
        node("Start", "n8n-nodes-base.executeWorkflowTrigger", 1.1, json!({ "inputSource": "passthrough" })),
        node("Keep", "n8n-nodes-base.filter", 2.2, json!({ "conditions": { "conditions": [{ "leftValue": "={{ $json.a }}", "rightValue": 1, "operator": { "type": "number", "operation": "gt" } }], "combinator": "and", "options": {} } })),
        node("Flip", "n8n-nodes-base.sort", 1.0, json!({ "sortFieldsUi": { "sortField": [{ "fieldName": "a", "order": "descending" }] } })),
    ]);
    let st = call_child(child.clone(), 1.2, json!({ "mode": "once" }), None);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(out(&st, "Call", 0), vec![json!({ "a": 3 }), json!({ "a": 2 })]);
    assert_eq!(paired_of(&st, "Call", 0), vec![json!(2), json!(1)]);
    // per item: each result pairs with its item; an If's second output is the node's second output
    let split = chain(vec![
        node("Start", "n8n-nodes-base.executeWorkflowTrigger", 1.1, json!({})),
        node("Odd", "n8n-nodes-base.if", 2.2, json!({ "conditions": { "conditions": [{ "leftValue": "={{ $json.a % 2 }}", "rightValue": 1, "operator": { "type": "number", "operation": "equals" } }], "combinator": "and", "options": {} } })),
    ]);
    let st = call_child(split, 1.2, json!({ "mode": "each" }), None);
    assert_eq!(out(&st, "Call", 0), vec![json!({ "a": 1 }), json!({ "a": 3 })]);
    assert_eq!(out(&st, "Call", 1), vec![json!({ "a": 2 })]);
    assert_eq!(paired_of(&st, "Call", 1), vec![json!(1)]);
}

#[test]
fn execute_workflow_errors_per_mode_and_version() {
    let failing = chain(vec![
        node("Start", "n8n-nodes-base.executeWorkflowTrigger", 1.1, json!({})),
        node("Stop", "n8n-nodes-base.stopAndError", 1.0, json!({ "errorMessage": "={{ 'bad ' + $json.a }}" })),
    ]);
    let st = call_child(failing.clone(), 1.2, json!({ "mode": "each" }), None);
    let e = st.error.expect("error");
    assert_eq!((e.message.as_str(), e.description.as_deref()), ("Error executing workflow with item at index 0", Some("bad 1")));
    // continue on fail: before 1.3 item i's error is on output i, from 1.3 all on output 0
    let st = call_child(failing.clone(), 1.2, json!({ "mode": "each" }), Some("continueRegularOutput"));
    assert_eq!((out(&st, "Call", 0), out(&st, "Call", 2)), (vec![json!({ "error": "bad 1" })], vec![json!({ "error": "bad 3" })]));
    let st = call_child(failing.clone(), 1.3, json!({ "mode": "each" }), Some("continueRegularOutput"));
    assert_eq!(out(&st, "Call", 0).len(), 3);
    // once: one error item paired with every input item
    let st = call_child(failing, 1.3, json!({ "mode": "once" }), Some("continueRegularOutput"));
    assert_eq!(out(&st, "Call", 0), vec![json!({ "error": "bad 1" })]);
    assert_eq!(paired_of(&st, "Call", 0), vec![json!([{ "item": 0 }, { "item": 1 }, { "item": 2 }])]);
    // a local file is refused
    let st = call_child(json!({}), 1.1, json!({ "source": "localFile", "workflowPath": "/tmp/x.json" }), None);
    assert!(st.error.expect("refused").message.contains("\"Local File\" source is not supported"));
}

/// Run data packed once consumed reads, compares and serializes exactly as
/// unpacked run data. Packed: outputs no child holds any more whose values
/// nothing else keeps; outputs sharing values with a leaf stay.
#[test]
fn packed_run_data_reads_and_serializes_like_unpacked() {
    let code = node(
        "Generate",
        "n8n-nodes-base.code",
        2.0,
        json!({ "jsCode": "return Array.from({length: 40}, (_, i) => ({ json: { id: i, name: 'Item ' + i, tags: ['a', i % 2 ? 'odd' : 'even'] } }));" }),
    );
    let set = node(
        "Double",
        "n8n-nodes-base.set",
        3.4,
        json!({ "assignments": { "assignments": [{ "id": "1", "name": "doubled", "value": "={{ $json.id * 2 }}", "type": "number" }] }, "includeOtherFields": true, "options": {} }),
    );
    let if_node = node(
        "Big",
        "n8n-nodes-base.if",
        2.2,
        json!({ "conditions": { "options": { "caseSensitive": true, "typeValidation": "strict", "version": 2 }, "combinator": "and",
            "conditions": [{ "id": "c", "leftValue": "={{ $json.doubled }}", "rightValue": 40, "operator": { "type": "number", "operation": "gt" } }] }, "options": {} }),
    );
    let label = node(
        "Label",
        "n8n-nodes-base.set",
        3.4,
        json!({ "assignments": { "assignments": [{ "id": "1", "name": "label", "value": "big", "type": "string" }] }, "includeOtherFields": true, "options": {} }),
    );
    let mut wf = chain(vec![trigger(), code, set, if_node, label, node("End", "n8n-nodes-base.noOp", 1.0, json!({}))]);
    wf["connections"]["Big"] = json!({ "main": [[{ "node": "Label", "type": "main", "index": 0 }], []] });
    let packed = run(&wf, EngineSettings { pack_run_data_from: 1, ..Default::default() }, Host::default());
    let plain = run(&wf, EngineSettings { pack_run_data_from: 0, ..Default::default() }, Host::default());
    assert_eq!(packed.status, ExecutionStatus::Success, "{:?}", packed.error);

    let is_packed = |st: &ExecutionState, n: &str| st.run_data[n][0].data.as_ref().and_then(|d| d.main[0].as_ref()).map(|o| o.is_packed());
    assert_eq!(is_packed(&packed, "Generate"), Some(true), "consumed by Double");
    assert_eq!(is_packed(&packed, "Double"), Some(true), "its values: Double and Big only");
    assert_eq!(is_packed(&packed, "Big"), Some(true), "its values: Double and Big only");
    assert_eq!(is_packed(&packed, "Label"), Some(false), "End (a leaf) keeps Label's values");
    assert_eq!(is_packed(&packed, "End"), Some(false), "a leaf keeps its items");
    assert_eq!(is_packed(&plain, "Generate"), Some(false));

    // Same JSON when stored, same items when read (timings aside).
    let shape = |st: &ExecutionState| {
        let mut v = serde_json::to_value(&st.run_data).unwrap();
        for runs in v.as_object_mut().unwrap().values_mut() {
            for r in runs.as_array_mut().unwrap() {
                r["startTime"] = json!(0);
                r["executionTime"] = json!(0);
            }
        }
        v
    };
    assert_eq!(shape(&packed), shape(&plain));
    for n in ["Generate", "Double", "Big", "Label", "End"] {
        assert_eq!(out(&packed, n, 0), out(&plain, n, 0), "{n}");
        assert!(!out(&packed, n, 0).is_empty(), "{n} has items");
    }
    assert_eq!(out(&packed, "Double", 0)[3], json!({ "id": 3, "name": "Item 3", "tags": ["a", "odd"], "doubled": 6 }));
    // A packed state survives the round trip the executor makes through storage.
    let back: ExecutionState = serde_json::from_value(serde_json::to_value(&packed).unwrap()).unwrap();
    assert_eq!(out(&back, "Generate", 0), out(&plain, "Generate", 0));
}


#[test]
fn a_frozen_clock_moves_on_by_the_time_waits_would_sleep() {
    let stamp = |name: &str| node(name, "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [{ "id": "1", "name": "t", "value": "={{ $now.toMillis() }}", "type": "number" }] }, "includeOtherFields": true, "options": {} }));
    let wf = chain(vec![
        trigger(),
        stamp("Before"),
        node("Wait", "n8n-nodes-base.wait", 1.1, json!({ "resume": "timeInterval", "amount": 42, "unit": "seconds" })),
        stamp("After"),
        node("Today", "n8n-nodes-base.dateTime", 2.0, json!({ "operation": "getCurrentDate", "options": { "timezone": "UTC" } })),
    ]);
    let frozen = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap().with_timezone(&chrono::Utc);
    let settings = EngineSettings { clock: Some(frozen), ..Default::default() };
    let started = std::time::Instant::now();
    let (st, _) = Engine::new(settings, Host::default()).run(&Graph::from_json(&wf).unwrap(), RunOptions::default()).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "the wait does not sleep");
    assert_eq!(out(&st, "Before", 0)[0]["t"], json!(1_735_689_600_000_i64));
    assert_eq!(out(&st, "After", 0)[0]["t"], json!(1_735_689_642_000_i64));
    assert_eq!(out(&st, "Today", 0)[0]["currentDate"], json!("2025-01-01T00:00:42.000Z"));
}

/// Packed items read back however deep they nest (serde_json's parser alone
/// refuses the 128th level; a Code node returns 256 levels).
#[test]
fn packed_items_nested_deeper_than_the_parser_default_read_back() {
    for depth in [100, 300, 500] {
        let mut deep = json!({ "end": true });
        for _ in 1..depth {
            deep = json!({ "a": deep });
        }
        let items = Arc::new(vec![Item::new(json!({ "deep": deep })), Item::new(json!({ "n": 1 }))]);
        let mut out = engine::OutputItems::new(items.clone());
        assert!(out.pack());
        assert!(out.is_packed());
        assert!(out.items() == &items, "{depth} levels");
    }
}
