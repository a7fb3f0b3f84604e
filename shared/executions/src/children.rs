//! Sub-workflow executions (Execute Workflow) as records of their own, as
//! n8n keeps them: mode `integrated`, the child's document carries
//! `parentExecution: {executionId, workflowId}`, and the engine puts
//! `metadata.subExecution` on the parent node's run.
//!
//! The child runs on the parent's engine thread (the engine's call). Its
//! record is claimed with the parent's lease owner and renewed with the
//! parent's lease, so a child left `running` by a dead process is marked
//! `crashed` by the sweep like any other execution.

use crate::document::{self, StartData};
use crate::error::{ExecutionError, Result};
use crate::host::Secrets;
use crate::progress::{self, ProgressWriter, StoreSink};
use crate::records::{Claim, Records};
use crate::{describe, iso_in};
use engine::host::{SubExecution, SubExecutionRecorder};
use engine::ExecutionState;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;
use store::data::db;
use store::data::executions::{ExecutionMode, ExecutionStatus, NewExecution};
use store::data::InstanceData;
use tokio::runtime::Handle;

/// What every child of one run shares with its root execution.
pub(crate) struct ChildScope {
    pub data: InstanceData,
    pub records: Records,
    pub handle: Handle,
    pub project_id: String,
    /// The root's lease owner: one renewal loop keeps them all.
    pub owner: String,
    pub lease: Duration,
    pub retention_secs: Option<u64>,
    pub timeout_secs: u64,
    pub progress_every: Option<Duration>,
    pub secrets: Secrets,
}

/// The sub-executions of one run.
pub(crate) struct Children {
    scope: ChildScope,
    /// Execution id → workflow id, for the `parentExecution` links (the
    /// root's, then each child's: a child can call a grandchild).
    workflows: Mutex<HashMap<String, String>>,
    running: Mutex<HashMap<String, Running>>,
}

struct Running {
    workflow: Value,
    start: StartData,
    parent: Value,
    writer: Option<ProgressWriter>,
}

