//! The workflow model: n8n workflow JSON (nodes, connections, settings) and
//! the graph queries the executor needs.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub enum OnError {
    #[default]
    StopWorkflow,
    ContinueRegularOutput,
    ContinueErrorOutput,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    #[serde(default)]
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub node_type: String,
    #[serde(default = "one")]
    pub type_version: f64,
    #[serde(default = "empty_object")]
    pub parameters: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Value>,
    #[serde(default)]
    pub disabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(default)]
    pub always_output_data: bool,
    #[serde(default)]
    pub execute_once: bool,
    #[serde(default)]
    pub retry_on_fail: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tries: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_between_tries: Option<u64>,
    /// Legacy flag, equivalent to `onError: continueRegularOutput`.
    #[serde(default)]
    pub continue_on_fail: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<String>,
}

fn one() -> f64 {
    1.0
}
fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl Node {
    pub fn on_error(&self) -> OnError {
        match self.on_error {
            Some(e) => e,
            None if self.continue_on_fail => OnError::ContinueRegularOutput,
            None => OnError::StopWorkflow,
        }
    }

    /// `[x, y]` canvas position; v1 order uses it to break ties.
    pub fn pos(&self) -> (f64, f64) {
        let p = self.position.as_ref().and_then(|p| p.as_array());
        let g = |i: usize| p.and_then(|a| a.get(i)).and_then(|v| v.as_f64()).unwrap_or(0.0);
        (g(0), g(1))
    }
}

/// One edge end: `{node, type, index}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionTarget {
    pub node: String,
    #[serde(rename = "type", default = "main_str")]
    pub conn_type: String,
    #[serde(default)]
    pub index: usize,
}

fn main_str() -> String {
    "main".into()
}

/// source node → connection type (`main`, `ai_tool`, ...) → output index → targets.
pub type Connections = BTreeMap<String, BTreeMap<String, Vec<Option<Vec<ConnectionTarget>>>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ExecutionOrder {
    /// Legacy breadth-first order (workflows saved without `executionOrder`).
    #[default]
    #[serde(rename = "v0")]
    V0,
    /// Depth-first; multi-input nodes wait for their inputs.
    #[serde(rename = "v1")]
    V1,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    #[serde(default)]
    pub execution_order: ExecutionOrder,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Seconds; -1 or absent = no workflow-level timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_timeout: Option<i64>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    pub nodes: Vec<Node>,
    #[serde(default)]
    pub connections: Connections,
    #[serde(default, deserialize_with = "null_default")]
    pub settings: Settings,
    /// Pin data saved with the workflow: node name → items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_data: Option<BTreeMap<String, Vec<expression::Item>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_data: Option<Value>,
}

fn null_default<'de, D: serde::Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> std::result::Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Workflow plus the indexes the executor queries on every step.
#[derive(Debug, Clone)]
pub struct Graph {
    pub workflow: Workflow,
    by_name: HashMap<String, usize>,
    /// destination → list of (source, source output, destination input) over `main`.
    parents: HashMap<String, Vec<(String, usize, usize)>>,
}

/// Node types that start an execution.
pub fn is_trigger_type(t: &str) -> bool {
    let short = t.rsplit('.').next().unwrap_or(t);
    short.ends_with("Trigger") || short == "webhook" || short == "start" || short == "n8nTrigger"
}

impl Graph {
    pub fn new(workflow: Workflow) -> Result<Self> {
        let mut by_name = HashMap::new();
        for (i, n) in workflow.nodes.iter().enumerate() {
            if by_name.insert(n.name.clone(), i).is_some() {
                return Err(EngineError::InvalidWorkflow(format!("duplicate node name \"{}\"", n.name)));
            }
        }
        let mut parents: HashMap<String, Vec<(String, usize, usize)>> = HashMap::new();
        for (src, types) in &workflow.connections {
            if !by_name.contains_key(src) {
                return Err(EngineError::InvalidWorkflow(format!("connection from unknown node \"{src}\"")));
            }
            for (ty, outs) in types {
                for (out, targets) in outs.iter().enumerate() {
                    for t in targets.iter().flatten() {
                        if !by_name.contains_key(&t.node) {
                            return Err(EngineError::InvalidWorkflow(format!(
                                "connection from \"{src}\" to unknown node \"{}\"",
                                t.node
                            )));
                        }
                        if ty == "main" {
                            parents.entry(t.node.clone()).or_default().push((src.clone(), out, t.index));
                        }
                    }
                }
            }
        }
        Ok(Graph { workflow, by_name, parents })
    }

