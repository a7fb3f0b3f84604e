//! Error workflows: when a production execution fails, the workflow named
//! in its `settings.errorWorkflow` runs (mode `error`) from its Error
//! Trigger with n8n's error data; a failing workflow without that setting
//! that has an Error Trigger of its own runs itself. Manual runs and
//! sub-workflow runs never trigger one, and an error workflow's own failure
//! does not start it again.

use crate::{ExecutionMode, Executor, StartRequest, WorkflowRef};
use engine::Item;
use serde_json::{json, Value};

pub const ERROR_TRIGGER_TYPE: &str = "n8n-nodes-base.errorTrigger";

/// What the failed execution tells its error workflow.
pub(crate) struct Failure<'a> {
    pub execution_id: &'a str,
    pub mode: ExecutionMode,
    /// The failed run's workflow snapshot (`id`, `name`, `settings`, `nodes`, `projectId`).
    pub workflow: &'a Value,
    pub error: Option<Value>,
    pub last_node: Option<String>,
    pub retry_of: Option<String>,
}

fn error_trigger(nodes: &Value) -> Option<String> {
    nodes
        .as_array()?
        .iter()
        .filter(|n| !n.get("disabled").and_then(Value::as_bool).unwrap_or(false))
        .find(|n| n.get("type").and_then(Value::as_str) == Some(ERROR_TRIGGER_TYPE))
        .and_then(|n| n.get("name").and_then(Value::as_str))
        .map(str::to_owned)
}

/// n8n's `IWorkflowErrorData`.
pub(crate) fn error_data(f: &Failure<'_>, public_url: Option<&str>) -> Value {
    let workflow_id = f.workflow.get("id").and_then(Value::as_str).unwrap_or_default();
    let mut execution = json!({
        "id": f.execution_id,
        "error": f.error.clone().unwrap_or_else(|| json!({"message": "The workflow failed"})),
        "lastNodeExecuted": f.last_node,
        "mode": f.mode,
    });
    if let Some(base) = public_url {
        execution["url"] = json!(format!("{base}/workflow/{workflow_id}/executions/{}", f.execution_id));
    }
    if let Some(r) = &f.retry_of {
        execution["retryOf"] = json!(r);
    }
    json!({
        "execution": execution,
        "workflow": { "id": workflow_id, "name": f.workflow.get("name").cloned().unwrap_or(Value::Null) },
    })
}

impl Executor {
    /// Starts the error workflow of a failed execution, if it has one. Never
    /// fails the caller: what goes wrong is logged.
    pub(crate) async fn run_error_workflow(&self, f: Failure<'_>) {
        if matches!(f.mode, ExecutionMode::Manual | ExecutionMode::Integrated) {
            return;
        }
        let own_id = f.workflow.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let configured = f
            .workflow
            .pointer("/settings/errorWorkflow")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        let target = match configured {
            // An error workflow that fails does not run itself again.
            Some(id) if id == own_id && f.mode == ExecutionMode::Error => return,
            Some(id) => id,
            None if f.mode != ExecutionMode::Error && error_trigger(&f.workflow["nodes"]).is_some() => own_id.clone(),
            None => return,
        };
        let item = Item::new(error_data(&f, self.settings().public_url.as_deref()));
        if let Err(e) = self.start_error_workflow(&target, f.workflow, item).await {
            tracing::warn!(errorWorkflow = %target, error = %e, "the error workflow could not be started");
        }
    }

    async fn start_error_workflow(&self, id: &str, failed: &Value, item: Item) -> crate::error::Result<()> {
        let data = &self.inner.data;
        let meta = data
            .workflows
            .meta(id)
            .await?
            .ok_or_else(|| crate::ExecutionError::NotFound(format!("error workflow {id}")))?;
        // Only a workflow of the same project may receive the failure.
        let project = failed.get("projectId").and_then(Value::as_str).unwrap_or_default();
        if meta.project_id != project || meta.is_archived {
            return Err(crate::ExecutionError::NotFound(format!("error workflow {id} in project {project}")));
        }
        // n8n runs the saved error workflow whether or not it is active: its
        // published version when there is one, else the draft.
        let (reference, body) = match &meta.active_version_id {
            Some(v) => (
                WorkflowRef::Version { workflow_id: id.to_owned(), version_id: v.clone() },
                data.workflows.get_version(id, v).await?.map(|v| v.body),
            ),
            None => (WorkflowRef::Draft(id.to_owned()), data.workflows.get(id).await?.map(|w| w.body)),
        };
        let trigger = body
            .and_then(|b| error_trigger(&b.nodes))
            .ok_or_else(|| crate::ExecutionError::Invalid(format!("error workflow {id} has no enabled Error Trigger node")))?;
        let mut req = StartRequest::new(reference, ExecutionMode::Error);
        req.trigger = Some(trigger);
        req.trigger_items = Some(vec![item]);
        let started = self.start_execution(req).await?;
        tracing::info!(errorWorkflow = %id, executionId = %started, "error workflow started");
        Ok(())
    }
}
