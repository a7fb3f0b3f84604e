//! n8n expressions and the JavaScript sandbox they run in. No AWS, no I/O.
//!
//! A parameter value that starts with `=` is an expression template: text with
//! `{{ … }}` blocks of JavaScript. [`Evaluator::resolve`] evaluates such values
//! against the data of one item of one node run, which the engine supplies
//! through [`DataProxy`]. The same sandbox (time and memory limits, no host
//! access) runs Code node scripts and workflow SDK code.
//!
//! How it works:
//! - Templates are split once per distinct text and cached. `={{ x }}` alone
//!   yields the typed value; any other mix of text and blocks yields a string
//!   built like n8n's template engine (`null`/`undefined` become empty, objects
//!   use JS `String()`: `[object Object]`, arrays `1,2`). See
//!   [`object_to_n8n_string`] for n8n's `[Object: {...}]` rendering.
//! - Simple code (literals, `$json` paths, arithmetic, comparisons, `&&`, `||`,
//!   `??`, `?:`, `typeof`) is evaluated natively with exact JS semantics; it
//!   falls back to QuickJS for anything else, including any case the native
//!   path does not model (method calls, objects in arithmetic, errors).
//! - QuickJS (rquickjs, no module loader, no std/os) holds Luxon (MIT, vendored
//!   in `js/`), a small Intl polyfill backed by `tz` (jiff's bundled tz database), and `js/prelude.js`:
//!   the `$…` globals as lazy getters over native callbacks into the
//!   [`DataProxy`], and n8n's extension methods (`.isEmpty()`, `.toDateTime()`,
//!   `.pluck()`, …). Calls of extension names are rewritten to dispatchers that
//!   pick the method by the receiver's type as n8n's `extend()` does (the
//!   receiver wrapped so `null`/`undefined` reach the dispatcher), so plain
//!   reads like `$json.values` keep their JavaScript meaning; `$if(a, b, c)`
//!   becomes `a ? b : c` as in n8n. jmespath (`$jmespath`) is vendored too.
//!   All of it is compiled to bytecode once per process.
//! - Every call runs under [`Limits`]: an interrupt handler enforces the time
//!   limit, the runtime's allocator the memory limit; after a timeout or
//!   out-of-memory the runtime is rebuilt, so the evaluator stays usable.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

mod fast;
pub mod from_ai;
mod item;
mod sandbox;
mod template;
pub mod tz;

pub use item::{Item, Json, PairedItem};
pub use fast::{num_to_string as js_number_to_string, str_to_num as js_string_to_number};


/// What an expression can see. The engine implements it for the node and item
/// being evaluated; lookups are lazy so an expression pays only for what it reads.
pub trait DataProxy {
    /// Items on the node's first main input (`$input.all()`).
    fn input_items(&self) -> &[Item];
    /// Index of the item being evaluated (`$itemIndex`); -1 when there is none.
    fn item_index(&self) -> i64;
    /// `$runIndex`.
    fn run_index(&self) -> usize;
    /// Output items of another node (`$('Node').all(branch, run)`, `$items()`);
    /// `None` when that node has not run.
    fn node_output(&self, node: &str, output: usize, run: Option<usize>) -> Option<Vec<Item>>;
    /// The item of `node` that the current item descends from (`$('Node').item`),
    /// by following `pairedItem` back through the run data.
    fn paired_item(&self, node: &str, item_index: usize) -> Result<Item, String>;
    /// The current node's parameters (`$parameter`).
    fn parameters(&self) -> Value;
    /// `$workflow`, `$execution`, `$vars`.
    fn workflow(&self) -> Value;
    fn execution(&self) -> Value;
    fn vars(&self) -> Value;
    /// `$prevNode`: `{"name", "outputIndex", "runIndex"}` of the node that fed
    /// this one; `None` when unknown.
    fn prev_node(&self) -> Option<Value> {
        None
    }
    /// One item of another node's output, for `$('Node').first()` / `.last()`
    /// and `$node["Node"].json` (`index` < 0 counts from the end). `None` when
    /// the node has not run, `Some(None)` when there is no such item. The
    /// default copies the list through [`DataProxy::node_output`]; engines
    /// with large outputs should answer directly.
    fn node_item(&self, node: &str, output: usize, run: Option<usize>, index: i64) -> Option<Option<Item>> {
        let items = self.node_output(node, output, run)?;
        let i = if index < 0 { items.len() as i64 + index } else { index };
        Some(if i < 0 { None } else { items.into_iter().nth(i as usize) })
    }
    /// Parameters of another node (`$('Node').params`, `$node["Node"].parameter`).
    fn node_parameters(&self, _node: &str) -> Option<Value> {
        None
    }
    /// A node's persistent context (`$node["Node"].context`, e.g. Split In
    /// Batches' `noItemsLeft`); `None` when it has none.
    fn node_context(&self, _node: &str) -> Option<Value> {
        None
    }
    /// The values an AI agent chose for this tool node's `$fromAI()` keys
    /// (n8n's `ai_tool` input override); `None` outside a tool call, where
    /// `$fromAI` fails with n8n's "No execution data available".
    fn from_ai_input(&self) -> Option<Value> {
        None
    }
}

