//! `build-workflow`: saves a workspace source file as a workflow. Reads the
//! file, lets `instance::Instance::build_workflow` compile, validate and
//! save it, and records the file → workflow binding with the source hash
//! and version in the thread's workspace metadata, so later builds of the
//! same file save new versions of the same workflow. Binding a file to an
//! existing workflow (`workflowId` on a first build) overwrites that
//! workflow and asks first.

use super::workspace::message as workspace_message;
use super::{Gate, Tool, ToolContext, ToolOutcome};
use crate::knowledge_base::KB_ROOT;
use crate::workspace::ThreadWorkspace;
use futures::future::BoxFuture;
use instance::builder::BuildRequest;
use protocol::events::{ConfirmationRequest, Severity};
use serde_json::{json, Map, Value};
use store::data::workspace::SourceBinding;

pub struct BuildWorkflow;

fn s<'a>(args: &'a Value, k: &str) -> Option<&'a str> {
    args.get(k).and_then(Value::as_str)
}

impl BuildWorkflow {
    /// The binding of `path`, or why it cannot be built.
    async fn binding(&self, ctx: &ToolContext<'_>, path: &str) -> Result<Option<SourceBinding>, String> {
        let inst = ctx.instance()?;
        inst.data.workspace.binding(ctx.thread_id, path).await.map_err(|e| workspace_message(e.into()))
    }

    async fn build(&self, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, String> {
        let inst = ctx.instance()?;
        let path = s(args, "filePath").unwrap_or_default();
        if path == KB_ROOT || path.starts_with(&format!("{KB_ROOT}/")) {
            return Err(format!(
                "{path} is part of the read-only knowledge base; copy it to your own file (workspace_write_file) and build that"
            ));
        }
        let ws = ThreadWorkspace { store: &inst.data.workspace, thread: ctx.thread_id };
        let (source, _) = ws.read(path).await.map_err(workspace_message)?;
        let binding = self.binding(ctx, path).await?;
        let requested = s(args, "workflowId");
        if let (Some(b), Some(w)) = (&binding, requested) {
            if b.workflow_id != w {
                return Err(format!(
                    "{path} is bound to workflow {} by an earlier build; to save into {w}, write its source (get-as-code) to another file and build that",
                    b.workflow_id
                ));
            }
        }
        let outcome = inst
            .build_workflow(
                &ctx.caller(),
                BuildRequest {
                    source,
                    bound_workflow_id: binding.as_ref().map(|b| b.workflow_id.clone()),
                    workflow_id: requested.map(str::to_owned),
                    name: s(args, "name").map(str::to_owned),
                    folder_path: s(args, "folderPath").map(str::to_owned),
                },
            )
            .await
            .map_err(|e| e.message())?;
        let work_item = s(args, "workItemId")
            .map(str::to_owned)
            .or_else(|| binding.as_ref().and_then(|b| b.work_item_id.clone()))
            .unwrap_or_else(|| format!("wi_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]));
        if let (true, Some(wid), Some(vid)) = (outcome.success, &outcome.workflow_id, &outcome.version_id) {
            let record = SourceBinding {
                path: path.to_owned(),
                workflow_id: wid.clone(),
                source_hash: outcome.source_hash.clone(),
                version_id: vid.clone(),
                work_item_id: Some(work_item.clone()),
                is_supporting_workflow: args.get("isSupportingWorkflow").and_then(Value::as_bool).unwrap_or(false),
                built_at: store::data::db::now_iso(),
            };
            inst.data.workspace.record_build(ctx.thread_id, &record, binding.is_none()).await.map_err(|e| {
                format!("the workflow {wid} was saved, but binding {path} to it failed ({e}); build again with workflowId {wid}")
            })?;
        }
        let mut out = serde_json::to_value(&outcome).map_err(|e| e.to_string())?;
        out["filePath"] = json!(path);
        out["workItemId"] = json!(work_item);
        Ok(out)
    }
}

impl Tool for BuildWorkflow {
    fn name(&self) -> &'static str {
        "build-workflow"
    }

    fn description(&self) -> &'static str {
        "Compile, validate and save a workspace workflow source file (`.workflow.ts`/`.ts`/`.js` SDK code or workflow JSON). \
The first build creates the workflow in the conversation's project (or binds the file to workflowId); later builds of the \
same file save new versions of that workflow. Edit the file first; inline source is not accepted."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "filePath": {"type": "string", "minLength": 1, "description": "Workspace path of the `.workflow.ts` or workflow JSON source file"},
                "workflowId": {"type": "string", "description": "Existing workflow ID to bind this file to on its first build (overwrites that workflow; the user approves)"},
                "name": {"type": "string", "maxLength": 128, "description": "Workflow name override for a new workflow"},
                "workItemId": {"type": "string", "description": "Work item hint for workflow-loop reporting"},
                "isSupportingWorkflow": {"type": "boolean", "description": "Marks a saved sub-workflow as supporting"},
                "folderPath": {"type": "string", "description": "Folder to create the new workflow in, named as the user named it (`Clients/Acme`, `Acme`); an unresolved folder fails the build before anything is saved. New workflows only"},
                "approvalSummary": {"type": "string", "maxLength": 300, "description": "One line in the user's language on what this change does, shown when the build needs approval"}
            },
            "required": ["filePath"],
            "additionalProperties": false
        })
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            let (Some(wid), Some(path)) = (s(args, "workflowId"), s(args, "filePath")) else { return Ok(None) };
            if self.binding(ctx, path).await?.is_some() {
                return Ok(None);
            }
            let inst = ctx.instance()?;
            let (meta, _) = inst.workflow_access(&ctx.caller(), wid, "workflow:update").await.map_err(|e| e.message())?;
            let summary = s(args, "approvalSummary").map(str::to_owned);
            let message = summary.clone().unwrap_or_else(|| "Save the changes to this workflow".to_owned());
            let mut request = ConfirmationRequest::approval("", "", "build-workflow", Map::new(), Severity::Warning, message);
            request.resource_name = Some(meta.name.clone());
            request.approval_details = Some(json!({
                "action": "edit", "workflowId": meta.id, "workflowName": meta.name, "filePath": path,
                "isPublished": meta.active_version_id.is_some(), "summary": summary,
            }));
            Ok(Some(Gate::permission(request, "build-workflow")))
        })
    }

    fn allow_key(&self, args: &Value) -> Option<String> {
        Some(format!("build-workflow:{}", s(args, "workflowId").unwrap_or("*")))
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match self.build(ctx, &args).await {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => ToolOutcome::Failed(e),
            }
        })
    }
}
