//! Run data shaped for a reader that is a model: items capped (a count of
//! what was left out), binary data reduced to `fileName`/`mimeType`/
//! `fileSize`, outputs named as the editor's output pane names them, and —
//! when the instance withholds values ([`Values::Withheld`]) — no item
//! values and no error details that came from outside, at all.

use engine::{Graph, RunData, TaskData};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// Whether item values (and upstream error details) may be shown
/// (`INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    Shown,
    Withheld,
}

pub const WITHHELD: &str = "withheld: this instance does not send execution data to the assistant (INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES=false)";

/// Serialized characters of item values one result may carry.
pub const ITEM_BUDGET_CHARS: usize = 20_000;
/// Items per node in a run's `data`.
pub const ITEMS_PER_NODE: usize = 5;

/// The execution document's run data (`resultData.runData`).
pub fn run_data(doc: &Value) -> RunData {
    doc.pointer("/resultData/runData").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
}

/// The workflow snapshot that ran.
pub fn graph(doc: &Value) -> Option<Graph> {
    doc.get("workflowData").and_then(|w| Graph::from_json(w).ok())
}

/// A binary entry as `{fileName, mimeType, fileSize}`; the data never.
fn binary_summary(binary: &Value) -> Value {
    let Some(entries) = binary.as_object() else { return Value::Null };
    let mut out = Map::new();
    for (key, b) in entries {
        let size = b.get("fileSize").cloned().unwrap_or_else(|| {
            // base64 → bytes, when the size was not recorded.
            let len = b.get("data").and_then(Value::as_str).map(|d| d.len() * 3 / 4).unwrap_or(0);
            json!(format!("{len} B"))
        });
        out.insert(
            key.clone(),
            json!({"fileName": b.get("fileName").cloned().unwrap_or(Value::Null), "mimeType": b.get("mimeType").cloned().unwrap_or(Value::Null), "fileSize": size}),
        );
    }
    Value::Object(out)
}

/// One item as the model sees it: its json, and a summary of its binary.
pub fn item(item: &engine::Item) -> Value {
    let mut v = json!({"json": serde_json::to_value(&item.json).unwrap_or(Value::Null)});
    if let Some(b) = &item.binary {
        v["binary"] = binary_summary(&serde_json::to_value(b).unwrap_or(Value::Null));
    }
    v
}

/// Takes items while the character budget lasts; counts the rest.
pub struct Budget {
    left: usize,
    pub truncated: usize,
}

impl Budget {
    pub fn new(chars: usize) -> Self {
        Budget { left: chars, truncated: 0 }
    }

    /// `Some(view)` when the item fits.
    pub fn take(&mut self, view: Value) -> Option<Value> {
        let len = view.to_string().len();
        if len > self.left {
            self.truncated += 1;
            self.left = 0;
            return None;
        }
        self.left -= len;
        Some(view)
    }
}

/// All main outputs of a run, concatenated.
fn all_items(task: &TaskData) -> Vec<&engine::Item> {
    task.data.iter().flat_map(|d| d.main.iter().flatten()).flat_map(|o| o.items().iter()).collect()
}

/// A run's `data`: each node's last run, at most [`ITEMS_PER_NODE`] items,
/// in node order; `(data, items left out)`.
pub fn result_data(graph: Option<&Graph>, runs: &RunData, only: Option<&str>) -> (Value, usize) {
    let mut budget = Budget::new(ITEM_BUDGET_CHARS);
    let mut out = Map::new();
    let order: Vec<String> = match graph {
        Some(g) => g.nodes().iter().map(|n| n.name.clone()).filter(|n| runs.contains_key(n)).collect(),
        None => runs.keys().cloned().collect(),
    };
    for name in order.iter().filter(|n| only.is_none_or(|o| o == n.as_str())) {
        let Some(task) = runs.get(name).and_then(|r| r.last()) else { continue };
        let items = all_items(task);
        budget.truncated += items.len().saturating_sub(ITEMS_PER_NODE);
        let views: Vec<Value> = items.iter().take(ITEMS_PER_NODE).filter_map(|i| budget.take(item(i))).collect();
        out.insert(name.clone(), Value::Array(views));
    }
    (Value::Object(out), budget.truncated)
}