/// Limits every evaluation runs under. A runaway expression or script fails
/// with [`ExpressionError::Timeout`] / [`ExpressionError::OutOfMemory`] and the
/// evaluator stays usable.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: std::time::Duration,
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { timeout: std::time::Duration::from_secs(5), memory_bytes: 64 << 20 }
    }
}

/// How a Code node runs its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeMode {
    /// `runOnceForAllItems`: `$input.all()` / `items`, returns an array of items.
    AllItems,
    /// `runOnceForEachItem`: `$json` / `item` is the current item, returns one item.
    EachItem,
}

/// What a script returned, plus everything it wrote with `console.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeOutput {
    pub value: Value,
    pub console: Vec<String>,
}

/// Serializable: the executor function runs scripts for functions that link
/// no sandbox, and sends their failures back.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ExpressionError {
    #[error("invalid syntax in expression {expression}: {message}")]
    Syntax { expression: String, message: String },
    #[error("expression {expression} failed: {message}")]
    Runtime { expression: String, message: String },
    #[error("expression {expression} exceeded the time limit of {limit_ms} ms")]
    Timeout { expression: String, limit_ms: u64 },
    #[error("expression {expression} exceeded the memory limit of {limit_bytes} bytes")]
    OutOfMemory { expression: String, limit_bytes: usize },
    #[error("sandbox failed: {0}")]
    Sandbox(String),
}


/// Most templates kept parsed at once; the cache is cleared when full.
const MAX_PLANS: usize = 16_384;

/// How one template is evaluated, decided once per distinct text.
enum Plan {
    /// No `{{ }}`: the text itself.
    Literal(Value),
    /// Code: the native fast path when the code fits it, else (or when it
    /// bails at run time) the QuickJS function compiled from `js`.
    Template { fast: Option<FastPlan>, js: String },
}

enum FastPlan {
    Single(fast::Expr),
    Parts(Vec<FastPart>),
}

enum FastPart {
    Text(String),
    Code(fast::Expr),
}

/// Evaluates n8n expressions and Code node scripts in a QuickJS sandbox.
///
/// One evaluator is meant to live for a whole workflow run (it caches parsed
/// templates and compiled functions); it is `Send` but not shareable.
pub struct Evaluator {
    limits: Limits,
    timezone: String,
    /// A frozen "now" (epoch ms) for `Date.now()`, `$now`, Luxon; `None`: the system clock.
    clock: Option<i64>,
    sandbox: Option<sandbox::Sandbox>,
    /// Looked up once per item and expression: keyed with FxHash, as the
    /// templates come from the workflow itself and the map is capped
    /// (`MAX_PLANS`), so SipHash's flooding defence buys nothing here.
    plans: rustc_hash::FxHashMap<String, Plan>,
    proto: fast::ProtoNames,
}

