//! Work items against moto: the plan a build records, attempts reserved
//! under concurrent verifications (conditional writes on the work item),
//! the publish gate's reading, and credentials applied all or nothing.

use instance::builder::BuildRequest;
use instance::credentials::NewCredentialInput;
use instance::verification::simulation::{Mode, Reason};
use instance::verification::{BuildRecord, Claim, VerifyRequest, MAX_ATTEMPTS};
use instance::{Caller, Instance};
use protocol::ids::ThreadId;
use protocol::UserId;
use serde_json::{json, Value};
use store::testing::TestEnv;

async fn setup() -> (TestEnv, Instance, Caller) {
    let env = TestEnv::new().await;
    let mut inst = Instance::new(&env.clients, &env.config).await.expect("instance");
    // workflow code and expressions run in the executor's sandbox: here, in process
    inst.run_in_process();
    let alice = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&alice).await.unwrap();
    (env, inst, alice)
}

/// Webhook → Set → If → Notify (HTTP POST taking a header-auth credential).
fn signup(url: &str) -> String {
    json!({
        "name": "Signup",
        "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": "signup"}},
            {"name": "Shape", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [200, 0], "parameters": {"assignments": {"assignments": [{"id": "1", "name": "email", "value": "={{ $json.body.email }}", "type": "string"}]}}},
            {"name": "Has email", "type": "n8n-nodes-base.if", "typeVersion": 2.2, "position": [400, 0], "parameters": {"conditions": {"combinator": "and", "conditions": [{"leftValue": "={{ $json.email }}", "rightValue": "", "operator": {"type": "string", "operation": "notEmpty", "singleValue": true}}]}}},
            {"name": "Notify", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [600, 0], "parameters": {"method": "POST", "url": url, "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth", "sendBody": true, "bodyParameters": {"parameters": [{"name": "email", "value": "={{ $json.email }}"}]}}}
        ],
        "connections": {
            "Hook": {"main": [[{"node": "Shape", "type": "main", "index": 0}]]},
            "Shape": {"main": [[{"node": "Has email", "type": "main", "index": 0}]]},
            "Has email": {"main": [[{"node": "Notify", "type": "main", "index": 0}], []]}
        }
    })
    .to_string()
}

async fn built(inst: &Instance, caller: &Caller, thread: &ThreadId, item: &str) -> (String, String) {
    let out = inst.build_workflow(caller, BuildRequest { source: signup("https://example.com/notify"), ..BuildRequest::default() }).await.unwrap();
    assert!(out.success, "{out:?}");
    let (wid, vid) = (out.workflow_id.unwrap(), out.version_id.unwrap());
    inst.record_build(caller, thread, BuildRecord { work_item_id: item.into(), workflow_id: wid.clone(), version_id: vid.clone(), ..BuildRecord::default() }).await.unwrap();
    (wid, vid)
}

#[tokio::test]
async fn a_build_records_its_plan_and_fixtures_with_the_thread() {
    let (_env, inst, alice) = setup().await;
    let thread = ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()));
    let (wid, vid) = built(&inst, &alice, &thread, "wi-plan").await;
    let wi = inst.get_work_item(&thread, "wi-plan").await.unwrap().expect("stored");
    assert_eq!((wi.workflow_id.as_str(), wi.build.version_id.as_str()), (wid.as_str(), vid.as_str()));
    assert_eq!(wi.build.planned_nodes, ["Hook", "Shape", "Has email", "Notify"]);
    assert_eq!(wi.build.triggers, ["Hook"]);
    let plan: Vec<(&str, Mode, Reason)> = wi.build.node_simulation_plan.iter().map(|p| (p.node_name.as_str(), p.mode, p.reason)).collect();
    assert_eq!(plan, [("Hook", Mode::Simulate, Reason::Trigger), ("Shape", Mode::Execute, Reason::PureLogic), ("Has email", Mode::Execute, Reason::PureLogic), ("Notify", Mode::Simulate, Reason::HttpWrite)]);
    assert!(wi.build.simulation_fixtures.contains_key("Notify") && !wi.build.simulation_fixtures.contains_key("Hook"));
    // Another thread does not see it.
    assert!(inst.get_work_item(&ThreadId("t-other".into()), "wi-plan").await.unwrap().is_none());
    // A work item belongs to one workflow.
    let other = inst.build_workflow(&alice, BuildRequest { source: signup("https://example.com/x"), ..BuildRequest::default() }).await.unwrap();
    let e = inst
        .record_build(&alice, &thread, BuildRecord { work_item_id: "wi-plan".into(), workflow_id: other.workflow_id.unwrap(), version_id: other.version_id.unwrap(), ..BuildRecord::default() })
        .await
        .unwrap_err();
    assert!(e.to_string().contains("belongs to workflow"), "{e}");
}

