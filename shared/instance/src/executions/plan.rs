//! Planning a run-step (`executions(action="run-step")`): which input mode
//! feeds the target, which nodes that invents or replays, which pins come
//! off this run's copy, and every refusal — decided before anything runs.
//!
//! The refusals follow n8n's `findStartNodes`, which walks down from the
//! trigger and re-runs the first node on the path that has no usable data: a
//! node with neither run data nor pin data, a node whose last run failed
//! (even a pinned one), a Loop Over Items node whose last run left `done`
//! empty (the loop restarts). A loop edge through the target does not count
//! (n8n's `findSubgraph` drops it): the output toward the target decides.
//! A step whose input would not keep the nodes above the target out of the
//! run is refused with the nodes that would run for real, rather than run
//! them behind the caller's back.

use crate::InstanceError;
use engine::{Graph, Item, RunData};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// Where the target's input came from, in descending order of what the
/// result proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputMode {
    ReusedExecution,
    Chain,
    Mocked,
}

/// What the caller asked for.
pub struct StepAsk<'a> {
    pub target: &'a str,
    pub mock_input: Option<&'a [Item]>,
    /// The run data of the execution to replay (`reuseExecutionId`).
    pub reuse: Option<&'a RunData>,
    pub tool_arguments: bool,
    /// The workflow's saved pins.
    pub pins: &'a BTreeMap<String, Vec<Item>>,
}

/// A step on a tool (n8n's Tool Executor): planned against the node that
/// owns it, which the run replaces with the executor.
fn plan_tool(graph: &Graph, ask: &StepAsk<'_>, node: &engine::Node) -> Result<StepPlan, InstanceError> {
    let target = ask.target;
    let owners = engine::nodes::ai::tool_step::owners(graph, target);
    for a in &owners {
        if let Some(b) = owners.iter().find(|b| *b != a && graph.ancestors(b).contains(a)) {
            return Err(refuse(format!(
                "{target:?} is a tool of {a:?} and of {b:?}, and {a:?} runs above {b:?}: the engine may run the tool from {b:?} and then run {a:?} and the nodes between them for real. Run {a:?} instead and read {target:?}'s output with get-node-output"
            )));
        }
    }
    let declared = expression::from_ai::from_ai_arguments(&node.parameters).map(|a| a.iter().map(|x| x.key.clone()).collect::<Vec<_>>()).unwrap_or_default();
    if !declared.is_empty() && !ask.tool_arguments {
        return Err(refuse(format!(
            "{target:?} takes arguments from the model ($fromAI: {}): pass them as toolArguments, e.g. {{{}}}",
            declared.join(", "),
            declared.iter().map(|k| format!("\"{k}\": …")).collect::<Vec<_>>().join(", ")
        )));
    }
    let owner = owners.first().ok_or_else(|| refuse(format!("{target:?} is a tool no node is connected to run")))?;
    // mockInput feeds the owner; reuseExecutionId replays the owner's ancestors
    let mut planned = plan(graph, &StepAsk { target: owner, tool_arguments: false, ..*ask })?;
    planned.pin_data.remove(target);
    planned.ran_through_node_names = owners;
    Ok(planned)
}

#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    pub input_mode: InputMode,
    /// Nodes whose output this run invents (never evidence).
    pub mocked_node_names: Vec<String>,
    /// Nodes of the reused execution above the target (the ones the run carries).
    pub replayed_node_names: Vec<String>,
    /// The pins of this run: the saved ones minus the target's own and any
    /// on a node the mock replaced (the saved workflow keeps them all).
    pub pin_data: BTreeMap<String, Vec<Item>>,
    /// A tool target: the nodes that can run it (the run stands the Tool
    /// Executor in for the first; the plan covers its ancestry).
    pub ran_through_node_names: Vec<String>,
}

fn refuse(msg: String) -> InstanceError {
    InstanceError::Invalid(msg)
}

