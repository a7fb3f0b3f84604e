//! `workflows(action="setup")`: what a workflow still needs before it can
//! run (credentials its nodes must have, required parameters left empty or
//! holding placeholders), as per-node setup requests for one card, and the
//! person's answer applied in one save.
//!
//! Rules (as n8n's setup): a node's credential slots come from its
//! description (filtered by display options) or, for HTTP Request, from its
//! `authentication` parameters. A slot is settled when it is bound to a
//! credential the workflow's project can use. The one stored credential of
//! a *service* type is applied without asking (it is preselected on the
//! card); a generic HTTP auth type never is. Requests are ordered as the
//! workflow runs (from the triggers, left to right). What the person skips
//! is remembered per thread and not asked again unless reopened.

use crate::credentials::{is_service_scoped, CredentialRef, TestOutcome};
use crate::ops::{self, Accessible, Draft, Operation};
use crate::validate::{credential_slots, parameter_errors};
use crate::{catalog, Caller, Instance, InstanceError};
use engine::catalog::{NodeDescription, NodeProperty};
use protocol::ids::ThreadId;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use store::data::setup_skips::Skipped;
use store::data::workflows::{Workflow, WorkflowBody, WorkflowUpdate};

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct SetupOptions {
    /// Types the person asked to create fresh: never auto-applied, their
    /// bound credential ignored (the card opens unselected).
    pub prefer_new: Vec<String>,
    /// Skipped node names or credential types to ask about again.
    pub reopen_skipped: Vec<String>,
    /// The thread the skips belong to (none: nothing is remembered).
    pub thread: Option<ThreadId>,
    /// Run each resolved credential's connection test for the card.
    pub test_credentials: bool,
    /// Every node, not only those the thread's last build of the workflow
    /// changed (see [`Instance::last_build_changes`]).
    pub include_all_nodes: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SetupNode {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub type_version: f64,
    pub parameters: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Value>,
    pub position: Value,
    pub id: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EditableParameter {
    pub name: String,
    pub display_name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub required: bool,
    pub default: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Value>>,
}

/// One card entry (n8n's `WorkflowSetupNode`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SetupRequest {
    pub node: SetupNode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub existing_credentials: Vec<CredentialRef>,
    pub is_trigger: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_first_trigger: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_auto_applied: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prefer_new_credential: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_test_result: Option<TestOutcome>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub parameter_issues: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub editable_parameters: Vec<EditableParameter>,
    pub needs_action: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub credential_needs_action: bool,
}

/// A workflow's setup state.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub workflow_id: String,
    pub workflow_name: String,
    pub project_id: String,
    /// Requests that need the person, not skipped, in run order.
    pub requests: Vec<SetupRequest>,
    /// What the person dismissed earlier and did not reopen.
    pub skipped: Vec<Skipped>,
}

