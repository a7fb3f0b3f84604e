//! Build → verify → patch: the work items of a thread and everything that
//! reads or moves them.
//!
//! - [`Instance::record_build`]: every `build-workflow` records its outcome
//!   under a `workItemId`: the version it saved, the planned nodes, the
//!   per-node simulation plan ([`simulation`]) and the fixtures.
//! - [`Instance::start_verification`] / [`Instance::finish_verification`]
//!   (`verify-built-workflow`): the built version runs with per-execution pin
//!   data (simulated nodes output their fixtures; nothing is saved to the
//!   workflow), after reserving an attempt; the result updates the
//!   cumulative verification.
//! - [`Instance::report_verdict`] (`report-verification-verdict`): the loop's
//!   state machine ([`verdict`]).
//! - [`Instance::apply_workflow_credentials`]: real credentials onto the
//!   built nodes, in one save.
//! - [`Instance::record_live_evidence`]: a plain `executions(run)` that
//!   reached every planned node raises the claim to `verified`.
//! - [`Instance::publish_check`]: what the publish gate reads.
//!
//! Storage: one document per work item (`store::data::work_items`), changed
//! only by read → change → conditional put on its revision, retried on a
//! lost race: the attempt counter, the trigger's cleared pass and the
//! cumulative verification move together or not at all.

pub mod checks;
pub mod simulation;
pub mod verdict;

use crate::executions::{trigger, RunOutcome, Started};
use crate::{Caller, Instance, InstanceError};
use executions::{ExecutionStatus, StartRequest, WorkflowRef};
use protocol::ids::ThreadId;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use simulation::{Fixture, FixtureSource, Mode, NodePlan};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use store::data::db;
use store::data::executions::{DataSelection, ExecutionMode, ExecutionSearch};
use store::data::work_items::Versioned;
use verdict::{LoopState, Verdict};

/// Verification runs one build may take (all triggers together). A new
/// build (`build-workflow` with the same work item) starts a fresh budget.
pub const MAX_ATTEMPTS: u32 = 5;
/// Lost races on one work item before an operation gives up.
const RETRIES: usize = 8;
/// The verification's status while an attempt runs.
const RUNNING: &str = "running";
/// The key of the pass of a workflow without a trigger.
const NO_TRIGGER: &str = "(start)";
/// Earlier executions searched for a node's real output (fixtures).
const FIXTURE_EXECUTIONS: usize = 5;
/// Items a fixture keeps from a real execution.
const FIXTURE_ITEMS: usize = 3;

/// A work item as stored with the thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkItem {
    pub work_item_id: String,
    pub workflow_id: String,
    pub build: Build,
    /// Verification attempts reserved against this build.
    #[serde(default)]
    pub attempts: u32,
    /// The last successful verification run per trigger.
    #[serde(default)]
    pub passes: BTreeMap<String, Pass>,
    #[serde(default)]
    pub verification: Option<Verification>,
    /// A live run (`executions(run)`) that reached every planned node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveRun>,
    /// Parameter-check entries already shown for this build (capped).
    #[serde(default)]
    pub shown_warnings: usize,
    #[serde(default)]
    pub shown_skips: usize,
    pub loop_state: LoopState,
    /// How often each failure signature was reported (kept across builds).
    #[serde(default)]
    pub signatures: BTreeMap<String, u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_verdict: Option<Verdict>,
}

impl WorkItem {
    /// A work item fresh from a build: nothing verified or shown yet.
    fn new(work_item_id: String, workflow_id: String, build: Build) -> Self {
        WorkItem {
            work_item_id,
            workflow_id,
            build,
            attempts: 0,
            passes: BTreeMap::new(),
            verification: None,
            live: None,
            shown_warnings: 0,
            shown_skips: 0,
            loop_state: LoopState::Built,
            signatures: BTreeMap::new(),
            last_verdict: None,
        }
    }

    /// The same work item after a new build: its failure signatures and last
    /// verdict carry over, the rest starts again.
    fn rebuilt(self, build: Build) -> Self {
        WorkItem { signatures: self.signatures, last_verdict: self.last_verdict, ..WorkItem::new(self.work_item_id, self.workflow_id, build) }
    }
}

/// The build outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    pub version_id: String,
    pub built_at: String,
    /// Enabled nodes that run on their own (not sticky notes, not
    /// sub-nodes), in workflow order: what verification must cover.
    pub planned_nodes: Vec<String>,
    /// Enabled sub-nodes (models, tools, memories of a root): they run
    /// inside their root and are covered with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_nodes: Vec<String>,
    /// Enabled triggers (each needs its own pass).
    pub triggers: Vec<String>,
    pub node_simulation_plan: Vec<NodePlan>,
    pub simulation_fixtures: BTreeMap<String, Fixture>,
}

