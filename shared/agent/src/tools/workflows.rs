//! `workflows`: the twelve actions of the spec over the instance's workflow
//! operations (`instance::workflows`). This module maps arguments and shapes
//! results; every operation lives in `instance`. Workflow content (nodes,
//! code, summaries) is outside data and reaches the model inside an
//! `<untrusted_data>` envelope. Archive (`delete`), `publish`, `unpublish`
//! and `restore-version` ask first, with the workflow's name on the card.

use super::untrusted::json_envelope;
use super::{Decision, Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::validate::Category;
use instance::workflows::{ListQuery, ListScope, WorkflowView};
use instance::InstanceError;
use protocol::events::{ConfirmationRequest, Severity};
use super::schema::action_variant as action;
use serde_json::{json, Map, Value};
use store::data::workflows::{FolderSelector, StatusFilter, VersionRow, WorkflowMeta};

pub struct Workflows;

const DESCRIPTION: &str = "Workflows of the instance: list, get (large ones as a structural summary), get-as-code, \
list-versions, validate (canvas issues), and — after the user approves — delete (archive), publish, unpublish, \
restore-version; unarchive and update-version (name a version). To change a workflow, edit its workspace file and \
call build-workflow.";

fn id_field() -> Value {
    json!({"type": "string", "minLength": 1, "description": "Workflow ID"})
}

fn schema() -> Value {
    json!({"oneOf": [
        action("list", "List workflows accessible to the user", json!({
            "query": {"type": "string", "description": "Substring filter on the workflow name only — omit for inventory questions"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Max results (1–100, default 50)"},
            "status": {"type": "string", "enum": ["active", "archived", "all"], "description": "Which workflows to list (default active)"},
            "scope": {"type": "string", "enum": ["project", "instance"], "description": "The conversation's project (default) or every project the user can read"},
            "projectId": {"type": "string", "description": "Read one specific project, overriding scope (read-only narrowing)"},
            "folderPath": {"type": "string", "description": "Restrict to one folder, named as the user named it (`Clients/Acme`, `Acme`); strict staged match, never fuzzy"},
            "folderId": {"type": "string", "description": "Restrict to one folder by id (from a row's folder.id)"},
            "recursive": {"type": "boolean", "description": "Include nested subfolders (default true)"}
        }), &[]),
        action("get", "Inspect a workflow's metadata and structure", json!({
            "workflowId": id_field(),
            "versionId": {"type": "string", "description": "Read this historical version"},
            "full": {"type": "boolean", "description": "Complete node data even for a large workflow"}
        }), &["workflowId"]),
        action("get-as-code", "The workflow as workflow-SDK code, to write into a workspace file before editing", json!({
            "workflowId": id_field(),
            "versionId": {"type": "string", "description": "Convert this historical version"}
        }), &["workflowId"]),
        action("delete", "Archive a workflow (soft delete; unpublishes it). Asks the user first", json!({"workflowId": id_field()}), &["workflowId"]),
        action("unarchive", "Restore an archived workflow without publishing it", json!({"workflowId": id_field()}), &["workflowId"]),
        action("setup", "Open the inline credential and parameter setup for a workflow", super::workflow_setup::properties(), &["workflowId"]),
        action("publish", "Publish a workflow version to production (it runs on its triggers). Asks the user first", json!({
            "workflowId": id_field(),
            "versionId": {"type": "string", "description": "Specific version (omit for the latest draft)"},
            "approvalSummary": {"type": "string", "maxLength": 300, "description": "One line in the user's language on what going live does, e.g. \"Post a digest of open tickets every weekday at 8:00\""}
        }), &["workflowId"]),
        action("unpublish", "Stop a workflow from running in production; the draft is kept. Asks the user first", json!({"workflowId": id_field()}), &["workflowId"]),
        action("list-versions", "Version history of a workflow (metadata only)", json!({
            "workflowId": id_field(),
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Max results (1–100, default 20)"},
            "skip": {"type": "integer", "minimum": 0, "description": "Results to skip (default 0)"}
        }), &["workflowId"]),
        action("validate", "The per-node issues the canvas would flag (credentials, parameters, unconnected inputs, unknown types); static, nothing runs", json!({
            "workflowId": id_field(),
            "ignoreIssues": {"type": "array", "items": {"type": "string", "enum": ["parameters", "credentials", "input", "execution", "typeUnknown", "aiGateway", "chatModel"]}, "description": "Issue categories to skip"}
        }), &["workflowId"]),
        action("restore-version", "Restore a previous version as the draft (does not publish). Asks the user first", json!({
            "workflowId": id_field(),
            "versionId": {"type": "string", "minLength": 1, "description": "Version to restore"}
        }), &["workflowId", "versionId"]),
        action("update-version", "Name or describe a version", json!({
            "workflowId": id_field(),
            "versionId": {"type": "string", "minLength": 1, "description": "Version ID"},
            "name": {"type": ["string", "null"], "description": "New name (null clears it)"},
            "description": {"type": ["string", "null"], "description": "New description (null clears it)"}
        }), &["workflowId", "versionId"]),
    ]})
}

fn s<'a>(args: &'a Value, k: &str) -> Option<&'a str> {
    args.get(k).and_then(Value::as_str)
}

