//! Workflows against moto: create/get/list, optimistic concurrency on
//! `versionId`, history, publish/archive, folders and tags.

mod data_support;

use serde_json::{json, Value};
use store::data::folders::ResolutionFailure;
use store::data::users_projects::ProjectRole;
use store::data::workflows::{FolderSelector, NewWorkflow, StatusFilter, WorkflowBody, WorkflowQuery, WorkflowUpdate};
use store::StoreError;

fn body(extra_node: Option<&str>) -> WorkflowBody {
    let mut nodes = vec![
        json!({"name": "When clicking", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}}),
        json!({"name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3, "parameters": {"values": {"string": [{"name": "a", "value": "b"}]}}}),
    ];
    if let Some(n) = extra_node {
        nodes.push(json!({"name": n, "type": "n8n-nodes-base.noOp", "typeVersion": 1, "parameters": {}}));
    }
    WorkflowBody {
        nodes: Value::Array(nodes),
        connections: json!({"When clicking": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}),
        settings: json!({"executionOrder": "v1"}),
        pin_data: json!({}),
        meta: json!({"templateCredsSetupCompleted": true}),
    }
}

fn new_wf(project: &str, name: &str) -> NewWorkflow {
    NewWorkflow {
        name: name.into(),
        description: Some(format!("{name} description")),
        project_id: project.into(),
        folder_id: None,
        body: body(None),
        available_in_mcp: false,
    }
}

#[tokio::test]
async fn create_get_and_validation() {
    let (_env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let wf = data.workflows.create(new_wf(&home.id, "Lead enrichment"), &alice).await.unwrap();
    let got = data.workflows.get(&wf.meta.id).await.unwrap().unwrap();
    assert_eq!(got.body, body(None));
    assert_eq!(got.meta.name, "Lead enrichment");
    assert_eq!(got.meta.trigger_count, 1);
    assert_eq!(got.meta.active_version_id, None);

    let too_long = NewWorkflow { name: "x".repeat(129), ..new_wf(&home.id, "") };
    assert!(matches!(data.workflows.create(too_long, &alice).await, Err(StoreError::Invalid(_))));
    let long_desc = NewWorkflow { description: Some("d".repeat(256)), ..new_wf(&home.id, "ok") };
    assert!(matches!(data.workflows.create(long_desc, &alice).await, Err(StoreError::Invalid(_))));
    let mut dup = new_wf(&home.id, "dup nodes");
    dup.body.nodes = json!([{"name": "A", "type": "x"}, {"name": "A", "type": "x"}]);
    assert!(matches!(data.workflows.create(dup, &alice).await, Err(StoreError::Invalid(_))));
    let mut dangling = new_wf(&home.id, "dangling");
    dangling.body.connections = json!({"Set": {"main": [[{"node": "Nowhere", "type": "main", "index": 0}]]}});
    assert!(matches!(data.workflows.create(dangling, &alice).await, Err(StoreError::Invalid(_))));
    let nowhere = new_wf("no-such-project", "x");
    assert!(data.workflows.create(nowhere, &alice).await.is_err());
}

#[tokio::test]
async fn concurrent_stale_updates_have_exactly_one_winner() {
    let (_env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let wf = data.workflows.create(new_wf(&home.id, "Race"), &alice).await.unwrap();
    let v0 = wf.meta.version_id.clone();
    for round in 0..3 {
        let base = data.workflows.meta(&wf.meta.id).await.unwrap().unwrap().version_id;
        let writers = (0..8).map(|i| {
            let data = data.clone();
            let (id, base, alice) = (wf.meta.id.clone(), base.clone(), alice.clone());
            tokio::spawn(async move {
                let update =
                    WorkflowUpdate { body: Some(body(Some(&format!("Writer {round}-{i}")))), ..Default::default() };
                data.workflows.update(&id, &base, update, &alice).await
            })
        });
        let results: Vec<_> = futures::future::join_all(writers).await.into_iter().map(|r| r.unwrap()).collect();
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, StoreError::Conflict(_)), "{e}");
            }
        }
        // The stored draft is the winner's, nothing else.
        let now = data.workflows.get(&wf.meta.id).await.unwrap().unwrap();
        assert_eq!(now.meta.version_id, winners[0].meta.version_id);
        assert_eq!(now.body, winners[0].body);
    }
    // A writer still holding the first version is refused, not merged.
    let stale = data
        .workflows
        .update(&wf.meta.id, &v0, WorkflowUpdate { name: Some("late".into()), ..Default::default() }, &alice)
        .await;
    assert!(matches!(stale, Err(StoreError::Conflict(_))));
    assert_eq!(data.workflows.list_versions(&wf.meta.id, Some(100), 0).await.unwrap().len(), 4);
}

