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
}