impl Evaluator {
    pub fn new(limits: Limits) -> Result<Self, ExpressionError> {
        let timezone = "UTC".to_string();
        let sb = sandbox::Sandbox::new(limits, &timezone).map_err(|f| f.into_error("", &limits))?;
        let proto = fast::ProtoNames(Some(sb.proto_names.iter().cloned().collect::<HashSet<_>>()));
        Ok(Evaluator { limits, timezone, clock: None, sandbox: Some(sb), plans: Default::default(), proto })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Changes the limits for the following evaluations (e.g. a larger memory
    /// limit around a Code node that handles many items).
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        if let Some(sb) = self.sandbox.as_mut() {
            sb.set_limits(limits);
        }
    }

    /// Sets the zone `$now`, `$today` and Luxon use by default (the workflow's
    /// `settings.timezone`); IANA names, `UTC`, `Etc/GMT±N`. Default `UTC`.
    pub fn set_timezone(&mut self, timezone: &str) -> Result<(), ExpressionError> {
        let limits = self.limits;
        self.sandbox()?
            .set_timezone(timezone)
            .map_err(|f| f.into_error(timezone, &limits))?;
        self.timezone = timezone.to_string();
        Ok(())
    }

    /// Freezes the clock scripts see (`Date.now()`, `$now`, `$today`,
    /// `DateTime.now()`) at `epoch_ms`; `None` restores the system clock.
    /// For tests that expect a fixed instant.
    pub fn set_clock(&mut self, epoch_ms: Option<i64>) -> Result<(), ExpressionError> {
        let limits = self.limits;
        self.sandbox()?.set_clock(epoch_ms).map_err(|f| f.into_error("", &limits))?;
        self.clock = epoch_ms;
        Ok(())
    }

    fn sandbox(&mut self) -> Result<&mut sandbox::Sandbox, ExpressionError> {
        if self.sandbox.is_none() {
            let mut sb = sandbox::Sandbox::new(self.limits, &self.timezone)
                .map_err(|f| f.into_error("", &self.limits))?;
            if self.clock.is_some() {
                sb.set_clock(self.clock).map_err(|f| f.into_error("", &self.limits))?;
            }
            self.sandbox = Some(sb);
        }
        self.sandbox.as_mut().ok_or_else(|| ExpressionError::Sandbox("no sandbox".into()))
    }

    /// Resolves a parameter value: strings starting with `=` are evaluated,
    /// objects and arrays are resolved recursively, anything else is returned as is.
    pub fn resolve(&mut self, value: &Value, data: &dyn DataProxy) -> Result<Value, ExpressionError> {
        match value {
            Value::String(s) if s.starts_with('=') => self.evaluate(s, data),
            Value::Array(a) => a.iter().map(|v| self.resolve(v, data)).collect::<Result<_, _>>().map(Value::Array),
            Value::Object(m) => {
                let mut out = serde_json::Map::with_capacity(m.len());
                for (k, v) in m {
                    out.insert(k.clone(), self.resolve(v, data)?);
                }
                Ok(Value::Object(out))
            }
            other => Ok(other.clone()),
        }
    }

    /// Evaluates one expression template (with or without the leading `=`).
    pub fn evaluate(&mut self, expression: &str, data: &dyn DataProxy) -> Result<Value, ExpressionError> {
        let body = expression.strip_prefix('=').unwrap_or(expression);
        // One lookup for a known template (this runs once per item).
        let js = match self.plans.get(body) {
            Some(plan) => match eval_plan(plan, data, &self.proto) {
                Ok(v) => return Ok(v),
                Err(js) => js,
            },
            None => {
                let plan = plan(body).map_err(|message| ExpressionError::Runtime {
                    expression: expression.to_string(),
                    message,
                })?;
                if self.plans.len() >= MAX_PLANS {
                    self.plans.clear();
                }
                let r = eval_plan(&plan, data, &self.proto);
                self.plans.insert(body.to_string(), plan);
                match r {
                    Ok(v) => return Ok(v),
                    Err(js) => js,
                }
            }
        };
        self.eval_js(&js, expression, data)
    }

    /// Evaluates in QuickJS only (no fast path): for tests and benchmarks.
    pub fn evaluate_js(&mut self, expression: &str, data: &dyn DataProxy) -> Result<Value, ExpressionError> {
        let body = expression.strip_prefix('=').unwrap_or(expression);
        if !self.plans.contains_key(body) {
            let plan = plan(body).map_err(|message| ExpressionError::Runtime {
                expression: expression.to_string(),
                message,
            })?;
            self.plans.insert(body.to_string(), plan);
        }
        let js = match self.plans.get(body) {
            Some(Plan::Literal(v)) => return Ok(v.clone()),
            Some(Plan::Template { js, .. }) => js.clone(),
            None => return Err(ExpressionError::Sandbox("template cache lost an entry".into())),
        };
        self.eval_js(&js, expression, data)
    }

    /// Evaluates `expression` without the sandbox: `Some` when the native
    /// path gives the exact result, `None` when it needs JavaScript. For
    /// functions that link no QuickJS (a webhook reading a session key); the
    /// value is what [`Evaluator::evaluate`] gives.
    pub fn evaluate_natively(expression: &str, data: &dyn DataProxy) -> Option<Value> {
        let body = expression.strip_prefix('=').unwrap_or(expression);
        eval_plan(&plan(body).ok()?, data, &fast::ProtoNames(None)).ok()
    }

    /// Why `expression` does not parse (`None`: it does; failures that
    /// depend on data pass). Compiled against an empty item.
    pub fn syntax_error(&mut self, expression: &str) -> Option<String> {
        match self.evaluate(expression, &StaticData::new(vec![Value::Object(Default::default())])) {
            Err(ExpressionError::Syntax { message, .. }) => Some(message),
            _ => None,
        }
    }

    /// True when `expression` is handled by the native fast path (no QuickJS
    /// unless it bails at run time).
    pub fn has_fast_path(expression: &str) -> bool {
        let body = expression.strip_prefix('=').unwrap_or(expression);
        matches!(plan(body), Ok(Plan::Template { fast: Some(_), .. }) | Ok(Plan::Literal(_)))
    }

    fn eval_js(&mut self, js: &str, expression: &str, data: &dyn DataProxy) -> Result<Value, ExpressionError> {
        let limits = self.limits;
        let r = self.sandbox()?.eval_expression(js, data);
        r.map_err(|f| {
            if f.is_fatal() {
                // a runaway may leave the runtime unusable: start afresh next time
                self.sandbox = None;
            }
            f.into_error(expression, &limits)
        })
    }

    /// Runs Code node JavaScript in `runOnceForAllItems` mode and returns
    /// the result as items, normalised like [`Evaluator::run_code`] does
    /// (`[{json, ...}]` or plain objects) but read straight from the script's
    /// values. An item's `json` may be a non-object (n8n rejects such items;
    /// the caller reports it).
    pub fn run_code_items(&mut self, code: &str, data: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>), ExpressionError> {
        let source = code_source(code, CodeMode::AllItems);
        let limits = self.limits;
        let r = self.sandbox()?.run_script_items(&source, data);
        r.map_err(|f| {
            if f.is_fatal() {
                self.sandbox = None;
            }
            f.into_error(&excerpt(code), &limits)
        })
    }

    /// Runs `source`, a JavaScript function expression (may be async), as it
    /// is, to completion (promises, timers), and reads its result as items
    /// like [`Evaluator::run_code_items`] does. For hosts that wrap user code
    /// themselves (user code in it should go through [`prepare_script`]).
    pub fn run_function_items(&mut self, source: &str, data: &dyn DataProxy) -> Result<(Vec<Item>, Vec<String>), ExpressionError> {
        let limits = self.limits;
        let r = self.sandbox()?.run_script_items(source, data);
        r.map_err(|f| {
            if f.is_fatal() {
                self.sandbox = None;
            }
            f.into_error(&excerpt(source), &limits)
        })
    }

    /// Runs Code node JavaScript. The result is normalised like n8n does:
    /// `AllItems` gives an array of items (`[{json, ...}]`), `EachItem` one item
    /// object (or null when the script returned nothing).
    pub fn run_code(&mut self, code: &str, mode: CodeMode, data: &dyn DataProxy) -> Result<CodeOutput, ExpressionError> {
        let source = code_source(code, mode);
        let limits = self.limits;
        let r = self.sandbox()?.run_script(&source, data);
        match r {
            Ok((value, console)) => {
                let value = match mode {
                    CodeMode::AllItems => normalize_all(value),
                    CodeMode::EachItem => normalize_each(value).map_err(|message| ExpressionError::Runtime {
                        expression: excerpt(code),
                        message,
                    })?,
                };
                Ok(CodeOutput { value, console })
            }
            Err(f) => {
                if f.is_fatal() {
                    self.sandbox = None;
                }
                Err(f.into_error(&excerpt(code), &limits))
            }
        }
    }
}

/// Script code as the sandbox runs it: calls of n8n's extension methods
/// (`$json.name.isEmpty()`) rewritten to the sandbox's dispatchers.
pub fn prepare_script(code: &str) -> String {
    template::rewrite_extension_calls(code)
}

/// The function a Code node script runs in.
fn code_source(code: &str, mode: CodeMode) -> String {
    // extension methods (`$json.name.isEmpty()`) work in Code too
    let code_js = template::rewrite_extension_calls(code);
    match mode {
        CodeMode::AllItems => format!(
            "(async function(){{\nvar items = $input.all();\nreturn await (async function(){{\n{code_js}\n}}).call({{}});\n}})"
        ),
        CodeMode::EachItem => format!(
            "(async function(){{\nvar item = $input.item;\nreturn await (async function(){{\n{code_js}\n}}).call({{}});\n}})"
        ),
    }
}

/// n8n's normalisation of Code node results: plain objects become `{json: …}`.
fn to_item(v: Value) -> Value {
    const ITEM_KEYS: [&str; 5] = ["json", "binary", "pairedItem", "error", "index"];
    let is_item = match &v {
        Value::Object(m) => {
            // a non-object `json` stays as returned: n8n rejects such items
            m.contains_key("json") && m.keys().all(|k| ITEM_KEYS.contains(&k.as_str()))
        }
        _ => false,
    };
    if is_item {
        v
    } else {
        let mut m = serde_json::Map::with_capacity(1);
        m.insert("json".into(), v);
        Value::Object(m)
    }
}

fn normalize_all(v: Value) -> Value {
    match v {
        Value::Null => Value::Array(Vec::new()),
        Value::Array(a) => Value::Array(a.into_iter().filter(|x| !x.is_null()).map(to_item).collect()),
        other => Value::Array(vec![to_item(other)]),
    }
}

fn normalize_each(v: Value) -> Result<Value, String> {
    match v {
        Value::Null => Ok(Value::Null),
        Value::Array(_) => Err("Code doesn't return a single object: an array was returned. In 'Run Once for Each Item' mode, return one item".into()),
        other => Ok(to_item(other)),
    }
}

fn excerpt(code: &str) -> String {
    const MAX: usize = 300;
    if code.len() <= MAX {
        return code.to_string();
    }
    let mut end = MAX;
    while !code.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &code[..end])
}

