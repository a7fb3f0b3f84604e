//! Credential operations against moto and a local service that checks the
//! header: create, list, get, test, replace the secret, rename, delete,
//! strangers and readers, and the secret never in anything returned.

mod support;
use support::serve_runs_queue;
use instance::credentials::{CredentialPatch, NewCredentialInput};
use instance::{Caller, Instance, InstanceError};
use protocol::UserId;
use serde_json::{json, Value};
use store::data::credentials::CredentialQuery;
use store::data::users_projects::ProjectRole;
use executions::{Dispatch, Executor, ExecutorSettings};
use store::deployment::QueueId;
use std::time::{Duration, Instant};
use store::testing::TestEnv;

const SECRET: &str = "planted-secret-7f3a9c";

/// Answers `/ping` with 200 only for `x-api-key: <SECRET>`.
async fn service() -> String {
    use axum::http::{HeaderMap, StatusCode};
    let app = axum::Router::new().route(
        "/ping",
        axum::routing::get(|h: HeaderMap| async move {
            if h.get("x-api-key").and_then(|v| v.to_str().ok()) == Some(SECRET) {
                (StatusCode::OK, "pong")
            } else {
                (StatusCode::UNAUTHORIZED, "no")
            }
        }),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    format!("http://{addr}")
}

/// An instance as a front door builds it (connection tests go over the
/// Runs queue to the executor function), with the executor function serving
/// that queue.
async fn instance() -> Instance {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    // The local service only: the SSRF guard still refuses every other private address.
    config.http_allowed_hosts = vec!["127.0.0.1".into()];
    config.http_allow_private_network = true;
    let inst = Instance::new(&env.clients, &config).await.unwrap();
    assert_eq!(inst.dispatch, Dispatch::Queue);
    serve_runs_queue(&env, &config);
    inst
}

fn alice() -> Caller {
    Caller::new(UserId("alice".into()))
}

fn bob() -> Caller {
    Caller::new(UserId("bob".into()))
}

fn header_credential(base: &str, value: &str) -> NewCredentialInput {
    NewCredentialInput {
        name: "Weather API key".into(),
        kind: "httpHeaderAuth".into(),
        data: json!({"name": "x-api-key", "value": value, "testUrl": format!("{base}/ping")}),
        description: Some("The key of the weather service".into()),
        project_id: None,
    }
}

fn assert_no_secret(what: &str, v: &impl serde::Serialize) {
    let text = serde_json::to_string(v).unwrap();
    assert!(!text.contains(SECRET), "{what} holds the secret: {text}");
}

#[tokio::test]
async fn a_person_creates_tests_replaces_and_deletes_a_credential_that_never_comes_back() {
    let base = service().await;
    let inst = instance().await;
    let created = inst.create_credential(&alice(), header_credential(&base, SECRET)).await.unwrap();
    assert_no_secret("create", &created);
    assert_eq!(created.kind, "httpHeaderAuth");

    let list = inst.list_credentials(&alice(), &CredentialQuery::default()).await.unwrap();
    assert_no_secret("list", &list);
    assert_eq!(list.data.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [created.id.as_str()]);
    let detail = inst.get_credential(&alice(), &created.id).await.unwrap();
    assert_no_secret("get", &detail);
    assert_eq!(detail.credential.description.as_deref(), Some("The key of the weather service"));
    assert!(detail.nodes_with_access.iter().any(|n| n.node_type == "n8n-nodes-base.httpRequest"), "{detail:?}");

    let ok = inst.test_credential(&alice(), &created.id).await.unwrap();
    assert!(ok.success, "{ok:?}");

    // Replace the secret with a wrong one: the test now fails and says why, without the value.
    let patch = CredentialPatch { data: Some(json!({"name": "x-api-key", "value": "wrong-value-123", "testUrl": format!("{base}/ping")})), ..Default::default() };
    inst.update_credential(&alice(), &created.id, patch).await.unwrap();
    let failed = inst.test_credential(&alice(), &created.id).await.unwrap();
    assert!(!failed.success && failed.message.contains("401"), "{failed:?}");
    assert!(!failed.message.contains("wrong-value-123"), "{failed:?}");

    // Rename and clear the description; the data stays as it was.
    let renamed = inst
        .update_credential(&alice(), &created.id, CredentialPatch { name: Some("Old key".into()), description: Some(None), data: None })
        .await
        .unwrap();
    assert_eq!((renamed.name.as_str(), renamed.description.as_deref()), ("Old key", None));
    assert!(!inst.test_credential(&alice(), &created.id).await.unwrap().success);
    assert!(matches!(inst.update_credential(&alice(), &created.id, CredentialPatch::default()).await, Err(InstanceError::Invalid(_))));

    inst.delete_credential(&alice(), &created.id).await.unwrap();
    assert!(matches!(inst.get_credential(&alice(), &created.id).await, Err(InstanceError::NotFound(_))));
    assert_eq!(inst.list_credentials(&alice(), &CredentialQuery::default()).await.unwrap().total, 0);
}

#[tokio::test]
async fn a_connection_test_no_executor_answers_fails_saying_so() {
    let base = service().await;
    let env = TestEnv::new().await;
    let mut inst = Instance::new(&env.clients, &env.config).await.unwrap();
    let settings = ExecutorSettings { job_wait: Duration::from_secs(1), ..ExecutorSettings::default() };
    inst.executor = Executor::new(inst.data.clone(), env.clients.sqs.clone(), env.config.queue_url(QueueId::Runs).unwrap(), settings);
    let created = inst.create_credential(&alice(), header_credential(&base, SECRET)).await.unwrap();
    let started = Instant::now();
    let err = inst.test_credential(&alice(), &created.id).await.unwrap_err();
    assert!(err.to_string().contains("the executor did not answer within 1 s"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "gave up after {:?}", started.elapsed());
}

#[tokio::test]
async fn strangers_learn_nothing_and_readers_may_not_change() {
    let base = service().await;
    let inst = instance().await;
    let c = inst.create_credential(&alice(), header_credential(&base, SECRET)).await.unwrap();
    let not_found = |r: Result<_, InstanceError>| matches!(r, Err(InstanceError::NotFound(_)));
    assert!(not_found(inst.get_credential(&bob(), &c.id).await.map(|_| ())));
    assert!(not_found(inst.test_credential(&bob(), &c.id).await.map(|_| ())));
    assert!(not_found(inst.delete_credential(&bob(), &c.id).await.map(|_| ())));
    assert!(not_found(inst.update_credential(&bob(), &c.id, CredentialPatch { name: Some("x".into()), ..Default::default() }).await.map(|_| ())));
    assert_eq!(inst.list_credentials(&bob(), &CredentialQuery::default()).await.unwrap().total, 0);

    // A viewer of a team project sees its credentials but may not delete or change them.
    let team = inst.data.projects.create_team_project("Ops", &alice().user).await.unwrap();
    inst.user(&bob()).await.unwrap();
    inst.data.projects.set_member(&team.id, &bob().user, ProjectRole::Viewer).await.unwrap();
    let shared = NewCredentialInput { project_id: Some(team.id.clone()), ..header_credential(&base, SECRET) };
    let t = inst.create_credential(&alice(), shared).await.unwrap();
    assert_eq!(inst.get_credential(&bob(), &t.id).await.unwrap().scopes, vec!["credential:read".to_owned()]);
    assert!(matches!(inst.delete_credential(&bob(), &t.id).await, Err(InstanceError::Forbidden(_))));
    assert!(matches!(
        inst.update_credential(&bob(), &t.id, CredentialPatch { name: Some("mine".into()), ..Default::default() }).await,
        Err(InstanceError::Forbidden(_))
    ));
    // Bob may not create credentials in a project he only views.
    let attempt = NewCredentialInput { project_id: Some(team.id.clone()), ..header_credential(&base, SECRET) };
    assert!(matches!(inst.create_credential(&bob(), attempt).await, Err(InstanceError::Forbidden(_))));

    // Picks for a workflow of Bob's personal project: the team credential cannot be used there.
    let personal = inst.user(&bob()).await.unwrap().personal_project_id;
    assert!(inst.usable_credentials(&bob(), &personal, "httpHeaderAuth").await.unwrap().is_empty());
    assert!(matches!(inst.pick_credential(&bob(), &personal, "httpHeaderAuth", &t.id).await, Err(InstanceError::Invalid(_))));
    let picks = inst.usable_credentials(&alice(), &team.id, "httpHeaderAuth").await.unwrap();
    assert_eq!(picks.len(), 1);
    assert!(matches!(inst.pick_credential(&alice(), &team.id, "httpBearerAuth", &t.id).await, Err(InstanceError::Invalid(_))));
}

#[tokio::test]
async fn bad_credential_data_is_refused_before_anything_is_stored() {
    let inst = instance().await;
    let bad = |kind: &str, data: Value| NewCredentialInput { name: "x".into(), kind: kind.into(), data, description: None, project_id: None };
    for (input, expect) in [
        (bad("slackApiTypo", json!({})), "unknown credential type"),
        (bad("httpHeaderAuth", json!({"name": "x-api-key"})), "\"value\""),
        (bad("httpHeaderAuth", json!({"name": "x-api-key", "value": SECRET, "extra": 1})), "no field \"extra\""),
        (bad("httpBasicAuth", json!(["user"])), "JSON object"),
        (bad("httpBearerAuth", json!({"token": "x".repeat(40_000)})), "at most"),
    ] {
        match inst.create_credential(&alice(), input).await {
            Err(InstanceError::Invalid(m)) => {
                assert!(m.contains(expect), "{m} (expected {expect})");
                assert!(!m.contains(SECRET), "{m}");
            }
            other => panic!("expected invalid, got {:?}", other.map(|c| c.id)),
        }
    }
    assert_eq!(inst.list_credentials(&alice(), &CredentialQuery::default()).await.unwrap().total, 0);
}

#[tokio::test]
async fn a_workflow_may_use_any_of_more_credentials_than_one_page_holds() {
    let inst = instance().await;
    let alice = Caller::new(UserId(format!("alice-{}", uuid::Uuid::new_v4().simple())));
    const N: usize = 205;
    let mut last = None;
    for i in 0..N {
        let c = NewCredentialInput { name: format!("Key {i:03}"), ..header_credential("http://127.0.0.1:9", "v") };
        last = Some(inst.create_credential(&alice, c).await.unwrap());
    }
    let last = last.unwrap();
    assert_eq!(inst.visible_credentials(&alice).await.unwrap().len(), N, "every credential, not the first page");
    // "Key 204" sorts last, past the 200 a page holds: a reference to it is valid.
    let source = json!({"name": "Uses the last key", "nodes": [
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
        {"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0],
         "parameters": {"url": "http://127.0.0.1:9/x", "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth", "options": {}},
         "credentials": {"httpHeaderAuth": {"id": last.id, "name": last.name}}}
    ], "connections": {"Start": {"main": [[{"node": "Call", "type": "main", "index": 0}]]}}});
    let built = inst.build_workflow(&alice, instance::builder::BuildRequest { source: source.to_string(), ..Default::default() }).await.unwrap();
    assert!(built.success, "{built:?}");
    let report = inst.validate_saved(&alice, built.workflow_id.as_deref().unwrap(), &[]).await.unwrap();
    assert!(report.issues.iter().all(|f| f.code != "INVALID_CREDENTIALS"), "{:?}", report.issues);
}
