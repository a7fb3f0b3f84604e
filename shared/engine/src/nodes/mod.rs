//! Node implementations and the context they run in. Each node is a plain
//! function from its context to its outputs; `get` maps n8n type names to them.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::data::{Item, Items, RunData, TaskSource};
use crate::error::{EngineError, Result};
use crate::expr::{Expr, NodeProxy};
use crate::run::Env;
use crate::workflow::{Graph, Node, OnError};

pub mod aggregate;
pub mod binary;
pub mod compression;
pub mod convert_to_file;
pub mod disk;
pub mod extract_from_file;
pub mod jwt;
pub mod rss;
pub mod totp;
pub mod training;
pub mod xlsx;
pub mod code;
pub mod compare_datasets;
pub mod conditions;
pub mod crypto;
pub mod datatable;
pub mod dates;
pub mod datetime;
pub mod dedupe_history;
pub mod execute_workflow;
pub mod field_type;
pub mod html;
pub mod http;
pub mod if_node;
pub mod item_lists;
pub mod limit;
pub mod lodash;
pub mod merge;
pub mod move_binary_data;
pub mod misc;
pub mod regex_safety;
pub mod remove_duplicates;
pub mod rename_keys;
pub mod respond;
pub mod set;
pub mod sort;
pub mod split_in_batches;
pub mod split_out;
pub mod spreadsheet_file;
pub mod summarize;
pub mod switch;
pub mod triggers;
pub mod unsupported;
pub mod wait;
pub mod xml;
pub mod markdown;
pub mod debug_helper;
pub mod ai;
pub mod email_send;
pub(crate) mod net;
pub mod sql;
pub mod google;

/// What a node run produced.
pub enum NodeOutput {
    /// One item list per output.
    Data(Vec<Items>),
    /// Park the execution until the given time (Wait node).
    Wait(chrono::DateTime<chrono::Utc>),
    /// Park the execution until resumed from outside (a webhook call, a
    /// form submission) or, at the latest, the given time; never slept in-process.
    Park(chrono::DateTime<chrono::Utc>),
}

impl NodeOutput {
    pub fn one(items: Vec<Item>) -> Self {
        NodeOutput::Data(vec![Arc::new(items)])
    }
    pub fn many(outs: Vec<Vec<Item>>) -> Self {
        NodeOutput::Data(outs.into_iter().map(Arc::new).collect())
    }
}

