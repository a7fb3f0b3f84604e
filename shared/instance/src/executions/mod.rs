//! Executions: start a run (type-aware trigger input) or a run-step (its
//! three input modes and every refusal), read where one stands, debug it,
//! page a node's output, replay a node's parameter resolution, stop it, list
//! them. One home for each; the agent's `executions` tool and the MCP
//! execution tools are front doors.
//!
//! Starting and finishing are separate calls ([`Started`] carries what the
//! finish needs and serializes), so a caller can wait inline for a while and
//! hand the rest of the wait to someone else (the agent parks its chain on
//! the execution; see `agent::tools::executions`).
//!
//! Access: an execution is readable by whoever may read its workflow
//! (`workflow:read`), stoppable and runnable with `workflow:execute`;
//! anyone else gets not-found.

pub mod plan;
pub mod trigger;
pub mod view;

use crate::{Caller, Instance, InstanceError};
use engine::Item;
use executions::{ExecutionOutcome, ExecutionStatus, StartRequest, StepSeed, WorkflowRef};
use plan::{InputMode, StepAsk};
pub use plan::InputMode as StepInputMode;
pub use trigger::{TriggerChoice, TriggerInput, WebhookInput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;
use store::data::executions::{DataSelection, Execution, ExecutionMode, ExecutionSearch};
use store::data::workflows::{StatusFilter, WorkflowMeta};
use view::Values;

pub const DEFAULT_TIMEOUT_MS: u64 = 300_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
pub const MIN_TIMEOUT_MS: u64 = 1_000;

/// A run of a whole workflow: the agent's `executions(action="run")`, MCP's
/// `execute_workflow` and `test_workflow`.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub workflow_id: String,
    pub input: TriggerInput,
    pub timeout_ms: Option<u64>,
    pub trigger_node_name: Option<String>,
    pub trigger_choice: TriggerChoice,
    pub version: RunVersion,
    pub pins: RunPins,
}

/// Which version a run executes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RunVersion {
    /// The current draft, as a manual run.
    #[default]
    Draft,
    /// The published version, in its trigger's production mode; an
    /// unpublished workflow is refused.
    Published,
}

/// Which nodes a run pins.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum RunPins {
    /// The workflow's saved pin data (the canvas's manual run).
    #[default]
    Saved,
    /// None: a full run, no node mocked or skipped.
    Nothing,
    /// A test without external services: every enabled node that
    /// [`trigger::needs_pin`] is pinned with these items (node name → items,
    /// `{json}` or plain objects), or with one empty item.
    Test(BTreeMap<String, Vec<Value>>),
}

/// `executions(action="run-step")`.
#[derive(Debug, Clone, Default)]
pub struct StepRequest {
    pub workflow_id: String,
    pub node_name: String,
    pub reuse_execution_id: Option<String>,
    pub mock_input: Option<Vec<Map<String, Value>>>,
    pub tool_arguments: Option<Value>,
    pub version_id: Option<String>,
    pub timeout_ms: Option<u64>,
}

/// A started run or step: what finishing it needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    pub execution_id: String,
    pub workflow_id: String,
    pub timeout_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepInfo>,
    /// A plain run of the draft: no saved pins applied and no trigger input
    /// injected (what a live test of a build needs; see `verification`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live: bool,
}

/// A run that passed every check, not started.
pub struct PlannedRun {
    pub meta: WorkflowMeta,
    /// The trigger it starts from (`None`: the engine's default start).
    pub trigger: Option<String>,
    start: StartRequest,
    timeout_ms: u64,
    live: bool,
}

/// A run-step that passed every check, not started.
pub struct PlannedStep {
    pub meta: WorkflowMeta,
    graph: engine::Graph,
    pub plan: plan::StepPlan,
    mock: Option<Vec<Item>>,
    timeout_ms: u64,
}

/// The run-step half of [`Started`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInfo {
    pub node_name: String,
    pub input_mode: InputMode,
    pub mocked_node_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from_execution_id: Option<String>,
    /// A tool target: the nodes that can run it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ran_through_node_names: Vec<String>,
}

