//! Node catalog operations, the agent's `nodes` tool and the MCP builder
//! tools over one home: list, describe, type definitions, ranked search with
//! builder hints, curated suggestions, dynamic resources, and running one
//! node standalone (`execute`). The descriptions are the engine's
//! (`engine::catalog`); this module shapes them for an agent.

use crate::catalog::{credential_types, describe_exact};
use crate::executions::view::{self, Values};
use crate::{runner, Caller, Instance, InstanceError};
use engine::catalog::{self, NodeDescription, NodeProperty};
use executions::{ExecutionStatus, StartRequest, WorkflowRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::time::Duration;
use store::data::executions::{DataSelection, ExecutionMode};

/// AI sub-node connection types a search can filter by.
pub const AI_CONNECTION_TYPES: &[&str] = &[
    "ai_agent",
    "ai_chain",
    "ai_document",
    "ai_embedding",
    "ai_languageModel",
    "ai_memory",
    "ai_outputParser",
    "ai_retriever",
    "ai_reranker",
    "ai_textSplitter",
    "ai_tool",
    "ai_vectorStore",
];

/// The longest `nodes(execute)` run.
pub const MAX_EXECUTE_TIMEOUT: Duration = Duration::from_secs(60);
/// Items of a `nodes(execute)` output shown to the model.
pub const MAX_OUTPUT_ITEMS: usize = 20;
/// Characters of serialized output shown to the model.
pub const MAX_OUTPUT_CHARS: usize = 20_000;

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeListEntry {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub group: Vec<String>,
    pub version: f64,
}

/// `nodes(list)`: every node type, or those whose name or description
/// holds the query (case-insensitive).
pub fn list(query: Option<&str>) -> Vec<NodeListEntry> {
    let q = query.map(|q| q.trim().to_lowercase()).filter(|q| !q.is_empty());
    catalog::all()
        .iter()
        .filter(|d| {
            q.as_deref().is_none_or(|q| {
                d.name.to_lowercase().contains(q) || d.display_name.to_lowercase().contains(q) || d.description.to_lowercase().contains(q)
            })
        })
        .map(|d| NodeListEntry {
            name: d.name.clone(),
            display_name: d.display_name.clone(),
            description: d.description.clone(),
            group: d.group.clone(),
            version: d.latest_version(),
        })
        .collect()
}

/// The node type, or a not-found naming the way to find one.
pub fn node_type(name: &str) -> Result<&'static NodeDescription, InstanceError> {
    describe_exact(name).ok_or_else(|| {
        InstanceError::NotFound(format!("node type {name:?}; search the nodes for the right type name (e.g. n8n-nodes-base.httpRequest)"))
    })
}

/// `nodes(describe)`.
pub fn describe(name: &str) -> Result<Value, InstanceError> {
    let d = node_type(name)?;
    Ok(json!({
        "name": d.name,
        "displayName": d.display_name,
        "description": d.description,
        "version": d.version,
        "properties": d.properties,
        "credentials": d.credentials,
        "inputs": d.inputs,
        "outputs": d.outputs,
    }))
}

/// The builder hint of a node: its description's, else ours for core nodes.
pub fn builder_hint(d: &NodeDescription) -> Option<String> {
    if let Some(m) = d.builder_hint.as_ref().and_then(|h| h.get("message").or(Some(h))).and_then(Value::as_str) {
        return Some(m.to_owned());
    }
    let hint = match d.name.as_str() {
        "n8n-nodes-base.httpRequest" => "Call any service's API. Put keys and tokens in a credential (authentication: genericCredentialType + genericAuthType such as httpHeaderAuth), never in headers. Paged APIs: options.pagination.",
        "n8n-nodes-base.set" => "Map or add fields with assignments (mode manual); includeOtherFields keeps the input's fields.",
        "n8n-nodes-base.code" => "Use when no node fits; JavaScript returns [{json: {...}}]. Prefer Set, If, Filter for simple shaping.",
        "n8n-nodes-base.if" => "Two outputs: 0 = true, 1 = false. Join branches again with Merge.",
        "n8n-nodes-base.switch" => "One output per rule (plus an optional fallback); route by value.",
        "n8n-nodes-base.merge" => "Joins two (or numberInputs) branches: append, combine by fields or position, or SQL-like.",
        "n8n-nodes-base.splitInBatches" => "Loop: output 1 = the current batch (connect it to the work, and the work back to this node), output 0 = done.",
        "n8n-nodes-base.webhook" => "Starts the workflow on an HTTP call; answer with Respond to Webhook when responseMode is responseNode.",
        "n8n-nodes-base.scheduleTrigger" => "Starts the workflow on a schedule (interval or cron).",
        "n8n-nodes-base.dataTable" => "Rows of this instance's data tables: insert, get, update, upsert, delete (options.dryRun previews a write). resource table: create (options.createIfNotExists reuses a table of that name), list, update (rename), clear, delete.",
        "n8n-nodes-base.wait" => "Pauses the execution; long waits park it without holding compute.",
        _ => return None,
    };
    Some(hint.to_owned())
}

