//! The workspace operations against moto: projects with the current one,
//! folders (create, plan and delete with what happens to their workflows),
//! moving and tagging workflows as the listings then show them, cleanup of
//! test executions only, and strangers.

use instance::{Caller, Instance, InstanceError};
use protocol::UserId;
use serde_json::json;
use store::data::executions::{ExecutionMode, ExecutionStatus, NewExecution};
use store::data::users_projects::ProjectRole;
use store::data::workflows::{NewWorkflow, StatusFilter, WorkflowBody, WorkflowQuery};
use store::testing::TestEnv;

async fn setup() -> (TestEnv, Instance) {
    let env = TestEnv::new().await;
    let inst = Instance::new(&env.clients, &env.config).await.expect("instance");
    (env, inst)
}

async fn someone(inst: &Instance, name: &str) -> Caller {
    let c = Caller::new(UserId(format!("{name}-{}", uuid::Uuid::new_v4().simple())));
    inst.user(&c).await.unwrap();
    c
}

async fn workflow(inst: &Instance, owner: &Caller, project: &str, name: &str, folder: Option<&str>) -> String {
    let body = WorkflowBody {
        nodes: json!([{"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}}]),
        connections: json!({}),
        settings: json!({"executionOrder": "v1"}),
        pin_data: json!({}),
        meta: json!({}),
    };
    let new = NewWorkflow {
        name: name.into(),
        description: None,
        project_id: project.into(),
        folder_id: folder.map(str::to_owned),
        body,
        available_in_mcp: true,
    };
    inst.data.workflows.create(new, &owner.user).await.unwrap().meta.id
}

#[tokio::test]
async fn projects_name_the_current_one_and_folders_stay_in_their_project() {
    let (_env, inst) = setup().await;
    let alice = someone(&inst, "alice").await;
    let bob = someone(&inst, "bob").await;
    let team = inst.data.projects.create_team_project("Sales", &alice.user).await.unwrap();
    let (projects, current) = inst.projects(&alice).await.unwrap();
    assert_eq!(projects.len(), 2);
    assert_eq!(current, inst.user(&alice).await.unwrap().personal_project_id);
    let bound = Caller::in_project(alice.user.clone(), team.id.clone());
    assert_eq!(inst.projects(&bound).await.unwrap().1, team.id, "a conversation bound to a project names it");

    let clients = inst.create_folder(&alice, Some(&team.id), "Clients", None).await.unwrap();
    let acme = inst.create_folder(&alice, Some(&team.id), "Acme", Some(&clients.id)).await.unwrap();
    assert_eq!(acme.path, "Clients/Acme");
    assert!(matches!(inst.create_folder(&alice, Some(&team.id), "acme", Some(&clients.id)).await, Err(InstanceError::Conflict(_))));
    assert!(matches!(inst.create_folder(&bob, Some(&team.id), "Mine", None).await, Err(InstanceError::NotFound(_))));
    inst.data.projects.set_member(&team.id, &bob.user, ProjectRole::Viewer).await.unwrap();
    assert!(matches!(inst.create_folder(&bob, Some(&team.id), "Mine", None).await, Err(InstanceError::Forbidden(_))));
    let (project, folders) = inst.list_folders(&bob, Some(&team.id)).await.unwrap();
    assert_eq!(project, team.id);
    assert_eq!(folders.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["Clients", "Clients/Acme"]);
    assert_eq!(inst.search_folders(&bob, &team.id, Some("ACM"), 100).await.unwrap().count, 1);
    let (home, mine) = inst.list_folders(&alice, None).await.unwrap();
    assert!(mine.is_empty() && home != team.id, "no project named: the caller's own");
}

#[tokio::test]
async fn deleting_a_folder_says_and_does_what_happens_to_its_workflows() {
    let (_env, inst) = setup().await;
    let alice = someone(&inst, "alice").await;
    let home = inst.user(&alice).await.unwrap().personal_project_id;
    let clients = inst.create_folder(&alice, None, "Clients", None).await.unwrap();
    let acme = inst.create_folder(&alice, None, "Acme", Some(&clients.id)).await.unwrap();
    let invoices = inst.create_folder(&alice, None, "Invoices", Some(&acme.id)).await.unwrap();
    let archive = inst.create_folder(&alice, None, "Archive", None).await.unwrap();
    let a = workflow(&inst, &alice, &home, "Acme onboarding", Some(&acme.id)).await;
    let b = workflow(&inst, &alice, &home, "Acme invoices", Some(&invoices.id)).await;
    let outside = workflow(&inst, &alice, &home, "Digest", Some(&clients.id)).await;

    let plan = inst.plan_folder_deletion(&alice, None, &acme.id, None).await.unwrap();
    assert_eq!((plan.subfolders, plan.workflows, plan.transfer_to.is_none()), (1, 2, true));
    let e = inst.plan_folder_deletion(&alice, None, &acme.id, Some(&invoices.id)).await.unwrap_err();
    assert!(matches!(e, InstanceError::Invalid(_)), "cannot transfer into a folder deleted with it: {e:?}");
    assert!(matches!(inst.plan_folder_deletion(&alice, None, "nope", None).await, Err(InstanceError::NotFound(_))));
    assert_eq!(inst.data.folders.list(&home).await.unwrap().len(), 4, "planning changes nothing");

    let (plan, done) = inst.delete_folder(&alice, None, &acme.id, Some(&archive.id)).await.unwrap();
    assert_eq!(plan.transfer_to.map(|f| f.id), Some(archive.id.clone()));
    assert_eq!((done.folders, done.workflows), (2, 2));
    for id in [&a, &b] {
        let m = inst.data.workflows.meta(id).await.unwrap().unwrap();
        assert_eq!(m.parent_folder_id.as_deref(), Some(archive.id.as_str()));
        assert!(!m.is_archived);
    }
    // Without a transfer folder the workflows go to the root, archived.
    let (_, done) = inst.delete_folder(&alice, None, &clients.id, None).await.unwrap();
    assert_eq!((done.folders, done.workflows), (1, 1));
    let m = inst.data.workflows.meta(&outside).await.unwrap().unwrap();
    assert!(m.is_archived && m.parent_folder_id.is_none());
}

#[tokio::test]
async fn moves_and_tags_show_in_the_listings_and_strangers_touch_nothing() {
    let (_env, inst) = setup().await;
    let alice = someone(&inst, "alice").await;
    let bob = someone(&inst, "bob").await;
    let home = inst.user(&alice).await.unwrap().personal_project_id;
    let ops = inst.create_folder(&alice, None, "Ops", None).await.unwrap();
    let wf = workflow(&inst, &alice, &home, "Nightly backup", None).await;

    let (_, folder) = inst.move_workflow_to_folder(&alice, &wf, Some(&ops.id)).await.unwrap();
    assert_eq!(folder.map(|f| f.path), Some("Ops".to_owned()));
    let (_, tags) = inst.tag_workflow(&alice, &wf, &["Backups".into(), "nightly".into(), "backups ".into()]).await.unwrap();
    assert_eq!(tags.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Backups", "nightly"], "a repeated name counts once");
    let (_, again) = inst.tag_workflow(&alice, &wf, &["NIGHTLY".into()]).await.unwrap();
    assert_eq!(again.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["nightly"], "replaces, reusing the existing tag");
    assert_eq!(inst.list_tags(&alice).await.unwrap().len(), 2, "no duplicate tag was made");
    assert!(matches!(inst.tag_workflow(&alice, &wf, &[" ".into()]).await, Err(InstanceError::Invalid(_))));

    let list = inst
        .data
        .workflows
        .list(&alice.user, &WorkflowQuery { status: StatusFilter::All, ..WorkflowQuery::default() })
        .await
        .unwrap();
    let row = list.workflows.iter().find(|r| r.meta.id == wf).unwrap();
    assert_eq!(row.folder.as_ref().map(|f| f.path.as_str()), Some("Ops"));
    let full = inst.data.workflows.get(&wf).await.unwrap().unwrap();
    assert_eq!(full.tags.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["nightly"]);

    for e in [
        inst.move_workflow_to_folder(&bob, &wf, None).await.map(|_| ()).unwrap_err(),
        inst.tag_workflow(&bob, &wf, &["x".into()]).await.map(|_| ()).unwrap_err(),
        inst.cleanup_test_executions(&bob, &wf, 0.0).await.map(|_| ()).unwrap_err(),
        inst.delete_folder(&bob, Some(&home), &ops.id, None).await.map(|_| ()).unwrap_err(),
    ] {
        assert!(matches!(e, InstanceError::NotFound(_)), "{e:?}");
    }
    assert_eq!(inst.data.workflows.meta(&wf).await.unwrap().unwrap().parent_folder_id.as_deref(), Some(ops.id.as_str()));
}

#[tokio::test]
async fn cleanup_removes_only_old_finished_test_executions() {
    let (_env, inst) = setup().await;
    let alice = someone(&inst, "alice").await;
    let home = inst.user(&alice).await.unwrap().personal_project_id;
    let wf = workflow(&inst, &alice, &home, "Sync", None).await;
    let x = &inst.data.executions;
    let wf_id = wf.as_str();
    let run = |mode, started: String| async move {
        let e = x
            .create(NewExecution { workflow_id: wf_id.to_owned(), mode, status: ExecutionStatus::Running, started_at: Some(started), retry_of: None, retention_secs: None })
            .await
            .unwrap();
        x.finish(&e.id, ExecutionStatus::Success, None).await.unwrap();
        e.id
    };
    let hours_ago = |h: u64| store::data::db::iso_secs_ago(h * 3600);
    let old_test = run(ExecutionMode::Manual, hours_ago(5)).await;
    let recent_test = run(ExecutionMode::Manual, hours_ago(0)).await;
    let production = run(ExecutionMode::Webhook, hours_ago(5)).await;

    assert!(matches!(inst.cleanup_test_executions(&alice, &wf, -1.0).await, Err(InstanceError::Invalid(_))));
    let (_, n) = inst.cleanup_test_executions(&alice, &wf, 1.0).await.unwrap();
    assert_eq!(n, 1);
    assert!(x.get(&old_test).await.unwrap().is_none());
    assert!(x.get(&recent_test).await.unwrap().is_some(), "younger than the cutoff");
    assert!(x.get(&production).await.unwrap().is_some(), "production runs are never cleaned up");
    let (_, n) = inst.cleanup_test_executions(&alice, &wf, 0.0).await.unwrap();
    assert_eq!(n, 1);
    assert!(x.get(&production).await.unwrap().is_some());
}