fn plan(body: &str) -> Result<Plan, String> {
    let chunks = template::split(body);
    if !chunks.iter().any(|c| matches!(c, template::Chunk::Code(_))) {
        return Ok(Plan::Literal(Value::String(body.to_string())));
    }
    if has_constructor_access(body) {
        return Err("Expression contains invalid constructor function call".into());
    }
    if template::is_single(&chunks) {
        let code = match chunks.get(1) {
            Some(template::Chunk::Code(c)) => *c,
            _ => "",
        };
        let fast = fast::parse(code).ok().map(FastPlan::Single);
        let prepared = template::prepare_code(code);
        let js = if prepared.trim().is_empty() {
            "(function(){ return undefined; })".to_string()
        } else {
            format!("(function(){{ return (\n{prepared}\n); }})")
        };
        return Ok(Plan::Template { fast, js });
    }
    let mut parts = Vec::new();
    let mut fast_parts = Some(Vec::new());
    for c in &chunks {
        match c {
            template::Chunk::Text("") => {}
            template::Chunk::Text(t) => {
                parts.push(serde_json::to_string(t).map_err(|e| e.to_string())?);
                if let Some(fp) = fast_parts.as_mut() {
                    fp.push(FastPart::Text(t.to_string()));
                }
            }
            template::Chunk::Code(code) => {
                let prepared = template::prepare_code(code);
                if prepared.trim().is_empty() {
                    continue;
                }
                parts.push(format!(
                    "(function(v){{ v = (\n{prepared}\n); return v || v === 0 || v === false ? v : ''; }}).call(this)"
                ));
                match fast::parse(code) {
                    Ok(e) => {
                        if let Some(fp) = fast_parts.as_mut() {
                            fp.push(FastPart::Code(e));
                        }
                    }
                    Err(_) => fast_parts = None,
                }
            }
        }
    }
    let js = format!("(function(){{ return [{}].join(''); }})", parts.join(", "));
    Ok(Plan::Template { fast: fast_parts.map(FastPlan::Parts), js })
}

