//! Which nodes a verification run executes and which it simulates, and the
//! fixture data a simulated node outputs instead of running.
//!
//! The classifier is deterministic: triggers (their input is injected),
//! nodes with credentials, write operations, non-GET HTTP requests,
//! mid-workflow Form pages, Wait nodes, send-and-wait operations,
//! sub-workflows and service calls that are not known reads are simulated;
//! pure logic executes. Sub-nodes (an agent's model, tools, memory) cannot
//! take pin data, so a sub-node that would be simulated makes its root
//! simulated. Where n8n asks a model about the nodes its rules leave
//! ambiguous, these rules leave none: every such node is simulated (fail
//! destructive), and the one model pass left is the agent's own at submit
//! time (`build-workflow`'s `simulateNodes`, [`apply_model_pass`]), which can
//! only turn `execute` into `simulate`. Fixtures come from the node's output
//! shape — a previous real execution of the node, the model's own fixture
//! (`simulationFixtures`), or the catalog's shape — never from a live call.

use engine::catalog::NodeDescription;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Execute,
    Simulate,
}

/// Why a node is simulated (or that it is pure logic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// A trigger: its output is the injected trigger input.
    Trigger,
    /// Credentials set on the node, or required by its type.
    Credentials,
    /// A write operation (`create|update|delete|send|append|upsert|insert|write|clear`).
    WriteOperation,
    /// An HTTP Request whose method is not GET (or is an expression).
    HttpWrite,
    /// A Form page after the trigger waits for a person.
    FormPage,
    /// A Wait node parks the run.
    Wait,
    /// A send-and-wait operation sends and then waits for a person.
    SendAndWait,
    /// A sub-workflow: what it does is not this workflow's to verify.
    SubWorkflow,
    /// A sub-node of this root (its model, tool, memory…) is simulated:
    /// pin data cannot reach a sub-node, so its root carries the simulation.
    SubNode,
    /// A service call whose operation the classifier cannot tell a read
    /// from a write: simulated for safety.
    Unclassified,
    /// The model judged the node to have side effects.
    Model,
    /// Pure logic: runs for real.
    PureLogic,
}

/// One node's line of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePlan {
    pub node_name: String,
    pub node_type: String,
    pub mode: Mode,
    pub reason: Reason,
    /// The model's words, for [`Reason::Model`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a fixture came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FixtureSource {
    /// The node's output in an earlier real (not simulated) execution.
    Execution,
    /// Given by the model at submit time.
    Model,
    /// Shaped from the node's catalog description.
    Catalog,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fixture {
    /// Item json objects the node outputs when simulated.
    pub items: Vec<Value>,
    pub source: FixtureSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
}

/// Verbs whose operations change something outside the workflow. An
/// operation counts when its first camelCase word is one of them
/// (`deleteRows`, `appendOrUpdate`, `sendAndWait`); `add`/`remove` are not
/// listed because the logic nodes use them (dateTime `add`,
/// `removeDuplicateInputItems`).
const WRITE_VERBS: &[&str] = &[
    "create", "update", "delete", "send", "append", "upsert", "insert", "write", "clear", "post", "publish", "archive", "edit", "lock", "share", "upload", "reply",
    "mark", "move", "copy", "trash", "untrash",
];

/// Writes whose verb the logic nodes also use (`add`, `remove`), by node type.
const WRITE_OPERATIONS: &[(&str, &[&str])] = &[("n8n-nodes-base.gmail", &["addLabels", "removeLabels"]), ("n8n-nodes-base.googleSheets", &["remove"])];

/// Verbs that write when a service does them (a reaction added, a file
/// uploaded, a user group disabled); the logic nodes use some of them for
/// pure operations (dateTime `addToDate`), so only nodes that call a
/// service with a credential count them.
const SERVICE_WRITE_VERBS: &[&str] = &["add", "remove", "upload", "enable", "disable"];

/// Node types that write by what they are, without an operation parameter.
// An MCP server's tools may act on anything: verification never calls them.
const WRITE_TYPES: &[&str] = &["n8n-nodes-base.writeBinaryFile", "n8n-nodes-base.n8nTrainingCustomerMessenger", "@n8n/n8n-nodes-langchain.mcpClientTool"];