    pub fn from_json(json: &Value) -> Result<Self> {
        let wf: Workflow = serde_json::from_value(json.clone())
            .map_err(|e| EngineError::InvalidWorkflow(e.to_string()))?;
        Self::new(wf)
    }

    pub fn node(&self, name: &str) -> Option<&Node> {
        self.by_name.get(name).map(|&i| &self.workflow.nodes[i])
    }

    pub fn node_or_err(&self, name: &str) -> Result<&Node> {
        self.node(name).ok_or_else(|| EngineError::NodeNotFound(name.to_string()))
    }

    pub fn nodes(&self) -> &[Node] {
        &self.workflow.nodes
    }

    /// Targets of `node`'s main output `output`.
    pub fn children(&self, node: &str, output: usize) -> &[ConnectionTarget] {
        self.workflow
            .connections
            .get(node)
            .and_then(|t| t.get("main"))
            .and_then(|outs| outs.get(output))
            .and_then(|o| o.as_deref())
            .unwrap_or(&[])
    }

    /// Number of main outputs that have connections.
    pub fn output_count(&self, node: &str) -> usize {
        self.workflow.connections.get(node).and_then(|t| t.get("main")).map(|o| o.len()).unwrap_or(0)
    }

    /// Whether any main output of `node` leads anywhere (else it is a leaf).
    pub fn has_children(&self, node: &str) -> bool {
        (0..self.output_count(node)).any(|o| !self.children(node, o).is_empty())
    }

    /// `(source, source_output, input_index)` for every main edge into `node`.
    pub fn parents(&self, node: &str) -> &[(String, usize, usize)] {
        self.parents.get(node).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Distinct input indexes of `node` that have a connection.
    pub fn connected_inputs(&self, node: &str) -> Vec<usize> {
        let mut v: Vec<usize> = self.parents(node).iter().map(|p| p.2).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// All ancestors of `node` over main connections (not including itself).
    pub fn ancestors(&self, node: &str) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![node.to_string()];
        let mut out = vec![];
        while let Some(n) = stack.pop() {
            for (p, _, _) in self.parents(&n) {
                if seen.insert(p.clone()) {
                    out.push(p.clone());
                    stack.push(p.clone());
                }
            }
        }
        out
    }

    /// Sub-nodes of `root` on connection type `conn_type` (`ai_languageModel`,
    /// `ai_tool`, …), enabled ones only, in the order the connections list them.
    pub fn sub_nodes(&self, root: &str, conn_type: &str) -> Vec<&Node> {
        let mut out = vec![];
        for (src, types) in &self.workflow.connections {
            let Some(outs) = types.get(conn_type) else { continue };
            if outs.iter().flatten().flatten().any(|t| t.node == root) {
                if let Some(n) = self.node(src).filter(|n| !n.disabled) {
                    out.push(n);
                }
            }
        }
        out
    }

    /// A node that supplies a service to another over a non-`main`
    /// connection: the stack never runs it, its root calls it.
    pub fn is_sub_node(&self, name: &str) -> bool {
        self.workflow.connections.get(name).is_some_and(|types| types.iter().any(|(ty, outs)| ty != "main" && outs.iter().flatten().flatten().next().is_some()))
    }

    /// The trigger to start from: a named one, else the first enabled trigger,
    /// else the first enabled node without parents.
    pub fn start_node(&self, name: Option<&str>) -> Result<&Node> {
        if let Some(n) = name {
            return self.node_or_err(n);
        }
        let enabled = || self.workflow.nodes.iter().filter(|n| !n.disabled);
        enabled()
            .find(|n| is_trigger_type(&n.node_type))
            .or_else(|| enabled().find(|n| self.parents(&n.name).is_empty() && !n.node_type.ends_with("stickyNote") && !self.is_sub_node(&n.name)))
            .ok_or_else(|| EngineError::InvalidWorkflow("workflow has no trigger or start node".into()))
    }
}
