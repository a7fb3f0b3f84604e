//! Runs against moto: `nodes(execute)` with a local service (a standalone
//! node's items and error details reach the assistant only when the instance
//! sends execution data, `INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES`), and
//! `executions(run)`'s plan refusing what cannot run before anyone approves.

use instance::builder::BuildRequest;
use instance::executions::view::Values;
use instance::executions::RunRequest;
use instance::nodes::{ExecuteOutcome, ExecuteRequest};
use instance::{Caller, Instance};
use protocol::UserId;
use serde_json::{json, Value};
use store::testing::TestEnv;

/// What the failing service answers: details that came from outside.
const UPSTREAM: &str = "upstream-said-account-4411";

/// Answers `/fail` with a 500 whose body quotes [`UPSTREAM`].
async fn service() -> String {
    use axum::http::StatusCode;
    let app = axum::Router::new().route(
        "/fail",
        axum::routing::get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({"message": UPSTREAM}))) }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

async fn instance(values: Values) -> Instance {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    let mut inst = Instance::new(&env.clients, &config).await.unwrap();
    inst.run_in_process();
    inst.values = values;
    inst
}

fn alice() -> Caller {
    Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())))
}

fn set_node() -> ExecuteRequest {
    serde_json::from_value(json!({"type": "n8n-nodes-base.set", "version": 3.4,
        "config": {"parameters": {"mode": "manual", "includeOtherFields": true,
            "assignments": {"assignments": [{"id": "a1", "name": "greeting", "value": "={{ 'hello ' + $json.name }}", "type": "string"}]}}},
        "input": [{"json": {"name": "Ada"}}, {"json": {"name": "Grace"}}]}))
    .unwrap()
}

fn failing_request(base: &str) -> ExecuteRequest {
    serde_json::from_value(json!({"type": "n8n-nodes-base.httpRequest", "version": 4.2,
        "config": {"parameters": {"method": "GET", "url": format!("{base}/fail"), "options": {}}}}))
    .unwrap()
}

fn text(o: &ExecuteOutcome) -> String {
    format!("{o:?}")
}

#[tokio::test]
async fn a_standalone_node_shows_its_items_and_errors_when_values_are_sent() {
    let base = service().await;
    let inst = instance(Values::Shown).await;
    let ok = inst.execute_node(&alice(), &set_node()).await.unwrap();
    let ExecuteOutcome::Success { items, total } = &ok else { panic!("{ok:?}") };
    assert_eq!(*total, 2);
    assert_eq!(items.iter().map(|i| i["json"]["greeting"].clone()).collect::<Vec<Value>>(), [json!("hello Ada"), json!("hello Grace")]);
    let failed = inst.execute_node(&alice(), &failing_request(&base)).await.unwrap();
    assert!(matches!(failed, ExecuteOutcome::Error { .. }), "{failed:?}");
    assert!(text(&failed).contains(UPSTREAM), "the service's answer is part of the error: {failed:?}");
}

#[tokio::test]
async fn a_standalone_node_withholds_items_and_upstream_error_details_when_values_are_not_sent() {
    let base = service().await;
    let inst = instance(Values::Withheld).await;
    let ok = inst.execute_node(&alice(), &set_node()).await.unwrap();
    assert_eq!(ok, ExecuteOutcome::Withheld { total: 2 }, "the count, never the values");
    assert!(!text(&ok).contains("Ada"));
    let failed = inst.execute_node(&alice(), &failing_request(&base)).await.unwrap();
    let ExecuteOutcome::Error { message, description, node_error_type } = &failed else { panic!("{failed:?}") };
    assert!(!text(&failed).contains(UPSTREAM), "nothing the service said: {failed:?}");
    assert!(message.contains("withheld") && message.contains("\"Node\""), "{message}");
    assert_eq!(description, &None);
    assert!(node_error_type.is_some(), "the error's kind stays: {failed:?}");
}

/// Two enabled triggers: a run must name one.
const TWO_TRIGGERS: &str = r#"{"name": "Two doors", "nodes": [
  {"name": "Manual", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
  {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "parameters": {"httpMethod": "POST", "path": "two-doors"}, "position": [0, 200]},
  {"name": "Done", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "parameters": {}, "position": [200, 0]}
], "connections": {"Manual": {"main": [[{"node": "Done", "type": "main", "index": 0}]]}, "Hook": {"main": [[{"node": "Done", "type": "main", "index": 0}]]}}}"#;

#[tokio::test]
async fn a_run_that_cannot_start_is_refused_by_its_plan_and_starts_nothing() {
    let inst = instance(Values::Shown).await;
    let alice = alice();
    inst.user(&alice).await.unwrap();
    let built = inst.build_workflow(&alice, BuildRequest { source: TWO_TRIGGERS.into(), ..BuildRequest::default() }).await.unwrap();
    assert!(built.success, "{built:?}");
    let id = built.workflow_id.unwrap();
    let run = |trigger: Option<&str>, timeout_ms: Option<u64>| RunRequest {
        workflow_id: id.clone(),
        trigger_node_name: trigger.map(str::to_owned),
        timeout_ms,
        ..RunRequest::default()
    };
    let e = inst.plan_run(&alice, &run(None, None)).await.err().expect("two triggers and no name");
    assert!(e.message().contains("pass triggerNodeName"), "{e}");
    let e = inst.plan_run(&alice, &run(Some("Nope"), None)).await.err().expect("an unknown trigger");
    assert!(e.message().contains("not a node of this workflow"), "{e}");
    let e = inst.plan_run(&alice, &run(Some("Manual"), Some(1))).await.err().expect("a bad timeout");
    assert!(e.message().contains("timeout must be between"), "{e}");
    let planned = inst.plan_run(&alice, &run(Some("Manual"), None)).await.unwrap();
    assert_eq!(planned.trigger.as_deref(), Some("Manual"));
    let stranger = Caller::new(UserId("mallory".into()));
    assert!(inst.plan_run(&stranger, &run(Some("Manual"), None)).await.is_err(), "strangers cannot plan it");
    inst.archive_workflow(&alice, &id).await.unwrap();
    let e = inst.plan_run(&alice, &run(Some("Manual"), None)).await.err().expect("an archived workflow");
    assert!(e.message().contains("archived"), "{e}");
    assert!(inst.list_executions(&alice, Some(&id), None, None).await.unwrap().is_empty(), "planning starts nothing");
}
