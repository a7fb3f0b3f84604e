//! n8n's node execution stack (its `WorkflowExecute`): which node runs next,
//! how multi-input nodes wait for their inputs, the legacy (`v0`) order's
//! forced parent runs and empty second inputs, and when a waiting node runs
//! with part of its inputs. Kept apart from the executor loop so the rules
//! read as n8n's do.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;

use crate::data::*;
use crate::workflow::{is_trigger_type, ExecutionOrder, Graph, Node};

/// Number of input slots of `node` as n8n counts them: the highest
/// connected main input + 1.
pub fn input_width(graph: &Graph, node: &str) -> usize {
    graph.parents(node).iter().map(|p| p.2 + 1).max().unwrap_or(0)
}

/// n8n's `getParentNodes(node)` over main connections, farthest first (the
/// order its legacy forced-run walk relies on).
pub fn parent_nodes(graph: &Graph, node: &str) -> Vec<String> {
    fn walk(graph: &Graph, node: &str, checked: &[String]) -> Vec<String> {
        if checked.iter().any(|c| c == node) {
            return vec![];
        }
        let mut checked = checked.to_vec();
        checked.push(node.to_string());
        let mut by_slot: Vec<&(String, usize, usize)> = graph.parents(node).iter().collect();
        by_slot.sort_by_key(|p| p.2);
        let mut out: Vec<String> = vec![];
        for (src, _, _) in by_slot {
            if checked.contains(src) {
                continue;
            }
            out.insert(0, src.clone());
            let adds = walk(graph, src, &checked);
            for p in adds.into_iter().rev() {
                if let Some(i) = out.iter().position(|x| *x == p) {
                    out.remove(i);
                }
                out.insert(0, p);
            }
        }
        out
    }
    walk(graph, node, &[])
}

/// Number of items `node`'s run `run` put on `output` (also after lean run
/// data released them); `None` when that run or output does not exist.
fn output_len(st: &ExecutionState, node: &str, run: usize, output: usize) -> Option<usize> {
    let task = st.run_data.get(node)?.get(run)?;
    match (&task.data, &task.released_items) {
        (Some(d), _) => d.main.get(output)?.as_ref().map(OutputItems::len),
        (None, Some(lens)) => lens.get(output).copied(),
        _ => None,
    }
}

/// n8n's `incomingConnectionIsEmpty` for input slot 0 of `node`.
fn first_input_is_empty(graph: &Graph, st: &ExecutionState, node: &str, run: usize) -> bool {
    graph
        .parents(node)
        .iter()
        .filter(|p| p.2 == 0)
        .all(|(src, out, _)| output_len(st, src, run, *out).unwrap_or(0) == 0)
}

/// One connection that got data: `parent`'s output `output` (run `run`) →
/// input `index` of `target`.
pub struct Delivery<'a> {
    pub parent: &'a str,
    pub output: usize,
    pub run: usize,
    pub target: &'a str,
    pub index: usize,
    pub items: Items,
}

/// n8n's `addNodeToBeExecuted`.
pub fn add_node_to_be_executed(graph: &Graph, st: &mut ExecutionState, d: Delivery<'_>) {
    let order = graph.workflow.settings.execution_order;
    let src = TaskSource { previous_node: d.parent.to_string(), previous_node_output: d.output, previous_node_run: d.run };
    let width = input_width(graph, d.target);
    let enqueue = |st: &mut ExecutionState, e: StackEntry| match order {
        ExecutionOrder::V1 => st.stack.push_front(e),
        ExecutionOrder::V0 => st.stack.push_back(e),
    };
    if width <= 1 {
        let mut inputs = vec![None; d.index + 1];
        inputs[d.index] = Some(d.items);
        enqueue(st, StackEntry { node: d.target.to_string(), inputs, source: vec![Some(src)], resume: false });
        return;
    }
    let was_waiting = st.waiting.iter().any(|w| w.node == d.target);
    let slot = st.waiting.iter().position(|w| w.node == d.target && w.inputs.get(d.index).is_none_or(|i| i.is_none()));
    let idx = match slot {
        Some(i) => i,
        None => {
            // Entries of one node stay together, in the order n8n's
            // `waitingExecution[node][runIndex]` keys iterate.
            let at = st.waiting.iter().rposition(|w| w.node == d.target).map(|i| i + 1).unwrap_or(st.waiting.len());
            st.waiting.insert(at, StackEntry { node: d.target.to_string(), inputs: vec![None; width], source: vec![None; width], resume: false });
            at
        }
    };
    let w = &mut st.waiting[idx];
    if w.inputs.len() < width {
        w.inputs.resize(width, None);
        w.source.resize(width, None);
    }
    w.inputs[d.index] = Some(d.items.clone());
    w.source[d.index] = Some(src);
    if w.inputs.iter().all(|i| i.is_some()) {
        let e = st.waiting.remove(idx);
        enqueue(st, e);
        return;
    }
    if !was_waiting && order == ExecutionOrder::V0 {
        force_parents(graph, st, &d);
    }
}