/// Verbs of operations that only read (a service node whose operation is
/// neither one of these nor a write is simulated: a real call proves little
/// a fixture does not, and a wrong guess would change the person's data).
const READ_VERBS: &[&str] = &["get", "search", "list", "read", "lookup", "fetch", "download", "history", "find", "retrieve", "select", "load"];

/// HTTP clients: a write by their method.
const HTTP_TYPES: &[&str] = &["n8n-nodes-base.httpRequest", "@n8n/n8n-nodes-langchain.toolHttpRequest", "n8n-nodes-base.httpRequestTool"];

const SUB_WORKFLOW_TYPES: &[&str] = &["n8n-nodes-base.executeWorkflow", "@n8n/n8n-nodes-langchain.toolWorkflow"];

fn first_word(op: &str) -> String {
    op.chars().take_while(|c| c.is_ascii_lowercase()).collect()
}

/// Whether an operation value is a write.
pub fn is_write_operation(op: &str) -> bool {
    WRITE_VERBS.contains(&first_word(op).as_str())
}

/// Whether a (literal) SQL text is nothing but SELECT statements.
fn only_selects(sql: &str) -> bool {
    if sql.starts_with('=') {
        return false;
    }
    let statements: Vec<String> = sql.split(';').map(|s| s.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join(" ").trim().to_lowercase()).filter(|s| !s.is_empty()).collect();
    !statements.is_empty() && statements.iter().all(|s| (s.starts_with("select") || s.starts_with("with")) && ![" into ", "insert ", "update ", "delete ", " for update"].iter().any(|w| s.contains(w)))
}

fn is_expression(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with('='))
}

/// A parameter's value, or its catalog default (the first property of that
/// name whose `displayOptions` the node's parameters satisfy).
fn param<'a>(desc: Option<&'a NodeDescription>, params: &'a Value, name: &str) -> Option<&'a Value> {
    if let Some(v) = params.get(name) {
        return Some(v);
    }
    let desc = desc?;
    desc.properties.iter().filter(|p| p.name == name).find(|p| shows(desc, params, p.display_options.as_ref())).map(|p| &p.default)
}

/// `displayOptions.show` against the node's parameters (defaults where unset;
/// `@version` is ignored: every version's property is a candidate).
fn shows(desc: &NodeDescription, params: &Value, display: Option<&Value>) -> bool {
    let Some(show) = display.and_then(|d| d.get("show")).and_then(Value::as_object) else { return true };
    show.iter().filter(|(k, _)| !k.starts_with('@')).all(|(k, allowed)| {
        let value = params.get(k).cloned().or_else(|| desc.properties.iter().find(|p| &p.name == k && p.display_options.is_none()).map(|p| p.default.clone()));
        match (value, allowed.as_array()) {
            (Some(v), Some(list)) => list.contains(&v),
            (None, _) => false,
            _ => true,
        }
    })
}

fn has_credentials(desc: Option<&NodeDescription>, node: &Value) -> bool {
    if node.get("credentials").and_then(Value::as_object).is_some_and(|c| !c.is_empty()) {
        return true;
    }
    let params = node.get("parameters").unwrap_or(&Value::Null);
    desc.is_some_and(|d| {
        d.credentials.iter().any(|c| c.get("required").and_then(Value::as_bool) == Some(true) && shows(d, params, c.get("displayOptions")))
    })
}

/// The plan line of one node (`is_first` is false for every node but the
/// workflow's starting points: a Form node after a trigger is a page).
pub fn classify(node: &Value, has_parents: bool) -> NodePlan {
    let name = node.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let ty = node.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    let desc = crate::catalog::describe_exact(&ty);
    let params = node.get("parameters").cloned().unwrap_or_else(|| json!({}));
    let (mode, reason) = decide(desc, &ty, &params, node, has_parents);
    NodePlan { node_name: name, node_type: ty, mode, reason, note: None }
}