/// n8n refuses `.constructor` in expressions (a classic sandbox escape).
fn has_constructor_access(s: &str) -> bool {
    let mut rest = s;
    while let Some(i) = rest.find('.') {
        let after = rest[i + 1..].trim_start();
        if after.starts_with("constructor") {
            return true;
        }
        rest = &rest[i + 1..];
    }
    false
}

/// A literal's value, the fast path's result, or (`Err`) the JavaScript to run.
fn eval_plan(plan: &Plan, data: &dyn DataProxy, proto: &fast::ProtoNames) -> Result<Value, String> {
    match plan {
        Plan::Literal(v) => Ok(v.clone()),
        Plan::Template { fast, js } => {
            if let Some(f) = fast {
                if let Ok(v) = run_fast(f, data, proto) {
                    return Ok(v);
                }
            }
            Err(js.clone())
        }
    }
}

fn run_fast(plan: &FastPlan, data: &dyn DataProxy, proto: &fast::ProtoNames) -> Result<Value, fast::Bail> {
    match plan {
        FastPlan::Single(e) => fast::eval(e, data, proto).and_then(fast::to_value),
        FastPlan::Parts(parts) => {
            let mut s = String::new();
            for p in parts {
                match p {
                    FastPart::Text(t) => s.push_str(t),
                    FastPart::Code(e) => s.push_str(&fast::template_part(&fast::eval(e, data, proto)?)?),
                }
            }
            Ok(Value::String(s))
        }
    }
}