pub type NodeFn = fn(&mut NodeContext<'_>) -> Result<NodeOutput>;

/// The code a declarative service description names for what its routing
/// cannot say (`routing.run`), by name.
pub(crate) fn service_code(name: &str) -> Option<crate::declarative::Run> {
    google::code(name)
}

/// Every node type the engine implements, with its code: one list, read
/// two ways. [`get`] hands out the code (the executor runs it); [`is_implemented`]
/// only names the types, so a function that validates a workflow without
/// running one (the domain layer's front doors) links no node's code.
macro_rules! node_impls {
    ($($types:pat => $code:path,)*) => {
        /// The implementation of an n8n node type, `None` if the engine has none.
        pub fn get(node_type: &str) -> Option<NodeFn> {
            let f: NodeFn = match node_type {
                $($types => $code,)*
                t if ai::sub_node_kind(t).is_some() => ai::sub_node,
                t if crate::declarative::is_declarative(t) => crate::declarative::execute,
                _ => return None,
            };
            Some(f)
        }

        /// Whether the engine implements `node_type` (`get` is `Some`),
        /// without linking any node's code.
        pub fn is_implemented(node_type: &str) -> bool {
            match node_type {
                $($types => true,)*
                t => ai::sub_node_kind(t).is_some() || crate::declarative::is_declarative(t),
            }
        }
    };
}

node_impls! {
    "n8n-nodes-base.manualTrigger"
    | "@n8n/n8n-nodes-langchain.chatTrigger"
    | "n8n-nodes-base.start" => misc::trigger,
    "n8n-nodes-base.executeWorkflowTrigger" => execute_workflow::trigger,
    "n8n-nodes-base.webhook"
    | "n8n-nodes-base.scheduleTrigger"
    | "n8n-nodes-base.formTrigger"
    | "n8n-nodes-base.errorTrigger" => triggers::execute,
    "n8n-nodes-testing.testData" => misc::test_data,
    "n8n-nodes-base.noOp" => misc::no_op,
    "n8n-nodes-base.stopAndError" => misc::stop_and_error,
    "n8n-nodes-base.respondToWebhook" => respond::execute,
    "n8n-nodes-base.readBinaryFiles" => disk::read_binary_files,
    "n8n-nodes-base.readWriteFile" => disk::read_write_file,
    "n8n-nodes-base.readBinaryFile" => disk::read_binary_file,
    "n8n-nodes-base.writeBinaryFile" => disk::write_binary_file,
    "n8n-nodes-base.executeCommand" => disk::execute_command,
    "n8n-nodes-base.localFileTrigger" => disk::local_file_trigger,
    "n8n-nodes-base.set" => set::execute,
    "n8n-nodes-base.if" => if_node::execute,
    "n8n-nodes-base.switch" => switch::execute,
    "n8n-nodes-base.filter" => if_node::filter,
    "n8n-nodes-base.merge" => merge::execute,
    "n8n-nodes-base.splitOut" => split_out::execute,
    "n8n-nodes-base.moveBinaryData" => move_binary_data::execute,
    "n8n-nodes-base.iCal" => convert_to_file::ical_node,
    "n8n-nodes-base.spreadsheetFile" => spreadsheet_file::execute,
    "n8n-nodes-base.aggregate" => aggregate::execute,
    "n8n-nodes-base.summarize" => summarize::execute,
    "n8n-nodes-base.limit" => limit::execute,
    "n8n-nodes-base.sort" => sort::execute,
    "n8n-nodes-base.removeDuplicates" => remove_duplicates::execute,
    "n8n-nodes-base.splitInBatches" => split_in_batches::execute,
    "n8n-nodes-base.code" => code::execute,
    "n8n-nodes-base.function" => code::function,
    "n8n-nodes-base.functionItem" => code::function_item,
    "n8n-nodes-base.httpRequest" => http::execute,
    "n8n-nodes-base.wait" => wait::execute,
    "n8n-nodes-base.executeWorkflow" => execute_workflow::execute,
    "n8n-nodes-base.dataTable" => datatable::execute,
    "n8n-nodes-base.dateTime" => datetime::execute,
    "n8n-nodes-base.crypto" => crypto::execute,
    "n8n-nodes-base.html" => html::execute,
    "n8n-nodes-base.htmlExtract" => html::html_extract,
    "n8n-nodes-base.convertToFile" => convert_to_file::execute,
    "n8n-nodes-base.extractFromFile" => extract_from_file::execute,
    "n8n-nodes-base.rssFeedRead" => rss::execute,
    "n8n-nodes-base.compression" => compression::execute,
    "n8n-nodes-base.jwt" => jwt::execute,
    "n8n-nodes-base.totp" => totp::execute,
    "n8n-nodes-base.n8nTrainingCustomerDatastore" => training::customer_datastore,
    "n8n-nodes-base.n8nTrainingCustomerMessenger" => training::customer_messenger,
    "n8n-nodes-base.itemLists" => item_lists::execute,
    "n8n-nodes-base.compareDatasets" => compare_datasets::execute,
    "n8n-nodes-base.renameKeys" => rename_keys::execute,
    "n8n-nodes-base.xml" => xml::execute,
    "n8n-nodes-base.markdown" => markdown::execute,
    "n8n-nodes-base.debugHelper" => debug_helper::execute,
    "n8n-nodes-base.executionData" => misc::execution_data,
    "n8n-nodes-base.emailSend" => email_send::execute,
    "n8n-nodes-base.postgres" => sql::postgres_node,
    "n8n-nodes-base.mySql" => sql::mysql_node,
    "@n8n/n8n-nodes-langchain.agent" => ai::agent::agent,
    "@n8n/n8n-nodes-langchain.chainLlm" => ai::agent::chain_llm,
    "@n8n/n8n-nodes-langchain.textClassifier" => ai::chains::text_classifier,
    "@n8n/n8n-nodes-langchain.informationExtractor" => ai::chains::information_extractor,
    ai::tool_step::EXECUTOR_TYPE => ai::tool_step::execute,
}

/// A credential type's connection test over its own protocol
/// (`CredentialTest::Connection`): a message when it passes.
pub(crate) fn connection_test(env: &Env, cred_type: &str, data: &Value) -> std::result::Result<String, String> {
    match cred_type {
        "smtp" => email_send::test(env, data),
        "postgres" | "mySql" => sql::test(env, cred_type, data),
        other => Err(format!("{other} credentials have no connection test")),
    }
}

/// Node types that never execute (canvas annotations).
pub fn is_annotation(node_type: &str) -> bool {
    node_type == "n8n-nodes-base.stickyNote"
}

/// Everything a node sees while it runs.
pub struct NodeContext<'a> {
    pub graph: &'a Graph,
    pub node: &'a Node,
    pub run_data: &'a RunData,
    /// Owned so a node that is the last reader can take its input without copying.
    pub inputs: Vec<Option<Items>>,
    pub source: &'a [Option<TaskSource>],
    pub run_index: usize,
    pub expr: &'a mut Expr,
    pub env: &'a Env,
    pub execution_id: &'a str,
    /// Persistent per-node context (Split In Batches).
    pub node_state: &'a mut Value,
    /// The other nodes' persistent contexts (`$node["X"].context`).
    pub node_contexts: &'a std::collections::BTreeMap<String, Value>,
    /// The execution's custom data (Execution Data node).
    pub custom_data: &'a mut crate::data::CustomData,
    pub static_data: &'a mut Value,
    /// Set when a parked Wait node resumes.
    pub resumed: bool,
    pub console: Vec<String>,
    /// Positions in output 0 of items that carry a per-item error. The
    /// executor routes error items by their content, as n8n does (see
    /// `run::split_error_output`); this only records what the node reported.
    pub error_items: Vec<usize>,
    pub webhook_response: Option<Value>,
    /// Task metadata the node sets (Execute Workflow's sub-execution link).
    pub metadata: Option<crate::data::TaskMetadata>,
    /// Set while a tool sub-node runs for a model's call: its `$fromAI` values.
    pub from_ai: Option<Value>,
    /// Calls this (root) node made of its sub-nodes, in call order; the
    /// executor appends them to run data (`ai::SubRuns`).
    pub sub_runs: ai::SubRuns,
}

