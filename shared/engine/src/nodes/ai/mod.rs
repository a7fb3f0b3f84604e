//! AI nodes (n8n's `@n8n/n8n-nodes-langchain` package): root nodes (AI
//! Agent, Basic LLM Chain) and the sub-nodes that hang off them over
//! `ai_languageModel`, `ai_memory`, `ai_tool` and `ai_outputParser`
//! connections. The stack never runs a sub-node; its root builds the
//! sub-node's service in a context of its own (parameters resolve against the
//! root's current input item, as n8n's supply-data contexts do) and every
//! call is recorded as a run of that sub-node: its input under
//! `inputOverride`, its output under the connection type, in call order.
//!
//! model.rs: chat models (on the `models` crate's providers, or the host's)
//! over the engine's SSRF-guarded transport; agent.rs: the tools agent and
//! the LLM chain; chains.rs: Text Classifier and Information Extractor;
//! memory.rs: window buffer memory over the host's `ChatMemoryStore`;
//! tools.rs: tools and their schemas (`$fromAI`); calculator.rs: the
//! Calculator tool's arithmetic; output_parser.rs: the structured output parser;
//! tool_step.rs: a run-step on a tool (n8n's Tool Executor).

pub mod agent;
pub mod calculator;
pub mod mcp_client_tool;
pub mod chains;
pub mod memory;
pub mod model;
pub mod output_parser;
pub mod tool_step;
pub mod tools;

use std::time::Instant;

use serde_json::Value;

use super::{NodeContext, NodeOutput};
use crate::data::{ExecutionState, ExecutionStatus, Item, TaskData, TaskOutputs, TaskSource, TokenUsage};
use crate::error::{EngineError, Result};
use crate::workflow::Node;

pub const LANGUAGE_MODEL: &str = "ai_languageModel";
pub const MEMORY: &str = "ai_memory";
pub const TOOL: &str = "ai_tool";
pub const OUTPUT_PARSER: &str = "ai_outputParser";

/// Sub-node types and the connection type each supplies.
pub fn sub_node_kind(node_type: &str) -> Option<&'static str> {
    Some(match node_type {
        "@n8n/n8n-nodes-langchain.lmChatOpenAi"
        | "@n8n/n8n-nodes-langchain.lmChatAnthropic"
        | "@n8n/n8n-nodes-langchain.lmChatOllama"
        | "@n8n/n8n-nodes-langchain.lmChatAwsBedrock" => LANGUAGE_MODEL,
        "@n8n/n8n-nodes-langchain.memoryBufferWindow" => MEMORY,
        "@n8n/n8n-nodes-langchain.toolCalculator"
        | "@n8n/n8n-nodes-langchain.toolCode"
        | "@n8n/n8n-nodes-langchain.toolHttpRequest"
        | "@n8n/n8n-nodes-langchain.toolWorkflow"
        | "n8n-nodes-base.httpRequestTool"
        | "@n8n/n8n-nodes-langchain.mcpClientTool" => TOOL,
        "@n8n/n8n-nodes-langchain.outputParserStructured" => OUTPUT_PARSER,
        _ => return None,
    })
}

/// What the stack runs for a sub-node type: it never should (a sub-node has
/// no main input), so a sub-node that ends up on the stack fails clearly.
pub fn sub_node(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Err(EngineError::node(format!(
        "\"{}\" is a sub-node: it runs only as part of the AI node it is connected to (connect it to an AI Agent or Basic LLM Chain)",
        ctx.node.name
    )))
}

/// Sub-node calls a root made while it ran, and the tokens its models used.
#[derive(Debug, Default)]
pub struct SubRuns {
    runs: Vec<(String, TaskData)>,
    tokens: TokenUsage,
    /// Metadata the last sub-node context set (a tool's sub-workflow link), for its call's record.
    metadata: Option<crate::data::TaskMetadata>,
}

impl SubRuns {
    pub fn append(&mut self, other: &mut SubRuns) {
        self.runs.append(&mut other.runs);
        self.tokens.add(std::mem::take(&mut other.tokens));
        if other.metadata.is_some() {
            self.metadata = other.metadata.take();
        }
    }

    /// Appends the calls to run data (each a run of its sub-node) and the tokens to the execution.
    pub(crate) fn record_into(self, st: &mut ExecutionState) {
        for (node, task) in self.runs {
            st.run_data.entry(node).or_default().push(task);
        }
        st.token_usage.add(self.tokens);
    }

