//! The workflow operations against moto: build-workflow's create / save /
//! remediation / folder / edit-rule paths, the large-workflow summary,
//! canvas validation, restore and publish state, and strangers.

use instance::builder::BuildRequest;
use instance::validate::Category;
use instance::workflows::{ListQuery, WorkflowView};
use instance::{Caller, Instance, InstanceError};
use protocol::UserId;
use serde_json::{json, Value};
use store::data::workflows::{FolderSelector, LiveState, NewWorkflow, WorkflowBody};
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

const TRIAGE: &str = r#"
const hook = trigger({ type: 'n8n-nodes-base.webhook', version: 2, config: { name: 'Webhook', parameters: { httpMethod: 'POST', path: 'orders' } } });
const check = ifElse({ config: { name: 'Is big', parameters: { conditions: { combinator: 'and',
  conditions: [{ leftValue: expr('{{ $json.body.total }}'), rightValue: LIMIT, operator: { type: 'number', operation: 'gt' } }] } } } });
const big = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Big', parameters: { assignments: { assignments: [{ name: 'size', value: 'big', type: 'string' }] } } } });
export default workflow('triage', 'Order triage').add(hook).to(check.onTrue(big));
"#;

fn triage(limit: u32) -> String {
    TRIAGE.replace("LIMIT", &limit.to_string())
}

fn build(source: String) -> BuildRequest {
    BuildRequest { source, ..BuildRequest::default() }
}

fn bound(source: String, id: &str) -> BuildRequest {
    BuildRequest { source, bound_workflow_id: Some(id.to_owned()), ..BuildRequest::default() }
}

#[tokio::test]
async fn a_file_builds_into_one_workflow_version_after_version() {
    let (_env, inst, alice) = setup().await;
    let first = inst.build_workflow(&alice, build(triage(100))).await.unwrap();
    assert!(first.success && first.created, "{first:?}");
    let id = first.workflow_id.clone().unwrap();
    assert_eq!(first.workflow_name.as_deref(), Some("Order triage"));
    assert_eq!(first.source_hash, instance::builder::source_hash(&triage(100)));
    let hook_before = inst.workflow(&alice, &id).await.unwrap().body.nodes[0]["webhookId"].clone();
    assert!(hook_before.is_string(), "webhook ids are filled in");

    let second = inst.build_workflow(&alice, bound(triage(250), &id)).await.unwrap();
    assert!(second.success && !second.created, "{second:?}");
    assert_eq!(second.workflow_id.as_deref(), Some(id.as_str()));
    assert_ne!(second.version_id, first.version_id);
    let wf = inst.workflow(&alice, &id).await.unwrap();
    assert_eq!(wf.body.nodes[0]["webhookId"], hook_before, "a rebuild keeps the webhook URL");
    assert_eq!(wf.body.nodes[1]["parameters"]["conditions"]["conditions"][0]["rightValue"], 250);
    assert_eq!(inst.list_versions(&alice, &id, None, 0).await.unwrap().len(), 2);
    assert_eq!(wf.body.meta["builderVariant"], "instance-ai");

    // Blocking findings save nothing.
    let broken = triage(1).replace("'n8n-nodes-base.set'", "'n8n-nodes-base.nope'");
    let failed = inst.build_workflow(&alice, bound(broken, &id)).await.unwrap();
    assert!(!failed.success);
    assert_eq!(failed.errors[0].code, "UNKNOWN_NODE_TYPE");
    assert_eq!(failed.errors[0].node_name.as_deref(), Some("Big"));
    assert_eq!(inst.list_versions(&alice, &id, None, 0).await.unwrap().len(), 2);
    let code = inst.build_workflow(&alice, build("export default 42;".into())).await.unwrap();
    assert_eq!((code.success, code.errors[0].code.as_str()), (false, "CODE_ERROR"));
}

