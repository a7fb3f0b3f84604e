//! Workflows in n8n workflow JSON, with version history.
//!
//! Every save is an immutable version; the workflow's head item points at
//! the current draft (`versionId`) and, when published, at the active
//! version (`activeVersionId`). A save from version X (1) claims X's
//! successor slot (`sk=next#X`, one conditional put: of concurrent writers
//! from X exactly one gets it, the others get `Conflict` having written
//! nothing, never a silent overwrite), (2) writes the new version, (3) moves
//! the head on condition that `versionId` is still X. A writer that dies
//! between (1) and (3) leaves a claim that the next writer rolls forward
//! (its version is complete) or releases (it is not) after 30 s.
//! Only single-item conditional writes decide races: they are atomic in
//! DynamoDB and, unlike failed transactions, also in moto.
//!
//! Items (Instance table, partition `wf#<id>`):
//! - head `sk=head`: metadata only, `gsi1pk=wfs#<project>` lists a project's workflows
//! - successor claim `sk=next#<versionId>`
//! - version `sk=ver#<versionId>`: authors, timestamp, autosaved, name (ids are time-ordered)
//! - body `sk=body#<versionId>`: the workflow JSON, DEFLATE-compressed, at most ~350 KB compressed
//! - Remove Duplicates' history `sk=processed#<context>` (see [`super::processed_data`])
//!
//! Listing reads a project's heads through the index and filters in memory
//! (name/description substring, folder, status): fine for thousands of
//! workflows per project; far beyond that it wants a search index.

use super::db::{self, b, get_b, key, s, to_item, tx_check, tx_put, Item, Table, MAX_ITEM_PAYLOAD};
use super::folders::{self, Folder, FolderRef, FolderResolution, Folders, ResolutionFailure};
use super::tags::{Tag, Tags};
use super::webhooks::Webhooks;
use super::users_projects::{ProjectAccess, ProjectRole, Projects};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use protocol::UserId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub const MAX_NAME: usize = 128;
pub const MAX_DESCRIPTION: usize = 255;

/// The graph and its companions, as n8n workflow JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowBody {
    pub nodes: Value,
    pub connections: Value,
    #[serde(default)]
    pub settings: Value,
    #[serde(default)]
    pub pin_data: Value,
    #[serde(default)]
    pub meta: Value,
}

impl WorkflowBody {
    /// Checks the n8n shape: nodes is an array of objects with a unique
    /// non-empty `name` and a `type`; connections reference existing nodes.
    pub fn validate(&self) -> Result<(), StoreError> {
        let invalid = |m: String| Err(StoreError::Invalid(m));
        let Some(nodes) = self.nodes.as_array() else { return invalid("nodes must be an array".into()) };
        let mut names = HashSet::new();
        for (i, node) in nodes.iter().enumerate() {
            let Some(name) = node.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty()) else {
                return invalid(format!("node {i} has no name"));
            };
            if node.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
                return invalid(format!("node {name:?} has no type"));
            }
            if !names.insert(name) {
                return invalid(format!("node name {name:?} is used twice"));
            }
        }
        let Some(conns) = self.connections.as_object() else { return invalid("connections must be an object".into()) };
        for (source, by_type) in conns {
            if !names.contains(source.as_str()) {
                return invalid(format!("connection from unknown node {source:?}"));
            }
            let Some(by_type) = by_type.as_object() else {
                return invalid(format!("connections of {source:?} must be an object"));
            };
            for (kind, outputs) in by_type {
                let Some(outputs) = outputs.as_array() else {
                    return invalid(format!("connections {source:?}.{kind} must be an array"));
                };
                for output in outputs.iter().filter(|o| !o.is_null()) {
                    let Some(targets) = output.as_array() else {
                        return invalid(format!("connections {source:?}.{kind} outputs must be arrays"));
                    };
                    for t in targets {
                        match t.get("node").and_then(Value::as_str) {
                            Some(n) if names.contains(n) => {}
                            Some(n) => return invalid(format!("connection from {source:?} to unknown node {n:?}")),
                            None => return invalid(format!("connection from {source:?} has no target node")),
                        }
                    }
                }
            }
        }
        for (field, v) in [("settings", &self.settings), ("pinData", &self.pin_data), ("meta", &self.meta)] {
            if !(v.is_null() || v.is_object()) {
                return invalid(format!("{field} must be an object"));
            }
        }
        Ok(())
    }

    pub fn node_count(&self) -> usize {
        self.nodes.as_array().map_or(0, Vec::len)
    }

    /// Enabled trigger nodes (`…Trigger` types and webhooks).
    pub fn trigger_count(&self) -> usize {
        self.nodes.as_array().map_or(0, |nodes| {
            nodes
                .iter()
                .filter(|n| !n.get("disabled").and_then(Value::as_bool).unwrap_or(false))
                .filter(|n| {
                    let t = n.get("type").and_then(Value::as_str).unwrap_or_default();
                    let last = t.rsplit('.').next().unwrap_or_default().to_lowercase();
                    last.ends_with("trigger") || last == "webhook"
                })
                .count()
        })
    }
}

/// Typed metadata of a workflow (the head item).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowMeta {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub project_id: String,
    pub parent_folder_id: Option<String>,
    pub is_archived: bool,
    /// The current draft.
    pub version_id: String,
    /// The published version; `None` when unpublished.
    pub active_version_id: Option<String>,
    #[serde(rename = "availableInMCP")]
    pub available_in_mcp: bool,
    pub tag_ids: Vec<String>,
    pub trigger_count: usize,
    pub node_count: usize,
    pub created_at: String,
    pub updated_at: String,
    pub created_by: UserId,
}