/// The person's answer to the card.
#[derive(Debug, Clone, Default)]
pub struct SetupChoices {
    /// node → credential type → credential id.
    pub node_credentials: BTreeMap<String, BTreeMap<String, String>>,
    /// node → parameter → value.
    pub node_parameters: BTreeMap<String, Map<String, Value>>,
    pub skipped_nodes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CompletedNode {
    pub node_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parameters_set: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PendingNode {
    pub node_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub parameter_issues: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FailedNode {
    pub node_name: String,
    pub error: String,
}

/// `{completedNodes, nodesStillNeedingSetup, skippedByUser, failedNodes}`.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SetupResult {
    pub success: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub completed_nodes: Vec<CompletedNode>,
    pub nodes_still_needing_setup: Vec<PendingNode>,
    pub skipped_by_user: Vec<Skipped>,
    pub failed_nodes: Vec<FailedNode>,
}

/// n8n's placeholder values (`<__PLACEHOLDER_VALUE__label__>`): a value
/// the builder could not know, for the person to fill in.
fn placeholder(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => {
            let start = s.find("<__PLACEHOLDER_VALUE__")? + "<__PLACEHOLDER_VALUE__".len();
            let end = s[start..].find("__>")? + start;
            Some(s[start..end].to_owned())
        }
        Value::Array(a) => a.iter().find_map(placeholder),
        Value::Object(m) => m.values().find_map(placeholder),
        _ => None,
    }
}

fn editable(p: &NodeProperty) -> EditableParameter {
    EditableParameter {
        name: p.name.clone(),
        display_name: p.display_name.clone(),
        kind: p.prop_type.clone(),
        required: p.required,
        default: p.default.clone(),
        options: p.options.clone().filter(|_| p.prop_type == "options" || p.prop_type == "multiOptions"),
    }
}

/// Parameter problems a person can fix on the card.
fn parameter_issues(d: &NodeDescription, params: &Map<String, Value>, version: f64) -> BTreeMap<String, Vec<String>> {
    let mut issues: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (param, message) in parameter_errors(d, params, Some(version)) {
        issues.entry(param).or_default().push(message);
    }
    for (param, v) in params {
        if let Some(label) = placeholder(v) {
            issues.entry(param.clone()).or_default().push(format!("Placeholder \"{label}\" — please provide the real value"));
        }
    }
    issues
}

/// Node names in run order: depth first from each trigger (left to right),
/// unreachable nodes last.
fn run_order(nodes: &[Value], connections: &Value) -> HashMap<String, usize> {
    let mut next: HashMap<&str, Vec<&str>> = HashMap::new();
    for (src, by_type) in connections.as_object().into_iter().flatten() {
        for outputs in by_type.get("main").and_then(Value::as_array).into_iter().flatten() {
            for t in outputs.as_array().into_iter().flatten() {
                if let Some(n) = t.get("node").and_then(Value::as_str) {
                    next.entry(src.as_str()).or_default().push(n);
                }
            }
        }
    }
    let x = |n: &Value| n.pointer("/position/0").and_then(Value::as_f64).unwrap_or(0.0);
    let mut triggers: Vec<&Value> = nodes
        .iter()
        .filter(|n| n.get("type").and_then(Value::as_str).is_some_and(engine::workflow::is_trigger_type))
        .collect();
    triggers.sort_by(|a, b| x(a).total_cmp(&x(b)));
    let mut order = HashMap::new();
    let mut stack: Vec<&str> = triggers.iter().rev().filter_map(|n| n.get("name").and_then(Value::as_str)).collect();
    while let Some(n) = stack.pop() {
        if order.contains_key(n) {
            continue;
        }
        order.insert(n.to_owned(), order.len());
        for c in next.get(n).into_iter().flatten().rev() {
            stack.push(c);
        }
    }
    order
}

/// Nodes of `after` that `before` lacks or holds otherwise (by name; the
/// canvas position is not a change).
pub fn changed_nodes(before: Option<&WorkflowBody>, after: &WorkflowBody) -> HashSet<String> {
    let strip = |n: &Value| {
        let mut n = n.clone();
        if let Some(o) = n.as_object_mut() {
            o.remove("position");
        }
        n
    };
    let old: HashMap<&str, Value> = before
        .and_then(|b| b.nodes.as_array())
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n.get("name")?.as_str()?, strip(n))))
        .collect();
    after
        .nodes
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| {
            let name = n.get("name")?.as_str()?;
            (old.get(name) != Some(&strip(n))).then(|| name.to_owned())
        })
        .collect()
}