fn decide(desc: Option<&NodeDescription>, ty: &str, params: &Value, node: &Value, has_parents: bool) -> (Mode, Reason) {
    use Mode::Simulate as S;
    let trigger = desc.is_some_and(NodeDescription::is_trigger) || engine::workflow::is_trigger_type(ty);
    if trigger && !has_parents {
        return (S, Reason::Trigger);
    }
    let short = ty.rsplit('.').next().unwrap_or(ty);
    if short == "wait" {
        return (S, Reason::Wait);
    }
    if short == "form" || (short == "formTrigger" && has_parents) {
        return (S, Reason::FormPage);
    }
    let operation = param(desc, params, "operation");
    if operation.and_then(Value::as_str) == Some("sendAndWait") {
        return (S, Reason::SendAndWait);
    }
    // A write says so before its credentials do (a service node's post,
    // update, delete or send is simulated because it writes).
    if let Some(op) = operation {
        let listed = WRITE_OPERATIONS.iter().any(|(t, ops)| *t == ty && op.as_str().is_some_and(|o| ops.contains(&o)));
        if is_expression(op) || listed || op.as_str().is_some_and(is_write_operation) {
            return (S, Reason::WriteOperation);
        }
        let service = desc.is_some_and(|d| d.credentials.iter().any(|c| c.get("required").and_then(Value::as_bool) == Some(true)));
        if service && op.as_str().is_some_and(|o| SERVICE_WRITE_VERBS.contains(&first_word(o).as_str())) {
            return (S, Reason::WriteOperation);
        }
        // SQL may write whatever the operation is called; only a query of SELECTs reads
        if op.as_str() == Some("executeQuery") && !param(desc, params, "query").and_then(Value::as_str).is_some_and(only_selects) {
            return (S, Reason::WriteOperation);
        }
    }
    if has_credentials(desc, node) {
        return (S, Reason::Credentials);
    }
    if HTTP_TYPES.contains(&ty) {
        let method = param(desc, params, "method").and_then(Value::as_str).unwrap_or("GET");
        return if method.eq_ignore_ascii_case("GET") { (Mode::Execute, Reason::PureLogic) } else { (S, Reason::HttpWrite) };
    }
    if WRITE_TYPES.contains(&ty) {
        return (S, Reason::WriteOperation);
    }
    if SUB_WORKFLOW_TYPES.contains(&ty) {
        return (S, Reason::SubWorkflow);
    }
    if desc.is_some_and(NodeDescription::is_declarative) && !operation.and_then(Value::as_str).is_some_and(|op| READ_VERBS.contains(&first_word(op).as_str())) {
        return (S, Reason::Unclassified);
    }
    (Mode::Execute, Reason::PureLogic)
}

/// Whether `name` is a sub-node: it feeds a root over a non-main
/// connection (`ai_languageModel`, `ai_tool`, …) and so never runs on its
/// own, and never takes pin data.
pub fn is_sub_node(connections: &Value, name: &str) -> bool {
    connections.get(name).and_then(Value::as_object).is_some_and(|types| {
        types.iter().any(|(ty, outs)| ty != "main" && outs.as_array().into_iter().flatten().flat_map(|o| o.as_array().into_iter().flatten()).next().is_some())
    })
}

/// The sub-nodes feeding `root`, directly or through other sub-nodes (a
/// tool's own model), each once.
fn sub_nodes_of(connections: &Value, root: &str) -> Vec<String> {
    let feeds = |from: &str, to: &str| {
        connections.get(from).and_then(Value::as_object).is_some_and(|types| {
            types.iter().filter(|(ty, _)| ty.as_str() != "main").any(|(_, outs)| {
                outs.as_array().into_iter().flatten().flat_map(|o| o.as_array().into_iter().flatten()).any(|t| t.get("node").and_then(Value::as_str) == Some(to))
            })
        })
    };
    let sources: Vec<&String> = connections.as_object().map(|c| c.keys().collect()).unwrap_or_default();
    let mut found: Vec<String> = Vec::new();
    let mut queue = vec![root.to_owned()];
    while let Some(to) = queue.pop() {
        for from in &sources {
            if from.as_str() != root && !found.iter().any(|f| f == *from) && feeds(from, &to) {
                found.push((*from).clone());
                queue.push((*from).clone());
            }
        }
    }
    found
}

