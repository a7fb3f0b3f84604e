//! Shared setup: an isolated table and queue set in moto, the repositories,
//! an executor with short leases, a user with a project, and workflow JSON
//! helpers.
#![allow(dead_code)]

use executions::{Executor, ExecutorSettings, HttpPolicy, QueueRecord};
use protocol::UserId;
use serde_json::{json, Value};
use std::time::Duration;
use store::data::users_projects::Project;
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::data::InstanceData;
use store::deployment::QueueId;
use store::testing::TestEnv;

pub struct Ctx {
    pub env: TestEnv,
    pub data: InstanceData,
    pub executor: Executor,
    pub project: Project,
    pub user: UserId,
}

pub fn settings() -> ExecutorSettings {
    ExecutorSettings {
        http: HttpPolicy::AllowListOnly(vec!["127.0.0.1".into()]),
        lease: Duration::from_secs(3),
        cancel_poll: Duration::from_millis(100),
        // Every Wait parks, so waiting is tested without long sleeps.
        inline_wait: Duration::ZERO,
        ..ExecutorSettings::default()
    }
}

pub async fn ctx() -> Ctx {
    ctx_with(settings()).await
}

pub async fn ctx_with(settings: ExecutorSettings) -> Ctx {
    let env = TestEnv::new().await;
    let data = InstanceData::new(&env.clients, &env.config)
        .expect("repositories");
    let url = env
        .config
        .queue_url(QueueId::Runs)
        .expect("runs queue")
        .to_owned();
    let executor = Executor::new(data.clone(), env.clients.sqs.clone(), url, settings).running_here();
    let user: UserId = format!("alice-{}", uuid::Uuid::new_v4().simple())
        .as_str()
        .into();
    let (_, project) = data
        .projects
        .create_user(&user, "alice@example.com", Some("alice"), None)
        .await
        .expect("user");
    Ctx {
        env,
        data,
        executor,
        project,
        user,
    }
}

impl Ctx {
    /// Saves a workflow in the user's project; returns its id.
    pub async fn workflow(&self, wf: &Value) -> String {
        let body = WorkflowBody {
            nodes: wf["nodes"].clone(),
            connections: wf["connections"].clone(),
            settings: wf.get("settings").cloned().unwrap_or_else(|| json!({})),
            pin_data: Value::Null,
            meta: Value::Null,
        };
        self.data
            .workflows
            .create(
                NewWorkflow {
                    name: format!("wf {}", uuid::Uuid::new_v4().simple()),
                    description: None,
                    project_id: self.project.id.clone(),
                    folder_id: None,
                    body,
                    available_in_mcp: true,
                },
                &self.user,
            )
            .await
            .expect("create workflow")
            .meta
            .id
    }

    /// Receives what is on the Runs queue (waiting up to `wait`).
    pub async fn receive(&self, wait: Duration) -> Vec<QueueRecord> {
        let url = self.env.config.queue_url(QueueId::Runs).unwrap();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let out = self
                .env
                .clients
                .sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send()
                .await
                .expect("receive");
            let msgs = out.messages.unwrap_or_default();
            if !msgs.is_empty() || tokio::time::Instant::now() >= deadline {
                return msgs
                    .into_iter()
                    .map(|m| QueueRecord {
                        message_id: m.message_id.unwrap_or_default(),
                        body: m.body,
                    })
                    .collect();
            }
        }
    }

    pub async fn run_data(&self, id: &str) -> Value {
        self.data
            .executions
            .get_data(id, &store::data::executions::DataSelection::default())
            .await
            .expect("read run data")
            .expect("run data stored")
    }
}

pub fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({ "id": name, "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0] })
}

/// Nodes connected in list order.
pub fn chain(nodes: Vec<Value>) -> Value {
    let mut conns = serde_json::Map::new();
    for w in nodes.windows(2) {
        conns.insert(
            w[0]["name"].as_str().unwrap_or("").into(),
            json!({ "main": [[{ "node": w[1]["name"], "type": "main", "index": 0 }]] }),
        );
    }
    json!({ "nodes": nodes, "connections": conns, "settings": { "executionOrder": "v1" } })
}

pub fn trigger() -> Value {
    node("Trigger", "n8n-nodes-base.manualTrigger", 1.0, json!({}))
}

pub fn set(name: &str, field: &str, value: Value) -> Value {
    let ty = if value.is_number() {
        "number"
    } else {
        "string"
    };
    node(
        name,
        "n8n-nodes-base.set",
        3.4,
        json!({ "assignments": { "assignments": [{ "id": "a1", "name": field, "value": value, "type": ty }] }, "includeOtherFields": true, "options": {} }),
    )
}

/// If `$json.<field> > n`.
pub fn if_gt(name: &str, field: &str, n: f64) -> Value {
    node(
        name,
        "n8n-nodes-base.if",
        2.0,
        json!({
            "conditions": {
                "options": { "caseSensitive": true, "leftValue": "", "typeValidation": "strict" },
                "conditions": [{ "id": "c1", "leftValue": format!("={{{{ $json.{field} }}}}"), "rightValue": n, "operator": { "type": "number", "operation": "gt" } }],
                "combinator": "and"
            },
            "options": {}
        }),
    )
}

pub fn wait_secs(name: &str, secs: u64) -> Value {
    node(
        name,
        "n8n-nodes-base.wait",
        1.1,
        json!({ "resume": "timeInterval", "amount": secs, "unit": "seconds" }),
    )
}

/// Items of a node's last run on output `o`.
pub fn output(doc: &Value, node: &str, o: usize) -> Vec<Value> {
    doc["resultData"]["runData"][node]
        .as_array()
        .and_then(|runs| runs.last())
        .and_then(|r| r["data"]["main"][o].as_array())
        .map(|items| items.iter().map(|i| i["json"].clone()).collect())
        .unwrap_or_default()
}