/// The result of a run (`{executionId, status, data?, error?, startedAt?,
/// finishedAt?}`), with the run-step fields when it was one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunOutcome {
    pub execution_id: String,
    pub status: String,
    /// Node name → items of its last run (capped; `truncated` counts the rest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "is_zero")]
    pub truncated: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// When a `waiting` execution (a Wait node) resumes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_till: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
    /// A verification run's simulation (`resultData.simulation`): the nodes
    /// pinned with fixtures instead of running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulation: Option<Value>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub step: Option<StepOutcome>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepOutcome {
    pub node_name: String,
    pub input_mode: InputMode,
    pub mocked_node_names: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_node_names: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reused_from_execution_id: Option<String>,
    /// Only what ran in this execution (not mocked, replayed or pinned).
    pub executed_node_names: Vec<String>,
    pub workflow_pinned_node_names: Vec<String>,
    /// A tool target: the nodes that can run it (n8n picks one and says
    /// not which, so this names them all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ran_through_node_names: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One row of `list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionRow {
    pub id: String,
    pub workflow_id: String,
    pub workflow_name: String,
    pub status: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub mode: String,
}

/// `get`: where an execution stands, without waiting.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusView {
    #[serde(flatten)]
    pub outcome: RunOutcome,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_errors: Vec<view::NodeErrorView>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedNode {
    pub name: String,
    #[serde(rename = "type")]
    pub node_type: String,
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_data: Option<Vec<Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugView {
    pub execution_id: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_node: Option<FailedNode>,
    /// The execution's own error when no node failed (timeout, cancel, crash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub node_trace: Vec<view::TraceEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedView {
    pub node_name: String,
    pub run_index: usize,
    pub item_index: usize,
    pub parameters: Value,
    pub resolved: Value,
    pub failed_expressions: Vec<engine::partial::FailedExpression>,
    pub empty_resolutions: Vec<engine::partial::EmptyResolution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StopView {
    pub success: bool,
    pub message: String,
}

fn status_str(s: ExecutionStatus) -> String {
    s.as_str().to_owned()
}

fn mode_str(m: ExecutionMode) -> String {
    serde_json::to_value(m).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub(crate) fn timeout_of(ms: Option<u64>) -> Result<u64, InstanceError> {
    let ms = ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(MIN_TIMEOUT_MS..=MAX_TIMEOUT_MS).contains(&ms) {
        return Err(InstanceError::Invalid(format!("timeout must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS} ms, got {ms}")));
    }
    Ok(ms)
}

pub(crate) fn exec_err(e: executions::ExecutionError) -> InstanceError {
    match e {
        executions::ExecutionError::NotFound(m) => InstanceError::NotFound(m),
        executions::ExecutionError::Invalid(m) => InstanceError::Invalid(format!("the workflow cannot run: {m}")),
        executions::ExecutionError::Store(s) => s.into(),
        other => InstanceError::Internal(other.to_string()),
    }
}

fn pins_of(v: &Value) -> BTreeMap<String, Vec<Item>> {
    v.as_object()
        .map(|m| m.iter().filter_map(|(k, items)| Some((k.clone(), crate::runner::items_from_pins(items.as_array()?).ok()?))).collect())
        .unwrap_or_default()
}

/// A test run's pins: the given items for the nodes that need them, one
/// empty item for the rest (n8n's default); a pin for a node the workflow
/// does not have is refused.
fn test_pins(graph: &engine::Graph, given: &BTreeMap<String, Vec<Value>>) -> Result<BTreeMap<String, Vec<Item>>, InstanceError> {
    if let Some(name) = given.keys().find(|n| graph.node(n).is_none()) {
        return Err(InstanceError::Invalid(format!("pinData names node {name:?}, which is not in the workflow")));
    }
    let mut pins = BTreeMap::new();
    for n in graph.nodes().iter().filter(|n| !n.disabled && trigger::needs_pin(n)) {
        let items = match given.get(&n.name) {
            Some(v) => crate::runner::items_from_pins(v).map_err(|e| InstanceError::Invalid(format!("pinData[{:?}]: {e}", n.name)))?,
            None => vec![Item::new(serde_json::json!({}))],
        };
        pins.insert(n.name.clone(), items);
    }
    Ok(pins)
}

impl Instance {
    /// The execution and its workflow, if the caller may act on it with `scope`.
    pub async fn execution_access(&self, caller: &Caller, id: &str, scope: &str) -> Result<(Execution, WorkflowMeta), InstanceError> {
        let not_found = || InstanceError::NotFound(format!("execution {id}"));
        let exec = self.data.executions.get(id).await?.ok_or_else(not_found)?;
        match self.workflow_access(caller, &exec.workflow_id, scope).await {
            Ok((meta, _)) => Ok((exec, meta)),
            Err(InstanceError::NotFound(_)) => Err(not_found()),
            Err(e) => Err(e),
        }
    }

    /// Starts `run`: the current draft from its trigger, with the trigger's
    /// input shaped by type and the workflow's saved pins.
    pub async fn start_run(&self, caller: &Caller, req: &RunRequest) -> Result<Started, InstanceError> {
        let PlannedRun { meta, start, timeout_ms, live, .. } = self.plan_run(caller, req).await?;
        let id = self.executor.start_execution(start).await.map_err(exec_err)?;
        tracing::info!(executionId = %id, workflowId = %meta.id, "run started");
        Ok(Started { execution_id: id.0, workflow_id: meta.id, timeout_ms, step: None, live })
    }

    /// Plans `run` without starting it: every refusal (bad timeout, archived
    /// or unpublished workflow, no or an ambiguous trigger, input the trigger
    /// cannot take, pins for nodes that do not exist) fails here, so a front
    /// door can check before asking for approval.
    pub async fn plan_run(&self, caller: &Caller, req: &RunRequest) -> Result<PlannedRun, InstanceError> {
        let timeout_ms = timeout_of(req.timeout_ms)?;
        let (meta, _) = self.workflow_access(caller, &req.workflow_id, "workflow:execute").await?;
        if meta.is_archived {
            return Err(InstanceError::Invalid(format!("workflow {} is archived; unarchive it to run it", meta.id)));
        }
        let (body, workflow) = match req.version {
            RunVersion::Draft => {
                let wf = self.data.workflows.get(&meta.id).await?.ok_or_else(|| InstanceError::NotFound(format!("workflow {}", meta.id)))?;
                (wf.body, WorkflowRef::Draft(meta.id.clone()))
            }
            RunVersion::Published => {
                let Some(active) = &meta.active_version_id else {
                    return Err(InstanceError::Invalid(format!("workflow {} is not published: publish it first, or run the current draft", meta.id)));
                };
                let v = self.data.workflows.get_version(&meta.id, active).await?.ok_or_else(|| InstanceError::NotFound(format!("active version {active}")))?;
                (v.body, WorkflowRef::Published(meta.id.clone()))
            }
        };
        let graph = engine::Graph::from_json(&serde_json::json!({"nodes": body.nodes, "connections": body.connections, "settings": body.settings}))
            .map_err(|e| InstanceError::Invalid(format!("the workflow cannot run: {e}")))?;
        let trigger = trigger::choose(&graph, req.trigger_node_name.as_deref(), req.trigger_choice)?;
        let mut pins = match &req.pins {
            RunPins::Saved => pins_of(&body.pin_data),
            RunPins::Nothing => BTreeMap::new(),
            RunPins::Test(given) => test_pins(&graph, given)?,
        };
        let mode = match (req.version, trigger.as_ref().and_then(|(_, t)| trigger::TriggerKind::of(t))) {
            (RunVersion::Published, Some(kind)) => kind.production_mode(),
            (RunVersion::Published, None) => ExecutionMode::Trigger,
            (RunVersion::Draft, _) => ExecutionMode::Manual,
        };
        let no_input = req.input == TriggerInput::None;
        let mut sreq = StartRequest::new(workflow, mode);
        if let Some((name, _)) = trigger {
            let node = graph.node(&name).ok_or_else(|| InstanceError::Internal(format!("trigger {name:?} vanished from its graph")))?;
            let tz = graph.workflow.settings.timezone.clone().unwrap_or_else(|| "UTC".to_owned());
            let (items, output) = trigger::shape(node, &req.input, &tz)?;
            if items.is_some() && !no_input {
                // The caller's input replaces a pinned trigger output.
                pins.remove(&name);
            }
            if !pins.contains_key(&name) {
                sreq.trigger_items = items;
                sreq.trigger_output = output;
            }
            sreq.trigger = Some(name);
        }
        let live = req.version == RunVersion::Draft && req.pins == RunPins::Saved && pins.is_empty() && no_input;
        sreq.pin_data = pins;
        sreq.timeout = Some(Duration::from_millis(timeout_ms));
        Ok(PlannedRun { meta, trigger: sreq.trigger.clone(), start: sreq, timeout_ms, live })
    }

    /// Runs a whole workflow and waits up to `wait` for it (MCP's
    /// synchronous tools); one still going is reported `running`.
    pub async fn run_and_wait(&self, caller: &Caller, req: &RunRequest, wait: Duration) -> Result<ExecutionOutcome, InstanceError> {
        let PlannedRun { meta, start, .. } = self.plan_run(caller, req).await?;
        tracing::info!(workflowId = %meta.id, "run started, waiting");
        crate::runner::run(&self.executor, self.dispatch, start, wait).await
    }

    /// Plans `run-step` without starting it: every refusal fails here (a
    /// front door may plan before asking for approval).
    pub async fn plan_step(&self, caller: &Caller, req: &StepRequest) -> Result<PlannedStep, InstanceError> {
        let timeout_ms = timeout_of(req.timeout_ms)?;
        let (meta, _) = self.workflow_access(caller, &req.workflow_id, "workflow:execute").await?;
        if meta.is_archived {
            return Err(InstanceError::Invalid(format!("workflow {} is archived; unarchive it to run it", meta.id)));
        }
        let body = match &req.version_id {
            Some(v) => self.data.workflows.get_version(&meta.id, v).await?.ok_or_else(|| InstanceError::NotFound(format!("version {v} of workflow {}", meta.id)))?.body,
            None => self.data.workflows.get(&meta.id).await?.ok_or_else(|| InstanceError::NotFound(format!("workflow {}", meta.id)))?.body,
        };
        let graph = engine::Graph::from_json(&serde_json::json!({"nodes": body.nodes, "connections": body.connections, "settings": body.settings}))
            .map_err(|e| InstanceError::Invalid(format!("the workflow cannot run: {e}")))?;
        if req.mock_input.is_some() && req.reuse_execution_id.is_some() {
            return Err(InstanceError::Invalid("pass either reuseExecutionId or mockInput, not both".into()));
        }
        let reuse = match &req.reuse_execution_id {
            Some(id) => {
                let (exec, _) = self.execution_access(caller, id, "workflow:read").await?;
                if exec.workflow_id != meta.id {
                    return Err(InstanceError::Invalid(format!(
                        "execution {id} belongs to another workflow; reuse an execution of workflow {}",
                        meta.id
                    )));
                }
                let doc = self.data.executions.get_data(id, &DataSelection::default()).await?.unwrap_or(Value::Null);
                Some(view::run_data(&doc))
            }
            None => None,
        };
        let mock: Option<Vec<Item>> = req.mock_input.as_ref().map(|m| m.iter().map(|j| Item::new(Value::Object(j.clone()))).collect());
        let pins = pins_of(&body.pin_data);
        let ask = StepAsk {
            target: &req.node_name,
            mock_input: mock.as_deref(),
            reuse: reuse.as_ref(),
            tool_arguments: req.tool_arguments.is_some(),
            pins: &pins,
        };
        let plan = plan::plan(&graph, &ask)?;
        Ok(PlannedStep { meta, graph, plan, mock, timeout_ms })
    }

    /// Starts `run-step`: one node inside the real workflow (the draft or a
    /// saved version), fed by a reused execution, mocked input or its chain.
    /// Every refusal fails before anything runs.
    pub async fn start_step(&self, caller: &Caller, req: &StepRequest) -> Result<Started, InstanceError> {
        let PlannedStep { meta, graph, plan, mock, timeout_ms } = self.plan_step(caller, req).await?;
        let workflow = match &req.version_id {
            Some(v) => WorkflowRef::Version { workflow_id: meta.id.clone(), version_id: v.clone() },
            None => WorkflowRef::Draft(meta.id.clone()),
        };
        // Always manual: pins apply only to manual runs.
        let mut sreq = StartRequest::new(workflow, ExecutionMode::Manual);
        sreq.destination = Some(req.node_name.clone());
        sreq.pin_data = plan.pin_data.clone();
        sreq.timeout = Some(Duration::from_millis(timeout_ms));
        // a tool runs through the Tool Executor in its owner's place, fed as the owner would be
        sreq.tool_arguments = req.tool_arguments.clone();
        let fed = plan.ran_through_node_names.first().cloned().unwrap_or_else(|| req.node_name.clone());
        sreq.step_seed = match (plan.input_mode, &req.reuse_execution_id, mock) {
            (InputMode::Mocked, _, Some(items)) => Some(StepSeed::Mock { items }),
            (InputMode::ReusedExecution, Some(id), _) => Some(StepSeed::Reuse { execution_id: id.clone() }),
            _ => None,
        };
        if plan.input_mode == InputMode::Chain {
            // The chain starts from the trigger above the target.
            let above: Vec<String> = graph.ancestors(&fed);
            sreq.trigger = graph
                .nodes()
                .iter()
                .find(|n| !n.disabled && above.contains(&n.name) && engine::workflow::is_trigger_type(&n.node_type))
                .or_else(|| graph.nodes().iter().find(|n| above.contains(&n.name) && graph.parents(&n.name).is_empty()))
                .map(|n| n.name.clone())
                .or_else(|| graph.parents(&fed).is_empty().then(|| fed.clone()));
        }
        let id = self.executor.start_execution(sreq).await.map_err(exec_err)?;
        tracing::info!(executionId = %id, workflowId = %meta.id, node = %req.node_name, mode = ?plan.input_mode, "step started");
        Ok(Started {
            execution_id: id.0,
            workflow_id: meta.id,
            timeout_ms,
            live: false,
            step: Some(StepInfo {
                node_name: req.node_name.clone(),
                input_mode: plan.input_mode,
                mocked_node_names: plan.mocked_node_names,
                reused_from_execution_id: req.reuse_execution_id.clone().filter(|_| plan.input_mode == InputMode::ReusedExecution),
                ran_through_node_names: plan.ran_through_node_names.clone(),
            }),
        })
    }

    /// Waits up to `bound` for the execution to finish or park as `waiting`.
    pub async fn wait_settled(&self, execution_id: &str, bound: Duration) -> Result<ExecutionOutcome, InstanceError> {
        self.executor.wait_for(execution_id, bound).await.map_err(exec_err)
    }

    /// The result of a started run. `deadline_passed`: the caller's wait is
    /// over; an execution still going is stopped and reported as timed out.
    pub async fn finish_run(&self, caller: &Caller, started: &Started, deadline_passed: bool) -> Result<RunOutcome, InstanceError> {
        let id = &started.execution_id;
        let (exec, _) = self.execution_access(caller, id, "workflow:read").await?;
        let mut outcome = self.executor.outcome(id).await.map_err(exec_err)?;
        let mut timed_out = None;
        if deadline_passed && !outcome.is_finished() && outcome.status != ExecutionStatus::Waiting {
            outcome = self.executor.stop_execution(id).await.map_err(exec_err)?;
            timed_out = Some(format!("Execution timed out after {} ms and was cancelled", started.timeout_ms));
        }
        let mut out = self.outcome_view(&exec, &outcome, started.step.as_ref().map(|s| s.node_name.as_str())).await?;
        if let Some(t) = timed_out {
            out.status = "error".into();
            out.error = Some(t);
        }
        if let Some(step) = &started.step {
            let runs = self.run_data_of(id).await?;
            let replayed = view::names_by_origin(&runs, Some(engine::data::RunOrigin::Replayed));
            out.step = Some(StepOutcome {
                node_name: step.node_name.clone(),
                input_mode: step.input_mode,
                mocked_node_names: step.mocked_node_names.clone(),
                replayed_node_names: (step.input_mode == InputMode::ReusedExecution).then_some(replayed),
                reused_from_execution_id: step.reused_from_execution_id.clone(),
                executed_node_names: view::names_by_origin(&runs, None),
                workflow_pinned_node_names: view::names_by_origin(&runs, Some(engine::data::RunOrigin::Pinned)),
                ran_through_node_names: step.ran_through_node_names.clone(),
            });
        }
        Ok(out)
    }

    async fn run_data_of(&self, id: &str) -> Result<engine::RunData, InstanceError> {
        let doc = self.data.executions.get_data(id, &DataSelection::default()).await?.unwrap_or(Value::Null);
        Ok(view::run_data(&doc))
    }

    /// The shared part of `run`'s and `get`'s results. Run data is read only
    /// once the execution settled (a running one's is partial).
    async fn outcome_view(&self, exec: &Execution, outcome: &ExecutionOutcome, only: Option<&str>) -> Result<RunOutcome, InstanceError> {
        let settled = outcome.is_finished() || outcome.status == ExecutionStatus::Waiting;
        let (mut data, mut truncated, mut suppressed, mut simulation) = (None, 0, None, None);
        let mut error = outcome.error.clone();
        let fresh = self.data.executions.get(&exec.id).await?.unwrap_or_else(|| exec.clone());
        if settled {
            let doc = self.data.executions.get_data(&exec.id, &DataSelection::default()).await?.unwrap_or(Value::Null);
            simulation = doc.pointer("/resultData/simulation").cloned();
            // A node's error may quote what it got from outside.
            if let Some(e) = doc.pointer("/resultData/error").and_then(|e| serde_json::from_value::<engine::NodeError>(e.clone()).ok()) {
                if self.values == Values::Withheld && e.node.is_some() {
                    error = Some(view::error_text(&e, self.values));
                }
            }
            match self.values {
                Values::Shown => {
                    let (d, t) = view::result_data(view::graph(&doc).as_ref(), &view::run_data(&doc), only);
                    (data, truncated) = (Some(d), t);
                }
                Values::Withheld => suppressed = Some(view::WITHHELD.to_owned()),
            }
        }
        Ok(RunOutcome {
            execution_id: exec.id.clone(),
            status: status_str(outcome.status),
            data,
            truncated,
            error,
            started_at: fresh.started_at,
            finished_at: fresh.stopped_at,
            wait_till: outcome.wait_till.clone(),
            suppressed,
            simulation,
            step: None,
        })
    }

    /// `list`: the caller's recent executions, newest first.
    pub async fn list_executions(&self, caller: &Caller, workflow_id: Option<&str>, status: Option<&str>, limit: Option<usize>) -> Result<Vec<ExecutionRow>, InstanceError> {
        let limit = limit.unwrap_or(20);
        if !(1..=100).contains(&limit) {
            return Err(InstanceError::Invalid(format!("limit must be between 1 and 100, got {limit}")));
        }
        let statuses = match status {
            None => vec![],
            Some(s) => vec![serde_json::from_value::<ExecutionStatus>(Value::String(s.to_owned())).map_err(|_| {
                InstanceError::Invalid(format!("status {s:?} is not one of success, error, running, waiting, canceled, crashed, new"))
            })?],
        };
        let search = ExecutionSearch { statuses, limit: Some(limit), ..ExecutionSearch::default() };
        let (page, names) = self.search_executions(caller, workflow_id, false, search).await?;
        Ok(page
            .data
            .into_iter()
            .map(|e| ExecutionRow {
                workflow_name: names.get(&e.workflow_id).cloned().unwrap_or_default(),
                status: status_str(e.status),
                mode: mode_str(e.mode),
                started_at: e.started_at,
                finished_at: e.stopped_at,
                workflow_id: e.workflow_id,
                id: e.id,
            })
            .collect())
    }

    /// Executions of the workflows the caller may read (one, or all of them;
    /// with `mcp_only`, only those available in MCP), filtered by `search`
    /// (its `workflow_ids` are set here); with the workflows' names.
    pub async fn search_executions(
        &self,
        caller: &Caller,
        workflow_id: Option<&str>,
        mcp_only: bool,
        mut search: ExecutionSearch,
    ) -> Result<(store::data::executions::ExecutionPage, BTreeMap<String, String>), InstanceError> {
        let names: BTreeMap<String, String> = match workflow_id {
            Some(id) => {
                let (meta, _) = self.workflow_access(caller, id, "workflow:read").await?;
                if mcp_only && !meta.available_in_mcp {
                    return Err(InstanceError::Forbidden(format!(
                        "workflow {id} is not available in MCP; enable \"Available in MCP\" in its settings (workflows created through MCP have it on)"
                    )));
                }
                BTreeMap::from([(meta.id, meta.name)])
            }
            None => {
                self.user(caller).await?;
                // Every readable workflow, however many (no first-N cut).
                self.data.workflows.all_readable(&caller.user, StatusFilter::All, mcp_only.then_some(true)).await?.into_iter().map(|m| (m.id, m.name)).collect()
            }
        };
        search.workflow_ids = names.keys().cloned().collect();
        Ok((self.data.executions.search(&search).await?, names))
    }

    /// `get`: status without blocking; run data and node errors once settled.
    pub async fn execution_status(&self, caller: &Caller, id: &str) -> Result<StatusView, InstanceError> {
        let (exec, _) = self.execution_access(caller, id, "workflow:read").await?;
        let outcome = self.executor.outcome(id).await.map_err(exec_err)?;
        let view = self.outcome_view(&exec, &outcome, None).await?;
        let node_errors = if view.data.is_some() || view.suppressed.is_some() { view::node_errors(&self.run_data_of(id).await?, self.values) } else { vec![] };
        Ok(StatusView { outcome: view, node_errors })
    }

    /// `debug`: the failed node with its error and input, and the trace.
    pub async fn debug_execution(&self, caller: &Caller, id: &str) -> Result<DebugView, InstanceError> {
        let (exec, _) = self.execution_access(caller, id, "workflow:read").await?;
        let doc = self.data.executions.get_data(id, &DataSelection::default()).await?.unwrap_or(Value::Null);
        let (graph, runs) = (view::graph(&doc), view::run_data(&doc));
        let failed = doc
            .pointer("/resultData/error/node")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| runs.iter().filter(|(_, r)| r.last().is_some_and(|t| t.error.is_some())).max_by_key(|(_, r)| r.last().map(|t| t.start_time)).map(|(n, _)| n.clone()));
        let failed_node = failed.and_then(|name| {
            let task = runs.get(&name)?.iter().rev().find(|t| t.error.is_some())?;
            let input = match self.values {
                Values::Shown => {
                    let mut budget = view::Budget::new(view::ITEM_BUDGET_CHARS);
                    Some(view::input_of(&runs, task).iter().take(10).filter_map(|i| budget.take(view::item(i))).collect())
                }
                Values::Withheld => None,
            };
            Some(FailedNode {
                node_type: graph.as_ref().and_then(|g| g.node(&name)).map(|n| n.node_type.clone()).unwrap_or_default(),
                error: task.error.as_ref().map(|e| view::error_text(e, self.values)).unwrap_or_default(),
                input_data: input,
                name,
            })
        });
        let meta_error = match &failed_node {
            None => self.executor.outcome(id).await.map_err(exec_err)?.error,
            Some(_) => None,
        };
        Ok(DebugView { execution_id: exec.id, status: status_str(exec.status), failed_node, error: meta_error, node_trace: view::node_trace(graph.as_ref(), &runs) })
    }

    /// `get-node-output`: one page of a node's last run, per output.
    pub async fn execution_node_output(&self, caller: &Caller, id: &str, node: &str, start: Option<usize>, max: Option<usize>) -> Result<view::NodeOutput, InstanceError> {
        let max = max.unwrap_or(10);
        if !(1..=50).contains(&max) {
            return Err(InstanceError::Invalid(format!("maxItems must be between 1 and 50, got {max}")));
        }
        self.execution_access(caller, id, "workflow:read").await?;
        let doc = self.data.executions.get_data(id, &DataSelection { node_names: Some(vec![node.to_owned()]), max_items: None }).await?.unwrap_or(Value::Null);
        let graph = view::graph(&doc);
        if graph.as_ref().is_some_and(|g| g.node(node).is_none()) {
            return Err(InstanceError::Invalid(format!("execution {id} has no node named {node:?}")));
        }
        Ok(view::node_output(graph.as_ref(), &view::run_data(&doc), node, start.unwrap_or(0), max, self.values))
    }

    /// `get-resolved-node-parameters`: the node's parameters resolved again
    /// against the execution's data, against the workflow that ran.
    pub async fn resolved_node_parameters(&self, caller: &Caller, id: &str, node: &str, item_index: Option<usize>, run_index: Option<usize>) -> Result<ResolvedView, InstanceError> {
        self.execution_access(caller, id, "workflow:read").await?;
        // the snapshot and this node's runs: checked here for a quick
        // refusal; the executor reads the whole run to resolve against it
        let only_node = DataSelection { node_names: Some(vec![node.to_owned()]), ..DataSelection::default() };
        let doc = self.data.executions.get_data(id, &only_node).await?.unwrap_or(Value::Null);
        view::graph(&doc).ok_or_else(|| InstanceError::Invalid(format!("execution {id} has no workflow snapshot to resolve against")))?;
        let ran = view::run_data(&doc).get(node).map(Vec::len).unwrap_or(0);
        if let Some(r) = run_index.filter(|r| *r >= ran.max(1)) {
            return Err(InstanceError::Invalid(format!("node {node:?} ran {ran} time(s) in execution {id}; runIndex {r} does not exist")));
        }
        let item_index = item_index.unwrap_or(0);
        if self.values == Values::Withheld {
            return Ok(ResolvedView {
                node_name: node.to_owned(),
                run_index: run_index.unwrap_or(ran.saturating_sub(1)),
                item_index,
                parameters: Value::Null,
                resolved: Value::Null,
                failed_expressions: vec![],
                empty_resolutions: vec![],
                suppressed: Some(view::WITHHELD.to_owned()),
            });
        }
        // expressions run in the executor's sandbox (this function links none)
        let r = self.executor.resolve_parameters(id, node, item_index, run_index, self.dispatch).await.map_err(crate::runner::job_error)?.map_err(InstanceError::Invalid)?;
        Ok(ResolvedView {
            node_name: node.to_owned(),
            run_index: run_index.unwrap_or(ran.saturating_sub(1)),
            item_index,
            parameters: r.parameters,
            resolved: r.resolved,
            failed_expressions: r.failed_expressions,
            empty_resolutions: r.empty_resolutions,
            suppressed: None,
        })
    }

    /// `stop`: cancels a running (or queued, or waiting) execution.
    pub async fn stop_execution(&self, caller: &Caller, id: &str) -> Result<StopView, InstanceError> {
        let (exec, _) = self.execution_access(caller, id, "workflow:execute").await?;
        let before = self.executor.outcome(id).await.map_err(exec_err)?;
        if before.is_finished() {
            return Ok(StopView { success: false, message: format!("Execution {id} is not running (it is {})", before.status.as_str()) });
        }
        let after = self.executor.stop_execution(&exec.id).await.map_err(exec_err)?;
        let message = match after.status {
            ExecutionStatus::Canceled => format!("Execution {id} cancelled"),
            _ => format!("Execution {id} is being cancelled: it stops at its next node boundary"),
        };
        Ok(StopView { success: true, message })
    }
}
