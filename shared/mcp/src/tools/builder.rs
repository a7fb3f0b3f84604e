//! Workflow builder: SDK reference, node search and types, suggestions,
//! validation, creation from code, partial updates.

use super::Ctx;
use instance::catalog::{self, NodeIdRequest};
use crate::error::McpError;
use instance::ops::{self, Accessible, Draft, Operation};
use instance::sdk;
use instance::builder;
use instance::validate::{self, Warning};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use store::data::workflows::{WorkflowBody, MAX_DESCRIPTION, MAX_NAME};

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

pub async fn validate_workflow(ctx: &Ctx<'_>, a: CodeArgs) -> Result<ValidateOut, McpError> {
    Ok(match ctx.instance().compile(a.code).await? {
        Err(e) => ValidateOut { valid: false, node_count: None, warnings: Vec::new(), errors: vec![e], workflow: None },
        Ok((wf, report)) => {
            let valid = !report.has_errors();
            ValidateOut {
                valid,
                node_count: wf.get("nodes").and_then(Value::as_array).map(|a| a.len() as u64),
                warnings: report.warnings(),
                errors: report.errors(),
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

pub async fn create_workflow_from_code(ctx: &Ctx<'_>, a: CreateFromCodeArgs) -> Result<CreateFromCodeOut, McpError> {
    if a.folder_id.is_some() && a.project_id.is_none() {
        return Err(McpError::InvalidArguments("folderId requires projectId".into()));
    }
    if a.description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION) {
        return Err(McpError::InvalidArguments(format!("description must be at most {MAX_DESCRIPTION} characters")));
    }
    let caller = ctx.caller();
    if let Some(p) = &a.project_id {
        ctx.require_project(p, "workflow:create").await?;
    }
    let (wf, report) = ctx.instance().compile(a.code).await?.map_err(McpError::Code)?;
    if report.has_errors() {
        return Err(McpError::Code(format!(
            "the workflow is not valid, nothing was created; fix these and call validate_workflow again:\n- {}",
            report.errors().join("\n- ")
        )));
    }
    if a.name.as_ref().is_some_and(|n| n.chars().count() > MAX_NAME) {
        return Err(McpError::InvalidArguments(format!("name must be at most {MAX_NAME} characters")));
    }
    ctx.server.limiter.check(ctx.user.as_str(), "create_workflow_from_code").await?;
    let saved = ctx
        .instance()
        .create_from_json(&caller, wf, a.name, a.description, a.project_id, a.folder_id, builder::Variant::Mcp)
        .await?;
    let note = saved.skipped_note();
    let created = saved.workflow;
    Ok(CreateFromCodeOut {
        url: ctx.workflow_url(&created.meta.id),
        node_count: created.body.node_count() as u64,
        workflow_id: created.meta.id,
        name: created.meta.name,
        auto_assigned_credentials: saved
            .assigned
            .into_iter()
            .map(|x| AssignedCredential { node_name: x.node_name, credential_name: x.credential_name })
            .collect(),
        note,
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
    let caller = ctx.caller();
    let wf = ctx.instance().workflow(&caller, &meta.id).await?;
    let needs_creds = a.operations.iter().any(|o| matches!(o, Operation::SetNodeCredential { .. }));
    let mut accessible = Accessible::new();
    if needs_creds {
        for c in ctx.instance().visible_credentials(&caller).await? {
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
    let next = ops::apply_all(&draft, &a.operations, &accessible).map_err(|(i, e)| {
        McpError::Invalid(format!("operation {i} ({}) failed: {e}; no operation was applied and nothing was saved", op_name(&a.operations[i])))
    })?;
    let body = WorkflowBody {
        nodes: Value::Array(next.nodes),
        connections: Value::Object(next.connections),
        settings: wf.body.settings.clone(),
        pin_data: wf.body.pin_data.clone(),
        meta: wf.body.meta.clone(),
    };
    // Structural problems (dangling connections, duplicate names) block the
    // save; catalog findings are reported as warnings.
    let report = validate::validate(&json!({"nodes": body.nodes, "connections": body.connections}));
    let warnings: Vec<ValidationWarning> = report
        .findings
        .into_iter()
        .map(|f| ValidationWarning { code: f.code, message: f.message, node_name: f.node_name })
        .collect();
    let saved = ctx
        .instance()
        .save_version(
            &caller,
            &meta.id,
            &meta.version_id,
            body,
            (next.name != wf.meta.name).then_some(next.name),
            (next.description != wf.meta.description).then_some(next.description),
            Some(&next.added),
            builder::Variant::Mcp,
        )
        .await?;
    let note = saved.skipped_note();
    Ok(UpdateWorkflowOut {
        url: ctx.workflow_url(&saved.workflow.meta.id),
        node_count: saved.workflow.body.node_count() as u64,
        workflow_id: saved.workflow.meta.id,
        name: saved.workflow.meta.name,
        applied_operations: a.operations.len() as u64,
        auto_assigned_credentials: saved
            .assigned
            .into_iter()
            .map(|x| AssignedCredentialTyped { node_name: x.node_name, credential_name: x.credential_name, credential_type: x.credential_type })
            .collect(),
        validation_warnings: warnings,
        note,
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

