//! Partial runs: run one node (run-step) from the trigger chain, from a
//! prior execution's run data, or from mock input; and replay parameter
//! resolution for a node against a past execution.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::data::*;
use crate::error::{EngineError, Result};
use crate::expr::{Expr, NodeProxy};
use crate::run::{Engine, RunOptions, RunStats};
use crate::workflow::Graph;

/// Where the target node's input comes from.
#[derive(Debug, Clone)]
pub enum StepInput {
    /// Run the trigger chain above the target for real.
    Chain,
    /// Replay a prior execution's data for the nodes above the target.
    Reuse(Box<ExecutionState>),
    /// Feed these items to the target, skipping every node above it.
    Mock(Vec<Item>),
}

impl Engine {
    /// Runs one node of a workflow (the canvas "Execute step"). The target's
    /// own pin is dropped so it really executes; nodes after it do not run.
    pub fn run_node(&self, graph: &Graph, target: &str, input: StepInput, mut opts: RunOptions) -> Result<(ExecutionState, RunStats)> {
        if graph.node(target).is_some_and(crate::nodes::ai::tool_step::is_tool) {
            // a tool runs through the Tool Executor in its owner's place (fed as the owner would be)
            let stepped = crate::nodes::ai::tool_step::graph_for(graph, target, opts.tool_arguments.as_ref())?;
            opts.pin_data.remove(target);
            let (mut st, stats) = self.run_node(&stepped, crate::nodes::ai::tool_step::EXECUTOR_NAME, input, opts)?;
            crate::nodes::ai::tool_step::report(&mut st, graph, target);
            return Ok((st, stats));
        }
        self.validate(graph)?;
        graph.node_or_err(target)?;
        opts.pin_data.remove(target);
        opts.destination = Some(target.to_string());
        let parents: Vec<(String, usize, usize)> = graph.parents(target).to_vec();
        match input {
            StepInput::Chain => self.run(graph, opts),
            StepInput::Reuse(prior) => {
                let mut st = ExecutionState::new(opts.execution_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()));
                st.pin_data = opts.pin_data.clone();
                for anc in graph.ancestors(target) {
                    if let Some(runs) = prior.run_data.get(&anc) {
                        let runs = runs.iter().cloned().map(|mut t| {
                            t.origin = Some(RunOrigin::Replayed);
                            t
                        });
                        st.run_data.insert(anc.clone(), runs.collect());
                    }
                }
                let entry = entry_from_parents(&st, target, &parents)
                    .ok_or_else(|| EngineError::InvalidWorkflow(format!("the execution holds no data for any node above \"{target}\"")))?;
                st.stack.push_back(entry);
                let stats = self.drive_state(graph, &mut st, &opts);
                Ok((st, stats))
            }
            StepInput::Mock(items) => {
                let mut st = ExecutionState::new(opts.execution_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()));
                st.pin_data = opts.pin_data.clone();
                let items: Items = Arc::new(items);
                if parents.is_empty() {
                    st.stack.push_back(StackEntry { node: target.to_string(), inputs: vec![Some(items)], source: vec![], resume: false });
                } else {
                    // Mocked runs for every node above the target, breadth-first
                    // (the shallowest edge to a node wins): the direct parents
                    // output the items, deeper ancestors one placeholder item on
                    // the output that leads down, so `$('Any node above')` resolves.
                    let placeholder: Items = Arc::new(vec![Item::new(Value::Object(Map::new()))]);
                    let mut seen = std::collections::HashSet::from([target.to_string()]);
                    let mut frontier = parents.clone();
                    let mut depth = 0;
                    while !frontier.is_empty() {
                        let mut next = Vec::new();
                        for (p, out, _) in &frontier {
                            if !seen.insert(p.clone()) {
                                continue;
                            }
                            let mut main = vec![None; out + 1];
                            main[*out] = Some(OutputItems::new(if depth == 0 { items.clone() } else { placeholder.clone() }));
                            st.run_data.entry(p.clone()).or_default().push(TaskData {
                                start_time: now_ms(),
                                execution_time: 0,
                                execution_status: ExecutionStatus::Success,
                                source: vec![],
                                data: Some(TaskOutputs { main, other: Default::default() }),
                                error: None,
                                console: vec![],
                                released_items: None,
                                origin: Some(RunOrigin::Mocked),
                                metadata: None,
                                input_override: None,
                            });
                            next.extend(graph.parents(p).iter().cloned());
                        }
                        frontier = next;
                        depth += 1;
                    }
                    let entry = entry_from_parents(&st, target, &parents).ok_or_else(|| EngineError::InvalidWorkflow("no input".into()))?;
                    st.stack.push_back(entry);
                }
                let stats = self.drive_state(graph, &mut st, &opts);
                Ok((st, stats))
            }
        }
    }

    /// Replays expression resolution of `node`'s parameters against a past
    /// execution: the resolved tree, failed expressions and empty results.
    pub fn resolve_parameters(&self, graph: &Graph, state: &ExecutionState, node: &str, item_index: usize, run_index: Option<usize>) -> Result<ResolvedParameters> {
        let n = graph.node_or_err(node)?;
        let runs = state.run_data.get(node);
        let run = run_index.or_else(|| runs.map(|r| r.len().saturating_sub(1))).unwrap_or(0);
        // The node's input: from its recorded sources, else its parents' last output.
        let (input, source): (Items, Vec<Option<TaskSource>>) = match runs.and_then(|r| r.get(run)) {
            Some(task) => {
                let src = task.source.clone();
                let items = src
                    .first()
                    .and_then(|s| s.as_ref())
                    .and_then(|s| state.run_data.get(&s.previous_node).and_then(|r| r.get(s.previous_node_run)).and_then(|t| t.output(s.previous_node_output)).cloned())
                    .unwrap_or_default();
                (items, src)
            }
            None => match entry_from_parents(state, node, graph.parents(node)) {
                Some(e) => (e.inputs.first().cloned().flatten().unwrap_or_default(), e.source),
                None => (Items::default(), vec![]),
            },
        };
        let settings = self.settings();
        let tz = graph.workflow.settings.timezone.clone().unwrap_or_else(|| settings.timezone.clone());
        let mut expr = Expr::new(settings.limits, tz).with_clock(settings.clock);
        let proxy = NodeProxy {
            graph,
            run_data: &state.run_data,
            node: n,
            input: &input,
            source: &source,
            item_index: crate::nodes::item_index(&input, item_index),
            run_index: run,
            execution_id: &state.execution_id,
            mode: &settings.mode,
            node_contexts: Some(&state.node_context),
            own_context: state.node_context.get(node),
            public_url: settings.public_url.as_deref(),
            from_ai: None,
        };
        let mut out = ResolvedParameters { parameters: n.parameters.clone(), resolved: Value::Null, failed_expressions: vec![], empty_resolutions: vec![] };
        out.resolved = walk(&n.parameters, "", &mut expr, &proxy, &mut out.failed_expressions, &mut out.empty_resolutions);
        Ok(out)
    }
}

