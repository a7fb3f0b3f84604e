//! Executions on the engine, in this process: `execute_workflow` and
//! `test_workflow` wait for the result (the spec's tools are synchronous),
//! so the run happens inside the MCP request, on a blocking thread (the JS
//! sandbox is synchronous), bounded by a timeout below the function's own.
//! The execution record and its run data go to the Executions table like
//! any other execution.

use crate::error::McpError;
use engine::host::{CredentialsProvider, Host};
use engine::{Engine, EngineSettings, Graph, Item, RunOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use store::data::credentials::Credentials;
use store::data::executions::{ExecutionMode, ExecutionStatus, NewExecution};
use store::data::InstanceData;

/// Below the MCP function's 120 s timeout, so the record is always finished.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(100);

pub struct RunRequest {
    pub workflow_id: String,
    pub name: String,
    /// n8n workflow JSON parts: nodes, connections, settings.
    pub nodes: Value,
    pub connections: Value,
    pub settings: Value,
    pub mode: ExecutionMode,
    pub pin_data: BTreeMap<String, Vec<Item>>,
    pub trigger: Option<String>,
    pub trigger_items: Option<Vec<Item>>,
}

pub struct RunOutcome {
    pub execution_id: String,
    pub status: ExecutionStatus,
    pub error: Option<String>,
}

/// Decrypts a node's credential on demand; the secret goes to the node and
/// nowhere else.
struct StoreCredentials {
    credentials: Credentials,
    handle: tokio::runtime::Handle,
}

impl CredentialsProvider for StoreCredentials {
    fn get(&self, _cred_type: &str, reference: &Value) -> Result<Value, String> {
        let id = reference.get("id").and_then(Value::as_str).ok_or("credential reference has no id")?;
        // Runs on the blocking thread the engine runs on, never on a runtime worker.
        let secret = self.handle.block_on(self.credentials.decrypt_secret(id)).map_err(|e| e.to_string())?;
        Ok(secret.expose().clone())
    }
}

pub fn graph(req: &RunRequest) -> Result<Graph, McpError> {
    let wf = json!({
        "id": req.workflow_id,
        "name": req.name,
        "nodes": req.nodes,
        "connections": req.connections,
        "settings": if req.settings.is_object() { req.settings.clone() } else { json!({}) },
    });
    Graph::from_json(&wf).map_err(|e| McpError::Invalid(e.to_string()))
}

/// Runs to the end and stores the execution with its run data.
pub async fn run(data: &InstanceData, req: RunRequest) -> Result<RunOutcome, McpError> {
    let graph = graph(&req)?;
    let exec = data
        .executions
        .create(NewExecution {
            workflow_id: req.workflow_id.clone(),
            mode: req.mode,
            status: ExecutionStatus::Running,
            started_at: Some(store::data::db::now_iso()),
            retry_of: None,
            retention_secs: None,
        })
        .await?;
    let host = Host {
        credentials: Some(Arc::new(StoreCredentials { credentials: data.credentials.clone(), handle: tokio::runtime::Handle::current() })),
        ..Host::default()
    };
    let mode = match req.mode {
        ExecutionMode::Manual => "manual",
        ExecutionMode::Webhook => "webhook",
        ExecutionMode::Chat => "chat",
        _ => "trigger",
    };
    let settings = EngineSettings { execution_timeout: Some(RUN_TIMEOUT), mode: mode.into(), ..EngineSettings::default() };
    let opts = RunOptions {
        pin_data: req.pin_data,
        trigger: req.trigger,
        trigger_items: req.trigger_items,
        timeout: Some(RUN_TIMEOUT),
        execution_id: Some(exec.id.clone()),
        ..RunOptions::default()
    };
    let result = tokio::task::spawn_blocking(move || Engine::new(settings, host).run(&graph, opts)).await;
    let (status, error, run_data) = match result {
        Err(join) => (ExecutionStatus::Crashed, Some(format!("the engine crashed: {join}")), None),
        Ok(Err(e)) => (ExecutionStatus::Error, Some(e.to_string()), None),
        Ok(Ok((state, _stats))) => {
            let status = match state.status {
                engine::ExecutionStatus::Success => ExecutionStatus::Success,
                engine::ExecutionStatus::Error => ExecutionStatus::Error,
                engine::ExecutionStatus::Canceled => ExecutionStatus::Canceled,
                engine::ExecutionStatus::Crashed => ExecutionStatus::Crashed,
                engine::ExecutionStatus::Waiting => ExecutionStatus::Waiting,
                engine::ExecutionStatus::Running => ExecutionStatus::Running,
                engine::ExecutionStatus::New => ExecutionStatus::New,
            };
            let error = state.error.as_ref().map(|e| match &e.node {
                Some(n) => format!("{} (node {n:?})", e.message),
                None => e.message.clone(),
            });
            // n8n's IRunExecutionData shape: resultData.runData[node][run].data.main[out][item].
            let mut result_data = json!({
                "runData": serde_json::to_value(&state.run_data).map_err(|e| McpError::Internal(e.to_string()))?,
                "lastNodeExecuted": state.last_node_executed,
            });
            if let Some(e) = &state.error {
                result_data["error"] = serde_json::to_value(e).unwrap_or(Value::Null);
            }
            (status, error, Some(json!({"resultData": result_data, "startData": {}})))
        }
    };
    if status == ExecutionStatus::Waiting {
        // Parked executions are resumed by the executor; keep the run data.
        if let Some(d) = &run_data {
            data.executions.save_data(&exec.id, d).await?;
        }
        data.executions.set_status(&exec.id, status, None).await?;
    } else {
        let finished = if status.is_finished() { status } else { ExecutionStatus::Crashed };
        let fallback = json!({"resultData": {"runData": {}, "error": {"message": error.clone().unwrap_or_default()}}});
        data.executions.finish(&exec.id, finished, Some(run_data.as_ref().unwrap_or(&fallback))).await?;
    }
    Ok(RunOutcome { execution_id: exec.id, status, error })
}

/// Pin data from a tool argument: each entry is `{json: {...}}` or a plain
/// object (taken as the item's json).
pub fn items_from_pins(values: &[Value]) -> Result<Vec<Item>, String> {
    values
        .iter()
        .map(|v| match v {
            Value::Object(m) if m.get("json").is_some_and(Value::is_object) => {
                serde_json::from_value::<Item>(v.clone()).map_err(|e| e.to_string())
            }
            Value::Object(_) => Ok(Item { json: v.clone(), ..Item::default() }),
            other => Err(format!("pin data items must be objects, got {other}")),
        })
        .collect()
}