static EMPTY: [Item; 0] = [];

/// `$itemIndex` of item `item` of `input` (-1 when there are no items).
pub(crate) fn item_index(input: &[Item], item: usize) -> i64 {
    if input.is_empty() {
        -1
    } else {
        item as i64
    }
}

impl<'a> NodeContext<'a> {
    /// Items on input `i` (a shared handle; empty when the input got nothing).
    pub fn input(&self, i: usize) -> Items {
        self.inputs.get(i).cloned().flatten().unwrap_or_default()
    }

    pub fn input_arc(&self, i: usize) -> Option<Items> {
        self.inputs.get(i).cloned().flatten()
    }

    /// Takes input `i` by value: free when nothing else holds it (lean run
    /// data, single reader), a copy otherwise. Expressions evaluated after
    /// this must use `resolve_in` with the taken items.
    pub fn take_input(&mut self, i: usize) -> Vec<Item> {
        match self.inputs.get_mut(i).and_then(|s| s.take()) {
            Some(arc) => Arc::try_unwrap(arc).unwrap_or_else(|a| a.as_ref().clone()),
            None => vec![],
        }
    }

    /// Runs `f` with the expression engine and a data proxy over `input`
    /// (input 0 when `None`) at the item index `item` picks for it.
    fn with_proxy<R>(&mut self, input: Option<&[Item]>, item: impl FnOnce(&[Item]) -> i64, f: impl FnOnce(&mut Expr, &NodeProxy) -> R) -> R {
        let input = input.unwrap_or(match self.inputs.first() {
            Some(Some(i)) => i.as_slice(),
            _ => &EMPTY,
        });
        let proxy = NodeProxy {
            graph: self.graph,
            run_data: self.run_data,
            node: self.node,
            input,
            source: self.source,
            item_index: item(input),
            run_index: self.run_index,
            execution_id: self.execution_id,
            mode: &self.env.settings.mode,
            node_contexts: Some(self.node_contexts),
            own_context: Some(&*self.node_state),
            public_url: self.env.settings.public_url.as_deref(),
            from_ai: self.from_ai.as_ref(),
        };
        f(self.expr, &proxy)
    }

