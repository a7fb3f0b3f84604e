//! Services the host (the AWS side, or a test) provides to the engine. The
//! engine never reaches a store, a file system or DNS except through these.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::data::ExecutionState;
use crate::run::ProgressHook;

/// Decrypted credential data for a node's credential reference.
pub trait CredentialsProvider: Send + Sync {
    /// `cred_type` is e.g. `httpHeaderAuth`; `reference` is the node's `{id, name}`.
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String>;

    /// Stores refreshed OAuth2 token data of a connected credential (the
    /// `oauthTokenData` later `get`s return); `replaced` is the access token
    /// they replace, so a host can keep the fresher of two racing refreshes.
    fn save_oauth_tokens(&self, _cred_type: &str, _reference: &Value, _replaced: &str, _tokens: &Value) -> Result<(), String> {
        Err("this host does not store refreshed OAuth2 tokens".into())
    }
}

/// Workflows that Execute Workflow can call by id.
pub trait WorkflowProvider: Send + Sync {
    fn get_workflow(&self, id: &str) -> Result<Value, String>;
}

/// Execution records for sub-workflows: Execute Workflow still runs the
/// child on its own thread (inheriting settings, cancel and nesting limits),
/// and the host gives that run an execution of its own, linked to the parent.
pub trait SubExecutionRecorder: Send + Sync {
    /// Creates the child's record before it runs. `workflow` is the child's
    /// workflow JSON (its `id`, when it has one, names the workflow).
    fn start(&self, workflow: &Value, parent_execution_id: &str) -> Result<SubExecution, String>;
    /// Records how the child ended: its final state, or why it could not run.
    fn finish(&self, execution_id: &str, outcome: Result<&ExecutionState, &str>) -> Result<(), String>;
}

/// A child execution the host recorded.
#[derive(Debug, Clone)]
pub struct SubExecution {
    pub execution_id: String,
    pub workflow_id: String,
    /// Progress of the child's run, if the host persists it.
    pub progress: Option<ProgressHook>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RowCondition {
    pub column: String,
    /// `eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `like`, `ilike`, `isEmpty`, `isNotEmpty`.
    pub condition: String,
    #[serde(default)]
    pub value: Value,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RowFilter {
    /// true = all conditions must hold, false = any.
    pub match_all: bool,
    pub conditions: Vec<RowCondition>,
}

/// The Data table node's table list: a case-insensitive name filter, a
/// sort (`createdAt`, `name`, `updatedAt`; descending or not) and a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableQuery {
    pub name_contains: Option<String>,
    pub sort: Option<(String, bool)>,
    pub skip: usize,
    pub take: Option<usize>,
}

/// n8n data tables (rows of JSON objects). `table` names a table of the
/// workflow's project by id or by name. The `*_dry_run` methods are n8n's
/// `dryRun` option: the rows a write would touch as `dryRunState`
/// before/after pairs, nothing written. The table methods are the node's
/// `table` resource; tables are `{id, name, projectId, columns, createdAt,
/// updatedAt}`. Hosts without them refuse clearly.
pub trait DataTableProvider: Send + Sync {
    fn insert(&self, table: &str, rows: Vec<Value>) -> Result<Vec<Value>, String>;
    fn get(&self, table: &str, filter: &RowFilter, limit: Option<usize>) -> Result<Vec<Value>, String>;
    fn update(&self, table: &str, filter: &RowFilter, set: &Value) -> Result<Vec<Value>, String>;
    fn delete(&self, table: &str, filter: &RowFilter) -> Result<Vec<Value>, String>;
    fn upsert(&self, table: &str, filter: &RowFilter, row: &Value) -> Result<Vec<Value>, String>;