/// A node error as the model reads it; details from outside withheld on request.
pub fn error_text(e: &engine::NodeError, values: Values) -> String {
    if let (Values::Withheld, Some(node)) = (values, &e.node) {
        return format!("the node {node:?} failed ({}; details {WITHHELD})", e.name);
    }
    match &e.description {
        Some(d) if !d.is_empty() => format!("{} — {d}", e.message),
        _ => e.message.clone(),
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeErrorView {
    pub node: String,
    pub run_index: usize,
    pub error: String,
}

/// Every failed run of every node.
pub fn node_errors(runs: &RunData, values: Values) -> Vec<NodeErrorView> {
    runs.iter()
        .flat_map(|(name, runs)| {
            runs.iter().enumerate().filter_map(move |(i, t)| {
                t.error.as_ref().map(|e| NodeErrorView { node: name.clone(), run_index: i, error: error_text(e, values) })
            })
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TraceEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub node_type: String,
    pub status: String,
    /// `pinned`, `replayed` or `mocked` when the node did not execute.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

fn status_str(s: engine::ExecutionStatus) -> String {
    serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_else(|| "unknown".into())
}

fn origin_str(t: &TaskData) -> Option<String> {
    t.origin.and_then(|o| serde_json::to_value(o).ok()).and_then(|v| v.as_str().map(str::to_owned))
}

/// The nodes that ran, in the order they first ran, with the status of their last run.
pub fn node_trace(graph: Option<&Graph>, runs: &RunData) -> Vec<TraceEntry> {
    let mut nodes: Vec<(&String, &Vec<TaskData>)> = runs.iter().filter(|(_, r)| !r.is_empty()).collect();
    // Runs started in the same millisecond: a node's parents (fewer nodes above it) come first.
    let above = |n: &str| graph.map(|g| g.ancestors(n).len()).unwrap_or(0);
    nodes.sort_by_key(|(n, r)| (r.first().map(|t| t.start_time).unwrap_or(0), above(n)));
    nodes
        .into_iter()
        .filter_map(|(name, r)| {
            let last = r.last()?;
            Some(TraceEntry {
                name: name.clone(),
                node_type: graph.and_then(|g| g.node(name)).map(|n| n.node_type.clone()).unwrap_or_default(),
                status: status_str(last.execution_status),
                origin: origin_str(last),
            })
        })
        .collect()
}

/// The items a run received: its first input's source, read from its parent's run.
pub fn input_of(runs: &RunData, task: &TaskData) -> Vec<engine::Item> {
    task.source
        .iter()
        .flatten()
        .next()
        .and_then(|s| runs.get(&s.previous_node)?.get(s.previous_node_run)?.output(s.previous_node_output).cloned())
        .map(|items| items.to_vec())
        .unwrap_or_default()
}

/// Names of nodes whose last run came from `origin` (`None`: executed here).
pub fn names_by_origin(runs: &RunData, origin: Option<engine::data::RunOrigin>) -> Vec<String> {
    runs.iter().filter(|(_, r)| r.iter().any(|t| t.origin == origin)).map(|(n, _)| n.clone()).collect()
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutputView {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub total_items: usize,
    pub items: Vec<Value>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Returned {
    pub from: usize,
    pub to: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeOutput {
    pub node_name: String,
    pub outputs: Vec<OutputView>,
    pub total_items: usize,
    pub returned: Returned,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_runs: Option<usize>,
    /// Items left out of this page by the size cap (page on with `startIndex`).
    #[serde(skip_serializing_if = "is_zero")]
    pub truncated: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One page of a node's last run, across its outputs as one sequence; for a
/// sub-node, of every call in call order (see [`sub_node_output`]).
pub fn node_output(graph: Option<&Graph>, runs: &RunData, node: &str, start: usize, max: usize, values: Values) -> NodeOutput {
    let node_runs = runs.get(node).map(Vec::as_slice).unwrap_or_default();
    let total_runs = (node_runs.len() > 1).then_some(node_runs.len());
    if graph.is_some_and(|g| g.is_sub_node(node)) || node_runs.iter().any(|t| t.input_override.is_some()) {
        return sub_node_output(node, node_runs, start, max, values);
    }
    let names = graph.and_then(|g| g.node(node)).map(engine::partial::output_names).unwrap_or_default();
    let Some(task) = node_runs.last() else {
        return NodeOutput { node_name: node.to_owned(), outputs: vec![], total_items: 0, returned: Returned { from: start, to: start }, total_runs, truncated: 0, suppressed: None };
    };
    let outputs: Vec<&[engine::Item]> = task
        .data
        .as_ref()
        .map(|d| d.main.iter().map(|o| o.as_ref().map(|o| o.items().as_slice()).unwrap_or(&[])).collect())
        .unwrap_or_default();
    let total: usize = outputs.iter().map(|o| o.len()).sum();
    let mut budget = Budget::new(ITEM_BUDGET_CHARS);
    let (mut offset, mut returned) = (0usize, 0usize);
    let end = start.saturating_add(max).min(total);
    let mut views = Vec::new();
    for (i, items) in outputs.iter().enumerate() {
        let mut page = Vec::new();
        for (j, it) in items.iter().enumerate() {
            let at = offset + j;
            if at < start || at >= end || values == Values::Withheld || budget.left == 0 {
                if at >= start && at < end {
                    budget.truncated += 1;
                }
                continue;
            }
            if let Some(v) = budget.take(item(it)) {
                page.push(v);
                returned += 1;
            }
        }
        offset += items.len();
        views.push(OutputView { index: i, name: names.get(i).cloned(), total_items: items.len(), items: page });
    }
    let truncated = if values == Values::Withheld { 0 } else { budget.truncated };
    NodeOutput {
        node_name: node.to_owned(),
        outputs: views,
        total_items: total,
        returned: Returned { from: start.min(total), to: start.min(total) + returned },
        total_runs,
        truncated,
        suppressed: (values == Values::Withheld).then(|| WITHHELD.to_owned()),
    }
}

/// A sub-node's calls (each run is one call its root made), as one output
/// whose items page across the calls: each item labelled with its call
/// (`node:<name>[call <n>][<output>][<item>]`, `n` counting from 1) and
/// carrying what the call was given (`input`) beside what it returned (`json`).
fn sub_node_output(node: &str, node_runs: &[TaskData], start: usize, max: usize, values: Values) -> NodeOutput {
    let mut all: Vec<Value> = vec![];
    let mut conn_type: Option<String> = None;
    for (call, task) in node_runs.iter().enumerate() {
        let input = task.input_override.as_ref().and_then(|i| i.all().flatten().next()).and_then(|o| o.items().first()).map(item);
        for (ty, outs) in task.data.iter().flat_map(|d| d.other.iter()) {
            conn_type.get_or_insert_with(|| ty.clone());
            for (o, items) in outs.iter().enumerate() {
                for (j, it) in items.iter().flat_map(|x| x.items().iter()).enumerate() {
                    let mut v = item(it);
                    v["label"] = json!(format!("node:{node}[call {}][{o}][{j}]", call + 1));
                    if let Some(i) = &input {
                        v["input"] = i["json"].clone();
                    }
                    all.push(v);
                }
            }
        }
    }
    let total = all.len();
    let end = start.saturating_add(max).min(total);
    let mut budget = Budget::new(ITEM_BUDGET_CHARS);
    let mut page = vec![];
    for v in all.into_iter().take(end).skip(start) {
        if values == Values::Withheld || budget.left == 0 {
            budget.truncated += 1;
            continue;
        }
        if let Some(v) = budget.take(v) {
            page.push(v);
        }
    }
    let returned = page.len();
    NodeOutput {
        node_name: node.to_owned(),
        outputs: vec![OutputView { index: 0, name: conn_type, total_items: total, items: page }],
        total_items: total,
        returned: Returned { from: start.min(total), to: start.min(total) + returned },
        total_runs: (node_runs.len() > 1).then_some(node_runs.len()),
        truncated: if values == Values::Withheld { 0 } else { budget.truncated },
        suppressed: (values == Values::Withheld).then(|| WITHHELD.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(v: Value) -> RunData {
        serde_json::from_value(v).unwrap()
    }

    fn task(outputs: Value) -> Value {
        json!({"startTime": 1, "executionTime": 0, "executionStatus": "success", "data": {"main": outputs}})
    }

    #[test]
    fn a_sub_node_reports_every_call_in_order_with_its_input() {
        let g = Graph::from_json(&json!({"nodes": [
            {"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7},
            {"name": "Search Tickets", "type": "@n8n/n8n-nodes-langchain.toolHttpRequest", "typeVersion": 1.1}
        ], "connections": {"Search Tickets": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}}}))
        .unwrap();
        let call = |q: &str, r: &str| json!({"startTime": 1, "executionTime": 0, "executionStatus": "success",
            "inputOverride": {"ai_tool": [[{"json": {"query": q}}]]}, "data": {"ai_tool": [[{"json": {"response": r}}]]}});
        let failed = json!({"startTime": 2, "executionTime": 0, "executionStatus": "error", "inputOverride": {"ai_tool": [[{"json": {"query": "c"}}]]},
            "error": {"message": "boom"}});
        let r = runs(json!({"Search Tickets": [call("a", "first"), call("b", "second"), failed, call("d", "fourth")]}));
        let page = node_output(Some(&g), &r, "Search Tickets", 1, 2, Values::Shown);
        assert_eq!(page.total_runs, Some(4));
        assert_eq!(page.total_items, 3, "a failed call records no items");
        assert_eq!(page.outputs[0].name.as_deref(), Some("ai_tool"));
        let items = &page.outputs[0].items;
        assert_eq!(items[0]["label"], "node:Search Tickets[call 2][0][0]");
        assert_eq!(items[0]["input"], json!({"query": "b"}));
        assert_eq!(items[0]["json"], json!({"response": "second"}));
        assert_eq!(items[1]["label"], "node:Search Tickets[call 4][0][0]");
        assert_eq!(page.returned, Returned { from: 1, to: 3 });
        let hidden = node_output(Some(&g), &r, "Search Tickets", 0, 10, Values::Withheld);
        assert!(hidden.outputs[0].items.is_empty() && hidden.suppressed.is_some());
    }

    #[test]
    fn node_output_pages_across_named_outputs() {
        let g = Graph::from_json(&json!({"nodes": [{"name": "Filter", "type": "n8n-nodes-base.filter", "typeVersion": 2}], "connections": {}})).unwrap();
        let kept: Vec<Value> = (0..3).map(|i| json!({"json": {"i": i}})).collect();
        let gone: Vec<Value> = (3..5).map(|i| json!({"json": {"i": i}})).collect();
        let r = runs(json!({"Filter": [task(json!([kept, gone]))]}));
        let page = node_output(Some(&g), &r, "Filter", 2, 2, Values::Shown);
        assert_eq!(page.total_items, 5);
        assert_eq!((page.returned.from, page.returned.to), (2, 4));
        assert_eq!(page.outputs[0].name.as_deref(), Some("Kept"));
        assert_eq!(page.outputs[1].name.as_deref(), Some("Discarded"));
        assert_eq!(page.outputs[0].items, vec![json!({"json": {"i": 2}})]);
        assert_eq!(page.outputs[1].items, vec![json!({"json": {"i": 3}})]);
        assert_eq!((page.outputs[0].total_items, page.outputs[1].total_items), (3, 2));
        let withheld = node_output(Some(&g), &r, "Filter", 0, 10, Values::Withheld);
        assert!(withheld.outputs.iter().all(|o| o.items.is_empty()) && withheld.suppressed.is_some());
        assert_eq!(withheld.total_items, 5);
    }

    #[test]
    fn binary_is_reduced_to_its_name_type_and_size() {
        let r = runs(json!({"Read": [task(json!([[{"json": {}, "binary": {"data": {"data": "QUJDRA==", "mimeType": "text/plain", "fileName": "a.txt"}}}]]))]}));
        let (data, truncated) = result_data(None, &r, None);
        assert_eq!(truncated, 0);
        assert_eq!(data["Read"][0]["binary"], json!({"data": {"fileName": "a.txt", "mimeType": "text/plain", "fileSize": "6 B"}}));
        assert!(!data.to_string().contains("QUJDRA"), "{data}");
    }

    #[test]
    fn results_are_capped_with_a_count_of_what_was_left_out() {
        let many: Vec<Value> = (0..300).map(|i| json!({"json": {"i": i, "pad": "x".repeat(100)}})).collect();
        let r = runs(json!({"Code": [task(json!([many]))]}));
        let (data, truncated) = result_data(None, &r, None);
        assert_eq!(data["Code"].as_array().unwrap().len(), ITEMS_PER_NODE);
        assert_eq!(truncated, 300 - ITEMS_PER_NODE);
        let big: Vec<Value> = (0..50).map(|i| json!({"json": {"i": i, "pad": "x".repeat(2000)}})).collect();
        let r = runs(json!({"Code": [task(json!([big]))]}));
        let page = node_output(None, &r, "Code", 0, 50, Values::Shown);
        assert!(serde_json::to_string(&page).unwrap().len() < ITEM_BUDGET_CHARS + 2_000);
        assert_eq!(page.returned.to - page.returned.from + page.truncated, 50);
        assert!(page.truncated > 0);
    }

    #[test]
    fn withheld_errors_keep_only_the_error_name_for_node_failures() {
        let e = engine::NodeError { message: "secret body".into(), description: Some("more".into()), name: "NodeApiError".into(), node: Some("HTTP".into()), http_code: None, timestamp: 0 };
        assert_eq!(error_text(&e, Values::Shown), "secret body — more");
        let w = error_text(&e, Values::Withheld);
        assert!(w.contains("NodeApiError") && w.contains("\"HTTP\"") && !w.contains("secret"), "{w}");
        let ours = engine::NodeError { node: None, ..e };
        assert!(error_text(&ours, Values::Withheld).contains("secret body"), "the executor's own messages stay");
    }
}