fn id(args: &Value) -> &str {
    s(args, "workflowId").unwrap_or_default()
}

fn failed(e: InstanceError) -> ToolOutcome {
    ToolOutcome::Failed(e.message())
}

/// `Some(Some(x))` for a string, `Some(None)` for an explicit null, `None` when absent.
fn nullable(args: &Value, k: &str) -> Option<Option<String>> {
    match args.get(k) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(v) => Some(v.as_str().map(str::to_owned)),
    }
}

fn meta_json(m: &WorkflowMeta) -> Value {
    json!({
        "workflowId": m.id,
        "name": m.name,
        "description": m.description,
        "versionId": m.version_id,
        "activeVersionId": m.active_version_id,
        "isArchived": m.is_archived,
        "nodeCount": m.node_count,
        "createdAt": m.created_at,
        "updatedAt": m.updated_at,
        "parentFolderId": m.parent_folder_id,
    })
}

fn version_json(v: &VersionRow) -> Value {
    json!({
        "versionId": v.info.version_id,
        "name": v.info.name,
        "description": v.info.description,
        "authors": v.info.authors,
        "createdAt": v.info.created_at,
        "autosaved": v.info.autosaved,
        "isActive": v.is_active,
        "isCurrentDraft": v.is_current_draft,
    })
}

impl Workflows {
    async fn list(&self, ctx: &ToolContext<'_>, a: &Value) -> Result<Value, InstanceError> {
        let folder = match (s(a, "folderId"), s(a, "folderPath")) {
            (Some(i), _) => Some(FolderSelector::Id(i.to_owned())),
            (None, Some(p)) => Some(FolderSelector::Path(p.to_owned())),
            _ => None,
        };
        let q = ListQuery {
            query: s(a, "query").map(str::to_owned),
            limit: a.get("limit").and_then(Value::as_u64).unwrap_or(50) as usize,
            status: match s(a, "status") {
                Some("archived") => StatusFilter::Archived,
                Some("all") => StatusFilter::All,
                _ => StatusFilter::Active,
            },
            scope: if s(a, "scope") == Some("instance") { ListScope::Instance } else { ListScope::Project },
            project_id: s(a, "projectId").map(str::to_owned),
            folder,
            recursive: a.get("recursive").and_then(Value::as_bool).unwrap_or(true),
            ..ListQuery::default()
        };
        let list = ctx.instance().map_err(InstanceError::Internal)?.list_workflows(&ctx.caller(), q).await?;
        let rows: Vec<Value> = list
            .workflows
            .iter()
            .map(|r| {
                let mut row = json!({
                    "id": r.meta.id,
                    "name": r.meta.name,
                    "activeVersionId": r.meta.active_version_id,
                    "isArchived": r.meta.is_archived,
                    "createdAt": r.meta.created_at,
                    "updatedAt": r.meta.updated_at,
                });
                if let Some(p) = &r.project {
                    row["project"] = json!({"id": p.id, "name": p.name});
                }
                if let Some(f) = &r.folder {
                    row["folder"] = json!({"id": f.id, "name": f.name, "path": f.path});
                }
                row
            })
            .collect();
        let mut out = json!({"workflows": rows, "total": list.total, "totalInScope": list.total_in_scope});
        if let Some(n) = list.note {
            out["note"] = json!(n);
        }
        if let Some(r) = list.folder_resolution {
            out["folderResolution"] = serde_json::to_value(r).unwrap_or_default();
        }
        Ok(out)
    }

