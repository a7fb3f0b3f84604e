//! Which trigger a run starts from, and the items it outputs: the input the
//! caller gives, shaped the way that trigger type emits it in production
//! (`engine::partial::trigger_items`).

use crate::InstanceError;
use engine::{Graph, Item};
use serde_json::{Map, Value};

/// The trigger a run starts from and its items (`None`: the engine's default
/// single empty item).
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerStart {
    pub node: String,
    pub node_type: String,
    pub items: Option<Vec<Item>>,
}

/// Picks the trigger: the named one (which must be a trigger, or a node with
/// no parents), else the only enabled trigger. Several enabled triggers and
/// no name is refused, naming them: running one silently would leave the
/// other branches untested.
pub fn pick(graph: &Graph, name: Option<&str>) -> Result<Option<(String, String)>, InstanceError> {
    let triggers: Vec<&engine::Node> =
        graph.nodes().iter().filter(|n| !n.disabled && engine::workflow::is_trigger_type(&n.node_type)).collect();
    let names = || triggers.iter().map(|n| format!("{:?}", n.name)).collect::<Vec<_>>().join(", ");
    match name {
        Some(name) => {
            let Some(node) = graph.node(name) else {
                return Err(InstanceError::Invalid(format!(
                    "triggerNodeName {name:?} is not a node of this workflow; its triggers are {}",
                    if triggers.is_empty() { "none".to_owned() } else { names() }
                )));
            };
            if !engine::workflow::is_trigger_type(&node.node_type) && !graph.parents(name).is_empty() {
                return Err(InstanceError::Invalid(format!(
                    "{name:?} is not a trigger (it has inputs); pass one of this workflow's triggers: {}",
                    if triggers.is_empty() { "none".to_owned() } else { names() }
                )));
            }
            if node.disabled {
                return Err(InstanceError::Invalid(format!("the trigger {name:?} is disabled; enable it or pick another")));
            }
            Ok(Some((node.name.clone(), node.node_type.clone())))
        }
        None => match triggers.as_slice() {
            [] => Ok(None),
            [only] => Ok(Some((only.name.clone(), only.node_type.clone()))),
            _ => Err(InstanceError::Invalid(format!(
                "this workflow has {} enabled triggers ({}): pass triggerNodeName to choose the one to run from (run once per trigger to test each branch)",
                triggers.len(),
                names()
            ))),
        },
    }
}

/// The trigger's items for `input`, shaped by its type: chat
/// `{chatInput, sessionId, action}`, form `{submittedAt, formMode:
/// "instanceAi", ...input}`, webhook `{headers, query, params, body}` (an
/// envelope of only those keys passes through), schedule the current date and
/// time, anything else the input as the item's json. Without input, a manual
/// or unknown trigger outputs the engine's default empty item.
pub fn items(node_type: &str, input: Option<&Map<String, Value>>, timezone: &str) -> Option<Vec<Item>> {
    let shaped = matches!(
        node_type,
        "n8n-nodes-base.formTrigger" | "n8n-nodes-base.webhook" | "@n8n/n8n-nodes-langchain.chatTrigger" | "n8n-nodes-base.scheduleTrigger"
    );
    match input {
        None if !shaped => None,
        input => {
            let value = input.map(|m| Value::Object(m.clone()));
            Some(engine::partial::trigger_items(node_type, value.as_ref(), timezone))
        }
    }
}

/// A run's trigger input as a front door hands it over.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum TriggerInput {
    /// None: the trigger's default output (one empty item; a schedule's now).
    #[default]
    None,
    /// Free-form data shaped by the trigger's type ([`items`]; the agent's
    /// `inputData`).
    Data(Map<String, Value>),
    /// A chat message for a Chat Trigger.
    Chat(String),
    /// A production form submission's fields for a Form Trigger.
    Form(Map<String, Value>),
    /// An HTTP request for a Webhook: the item the real call would make.
    Webhook(WebhookInput),
}

/// A request to a Webhook trigger (its method defaults to the node's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebhookInput {
    pub method: Option<String>,
    pub query: Map<String, Value>,
    pub body: Option<Value>,
    pub headers: Map<String, Value>,
}

