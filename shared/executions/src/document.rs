//! The execution document stored as the execution's run data (the store
//! chunks and compresses it), in n8n's `IRunExecutionData` shape plus what
//! a later process needs to run or resume it:
//!
//! ```text
//! { "workflowData":  { id, name, projectId, nodes, connections, settings, staticData },
//!   "startData":     { trigger, triggerItems, destinationNode, timeoutSecs, respond },
//!   "resultData":    { runData, pinData, lastNodeExecuted, error, tokenUsage },
//!   "executionData": { engineState }   // only while waiting: the engine's state minus runData/pinData
//! }
//! ```
//!
//! The workflow is a snapshot taken at start, so a run executes exactly
//! what was requested even if the workflow is edited while it is queued.

use crate::error::{ExecutionError, Result};
use engine::{ExecutionState, Item};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_items: Option<Vec<Item>>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trigger_output: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_node: Option<String>,
    /// A run-step's input when it is not the chain above the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_seed: Option<crate::StepSeed>,
    pub timeout_secs: u64,
    /// An HTTP caller waits for this execution's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond: Option<Respond>,
    /// A verification run's simulation (copied to `resultData.simulation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Value>,
    /// A step on a tool: the arguments its `$fromAI` calls get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_arguments: Option<Value>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Who waits for an execution's HTTP answer: the node whose response
/// settings apply (the Webhook or Form Trigger it started from, or the
/// Wait node a call resumed) and the caller's token (the stored answer
/// names it, so a later resume's caller never reads an earlier answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Respond {
    pub node: String,
    pub token: String,
    /// The caller reads a streamed answer (the Chat Trigger's `streaming`
    /// mode): the run's chunks go to the store as they come (`stream`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
}

/// What `run_execution` reads back.
pub(crate) struct Loaded {
    pub workflow: Value,
    pub project_id: String,
    pub start: StartData,
    pub pin_data: BTreeMap<String, Vec<Item>>,
    /// Present when resuming a `waiting` execution.
    pub state: Option<ExecutionState>,
}

fn corrupt(id: &str, reason: impl Into<String>) -> ExecutionError {
    ExecutionError::Corrupt {
        id: id.to_owned(),
        reason: reason.into(),
    }
}

pub(crate) fn initial(
    workflow: Value,
    start: &StartData,
    pin_data: &BTreeMap<String, Vec<Item>>,
) -> Result<Value> {
    let mut doc = json!({
        "workflowData": workflow,
        "startData": serde_json::to_value(start).map_err(|e| ExecutionError::Invalid(e.to_string()))?,
        "resultData": { "runData": {}, "pinData": serde_json::to_value(pin_data).map_err(|e| ExecutionError::Invalid(e.to_string()))? },
    });
    if let Some(sim) = &start.simulation {
        doc["resultData"]["simulation"] = sim.clone();
    }
    Ok(doc)
}

pub(crate) fn load(id: &str, doc: Value) -> Result<Loaded> {
    let Value::Object(mut doc) = doc else {
        return Err(corrupt(id, "execution data is not an object"));
    };
    let workflow = doc
        .remove("workflowData")
        .filter(Value::is_object)
        .ok_or_else(|| corrupt(id, "no workflowData"))?;
    let project_id = workflow
        .get("projectId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let start: StartData = serde_json::from_value(
        doc.remove("startData")
            .unwrap_or_else(|| json!({"timeoutSecs": 0})),
    )
    .map_err(|e| corrupt(id, format!("startData: {e}")))?;
    let mut result = match doc.remove("resultData") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let pin_value = result.remove("pinData").unwrap_or_else(|| json!({}));
    let pin_data: BTreeMap<String, Vec<Item>> = serde_json::from_value(if pin_value.is_null() {
        json!({})
    } else {
        pin_value.clone()
    })
    .map_err(|e| corrupt(id, format!("pinData: {e}")))?;
    let state = match doc
        .remove("executionData")
        .and_then(|mut e| e.get_mut("engineState").map(Value::take))
    {
        Some(Value::Object(mut st)) => {
            st.insert(
                "runData".into(),
                result.remove("runData").unwrap_or_else(|| json!({})),
            );
            st.insert("pinData".into(), pin_value);
            Some(
                serde_json::from_value(Value::Object(st))
                    .map_err(|e| corrupt(id, format!("engine state: {e}")))?,
            )
        }
        _ => None,
    };
    Ok(Loaded {
        workflow,
        project_id,
        start,
        pin_data,
        state,
    })
}

/// Checks that an edited document still loads.
pub(crate) fn check(id: &str, doc: &Value) -> Result<()> {
    load(id, doc.clone()).map(|_| ())
}