    async fn get(&self, ctx: &ToolContext<'_>, a: &Value) -> Result<Value, InstanceError> {
        let inst = ctx.instance().map_err(InstanceError::Internal)?;
        let full = a.get("full").and_then(Value::as_bool).unwrap_or(false);
        let view = match inst.get_workflow(&ctx.caller(), id(a), s(a, "versionId"), full).await {
            Ok(v) => v,
            Err(InstanceError::NotFound(what)) => {
                return Ok(json!({
                    "found": false,
                    "workflowId": id(a),
                    "error": format!("Not found: {what}. It does not exist or the user cannot read it; list workflows to find the right id."),
                }))
            }
            Err(e) => return Err(e),
        };
        let source = format!("workflow:{}", id(a));
        Ok(match view {
            WorkflowView::Full(wf) => {
                let mut out = meta_json(&wf.meta);
                out["found"] = json!(true);
                out["tags"] = json!(wf.tags.iter().map(|t| json!({"id": t.id, "name": t.name})).collect::<Vec<_>>());
                out["workflow"] = json!(json_envelope(
                    &source,
                    &json!({"nodes": wf.body.nodes, "connections": wf.body.connections, "settings": wf.body.settings})
                ));
                out
            }
            WorkflowView::Summary { meta, summary } => {
                let mut out = meta_json(&meta);
                out["found"] = json!(true);
                out["large"] = json!(true);
                out["summary"] = json!(json_envelope(&source, &serde_json::to_value(summary).unwrap_or_default()));
                out
            }
            WorkflowView::Version { meta, version, summary } => {
                let mut out = meta_json(&meta);
                out["found"] = json!(true);
                out["version"] = json!({
                    "versionId": version.info.version_id,
                    "name": version.info.name,
                    "description": version.info.description,
                    "authors": version.info.authors,
                    "createdAt": version.info.created_at,
                    "autosaved": version.info.autosaved,
                    "isActive": meta.active_version_id.as_deref() == Some(version.info.version_id.as_str()),
                    "isCurrentDraft": meta.version_id == version.info.version_id,
                });
                match summary {
                    Some(sum) => {
                        out["large"] = json!(true);
                        out["summary"] = json!(json_envelope(&source, &serde_json::to_value(sum).unwrap_or_default()));
                    }
                    None => {
                        out["workflow"] = json!(json_envelope(
                            &source,
                            &json!({"nodes": version.body.nodes, "connections": version.body.connections, "settings": version.body.settings})
                        ));
                    }
                }
                out
            }
        })
    }

    async fn act(&self, ctx: &ToolContext<'_>, a: &Value) -> Result<Value, InstanceError> {
        let inst = ctx.instance().map_err(InstanceError::Internal)?;
        let caller = ctx.caller();
        let wid = id(a);
        match s(a, "action").unwrap_or_default() {
            "list" => self.list(ctx, a).await,
            "get" => self.get(ctx, a).await,
            "get-as-code" => {
                let c = inst.workflow_as_code(&caller, wid, s(a, "versionId")).await?;
                let mut out = json!({"workflowId": c.workflow_id, "name": c.name, "code": json_envelope(&format!("workflow:{wid}"), &json!(c.code))});
                if let Some(e) = c.error {
                    out["error"] = json!(e);
                }
                Ok(out)
            }
            "delete" => {
                let (_, changed) = inst.archive_workflow(&caller, wid).await?;
                Ok(if changed { json!({"success": true}) } else { json!({"success": true, "note": "The workflow was already archived."}) })
            }
            "unarchive" => {
                let (_, changed) = inst.unarchive_workflow(&caller, wid).await?;
                Ok(if changed { json!({"success": true}) } else { json!({"success": true, "note": "The workflow was not archived."}) })
            }
            "publish" => {
                let active = inst.publish_workflow(&caller, wid, s(a, "versionId")).await?;
                Ok(json!({"success": true, "activeVersionId": active}))
            }
            "unpublish" => {
                inst.unpublish_workflow(&caller, wid).await?;
                Ok(json!({"success": true}))
            }
            "list-versions" => {
                let limit = a.get("limit").and_then(Value::as_u64).map(|n| n as usize);
                let skip = a.get("skip").and_then(Value::as_u64).unwrap_or(0) as usize;
                let rows = inst.list_versions(&caller, wid, limit, skip).await?;
                Ok(json!({"versions": rows.iter().map(version_json).collect::<Vec<_>>()}))
            }
            "validate" => {
                let ignore: Vec<Category> = a
                    .get("ignoreIssues")
                    .and_then(|v| serde_json::from_value(v.clone()).ok())
                    .unwrap_or_default();
                let report = inst.validate_saved(&caller, wid, &ignore).await?;
                Ok(serde_json::to_value(report).unwrap_or_default())
            }
            "restore-version" => {
                let r = inst.restore_version(&caller, wid, s(a, "versionId").unwrap_or_default()).await?;
                Ok(json!({"success": true, "workflowId": r.workflow_id, "publishState": r.publish_state, "publishStateNote": r.publish_state_note}))
            }
            "update-version" => {
                inst.update_version(&caller, wid, s(a, "versionId").unwrap_or_default(), nullable(a, "name"), nullable(a, "description")).await?;
                Ok(json!({"success": true}))
            }
            other => Err(InstanceError::Invalid(format!("unknown action {other:?}"))),
        }
    }
}