    /// Resolves `v` for item `item` of `input` (the node's first input, possibly taken).
    pub fn resolve_in(&mut self, input: &[Item], v: &Value, item: usize) -> Result<Value> {
        if !crate::expr::has_expression(v) {
            return Ok(v.clone());
        }
        self.with_proxy(Some(input), |i| item_index(i, item), |e, p| e.resolve(v, p))
    }

    /// True when expressions of this node may read items other than their own
    /// (then inputs must not be modified in place).
    pub fn reads_other_items(&self) -> bool {
        let s = self.node.parameters.to_string();
        ["$input", "$items", "$(", "$node", "items[", "$prevNode"].iter().any(|m| s.contains(m))
    }

    pub fn version(&self) -> f64 {
        self.node.type_version
    }

    pub fn continue_on_fail(&self) -> bool {
        self.node.on_error() != OnError::StopWorkflow
    }

    /// The current instant: the system clock, or `EngineSettings::clock` when frozen.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.env.settings.now()
    }

    pub fn timezone(&self) -> String {
        self.graph.workflow.settings.timezone.clone().unwrap_or_else(|| self.env.settings.timezone.clone())
    }

    /// Raw parameter at a dotted path (`options.ignoreCase`).
    pub fn raw(&self, path: &str) -> Option<&'a Value> {
        let mut v = &self.node.parameters;
        for seg in path.split('.') {
            v = v.get(seg)?;
        }
        Some(v)
    }

    /// Resolves any value against item `item` of input 0.
    pub fn resolve(&mut self, v: &Value, item: usize) -> Result<Value> {
        if !crate::expr::has_expression(v) {
            return Ok(v.clone());
        }
        self.with_proxy(None, |i| item_index(i, item), |e, p| e.resolve(v, p))
    }

    /// Resolved parameter, `None` when absent.
    pub fn param_opt(&mut self, path: &str, item: usize) -> Result<Option<Value>> {
        match self.raw(path) {
            Some(v) => self.resolve(v, item).map(Some),
            None => Ok(None),
        }
    }

    pub fn param(&mut self, path: &str, item: usize, default: Value) -> Result<Value> {
        Ok(self.param_opt(path, item)?.unwrap_or(default))
    }

    pub fn param_str(&mut self, path: &str, item: usize, default: &str) -> Result<String> {
        Ok(match self.param_opt(path, item)? {
            None | Some(Value::Null) => default.to_string(),
            Some(Value::String(s)) => s,
            Some(v) => v.to_string(),
        })
    }

    pub fn param_bool(&mut self, path: &str, item: usize, default: bool) -> Result<bool> {
        Ok(match self.param_opt(path, item)? {
            Some(Value::Bool(b)) => b,
            Some(Value::String(s)) => s == "true",
            Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0) != 0.0,
            _ => default,
        })
    }

    pub fn param_f64(&mut self, path: &str, item: usize, default: f64) -> Result<f64> {
        Ok(match self.param_opt(path, item)? {
            Some(Value::Number(n)) => n.as_f64().unwrap_or(default),
            Some(Value::String(s)) => s.trim().parse().unwrap_or(default),
            _ => default,
        })
    }

    /// Runs Code node JavaScript against input 0.
    pub fn run_code(&mut self, code: &str, mode: expression::CodeMode, item: i64) -> Result<expression::CodeOutput> {
        self.with_proxy(None, |_| item, |e, p| e.run_code(code, mode, p))
    }

    /// Runs `runOnceForAllItems` Code node JavaScript against input 0; the
    /// result comes back as items (see `expression::Evaluator::run_code_items`).
    pub fn run_code_items(&mut self, code: &str, item: i64) -> Result<(Vec<Item>, Vec<String>)> {
        self.with_proxy(None, |_| item, |e, p| e.run_code_items(code, p))
    }

    /// Runs a complete script function (see `expression::Evaluator::run_function_items`)
    /// against `input` as the node's input, item `item` current.
    pub fn run_script_items(&mut self, source: &str, input: &[Item], item: i64) -> Result<(Vec<Item>, Vec<String>)> {
        self.with_proxy(Some(input), |_| item, |e, p| e.run_function_items(source, p))
    }

    /// Error item for item `i` when the node continues on failure.
    pub fn error_item(&mut self, out: &mut Vec<Item>, err: &EngineError, i: usize) {
        self.error_items.push(out.len());
        let mut m = Map::new();
        m.insert("error".into(), Value::String(err.to_string()));
        out.push(crate::data::item_from(Value::Object(m), i));
    }

    pub fn fail(&self, message: impl Into<String>) -> EngineError {
        EngineError::node(message)
    }

    /// The decrypted credential of `cred_type` the node selects, from the host.
    pub fn credential(&self, cred_type: &str) -> Result<Value> {
        let reference = self.node.credentials.as_ref().and_then(|c| c.get(cred_type)).cloned().unwrap_or(Value::Null);
        let provider = self.env.host.credentials.clone().ok_or_else(|| EngineError::Host("no credentials provider configured".into()))?;
        provider.get(cred_type, &reference).map_err(|e| EngineError::node(format!("Node does not have credentials of type {cred_type}: {e}")))
    }
}

