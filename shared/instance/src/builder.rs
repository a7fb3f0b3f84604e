//! Workflow source → saved workflow: compile (SDK code or workflow JSON, in
//! the sandbox), validate, fill node ids, assign credentials the caller can
//! use, then create or save a new version. MCP's `create_workflow_from_code`
//! and `update_workflow` and the agent's `build-workflow` all save through
//! here; [`Instance::build_workflow`] adds what `build-workflow` needs on
//! top (binding, the edit rules, folder resolution, source hash).

use crate::access::Caller;
use crate::edit_rules::{self, Saved};
use crate::validate::{self, Finding, Report};
use crate::{sdk, Instance, InstanceError};
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use store::data::folders::{FolderRef, FolderResolution};
use store::data::workflows::{NewWorkflow, Workflow, WorkflowBody, WorkflowUpdate, MAX_NAME};

/// Which front door built a workflow (kept in its `meta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Mcp,
    InstanceAi,
}

impl Variant {
    fn as_str(self) -> &'static str {
        match self {
            Variant::Mcp => "mcp",
            Variant::InstanceAi => "instance-ai",
        }
    }
}

/// A credential filled in for a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    pub node_name: String,
    pub credential_type: String,
    pub credential_name: String,
}

/// A save's outcome.
#[derive(Debug, Clone)]
pub struct SavedWorkflow {
    pub workflow: Workflow,
    pub assigned: Vec<Assignment>,
    /// HTTP Request nodes, whose auth is never auto-assigned.
    pub skipped_http: Vec<String>,
}

impl SavedWorkflow {
    pub fn skipped_note(&self) -> Option<String> {
        (!self.skipped_http.is_empty()).then(|| {
            format!(
                "HTTP Request nodes are skipped during credential auto-assignment; configure their authentication manually: {}",
                self.skipped_http.join(", ")
            )
        })
    }
}

impl Instance {
    /// Code (or workflow JSON) → workflow JSON and its validation. The
    /// script and the expressions' syntax check run in the executor's
    /// sandbox (where `self.dispatch` says): the functions that build
    /// workflows link none. `Err` inside: the code did not evaluate, with
    /// the reason.
    pub async fn compile(&self, code: String) -> Result<Result<(Value, Report), String>, InstanceError> {
        match sdk::prepare(&code) {
            Err(reason) => Ok(Err(reason)),
            Ok(sdk::Prepared::Workflow(wf)) => {
                let report = self.validate_with_expressions(&wf).await?;
                Ok(Ok((wf, report)))
            }
            // the script and its workflow's syntax check: one job
            Ok(sdk::Prepared::Script(script)) => Ok(self.executor.compile_workflow(script, self.dispatch).await.map_err(crate::runner::job_error)?.map(|c| {
                let report = validate::validate_syntax(&c.workflow, &c.syntax_errors);
                (c.workflow, report)
            })),
        }
    }

    /// [`validate::validate`], and every expression compiled in the
    /// executor's sandbox (syntax only; data-dependent failures pass).
    pub async fn validate_with_expressions(&self, wf: &Value) -> Result<Report, InstanceError> {
        let expressions = validate::expressions(wf);
        let verdicts = self.executor.syntax_errors(expressions.clone(), self.dispatch).await.map_err(crate::runner::job_error)?;
        let syntax_errors = expressions.into_iter().zip(verdicts).filter_map(|(e, why)| why.map(|why| (e, why))).collect();
        Ok(validate::validate_syntax(wf, &syntax_errors))
    }
}

/// Node ids and webhook ids where missing (webhook URLs need a stable id).
pub fn fill_ids(nodes: &mut [Value]) {
    for n in nodes.iter_mut() {
        let Some(o) = n.as_object_mut() else { continue };
        if o.get("id").and_then(Value::as_str).is_none_or(|s| s.is_empty()) {
            o.insert("id".into(), json!(uuid::Uuid::new_v4().to_string()));
        }
        let ty = o.get("type").and_then(Value::as_str).unwrap_or_default();
        let webhook_like = matches!(ty, "n8n-nodes-base.webhook" | "n8n-nodes-base.formTrigger" | "@n8n/n8n-nodes-langchain.chatTrigger");
        if webhook_like && o.get("webhookId").and_then(Value::as_str).is_none_or(|s| s.is_empty()) {
            o.insert("webhookId".into(), json!(uuid::Uuid::new_v4().to_string()));
        }
    }
}