impl Instance {
    /// The workflow's setup requests. Needs `workflow:update`: setting a
    /// workflow up changes it.
    pub async fn analyze_setup(&self, caller: &Caller, workflow_id: &str, opts: &SetupOptions) -> Result<Analysis, InstanceError> {
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let wf = self.data.workflows.get(&meta.id).await?.ok_or_else(|| InstanceError::NotFound(format!("workflow {workflow_id}")))?;
        let mut skipped = match &opts.thread {
            Some(t) => self.data.setup_skips.get(t, &meta.id).await?,
            None => Vec::new(),
        };
        let before = skipped.len();
        skipped.retain(|s| {
            !opts.reopen_skipped.iter().any(|r| *r == s.node_name || s.credential_type.as_deref() == Some(r.as_str()))
        });
        if let (Some(t), true) = (&opts.thread, skipped.len() != before) {
            self.data.setup_skips.set(t, &meta.id, &skipped).await?;
        }
        let all = self.setup_requests(caller, &wf, opts).await?;
        let skipped_names: HashSet<&str> = skipped.iter().map(|s| s.node_name.as_str()).collect();
        let changed = match (&opts.thread, opts.include_all_nodes) {
            (Some(t), false) => self.last_build_changes(t, &meta.id).await?,
            _ => None,
        };
        let requests = all
            .into_iter()
            .filter(|r| r.needs_action && !skipped_names.contains(r.node.name.as_str()))
            .filter(|r| changed.as_ref().is_none_or(|c| c.contains(&r.node.name)))
            .collect();
        Ok(Analysis { workflow_id: meta.id, workflow_name: meta.name, project_id: meta.project_id, requests, skipped })
    }

    /// Names of the nodes the thread's last build of the workflow changed:
    /// added, or different from the version before it (position aside).
    /// `None` when unknown — no build of it in this thread, or its version
    /// no longer among the last 100 — and then setup looks at every node.
    pub async fn last_build_changes(&self, thread: &ThreadId, workflow_id: &str) -> Result<Option<HashSet<String>>, InstanceError> {
        let Some(build) = self.data.workspace.bindings(thread).await?.into_iter().filter(|b| b.workflow_id == workflow_id).max_by(|a, b| a.built_at.cmp(&b.built_at))
        else {
            return Ok(None);
        };
        let versions = self.data.workflows.list_versions(workflow_id, Some(100), 0).await?;
        let Some(at) = versions.iter().position(|v| v.info.version_id == build.version_id) else { return Ok(None) };
        let Some(built) = self.data.workflows.get_version(workflow_id, &build.version_id).await? else { return Ok(None) };
        let before = match versions.get(at + 1) {
            Some(prev) => self.data.workflows.get_version(workflow_id, &prev.info.version_id).await?.map(|v| v.body),
            None => None, // the build created the workflow: every node is new
        };
        Ok(Some(changed_nodes(before.as_ref(), &built.body)))
    }

