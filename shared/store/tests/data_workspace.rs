//! The per-thread workspace against moto: files per thread, limits per file
//! and per thread (a refused write changes nothing, concurrent writers
//! cannot overshoot), revisions, and source bindings.

mod data_support;

use protocol::ids::ThreadId;
use store::data::db::Table;
use store::data::workspace::{Expect, SourceBinding, Workspace, WorkspaceLimits};
use store::deployment::TableId;
use store::StoreError;

fn thread(name: &str) -> ThreadId {
    ThreadId(format!("{name}-{}", uuid::Uuid::new_v4().simple()))
}

fn small(env: &store::testing::TestEnv, limits: WorkspaceLimits) -> Workspace {
    Workspace::with_limits(Table::new(env.clients.dynamo.clone(), env.config.table(TableId::Agent).unwrap()), limits)
}

#[tokio::test]
async fn files_belong_to_their_thread_and_survive_a_restart() {
    let (env, data) = data_support::data().await;
    let ws = &data.workspace;
    let (t, other) = (thread("ws"), thread("ws-other"));
    let first = ws.write(&t, "src/main.workflow.ts", "export default workflow('x')", Expect::Any).await.unwrap();
    assert_eq!(first.rev, 1);
    ws.write(&t, "notes.md", "# plan", Expect::Any).await.unwrap();
    let second = ws.write(&t, "src/main.workflow.ts", "export default workflow('y')", Expect::Any).await.unwrap();
    assert_eq!(second.rev, 2);
    assert_eq!(ws.read(&t, "src/main.workflow.ts").await.unwrap().unwrap().content, "export default workflow('y')");
    assert!(ws.read(&other, "notes.md").await.unwrap().is_none(), "files belong to their thread");
    let listed = ws.list(&t, "").await.unwrap();
    assert_eq!(listed.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["notes.md", "src/main.workflow.ts"]);
    assert_eq!(listed[1].size, "export default workflow('y')".len() as u64);
    assert_eq!(ws.list(&t, "src/").await.unwrap().len(), 1);
    assert_eq!(ws.usage(&t).await.unwrap().bytes, (6 + 28) as u64);
    assert_eq!(ws.usage(&t).await.unwrap().files, 2);

    // A new process (new clients, new repository) sees the same files.
    let fresh = store::data::InstanceData::new(&env.clients, &env.config).unwrap();
    assert_eq!(fresh.workspace.read(&t, "notes.md").await.unwrap().unwrap().content, "# plan");
    let all = fresh.workspace.read_all(&t, "").await.unwrap();
    assert_eq!(all.len(), 2);

    assert!(matches!(ws.write(&t, "../escape", "x", Expect::Any).await, Err(StoreError::Invalid(_))));
    assert!(ws.delete(&t, "notes.md").await.unwrap());
    assert!(!ws.delete(&t, "notes.md").await.unwrap());
    assert_eq!(ws.usage(&t).await.unwrap().files, 1);
    assert_eq!(ws.usage(&t).await.unwrap().bytes, 28);
}

#[tokio::test]
async fn limits_refuse_clearly_and_change_nothing() {
    let (env, _data) = data_support::data().await;
    let ws = small(&env, WorkspaceLimits { max_file_bytes: 100, max_thread_bytes: 250, max_files: 3 });
    let t = thread("limits");
    let e = ws.write(&t, "big.txt", &"x".repeat(101), Expect::Any).await.unwrap_err().to_string();
    assert!(e.contains("at most 100 bytes"), "{e}");
    ws.write(&t, "a.txt", &"a".repeat(100), Expect::Any).await.unwrap();
    ws.write(&t, "b.txt", &"b".repeat(100), Expect::Any).await.unwrap();
    let e = ws.write(&t, "c.txt", &"c".repeat(51), Expect::Any).await.unwrap_err().to_string();
    assert!(e.contains("holds 200 of its 250 bytes in 2 files"), "{e}");
    assert!(ws.read(&t, "c.txt").await.unwrap().is_none(), "a refused write writes nothing");
    assert_eq!(ws.usage(&t).await.unwrap().bytes, 200);
    // Growing an existing file counts only the growth; shrinking makes room.
    ws.write(&t, "b.txt", &"B".repeat(100), Expect::Any).await.unwrap();
    ws.write(&t, "a.txt", "short", Expect::Any).await.unwrap();
    ws.write(&t, "c.txt", &"c".repeat(100), Expect::Any).await.unwrap();
    assert_eq!(ws.usage(&t).await.unwrap().bytes, 205);
    let e = ws.write(&t, "d.txt", "d", Expect::Any).await.unwrap_err().to_string();
    assert!(e.contains("already holds 3 files, the limit is 3"), "{e}");
    assert_eq!(ws.list(&t, "").await.unwrap().len(), 3);
}

