//! Workflows: list, read (whole, as a structural summary when large, a
//! historical version, as SDK code), versions, canvas validation, archive
//! and unarchive, publish and unpublish, restore and name versions.
//! Saving from source is [`crate::builder`].
//!
//! Every operation is a method on [`Instance`] taking the [`Caller`]: reads
//! resolve readability from the caller's project roles (a workflow in a
//! project they cannot read is "not found"), writes need the scope named
//! beside each operation.

use crate::access::Caller;
use crate::validate::{self, Category, Finding, Severity};
use crate::{Instance, InstanceError};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use store::data::credentials::CredentialQuery;
use store::data::workflows::{
    FolderSelector, PublishState, StatusFilter, VersionRow, Workflow, WorkflowBody, WorkflowList, WorkflowMeta, WorkflowQuery,
    WorkflowVersion,
};

/// A workflow above either size is answered by `get` with a structural
/// summary unless the caller asks for it in full.
pub const LARGE_WORKFLOW_NODES: usize = 30;
pub const LARGE_WORKFLOW_BYTES: usize = 50 * 1024;

/// Which projects a listing reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListScope {
    /// The caller's bound project (personal unless bound to another).
    #[default]
    Project,
    /// Every project the caller can read.
    Instance,
}

#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub query: Option<String>,
    /// Also match the description (MCP's `search_workflows`).
    pub match_description: bool,
    pub limit: usize,
    pub status: StatusFilter,
    pub scope: ListScope,
    /// Read one project (a narrowing: it reaches only projects the caller can read).
    pub project_id: Option<String>,
    pub folder: Option<FolderSelector>,
    pub recursive: bool,
    pub available_in_mcp: Option<bool>,
}

/// One node of a [`WorkflowSummary`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeOutline {
    pub name: String,
    #[serde(rename = "type")]
    pub node_type: String,
    pub type_version: Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// Credential types it uses (names and ids stay in the full view).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credential_types: Vec<String>,
}

/// A large workflow's structure: nodes without parameters, edges as text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowSummary {
    pub node_count: usize,
    pub size_bytes: usize,
    pub triggers: Vec<String>,
    pub nodes: Vec<NodeOutline>,
    /// `"A → B"`, `"Check [output 1] → C"`, `"D → Join [input 1]"`.
    pub connections: Vec<String>,
    pub note: String,
}

/// What `get` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowView {
    Full(Workflow),
    Summary { meta: WorkflowMeta, summary: WorkflowSummary },
    Version { meta: WorkflowMeta, version: WorkflowVersion, summary: Option<WorkflowSummary> },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowCode {
    pub workflow_id: String,
    pub name: String,
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `workflows(action="validate")`: the issues the canvas would flag.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CanvasReport {
    pub workflow_id: String,
    pub name: String,
    /// No issue left after `ignoreIssues`.
    pub valid: bool,
    pub issues: Vec<Finding>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<Category>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    pub workflow_id: String,
    pub publish_state: PublishState,
    pub publish_state_note: String,
}

pub fn is_large(body: &WorkflowBody) -> bool {
    body.node_count() > LARGE_WORKFLOW_NODES || body_size(body) > LARGE_WORKFLOW_BYTES
}

fn body_size(body: &WorkflowBody) -> usize {
    serde_json::to_vec(&json!({"nodes": body.nodes, "connections": body.connections})).map_or(0, |v| v.len())
}

/// The structure of a workflow without its parameters.
pub fn summarize(body: &WorkflowBody) -> WorkflowSummary {
    let nodes: Vec<NodeOutline> = body
        .nodes
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| NodeOutline {
            name: n.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
            node_type: n.get("type").and_then(Value::as_str).unwrap_or_default().to_owned(),
            type_version: n.get("typeVersion").cloned().unwrap_or(Value::Null),
            disabled: n.get("disabled").and_then(Value::as_bool).unwrap_or(false),
            credential_types: n.get("credentials").and_then(Value::as_object).map(|c| c.keys().cloned().collect()).unwrap_or_default(),
        })
        .collect();
    let triggers = nodes.iter().filter(|n| !n.disabled && engine::workflow::is_trigger_type(&n.node_type)).map(|n| n.name.clone()).collect();
    let mut connections = Vec::new();
    for (src, by_type) in body.connections.as_object().into_iter().flatten() {
        for (kind, outputs) in by_type.as_object().into_iter().flatten() {
            for (i, targets) in outputs.as_array().into_iter().flatten().enumerate() {
                for t in targets.as_array().into_iter().flatten() {
                    let to = t.get("node").and_then(Value::as_str).unwrap_or_default();
                    let input = t.get("index").and_then(Value::as_u64).unwrap_or(0);
                    let from = if i == 0 { src.clone() } else { format!("{src} [output {i}]") };
                    let to = if input == 0 { to.to_owned() } else { format!("{to} [input {input}]") };
                    let via = if kind == "main" { String::new() } else { format!(" ({kind})") };
                    connections.push(format!("{from} → {to}{via}"));
                }
            }
        }
    }
    WorkflowSummary {
        node_count: nodes.len(),
        size_bytes: body_size(body),
        triggers,
        nodes,
        connections,
        note: format!(
            "A large workflow (more than {LARGE_WORKFLOW_NODES} nodes or {} KB): structure only. Pass full: true for every node's parameters, or use get-as-code.",
            LARGE_WORKFLOW_BYTES / 1024
        ),
    }
}

