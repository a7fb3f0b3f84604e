//! Suspension records: a tool call waiting for a human, `(req#<requestId>,
//! meta)` in the Agent table. Written together with the chain's resume
//! checkpoint ([`crate::runs::Runs::suspend`]); its `state` goes
//! `pending → approved | denied | cancelled | expired` under a condition
//! ([`crate::runs::Runs::decide`]), so the first decision wins.
//!
//! A wait record (a tool call parked on a workflow execution,
//! [`crate::runs::Runs::park`]) is the same item with `kind = execution`,
//! state `waiting` (never `pending`: no one can confirm it), the execution's
//! id and what the tool needs to finish the call ([`ExecutionWait`]).

use crate::data::db::{get_s, key, n, s, Item, Table};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use protocol::ids::{AgentId, RunId, ThreadId};
use protocol::UserId;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct Suspension {
    pub request_id: String,
    pub thread_id: ThreadId,
    pub run_id: RunId,
    pub agent_id: AgentId,
    pub user_id: UserId,
    pub tool_call_id: String,
    pub tool_name: String,
    pub args: Map<String, Value>,
    /// The step that suspended; the resume step is `step + 1`.
    pub step: u64,
    /// `pending`, `approved`, `denied`, `cancelled`, `expired`.
    pub state: String,
    /// The decision as confirmed (`approved`, `userInput`, `answers`, `scope`).
    pub decision: Option<Value>,
    pub created_at: u64,
    /// Set on a wait record: the execution the call waits on.
    pub wait: Option<ExecutionWait>,
    /// The session grant an "always allow" answer records: the tool's key
    /// for this call, computed when it asked (so `confirm` needs no tools).
    pub allow_key: Option<String>,
}

/// What a call parked on an execution waits for.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionWait {
    pub execution_id: String,
    /// Epoch ms after which the sweep resumes the call without a completion.
    pub deadline_ms: u64,
    /// The tool's own context for finishing the call (opaque here).
    pub state: Value,
}

impl Suspension {
    /// The item [`crate::runs::Runs::suspend`] writes.
    pub fn to_item(&self) -> Item {
        let mut item = key(format!("req#{}", self.request_id), "meta");
        item.insert("requestId".into(), s(&self.request_id));
        item.insert("threadId".into(), s(&self.thread_id.0));
        item.insert("runId".into(), s(&self.run_id.0));
        item.insert("agentId".into(), s(&self.agent_id.0));
        item.insert("userId".into(), s(&self.user_id.0));
        item.insert("toolCallId".into(), s(&self.tool_call_id));
        item.insert("toolName".into(), s(&self.tool_name));
        item.insert("args".into(), s(Value::Object(self.args.clone()).to_string()));
        item.insert("step".into(), n(self.step));
        item.insert("state".into(), s(&self.state));
        item.insert("createdAt".into(), n(self.created_at));
        if let Some(k) = &self.allow_key {
            item.insert("allowKey".into(), s(k));
        }
        if let Some(w) = &self.wait {
            item.insert("kind".into(), s("execution"));
            item.insert("executionId".into(), s(&w.execution_id));
            item.insert("deadline".into(), n(w.deadline_ms));
            item.insert("waitState".into(), s(w.state.to_string()));
        }
        item
    }

    fn from_item(item: &Item) -> Result<Suspension, StoreError> {
        let req = |name: &str| {
            get_s(item, name).map(str::to_owned).ok_or_else(|| StoreError::Corrupt(format!("suspension without {name}")))
        };
        let num = |name: &str| match item.get(name) {
            Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
            _ => 0,
        };
        let args = match serde_json::from_str::<Value>(&req("args")?) {
            Ok(Value::Object(m)) => m,
            _ => return Err(StoreError::Corrupt("suspension args are not an object".into())),
        };
        Ok(Suspension {
            request_id: req("requestId")?,
            thread_id: ThreadId(req("threadId")?),
            run_id: RunId(req("runId")?),
            agent_id: AgentId(req("agentId")?),
            user_id: UserId(req("userId")?),
            tool_call_id: req("toolCallId")?,
            tool_name: req("toolName")?,
            args,
            step: num("step"),
            state: req("state")?,
            decision: get_s(item, "decision").and_then(|d| serde_json::from_str(d).ok()),
            created_at: num("createdAt"),
            wait: match get_s(item, "kind") {
                Some("execution") => Some(ExecutionWait {
                    execution_id: req("executionId")?,
                    deadline_ms: num("deadline"),
                    state: get_s(item, "waitState").and_then(|v| serde_json::from_str(v).ok()).unwrap_or(Value::Null),
                }),
                _ => None,
            },
            allow_key: get_s(item, "allowKey").map(str::to_owned),
        })
    }
}

#[derive(Clone, Debug)]
pub struct Suspensions {
    table: Table,
}

impl Suspensions {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Suspensions { table: Table::new(client, table) }
    }

    /// The record, read consistently (the resumed step re-checks the state).
    pub async fn get(&self, request_id: &str) -> Result<Option<Suspension>, StoreError> {
        let item = self.table.get_raw(&format!("req#{request_id}"), "meta").await?;
        item.map(|i| Suspension::from_item(&i)).transpose()
    }

    /// The record if `user` owns it; someone else's is `NotFound`, like a missing one.
    pub async fn get_owned(&self, request_id: &str, user: &UserId) -> Result<Suspension, StoreError> {
        match self.get(request_id).await? {
            Some(sus) if &sus.user_id == user => Ok(sus),
            _ => Err(StoreError::NotFound(format!("confirmation request {request_id} not found"))),
        }
    }

    /// Marks a pending suspension (or a wait record) cancelled: the run was
    /// cancelled while waiting; `false` when it was decided first.
    pub async fn cancel(&self, request_id: &str) -> Result<bool, StoreError> {
        self.table.count();
        let result = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(format!("req#{request_id}"), "meta")))
            .update_expression("SET #state = :c")
            .condition_expression("#state = :pending OR #state = :waiting")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":c", s("cancelled"))
            .expression_attribute_values(":pending", s("pending"))
            .expression_attribute_values(":waiting", s("waiting"))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if crate::data::db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }
}
