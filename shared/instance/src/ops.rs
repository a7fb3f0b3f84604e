//! `update_workflow`'s partial operations, applied in order to a copy of
//! the workflow: the first failing operation fails the batch and the copy is
//! dropped, so nothing is saved (the caller saves only a fully applied copy).

use crate::catalog;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewNode {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub type_version: f64,
    pub id: Option<String>,
    pub parameters: Option<Map<String, Value>>,
    /// [x, y]
    pub position: Option<[f64; 2]>,
    pub credentials: Option<Map<String, Value>>,
    pub disabled: Option<bool>,
    pub notes: Option<String>,
}

/// One partial update, discriminated by `type`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum Operation {
    /// Deep-merges `parameters` into the node's parameters (`replace: true` replaces them).
    #[serde(rename_all = "camelCase")]
    UpdateNodeParameters { node_name: String, parameters: Map<String, Value>, replace: Option<bool> },
    /// Sets one parameter at an RFC 6901 JSON Pointer path (`/options/systemMessage`); no array indices.
    #[serde(rename_all = "camelCase")]
    SetNodeParameter { node_name: String, path: String, value: Value },
    /// Adds a node (unique name; id generated when omitted).
    AddNode { node: NewNode },
    /// Removes a node and its inbound and outbound connections.
    #[serde(rename_all = "camelCase")]
    RemoveNode { node_name: String },
    /// Renames a node and rewrites connection references.
    #[serde(rename_all = "camelCase")]
    RenameNode { old_name: String, new_name: String },
    /// Adds a connection (indexes default to 0, type to main); no duplicates.
    #[serde(rename_all = "camelCase")]
    AddConnection {
        source: String,
        target: String,
        source_index: Option<usize>,
        target_index: Option<usize>,
        connection_type: Option<String>,
    },
    /// Removes a matching connection.
    #[serde(rename_all = "camelCase")]
    RemoveConnection {
        source: String,
        target: String,
        source_index: Option<usize>,
        target_index: Option<usize>,
        connection_type: Option<String>,
    },
    /// Sets or replaces a node's credential reference.
    #[serde(rename_all = "camelCase")]
    SetNodeCredential { node_name: String, credential_key: String, credential_id: String, credential_name: String },
    /// Moves a node on the canvas.
    #[serde(rename_all = "camelCase")]
    SetNodePosition { node_name: String, position: [f64; 2] },
    /// Enables or disables a node.
    #[serde(rename_all = "camelCase")]
    SetNodeDisabled { node_name: String, disabled: bool },
    /// Updates the workflow's name (max 128) and/or description (max 255).
    SetWorkflowMetadata { name: Option<String>, description: Option<String> },
}

/// The workflow being edited.
#[derive(Debug, Clone)]
pub struct Draft {
    pub name: String,
    pub description: Option<String>,
    pub nodes: Vec<Value>,
    pub connections: Map<String, Value>,
    /// Names of nodes added by this batch (credential auto-assignment).
    pub added: Vec<String>,
}

/// Credentials the user can use: id → (name, type).
pub type Accessible = HashMap<String, (String, String)>;

fn find<'a>(nodes: &'a mut [Value], name: &str) -> Result<&'a mut Value, String> {
    nodes
        .iter_mut()
        .find(|n| n.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| format!("no node named {name:?}"))
}

fn exists(nodes: &[Value], name: &str) -> bool {
    nodes.iter().any(|n| n.get("name").and_then(Value::as_str) == Some(name))
}

fn deep_merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => deep_merge(existing, v),
                    _ => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// Adds `entry` to output `si` of `source` for `kind`, creating (or
/// repairing) the lists on the way; an identical entry is not duplicated.
fn add_target(conns: &mut Map<String, Value>, source: &str, kind: &str, si: usize, entry: Value) {
    let by_type = conns.entry(source.to_owned()).or_insert_with(|| json!({}));
    if !by_type.is_object() {
        *by_type = json!({});
    }
    let Some(m) = by_type.as_object_mut() else { return };
    let outs = m.entry(kind.to_owned()).or_insert_with(|| json!([]));
    if !outs.is_array() {
        *outs = json!([]);
    }
    let Some(outs) = outs.as_array_mut() else { return };
    while outs.len() <= si {
        outs.push(json!([]));
    }
    if !outs[si].is_array() {
        outs[si] = json!([]);
    }
    if let Some(list) = outs[si].as_array_mut() {
        if !list.contains(&entry) {
            list.push(entry);
        }
    }
}

fn rewrite_targets(conns: &mut Map<String, Value>, f: &dyn Fn(&str) -> Option<Option<String>>) {
    // f(name) → None: keep; Some(None): drop; Some(Some(new)): rename.
    for by_type in conns.values_mut() {
        for outputs in by_type.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
            for output in outputs.as_array_mut().into_iter().flatten() {
                if let Some(targets) = output.as_array_mut() {
                    targets.retain_mut(|t| {
                        let Some(n) = t.get("node").and_then(Value::as_str) else { return true };
                        match f(n) {
                            None => true,
                            Some(None) => false,
                            Some(Some(new)) => {
                                t["node"] = Value::String(new);
                                true
                            }
                        }
                    });
                }
            }
        }
    }
}