/// How a run picks its trigger when none is named.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TriggerChoice {
    /// The only enabled trigger; several are refused ([`pick`]).
    #[default]
    Single,
    /// The first enabled trigger (none: the engine's default start).
    First,
    /// The first enabled trigger of a [`TriggerKind`]; none is refused.
    FirstSupported,
}

/// The trigger types a full run can feed (MCP's `execute_workflow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerKind {
    Webhook,
    Chat,
    Form,
    Manual,
    Schedule,
}

impl TriggerKind {
    pub fn of(node_type: &str) -> Option<TriggerKind> {
        match node_type {
            "n8n-nodes-base.webhook" => Some(TriggerKind::Webhook),
            "@n8n/n8n-nodes-langchain.chatTrigger" => Some(TriggerKind::Chat),
            "n8n-nodes-base.formTrigger" => Some(TriggerKind::Form),
            "n8n-nodes-base.manualTrigger" => Some(TriggerKind::Manual),
            "n8n-nodes-base.scheduleTrigger" => Some(TriggerKind::Schedule),
            _ => None,
        }
    }

    /// The execution mode a production run from this trigger records.
    pub fn production_mode(self) -> store::data::executions::ExecutionMode {
        use store::data::executions::ExecutionMode;
        match self {
            TriggerKind::Webhook => ExecutionMode::Webhook,
            TriggerKind::Chat => ExecutionMode::Chat,
            _ => ExecutionMode::Trigger,
        }
    }
}

pub const SUPPORTED_TRIGGERS: &str = "Webhook, Chat Trigger, Form Trigger, Manual Trigger, Schedule Trigger";

/// The first enabled trigger of a supported kind.
pub fn first_supported<'a>(nodes: impl IntoIterator<Item = &'a engine::Node>) -> Option<(&'a engine::Node, TriggerKind)> {
    nodes.into_iter().filter(|n| !n.disabled).find_map(|n| TriggerKind::of(&n.node_type).map(|k| (n, k)))
}

/// The trigger a run starts from under `choice` (a named one is checked as
/// [`pick`] does).
pub fn choose(graph: &Graph, name: Option<&str>, choice: TriggerChoice) -> Result<Option<(String, String)>, InstanceError> {
    match (name, choice) {
        (Some(_), _) | (None, TriggerChoice::Single) => pick(graph, name),
        (None, TriggerChoice::First) => Ok(graph
            .nodes()
            .iter()
            .find(|n| !n.disabled && engine::workflow::is_trigger_type(&n.node_type))
            .map(|n| (n.name.clone(), n.node_type.clone()))),
        (None, TriggerChoice::FirstSupported) => match first_supported(graph.nodes()) {
            Some((n, _)) => Ok(Some((n.name.clone(), n.node_type.clone()))),
            None => Err(InstanceError::Invalid(format!("this workflow has no supported trigger ({SUPPORTED_TRIGGERS})"))),
        },
    }
}

/// Nodes a test run pins instead of running: triggers, nodes with
/// credentials and HTTP Request nodes. Everything else runs.
pub fn needs_pin(node: &engine::Node) -> bool {
    engine::workflow::is_trigger_type(&node.node_type)
        || node.node_type == "n8n-nodes-base.httpRequest"
        || node.credentials.as_ref().and_then(Value::as_object).is_some_and(|c| !c.is_empty())
}

