//! Workflow setup against moto: what a workflow still needs (credential
//! slots, required parameters, placeholders) in run order, one service
//! credential applied without asking and a generic one never, the person's
//! answer saved in one go, skips remembered per thread and reopened.

use instance::credentials::NewCredentialInput;
use instance::setup::{SetupChoices, SetupOptions};
use instance::{Caller, Instance, InstanceError};
use protocol::ids::ThreadId;
use protocol::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::testing::TestEnv;

fn alice() -> Caller {
    Caller::new(UserId("alice".into()))
}

async fn instance() -> Instance {
    let env = TestEnv::new().await;
    let mut inst = Instance::new(&env.clients, &env.config).await.unwrap();
    // connection tests run here (the queue path: tests/credentials.rs)
    inst.run_in_process();
    inst
}

async fn credential(inst: &Instance, caller: &Caller, name: &str, kind: &str, data: Value) -> String {
    let input = NewCredentialInput { name: name.into(), kind: kind.into(), data, description: None, project_id: None };
    inst.create_credential(caller, input).await.unwrap().id
}

async fn workflow(inst: &Instance, caller: &Caller, nodes: Value, connections: Value) -> String {
    let project_id = inst.write_project(caller, "workflow:create").await.unwrap();
    let new = NewWorkflow {
        name: "Feed digest".into(),
        description: None,
        project_id,
        folder_id: None,
        body: WorkflowBody { nodes, connections, settings: json!({}), pin_data: json!({}), meta: json!({}) },
        available_in_mcp: false,
    };
    inst.data.workflows.create(new, &caller.user).await.unwrap().meta.id
}

fn digest_nodes() -> (Value, Value) {
    let nodes = json!([
        {"id": "n5", "name": "Feed", "type": "n8n-nodes-base.rssFeedRead", "typeVersion": 1.2, "position": [800, 0],
         "parameters": {"url": "<__PLACEHOLDER_VALUE__Feed URL__>"}},
        {"id": "n1", "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"id": "n2", "name": "Call API", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0],
         "parameters": {"url": "https://api.example.com/items", "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth"}},
        {"id": "n3", "name": "Code", "type": "n8n-nodes-base.totp", "typeVersion": 1, "position": [400, 0], "parameters": {}},
        {"id": "n4", "name": "Split", "type": "n8n-nodes-base.splitOut", "typeVersion": 1, "position": [600, 0], "parameters": {"fieldToSplitOut": ""}},
        {"id": "n6", "name": "Off", "type": "n8n-nodes-base.totp", "typeVersion": 1, "position": [600, 200], "parameters": {}, "disabled": true}
    ]);
    let connections = json!({
        "Start": {"main": [[{"node": "Call API", "type": "main", "index": 0}]]},
        "Call API": {"main": [[{"node": "Code", "type": "main", "index": 0}]]},
        "Code": {"main": [[{"node": "Split", "type": "main", "index": 0}]]},
        "Split": {"main": [[{"node": "Feed", "type": "main", "index": 0}]]}
    });
    (nodes, connections)
}