/// n8n's rendering of an object where a string is expected
/// (`returnObjectAsString`, e.g. a Set node field of type string):
/// `[Object: {"a": 1, "b": "x"}]`, `[Array: [1,2]]`. Other values are
/// rendered as JavaScript's `String(value)` would.
pub fn object_to_n8n_string(value: &Value) -> String {
    let (kind, v) = match value {
        Value::Object(_) => ("Object", value),
        Value::Array(_) => ("Array", value),
        Value::String(s) => return s.clone(),
        Value::Number(n) => return fast::num_to_string(n.as_f64().unwrap_or(f64::NAN)),
        other => return other.to_string(),
    };
    let json = serde_json::to_string(v).unwrap_or_default();
    // n8n's spacing for readability: `,"` -> `, "` and `":` -> `": `
    let json = json.replace(",\"", ", \"").replace("\":", "\": ");
    format!("[{kind}: {json}]")
}

/// True for parameter values that are expression templates (`"=…"` strings).
pub fn is_expression(value: &Value) -> bool {
    matches!(value, Value::String(s) if s.starts_with('='))
}

/// Calls `f(path, text)` for every expression template in `value` (a
/// node's parameters), `path` the JSON pointer to it under `path`.
pub fn each_expression(value: &Value, path: &str, f: &mut dyn FnMut(&str, &str)) {
    match value {
        Value::String(s) if s.starts_with('=') => f(path, s),
        Value::Object(m) => m.iter().for_each(|(k, x)| each_expression(x, &format!("{path}/{k}"), f)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| each_expression(x, &format!("{path}/{i}"), f)),
        _ => {}
    }
}