/// The items `node` outputs for `input` and the output they leave on (a
/// Webhook listening to several methods has one output per method); `None`:
/// the engine's default. Input the trigger cannot take is refused.
pub fn shape(node: &engine::Node, input: &TriggerInput, timezone: &str) -> Result<(Option<Vec<Item>>, usize), InstanceError> {
    let kind = TriggerKind::of(&node.node_type);
    let wrong = |needs: &str| InstanceError::Invalid(format!("the workflow starts with the trigger {:?} ({}); it needs {needs}", node.name, node.node_type));
    match (input, kind) {
        (TriggerInput::None, _) => Ok((items(&node.node_type, None, timezone), 0)),
        (TriggerInput::Data(m), _) => Ok((items(&node.node_type, Some(m), timezone), 0)),
        (TriggerInput::Chat(text), Some(TriggerKind::Chat)) => {
            let m = Map::from_iter([("chatInput".to_owned(), Value::String(text.clone()))]);
            Ok((items(&node.node_type, Some(&m), timezone), 0))
        }
        (TriggerInput::Form(fields), Some(TriggerKind::Form)) => {
            let mut m = fields.clone();
            m.insert("submittedAt".into(), Value::String(store::data::db::now_iso()));
            m.insert("formMode".into(), Value::String("production".into()));
            Ok((Some(vec![Item::new(Value::Object(m))]), 0))
        }
        (TriggerInput::Webhook(w), Some(TriggerKind::Webhook)) => {
            // The item a real call makes (one home: engine::webhook).
            let method_default = node.parameters.get("httpMethod").and_then(Value::as_str).unwrap_or("GET");
            let request = engine::webhook::IncomingRequest {
                method: w.method.as_deref().unwrap_or(method_default).to_ascii_uppercase(),
                headers: w.headers.clone(),
                query: w.query.clone(),
                body: w.body.clone().map(engine::webhook::RequestBody::Parsed).unwrap_or_default(),
                ..Default::default()
            };
            let path = node.parameters.get("path").and_then(Value::as_str).unwrap_or("");
            let ctx = engine::webhook::TriggerContext {
                webhook_url: Some(format!("/webhook/{}", path.trim_matches('/'))),
                execution_mode: Some("production".into()),
                jwt_payload: None,
            };
            let outputs = engine::webhook::webhook_output(node, &request, &ctx).map_err(|e| InstanceError::Invalid(e.to_string()))?;
            let (output, items) = outputs.into_iter().enumerate().find(|(_, o)| !o.is_empty()).unwrap_or_default();
            Ok((Some(items), output))
        }
        (_, Some(TriggerKind::Chat)) => Err(wrong("a chat message (chatInput)")),
        (_, Some(TriggerKind::Form)) => Err(wrong("form fields (formData)")),
        (_, Some(TriggerKind::Webhook)) => Err(wrong("an HTTP request (webhookData: method, query, body, headers)")),
        (_, Some(TriggerKind::Manual | TriggerKind::Schedule)) => Ok((items(&node.node_type, None, timezone), 0)),
        (_, None) => Err(wrong("free-form input data")),
    }
}