/// The plan of a workflow's `nodes` (disabled nodes included: they do not
/// run, and the plan says what they would be). Sticky notes never run and
/// sub-nodes never run on their own: neither has a line; a sub-node the
/// classifier would simulate makes its root simulated instead.
pub fn plan(nodes: &[Value], connections: &Value) -> Vec<NodePlan> {
    let has_parents = |name: &str| {
        connections.as_object().is_some_and(|c| {
            c.values().any(|types| {
                types.get("main").and_then(Value::as_array).into_iter().flatten().flat_map(|o| o.as_array().into_iter().flatten()).any(|t| t.get("node").and_then(Value::as_str) == Some(name))
            })
        })
    };
    let name_of = |n: &Value| n.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let node_named = |name: &str| nodes.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(name));
    nodes
        .iter()
        .filter(|n| !engine::nodes::is_annotation(n.get("type").and_then(Value::as_str).unwrap_or_default()))
        .filter(|n| !is_sub_node(connections, &name_of(n)))
        .map(|n| {
            let name = name_of(n);
            let mut p = classify(n, has_parents(&name));
            if p.mode == Mode::Execute {
                let simulated: Vec<String> = sub_nodes_of(connections, &name)
                    .iter()
                    .filter_map(|s| node_named(s))
                    .filter(|s| !s.get("disabled").and_then(Value::as_bool).unwrap_or(false))
                    .map(|s| classify(s, false))
                    .filter(|s| s.mode == Mode::Simulate)
                    .map(|s| format!("{} ({})", s.node_name, serde_json::to_value(s.reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()))
                    .collect();
                if !simulated.is_empty() {
                    p.mode = Mode::Simulate;
                    p.reason = Reason::SubNode;
                    p.note = Some(format!("simulated for its sub-nodes: {}", simulated.join(", ")));
                }
            }
            p
        })
        .collect()
}

/// The model's pass at submit time: nodes it judged to have side effects.
/// It can only turn `execute` into `simulate`; anything else it says is
/// ignored (returned as the names it could not apply).
pub fn apply_model_pass(plan: &mut [NodePlan], simulate: &BTreeMap<String, String>) -> Vec<String> {
    let mut ignored = Vec::new();
    for (name, why) in simulate {
        match plan.iter_mut().find(|p| &p.node_name == name) {
            Some(p) if p.mode == Mode::Execute => {
                p.mode = Mode::Simulate;
                p.reason = Reason::Model;
                p.note = Some(why.clone());
            }
            Some(_) => {}
            None => ignored.push(name.clone()),
        }
    }
    ignored
}