#[tokio::test]
async fn a_workflow_is_analysed_in_run_order_and_set_up_in_one_save() {
    let inst = instance().await;
    let me = alice();
    let header = credential(&inst, &me, "Items key", "httpHeaderAuth", json!({"name": "X-Key", "value": "planted-7f3a"})).await;
    let totp = credential(&inst, &me, "Authenticator", "totpApi", json!({"secret": "BVDRSBXQB2ZEL5HE", "label": "me"})).await;
    let (nodes, conns) = digest_nodes();
    let id = workflow(&inst, &me, nodes, conns).await;
    let thread = ThreadId("t-setup".into());
    let opts = SetupOptions { thread: Some(thread.clone()), test_credentials: true, ..SetupOptions::default() };

    let a = inst.analyze_setup(&me, &id, &opts).await.unwrap();
    let names: Vec<&str> = a.requests.iter().map(|r| r.node.name.as_str()).collect();
    assert_eq!(names, ["Call API", "Code", "Split", "Feed"], "run order, no disabled node, no trigger-only card");
    let call = &a.requests[0];
    assert_eq!(call.credential_type.as_deref(), Some("httpHeaderAuth"));
    assert_eq!(call.existing_credentials.len(), 1);
    assert!(!call.is_auto_applied && call.credential_needs_action, "a generic type always needs the person: {call:?}");
    assert!(call.node.credentials.is_none());
    let code = &a.requests[1];
    assert!(code.is_auto_applied, "the one service credential is preselected");
    assert_eq!(code.node.credentials.as_ref().unwrap()["totpApi"]["id"], json!(totp));
    assert!(code.credential_test_result.is_none(), "TOTP keys have no connection test");
    assert!(a.requests[2].parameter_issues["fieldToSplitOut"][0].contains("required"));
    assert_eq!(a.requests[2].editable_parameters[0].name, "fieldToSplitOut");
    assert!(a.requests[3].parameter_issues["url"][0].contains("Feed URL"));
    let card = serde_json::to_string(&a.requests).unwrap();
    assert!(!card.contains("planted-7f3a"), "no secret on the card");

    // The person picks the header key, accepts the TOTP key, fills the field, skips the feed.
    let choices = SetupChoices {
        node_credentials: BTreeMap::from([
            ("Call API".into(), BTreeMap::from([("httpHeaderAuth".into(), header.clone())])),
            ("Code".into(), BTreeMap::from([("totpApi".into(), totp.clone())])),
        ]),
        node_parameters: BTreeMap::from([("Split".into(), json!({"fieldToSplitOut": "items"}).as_object().unwrap().clone())]),
        skipped_nodes: vec!["Feed".into()],
    };
    let r = inst.apply_setup(&me, &id, &opts, &choices).await.unwrap();
    assert!(r.success && r.failed_nodes.is_empty(), "{r:?}");
    let done: Vec<(&str, Option<&str>)> = r.completed_nodes.iter().map(|c| (c.node_name.as_str(), c.credential_type.as_deref())).collect();
    assert_eq!(done, [("Call API", Some("httpHeaderAuth")), ("Code", Some("totpApi")), ("Split", None)]);
    assert!(r.nodes_still_needing_setup.is_empty(), "{r:?}");
    assert_eq!(r.skipped_by_user.iter().map(|s| s.node_name.as_str()).collect::<Vec<_>>(), ["Feed"]);

    let saved = inst.data.workflows.get(&id).await.unwrap().unwrap();
    let node = |n: &str| saved.body.nodes.as_array().unwrap().iter().find(|x| x["name"] == n).unwrap().clone();
    assert_eq!(node("Call API")["credentials"]["httpHeaderAuth"], json!({"id": header, "name": "Items key"}));
    assert_eq!(node("Code")["credentials"]["totpApi"]["id"], json!(totp));
    assert_eq!(node("Split")["parameters"]["fieldToSplitOut"], "items");

    // The skip holds in this thread until reopened; another thread asks again.
    assert!(inst.analyze_setup(&me, &id, &opts).await.unwrap().requests.is_empty());
    let other = SetupOptions { thread: Some(ThreadId("t-other".into())), ..SetupOptions::default() };
    assert_eq!(inst.analyze_setup(&me, &id, &other).await.unwrap().requests.len(), 1);
    let reopen = SetupOptions { reopen_skipped: vec!["Feed".into()], ..opts.clone() };
    let a = inst.analyze_setup(&me, &id, &reopen).await.unwrap();
    assert_eq!(a.requests.iter().map(|r| r.node.name.as_str()).collect::<Vec<_>>(), ["Feed"]);
    assert!(a.skipped.is_empty());

    // A new credential instead of the bound one: the slot opens unselected.
    let fresh = SetupOptions { prefer_new: vec!["totpApi".into()], ..opts.clone() };
    let a = inst.analyze_setup(&me, &id, &fresh).await.unwrap();
    let code = a.requests.iter().find(|r| r.node.name == "Code").unwrap();
    assert!(code.prefer_new_credential && !code.is_auto_applied && code.node.credentials.is_none(), "{code:?}");
}

