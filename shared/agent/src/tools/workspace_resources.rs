//! `workspace`: the eight actions of the spec over `instance::workspace` —
//! projects, tags, folders and the cleanup of test executions. (Not the
//! workspace *file* tools, which are `workspace_*`.) This module maps
//! arguments and shapes results. Changes ask first (the admin policy
//! `workspace.<action>`): the gate checks the change can be made and names
//! what it touches; `delete-folder`'s card says what happens to the
//! workflows inside.

use super::{Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::workspace::{FolderDeletionPlan, DEFAULT_CLEANUP_HOURS};
use instance::InstanceError;
use protocol::events::{ConfirmationRequest, Severity};
use serde::Deserialize;
use super::schema::action_variant as action;
use serde_json::{json, Map, Value};
use store::data::folders::Folder;

pub struct Workspace;

const NAME: &str = "workspace";

const DESCRIPTION: &str = "Organize the workspace: list-projects, list-tags, list-folders; and — after the user \
approves — tag-workflow (replaces its tags, creating missing ones), cleanup-test-executions (deletes a workflow's \
manual test runs), create-folder, delete-folder, move-workflow-to-folder.";

const PROJECT_DOC: &str = "ID of the project (default: the conversation's project; list-projects shows the ids)";

fn schema() -> Value {
    let workflow_id = json!({"type": "string", "minLength": 1, "description": "ID of the workflow"});
    let workflow_name = json!({"type": "string", "description": "Name of the workflow, for the approval card"});
    json!({"oneOf": [
        action("list-projects", "List the projects the user can access; the conversation's own project carries isCurrentProject", json!({}), &[]),
        action("list-tags", "List every tag", json!({}), &[]),
        action("tag-workflow", "Set a workflow's tags by name, replacing the ones it has; missing tags are created. Asks the user first", json!({
            "workflowId": workflow_id,
            "workflowName": workflow_name,
            "tags": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}, "description": "Tag names (at most 24 characters each)"}
        }), &["workflowId", "tags"]),
        action("cleanup-test-executions", "Delete a workflow's finished manual (test) executions; production runs are never touched. Asks the user first", json!({
            "workflowId": workflow_id,
            "workflowName": workflow_name,
            "olderThanHours": {"type": "number", "minimum": 0, "description": "Only executions that started more than this many hours ago (default 1)"}
        }), &["workflowId"]),
        action("list-folders", "List the folders of a project, with their paths", json!({
            "projectId": {"type": "string", "description": PROJECT_DOC}
        }), &[]),
        action("create-folder", "Create a folder. Asks the user first", json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Folder name (no '/'; unique among its siblings)"},
            "projectId": {"type": "string", "description": PROJECT_DOC},
            "parentFolderId": {"type": "string", "description": "ID of the folder to create it in (omit for the project root)"}
        }), &["name"]),
        action("delete-folder", "Delete a folder and its subfolders. Their workflows move to transferToFolderId, or without it to the project root, archived. Asks the user first", json!({
            "folderId": {"type": "string", "minLength": 1, "description": "ID of the folder to delete"},
            "folderName": {"type": "string", "description": "Name of the folder, for the approval card"},
            "projectId": {"type": "string", "description": PROJECT_DOC},
            "transferToFolderId": {"type": "string", "description": "ID of a folder (outside the deleted one) to move the workflows into; omit to archive them at the project root"},
            "transferToFolderName": {"type": "string", "description": "Name of the transfer folder, for the approval card"}
        }), &["folderId"]),
        action("move-workflow-to-folder", "Move a workflow into a folder of its project. Asks the user first", json!({
            "workflowId": workflow_id,
            "workflowName": workflow_name,
            "folderId": {"type": "string", "minLength": 1, "description": "ID of the destination folder"},
            "folderName": {"type": "string", "description": "Name of the destination folder, for the approval card"}
        }), &["workflowId", "folderId"]),
    ]})
}

