//! Execute Workflow: runs a sub-workflow (by id through the host, or from a
//! JSON parameter) on the same thread and returns its last node's output.
//! With a host recorder each child run gets its own execution record, and
//! the node's task metadata links to it (n8n's `subExecution`).

use std::cell::Cell;
use std::sync::Arc;

use serde_json::Value;

use super::{NodeContext, NodeOutput};
use crate::data::{ExecutionStatus, Item, RelatedExecution, TaskMetadata};
use crate::error::{EngineError, Result};
use crate::run::{Engine, RunOptions};
use crate::workflow::Graph;

thread_local! {
    /// Nesting depth, so a workflow that calls itself fails instead of overflowing.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}
const MAX_DEPTH: u32 = 16;

/// The sub-workflow the node's `source`/`workflowId`/`workflowJson` name
/// (Execute Workflow and the Call Workflow tool share these parameters).
pub(crate) fn workflow_json(ctx: &mut NodeContext<'_>) -> Result<Value> {
    let source = ctx.param_str("source", 0, "database")?;
    match source.as_str() {
        "parameter" => {
            let v = ctx.param("workflowJson", 0, Value::Null)?;
            match v {
                Value::String(s) => Ok(serde_json::from_str(&s)?),
                other => Ok(other),
            }
        }
        "database" => {
            let id = ctx.param("workflowId", 0, Value::Null)?;
            let id = match &id {
                Value::Object(o) => o.get("value").map(super::js_string).unwrap_or_default(),
                other => super::js_string(other),
            };
            let p = ctx.env.host.workflows.clone().ok_or_else(|| EngineError::Host("no workflow provider configured".into()))?;
            p.get_workflow(&id).map_err(EngineError::Host)
        }
        other => Err(EngineError::node(format!("Workflow source '{other}' is not supported"))),
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let workflow = workflow_json(ctx)?;
    let each = ctx.param_str("mode", 0, "once")? == "each";
    let wait = ctx.param_bool("options.waitForSubWorkflow", 0, true)?;
    let input = ctx.input(0).to_vec();
    let batches: Vec<Vec<crate::data::Item>> = if each { input.iter().map(|i| vec![i.clone()]).collect() } else { vec![input.clone()] };
    let mut out = vec![];
    let mut children = 0;
    for (b, items) in batches.into_iter().enumerate() {
        let last = run_child(ctx, &workflow, items, &mut children)?;
        if !wait {
            continue;
        }
        for it in last {
            let mut it = it;
            it.paired_item = Some(crate::data::paired_ref(if each { b } else { 0 }, 0));
            out.push(it);
        }
    }
    if !wait {
        return Ok(NodeOutput::one(input.into_iter().enumerate().map(|(i, it)| Item { json: it.json, binary: None, paired_item: Some(crate::data::paired_ref(i, 0)) }).collect()));
    }
    Ok(NodeOutput::one(out))
}

/// Runs `workflow` once on `items` as a child of this execution (its own
/// record when the host keeps them, linked from `ctx.metadata`) and returns
/// its last node's output. `children` counts the node's child runs.
pub(crate) fn run_child(ctx: &mut NodeContext<'_>, workflow: &Value, items: Vec<Item>, children: &mut usize) -> Result<Vec<Item>> {
    let depth = DEPTH.with(|d| d.get());
    if depth >= MAX_DEPTH {
        return Err(EngineError::node("Sub-workflow nesting is too deep"));
    }
    let graph = Graph::from_json(workflow)?;
    let recorder = ctx.env.host.sub_executions.clone();
    let engine = Engine::new(ctx.env.settings.clone(), ctx.env.host.clone());
    let trigger = graph
        .nodes()
        .iter()
        .find(|n| n.node_type == "n8n-nodes-base.executeWorkflowTrigger" && !n.disabled)
        .map(|n| n.name.clone());
    let child = match &recorder {
        Some(r) => Some(r.start(workflow, ctx.execution_id).map_err(EngineError::Host)?),
        None => None,
    };
    if let Some(c) = &child {
        // Set before the run, so a failed call still links to its child.
        *children += 1;
        ctx.metadata = Some(TaskMetadata {
            sub_execution: Some(RelatedExecution { execution_id: c.execution_id.clone(), workflow_id: c.workflow_id.clone() }),
            sub_executions_count: Some(*children),
        });
    }
    let opts = RunOptions {
        trigger,
        trigger_items: Some(items),
        cancel: Some(ctx.env.cancel.clone()),
        execution_id: child.as_ref().map(|c| c.execution_id.clone()),
        progress: child.as_ref().and_then(|c| c.progress.clone()),
        ..Default::default()
    };
    DEPTH.with(|d| d.set(depth + 1));
    let res = engine.run(&graph, opts);
    DEPTH.with(|d| d.set(depth));
    if let (Some(r), Some(c)) = (&recorder, &child) {
        let failure = res.as_ref().err().map(|e| e.to_string());
        let outcome = match (&res, &failure) {
            (Ok((st, _)), _) => Ok(st),
            (Err(_), f) => Err(f.as_deref().unwrap_or_default()),
        };
        r.finish(&c.execution_id, outcome).map_err(EngineError::Host)?;
    }
    let (st, _) = res?;
    if st.status != ExecutionStatus::Success {
        let msg = st.error.map(|e| e.message).unwrap_or_else(|| format!("Sub-workflow ended with status {:?}", st.status));
        return Err(EngineError::node(msg));
    }
    let last = st.last_node_executed.as_deref().and_then(|n| st.node_output(n, 0)).cloned().unwrap_or_default();
    Ok(Arc::unwrap_or_clone(last))
}