impl WorkflowMeta {
    pub fn active(&self) -> bool {
        self.active_version_id.is_some()
    }

    pub fn publish_state(&self) -> PublishState {
        let live = match &self.active_version_id {
            None => LiveState::Unpublished,
            Some(a) if *a == self.version_id => LiveState::Current,
            Some(_) => LiveState::Stale,
        };
        PublishState {
            saved_version_id: self.version_id.clone(),
            active_version_id: self.active_version_id.clone(),
            live,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveState {
    Unpublished,
    Current,
    Stale,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishState {
    pub saved_version_id: String,
    pub active_version_id: Option<String>,
    pub live: LiveState,
}

/// A workflow with its current draft.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    #[serde(flatten)]
    pub meta: WorkflowMeta,
    #[serde(flatten)]
    pub body: WorkflowBody,
    pub tags: Vec<Tag>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    pub version_id: String,
    pub workflow_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub authors: Vec<String>,
    pub created_at: String,
    pub autosaved: bool,
}

/// A row of `list-versions`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionRow {
    #[serde(flatten)]
    pub info: VersionInfo,
    pub is_active: bool,
    pub is_current_draft: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowVersion {
    #[serde(flatten)]
    pub info: VersionInfo,
    #[serde(flatten)]
    pub body: WorkflowBody,
}

#[derive(Debug, Clone)]
pub struct NewWorkflow {
    pub name: String,
    pub description: Option<String>,
    pub project_id: String,
    pub folder_id: Option<String>,
    pub body: WorkflowBody,
    pub available_in_mcp: bool,
}

/// A save: any of name, description, body; absent parts are kept.
#[derive(Debug, Clone, Default)]
pub struct WorkflowUpdate {
    pub name: Option<String>,
    /// `Some(None)` clears the description.
    pub description: Option<Option<String>>,
    pub body: Option<WorkflowBody>,
    pub autosaved: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    #[default]
    Active,
    Archived,
    All,
}

impl StatusFilter {
    pub fn admits(self, meta: &WorkflowMeta) -> bool {
        match self {
            StatusFilter::Active => !meta.is_archived,
            StatusFilter::Archived => meta.is_archived,
            StatusFilter::All => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FolderSelector {
    Id(String),
    /// As the user named it: `Clients/Acme`, `Acme`.
    Path(String),
}

#[derive(Debug, Clone)]
pub struct WorkflowQuery {
    /// Case-insensitive substring on the name (and the description when
    /// `match_description`, as `search_workflows` does).
    pub query: Option<String>,
    pub match_description: bool,
    /// Narrows to one project the user can read.
    pub project_id: Option<String>,
    pub folder: Option<FolderSelector>,
    pub recursive: bool,
    pub status: StatusFilter,
    /// 1–200 (the caller applies its own default: 50 for `list`).
    pub limit: usize,
    pub available_in_mcp: Option<bool>,
}

impl Default for WorkflowQuery {
    fn default() -> Self {
        WorkflowQuery {
            query: None,
            match_description: false,
            project_id: None,
            folder: None,
            recursive: true,
            status: StatusFilter::Active,
            limit: 50,
            available_in_mcp: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectRef {
    pub id: String,
    pub name: String,
}

/// What deleting a folder did: folders removed (it and its subfolders) and
/// workflows moved out of them (to the transfer folder, or archived at the
/// project root).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FolderDeleted {
    pub folders: usize,
    pub workflows: usize,
}

/// A workflow row as the listing tools return it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRow {
    #[serde(flatten)]
    pub meta: WorkflowMeta,
    pub active: bool,
    /// Present only when the listing spans more than one project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<ProjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<FolderRef>,
    pub scopes: Vec<String>,
    pub can_execute: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowList {
    pub workflows: Vec<WorkflowRow>,
    /// Matches of every filter (before `limit`).
    pub total: usize,
    /// Same status and scope with `query` dropped.
    pub total_in_scope: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder_resolution: Option<FolderResolution>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadItem {
    pk: String,
    sk: String,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    meta: WorkflowMeta,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct VersionItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    info: VersionInfo,
}

fn wf_pk(id: &str) -> String {
    format!("wf#{id}")
}

fn head_item(meta: &WorkflowMeta) -> Result<Item, StoreError> {
    to_item(&HeadItem {
        pk: wf_pk(&meta.id),
        sk: "head".into(),
        gsi1pk: format!("wfs#{}", meta.project_id),
        gsi1sk: format!("wf#{}", meta.id),
        meta: meta.clone(),
    })
}

fn check_name(name: &str) -> Result<String, StoreError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(StoreError::Invalid(format!("workflow name must be 1–{MAX_NAME} characters")));
    }
    Ok(name.to_owned())
}

fn check_description(d: Option<String>) -> Result<Option<String>, StoreError> {
    match d {
        Some(d) if d.chars().count() > MAX_DESCRIPTION => {
            Err(StoreError::Invalid(format!("workflow description must be at most {MAX_DESCRIPTION} characters")))
        }
        Some(d) if d.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

fn encode_body(body: &WorkflowBody) -> Result<Vec<u8>, StoreError> {
    let json = serde_json::to_vec(body).map_err(|e| StoreError::Invalid(format!("workflow JSON: {e}")))?;
    let packed = db::compress(&json)?;
    if packed.len() > MAX_ITEM_PAYLOAD {
        return Err(StoreError::Invalid(format!(
            "workflow is too large: {} bytes of JSON compress to {} bytes, the limit is {MAX_ITEM_PAYLOAD}",
            json.len(),
            packed.len()
        )));
    }
    Ok(packed)
}

/// Workflows, their versions, publishing and placement.
#[derive(Clone, Debug)]
pub struct Workflows {
    table: Table,
    projects: Projects,
    folders: Folders,
    tags: Tags,
    /// Test webhook endpoints follow the draft (see `webhooks`).
    webhooks: Webhooks,
}

impl Workflows {
    pub fn new(table: Table, projects: Projects, folders: Folders, tags: Tags) -> Self {
        let webhooks = Webhooks::new(table.clone());
        Workflows { table, projects, folders, tags, webhooks }
    }

    /// Points the test webhook URLs at a saved draft. A failure is logged,
    /// not returned: the version is saved, and the next save retries.
    async fn sync_test_webhooks(&self, id: &str, version_id: &str, body: &WorkflowBody) {
        if let Err(e) = self.webhooks.sync_test(id, version_id, &body.nodes).await {
            tracing::warn!(workflowId = %id, error = %e, "test webhook paths not updated");
        }
    }

    fn version_items(&self, info: &VersionInfo, body: &WorkflowBody) -> Result<Vec<Item>, StoreError> {
        let meta = to_item(&VersionItem {
            pk: wf_pk(&info.workflow_id),
            sk: format!("ver#{}", info.version_id),
            info: info.clone(),
        })?;
        let mut body_item = key(wf_pk(&info.workflow_id), format!("body#{}", info.version_id));
        body_item.insert("body".into(), b(encode_body(body)?));
        Ok(vec![meta, body_item])
    }

    /// Creates a workflow (its first version) in a project, optionally in a folder.
    pub async fn create(&self, new: NewWorkflow, author: &UserId) -> Result<Workflow, StoreError> {
        let name = check_name(&new.name)?;
        let description = check_description(new.description)?;
        new.body.validate()?;
        if let Some(f) = &new.folder_id {
            if self.folders.get(&new.project_id, f).await?.is_none() {
                return Err(StoreError::NotFound(format!("folder {f} in project {}", new.project_id)));
            }
        }
        let now = db::now_iso();
        let meta = WorkflowMeta {
            id: db::new_id(),
            name,
            description,
            project_id: new.project_id.clone(),
            parent_folder_id: new.folder_id,
            is_archived: false,
            version_id: db::new_ordered_id(),
            active_version_id: None,
            available_in_mcp: new.available_in_mcp,
            tag_ids: Vec::new(),
            trigger_count: new.body.trigger_count(),
            node_count: new.body.node_count(),
            created_at: now.clone(),
            updated_at: now.clone(),
            created_by: author.clone(),
        };
        let info = VersionInfo {
            version_id: meta.version_id.clone(),
            workflow_id: meta.id.clone(),
            name: None,
            description: None,
            authors: vec![author.to_string()],
            created_at: now,
            autosaved: false,
        };
        let t = &self.table.name;
        let mut tx = vec![
            tx_check(t, key(format!("project#{}", new.project_id), "project"), "attribute_exists(pk)", vec![])?,
            tx_put(t, head_item(&meta)?, Some("attribute_not_exists(pk)"))?,
        ];
        for item in self.version_items(&info, &new.body)? {
            tx.push(tx_put(t, item, None)?);
        }
        self.table.transact(tx, &format!("project {} does not exist", new.project_id)).await?;
        self.sync_test_webhooks(&meta.id, &meta.version_id, &new.body).await;
        Ok(Workflow { meta, body: new.body, tags: Vec::new() })
    }

    pub async fn meta(&self, id: &str) -> Result<Option<WorkflowMeta>, StoreError> {
        Ok(self.table.get::<HeadItem>(&wf_pk(id), "head").await?.map(|h| h.meta))
    }

    async fn require_meta(&self, id: &str) -> Result<WorkflowMeta, StoreError> {
        self.meta(id).await?.ok_or_else(|| StoreError::NotFound(format!("workflow {id}")))
    }

    async fn body(&self, id: &str, version_id: &str) -> Result<WorkflowBody, StoreError> {
        let item = self
            .table
            .get_raw(&wf_pk(id), &format!("body#{version_id}"))
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("version {version_id} of workflow {id}")))?;
        let packed =
            get_b(&item, "body").ok_or_else(|| StoreError::Corrupt(format!("version {version_id} has no body")))?;
        serde_json::from_slice(&db::decompress(&packed)?)
            .map_err(|e| StoreError::Corrupt(format!("workflow body: {e}")))
    }

    /// The workflow with its current draft.
    pub async fn get(&self, id: &str) -> Result<Option<Workflow>, StoreError> {
        let Some(meta) = self.meta(id).await? else { return Ok(None) };
        let body = self.body(id, &meta.version_id).await?;
        let tags = self.tags.by_ids(&meta.tag_ids).await.unwrap_or_default();
        Ok(Some(Workflow { meta, body, tags }))
    }

    /// What `user` may do with the workflow: the scopes of their role in
    /// the owning project (`None` when they cannot read it).
    pub async fn access(&self, user: &UserId, meta: &WorkflowMeta) -> Result<Option<(Vec<String>, bool)>, StoreError> {
        Ok(self.projects.role(user, &meta.project_id).await?.map(scopes_of))
    }

    /// Saves a new version. `expected_version_id` is the draft the writer
    /// started from; if another save landed since, this is a `Conflict` and
    /// nothing is written.
    pub async fn update(
        &self,
        id: &str,
        expected_version_id: &str,
        update: WorkflowUpdate,
        author: &UserId,
    ) -> Result<Workflow, StoreError> {
        let cur = self.require_meta(id).await?;
        if cur.version_id != expected_version_id {
            return Err(stale(id, expected_version_id));
        }
        if cur.is_archived {
            return Err(StoreError::Invalid(format!("workflow {id} is archived; unarchive it before editing")));
        }
        let name = match update.name {
            Some(n) => check_name(&n)?,
            None => cur.name.clone(),
        };
        let description = match update.description {
            Some(d) => check_description(d)?,
            None => cur.description.clone(),
        };
        let body = match update.body {
            Some(b) => b,
            None => self.body(id, &cur.version_id).await?,
        };
        self.save(cur, name, description, body, update.autosaved, None, author).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn save(
        &self,
        cur: WorkflowMeta,
        name: String,
        description: Option<String>,
        body: WorkflowBody,
        autosaved: bool,
        version_description: Option<String>,
        author: &UserId,
    ) -> Result<Workflow, StoreError> {
        body.validate()?;
        let now = db::now_iso();
        let info = VersionInfo {
            version_id: db::new_ordered_id(),
            workflow_id: cur.id.clone(),
            name: None,
            description: version_description,
            authors: vec![author.to_string()],
            created_at: now.clone(),
            autosaved,
        };
        let desc = match &description {
            Some(d) => s(d),
            None => AttributeValue::Null(true),
        };
        // Encode before claiming, so a too-large body fails with nothing written.
        let version_items = self.version_items(&info, &body)?;
        let head = HeadChange {
            version_id: info.version_id.clone(),
            name: s(&name),
            description: desc,
            updated_at: now.clone(),
            trigger_count: body.trigger_count(),
            node_count: body.node_count(),
        };
        // 1. Claim the successor slot of the version this writer started
        //    from: one conditional put, so of concurrent writers exactly one
        //    gets it; the others have written nothing.
        let mut claim = key(wf_pk(&cur.id), format!("next#{}", cur.version_id));
        head.write_to(&mut claim);
        claim.insert("claimedAt".into(), db::n(db::now_secs()));
        self.table.count();
        match self
            .table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(claim))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if db::is_condition_failed(&e) => {
                self.recover_claim(&cur.id, &cur.version_id).await?;
                return Err(stale(&cur.id, &cur.version_id));
            }
            Err(e) => return Err(StoreError::dynamo(e)),
        }
        // 2. The version itself: fresh keys no one else writes.
        let reqs = version_items.into_iter().map(db::put_req).collect::<Result<Vec<_>, _>>()?;
        self.table.batch_write(reqs).await?;
        // 3. Move the head (conditional on the version we started from).
        self.finish_claim(&cur.id, &cur.version_id, &head).await?;
        self.sync_test_webhooks(&cur.id, &info.version_id, &body).await;
        let meta = WorkflowMeta {
            name,
            description,
            version_id: info.version_id,
            updated_at: now,
            trigger_count: body.trigger_count(),
            node_count: body.node_count(),
            ..cur
        };
        let tags = self.tags.by_ids(&meta.tag_ids).await.unwrap_or_default();
        Ok(Workflow { meta, body, tags })
    }

    /// Version history, newest first (`limit` 1–100, default 20).
    pub async fn list_versions(
        &self,
        id: &str,
        limit: Option<usize>,
        skip: usize,
    ) -> Result<Vec<VersionRow>, StoreError> {
        let meta = self.require_meta(id).await?;
        let limit = limit.unwrap_or(20).clamp(1, 100);
        self.table
            .query_prefix(&wf_pk(id), "ver#", true)
            .await?
            .into_iter()
            .skip(skip)
            .take(limit)
            .map(|i| {
                let info = db::from_item::<VersionItem>(i)?.info;
                Ok(VersionRow {
                    is_active: meta.active_version_id.as_deref() == Some(info.version_id.as_str()),
                    is_current_draft: meta.version_id == info.version_id,
                    info,
                })
            })
            .collect()
    }

    pub async fn get_version(&self, id: &str, version_id: &str) -> Result<Option<WorkflowVersion>, StoreError> {
        let Some(v) = self.table.get::<VersionItem>(&wf_pk(id), &format!("ver#{version_id}")).await? else {
            return Ok(None);
        };
        Ok(Some(WorkflowVersion { info: v.info, body: self.body(id, version_id).await? }))
    }

    /// Names or describes a version (`Some(None)` clears).
    pub async fn update_version(
        &self,
        id: &str,
        version_id: &str,
        name: Option<Option<String>>,
        description: Option<Option<String>>,
    ) -> Result<(), StoreError> {
        let mut sets = Vec::new();
        let mut values = Vec::new();
        let val = |v: Option<String>| v.filter(|v| !v.trim().is_empty()).map_or(AttributeValue::Null(true), s);
        if let Some(n) = name {
            if n.as_ref().is_some_and(|n| n.chars().count() > MAX_NAME) {
                return Err(StoreError::Invalid(format!("version name must be at most {MAX_NAME} characters")));
            }
            sets.push("#n = :n");
            values.push((":n", val(n)));
        }
        if let Some(d) = description {
            sets.push("description = :d");
            values.push((":d", val(d)));
        }
        if sets.is_empty() {
            return Ok(());
        }
        let mut req = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(wf_pk(id), format!("ver#{version_id}"))))
            .update_expression(format!("SET {}", sets.join(", ")))
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#n", "name");
        if !sets.iter().any(|s| s.starts_with("#n")) {
            req = req.set_expression_attribute_names(None);
        }
        for (k, v) in values {
            req = req.expression_attribute_values(k, v);
        }
        self.table.count();
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) if db::is_condition_failed(&e) => {
                Err(StoreError::NotFound(format!("version {version_id} of workflow {id}")))
            }
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Restores a version as the new draft (a new version; not published).
    /// With `expected_version_id`, a save that landed meanwhile is a conflict.
    pub async fn restore_version(
        &self,
        id: &str,
        version_id: &str,
        expected_version_id: Option<&str>,
        author: &UserId,
    ) -> Result<(Workflow, PublishState), StoreError> {
        let cur = self.require_meta(id).await?;
        if let Some(e) = expected_version_id {
            if e != cur.version_id {
                return Err(stale(id, e));
            }
        }
        if cur.is_archived {
            return Err(StoreError::Invalid(format!("workflow {id} is archived; unarchive it before restoring")));
        }
        let old = self
            .get_version(id, version_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("version {version_id} of workflow {id}")))?;
        let (name, description) = (cur.name.clone(), cur.description.clone());
        let wf = self
            .save(cur, name, description, old.body, false, Some(format!("Restored from version {version_id}")), author)
            .await?;
        let state = wf.meta.publish_state();
        Ok((wf, state))
    }

    /// Publishes `version_id`, or the current draft. Archived workflows
    /// cannot be published.
    pub async fn publish(&self, id: &str, version_id: Option<&str>) -> Result<String, StoreError> {
        let cur = self.require_meta(id).await?;
        if cur.is_archived {
            return Err(StoreError::Invalid(format!("workflow {id} is archived")));
        }
        let target = version_id.unwrap_or(&cur.version_id).to_owned();
        // Versions are immutable and never deleted while the workflow
        // exists, so checking first and then updating cannot race.
        if self.table.get_raw(&wf_pk(id), &format!("ver#{target}")).await?.is_none() {
            return Err(StoreError::NotFound(format!("version {target} of workflow {id}")));
        }
        // Publishing "the current draft" must publish the draft we read: a
        // save in between makes this a conflict rather than publishing the
        // older one.
        let (cond, stale_possible) = if version_id.is_none() {
            ("isArchived = :f AND versionId = :v", true)
        } else {
            ("isArchived = :f", false)
        };
        match self
            .update_head(
                id,
                "SET activeVersionId = :v, updatedAt = :now",
                Some(cond),
                vec![(":v", s(&target)), (":f", AttributeValue::Bool(false))],
            )
            .await?
        {
            true => Ok(target),
            false if stale_possible => Err(stale(id, &target)),
            false => Err(StoreError::Invalid(format!("workflow {id} is archived"))),
        }
    }

    pub async fn unpublish(&self, id: &str) -> Result<(), StoreError> {
        self.update_head(
            id,
            "SET activeVersionId = :null, updatedAt = :now",
            None,
            vec![(":null", AttributeValue::Null(true))],
        )
        .await
        .map(|_| ())
    }

    /// Archives (soft delete) and unpublishes. Returns `false` when it was
    /// already archived (idempotent).
    pub async fn archive(&self, id: &str) -> Result<bool, StoreError> {
        self.update_head(
            id,
            "SET isArchived = :t, activeVersionId = :null, updatedAt = :now",
            Some("isArchived = :f"),
            vec![
                (":t", AttributeValue::Bool(true)),
                (":f", AttributeValue::Bool(false)),
                (":null", AttributeValue::Null(true)),
            ],
        )
        .await
    }

    /// Restores an archived workflow without publishing it; `false` when it
    /// was not archived.
    pub async fn unarchive(&self, id: &str) -> Result<bool, StoreError> {
        self.update_head(
            id,
            "SET isArchived = :f, updatedAt = :now",
            Some("isArchived = :t"),
            vec![(":t", AttributeValue::Bool(true)), (":f", AttributeValue::Bool(false))],
        )
        .await
    }

    pub async fn set_available_in_mcp(&self, id: &str, available: bool) -> Result<(), StoreError> {
        self.update_head(
            id,
            "SET availableInMCP = :a, updatedAt = :now",
            None,
            vec![(":a", AttributeValue::Bool(available))],
        )
        .await
        .map(|_| ())
    }

    /// Replaces the workflow's tags; every id must exist.
    pub async fn set_tags(&self, id: &str, tag_ids: &[String]) -> Result<Vec<Tag>, StoreError> {
        let tags = self.tags.by_ids(tag_ids).await?;
        let ids: Vec<AttributeValue> = tags.iter().map(|t| s(&t.id)).collect();
        self.update_head(id, "SET tagIds = :tags, updatedAt = :now", None, vec![(":tags", AttributeValue::L(ids))])
            .await?;
        Ok(tags)
    }

    /// Moves to a folder of the same project (`None`: the project root).
    pub async fn move_to_folder(&self, id: &str, folder_id: Option<&str>) -> Result<Option<Folder>, StoreError> {
        let meta = self.require_meta(id).await?;
        let folder = match folder_id {
            Some(f) => Some(
                self.folders
                    .get(&meta.project_id, f)
                    .await?
                    .ok_or_else(|| StoreError::NotFound(format!("folder {f} in project {}", meta.project_id)))?,
            ),
            None => None,
        };
        let v = folder.as_ref().map_or(AttributeValue::Null(true), |f| s(&f.id));
        self.update_head(id, "SET parentFolderId = :f, updatedAt = :now", None, vec![(":f", v)]).await?;
        Ok(folder)
    }

    /// Deletes an archived workflow and its history for good.
    pub async fn delete_permanently(&self, id: &str) -> Result<(), StoreError> {
        let meta = self.require_meta(id).await?;
        if !meta.is_archived {
            return Err(StoreError::Invalid(format!("workflow {id} must be archived before it is deleted")));
        }
        self.webhooks.clear_test(id).await?;
        let items = self.table.query_prefix(&wf_pk(id), "", false).await?;
        let reqs = items
            .into_iter()
            .filter_map(|i| Some(key(db::get_s(&i, "pk")?, db::get_s(&i, "sk")?)))
            .map(db::delete_req)
            .collect::<Result<Vec<_>, _>>()?;
        self.table.batch_write(reqs).await
    }

    /// Deletes a folder and its subfolders: their workflows move to
    /// `transfer_to` (a folder outside the subtree, or `None` for archiving
    /// them in place at the project root).
    pub async fn delete_folder(
        &self,
        project_id: &str,
        folder_id: &str,
        transfer_to: Option<&str>,
    ) -> Result<FolderDeleted, StoreError> {
        let all = self.folders.list(project_id).await?;
        if !all.iter().any(|f| f.id == folder_id) {
            return Err(StoreError::NotFound(format!("folder {folder_id}")));
        }
        let doomed = folders::subtree(&all, folder_id);
        if let Some(t) = transfer_to {
            if doomed.iter().any(|d| d == t) || !all.iter().any(|f| f.id == t) {
                return Err(StoreError::Invalid(format!("cannot transfer into folder {t}")));
            }
        }
        let mut workflows = 0;
        for wf in self.heads(project_id).await? {
            if wf.parent_folder_id.as_ref().is_some_and(|p| doomed.contains(p)) {
                self.move_to_folder(&wf.id, transfer_to).await?;
                if transfer_to.is_none() {
                    self.archive(&wf.id).await?;
                }
                workflows += 1;
            }
        }
        // Children before parents, so each delete finds its folder empty.
        for f in doomed.iter().rev() {
            self.folders.delete_empty(project_id, f).await?;
        }
        Ok(FolderDeleted { folders: doomed.len(), workflows })
    }

    /// The workflows (archived ones too) directly in any of `folder_ids`.
    pub async fn count_in_folders(&self, project_id: &str, folder_ids: &[String]) -> Result<usize, StoreError> {
        Ok(self
            .heads(project_id)
            .await?
            .iter()
            .filter(|wf| wf.parent_folder_id.as_ref().is_some_and(|p| folder_ids.contains(p)))
            .count())
    }

    /// Conditional update of the head; `Ok(false)` when `extra` (the
    /// state condition) failed on an existing workflow.
    async fn update_head(
        &self,
        id: &str,
        update: &str,
        extra: Option<&str>,
        values: Vec<(&str, AttributeValue)>,
    ) -> Result<bool, StoreError> {
        let cond = match extra {
            Some(c) => format!("attribute_exists(pk) AND {c}"),
            None => "attribute_exists(pk)".into(),
        };
        let mut req = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(wf_pk(id), "head")))
            .update_expression(update)
            .condition_expression(cond)
            .expression_attribute_values(":now", s(db::now_iso()));
        for (k, v) in values {
            req = req.expression_attribute_values(k, v);
        }
        self.table.count();
        match req.send().await {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => match self.meta(id).await? {
                Some(_) if extra.is_some() => Ok(false),
                _ => Err(StoreError::NotFound(format!("workflow {id}"))),
            },
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    async fn heads(&self, project_id: &str) -> Result<Vec<WorkflowMeta>, StoreError> {
        self.table
            .query_gsi(&format!("wfs#{project_id}"))
            .await?
            .into_iter()
            .map(|i| db::from_item::<HeadItem>(i).map(|h| h.meta))
            .collect()
    }

    /// Lists the workflows `user` can read (`workflows(action="list")`,
    /// `search_workflows`).
    /// Every workflow the user can read, with `status` and the MCP flag
    /// applied, without a limit (each project's workflows paged through):
    /// what a search over all of a user's workflows walks.
    pub async fn all_readable(&self, user: &UserId, status: StatusFilter, available_in_mcp: Option<bool>) -> Result<Vec<WorkflowMeta>, StoreError> {
        let mut out = Vec::new();
        for access in self.projects.projects_of(user).await? {
            let heads = self.heads(&access.project.id).await?;
            out.extend(heads.into_iter().filter(|m| status.admits(m) && available_in_mcp.is_none_or(|a| m.available_in_mcp == a)));
        }
        Ok(out)
    }

    pub async fn list(&self, user: &UserId, q: &WorkflowQuery) -> Result<WorkflowList, StoreError> {
        let mut projects: Vec<ProjectAccess> = self.projects.projects_of(user).await?;
        if let Some(p) = &q.project_id {
            projects.retain(|a| &a.project.id == p);
        }
        let spans_many = q.project_id.is_none() && projects.len() > 1;
        let mut list =
            WorkflowList { workflows: Vec::new(), total: 0, total_in_scope: 0, note: None, folder_resolution: None };

        // The folder filter, resolved strictly inside the one project in scope.
        let mut folder_ids: Option<HashSet<String>> = None;
        if let Some(sel) = &q.folder {
            let requested = match sel {
                FolderSelector::Id(i) | FolderSelector::Path(i) => i.clone(),
            };
            let fail = |reason, candidates| FolderResolution { requested: requested.clone(), reason, candidates };
            let resolved = match projects.as_slice() {
                [one] => {
                    let all = self.folders.list(&one.project.id).await?;
                    let found = match sel {
                        FolderSelector::Id(i) => all
                            .iter()
                            .find(|f| &f.id == i)
                            .cloned()
                            .ok_or_else(|| fail(ResolutionFailure::NotFound, Vec::new())),
                        FolderSelector::Path(p) => folders::resolve_path(&all, p),
                    };
                    found.map(|f| if q.recursive { folders::subtree(&all, &f.id) } else { vec![f.id] })
                }
                [] => Err(fail(ResolutionFailure::NotFound, Vec::new())),
                _ => Err(fail(ResolutionFailure::ScopeTooWide, Vec::new())),
            };
            match resolved {
                Ok(ids) => folder_ids = Some(ids.into_iter().collect()),
                Err(r) => {
                    list.note = Some(format!(
                        "Folder {:?} did not resolve ({}); no workflows are listed on purpose — this is not the folder's content.",
                        r.requested,
                        serde_json::to_value(r.reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
                    ));
                    list.folder_resolution = Some(r);
                    return Ok(list);
                }
            }
        }

        let needle = q.query.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_lowercase);
        let mut rows = Vec::new();
        for access in &projects {
            let folder_map: HashMap<String, Folder> =
                self.folders.list(&access.project.id).await?.into_iter().map(|f| (f.id.clone(), f)).collect();
            for meta in self.heads(&access.project.id).await? {
                let status_ok = q.status.admits(&meta);
                let folder_ok = folder_ids
                    .as_ref()
                    .is_none_or(|ids| meta.parent_folder_id.as_ref().is_some_and(|p| ids.contains(p)));
                let mcp_ok = q.available_in_mcp.is_none_or(|a| meta.available_in_mcp == a);
                if !(status_ok && folder_ok && mcp_ok) {
                    continue;
                }
                list.total_in_scope += 1;
                if let Some(n) = &needle {
                    let hit = meta.name.to_lowercase().contains(n.as_str())
                        || (q.match_description
                            && meta.description.as_ref().is_some_and(|d| d.to_lowercase().contains(n.as_str())));
                    if !hit {
                        continue;
                    }
                }
                let (scopes, can_execute) = scopes_of(access.role);
                rows.push(WorkflowRow {
                    active: meta.active(),
                    project: spans_many
                        .then(|| ProjectRef { id: access.project.id.clone(), name: access.project.name.clone() }),
                    folder: meta.parent_folder_id.as_ref().and_then(|f| folder_map.get(f)).map(FolderRef::from),
                    scopes,
                    can_execute,
                    meta,
                });
            }
        }
        rows.sort_by(|a, b| b.meta.updated_at.cmp(&a.meta.updated_at).then_with(|| a.meta.id.cmp(&b.meta.id)));
        list.total = rows.len();
        let limit = q.limit.clamp(1, 200);
        rows.truncate(limit);
        list.workflows = rows;
        let mut notes = Vec::new();
        if needle.is_some() && list.total < list.total_in_scope {
            notes.push(format!(
                "Filtered by name: {} of {} workflows in scope match; this is not the full inventory.",
                list.total, list.total_in_scope
            ));
        }
        if list.workflows.len() < list.total {
            notes.push(format!(
                "Showing {} of {} matching workflows (limit {limit}).",
                list.workflows.len(),
                list.total
            ));
        }
        if !notes.is_empty() {
            list.note = Some(notes.join(" "));
        }
        Ok(list)
    }
}

/// What a save changes on the head; also kept on the claim item so a save
/// whose writer died between claim and head update can be rolled forward.
struct HeadChange {
    version_id: String,
    name: AttributeValue,
    description: AttributeValue,
    updated_at: String,
    trigger_count: usize,
    node_count: usize,
}

impl HeadChange {
    fn write_to(&self, item: &mut Item) {
        item.insert("newVersionId".into(), s(&self.version_id));
        item.insert("name".into(), self.name.clone());
        item.insert("description".into(), self.description.clone());
        item.insert("updatedAt".into(), s(&self.updated_at));
        item.insert("triggerCount".into(), db::n(self.trigger_count));
        item.insert("nodeCount".into(), db::n(self.node_count));
    }

    fn read_from(item: &Item) -> Option<HeadChange> {
        let num = |k: &str| match item.get(k) {
            Some(AttributeValue::N(n)) => n.parse().ok(),
            _ => None,
        };
        Some(HeadChange {
            version_id: db::get_s(item, "newVersionId")?.to_owned(),
            name: item.get("name")?.clone(),
            description: item.get("description").cloned().unwrap_or(AttributeValue::Null(true)),
            updated_at: db::get_s(item, "updatedAt")?.to_owned(),
            trigger_count: num("triggerCount")?,
            node_count: num("nodeCount")?,
        })
    }
}

/// A successor claim older than this whose head never moved belongs to a
/// writer that died mid-save.
const CLAIM_STALE_SECS: u64 = 30;

impl Workflows {
    async fn finish_claim(&self, id: &str, expected: &str, head: &HeadChange) -> Result<(), StoreError> {
        self.table.count();
        let res = self
            .table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(wf_pk(id), "head")))
            .update_expression("SET versionId = :new, #n = :name, description = :d, updatedAt = :now, triggerCount = :tc, nodeCount = :nc")
            .condition_expression("versionId = :expected AND isArchived = :f")
            .expression_attribute_names("#n", "name")
            .expression_attribute_values(":new", s(&head.version_id))
            .expression_attribute_values(":name", head.name.clone())
            .expression_attribute_values(":d", head.description.clone())
            .expression_attribute_values(":now", s(&head.updated_at))
            .expression_attribute_values(":tc", db::n(head.trigger_count))
            .expression_attribute_values(":nc", db::n(head.node_count))
            .expression_attribute_values(":expected", s(expected))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if db::is_condition_failed(&e) => match self.meta(id).await? {
                // Someone rolled this very save forward already.
                Some(m) if m.version_id == head.version_id => Ok(()),
                Some(m) if m.is_archived => {
                    // Archived mid-save: take the save back entirely.
                    let doomed = vec![
                        key(wf_pk(id), format!("next#{expected}")),
                        key(wf_pk(id), format!("ver#{}", head.version_id)),
                        key(wf_pk(id), format!("body#{}", head.version_id)),
                    ];
                    let reqs = doomed.into_iter().map(db::delete_req).collect::<Result<Vec<_>, _>>()?;
                    self.table.batch_write(reqs).await?;
                    Err(StoreError::Invalid(format!("workflow {id} was archived while saving; nothing was saved")))
                }
                Some(_) => {
                    // The head moved under a claim we held: only a stale-claim
                    // roll-forward of another save can do that. Our version
                    // never became current; remove it from history.
                    let doomed = vec![
                        key(wf_pk(id), format!("ver#{}", head.version_id)),
                        key(wf_pk(id), format!("body#{}", head.version_id)),
                    ];
                    let reqs = doomed.into_iter().map(db::delete_req).collect::<Result<Vec<_>, _>>()?;
                    self.table.batch_write(reqs).await?;
                    Err(stale(id, expected))
                }
                None => Err(StoreError::NotFound(format!("workflow {id}"))),
            },
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// A claim on `expected` exists. If it is stale (its writer died before
    /// moving the head), finish it when its version was fully written, or
    /// release it otherwise, so the workflow never stays locked.
    async fn recover_claim(&self, id: &str, expected: &str) -> Result<(), StoreError> {
        let Some(claim) = self.table.get_raw(&wf_pk(id), &format!("next#{expected}")).await? else { return Ok(()) };
        let claimed_at = match claim.get("claimedAt") {
            Some(AttributeValue::N(n)) => n.parse::<u64>().unwrap_or(0),
            _ => 0,
        };
        if db::now_secs().saturating_sub(claimed_at) < CLAIM_STALE_SECS {
            return Ok(());
        }
        let Some(head) = self.meta(id).await? else { return Ok(()) };
        if head.version_id != expected {
            return Ok(());
        }
        let Some(change) = HeadChange::read_from(&claim) else { return Ok(()) };
        let has_body = self.table.get_raw(&wf_pk(id), &format!("body#{}", change.version_id)).await?.is_some();
        let has_meta = self.table.get_raw(&wf_pk(id), &format!("ver#{}", change.version_id)).await?.is_some();
        if has_body && has_meta {
            return self.finish_claim(id, expected, &change).await.or(Ok(()));
        }
        self.table.count();
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(wf_pk(id), format!("next#{expected}"))))
            .condition_expression("newVersionId = :v")
            .expression_attribute_values(":v", s(&change.version_id))
            .send()
            .await
            .map(|_| ())
            .or_else(|e| if db::is_condition_failed(&e) { Ok(()) } else { Err(StoreError::dynamo(e)) })
    }
}