/// The kinds of node the target can be.
enum Target {
    Main,
    /// Connected to another node through a non-main connection (a model,
    /// memory, tool, ...): `(connection type, owner)`.
    SubNode(String, String),
}

fn classify(graph: &Graph, name: &str) -> Target {
    let sub = graph.workflow.connections.get(name).and_then(|types| {
        types.iter().filter(|(ty, _)| ty.as_str() != "main").find_map(|(ty, outs)| {
            outs.iter().flatten().flatten().next().map(|t| (ty.clone(), t.node.clone()))
        })
    });
    match sub {
        Some((ty, owner)) => Target::SubNode(ty, owner),
        None => Target::Main,
    }
}

/// A node type that holds several tools (the Tool Executor would run the
/// member whose name matches, and a miss reports success with no result).
fn holds_several_tools(node_type: &str) -> bool {
    node_type == "@n8n/n8n-nodes-langchain.mcpClientTool" || node_type.starts_with("@n8n/mcp-registry.")
}

/// Checks the target and picks the input mode; every refusal the spec lists.
pub fn plan(graph: &Graph, ask: &StepAsk<'_>) -> Result<StepPlan, InstanceError> {
    let target = ask.target;
    let node = graph.node(target).ok_or_else(|| {
        let names: Vec<String> = graph.nodes().iter().map(|n| format!("{:?}", n.name)).collect();
        refuse(format!("the workflow has no node named {target:?}; its nodes are {}", names.join(", ")))
    })?;
    match classify(graph, target) {
        Target::SubNode(_, owner) if holds_several_tools(&node.node_type) => {
            return Err(refuse(format!(
                "{target:?} holds several tools, and a step on it would run whichever one matched (or none, and still report success). Run {owner:?}, the node that uses it, and read {target:?}'s output from that execution with get-node-output"
            )))
        }
        Target::SubNode(ty, _) if ty == "ai_tool" => return plan_tool(graph, ask, node),
        Target::SubNode(ty, owner) => {
            return Err(refuse(format!(
                "{target:?} is a sub-node ({ty}) that runs only as part of {owner:?}, the node that owns it; run {owner:?} instead and read {target:?}'s output with get-node-output"
            )))
        }
        Target::Main if engine::nodes::ai::tool_step::is_tool(node) => {
            return Err(refuse(format!(
                "{target:?} is a tool no node is connected to run: connect it to an AI Agent (the run stands the Tool Executor in for that node), or run the agent"
            )))
        }
        Target::Main if ask.tool_arguments => {
            return Err(refuse(format!(
                "toolArguments apply only to a tool node, and {target:?} is a node of the main graph; leave toolArguments out (use mockInput to choose its input)"
            )))
        }
        Target::Main => {}
    }
    let above: BTreeSet<String> = graph.ancestors(target).into_iter().collect();
    let mut pin_data = ask.pins.clone();
    pin_data.remove(target);
    if above.is_empty() {
        // Nothing above the target: nothing to mock or replay.
        return Ok(StepPlan { input_mode: InputMode::Chain, mocked_node_names: vec![], replayed_node_names: vec![], pin_data, ran_through_node_names: vec![] });
    }
    if ask.mock_input.is_some() {
        let (cover, mocked) = mocked_cover(graph, target);
        for name in &mocked {
            pin_data.remove(name);
        }
        let rerun = would_rerun(graph, target, &cover, &HashSet::new());
        if !rerun.is_empty() {
            return Err(refuse(format!(
                "mockInput cannot keep {} out of the run: a mocked Loop Over Items leaves its `done` output empty, so the loop would restart and run the nodes above {target:?} for real. Use reuseExecutionId with an execution where the loop finished",
                list(&rerun)
            )));
        }
        return Ok(StepPlan { input_mode: InputMode::Mocked, mocked_node_names: mocked, replayed_node_names: vec![], pin_data, ran_through_node_names: vec![] });
    }
    if let Some(runs) = ask.reuse {
        let replayed: Vec<String> = runs.keys().filter(|n| above.contains(*n)).cloned().collect();
        if replayed.is_empty() {
            return Err(refuse(format!(
                "the execution to reuse holds no data for any node above {target:?} (it never reached them); falling back to a chain run would execute {} for real. Reuse an execution that ran up to {target:?}, pass mockInput, or run the chain without reuseExecutionId",
                list(&above.iter().cloned().collect::<Vec<_>>())
            )));
        }
        let pinned: HashSet<String> = pin_data.keys().cloned().collect();
        let rerun = would_rerun(graph, target, &cover_from_runs(runs), &pinned);
        if !rerun.is_empty() {
            return Err(refuse(format!(
                "replaying that execution would still run {} for real (no data for it, its run failed, or a loop it ran did not finish); reuse an execution that ran cleanly up to {target:?}, or pass mockInput",
                list(&rerun)
            )));
        }
        return Ok(StepPlan { input_mode: InputMode::ReusedExecution, mocked_node_names: vec![], replayed_node_names: replayed, pin_data, ran_through_node_names: vec![] });
    }
    Ok(StepPlan { input_mode: InputMode::Chain, mocked_node_names: vec![], replayed_node_names: vec![], pin_data, ran_through_node_names: vec![] })
}

