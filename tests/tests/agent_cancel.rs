//! Stop: while streaming (seen at the next cancel poll, long before the
//! answer would end), while suspended (finished at once), twice (one
//! run-finish), after the end (a no-op). The timed tests read the WebSocket
//! (pushed frames: the time measured is the agent's, not the SSE tail's poll
//! interval); the suspended case reads SSE. Their bound (3 s) is far below
//! what running on would take (the answer streams for 8 s, the slow tool
//! sleeps 60 s) and far above the 200 ms poll, so a loaded CI machine cannot
//! fail them and an ignored cancel cannot pass them.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn cancel_while_streaming_finishes_long_before_the_answer_would() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Stream a long answer slowly").await;
    feed.until_type(EventType::TextDelta, WAIT).await;
    let asked = Instant::now();
    let (status, body) = cloud.cancel(ALICE, &t).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancelled"], true);
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(3), "run-finish {took:?} after cancel");
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "cancelled", "reason": "user_cancelled"}));
    // The text streamed so far is kept as a block; nothing follows the finish.
    assert!(!find(&feed.seen, EventType::TextBlock).is_empty());
    let (status, body) = cloud.cancel(ALICE, &t).await;
    assert_eq!((status, body["cancelled"].as_bool()), (200, Some(false)), "a finished run: no-op");
    let later = feed.drain(Duration::from_millis(800)).await;
    assert!(later.iter().all(|f| f.kind() == EventType::TextDelta || f.kind() == EventType::TextBlock) && find(&later, EventType::RunFinish).is_empty(), "{:?}", kinds(&later));
    cloud.stop().await;
}

#[tokio::test]
async fn cancel_while_a_tool_runs_settles_it_as_cancelled() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run the slow tool").await;
    let frames = feed.until_type(EventType::ToolCall, WAIT).await;
    let call = payload(frames.last().unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = Instant::now();
    cloud.cancel(ALICE, &t).await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert!(asked.elapsed() < Duration::from_secs(3), "{:?}", asked.elapsed());
    let result = payload(find(&frames, EventType::ToolResult)[0]);
    assert_eq!(result["toolCallId"], call["toolCallId"]);
    assert_eq!(result["result"]["cancelled"], true);
    assert_eq!(payload(frames.last().unwrap())["status"], "cancelled");
    cloud.stop().await;
}

#[tokio::test]
async fn cancel_while_suspended_finishes_at_once_and_twice_gives_one_finish() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Ask me a question").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let req = request_id(&frames);
    // Two cancels at once: exactly one run-finish.
    let (a, b) = tokio::join!(cloud.cancel(ALICE, &t), cloud.cancel(ALICE, &t));
    assert_eq!((a.0, b.0), (200, 200));
    assert_eq!([&a.1, &b.1].iter().filter(|v| v["cancelled"] == true).count(), 1, "one of them acted: {a:?} {b:?}");
    let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(2)).await;
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "cancelled", "reason": "user_cancelled"}));
    // The pending question is settled, not left dangling.
    assert_eq!(payload(find(&frames, EventType::ToolResult)[0])["result"]["cancelled"], true);
    let more = feed.drain(Duration::from_millis(800)).await;
    assert!(find(&more, EventType::RunFinish).is_empty(), "{:?}", kinds(&more));
    // Deciding after the cancel is too late.
    let (status, _) = cloud.confirm(ALICE, &req, json!({"approved": true})).await;
    assert_eq!(status, 409);
    // And the thread is free again.
    let (status, body) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 200, "{body}");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}