fn builder_meta(existing: &Value, variant: Variant) -> Value {
    let mut m = existing.as_object().cloned().unwrap_or_default();
    m.insert("aiBuilderAssisted".into(), json!(true));
    m.insert("builderVariant".into(), json!(variant.as_str()));
    Value::Object(m)
}

/// The workflow JSON's parts as a body (settings default to v1 order).
pub fn body_of(wf: &Value, nodes: Vec<Value>, variant: Variant) -> WorkflowBody {
    WorkflowBody {
        nodes: Value::Array(nodes),
        connections: wf.get("connections").cloned().unwrap_or_else(|| json!({})),
        settings: wf.get("settings").cloned().unwrap_or_else(|| json!({"executionOrder": "v1"})),
        pin_data: wf.get("pinData").cloned().unwrap_or(Value::Null),
        meta: builder_meta(wf.get("meta").unwrap_or(&Value::Null), variant),
    }
}

pub fn source_hash(source: &str) -> String {
    hex::encode(Sha256::digest(source.as_bytes()))
}

/// What `build-workflow` asks for.
#[derive(Debug, Clone, Default)]
pub struct BuildRequest {
    /// The file's content: SDK code or workflow JSON.
    pub source: String,
    /// The workflow the file is bound to by an earlier build.
    pub bound_workflow_id: Option<String>,
    /// Bind the file to this existing workflow (first build only).
    pub workflow_id: Option<String>,
    /// Name of a new workflow (else the name in the source).
    pub name: Option<String>,
    /// Folder of a new workflow, as the user named it.
    pub folder_path: Option<String>,
}

/// Why a build did not save, when it is not an error in the source.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Remediation {
    /// `blocked`: editing the file cannot fix it.
    pub category: &'static str,
    pub should_edit: bool,
    pub reason: &'static str,
    pub guidance: String,
}

/// `build-workflow`'s outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildOutcome {
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
    /// The version this build saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Whether this build created the workflow.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub created: bool,
    pub source_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder: Option<FolderRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder_resolution: Option<FolderResolution>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remediation: Option<Remediation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Finding>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Finding>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assigned_credentials: Vec<Assignment>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl BuildOutcome {
    fn failed(hash: &str) -> BuildOutcome {
        BuildOutcome {
            success: false,
            workflow_id: None,
            workflow_name: None,
            version_id: None,
            created: false,
            source_hash: hash.to_owned(),
            folder: None,
            folder_resolution: None,
            remediation: None,
            errors: Vec::new(),
            warnings: Vec::new(),
            assigned_credentials: Vec::new(),
            note: None,
        }
    }
}

fn finding(code: &str, message: String) -> Finding {
    Finding {
        code: code.into(),
        message,
        node_name: None,
        parameter_path: None,
        category: validate::Category::Workflow,
        severity: validate::Severity::Error,
    }
}

fn name_of(explicit: Option<String>, wf: &Value) -> Result<String, InstanceError> {
    let name = explicit
        .or_else(|| wf.get("name").and_then(Value::as_str).map(str::to_owned))
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "My workflow".into());
    if name.chars().count() > MAX_NAME {
        return Err(InstanceError::Invalid(format!("name must be at most {MAX_NAME} characters")));
    }
    Ok(name)
}

impl Instance {
    /// Fills missing credentials of `nodes` (only those named in `only`,
    /// when given) with the first credential of an accepted type the caller
    /// can use. HTTP Request nodes are skipped: their auth is chosen by hand.
    pub async fn assign_credentials(
        &self,
        caller: &Caller,
        nodes: &mut [Value],
        only: Option<&[String]>,
    ) -> Result<(Vec<Assignment>, Vec<String>), InstanceError> {
        let mut assigned = Vec::new();
        let mut skipped_http = Vec::new();
        let mut usable: Option<Vec<store::data::credentials::CredentialRow>> = None;
        for n in nodes.iter_mut() {
            let name = n.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            if only.is_some_and(|o| !o.contains(&name)) {
                continue;
            }
            let ty = n.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
            if ty == "n8n-nodes-base.httpRequest" {
                skipped_http.push(name);
                continue;
            }
            let Some(desc) = crate::catalog::describe_exact(&ty) else { continue };
            let accepted = crate::catalog::credential_types(desc);
            if accepted.is_empty() {
                continue;
            }
            let has = n.get("credentials").and_then(Value::as_object).is_some_and(|c| accepted.iter().any(|a| c.contains_key(a)));
            if has {
                continue;
            }
            if usable.is_none() {
                usable = Some(self.visible_credentials(caller).await?);
            }
            let Some(c) = usable.iter().flatten().find(|c| accepted.contains(&c.kind)) else { continue };
            let obj = n.as_object_mut().ok_or_else(|| InstanceError::Invalid(format!("node {name:?} is not an object")))?;
            let creds = obj.entry("credentials").or_insert_with(|| json!({}));
            creds[c.kind.as_str()] = json!({"id": c.id, "name": c.name});
            assigned.push(Assignment { node_name: name, credential_type: c.kind.clone(), credential_name: c.name.clone() });
        }
        Ok((assigned, skipped_http))
    }