fn list(names: &[String]) -> String {
    names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
}

/// What the walk needs of a node's last run.
#[derive(Debug, Clone, Default)]
pub(crate) struct LastRun {
    failed: bool,
    /// Per main output: whether it carried items.
    filled: Vec<bool>,
}

type Cover = HashMap<String, LastRun>;

fn cover_from_runs(runs: &RunData) -> Cover {
    runs.iter()
        .filter_map(|(name, runs)| {
            let last = runs.last()?;
            let filled = last
                .data
                .as_ref()
                .map(|d| d.main.iter().map(|o| o.as_ref().is_some_and(|o| !o.items().is_empty())).collect())
                .unwrap_or_default();
            Some((name.clone(), LastRun { failed: last.error.is_some(), filled }))
        })
        .collect()
}

/// The cover a mocked step gives (the engine's mock, breadth-first up from
/// the target: each node above gets items on the output toward the node
/// below it that reached it first), and the mocked names in that order.
fn mocked_cover(graph: &Graph, target: &str) -> (Cover, Vec<String>) {
    let mut cover = Cover::new();
    let mut names = Vec::new();
    let mut seen = HashSet::from([target.to_owned()]);
    let mut frontier: Vec<(String, usize, usize)> = graph.parents(target).to_vec();
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for (p, out, _) in &frontier {
            if !seen.insert(p.clone()) {
                continue;
            }
            let mut filled = vec![false; out + 1];
            filled[*out] = true;
            cover.insert(p.clone(), LastRun { failed: false, filled });
            names.push(p.clone());
            next.extend(graph.parents(p).iter().cloned());
        }
        frontier = next;
    }
    (cover, names)
}

fn is_loop(graph: &Graph, name: &str) -> Option<usize> {
    let n = graph.node(name)?;
    // `done` is output 0 from version 3 on, output 1 before.
    n.node_type.ends_with(".splitInBatches").then_some(if n.type_version >= 3.0 { 0 } else { 1 })
}