/// Legacy order: the first time a multi-input node waits, n8n runs the
/// parents of its other inputs that would never run otherwise (with one
/// empty item), so both inputs get data.
fn force_parents(graph: &Graph, st: &mut ExecutionState, d: &Delivery<'_>) {
    let siblings: HashSet<&str> = (0..graph.output_count(d.parent))
        .flat_map(|o| graph.children(d.parent, o).iter().map(|t| t.node.as_str()))
        .collect();
    let mut slots: Vec<(String, usize)> = graph.parents(d.target).iter().map(|p| (p.0.clone(), p.2)).collect();
    slots.sort_by_key(|p| p.1);
    for (input_node, _) in slots {
        if input_node == d.parent {
            continue;
        }
        let on_stack = |st: &ExecutionState, n: &str| st.stack.iter().any(|e| e.node == n);
        if siblings.contains(input_node.as_str()) && !first_input_is_empty(graph, st, &input_node, d.run) {
            continue;
        }
        if on_stack(st, &input_node) || st.run_data.contains_key(&input_node) {
            continue;
        }
        let mut chain = parent_nodes(graph, &input_node);
        chain.push(input_node.clone());
        chain.reverse();
        let mut to_add = Some(input_node.clone());
        for p in &chain {
            if *p != input_node && siblings.contains(p.as_str()) {
                to_add = None;
                break;
            }
            if on_stack(st, p) {
                to_add = None;
                break;
            }
            if st.run_data.contains_key(p) {
                break;
            }
            to_add = Some(p.clone());
        }
        let Some(add) = to_add else { continue };
        if d.items.is_empty() && parent_nodes(graph, &add).iter().any(|p| p == d.parent) {
            continue;
        }
        let empty = graph.parents(&add).is_empty() || first_input_is_empty(graph, st, &add, d.run);
        if empty {
            let src = TaskSource { previous_node: d.parent.to_string(), previous_node_output: d.output, previous_node_run: d.run };
            let entry = StackEntry { node: add, inputs: vec![Some(Arc::new(vec![Item::new(json!({}))]))], source: vec![Some(src)], resume: false };
            match graph.workflow.settings.execution_order {
                ExecutionOrder::V1 => st.stack.push_front(entry),
                ExecutionOrder::V0 => st.stack.push_back(entry),
            }
        }
    }
}

/// n8n's `ensureInputData`: in legacy order a node runs only once every
/// connected input slot holds data (possibly empty).
pub fn has_input_data(graph: &Graph, entry: &StackEntry) -> bool {
    if graph.workflow.settings.execution_order != ExecutionOrder::V0 {
        return true;
    }
    let width = input_width(graph, &entry.node);
    for slot in 0..width {
        if !graph.parents(&entry.node).iter().any(|p| p.2 == slot) {
            // n8n: no valid incoming node → run as it is
            return true;
        }
        if slot < entry.inputs.len() && entry.inputs[slot].is_none() {
            return false;
        }
    }
    true
}