#[tokio::test]
async fn concurrent_verifications_take_exactly_the_attempts_there_are() {
    let (_env, inst, alice) = setup().await;
    let thread = ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()));
    let (wid, _) = built(&inst, &alice, &thread, "wi-race").await;
    let req = VerifyRequest { work_item_id: "wi-race".into(), workflow_id: wid.clone(), input_data: Some(json!({"email": "a@b.c"}).as_object().unwrap().clone()), ..VerifyRequest::default() };
    let tries = (MAX_ATTEMPTS + 4) as usize;
    let results = futures::future::join_all((0..tries).map(|_| inst.start_verification(&alice, &thread, &req))).await;
    let ok: Vec<u32> = results.iter().filter_map(|r| r.as_ref().ok().map(|s| s.attempt)).collect();
    let refused: Vec<String> = results.iter().filter_map(|r| r.as_ref().err().map(|e| e.to_string())).collect();
    let mut attempts = ok.clone();
    attempts.sort();
    assert_eq!(attempts, (1..=MAX_ATTEMPTS).collect::<Vec<_>>(), "every attempt number taken exactly once: {refused:?}");
    assert_eq!(refused.len(), tries - MAX_ATTEMPTS as usize);
    assert!(refused.iter().all(|e| e.contains(&format!("all {MAX_ATTEMPTS} verification attempts"))), "{refused:?}");
    let wi = inst.get_work_item(&thread, "wi-race").await.unwrap().unwrap();
    assert_eq!(wi.attempts, MAX_ATTEMPTS);
    let v = wi.verification.unwrap();
    assert!(v.attempted && v.claim == Claim::Unverified && v.evidence.pending_triggers == ["Hook"], "{v:?}");
    // The saved executions carry the simulation, and the workflow's own pins are untouched.
    let sim = inst.data.executions.get_data(&results.iter().find_map(|r| r.as_ref().ok()).unwrap().started.execution_id, &Default::default()).await.unwrap().unwrap();
    assert_eq!(sim.pointer("/resultData/simulation/simulatedNodes"), Some(&json!(["Notify"])));
    assert!(sim.pointer("/resultData/pinData/Notify").is_some());
    let saved = inst.workflow(&alice, &wid).await.unwrap();
    assert!(saved.body.pin_data.is_null() || saved.body.pin_data == json!({}), "pins never saved to the workflow: {}", saved.body.pin_data);

    // A new build starts a fresh budget.
    let draft = inst.workflow(&alice, &wid).await.unwrap();
    inst.record_build(&alice, &thread, BuildRecord { work_item_id: "wi-race".into(), workflow_id: wid.clone(), version_id: draft.meta.version_id, ..BuildRecord::default() }).await.unwrap();
    assert_eq!(inst.start_verification(&alice, &thread, &req).await.unwrap().attempt, 1);
    // Someone else's thread cannot touch it: the workflow is not theirs.
    let bob = Caller::new(UserId(format!("bob-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&bob).await.unwrap();
    assert!(inst.start_verification(&bob, &thread, &req).await.unwrap_err().to_string().contains("not found"));
}

#[tokio::test]
async fn publishing_an_unverified_build_needs_an_acknowledgement() {
    let (_env, inst, alice) = setup().await;
    let thread = ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()));
    let (wid, _) = built(&inst, &alice, &thread, "wi-pub").await;
    let e = inst.check_publish(&thread, &wid, false).await.unwrap_err().to_string();
    assert!(e.contains("not verified") && e.contains("acknowledgeUnverified"), "{e}");
    let c = inst.check_publish(&thread, &wid, true).await.unwrap().unwrap();
    assert_eq!((c.claim, c.work_item_id.as_str()), (Claim::Unverified, "wi-pub"));
    assert!(c.status_text().contains("never verified"));
    // A workflow never built in this thread has no gate.
    assert!(inst.check_publish(&ThreadId("t-elsewhere".into()), &wid, false).await.unwrap().is_none());
}