fn publish_note(state: &PublishState) -> String {
    use store::data::workflows::LiveState;
    match state.live {
        LiveState::Unpublished => "The restored version is saved as the draft; the workflow is not published.".into(),
        LiveState::Current => "The restored version is saved and is the published version.".into(),
        LiveState::Stale => format!(
            "The restored version is saved as the draft, but production still runs version {}: publish it (workflows action=publish, with approval) to roll production back too.",
            state.active_version_id.as_deref().unwrap_or_default()
        ),
    }
}

impl Instance {
    /// Lists the workflows the caller can read (`workflows list`, MCP `search_workflows`).
    pub async fn list_workflows(&self, caller: &Caller, q: ListQuery) -> Result<WorkflowList, InstanceError> {
        let user = self.user(caller).await?;
        let project_id = match (q.project_id, q.scope) {
            (Some(p), _) => Some(p),
            (None, ListScope::Project) => Some(caller.project.clone().unwrap_or(user.personal_project_id)),
            (None, ListScope::Instance) => None,
        };
        let query = WorkflowQuery {
            query: q.query,
            match_description: q.match_description,
            project_id,
            folder: q.folder,
            recursive: q.recursive,
            status: q.status,
            limit: q.limit,
            available_in_mcp: q.available_in_mcp,
        };
        Ok(self.data.workflows.list(&caller.user, &query).await?)
    }

    /// The current draft of a workflow the caller can read.
    pub async fn workflow(&self, caller: &Caller, id: &str) -> Result<Workflow, InstanceError> {
        self.workflow_access(caller, id, "workflow:read").await?;
        self.data.workflows.get(id).await?.ok_or_else(|| InstanceError::NotFound(format!("workflow {id}")))
    }

    pub(crate) async fn version_of(&self, id: &str, version_id: &str) -> Result<WorkflowVersion, InstanceError> {
        self.data
            .workflows
            .get_version(id, version_id)
            .await?
            .ok_or_else(|| InstanceError::NotFound(format!("version {version_id} of workflow {id}")))
    }

    /// `workflows get`: small workflows whole, large ones as a summary
    /// unless `full`; `version_id` reads a historical version.
    pub async fn get_workflow(&self, caller: &Caller, id: &str, version_id: Option<&str>, full: bool) -> Result<WorkflowView, InstanceError> {
        let (meta, _) = self.workflow_access(caller, id, "workflow:read").await?;
        if let Some(v) = version_id {
            let version = self.version_of(id, v).await?;
            let summary = (!full && is_large(&version.body)).then(|| summarize(&version.body));
            return Ok(WorkflowView::Version { meta, version, summary });
        }
        let wf = self.workflow(caller, id).await?;
        if !full && is_large(&wf.body) {
            let summary = summarize(&wf.body);
            return Ok(WorkflowView::Summary { meta: wf.meta, summary });
        }
        Ok(WorkflowView::Full(wf))
    }

    /// `workflows get-as-code`: the workflow (or a version) as SDK code.
    pub async fn workflow_as_code(&self, caller: &Caller, id: &str, version_id: Option<&str>) -> Result<WorkflowCode, InstanceError> {
        let (meta, _) = self.workflow_access(caller, id, "workflow:read").await?;
        let body = match version_id {
            Some(v) => self.version_of(id, v).await?.body,
            None => self.workflow(caller, id).await?.body,
        };
        let json = json!({"id": meta.id, "name": meta.name, "nodes": body.nodes, "connections": body.connections, "settings": body.settings});
        Ok(match crate::sdk::codegen::to_code(&json) {
            Ok(code) => WorkflowCode { workflow_id: meta.id, name: meta.name, code, error: None },
            Err(e) => WorkflowCode {
                workflow_id: meta.id,
                name: meta.name,
                code: String::new(),
                error: Some(format!("this workflow cannot be written as SDK code: {e}; edit it as workflow JSON instead")),
            },
        })
    }