impl Engine {
    /// `node`'s parameters resolved against one item outside any run (a
    /// webhook's view of a node: the Chat Trigger reading its memory's
    /// session key from the request).
    pub fn resolve_with_item(&self, graph: &Graph, node: &str, item: Item) -> Result<Value> {
        let settings = self.settings();
        let tz = graph.workflow.settings.timezone.clone().unwrap_or_else(|| settings.timezone.clone());
        let mut expr = Expr::new(settings.limits, tz).with_clock(settings.clock);
        let (mut failed, mut empty) = (vec![], vec![]);
        let resolved = self.with_item(graph, node, item, |n, proxy| walk(&n.parameters, "", &mut expr, proxy, &mut failed, &mut empty))?;
        match failed.first() {
            Some(f) => Err(crate::error::EngineError::node(format!("{}: {}", f.path, f.error))),
            None => Ok(resolved),
        }
    }

    /// `node`'s parameter `name` resolved as [`Engine::resolve_with_item`]
    /// does, without the JavaScript sandbox: `None` when it needs it. A
    /// function that calls only this links no QuickJS.
    pub fn resolve_natively_with_item(&self, graph: &Graph, node: &str, name: &str, item: Item) -> Result<Option<Value>> {
        fn native(v: &Value, proxy: &NodeProxy<'_>) -> Option<Value> {
            Some(match v {
                Value::String(s) if s.starts_with('=') => expression::Evaluator::evaluate_natively(s, proxy)?,
                Value::Array(a) => Value::Array(a.iter().map(|v| native(v, proxy)).collect::<Option<_>>()?),
                Value::Object(m) => Value::Object(m.iter().map(|(k, v)| Some((k.clone(), native(v, proxy)?))).collect::<Option<_>>()?),
                other => other.clone(),
            })
        }
        self.with_item(graph, node, item, |n, proxy| native(n.parameters.get(name).unwrap_or(&Value::Null), proxy))
    }