#[tokio::test]
async fn credentials_are_applied_to_the_built_nodes_all_or_nothing() {
    let (_env, inst, alice) = setup().await;
    let thread = ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()));
    let (wid, vid) = built(&inst, &alice, &thread, "wi-cred").await;
    let key = |name: &str| NewCredentialInput { name: name.into(), kind: "httpHeaderAuth".into(), data: json!({"name": "x-key", "value": "s3cret"}), description: None, project_id: None };
    let mine = inst.create_credential(&alice, key("Mine")).await.unwrap();
    let bob = Caller::new(UserId(format!("bob-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&bob).await.unwrap();
    let theirs = inst.create_credential(&bob, key("Bob's")).await.unwrap();

    // One refused credential refuses the whole mapping: nothing is saved.
    let both = json!({"Notify": {"httpHeaderAuth": mine.id}, "Shape": {"httpHeaderAuth": mine.id}});
    assert!(inst.apply_workflow_credentials(&alice, &thread, "wi-cred", both.as_object().unwrap()).await.unwrap_err().to_string().contains("does not take"));
    let stranger = json!({"httpHeaderAuth": theirs.id});
    assert!(inst.apply_workflow_credentials(&alice, &thread, "wi-cred", stranger.as_object().unwrap()).await.is_err());
    assert_eq!(inst.workflow(&alice, &wid).await.unwrap().meta.version_id, vid, "nothing was saved");

    let by_type = json!({"httpHeaderAuth": mine.id});
    let updated = inst.apply_workflow_credentials(&alice, &thread, "wi-cred", by_type.as_object().unwrap()).await.unwrap();
    assert_eq!(updated, ["Notify"]);
    let wf = inst.workflow(&alice, &wid).await.unwrap();
    let notify = wf.body.nodes.as_array().unwrap().iter().find(|n| n["name"] == "Notify").unwrap().clone();
    assert_eq!(notify.pointer("/credentials/httpHeaderAuth/id").and_then(Value::as_str), Some(mine.id.as_str()));
    // The work item follows the saved version, so verification and the publish gate read the build that is there.
    assert_eq!(inst.get_work_item(&thread, "wi-cred").await.unwrap().unwrap().build.version_id, wf.meta.version_id);
}

/// A verification run as the agent's tool makes it: start (reserve, queue),
/// the executor runs it, finish (checks, the cumulative record).
async fn verify(inst: &Instance, caller: &Caller, thread: &ThreadId, req: &VerifyRequest) -> instance::verification::VerifyOutcome {
    let started = inst.start_verification(caller, thread, req).await.expect("verification starts");
    inst.executor.run_execution(&started.started.execution_id).await.expect("the executor runs it");
    inst.finish_verification(caller, thread, &started, false).await.expect("verification finishes")
}

/// An instance whose nodes may call the local services of these tests.
async fn local_setup() -> (TestEnv, Instance, Caller) {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    let mut inst = Instance::new(&env.clients, &config).await.expect("instance");
    // Live runs (`run_and_wait`) run here; verification runs are queued and run by `verify`.
    inst.run_in_process();
    let alice = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&alice).await.unwrap();
    (env, inst, alice)
}

/// A service that counts requests and answers `{"ok": true, "real": true}`.
async fn counting_service() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let app = axum::Router::new().fallback(move || {
        let h = h.clone();
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            axum::Json(json!({"ok": true, "real": true}))
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (format!("http://{addr}"), hits)
}

fn thread() -> ThreadId {
    ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()))
}

async fn build(inst: &Instance, caller: &Caller, source: Value) -> (String, String) {
    let out = inst.build_workflow(caller, BuildRequest { source: source.to_string(), ..BuildRequest::default() }).await.unwrap();
    assert!(out.success, "{out:?}");
    (out.workflow_id.unwrap(), out.version_id.unwrap())
}

