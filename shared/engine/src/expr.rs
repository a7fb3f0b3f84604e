//! Expressions: the engine's `DataProxy` (what an expression sees of the
//! execution, incl. paired-item resolution through run data) and a thin
//! wrapper over the expression crate's `Evaluator`.

use serde_json::{json, Value};

use expression::{CodeMode, CodeOutput, DataProxy, ExpressionError, Item, Limits, PairedItem};

use crate::data::{RunData, TaskSource};
use crate::error::Result;
use crate::workflow::{Graph, Node};

/// The data one expression evaluation sees: one node, one item, one run.
pub struct NodeProxy<'a> {
    pub graph: &'a Graph,
    pub run_data: &'a RunData,
    pub node: &'a Node,
    pub input: &'a [Item],
    pub source: &'a [Option<TaskSource>],
    pub item_index: i64,
    pub run_index: usize,
    pub execution_id: &'a str,
    pub mode: &'a str,
    /// Other nodes' persistent contexts, and the running node's own.
    pub node_contexts: Option<&'a std::collections::BTreeMap<String, Value>>,
    pub own_context: Option<&'a Value>,
    /// Where webhooks are served (`$execution.resumeUrl`).
    pub public_url: Option<&'a str>,
    /// The arguments a model chose for this tool call (`$fromAI`).
    pub from_ai: Option<&'a Value>,
}

impl<'a> DataProxy for NodeProxy<'a> {
    fn input_items(&self) -> &[Item] {
        self.input
    }
    fn item_index(&self) -> i64 {
        self.item_index
    }
    fn run_index(&self) -> usize {
        self.run_index
    }
    fn node_output(&self, node: &str, output: usize, run: Option<usize>) -> Option<Vec<Item>> {
        let runs = self.run_data.get(node)?;
        let task = match run {
            Some(r) => runs.get(r)?,
            None => runs.last()?,
        };
        Some(task.output(output).map(|i| i.as_ref().clone()).unwrap_or_default())
    }
    fn paired_item(&self, target: &str, item_index: usize) -> Result<Item, String> {
        let unavailable = || format!("Paired item data for item from node '{target}' is unavailable");
        let src = self.source.first().and_then(|s| s.as_ref()).ok_or_else(unavailable)?;
        // the previous node's output item as it is in the run data (the
        // node's own input copy points at itself, n8n's re-pairing)
        let item = self
            .run_data
            .get(&src.previous_node)
            .and_then(|r| r.get(src.previous_node_run))
            .and_then(|t| t.output(src.previous_node_output))
            .and_then(|o| o.get(item_index).cloned())
            .or_else(|| self.input.get(item_index).cloned())
            .ok_or_else(unavailable)?;
        self.walk_paired(target, item, src, 0)
    }
    fn parameters(&self) -> Value {
        self.node.parameters.clone()
    }
    fn node_context(&self, node: &str) -> Option<Value> {
        let v = if node == self.node.name { self.own_context } else { self.node_contexts.and_then(|m| m.get(node)) };
        v.filter(|v| !v.is_null()).cloned()
    }
    fn workflow(&self) -> Value {
        let wf = &self.graph.workflow;
        json!({ "id": wf.id, "name": wf.name, "active": false })
    }
    fn execution(&self) -> Value {
        let (resume, form) = match self.public_url {
            Some(base) => (
                format!("{base}/webhook-waiting/{}", self.execution_id),
                format!("{base}/form-waiting/{}", self.execution_id),
            ),
            None => (String::new(), String::new()),
        };
        json!({ "id": self.execution_id, "mode": self.mode, "resumeUrl": resume, "resumeFormUrl": form, "customData": {} })
    }
    fn vars(&self) -> Value {
        json!({})
    }
    fn from_ai_input(&self) -> Option<Value> {
        self.from_ai.cloned()
    }
}