    /// Every request of the workflow (settled ones too), in run order.
    async fn setup_requests(&self, caller: &Caller, wf: &Workflow, opts: &SetupOptions) -> Result<Vec<SetupRequest>, InstanceError> {
        let project = &wf.meta.project_id;
        let nodes = wf.body.nodes.as_array().cloned().unwrap_or_default();
        let order = run_order(&nodes, &wf.body.connections);
        let mut candidates: HashMap<String, Vec<CredentialRef>> = HashMap::new();
        let mut tests: HashMap<String, TestOutcome> = HashMap::new();
        let mut out = Vec::new();
        for n in &nodes {
            let Some(name) = n.get("name").and_then(Value::as_str) else { continue };
            if n.get("disabled").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let kind = n.get("type").and_then(Value::as_str).unwrap_or_default();
            let Some(d) = catalog::describe_exact(kind) else { continue };
            let version = n.get("typeVersion").and_then(Value::as_f64).unwrap_or_else(|| d.latest_version());
            let params = n.get("parameters").and_then(Value::as_object).cloned().unwrap_or_default();
            let issues = parameter_issues(d, &params, version);
            let editable_parameters: Vec<EditableParameter> =
                issues.keys().filter_map(|k| d.properties.iter().find(|p| &p.name == k)).map(editable).collect();
            let node = SetupNode {
                name: name.to_owned(),
                kind: kind.to_owned(),
                type_version: version,
                parameters: Value::Object(params.clone()),
                credentials: n.get("credentials").filter(|c| c.as_object().is_some_and(|m| !m.is_empty())).cloned(),
                position: n.get("position").cloned().unwrap_or(json!([0, 0])),
                id: n.get("id").and_then(Value::as_str).unwrap_or(name).to_owned(),
            };
            let slots = credential_slots(d, &params, version);
            let base = |credential_type: Option<String>| SetupRequest {
                node: node.clone(),
                credential_type,
                existing_credentials: Vec::new(),
                is_trigger: d.is_trigger(),
                is_first_trigger: false,
                is_auto_applied: false,
                prefer_new_credential: false,
                credential_test_result: None,
                parameter_issues: issues.clone(),
                editable_parameters: editable_parameters.clone(),
                needs_action: !issues.is_empty(),
                credential_needs_action: false,
            };
            if slots.is_empty() {
                if !issues.is_empty() {
                    out.push(base(None));
                }
                continue;
            }
            for slot in slots {
                let existing = match candidates.get(&slot) {
                    Some(c) => c.clone(),
                    None => {
                        let c = self.usable_credentials(caller, project, &slot).await?;
                        candidates.insert(slot.clone(), c.clone());
                        c
                    }
                };
                let prefer_new = opts.prefer_new.contains(&slot);
                let bound = (!prefer_new)
                    .then(|| n.pointer(&format!("/credentials/{slot}/id")).and_then(Value::as_str).filter(|s| !s.is_empty()))
                    .flatten()
                    .map(str::to_owned);
                let settled = bound.as_ref().is_some_and(|b| existing.iter().any(|c| &c.id == b));
                let auto = !prefer_new && bound.is_none() && is_service_scoped(&slot) && existing.len() == 1;
                let mut r = base(Some(slot.clone()));
                let mut creds = node.credentials.clone().unwrap_or_else(|| json!({}));
                if prefer_new {
                    if let Some(m) = creds.as_object_mut() {
                        m.remove(&slot);
                    }
                }
                if auto {
                    creds[slot.as_str()] = json!({"id": existing[0].id, "name": existing[0].name});
                }
                r.node.credentials = creds.as_object().is_some_and(|m| !m.is_empty()).then_some(creds);
                let effective = bound.clone().filter(|_| settled).or_else(|| auto.then(|| existing[0].id.clone()));
                if let (true, Some(id)) = (opts.test_credentials, effective) {
                    let outcome = match tests.get(&id) {
                        Some(o) => o.clone(),
                        None => {
                            let o = self.test_credential(caller, &id).await?;
                            tests.insert(id.clone(), o.clone());
                            o
                        }
                    };
                    r.credential_test_result = outcome.tested.then_some(outcome);
                }
                r.existing_credentials = existing;
                r.is_auto_applied = auto;
                r.prefer_new_credential = prefer_new;
                r.credential_needs_action = !settled;
                r.needs_action = !settled || !issues.is_empty();
                out.push(r);
            }
        }
        out.sort_by(|a, b| {
            let rank = |r: &SetupRequest| order.get(&r.node.name).copied().unwrap_or(usize::MAX);
            let pos = |r: &SetupRequest, i: usize| r.node.position.get(i).and_then(Value::as_f64).unwrap_or(0.0);
            rank(a).cmp(&rank(b)).then(pos(a, 0).total_cmp(&pos(b, 0))).then(pos(a, 1).total_cmp(&pos(b, 1)))
        });
        if let Some(first) = out.iter_mut().find(|r| r.is_trigger) {
            first.is_first_trigger = true;
        }
        Ok(out)
    }