/// A [`DataProxy`] over plain data, for tests and validation.
#[derive(Debug, Clone, Default)]
pub struct StaticData {
    pub items: Vec<Item>,
    /// `-1` when there is no current item.
    pub item_index: i64,
    pub run_index: usize,
    /// Output items (first output, last run) of other nodes, by name.
    pub nodes: HashMap<String, Vec<Item>>,
    pub parameters: Value,
    pub workflow: Value,
    pub execution: Value,
    pub vars: Value,
}

impl StaticData {
    /// Input items with these `json` values; the current item is the first
    /// (index -1 when there is none).
    pub fn new(json: Vec<Value>) -> Self {
        let items: Vec<Item> = json.into_iter().map(Item::new).collect();
        let item_index = if items.is_empty() { -1 } else { 0 };
        StaticData {
            items,
            item_index,
            parameters: Value::Object(Default::default()),
            workflow: Value::Object(Default::default()),
            execution: Value::Object(Default::default()),
            vars: Value::Object(Default::default()),
            ..StaticData::default()
        }
    }

    /// A single current item with this `json`.
    pub fn from_json(json: Value) -> Self {
        StaticData::new(vec![json])
    }

    pub fn with_item_index(mut self, index: i64) -> Self {
        self.item_index = index;
        self
    }

    pub fn with_node(mut self, name: &str, json: Vec<Value>) -> Self {
        let items = json.into_iter().map(Item::new).collect();
        self.nodes.insert(name.to_string(), items);
        self
    }
}

impl DataProxy for StaticData {
    fn input_items(&self) -> &[Item] {
        &self.items
    }
    fn item_index(&self) -> i64 {
        self.item_index
    }
    fn run_index(&self) -> usize {
        self.run_index
    }
    fn node_output(&self, node: &str, output: usize, _run: Option<usize>) -> Option<Vec<Item>> {
        if output != 0 {
            return self.nodes.get(node).map(|_| Vec::new());
        }
        self.nodes.get(node).cloned()
    }
    /// Pairs by `pairedItem.item` of the current input item when present,
    /// else by position.
    fn paired_item(&self, node: &str, item_index: usize) -> Result<Item, String> {
        let out = self.nodes.get(node).ok_or_else(|| format!("Node '{node}' hasn't been executed"))?;
        let idx = self
            .items
            .get(item_index)
            .and_then(|it| it.paired_item.as_ref())
            .and_then(|p| match p {
                PairedItem::Index(_) => None,
                PairedItem::Ref { item, .. } => Some(*item as usize),
                PairedItem::Other(v) => v.get("item").and_then(Value::as_u64).map(|i| i as usize),
            })
            .unwrap_or(item_index);
        out.get(idx).cloned().ok_or_else(|| format!("Paired item data for item {item_index} of '{node}' is unavailable"))
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn workflow(&self) -> Value {
        self.workflow.clone()
    }
    fn execution(&self) -> Value {
        self.execution.clone()
    }
    fn vars(&self) -> Value {
        self.vars.clone()
    }
}