/// `resource` values and the operations each shows.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ResourceOperations {
    pub name: String,
    pub operations: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Discriminators {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceOperations>,
    /// Operations of a node without resources.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operations: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
}

fn option_values(p: &NodeProperty) -> Vec<String> {
    p.options
        .iter()
        .flatten()
        .filter_map(|o| o.get("value"))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .collect()
}

fn shows_for(p: &NodeProperty, field: &str, value: &str) -> bool {
    match p.display_options.as_ref().and_then(|d| d.pointer(&format!("/show/{field}"))).and_then(Value::as_array) {
        Some(allowed) => allowed.iter().any(|a| a.as_str() == Some(value)),
        None => true,
    }
}

/// The node's `resource` / `operation` / `mode` discriminators, if any.
pub fn discriminators(d: &NodeDescription) -> Option<Discriminators> {
    let options = |name: &str| d.properties.iter().filter(|p| p.name == name && p.prop_type == "options").collect::<Vec<_>>();
    let resources: Vec<ResourceOperations> = options("resource")
        .into_iter()
        .flat_map(option_values)
        .map(|r| ResourceOperations {
            operations: options("operation").into_iter().filter(|p| shows_for(p, "resource", &r)).flat_map(option_values).collect(),
            name: r,
        })
        .collect();
    let operations = if resources.is_empty() { options("operation").into_iter().flat_map(option_values).collect() } else { Vec::new() };
    let mut modes: Vec<String> = options("mode").into_iter().flat_map(option_values).collect();
    modes.dedup();
    (!resources.is_empty() || !operations.is_empty() || !modes.is_empty()).then_some(Discriminators { resources, operations, modes })
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubnodeRequirement {
    pub connection_type: String,
    pub required: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub version: f64,
    pub score: u32,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub builder_hint_message: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subnode_requirements: Vec<SubnodeRequirement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discriminators: Option<Discriminators>,
    /// Credential types the node accepts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<String>,
}

fn hit(score: u32, d: &NodeDescription) -> SearchHit {
    SearchHit {
        name: d.name.clone(),
        display_name: d.display_name.clone(),
        description: d.description.clone(),
        version: d.latest_version(),
        score,
        inputs: d.inputs.clone(),
        outputs: d.outputs.clone(),
        builder_hint_message: builder_hint(d),
        subnode_requirements: d
            .inputs
            .iter()
            .filter(|i| i.as_str() != "main")
            .map(|i| SubnodeRequirement { connection_type: i.clone(), required: true })
            .collect(),
        discriminators: discriminators(d),
        credentials: credential_types(d),
    }
}

/// `nodes(search)`: ranked matches (`limit` default 10), or the sub-nodes of
/// an AI connection type (nodes whose output is that connection), filtered
/// by the query when one is given. `(results, totalResults)`.
pub fn search(query: Option<&str>, connection_type: Option<&str>, limit: Option<usize>) -> Result<(Vec<SearchHit>, usize), InstanceError> {
    let limit = limit.unwrap_or(10).clamp(1, 100);
    let query = query.map(str::trim).filter(|q| !q.is_empty());
    let mut hits: Vec<SearchHit> = match (connection_type, query) {
        (Some(ct), q) => {
            if !AI_CONNECTION_TYPES.contains(&ct) {
                return Err(InstanceError::Invalid(format!("unknown connectionType {ct:?}; one of {}", AI_CONNECTION_TYPES.join(", "))));
            }
            let scored: Vec<(u32, &NodeDescription)> = match q {
                Some(q) => catalog::search_scored(q),
                None => catalog::all().iter().map(|&d| (0, d)).collect(),
            };
            scored.into_iter().filter(|(_, d)| d.outputs.iter().any(|o| o == ct)).map(|(s, d)| hit(s, d)).collect()
        }
        (None, Some(q)) => catalog::search_scored(q).into_iter().map(|(s, d)| hit(s, d)).collect(),
        (None, None) => Vec::new(),
    };
    let total = hits.len();
    hits.truncate(limit);
    Ok((hits, total))
}

/// One `type-definition` request.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypeRequest {
    #[serde(alias = "nodeId")]
    pub node_type: String,
    /// A string (`"4.2"`) or a number.
    #[serde(default, deserialize_with = "version_text")]
    pub version: Option<String>,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub operation: Option<String>,
    #[serde(default)]
    pub mode: Option<String>,
}