#[tokio::test]
async fn a_vanished_bound_workflow_is_blocked_not_replaced() {
    let (_env, inst, alice) = setup().await;
    let id = inst.build_workflow(&alice, build(triage(100))).await.unwrap().workflow_id.unwrap();
    inst.archive_workflow(&alice, &id).await.unwrap();
    let archived = inst.build_workflow(&alice, bound(triage(5), &id)).await.unwrap();
    assert!(!archived.success);
    assert!(archived.errors[0].message.contains("archived"), "{:?}", archived.errors);

    inst.data.workflows.delete_permanently(&id).await.unwrap();
    let out = inst.build_workflow(&alice, bound(triage(5), &id)).await.unwrap();
    assert!(!out.success && out.workflow_id.is_none());
    let r = out.remediation.expect("remediation");
    assert_eq!((r.should_edit, r.reason), (false, "bound-workflow-missing"));
    let all = inst.list_workflows(&alice, ListQuery { limit: 50, status: store::data::workflows::StatusFilter::All, ..ListQuery::default() }).await.unwrap();
    assert_eq!(all.total, 0, "no replacement was created");
}

#[tokio::test]
async fn folder_paths_resolve_strictly_and_fail_before_saving() {
    let (_env, inst, alice) = setup().await;
    let project = inst.write_project(&alice, "workflow:create").await.unwrap();
    let req = |path: &str| BuildRequest { source: triage(1), folder_path: Some(path.into()), ..BuildRequest::default() };
    let none = inst.build_workflow(&alice, req("Clients/Acme")).await.unwrap();
    assert!(!none.success);
    assert!(none.errors[0].message.contains("The project has no folders"), "{:?}", none.errors);

    let clients = inst.data.folders.create(&project, "Clients", None).await.unwrap();
    let acme = inst.data.folders.create(&project, "Acme", Some(&clients.id)).await.unwrap();
    let partners = inst.data.folders.create(&project, "Partners", None).await.unwrap();
    let missing = inst.build_workflow(&alice, req("Clients/Globex")).await.unwrap();
    assert_eq!(missing.folder_resolution.as_ref().map(|r| r.candidates.len()), Some(3), "the real folders are listed");
    assert!(missing.errors[0].message.contains("Clients/Acme"), "{:?}", missing.errors);
    assert_eq!(inst.list_workflows(&alice, ListQuery { limit: 50, ..ListQuery::default() }).await.unwrap().total, 0, "nothing saved");

    let built = inst.build_workflow(&alice, req("acme")).await.unwrap();
    assert!(built.success, "{built:?}");
    assert_eq!(built.folder.as_ref().map(|f| f.path.as_str()), Some("Clients/Acme"));
    assert_eq!(inst.workflow(&alice, built.workflow_id.as_deref().unwrap()).await.unwrap().meta.parent_folder_id, Some(acme.id));

    inst.data.folders.create(&project, "Acme", Some(&partners.id)).await.unwrap();
    let ambiguous = inst.build_workflow(&alice, req("Acme")).await.unwrap();
    let r = ambiguous.folder_resolution.expect("resolution");
    assert_eq!(serde_json::to_value(r.reason).unwrap(), "ambiguous");
    assert_eq!(r.candidates.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["Clients/Acme", "Partners/Acme"]);
    // The full path still resolves, and listing by folder is strict too.
    assert!(inst.build_workflow(&alice, req("Partners/Acme")).await.unwrap().success);
    let listed = inst
        .list_workflows(&alice, ListQuery { limit: 50, folder: Some(FolderSelector::Path("Clients".into())), recursive: true, ..ListQuery::default() })
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(listed.workflows[0].folder.as_ref().unwrap().path, "Clients/Acme");
}

fn secret_workflow(token: &str, timeout: u64) -> Value {
    json!({"name": "Call API", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {
            "url": "https://api.example.com/v1", "sendHeaders": true,
            "headerParameters": {"parameters": [{"name": "Authorization", "value": token}]}, "options": {"timeout": timeout}}}
    ], "connections": {"Start": {"main": [[{"node": "Call", "type": "main", "index": 0}]]}}})
}