/// Applies one operation; `Err` says what was wrong.
pub fn apply(d: &mut Draft, op: &Operation, creds: &Accessible) -> Result<(), String> {
    match op {
        Operation::UpdateNodeParameters { node_name, parameters, replace } => {
            let n = find(&mut d.nodes, node_name)?;
            let params = n.as_object_mut().ok_or("node is not an object")?.entry("parameters").or_insert_with(|| json!({}));
            if replace.unwrap_or(false) {
                *params = Value::Object(parameters.clone());
            } else {
                deep_merge(params, &Value::Object(parameters.clone()));
            }
        }
        Operation::SetNodeParameter { node_name, path, value } => {
            let Some(rest) = path.strip_prefix('/') else { return Err(format!("path {path:?} must be a JSON Pointer starting with '/'")) };
            if rest.is_empty() {
                return Err("path must name a parameter, e.g. /options/systemMessage".into());
            }
            let n = find(&mut d.nodes, node_name)?;
            let mut cur = n.as_object_mut().ok_or("node is not an object")?.entry("parameters").or_insert_with(|| json!({}));
            let segs: Vec<String> = rest.split('/').map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
            for (i, seg) in segs.iter().enumerate() {
                if cur.is_array() {
                    return Err(format!("path {path:?} goes through an array; set the whole array instead"));
                }
                if !cur.is_object() {
                    *cur = json!({});
                }
                let m = cur.as_object_mut().ok_or("parameter is not an object")?;
                if i == segs.len() - 1 {
                    m.insert(seg.clone(), value.clone());
                    break;
                }
                cur = m.entry(seg.clone()).or_insert_with(|| json!({}));
            }
        }
        Operation::AddNode { node } => {
            if node.name.trim().is_empty() {
                return Err("node.name must not be empty".into());
            }
            if exists(&d.nodes, &node.name) {
                return Err(format!("a node named {:?} already exists; node names must be unique", node.name));
            }
            if catalog::describe_exact(&node.kind).is_none() && node.kind != "n8n-nodes-base.stickyNote" {
                return Err(format!("unknown node type {:?}; use search_nodes to find node types", node.kind));
            }
            let mut v = json!({
                "id": node.id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
                "name": node.name,
                "type": node.kind,
                "typeVersion": node.type_version,
                "position": node.position.map(|p| json!(p)).unwrap_or_else(|| json!([0, 0])),
                "parameters": node.parameters.clone().unwrap_or_default(),
            });
            if let Some(c) = &node.credentials {
                v["credentials"] = Value::Object(c.clone());
            }
            if node.disabled == Some(true) {
                v["disabled"] = json!(true);
            }
            if let Some(notes) = &node.notes {
                v["notes"] = json!(notes);
            }
            d.nodes.push(v);
            d.added.push(node.name.clone());
        }
        Operation::RemoveNode { node_name } => {
            if !exists(&d.nodes, node_name) {
                return Err(format!("no node named {node_name:?}"));
            }
            d.nodes.retain(|n| n.get("name").and_then(Value::as_str) != Some(node_name));
            d.connections.remove(node_name);
            let gone = node_name.clone();
            rewrite_targets(&mut d.connections, &move |n| (n == gone).then_some(None));
            d.added.retain(|n| n != node_name);
        }
        Operation::RenameNode { old_name, new_name } => {
            if new_name.trim().is_empty() {
                return Err("newName must not be empty".into());
            }
            if old_name != new_name && exists(&d.nodes, new_name) {
                return Err(format!("a node named {new_name:?} already exists"));
            }
            find(&mut d.nodes, old_name)?["name"] = json!(new_name);
            if let Some(c) = d.connections.remove(old_name) {
                d.connections.insert(new_name.clone(), c);
            }
            let (old, new) = (old_name.clone(), new_name.clone());
            rewrite_targets(&mut d.connections, &move |n| (n == old).then(|| Some(new.clone())));
            for a in d.added.iter_mut().filter(|a| *a == old_name) {
                *a = new_name.clone();
            }
        }
        Operation::AddConnection { source, target, source_index, target_index, connection_type } => {
            for n in [source, target] {
                if !exists(&d.nodes, n) {
                    return Err(format!("no node named {n:?}"));
                }
            }
            let kind = connection_type.as_deref().unwrap_or("main");
            let (si, ti) = (source_index.unwrap_or(0), target_index.unwrap_or(0));
            add_target(&mut d.connections, source, kind, si, json!({"node": target, "type": kind, "index": ti}));
        }
        Operation::RemoveConnection { source, target, source_index, target_index, connection_type } => {
            let kind = connection_type.as_deref().unwrap_or("main");
            let (si, ti) = (source_index.unwrap_or(0), target_index.unwrap_or(0));
            let entry = json!({"node": target, "type": kind, "index": ti});
            let removed = d
                .connections
                .get_mut(source.as_str())
                .and_then(|m| m.get_mut(kind))
                .and_then(|o| o.get_mut(si))
                .and_then(Value::as_array_mut)
                .map(|list| {
                    let before = list.len();
                    list.retain(|t| !(t.get("node") == entry.get("node") && t.get("index").and_then(Value::as_u64).unwrap_or(0) == ti as u64));
                    before != list.len()
                })
                .unwrap_or(false);
            if !removed {
                return Err(format!("there is no {kind} connection from {source:?} output {si} to {target:?} input {ti}"));
            }
        }
        Operation::SetNodeCredential { node_name, credential_key, credential_id, credential_name } => {
            let Some((real_name, kind)) = creds.get(credential_id) else {
                return Err(format!("credential {credential_id} does not exist or you cannot use it (list_credentials shows yours)"));
            };
            if kind != credential_key {
                return Err(format!("credential {credential_id} is of type {kind:?}, not {credential_key:?}"));
            }
            let n = find(&mut d.nodes, node_name)?;
            let ty = n.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
            let accepted = catalog::describe_exact(&ty).map(catalog::credential_types).unwrap_or_default();
            if !accepted.iter().any(|a| a == credential_key) {
                return Err(format!(
                    "node {node_name:?} ({ty}) does not accept credential key {credential_key:?}{}",
                    if accepted.is_empty() { " (it takes no credentials)".to_owned() } else { format!("; accepted: {}", accepted.join(", ")) }
                ));
            }
            let _ = credential_name; // the stored name is authoritative
            let obj = n.as_object_mut().ok_or("node is not an object")?;
            let c = obj.entry("credentials").or_insert_with(|| json!({}));
            if !c.is_object() {
                *c = json!({});
            }
            c[credential_key.as_str()] = json!({"id": credential_id, "name": real_name});
        }
        Operation::SetNodePosition { node_name, position } => {
            find(&mut d.nodes, node_name)?["position"] = json!(position);
        }
        Operation::SetNodeDisabled { node_name, disabled } => {
            let n = find(&mut d.nodes, node_name)?;
            if *disabled {
                n["disabled"] = json!(true);
            } else if let Some(o) = n.as_object_mut() {
                o.remove("disabled");
            }
        }
        Operation::SetWorkflowMetadata { name, description } => {
            if let Some(n) = name {
                if n.trim().is_empty() || n.chars().count() > 128 {
                    return Err("name must be 1-128 characters".into());
                }
                d.name = n.clone();
            }
            if let Some(desc) = description {
                if desc.chars().count() > 255 {
                    return Err("description must be at most 255 characters".into());
                }
                d.description = Some(desc.clone()).filter(|s| !s.trim().is_empty());
            }
        }
    }
    Ok(())
}