    /// Creates a workflow from validated workflow JSON in the caller's
    /// write project (`workflow:create`).
    #[allow(clippy::too_many_arguments)]
    pub async fn create_from_json(
        &self,
        caller: &Caller,
        mut wf: Value,
        name: Option<String>,
        description: Option<String>,
        project_id: Option<String>,
        folder_id: Option<String>,
        variant: Variant,
    ) -> Result<SavedWorkflow, InstanceError> {
        let project_id = match project_id {
            Some(p) => {
                self.require_project(caller, &p, "workflow:create").await?;
                p
            }
            None => self.write_project(caller, "workflow:create").await?,
        };
        let name = name_of(name, &wf)?;
        let mut nodes = wf.get_mut("nodes").and_then(Value::as_array_mut).map(std::mem::take).unwrap_or_default();
        fill_ids(&mut nodes);
        let (assigned, skipped_http) = self.assign_credentials(caller, &mut nodes, None).await?;
        let body = body_of(&wf, nodes, variant);
        let workflow = self
            .data
            .workflows
            .create(
                // Available in MCP whichever door built it: the same user, the same keys.
                NewWorkflow { name, description, project_id, folder_id, body, available_in_mcp: true },
                &caller.user,
            )
            .await?;
        Ok(SavedWorkflow { workflow, assigned, skipped_http })
    }

    /// Saves `body` as a new version of `id` (`workflow:update`), on
    /// condition the draft is still `expected_version_id`. Credentials are
    /// assigned only to the nodes in `assign_only` (all when `None`).
    #[allow(clippy::too_many_arguments)]
    pub async fn save_version(
        &self,
        caller: &Caller,
        id: &str,
        expected_version_id: &str,
        mut body: WorkflowBody,
        name: Option<String>,
        description: Option<Option<String>>,
        assign_only: Option<&[String]>,
        variant: Variant,
    ) -> Result<SavedWorkflow, InstanceError> {
        self.workflow_access(caller, id, "workflow:update").await?;
        let mut nodes = body.nodes.as_array_mut().map(std::mem::take).unwrap_or_default();
        fill_ids(&mut nodes);
        let (assigned, skipped_http) = self.assign_credentials(caller, &mut nodes, assign_only).await?;
        body.nodes = Value::Array(nodes);
        body.meta = builder_meta(&body.meta, variant);
        body.validate().map_err(|e| InstanceError::Invalid(format!("the result would be an invalid workflow ({e}); nothing was saved")))?;
        let update = WorkflowUpdate { name, description, body: Some(body), autosaved: false };
        let workflow = self.data.workflows.update(id, expected_version_id, update, &caller.user).await?;
        Ok(SavedWorkflow { workflow, assigned, skipped_http })
    }