impl Build {
    pub fn simulated(&self) -> impl Iterator<Item = &NodePlan> {
        self.node_simulation_plan.iter().filter(|p| p.mode == Mode::Simulate)
    }
    fn is_simulated(&self, node: &str) -> bool {
        self.simulated().any(|p| p.node_name == node)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    pub execution_id: String,
    /// Nodes that ran (for real or simulated) in that run.
    pub reached_nodes: Vec<String>,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRun {
    pub execution_id: String,
    pub at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// Every trigger passed and every planned node was reached (or a live
    /// run reached them all).
    Verified,
    /// Some triggers passed; triggers are pending or nodes uncovered.
    Partial,
    /// The last run failed and no trigger has a pass.
    Failed,
    /// Nothing ran yet (or a retry is under way).
    Unverified,
}

/// The cumulative verification of the current build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    pub attempted: bool,
    pub success: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub claim: Claim,
    pub evidence: Evidence,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub triggers: Vec<String>,
    pub passed_triggers: Vec<String>,
    pub pending_triggers: Vec<String>,
    pub covered_nodes: Vec<String>,
    pub uncovered_nodes: Vec<String>,
    /// Nodes whose output in the passes was a fixture.
    pub simulated_nodes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_execution_id: Option<String>,
}

impl WorkItem {
    /// The claim and evidence from the passes (and a live run) so far.
    pub fn evidence(&self) -> (Claim, Evidence) {
        let b = &self.build;
        let triggers: Vec<String> = if b.triggers.is_empty() { vec![NO_TRIGGER.to_owned()] } else { b.triggers.clone() };
        let (passed, pending): (Vec<String>, Vec<String>) = triggers.iter().cloned().partition(|t| self.passes.contains_key(t));
        let covered: BTreeSet<&str> = self.passes.values().flat_map(|p| p.reached_nodes.iter().map(String::as_str)).collect();
        let uncovered: Vec<String> = b.planned_nodes.iter().filter(|n| !covered.contains(n.as_str())).cloned().collect();
        let simulated = b.simulated().filter(|p| covered.contains(p.node_name.as_str())).map(|p| p.node_name.clone()).collect();
        let claim = if self.live.is_some() || (pending.is_empty() && uncovered.is_empty()) {
            Claim::Verified
        } else if !passed.is_empty() {
            Claim::Partial
        } else if self.verification.as_ref().is_some_and(|v| v.attempted && !v.success && v.status.as_deref() != Some(RUNNING)) {
            Claim::Failed
        } else {
            Claim::Unverified
        };
        let evidence = Evidence {
            triggers: triggers.into_iter().filter(|t| t != NO_TRIGGER).collect(),
            passed_triggers: passed,
            pending_triggers: pending.into_iter().filter(|t| t != NO_TRIGGER).collect(),
            covered_nodes: b.planned_nodes.iter().filter(|n| covered.contains(n.as_str())).cloned().collect(),
            uncovered_nodes: uncovered,
            simulated_nodes: simulated,
            live_execution_id: self.live.as_ref().map(|l| l.execution_id.clone()),
        };
        (claim, evidence)
    }

    fn claim(&self) -> Claim {
        self.verification.as_ref().map_or(Claim::Unverified, |v| v.claim)
    }
}

/// `build-workflow`'s record of one build.
#[derive(Debug, Clone, Default)]
pub struct BuildRecord {
    pub work_item_id: String,
    pub workflow_id: String,
    pub version_id: String,
    /// The model's pass: node → why it must be simulated (only adds).
    pub simulate: BTreeMap<String, String>,
    /// The model's fixtures: node → item json objects.
    pub fixtures: BTreeMap<String, Vec<Value>>,
}

/// `verify-built-workflow`.
#[derive(Debug, Clone, Default)]
pub struct VerifyRequest {
    pub work_item_id: String,
    pub workflow_id: String,
    pub input_data: Option<Map<String, Value>>,
    pub timeout_ms: Option<u64>,
    pub trigger_node_name: Option<String>,
}

/// A started verification run: what finishing it needs (serializes, so the
/// agent can park on it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyStarted {
    pub started: Started,
    pub work_item_id: String,
    pub trigger: String,
    pub version_id: String,
    pub attempt: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePreview {
    pub node_name: String,
    pub simulated: bool,
    pub item_count: usize,
}

/// `verify-built-workflow`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyOutcome {
    pub execution_id: String,
    pub success: bool,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub trigger_node_name: Option<String>,
    pub simulated_nodes: Vec<String>,
    pub node_previews: Vec<NodePreview>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulation_note: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resolved_parameter_warnings: Vec<checks::ParameterWarning>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_parameter_checks: Vec<checks::SkippedCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_parameter_check_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_output_note: Option<String>,
    pub verification: Verification,
    pub attempt: u32,
    pub attempts_left: u32,
}

/// What the publish gate reads of a workflow's latest build.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishCheck {
    pub work_item_id: String,
    pub version_id: String,
    pub claim: Claim,
    pub evidence: Evidence,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<String>,
}

impl PublishCheck {
    /// The card's one line on verification.
    pub fn status_text(&self) -> String {
        match self.claim {
            Claim::Verified => "Verified: the latest build passed verification.".to_owned(),
            Claim::Partial => format!(
                "Not fully verified: {}{}.",
                if self.evidence.pending_triggers.is_empty() { String::new() } else { format!("triggers not tested: {}; ", self.evidence.pending_triggers.join(", ")) },
                if self.evidence.uncovered_nodes.is_empty() { "no node uncovered".to_owned() } else { format!("nodes never reached: {}", self.evidence.uncovered_nodes.join(", ")) }
            ),
            Claim::Failed => "Not verified: the latest verification run failed.".to_owned(),
            Claim::Unverified => "Not verified: the latest build was never verified.".to_owned(),
        }
    }
}

