//! Execute Workflow (Execute Sub-workflow) and its trigger: runs a
//! sub-workflow (by id through the host, from a JSON parameter, or from a
//! URL) on the same thread, once with all items or once per item, and
//! returns its last node's output. With a host recorder each child run gets
//! its own execution record, and the node's task metadata links to it (n8n's
//! `subExecution`). The calling node maps `workflowInputs` onto the items;
//! the trigger keeps the fields its input schema declares.

use std::cell::Cell;

use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{ExecutionState, ExecutionStatus, Item, PairedItem, RelatedExecution, TaskData, TaskMetadata};
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
    workflow_json_at(ctx, 0)
}

/// n8n's `getWorkflowInfo` for item `i`.
fn workflow_json_at(ctx: &mut NodeContext<'_>, i: usize) -> Result<Value> {
    let source = ctx.param_str("source", 0, "database")?;
    match source.as_str() {
        "parameter" => {
            let v = ctx.param("workflowJson", i, Value::Null)?;
            match v {
                Value::String(s) => Ok(serde_json::from_str(&s)?),
                other => Ok(other),
            }
        }
        "database" => {
            let id = ctx.param("workflowId", i, Value::Null)?;
            let id = match &id {
                Value::Object(o) => o.get("value").map(super::js_string).unwrap_or_default(),
                other => super::js_string(other),
            };
            let p = ctx.env.host.workflows.clone().ok_or_else(|| EngineError::Host("no workflow provider configured".into()))?;
            p.get_workflow(&id).map_err(EngineError::Host)
        }
        "url" => {
            // a GET through the SSRF guard, as the HTTP Request node sends it
            let url = ctx.param_str("workflowUrl", i, "")?;
            let url = url::Url::parse(&url).map_err(|_| EngineError::node(format!("Invalid URL: {url}")))?;
            let req = super::http::Request {
                method: reqwest::Method::GET,
                url,
                headers: vec![("accept".into(), "application/json,text/*;q=0.99".into())],
                body: None,
                timeout: ctx.env.settings.http_timeout,
                redirects: super::http::Redirects { get: true, all: false, max: 21 },
                insecure: false,
                digest: None,
            };
            let resp = super::http::send(ctx.env, &req)?;
            if resp.status >= 400 {
                return Err(super::http::api_error(&resp));
            }
            serde_json::from_slice(&resp.body).map_err(|e| EngineError::node(format!("The workflow at the URL is not valid JSON: {e}")))
        }
        "localFile" => Err(EngineError::node_with(
            "The \"Local File\" source is not supported: workflows run on AWS Lambda, which has no disk to read them from",
            "Use the \"Database\" source (the workflow by its ID) or paste its JSON into the \"Parameter\" source",
        )),
        other => Err(EngineError::node(format!("Workflow source '{other}' is not supported"))),
    }
}

