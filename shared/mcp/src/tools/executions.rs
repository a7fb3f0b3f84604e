//! Execution tools: one execution (metadata, optionally run data) and search.

use super::{limit, Ctx};
use crate::error::McpError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::data::executions::{DataSelection, Execution, ExecutionSearch, ExecutionStatus};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetExecutionArgs {
    /// The ID of the workflow the execution belongs to
    pub workflow_id: String,
    /// The ID of the execution to retrieve
    pub execution_id: String,
    /// Whether to include full execution result data. Defaults to false (metadata only).
    pub include_data: Option<bool>,
    /// With includeData: return data only for these nodes
    pub node_names: Option<Vec<String>>,
    /// With includeData: limit the number of items per node output
    #[schemars(range(min = 1))]
    pub truncate_data: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionMeta {
    pub id: String,
    pub workflow_id: String,
    pub mode: String,
    pub status: String,
    pub started_at: Option<String>,
    pub stopped_at: Option<String>,
    pub retry_of: Option<String>,
    pub retry_success_id: Option<String>,
    pub wait_till: Option<String>,
}

impl From<Execution> for ExecutionMeta {
    fn from(e: Execution) -> Self {
        ExecutionMeta {
            mode: serde_json::to_value(e.mode).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
            status: e.status.as_str().to_owned(),
            id: e.id,
            workflow_id: e.workflow_id,
            started_at: e.started_at,
            stopped_at: e.stopped_at,
            retry_of: e.retry_of,
            retry_success_id: e.retry_success_id,
            wait_till: e.wait_till,
        }
    }
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetExecutionOut {
    pub execution: Option<ExecutionMeta>,
    /// Run data in n8n's shape: resultData.runData[node][run].data.main[output][item].json
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub async fn get_execution(ctx: &Ctx<'_>, a: GetExecutionArgs) -> Result<GetExecutionOut, McpError> {
    // Owner check in one home: a stranger's execution is not found.
    let not_found = || McpError::NotFound(format!("execution {} of workflow {}", a.execution_id, a.workflow_id));
    let (exec, meta) = match ctx.instance().execution_access(&ctx.caller(), &a.execution_id, "workflow:read").await {
        Ok(found) => found,
        Err(instance::InstanceError::NotFound(_)) => return Err(not_found()),
        Err(e) => return Err(e.into()),
    };
    if exec.workflow_id != a.workflow_id {
        return Err(not_found());
    }
    ctx.workflow(&meta.id, "workflow:read", true).await?;
    let data = if a.include_data.unwrap_or(false) {
        let sel = DataSelection { node_names: a.node_names, max_items: a.truncate_data.map(|n| n as usize) };
        // The stored document also holds the workflow snapshot and engine
        // state; the tool returns n8n's run data part only.
        ctx.data().executions.get_data(&exec.id, &sel).await?.map(|mut doc| {
            let result = doc.get_mut("resultData").map(Value::take).unwrap_or(Value::Null);
            serde_json::json!({"resultData": result})
        })
    } else {
        None
    };
    Ok(GetExecutionOut { execution: Some(exec.into()), data, error: None })
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum StatusArg {
    Canceled,
    Crashed,
    Error,
    New,
    Running,
    Success,
    Unknown,
    Waiting,
}

impl From<StatusArg> for ExecutionStatus {
    fn from(s: StatusArg) -> Self {
        match s {
            StatusArg::Canceled => ExecutionStatus::Canceled,
            StatusArg::Crashed => ExecutionStatus::Crashed,
            StatusArg::Error => ExecutionStatus::Error,
            StatusArg::New => ExecutionStatus::New,
            StatusArg::Running => ExecutionStatus::Running,
            StatusArg::Success => ExecutionStatus::Success,
            StatusArg::Unknown => ExecutionStatus::Unknown,
            StatusArg::Waiting => ExecutionStatus::Waiting,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchExecutionsArgs {
    /// Filter executions by workflow ID
    pub workflow_id: Option<String>,
    /// Filter by execution statuses
    pub status: Option<Vec<StatusArg>>,
    /// ISO 8601 timestamp: only executions that started after it
    pub started_after: Option<String>,
    /// ISO 8601 timestamp: only executions that started before it
    pub started_before: Option<String>,
    /// Limit the number of results (max 200)
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// Cursor: the last execution ID of the previous page
    pub last_id: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionRow {
    pub id: String,
    pub workflow_id: String,
    pub status: String,
    pub mode: String,
    pub started_at: Option<String>,
    pub stopped_at: Option<String>,
    pub wait_till: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct SearchExecutionsOut {
    pub data: Vec<ExecutionRow>,
    /// Total matching executions, or -1 if unavailable
    pub count: i64,
    pub estimated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub async fn search_executions(ctx: &Ctx<'_>, a: SearchExecutionsArgs) -> Result<SearchExecutionsOut, McpError> {
    // Every workflow the user can read that is available in MCP (or the one named).
    let search = ExecutionSearch {
        workflow_ids: vec![],
        statuses: a.status.unwrap_or_default().into_iter().map(Into::into).collect(),
        started_after: a.started_after,
        started_before: a.started_before,
        limit: Some(limit(a.limit, 200, 20)?),
        last_id: a.last_id,
    };
    let (page, _) = ctx.instance().search_executions(&ctx.caller(), a.workflow_id.as_deref(), true, search).await?;
    Ok(SearchExecutionsOut {
        count: page.count as i64,
        estimated: page.estimated,
        error: None,
        data: page
            .data
            .into_iter()
            .map(|e| {
                let m = ExecutionMeta::from(e);
                ExecutionRow {
                    id: m.id,
                    workflow_id: m.workflow_id,
                    status: m.status,
                    mode: m.mode,
                    started_at: m.started_at,
                    stopped_at: m.stopped_at,
                    wait_till: m.wait_till,
                }
            })
            .collect(),
    })
}