#[tokio::test]
async fn versions_restore_publish_archive() {
    let (_env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let wf = data.workflows.create(new_wf(&home.id, "Versions"), &alice).await.unwrap();
    let v1 = wf.meta.version_id.clone();
    let w2 = data
        .workflows
        .update(
            &wf.meta.id,
            &v1,
            WorkflowUpdate { body: Some(body(Some("Second"))), autosaved: true, ..Default::default() },
            &alice,
        )
        .await
        .unwrap();
    let v2 = w2.meta.version_id.clone();

    let versions = data.workflows.list_versions(&wf.meta.id, None, 0).await.unwrap();
    assert_eq!(versions.iter().map(|v| v.info.version_id.clone()).collect::<Vec<_>>(), vec![v2.clone(), v1.clone()]);
    assert!(versions[0].is_current_draft && versions[0].info.autosaved);
    assert_eq!(versions[1].info.authors, vec![alice.to_string()]);

    // Publish the current draft, then an explicit older version.
    assert_eq!(data.workflows.publish(&wf.meta.id, None).await.unwrap(), v2);
    assert_eq!(data.workflows.publish(&wf.meta.id, Some(&v1)).await.unwrap(), v1);
    assert!(data.workflows.publish(&wf.meta.id, Some("nope")).await.is_err());
    let meta = data.workflows.meta(&wf.meta.id).await.unwrap().unwrap();
    assert_eq!(meta.active_version_id.as_deref(), Some(v1.as_str()));
    let rows = data.workflows.list_versions(&wf.meta.id, None, 0).await.unwrap();
    assert!(rows.iter().any(|r| r.is_active && r.info.version_id == v1));

    // Named versions.
    data.workflows
        .update_version(&wf.meta.id, &v1, Some(Some("Go-live".into())), Some(Some("first release".into())))
        .await
        .unwrap();
    let named = data.workflows.get_version(&wf.meta.id, &v1).await.unwrap().unwrap();
    assert_eq!(named.info.name.as_deref(), Some("Go-live"));
    assert_eq!(named.body, body(None));

    // Restore v1 as the new draft: a new version, publish state "stale"? no: active is v1, draft is new.
    let (restored, state) = data.workflows.restore_version(&wf.meta.id, &v1, Some(&v2), &alice).await.unwrap();
    assert_eq!(restored.body, body(None));
    assert_ne!(restored.meta.version_id, v1);
    assert_eq!(state.saved_version_id, restored.meta.version_id);
    assert_eq!(serde_json::to_value(state.live).unwrap(), "stale");

    // Archive unpublishes; archived workflows cannot be published or edited.
    assert!(data.workflows.archive(&wf.meta.id).await.unwrap());
    assert!(!data.workflows.archive(&wf.meta.id).await.unwrap(), "archive is idempotent");
    let meta = data.workflows.meta(&wf.meta.id).await.unwrap().unwrap();
    assert!(meta.is_archived && meta.active_version_id.is_none());
    assert!(data.workflows.publish(&wf.meta.id, None).await.is_err());
    assert!(data.workflows.update(&wf.meta.id, &meta.version_id, WorkflowUpdate::default(), &alice).await.is_err());
    assert!(data.workflows.unarchive(&wf.meta.id).await.unwrap());
    let meta = data.workflows.meta(&wf.meta.id).await.unwrap().unwrap();
    assert!(!meta.is_archived && meta.active_version_id.is_none(), "unarchive does not publish");
    data.workflows.publish(&wf.meta.id, None).await.unwrap();
    data.workflows.unpublish(&wf.meta.id).await.unwrap();
    assert!(data.workflows.meta(&wf.meta.id).await.unwrap().unwrap().active_version_id.is_none());
}

#[tokio::test]
async fn listing_filters_folders_tags_and_scopes() {
    let (_env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let (bob, _) = data_support::user(&data, "bob").await;
    let team = data.projects.create_team_project("Sales", &alice).await.unwrap();
    data.projects.set_member(&team.id, &bob, ProjectRole::Viewer).await.unwrap();

    let clients = data.folders.create(&team.id, "Clients", None).await.unwrap();
    let acme = data.folders.create(&team.id, "Acme", Some(&clients.id)).await.unwrap();
    assert_eq!(acme.path, "Clients/Acme");
    let deep = data.folders.create(&team.id, "Invoices", Some(&acme.id)).await.unwrap();

    let mut ids = Vec::new();
    for (name, folder) in [
        ("CRM sync", None),
        ("Acme invoices", Some(&deep.id)),
        ("Acme onboarding", Some(&acme.id)),
        ("Clients digest", Some(&clients.id)),
    ] {
        let mut n = new_wf(&team.id, name);
        n.folder_id = folder.cloned();
        ids.push(data.workflows.create(n, &alice).await.unwrap().meta.id);
    }
    data.workflows.create(new_wf(&home.id, "Private thing"), &alice).await.unwrap();
    data.workflows.archive(&ids[0]).await.unwrap();

    // Instance-wide for alice: both projects, rows carry their project.
    let all = data.workflows.list(&alice, &WorkflowQuery::default()).await.unwrap();
    assert_eq!(all.total, 4);
    assert!(all.workflows.iter().all(|r| r.project.is_some()));
    let archived = data
        .workflows
        .list(&alice, &WorkflowQuery { status: StatusFilter::Archived, ..Default::default() })
        .await
        .unwrap();
    assert_eq!(archived.workflows.len(), 1);
    assert_eq!(
        data.workflows
            .list(&alice, &WorkflowQuery { status: StatusFilter::All, ..Default::default() })
            .await
            .unwrap()
            .total,
        5
    );

    // Name filter: total vs totalInScope, and a note.
    let q = WorkflowQuery { query: Some("acme".into()), project_id: Some(team.id.clone()), ..Default::default() };
    let page = data.workflows.list(&alice, &q).await.unwrap();
    assert_eq!((page.total, page.total_in_scope), (2, 3));
    assert!(page.note.is_some());
    assert!(page.workflows.iter().all(|r| r.project.is_none()), "narrowed to one project");
    // Description matches only when asked (search_workflows).
    let by_desc =
        WorkflowQuery { query: Some("digest description".into()), match_description: true, ..Default::default() };
    assert_eq!(data.workflows.list(&alice, &by_desc).await.unwrap().total, 1);
    let limited = data.workflows.list(&alice, &WorkflowQuery { limit: 1, ..Default::default() }).await.unwrap();
    assert_eq!((limited.workflows.len(), limited.total), (1, 4));

    // Folder by path: recursive by default, rows carry the folder path.
    let in_acme = WorkflowQuery {
        project_id: Some(team.id.clone()),
        folder: Some(FolderSelector::Path("Clients/Acme".into())),
        ..Default::default()
    };
    let page = data.workflows.list(&alice, &in_acme).await.unwrap();
    assert_eq!(page.total, 2);
    assert!(page.workflows.iter().any(|r| r.folder.as_ref().is_some_and(|f| f.path == "Clients/Acme/Invoices")));
    let flat = WorkflowQuery { recursive: false, ..in_acme.clone() };
    assert_eq!(data.workflows.list(&alice, &flat).await.unwrap().total, 1);
    let by_name = WorkflowQuery { folder: Some(FolderSelector::Path("Acme".into())), ..in_acme.clone() };
    assert_eq!(data.workflows.list(&alice, &by_name).await.unwrap().total, 2);
    let missing = WorkflowQuery { folder: Some(FolderSelector::Path("Clients/Globex".into())), ..in_acme.clone() };
    let page = data.workflows.list(&alice, &missing).await.unwrap();
    assert!(page.workflows.is_empty());
    assert_eq!(page.folder_resolution.as_ref().map(|r| r.reason), Some(ResolutionFailure::NotFound));
    assert!(page.note.is_some());
    let too_wide = WorkflowQuery { folder: Some(FolderSelector::Path("Acme".into())), ..Default::default() };
    assert_eq!(
        data.workflows.list(&alice, &too_wide).await.unwrap().folder_resolution.map(|r| r.reason),
        Some(ResolutionFailure::ScopeTooWide)
    );

    // Scopes follow the role: bob is a viewer of the team project only.
    let bobs = data.workflows.list(&bob, &WorkflowQuery::default()).await.unwrap();
    assert_eq!(bobs.total, 3);
    assert!(bobs.workflows.iter().all(|r| !r.can_execute && r.scopes == vec!["workflow:read".to_owned()]));
    let alices = data
        .workflows
        .list(&alice, &WorkflowQuery { project_id: Some(team.id.clone()), ..Default::default() })
        .await
        .unwrap();
    assert!(alices.workflows.iter().all(|r| r.can_execute && r.scopes.contains(&"workflow:publish".to_owned())));

    // Move, tags, availableInMCP.
    data.workflows.move_to_folder(&ids[3], None).await.unwrap();
    assert!(data.workflows.move_to_folder(&ids[3], Some("nope")).await.is_err());
    let tags = data.tags.ensure(&["Sales".into(), "Ops".into()]).await.unwrap();
    data.workflows.set_tags(&ids[3], &tags.iter().map(|t| t.id.clone()).collect::<Vec<_>>()).await.unwrap();
    data.workflows.set_available_in_mcp(&ids[3], true).await.unwrap();
    let got = data.workflows.get(&ids[3]).await.unwrap().unwrap();
    assert_eq!(got.tags.len(), 2);
    assert!(got.meta.available_in_mcp && got.meta.parent_folder_id.is_none());
    let mcp = data
        .workflows
        .list(&alice, &WorkflowQuery { available_in_mcp: Some(true), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(mcp.total, 1);

    // Deleting a folder subtree moves its workflows elsewhere.
    let done = data.workflows.delete_folder(&team.id, &acme.id, Some(&clients.id)).await.unwrap();
    assert_eq!((done.folders, done.workflows), (2, 2), "Acme and Invoices, with their two workflows");
    assert_eq!(data.folders.list(&team.id).await.unwrap().len(), 1);
    let moved = data.workflows.meta(&ids[1]).await.unwrap().unwrap();
    assert_eq!(moved.parent_folder_id.as_deref(), Some(clients.id.as_str()));
}

/// A writer that died between claiming a version's successor and moving the
/// head must not lock the workflow: the next writer releases the claim (its
/// version was never written) or rolls it forward (it was).
#[tokio::test]
async fn a_dead_writers_claim_is_released_or_rolled_forward() {
    use aws_sdk_dynamodb::types::AttributeValue as Av;
    let (env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let table = env.config.table(store::deployment::TableId::Instance).unwrap().to_owned();
    let db = &env.clients.dynamo;
    let wf = data.workflows.create(new_wf(&home.id, "Crashy"), &alice).await.unwrap();
    let id = wf.meta.id.clone();
    let v1 = wf.meta.version_id.clone();
    let old = (store::data::db::now_secs() - 120).to_string();
    let claim = |on: &str, new: &str| {
        db.put_item()
            .table_name(&table)
            .item("pk", Av::S(format!("wf#{id}")))
            .item("sk", Av::S(format!("next#{on}")))
            .item("newVersionId", Av::S(new.into()))
            .item("name", Av::S("Crashy".into()))
            .item("description", Av::Null(true))
            .item("updatedAt", Av::S(store::data::db::now_iso()))
            .item("triggerCount", Av::N("1".into()))
            .item("nodeCount", Av::N("2".into()))
            .item("claimedAt", Av::N(old.clone()))
            .send()
    };

    // Died before writing its version: the claim is released.
    claim(&v1, "ghost").await.unwrap();
    let upd = || WorkflowUpdate { body: Some(body(Some("After crash"))), ..Default::default() };
    assert!(matches!(data.workflows.update(&id, &v1, upd(), &alice).await, Err(StoreError::Conflict(_))));
    let w2 = data.workflows.update(&id, &v1, upd(), &alice).await.expect("claim released");
    let v2 = w2.meta.version_id.clone();

    // Died after writing its version (a copy of v1 as "resurrected"): rolled forward.
    for (from, to) in [(format!("ver#{v1}"), "ver#resurrected"), (format!("body#{v1}"), "body#resurrected")] {
        let mut item = db
            .get_item()
            .table_name(&table)
            .key("pk", Av::S(format!("wf#{id}")))
            .key("sk", Av::S(from))
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        item.insert("sk".into(), Av::S(to.into()));
        item.insert("versionId".into(), Av::S("resurrected".into()));
        db.put_item().table_name(&table).set_item(Some(item)).send().await.unwrap();
    }
    claim(&v2, "resurrected").await.unwrap();
    assert!(matches!(data.workflows.update(&id, &v2, upd(), &alice).await, Err(StoreError::Conflict(_))));
    let now = data.workflows.get(&id).await.unwrap().unwrap();
    assert_eq!(now.meta.version_id, "resurrected");
    assert_eq!(now.body, body(None));
}

fn hook_body(path: &str, method: &str) -> WorkflowBody {
    WorkflowBody {
        nodes: json!([{"name": "Webhook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "webhookId": "wh-1", "parameters": {"path": path, "httpMethod": method}}]),
        connections: json!({}),
        settings: json!({}),
        pin_data: json!({}),
        meta: json!({}),
    }
}

#[tokio::test]
async fn test_webhook_paths_follow_every_saved_draft() {
    use store::data::webhooks::{best_match, EndpointKind, Scope};
    let (_env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let path = format!("in-{}", uuid::Uuid::new_v4().simple());
    let wf = data.workflows.create(NewWorkflow { body: hook_body(&path, "POST"), ..new_wf(&home.id, "Hook") }, &alice).await.unwrap();
    let found = data.webhooks.candidates(EndpointKind::Webhook, "POST", &path, Scope::Test).await.unwrap();
    let (reg, _) = best_match(&found, &path).expect("registered on create");
    assert_eq!((reg.workflow_id.as_str(), reg.endpoint.node.as_str()), (wf.meta.id.as_str(), "Webhook"));
    assert!(data.webhooks.candidates(EndpointKind::Webhook, "POST", &path, Scope::Production).await.unwrap().is_empty(), "drafts hold no production path");
    // The next save moves the path: the old one is gone, the new one answers.
    let moved = format!("{path}-v2");
    let update = WorkflowUpdate { body: Some(hook_body(&moved, "PUT")), ..Default::default() };
    data.workflows.update(&wf.meta.id, &wf.meta.version_id, update, &alice).await.unwrap();
    assert!(data.webhooks.candidates(EndpointKind::Webhook, "POST", &path, Scope::Test).await.unwrap().is_empty());
    assert_eq!(data.webhooks.candidates(EndpointKind::Webhook, "PUT", &moved, Scope::Test).await.unwrap().len(), 1);
}

#[tokio::test]
async fn of_workflows_racing_for_one_path_exactly_one_holds_it() {
    use store::data::webhooks::{Endpoint, EndpointKind, Registration};
    let (_env, data) = data_support::data().await;
    let path = format!("race-{}", uuid::Uuid::new_v4().simple());
    let reg = |wf: usize| Registration {
        endpoint: Endpoint { kind: EndpointKind::Webhook, method: "POST".into(), path: path.clone(), node: "Webhook".into() },
        workflow_id: format!("wf-{wf}"),
        version_id: "v1".into(),
    };
    let claims = (0..8).map(|i| {
        let (hooks, r) = (data.webhooks.clone(), reg(i));
        tokio::spawn(async move { hooks.claim(&r).await.unwrap() })
    });
    let results: Vec<_> = futures::future::join_all(claims).await.into_iter().map(Result::unwrap).collect();
    let winners: Vec<usize> = results.iter().enumerate().filter(|(_, r)| r.is_ok()).map(|(i, _)| i).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    let winner = winners[0];
    let holder = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert_eq!(holder.workflow_id, format!("wf-{winner}"));
    // Its own claim again is fine; a loser's release leaves the winner's claim.
    assert!(data.webhooks.claim(&reg(winner)).await.unwrap().is_ok());
    data.webhooks.release(&[reg((winner + 1) % 8)]).await.unwrap();
    assert!(data.webhooks.claim(&reg((winner + 1) % 8)).await.unwrap().is_err());
    data.webhooks.release(&[reg(winner)]).await.unwrap();
    assert!(data.webhooks.claim(&reg((winner + 1) % 8)).await.unwrap().is_ok(), "released: free again");
}