/// n8n's `getCurrentWorkflowInputData`: each item's json with the
/// `workflowInputs` values mapped over it (typed by the mapper's schema),
/// without the fields the schema marks removed; paired with the item.
fn input_items(ctx: &mut NodeContext<'_>, input: &[Item]) -> Result<Vec<Item>> {
    let schema = ctx.raw("workflowInputs.schema").and_then(Value::as_array).cloned().unwrap_or_default();
    let attempt = ctx.raw("workflowInputs.attemptToConvertTypes").and_then(Value::as_bool).unwrap_or(false);
    // 1.4 always turns values into strings for string inputs; before, the stored choice
    let parse_strings = ctx.version() >= 1.4 || ctx.raw("workflowInputs.convertFieldsToString").and_then(Value::as_bool).unwrap_or(false);
    let tz = ctx.timezone();
    let removed: Vec<String> = schema.iter().filter(|f| f.get("removed").and_then(Value::as_bool) == Some(true)).filter_map(|f| f.get("displayName").and_then(Value::as_str).map(str::to_string)).collect();
    let mut out = Vec::with_capacity(input.len());
    for (i, item) in input.iter().enumerate() {
        let values = match ctx.param("workflowInputs.value", i, json!({}))? {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        let mut json = match Value::clone(&item.json) {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        for (key, v) in values {
            let ty = schema.iter().find(|f| f.get("id").and_then(Value::as_str) == Some(key.as_str())).and_then(|f| f.get("type")).and_then(Value::as_str);
            let v = match ty {
                // a string input that converts values takes any type
                Some(ty) => super::field_type::validate(&key, &v, ty, !attempt && !(parse_strings && ty == "string"), parse_strings, &tz)
                    .map_err(|e| EngineError::node_with(format!("Invalid input for '{key}' [item {i}]"), e))?,
                None => v,
            };
            json.insert(key, v);
        }
        json.retain(|k, _| !removed.contains(k));
        let mut it = crate::data::item_from(Value::Object(json), i);
        it.binary = item.binary.clone();
        out.push(it);
    }
    Ok(out)
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0).to_vec();
    let items = input_items(ctx, &input)?;
    let each = ctx.param_str("mode", 0, "once")? == "each";
    let mut children = 0;
    if each {
        let mut outs: Vec<Vec<Item>> = vec![];
        for (i, item) in items.iter().enumerate() {
            let ran = (|| -> Result<Vec<Vec<Item>>> {
                let wait = ctx.param_bool("options.waitForSubWorkflow", i, true)?;
                let workflow = workflow_json_at(ctx, i)?;
                let (outputs, _) = run_child_outputs(ctx, &workflow, vec![item.clone()], &mut children)?;
                Ok(if wait { outputs } else { vec![vec![item.clone()]] })
            })();
            match ran {
                Ok(outputs) => {
                    for (o, items) in outputs.into_iter().enumerate() {
                        if outs.len() <= o {
                            outs.resize(o + 1, vec![]);
                        }
                        outs[o].extend(items.into_iter().map(|mut it| {
                            it.paired_item = Some(crate::data::paired_ref(i, 0));
                            it
                        }));
                    }
                }
                Err(EngineError::Canceled) => return Err(EngineError::Canceled),
                Err(e) if ctx.continue_on_fail() => {
                    // before 1.3 an item's error went to "output i"
                    let o = if ctx.version() >= 1.3 { 0 } else { i };
                    if outs.len() <= o {
                        outs.resize(o + 1, vec![]);
                    }
                    outs[o].push(crate::data::item_from(json!({ "error": e.to_string() }), i));
                }
                Err(e) => return Err(EngineError::node_with(format!("Error executing workflow with item at index {i}"), e.to_string())),
            }
        }
        return Ok(NodeOutput::many(outs));
    }
    let all_paired = || Some(PairedItem::Other(Box::new(Value::Array((0..items.len()).map(|k| json!({ "item": k })).collect()))));
    let ran = (|| -> Result<(Vec<Vec<Item>>, Option<ExecutionState>)> {
        let wait = ctx.param_bool("options.waitForSubWorkflow", 0, true)?;
        let workflow = workflow_json_at(ctx, 0)?;
        let (outputs, st) = run_child_outputs(ctx, &workflow, items.clone(), &mut children)?;
        Ok(if wait { (outputs, Some(st)) } else { (vec![items.clone()], None) })
    })();
    match ran {
        Ok((outputs, None)) => Ok(NodeOutput::many(outputs)),
        Ok((outputs, Some(st))) => {
            // pair each returned item with the input item it came from
            let outputs = outputs
                .into_iter()
                .map(|out| {
                    let same_length = out.len() == items.len();
                    out.into_iter()
                        .enumerate()
                        .map(|(k, mut it)| {
                            it.paired_item = match &it.paired_item {
                                Some(_) => backtrack(&st, &it, k).or(it.paired_item.take()),
                                None if same_length => Some(crate::data::paired_ref(k, 0)),
                                None => all_paired(),
                            };
                            it
                        })
                        .collect()
                })
                .collect();
            Ok(NodeOutput::many(outputs))
        }
        Err(EngineError::Canceled) => Err(EngineError::Canceled),
        Err(e) if ctx.continue_on_fail() => {
            let mut it = Item::new(json!({ "error": e.to_string() }));
            it.paired_item = all_paired();
            Ok(NodeOutput::one(vec![it]))
        }
        Err(e) => Err(e),
    }
}

/// The run of the node `task` got its input from (n8n's `previousTaskData`).
fn previous_task<'s>(st: &'s ExecutionState, task: &TaskData) -> Option<&'s TaskData> {
    let source = task.source.first()?.as_ref()?;
    st.run_data.get(&source.previous_node)?.get(source.previous_node_run)
}

