//! A simple turn end to end: the spec's "Simple Query" sequence event for
//! event, one run per thread (409), strangers get 404, no model → an error
//! run naming INSTANCE_AI_MODEL.

mod agent_common;

use agent_common::*;
use protocol::events::{EventPayload, EventType, RunStatus};
use serde_json::json;

#[tokio::test]
async fn simple_query_follows_the_spec_sequence() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    // A first turn creates the thread (the stream admits its owner from
    // then on) and names it.
    let (status, body) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 200, "{body}");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let all = kinds(&frames);
    assert_eq!(all.first(), Some(&"run-start"));
    let title = all.iter().position(|k| *k == "thread-title-updated").expect("title after the first turn");
    assert_eq!(title, all.len() - 2, "the title comes right before run-finish: {all:?}");
    assert_eq!(payload(&frames[title])["title"], "Say hello");

    // A second subscriber joining between runs (replays the first run).
    let mut ws = cloud.events(ALICE, &t).await;
    ws.until_type(EventType::RunFinish, WAIT).await; // the replay of the first run
    // The slot was released before run-finish: the next message is accepted at once.
    let (status, body) = cloud.chat(ALICE, &t, "List my workflows").await;
    assert_eq!(status, 200, "{body}");
    let run_id = body["runId"].as_str().expect("runId").to_owned();
    assert!(run_id.starts_with("run_"));
    feed.until_type(EventType::RunFinish, WAIT).await;
    let frames = ws.until_type(EventType::RunFinish, WAIT).await;

    // Every event carries the run id and the orchestrator's agent id.
    assert!(frames.iter().all(|f| f.event.run_id.0 == run_id && f.event.agent_id.0 == "agent-001"), "{:?}", kinds(&frames));
    // The spec's sequence, with consecutive deltas collapsed and our
    // documented additions set aside: tool-input-start (sent before
    // tool-call) and the coalesced text/reasoning blocks.
    let extras = [EventType::ToolInputStart, EventType::TextBlock, EventType::ReasoningBlock];
    let mut seq: Vec<&str> = Vec::new();
    for f in frames.iter().filter(|f| !extras.contains(&f.kind())) {
        if seq.last() != Some(&f.kind().as_str()) {
            seq.push(f.kind().as_str());
        }
    }
    assert_eq!(seq, ["run-start", "reasoning-delta", "tool-call", "tool-result", "text-delta", "run-finish"], "{:?}", kinds(&frames));

    let all = kinds(&frames);
    let pos = |k: &str| all.iter().position(|x| *x == k).unwrap_or_else(|| panic!("{k} missing in {all:?}"));
    assert!(pos("reasoning-delta") < pos("reasoning-block") && pos("reasoning-block") < pos("tool-input-start"));
    assert!(pos("tool-input-start") < pos("tool-call"));
    assert!(pos("text-block") < pos("run-finish"));
    assert!(!all.contains(&"thread-title-updated"), "title only after the first turn");
    // Durable facts have ids in order; deltas have none.
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    assert!(ids.windows(2).all(|w| w[0] + 1 == w[1]), "{ids:?}");
    assert!(frames.iter().filter(|f| matches!(f.kind(), EventType::TextDelta | EventType::ReasoningDelta)).all(|f| f.id.is_none()));

    let start = payload(&frames[0]);
    assert_eq!(start["message"], "List my workflows");
    assert!(start["messageId"].as_str().is_some());
    let call = payload(find(&frames, EventType::ToolCall)[0]);
    assert_eq!(call["toolName"], "workflows");
    assert_eq!(call["args"], json!({"action": "list"}));
    let result = payload(find(&frames, EventType::ToolResult)[0]);
    assert_eq!(result["toolCallId"], call["toolCallId"]);
    assert_eq!(result["result"]["workflows"].as_array().map(Vec::len), Some(3));
    let text: String = find(&frames, EventType::TextDelta).iter().map(|f| payload(f)["text"].as_str().unwrap().to_owned()).collect();
    assert_eq!(text, "You have 3 workflows:\n");
    assert_eq!(payload(find(&frames, EventType::TextBlock)[0])["text"], "You have 3 workflows:\n");
    let reasoning: String = find(&frames, EventType::ReasoningDelta).iter().map(|f| payload(f)["text"].as_str().unwrap().to_owned()).collect();
    assert_eq!(payload(find(&frames, EventType::ReasoningBlock)[0])["text"].as_str(), Some(reasoning.as_str()));
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "completed"}));
    cloud.stop().await;
}

