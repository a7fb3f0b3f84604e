//! Orchestration tools for plans and background work: `create-tasks` (a
//! dependency-aware plan, approved by the user, then run as detached
//! background agents), `task-control` (checklist, cancel, correct) and
//! `complete-checkpoint` (a checkpoint task's verdict).

use super::{Audience, Decision, Gate, Tool, ToolContext, ToolOutcome};
use crate::background::{self, PlannedTask};
use crate::run::TaskCancel;
use futures::future::BoxFuture;
use protocol::events::{ConfirmationRequest, EventPayload, InputType, Severity, TaskItem, TaskList, TaskStatus, TasksUpdate};
use serde_json::{json, Map, Value};
use store::data::db::{key, n, s};

// ------------------------------------------------------------ create-tasks

pub struct CreateTasks;

fn planned(args: &Value) -> Vec<PlannedTask> {
    args.get("tasks").and_then(|t| serde_json::from_value(t.clone()).ok()).unwrap_or_default()
}

fn pending_items(tasks: &[PlannedTask]) -> Vec<TaskItem> {
    tasks
        .iter()
        .map(|t| TaskItem { id: t.id.clone(), description: t.title.clone(), detail: None, status: TaskStatus::Pending })
        .collect()
}

impl Tool for CreateTasks {
    fn name(&self) -> &'static str {
        "create-tasks"
    }

    fn description(&self) -> &'static str {
        "Persist a dependency-aware task plan for detached multi-step execution; the user approves it before it runs."
    }

    fn audience(&self) -> Audience {
        Audience::Orchestrator
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "minLength": 1, "description": "Stable identifier used by dependency edges"},
                            "title": {"type": "string", "minLength": 1, "description": "Short user-facing task title"},
                            "kind": {"type": "string", "enum": ["build-workflow", "checkpoint"]},
                            "spec": {"type": "string", "minLength": 1, "description": "Detailed executor briefing for this task"},
                            "deps": {"type": "array", "items": {"type": "string"}, "description": "Task IDs that must succeed first"},
                            "workflowId": {"type": "string"},
                            "isSupportingWorkflow": {"type": "boolean"}
                        },
                        "required": ["id", "title", "kind", "spec", "deps"],
                        "additionalProperties": false
                    }
                },
                "planningContext": {
                    "type": "object",
                    "properties": {
                        "source": {"type": "string", "enum": ["planning-skill", "replan"]},
                        "summary": {"type": "string"},
                        "assumptions": {"type": "array", "items": {"type": "string"}}
                    },
                    "required": ["source", "summary"],
                    "additionalProperties": false
                }
            },
            "required": ["tasks", "planningContext"],
            "additionalProperties": false
        })
    }

    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let gate = self.plan_gate(args);
        Box::pin(async move { Ok(gate) })
    }

    fn allow_key(&self, _args: &Value) -> Option<String> {
        None
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match background::check_plan(&planned(&args)) {
                Err(e) => ToolOutcome::Failed(e),
                Ok(()) => ToolOutcome::Failed("create-tasks needs the user's approval of the plan".into()),
            }
        })
    }

    fn resume<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        self.resume_plan(ctx, args, decision)
    }
}

impl CreateTasks {
    fn plan_gate(&self, args: &Value) -> Option<Gate> {
        let tasks = planned(args);
        if let Err(e) = background::check_plan(&tasks) {
            // An invalid plan is refused by `run` without asking anyone.
            tracing::debug!(error = %e, "plan refused before review");
            return None;
        }
        let items = pending_items(&tasks);
        let mut req = ConfirmationRequest::approval("", "", self.name(), Map::new(), Severity::Info, "Review the plan");
        req.input_type = Some(InputType::PlanReview);
        req.tasks = Some(TaskList { tasks: items.clone() });
        req.intro_message = args.pointer("/planningContext/summary").and_then(Value::as_str).map(str::to_owned);
        Some(Gate::question(req, vec![EventPayload::TasksUpdate(TasksUpdate { tasks: items, plan_items: None })]))
    }

    fn resume_plan<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let tasks = planned(&args);
            if !decision.approved {
                let feedback = decision.user_input.clone().unwrap_or_default();
                return ToolOutcome::Done(json!({
                    "result": format!("The user rejected the plan; do not resubmit it unchanged in this turn. Feedback: {feedback}"),
                    "taskCount": 0,
                    "denied": true,
                }));
            }
            let count = tasks.len();
            match background::start_plan(ctx, tasks).await {
                Ok(()) => ToolOutcome::Done(json!({
                    "result": format!("Plan approved: {count} task(s) scheduled as background agents."),
                    "taskCount": count,
                })),
                Err(e) => ToolOutcome::Failed(format!("could not schedule the plan: {e}")),
            }
        })
    }
}

// ------------------------------------------------------------ task-control

pub struct TaskControl;

