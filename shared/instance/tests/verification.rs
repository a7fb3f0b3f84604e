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
    let inst = Instance::new(&env.clients, &env.config).await.expect("instance");
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
