//! Which nodes a verification run executes and which it simulates, and the
//! fixture data a simulated node outputs instead of running.
//!
//! The classifier is deterministic: triggers (their input is injected),
//! nodes with credentials, write operations, non-GET HTTP requests,
//! mid-workflow Form pages, Wait nodes and send-and-wait operations are
//! simulated; pure logic executes. The model may add to it at submit time
//! ([`apply_model_pass`]) but only ever turns `execute` into `simulate`.
//! Fixtures come from the node's output shape — a previous real execution of
//! the node, the model's own fixture, or the catalog's shape — never from a
//! live call.

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
const WRITE_VERBS: &[&str] = &["create", "update", "delete", "send", "append", "upsert", "insert", "write", "clear", "post", "publish", "archive", "edit", "lock"];

/// Node types that write by what they are, without an operation parameter.
const WRITE_TYPES: &[&str] = &["n8n-nodes-base.writeBinaryFile", "n8n-nodes-base.n8nTrainingCustomerMessenger"];

const SUB_WORKFLOW_TYPES: &[&str] = &["n8n-nodes-base.executeWorkflow", "@n8n/n8n-nodes-langchain.toolWorkflow"];

fn first_word(op: &str) -> String {
    op.chars().take_while(|c| c.is_ascii_lowercase()).collect()
}

/// Whether an operation value is a write.
pub fn is_write_operation(op: &str) -> bool {
    WRITE_VERBS.contains(&first_word(op).as_str())
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
        if is_expression(op) || op.as_str().is_some_and(is_write_operation) {
            return (S, Reason::WriteOperation);
        }
    }
    if has_credentials(desc, node) {
        return (S, Reason::Credentials);
    }
    if ty == "n8n-nodes-base.httpRequest" {
        let method = param(desc, params, "method").and_then(Value::as_str).unwrap_or("GET");
        return if method.eq_ignore_ascii_case("GET") { (Mode::Execute, Reason::PureLogic) } else { (S, Reason::HttpWrite) };
    }
    if WRITE_TYPES.contains(&ty) {
        return (S, Reason::WriteOperation);
    }
    if SUB_WORKFLOW_TYPES.contains(&ty) {
        return (S, Reason::SubWorkflow);
    }
    (Mode::Execute, Reason::PureLogic)
}