    pub async fn list_versions(&self, caller: &Caller, id: &str, limit: Option<usize>, skip: usize) -> Result<Vec<VersionRow>, InstanceError> {
        self.workflow_access(caller, id, "workflow:read").await?;
        Ok(self.data.workflows.list_versions(id, limit, skip).await?)
    }

    /// Validation findings of `body` plus the credential references that
    /// point at nothing the caller can use.
    pub async fn canvas_findings(&self, caller: &Caller, body: &WorkflowBody) -> Result<Vec<Finding>, InstanceError> {
        let report = validate::validate(&json!({"nodes": body.nodes, "connections": body.connections}));
        let mut findings: Vec<Finding> = report.findings.into_iter().filter(|f| f.code != "MISSING_POSITION").collect();
        let referenced: Vec<(String, String, String)> = body
            .nodes
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|n| {
                let name = n.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                n.get("credentials")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(move |(ty, r)| (name.clone(), ty.clone(), r.get("id").and_then(Value::as_str).unwrap_or_default().to_owned()))
            })
            .collect();
        if !referenced.is_empty() {
            let usable: HashSet<String> = self.visible_credentials(caller).await?.into_iter().map(|c| c.id).collect();
            for (node, ty, id) in referenced {
                if !usable.contains(&id) {
                    findings.push(Finding {
                        code: "INVALID_CREDENTIALS".into(),
                        message: format!("the {ty} credential it names does not exist or you cannot use it; select another"),
                        node_name: Some(node),
                        parameter_path: Some(format!("credentials.{ty}")),
                        category: Category::Credentials,
                        severity: Severity::Error,
                    });
                }
            }
        }
        Ok(findings)
    }

    /// Every credential the caller may use in workflows (metadata only; no
    /// page limit: a reference to the 201st is as valid as to the first).
    pub async fn visible_credentials(&self, caller: &Caller) -> Result<Vec<store::data::credentials::CredentialRow>, InstanceError> {
        Ok(self.data.credentials.list_all(&caller.user, &CredentialQuery::default()).await?)
    }

    /// `workflows validate`: the canvas issues, minus the ignored categories.
    pub async fn validate_saved(&self, caller: &Caller, id: &str, ignore: &[Category]) -> Result<CanvasReport, InstanceError> {
        let wf = self.workflow(caller, id).await?;
        let issues: Vec<Finding> =
            self.canvas_findings(caller, &wf.body).await?.into_iter().filter(|f| !ignore.contains(&f.category)).collect();
        Ok(CanvasReport { workflow_id: wf.meta.id, name: wf.meta.name, valid: issues.is_empty(), issues, ignored: ignore.to_vec() })
    }

    /// Archives (soft delete; unpublishes). `false` when it already was.
    pub async fn archive_workflow(&self, caller: &Caller, id: &str) -> Result<(WorkflowMeta, bool), InstanceError> {
        let (meta, _) = self.workflow_access(caller, id, "workflow:delete").await?;
        // Archiving unpublishes: the webhook paths and schedules go too.
        let changed = self.activation.archive(id).await?;
        Ok((meta, changed))
    }

    /// Restores an archived workflow without publishing it.
    pub async fn unarchive_workflow(&self, caller: &Caller, id: &str) -> Result<(WorkflowMeta, bool), InstanceError> {
        let (meta, _) = self.workflow_access(caller, id, "workflow:delete").await?;
        let changed = self.data.workflows.unarchive(id).await?;
        Ok((meta, changed))
    }

    /// Publishes `version_id` or the current draft; the version published.
    /// A draft without an enabled trigger cannot go live.
    pub async fn publish_workflow(&self, caller: &Caller, id: &str, version_id: Option<&str>) -> Result<String, InstanceError> {
        self.workflow_access(caller, id, "workflow:publish").await?;
        let body = match version_id {
            Some(v) => self.version_of(id, v).await?.body,
            None => self.workflow(caller, id).await?.body,
        };
        if body.trigger_count() == 0 {
            return Err(InstanceError::Invalid(format!(
                "workflow {id} has no enabled trigger node; a published workflow needs one to run"
            )));
        }
        // Claims the webhook paths and creates the schedules, or refuses.
        Ok(self.activation.publish(id, version_id).await?)
    }

    pub async fn unpublish_workflow(&self, caller: &Caller, id: &str) -> Result<WorkflowMeta, InstanceError> {
        let (meta, _) = self.workflow_access(caller, id, "workflow:publish").await?;
        self.activation.unpublish(id).await?;
        Ok(meta)
    }

    /// Restores a version as the new draft; it does not publish.
    pub async fn restore_version(&self, caller: &Caller, id: &str, version_id: &str) -> Result<Restored, InstanceError> {
        self.workflow_access(caller, id, "workflow:update").await?;
        let (wf, state) = self.data.workflows.restore_version(id, version_id, None, &caller.user).await?;
        Ok(Restored { workflow_id: wf.meta.id, publish_state_note: publish_note(&state), publish_state: state })
    }

    /// Names or describes a version (`Some(None)` clears a field).
    pub async fn update_version(
        &self,
        caller: &Caller,
        id: &str,
        version_id: &str,
        name: Option<Option<String>>,
        description: Option<Option<String>>,
    ) -> Result<(), InstanceError> {
        self.workflow_access(caller, id, "workflow:update").await?;
        Ok(self.data.workflows.update_version(id, version_id, name, description).await?)
    }
}