fn input(v: Value) -> Option<serde_json::Map<String, Value>> {
    v.as_object().cloned()
}

/// With a plan, a verification run that parks in `waiting` is a failure: the
/// execution is stopped (it never waits for a call nobody will make), the
/// attempt is spent and the claim is `failed`. A plan is stored with the
/// thread and outlives the classifier that made it; here it is one that did
/// not simulate the Wait node.
#[tokio::test]
async fn a_waiting_verification_run_is_a_failure() {
    let (_env, inst, alice) = setup().await;
    let thread = thread();
    let (wid, vid) = build(
        &inst,
        &alice,
        json!({"name": "Approval", "nodes": [
            {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": "approval-wait"}},
            {"name": "Ask", "type": "n8n-nodes-base.wait", "typeVersion": 1.1, "position": [200, 0], "parameters": {"resume": "webhook", "httpMethod": "POST"}},
            {"name": "Done", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [400, 0], "parameters": {}}
        ], "connections": {
            "Hook": {"main": [[{"node": "Ask", "type": "main", "index": 0}]]},
            "Ask": {"main": [[{"node": "Done", "type": "main", "index": 0}]]}
        }}),
    )
    .await;
    inst.record_build(&alice, &thread, BuildRecord { work_item_id: "wi-wait".into(), workflow_id: wid.clone(), version_id: vid, ..BuildRecord::default() }).await.unwrap();
    let stored = inst.data.work_items.get::<instance::verification::WorkItem>(&thread, "wi-wait").await.unwrap().unwrap();
    let mut doc = stored.doc;
    let ask = doc.build.node_simulation_plan.iter_mut().find(|p| p.node_name == "Ask").unwrap();
    assert_eq!((ask.mode, ask.reason), (Mode::Simulate, Reason::Wait), "today's classifier simulates it");
    (ask.mode, ask.reason) = (Mode::Execute, Reason::PureLogic);
    inst.data.work_items.put(&thread, "wi-wait", &wid, &doc, Some(stored.rev)).await.unwrap();

    let out = verify(&inst, &alice, &thread, &VerifyRequest { work_item_id: "wi-wait".into(), workflow_id: wid.clone(), input_data: input(json!({"a": 1})), ..VerifyRequest::default() }).await;
    assert!(!out.success, "{out:?}");
    assert_eq!(out.status, "waiting");
    assert!(out.error.as_deref().unwrap().contains("parked as waiting") && out.error.as_deref().unwrap().contains("not simulated"), "{:?}", out.error);
    assert_eq!((out.verification.claim, out.verification.success, out.attempt), (Claim::Failed, false, 1));
    assert!(out.verification.evidence.pending_triggers == ["Hook"], "no pass recorded: {:?}", out.verification);
    let exec = inst.data.executions.get(&out.execution_id).await.unwrap().unwrap();
    assert!(exec.status.is_finished(), "the parked run was stopped, not left waiting: {:?}", exec.status);
    let wi = inst.get_work_item(&thread, "wi-wait").await.unwrap().unwrap();
    assert_eq!((wi.attempts, wi.verification.unwrap().claim), (1, Claim::Failed));
}

/// Passes of different triggers finishing at the same moment all land: the
/// cumulative verification is written by conditional puts on the work item,
/// so no pass overwrites another and the claim comes out `verified`.
#[tokio::test]
async fn concurrent_passes_of_several_triggers_all_count() {
    let (_env, inst, alice) = setup().await;
    let thread = thread();
    let hooks = ["A", "B", "C", "D"];
    let mut nodes: Vec<Value> = hooks
        .iter()
        .map(|h| json!({"name": h, "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"httpMethod": "POST", "path": format!("multi-{h}")}}))
        .collect();
    nodes.push(json!({"name": "Shared", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [200, 0], "parameters": {}}));
    let connections: serde_json::Map<String, Value> = hooks.iter().map(|h| ((*h).to_owned(), json!({"main": [[{"node": "Shared", "type": "main", "index": 0}]]}))).collect();
    let (wid, vid) = build(&inst, &alice, json!({"name": "Four doors", "nodes": nodes, "connections": connections})).await;
    inst.record_build(&alice, &thread, BuildRecord { work_item_id: "wi-multi".into(), workflow_id: wid.clone(), version_id: vid, ..BuildRecord::default() }).await.unwrap();

    let reqs: Vec<VerifyRequest> = hooks
        .iter()
        .map(|h| VerifyRequest { work_item_id: "wi-multi".into(), workflow_id: wid.clone(), trigger_node_name: Some((*h).to_owned()), input_data: input(json!({"from": h})), ..VerifyRequest::default() })
        .collect();
    // Start all, run all, then finish all at once: the settles race on one item.
    let started = futures::future::join_all(reqs.iter().map(|r| inst.start_verification(&alice, &thread, r))).await;
    let started: Vec<_> = started.into_iter().map(|s| s.expect("an attempt each")).collect();
    let mut attempts: Vec<u32> = started.iter().map(|s| s.attempt).collect();
    attempts.sort();
    assert_eq!(attempts, [1, 2, 3, 4]);
    for s in &started {
        inst.executor.run_execution(&s.started.execution_id).await.unwrap();
    }
    let outs = futures::future::join_all(started.iter().map(|s| inst.finish_verification(&alice, &thread, s, false))).await;
    assert!(outs.iter().all(|o| o.as_ref().is_ok_and(|o| o.success)), "{outs:?}");
    let wi = inst.get_work_item(&thread, "wi-multi").await.unwrap().unwrap();
    assert_eq!(wi.passes.keys().map(String::as_str).collect::<Vec<_>>(), hooks, "every trigger's pass was kept");
    let v = wi.verification.unwrap();
    assert_eq!((v.claim, v.evidence.pending_triggers.len(), v.evidence.uncovered_nodes.len()), (Claim::Verified, 0, 0), "{v:?}");
    assert!(v.verified_at.is_some());
    // A retry of one trigger clears its pass first: the claim drops until it passes again.
    let retry = inst.start_verification(&alice, &thread, &reqs[0]).await.unwrap();
    let mid = inst.get_work_item(&thread, "wi-multi").await.unwrap().unwrap();
    assert!(!mid.passes.contains_key("A"));
    assert_eq!(mid.verification.unwrap().claim, Claim::Partial);
    inst.executor.run_execution(&retry.started.execution_id).await.unwrap();
    let done = inst.finish_verification(&alice, &thread, &retry, false).await.unwrap();
    assert_eq!((done.verification.claim, done.attempt, done.attempts_left), (Claim::Verified, 5, MAX_ATTEMPTS - 5));
}

/// Fixtures come from the node's output shape — the catalog, the model's
/// submit-time pass, or an earlier real execution — never from a live call:
/// the service counts every request.
#[tokio::test]
async fn fixtures_come_from_the_model_or_an_earlier_real_run_and_nothing_is_called() {
    use std::sync::atomic::Ordering;
    let (_env, inst, alice) = local_setup().await;
    let (base, hits) = counting_service().await;
    let thread = thread();
    let source = json!({"name": "Poster", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Lookup", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {"method": "GET", "url": format!("{base}/lookup"), "options": {}}},
        {"name": "Post", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [400, 0], "parameters": {"method": "POST", "url": format!("{base}/post"), "options": {}}}
    ], "connections": {
        "Start": {"main": [[{"node": "Lookup", "type": "main", "index": 0}]]},
        "Lookup": {"main": [[{"node": "Post", "type": "main", "index": 0}]]}
    }});
    let (wid, vid) = build(&inst, &alice, source).await;

    // The model's pass: it judges the GET to have side effects (it may only
    // add simulations: what it says of Post, already simulated, changes
    // nothing) and gives Post's output.
    let rec = |vid: &str| BuildRecord {
        work_item_id: "wi-fix".into(),
        workflow_id: wid.clone(),
        version_id: vid.to_owned(),
        simulate: [("Lookup".to_owned(), "the lookup endpoint counts visits".to_owned()), ("Post".to_owned(), "posts".to_owned())].into(),
        fixtures: [("Post".to_owned(), vec![json!({"id": "m-1", "fromModel": true})])].into(),
    };
    let wi = inst.record_build(&alice, &thread, rec(&vid)).await.unwrap();
    let line = |n: &str| wi.build.node_simulation_plan.iter().find(|p| p.node_name == n).unwrap().clone();
    assert_eq!((line("Lookup").mode, line("Lookup").reason, line("Lookup").note.as_deref()), (Mode::Simulate, Reason::Model, Some("the lookup endpoint counts visits")));
    assert_eq!((line("Post").reason, line("Post").note.as_deref()), (Reason::HttpWrite, None), "the deterministic reason stays");
    assert_eq!(wi.build.simulation_fixtures["Post"].source, instance::verification::simulation::FixtureSource::Model);
    assert_eq!(wi.build.simulation_fixtures["Lookup"].source, instance::verification::simulation::FixtureSource::Catalog);
    let out = verify(&inst, &alice, &thread, &VerifyRequest { work_item_id: "wi-fix".into(), workflow_id: wid.clone(), ..VerifyRequest::default() }).await;
    assert!(out.success, "{out:?}");
    assert_eq!(out.simulated_nodes, ["Lookup", "Post"]);
    assert_eq!(out.verification.claim, Claim::Verified);
    let doc = inst.data.executions.get_data(&out.execution_id, &Default::default()).await.unwrap().unwrap();
    assert_eq!(doc.pointer("/resultData/runData/Post/0/data/main/0/0/json"), Some(&json!({"id": "m-1", "fromModel": true})), "the model's fixture was the output");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "verification called nothing");

    // A real run (the person's live test) reaches the service; the next
    // build takes its outputs as fixtures, and verification still calls nothing.
    let live = inst
        .run_and_wait(&alice, &instance::executions::RunRequest { workflow_id: wid.clone(), pins: instance::executions::RunPins::Nothing, ..Default::default() }, instance::runner::WAIT)
        .await
        .unwrap();
    assert_eq!(live.status, executions::ExecutionStatus::Success, "{live:?}");
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    let wi = inst.record_build(&alice, &thread, BuildRecord { work_item_id: "wi-fix".into(), workflow_id: wid.clone(), version_id: vid.clone(), simulate: [("Lookup".to_owned(), "counts visits".to_owned())].into(), ..BuildRecord::default() }).await.unwrap();
    for n in ["Lookup", "Post"] {
        let f = &wi.build.simulation_fixtures[n];
        assert_eq!((f.source, f.execution_id.as_deref(), f.items.clone()), (instance::verification::simulation::FixtureSource::Execution, Some(live.execution_id.as_str()), vec![json!({"ok": true, "real": true})]), "{n}");
    }
    let out = verify(&inst, &alice, &thread, &VerifyRequest { work_item_id: "wi-fix".into(), workflow_id: wid.clone(), ..VerifyRequest::default() }).await;
    assert!(out.success);
    assert_eq!(hits.load(Ordering::SeqCst), 2, "fixtures are data, not calls");
    // A verification run is never a fixture source: the second rebuild still names the live run.
    let wi = inst.record_build(&alice, &thread, rec(&vid)).await.unwrap();
    assert_eq!(wi.build.simulation_fixtures["Lookup"].execution_id.as_deref(), Some(live.execution_id.as_str()));
}

/// An AI Agent whose model takes a credential: the model cannot be pinned,
/// so the agent is simulated and the model server is never called; the
/// model sub-node needs no coverage of its own, and takes the credential
/// `apply-workflow-credentials` gives by type.
#[tokio::test]
async fn an_ai_root_is_simulated_for_its_model_and_its_sub_nodes_are_not_coverage() {
    use std::sync::atomic::Ordering;
    let (_env, inst, alice) = local_setup().await;
    let (base, hits) = counting_service().await;
    let thread = thread();
    let key = inst
        .create_credential(&alice, NewCredentialInput { name: "Local model".into(), kind: "openAiApi".into(), data: json!({"apiKey": "sk-local", "url": base}), description: None, project_id: None })
        .await
        .unwrap();
    let (wid, vid) = build(
        &inst,
        &alice,
        json!({"name": "Helper", "nodes": [
            {"name": "Chat", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "typeVersion": 1.1, "position": [0, 0], "parameters": {}},
            {"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 0], "parameters": {"options": {}}},
            {"name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [200, 200], "parameters": {"model": "gpt-4o-mini", "options": {}}},
            {"name": "Reply", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [400, 0], "parameters": {"assignments": {"assignments": [{"id": "1", "name": "answer", "value": "={{ $json.output }}", "type": "string"}]}}},
            {"name": "Note", "type": "n8n-nodes-base.stickyNote", "typeVersion": 1, "position": [0, 300], "parameters": {"content": "Answers questions"}}
        ], "connections": {
            "Chat": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Agent": {"main": [[{"node": "Reply", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
        }}),
    )
    .await;
    let wi = inst.record_build(&alice, &thread, BuildRecord { work_item_id: "wi-ai".into(), workflow_id: wid.clone(), version_id: vid, ..BuildRecord::default() }).await.unwrap();
    assert_eq!(wi.build.planned_nodes, ["Chat", "Agent", "Reply"]);
    assert_eq!(wi.build.sub_nodes, ["Model"]);
    let agent = wi.build.node_simulation_plan.iter().find(|p| p.node_name == "Agent").unwrap();
    assert_eq!((agent.mode, agent.reason), (Mode::Simulate, Reason::SubNode));
    // The credential goes onto the sub-node by type.
    let by_type = json!({"openAiApi": key.id});
    assert_eq!(inst.apply_workflow_credentials(&alice, &thread, "wi-ai", by_type.as_object().unwrap()).await.unwrap(), ["Model"]);
    let out = verify(&inst, &alice, &thread, &VerifyRequest { work_item_id: "wi-ai".into(), workflow_id: wid.clone(), input_data: input(json!({"chatInput": "hi"})), ..VerifyRequest::default() }).await;
    assert!(out.success, "{out:?}");
    assert_eq!(out.simulated_nodes, ["Agent"]);
    assert_eq!(out.verification.claim, Claim::Verified, "{:?}", out.verification);
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the model server was never called");
    let doc = inst.data.executions.get_data(&out.execution_id, &Default::default()).await.unwrap().unwrap();
    assert!(doc.pointer("/resultData/runData/Reply/0/data/main/0/0/json/answer").and_then(Value::as_str).is_some_and(|a| a.starts_with("Simulated")), "{doc}");
}

/// When the instance does not share execution data with the assistant, the
/// simulated nodes' parameters are not replayed: a skipped check with its
/// reason, no value, and the note says the fields stay unverified.
#[tokio::test]
async fn without_shared_values_the_parameter_checks_are_skipped_with_their_reason() {
    let (_env, mut inst, alice) = setup().await;
    inst.values = instance::executions::view::Values::Withheld;
    let thread = thread();
    let (wid, vid) = build(
        &inst,
        &alice,
        json!({"name": "Poster", "nodes": [
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"name": "Post", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {"method": "POST", "url": "https://example.com/p", "sendBody": true, "bodyParameters": {"parameters": [{"name": "who", "value": "={{ $json.nobody }}"}]}, "options": {}}}
        ], "connections": {"Start": {"main": [[{"node": "Post", "type": "main", "index": 0}]]}}}),
    )
    .await;
    inst.record_build(&alice, &thread, BuildRecord { work_item_id: "wi-quiet".into(), workflow_id: wid.clone(), version_id: vid, ..BuildRecord::default() }).await.unwrap();
    let out = verify(&inst, &alice, &thread, &VerifyRequest { work_item_id: "wi-quiet".into(), workflow_id: wid, ..VerifyRequest::default() }).await;
    assert!(out.success, "{out:?}");
    assert!(out.resolved_parameter_warnings.is_empty(), "no values replayed: {:?}", out.resolved_parameter_warnings);
    assert_eq!(out.skipped_parameter_checks.len(), 1);
    let skip = serde_json::to_value(&out.skipped_parameter_checks[0]).unwrap();
    assert_eq!((skip["nodeName"].as_str(), skip["reason"].as_str()), (Some("Post"), Some("parameter-values-disabled")));
    assert_eq!(out.skipped_parameter_check_count, Some(1));
    assert!(out.simulation_note.as_deref().unwrap().contains("remain unverified"), "{:?}", out.simulation_note);
    assert!(!serde_json::to_string(&out).unwrap().contains("nobody"), "no parameter value or expression shown");
}