impl NodeProxy<'_> {
    /// Walks `pairedItem` links up the run data from `item` (an output item of
    /// `src.previous_node`) until `target` is reached. An item built from
    /// several items (Merge, Aggregate) follows each of them, as n8n's
    /// `getPairedItem` does: the paths that reach `target` must agree.
    fn walk_paired(&self, target: &str, mut item: Item, src: &TaskSource, depth: usize) -> Result<Item, String> {
        let mut src: TaskSource = src.clone();
        let unavailable = || format!("Paired item data for item from node '{target}' is unavailable");
        for _ in 0..10_000 {
            if src.previous_node == target {
                return Ok(item);
            }
            let task = self.run_data.get(&src.previous_node).and_then(|r| r.get(src.previous_node_run)).ok_or_else(unavailable)?;
            let step = |(i, k, over): (usize, usize, Option<TaskSource>)| -> Option<(Item, TaskSource)> {
                // Split In Batches points an item at the node that started
                // the loop (`sourceOverwrite`) rather than at its own input
                let psrc = match over {
                    Some(o) => o,
                    None => task.source.get(k).and_then(|s| s.clone())?,
                };
                let ptask = self.run_data.get(&psrc.previous_node).and_then(|r| r.get(psrc.previous_node_run))?;
                let it = ptask.output(psrc.previous_node_output).and_then(|o| o.get(i))?.clone();
                Some((it, psrc))
            };
            let alternatives = paired_targets(item.paired_item.as_ref());
            if alternatives.len() > 1 {
                if depth > 64 {
                    return Err(unavailable());
                }
                let found: Vec<Item> = alternatives.into_iter().filter_map(step).filter_map(|(it, psrc)| self.walk_paired(target, it, &psrc, depth + 1).ok()).collect();
                let Some(first) = found.first() else { return Err(unavailable()) };
                if found.iter().any(|f| *f.json != *first.json) {
                    return Err("Multiple matching items for expression".into());
                }
                return Ok(first.clone());
            }
            let (next, psrc) = alternatives.into_iter().next().and_then(step).ok_or_else(unavailable)?;
            item = next;
            src = psrc;
        }
        Err(unavailable())
    }
}

/// `(item, input, source override)` an item's `pairedItem` points at (missing = item 0).
fn paired_targets(p: Option<&PairedItem>) -> Vec<(usize, usize, Option<TaskSource>)> {
    let one = |v: &Value| match v {
        Value::Number(n) => n.as_u64().map(|i| (i as usize, 0, None)),
        Value::Object(o) => Some((
            o.get("item").and_then(Value::as_u64).unwrap_or(0) as usize,
            o.get("input").and_then(Value::as_u64).unwrap_or(0) as usize,
            o.get("sourceOverwrite").and_then(|s| serde_json::from_value::<TaskSource>(s.clone()).ok()),
        )),
        _ => None,
    };
    match p {
        None => vec![(0, 0, None)],
        Some(PairedItem::Other(v)) => match &**v {
            Value::Array(a) if !a.is_empty() => a.iter().filter_map(one).collect(),
            Value::Array(_) => vec![(0, 0, None)],
            other => one(other).into_iter().collect(),
        },
        Some(p) => {
            let (i, k) = p.target();
            vec![(i, k, None)]
        }
    }
}

/// True when a parameter value contains an expression anywhere.
pub fn has_expression(v: &Value) -> bool {
    match v {
        Value::String(s) => s.starts_with('='),
        Value::Array(a) => a.iter().any(has_expression),
        Value::Object(o) => o.values().any(has_expression),
        _ => false,
    }
}

/// The evaluator, created on first use (most runs of most nodes need none).
pub struct Expr {
    limits: Limits,
    timezone: String,
    clock: Option<i64>,
    inner: Option<imp::Inner>,
    /// Evaluations performed, for the benchmark.
    pub evaluations: u64,
}

impl Expr {
    pub fn new(limits: Limits, timezone: String) -> Self {
        Expr { limits, timezone, clock: None, inner: None, evaluations: 0 }
    }

    /// Freezes the clock scripts see (`EngineSettings::clock`).
    pub fn with_clock(mut self, clock: Option<chrono::DateTime<chrono::Utc>>) -> Self {
        self.clock = clock.map(|c| c.timestamp_millis());
        self
    }