/// Nodes without their credential references (what MCP returns).
pub fn strip_credentials(nodes: &Value) -> Vec<Value> {
    nodes
        .as_array()
        .map(|a| {
            a.iter()
                .map(|n| {
                    let mut n = n.clone();
                    if let Some(o) = n.as_object_mut() {
                        o.remove("credentials");
                    }
                    n
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A workflow's JSON as n8n exports it (name, nodes, connections, settings).
pub fn export_json(meta: &WorkflowMeta, body: &WorkflowBody) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(meta.id));
    m.insert("name".into(), json!(meta.name));
    m.insert("nodes".into(), body.nodes.clone());
    m.insert("connections".into(), body.connections.clone());
    if !body.settings.is_null() {
        m.insert("settings".into(), body.settings.clone());
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(n: usize, param_bytes: usize) -> WorkflowBody {
        let mut nodes = vec![json!({"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}})];
        let mut conns = Map::new();
        for i in 1..n {
            nodes.push(json!({"name": format!("Step {i}"), "type": "n8n-nodes-base.set", "typeVersion": 3.4,
                "parameters": {"pad": "x".repeat(param_bytes)}, "credentials": if i == 1 { json!({"httpHeaderAuth": {"id": "c1", "name": "Key"}}) } else { Value::Null }}));
            let from = if i == 1 { "Start".to_owned() } else { format!("Step {}", i - 1) };
            conns.insert(from, json!({"main": [[{"node": format!("Step {i}"), "type": "main", "index": 0}]]}));
        }
        for n in nodes.iter_mut() {
            if n["credentials"].is_null() {
                n.as_object_mut().unwrap().remove("credentials");
            }
        }
        WorkflowBody { nodes: Value::Array(nodes), connections: Value::Object(conns), settings: Value::Null, pin_data: Value::Null, meta: Value::Null }
    }

    #[test]
    fn large_means_many_nodes_or_many_bytes() {
        assert!(!is_large(&chain(LARGE_WORKFLOW_NODES, 10)));
        assert!(is_large(&chain(LARGE_WORKFLOW_NODES + 1, 10)));
        assert!(is_large(&chain(5, LARGE_WORKFLOW_BYTES / 4)));
    }

    #[test]
    fn the_summary_keeps_structure_and_drops_parameters() {
        let mut body = chain(40, 100);
        body.connections["Step 3"] = json!({"main": [[{"node": "Step 4", "type": "main", "index": 0}], [{"node": "Step 9", "type": "main", "index": 1}]]});
        let s = summarize(&body);
        assert_eq!((s.node_count, s.triggers.as_slice()), (40, ["Start".to_owned()].as_slice()));
        assert_eq!(s.nodes[1].credential_types, ["httpHeaderAuth"]);
        assert!(s.connections.contains(&"Start → Step 1".to_owned()));
        assert!(s.connections.contains(&"Step 3 [output 1] → Step 9 [input 1]".to_owned()), "{:?}", s.connections);
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("xxxxxxxxxx") && !text.contains("\"c1\""), "no parameters or credential ids: {text}");
        assert!(s.note.contains("full: true"));
    }
}
