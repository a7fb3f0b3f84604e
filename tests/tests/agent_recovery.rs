//! At-least-once delivery and crashes: a duplicate step message changes
//! nothing; a step killed after its tool call was published is settled by
//! the sweep as tool-interrupted + run-finish interrupted, never re-run.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_duplicate_step_message_is_acknowledged_without_effect() {
    let cloud = cloud(Setup { consumers: false, ..Setup::default() }).await;
    let app = cloud.running.app.clone();
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "List my workflows").await;
    // Step 1, delivered twice — the second time concurrently with the first.
    let step1 = receive(&cloud).await;
    let (a, b) = tokio::join!(api::handlers::step::handle(&app, step1.clone()), api::handlers::step::handle(&app, step1.clone()));
    assert!(a.batch_item_failures.is_empty() && b.batch_item_failures.is_empty(), "both acknowledged");
    let again = api::handlers::step::handle(&app, step1).await;
    assert!(again.batch_item_failures.is_empty());
    // Step 2 twice, one after the other.
    let step2 = receive(&cloud).await;
    api::handlers::step::handle(&app, step2.clone()).await;
    api::handlers::step::handle(&app, step2).await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let rest = feed.drain(Duration::from_millis(800)).await;
    assert!(rest.is_empty(), "{:?}", kinds(&rest));
    for t in [EventType::RunStart, EventType::ToolCall, EventType::ToolResult, EventType::TextBlock, EventType::ReasoningBlock, EventType::RunFinish] {
        assert_eq!(find(&frames, t).len(), 1, "{t}: {:?}", kinds(&frames));
    }
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "gapless, no duplicates");
    cloud.stop().await;
}

#[tokio::test]
async fn a_step_killed_mid_tool_is_interrupted_by_the_sweep() {
    let cloud = cloud(Setup { consumers: false, lease_secs: Some(2), ..Setup::default() }).await;
    let app = cloud.running.app.clone();
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run the slow tool").await;
    let step1 = receive(&cloud).await;
    let worker = {
        let app = app.clone();
        tokio::spawn(async move { api::handlers::step::handle(&app, step1).await })
    };
    let frames = feed.until_type(EventType::ToolCall, WAIT).await;
    let call = payload(frames.last().unwrap());
    // The process dies with the tool in flight.
    worker.abort();
    let _ = worker.await;
    // Before the lease runs out the sweep leaves the run alone.
    api::handlers::sweep::handle(&app).await.unwrap();
    assert!(feed.drain(Duration::from_millis(300)).await.iter().all(|f| f.kind() != EventType::RunFinish));
    tokio::time::sleep(Duration::from_millis(2200)).await;
    api::handlers::sweep::handle(&app).await.unwrap();
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let interrupted = find(&frames, EventType::ToolInterrupted);
    assert_eq!(interrupted.len(), 1, "{:?}", kinds(&frames));
    assert_eq!(payload(interrupted[0])["toolCallId"], call["toolCallId"]);
    assert!(payload(interrupted[0])["error"].as_str().unwrap().contains("effect unverified"));
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "interrupted", "reason": "crash_interrupted"}));
    // The tool never ran again and a second sweep adds nothing.
    api::handlers::sweep::handle(&app).await.unwrap();
    let more = feed.drain(Duration::from_millis(500)).await;
    assert!(more.is_empty(), "{:?}", kinds(&more));
    assert!(find(&feed.seen, EventType::ToolResult).is_empty());
    // The slot is free again.
    let (status, _) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 200);
    cloud.stop().await;
}