/// Both: the trigger to start from and what it outputs.
pub fn start(graph: &Graph, name: Option<&str>, input: Option<&Map<String, Value>>) -> Result<Option<TriggerStart>, InstanceError> {
    let tz = graph.workflow.settings.timezone.clone().unwrap_or_else(|| "UTC".to_owned());
    Ok(pick(graph, name)?.map(|(node, node_type)| {
        let items = items(&node_type, input, &tz);
        TriggerStart { node, node_type, items }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn graph(nodes: Value, connections: Value) -> Graph {
        Graph::from_json(&json!({"nodes": nodes, "connections": connections})).unwrap()
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn several_enabled_triggers_need_a_name_and_the_error_names_them() {
        let g = graph(
            json!([
                {"name": "Hook", "type": "n8n-nodes-base.webhook", "parameters": {}},
                {"name": "Every hour", "type": "n8n-nodes-base.scheduleTrigger", "parameters": {}},
                {"name": "Old", "type": "n8n-nodes-base.manualTrigger", "disabled": true},
                {"name": "Set", "type": "n8n-nodes-base.set"}
            ]),
            json!({"Hook": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}),
        );
        let e = pick(&g, None).unwrap_err().to_string();
        assert!(e.contains("2 enabled triggers") && e.contains("\"Hook\"") && e.contains("\"Every hour\"") && !e.contains("Old"), "{e}");
        assert_eq!(pick(&g, Some("Every hour")).unwrap().unwrap().0, "Every hour");
        let e = pick(&g, Some("Set")).unwrap_err().to_string();
        assert!(e.contains("not a trigger"), "{e}");
        assert!(pick(&g, Some("Nope")).unwrap_err().to_string().contains("not a node"));
        assert!(pick(&g, Some("Old")).unwrap_err().to_string().contains("disabled"));
    }

    #[test]
    fn input_is_shaped_per_trigger_type() {
        let input = obj(json!({"name": "Ada"}));
        let webhook = items("n8n-nodes-base.webhook", Some(&input), "UTC").unwrap();
        assert_eq!(serde_json::to_value(&webhook[0].json).unwrap(), json!({"headers": {}, "params": {}, "query": {}, "body": {"name": "Ada"}}));
        let envelope = obj(json!({"query": {"page": "2"}, "body": {"x": 1}}));
        let passed = items("n8n-nodes-base.webhook", Some(&envelope), "UTC").unwrap();
        assert_eq!(serde_json::to_value(&passed[0].json).unwrap(), json!({"headers": {}, "params": {}, "query": {"page": "2"}, "body": {"x": 1}}));
        let form = serde_json::to_value(&items("n8n-nodes-base.formTrigger", Some(&input), "UTC").unwrap()[0].json).unwrap();
        assert_eq!((form["formMode"].as_str(), form["name"].as_str()), (Some("instanceAi"), Some("Ada")));
        assert!(form["submittedAt"].is_string());
        let chat = serde_json::to_value(&items("@n8n/n8n-nodes-langchain.chatTrigger", Some(&obj(json!({"chatInput": "hi"}))), "UTC").unwrap()[0].json).unwrap();
        assert_eq!((chat["chatInput"].as_str(), chat["action"].as_str()), (Some("hi"), Some("sendMessage")));
        assert!(chat["sessionId"].is_string());
        let schedule = serde_json::to_value(&items("n8n-nodes-base.scheduleTrigger", None, "UTC").unwrap()[0].json).unwrap();
        assert!(schedule["timestamp"].is_string() && schedule["Day of week"].is_string(), "{schedule}");
        let unknown = items("n8n-nodes-base.githubTrigger", Some(&input), "UTC").unwrap();
        assert_eq!(serde_json::to_value(&unknown[0].json).unwrap(), json!({"name": "Ada"}));
        assert!(items("n8n-nodes-base.manualTrigger", None, "UTC").is_none());
    }

    #[test]
    fn full_runs_take_the_first_supported_trigger_and_typed_input_must_fit_it() {
        let g = graph(
            json!([
                {"name": "Gh", "type": "n8n-nodes-base.githubTrigger", "parameters": {}},
                {"name": "Off", "type": "n8n-nodes-base.webhook", "disabled": true, "parameters": {}},
                {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "parameters": {"httpMethod": "POST", "path": "in"}},
                {"name": "Call", "type": "n8n-nodes-base.httpRequest", "parameters": {}},
                {"name": "Keyed", "type": "n8n-nodes-base.set", "credentials": {"httpHeaderAuth": {"id": "c1"}}},
                {"name": "Set", "type": "n8n-nodes-base.set"}
            ]),
            json!({}),
        );
        assert_eq!(choose(&g, None, TriggerChoice::FirstSupported).unwrap().unwrap().0, "Hook");
        assert_eq!(choose(&g, None, TriggerChoice::First).unwrap().unwrap().0, "Gh");
        assert!(choose(&g, None, TriggerChoice::Single).unwrap_err().to_string().contains("2 enabled triggers"));
        let none = graph(json!([{"name": "Gh", "type": "n8n-nodes-base.githubTrigger"}]), json!({}));
        assert!(choose(&none, None, TriggerChoice::FirstSupported).unwrap_err().to_string().contains("no supported trigger"));

        let hook = g.node("Hook").unwrap();
        let e = shape(hook, &TriggerInput::Chat("hi".into()), "UTC").unwrap_err().to_string();
        assert!(e.contains("\"Hook\"") && e.contains("webhookData"), "{e}");
        let request = WebhookInput { body: Some(json!({"n": 1})), query: obj(json!({"q": "x"})), ..WebhookInput::default() };
        let (items, output) = shape(hook, &TriggerInput::Webhook(request), "UTC").unwrap();
        let json = serde_json::to_value(&items.unwrap()[0].json).unwrap();
        assert_eq!((json["body"].clone(), json["query"].clone(), output), (json!({"n": 1}), json!({"q": "x"}), 0));

        let pinned: Vec<&str> = g.nodes().iter().filter(|n| needs_pin(n)).map(|n| n.name.as_str()).collect();
        assert_eq!(pinned, ["Gh", "Off", "Hook", "Call", "Keyed"], "triggers, HTTP Request and nodes with credentials");
    }
}
