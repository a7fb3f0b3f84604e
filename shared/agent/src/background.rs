//! Background agents: an approved plan's tasks run as detached agents, each
//! its own chain of steps on the Steps queue with its own agentId, sharing
//! the runId (their events may follow the orchestrator's `run-finish`).
//! A task starts when all its dependencies succeeded; whoever finishes a
//! task re-checks the plan, and the conditional create of a chain makes
//! exactly one actor spawn (and announce) each task.

use crate::checkpoint::{Checkpoint, TaskBrief};
use crate::error::AgentError;
use crate::model::Message;
use crate::runtime::{event, Runtime, StepMessage};
use crate::tools::ToolContext;
use protocol::events::{AgentSpawned, EventPayload, TaskItem, TaskStatus, TasksUpdate};
use protocol::ids::{AgentId, RunId, ThreadId};
use protocol::UserId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use store::data::db::{get_s, key, n, s};
use store::runs::{Chain, ChainState, NewChain, ORCHESTRATOR};
use store::EventWriter;
use tokio::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedTask {
    pub id: String,
    pub title: String,
    pub kind: String,
    pub spec: String,
    #[serde(default)]
    pub deps: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_supporting_workflow: Option<bool>,
}

pub fn task_agent(task_id: &str) -> AgentId {
    AgentId(format!("agent-{task_id}"))
}

pub fn role_of(kind: &str) -> &'static str {
    match kind {
        "checkpoint" => "checkpoint",
        _ => "workflow-builder",
    }
}

/// Unique ids, known dependencies, no cycles.
pub fn check_plan(tasks: &[PlannedTask]) -> Result<(), String> {
    let ids: HashSet<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    if ids.len() != tasks.len() {
        return Err("task ids must be unique".into());
    }
    for t in tasks {
        if !protocol::ids::is_valid_path_id(&t.id) {
            return Err(format!("task id {:?} must be 1-128 characters of [A-Za-z0-9_.:-]", t.id));
        }
        for d in &t.deps {
            if !ids.contains(d.as_str()) {
                return Err(format!("task {} depends on unknown task {d}", t.id));
            }
        }
    }
    // Kahn's algorithm: anything left over sits on a cycle.
    let mut indegree: HashMap<&str, usize> = tasks.iter().map(|t| (t.id.as_str(), t.deps.len())).collect();
    let mut ready: Vec<&str> = indegree.iter().filter(|(_, d)| **d == 0).map(|(id, _)| *id).collect();
    let mut done = 0;
    while let Some(id) = ready.pop() {
        done += 1;
        for t in tasks.iter().filter(|t| t.deps.iter().any(|d| d == id)) {
            if let Some(d) = indegree.get_mut(t.id.as_str()) {
                *d -= 1;
                if *d == 0 {
                    ready.push(t.id.as_str());
                }
            }
        }
    }
    if done != tasks.len() {
        return Err("the task dependencies form a cycle".into());
    }
    Ok(())
}

async fn load_plan(rt: &Runtime, run: &RunId) -> Result<Vec<PlannedTask>, AgentError> {
    let Some(item) = rt.runs.get_record(&format!("run#{run}"), "plan").await? else { return Ok(Vec::new()) };
    let text = get_s(&item, "tasks").unwrap_or("[]");
    serde_json::from_str(text).map_err(|e| AgentError::Checkpoint(format!("plan: {e}")))
}

pub async fn plan_task(rt: &Runtime, run: &RunId, task_id: &str) -> Result<Option<PlannedTask>, AgentError> {
    Ok(load_plan(rt, run).await?.into_iter().find(|t| t.id == task_id))
}

/// Persists an approved plan and starts the tasks that have no dependencies.
pub async fn start_plan(ctx: &ToolContext<'_>, tasks: Vec<PlannedTask>) -> Result<(), AgentError> {
    check_plan(&tasks).map_err(AgentError::Invalid)?;
    let mut item = key(format!("run#{}", ctx.run_id), "plan");
    item.insert("tasks".into(), s(serde_json::to_string(&tasks).map_err(|e| AgentError::Invalid(e.to_string()))?));
    item.insert("createdAt".into(), n(store::runs::now_ms()));
    if !ctx.rt.runs.put_record(item, Some("attribute_not_exists(pk)")).await? {
        return Err(AgentError::Conflict("this run already has a plan".into()));
    }
    schedule_ready(ctx.rt, ctx.run_id, ctx.thread_id, ctx.user_id, ctx.writer).await
}