#[tokio::test]
async fn concurrent_writers_cannot_overshoot_the_thread_limit() {
    let (env, _data) = data_support::data().await;
    let ws = small(&env, WorkspaceLimits { max_file_bytes: 100, max_thread_bytes: 300, max_files: 50 });
    let t = thread("race");
    let writes = (0..8).map(|i| {
        let (ws, t) = (ws.clone(), t.clone());
        tokio::spawn(async move { ws.write(&t, &format!("f{i}.txt"), &"z".repeat(100), Expect::Any).await })
    });
    let results = futures::future::join_all(writes).await;
    let ok = results.iter().filter(|r| matches!(r, Ok(Ok(_)))).count();
    assert_eq!(ok, 3, "exactly the writes that fit succeed: {results:?}");
    let files = ws.list(&t, "").await.unwrap();
    let usage = ws.usage(&t).await.unwrap();
    assert_eq!(usage.bytes, files.iter().map(|f| f.size).sum::<u64>());
    assert_eq!(usage.files, files.len() as u64);
}

#[tokio::test]
async fn an_edit_from_a_stale_read_is_a_conflict() {
    let (_env, data) = data_support::data().await;
    let ws = &data.workspace;
    let t = thread("rev");
    let e = ws.write(&t, "a.ts", "one", Expect::Rev(None)).await.unwrap();
    assert!(matches!(ws.write(&t, "a.ts", "again", Expect::Rev(None)).await, Err(StoreError::Conflict(_))));
    ws.write(&t, "a.ts", "two", Expect::Rev(Some(e.rev))).await.unwrap();
    let stale = ws.write(&t, "a.ts", "three", Expect::Rev(Some(e.rev))).await.unwrap_err();
    assert!(stale.to_string().contains("changed since it was read"), "{stale}");
    assert_eq!(ws.read(&t, "a.ts").await.unwrap().unwrap().content, "two");
}

#[tokio::test]
async fn a_source_file_binds_to_one_workflow() {
    let (_env, data) = data_support::data().await;
    let ws = &data.workspace;
    let t = thread("bind");
    assert!(ws.binding(&t, "main.workflow.ts").await.unwrap().is_none());
    let mut b = SourceBinding {
        path: "main.workflow.ts".into(),
        workflow_id: "wf1".into(),
        source_hash: "h1".into(),
        version_id: "v1".into(),
        work_item_id: None,
        is_supporting_workflow: false,
        built_at: "2024-01-01T00:00:00.000Z".into(),
    };
    ws.record_build(&t, &b, true).await.unwrap();
    let other = SourceBinding { workflow_id: "wf2".into(), ..b.clone() };
    assert!(matches!(ws.record_build(&t, &other, true).await, Err(StoreError::Conflict(_))));
    assert!(matches!(ws.record_build(&t, &other, false).await, Err(StoreError::Conflict(_))));
    b.version_id = "v2".into();
    b.source_hash = "h2".into();
    ws.record_build(&t, &b, false).await.unwrap();
    assert_eq!(ws.binding(&t, "main.workflow.ts").await.unwrap().unwrap(), b);
}
