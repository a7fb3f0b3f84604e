//! Human-in-the-loop: ask-user questions, approvals, denial, first decision
//! wins, always-allow for the session, schema errors the model can read.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use serde_json::json;

#[tokio::test]
async fn ask_user_answers_reach_the_tool_result_and_a_second_confirm_is_409() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Ask me a question").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let call = payload(find(&frames, EventType::ToolCall)[0]);
    let req = payload(frames.last().unwrap());
    assert_eq!(req["inputType"], "questions");
    assert_eq!(req["toolName"], "ask-user");
    assert_eq!(req["toolCallId"], call["toolCallId"]);
    assert_eq!(req["questions"][0]["id"], "q1");
    assert_eq!(req["introMessage"], "One quick question");
    let request_id = req["requestId"].as_str().unwrap().to_owned();

    // The suspension was written before the request was published.
    let rt = cloud.running.app.agent().await.unwrap();
    let activity = rt.runs.activity(&protocol::ids::ThreadId(t.clone())).await.unwrap();
    assert!(activity.is_suspended && activity.active_run.is_some(), "{activity:?}");

    let answers = json!([{"questionId": "q1", "selectedOptions": ["blue"]}]);
    let (status, body) = cloud.confirm(ALICE, &request_id, json!({"approved": true, "answers": answers})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = cloud.confirm(ALICE, &request_id, json!({"approved": false})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict");

    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let result = payload(find(&frames, EventType::ToolResult)[0]);
    assert_eq!(result["toolCallId"], call["toolCallId"]);
    assert_eq!(result["result"]["answered"], true);
    assert_eq!(result["result"]["answers"][0]["selectedOptions"], json!(["blue"]));
    assert_eq!(result["result"]["answers"][0]["question"], "Which color do you prefer?");
    let text: String = find(&frames, EventType::TextDelta).iter().map(|f| payload(f)["text"].as_str().unwrap().to_owned()).collect();
    assert_eq!(text, "Thanks, noted your answer.");
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "completed"}));
    // Exactly one result for the call, and the order the spec gives.
    let all = kinds(&feed.seen);
    let pos = |k: &str| all.iter().position(|x| *x == k).unwrap();
    assert!(pos("tool-call") < pos("confirmation-request") && pos("confirmation-request") < pos("tool-result"));
    assert_eq!(find(&feed.seen, EventType::ToolResult).len(), 1);
    cloud.stop().await;
}

#[tokio::test]
async fn a_denial_reaches_the_model_as_a_structured_result() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Ask me a question").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let (status, _) = cloud.confirm(ALICE, &request_id(&frames), json!({"approved": false})).await;
    assert_eq!(status, 200);
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let result = payload(find(&frames, EventType::ToolResult)[0]);
    assert_eq!(result["result"], json!({"answered": false}));
    // The model was called again with the result in its history.
    assert!(!find(&frames, EventType::TextDelta).is_empty());
    let rt = cloud.running.app.agent().await.unwrap();
    let history = rt.runs.history(&protocol::ids::ThreadId(t.clone())).await.unwrap().expect("history saved");
    let history = String::from_utf8(history).unwrap();
    assert!(history.contains(r#"{\"answered\":false}"#), "{history}");

    // A denied approval is a denied result too; `scope: session` on an
    // approval always-allows that tool action for the rest of the thread.
    cloud.chat(ALICE, &t, "Delete the scratch workflow").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let req = payload(frames.last().unwrap());
    assert_eq!((req["severity"].as_str(), req["args"]["workflowId"].as_str()), (Some("warning"), Some("wf-1")));
    cloud.confirm(ALICE, &request_id(&frames), json!({"approved": false})).await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let denied = payload(find(&frames, EventType::ToolResult)[0]);
    assert_eq!(denied["result"]["denied"], true, "{denied}");
    cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true, "scope": "session"})).await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(find(&frames, EventType::ToolResult)[0])["result"], json!({"archived": "wf-2"}));

    // Same action again in this thread: no confirmation any more.
    cloud.chat(ALICE, &t, "Delete the scratch workflow").await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty(), "{:?}", kinds(&frames));
    assert_eq!(find(&frames, EventType::ToolResult).len(), 2);
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}

