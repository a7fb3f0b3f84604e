//! `eval-config` end to end through HTTP + SSE with the scripted model and
//! the real domain layer: configs are checked against the workflow's nodes,
//! the data table and the judge's credential; create, update and delete ask
//! first; describe shows the metrics in full; another user's workflow is
//! not found.

mod agent_common;

use agent_common::*;
use instance::{Caller, Instance};
use protocol::events::EventType;
use protocol::UserId;
use serde_json::{json, Value};
use std::sync::Arc;
use store::data::data_tables::{ColumnType, NewColumn};
use store::data::workflows::{NewWorkflow, WorkflowBody};

fn call(args: Value) -> Value {
    json!({"toolCalls": [{"name": "eval-config", "args": args}]})
}

fn results(frames: &[Frame]) -> Vec<Result<Value, String>> {
    find(frames, EventType::ToolCall)
        .into_iter()
        .map(|c| {
            let c = payload(c);
            let done = frames.iter().filter(|f| matches!(f.kind(), EventType::ToolResult | EventType::ToolError)).map(payload).find(|p| p["toolCallId"] == c["toolCallId"]).expect("settled");
            match done.get("result") {
                Some(r) => Ok(r.clone()),
                None => Err(done["error"].as_str().unwrap_or_default().to_owned()),
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eval_configs_are_validated_stored_and_changed_with_approval() {
    let model = Arc::new(LateScript::default());
    let setup = Setup { stubs: false, ..Setup::default() };
    let cloud = cloud_with(setup, |c| (c.clone(), ()), Some(model.clone() as Arc<dyn agent::model::ModelProvider>)).await.0;
    let inst = Instance::new(&cloud.running.app.clients, &cloud.running.app.config).await.unwrap();
    let alice = Caller::new(UserId("alice".into()));
    let project = inst.write_project(&alice, "workflow:create").await.unwrap();
    let nodes = json!([
        {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
        {"name": "Answer", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [200, 0], "parameters": {}}
    ]);
    let connections = json!({"Start": {"main": [[{"node": "Answer", "type": "main", "index": 0}]]}});
    let body = WorkflowBody { nodes, connections, settings: json!({}), pin_data: Value::Null, meta: Value::Null };
    let new = NewWorkflow { name: "Support bot".into(), description: None, project_id: project.clone(), folder_id: None, body, available_in_mcp: false };
    let wf = inst.data.workflows.create(new, &alice.user).await.unwrap().meta.id;
    let cols = [NewColumn { name: "question".into(), kind: ColumnType::String }, NewColumn { name: "expected".into(), kind: ColumnType::String }];
    let table = inst.create_data_table(&alice, None, "Support cases", &cols).await.unwrap().id;
    let (status, cred) = cloud.post(ALICE, "/instance-ai/credentials", json!({"name": "Judge", "type": "openAiApi", "data": {"apiKey": "sk-test-judge"}})).await;
    assert_eq!(status, 201, "{cred}");
    let cred = cred["id"].as_str().unwrap().to_owned();

    let metric = json!({"name": "Correct", "preset": "correctness", "credentialId": cred, "model": "gpt-4.1-mini", "provider": "openai",
        "actualAnswer": "{{ $json.output }}", "expectedAnswer": "{{ $json.expected }}", "outputType": "numeric"});
    let config = |name: &str, end: &str, table: &str| json!({"workflowId": wf, "name": name, "startNodeName": "Start", "endNodeName": end, "dataTableId": table, "metrics": [metric]});
    let mut create = config("Accuracy", "Answer", &table);
    create["action"] = json!("create");
    let mut bad_node = config("Broken", "Reply", &table);
    bad_node["action"] = json!("create");
    let mut bad_table = config("Broken", "Answer", "no-such-table");
    bad_table["action"] = json!("create");
    let mut no_expected = config("Broken", "Answer", &table);
    no_expected["action"] = json!("create");
    no_expected["metrics"][0].as_object_mut().unwrap().remove("expectedAnswer");
    let first = json!({"$fromResult": {"turn": 0, "call": 0, "pointer": "/config/id"}});
    let mut update = config("Accuracy v2", "Answer", &table);
    update["action"] = json!("update");
    update["configId"] = first.clone();
    model.set(json!({"conversations": {"Set up an evaluation": [
        call(create),
        call(bad_node),
        call(bad_table),
        call(no_expected),
        call(json!({"action": "list", "workflowId": wf})),
        call(update),
        call(json!({"action": "describe", "workflowId": wf, "configId": first})),
        call(json!({"action": "delete", "workflowId": wf, "configId": first})),
        call(json!({"action": "list", "workflowId": wf})),
        {"text": "The evaluation config is stored; running it comes later."}
    ]}}));
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    assert_eq!(cloud.chat(ALICE, &t, "Set up an evaluation").await.0, 200);
    // create, update and delete each ask; the bad configs are refused before asking.
    for expected in ["Create the evaluation config \"Accuracy\" for Support bot?", "Replace evaluation config", "Delete evaluation config"] {
        let frames = feed.until(WAIT, |f| matches!(f.kind(), EventType::RunFinish | EventType::ConfirmationRequest)).await;
        let card = payload(frames.last().unwrap());
        assert!(card["message"].as_str().unwrap_or_default().starts_with(expected), "{card}");
        assert_eq!(card["resourceName"], "Support bot");
        assert_eq!(cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true})).await.0, 200);
    }
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "completed", "{:?}", kinds(&frames));
    let r = results(&feed.seen);
    let created = r[0].as_ref().unwrap();
    assert_eq!((created["config"]["name"].as_str(), created["config"]["dataTableId"].as_str()), (Some("Accuracy"), Some(table.as_str())));
    assert!(r[1].as_ref().unwrap_err().contains("no node named \"Reply\""), "{:?}", r[1]);
    assert!(r[2].as_ref().unwrap_err().contains("no data table \"no-such-table\""), "{:?}", r[2]);
    assert!(r[3].as_ref().unwrap_err().contains("needs expectedAnswer"), "{:?}", r[3]);
    let listed = r[4].as_ref().unwrap();
    assert_eq!(listed["configs"].as_array().unwrap().len(), 1);
    assert!(listed["configs"][0]["metrics"][0].get("expectedAnswer").is_none(), "the summary leaves expressions out");
    assert_eq!(r[5].as_ref().unwrap()["config"]["name"], "Accuracy v2");
    let described = r[6].as_ref().unwrap();
    assert_eq!((described["config"]["name"].as_str(), described["config"]["metrics"][0]["expectedAnswer"].as_str()), (Some("Accuracy v2"), Some("{{ $json.expected }}")));
    assert_eq!(r[7].as_ref().unwrap()["success"], true);
    assert_eq!(r[8].as_ref().unwrap()["configs"], json!([]));

    // Bob cannot see Alice's workflow's configs.
    model.set(json!({"conversations": {"List evals": [call(json!({"action": "list", "workflowId": wf})), {"text": "None."}]}}));
    let t2 = thread();
    let mut bob = cloud.sse_events(BOB, &t2).await;
    assert_eq!(cloud.chat(BOB, &t2, "List evals").await.0, 200);
    let frames = bob.until_type(EventType::RunFinish, WAIT).await;
    assert!(results(&frames)[0].as_ref().unwrap_err().contains("not found"), "{:?}", results(&frames));
    cloud.stop().await;
}
