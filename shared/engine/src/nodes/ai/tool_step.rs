//! A run-step on a tool sub-node (n8n's Tool Executor): a tool has no main
//! input and never runs on its own, so the run replaces the node that owns
//! it (the Agent) with a virtual `PartialExecutionToolExecutor` that has
//! the owner's main parents and the tool as its only `ai_tool`, and runs
//! the tool once with the caller's arguments (what the model would have
//! filled in through `$fromAI`). The result is reported under the tool's
//! name: the executor's own run is dropped, the tool's record is kept.

use serde_json::{json, Value};

use super::{NodeContext, TOOL};
use crate::data::{item_from, ExecutionState};
use crate::error::{EngineError, Result};
use crate::nodes::NodeOutput;
use crate::workflow::{ConnectionTarget, Graph, Node};

pub const EXECUTOR_TYPE: &str = "@n8n/n8n-nodes-langchain.toolExecutor";
pub const EXECUTOR_NAME: &str = "PartialExecutionToolExecutor";

/// The nodes a tool hangs off (`ai_tool` targets), in connection order.
pub fn owners(graph: &Graph, tool: &str) -> Vec<String> {
    graph
        .workflow
        .connections
        .get(tool)
        .and_then(|types| types.get(TOOL))
        .map(|outs| outs.iter().flatten().flatten().map(|t| t.node.clone()).collect())
        .unwrap_or_default()
}

/// Whether `node` is a tool sub-node (the stack never runs one).
pub fn is_tool(node: &Node) -> bool {
    super::sub_node_kind(&node.node_type) == Some(TOOL)
}

/// The graph of a step on `tool`: the executor in place of its owner.
pub fn graph_for(graph: &Graph, tool: &str, arguments: Option<&Value>) -> Result<Graph> {
    let owner = owners(graph, tool)
        .into_iter()
        .next()
        .ok_or_else(|| EngineError::InvalidWorkflow(format!("\"{tool}\" is a tool no node is connected to run")))?;
    let mut wf = graph.workflow.clone();
    let executor: Node = serde_json::from_value(json!({"name": EXECUTOR_NAME, "type": EXECUTOR_TYPE, "typeVersion": 1, "parameters": {"query": arguments.cloned().unwrap_or(json!({}))}}))
        .map_err(|e| EngineError::InvalidWorkflow(e.to_string()))?;
    wf.nodes.push(executor);
    // the owner's main parents feed the executor too
    for outs in wf.connections.values_mut() {
        let Some(main) = outs.get_mut("main") else { continue };
        for targets in main.iter_mut().flatten() {
            let extra: Vec<ConnectionTarget> = targets.iter().filter(|t| t.node == owner).map(|t| ConnectionTarget { node: EXECUTOR_NAME.into(), ..t.clone() }).collect();
            targets.extend(extra);
        }
    }
    let conn = wf.connections.entry(tool.to_owned()).or_default();
    conn.insert(TOOL.into(), vec![Some(vec![ConnectionTarget { node: EXECUTOR_NAME.into(), conn_type: TOOL.into(), index: 0 }])]);
    Graph::new(wf)
}

/// The step's result as the caller reads it: nothing under the executor's
/// name; the tool's run (and a failure) reported as the tool's.
pub fn report(st: &mut ExecutionState, graph: &Graph, tool: &str) {
    let owner = owners(graph, tool).into_iter().next().unwrap_or_default();
    let executor = st.run_data.remove(EXECUTOR_NAME);
    for task in st.run_data.get_mut(tool).into_iter().flatten() {
        for s in task.source.iter_mut().flatten() {
            if s.previous_node == EXECUTOR_NAME {
                s.previous_node = owner.clone();
            }
        }
    }
    if st.last_node_executed.as_deref() == Some(EXECUTOR_NAME) {
        st.last_node_executed = Some(tool.to_owned());
    }
    if let Some(e) = st.error.as_mut().filter(|e| e.node.as_deref() == Some(EXECUTOR_NAME)) {
        e.node = Some(tool.to_owned());
    }
    // the executor failed before calling the tool: its error is the tool's run
    if st.run_data.get(tool).is_none() {
        if let Some(mut runs) = executor {
            for r in runs.iter_mut() {
                if let Some(e) = r.error.as_mut() {
                    e.node = Some(tool.to_owned());
                }
            }
            st.run_data.insert(tool.to_owned(), runs);
        }
    }
}

/// The executor node: its tool, once, with the caller's arguments (a bare
/// string is a free-text tool's input); the call is the tool's run.
pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let tool_node = ctx.sub_nodes(TOOL).into_iter().next().ok_or_else(|| EngineError::node("No tool is connected to run"))?;
    let tool = ctx.with_sub_node(tool_node, None, |c| super::tools::supply(c, tool_node, 0))?;
    let args = match ctx.raw("query").cloned().unwrap_or(json!({})) {
        Value::String(s) => json!({"input": s}),
        Value::Null => json!({}),
        other => other,
    };
    let rec = ctx.begin_call(&tool_node.name, TOOL, tool.record_input(&args));
    let res = ctx.with_sub_node(tool_node, Some(args.clone()), |c| tool.run(c, &args, 0));
    ctx.end_call(rec, res.as_ref().map(|r| r.record.clone()).map_err(|e| e));
    let out = res?;
    Ok(NodeOutput::one(vec![item_from(json!({"response": out.observation}), 0)]))
}
