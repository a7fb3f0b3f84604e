//! Resuming a `waiting` execution from outside: a call to its resume URL
//! (`/webhook-waiting/<id>`) or a submission of its form
//! (`/form-waiting/<id>`) continues the Wait node it is parked on, with the
//! request as the node's output.
//!
//! The resumer claims the execution like an executor would (one
//! conditional write: of concurrent calls exactly one resumes it, the others
//! find it no longer waiting), hands the item to the Wait node through the
//! node's state in the stored engine state, and parks it due now; the
//! executor then runs it as any due execution.

use crate::document::{self, Respond};
use crate::error::{ExecutionError, Result};
use crate::records::Claim;
use crate::{iso_in, Executor};
use engine::{Item, Node};
use serde_json::{json, Value};
use store::data::db;
use store::data::executions::{DataSelection, ExecutionStatus};

/// The Wait node a waiting execution is parked on.
#[derive(Debug, Clone)]
pub struct WaitingOn {
    pub execution_id: String,
    pub workflow_id: String,
    pub project_id: String,
    pub node: Node,
    /// The execution's workflow snapshot (settings, the node's credentials).
    pub workflow: Value,
}

/// Why a resume did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeRefused {
    /// Not waiting (finished, running, or resumed by another call meanwhile).
    NotWaiting,
}

impl Executor {
    /// The node a `waiting` execution waits in, from its stored state
    /// (`None` when it is not waiting).
    pub async fn waiting_on(&self, id: &str) -> Result<Option<WaitingOn>> {
        let executions = &self.inner.data.executions;
        let Some(exec) = executions.get(id).await? else { return Ok(None) };
        if exec.status != ExecutionStatus::Waiting {
            return Ok(None);
        }
        // Only the base part: the workflow and the engine state, no run data.
        let sel = DataSelection { node_names: Some(Vec::new()), max_items: None };
        let Some(doc) = executions.get_data(id, &sel).await? else { return Ok(None) };
        let Some(name) = doc.pointer("/executionData/engineState/stack/0/node").and_then(Value::as_str) else {
            return Ok(None);
        };
        let workflow = doc.get("workflowData").cloned().unwrap_or(Value::Null);
        let Some(node) = workflow
            .get("nodes")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(name)))
            .and_then(|n| serde_json::from_value::<Node>(n.clone()).ok())
        else {
            return Ok(None);
        };
        Ok(Some(WaitingOn {
            execution_id: id.to_owned(),
            workflow_id: exec.workflow_id,
            project_id: workflow.get("projectId").and_then(Value::as_str).unwrap_or_default().to_owned(),
            node,
            workflow,
        }))
    }

    /// Resumes the execution parked on `node` with `items` as the node's
    /// output; `respond` names the caller that waits for its answer.
    pub async fn resume_waiting(
        &self,
        id: &str,
        node: &str,
        items: Vec<Item>,
        respond: Option<Respond>,
    ) -> Result<std::result::Result<(), ResumeRefused>> {
        let records = self.records();
        let owner = uuid::Uuid::new_v4().simple().to_string();
        let before = records.meta(id).await?.and_then(|m| m.wait_till);
        if records.claim_for_resume(id, &owner, &iso_in(self.settings().lease)).await? == Claim::Refused {
            return Ok(Err(ResumeRefused::NotWaiting));
        }
        let result = self.hand_over(id, node, items, respond).await;
        // Due now on success; back to its old time if the hand-over failed.
        let till = match (&result, &before) {
            (Err(_), Some(t)) => t.clone(),
            _ => db::now_iso(),
        };
        if !records.park(id, &owner, &till).await? {
            return Err(ExecutionError::Corrupt { id: id.to_owned(), reason: "lost the resume claim".into() });
        }
        result?;
        self.inner.sweeper.enqueue(id).await?;
        tracing::info!(executionId = %id, node = %node, "waiting execution resumed by a call");
        Ok(Ok(()))
    }

    async fn hand_over(&self, id: &str, node: &str, items: Vec<Item>, respond: Option<Respond>) -> Result<()> {
        let executions = &self.inner.data.executions;
        let mut doc = executions
            .get_data(id, &DataSelection::default())
            .await?
            .ok_or_else(|| ExecutionError::Corrupt { id: id.to_owned(), reason: "no execution document".into() })?;
        let parked = doc.pointer("/executionData/engineState/stack/0/node").and_then(Value::as_str);
        if parked != Some(node) {
            return Err(ExecutionError::Invalid(format!("execution {id} does not wait in node {node:?}")));
        }
        let items = serde_json::to_value(items).map_err(|e| ExecutionError::Invalid(e.to_string()))?;
        let state = doc
            .pointer_mut("/executionData/engineState")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| ExecutionError::Corrupt { id: id.to_owned(), reason: "no engine state".into() })?;
        let ctx = state.entry("nodeContext").or_insert_with(|| json!({}));
        if let Value::Object(c) = ctx {
            c.insert(node.to_owned(), json!({ engine::nodes::wait::RESUME_ITEMS: items }));
        }
        if let Some(start) = doc.get_mut("startData").and_then(Value::as_object_mut) {
            match respond {
                Some(r) => {
                    start.insert("respond".into(), serde_json::to_value(r).map_err(|e| ExecutionError::Invalid(e.to_string()))?);
                }
                None => {
                    start.remove("respond");
                }
            }
        }
        document::check(id, &doc)?;
        executions.save_data(id, &doc).await?;
        Ok(())
    }
}