#[tokio::test]
async fn the_admin_policy_blocks_or_allows_an_action_without_asking() {
    // blocked: a structured refusal, nothing suspends, the model goes on.
    let blocked = cloud(Setup { approval_policy: Some("workflows.delete=blocked"), ..Setup::default() }).await;
    let t = thread();
    let mut feed = blocked.events(ALICE, &t).await;
    blocked.chat(ALICE, &t, "Delete the scratch workflow").await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty(), "{:?}", kinds(&frames));
    let results = find(&frames, EventType::ToolResult);
    assert_eq!(results.len(), 2);
    for r in results {
        let r = payload(r);
        assert_eq!((r["result"]["blocked"].as_bool(), r["result"]["reason"].as_str()), (Some(true), Some("blocked_by_admin")), "{r}");
        assert!(r["result"]["archived"].is_null(), "the tool did not run: {r}");
    }
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    blocked.stop().await;

    // always_allow: the tool runs at once; other gated actions still ask.
    let cloud = cloud(Setup { approval_policy: Some("workflows.delete=always_allow"), ..Setup::default() }).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Delete the scratch workflow").await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty(), "{:?}", kinds(&frames));
    let archived: Vec<_> = find(&frames, EventType::ToolResult).iter().map(|r| payload(r)["result"]["archived"].clone()).collect();
    assert_eq!(archived, [json!("wf-1"), json!("wf-2")]);
    cloud.chat(ALICE, &t, "Ask me a question").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["inputType"], "questions", "questions are never skipped by policy");
    cloud.stop().await;
}

#[tokio::test]
async fn schema_invalid_input_is_a_tool_error_the_model_reads() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Call ask-user with bad input").await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty());
    let err = payload(find(&frames, EventType::ToolError)[0]);
    assert!(err["error"].as_str().unwrap().contains("input.questions[0].type is required"), "{err}");
    // The durable text block, not the deltas: this run starts before the
    // subscription is admitted (the thread is created by the chat), so live
    // deltas of a fast model may precede it; the block is replayed.
    assert!(!find(&frames, EventType::TextBlock).is_empty(), "the model went on");
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}

#[tokio::test]
async fn an_expired_confirmation_is_resumed_as_a_denial_by_the_sweep() {
    let cloud = cloud(Setup { confirmation_timeout_secs: Some(1), ..Setup::default() }).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Ask me a question").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let req = request_id(&frames);
    // No timeout without the sweep noticing; nothing happens before it.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    api::handlers::sweep::handle(&cloud.running.app).await.unwrap();
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(find(&frames, EventType::ToolResult)[0])["result"], json!({"answered": false}));
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    let (status, _) = cloud.confirm(ALICE, &req, json!({"approved": true})).await;
    assert_eq!(status, 409, "too late");
    cloud.stop().await;
}

/// In AWS the chat, confirm and cancel functions run on
/// `agent::Runtime::control` (no model, no tools: their binaries link
/// neither). A run started there is stepped by the step function's runtime,
/// and "always allow" decided there is recorded from the key the tool named
/// when it asked: the same action later in the run is not asked again.
#[tokio::test]
async fn run_control_without_tools_starts_runs_and_records_session_grants() {
    let cloud = cloud(Setup::default()).await;
    let app = cloud.running.app.clone();
    let control = agent::Runtime::control(&app.config, &app.clients).expect("control runtime");
    assert!(control.tools.names().is_empty() && control.model.is_err(), "{control:?}");
    let (t, user) = (thread(), protocol::UserId("alice".into()));
    let thread_id = protocol::ids::ThreadId(t.clone());
    let mut feed = cloud.events(ALICE, &t).await;
    let chat: agent::run::ChatRequest = serde_json::from_value(json!({"message": "Delete the scratch workflow"})).unwrap();
    agent::run::start(&control, &thread_id, &user, &chat).await.expect("run started");
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["args"]["workflowId"], "wf-1");
    let always: agent::run::ConfirmRequest = serde_json::from_value(json!({"approved": true, "scope": "session"})).unwrap();
    agent::run::confirm(&control, &request_id(&frames), &user, &always).await.expect("confirmed");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert!(find(&frames, EventType::ConfirmationRequest).is_empty(), "wf-2 is covered by the grant: {:?}", kinds(&frames));
    let results: Vec<_> = find(&frames, EventType::ToolResult).iter().map(|f| payload(f)["result"].clone()).collect();
    assert_eq!(results, [json!({"archived": "wf-1"}), json!({"archived": "wf-2"})]);
    assert_eq!(payload(frames.last().unwrap())["status"], "completed");
    cloud.stop().await;
}