fn version_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.trim_start_matches('v').to_owned()),
        Some(v) => Some(v.to_string()),
    })
}

impl TypeRequest {
    pub fn plain(node_type: impl Into<String>) -> Self {
        TypeRequest { node_type: node_type.into(), ..TypeRequest::default() }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TypeDefinition {
    pub node_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The parameters' TypeScript of one node, with its builder hints.
pub fn type_definition(r: &TypeRequest) -> TypeDefinition {
    let req = crate::catalog::NodeIdRequest {
        node_id: r.node_type.clone(),
        version: r.version.clone(),
        resource: r.resource.clone(),
        operation: r.operation.clone(),
        mode: r.mode.clone(),
    };
    match crate::catalog::type_definition_text(&req) {
        Ok((version, mut content)) => {
            let shared = crate::catalog::shared_types_for(&content);
            content.push_str(&shared);
            TypeDefinition { node_id: r.node_type.clone(), version: Some(version), content, error: None }
        }
        Err(e) => TypeDefinition { node_id: r.node_type.clone(), version: None, content: String::new(), error: Some(e) },
    }
}

/// Curated suggestions for one technique category.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suggestion {
    pub category: String,
    pub description: String,
    pub pattern_hint: String,
    pub suggested_nodes: Vec<SuggestedNode>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SuggestedNode {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The spec's technique categories, with this instance's nodes for them.
pub const CATEGORIES: &[&str] = &[
    "chatbot",
    "notification",
    "scheduling",
    "data_transformation",
    "data_persistence",
    "data_extraction",
    "document_processing",
    "form_input",
    "content_generation",
    "triage",
    "find_research",
];

type Row = (&'static str, &'static str, &'static str, &'static [(&'static str, &'static str)]);

/// `(category, description, pattern hint, [(node, note)])`.
const SUGGESTIONS: &[Row] = &[
    ("chatbot", "Conversational workflows that answer a user's messages.",
     "Chat Trigger → build the reply (Set, or a model API through HTTP Request) → answer; keep per-session state in a data table keyed by {{ $json.sessionId }}.",
     &[("@n8n/n8n-nodes-langchain.chatTrigger", "starts on each chat message"), ("n8n-nodes-base.set", "shape the reply"),
       ("n8n-nodes-base.httpRequest", "call a model API with an httpHeaderAuth credential"), ("n8n-nodes-base.dataTable", "session memory")]),
    ("notification", "Tell people or systems that something happened.",
     "Trigger (schedule or webhook) → decide with If → send with the service's node (Slack, Telegram, Discord), or HTTP Request to any other service's API.",
     &[("n8n-nodes-base.scheduleTrigger", None_), ("n8n-nodes-base.webhook", None_), ("n8n-nodes-base.if", "only notify when it matters"),
       ("n8n-nodes-base.slack", "post to a channel or a person (slackApi bot token)"), ("n8n-nodes-base.telegram", "a bot's message, photo or document"),
       ("n8n-nodes-base.discord", "a channel webhook or a bot"),
       ("n8n-nodes-base.httpRequest", "tokens in credentials (httpHeaderAuth), never in headers")]),
    ("scheduling", "Work that runs on a timetable.",
     "Schedule Trigger (rule.interval: [{ field: 'hours', hoursInterval: 1 }] or a cron expression) → work; Date & Time to format times; Wait to pause.",
     &[("n8n-nodes-base.scheduleTrigger", None_), ("n8n-nodes-base.dateTime", "format and compute dates"), ("n8n-nodes-base.wait", "pause between steps")]),
    ("data_transformation", "Reshape, filter, combine and summarize items.",
     "Set to map fields; Code for anything custom; Split Out / Aggregate / Summarize / Sort / Limit / Remove Duplicates for lists; Merge to join streams.",
     &[("n8n-nodes-base.set", None_), ("n8n-nodes-base.code", "custom logic"), ("n8n-nodes-base.splitOut", "array → items"),
       ("n8n-nodes-base.aggregate", "items → one list"), ("n8n-nodes-base.summarize", "group and count"), ("n8n-nodes-base.merge", "join branches")]),
    ("data_persistence", "Keep data between executions.",
     "Data Table node: insert, get, update, upsert and delete rows of this instance's data tables (create the table first).",
     &[("n8n-nodes-base.dataTable", "rows of a data table")]),
    ("data_extraction", "Pull structured data out of pages and APIs.",
     "HTTP Request to fetch → HTML (extractHtmlContent with CSS selectors) to scrape → Split Out to turn arrays into items.",
     &[("n8n-nodes-base.httpRequest", None_), ("n8n-nodes-base.html", "CSS selectors"), ("n8n-nodes-base.splitOut", None_)]),
    ("document_processing", "Read, convert and analyse files.",
     "Read files → Extract from File to parse (CSV, JSON, PDF text…) → Code or Set to shape → Convert to File to write back.",
     &[("n8n-nodes-base.readWriteFile", "files of the execution"), ("n8n-nodes-base.extractFromFile", "parse a file"),
       ("n8n-nodes-base.convertToFile", "write a file"), ("n8n-nodes-base.crypto", "hashes")]),
    ("form_input", "Collect input from people through a form.",
     "Form Trigger (formFields.values: [{ fieldLabel, fieldType, requiredField }]) → validate with If → store with Data Table.",
     &[("n8n-nodes-base.formTrigger", None_), ("n8n-nodes-base.if", "validate"), ("n8n-nodes-base.dataTable", "store the answers")]),
    ("content_generation", "Generate text or media with a model.",
     "Shape the prompt with Set → call a model API with HTTP Request (credential httpHeaderAuth or httpBearerAuth) → post-process with Code.",
     &[("n8n-nodes-base.set", "the prompt"), ("n8n-nodes-base.httpRequest", "the model API"), ("n8n-nodes-base.code", None_)]),
    ("triage", "Route items to the right place by their content.",
     "Switch to route by rules (one output per rule, optional fallback), If for yes/no, Filter to drop items.",
     &[("n8n-nodes-base.switch", None_), ("n8n-nodes-base.if", None_), ("n8n-nodes-base.filter", None_)]),
    ("find_research", "Search, page through and collect results.",
     "HTTP Request against a search API → Split In Batches to page → Aggregate to collect.",
     &[("n8n-nodes-base.httpRequest", "pagination options for paged APIs"), ("n8n-nodes-base.splitInBatches", None_), ("n8n-nodes-base.aggregate", None_)]),
];

// `""` reads better than `None` in the table above.
#[allow(non_upper_case_globals)]
const None_: &str = "";

/// `nodes(suggested)`: `(results, unknownCategories)`.
pub fn suggested(categories: &[String]) -> (Vec<Suggestion>, Vec<String>) {
    let mut results = Vec::new();
    let mut unknown = Vec::new();
    for c in categories {
        match SUGGESTIONS.iter().find(|(name, ..)| name == c) {
            Some((name, description, hint, nodes)) => results.push(Suggestion {
                category: (*name).to_owned(),
                description: (*description).to_owned(),
                pattern_hint: (*hint).to_owned(),
                suggested_nodes: nodes
                    .iter()
                    // A suggestion names only nodes this instance has.
                    .filter(|(n, _)| describe_exact(n).is_some())
                    .map(|(n, note)| SuggestedNode { name: (*n).to_owned(), note: (!note.is_empty()).then(|| (*note).to_owned()) })
                    .collect(),
            }),
            None => unknown.push(c.clone()),
        }
    }
    (results, unknown)
}

/// The dynamic lookup methods a node declares: `(method, "listSearch" | "loadOptions")`.
pub fn dynamic_methods(d: &NodeDescription) -> Vec<(String, &'static str)> {
    fn walk(v: &Value, out: &mut Vec<(String, &'static str)>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x.as_str()) {
                        ("loadOptionsMethod", Some(name)) => out.push((name.to_owned(), "loadOptions")),
                        ("searchListMethod", Some(name)) => out.push((name.to_owned(), "listSearch")),
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(&serde_json::to_value(&d.properties).unwrap_or(Value::Null), &mut out);
    out.sort();
    out.dedup();
    out
}

/// `nodes(explore-resources)` input.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExploreRequest {
    pub node_type: String,
    pub version: f64,
    pub method_name: String,
    pub method_type: String,
    pub credential_type: String,
    pub credential_id: String,
    #[serde(default)]
    pub filter: Option<String>,
    #[serde(default)]
    pub pagination_token: Option<String>,
    #[serde(default)]
    pub current_node_parameters: Option<Map<String, Value>>,
}

/// One `nodes(execute)` request: a workflow-sdk node.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecuteRequest {
    #[serde(rename = "type")]
    pub node_type: String,
    pub version: f64,
    pub config: NodeConfig,
    #[serde(default)]
    pub input: Option<Vec<Value>>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeConfig {
    pub parameters: Map<String, Value>,
    #[serde(default)]
    pub credentials: Option<Map<String, Value>>,
}

/// What a standalone node run produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecuteOutcome {
    /// The node's items (binary reduced to metadata), capped: `(items, total)`.
    Success { items: Vec<Value>, total: usize },
    /// It succeeded, but the instance withholds execution data from the
    /// assistant (`INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES=false`): how
    /// many items, never their values.
    Withheld { total: usize },
    Error { message: String, description: Option<String>, node_error_type: Option<String> },
}

/// The name the node runs under in its one-node workflow.
const NODE_NAME: &str = "Node";

impl ExecuteRequest {
    /// The node as workflow JSON.
    pub fn node(&self) -> Value {
        let mut n = json!({"name": NODE_NAME, "type": self.node_type, "typeVersion": self.version,
                           "parameters": self.config.parameters, "position": [200, 0]});
        if let Some(c) = &self.config.credentials {
            n["credentials"] = Value::Object(c.clone());
        }
        n
    }

    /// The value the grant key is scoped by: `resource:operation`, else the
    /// first of mode/url/query/command/action, else nothing.
    pub fn scope_value(&self) -> Option<String> {
        let p = &self.config.parameters;
        let text = |k: &str| p.get(k).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        if let (Some(r), Some(o)) = (text("resource"), text("operation")) {
            return Some(format!("{r}:{o}"));
        }
        ["mode", "url", "query", "command", "action"].iter().find_map(|k| text(k))
    }
}

/// Checks a standalone node before anyone is asked: the type exists and
/// may run alone, the version is supported, the parameters fit the
/// schema (field-level messages), credentials are stored references.
pub fn check_execute(req: &ExecuteRequest) -> Result<&'static NodeDescription, InstanceError> {
    let d = node_type(&req.node_type)?;
    if d.is_trigger() || engine::workflow::is_trigger_type(&d.name) {
        return Err(InstanceError::Invalid(format!(
            "{} is a trigger: it starts workflows and cannot run standalone; run the workflow instead",
            d.display_name
        )));
    }
    if let Some(t) = req.timeout_ms {
        if t == 0 || t > MAX_EXECUTE_TIMEOUT.as_millis() as u64 {
            return Err(InstanceError::Invalid(format!("timeoutMs must be 1-{}", MAX_EXECUTE_TIMEOUT.as_millis())));
        }
    }
    // structure only: the run reports an expression that does not parse,
    // and the functions that check link no sandbox
    let report = crate::validate::validate(&json!({"nodes": [req.node()], "connections": {}}));
    if !report.errors().is_empty() {
        return Err(InstanceError::Invalid(format!("the node config is invalid: {}", report.errors().join("; "))));
    }
    for (kind, r) in req.config.credentials.iter().flatten() {
        if r.get("__aiGatewayManaged").and_then(Value::as_bool) == Some(true) {
            return Err(InstanceError::Invalid("Gateway-managed credentials are not available on this instance".into()));
        }
        if r.get("id").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(InstanceError::Invalid(format!(
                "credential {kind} must be a stored reference {{id, name}}; placeholders and new credentials cannot run (set one up with credentials setup)"
            )));
        }
    }
    if let Some(items) = &req.input {
        runner::items_from_pins(items).map_err(|e| InstanceError::Invalid(format!("input: {e}")))?;
    }
    Ok(d)
}

/// Binary data as metadata only (`fileName`, `mimeType`, `fileSize`).
fn reduce_binary(item: &mut Value) {
    let Some(binary) = item.get_mut("binary").and_then(Value::as_object_mut) else { return };
    for entry in binary.values_mut() {
        let size = entry.get("fileSize").cloned().or_else(|| {
            entry.get("data").and_then(Value::as_str).map(|d| json!(d.len() / 4 * 3))
        });
        *entry = json!({
            "fileName": entry.get("fileName"),
            "mimeType": entry.get("mimeType"),
            "fileSize": size,
        });
    }
}

/// Keeps the first items whose serialization fits the caps.
fn cap(items: Vec<Value>) -> (Vec<Value>, usize) {
    let total = items.len();
    let mut chars = 0;
    let mut shown = Vec::new();
    for mut it in items.into_iter().take(MAX_OUTPUT_ITEMS) {
        reduce_binary(&mut it);
        chars += it.to_string().len();
        if chars > MAX_OUTPUT_CHARS && !shown.is_empty() {
            break;
        }
        shown.push(it);
    }
    (shown, total)
}

impl Instance {
    /// `nodes(execute)`: runs the node once as a Manual Trigger → node
    /// workflow of the caller's project, on the executor like any
    /// execution, and returns its output. A node that starts waiting is
    /// stopped and reported: wait states are not supported here.
    pub async fn execute_node(&self, caller: &Caller, req: &ExecuteRequest) -> Result<ExecuteOutcome, InstanceError> {
        check_execute(req)?;
        let project_id = self.write_project(caller, "workflow:execute").await?;
        for (kind, r) in req.config.credentials.iter().flatten() {
            let id = r.get("id").and_then(Value::as_str).unwrap_or_default();
            self.pick_credential(caller, &project_id, kind, id).await?;
        }
        let workflow = json!({
            "name": format!("Standalone {}", req.node_type),
            "nodes": [
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
                req.node()
            ],
            "connections": {"Start": {"main": [[{"node": NODE_NAME, "type": "main", "index": 0}]]}},
            "settings": {"executionOrder": "v1"}
        });
        let mut start = StartRequest::new(WorkflowRef::Inline { workflow, project_id }, ExecutionMode::Manual);
        start.timeout = Some(req.timeout_ms.map_or(MAX_EXECUTE_TIMEOUT, Duration::from_millis));
        if let Some(items) = &req.input {
            start.trigger_items = Some(runner::items_from_pins(items).map_err(InstanceError::Invalid)?);
        }
        let outcome = runner::run(&self.executor, self.dispatch, start, runner::WAIT).await?;
        let id = outcome.execution_id.as_str().to_owned();
        match outcome.status {
            ExecutionStatus::Waiting | ExecutionStatus::Running | ExecutionStatus::New => {
                let _ = self.executor.stop_execution(&id).await;
                return Ok(ExecuteOutcome::Error {
                    message: if outcome.status == ExecutionStatus::Waiting {
                        "The node started waiting (a Wait or send-and-wait operation); wait states are not supported for a standalone node. It was stopped.".into()
                    } else {
                        "The node did not finish in time and was stopped".into()
                    },
                    description: None,
                    node_error_type: None,
                });
            }
            _ => {}
        }
        let doc = self
            .data
            .executions
            .get_data(&id, &DataSelection { node_names: Some(vec![NODE_NAME.into()]), max_items: Some(MAX_OUTPUT_ITEMS + 1) })
            .await?
            .unwrap_or(Value::Null);
        let run = doc.pointer(&format!("/resultData/runData/{NODE_NAME}/0")).cloned().unwrap_or(Value::Null);
        if outcome.status != ExecutionStatus::Success {
            let e = run.get("error").or_else(|| doc.pointer("/resultData/error")).and_then(|e| serde_json::from_value::<engine::NodeError>(e.clone()).ok());
            return Ok(match e {
                // A node's error may quote what it got from outside: as the executions tool shows it.
                Some(e) if self.values == Values::Withheld && e.node.is_some() => {
                    ExecuteOutcome::Error { message: view::error_text(&e, self.values), description: None, node_error_type: Some(e.name) }
                }
                Some(e) => ExecuteOutcome::Error { message: e.message, description: e.description, node_error_type: Some(e.name) },
                None => ExecuteOutcome::Error { message: outcome.error.unwrap_or_else(|| "the node failed".into()), description: None, node_error_type: None },
            });
        }
        // Every main output, in order (If and Switch have several).
        let items: Vec<Value> = run
            .pointer("/data/main")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_array)
            .flatten()
            .cloned()
            .collect();
        let total = run.get("itemCount").and_then(Value::as_u64).map(|n| n as usize);
        if self.values == Values::Withheld {
            return Ok(ExecuteOutcome::Withheld { total: total.unwrap_or(items.len()).max(items.len()) });
        }
        let (items, shown_total) = cap(items);
        Ok(ExecuteOutcome::Success { total: total.unwrap_or(shown_total).max(shown_total), items })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(v: Value) -> ExecuteRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn grant_scopes_follow_the_discriminators_then_the_first_identifying_parameter() {
        let r = exec(json!({"type": "n8n-nodes-base.dataTable", "version": 1, "config": {"parameters": {"resource": "row", "operation": "insert"}}}));
        assert_eq!(r.scope_value().as_deref(), Some("row:insert"));
        let r = exec(json!({"type": "n8n-nodes-base.httpRequest", "version": 4.2, "config": {"parameters": {"url": "https://a.example/x", "method": "GET"}}}));
        assert_eq!(r.scope_value().as_deref(), Some("https://a.example/x"));
        let r = exec(json!({"type": "n8n-nodes-base.set", "version": 3.4, "config": {"parameters": {"mode": "manual"}}}));
        assert_eq!(r.scope_value().as_deref(), Some("manual"));
        let r = exec(json!({"type": "n8n-nodes-base.noOp", "version": 1, "config": {"parameters": {}}}));
        assert_eq!(r.scope_value(), None);
    }

    #[test]
    fn triggers_bad_configs_and_unstored_credentials_are_refused_before_asking() {
        let e = check_execute(&exec(json!({"type": "n8n-nodes-base.webhook", "version": 2, "config": {"parameters": {}}}))).unwrap_err();
        assert!(e.message().contains("trigger"), "{e}");
        let e = check_execute(&exec(json!({"type": "n8n-nodes-base.httpRequest", "version": 4.2, "config": {"parameters": {"url": "https://a.example", "sendQuery": "yes"}}})))
            .unwrap_err();
        assert!(e.message().contains("sendQuery"), "{e}");
        let e = check_execute(&exec(json!({"type": "n8n-nodes-base.httpRequest", "version": 4.2,
            "config": {"parameters": {"url": "https://a.example"}, "credentials": {"httpHeaderAuth": {"id": "", "name": "new"}}}})))
            .unwrap_err();
        assert!(e.message().contains("stored reference"), "{e}");
        let e = check_execute(&exec(json!({"type": "n8n-nodes-base.set", "version": 3.4, "config": {"parameters": {}}, "timeoutMs": 90000}))).unwrap_err();
        assert!(e.message().contains("timeoutMs"), "{e}");
        assert!(check_execute(&exec(json!({"type": "n8n-nodes-base.nope", "version": 1, "config": {"parameters": {}}}))).is_err());
        assert!(check_execute(&exec(json!({"type": "n8n-nodes-base.set", "version": 3.4, "config": {"parameters": {}}}))).is_ok());
    }

    #[test]
    fn output_is_capped_and_binary_reduced_to_metadata() {
        let big = "x".repeat(3000);
        let items: Vec<Value> = (0..30)
            .map(|i| json!({"json": {"i": i, "pad": big}, "binary": {"data": {"data": "aGVsbG8=", "mimeType": "text/plain", "fileName": "a.txt"}}}))
            .collect();
        let (shown, total) = cap(items);
        assert_eq!(total, 30);
        assert!(shown.len() < 20 && !shown.is_empty());
        assert_eq!(shown[0]["binary"]["data"], json!({"fileName": "a.txt", "mimeType": "text/plain", "fileSize": 6}));
    }

    #[test]
    fn search_ranks_and_annotates_and_suggestions_name_real_nodes() {
        let (hits, total) = search(Some("http request"), None, None).unwrap();
        assert!(total >= 1);
        assert_eq!(hits[0].name, "n8n-nodes-base.httpRequest");
        assert!(hits[0].builder_hint_message.as_deref().unwrap().contains("credential"));
        assert!(hits[0].credentials.contains(&"httpHeaderAuth".to_owned()));
        assert_eq!(search(None, None, None).unwrap().1, 0);
        assert!(search(Some("x"), Some("ai_nonsense"), None).is_err());
        let (hits, _) = search(Some("a"), None, Some(2)).unwrap();
        assert!(hits.len() <= 2);
        let (results, unknown) = suggested(&["triage".into(), "astrology".into()]);
        assert_eq!(unknown, ["astrology"]);
        assert!(results[0].suggested_nodes.iter().all(|n| describe_exact(&n.name).is_some()));
        assert_eq!(SUGGESTIONS.len(), CATEGORIES.len());
    }

    /// `type-definition` with discriminators: the requested resource and
    /// operation are named, the union member they select is in the
    /// TypeScript with its parameters, credentials and builder hint.
    #[test]
    fn type_definitions_name_the_requested_discriminators_and_carry_hints() {
        let r: TypeRequest = serde_json::from_value(json!({"nodeType": "n8n-nodes-base.slack", "version": "v2.3", "resource": "message", "operation": "post"})).unwrap();
        let d = type_definition(&r);
        assert_eq!((d.version.as_deref(), d.error.as_deref()), (Some("2.3"), None));
        for needle in ["requested resource = \"message\"", "requested operation = \"post\"", "operation: 'post'", "channelId", "slackApi"] {
            assert!(d.content.contains(needle), "{needle} in {}", d.content);
        }
        let http = type_definition(&TypeRequest::plain("n8n-nodes-base.httpRequest"));
        assert!(http.content.contains("@builderHint") && http.content.contains("genericCredentialType"), "{}", http.content);
        let unknown = type_definition(&TypeRequest::plain("n8n-nodes-base.nope"));
        assert!(unknown.error.is_some() && unknown.content.is_empty());
    }

    #[test]
    fn nodes_without_lookup_methods_have_no_dynamic_resources() {
        assert!(dynamic_methods(node_type("n8n-nodes-base.httpRequest").unwrap()).is_empty());
        let d: NodeDescription = serde_json::from_value(json!({
            "name": "x.sheets", "displayName": "Sheets", "description": "", "group": [], "version": 1, "defaults": {},
            "inputs": ["main"], "outputs": ["main"],
            "properties": [{"displayName": "Doc", "name": "documentId", "type": "resourceLocator", "default": "",
                            "modes": [{"name": "list", "typeOptions": {"searchListMethod": "spreadSheetsSearch"}}],
                            "typeOptions": {"loadOptionsMethod": "getSheets"}}]
        })).unwrap();
        assert_eq!(dynamic_methods(&d), [("getSheets".to_owned(), "loadOptions"), ("spreadSheetsSearch".to_owned(), "listSearch")]);
    }
}
