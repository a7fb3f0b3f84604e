//! The tools: one module per family, one async fn per tool, its argument
//! and output types next to it. The `tools!` table below is the single list
//! that `tools/list` and `tools/call` both come from.

pub mod builder;
pub mod credentials;
pub mod data_tables;
pub mod executions;
pub mod workflows;

use crate::error::McpError;
use crate::schema;
use crate::scopes::{Scope, Scopes};
use crate::server::McpServer;
use protocol::UserId;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::future::Future;
use store::data::users_projects::{ProjectRole, User};
use store::data::workflows::WorkflowMeta;

/// What a tool runs with.
pub struct Ctx<'a> {
    pub server: &'a McpServer,
    pub user: UserId,
    pub base_url: String,
}

impl Ctx<'_> {
    pub fn data(&self) -> &store::data::InstanceData {
        &self.server.instance.data
    }

    pub fn instance(&self) -> &instance::Instance {
        &self.server.instance
    }

    /// MCP acts in the user's personal project unless a tool names another.
    pub fn caller(&self) -> instance::Caller {
        instance::Caller::new(self.user.clone())
    }

    /// The caller's user record (created with a personal project on first use).
    pub async fn user(&self) -> Result<User, McpError> {
        Ok(self.instance().user(&self.caller()).await?)
    }

    /// Requires `scope` in `project_id` (a stranger learns nothing: not found).
    pub async fn require_project(&self, project_id: &str, scope: &str) -> Result<ProjectRole, McpError> {
        Ok(self.instance().require_project(&self.caller(), project_id, scope).await?)
    }

    /// A workflow the user may act on with `scope`. With `mcp_only`, a
    /// workflow not marked "Available in MCP" is refused with how to fix it.
    pub async fn workflow(&self, id: &str, scope: &str, mcp_only: bool) -> Result<(WorkflowMeta, ProjectRole), McpError> {
        let (meta, role) = self.instance().workflow_access(&self.caller(), id, scope).await?;
        if mcp_only && !meta.available_in_mcp {
            return Err(McpError::Forbidden(format!(
                "workflow {id} is not available in MCP; enable \"Available in MCP\" in its settings (workflows created through MCP have it on)"
            )));
        }
        Ok((meta, role))
    }

    pub fn workflow_url(&self, id: &str) -> String {
        format!("{}/workflow/{id}", self.base_url)
    }
}

/// A tool's listing entry.
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub output_schema: Value,
    /// The OAuth scope a token needs to see and call it.
    pub scope: Scope,
}

impl ToolDef {
    /// Only `read` tools leave everything as it was.
    pub fn read_only(&self) -> bool {
        self.scope == Scope::Read
    }
}

fn def<A: JsonSchema, O: JsonSchema>(name: &'static str, description: &'static str, scope: Scope) -> ToolDef {
    ToolDef { name, description, input_schema: schema::input::<A>(), output_schema: schema::output::<O>(), scope }
}

/// Parses the arguments (a clear message naming the field on a mismatch),
/// runs the tool, serialises its output.
async fn run<'a, A, O, F, Fut>(ctx: &'a Ctx<'a>, args: Value, f: F) -> Result<Value, McpError>
where
    A: DeserializeOwned,
    O: Serialize,
    F: FnOnce(&'a Ctx<'a>, A) -> Fut,
    Fut: Future<Output = Result<O, McpError>>,
{
    let args = if args.is_null() { json!({}) } else { args };
    let parsed: A = serde_json::from_value(args).map_err(|e| McpError::InvalidArguments(e.to_string()))?;
    let out = f(ctx, parsed).await?;
    serde_json::to_value(out).map_err(|e| McpError::Internal(format!("serialising output: {e}")))
}

macro_rules! tools {
    ($( $name:literal => $func:path, $args:ty, $out:ty, $scope:ident, $desc:expr; )*) => {
        /// Every tool, in the order `tools/list` shows them.
        pub fn definitions() -> Vec<ToolDef> {
            vec![ $( def::<$args, $out>($name, $desc, Scope::$scope) ),* ]
        }

        /// The scope a tool needs (`None`: no such tool).
        pub fn scope_of(name: &str) -> Option<Scope> {
            match name {
                $( $name => Some(Scope::$scope), )*
                _ => None,
            }
        }

        /// Runs the named tool.
        pub async fn call(ctx: &Ctx<'_>, name: &str, args: Value) -> Result<Value, McpError> {
            match name {
                $( $name => run(ctx, args, $func).await, )*
                other => Err(McpError::UnknownTool(other.to_owned())),
            }
        }
    };
}