    /// Applies the person's choices in one save, remembers what they
    /// skipped, and reports what is left.
    pub async fn apply_setup(
        &self,
        caller: &Caller,
        workflow_id: &str,
        opts: &SetupOptions,
        choices: &SetupChoices,
    ) -> Result<SetupResult, InstanceError> {
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let wf = self.data.workflows.get(&meta.id).await?.ok_or_else(|| InstanceError::NotFound(format!("workflow {workflow_id}")))?;
        let nodes = wf.body.nodes.as_array().cloned().unwrap_or_default();
        let names: HashSet<&str> = nodes.iter().filter_map(|n| n.get("name").and_then(Value::as_str)).collect();
        let mut failed = Vec::new();
        let mut operations = Vec::new();
        let mut accessible = Accessible::new();
        let mut completed = Vec::new();
        let touched: Vec<&String> = {
            let mut t: Vec<&String> = choices.node_credentials.keys().chain(choices.node_parameters.keys()).collect();
            t.sort();
            t.dedup();
            t
        };
        for node in touched {
            if !names.contains(node.as_str()) {
                failed.push(FailedNode { node_name: node.clone(), error: format!("Node \"{node}\" was not found in the workflow") });
                continue;
            }
            let mut node_ok = true;
            let mut applied_types = Vec::new();
            for (kind, id) in choices.node_credentials.get(node).into_iter().flatten() {
                match self.pick_credential(caller, &meta.project_id, kind, id).await {
                    Ok(c) => {
                        accessible.insert(c.id.clone(), (c.name.clone(), kind.clone()));
                        operations.push(Operation::SetNodeCredential {
                            node_name: node.clone(),
                            credential_key: kind.clone(),
                            credential_id: c.id,
                            credential_name: c.name,
                        });
                        applied_types.push(kind.clone());
                    }
                    Err(e) => {
                        node_ok = false;
                        failed.push(FailedNode { node_name: node.clone(), error: e.message() });
                    }
                }
            }
            let params: Vec<String> = choices.node_parameters.get(node).map(|p| p.keys().cloned().collect()).unwrap_or_default();
            if let Some(p) = choices.node_parameters.get(node).filter(|p| !p.is_empty()) {
                operations.push(Operation::UpdateNodeParameters { node_name: node.clone(), parameters: p.clone(), replace: None });
            }
            if !node_ok {
                continue;
            }
            if applied_types.is_empty() {
                completed.push(CompletedNode { node_name: node.clone(), credential_type: None, parameters_set: params });
            } else {
                for t in applied_types {
                    completed.push(CompletedNode { node_name: node.clone(), credential_type: Some(t), parameters_set: params.clone() });
                }
            }
        }
        if !operations.is_empty() {
            if let Err(e) = self.save_setup(caller, &wf, &operations, &accessible).await {
                let error = format!("Failed to save the workflow: {}", e.message());
                failed.extend(completed.drain(..).map(|c| FailedNode { node_name: c.node_name, error: error.clone() }));
                failed.dedup();
            }
        }
        if let (Some(thread), false) = (&opts.thread, choices.skipped_nodes.is_empty()) {
            let before = self.setup_requests(caller, &wf, &SetupOptions { test_credentials: false, ..opts.clone() }).await?;
            let mut skips = self.data.setup_skips.get(thread, &meta.id).await?;
            for n in &choices.skipped_nodes {
                let types: Vec<Option<String>> = before.iter().filter(|r| &r.node.name == n).map(|r| r.credential_type.clone()).collect();
                for t in if types.is_empty() { vec![None] } else { types } {
                    skips.push(Skipped { node_name: n.clone(), credential_type: t });
                }
            }
            self.data.setup_skips.set(thread, &meta.id, &skips).await?;
        }
        let after = self.analyze_setup(caller, &meta.id, &SetupOptions { test_credentials: false, reopen_skipped: Vec::new(), ..opts.clone() }).await?;
        Ok(SetupResult {
            success: failed.is_empty(),
            deferred: false,
            reason: None,
            completed_nodes: completed,
            nodes_still_needing_setup: pending(&after.requests),
            skipped_by_user: after.skipped,
            failed_nodes: failed,
        })
    }