#[tokio::test]
async fn an_edit_is_not_blocked_by_a_secret_it_did_not_add() {
    let (_env, inst, alice) = setup().await;
    // Saved by hand with a literal token (the builder itself would refuse it).
    let wf = secret_workflow("Bearer sk-old", 1000);
    let project = inst.write_project(&alice, "workflow:create").await.unwrap();
    let body = WorkflowBody { nodes: wf["nodes"].clone(), connections: wf["connections"].clone(), settings: Value::Null, pin_data: Value::Null, meta: Value::Null };
    let saved = inst
        .data
        .workflows
        .create(NewWorkflow { name: "Call API".into(), description: None, project_id: project, folder_id: None, body, available_in_mcp: false }, &alice.user)
        .await
        .unwrap();
    let id = saved.meta.id;
    let first_build = BuildRequest { source: secret_workflow("Bearer sk-old", 5000).to_string(), workflow_id: Some(id.clone()), ..BuildRequest::default() };
    let ok = inst.build_workflow(&alice, first_build).await.unwrap();
    assert!(ok.success, "{ok:?}");
    let info = ok.warnings.iter().find(|w| w.code == "HARDCODED_CREDENTIALS").expect("still reported");
    assert!(info.message.contains("informational"));
    let new_token = inst.build_workflow(&alice, bound(secret_workflow("Bearer sk-new", 5000).to_string(), &id)).await.unwrap();
    assert!(!new_token.success);
    assert_eq!(new_token.errors[0].code, "HARDCODED_CREDENTIALS");
    let fresh = inst.build_workflow(&alice, build(secret_workflow("Bearer sk-old", 5000).to_string())).await.unwrap();
    assert!(!fresh.success, "a new workflow has no saved state to compare with");
}