/// n8n's `findPairedItemThroughWorkflowData`: follows a returned item's
/// pairing back through the child's run data to its first node, whose items
/// point at the caller's input items.
fn backtrack(st: &ExecutionState, item: &Item, item_index: usize) -> Option<PairedItem> {
    let last = st.last_node_executed.as_deref()?;
    let task = st.run_data.get(last)?.last()?;
    let mut run = previous_task(st, task);
    let mut paired = item.paired_item.clone();
    while let Some(t) = run {
        let (output, index) = match &paired {
            Some(PairedItem::Index(n)) => (0, *n),
            Some(PairedItem::Ref { item, input }) => (*input as usize, *item as usize),
            Some(PairedItem::Other(v)) => match &**v {
                Value::Object(o) => (
                    o.get("input").and_then(Value::as_u64).unwrap_or(0) as usize,
                    o.get("item").and_then(Value::as_u64).map(|n| n as usize).unwrap_or(item_index),
                ),
                _ => (0, item_index),
            },
            None => (0, item_index),
        };
        paired = t.output(output).and_then(|items| items.get(index)).and_then(|it| it.paired_item.clone());
        run = previous_task(st, t);
    }
    paired
}

/// The Execute Workflow Trigger: every item as it came (`passthrough`, and
/// version 1), or only the fields its schema declares (`workflowInputs`
/// list, or those of a `jsonExample`), missing ones `null`.
pub fn trigger(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = match ctx.input_arc(0) {
        Some(items) if !items.is_empty() => items,
        _ => return Ok(NodeOutput::one(vec![Item::new(json!({}))])),
    };
    let source = ctx.param_str("inputSource", 0, "passthrough")?;
    let fields: Vec<String> = match source.as_str() {
        "passthrough" => return Ok(NodeOutput::Data(vec![input])),
        "workflowInputs" => ctx
            .param("workflowInputs.values", 0, json!([]))?
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("name").map(super::js_string))
            .collect(),
        "jsonExample" => {
            let text = ctx.param_str("jsonExample", 0, "")?;
            let example: Value = serde_json::from_str(&text).map_err(|e| EngineError::node(e.to_string()))?;
            match example {
                Value::Object(o) => o.keys().cloned().collect(),
                other => return Err(EngineError::node(format!("Invalid JSON schema type. Only object type is supported, but got {}", json_type(&other)))),
            }
        }
        _ => return Err(EngineError::node("Internal Error: Invalid input source")),
    };
    let out = input
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let mut m = Map::new();
            for f in &fields {
                m.insert(f.clone(), item.json.get(f).cloned().unwrap_or(Value::Null));
            }
            let mut it = crate::data::item_from(Value::Object(m), i);
            it.binary = item.binary.clone();
            it
        })
        .collect();
    Ok(NodeOutput::one(out))
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

/// Runs `workflow` on `items` and returns its last node's first output (the
/// Call Workflow tool's answer).
pub(crate) fn run_child(ctx: &mut NodeContext<'_>, workflow: &Value, items: Vec<Item>, children: &mut usize) -> Result<Vec<Item>> {
    let (outputs, _) = run_child_outputs(ctx, workflow, items, children)?;
    Ok(outputs.into_iter().next().unwrap_or_default())
}

/// What a sub-workflow returns: every output of its last node's last run
/// (of all its runs, output by output, when its trigger asks for
/// `returnOutput: allRuns`).
fn child_outputs(graph: &Graph, st: &ExecutionState) -> Vec<Vec<Item>> {
    let Some(last) = st.last_node_executed.as_deref() else { return vec![] };
    let runs = st.run_data.get(last).map(Vec::as_slice).unwrap_or_default();
    let all_runs = graph
        .nodes()
        .iter()
        .find(|n| n.node_type == "n8n-nodes-base.executeWorkflowTrigger" && !n.disabled && n.type_version < 1.2)
        .and_then(|n| n.parameters.get("returnOutput"))
        .and_then(Value::as_str)
        == Some("allRuns");
    let runs = if all_runs { runs } else { runs.last().map(std::slice::from_ref).unwrap_or_default() };
    let mut outs: Vec<Vec<Item>> = vec![];
    for run in runs {
        let n = run.data.as_ref().map(|d| d.main.len()).unwrap_or(0);
        for o in 0..n {
            if outs.len() <= o {
                outs.resize(o + 1, vec![]);
            }
            if let Some(items) = run.output(o) {
                outs[o].extend(items.iter().cloned());
            }
        }
    }
    outs
}

/// Runs `workflow` once on `items` as a child of this execution (its own
/// record when the host keeps them, linked from `ctx.metadata`) and returns
/// its last node's outputs with the child's state. `children` counts the
/// node's child runs.
fn run_child_outputs(ctx: &mut NodeContext<'_>, workflow: &Value, items: Vec<Item>, children: &mut usize) -> Result<(Vec<Vec<Item>>, ExecutionState)> {
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
    Ok((child_outputs(&graph, &st), st))
}