/// The fixture a simulated node outputs, from its catalog shape: the record
/// the operation would return (ids, timestamps, the fields it was given as
/// literals). Expressions stay unresolved: the fixture is data, not a run.
pub fn catalog_fixture(p: &NodePlan, node: &Value) -> Vec<Value> {
    let params = node.get("parameters").cloned().unwrap_or_else(|| json!({}));
    let literal_fields = |v: Option<&Value>| -> Map<String, Value> {
        let mut m = Map::new();
        for a in v.and_then(|x| x.pointer("/assignments")).or_else(|| v.and_then(|x| x.get("values"))).and_then(Value::as_array).into_iter().flatten() {
            if let (Some(k), Some(val)) = (a.get("name").or_else(|| a.get("column")).and_then(Value::as_str), a.get("value")) {
                if !is_expression(val) {
                    m.insert(k.to_owned(), val.clone());
                }
            }
        }
        m
    };
    let ty = p.node_type.as_str();
    let item = match p.reason {
        Reason::Trigger => json!({}),
        Reason::Wait => json!({}),
        Reason::FormPage => json!({"submittedAt": "2026-01-01T00:00:00.000Z", "formMode": "instanceAi"}),
        Reason::SendAndWait => json!({"data": {"approved": true}}),
        // An AI root answers with its `output` text.
        Reason::SubNode => json!({"output": "Simulated answer (verification did not call the model or its tools)."}),
        _ if ty == "n8n-nodes-base.httpRequest" => json!({"success": true, "id": "simulated-1"}),
        _ if ty == "n8n-nodes-base.dataTable" => {
            let mut row = literal_fields(params.get("columns"));
            row.insert("id".into(), json!(1));
            row.insert("createdAt".into(), json!("2026-01-01T00:00:00.000Z"));
            row.insert("updatedAt".into(), json!("2026-01-01T00:00:00.000Z"));
            Value::Object(row)
        }
        _ => {
            let op = param(crate::catalog::describe_exact(ty), &params, "operation").and_then(Value::as_str).unwrap_or("").to_owned();
            json!({"success": true, "id": "simulated-1", "operation": op})
        }
    };
    vec![item]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ty: &str, params: Value) -> Value {
        json!({"name": "N", "type": ty, "parameters": params})
    }

    fn mode_of(ty: &str, params: Value, has_parents: bool) -> (Mode, Reason) {
        let p = classify(&node(ty, params), has_parents);
        (p.mode, p.reason)
    }

    /// Verbs the issue names as writes, and the ones this classifier adds
    /// (its doc): written out here, apart from the code, so dropping one
    /// there fails the operation test.
    const WRITES: &[&str] = &["create", "update", "delete", "send", "append", "upsert", "insert", "write", "clear", "post", "publish", "archive", "edit", "lock"];

    fn verb(op: &str) -> String {
        op.chars().take_while(|c| c.is_ascii_lowercase()).collect()
    }

    /// Whether the type declares a required credential (under any display options).
    fn needs_credentials(d: &NodeDescription) -> bool {
        d.credentials.iter().any(|c| c.get("required").and_then(Value::as_bool) == Some(true))
    }

    /// Every node of the catalog — whatever it holds when this runs, service
    /// nodes added in parallel included — with its default parameters:
    /// triggers are simulated as triggers, a node that needs a credential or
    /// calls a service without a known read is simulated, and the nodes whose
    /// plan is known by name (the anchors) have exactly that plan.
    #[test]
    fn every_catalog_node_is_planned_by_what_it_is() {
        use Mode::*;
        use Reason::*;
        let anchors: BTreeMap<&str, (Mode, Reason)> = BTreeMap::from([
            ("n8n-nodes-base.aggregate", (Execute, PureLogic)),
            ("n8n-nodes-base.code", (Execute, PureLogic)),
            ("n8n-nodes-base.dataTable", (Simulate, WriteOperation)),
            ("n8n-nodes-base.dateTime", (Execute, PureLogic)),
            ("n8n-nodes-base.executeWorkflow", (Simulate, SubWorkflow)),
            ("n8n-nodes-base.filter", (Execute, PureLogic)),
            ("n8n-nodes-base.formTrigger", (Simulate, Trigger)),
            ("n8n-nodes-base.httpRequest", (Execute, PureLogic)),
            ("n8n-nodes-base.if", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.mcpClientTool", (Simulate, WriteOperation)),
            ("@n8n/n8n-nodes-langchain.chatTrigger", (Simulate, Trigger)),
            ("@n8n/n8n-nodes-langchain.textClassifier", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.informationExtractor", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.lmChatAwsBedrock", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.lmChatOllama", (Simulate, Credentials)),
            ("n8n-nodes-base.merge", (Execute, PureLogic)),
            ("n8n-nodes-base.n8nTrainingCustomerMessenger", (Simulate, WriteOperation)),
            ("n8n-nodes-base.noOp", (Execute, PureLogic)),
            ("n8n-nodes-base.respondToWebhook", (Execute, PureLogic)),
            ("n8n-nodes-base.set", (Execute, PureLogic)),
            ("n8n-nodes-base.slack", (Simulate, WriteOperation)),
            ("n8n-nodes-base.switch", (Execute, PureLogic)),
            ("n8n-nodes-base.wait", (Simulate, Wait)),
            ("n8n-nodes-base.webhook", (Simulate, Trigger)),
            ("n8n-nodes-base.writeBinaryFile", (Simulate, WriteOperation)),
            ("@n8n/n8n-nodes-langchain.agent", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.lmChatOpenAi", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.toolWorkflow", (Simulate, SubWorkflow)),
        ]);
        let mut seen = std::collections::BTreeSet::new();
        for d in engine::catalog::all() {
            let trigger = d.is_trigger();
            let got = mode_of(&d.name, json!({}), !trigger);
            if let Some(want) = anchors.get(d.name.as_str()) {
                assert_eq!(&got, want, "{}", d.name);
                seen.insert(d.name.clone());
            }
            if trigger {
                assert_eq!(got, (Simulate, Trigger), "{}", d.name);
                continue;
            }
            // The operation its defaults select (through the resource's display options).
            let empty = json!({});
            let default_op = param(Some(d), &empty, "operation").and_then(Value::as_str).map(verb);
            if default_op.as_deref().is_some_and(|v| WRITES.contains(&v)) {
                assert_eq!(got.0, Simulate, "{}: its default operation writes", d.name);
            }
            if d.credentials.iter().any(|c| c.get("required").and_then(Value::as_bool) == Some(true) && c.get("displayOptions").is_none()) {
                assert_eq!(got.0, Simulate, "{}: it always takes a credential", d.name);
            }
            if d.is_declarative() && !default_op.as_deref().is_some_and(|v| READ_VERBS.contains(&v)) {
                assert_eq!(got.0, Simulate, "{}: a service call that is not a known read", d.name);
            }
            if got.0 == Simulate {
                // A simulated node always has a fixture to output instead.
                assert!(!catalog_fixture(&classify(&node(&d.name, json!({})), true), &node(&d.name, json!({}))).is_empty(), "{}", d.name);
            }
        }
        let unseen: Vec<_> = anchors.keys().filter(|a| !seen.contains(**a)).collect();
        assert!(unseen.is_empty(), "anchors that are no catalog node: {unseen:?}");
    }

    /// Every option of every catalog node's `operation` parameter (with the
    /// resource or mode it belongs to): writes are simulated as writes, the
    /// rest is simulated only for a credential or a service call, and runs
    /// for real otherwise.
    #[test]
    fn every_catalog_operation_is_classified_by_its_verb() {
        let mut checked = 0;
        for d in engine::catalog::all().iter().filter(|d| !d.is_trigger()) {
            for p in d.properties.iter().filter(|p| p.name == "operation") {
                for o in p.options.iter().flatten() {
                    let Some(op) = o.get("value").and_then(Value::as_str) else { continue };
                    let mut params = json!({"operation": op});
                    // The operation's own displayOptions (resource, mode…) as their first allowed value.
                    for (k, v) in p.display_options.as_ref().and_then(|d| d.get("show")).and_then(Value::as_object).into_iter().flatten() {
                        if !k.starts_with('@') {
                            if let Some(first) = v.as_array().and_then(|a| a.first()) {
                                params[k] = first.clone();
                            }
                        }
                    }
                    let (mode, reason) = mode_of(&d.name, params, true);
                    checked += 1;
                    if SUB_WORKFLOW_TYPES.contains(&d.name.as_str()) {
                        // Another workflow's effects are unknown whatever the operation.
                        assert_eq!((mode, reason), (Mode::Simulate, Reason::SubWorkflow), "{} {op}", d.name);
                    } else if op == "sendAndWait" {
                        assert_eq!((mode, reason), (Mode::Simulate, Reason::SendAndWait), "{} {op}", d.name);
                    } else if WRITES.contains(&verb(op).as_str()) {
                        assert_eq!((mode, reason), (Mode::Simulate, Reason::WriteOperation), "{} {op}", d.name);
                    } else if needs_credentials(d) || (d.is_declarative() && !READ_VERBS.contains(&verb(op).as_str())) {
                        // A read with the person's credential, a call of unknown effect, or a
                        // write the classifier knows by more than its first verb.
                        assert!(mode == Mode::Simulate && reason != Reason::PureLogic, "{} {op}: {reason:?}", d.name);
                    } else {
                        assert_eq!(mode, Mode::Execute, "{} {op} is not a write", d.name);
                    }
                }
            }
        }
        assert!(checked > 50, "the catalog's operations were all seen ({checked})");
    }

    /// AI roots: a sub-node that would be simulated (a model with a
    /// credential, a tool that posts) cannot take pin data, so its root is
    /// simulated and says why; sub-nodes and sticky notes have no line.
    #[test]
    fn a_root_is_simulated_for_its_sub_nodes() {
        let nodes = vec![
            json!({"name": "Chat", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "parameters": {}}),
            json!({"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "parameters": {}}),
            json!({"name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "parameters": {}, "credentials": {"openAiApi": {"id": "c", "name": "k"}}}),
            json!({"name": "Calc", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "parameters": {}}),
            json!({"name": "Poster", "type": "@n8n/n8n-nodes-langchain.toolHttpRequest", "parameters": {"method": "POST", "url": "https://example.com"}}),
            json!({"name": "Note", "type": "n8n-nodes-base.stickyNote", "parameters": {"content": "hi"}}),
            json!({"name": "Reply", "type": "n8n-nodes-base.set", "parameters": {}}),
        ];
        let conns = json!({
            "Chat": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Agent": {"main": [[{"node": "Reply", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Calc": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]},
            "Poster": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        });
        let p = plan(&nodes, &conns);
        assert_eq!(p.iter().map(|x| x.node_name.as_str()).collect::<Vec<_>>(), ["Chat", "Agent", "Reply"]);
        assert_eq!((p[1].mode, p[1].reason), (Mode::Simulate, Reason::SubNode));
        assert_eq!(p[1].note.as_deref(), Some("simulated for its sub-nodes: Model (credentials), Poster (http-write)"));
        assert_eq!(catalog_fixture(&p[1], &nodes[1])[0]["output"].as_str().map(|s| s.starts_with("Simulated")), Some(true));
        assert_eq!(p[2].mode, Mode::Execute);
        // Only harmless sub-nodes (a calculator, a GET tool without a credential): the root runs.
        let conns = json!({
            "Chat": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Calc": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        });
        let harmless = vec![nodes[0].clone(), nodes[1].clone(), nodes[3].clone()];
        assert_eq!(plan(&harmless, &conns).iter().map(|x| (x.node_name.as_str(), x.mode)).collect::<Vec<_>>(), [("Chat", Mode::Simulate), ("Agent", Mode::Execute)]);
        assert!(is_sub_node(&conns, "Calc") && !is_sub_node(&conns, "Chat"));
    }

    #[test]
    fn http_methods_credentials_forms_and_send_and_wait() {
        let http = "n8n-nodes-base.httpRequest";
        assert_eq!(mode_of(http, json!({"method": "GET"}), true).0, Mode::Execute);
        for m in ["POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "={{ $json.m }}"] {
            assert_eq!(mode_of(http, json!({"method": m}), true), (Mode::Simulate, Reason::HttpWrite), "{m}");
        }
        let with_cred = json!({"name": "G", "type": http, "parameters": {"method": "GET"}, "credentials": {"httpHeaderAuth": {"id": "c1", "name": "k"}}});
        assert_eq!(classify(&with_cred, true).reason, Reason::Credentials);
        assert_eq!(mode_of("n8n-nodes-base.form", json!({}), true), (Mode::Simulate, Reason::FormPage));
        assert_eq!(mode_of("n8n-nodes-base.slack", json!({"operation": "sendAndWait"}), true), (Mode::Simulate, Reason::SendAndWait));
        assert_eq!(mode_of("n8n-nodes-base.slack", json!({"resource": "message", "operation": "post"}), true), (Mode::Simulate, Reason::WriteOperation));
        for op in ["update", "delete"] {
            assert_eq!(mode_of("n8n-nodes-base.slack", json!({"resource": "message", "operation": op}), true), (Mode::Simulate, Reason::WriteOperation), "{op}");
        }
        // Reads still call Slack with the person's token: simulated for the credential.
        assert_eq!(mode_of("n8n-nodes-base.slack", json!({"resource": "channel", "operation": "history"}), true), (Mode::Simulate, Reason::Credentials));
        assert_eq!(mode_of("n8n-nodes-base.telegram", json!({"operation": "sendPhoto"}), true), (Mode::Simulate, Reason::WriteOperation));
        assert_eq!(mode_of("n8n-nodes-base.discord", json!({"authentication": "webhook"}), true), (Mode::Simulate, Reason::WriteOperation));
        assert_eq!(mode_of("n8n-nodes-base.googleSheets", json!({"operation": "appendOrUpdate"}), true).0, Mode::Simulate);
        // a read still calls Google with the person's credential
        assert_eq!(mode_of("n8n-nodes-base.googleSheets", json!({"operation": "read"}), true), (Mode::Simulate, Reason::Credentials));
        for (ty, op) in [("n8n-nodes-base.googleSheets", "remove"), ("n8n-nodes-base.gmail", "addLabels"), ("n8n-nodes-base.gmail", "markAsRead"), ("n8n-nodes-base.googleDrive", "share"), ("n8n-nodes-base.googleDrive", "upload")] {
            assert_eq!(mode_of(ty, json!({"operation": op}), true), (Mode::Simulate, Reason::WriteOperation), "{ty} {op}");
        }
        // dateTime's add stays a transform
        assert_eq!(mode_of("n8n-nodes-base.dateTime", json!({"operation": "addToDate"}), true).0, Mode::Execute);
        assert_eq!(mode_of("n8n-nodes-base.dataTable", json!({"operation": "get"}), true).0, Mode::Execute);
        assert_eq!(mode_of("n8n-nodes-base.dataTable", json!({"operation": "={{ 'insert' }}"}), true).0, Mode::Simulate);
        // Service verbs write in service nodes only; SQL writes unless it only selects.
        assert_eq!(mode_of("n8n-nodes-base.slack", json!({"resource": "reaction", "operation": "add"}), true), (Mode::Simulate, Reason::WriteOperation));
        assert_eq!(mode_of("n8n-nodes-base.slack", json!({"resource": "reaction", "operation": "get"}), true), (Mode::Simulate, Reason::Credentials));
        assert_eq!(mode_of("n8n-nodes-base.slack", json!({"resource": "file", "operation": "upload"}), true), (Mode::Simulate, Reason::WriteOperation));
        assert_eq!(mode_of("n8n-nodes-base.dateTime", json!({"operation": "addToDate"}), true).0, Mode::Execute);
        for (query, reason) in [("SELECT * FROM t WHERE id = $1", Reason::Credentials), ("-- report\nselect 1; SELECT 2", Reason::Credentials), ("DELETE FROM t", Reason::WriteOperation),
            ("SELECT 1; DROP TABLE t", Reason::WriteOperation), ("SELECT * INTO copy FROM t", Reason::WriteOperation), ("={{ $json.sql }}", Reason::WriteOperation)] {
            assert_eq!(mode_of("n8n-nodes-base.postgres", json!({"operation": "executeQuery", "query": query}), true), (Mode::Simulate, reason), "{query}");
        }
        assert_eq!(mode_of("n8n-nodes-base.mySql", json!({"operation": "select"}), true), (Mode::Simulate, Reason::Credentials));
        assert_eq!(mode_of("n8n-nodes-base.emailSend", json!({}), true), (Mode::Simulate, Reason::WriteOperation));
        // The respond node's JWT credential only applies when it responds with a JWT.
        assert_eq!(mode_of("n8n-nodes-base.respondToWebhook", json!({"respondWith": "jwt"}), true).1, Reason::Credentials);
    }

    #[test]
    fn the_model_pass_only_adds_simulations() {
        let nodes = vec![
            json!({"name": "Hook", "type": "n8n-nodes-base.webhook", "parameters": {}}),
            json!({"name": "Code", "type": "n8n-nodes-base.code", "parameters": {}}),
            json!({"name": "Post", "type": "n8n-nodes-base.httpRequest", "parameters": {"method": "POST"}}),
        ];
        let conns = json!({"Hook": {"main": [[{"node": "Code", "type": "main", "index": 0}]]}, "Code": {"main": [[{"node": "Post", "type": "main", "index": 0}]]}});
        let mut p = plan(&nodes, &conns);
        assert_eq!(p.iter().map(|x| x.mode).collect::<Vec<_>>(), [Mode::Simulate, Mode::Execute, Mode::Simulate]);
        let asks = BTreeMap::from([("Code".to_owned(), "it calls an API".to_owned()), ("Ghost".to_owned(), "x".to_owned())]);
        assert_eq!(apply_model_pass(&mut p, &asks), ["Ghost"]);
        assert_eq!((p[1].mode, p[1].reason, p[1].note.as_deref()), (Mode::Simulate, Reason::Model, Some("it calls an API")));
        // Nothing the model says turns a simulated node back into a real one.
        assert_eq!((p[2].mode, p[2].reason), (Mode::Simulate, Reason::HttpWrite));
    }
}