/// Task status as the chains say.
fn status_of(chain: Option<&Chain>, verdict_failed: bool) -> TaskStatus {
    match chain {
        None => TaskStatus::Pending,
        Some(c) => match (c.state, c.finish_status.as_deref()) {
            (ChainState::Finishing | ChainState::Finished, Some("completed")) if !verdict_failed => TaskStatus::Completed,
            (ChainState::Finishing | ChainState::Finished, Some("cancelled")) => TaskStatus::Cancelled,
            (ChainState::Finishing | ChainState::Finished, _) => TaskStatus::Failed,
            _ => TaskStatus::InProgress,
        },
    }
}

/// Spawns every task whose dependencies all succeeded and that has no
/// agent yet, then publishes the plan's current state (`tasks-update`).
pub async fn schedule_ready(
    rt: &Runtime,
    run: &RunId,
    thread: &ThreadId,
    user: &UserId,
    writer: &Mutex<EventWriter>,
) -> Result<(), AgentError> {
    let plan = load_plan(rt, run).await?;
    if plan.is_empty() {
        return Ok(());
    }
    let chains = rt.runs.chains(run).await?;
    let by_agent: HashMap<&str, &Chain> = chains.iter().map(|c| (c.agent_id.0.as_str(), c)).collect();
    let status = |id: &str| status_of(by_agent.get(task_agent(id).0.as_str()).copied(), false);
    // A cancelled run starts nothing new.
    let run_cancelled = by_agent.get(ORCHESTRATOR).is_some_and(|c| c.cancel);
    let mut statuses: HashMap<String, TaskStatus> = plan.iter().map(|t| (t.id.clone(), status(&t.id))).collect();
    for task in &plan {
        let not_started = statuses.get(&task.id) == Some(&TaskStatus::Pending);
        let deps_done = task.deps.iter().all(|d| statuses.get(d) == Some(&TaskStatus::Completed));
        if !not_started || !deps_done || run_cancelled {
            continue;
        }
        // Background agents write where the conversation does.
        let project = by_agent.get(ORCHESTRATOR).and_then(|c| c.project_id.as_deref());
        if spawn(rt, run, thread, user, project, task, writer).await? {
            statuses.insert(task.id.clone(), TaskStatus::InProgress);
        }
    }
    let tasks = plan
        .iter()
        .map(|t| TaskItem {
            id: t.id.clone(),
            description: t.title.clone(),
            detail: None,
            status: statuses.get(&t.id).copied().unwrap_or(TaskStatus::Pending),
        })
        .collect();
    let ev = event(run, &AgentId(ORCHESTRATOR.into()), EventPayload::TasksUpdate(TasksUpdate { tasks, plan_items: None }));
    writer.lock().await.emit(ev).await?;
    Ok(())
}

/// What a task's agent is told beside its spec (in its system prompt): the
/// build → verify loop for a build task (its work item is the task id) or,
/// for a checkpoint, the stored verification of the builds it depends on
/// (read, not re-run).
pub async fn task_context(rt: &Runtime, thread: &ThreadId, task: &PlannedTask) -> Option<String> {
    match task.kind.as_str() {
        "build-workflow" => Some(format!(
            "<workflow-loop workItemId=\"{id}\">Build with build-workflow (workItemId \"{id}\"), then verify-built-workflow \
(workItemId \"{id}\"), then report-verification-verdict and follow its guidance until it says verified or stop. \
Never publish an unverified build without acknowledgeUnverified and the user's consent.</workflow-loop>",
            id = task.id
        )),
        "checkpoint" => {
            let inst = rt.instance.as_deref()?;
            let mut lines = Vec::new();
            for dep in &task.deps {
                if let Ok(Some(wi)) = inst.get_work_item(thread, dep).await {
                    lines.push(
                        serde_json::json!({
                            "workItemId": wi.work_item_id, "workflowId": wi.workflow_id, "versionId": wi.build.version_id,
                            "loopState": wi.loop_state, "verification": wi.verification,
                        })
                        .to_string(),
                    );
                }
            }
            (!lines.is_empty()).then(|| {
                format!(
                    "<stored-verification>\n{}\n</stored-verification>\nThe stored verification of the builds this checkpoint depends on: use it as evidence (executionId, claim) instead of re-running verification.",
                    lines.join("\n")
                )
            })
        }
        _ => None,
    }
}