/// n8n's `prepareConnectionInputData`: whether a (non-trigger) node has the
/// input it executes on. Legacy order needs items on input 1 (unless another
/// input loops back from a node after this one); v1 takes any input with items.
pub fn has_items_to_run(graph: &Graph, node: &Node, entry: &StackEntry) -> bool {
    if is_trigger_type(&node.node_type) {
        return true;
    }
    let non_empty = |i: &Option<Items>| i.as_ref().is_some_and(|v| !v.is_empty());
    if entry.inputs.is_empty() {
        return false;
    }
    match graph.workflow.settings.execution_order {
        ExecutionOrder::V1 => entry.inputs.iter().any(non_empty),
        ExecutionOrder::V0 => {
            if non_empty(&entry.inputs[0]) {
                return true;
            }
            if entry.source.first().is_some_and(|s| s.is_some()) {
                return false;
            }
            let descendants = descendants(graph, &node.name);
            entry.inputs.iter().zip(entry.source.iter()).any(|(i, s)| {
                non_empty(i) && s.as_ref().is_some_and(|s| s.previous_node == node.name || descendants.contains(&s.previous_node))
            })
        }
    }
}

fn descendants(graph: &Graph, node: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut todo = vec![node.to_string()];
    while let Some(n) = todo.pop() {
        for o in 0..graph.output_count(&n) {
            for t in graph.children(&n, o) {
                if seen.insert(t.node.clone()) {
                    todo.push(t.node.clone());
                }
            }
        }
    }
    seen.remove(node);
    seen
}

/// Inputs a node needs before it may run with part of its inputs (n8n's
/// `requiredInputs`, v1 order only): `None` = any input suffices.
enum Required {
    Any,
    All,
    Slots(Vec<usize>),
    Count(usize),
}

fn required_inputs(node: &Node) -> Required {
    let short = node.node_type.rsplit('.').next().unwrap_or("");
    if short == "merge" && node.type_version >= 2.0 {
        let mode = node.parameters.get("mode").and_then(|m| m.as_str()).unwrap_or("append");
        let inputs = if node.type_version >= 3.0 {
            node.parameters.get("numberInputs").and_then(|n| n.as_u64()).unwrap_or(2) as usize
        } else {
            2
        };
        return if mode == "chooseBranch" {
            if inputs == 2 {
                Required::All
            } else {
                Required::Slots(vec![0, 1])
            }
        } else {
            Required::Count(1)
        };
    }
    Required::Any
}

/// After a node ran and the stack is empty, n8n lets the first waiting node
/// whose parents are done (and whose required inputs arrived) run with the
/// inputs it has; inputs that never got data run as empty.
pub fn release_waiting(graph: &Graph, st: &mut ExecutionState) {
    let v1 = graph.workflow.settings.execution_order == ExecutionOrder::V1;
    'scan: loop {
        let mut names: Vec<String> = vec![];
        for w in &st.waiting {
            if !names.contains(&w.node) {
                names.push(w.node.clone());
            }
        }
        for name in &names {
            let Some(node) = graph.node(name) else { continue };
            let required = if v1 { required_inputs(node) } else { Required::Any };
            if matches!(required, Required::All) {
                continue;
            }
            if parent_nodes(graph, name).iter().any(|p| names.contains(p)) {
                continue;
            }
            let Some(idx) = st.waiting.iter().position(|w| &w.node == name) else { continue };
            let received: Vec<usize> = st.waiting[idx].inputs.iter().enumerate().filter(|(_, i)| i.is_some()).map(|(k, _)| k).collect();
            match &required {
                Required::Slots(s) if s.iter().any(|k| !received.contains(k)) => continue,
                Required::Count(n) if received.len() < *n => continue,
                _ => {}
            }
            let mut e = st.waiting.remove(idx);
            let has_items = e.inputs.iter().any(|i| i.as_ref().is_some_and(|v| !v.is_empty()));
            if has_items {
                for i in e.inputs.iter_mut() {
                    if i.is_none() {
                        *i = Some(Arc::new(vec![]));
                    }
                }
                st.stack.push_back(e);
                return;
            }
            // Only empty inputs: drop it and look again from the start.
            continue 'scan;
        }
        return;
    }
}
