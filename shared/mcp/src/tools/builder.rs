//! Workflow builder: SDK reference, node search and types, suggestions,
//! validation, creation from code, partial updates.

use super::Ctx;
use instance::catalog::{self, NodeIdRequest};
use crate::error::McpError;
use instance::ops::{self, Accessible, Draft, Operation};
use instance::sdk;
use instance::validate::{self, Warning};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use store::data::credentials::CredentialQuery;
use store::data::workflows::{NewWorkflow, WorkflowBody, WorkflowUpdate, MAX_DESCRIPTION, MAX_NAME};

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Patterns,
    Expressions,
    Functions,
    Rules,
    Import,
    Guidelines,
    Design,
    All,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdkReferenceArgs {
    /// Documentation section to retrieve (default "all")
    pub section: Option<Section>,
}

#[derive(Serialize, JsonSchema)]
pub struct SdkReferenceOut {
    pub reference: String,
}

/// The `## <name>` section of the reference.
fn section(name: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in sdk::REFERENCE.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            inside = h.trim() == name;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

pub async fn get_sdk_reference(_ctx: &Ctx<'_>, a: SdkReferenceArgs) -> Result<SdkReferenceOut, McpError> {
    let reference = match a.section.unwrap_or(Section::All) {
        Section::All => sdk::REFERENCE.to_owned(),
        Section::Patterns => section("patterns"),
        Section::Expressions => section("expressions"),
        Section::Functions => section("functions"),
        Section::Rules => section("rules"),
        Section::Import => section("import"),
        Section::Guidelines => section("guidelines"),
        Section::Design => section("design"),
    };
    Ok(SdkReferenceOut { reference })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchNodesArgs {
    /// Service names ("gmail"), trigger types ("schedule trigger", "webhook") or utilities ("set", "if", "merge", "code")
    #[schemars(length(min = 1))]
    pub queries: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct SearchNodesOut {
    pub results: String,
}

pub async fn search_nodes(_ctx: &Ctx<'_>, a: SearchNodesArgs) -> Result<SearchNodesOut, McpError> {
    if a.queries.is_empty() || a.queries.len() > 20 {
        return Err(McpError::InvalidArguments("queries must hold 1-20 search strings".into()));
    }
    Ok(SearchNodesOut { results: catalog::search_text(&a.queries) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeIdObject {
    /// The node type ID, e.g. "n8n-nodes-base.set"
    pub node_id: String,
    pub version: Option<String>,
    pub resource: Option<String>,
    pub operation: Option<String>,
    pub mode: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum NodeId {
    Plain(String),
    WithDiscriminators(NodeIdObject),
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetNodeTypesArgs {
    /// Node IDs: plain strings or objects with discriminators
    #[schemars(length(min = 1))]
    pub node_ids: Vec<NodeId>,
}

#[derive(Serialize, JsonSchema)]
pub struct GetNodeTypesOut {
    pub definitions: String,
}

pub async fn get_node_types(_ctx: &Ctx<'_>, a: GetNodeTypesArgs) -> Result<GetNodeTypesOut, McpError> {
    if a.node_ids.is_empty() || a.node_ids.len() > 30 {
        return Err(McpError::InvalidArguments("nodeIds must hold 1-30 node IDs".into()));
    }
    let reqs: Vec<NodeIdRequest> = a
        .node_ids
        .into_iter()
        .map(|n| match n {
            NodeId::Plain(id) => NodeIdRequest { node_id: id, version: None, resource: None, operation: None, mode: None },
            NodeId::WithDiscriminators(o) => {
                NodeIdRequest { node_id: o.node_id, version: o.version, resource: o.resource, operation: o.operation, mode: o.mode }
            }
        })
        .collect();
    Ok(GetNodeTypesOut { definitions: catalog::types_text(&reqs) })
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Chatbot,
    Notification,
    Scheduling,
    DataTransformation,
    DataPersistence,
    DataExtraction,
    DocumentProcessing,
    FormInput,
    ContentGeneration,
    Triage,
    FindResearch,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuggestedNodesArgs {
    /// Workflow technique categories
    #[schemars(length(min = 1))]
    pub categories: Vec<Category>,
}

#[derive(Serialize, JsonSchema)]
pub struct SuggestedNodesOut {
    pub suggestions: String,
}

pub async fn get_suggested_nodes(_ctx: &Ctx<'_>, a: SuggestedNodesArgs) -> Result<SuggestedNodesOut, McpError> {
    if a.categories.is_empty() {
        return Err(McpError::InvalidArguments("categories must hold at least one category".into()));
    }
    let names: Vec<String> = a
        .categories
        .iter()
        .filter_map(|c| serde_json::to_value(CategoryName(*c)).ok().and_then(|v| v.as_str().map(str::to_owned)))
        .collect();
    Ok(SuggestedNodesOut { suggestions: catalog::suggestions_text(&names) })
}

/// Serialises a category back to its wire name.
struct CategoryName(Category);

impl Serialize for CategoryName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self.0 {
            Category::Chatbot => "chatbot",
            Category::Notification => "notification",
            Category::Scheduling => "scheduling",
            Category::DataTransformation => "data_transformation",
            Category::DataPersistence => "data_persistence",
            Category::DataExtraction => "data_extraction",
            Category::DocumentProcessing => "document_processing",
            Category::FormInput => "form_input",
            Category::ContentGeneration => "content_generation",
            Category::Triage => "triage",
            Category::FindResearch => "find_research",
        })
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeArgs {
    /// Full TypeScript/JavaScript workflow code using the Workflow SDK, ending with `export default workflow(...)`
    pub code: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateOut {
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_count: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// The workflow JSON the code produced (when valid)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow: Option<Value>,
}

/// Code → workflow JSON → validation report, off the async threads (the
/// sandbox is CPU-bound).
async fn compile(code: String) -> Result<(Result<Value, String>, validate::Report), McpError> {
    tokio::task::spawn_blocking(move || match sdk::evaluate(&code) {
        Ok(wf) => {
            let report = validate::validate(&wf, true);
            (Ok(wf), report)
        }
        Err(e) => (Err(e), validate::Report::default()),
    })
    .await
    .map_err(|e| McpError::Internal(format!("validation task: {e}")))
}

pub async fn validate_workflow(_ctx: &Ctx<'_>, a: CodeArgs) -> Result<ValidateOut, McpError> {
    let (wf, report) = compile(a.code).await?;
    Ok(match wf {
        Err(e) => ValidateOut { valid: false, node_count: None, warnings: Vec::new(), errors: vec![e], workflow: None },
        Ok(wf) => {
            let valid = report.errors.is_empty();
            ValidateOut {
                valid,
                node_count: wf.get("nodes").and_then(Value::as_array).map(|a| a.len() as u64),
                warnings: report.warnings,
                errors: report.errors,
                workflow: valid.then_some(wf),
            }
        }
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateFromCodeArgs {
    /// Full TypeScript/JavaScript workflow code using the Workflow SDK; validate it first with validate_workflow
    pub code: String,
    /// Workflow name (max 128 chars); defaults to the name in the code
    #[schemars(length(max = 128))]
    pub name: Option<String>,
    /// Short description (max 255 chars, 1-2 sentences)
    #[schemars(length(max = 255))]
    pub description: Option<String>,
    /// Project to create the workflow in; defaults to your personal project
    pub project_id: Option<String>,
    /// Folder to create the workflow in (requires projectId)
    pub folder_id: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssignedCredential {
    pub node_name: String,
    pub credential_name: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateFromCodeOut {
    pub workflow_id: String,
    pub name: String,
    pub node_count: u64,
    pub url: String,
    pub auto_assigned_credentials: Vec<AssignedCredential>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One auto-assignment.
struct Assignment {
    node: String,
    key: String,
    credential_name: String,
}

/// Fills missing credentials of `nodes` (only those named in `only`, when
/// given) with the first credential of an accepted type the user can use.
/// HTTP Request nodes are skipped: their auth is chosen by hand.
async fn auto_assign(ctx: &Ctx<'_>, nodes: &mut [Value], only: Option<&[String]>) -> Result<(Vec<Assignment>, Vec<String>), McpError> {
    let mut assigned = Vec::new();
    let mut skipped_http = Vec::new();
    let mut cache: Option<Vec<store::data::credentials::CredentialRow>> = None;
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
        let Some(desc) = catalog::describe_exact(&ty) else { continue };
        let accepted = catalog::credential_types(desc);
        if accepted.is_empty() {
            continue;
        }
        let has = n.get("credentials").and_then(Value::as_object).is_some_and(|c| accepted.iter().any(|a| c.contains_key(a)));
        if has {
            continue;
        }
        if cache.is_none() {
            let q = CredentialQuery { limit: Some(200), ..CredentialQuery::default() };
            cache = Some(ctx.data().credentials.list(&ctx.user, &q).await?.data);
        }
        let Some(c) = cache.iter().flatten().find(|c| accepted.contains(&c.kind)) else { continue };
        let obj = n.as_object_mut().ok_or_else(|| McpError::Invalid(format!("node {name:?} is not an object")))?;
        let creds = obj.entry("credentials").or_insert_with(|| json!({}));
        creds[c.kind.as_str()] = json!({"id": c.id, "name": c.name});
        assigned.push(Assignment { node: name, key: c.kind.clone(), credential_name: c.name.clone() });
    }
    Ok((assigned, skipped_http))
}

fn skipped_note(skipped: &[String]) -> Option<String> {
    (!skipped.is_empty()).then(|| {
        format!(
            "HTTP Request nodes are skipped during credential auto-assignment; configure their authentication manually: {}",
            skipped.join(", ")
        )
    })
}

/// Node ids and webhook ids where missing (webhook URLs need a stable id).
fn fill_ids(nodes: &mut [Value]) {
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

fn builder_meta(existing: &Value) -> Value {
    let mut m = existing.as_object().cloned().unwrap_or_default();
    m.insert("aiBuilderAssisted".into(), json!(true));
    m.insert("builderVariant".into(), json!("mcp"));
    Value::Object(m)
}

pub async fn create_workflow_from_code(ctx: &Ctx<'_>, a: CreateFromCodeArgs) -> Result<CreateFromCodeOut, McpError> {
    if a.folder_id.is_some() && a.project_id.is_none() {
        return Err(McpError::InvalidArguments("folderId requires projectId".into()));
    }
    if a.description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION) {
        return Err(McpError::InvalidArguments(format!("description must be at most {MAX_DESCRIPTION} characters")));
    }
    let user = ctx.user().await?;
    let project_id = a.project_id.clone().unwrap_or(user.personal_project_id);
    ctx.require_project(&project_id, "workflow:create").await?;
    let (wf, report) = compile(a.code).await?;
    let mut wf = wf.map_err(McpError::Code)?;
    if !report.errors.is_empty() {
        return Err(McpError::Code(format!(
            "the workflow is not valid, nothing was created; fix these and call validate_workflow again:\n- {}",
            report.errors.join("\n- ")
        )));
    }
    let name = a
        .name
        .clone()
        .or_else(|| wf.get("name").and_then(Value::as_str).map(str::to_owned))
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| "My workflow".into());
    if name.chars().count() > MAX_NAME {
        return Err(McpError::InvalidArguments(format!("name must be at most {MAX_NAME} characters")));
    }
    ctx.server.limiter.check(ctx.user.as_str(), "create_workflow_from_code").await?;
    let mut nodes = wf.get_mut("nodes").and_then(Value::as_array_mut).map(std::mem::take).unwrap_or_default();
    fill_ids(&mut nodes);
    let (assigned, skipped) = auto_assign(ctx, &mut nodes, None).await?;
    let body = WorkflowBody {
        nodes: Value::Array(nodes),
        connections: wf.get("connections").cloned().unwrap_or_else(|| json!({})),
        settings: wf.get("settings").cloned().unwrap_or_else(|| json!({"executionOrder": "v1"})),
        pin_data: Value::Null,
        meta: builder_meta(wf.get("meta").unwrap_or(&Value::Null)),
    };
    let created = ctx
        .data()
        .workflows
        .create(
            NewWorkflow {
                name,
                description: a.description,
                project_id,
                folder_id: a.folder_id,
                body,
                available_in_mcp: true,
            },
            &ctx.user,
        )
        .await?;
    Ok(CreateFromCodeOut {
        url: ctx.workflow_url(&created.meta.id),
        node_count: created.body.node_count() as u64,
        workflow_id: created.meta.id,
        name: created.meta.name,
        auto_assigned_credentials: assigned
            .into_iter()
            .map(|x| AssignedCredential { node_name: x.node, credential_name: x.credential_name })
            .collect(),
        note: skipped_note(&skipped),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateWorkflowArgs {
    /// The ID of the workflow to update
    pub workflow_id: String,
    /// Ordered list of 1-100 operations, applied atomically
    #[schemars(length(min = 1, max = 100))]
    pub operations: Vec<Operation>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssignedCredentialTyped {
    pub node_name: String,
    pub credential_name: String,
    pub credential_type: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidationWarning {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateWorkflowOut {
    pub workflow_id: String,
    pub name: String,
    pub node_count: u64,
    pub url: String,
    pub applied_operations: u64,
    pub auto_assigned_credentials: Vec<AssignedCredentialTyped>,
    pub validation_warnings: Vec<ValidationWarning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub async fn update_workflow(ctx: &Ctx<'_>, a: UpdateWorkflowArgs) -> Result<UpdateWorkflowOut, McpError> {
    if a.operations.is_empty() || a.operations.len() > 100 {
        return Err(McpError::InvalidArguments(format!("operations must hold 1-100 operations, got {}", a.operations.len())));
    }
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:update", true).await?;
    let wf = ctx.data().workflows.get(&meta.id).await?.ok_or_else(|| McpError::NotFound(format!("workflow {}", meta.id)))?;
    let needs_creds = a.operations.iter().any(|o| matches!(o, Operation::SetNodeCredential { .. }));
    let mut accessible = Accessible::new();
    if needs_creds {
        let q = CredentialQuery { limit: Some(200), ..CredentialQuery::default() };
        for c in ctx.data().credentials.list(&ctx.user, &q).await?.data {
            accessible.insert(c.id, (c.name, c.kind));
        }
    }
    let draft = Draft {
        name: wf.meta.name.clone(),
        description: wf.meta.description.clone(),
        nodes: wf.body.nodes.as_array().cloned().unwrap_or_default(),
        connections: wf.body.connections.as_object().cloned().unwrap_or_default(),
        added: Vec::new(),
    };
    let mut next = ops::apply_all(&draft, &a.operations, &accessible).map_err(|(i, e)| {
        McpError::Invalid(format!("operation {i} ({}) failed: {e}; no operation was applied and nothing was saved", op_name(&a.operations[i])))
    })?;
    fill_ids(&mut next.nodes);
    let (assigned, skipped) = auto_assign(ctx, &mut next.nodes, Some(&next.added)).await?;
    let body = WorkflowBody {
        nodes: Value::Array(next.nodes),
        connections: Value::Object(next.connections),
        settings: wf.body.settings.clone(),
        pin_data: wf.body.pin_data.clone(),
        meta: builder_meta(&wf.body.meta),
    };
    // Structural problems (dangling connections, duplicate names) block the
    // save; catalog findings are reported as warnings.
    body.validate().map_err(|e| McpError::Invalid(format!("the result would be an invalid workflow ({e}); nothing was saved")))?;
    let report = validate::validate(&json!({"nodes": body.nodes, "connections": body.connections}), false);
    let mut warnings: Vec<ValidationWarning> = report
        .errors
        .into_iter()
        .map(|m| ValidationWarning { code: "VALIDATION_ERROR".into(), message: m, node_name: None })
        .collect();
    warnings.extend(report.warnings.into_iter().map(|w| ValidationWarning { code: w.code, message: w.message, node_name: w.node_name }));
    let saved = ctx
        .data()
        .workflows
        .update(
            &meta.id,
            &meta.version_id,
            WorkflowUpdate {
                name: (next.name != wf.meta.name).then_some(next.name),
                description: (next.description != wf.meta.description).then_some(next.description),
                body: Some(body),
                autosaved: false,
            },
            &ctx.user,
        )
        .await?;
    Ok(UpdateWorkflowOut {
        url: ctx.workflow_url(&saved.meta.id),
        node_count: saved.body.node_count() as u64,
        workflow_id: saved.meta.id,
        name: saved.meta.name,
        applied_operations: a.operations.len() as u64,
        auto_assigned_credentials: assigned
            .into_iter()
            .map(|x| AssignedCredentialTyped { node_name: x.node, credential_name: x.credential_name, credential_type: x.key })
            .collect(),
        validation_warnings: warnings,
        note: skipped_note(&skipped),
    })
}

fn op_name(op: &Operation) -> &'static str {
    match op {
        Operation::UpdateNodeParameters { .. } => "updateNodeParameters",
        Operation::SetNodeParameter { .. } => "setNodeParameter",
        Operation::AddNode { .. } => "addNode",
        Operation::RemoveNode { .. } => "removeNode",
        Operation::RenameNode { .. } => "renameNode",
        Operation::AddConnection { .. } => "addConnection",
        Operation::RemoveConnection { .. } => "removeConnection",
        Operation::SetNodeCredential { .. } => "setNodeCredential",
        Operation::SetNodePosition { .. } => "setNodePosition",
        Operation::SetNodeDisabled { .. } => "setNodeDisabled",
        Operation::SetWorkflowMetadata { .. } => "setWorkflowMetadata",
    }
}

