//! The instance's data as repositories over DynamoDB: users and projects,
//! folders, tags, workflows and their versions, executions and run data,
//! credentials (envelope-encrypted secrets), data tables and their rows,
//! the values Remove Duplicates saw in earlier executions, the agent's own
//! thread-level records and the per-thread workspace.
//!
//! Each aggregate is one module with one repository type; they share the
//! generic `pk`/`sk` (+ `gsi1`) tables of [`crate::deployment`]. Build them
//! all once per process with [`InstanceData::new`].

pub mod agent_records;
pub mod attachments;
pub mod chat_memory;
pub mod credentials;
pub mod data_tables;
pub mod db;
pub mod eval_configs;
pub mod executions;
pub mod folders;
pub mod keys;
pub mod mcp_connections;
pub mod setup_skips;
pub mod stored_json;
pub mod processed_data;
pub mod tags;
pub mod users_projects;
pub mod webhooks;
pub mod workflows;
pub mod workspace;
pub mod work_items;

pub use agent_records::AgentRecords;
pub use attachments::Attachments;
pub use chat_memory::ChatMemory;
pub use credentials::Credentials;
pub use data_tables::DataTables;
pub use eval_configs::EvalConfigs;
pub use executions::Executions;
pub use folders::Folders;
pub use mcp_connections::McpConnections;
pub use processed_data::ProcessedData;
pub use tags::Tags;
pub use setup_skips::SetupSkips;
pub use users_projects::Projects;
pub use webhooks::Webhooks;
pub use workflows::Workflows;
pub use workspace::Workspace;
pub use work_items::WorkItems;

use crate::aws::AwsClients;
use crate::config::Config;
use crate::deployment::TableId;
use crate::error::StoreError;
use std::sync::Arc;

/// Every data repository, built once at init.
#[derive(Clone, Debug)]
pub struct InstanceData {
    pub projects: Projects,
    pub folders: Folders,
    pub tags: Tags,
    pub workflows: Workflows,
    pub executions: Executions,
    pub credentials: Credentials,
    pub data_tables: DataTables,
    pub agent: AgentRecords,
    pub workspace: Workspace,
    pub setup_skips: SetupSkips,
    pub webhooks: Webhooks,
    pub processed_data: ProcessedData,
    pub work_items: WorkItems,
    pub chat_memory: ChatMemory,
    pub eval_configs: EvalConfigs,
}

impl InstanceData {
    /// Uses the configured tables and key provider (KMS when
    /// `INSTANCE_AI_KMS_KEY_ID` is set, else the local data key).
    pub fn new(clients: &AwsClients, config: &Config) -> Result<Self, StoreError> {
        let keys = keys::key_provider(config)?;
        Self::with_keys(clients, config, keys)
    }

    pub fn with_keys(
        clients: &AwsClients,
        config: &Config,
        keys: Arc<dyn keys::KeyProvider>,
    ) -> Result<Self, StoreError> {
        let table =
            |id| -> Result<db::Table, StoreError> { Ok(db::Table::new(clients.dynamo.clone(), config.table(id)?)) };
        let instance = table(TableId::Instance)?;
        let projects = Projects::new(instance.clone());
        let folders = Folders::new(instance.clone());
        let tags = Tags::new(instance.clone());
        Ok(InstanceData {
            workflows: Workflows::new(instance.clone(), projects.clone(), folders.clone(), tags.clone()),
            executions: Executions::new(table(TableId::Executions)?),
            credentials: Credentials::new(instance.clone(), projects.clone(), keys),
            processed_data: ProcessedData::new(instance.clone()),
            data_tables: DataTables::new(instance.clone(), table(TableId::DataRows)?),
            agent: AgentRecords::new(table(TableId::Agent)?),
            workspace: Workspace::new(table(TableId::Agent)?),
            setup_skips: SetupSkips::new(table(TableId::Agent)?),
            webhooks: Webhooks::new(instance.clone()),
            work_items: WorkItems::new(table(TableId::Agent)?),
            chat_memory: ChatMemory::new(table(TableId::Executions)?),
            eval_configs: EvalConfigs::new(instance.clone()),
            projects,
            folders,
            tags,
        })
    }
}