/// The plan of every node of a workflow's `nodes` (disabled nodes included:
/// they do not run, and the plan says what they would be).
pub fn plan(nodes: &[Value], connections: &Value) -> Vec<NodePlan> {
    let has_parents = |name: &str| {
        connections.as_object().is_some_and(|c| {
            c.values().any(|types| {
                types.get("main").and_then(Value::as_array).into_iter().flatten().flat_map(|o| o.as_array().into_iter().flatten()).any(|t| t.get("node").and_then(Value::as_str) == Some(name))
            })
        })
    };
    nodes.iter().map(|n| classify(n, has_parents(n.get("name").and_then(Value::as_str).unwrap_or_default()))).collect()
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

    /// Every catalog node, with its default parameters, against an
    /// expectation written by hand: adding a node to the catalog without
    /// deciding here fails this test.
    #[test]
    fn every_catalog_node_has_the_expected_default_plan() {
        use Mode::*;
        use Reason::*;
        let expected: BTreeMap<&str, (Mode, Reason)> = BTreeMap::from([
            ("n8n-nodes-base.aggregate", (Execute, PureLogic)),
            ("n8n-nodes-base.airtable", (Simulate, WriteOperation)),
            ("n8n-nodes-base.code", (Execute, PureLogic)),
            ("n8n-nodes-base.compareDatasets", (Execute, PureLogic)),
            ("n8n-nodes-base.compression", (Execute, PureLogic)),
            ("n8n-nodes-base.convertToFile", (Execute, PureLogic)),
            ("n8n-nodes-base.crypto", (Execute, PureLogic)),
            ("n8n-nodes-base.dataTable", (Simulate, WriteOperation)),
            ("n8n-nodes-base.dateTime", (Execute, PureLogic)),
            ("n8n-nodes-base.debugHelper", (Execute, PureLogic)),
            ("n8n-nodes-base.discord", (Simulate, Credentials)),
            ("n8n-nodes-base.executionData", (Execute, PureLogic)),
            ("n8n-nodes-base.errorTrigger", (Simulate, Trigger)),
            ("n8n-nodes-base.executeWorkflow", (Simulate, SubWorkflow)),
            ("n8n-nodes-base.executeWorkflowTrigger", (Simulate, Trigger)),
            ("n8n-nodes-base.extractFromFile", (Execute, PureLogic)),
            ("n8n-nodes-base.filter", (Execute, PureLogic)),
            ("n8n-nodes-base.formTrigger", (Simulate, Trigger)),
            ("n8n-nodes-base.function", (Execute, PureLogic)),
            ("n8n-nodes-base.github", (Simulate, WriteOperation)),
            ("n8n-nodes-base.functionItem", (Execute, PureLogic)),
            ("n8n-nodes-base.html", (Execute, PureLogic)),
            ("n8n-nodes-base.htmlExtract", (Execute, PureLogic)),
            ("n8n-nodes-base.httpRequest", (Execute, PureLogic)),
            ("n8n-nodes-base.if", (Execute, PureLogic)),
            ("n8n-nodes-base.itemLists", (Execute, PureLogic)),
            ("n8n-nodes-base.jwt", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.chatTrigger", (Simulate, Trigger)),
            ("@n8n/n8n-nodes-langchain.agent", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.chainLlm", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.textClassifier", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.informationExtractor", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.lmChatAnthropic", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.lmChatAwsBedrock", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.lmChatOllama", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.lmChatOpenAi", (Simulate, Credentials)),
            ("@n8n/n8n-nodes-langchain.memoryBufferWindow", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.outputParserStructured", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.toolCalculator", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.toolCode", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.toolHttpRequest", (Execute, PureLogic)),
            ("@n8n/n8n-nodes-langchain.toolWorkflow", (Simulate, SubWorkflow)),
            ("n8n-nodes-base.limit", (Execute, PureLogic)),
            ("n8n-nodes-base.manualTrigger", (Simulate, Trigger)),
            ("n8n-nodes-base.markdown", (Execute, PureLogic)),
            ("n8n-nodes-base.merge", (Execute, PureLogic)),
            ("n8n-nodes-base.n8nTrainingCustomerDatastore", (Execute, PureLogic)),
            ("n8n-nodes-base.n8nTrainingCustomerMessenger", (Simulate, WriteOperation)),
            ("n8n-nodes-base.noOp", (Execute, PureLogic)),
            ("n8n-nodes-base.readBinaryFile", (Execute, PureLogic)),
            ("n8n-nodes-base.readBinaryFiles", (Execute, PureLogic)),
            ("n8n-nodes-base.readWriteFile", (Execute, PureLogic)),
            ("n8n-nodes-base.removeDuplicates", (Execute, PureLogic)),
            ("n8n-nodes-base.renameKeys", (Execute, PureLogic)),
            ("n8n-nodes-base.respondToWebhook", (Execute, PureLogic)),
            ("n8n-nodes-base.rssFeedRead", (Execute, PureLogic)),
            ("n8n-nodes-base.scheduleTrigger", (Simulate, Trigger)),
            ("n8n-nodes-base.set", (Execute, PureLogic)),
            ("n8n-nodes-base.slack", (Simulate, WriteOperation)),
            ("n8n-nodes-base.sort", (Execute, PureLogic)),
            ("n8n-nodes-base.splitInBatches", (Execute, PureLogic)),
            ("n8n-nodes-base.splitOut", (Execute, PureLogic)),
            ("n8n-nodes-base.stopAndError", (Execute, PureLogic)),
            ("n8n-nodes-base.summarize", (Execute, PureLogic)),
            ("n8n-nodes-base.switch", (Execute, PureLogic)),
            ("n8n-nodes-base.telegram", (Simulate, WriteOperation)),
            ("n8n-nodes-testing.testData", (Execute, PureLogic)),
            ("n8n-nodes-base.totp", (Simulate, Credentials)),
            ("n8n-nodes-base.wait", (Simulate, Wait)),
            ("n8n-nodes-base.webhook", (Simulate, Trigger)),
            ("n8n-nodes-base.writeBinaryFile", (Simulate, WriteOperation)),
            ("n8n-nodes-base.xml", (Execute, PureLogic)),
        ]);
        let mut missing = Vec::new();
        for d in engine::catalog::all() {
            let trigger = d.is_trigger();
            let got = mode_of(&d.name, json!({}), !trigger);
            match expected.get(d.name.as_str()) {
                Some(want) => assert_eq!(&got, want, "{}", d.name),
                None => missing.push(format!("{} → {got:?}", d.name)),
            }
            // Whatever the expectation, the invariants hold for every node.
            if trigger {
                assert_eq!(got, (Mode::Simulate, Reason::Trigger), "{}", d.name);
            }
        }
        assert!(missing.is_empty(), "catalog nodes without an expected plan (add them to the table): {missing:?}");
    }

    /// Every option of every catalog node's `operation` parameter: writes
    /// are simulated, reads and transforms execute.
    #[test]
    fn every_catalog_operation_is_classified_by_its_verb() {
        let simulated: &[&str] = &[
            "insert", "update", "deleteRows", "upsert", "write", "clearDeduplicationHistory", "post", "delete", "create", "send", "sendMessage", "sendPhoto",
            "sendDocument", "sendLegacy", "createComment", "edit", "lock", "deleteRecord",
        ];
        for d in engine::catalog::all() {
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
                    let needs_credentials = d.credentials.iter().any(|c| c.get("required").and_then(Value::as_bool) == Some(true));
                    if simulated.contains(&op) {
                        assert_eq!((mode, reason), (Mode::Simulate, Reason::WriteOperation), "{} {op}", d.name);
                    } else if needs_credentials {
                        // a read that calls a service with the person's credential
                        assert_eq!((mode, reason), (Mode::Simulate, Reason::Credentials), "{} {op}", d.name);
                    } else {
                        assert_eq!(mode, Mode::Execute, "{} {op} is not a write", d.name);
                    }
                }
            }
        }
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
        assert_eq!(mode_of("n8n-nodes-base.googleSheets", json!({"operation": "read"}), true).0, Mode::Execute);
        assert_eq!(mode_of("n8n-nodes-base.dataTable", json!({"operation": "get"}), true).0, Mode::Execute);
        assert_eq!(mode_of("n8n-nodes-base.dataTable", json!({"operation": "={{ 'insert' }}"}), true).0, Mode::Simulate);
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