    /// Setup without the person (the admin policy lets the agent act): the
    /// credentials that apply without asking are applied, the rest reported.
    pub async fn auto_setup(&self, caller: &Caller, workflow_id: &str, opts: &SetupOptions) -> Result<SetupResult, InstanceError> {
        let a = self.analyze_setup(caller, workflow_id, opts).await?;
        let mut choices = SetupChoices::default();
        for r in a.requests.iter().filter(|r| r.is_auto_applied) {
            if let (Some(t), Some(c)) = (&r.credential_type, r.existing_credentials.first()) {
                choices.node_credentials.entry(r.node.name.clone()).or_default().insert(t.clone(), c.id.clone());
            }
        }
        self.apply_setup(caller, workflow_id, opts, &choices).await
    }

    /// One save of the setup operations, from the version that was read.
    async fn save_setup(&self, caller: &Caller, wf: &Workflow, operations: &[Operation], accessible: &Accessible) -> Result<(), InstanceError> {
        let draft = Draft {
            name: wf.meta.name.clone(),
            description: wf.meta.description.clone(),
            nodes: wf.body.nodes.as_array().cloned().unwrap_or_default(),
            connections: wf.body.connections.as_object().cloned().unwrap_or_default(),
            added: Vec::new(),
        };
        let next = ops::apply_all(&draft, operations, accessible).map_err(|(_, e)| InstanceError::Invalid(e))?;
        let body = WorkflowBody {
            nodes: Value::Array(next.nodes),
            connections: Value::Object(next.connections),
            settings: wf.body.settings.clone(),
            pin_data: wf.body.pin_data.clone(),
            meta: wf.body.meta.clone(),
        };
        body.validate()?;
        self.data
            .workflows
            .update(&wf.meta.id, &wf.meta.version_id, WorkflowUpdate { body: Some(body), ..WorkflowUpdate::default() }, &caller.user)
            .await?;
        Ok(())
    }
}

/// What still needs someone, as the result lists it.
pub fn pending(requests: &[SetupRequest]) -> Vec<PendingNode> {
    requests
        .iter()
        .map(|r| PendingNode {
            node_name: r.node.name.clone(),
            credential_type: r.credential_type.clone().filter(|_| r.credential_needs_action),
            parameter_issues: r.parameter_issues.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_request_slots_follow_its_authentication_parameters() {
        let d = catalog::describe_exact("n8n-nodes-base.httpRequest").unwrap();
        let p = |v: Value| v.as_object().cloned().unwrap();
        assert!(credential_slots(d, &p(json!({"url": "https://x"})), 4.2).is_empty());
        assert_eq!(
            credential_slots(d, &p(json!({"authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth"})), 4.2),
            ["httpHeaderAuth"]
        );
        assert_eq!(credential_slots(d, &p(json!({"authentication": "predefinedCredentialType", "nodeCredentialType": "slackApi"})), 4.2), ["slackApi"]);
        let totp = catalog::describe_exact("n8n-nodes-base.totp").unwrap();
        assert_eq!(credential_slots(totp, &Map::new(), 1.0), ["totpApi"]);
    }

    #[test]
    fn placeholders_and_run_order() {
        assert_eq!(placeholder(&json!({"a": ["<__PLACEHOLDER_VALUE__Your sheet ID__>"]})).as_deref(), Some("Your sheet ID"));
        assert_eq!(placeholder(&json!("plain")), None);
        let nodes = vec![
            json!({"name": "B", "type": "n8n-nodes-base.set", "position": [400, 0]}),
            json!({"name": "Late trigger", "type": "n8n-nodes-base.manualTrigger", "position": [100, 0]}),
            json!({"name": "A", "type": "n8n-nodes-base.set", "position": [200, 0]}),
            json!({"name": "Early trigger", "type": "n8n-nodes-base.scheduleTrigger", "position": [0, 0]}),
        ];
        let conns = json!({"Early trigger": {"main": [[{"node": "B"}]]}, "Late trigger": {"main": [[{"node": "A"}]]}});
        let o = run_order(&nodes, &conns);
        assert!(o["Early trigger"] < o["B"] && o["B"] < o["Late trigger"] && o["Late trigger"] < o["A"], "{o:?}");
    }
}
