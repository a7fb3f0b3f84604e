//! A thread bound to a project, end to end through HTTP + SSE with the
//! scripted model (`fixtures/project_script.json`) and the real tools: the
//! first chat POST names the project, the thread keeps it, the agent's builds
//! land there; another project on the same thread is refused (an unbound
//! thread included), a project the user
//! is not a member of is not found, and an unbound thread builds in the
//! personal project.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use protocol::UserId;
use serde_json::{json, Value};
use store::data::users_projects::ProjectRole;
use store::data::InstanceData;

const SCRIPT: &str = "project_script.json";

/// The workflow id each build-workflow call of the run returned.
fn built(frames: &[Frame]) -> Vec<String> {
    let calls: Vec<Value> = find(frames, EventType::ToolCall).into_iter().map(payload).filter(|c| c["toolName"] == "build-workflow").collect();
    calls
        .iter()
        .map(|c| {
            let result = frames.iter().map(payload).find(|p| p["toolCallId"] == c["toolCallId"] && p.get("result").is_some()).expect("build settled");
            assert_eq!(result["result"]["success"], true, "{result}");
            result["result"]["workflowId"].as_str().expect("a workflow id").to_owned()
        })
        .collect()
}

/// The `workflows(list)` result of the run.
fn listed(frames: &[Frame]) -> Vec<String> {
    let call = find(frames, EventType::ToolCall).into_iter().map(payload).find(|c| c["toolName"] == "workflows").expect("a list call");
    let result = frames.iter().map(payload).find(|p| p["toolCallId"] == call["toolCallId"] && p.get("result").is_some()).expect("list settled");
    result["result"]["workflows"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap().to_owned()).collect()
}

impl Cloud {
    async fn chat_in(&self, key: &str, thread: &str, message: &str, project: Option<&str>) -> (u16, Value) {
        let mut body = json!({"message": message});
        if let Some(p) = project {
            body["projectId"] = json!(p);
        }
        self.post(key, &format!("/instance-ai/chat/{thread}"), body).await
    }

    async fn finish(&self, feed: &mut Feed) -> Vec<Frame> {
        let frames = feed.until(WAIT, |f| f.kind() == EventType::RunFinish).await;
        assert_eq!(payload(frames.last().unwrap())["status"], "completed", "{:?}", kinds(&frames));
        frames
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thread_bound_to_a_project_builds_there_and_keeps_it() {
    let cloud = cloud(Setup { script: SCRIPT, stubs: false, ..Setup::default() }).await;
    let data = InstanceData::new(&cloud.running.app.clients, &cloud.running.app.config).expect("instance data");
    let (alice, bob, carol) = (UserId("alice".into()), UserId("bob".into()), UserId("carol".into()));
    let (alice_user, _) = data.projects.create_user(&alice, "alice@example.com", None, None).await.unwrap();
    let team = data.projects.create_team_project("Team P", &carol).await.unwrap();
    data.projects.set_member(&team.id, &alice, ProjectRole::Editor).await.unwrap();
    let bobs = data.projects.create_team_project("Bob's team", &bob).await.unwrap();
    let project_of = |id: String| {
        let data = data.clone();
        async move { data.workflows.meta(&id).await.unwrap().expect("the built workflow").project_id }
    };

    // The first message binds the thread; the build lands in the team project.
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    let (status, body) = cloud.chat_in(ALICE, &t, "Build the team workflow", Some(&team.id)).await;
    assert_eq!(status, 200, "{body}");
    let frames = cloud.finish(&mut feed).await;
    let ids = built(&frames);
    assert_eq!(project_of(ids[0].clone()).await, team.id, "the build went to the thread's project");
    assert_eq!(listed(&frames), ["Team intake"], "the agent's listing is the thread's project");

    // A later message without projectId keeps the binding.
    let (status, body) = cloud.chat_in(ALICE, &t, "Build another team workflow", None).await;
    assert_eq!(status, 200, "{body}");
    let frames = cloud.finish(&mut feed).await;
    assert_eq!(project_of(built(&frames)[0].clone()).await, team.id, "still the team project");
    let mut names = listed(&frames);
    names.sort();
    assert_eq!(names, ["Team follow-up", "Team intake"]);

    // Repeating the project is fine; naming another one is refused.
    let (status, body) = cloud.chat_in(ALICE, &t, "Build another team workflow", Some(&alice_user.personal_project_id)).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains(&team.id), "{body}");

    // A project the user is not a member of, or none at all: not found, no run.
    for project in [bobs.id.as_str(), "no-such-project"] {
        let fresh = thread();
        let (status, body) = cloud.chat_in(ALICE, &fresh, "Build the team workflow", Some(project)).await;
        assert_eq!(status, 404, "{project}: {body}");
        assert!(!body.to_string().contains("Bob's team"), "nothing about it leaks: {body}");
    }
    assert!(data.workflows.list(&bob, &Default::default()).await.unwrap().workflows.is_empty(), "nothing was built for bob");

    // An unbound thread builds in the personal project.
    let solo = thread();
    let mut solo_feed = cloud.events(ALICE, &solo).await;
    let (status, body) = cloud.chat_in(ALICE, &solo, "Build the team workflow", None).await;
    assert_eq!(status, 200, "{body}");
    let frames = cloud.finish(&mut solo_feed).await;
    assert_eq!(project_of(built(&frames)[0].clone()).await, alice_user.personal_project_id);
    assert_eq!(listed(&frames), ["Team intake"], "only the personal project's workflow");
    // Its first message bound it to the personal project: a later one cannot move it.
    let (status, body) = cloud.chat_in(ALICE, &solo, "Build another team workflow", Some(&team.id)).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("personal project"), "{body}");
    cloud.stop().await;
}