impl Children {
    /// `root`: the execution id and workflow id of the run.
    pub fn new(scope: ChildScope, root_execution_id: &str, root_workflow_id: &str) -> Self {
        Children {
            scope,
            workflows: Mutex::new(HashMap::from([(root_execution_id.to_owned(), root_workflow_id.to_owned())])),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Children running now (their leases are renewed with the root's).
    pub fn running_ids(&self) -> Vec<String> {
        self.running
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    async fn create(&self, workflow_id: &str, doc: &Value) -> Result<String> {
        let executions = &self.scope.data.executions;
        let exec = executions
            .create(NewExecution {
                workflow_id: workflow_id.to_owned(),
                mode: ExecutionMode::Integrated,
                status: ExecutionStatus::New,
                started_at: None,
                retry_of: None,
                retention_secs: self.scope.retention_secs,
            })
            .await?;
        if let Err(e) = executions.save_data(&exec.id, doc).await {
            let _ = self
                .scope
                .records
                .fail_unstarted(&exec.id, &format!("the execution could not be stored: {e}"))
                .await;
            return Err(e.into());
        }
        let claim = self
            .scope
            .records
            .claim(&exec.id, ExecutionStatus::New, &self.scope.owner, &iso_in(self.scope.lease), &db::now_iso())
            .await?;
        if claim == Claim::Refused {
            // Nobody else knows the id yet: only a store fault gets here.
            return Err(ExecutionError::Invalid(format!("sub-execution {} could not be claimed", exec.id)));
        }
        Ok(exec.id)
    }

    async fn record_end(&self, id: &str, status: ExecutionStatus, message: Option<&str>, doc: &Value) -> Result<()> {
        self.scope.data.executions.save_data(id, doc).await?;
        if !self.scope.records.finish(id, &self.scope.owner, status, message).await? {
            tracing::warn!(executionId = %id, "sub-execution lease lost before its result was recorded");
        }
        Ok(())
    }
}

/// The record's status and message for a child's final engine state.
fn child_status(st: &ExecutionState) -> (ExecutionStatus, Option<String>) {
    match st.status {
        engine::ExecutionStatus::Success => (ExecutionStatus::Success, None),
        engine::ExecutionStatus::Error => (
            ExecutionStatus::Error,
            Some(st.error.as_ref().map(describe).unwrap_or_else(|| "the workflow failed".into())),
        ),
        // The parent's cancel token (a stop request, or its timeout).
        engine::ExecutionStatus::Canceled => (
            ExecutionStatus::Canceled,
            Some(st.error.as_ref().map(describe).unwrap_or_else(|| "The execution was canceled".into())),
        ),
        engine::ExecutionStatus::Waiting => (
            ExecutionStatus::Error,
            Some("the sub-workflow tried to wait longer than an in-process wait; sub-workflows cannot be parked".into()),
        ),
        other => (ExecutionStatus::Error, Some(format!("the engine ended with status {other:?}"))),
    }
}

impl SubExecutionRecorder for Children {
    fn start(&self, workflow: &Value, parent_execution_id: &str) -> std::result::Result<SubExecution, String> {
        let workflow_id = workflow
            .get("id")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("unsaved")
            .to_owned();
        let parent_workflow = self
            .workflows
            .lock()
            .ok()
            .and_then(|m| m.get(parent_execution_id).cloned())
            .unwrap_or_default();
        let parent = json!({ "executionId": parent_execution_id, "workflowId": parent_workflow });
        let mut snapshot = workflow.clone();
        if let Value::Object(m) = &mut snapshot {
            m.insert("projectId".into(), json!(self.scope.project_id));
        }
        let start = StartData {
            timeout_secs: self.scope.timeout_secs,
            ..StartData::default()
        };
        let mut doc = document::initial(snapshot.clone(), &start, &BTreeMap::new()).map_err(|e| e.to_string())?;
        doc["parentExecution"] = parent.clone();
        let id = self
            .scope
            .handle
            .block_on(self.create(&workflow_id, &doc))
            .map_err(|e| format!("the sub-execution could not be recorded: {e}"))?;
        let (progress, writer) = match self.scope.progress_every {
            Some(every) => {
                let sink = StoreSink {
                    executions: self.scope.data.executions.clone(),
                    id: id.clone(),
                    workflow: snapshot.clone(),
                    start: start.clone(),
                    parent: Some(parent.clone()),
                    secrets: self.scope.secrets.clone(),
                };
                let (hook, writer) = progress::start(&self.scope.handle, sink, every);
                (Some(hook), Some(writer))
            }
            None => (None, None),
        };
        if let Ok(mut m) = self.workflows.lock() {
            m.insert(id.clone(), workflow_id.clone());
        }
        if let Ok(mut m) = self.running.lock() {
            m.insert(id.clone(), Running { workflow: snapshot, start, parent, writer });
        }
        tracing::info!(executionId = %id, parentExecutionId = %parent_execution_id, "sub-execution started");
        Ok(SubExecution {
            execution_id: id,
            workflow_id,
            progress,
        })
    }

    fn finish(&self, execution_id: &str, outcome: std::result::Result<&ExecutionState, &str>) -> std::result::Result<(), String> {
        let running = self
            .running
            .lock()
            .ok()
            .and_then(|mut m| m.remove(execution_id))
            .ok_or_else(|| format!("sub-execution {execution_id} is not running here"))?;
        if let Some(w) = running.writer {
            // Before the final write, so no progress write lands after it.
            self.scope.handle.block_on(w.stop());
        }
        let (status, message, mut doc) = match outcome {
            Ok(st) => {
                let (status, message) = child_status(st);
                let error = match (&st.error, &message) {
                    (Some(e), _) => serde_json::to_value(e).ok(),
                    (None, Some(m)) if status != ExecutionStatus::Success => Some(json!({ "message": m })),
                    _ => None,
                };
                let doc = document::after_run(&running.workflow, &running.start, st, error.as_ref(), false)
                    .map_err(|e| e.to_string())?;
                (status, message, doc)
            }
            Err(reason) => (
                ExecutionStatus::Error,
                Some(reason.to_owned()),
                document::failed_before_run(&running.workflow, &running.start, reason),
            ),
        };
        doc["parentExecution"] = running.parent;
        self.scope.secrets.scrub(&mut doc);
        let message = message.map(|m| self.scope.secrets.scrub_str(&m));
        self.scope.handle
            .block_on(self.record_end(execution_id, status, message.as_deref(), &doc))
            .map_err(|e| format!("the sub-execution's result could not be recorded: {e}"))?;
        tracing::info!(executionId = %execution_id, status = status.as_str(), "sub-execution finished");
        Ok(())
    }
}