fn stale(id: &str, expected: &str) -> StoreError {
    StoreError::Conflict(format!(
        "workflow {id} was saved by someone else after version {expected}; reload it and apply the change again"
    ))
}

/// `(workflow scopes, canExecute)` for a role.
pub fn scopes_of(role: ProjectRole) -> (Vec<String>, bool) {
    let scopes = role.scopes_for("workflow");
    let can = scopes.iter().any(|s| s == "workflow:execute");
    (scopes, can)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(nodes: Value, connections: Value) -> WorkflowBody {
        WorkflowBody { nodes, connections, settings: Value::Null, pin_data: Value::Null, meta: Value::Null }
    }

    #[test]
    fn validation_checks_names_and_connections() {
        let ok = body(
            json!([{"name": "Start", "type": "n8n-nodes-base.manualTrigger"}, {"name": "Set", "type": "n8n-nodes-base.set"}]),
            json!({"Start": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}),
        );
        ok.validate().unwrap();
        assert_eq!(ok.trigger_count(), 1);
        let dup = body(json!([{"name": "A", "type": "x"}, {"name": "A", "type": "y"}]), json!({}));
        assert!(dup.validate().unwrap_err().to_string().contains("used twice"));
        let dangling = body(json!([{"name": "A", "type": "x"}]), json!({"A": {"main": [[{"node": "B"}]]}}));
        assert!(dangling.validate().unwrap_err().to_string().contains("unknown node \"B\""));
        let from_unknown = body(json!([{"name": "A", "type": "x"}]), json!({"Z": {"main": []}}));
        assert!(from_unknown.validate().is_err());
    }
}