    /// Moves a frozen clock (fake timers); a no-op when it shows that time.
    pub fn set_clock(&mut self, clock: Option<chrono::DateTime<chrono::Utc>>) {
        let ms = clock.map(|c| c.timestamp_millis());
        if ms == self.clock {
            return;
        }
        self.clock = ms;
        if let Some(inner) = &mut self.inner {
            inner.set_clock(ms);
        }
    }

    fn inner(&mut self) -> Result<&mut imp::Inner> {
        if self.inner.is_none() {
            self.inner = Some(imp::Inner::new(self.limits, &self.timezone, self.clock)?);
        }
        // just set above
        Ok(self.inner.as_mut().expect("evaluator initialised"))
    }

    /// Resolves a parameter value; values without expressions are cloned as is.
    pub fn resolve(&mut self, v: &Value, data: &dyn DataProxy) -> Result<Value> {
        if !has_expression(v) {
            return Ok(v.clone());
        }
        self.evaluations += 1;
        Ok(self.inner()?.resolve(v, data)?)
    }

    pub fn run_code(&mut self, code: &str, mode: CodeMode, data: &dyn DataProxy) -> Result<CodeOutput> {
        self.evaluations += 1;
        Ok(self.inner()?.run_code(code, mode, data)?)
    }

    /// A complete script function with its result read straight into items.
    pub fn run_function_items(&mut self, source: &str, data: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>)> {
        self.evaluations += 1;
        Ok(self.inner()?.run_function_items(source, data)?)
    }

    /// `runOnceForAllItems` code with its result read straight into items.
    pub fn run_code_items(&mut self, code: &str, data: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>)> {
        self.evaluations += 1;
        Ok(self.inner()?.run_code_items(code, data)?)
    }
}

#[cfg(feature = "js")]
mod imp {
    use super::*;
    pub struct Inner(expression::Evaluator);
    impl Inner {
        pub fn new(limits: Limits, timezone: &str, clock: Option<i64>) -> Result<Self, ExpressionError> {
            let mut e = expression::Evaluator::new(limits)?;
            // $now / Luxon default to the workflow's zone
            if timezone != "UTC" {
                e.set_timezone(timezone)?;
            }
            if clock.is_some() {
                e.set_clock(clock)?;
            }
            Ok(Inner(e))
        }
        pub fn set_clock(&mut self, clock: Option<i64>) {
            // a clock the sandbox refuses stays as it was
            let _ = self.0.set_clock(clock);
        }
        pub fn resolve(&mut self, v: &Value, d: &dyn DataProxy) -> Result<Value, ExpressionError> {
            self.0.resolve(v, d)
        }
        pub fn run_code(&mut self, c: &str, m: CodeMode, d: &dyn DataProxy) -> Result<CodeOutput, ExpressionError> {
            self.0.run_code(c, m, d)
        }
        pub fn run_code_items(&mut self, c: &str, d: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>), ExpressionError> {
            self.0.run_code_items(c, d)
        }
        pub fn run_function_items(&mut self, s: &str, d: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>), ExpressionError> {
            self.0.run_function_items(s, d)
        }
    }
}

/// Stand-in used only while the expression crate's Evaluator is not built:
/// understands `{{ $json.a.b }}`, `$node["X"].json.a`, `$runIndex`,
/// `$itemIndex` and literals, so the non-JavaScript parts can be tested.
#[cfg(not(feature = "js"))]
mod imp {
    use super::*;
    pub struct Inner;
    impl Inner {
        pub fn new(_: Limits, _: &str, _: Option<i64>) -> Result<Self, ExpressionError> {
            Ok(Inner)
        }
        pub fn set_clock(&mut self, _: Option<i64>) {}
        pub fn resolve(&mut self, v: &Value, d: &dyn DataProxy) -> Result<Value, ExpressionError> {
            match v {
                Value::String(s) if s.starts_with('=') => template(&s[1..], d),
                Value::Array(a) => a.iter().map(|x| self.resolve(x, d)).collect::<Result<Vec<_>, _>>().map(Value::Array),
                Value::Object(o) => {
                    let mut m = serde_json::Map::new();
                    for (k, x) in o {
                        m.insert(k.clone(), self.resolve(x, d)?);
                    }
                    Ok(Value::Object(m))
                }
                other => Ok(other.clone()),
            }
        }
        pub fn run_code(&mut self, c: &str, _: CodeMode, _: &dyn DataProxy) -> Result<CodeOutput, ExpressionError> {
            Err(ExpressionError::Sandbox(format!("JavaScript is not available in this build: {}", c.len())))
        }
        pub fn run_code_items(&mut self, c: &str, _: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>), ExpressionError> {
            Err(ExpressionError::Sandbox(format!("JavaScript is not available in this build: {}", c.len())))
        }
        pub fn run_function_items(&mut self, s: &str, _: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>), ExpressionError> {
            Err(ExpressionError::Sandbox(format!("JavaScript is not available in this build: {}", s.len())))
        }
    }

