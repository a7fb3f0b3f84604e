//! Workflow management: search, details, execute, test, pin data, publish,
//! unpublish, archive, projects and folders.

use super::{limit, Ctx};
use crate::error::McpError;
use instance::executions::trigger::{self, TriggerKind};
use instance::executions::{RunPins, RunRequest, RunVersion, TriggerChoice, TriggerInput, WebhookInput};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use store::data::executions::{DataSelection, ExecutionSearch, ExecutionStatus};
use store::data::users_projects::{ProjectSearch, ProjectType};
use instance::workflows::{strip_credentials, ListQuery, ListScope};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchWorkflowsArgs {
    /// Filter by name or description
    pub query: Option<String>,
    /// Filter by project ID
    pub project_id: Option<String>,
    /// Limit the number of results (max 200)
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowPreview {
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub active: Option<bool>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub trigger_count: Option<u32>,
    pub scopes: Vec<String>,
    pub can_execute: bool,
    #[serde(rename = "availableInMCP")]
    pub available_in_mcp: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct SearchWorkflowsOut {
    pub data: Vec<WorkflowPreview>,
    /// Total number of workflows that match the filters
    pub count: u64,
}

pub async fn search_workflows(ctx: &Ctx<'_>, a: SearchWorkflowsArgs) -> Result<SearchWorkflowsOut, McpError> {
    let q = ListQuery {
        query: a.query,
        match_description: true,
        project_id: a.project_id,
        scope: ListScope::Instance,
        limit: limit(a.limit, 200, 50)?,
        recursive: true,
        ..ListQuery::default()
    };
    let list = ctx.instance().list_workflows(&ctx.caller(), q).await?;
    Ok(SearchWorkflowsOut {
        count: list.total as u64,
        data: list
            .workflows
            .into_iter()
            .map(|r| WorkflowPreview {
                active: Some(r.active),
                id: r.meta.id,
                name: Some(r.meta.name),
                description: r.meta.description,
                created_at: Some(r.meta.created_at),
                updated_at: Some(r.meta.updated_at),
                trigger_count: Some(r.meta.trigger_count as u32),
                scopes: r.scopes,
                can_execute: r.can_execute,
                available_in_mcp: r.meta.available_in_mcp,
            })
            .collect(),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowIdArgs {
    /// The ID of the workflow
    pub workflow_id: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagOut {
    pub id: String,
    pub name: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowDetails {
    pub id: String,
    pub name: Option<String>,
    pub active: bool,
    pub is_archived: bool,
    pub version_id: String,
    pub active_version_id: Option<String>,
    pub trigger_count: u32,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    pub settings: Option<Value>,
    pub connections: Value,
    /// Nodes with their credentials stripped
    pub nodes: Vec<Value>,
    /// The published graph (nodes + connections), if any
    pub active_version: Option<Value>,
    pub tags: Vec<TagOut>,
    pub meta: Option<Value>,
    pub parent_folder_id: Option<String>,
    pub description: String,
    pub scopes: Vec<String>,
    pub can_execute: bool,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowDetailsOut {
    pub workflow: WorkflowDetails,
    /// How to trigger the workflow
    pub trigger_info: String,
}

/// The workflow's nodes as the engine reads them (unreadable ones skipped).
fn nodes_of(nodes: &Value) -> Vec<engine::Node> {
    nodes.as_array().into_iter().flatten().filter_map(|n| serde_json::from_value(n.clone()).ok()).collect()
}

fn trigger_info(nodes: &[engine::Node], active: bool) -> String {
    let Some((node, kind)) = trigger::first_supported(nodes) else {
        return format!("This workflow has no trigger that MCP can use (supported: {}); it cannot be executed with execute_workflow.", trigger::SUPPORTED_TRIGGERS);
    };
    let name = &node.name;
    let p = &node.parameters;
    let how = match kind {
        TriggerKind::Webhook => {
            let method = p.get("httpMethod").and_then(Value::as_str).unwrap_or("GET");
            let path = p.get("path").and_then(Value::as_str).unwrap_or("");
            format!(
                "Webhook node {name:?} ({method} /webhook/{path}). Execute it with execute_workflow and inputs {{\"type\": \"webhook\", \"webhookData\": {{\"method\": \"{method}\", \"body\": {{...}}, \"query\": {{...}}, \"headers\": {{...}}}}}}; the trigger's output item is {{headers, params, query, body}}."
            )
        }
        TriggerKind::Chat => format!("Chat Trigger node {name:?}. Execute it with inputs {{\"type\": \"chat\", \"chatInput\": \"<the user's message>\"}}."),
        TriggerKind::Form => {
            let fields: Vec<String> = p
                .pointer("/formFields/values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|f| f.get("fieldLabel").and_then(Value::as_str).map(str::to_owned)).collect())
                .unwrap_or_default();
            format!(
                "Form Trigger node {name:?}. Execute it with inputs {{\"type\": \"form\", \"formData\": {{...}}}}{}.",
                if fields.is_empty() { String::new() } else { format!(" with the fields {}", fields.join(", ")) }
            )
        }
        TriggerKind::Manual => format!("Manual Trigger node {name:?}. Execute it with execute_workflow without inputs."),
        TriggerKind::Schedule => format!("Schedule Trigger node {name:?}: it runs on its schedule when published; execute_workflow runs it once now, without inputs."),
    };
    let state = if active {
        "The workflow is published: executionMode \"production\" (the default) runs the published version."
    } else {
        "The workflow is not published: use executionMode \"manual\" to run the current draft, or publish it first."
    };
    format!("{how} {state}")
}

pub async fn get_workflow_details(ctx: &Ctx<'_>, a: WorkflowIdArgs) -> Result<WorkflowDetailsOut, McpError> {
    let (_, role) = ctx.workflow(&a.workflow_id, "workflow:read", true).await?;
    let wf = ctx.instance().workflow(&ctx.caller(), &a.workflow_id).await?;
    let (scopes, can_execute) = store::data::workflows::scopes_of(role);
    let active_version = match &wf.meta.active_version_id {
        Some(v) => ctx.data().workflows.get_version(&wf.meta.id, v).await?.map(|v| {
            json!({"versionId": v.info.version_id, "nodes": strip_credentials(&v.body.nodes), "connections": v.body.connections})
        }),
        None => None,
    };
    let trigger_info = trigger_info(&nodes_of(&wf.body.nodes), wf.meta.active());
    Ok(WorkflowDetailsOut {
        workflow: WorkflowDetails {
            active: wf.meta.active(),
            is_archived: wf.meta.is_archived,
            version_id: wf.meta.version_id.clone(),
            active_version_id: wf.meta.active_version_id.clone(),
            trigger_count: wf.meta.trigger_count as u32,
            created_at: Some(wf.meta.created_at.clone()),
            updated_at: Some(wf.meta.updated_at.clone()),
            settings: Some(wf.body.settings.clone()).filter(|s| !s.is_null()),
            connections: wf.body.connections.clone(),
            nodes: strip_credentials(&wf.body.nodes),
            active_version,
            tags: wf.tags.iter().map(|t| TagOut { id: t.id.clone(), name: t.name.clone() }).collect(),
            meta: Some(wf.body.meta.clone()).filter(|m| !m.is_null()),
            parent_folder_id: wf.meta.parent_folder_id.clone(),
            description: wf.meta.description.clone().unwrap_or_default(),
            scopes,
            can_execute,
            name: Some(wf.meta.name),
            id: wf.meta.id,
        },
        trigger_info,
    })
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionModeArg {
    Manual,
    Production,
}

#[derive(Deserialize, JsonSchema, Clone, Copy, PartialEq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    Chat,
    Form,
    Webhook,
}

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct WebhookData {
    pub method: Option<String>,
    pub query: Option<Map<String, Value>>,
    pub body: Option<Value>,
    pub headers: Option<Map<String, Value>>,
}

/// Trigger inputs, discriminated by `type`: `chat` takes `chatInput`,
/// `form` takes `formData`, `webhook` takes `webhookData`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Inputs {
    #[serde(rename = "type")]
    pub kind: InputType,
    /// Input for chat-based workflows (type `chat`)
    pub chat_input: Option<String>,
    /// Input data for form-based workflows (type `form`)
    pub form_data: Option<Map<String, Value>>,
    /// Input data for webhook-based workflows (type `webhook`)
    pub webhook_data: Option<WebhookData>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecuteWorkflowArgs {
    /// The ID of the workflow to execute
    pub workflow_id: String,
    /// "manual" tests the current version, "production" (default) executes the published (active) version
    pub execution_mode: Option<ExecutionModeArg>,
    /// Inputs to provide to the workflow
    pub inputs: Option<Inputs>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionResultOut {
    pub execution_id: Option<String>,
    /// success, error, running, waiting, canceled, crashed, new or unknown
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// MCP's typed inputs → the domain's trigger input.
fn trigger_input(inputs: Option<Inputs>) -> Result<TriggerInput, McpError> {
    let Some(i) = inputs else { return Ok(TriggerInput::None) };
    let missing = |field: &str| McpError::InvalidArguments(format!("inputs of type {:?} need {field}", i.kind));
    Ok(match i.kind {
        InputType::Chat => TriggerInput::Chat(i.chat_input.clone().ok_or_else(|| missing("chatInput"))?),
        InputType::Form => TriggerInput::Form(i.form_data.clone().ok_or_else(|| missing("formData"))?),
        InputType::Webhook => {
            let w = i.webhook_data.unwrap_or_default();
            TriggerInput::Webhook(WebhookInput { method: w.method, query: w.query.unwrap_or_default(), body: w.body, headers: w.headers.unwrap_or_default() })
        }
    })
}

pub async fn execute_workflow(ctx: &Ctx<'_>, a: ExecuteWorkflowArgs) -> Result<ExecutionResultOut, McpError> {
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:execute", true).await?;
    ctx.server.limiter.check(ctx.user.as_str(), "execute_workflow").await?;
    let req = RunRequest {
        workflow_id: meta.id,
        input: trigger_input(a.inputs)?,
        trigger_choice: TriggerChoice::FirstSupported,
        version: match a.execution_mode.unwrap_or(ExecutionModeArg::Production) {
            ExecutionModeArg::Production => RunVersion::Published,
            ExecutionModeArg::Manual => RunVersion::Draft,
        },
        // A full run: no node mocked or skipped.
        pins: RunPins::Nothing,
        ..RunRequest::default()
    };
    Ok(outcome_out(ctx.instance().run_and_wait(&ctx.caller(), &req, ctx.server.execution_wait()).await?))
}

fn outcome_out(o: executions::ExecutionOutcome) -> ExecutionResultOut {
    ExecutionResultOut { execution_id: Some(o.execution_id.0), status: o.status.as_str().to_owned(), error: o.error }
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestWorkflowArgs {
    /// The ID of the workflow to test
    pub workflow_id: String,
    /// Pin data for the workflow's nodes: node name → items (`{"json": {...}}` or plain objects)
    pub pin_data: HashMap<String, Vec<Value>>,
    /// Trigger node to start from; defaults to the first trigger node
    pub trigger_node_name: Option<String>,
}

pub async fn test_workflow(ctx: &Ctx<'_>, a: TestWorkflowArgs) -> Result<ExecutionResultOut, McpError> {
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:execute", true).await?;
    ctx.server.limiter.check(ctx.user.as_str(), "test_workflow").await?;
    let req = RunRequest {
        workflow_id: meta.id,
        trigger_node_name: a.trigger_node_name,
        trigger_choice: TriggerChoice::First,
        pins: RunPins::Test(a.pin_data.into_iter().collect()),
        ..RunRequest::default()
    };
    Ok(outcome_out(ctx.instance().run_and_wait(&ctx.caller(), &req, ctx.server.execution_wait()).await?))
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Coverage {
    pub with_schema_from_execution: u32,
    pub with_schema_from_definition: u32,
    pub without_schema: u32,
    pub skipped: u32,
    pub total: u32,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreparePinDataOut {
    /// Node name → JSON Schema of one output item's `json`
    pub node_schemas_to_generate: BTreeMap<String, Value>,
    /// Nodes that need pin data but have no schema: use `[{"json": {}}]`
    pub nodes_without_schema: Vec<String>,
    /// Nodes that execute normally during the test
    pub nodes_skipped: Vec<String>,
    pub coverage: Coverage,
}

/// A JSON Schema describing a sample value.
pub fn infer_schema(v: &Value) -> Value {
    match v {
        Value::Null => json!({"type": "null"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::String(_) => json!({"type": "string"}),
        Value::Array(a) => match a.first() {
            Some(x) => json!({"type": "array", "items": infer_schema(x)}),
            None => json!({"type": "array"}),
        },
        Value::Object(m) => {
            let props: Map<String, Value> = m.iter().map(|(k, x)| (k.clone(), infer_schema(x))).collect();
            json!({"type": "object", "properties": props})
        }
    }
}

/// Output shapes known from the node definition.
fn definition_schema(node: &engine::Node) -> Option<Value> {
    match TriggerKind::of(&node.node_type)? {
        TriggerKind::Webhook => Some(json!({"type": "object", "properties": {
            "headers": {"type": "object"}, "params": {"type": "object"}, "query": {"type": "object"}, "body": {"type": "object"}
        }})),
        TriggerKind::Chat => Some(json!({"type": "object", "properties": {
            "sessionId": {"type": "string"}, "action": {"type": "string"}, "chatInput": {"type": "string"}
        }})),
        TriggerKind::Schedule => Some(json!({"type": "object", "properties": {"timestamp": {"type": "string"}}})),
        TriggerKind::Form | TriggerKind::Manual => None,
    }
}

pub async fn prepare_test_pin_data(ctx: &Ctx<'_>, a: WorkflowIdArgs) -> Result<PreparePinDataOut, McpError> {
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:read", true).await?;
    let wf = ctx.data().workflows.get(&meta.id).await?.ok_or_else(|| McpError::NotFound(format!("workflow {}", meta.id)))?;
    // The last successful execution's output, if any, is the best schema source.
    let last = ctx
        .data()
        .executions
        .search(&ExecutionSearch {
            workflow_ids: vec![meta.id.clone()],
            statuses: vec![ExecutionStatus::Success],
            limit: Some(1),
            ..ExecutionSearch::default()
        })
        .await?;
    let run_data = match last.data.first() {
        Some(e) => ctx.data().executions.get_data(&e.id, &DataSelection { node_names: None, max_items: Some(1) }).await?,
        None => None,
    };
    let mut out = PreparePinDataOut {
        node_schemas_to_generate: BTreeMap::new(),
        nodes_without_schema: Vec::new(),
        nodes_skipped: Vec::new(),
        coverage: Coverage { with_schema_from_execution: 0, with_schema_from_definition: 0, without_schema: 0, skipped: 0, total: 0 },
    };
    for n in nodes_of(&wf.body.nodes).iter().filter(|n| !n.disabled) {
        if n.node_type == "n8n-nodes-base.stickyNote" {
            continue;
        }
        out.coverage.total += 1;
        let name = n.name.clone();
        if !trigger::needs_pin(n) {
            out.nodes_skipped.push(name);
            out.coverage.skipped += 1;
            continue;
        }
        let sample = run_data
            .as_ref()
            .and_then(|d| d.pointer(&format!("/resultData/runData/{}/0/data/main/0/0/json", name.replace('~', "~0").replace('/', "~1"))));
        if let Some(s) = sample {
            out.node_schemas_to_generate.insert(name, infer_schema(s));
            out.coverage.with_schema_from_execution += 1;
        } else if let Some(s) = definition_schema(n) {
            out.node_schemas_to_generate.insert(name, s);
            out.coverage.with_schema_from_definition += 1;
        } else {
            out.nodes_without_schema.push(name);
            out.coverage.without_schema += 1;
        }
    }
    Ok(out)
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublishArgs {
    /// The ID of the workflow to publish
    pub workflow_id: String,
    /// Version ID to publish; the current draft when omitted
    pub version_id: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishOut {
    pub success: bool,
    pub workflow_id: String,
    pub active_version_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub async fn publish_workflow(ctx: &Ctx<'_>, a: PublishArgs) -> Result<PublishOut, McpError> {
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:publish", true).await?;
    let active = ctx.instance().publish_workflow(&ctx.caller(), &meta.id, a.version_id.as_deref()).await?;
    Ok(PublishOut { success: true, workflow_id: meta.id, active_version_id: Some(active), error: None })
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnpublishOut {
    pub success: bool,
    pub workflow_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub async fn unpublish_workflow(ctx: &Ctx<'_>, a: WorkflowIdArgs) -> Result<UnpublishOut, McpError> {
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:publish", true).await?;
    ctx.instance().unpublish_workflow(&ctx.caller(), &meta.id).await?;
    Ok(UnpublishOut { success: true, workflow_id: meta.id, error: None })
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchiveOut {
    pub archived: bool,
    pub workflow_id: String,
    pub name: String,
}

pub async fn archive_workflow(ctx: &Ctx<'_>, a: WorkflowIdArgs) -> Result<ArchiveOut, McpError> {
    let (meta, _) = ctx.workflow(&a.workflow_id, "workflow:delete", true).await?;
    // Idempotent: an already archived workflow is reported archived.
    ctx.instance().archive_workflow(&ctx.caller(), &meta.id).await?;
    Ok(ArchiveOut { archived: true, workflow_id: meta.id, name: meta.name })
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub enum ProjectTypeArg {
    Personal,
    Team,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchProjectsArgs {
    /// Filter projects by name (case-insensitive partial match)
    pub query: Option<String>,
    /// Filter by project type
    #[serde(rename = "type")]
    pub kind: Option<ProjectTypeArg>,
    /// Limit the number of results (max 100)
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
pub struct ProjectOut {
    pub id: String,
    pub name: String,
    /// personal or team
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Serialize, JsonSchema)]
pub struct SearchProjectsOut {
    pub data: Vec<ProjectOut>,
    pub count: u64,
}

pub async fn search_projects(ctx: &Ctx<'_>, a: SearchProjectsArgs) -> Result<SearchProjectsOut, McpError> {
    let page = ctx
        .instance()
        .search_projects(
            &ctx.caller(),
            &ProjectSearch {
                query: a.query,
                kind: a.kind.map(|k| match k {
                    ProjectTypeArg::Personal => ProjectType::Personal,
                    ProjectTypeArg::Team => ProjectType::Team,
                }),
                limit: Some(limit(a.limit, 100, 100)?),
            },
        )
        .await?;
    Ok(SearchProjectsOut {
        count: page.count as u64,
        data: page
            .data
            .into_iter()
            .map(|p| ProjectOut { id: p.project.id, name: p.project.name, kind: p.project.kind.as_str().to_owned() })
            .collect(),
    })
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchFoldersArgs {
    /// The ID of the project to search folders in
    pub project_id: String,
    /// Filter folders by name (case-insensitive partial match)
    pub query: Option<String>,
    /// Limit the number of results (max 100)
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FolderOut {
    pub id: String,
    pub name: String,
    pub parent_folder_id: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct SearchFoldersOut {
    pub data: Vec<FolderOut>,
    pub count: u64,
}

pub async fn search_folders(ctx: &Ctx<'_>, a: SearchFoldersArgs) -> Result<SearchFoldersOut, McpError> {
    let page = ctx.instance().search_folders(&ctx.caller(), &a.project_id, a.query.as_deref(), limit(a.limit, 100, 100)?).await?;
    Ok(SearchFoldersOut {
        count: page.count as u64,
        data: page.data.into_iter().map(|f| FolderOut { id: f.id, name: f.name, parent_folder_id: f.parent_folder_id }).collect(),
    })
}

