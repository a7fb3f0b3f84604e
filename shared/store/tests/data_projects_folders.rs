//! Users, projects, roles, folders (path resolution) and tags against moto.

mod data_support;

use store::data::folders::ResolutionFailure;
use store::data::users_projects::{ProjectRole, ProjectSearch, ProjectType};
use store::StoreError;

#[tokio::test]
async fn users_get_a_personal_project_and_team_roles() {
    let (_env, data) = data_support::data().await;
    let (alice, home) = data_support::user(&data, "alice").await;
    let (bob, _) = data_support::user(&data, "bob").await;
    assert_eq!(home.kind, ProjectType::Personal);
    let user = data.projects.user(&alice).await.unwrap().unwrap();
    assert_eq!(user.personal_project_id, home.id);
    assert!(matches!(
        data.projects.create_user(&alice, "again@example.com", None, None).await,
        Err(StoreError::Conflict(_))
    ));

    let team = data.projects.create_team_project("Growth team", &alice).await.unwrap();
    assert!(
        data.projects.set_member(&home.id, &bob, ProjectRole::Viewer).await.is_err(),
        "personal projects are private"
    );
    data.projects.set_member(&team.id, &bob, ProjectRole::Editor).await.unwrap();
    assert_eq!(data.projects.role(&bob, &team.id).await.unwrap(), Some(ProjectRole::Editor));
    assert_eq!(data.projects.role(&bob, &home.id).await.unwrap(), None);
    assert!(data.projects.require(&bob, &team.id, "workflow:execute").await.is_ok());
    assert!(matches!(data.projects.require(&bob, &team.id, "project:delete").await, Err(StoreError::Invalid(_))));
    assert!(matches!(data.projects.require(&bob, &home.id, "workflow:read").await, Err(StoreError::NotFound(_))));

    let mine = data.projects.projects_of(&alice).await.unwrap();
    assert_eq!(mine.len(), 2);
    assert_eq!(mine[0].project.kind, ProjectType::Personal, "personal first");
    assert_eq!(mine[1].role, ProjectRole::Owner);
    let teams = data
        .projects
        .search(&bob, &ProjectSearch { kind: Some(ProjectType::Team), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(teams.count, 1);
    let q = data
        .projects
        .search(&alice, &ProjectSearch { query: Some("GROWTH".into()), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(q.data.len(), 1);
    assert_eq!(data.projects.members(&team.id).await.unwrap().len(), 2);
    data.projects.remove_member(&team.id, &bob).await.unwrap();
    assert_eq!(data.projects.role(&bob, &team.id).await.unwrap(), None);
}

#[tokio::test]
async fn folder_paths_resolve_strictly() {
    let (_env, data) = data_support::data().await;
    let (alice, _) = data_support::user(&data, "alice").await;
    let p = data.projects.create_team_project("Agency", &alice).await.unwrap();
    let f = &data.folders;
    let clients = f.create(&p.id, "Clients", None).await.unwrap();
    let acme = f.create(&p.id, "Acme", Some(&clients.id)).await.unwrap();
    let partners = f.create(&p.id, "Partners", None).await.unwrap();
    let _ = f.create(&p.id, "Globex", Some(&partners.id)).await.unwrap();
    assert_eq!(acme.path, "Clients/Acme");

    assert!(f.create(&p.id, "a/b", None).await.is_err(), "names cannot contain /");
    assert!(matches!(f.create(&p.id, "clients", None).await, Err(StoreError::Conflict(_))), "siblings are unique");
    assert!(f.create(&p.id, "Acme", Some("no-such-folder")).await.is_err());

    // `Clients/Acme` and `Acme` both find it; case and slashes are forgiven.
    assert_eq!(f.resolve(&p.id, "Clients/Acme").await.unwrap().unwrap().id, acme.id);
    assert_eq!(f.resolve(&p.id, "Acme").await.unwrap().unwrap().id, acme.id);
    assert_eq!(f.resolve(&p.id, "/clients/acme/").await.unwrap().unwrap().id, acme.id);
    // Not found: the real folders come back as candidates, never a fuzzy pick.
    let nf = f.resolve(&p.id, "Acm").await.unwrap().unwrap_err();
    assert_eq!(nf.reason, ResolutionFailure::NotFound);
    assert_eq!(nf.candidates.len(), 4);
    assert_eq!(f.resolve(&p.id, "Partners/Acme").await.unwrap().unwrap_err().reason, ResolutionFailure::NotFound);
    // Ambiguous once a second Acme exists elsewhere.
    f.create(&p.id, "Acme", Some(&partners.id)).await.unwrap();
    let amb = f.resolve(&p.id, "Acme").await.unwrap().unwrap_err();
    assert_eq!(amb.reason, ResolutionFailure::Ambiguous);
    assert_eq!(amb.candidates.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["Clients/Acme", "Partners/Acme"]);
    // The full path still resolves.
    assert_eq!(f.resolve(&p.id, "Clients/Acme").await.unwrap().unwrap().id, acme.id);

    let search = f.search(&p.id, Some("acm"), None).await.unwrap();
    assert_eq!(search.count, 2);
    assert!(search.data.iter().all(|s| s.parent_folder_id.is_some()));

    let renamed = f.rename(&p.id, &acme.id, "ACME Corp").await.unwrap();
    assert_eq!(renamed.path, "Clients/ACME Corp");
    assert!(f.rename(&p.id, &partners.id, "clients").await.is_err());
    assert!(matches!(f.delete_empty(&p.id, &clients.id).await, Err(StoreError::Conflict(_))), "has subfolders");
    f.delete_empty(&p.id, &acme.id).await.unwrap();
    f.delete_empty(&p.id, &clients.id).await.unwrap();
    f.create(&p.id, "Clients", None).await.expect("the name is free again");
}

#[tokio::test]
async fn tags_are_unique_per_instance() {
    let (_env, data) = data_support::data().await;
    let t = &data.tags;
    let sales = t.create("Sales").await.unwrap();
    assert!(matches!(t.create("sales").await, Err(StoreError::Conflict(_))));
    assert!(t.create("").await.is_err());
    let got = t.ensure(&["SALES".into(), "Ops".into()]).await.unwrap();
    assert_eq!(got[0].id, sales.id);
    assert_eq!(t.list().await.unwrap().iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Ops", "Sales"]);
    assert!(t.by_ids(&["nope".into()]).await.is_err());
}

#[tokio::test]
async fn racing_folder_and_tag_creates_have_one_winner() {
    let (_env, data) = data_support::data().await;
    let (alice, _) = data_support::user(&data, "alice").await;
    let p = data.projects.create_team_project("Race", &alice).await.unwrap();
    for round in 0..3 {
        let name = format!("Folder {round}");
        let racers = (0..8).map(|_| {
            let (f, p, name) = (data.folders.clone(), p.id.clone(), name.clone());
            tokio::spawn(async move { f.create(&p, &name, None).await })
        });
        let results: Vec<_> = futures::future::join_all(racers).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
        let tag = format!("tag{round}");
        let racers = (0..8).map(|_| {
            let (t, tag) = (data.tags.clone(), tag.clone());
            tokio::spawn(async move { t.create(&tag).await })
        });
        let results: Vec<_> = futures::future::join_all(racers).await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
    }
    assert_eq!(data.folders.list(&p.id).await.unwrap().len(), 3);
    assert_eq!(data.tags.list().await.unwrap().len(), 3);
}