impl Tool for TaskControl {
    fn name(&self) -> &'static str {
        "task-control"
    }

    fn description(&self) -> &'static str {
        "Progress tracking and background-task control: update-checklist, cancel-task, correct-task."
    }

    fn audience(&self) -> Audience {
        Audience::Orchestrator
    }

    fn input_schema(&self) -> Value {
        json!({"oneOf": [
            {
                "type": "object",
                "properties": {
                    "action": {"const": "update-checklist"},
                    "tasks": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "minLength": 1},
                            "description": {"type": "string"},
                            "status": {"type": "string", "enum": ["todo", "pending", "in_progress", "done", "completed", "failed", "cancelled"]},
                            "detail": {"type": "string"}
                        },
                        "required": ["id", "description", "status"],
                        "additionalProperties": false
                    }}
                },
                "required": ["action", "tasks"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {"action": {"const": "cancel-task"}, "taskId": {"type": "string", "minLength": 1}},
                "required": ["action", "taskId"],
                "additionalProperties": false
            },
            {
                "type": "object",
                "properties": {
                    "action": {"const": "correct-task"},
                    "taskId": {"type": "string", "minLength": 1},
                    "correction": {"type": "string", "minLength": 1}
                },
                "required": ["action", "taskId", "correction"],
                "additionalProperties": false
            }
        ]})
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let action = args.get("action").and_then(Value::as_str).unwrap_or_default();
            match action {
                "update-checklist" => {
                    let tasks: Vec<TaskItem> = match args.get("tasks").map(|t| serde_json::from_value(t.clone())) {
                        Some(Ok(t)) => t,
                        _ => return ToolOutcome::Failed("tasks: expected a list of {id, description, status}".into()),
                    };
                    let mut item = key(format!("thread#{}", ctx.thread_id), "checklist");
                    item.insert("tasks".into(), s(json!(tasks).to_string()));
                    item.insert("runId".into(), s(&ctx.run_id.0));
                    if let Err(e) = ctx.rt.runs.put_record(item, None).await {
                        return ToolOutcome::Failed(format!("could not save the checklist: {e}"));
                    }
                    if let Err(e) = ctx.emit(EventPayload::TasksUpdate(TasksUpdate { tasks, plan_items: None })).await {
                        return ToolOutcome::Failed(e);
                    }
                    ToolOutcome::Done(json!({"saved": true}))
                }
                "cancel-task" => {
                    let task_id = args.get("taskId").and_then(Value::as_str).unwrap_or_default();
                    match crate::run::cancel_background_task(ctx.rt, ctx.writer, ctx.thread_id, task_id).await {
                        Ok(TaskCancel::Cancelled) => ToolOutcome::Done(json!({"result": format!("Background task {task_id} cancelled.")})),
                        Ok(TaskCancel::AlreadyFinished) => {
                            ToolOutcome::Done(json!({"result": format!("Background task {task_id} already completed.")}))
                        }
                        Ok(TaskCancel::NotFound) => ToolOutcome::Done(json!({"result": format!("Background task {task_id} was not found.")})),
                        Err(e) => ToolOutcome::Failed(e.to_string()),
                    }
                }
                "correct-task" => {
                    let task_id = args.get("taskId").and_then(Value::as_str).unwrap_or_default();
                    let Ok(Some((run, agent))) = crate::run::find_task(ctx.rt, ctx.thread_id, task_id).await else {
                        return ToolOutcome::Done(json!({"result": format!("Background task {task_id} was not found.")}));
                    };
                    let text = args.get("correction").and_then(Value::as_str).unwrap_or_default();
                    match ctx.rt.runs.add_correction(&run, &agent, text).await {
                        Ok(true) => ToolOutcome::Done(json!({"result": format!("Correction sent to background task {task_id}.")})),
                        Ok(false) => ToolOutcome::Done(json!({"result": format!("Background task {task_id} already completed.")})),
                        Err(e) => ToolOutcome::Failed(e.to_string()),
                    }
                }
                other => ToolOutcome::Failed(format!("unknown action {other:?}")),
            }
        })
    }
}

// ------------------------------------------------------------ complete-checkpoint

pub struct CompleteCheckpoint;

impl Tool for CompleteCheckpoint {
    fn name(&self) -> &'static str {
        "complete-checkpoint"
    }

    fn description(&self) -> &'static str {
        "Close out a checkpoint planned task with its verdict (succeeded or failed)."
    }

    fn audience(&self) -> Audience {
        Audience::CheckpointAgent
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "taskId": {"type": "string", "minLength": 1},
                "status": {"type": "string", "enum": ["succeeded", "failed"]},
                "result": {"type": "string"},
                "error": {"type": "string"},
                "outcome": {"type": "object"}
            },
            "required": ["taskId", "status"],
            "additionalProperties": false
        })
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let task_id = args.get("taskId").and_then(Value::as_str).unwrap_or_default();
            let task = match background::plan_task(ctx.rt, ctx.run_id, task_id).await {
                Ok(Some(t)) => t,
                Ok(None) => return ToolOutcome::Done(json!({"ok": false, "result": format!("Task {task_id} does not exist.")})),
                Err(e) => return ToolOutcome::Failed(e.to_string()),
            };
            if task.kind != "checkpoint" {
                return ToolOutcome::Done(json!({"ok": false, "result": format!("Task {task_id} is not a checkpoint task.")}));
            }
            let agent = background::task_agent(task_id);
            match ctx.rt.runs.chain(ctx.run_id, &agent).await {
                Ok(Some(c)) if !matches!(c.state, store::runs::ChainState::Finishing | store::runs::ChainState::Finished) => {}
                Ok(_) => return ToolOutcome::Done(json!({"ok": false, "result": format!("Task {task_id} is not running.")})),
                Err(e) => return ToolOutcome::Failed(e.to_string()),
            }
            let mut item = key(format!("run#{}", ctx.run_id), format!("verdict#{task_id}"));
            item.insert("verdict".into(), s(args.to_string()));
            item.insert("at".into(), n(store::runs::now_ms()));
            if let Err(e) = ctx.rt.runs.put_record(item, None).await {
                return ToolOutcome::Failed(e.to_string());
            }
            let status = args.get("status").and_then(Value::as_str).unwrap_or("failed");
            ToolOutcome::Done(json!({"ok": true, "result": format!("Checkpoint {task_id} {status}.")}))
        })
    }
}