/// One call, as the schema's discriminated union.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", rename_all_fields = "camelCase")]
enum Call {
    ListProjects {},
    ListTags {},
    TagWorkflow {
        workflow_id: String,
        workflow_name: Option<String>,
        tags: Vec<String>,
    },
    CleanupTestExecutions {
        workflow_id: String,
        workflow_name: Option<String>,
        older_than_hours: Option<f64>,
    },
    ListFolders {
        project_id: Option<String>,
    },
    CreateFolder {
        name: String,
        project_id: Option<String>,
        parent_folder_id: Option<String>,
    },
    DeleteFolder {
        folder_id: String,
        folder_name: Option<String>,
        project_id: Option<String>,
        transfer_to_folder_id: Option<String>,
        transfer_to_folder_name: Option<String>,
    },
    MoveWorkflowToFolder {
        workflow_id: String,
        workflow_name: Option<String>,
        folder_id: String,
        folder_name: Option<String>,
    },
}

fn parse(args: &Value) -> Result<Call, String> {
    serde_json::from_value(args.clone()).map_err(|e| format!("Invalid input for {NAME}: {e}"))
}

fn folder_json(f: &Folder) -> Value {
    json!({"id": f.id, "name": f.name, "parentFolderId": f.parent_folder_id, "path": f.path})
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The delete-folder card: what goes, and what happens to the workflows.
fn deletion_card(plan: &FolderDeletionPlan, folder_name: Option<&str>, transfer_name: Option<&str>) -> (String, Value) {
    let label = folder_name.unwrap_or(&plan.folder.path);
    let mut message = format!("Delete folder \"{label}\"");
    if plan.subfolders > 0 {
        message.push_str(&format!(" and its {}", plural(plan.subfolders, "subfolder", "subfolders")));
    }
    message.push('.');
    let outcome = match (&plan.transfer_to, plan.workflows) {
        (_, 0) => {
            message.push_str(" It holds no workflows.");
            "none"
        }
        (Some(t), n) => {
            let to = transfer_name.unwrap_or(&t.path);
            message.push_str(&format!(" Its {} will be moved to folder \"{to}\".", plural(n, "workflow", "workflows")));
            "moved"
        }
        (None, n) => {
            message.push_str(&format!(" Its {} will be moved to the project root and archived.", plural(n, "workflow", "workflows")));
            "archived"
        }
    };
    let details = json!({
        "action": "delete-folder",
        "folderId": plan.folder.id,
        "path": plan.folder.path,
        "subfolders": plan.subfolders,
        "workflows": plan.workflows,
        "workflowsOutcome": outcome,
        "transferTo": plan.transfer_to.as_ref().map(folder_json),
    });
    (message, details)
}

impl Workspace {
    async fn act(&self, ctx: &ToolContext<'_>, call: Call) -> Result<Value, InstanceError> {
        let inst = ctx.instance().map_err(InstanceError::Internal)?;
        let caller = ctx.caller();
        match call {
            Call::ListProjects {} => {
                let (projects, current) = inst.projects(&caller).await?;
                let rows: Vec<Value> = projects
                    .iter()
                    .map(|p| {
                        let mut row = json!({"id": p.project.id, "name": p.project.name, "type": p.project.kind.as_str()});
                        if p.project.id == current {
                            row["isCurrentProject"] = json!(true);
                        }
                        row
                    })
                    .collect();
                Ok(json!({"projects": rows}))
            }
            Call::ListTags {} => {
                let tags = inst.list_tags(&caller).await?;
                Ok(json!({"tags": tags.iter().map(|t| json!({"id": t.id, "name": t.name})).collect::<Vec<_>>()}))
            }
            Call::TagWorkflow { workflow_id, tags, .. } => {
                let (meta, applied) = inst.tag_workflow(&caller, &workflow_id, &tags).await?;
                Ok(json!({"workflowId": meta.id, "appliedTags": applied.iter().map(|t| t.name.clone()).collect::<Vec<_>>()}))
            }
            Call::CleanupTestExecutions { workflow_id, older_than_hours, .. } => {
                let hours = older_than_hours.unwrap_or(DEFAULT_CLEANUP_HOURS);
                let (meta, n) = inst.cleanup_test_executions(&caller, &workflow_id, hours).await?;
                Ok(json!({"workflowId": meta.id, "deletedCount": n, "olderThanHours": hours}))
            }
            Call::ListFolders { project_id } => {
                let (project, folders) = inst.list_folders(&caller, project_id.as_deref()).await?;
                Ok(json!({"projectId": project, "folders": folders.iter().map(folder_json).collect::<Vec<_>>()}))
            }
            Call::CreateFolder { name, project_id, parent_folder_id } => {
                let f = inst.create_folder(&caller, project_id.as_deref(), &name, parent_folder_id.as_deref()).await?;
                let mut out = folder_json(&f);
                out["projectId"] = json!(f.project_id);
                Ok(out)
            }
            Call::DeleteFolder { folder_id, project_id, transfer_to_folder_id, .. } => {
                let (plan, done) =
                    inst.delete_folder(&caller, project_id.as_deref(), &folder_id, transfer_to_folder_id.as_deref()).await?;
                let (moved, archived) = match plan.transfer_to {
                    Some(_) => (done.workflows, 0),
                    None => (0, done.workflows),
                };
                Ok(json!({
                    "success": true,
                    "deletedFolders": done.folders,
                    "workflowsMoved": moved,
                    "workflowsArchived": archived,
                    "transferToFolderId": plan.transfer_to.map(|f| f.id),
                }))
            }
            Call::MoveWorkflowToFolder { workflow_id, folder_id, .. } => {
                let (meta, folder) = inst.move_workflow_to_folder(&caller, &workflow_id, Some(&folder_id)).await?;
                Ok(json!({"success": true, "workflowId": meta.id, "folder": folder.as_ref().map(folder_json)}))
            }
        }
    }

    /// The card of a change, after checking it can be made.
    async fn card(&self, ctx: &ToolContext<'_>, call: &Call) -> Result<Option<(Severity, String, String, Value)>, InstanceError> {
        let inst = ctx.instance().map_err(InstanceError::Internal)?;
        let caller = ctx.caller();
        Ok(Some(match call {
            Call::ListProjects {} | Call::ListTags {} | Call::ListFolders { .. } => return Ok(None),
            Call::TagWorkflow { workflow_id, workflow_name, tags } => {
                let (meta, _) = inst.workflow_access(&caller, workflow_id, "workflow:update").await?;
                let name = workflow_name.clone().unwrap_or_else(|| meta.name.clone());
                let mut message = format!("Tag workflow \"{name}\" with [{}]", tags.join(", "));
                if !meta.tag_ids.is_empty() {
                    message.push_str(&format!(", replacing its {}", plural(meta.tag_ids.len(), "current tag", "current tags")));
                }
                (Severity::Info, name, message, json!({"action": "tag-workflow", "workflowId": meta.id, "tags": tags, "replacesTags": meta.tag_ids.len()}))
            }
            Call::CleanupTestExecutions { workflow_id, workflow_name, older_than_hours } => {
                let (meta, _) = inst.workflow_access(&caller, workflow_id, "workflow:execute").await?;
                let name = workflow_name.clone().unwrap_or_else(|| meta.name.clone());
                let hours = older_than_hours.unwrap_or(DEFAULT_CLEANUP_HOURS);
                let message = format!("Delete the test executions of workflow \"{name}\" older than {hours} hour(s); production executions are kept");
                (Severity::Warning, name, message, json!({"action": "cleanup-test-executions", "workflowId": meta.id, "olderThanHours": hours}))
            }
            Call::CreateFolder { name, project_id, parent_folder_id } => {
                let (project, folders) = inst.list_folders(&caller, project_id.as_deref()).await?;
                inst.target_project(&caller, Some(&project), "folder:create").await?;
                let parent = match parent_folder_id {
                    Some(p) => Some(
                        folders
                            .iter()
                            .find(|f| &f.id == p)
                            .ok_or_else(|| InstanceError::NotFound(format!("parent folder {p} in project {project}")))?,
                    ),
                    None => None,
                };
                let project_name = inst.data.projects.project(&project).await?.map(|p| p.name).unwrap_or(project.clone());
                let message = match parent {
                    Some(p) => format!("Create folder \"{name}\" in \"{}\" of project \"{project_name}\"", p.path),
                    None => format!("Create folder \"{name}\" in project \"{project_name}\""),
                };
                (Severity::Info, name.clone(), message, json!({"action": "create-folder", "projectId": project, "parentFolder": parent.map(folder_json)}))
            }
            Call::DeleteFolder { folder_id, folder_name, project_id, transfer_to_folder_id, transfer_to_folder_name } => {
                let plan = inst
                    .plan_folder_deletion(&caller, project_id.as_deref(), folder_id, transfer_to_folder_id.as_deref())
                    .await?;
                let (message, details) = deletion_card(&plan, folder_name.as_deref(), transfer_to_folder_name.as_deref());
                (Severity::Destructive, folder_name.clone().unwrap_or_else(|| plan.folder.name.clone()), message, details)
            }
            Call::MoveWorkflowToFolder { workflow_id, workflow_name, folder_id, folder_name } => {
                let (meta, _) = inst.workflow_access(&caller, workflow_id, "workflow:update").await?;
                let folder = inst
                    .data
                    .folders
                    .get(&meta.project_id, folder_id)
                    .await?
                    .ok_or_else(|| InstanceError::NotFound(format!("folder {folder_id} in the workflow's project")))?;
                let name = workflow_name.clone().unwrap_or_else(|| meta.name.clone());
                let to = folder_name.clone().unwrap_or_else(|| folder.path.clone());
                let message = format!("Move workflow \"{name}\" to folder \"{to}\"");
                (Severity::Info, name, message, json!({"action": "move-workflow-to-folder", "workflowId": meta.id, "folder": folder_json(&folder)}))
            }
        }))
    }
}

impl Tool for Workspace {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        schema()
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            let call = parse(args)?;
            let Some((severity, resource, message, details)) = self.card(ctx, &call).await.map_err(|e| e.message())? else {
                return Ok(None);
            };
            let mut request = ConfirmationRequest::approval("", "", NAME, Map::new(), severity, message);
            request.resource_name = Some(resource);
            request.approval_details = Some(details);
            let act = args.get("action").and_then(Value::as_str).unwrap_or("*");
            Ok(Some(Gate::permission(request, format!("{NAME}.{act}"))))
        })
    }

    /// Scoped by what the call changes: the workflow (tag, move, cleanup),
    /// the folder (delete), the project (create-folder: folders made while
    /// organizing one project share one grant).
    fn allow_key(&self, args: &Value) -> Option<String> {
        let fields: &[&str] = match args.get("action").and_then(Value::as_str) {
            Some("delete-folder") => &["folderId", "projectId"],
            Some("create-folder") | Some("list-folders") => &["projectId"],
            _ => &["workflowId"],
        };
        super::resource_grant(NAME, args, fields)
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let call = match parse(&args) {
                Ok(c) => c,
                Err(e) => return ToolOutcome::Failed(e),
            };
            match self.act(ctx, call).await {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => ToolOutcome::Failed(e.message()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::policy::ACTIONS;
    use crate::tools::schema::validate;

    #[test]
    fn the_schema_is_a_union_of_eight_described_actions() {
        let schema = schema();
        let variants = schema["oneOf"].as_array().unwrap();
        let names: Vec<&str> = variants.iter().map(|v| v["properties"]["action"]["const"].as_str().unwrap()).collect();
        assert_eq!(names, ["list-projects", "list-tags", "tag-workflow", "cleanup-test-executions", "list-folders", "create-folder", "delete-folder", "move-workflow-to-folder"]);
        for v in variants {
            for (field, p) in v["properties"].as_object().unwrap() {
                assert!(p["description"].as_str().is_some_and(|d| !d.is_empty()), "{field} of {} has no description", v["properties"]["action"]["const"]);
            }
        }
        for gated in ["tag-workflow", "cleanup-test-executions", "create-folder", "delete-folder", "move-workflow-to-folder"] {
            assert!(ACTIONS.contains(&format!("{NAME}.{gated}").as_str()), "{gated} has a policy action");
        }
        assert!(validate(&schema, &json!({"action": "tag-workflow", "workflowId": "w", "tags": []})).is_err());
        assert!(validate(&schema, &json!({"action": "list-projects", "projectId": "p"})).is_err());
        assert!(matches!(parse(&json!({"action": "list-projects"})).unwrap(), Call::ListProjects {}));
        let c = parse(&json!({"action": "delete-folder", "folderId": "f", "transferToFolderId": "g"})).unwrap();
        assert!(matches!(c, Call::DeleteFolder { transfer_to_folder_id: Some(ref g), .. } if g == "g"));
    }

    #[test]
    fn grants_are_scoped_by_the_folder_or_workflow() {
        let key = |v: Value| Workspace.allow_key(&v).unwrap();
        let del = |f: &str| json!({"action": "delete-folder", "folderId": f, "folderName": "Old"});
        assert_eq!(key(del("f1")), "workspace:delete-folder:f1");
        assert!(!Workspace.covering_keys(&del("f2")).contains(&key(del("f1"))), "deleting one folder does not cover another");
        let tag = |w: &str| json!({"action": "tag-workflow", "workflowId": w, "tags": ["a"]});
        assert_ne!(key(tag("w1")), key(tag("w2")));
        let cleanup = |w: &str| json!({"action": "cleanup-test-executions", "workflowId": w});
        assert_ne!(key(cleanup("w1")), key(cleanup("w2")));
        let mv = |w: &str| json!({"action": "move-workflow-to-folder", "workflowId": w, "folderId": "f"});
        assert_ne!(key(mv("w1")), key(mv("w2")));
        // Folders created in one project share a grant (a folder, then its subfolder).
        let create = json!({"action": "create-folder", "name": "Clients"});
        let sub = json!({"action": "create-folder", "name": "Acme", "parentFolderId": "f1"});
        assert_eq!(key(create.clone()), key(sub));
        assert_ne!(key(create), key(json!({"action": "create-folder", "name": "Clients", "projectId": "p2"})));
    }

    fn folder(id: &str, path: &str) -> Folder {
        Folder {
            id: id.into(),
            name: path.rsplit('/').next().unwrap_or_default().into(),
            parent_folder_id: None,
            project_id: "p".into(),
            path: path.into(),
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn the_delete_folder_card_says_what_happens_to_the_workflows() {
        let plan = FolderDeletionPlan { folder: folder("f", "Clients/Acme"), subfolders: 2, workflows: 3, transfer_to: None };
        let (m, d) = deletion_card(&plan, None, None);
        assert_eq!(m, "Delete folder \"Clients/Acme\" and its 2 subfolders. Its 3 workflows will be moved to the project root and archived.");
        assert_eq!(d["workflowsOutcome"], "archived");
        let moved = FolderDeletionPlan { transfer_to: Some(folder("g", "Archive")), subfolders: 0, workflows: 1, ..plan.clone() };
        let (m, d) = deletion_card(&moved, Some("Acme"), None);
        assert_eq!(m, "Delete folder \"Acme\". Its 1 workflow will be moved to folder \"Archive\".");
        assert_eq!(d["transferTo"]["id"], "g");
        let empty = FolderDeletionPlan { workflows: 0, ..plan };
        assert!(deletion_card(&empty, None, None).0.ends_with("It holds no workflows."));
    }
}