use builder as b;
use credentials as c;
use data_tables as d;
use executions as e;
use workflows as w;

tools! {
    "search_workflows" => w::search_workflows, w::SearchWorkflowsArgs, w::SearchWorkflowsOut, Read,
        "Search for workflows with optional filters. Returns a preview of each workflow (all workflows you can access, whatever their \"Available in MCP\" setting).";
    "get_workflow_details" => w::get_workflow_details, w::WorkflowIdArgs, w::WorkflowDetailsOut, Read,
        "Get detailed information about a specific workflow including trigger details. Credentials are stripped from nodes.";
    "execute_workflow" => w::execute_workflow, w::ExecuteWorkflowArgs, w::ExecutionResultOut, Execute,
        "Execute a workflow by ID by mapping data from the user prompt to trigger inputs (chat, form or webhook). Returns the execution ID and status. Runs the full workflow without mocking any node. Supported triggers: Webhook, Chat Trigger, Form Trigger, Manual Trigger, Schedule Trigger. Waits up to 25 seconds (the deployment may set less): a longer run is answered with status `running` and goes on; follow it with get_execution.";
    "test_workflow" => w::test_workflow, w::TestWorkflowArgs, w::ExecutionResultOut, Execute,
        "Test a workflow using pin data to bypass external services. Trigger nodes, nodes with credentials, and HTTP Request nodes are pinned (use simulated data); other nodes execute normally. Waits up to 25 seconds (the deployment may set less) for the execution to finish: a longer run is answered with status `running` and goes on; follow it with get_execution. Call prepare_test_pin_data first.";
    "prepare_test_pin_data" => w::prepare_test_pin_data, w::WorkflowIdArgs, w::PreparePinDataOut, Read,
        "Prepare test pin data for a workflow: JSON Schemas of the expected output for each node that needs pin data (triggers, nodes with credentials, HTTP Request nodes), for generating sample data for test_workflow.";
    "publish_workflow" => w::publish_workflow, w::PublishArgs, w::PublishOut, Write,
        "Publish (activate) a workflow to make it available for production execution. Creates an active version from the current draft, or publishes versionId.";
    "unpublish_workflow" => w::unpublish_workflow, w::WorkflowIdArgs, w::UnpublishOut, Write,
        "Unpublish (deactivate) a workflow to stop it from being available for production execution.";
    "search_projects" => w::search_projects, w::SearchProjectsArgs, w::SearchProjectsOut, Read,
        "Search for projects accessible to the current user (to create workflows and data tables in a specific project).";
    "search_folders" => w::search_folders, w::SearchFoldersArgs, w::SearchFoldersOut, Read,
        "Search for folders within a project (to create workflows in a specific folder).";
    "get_execution" => e::get_execution, e::GetExecutionArgs, e::GetExecutionOut, Read,
        "Get execution details by execution ID and workflow ID. By default returns metadata only; includeData returns run data (resultData.runData[node][run].data.main[output][item].json), optionally for some nodes and truncated per output.";
    "search_executions" => e::search_executions, e::SearchExecutionsArgs, e::SearchExecutionsOut, Read,
        "Search for workflow executions with optional filters (workflow, status, start time). Newest first; pass the last execution ID as lastId for the next page.";
    "list_credentials" => c::list_credentials, c::ListCredentialsArgs, c::ListCredentialsOut, Read,
        "List credentials the current user can access (to find a credential ID before referencing it from a node). Never returns secret data.";
    "get_sdk_reference" => b::get_sdk_reference, b::SdkReferenceArgs, b::SdkReferenceOut, Read,
        "Get the Workflow SDK reference documentation: patterns, expression syntax, functions, rules, import syntax, naming guidelines and design guidance. Call it first before building any workflow.";
    "search_nodes" => b::search_nodes, b::SearchNodesArgs, b::SearchNodesOut, Read,
        "Search for nodes by service name, trigger type, or utility function. Returns node IDs, discriminators (resource/operation/mode) and related nodes for get_node_types.";
    "get_node_types" => b::get_node_types, b::GetNodeTypesArgs, b::GetNodeTypesOut, Read,
        "Get TypeScript type definitions for nodes: exact parameter names and structures. Call before writing workflow code.";
    "get_suggested_nodes" => b::get_suggested_nodes, b::SuggestedNodesArgs, b::SuggestedNodesOut, Read,
        "Get curated node recommendations for workflow technique categories, with pattern hints and configuration guidance.";
    "validate_workflow" => b::validate_workflow, b::CodeArgs, b::ValidateOut, Read,
        "Validate Workflow SDK code (TypeScript/JavaScript with `export default workflow(...)`) or workflow JSON. Returns errors pointing at node and parameter, and warnings. Always validate before creating a workflow.";
    "create_workflow_from_code" => b::create_workflow_from_code, b::CreateFromCodeArgs, b::CreateFromCodeOut, Write,
        "Create a workflow from validated SDK code. Assigns available credentials (HTTP Request nodes are skipped), marks it available in MCP and AI-builder assisted.";
    "update_workflow" => b::update_workflow, b::UpdateWorkflowArgs, b::UpdateWorkflowOut, Write,
        "Update a workflow by applying an ordered batch of 1-100 partial operations ({\"type\": \"updateNodeParameters\" | \"setNodeParameter\" | \"addNode\" | \"removeNode\" | \"renameNode\" | \"addConnection\" | \"removeConnection\" | \"setNodeCredential\" | \"setNodePosition\" | \"setNodeDisabled\" | \"setWorkflowMetadata\", ...}). Atomic: if any operation fails, nothing is saved.";
    "archive_workflow" => w::archive_workflow, w::WorkflowIdArgs, w::ArchiveOut, Write,
        "Archive a workflow by its ID (idempotent).";
    "search_data_tables" => d::search_data_tables, d::SearchDataTablesArgs, d::SearchDataTablesOut, Read,
        "Search for data tables accessible to the current user (to find a data table ID before modifying or adding data).";
    "create_data_table" => d::create_data_table, d::CreateDataTableArgs, d::CreateDataTableOut, Write,
        "Create a new data table with the specified columns (at least one; names ^[a-zA-Z][a-zA-Z0-9_]*$, max 63 chars; types string, number, boolean, date).";
    "add_data_table_column" => d::add_data_table_column, d::AddColumnArgs, d::ColumnOut, Write,
        "Add a new column to an existing data table.";
    "rename_data_table_column" => d::rename_data_table_column, d::RenameColumnArgs, d::ColumnOut, Write,
        "Rename a column in a data table.";
    "delete_data_table_column" => d::delete_data_table_column, d::DeleteColumnArgs, d::SuccessOut, Write,
        "Delete a column from a data table. This permanently removes the column and all its data.";
    "rename_data_table" => d::rename_data_table, d::RenameDataTableArgs, d::SuccessOut, Write,
        "Rename an existing data table (names are unique within a project).";
    "add_data_table_rows" => d::add_data_table_rows, d::AddRowsArgs, d::AddRowsOut, Write,
        "Insert 1-1000 rows into a data table. Each row maps existing column names to string, number, boolean or null values. All or nothing: a bad row fails the call and nothing is written.";
}

/// Every `tools/list` entry (what an API key sees).
pub fn list() -> Vec<Value> {
    list_for(Scopes::all())
}

/// The `tools/list` entries a caller with `scopes` may call.
pub fn list_for(scopes: Scopes) -> Vec<Value> {
    definitions()
        .into_iter()
        .filter(|d| scopes.contains(d.scope))
        .map(|d| {
            json!({
                "name": d.name,
                "description": d.description,
                "inputSchema": d.input_schema,
                "outputSchema": d.output_schema,
                "annotations": {"readOnlyHint": d.read_only(), "openWorldHint": false},
            })
        })
        .collect()
}

/// Checks an optional limit against its maximum.
pub fn limit(value: Option<u32>, max: u32, default: u32) -> Result<usize, McpError> {
    match value {
        None => Ok(default as usize),
        Some(0) => Err(McpError::InvalidArguments("limit must be at least 1".into())),
        Some(n) if n > max => Err(McpError::InvalidArguments(format!("limit must be at most {max}, got {n}"))),
        Some(n) => Ok(n as usize),
    }
}