    fn runs_of(&self, node: &str) -> usize {
        self.runs.iter().filter(|(n, _)| n == node).count()
    }
}

/// One call in progress: when it started, what went in.
pub(crate) struct Call {
    node: String,
    conn_type: &'static str,
    input: Value,
    start_ms: i64,
    t0: Instant,
}

impl<'a> NodeContext<'a> {
    /// The enabled sub-nodes of this node on `conn_type`.
    pub(crate) fn sub_nodes(&self, conn_type: &str) -> Vec<&'a Node> {
        self.graph.sub_nodes(&self.node.name, conn_type)
    }

    /// Runs `f` in a context of `sub`: its parameters resolve against this
    /// node's input (item indexes as the root's), `from_ai` are a tool
    /// call's arguments. `sub` may be a node the workflow does not hold (a
    /// tool's request as an HTTP Request node).
    pub(crate) fn with_sub_node<R>(&mut self, sub: &Node, from_ai: Option<Value>, f: impl FnOnce(&mut NodeContext<'_>) -> Result<R>) -> Result<R> {
        let mut state = Value::Null;
        let run_index = self.run_data.get(&sub.name).map(|r| r.len()).unwrap_or(0) + self.sub_runs.runs_of(&sub.name);
        let mut child = NodeContext {
            graph: self.graph,
            node: sub,
            run_data: self.run_data,
            inputs: self.inputs.clone(),
            source: self.source,
            run_index,
            expr: &mut *self.expr,
            env: self.env,
            execution_id: self.execution_id,
            node_state: &mut state,
            node_contexts: self.node_contexts,
            custom_data: &mut *self.custom_data,
            static_data: &mut *self.static_data,
            resumed: false,
            console: vec![],
            error_items: vec![],
            webhook_response: None,
            metadata: None,
            from_ai,
            sub_runs: SubRuns::default(),
        };
        let r = f(&mut child);
        let mut nested = std::mem::take(&mut child.sub_runs);
        nested.metadata = child.metadata.take().or(nested.metadata.take());
        let console = std::mem::take(&mut child.console);
        self.console.extend(console);
        self.sub_runs.append(&mut nested);
        r
    }

    /// Starts recording a call of sub-node `node` with `input` (one item's json).
    pub(crate) fn begin_call(&self, node: &str, conn_type: &'static str, input: Value) -> Call {
        Call { node: node.to_owned(), conn_type, input, start_ms: crate::data::now_ms(), t0: Instant::now() }
    }

    /// Records the call's outcome (its output items' json) as a run of its sub-node.
    pub(crate) fn end_call(&mut self, call: Call, outcome: std::result::Result<Vec<Value>, &EngineError>) {
        let source = vec![Some(TaskSource { previous_node: self.node.name.clone(), previous_node_output: 0, previous_node_run: self.run_index })];
        let (status, data, error) = match outcome {
            Ok(out) => (ExecutionStatus::Success, Some(TaskOutputs::of_type(call.conn_type, out.into_iter().map(Item::new).collect())), None),
            Err(e) => (ExecutionStatus::Error, None, Some(crate::run::error_data(e, Some(&call.node)))),
        };
        let task = TaskData {
            start_time: call.start_ms,
            execution_time: call.t0.elapsed().as_millis() as u64,
            execution_status: status,
            source,
            data,
            error,
            console: vec![],
            released_items: None,
            origin: None,
            metadata: self.sub_runs.metadata.take(),
            input_override: Some(TaskOutputs::of_type(call.conn_type, vec![Item::new(call.input)])),
        };
        self.sub_runs.runs.push((call.node, task));
    }

    /// [`Self::end_call`] for a call that returns one item.
    pub(crate) fn end_call_one(&mut self, call: Call, outcome: std::result::Result<&Value, &EngineError>) {
        self.end_call(call, outcome.map(|v| vec![v.clone()]))
    }

    pub(crate) fn add_tokens(&mut self, usage: TokenUsage) {
        self.sub_runs.tokens.add(usage);
    }
}

/// n8n's `nodeNameToToolName`: the name a model calls a tool node by.
pub fn tool_name(node_name: &str) -> String {
    let mut out = String::with_capacity(node_name.len());
    for c in node_name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out
}

/// A parameter that may be a resource locator (`{__rl, value, mode}`) or a plain value.
pub(crate) fn locator_value(v: &Value) -> String {
    match v {
        Value::Object(o) => o.get("value").map(super::js_string).unwrap_or_default(),
        other => super::js_string(other),
    }
}