/// Creates the task's chain; only the actor whose create wins announces it
/// (`agent-spawned`, before the first step can publish anything) and enqueues it.
async fn spawn(
    rt: &Runtime,
    run: &RunId,
    thread: &ThreadId,
    user: &UserId,
    project: Option<&str>,
    task: &PlannedTask,
    writer: &Mutex<EventWriter>,
) -> Result<bool, AgentError> {
    let agent = task_agent(&task.id);
    let role = role_of(&task.kind);
    let ckpt = Checkpoint {
        messages: vec![Message::user(task.spec.clone())],
        task: Some(TaskBrief {
            task_id: task.id.clone(),
            title: task.title.clone(),
            kind: task.kind.clone(),
            spec: task.spec.clone(),
            context: task_context(rt, thread, task).await,
        }),
        ..Checkpoint::default()
    };
    let created = rt
        .runs
        .create_chain(&NewChain {
            run_id: run.clone(),
            thread_id: thread.clone(),
            user_id: user.clone(),
            agent_id: agent.clone(),
            role: role.to_owned(),
            parent_id: Some(ORCHESTRATOR.to_owned()),
            task_id: Some(task.id.clone()),
            checkpoint: ckpt.encode()?,
            lease_until: rt.lease_from_now(),
            project_id: project.map(str::to_owned),
        })
        .await?;
    if !created {
        return Ok(false);
    }
    let mut index = key(format!("thread#{thread}"), format!("task#{}", task.id));
    index.insert("runId".into(), s(&run.0));
    index.insert("agentId".into(), s(&agent.0));
    index.insert("role".into(), s(role));
    index.insert("startedAt".into(), n(store::runs::now_ms() / 1000));
    rt.runs.put_record(index, None).await?;
    let tools: Vec<String> = rt
        .tools
        .definitions(&crate::tools::Offer { checkpoint_task: task.kind == "checkpoint", ..Default::default() })
        .into_iter()
        .map(|d| d.name)
        .collect();
    let spawned = AgentSpawned {
        parent_id: ORCHESTRATOR.to_owned(),
        role: role.to_owned(),
        tools,
        task_id: Some(task.id.clone()),
        kind: Some(task.kind.clone()),
        title: Some(task.title.clone()),
        subtitle: None,
        goal: Some(task.spec.clone()),
        target_resource: None,
    };
    writer.lock().await.emit(event(run, &agent, EventPayload::AgentSpawned(spawned))).await?;
    rt.enqueue(&StepMessage { run_id: run.0.clone(), agent_id: agent.0.clone(), step: 1, request_id: None, wait_id: None }).await?;
    Ok(true)
}

/// A checkpoint task's verdict, when `complete-checkpoint` recorded one:
/// `(succeeded, note)`.
pub async fn verdict(rt: &Runtime, run: &RunId, task_id: &str) -> Result<Option<(bool, String)>, AgentError> {
    let Some(item) = rt.runs.get_record(&format!("run#{run}"), &format!("verdict#{task_id}")).await? else {
        return Ok(None);
    };
    let v: serde_json::Value = get_s(&item, "verdict").and_then(|t| serde_json::from_str(t).ok()).unwrap_or_default();
    let ok = v.get("status").and_then(|s| s.as_str()) == Some("succeeded");
    let note = v
        .get(if ok { "result" } else { "error" })
        .or_else(|| v.get("result"))
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_owned();
    Ok(Some((ok, note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, deps: &[&str]) -> PlannedTask {
        PlannedTask {
            id: id.into(),
            title: id.into(),
            kind: "build-workflow".into(),
            spec: id.into(),
            deps: deps.iter().map(|d| d.to_string()).collect(),
            workflow_id: None,
            is_supporting_workflow: None,
        }
    }

    #[test]
    fn plans_must_be_acyclic_with_known_deps() {
        assert!(check_plan(&[t("a", &[]), t("b", &["a"])]).is_ok());
        assert!(check_plan(&[t("a", &["b"]), t("b", &["a"])]).unwrap_err().contains("cycle"));
        assert!(check_plan(&[t("a", &["x"])]).unwrap_err().contains("unknown"));
        assert!(check_plan(&[t("a", &[]), t("a", &[])]).unwrap_err().contains("unique"));
    }
}