/// The nodes above `target` the engine would run for real given `cover`
/// (sorted): empty when the input keeps them all out.
fn would_rerun(graph: &Graph, target: &str, cover: &Cover, pinned: &HashSet<String>) -> Vec<String> {
    let above: HashSet<String> = graph.ancestors(target).into_iter().collect();
    let on_cycle = above.contains(target);
    // The subgraph: edges among the nodes above and into the target; a cycle
    // through the target is dropped (no edge out of the target).
    let children = |n: &str, out: usize| -> Vec<String> {
        if on_cycle && n == target {
            return vec![];
        }
        graph.children(n, out).iter().map(|c| c.node.clone()).filter(|c| c == target || above.contains(c)).collect()
    };
    let outputs = |n: &str| graph.output_count(n);
    let in_sub_parents = |n: &str| graph.parents(n).iter().filter(|(p, _, _)| above.contains(p) && !(on_cycle && p == target)).count();
    let mut roots: Vec<String> =
        graph.nodes().iter().map(|n| n.name.clone()).filter(|n| above.contains(n) && n != target && in_sub_parents(n) == 0).collect();
    if roots.is_empty() {
        return vec![];
    }
    let has_data = |n: &str| cover.contains_key(n) || pinned.contains(n);
    // The engine starts from the trigger that has data (one that never fired is not part of the run).
    let start = roots.iter().position(|r| has_data(r)).unwrap_or(0);
    let start = roots.swap_remove(start);
    let below = |from: &str| -> BTreeSet<String> {
        let mut out = BTreeSet::from([from.to_owned()]);
        let mut queue = VecDeque::from([from.to_owned()]);
        while let Some(n) = queue.pop_front() {
            for o in 0..outputs(&n) {
                for c in children(&n, o) {
                    if c != target && out.insert(c.clone()) {
                        queue.push_back(c);
                    }
                }
            }
        }
        out
    };
    let mut rerun = BTreeSet::new();
    let mut visited = HashSet::new();
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        if n == target || !visited.insert(n.clone()) {
            continue;
        }
        let run = cover.get(&n);
        let gap = match run {
            None => !pinned.contains(&n),
            Some(r) if r.failed => true,
            Some(r) => match is_loop(graph, &n) {
                // The target sits on this loop's cycle: the output toward it decides.
                Some(_) if graph.ancestors(&n).iter().any(|a| a == target) => {
                    !(0..r.filled.len()).any(|o| r.filled[o] && !children(&n, o).is_empty())
                }
                Some(done) => !r.filled.get(done).copied().unwrap_or(false),
                None => false,
            },
        };
        if gap {
            rerun.extend(below(&n));
            continue;
        }
        match run {
            // A pinned node outputs its pin on its first output.
            None => queue.extend(children(&n, 0)),
            Some(r) => {
                for (o, filled) in r.filled.iter().enumerate() {
                    if *filled {
                        queue.extend(children(&n, o));
                    }
                }
            }
        }
    }
    rerun.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn node(name: &str) -> Value {
        json!({"name": name, "type": "n8n-nodes-base.noOp"})
    }

    fn loop_node(name: &str) -> Value {
        json!({"name": name, "type": "n8n-nodes-base.splitInBatches", "typeVersion": 3})
    }

    /// `["A", "B"]` or `["A:1", "B"]` (output 1 of A).
    fn graph(nodes: Vec<Value>, edges: &[(&str, &str)]) -> Graph {
        let mut conns = serde_json::Map::new();
        for (from, to) in edges {
            let (from, out) = from.split_once(':').map(|(f, o)| (f, o.parse::<usize>().unwrap())).unwrap_or((from, 0));
            let outs = conns.entry(from.to_owned()).or_insert_with(|| json!({"main": []}));
            let main = outs["main"].as_array_mut().unwrap();
            while main.len() <= out {
                main.push(json!([]));
            }
            main[out].as_array_mut().unwrap().push(json!({"node": to, "type": "main", "index": 0}));
        }
        Graph::from_json(&json!({"nodes": nodes, "connections": conns})).unwrap()
    }

    /// Run data: node → outputs of its last run (`[[n items], ...]`), `!` prefix = failed.
    fn runs(spec: &[(&str, &[usize])]) -> RunData {
        let mut out = serde_json::Map::new();
        for (name, outputs) in spec {
            let (name, failed) = name.strip_prefix('!').map(|n| (n, true)).unwrap_or((name, false));
            let main: Vec<Value> = outputs.iter().map(|n| Value::Array((0..*n).map(|i| json!({"json": {"i": i}})).collect())).collect();
            let mut task = json!({"startTime": 0, "executionTime": 0, "executionStatus": if failed {"error"} else {"success"}, "data": {"main": main}});
            if failed {
                task["error"] = json!({"message": "timed out"});
            }
            out.entry(name.to_owned()).or_insert_with(|| json!([])).as_array_mut().unwrap().push(task);
        }
        serde_json::from_value(Value::Object(out)).unwrap()
    }

    fn ask<'a>(target: &'a str, pins: &'a BTreeMap<String, Vec<Item>>) -> StepAsk<'a> {
        StepAsk { target, mock_input: None, reuse: None, tool_arguments: false, pins }
    }

    fn chain() -> Graph {
        graph(vec![json!({"name": "Trigger", "type": "n8n-nodes-base.manualTrigger"}), node("Fetch"), node("Target")], &[("Trigger", "Fetch"), ("Fetch", "Target")])
    }

    #[test]
    fn chain_is_the_default_and_the_targets_own_pin_comes_off_the_run() {
        let pins = BTreeMap::from([("Target".to_owned(), vec![Item::new(json!({"stale": true}))]), ("Fetch".to_owned(), vec![Item::new(json!({}))])]);
        let p = plan(&chain(), &ask("Target", &pins)).unwrap();
        assert_eq!(p.input_mode, InputMode::Chain);
        assert_eq!(p.pin_data.keys().collect::<Vec<_>>(), ["Fetch"]);
    }

    #[test]
    fn reuse_needs_data_for_the_whole_path_above_the_target() {
        let none = BTreeMap::new();
        let g = chain();
        let full = runs(&[("Trigger", &[1]), ("Fetch", &[2])]);
        let p = plan(&g, &StepAsk { reuse: Some(&full), ..ask("Target", &none) }).unwrap();
        assert_eq!((p.input_mode, p.replayed_node_names.clone()), (InputMode::ReusedExecution, vec!["Fetch".to_owned(), "Trigger".to_owned()]));

        let elsewhere = runs(&[("Elsewhere", &[1])]);
        let e = plan(&g, &StepAsk { reuse: Some(&elsewhere), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("holds no data for any node above \"Target\""), "{e}");

        let stops_above = runs(&[("Trigger", &[1])]);
        let e = plan(&g, &StepAsk { reuse: Some(&stops_above), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("still run \"Fetch\" for real"), "{e}");

        let misses_trigger = runs(&[("Fetch", &[1])]);
        let e = plan(&g, &StepAsk { reuse: Some(&misses_trigger), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("\"Fetch\", \"Trigger\""), "{e}");

        let failed = runs(&[("Trigger", &[1]), ("!Fetch", &[])]);
        let e = plan(&g, &StepAsk { reuse: Some(&failed), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("\"Fetch\""), "{e}");
        // A pin does not outrank the failure (the engine retries the node).
        let pins = BTreeMap::from([("Fetch".to_owned(), vec![Item::new(json!({}))])]);
        assert!(plan(&g, &StepAsk { reuse: Some(&failed), ..ask("Target", &pins) }).is_err());
        // A pin covers a node the execution did not reach.
        let pins = BTreeMap::from([("Trigger".to_owned(), vec![Item::new(json!({}))])]);
        assert!(plan(&g, &StepAsk { reuse: Some(&misses_trigger), ..ask("Target", &pins) }).is_ok());
    }

    #[test]
    fn reuse_skips_branches_and_triggers_the_run_never_took() {
        let none = BTreeMap::new();
        let g = graph(
            vec![json!({"name": "Trigger", "type": "n8n-nodes-base.manualTrigger"}), node("IF"), node("Kept"), node("Discarded"), node("Target")],
            &[("Trigger", "IF"), ("IF:0", "Kept"), ("IF:1", "Discarded"), ("Kept", "Target"), ("Discarded", "Target")],
        );
        let prior = runs(&[("Trigger", &[1]), ("IF", &[1, 0]), ("Kept", &[1])]);
        assert!(plan(&g, &StepAsk { reuse: Some(&prior), ..ask("Target", &none) }).is_ok());

        let g = graph(
            vec![json!({"name": "Trigger", "type": "n8n-nodes-base.manualTrigger"}), json!({"name": "Schedule", "type": "n8n-nodes-base.scheduleTrigger"}), node("Fetch"), node("Target")],
            &[("Trigger", "Fetch"), ("Schedule", "Fetch"), ("Fetch", "Target")],
        );
        let prior = runs(&[("Trigger", &[1]), ("Fetch", &[1])]);
        assert!(plan(&g, &StepAsk { reuse: Some(&prior), ..ask("Target", &none) }).is_ok());
    }

    #[test]
    fn loops_decide_by_done_or_by_the_output_toward_the_target() {
        let none = BTreeMap::new();
        let nodes = || vec![json!({"name": "Trigger", "type": "n8n-nodes-base.manualTrigger"}), loop_node("Loop"), node("Body"), node("Target")];
        let unfinished = |extra: &[(&'static str, &'static [usize])]| {
            let mut spec: Vec<(&str, &[usize])> = vec![("Trigger", &[1]), ("Loop", &[0, 1]), ("Body", &[1])];
            spec.extend_from_slice(extra);
            runs(&spec)
        };
        let finished = runs(&[("Trigger", &[1]), ("Loop", &[0, 1]), ("Loop", &[1, 0]), ("Body", &[1])]);

        // Target after `done`.
        let after_done = graph(nodes(), &[("Trigger", "Loop"), ("Loop:1", "Body"), ("Body", "Loop"), ("Loop:0", "Target")]);
        let e = plan(&after_done, &StepAsk { reuse: Some(&unfinished(&[])), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("\"Loop\""), "{e}");
        assert!(plan(&after_done, &StepAsk { reuse: Some(&finished), ..ask("Target", &none) }).is_ok());
        let mock = [Item::new(json!({"id": 1}))];
        let p = plan(&after_done, &StepAsk { mock_input: Some(&mock), ..ask("Target", &none) }).unwrap();
        assert_eq!(p.input_mode, InputMode::Mocked);

        // Target on the cycle: a finished loop (done filled, loop empty) restarts.
        let on_cycle = graph(nodes(), &[("Trigger", "Loop"), ("Loop:1", "Body"), ("Body", "Target"), ("Target", "Loop")]);
        let e = plan(&on_cycle, &StepAsk { reuse: Some(&finished), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("\"Loop\""), "{e}");
        assert!(plan(&on_cycle, &StepAsk { reuse: Some(&unfinished(&[])), ..ask("Target", &none) }).is_ok());
        assert!(plan(&on_cycle, &StepAsk { mock_input: Some(&mock), ..ask("Target", &none) }).is_ok());

        // Target off the loop body: a mock leaves `done` empty and is refused.
        let off_body = graph(nodes(), &[("Trigger", "Loop"), ("Loop:1", "Body"), ("Body", "Loop"), ("Body", "Target")]);
        let e = plan(&off_body, &StepAsk { mock_input: Some(&mock), ..ask("Target", &none) }).unwrap_err().to_string();
        assert!(e.contains("mockInput cannot keep \"Body\", \"Loop\" out") && e.contains("reuseExecutionId"), "{e}");
        assert!(plan(&off_body, &StepAsk { reuse: Some(&finished), ..ask("Target", &none) }).is_ok());
    }

    #[test]
    fn mocked_steps_invent_every_node_above_and_drop_their_pins() {
        let pins = BTreeMap::from([("Fetch".to_owned(), vec![Item::new(json!({"pinned": 1}))]), ("Target".to_owned(), vec![Item::new(json!({}))])]);
        let mock = [Item::new(json!({"id": 2}))];
        let p = plan(&chain(), &StepAsk { mock_input: Some(&mock), ..ask("Target", &pins) }).unwrap();
        assert_eq!(p.mocked_node_names, ["Fetch", "Trigger"]);
        assert!(p.pin_data.is_empty(), "{:?}", p.pin_data);
        // Nothing above: nothing to mock, the chain runs.
        let p = plan(&chain(), &StepAsk { mock_input: Some(&mock), ..ask("Trigger", &pins) }).unwrap();
        assert_eq!(p.input_mode, InputMode::Chain);
    }

    #[test]
    fn sub_nodes_tools_and_tool_arguments_are_refused_with_what_to_do() {
        let none = BTreeMap::new();
        let g = Graph::from_json(&json!({
            "nodes": [
                {"name": "Trigger", "type": "n8n-nodes-base.manualTrigger"},
                {"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent"},
                {"name": "Search", "type": "n8n-nodes-base.httpRequestTool", "parameters": {"url": "=https://example.com/?q={{ $fromAI('q', 'what to find') }}"}},
                {"name": "Calc", "type": "@n8n/n8n-nodes-langchain.toolCalculator"},
                {"name": "Lonely", "type": "@n8n/n8n-nodes-langchain.toolCalculator"},
                {"name": "MCP", "type": "@n8n/n8n-nodes-langchain.mcpClientTool"},
                {"name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi"},
                {"name": "Second", "type": "@n8n/n8n-nodes-langchain.agent"},
                {"name": "Shared", "type": "@n8n/n8n-nodes-langchain.toolCalculator"}
            ],
            "connections": {
                "Trigger": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
                "Agent": {"main": [[{"node": "Second", "type": "main", "index": 0}]]},
                "Search": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
                "Calc": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
                "MCP": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
                "Shared": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}, {"node": "Second", "type": "ai_tool", "index": 0}]]},
                "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]}
            }
        }))
        .unwrap();
        // a tool: planned against its agent (the Tool Executor stands in for it)
        let p = plan(&g, &ask("Calc", &none)).unwrap();
        assert_eq!((p.input_mode, p.ran_through_node_names.clone()), (InputMode::Chain, vec!["Agent".to_owned()]));
        let mock = [Item::new(json!({"chatInput": "hi"}))];
        let p = plan(&g, &StepAsk { mock_input: Some(&mock), ..ask("Calc", &none) }).unwrap();
        assert_eq!((p.input_mode, p.mocked_node_names), (InputMode::Mocked, vec!["Trigger".to_owned()]));
        // $fromAI arguments need toolArguments
        let e = plan(&g, &ask("Search", &none)).unwrap_err().to_string();
        assert!(e.contains("$fromAI: q") && e.contains("toolArguments"), "{e}");
        assert!(plan(&g, &StepAsk { tool_arguments: true, ..ask("Search", &none) }).is_ok());
        // a tool of two agents, one above the other
        let e = plan(&g, &ask("Shared", &none)).unwrap_err().to_string();
        assert!(e.contains("\"Agent\" runs above \"Second\"") && e.contains("get-node-output"), "{e}");
        let e = plan(&g, &ask("Lonely", &none)).unwrap_err().to_string();
        assert!(e.contains("a tool no node is connected to run"), "{e}");
        let e = plan(&g, &ask("MCP", &none)).unwrap_err().to_string();
        assert!(e.contains("holds several tools"), "{e}");
        let e = plan(&g, &ask("Model", &none)).unwrap_err().to_string();
        assert!(e.contains("sub-node (ai_languageModel)") && e.contains("run \"Agent\" instead"), "{e}");
        let e = plan(&g, &StepAsk { tool_arguments: true, ..ask("Agent", &none) }).unwrap_err().to_string();
        assert!(e.contains("toolArguments apply only to a tool node"), "{e}");
        assert!(plan(&g, &ask("Nope", &none)).unwrap_err().to_string().contains("no node named \"Nope\""));
    }
}