/// The card of a gated action: what it does to which workflow.
fn card(action: &str, meta: &WorkflowMeta, a: &Value) -> Option<(Severity, String, Value)> {
    let name = &meta.name;
    let live = meta.active_version_id.is_some();
    Some(match action {
        "delete" => (
            Severity::Warning,
            format!("Archive workflow '{name}'?{}", if live { " It is published and will stop running." } else { "" }),
            json!({"action": "archive", "workflowId": meta.id, "workflowName": name, "isPublished": live}),
        ),
        "publish" => {
            let summary = s(a, "approvalSummary").map(str::to_owned);
            let version = s(a, "versionId").unwrap_or(&meta.version_id).to_owned();
            let message = summary.clone().unwrap_or_else(|| format!("Publish workflow '{name}' to production"));
            (
                Severity::Warning,
                message,
                json!({"action": "publish", "workflowId": meta.id, "workflowName": name, "versionId": version,
                       "currentlyActiveVersionId": meta.active_version_id, "summary": summary}),
            )
        }
        "unpublish" => (
            Severity::Warning,
            format!("Unpublish workflow '{name}'? It stops running on its triggers; the draft is kept."),
            json!({"action": "unpublish", "workflowId": meta.id, "workflowName": name}),
        ),
        "restore-version" => {
            let version = s(a, "versionId").unwrap_or_default();
            (
                Severity::Warning,
                format!("Restore workflow '{name}' to version {version}? The current draft is replaced (kept in history); nothing is published."),
                json!({"action": "restore-version", "workflowId": meta.id, "workflowName": name, "versionId": version, "isPublished": live}),
            )
        }
        _ => return None,
    })
}

/// The scope each gated action needs (checked before asking, so nobody is
/// asked to approve what would then be refused).
fn scope_of(action: &str) -> &'static str {
    match action {
        "delete" => "workflow:delete",
        "publish" | "unpublish" => "workflow:publish",
        _ => "workflow:update",
    }
}

impl Tool for Workflows {
    fn name(&self) -> &'static str {
        "workflows"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema()
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            let act = s(args, "action").unwrap_or_default();
            if act == "setup" {
                return super::workflow_setup::gate(ctx, args).await;
            }
            if !matches!(act, "delete" | "publish" | "unpublish" | "restore-version") {
                return Ok(None);
            }
            let inst = ctx.instance()?;
            let (meta, _) = inst.workflow_access(&ctx.caller(), id(args), scope_of(act)).await.map_err(|e| e.message())?;
            let Some((severity, message, details)) = card(act, &meta, args) else { return Ok(None) };
            let mut request = ConfirmationRequest::approval("", "", "workflows", Map::new(), severity, message);
            request.resource_name = Some(meta.name.clone());
            request.approval_details = Some(details);
            Ok(Some(Gate::permission(request, format!("workflows.{act}"))))
        })
    }

    /// `workflows:<action>:<workflowId>`: "always allow" covers that action
    /// on that workflow for the rest of the conversation.
    fn allow_key(&self, args: &Value) -> Option<String> {
        Some(format!("workflows:{}:{}", s(args, "action").unwrap_or("*"), id(args)))
    }

    /// The setup card's answer carries the person's choices; the other
    /// cards are plain approvals.
    fn resume<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if s(&args, "action") == Some("setup") {
                return super::workflow_setup::resume(ctx, &args, decision).await;
            }
            if decision.approved {
                self.run(ctx, args).await
            } else {
                ToolOutcome::Done(super::denied(&decision))
            }
        })
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if s(&args, "action") == Some("setup") {
                return super::workflow_setup::run(ctx, &args).await;
            }
            match self.act(ctx, &args).await {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => failed(e),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::schema::validate;

    #[test]
    fn the_schema_is_a_union_of_twelve_described_actions() {
        let schema = schema();
        let variants = schema["oneOf"].as_array().unwrap();
        let names: Vec<&str> = variants.iter().map(|v| v["properties"]["action"]["const"].as_str().unwrap()).collect();
        assert_eq!(names, ["list", "get", "get-as-code", "delete", "unarchive", "setup", "publish", "unpublish", "list-versions", "validate", "restore-version", "update-version"]);
        for v in variants {
            for (field, p) in v["properties"].as_object().unwrap() {
                assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()), "{field} of {} has no description", v["properties"]["action"]["const"]);
            }
        }
        assert!(validate(&schema, &json!({"action": "list", "limit": 100})).is_ok());
        assert!(validate(&schema, &json!({"action": "list", "limit": 101})).unwrap_err().contains("at most 100"));
        assert!(validate(&schema, &json!({"action": "get"})).unwrap_err().contains("workflowId is required"));
        assert!(validate(&schema, &json!({"action": "publish", "workflowId": "w", "projectId": "p"})).unwrap_err().contains("not a known field"));
        assert!(validate(&schema, &json!({"action": "update-version", "workflowId": "w", "versionId": "v", "name": null})).is_ok());
    }
}