    /// `get` in the order of a column (system columns included),
    /// descending or not.
    fn get_sorted(&self, table: &str, filter: &RowFilter, limit: Option<usize>, sort: Option<(&str, bool)>) -> Result<Vec<Value>, String> {
        match sort {
            None => self.get(table, filter, limit),
            Some(_) => Err("sorting rows is not available on this host".into()),
        }
    }
    fn update_dry_run(&self, _table: &str, _filter: &RowFilter, _set: &Value) -> Result<Vec<Value>, String> {
        Err("dry runs are not available on this host".into())
    }
    fn upsert_dry_run(&self, _table: &str, _filter: &RowFilter, _row: &Value) -> Result<Vec<Value>, String> {
        Err("dry runs are not available on this host".into())
    }
    fn delete_dry_run(&self, _table: &str, _filter: &RowFilter) -> Result<Vec<Value>, String> {
        Err("dry runs are not available on this host".into())
    }
    /// The matching tables of the page and how many match in all.
    fn list_tables(&self, _query: &TableQuery) -> Result<(Vec<Value>, usize), String> {
        Err("listing data tables is not available on this host".into())
    }
    /// The table named exactly `name`, if any.
    fn table_named(&self, _name: &str) -> Result<Option<Value>, String> {
        Err("finding data tables is not available on this host".into())
    }
    /// Creates a table; `columns` are `(name, type)` with n8n's types
    /// (`string`, `number`, `boolean`, `date`).
    fn create_table(&self, _name: &str, _columns: &[(String, String)]) -> Result<Value, String> {
        Err("creating data tables is not available on this host".into())
    }
    fn rename_table(&self, _table: &str, _new_name: &str) -> Result<(), String> {
        Err("renaming data tables is not available on this host".into())
    }
    fn delete_table(&self, _table: &str) -> Result<(), String> {
        Err("deleting data tables is not available on this host".into())
    }
    /// Deletes every row; returns how many there were.
    fn clear_table(&self, _table: &str) -> Result<usize, String> {
        Err("clearing data tables is not available on this host".into())
    }
}

/// Files for the file nodes (Read/Write Files from Disk, Read/Write Binary
/// File(s)); in executions a per-execution scratch folder
/// (`nodes::disk::ScratchDir`).
pub trait FileProvider: Send + Sync {
    /// Path or glob → the files' paths and bytes.
    fn read(&self, selector: &str) -> Result<Vec<(String, Vec<u8>)>, String>;
    /// The files a glob matches, as fast-glob finds them: `*`, `?`, `**`,
    /// `{a,b}`, and `[…]` classes unless `literal_brackets`; a path that
    /// matches nothing gives no files, not an error.
    fn glob(&self, pattern: &str, _literal_brackets: bool) -> Result<Vec<(String, Vec<u8>)>, String> {
        self.read(pattern)
    }
    /// Writes (or appends to) a file; returns the path as shown to the workflow.
    fn write(&self, path: &str, _bytes: &[u8], _append: bool) -> Result<String, String> {
        Err(format!("writing files is not available here ({path})"))
    }
}

/// n8n's processed-data store, behind Remove Duplicates' "items processed in
/// previous executions": one record per workflow and context (`""` for the
/// workflow, `n:<node id>` for one node), written with optimistic concurrency
/// so two executions never lose each other's values.
pub trait ProcessedDataStore: Send + Sync {
    /// The record and its version, `None` when there is none.
    fn load(&self, workflow_id: &str, context: &str) -> Result<Option<(Value, u64)>, String>;
    /// Writes `value` as version `expected + 1` (1 when `expected` is `None`,
    /// i.e. the record must still be absent). `Ok(false)` when another writer
    /// got there first: the caller reloads and retries.
    fn save(&self, workflow_id: &str, context: &str, value: &Value, expected: Option<u64>) -> Result<bool, String>;
    fn delete(&self, workflow_id: &str, context: &str) -> Result<(), String>;
}

/// Conversation history of AI memory sub-nodes (Window Buffer Memory),
/// one list of messages per workflow and session key. Without one the
/// engine keeps history in the process, as n8n's in-memory store.
pub trait ChatMemoryStore: Send + Sync {
    /// The stored messages, oldest first (empty when none).
    fn load(&self, workflow_id: &str, session: &str) -> Result<Vec<Value>, String>;
    /// Replaces the stored messages.
    fn save(&self, workflow_id: &str, session: &str, messages: &[Value]) -> Result<(), String>;
}

/// Chat models a host supplies itself: node types whose client the engine
/// does not hold (Bedrock, behind the AWS SDK), or a stand-in for its own
/// (a scripted model in benchmarks). The engine drives what it gets like its
/// own providers (streaming, timeout, cancel) and records every call.
pub trait ChatModelProvider: Send + Sync {
    /// A provider for this model node (its parameters resolved, its
    /// credential decrypted); `None`: the engine's own client.
    fn provider(&self, setup: &crate::nodes::ai::model::ModelSetup) -> Option<Result<Box<dyn models::ModelProvider>, String>>;
}

/// Name resolution for HTTP requests, injectable so tests never use real DNS
/// (the SSRF guard's own trait: the guard checks what it answers).
pub use outbound::{Resolver, SystemResolver};

/// All host services; any left `None` makes the nodes that need it fail clearly.
#[derive(Clone)]
pub struct Host {
    pub credentials: Option<Arc<dyn CredentialsProvider>>,
    pub workflows: Option<Arc<dyn WorkflowProvider>>,
    /// Without it, sub-workflows run inline and leave no record of their own.
    pub sub_executions: Option<Arc<dyn SubExecutionRecorder>>,
    pub data_tables: Option<Arc<dyn DataTableProvider>>,
    pub files: Option<Arc<dyn FileProvider>>,
    pub resolver: Arc<dyn Resolver>,
    /// Remove Duplicates' history across executions.
    pub processed_data: Option<Arc<dyn ProcessedDataStore>>,
    /// AI memory sub-nodes' conversations.
    pub chat_memory: Option<Arc<dyn ChatMemoryStore>>,
    /// Chat models the host supplies (else the engine's own clients).
    pub chat_models: Option<Arc<dyn ChatModelProvider>>,
}

impl Default for Host {
    fn default() -> Self {
        Host { credentials: None, workflows: None, sub_executions: None, data_tables: None, files: None, resolver: Arc::new(SystemResolver), processed_data: None, chat_memory: None, chat_models: None }
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("credentials", &self.credentials.is_some())
            .field("workflows", &self.workflows.is_some())
            .field("sub_executions", &self.sub_executions.is_some())
            .field("data_tables", &self.data_tables.is_some())
            .field("files", &self.files.is_some())
            .field("processed_data", &self.processed_data.is_some())
            .field("chat_memory", &self.chat_memory.is_some())
            .field("chat_models", &self.chat_models.is_some())
            .finish()
    }
}