/// Applies every operation or none: `Err((index, message))` names the failing one.
pub fn apply_all(d: &Draft, ops: &[Operation], creds: &Accessible) -> Result<Draft, (usize, String)> {
    let mut copy = d.clone();
    for (i, op) in ops.iter().enumerate() {
        apply(&mut copy, op, creds).map_err(|e| (i, e))?;
    }
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> Draft {
        Draft {
            name: "W".into(),
            description: None,
            nodes: vec![
                json!({"name": "A", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}}),
                json!({"name": "B", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "parameters": {"options": {"x": 1}}}),
            ],
            connections: json!({"A": {"main": [[{"node": "B", "type": "main", "index": 0}]]}}).as_object().cloned().unwrap(),
            added: vec![],
        }
    }

    fn ops(v: Value) -> Vec<Operation> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn applies_in_order_and_atomically() {
        let d = draft();
        let good = ops(json!([
            {"type": "setNodeParameter", "nodeName": "B", "path": "/options/y", "value": 2},
            {"type": "renameNode", "oldName": "B", "newName": "C"},
            {"type": "addNode", "node": {"name": "D", "type": "n8n-nodes-base.noOp", "typeVersion": 1}},
            {"type": "addConnection", "source": "C", "target": "D"},
            {"type": "addConnection", "source": "C", "target": "D"},
            {"type": "setWorkflowMetadata", "name": "W2"}
        ]));
        let out = apply_all(&d, &good, &Accessible::new()).unwrap();
        assert_eq!(out.name, "W2");
        assert_eq!(out.nodes[1]["parameters"]["options"], json!({"x": 1, "y": 2}));
        assert_eq!(out.connections["A"]["main"][0][0]["node"], "C");
        assert_eq!(out.connections["C"]["main"][0].as_array().unwrap().len(), 1);
        assert_eq!(out.added, vec!["D"]);
        let bad = ops(json!([
            {"type": "removeNode", "nodeName": "B"},
            {"type": "removeNode", "nodeName": "Nope"}
        ]));
        let (i, msg) = apply_all(&d, &bad, &Accessible::new()).unwrap_err();
        assert_eq!(i, 1);
        assert!(msg.contains("Nope"));
        assert_eq!(d.nodes.len(), 2, "the original is untouched");
    }

    #[test]
    fn unknown_operation_fields_are_refused() {
        assert!(serde_json::from_value::<Vec<Operation>>(json!([{"type": "removeNode", "nodeName": "B", "extra": 1}])).is_err());
        assert!(serde_json::from_value::<Vec<Operation>>(json!([{"type": "explode"}])).is_err());
    }
}
