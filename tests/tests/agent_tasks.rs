//! Plans: create-tasks asks for plan review, then runs each task as a
//! detached background agent (own agentId, same runId) in dependency order.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn an_approved_plan_runs_background_agents_in_dependency_order() {
    let cloud = cloud(Setup::default()).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    let (_, body) = cloud.chat(ALICE, &t, "Plan the weather build").await;
    let run_id = body["runId"].as_str().unwrap().to_owned();
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    let review = payload(frames.last().unwrap());
    assert_eq!(review["inputType"], "plan-review");
    assert_eq!(review["tasks"]["tasks"].as_array().map(Vec::len), Some(2));
    assert!(!find(&frames, EventType::TasksUpdate).is_empty(), "the plan is shown before the review");
    cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true})).await;

    // Everything up to t2's completion (it may come after run-finish).
    let frames = feed
        .until(Duration::from_secs(40), |f| f.kind() == EventType::AgentCompleted && f.event.agent_id.0 == "agent-t2")
        .await;
    // Whoever finishes a task publishes the plan's state after its agent-completed.
    feed.until_type(EventType::TasksUpdate, WAIT).await;
    let all = &feed.seen;
    assert!(all.iter().all(|f| f.event.run_id.0 == run_id), "every event shares the runId");
    let spawned: Vec<String> = find(all, EventType::AgentSpawned).iter().map(|f| f.event.agent_id.0.clone()).collect();
    assert_eq!(spawned, ["agent-t1", "agent-t2"]);
    let pos = |pred: &dyn Fn(&Frame) -> bool| all.iter().position(pred).unwrap();
    let t1_done = pos(&|f| f.kind() == EventType::AgentCompleted && f.event.agent_id.0 == "agent-t1");
    let t2_spawn = pos(&|f| f.kind() == EventType::AgentSpawned && f.event.agent_id.0 == "agent-t2");
    assert!(t1_done < t2_spawn, "t2 starts after t1 completed: {:?}", kinds(all));
    let t1_spawn = pos(&|f| f.kind() == EventType::AgentSpawned && f.event.agent_id.0 == "agent-t1");
    let first_t1_event = pos(&|f| f.event.agent_id.0 == "agent-t1");
    assert_eq!(t1_spawn, first_t1_event, "agent-spawned is the agent's first event");
    let spawn = payload(&all[t1_spawn]);
    assert_eq!((spawn["parentId"].as_str(), spawn["role"].as_str(), spawn["taskId"].as_str()), (Some("agent-001"), Some("workflow-builder"), Some("t1")));
    let done = payload(frames.last().unwrap());
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"], "Weather workflow verified");
    assert_eq!(find(all, EventType::RunFinish).len(), 1);
    let last_update = find(all, EventType::TasksUpdate).last().map(|f| payload(f)).unwrap();
    assert_eq!(last_update["tasks"][0]["status"], "completed");
    assert_eq!(last_update["tasks"][1]["status"], "completed");
    cloud.stop().await;
}