    fn template(t: &str, d: &dyn DataProxy) -> Result<Value, ExpressionError> {
        let trimmed = t.trim();
        if trimmed.starts_with("{{") && trimmed.ends_with("}}") && trimmed.matches("{{").count() == 1 {
            return eval(trimmed[2..trimmed.len() - 2].trim(), d);
        }
        let mut out = String::new();
        let mut rest = t;
        while let Some(s) = rest.find("{{") {
            out.push_str(&rest[..s]);
            let e = rest[s..].find("}}").ok_or_else(|| err(t, "unclosed"))? + s;
            let v = eval(rest[s + 2..e].trim(), d)?;
            match v {
                Value::String(s) => out.push_str(&s),
                Value::Null => {}
                other => out.push_str(&other.to_string()),
            }
            rest = &rest[e + 2..];
        }
        out.push_str(rest);
        Ok(Value::String(out))
    }

    fn err(e: &str, m: &str) -> ExpressionError {
        ExpressionError::Runtime { expression: e.into(), message: m.into() }
    }

    fn path(mut v: Value, p: &str) -> Value {
        for seg in p.split(['.', '[', ']']).filter(|s| !s.is_empty()) {
            let seg = seg.trim_matches(|c| c == '"' || c == '\'');
            v = match v {
                Value::Object(mut o) => o.remove(seg).unwrap_or(Value::Null),
                Value::Array(mut a) => seg.parse::<usize>().ok().filter(|i| *i < a.len()).map(|i| a.swap_remove(i)).unwrap_or(Value::Null),
                _ => Value::Null,
            };
        }
        v
    }

    fn eval(e: &str, d: &dyn DataProxy) -> Result<Value, ExpressionError> {
        if let Ok(v) = serde_json::from_str::<Value>(e) {
            return Ok(v);
        }
        if e == "$runIndex" {
            return Ok(json!(d.run_index()));
        }
        if e == "$itemIndex" {
            return Ok(json!(d.item_index()));
        }
        let idx = d.item_index().max(0) as usize;
        if let Some(p) = e.strip_prefix("$json") {
            let j = d.input_items().get(idx).map(|i| (*i.json).clone()).unwrap_or(Value::Null);
            return Ok(path(j, p));
        }
        for pre in ["$node[\"", "$node['", "$('", "$(\""] {
            if let Some(r) = e.strip_prefix(pre) {
                let end = r.find(['"', '\'']).ok_or_else(|| err(e, "bad node ref"))?;
                let name = &r[..end];
                let after = r[end + 1..].trim_start_matches([']', ')']);
                let after = after.strip_prefix(".item").unwrap_or(after);
                let p = after.strip_prefix(".json").ok_or_else(|| err(e, "unsupported"))?;
                let it = d.paired_item(name, idx).map_err(|m| err(e, &m))?;
                return Ok(path(it.json.into_value(), p));
            }
        }
        if let Some(r) = e.strip_prefix("$node.") {
            let (name, p) = r.split_once(".json").ok_or_else(|| err(e, "unsupported"))?;
            let it = d.paired_item(name, idx).map_err(|m| err(e, &m))?;
            return Ok(path(it.json.into_value(), p));
        }
        Err(err(e, "unsupported in fallback evaluator"))
    }
}