/// `a.b.c` lookup in a JSON value (n8n's lodash `get` with dot notation).
pub fn get_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    if let Some(x) = v.get(path) {
        return Some(x);
    }
    let mut cur = v;
    for seg in split_path(path) {
        cur = match cur {
            Value::Object(o) => o.get(seg.as_str())?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn split_path(path: &str) -> Vec<String> {
    // `a.b[0].c` and `a["b"]` → segments
    let mut out = vec![];
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    inner.push(c);
                }
                out.push(inner.trim_matches(|c| c == '"' || c == '\'').to_string());
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Sets `a.b.c` in an object, creating intermediate objects.
pub fn set_path(v: &mut Value, path: &str, value: Value) {
    if !path.contains(['.', '[']) {
        if let Value::Object(o) = v {
            o.insert(path.to_string(), value);
            return;
        }
    }
    let segs = split_path(path);
    let mut cur = v;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(o) = cur else { return };
        if i == segs.len() - 1 {
            o.insert(seg.clone(), value);
            return;
        }
        cur = o.entry(seg.clone()).or_insert_with(|| Value::Object(Map::new()));
    }
}

/// Removes `a.b.c` from an object.
pub fn remove_path(v: &mut Value, path: &str) {
    let segs = split_path(path);
    let mut cur = v;
    for (i, seg) in segs.iter().enumerate() {
        let Value::Object(o) = cur else { return };
        if i == segs.len() - 1 {
            o.shift_remove(seg.as_str());
            return;
        }
        match o.get_mut(seg.as_str()) {
            Some(n) => cur = n,
            None => return,
        }
    }
}

/// A parameter that is a list of strings, given either as an array or as a
/// comma-separated string (n8n's `fieldsToInclude` etc.).
pub fn string_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => s.trim().to_string(),
                other => other.to_string(),
            })
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::String(s)) => s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
        _ => vec![],
    }
}

/// JavaScript-style string of a value (`String(v)`).
pub fn js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Number(n) => crate::nodes::conditions::num_to_string(n.as_f64().unwrap_or(0.0), n),
        other => other.to_string(),
    }
}