#[tokio::test]
async fn a_second_post_while_active_is_409_and_strangers_get_404() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    let (status, _) = cloud.chat(ALICE, &t, "Ask me a question").await;
    assert_eq!(status, 200);
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let req = request_id(&frames);

    let (status, body) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict");

    // Bob sees nothing of Alice's thread: every route answers 404.
    let (status, body) = cloud.chat(BOB, &t, "Say hello").await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "chat");
    let (status, _) = cloud.confirm(BOB, &req, json!({"approved": true})).await;
    assert_eq!(status, 404, "confirm");
    let (status, _) = cloud.cancel(BOB, &t).await;
    assert_eq!(status, 404, "cancel");
    for path in [format!("/instance-ai/events/{t}"), format!("/instance-ai/threads/{t}/messages")] {
        let resp = cloud.http.get(cloud.url(&path)).bearer_auth(BOB).send().await.unwrap();
        let code = resp.status().as_u16();
        // 501 only while that endpoint is not served yet.
        assert!(code == 404 || code == 501, "{path}: {code}");
    }
    // Bob's attempts changed nothing: Alice can still answer.
    let (status, body) = cloud.confirm(ALICE, &req, json!({"approved": true, "answers": [{"questionId": "q1", "selectedOptions": ["red"]}]})).await;
    assert_eq!(status, 200, "{body}");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}

#[tokio::test]
async fn bad_chat_bodies_are_400_and_change_nothing() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    for body in [json!({}), json!({"message": ""}), json!({"message": "hi", "extra": 1}), json!({"message": 5})] {
        let (status, resp) = cloud.post(ALICE, &format!("/instance-ai/chat/{t}"), body.clone()).await;
        assert_eq!(status, 400, "{body} → {resp}");
        assert_eq!(resp["error"]["code"], "bad_request");
    }
    // The thread was never created: Bob can take it.
    let (status, _) = cloud.chat(BOB, &t, "Say hello").await;
    assert_eq!(status, 200);
    cloud.stop().await;
}

#[tokio::test]
async fn without_a_model_the_run_ends_with_an_error_naming_the_variable() {
    let cloud = cloud(Setup { model: false, ..Setup::default() }).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    let (status, _) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 200);
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let EventPayload::RunFinish(fin) = &frames.last().unwrap().event.payload else { unreachable!() };
    assert_eq!(fin.status, RunStatus::Error);
    assert!(fin.reason.as_deref().unwrap_or_default().contains("INSTANCE_AI_MODEL"), "{fin:?}");
    cloud.stop().await;
}

/// A one-shot HTTP server that answers every request with `status` and a JSON error.
async fn failing_provider(status: u16) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = vec![0u8; 65536];
            let _ = sock.read(&mut buf).await;
            let body = r#"{"error":{"message":"invalid api key","type":"invalid_request_error"}}"#;
            let resp = format!("HTTP/1.1 {status} Err\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            let _ = sock.write_all(resp.as_bytes()).await;
        }
    });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn a_provider_failure_is_an_error_event_then_run_finish_error() {
    let base = failing_provider(401).await;
    let model = agent::model::provider_from_config(Some(&format!("openai-compatible:{base}:test-model"))).await.unwrap();
    let (cloud, ()) = cloud_with(Setup::default(), |c| (c.clone(), ()), Some(model)).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Say hello").await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(kinds(&frames), ["run-start", "error", "run-finish"]);
    let err = payload(&frames[1]);
    assert_eq!(err["provider"], "openai-compatible");
    assert_eq!(err["statusCode"], 401);
    let fin = payload(&frames[2]);
    assert_eq!(fin["status"], "error");
    assert!(fin["reason"].as_str().unwrap().contains("401"), "{fin}");
    cloud.stop().await;
}