    /// Calls `f` with `node` and a view of `item` as its only input, outside any run.
    fn with_item<R>(&self, graph: &Graph, node: &str, item: Item, f: impl FnOnce(&crate::Node, &NodeProxy<'_>) -> R) -> Result<R> {
        let n = graph.node_or_err(node)?;
        let input: Items = Arc::new(vec![item]);
        let settings = self.settings();
        let run_data = crate::data::RunData::default();
        let proxy = NodeProxy {
            graph,
            run_data: &run_data,
            node: n,
            input: &input,
            source: &[],
            item_index: 0,
            run_index: 0,
            execution_id: "",
            mode: &settings.mode,
            node_contexts: None,
            own_context: None,
            public_url: settings.public_url.as_deref(),
            from_ai: None,
        };
        Ok(f(n, &proxy))
    }
}

/// Stack entry for `target` built from its parents' last outputs in `st`.
fn entry_from_parents(st: &ExecutionState, target: &str, parents: &[(String, usize, usize)]) -> Option<StackEntry> {
    let width = parents.iter().map(|p| p.2).max()? + 1;
    let mut inputs = vec![None; width];
    let mut source = vec![None; width];
    let mut any = false;
    for (p, out, idx) in parents {
        let Some(runs) = st.run_data.get(p) else { continue };
        let Some(task) = runs.last() else { continue };
        if inputs[*idx].is_some() {
            continue;
        }
        if let Some(items) = task.output(*out) {
            inputs[*idx] = Some(items.clone());
            source[*idx] = Some(TaskSource { previous_node: p.clone(), previous_node_output: *out, previous_node_run: runs.len() - 1 });
            any = true;
        }
    }
    any.then(|| StackEntry { node: target.to_string(), inputs, source, resume: false })
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FailedExpression {
    pub path: String,
    pub expression: String,
    pub error: String,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResolution {
    pub path: String,
    pub expression: String,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedParameters {
    pub parameters: Value,
    pub resolved: Value,
    pub failed_expressions: Vec<FailedExpression>,
    pub empty_resolutions: Vec<EmptyResolution>,
}

fn walk(v: &Value, path: &str, expr: &mut Expr, proxy: &NodeProxy<'_>, failed: &mut Vec<FailedExpression>, empty: &mut Vec<EmptyResolution>) -> Value {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match v {
        Value::String(s) if s.starts_with('=') => match expr.resolve(v, proxy) {
            Ok(r) => {
                if r.is_null() || r == Value::String(String::new()) {
                    empty.push(EmptyResolution { path: path.to_string(), expression: s.clone() });
                }
                r
            }
            Err(e) => {
                failed.push(FailedExpression { path: path.to_string(), expression: s.clone(), error: e.to_string() });
                Value::Null
            }
        },
        Value::Array(a) => Value::Array(a.iter().enumerate().map(|(i, x)| walk(x, &format!("{path}[{i}]"), expr, proxy, failed, empty)).collect()),
        Value::Object(o) => {
            let mut m = Map::new();
            for (k, x) in o {
                m.insert(k.clone(), walk(x, &join(k), expr, proxy, failed, empty));
            }
            Value::Object(m)
        }
        other => other.clone(),
    }
}

/// Trigger input shaped the way the trigger would emit it in production
/// (n8n's `getPinDataForTrigger`): form fields flat with `submittedAt`/
/// `formMode`, webhook payloads wrapped in `{headers, query, params, body}`
/// unless already an envelope, chat as `{sessionId, action, chatInput}`,
/// schedule as timestamp fields, anything else as the item itself.
pub fn trigger_items(node_type: &str, input: Option<&Value>, timezone: &str) -> Vec<Item> {
    let input = input.cloned().unwrap_or(Value::Object(Map::new()));
    let json = match node_type {
        "n8n-nodes-base.formTrigger" => {
            let mut m = Map::new();
            m.insert("submittedAt".into(), Value::String(now_iso()));
            m.insert("formMode".into(), Value::String("instanceAi".into()));
            if let Value::Object(o) = input {
                m.extend(o);
            }
            Value::Object(m)
        }
        "n8n-nodes-base.webhook" => {
            let envelope = input.as_object().is_some_and(|o| !o.is_empty() && o.keys().all(|k| matches!(k.as_str(), "body" | "query" | "headers" | "params")));
            if envelope {
                let mut m = Map::new();
                for k in ["headers", "params", "query", "body"] {
                    m.insert(k.into(), input.get(k).cloned().unwrap_or(Value::Object(Map::new())));
                }
                Value::Object(m)
            } else {
                serde_json::json!({ "headers": {}, "params": {}, "query": {}, "body": input })
            }
        }
        "@n8n/n8n-nodes-langchain.chatTrigger" => serde_json::json!({
            "sessionId": input.get("sessionId").cloned().unwrap_or_else(|| Value::String(uuid::Uuid::new_v4().to_string())),
            "action": "sendMessage",
            "chatInput": input.get("chatInput").cloned().unwrap_or(Value::String(String::new())),
        }),
        "n8n-nodes-base.scheduleTrigger" => {
            use crate::nodes::dates::{format_luxon, Dt, Zone};
            let now = Dt::now(Zone::parse(timezone).unwrap_or(Zone::Utc));
            let f = |fmt: &str| format_luxon(&now, fmt);
            serde_json::json!({
                "timestamp": now.to_iso(),
                "Readable date": f("MMMM d yyyy, h:mm:ss a"),
                "Readable time": f("h:mm:ss a"),
                "Day of week": f("EEEE"),
                "Year": f("yyyy"),
                "Month": f("MMMM"),
                "Day of month": f("dd"),
                "Hour": f("HH"),
                "Minute": f("mm"),
                "Second": f("ss"),
                "Timezone": format!("{timezone} (UTC{})", f("ZZ")),
            })
        }
        _ => input,
    };
    vec![Item::new(json)]
}

/// Labels of a node's main outputs as the editor shows them: If true/false,
/// Filter Kept/Discarded, Loop done/loop, Switch rule names, and
/// `Success`/`Error` when errors go to their own output.
pub fn output_names(node: &crate::workflow::Node) -> Vec<String> {
    let short = node.node_type.rsplit('.').next().unwrap_or("");
    let mut names: Vec<String> = match short {
        "if" => vec!["true".into(), "false".into()],
        "filter" => vec!["Kept".into(), "Discarded".into()],
        "splitInBatches" if node.type_version >= 3.0 => vec!["done".into(), "loop".into()],
        "splitInBatches" => vec!["loop".into(), "done".into()],
        "respondToWebhook" if crate::nodes::respond::has_response_output(node) => vec!["Input Data".into(), "Response".into()],
        "switch" => {
            let rules = node.parameters.pointer("/rules/values").and_then(|v| v.as_array()).cloned().unwrap_or_default();
            let mut n: Vec<String> = rules
                .iter()
                .enumerate()
                .map(|(i, r)| match (r.get("renameOutput").and_then(|v| v.as_bool()), r.get("outputKey").and_then(|v| v.as_str())) {
                    (Some(true), Some(k)) => k.to_string(),
                    _ => i.to_string(),
                })
                .collect();
            if node.parameters.pointer("/options/fallbackOutput").and_then(|v| v.as_str()) == Some("extra") {
                n.push("Fallback".into());
            }
            n
        }
        // one output per category, and "Other" with fallback `other`
        "textClassifier" => {
            let cats = node.parameters.pointer("/categories/categories").and_then(|v| v.as_array()).cloned().unwrap_or_default();
            let mut n: Vec<String> = cats.iter().map(|c| c.get("category").and_then(|v| v.as_str()).unwrap_or_default().to_string()).collect();
            if node.parameters.pointer("/options/fallback").and_then(|v| v.as_str()) == Some("other") {
                n.push("Other".into());
            }
            n
        }
        _ => vec![],
    };
    if node.on_error() == crate::workflow::OnError::ContinueErrorOutput {
        if names.is_empty() {
            names.push("Success".into());
        }
        names.push("Error".into());
    }
    names
}