/// `report-verification-verdict`.
#[derive(Debug, Clone)]
pub struct VerdictReport {
    pub work_item_id: String,
    pub verdict: Verdict,
    pub failure_signature: Option<String>,
    pub failed_node_name: Option<String>,
    pub diagnosis: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerdictOutcome {
    pub guidance: String,
    pub state: LoopState,
    /// The verdict after escalation (differs when a signature repeated).
    pub effective_verdict: Verdict,
    pub claim: Claim,
}

fn conflict_exhausted(id: &str) -> InstanceError {
    InstanceError::Conflict(format!("work item {id} keeps changing under concurrent updates; try again"))
}

fn unknown_item(id: &str) -> InstanceError {
    InstanceError::NotFound(format!("work item {id} (build the workflow with build-workflow first; its result names the workItemId)"))
}

/// Enabled nodes and triggers of a workflow body.
fn enabled(nodes: &[Value]) -> (Vec<Value>, Vec<String>) {
    let on: Vec<Value> = nodes.iter().filter(|n| !n.get("disabled").and_then(Value::as_bool).unwrap_or(false)).cloned().collect();
    let triggers = on
        .iter()
        .filter(|n| engine::workflow::is_trigger_type(n.get("type").and_then(Value::as_str).unwrap_or_default()))
        .filter_map(|n| n.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    (on, triggers)
}

impl Instance {
    async fn work_item(&self, thread: &ThreadId, id: &str) -> Result<Versioned<WorkItem>, InstanceError> {
        self.data.work_items.get::<WorkItem>(thread, id).await?.ok_or_else(|| unknown_item(id))
    }

    /// Read → change → conditional put, retried on a lost race. `change`
    /// returns `Err` to refuse (nothing written).
    async fn update_work_item<T>(
        &self,
        thread: &ThreadId,
        id: &str,
        mut change: impl FnMut(&mut WorkItem) -> Result<T, InstanceError>,
    ) -> Result<(WorkItem, T), InstanceError> {
        for _ in 0..RETRIES {
            let Versioned { rev, mut doc } = self.work_item(thread, id).await?;
            let out = change(&mut doc)?;
            match self.data.work_items.put(thread, id, &doc.workflow_id, &doc, Some(rev)).await {
                Ok(_) => return Ok((doc, out)),
                Err(store::StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(conflict_exhausted(id))
    }

    /// A node's output in an earlier real execution of the workflow (not a
    /// verification run), as fixture items.
    async fn fixtures_from_executions(&self, workflow_id: &str, nodes: &[String]) -> Result<BTreeMap<String, Fixture>, InstanceError> {
        let mut out = BTreeMap::new();
        if nodes.is_empty() {
            return Ok(out);
        }
        let search = ExecutionSearch { workflow_ids: vec![workflow_id.to_owned()], statuses: vec![ExecutionStatus::Success], limit: Some(FIXTURE_EXECUTIONS), ..ExecutionSearch::default() };
        let page = self.data.executions.search(&search).await?;
        for e in page.data {
            let want: Vec<String> = nodes.iter().filter(|n| !out.contains_key(*n)).cloned().collect();
            if want.is_empty() {
                break;
            }
            let sel = DataSelection { node_names: Some(want.clone()), max_items: Some(FIXTURE_ITEMS) };
            let Some(doc) = self.data.executions.get_data(&e.id, &sel).await? else { continue };
            if doc.pointer("/resultData/simulation").is_some() {
                continue;
            }
            let runs = crate::executions::view::run_data(&doc);
            for n in want {
                let Some(task) = runs.get(&n).and_then(|r| r.iter().rev().find(|t| t.origin.is_none() && t.error.is_none())) else { continue };
                let items: Vec<Value> = task.output(0).map(|items| items.iter().take(FIXTURE_ITEMS).filter_map(|i| serde_json::to_value(&i.json).ok()).collect()).unwrap_or_default();
                if !items.is_empty() {
                    out.insert(n, Fixture { items, source: FixtureSource::Execution, execution_id: Some(e.id.clone()) });
                }
            }
        }
        Ok(out)
    }

    /// Records a build under its work item (creating it, or resetting its
    /// verification for the new version). The plan and fixtures are
    /// computed here, from the saved version.
    pub async fn record_build(&self, caller: &Caller, thread: &ThreadId, rec: BuildRecord) -> Result<WorkItem, InstanceError> {
        self.workflow_access(caller, &rec.workflow_id, "workflow:read").await?;
        let version = self.version_of(&rec.workflow_id, &rec.version_id).await?;
        let nodes = version.body.nodes.as_array().cloned().unwrap_or_default();
        let (on, triggers) = enabled(&nodes);
        let mut plan = simulation::plan(&on, &version.body.connections);
        simulation::apply_model_pass(&mut plan, &rec.simulate);
        let simulated: Vec<String> = plan.iter().filter(|p| p.mode == Mode::Simulate && p.reason != simulation::Reason::Trigger).map(|p| p.node_name.clone()).collect();
        let mut fixtures = self.fixtures_from_executions(&rec.workflow_id, &simulated).await?;
        for p in plan.iter().filter(|p| simulated.contains(&p.node_name)) {
            if let Some(items) = rec.fixtures.get(&p.node_name).filter(|i| !i.is_empty()) {
                fixtures.insert(p.node_name.clone(), Fixture { items: items.clone(), source: FixtureSource::Model, execution_id: None });
            }
            if !fixtures.contains_key(&p.node_name) {
                let node = on.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(&p.node_name)).cloned().unwrap_or_default();
                fixtures.insert(p.node_name.clone(), Fixture { items: simulation::catalog_fixture(p, &node), source: FixtureSource::Catalog, execution_id: None });
            }
        }
        let names = |pick: &dyn Fn(&str) -> bool| -> Vec<String> { on.iter().filter_map(|n| n.get("name").and_then(Value::as_str)).filter(|n| pick(n)).map(str::to_owned).collect() };
        let build = Build {
            version_id: rec.version_id.clone(),
            built_at: db::now_iso(),
            planned_nodes: names(&|n| plan.iter().any(|p| p.node_name == n)),
            sub_nodes: names(&|n| simulation::is_sub_node(&version.body.connections, n)),
            triggers,
            node_simulation_plan: plan,
            simulation_fixtures: fixtures,
        };
        for _ in 0..RETRIES {
            let existing = self.data.work_items.get::<WorkItem>(thread, &rec.work_item_id).await?;
            let (doc, expected) = match existing {
                Some(Versioned { rev, doc }) => {
                    if doc.workflow_id != rec.workflow_id {
                        return Err(InstanceError::Invalid(format!(
                            "work item {} belongs to workflow {}; use another workItemId for workflow {}",
                            rec.work_item_id, doc.workflow_id, rec.workflow_id
                        )));
                    }
                    (doc.rebuilt(build.clone()), Some(rev))
                }
                None => (WorkItem::new(rec.work_item_id.clone(), rec.workflow_id.clone(), build.clone()), None),
            };
            match self.data.work_items.put(thread, &rec.work_item_id, &rec.workflow_id, &doc, expected).await {
                Ok(_) => return Ok(doc),
                Err(store::StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(conflict_exhausted(&rec.work_item_id))
    }

    /// The stored work item (checkpoints read verification without re-running it).
    pub async fn get_work_item(&self, thread: &ThreadId, id: &str) -> Result<Option<WorkItem>, InstanceError> {
        Ok(self.data.work_items.get::<WorkItem>(thread, id).await?.map(|v| v.doc))
    }

    /// Starts a verification run: reserves an attempt (clearing the
    /// trigger's old pass), then runs the built version with the simulated
    /// nodes pinned to their fixtures and the trigger's input shaped by type.
    pub async fn start_verification(&self, caller: &Caller, thread: &ThreadId, req: &VerifyRequest) -> Result<VerifyStarted, InstanceError> {
        let timeout_ms = crate::executions::timeout_of(req.timeout_ms)?;
        let current = self.work_item(thread, &req.work_item_id).await?.doc;
        if current.workflow_id != req.workflow_id {
            return Err(InstanceError::Invalid(format!(
                "work item {} built workflow {}, not {}",
                req.work_item_id, current.workflow_id, req.workflow_id
            )));
        }
        let (meta, _) = self.workflow_access(caller, &req.workflow_id, "workflow:execute").await?;
        if meta.is_archived {
            return Err(InstanceError::Invalid(format!("workflow {} is archived; unarchive it to verify it", meta.id)));
        }
        let version_id = current.build.version_id.clone();
        let body = self.version_of(&meta.id, &version_id).await?.body;
        let graph = engine::Graph::from_json(&json!({"nodes": body.nodes, "connections": body.connections, "settings": body.settings}))
            .map_err(|e| InstanceError::Invalid(format!("the workflow cannot run: {e}")))?;
        let start = trigger::start(&graph, req.trigger_node_name.as_deref(), req.input_data.as_ref())?;
        let trigger_key = start.as_ref().map_or_else(|| NO_TRIGGER.to_owned(), |t| t.node.clone());

        // The reservation: one conditional write moves the attempt counter,
        // clears this trigger's pass and recomputes the cumulative claim.
        let (item, attempt) = self
            .update_work_item(thread, &req.work_item_id, |wi| {
                if wi.build.version_id != version_id {
                    return Err(InstanceError::Conflict(format!("work item {} was rebuilt meanwhile; verify again", wi.work_item_id)));
                }
                if wi.attempts >= MAX_ATTEMPTS {
                    return Err(InstanceError::Invalid(format!(
                        "this build has used all {MAX_ATTEMPTS} verification attempts; patch or rebuild the workflow (build-workflow resets the budget) or report a verdict"
                    )));
                }
                wi.attempts += 1;
                wi.passes.remove(&trigger_key);
                let prev_verified_at = wi.verification.take().and_then(|v| v.verified_at);
                wi.verification = Some(Verification { attempted: true, success: false, execution_id: None, status: Some(RUNNING.into()), claim: Claim::Unverified, evidence: Evidence::default(), verified_at: None });
                let (claim, evidence) = wi.evidence();
                let v = wi.verification.as_mut().expect("set above");
                v.claim = claim;
                v.evidence = evidence;
                v.verified_at = prev_verified_at.filter(|_| claim == Claim::Verified);
                Ok(wi.attempts)
            })
            .await?;

        let mut pins: BTreeMap<String, Vec<engine::Item>> = BTreeMap::new();
        for p in item.build.simulated().filter(|p| p.reason != simulation::Reason::Trigger) {
            if let Some(f) = item.build.simulation_fixtures.get(&p.node_name) {
                pins.insert(p.node_name.clone(), f.items.iter().map(|j| engine::Item::new(j.clone())).collect());
            }
        }
        // In workflow order, as the plan lists them.
        let simulated: Vec<String> = item.build.simulated().filter(|p| pins.contains_key(&p.node_name)).map(|p| p.node_name.clone()).collect();
        let mut sreq = StartRequest::new(WorkflowRef::Version { workflow_id: meta.id.clone(), version_id: version_id.clone() }, ExecutionMode::Manual);
        if let Some(t) = start {
            sreq.trigger = Some(t.node);
            sreq.trigger_items = t.items;
        }
        sreq.pin_data = pins;
        sreq.timeout = Some(Duration::from_millis(timeout_ms));
        sreq.simulation = Some(json!({
            "workItemId": req.work_item_id,
            "triggerNodeName": (trigger_key != NO_TRIGGER).then_some(&trigger_key),
            "simulatedNodes": simulated,
            "note": "Simulated nodes did not run: their outputs are fixture data (verification never sends, writes or deletes).",
        }));
        let id = match self.executor.start_execution(sreq).await {
            Ok(id) => id,
            Err(e) => {
                // The attempt stays spent (it was reserved); the record says why.
                let _ = self.settle_attempt(thread, &req.work_item_id, &version_id, &trigger_key, None).await;
                return Err(crate::executions::exec_err(e));
            }
        };
        tracing::info!(executionId = %id, workflowId = %meta.id, workItemId = %req.work_item_id, "verification started");
        Ok(VerifyStarted {
            started: Started { execution_id: id.0, workflow_id: meta.id, timeout_ms, step: None, live: false },
            work_item_id: req.work_item_id.clone(),
            trigger: trigger_key,
            version_id,
            attempt,
        })
    }

    /// Writes a finished attempt: the trigger's pass (on success) and the
    /// cumulative verification, in one conditional write.
    async fn settle_attempt(
        &self,
        thread: &ThreadId,
        work_item_id: &str,
        version_id: &str,
        trigger_key: &str,
        run: Option<(&RunOutcome, bool, Vec<String>)>,
    ) -> Result<(WorkItem, ()), InstanceError> {
        self.update_work_item(thread, work_item_id, |wi| {
            if wi.build.version_id != version_id {
                return Err(InstanceError::Conflict(format!(
                    "work item {work_item_id} was rebuilt while this verification ran; its result is not recorded: verify the new build"
                )));
            }
            let (success, execution_id, status) = match &run {
                Some((o, ok, reached)) => {
                    if *ok {
                        wi.passes.insert(trigger_key.to_owned(), Pass { execution_id: o.execution_id.clone(), reached_nodes: reached.clone(), at: db::now_iso() });
                    }
                    (*ok, Some(o.execution_id.clone()), Some(o.status.clone()))
                }
                // The run never started (the caller reports why).
                None => (false, None, Some("error".to_owned())),
            };
            let prev_verified_at = wi.verification.as_ref().and_then(|v| v.verified_at.clone());
            wi.verification = Some(Verification { attempted: true, success, execution_id, status, claim: Claim::Unverified, evidence: Evidence::default(), verified_at: None });
            let (claim, evidence) = wi.evidence();
            let v = wi.verification.as_mut().expect("set above");
            v.claim = claim;
            v.evidence = evidence;
            v.verified_at = (claim == Claim::Verified).then(|| prev_verified_at.unwrap_or_else(db::now_iso));
            Ok(())
        })
        .await
    }

    /// Finishes a verification run: its result, the parameter and
    /// empty-output checks, and the cumulative verification written.
    pub async fn finish_verification(&self, caller: &Caller, thread: &ThreadId, vs: &VerifyStarted, deadline_passed: bool) -> Result<VerifyOutcome, InstanceError> {
        let id = &vs.started.execution_id;
        let mut outcome = self.finish_run(caller, &vs.started, deadline_passed).await?;
        let mut error = outcome.error.clone();
        if outcome.status == "waiting" {
            // A plan exists, so a parked run is a node that should have been simulated.
            let _ = self.executor.stop_execution(id).await;
            error = Some(format!(
                "the verification run parked as waiting{}: a user-action node was not simulated. Report needs_patch (or simulate the node) — a verification must never wait",
                outcome.wait_till.as_ref().map(|w| format!(" until {w}")).unwrap_or_default()
            ));
        }
        let success = outcome.status == "success";
        let doc = self.data.executions.get_data(id, &DataSelection::default()).await?;
        let runs = doc.as_ref().map(crate::executions::view::run_data).unwrap_or_default();
        let item = self.work_item(thread, &vs.work_item_id).await?.doc;
        let order: Vec<String> = item.build.planned_nodes.clone();
        let reached: Vec<String> = order.iter().filter(|n| runs.contains_key(*n)).cloned().collect();
        let simulated_reached: Vec<String> =
            reached.iter().filter(|n| item.build.is_simulated(n) && runs.get(*n).is_some_and(|r| r.iter().any(|t| t.origin == Some(engine::data::RunOrigin::Pinned)))).cloned().collect();
        let node_previews = reached
            .iter()
            .map(|n| NodePreview {
                node_name: n.clone(),
                simulated: item.build.is_simulated(n),
                item_count: runs.get(n).and_then(|r| r.last()).and_then(|t| t.output(0)).map_or(0, |i| i.len()),
            })
            .collect();

        // Parameter replay of every reached simulated node (not the trigger).
        let replay: Vec<String> = simulated_reached.iter().filter(|n| !item.build.triggers.contains(n)).cloned().collect();
        let mut found = checks::Found::default();
        for node in &replay {
            match &doc {
                None => found.skip(node, None, checks::SkipReason::ExecutionUnavailable),
                Some(_) if self.values == crate::executions::view::Values::Withheld => found.skip(node, Some(id), checks::SkipReason::ParameterValuesDisabled),
                Some(_) => match self.resolved_node_parameters(caller, id, node, Some(0), None).await {
                    Ok(r) => found.warnings_of(node, id, &r),
                    Err(_) => found.skip(node, Some(id), checks::SkipReason::ReplayFailed),
                },
            }
        }
        let graph = doc.as_ref().and_then(crate::executions::view::graph);
        let empty_output_note = graph.as_ref().and_then(|g| checks::empty_output_note(g, &runs, &order, |n| item.build.is_simulated(n) || item.build.triggers.iter().any(|t| t == n)));

        let settled = self.settle_attempt(thread, &vs.work_item_id, &vs.version_id, &vs.trigger, Some((&outcome, success, reached.clone()))).await;
        let (after, _) = settled?;
        // The caps hold across passes: count what this pass shows.
        let (shown_w, shown_s) = (after.shown_warnings, after.shown_skips);
        let (warnings, skips, skip_total, cap_note) = found.capped(shown_w, shown_s);
        let (nw, ns) = (warnings.len(), skips.len());
        if nw + ns > 0 {
            self.update_work_item(thread, &vs.work_item_id, |wi| {
                wi.shown_warnings += nw;
                wi.shown_skips += ns;
                Ok(())
            })
            .await?;
        }
        let verification = after.verification.clone().expect("settle writes it");
        let mut note = Vec::new();
        if !simulated_reached.is_empty() {
            note.push(format!(
                "Simulated (fixture output, nothing sent or written): {}. Their outputs are not real; a live test (executions run, after the user agrees) proves them.",
                simulated_reached.join(", ")
            ));
        }
        if !warnings.is_empty() {
            note.push(format!("{} parameter(s) of simulated nodes resolved empty or failed: see resolvedParameterWarnings.", warnings.len()));
        }
        note.extend(cap_note);
        if verification.claim != Claim::Verified {
            let e = &verification.evidence;
            if !e.pending_triggers.is_empty() {
                note.push(format!("Triggers still to verify (pass triggerNodeName): {}.", e.pending_triggers.join(", ")));
            }
            if !e.uncovered_nodes.is_empty() && success {
                note.push(format!("Nodes no verification run reached: {}.", e.uncovered_nodes.join(", ")));
            }
        }
        Ok(VerifyOutcome {
            execution_id: id.clone(),
            success,
            status: outcome.status.clone(),
            data: outcome.data.take(),
            error,
            trigger_node_name: (vs.trigger != NO_TRIGGER).then(|| vs.trigger.clone()),
            simulated_nodes: simulated_reached,
            node_previews,
            simulation_note: (!note.is_empty()).then(|| note.join(" ")),
            resolved_parameter_warnings: warnings,
            skipped_parameter_checks: skips,
            skipped_parameter_check_count: (skip_total > 0).then_some(skip_total),
            empty_output_note,
            verification,
            attempt: vs.attempt,
            attempts_left: MAX_ATTEMPTS.saturating_sub(after.attempts),
        })
    }

    /// `report-verification-verdict`: one step of the loop's state machine.
    pub async fn report_verdict(&self, thread: &ThreadId, r: &VerdictReport) -> Result<VerdictOutcome, InstanceError> {
        let (item, (effective, guidance)) = self
            .update_work_item(thread, &r.work_item_id, |wi| {
                let repeats = r.failure_signature.as_ref().and_then(|s| wi.signatures.get(s)).copied().unwrap_or(0);
                let claim_verified = wi.claim() == Claim::Verified;
                let (next, effective, guidance) = verdict::step(wi.loop_state, r.verdict, repeats, claim_verified);
                if let Some(s) = &r.failure_signature {
                    *wi.signatures.entry(s.clone()).or_insert(0) += 1;
                }
                wi.loop_state = next;
                wi.last_verdict = Some(effective);
                Ok((effective, guidance))
            })
            .await?;
        let mut guidance = guidance.to_owned();
        if effective != r.verdict {
            guidance = format!("The failure signature repeated, so the verdict escalated to {}. {guidance}", serde_json::to_value(effective).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default());
        }
        if let (Some(n), Verdict::NeedsPatch) = (&r.failed_node_name, effective) {
            guidance.push_str(&format!(" Start with node {n:?}."));
        }
        if let Some(d) = r.diagnosis.as_ref().filter(|_| matches!(effective, Verdict::FailedTerminal | Verdict::NeedsUserInput)) {
            guidance.push_str(&format!(" Diagnosis to pass on: {d}"));
        }
        Ok(VerdictOutcome { guidance, state: item.loop_state, effective_verdict: effective, claim: item.claim() })
    }

    /// A successful plain run (`executions(run)`, no saved pins, no injected
    /// input) of the draft a work item built: when it reached every planned
    /// node, the build's claim becomes `verified`. Never lowers a claim.
    /// Returns the work item's claim after this run.
    pub async fn record_live_evidence(&self, thread: &ThreadId, started: &Started, outcome: &RunOutcome) -> Result<Option<(String, Claim)>, InstanceError> {
        let items = self.data.work_items.for_workflow::<WorkItem>(thread, &started.workflow_id).await?;
        let Some(latest) = items.into_iter().max_by(|a, b| a.doc.build.built_at.cmp(&b.doc.build.built_at)) else { return Ok(None) };
        let wi = latest.doc;
        if !started.live || outcome.status != "success" {
            return Ok(Some((wi.work_item_id.clone(), wi.claim())));
        }
        // The live run tested the draft: it must still be the version built.
        let draft = self.data.workflows.meta(&started.workflow_id).await?.map(|m| m.version_id);
        if draft.as_deref() != Some(wi.build.version_id.as_str()) {
            return Ok(Some((wi.work_item_id.clone(), wi.claim())));
        }
        let doc = self.data.executions.get_data(&started.execution_id, &DataSelection { node_names: None, max_items: Some(1) }).await?;
        let runs = doc.as_ref().map(crate::executions::view::run_data).unwrap_or_default();
        let all = wi.build.planned_nodes.iter().all(|n| runs.get(n).is_some_and(|r| r.iter().any(|t| t.origin.is_none())));
        if !all {
            return Ok(Some((wi.work_item_id.clone(), wi.claim())));
        }
        let exec = started.execution_id.clone();
        let version = wi.build.version_id.clone();
        let (after, _) = self
            .update_work_item(thread, &wi.work_item_id, |w| {
                if w.build.version_id != version {
                    return Ok(());
                }
                w.live = Some(LiveRun { execution_id: exec.clone(), at: db::now_iso() });
                let (claim, evidence) = w.evidence();
                let prev = w.verification.take();
                w.verification = Some(Verification {
                    attempted: prev.as_ref().is_some_and(|v| v.attempted),
                    success: true,
                    execution_id: Some(exec.clone()),
                    status: Some("success".into()),
                    claim,
                    evidence,
                    verified_at: Some(prev.and_then(|v| v.verified_at).unwrap_or_else(db::now_iso)),
                });
                Ok(())
            })
            .await?;
        Ok(Some((after.work_item_id.clone(), after.claim())))
    }

    /// The publish gate's view: the verification of the workflow's latest
    /// build in this thread (`None`: never built here).
    pub async fn publish_check(&self, thread: &ThreadId, workflow_id: &str) -> Result<Option<PublishCheck>, InstanceError> {
        let items = self.data.work_items.for_workflow::<WorkItem>(thread, workflow_id).await?;
        Ok(items.into_iter().max_by(|a, b| a.doc.build.built_at.cmp(&b.doc.build.built_at)).map(|v| {
            let wi = v.doc;
            let (claim, evidence) = match &wi.verification {
                Some(ver) => (ver.claim, ver.evidence.clone()),
                None => wi.evidence(),
            };
            let claim = if wi.verification.is_none() && wi.live.is_none() { Claim::Unverified } else { claim };
            PublishCheck { work_item_id: wi.work_item_id, version_id: wi.build.version_id, claim, evidence, verified_at: wi.verification.and_then(|v| v.verified_at) }
        }))
    }

    /// Refuses publishing an unverified latest build unless acknowledged.
    pub async fn check_publish(&self, thread: &ThreadId, workflow_id: &str, acknowledged: bool) -> Result<Option<PublishCheck>, InstanceError> {
        let check = self.publish_check(thread, workflow_id).await?;
        if let Some(c) = &check {
            if c.claim != Claim::Verified && !acknowledged {
                return Err(InstanceError::Invalid(format!(
                    "the latest build of workflow {workflow_id} (work item {}) is not verified — {} Verify it first (verify-built-workflow), or tell the user it is unverified and publish with acknowledgeUnverified: true",
                    c.work_item_id,
                    c.status_text()
                )));
            }
        }
        Ok(check)
    }

    /// `apply-workflow-credentials`: real credentials onto the built nodes,
    /// all in one save of the built version (or nothing). `credentials` is
    /// `{credentialType: credentialId}` (every built node accepting that
    /// type) or `{nodeName: {credentialType: credentialId}}`.
    pub async fn apply_workflow_credentials(&self, caller: &Caller, thread: &ThreadId, work_item_id: &str, credentials: &Map<String, Value>) -> Result<Vec<String>, InstanceError> {
        let wi = self.work_item(thread, work_item_id).await?.doc;
        let (meta, _) = self.workflow_access(caller, &wi.workflow_id, "workflow:update").await?;
        if meta.version_id != wi.build.version_id {
            return Err(InstanceError::Conflict(format!(
                "workflow {} changed since work item {work_item_id} built it; build it again (build-workflow) before applying credentials",
                wi.workflow_id
            )));
        }
        if credentials.is_empty() {
            return Err(InstanceError::Invalid("credentials is empty: pass {credentialType: credentialId} or {nodeName: {credentialType: credentialId}}".into()));
        }
        let wf = self.workflow(caller, &wi.workflow_id).await?;
        let mut nodes = wf.body.nodes.as_array().cloned().unwrap_or_default();
        // (node name, type, id) to set, each checked before anything is saved.
        let mut wanted: Vec<(String, String, String)> = Vec::new();
        let accepts = |n: &Value, kind: &str| -> bool {
            let ty = n.get("type").and_then(Value::as_str).unwrap_or_default();
            let p = n.get("parameters").cloned().unwrap_or_default();
            if ty == "n8n-nodes-base.httpRequest" {
                return [p.get("genericAuthType"), p.get("nodeCredentialType")].iter().any(|v| v.and_then(Value::as_str) == Some(kind))
                    || n.get("credentials").and_then(|c| c.get(kind)).is_some();
            }
            crate::catalog::describe_exact(ty).is_some_and(|d| crate::catalog::credential_types(d).iter().any(|t| t == kind))
        };
        for (k, v) in credentials {
            match v {
                Value::String(cred) => {
                    let targets: Vec<String> = nodes
                        .iter()
                        // Built nodes that call out; a trigger's credential (incoming auth) is only set by name.
                        .filter(|n| {
                            let name = n.get("name").and_then(Value::as_str).unwrap_or_default();
                            wi.build.planned_nodes.iter().chain(&wi.build.sub_nodes).any(|p| p == name) && !wi.build.triggers.iter().any(|t| t == name) && accepts(n, k)
                        })
                        .filter_map(|n| n.get("name").and_then(Value::as_str).map(str::to_owned))
                        .collect();
                    if targets.is_empty() {
                        return Err(InstanceError::Invalid(format!("no built node of work item {work_item_id} takes a {k} credential; nothing was changed")));
                    }
                    wanted.extend(targets.into_iter().map(|t| (t, k.clone(), cred.clone())));
                }
                Value::Object(m) => {
                    let Some(n) = nodes.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(k.as_str())) else {
                        return Err(InstanceError::Invalid(format!("workflow {} has no node {k:?}; nothing was changed", wi.workflow_id)));
                    };
                    for (kind, cred) in m {
                        let Some(cred) = cred.as_str() else {
                            return Err(InstanceError::Invalid(format!("credentials.{k}.{kind} must be a credential id")));
                        };
                        let generic_http = n.get("type").and_then(Value::as_str) == Some("n8n-nodes-base.httpRequest")
                            && crate::catalog::describe_exact("n8n-nodes-base.httpRequest").is_some_and(|d| crate::catalog::credential_types(d).iter().any(|t| t == kind));
                        if !accepts(n, kind) && !generic_http {
                            return Err(InstanceError::Invalid(format!("node {k:?} does not take a {kind} credential; nothing was changed")));
                        }
                        wanted.push((k.clone(), kind.clone(), cred.to_owned()));
                    }
                }
                _ => return Err(InstanceError::Invalid(format!("credentials.{k} must be a credential id or {{credentialType: credentialId}}"))),
            }
        }
        let mut picked = Vec::new();
        for (node, kind, cred) in &wanted {
            // Refuses a credential the caller cannot use in this project.
            let c = self.pick_credential(caller, &meta.project_id, kind, cred).await?;
            picked.push((node.clone(), kind.clone(), c));
        }
        let mut updated = BTreeSet::new();
        for (node, kind, c) in picked {
            let Some(n) = nodes.iter_mut().find(|n| n.get("name").and_then(Value::as_str) == Some(node.as_str())) else { continue };
            let obj = n.as_object_mut().ok_or_else(|| InstanceError::Invalid(format!("node {node:?} is not an object")))?;
            let creds = obj.entry("credentials").or_insert_with(|| json!({}));
            if !creds.is_object() {
                *creds = json!({});
            }
            creds[kind.as_str()] = json!({"id": c.id, "name": c.name});
            if obj.get("type").and_then(Value::as_str) == Some("n8n-nodes-base.httpRequest") {
                let params = obj.entry("parameters").or_insert_with(|| json!({}));
                let auth = params.get("authentication").and_then(Value::as_str).unwrap_or("none");
                if auth == "none" {
                    params["authentication"] = json!("genericCredentialType");
                    params["genericAuthType"] = json!(kind);
                }
            }
            updated.insert(node);
        }
        let mut body = wf.body.clone();
        body.nodes = Value::Array(nodes);
        let saved = self.save_version(caller, &wi.workflow_id, &wi.build.version_id, body, None, None, Some(&[]), crate::builder::Variant::InstanceAi).await?;
        let new_version = saved.workflow.meta.version_id.clone();
        let old_version = wi.build.version_id.clone();
        // The build now is the saved version; its logic (and so its verification) is unchanged.
        self.update_work_item(thread, work_item_id, |w| {
            if w.build.version_id == old_version {
                w.build.version_id = new_version.clone();
            }
            Ok(())
        })
        .await?;
        Ok(updated.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two triggers, one of which feeds `Only B`.
    fn item() -> WorkItem {
        let plan = |n: &str, mode: Mode, reason: simulation::Reason| NodePlan { node_name: n.into(), node_type: "t".into(), mode, reason, note: None };
        WorkItem::new(
            "wi".into(),
            "w".into(),
            Build {
                version_id: "v1".into(),
                built_at: "2026-01-01T00:00:00Z".into(),
                planned_nodes: vec!["A".into(), "B".into(), "Shared".into(), "Only B".into()],
                sub_nodes: Vec::new(),
                triggers: vec!["A".into(), "B".into()],
                node_simulation_plan: vec![
                    plan("A", Mode::Simulate, simulation::Reason::Trigger),
                    plan("B", Mode::Simulate, simulation::Reason::Trigger),
                    plan("Shared", Mode::Execute, simulation::Reason::PureLogic),
                    plan("Only B", Mode::Simulate, simulation::Reason::WriteOperation),
                ],
                simulation_fixtures: BTreeMap::new(),
            },
        )
    }

    fn pass(nodes: &[&str]) -> Pass {
        Pass { execution_id: "e".into(), reached_nodes: nodes.iter().map(|n| (*n).to_owned()).collect(), at: "t".into() }
    }

    #[test]
    fn coverage_is_per_trigger_and_a_claim_needs_every_trigger_and_node() {
        let mut wi = item();
        assert_eq!(wi.evidence().0, Claim::Unverified);
        wi.verification = Some(Verification { attempted: true, success: false, execution_id: None, status: Some("error".into()), claim: Claim::Unverified, evidence: Evidence::default(), verified_at: None });
        assert_eq!(wi.evidence().0, Claim::Failed, "a failed run and no pass");
        wi.passes.insert("A".into(), pass(&["A", "Shared"]));
        let (claim, e) = wi.evidence();
        assert_eq!(claim, Claim::Partial);
        assert_eq!((e.passed_triggers, e.pending_triggers, e.uncovered_nodes), (vec!["A".to_owned()], vec!["B".to_owned()], vec!["B".to_owned(), "Only B".to_owned()]));
        // B passes but never reaches `Only B`: still not verified.
        wi.passes.insert("B".into(), pass(&["B", "Shared"]));
        let (claim, e) = wi.evidence();
        assert_eq!((claim, e.pending_triggers.len(), e.uncovered_nodes), (Claim::Partial, 0, vec!["Only B".to_owned()]));
        wi.passes.insert("B".into(), pass(&["B", "Shared", "Only B"]));
        let (claim, e) = wi.evidence();
        assert_eq!((claim, e.simulated_nodes), (Claim::Verified, vec!["A".to_owned(), "B".to_owned(), "Only B".to_owned()]));
        // A retry of A clears its pass: pending again until it passes.
        wi.passes.remove("A");
        assert_eq!(wi.evidence().1.pending_triggers, ["A"]);
        // A live run that reached every node verifies whatever the passes say.
        wi.live = Some(LiveRun { execution_id: "live".into(), at: "t".into() });
        let (claim, e) = wi.evidence();
        assert_eq!((claim, e.live_execution_id.as_deref()), (Claim::Verified, Some("live")));
    }
}