#[tokio::test]
async fn large_workflows_are_summarised_unless_asked_in_full() {
    let (_env, inst, alice) = setup().await;
    let mut nodes = vec![json!({"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}})];
    let mut conns = serde_json::Map::new();
    for i in 1..=35 {
        nodes.push(json!({"name": format!("Step {i}"), "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [i * 100, 0], "parameters": {}}));
        let from = if i == 1 { "Start".to_owned() } else { format!("Step {}", i - 1) };
        conns.insert(from, json!({"main": [[{"node": format!("Step {i}"), "type": "main", "index": 0}]]}));
    }
    let source = json!({"name": "Long chain", "nodes": nodes, "connections": conns}).to_string();
    let out = inst.build_workflow(&alice, build(source)).await.unwrap();
    let id = out.workflow_id.unwrap();
    match inst.get_workflow(&alice, &id, None, false).await.unwrap() {
        WorkflowView::Summary { summary, .. } => {
            assert_eq!(summary.node_count, 36);
            assert_eq!(summary.connections.len(), 35);
            assert_eq!(summary.triggers, ["Start"]);
        }
        other => panic!("expected a summary, got {other:?}"),
    }
    assert!(matches!(inst.get_workflow(&alice, &id, None, true).await.unwrap(), WorkflowView::Full(_)));
    let version = out.version_id.unwrap();
    match inst.get_workflow(&alice, &id, Some(&version), false).await.unwrap() {
        WorkflowView::Version { version: v, summary, .. } => assert!(v.info.version_id == version && summary.is_some()),
        other => panic!("{other:?}"),
    }
    assert!(matches!(inst.get_workflow(&alice, &id, Some("nope"), false).await, Err(InstanceError::NotFound(_))));
}

#[tokio::test]
async fn validation_reports_canvas_issues_by_category() {
    let (_env, inst, alice) = setup().await;
    let source = json!({"name": "Needs setup", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0], "parameters": {
            "url": "https://api.example.com", "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth"}},
        {"name": "Stray", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [400, 0], "parameters": {}},
        {"name": "Ghost cred", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 200], "parameters": {
            "url": "https://api.example.com", "authentication": "genericCredentialType", "genericAuthType": "httpBearerAuth"},
         "credentials": {"httpBearerAuth": {"id": "gone", "name": "Old token"}}}
    ], "connections": {"Start": {"main": [[{"node": "Call", "type": "main", "index": 0}, {"node": "Ghost cred", "type": "main", "index": 0}]]}}})
    .to_string();
    let id = inst.build_workflow(&alice, build(source)).await.unwrap().workflow_id.unwrap();
    let report = inst.validate_saved(&alice, &id, &[]).await.unwrap();
    assert!(!report.valid);
    let of = |code: &str| report.issues.iter().find(|i| i.code == code).unwrap_or_else(|| panic!("{code}: {:?}", report.issues));
    assert_eq!((of("MISSING_CREDENTIALS").node_name.as_deref(), of("MISSING_CREDENTIALS").category), (Some("Call"), Category::Credentials));
    assert_eq!(of("INVALID_CREDENTIALS").node_name.as_deref(), Some("Ghost cred"));
    assert_eq!((of("DISCONNECTED_NODE").node_name.as_deref(), of("DISCONNECTED_NODE").category), (Some("Stray"), Category::Input));
    let ignored = inst.validate_saved(&alice, &id, &[Category::Credentials, Category::Input]).await.unwrap();
    assert!(ignored.valid, "{:?}", ignored.issues);
}

#[tokio::test]
async fn restore_reports_what_production_runs() {
    let (_env, inst, alice) = setup().await;
    let first = inst.build_workflow(&alice, build(triage(100))).await.unwrap();
    let id = first.workflow_id.clone().unwrap();
    let v1 = first.version_id.unwrap();
    let r = inst.restore_version(&alice, &id, &v1).await.unwrap();
    assert_eq!((r.publish_state.live, r.publish_state.active_version_id.clone()), (LiveState::Unpublished, None));
    assert!(r.publish_state_note.contains("not published"));
    assert_eq!(inst.publish_workflow(&alice, &id, Some(&v1)).await.unwrap(), v1);
    inst.build_workflow(&alice, bound(triage(300), &id)).await.unwrap();
    let r = inst.restore_version(&alice, &id, &v1).await.unwrap();
    assert_eq!(r.publish_state.live, LiveState::Stale, "a restore saves a new draft; production still runs v1");
    assert!(r.publish_state_note.contains("publish it"), "{}", r.publish_state_note);
    let current = inst.publish_workflow(&alice, &id, None).await.unwrap();
    assert_eq!(inst.workflow(&alice, &id).await.unwrap().meta.publish_state().live, LiveState::Current);
    assert_eq!(inst.workflow(&alice, &id).await.unwrap().meta.active_version_id, Some(current));
    // No trigger, no publishing.
    let no_trigger = json!({"name": "Manual bits", "nodes": [{"name": "A", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [0, 0]}], "connections": {}});
    let nid = inst.build_workflow(&alice, build(no_trigger.to_string())).await.unwrap().workflow_id.unwrap();
    assert!(matches!(inst.publish_workflow(&alice, &nid, None).await, Err(InstanceError::Invalid(m)) if m.contains("trigger")));
}

#[tokio::test]
async fn a_stranger_finds_nothing() {
    let (_env, inst, alice) = setup().await;
    let bob = Caller::new(UserId(format!("bob-{}", uuid::Uuid::new_v4().simple())));
    let id = inst.build_workflow(&alice, build(triage(100))).await.unwrap().workflow_id.unwrap();
    assert!(matches!(inst.workflow(&bob, &id).await, Err(InstanceError::NotFound(_))));
    assert!(matches!(inst.get_workflow(&bob, &id, None, false).await, Err(InstanceError::NotFound(_))));
    assert!(matches!(inst.publish_workflow(&bob, &id, None).await, Err(InstanceError::NotFound(_))));
    assert!(matches!(inst.archive_workflow(&bob, &id).await, Err(InstanceError::NotFound(_))));
    let hijack = BuildRequest { source: triage(1), workflow_id: Some(id.clone()), ..BuildRequest::default() };
    assert!(matches!(inst.build_workflow(&bob, hijack).await, Err(InstanceError::NotFound(_))));
    let scope = instance::workflows::ListScope::Instance;
    assert_eq!(inst.list_workflows(&bob, ListQuery { limit: 50, scope, ..ListQuery::default() }).await.unwrap().total, 0);
    assert_eq!(inst.list_versions(&alice, &id, None, 0).await.unwrap().len(), 1, "nothing of Alice's changed");
}