/// The document after a run segment. `keep_state` (waiting) stores what the
/// engine needs to resume; finished executions drop it.
pub(crate) fn after_run(
    workflow: &Value,
    start: &StartData,
    state: &ExecutionState,
    error: Option<&Value>,
    keep_state: bool,
) -> Result<Value> {
    let encode =
        |e: serde_json::Error| ExecutionError::Engine(format!("cannot encode engine state: {e}"));
    let Value::Object(mut st) = state_value(state).map_err(encode)? else {
        return Err(ExecutionError::Engine(
            "engine state is not an object".into(),
        ));
    };
    let run_data = st.remove("runData").unwrap_or_else(|| json!({}));
    let pin_data = st.remove("pinData").unwrap_or_else(|| json!({}));
    let mut result = Map::new();
    result.insert("runData".into(), run_data);
    result.insert("pinData".into(), pin_data);
    result.insert("lastNodeExecuted".into(), json!(state.last_node_executed));
    if let Some(e) = error {
        result.insert("error".into(), e.clone());
    }
    if let Some(sim) = &start.simulation {
        result.insert("simulation".into(), sim.clone());
    }
    // what the execution's chat models used, summed over every AI node's calls
    if let Some(tokens) = st.get("tokenUsage").cloned() {
        result.insert("tokenUsage".into(), tokens);
    }
    let mut doc = json!({
        "workflowData": workflow,
        "startData": serde_json::to_value(start).map_err(encode)?,
        "resultData": Value::Object(result),
    });
    if keep_state {
        doc["executionData"] = json!({ "engineState": Value::Object(st) });
        doc["waitTill"] = json!(state.wait_till);
    }
    Ok(doc)
}

/// The engine state as JSON. Packed outputs (always so in the progress
/// writer's copy) are JSON text, which `to_value` parses with serde_json's
/// default depth limit (it refuses the 128th level): deeper items, which a
/// Code node returns, go through the text and the store's parse instead.
fn state_value(state: &ExecutionState) -> serde_json::Result<Value> {
    serde_json::to_value(state).or_else(|_| store::data::stored_json::parse(&serde_json::to_vec(state)?))
}

/// A document for a run that ended before the engine produced a state.
pub(crate) fn failed_before_run(workflow: &Value, start: &StartData, message: &str) -> Value {
    json!({
        "workflowData": workflow,
        "startData": serde_json::to_value(start).unwrap_or(Value::Null),
        "resultData": { "runData": {}, "error": { "message": message, "name": "WorkflowOperationError" } },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_state_round_trips_through_the_document() {
        let mut st = ExecutionState::new("e1".into());
        st.status = engine::ExecutionStatus::Waiting;
        st.wait_till = Some("2030-01-01T00:00:00.000Z".into());
        st.pin_data.insert(
            "A".into(),
            vec![Item {
                json: json!({"a": 1}).into(),
                ..Item::default()
            }],
        );
        let wf = json!({"id": "w", "projectId": "p", "nodes": [], "connections": {}});
        let start = StartData {
            timeout_secs: 5,
            ..StartData::default()
        };
        let doc = after_run(&wf, &start, &st, None, true).unwrap();
        assert!(
            doc["executionData"]["engineState"].get("runData").is_none(),
            "run data is stored once"
        );
        let back = load("e1", doc).unwrap();
        let state = back.state.unwrap();
        assert_eq!(state.status, engine::ExecutionStatus::Waiting);
        assert_eq!(state.pin_data.len(), 1);
        assert_eq!(back.project_id, "p");
        assert_eq!(back.start.timeout_secs, 5);
    }

    #[test]
    fn packed_items_nested_deeper_than_the_parser_default_go_into_the_document() {
        let mut deep = json!({"end": true});
        for _ in 1..200 {
            deep = json!({"a": deep});
        }
        let items = std::sync::Arc::new(vec![Item { json: json!({"deep": deep.clone()}).into(), ..Item::default() }]);
        let mut task: engine::TaskData = serde_json::from_value(
            json!({"startTime": 0, "executionTime": 0, "executionStatus": "success", "source": []}),
        )
        .unwrap();
        task.data = Some(engine::data::TaskOutputs::new([items]));
        task.pack_outputs();
        let mut st = ExecutionState::new("e1".into());
        st.run_data.insert("Code".into(), vec![task]);
        let wf = json!({"id": "w", "projectId": "p", "nodes": [], "connections": {}});
        let doc = after_run(&wf, &StartData::default(), &st, None, false).unwrap();
        assert!(doc["resultData"]["runData"]["Code"][0]["data"]["main"][0][0]["json"]["deep"] == deep);
    }

    #[test]
    fn a_document_without_workflow_is_corrupt() {
        assert!(matches!(
            load("x", json!({"resultData": {}})),
            Err(ExecutionError::Corrupt { .. })
        ));
    }
}