    /// `build-workflow`: compiles and validates the source, then creates the
    /// workflow (first build) or saves a new version of the bound one.
    /// Nothing is saved when the source has blocking findings, the bound
    /// workflow is gone, or the folder does not resolve.
    pub async fn build_workflow(&self, caller: &Caller, req: BuildRequest) -> Result<BuildOutcome, InstanceError> {
        let hash = source_hash(&req.source);
        let mut out = BuildOutcome::failed(&hash);
        let (wf, report) = match self.compile(req.source).await? {
            Ok(compiled) => compiled,
            Err(e) => {
                out.errors.push(finding("CODE_ERROR", e));
                return Ok(out);
            }
        };
        let target = req.bound_workflow_id.clone().or(req.workflow_id.clone());

        // The workflow this file saves to, as saved now.
        let existing = match &target {
            Some(id) => match self.workflow(caller, id).await {
                Ok(w) => Some(w),
                Err(InstanceError::NotFound(_)) if req.bound_workflow_id.is_some() => {
                    out.remediation = Some(Remediation {
                        category: "blocked",
                        should_edit: false,
                        reason: "bound-workflow-missing",
                        guidance: format!(
                            "The workflow {id} this file was built into no longer exists (deleted, or not yours). No new workflow was created in its place. Ask the user whether to create a new one (write the source to a new file and build that) or to stop."
                        ),
                    });
                    return Ok(out);
                }
                Err(e) => return Err(e),
            },
            None => None,
        };

        let saved_findings = match &existing {
            Some(w) => Some(validate::validate(&json!({"nodes": w.body.nodes, "connections": w.body.connections})).findings),
            None => None,
        };
        let saved_json = existing.as_ref().map(|w| json!({"nodes": w.body.nodes, "connections": w.body.connections}));
        let saved = match (&saved_json, &saved_findings) {
            (Some(workflow), Some(findings)) => Some(Saved { workflow, findings }),
            _ => None,
        };
        let (errors, warnings) = edit_rules::classify(report.findings, &wf, saved.as_ref());
        out.warnings = warnings.into_iter().filter(|f| f.code != "MISSING_POSITION").collect();
        if !errors.is_empty() {
            out.errors = errors;
            return Ok(out);
        }

        let saved = match existing {
            None => {
                // A new workflow: resolve its folder first, so a wrong folder saves nothing.
                let project = self.write_project(caller, "workflow:create").await?;
                let folder = match &req.folder_path {
                    Some(path) => match self.data.folders.resolve(&project, path).await? {
                        Ok(f) => Some(f),
                        Err(resolution) => {
                            let real: Vec<&str> = resolution.candidates.iter().map(|c| c.path.as_str()).collect();
                            out.errors.push(finding(
                                "FOLDER_NOT_RESOLVED",
                                format!(
                                    "folder {path:?} did not resolve ({}); nothing was saved. {}",
                                    serde_json::to_value(resolution.reason).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
                                    if real.is_empty() { "The project has no folders.".to_owned() } else { format!("Folders: {}", real.join(", ")) }
                                ),
                            ));
                            out.folder_resolution = Some(resolution);
                            return Ok(out);
                        }
                    },
                    None => None,
                };
                out.folder = folder.as_ref().map(FolderRef::from);
                out.created = true;
                self.create_from_json(caller, wf, req.name, None, Some(project), folder.map(|f| f.id), Variant::InstanceAi).await
            }
            Some(current) => {
                if req.folder_path.is_some() {
                    out.warnings.push(Finding {
                        severity: validate::Severity::Warning,
                        ..finding("FOLDER_PATH_IGNORED", "folderPath applies to new workflows only; this build saved the existing workflow where it is (moving is workspace action move-workflow-to-folder)".into())
                    });
                }
                let mut nodes = wf.get("nodes").and_then(Value::as_array).cloned().unwrap_or_default();
                // Keep the ids of unchanged node names, so webhook URLs and history stay stable.
                for n in nodes.iter_mut() {
                    let name = n.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let old = current.body.nodes.as_array().into_iter().flatten().find(|o| o.get("name").and_then(Value::as_str) == Some(name.as_str()));
                    if let (Some(o), Some(obj)) = (old, n.as_object_mut()) {
                        for k in ["id", "webhookId"] {
                            if !obj.contains_key(k) {
                                if let Some(v) = o.get(k) {
                                    obj.insert(k.into(), v.clone());
                                }
                            }
                        }
                    }
                }
                let mut body = body_of(&wf, nodes, Variant::InstanceAi);
                if wf.get("pinData").is_none() {
                    body.pin_data = current.body.pin_data.clone();
                }
                body.meta = current.body.meta.clone();
                let name = wf.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty() && **n != current.meta.name).map(str::to_owned);
                self.save_version(caller, &current.meta.id, &current.meta.version_id, body, name, None, None, Variant::InstanceAi).await
            }
        };
        // A save the store refuses (archived, saved meanwhile, too large) is a failed build, not a crash.
        let saved = match saved {
            Ok(s) => s,
            Err(InstanceError::Invalid(m) | InstanceError::Conflict(m)) => {
                out.errors.push(finding("SAVE_REFUSED", format!("{m}; nothing was saved")));
                return Ok(out);
            }
            Err(e) => return Err(e),
        };
        out.note = saved.skipped_note();
        out.success = true;
        out.workflow_id = Some(saved.workflow.meta.id.clone());
        out.workflow_name = Some(saved.workflow.meta.name.clone());
        out.version_id = Some(saved.workflow.meta.version_id.clone());
        out.assigned_credentials = saved.assigned;
        Ok(out)
    }
}