#[tokio::test]
async fn bad_choices_fail_per_node_and_strangers_see_nothing() {
    let inst = instance().await;
    let me = alice();
    let bob = Caller::new(UserId("bob".into()));
    let bobs = credential(&inst, &bob, "Bob's key", "httpHeaderAuth", json!({"name": "X-Key", "value": "bobs-secret"})).await;
    let totp = credential(&inst, &me, "Authenticator", "totpApi", json!({"secret": "BVDRSBXQB2ZEL5HE", "label": "me"})).await;
    let (nodes, conns) = digest_nodes();
    let id = workflow(&inst, &me, nodes, conns).await;
    let opts = SetupOptions::default();
    let choices = SetupChoices {
        node_credentials: BTreeMap::from([
            ("Call API".into(), BTreeMap::from([("httpHeaderAuth".into(), bobs)])),
            ("Code".into(), BTreeMap::from([("httpHeaderAuth".into(), totp.clone())])),
            ("Nope".into(), BTreeMap::from([("totpApi".into(), totp.clone())])),
        ]),
        ..SetupChoices::default()
    };
    let r = inst.apply_setup(&me, &id, &opts, &choices).await.unwrap();
    assert!(!r.success && r.completed_nodes.is_empty(), "{r:?}");
    let failed: Vec<(&str, &str)> = r.failed_nodes.iter().map(|f| (f.node_name.as_str(), f.error.as_str())).collect();
    assert_eq!(failed.len(), 3, "{failed:?}");
    assert!(failed.iter().any(|(n, e)| *n == "Call API" && e.contains("not found")), "another user's credential: {failed:?}");
    assert!(failed.iter().any(|(n, e)| *n == "Code" && e.contains("is of type totpApi")), "{failed:?}");
    assert!(failed.iter().any(|(n, e)| *n == "Nope" && e.contains("not found in the workflow")), "{failed:?}");
    assert!(!r.nodes_still_needing_setup.is_empty());
    // Nothing was saved.
    let saved = inst.data.workflows.get(&id).await.unwrap().unwrap();
    assert!(saved.body.nodes.as_array().unwrap().iter().all(|n| n.get("credentials").is_none()));

    assert!(matches!(inst.analyze_setup(&bob, &id, &opts).await, Err(InstanceError::NotFound(_))));
    assert!(matches!(inst.apply_setup(&bob, &id, &opts, &SetupChoices::default()).await, Err(InstanceError::NotFound(_))));

    // Without the person (admin policy): only what needs no choice is applied.
    let r = inst.auto_setup(&me, &id, &opts).await.unwrap();
    assert_eq!(r.completed_nodes.iter().map(|c| c.node_name.as_str()).collect::<Vec<_>>(), ["Code"]);
    let left: Vec<&str> = r.nodes_still_needing_setup.iter().map(|p| p.node_name.as_str()).collect();
    assert_eq!(left, ["Call API", "Split", "Feed"]);
}

#[tokio::test]
async fn setup_covers_the_nodes_the_last_build_changed_unless_all_are_asked_for() {
    use store::data::workspace::SourceBinding;
    use store::data::workflows::WorkflowUpdate;
    let inst = instance().await;
    let me = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    let (nodes, conns) = digest_nodes();
    let id = workflow(&inst, &me, nodes.clone(), conns.clone()).await;
    let v1 = inst.data.workflows.get(&id).await.unwrap().unwrap();
    // The build: only "Code" changes (its canvas position moving is no change).
    let mut changed = nodes.clone();
    changed[3]["parameters"] = json!({"digits": 8});
    changed[1]["position"] = json!([10, 10]);
    let body = WorkflowBody { nodes: changed, ..v1.body.clone() };
    let v2 = inst.data.workflows.update(&id, &v1.meta.version_id, WorkflowUpdate { body: Some(body), ..WorkflowUpdate::default() }, &me.user).await.unwrap();
    let thread = ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()));
    let binding = |version_id: &str| SourceBinding {
        path: "digest.workflow.ts".into(),
        workflow_id: id.clone(),
        source_hash: "h".into(),
        version_id: version_id.to_owned(),
        work_item_id: None,
        is_supporting_workflow: false,
        built_at: store::data::db::now_iso(),
    };
    let names = |a: &instance::setup::Analysis| a.requests.iter().map(|r| r.node.name.clone()).collect::<Vec<_>>();
    let opts = SetupOptions { thread: Some(thread.clone()), ..SetupOptions::default() };
    assert_eq!(names(&inst.analyze_setup(&me, &id, &opts).await.unwrap()), ["Call API", "Code", "Split", "Feed"], "no build in this thread: every node");

    inst.data.workspace.record_build(&thread, &binding(&v2.meta.version_id), true).await.unwrap();
    assert_eq!(inst.last_build_changes(&thread, &id).await.unwrap().map(|c| c.into_iter().collect::<Vec<_>>()), Some(vec!["Code".to_owned()]));
    assert_eq!(names(&inst.analyze_setup(&me, &id, &opts).await.unwrap()), ["Code"], "only what the last build changed");
    let all = SetupOptions { include_all_nodes: true, ..opts.clone() };
    assert_eq!(names(&inst.analyze_setup(&me, &id, &all).await.unwrap()), ["Call API", "Code", "Split", "Feed"], "includeAllNodes");

    // A build that created the workflow changed every node.
    let other = ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple()));
    inst.data.workspace.record_build(&other, &binding(&v1.meta.version_id), true).await.unwrap();
    let first = SetupOptions { thread: Some(other), ..SetupOptions::default() };
    assert_eq!(names(&inst.analyze_setup(&me, &id, &first).await.unwrap()), ["Call API", "Code", "Split", "Feed"]);
}
