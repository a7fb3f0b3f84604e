//! Evaluation configs (Instance table): a workflow's start and end node, a
//! data table dataset and judged metrics, one item each:
//! `pk=evalcfg#<workflowId>`, `sk=cfg#<configId>`. Validation against the
//! workflow and the table is `instance::eval_configs`' job.

use super::db::{self, key, Table};
use crate::error::StoreError;
use serde::{Deserialize, Serialize};

/// One judged metric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvalMetric {
    pub name: String,
    pub preset: String,
    pub credential_id: String,
    pub model: String,
    /// An expression for the workflow's answer (read at the end node).
    pub actual_answer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// What a create or update gives (all of it: an update replaces the config).
/// (Flattened into the stored item: unknown fields are not refused here.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalConfigInput {
    pub name: String,
    pub start_node_name: String,
    pub end_node_name: String,
    pub data_table_id: String,
    pub metrics: Vec<EvalMetric>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalConfig {
    pub id: String,
    pub workflow_id: String,
    #[serde(flatten)]
    pub input: EvalConfigInput,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Clone, Debug)]
pub struct EvalConfigs {
    table: Table,
}

fn pk(workflow_id: &str) -> String {
    format!("evalcfg#{workflow_id}")
}

impl EvalConfigs {
    pub fn new(table: Table) -> Self {
        EvalConfigs { table }
    }

    /// A workflow's configs, oldest first.
    pub async fn list(&self, workflow_id: &str) -> Result<Vec<EvalConfig>, StoreError> {
        let mut out: Vec<EvalConfig> = self.table.query_prefix(&pk(workflow_id), "cfg#", false).await?.into_iter().map(db::from_item).collect::<Result<_, _>>()?;
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.id.cmp(&b.id)));
        Ok(out)
    }

    pub async fn get(&self, workflow_id: &str, id: &str) -> Result<Option<EvalConfig>, StoreError> {
        self.table.get(&pk(workflow_id), &format!("cfg#{id}")).await
    }

    /// Writes a config (new or replacing one of the same id).
    pub async fn put(&self, config: &EvalConfig) -> Result<(), StoreError> {
        let mut item = db::to_item(config)?;
        item.extend(key(pk(&config.workflow_id), format!("cfg#{}", config.id)));
        self.table.put(item).await
    }

    pub async fn delete(&self, workflow_id: &str, id: &str) -> Result<(), StoreError> {
        self.table.count();
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(workflow_id), format!("cfg#{id}"))))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}
