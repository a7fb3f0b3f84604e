//! Executions started and awaited, through the shared execution service
//! (`executions::Executor`): the same records, documents, leases and engine
//! host as every other execution. An execution still going after the wait
//! is reported `running` with its id.

use crate::InstanceError;
use engine::Item;
use executions::{Dispatch, ExecutionError, ExecutionOutcome, Executor, StartRequest};
use serde_json::Value;
use std::time::Duration;

/// How long the agent's tools wait for an execution (the step function is
/// behind no HTTP timeout; the MCP tools wait what their caller can:
/// `INSTANCE_AI_MCP_EXECUTION_WAIT_SECS`).
pub const WAIT: Duration = Duration::from_secs(100);

/// Starts an execution and waits up to `wait` for it.
pub async fn run(executor: &Executor, dispatch: Dispatch, req: StartRequest, wait: Duration) -> Result<ExecutionOutcome, InstanceError> {
    executor.execute_and_wait(req, wait, dispatch).await.map_err(|e| match e {
        ExecutionError::NotFound(m) => InstanceError::NotFound(m),
        ExecutionError::Invalid(m) => InstanceError::Invalid(format!("the workflow cannot run: {m}")),
        ExecutionError::Store(s) => s.into(),
        other => InstanceError::Internal(other.to_string()),
    })
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
            Value::Object(_) => Ok(Item::new(v.clone())),
            other => Err(format!("pin data items must be objects, got {other}")),
        })
        .collect()
}

/// A job's failure (a connection test, a lookup, sandbox work: see
/// `executions::jobs`): no answer in time is the caller's to retry; the
/// rest is logged, not shown.
pub(crate) fn job_error(e: ExecutionError) -> InstanceError {
    match e {
        ExecutionError::Unanswered(m) => InstanceError::Unavailable(m),
        other => InstanceError::Internal(other.to_string()),
    }
}
