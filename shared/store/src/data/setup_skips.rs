//! What a person dismissed on a workflow's setup card, per thread: the
//! agent must not open those cards again unless the person asks
//! (`workflows(action="setup")` with `reopenSkipped`).
//!
//! Item (Agent table): `pk=setupskip#<thread>, sk=wf#<workflow>`, the
//! skipped `(node, credential type)` pairs as JSON, expiring with the
//! thread's other short-lived records.

use super::db::{key, n, s, Table};
use crate::error::StoreError;
use protocol::ids::ThreadId;
use serde::{Deserialize, Serialize};

/// Skips are forgotten after this long.
const TTL_SECS: u64 = 30 * 24 * 3600;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub node_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<String>,
}

#[derive(Clone, Debug)]
pub struct SetupSkips {
    table: Table,
}

fn pk(thread: &ThreadId) -> String {
    format!("setupskip#{}", thread.0)
}

fn sk(workflow_id: &str) -> String {
    format!("wf#{workflow_id}")
}

impl SetupSkips {
    pub fn new(table: Table) -> Self {
        SetupSkips { table }
    }

    pub async fn get(&self, thread: &ThreadId, workflow_id: &str) -> Result<Vec<Skipped>, StoreError> {
        let Some(item) = self.table.get_raw(&pk(thread), &sk(workflow_id)).await? else { return Ok(Vec::new()) };
        let text = super::db::get_s(&item, "skipped").unwrap_or("[]");
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("setup skips of {workflow_id}: {e}")))
    }

    /// Replaces the thread's skips for the workflow (none: the item goes).
    pub async fn set(&self, thread: &ThreadId, workflow_id: &str, skipped: &[Skipped]) -> Result<(), StoreError> {
        self.table.count();
        if skipped.is_empty() {
            self.table
                .client
                .delete_item()
                .table_name(&self.table.name)
                .set_key(Some(key(pk(thread), sk(workflow_id))))
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            return Ok(());
        }
        let mut sorted = skipped.to_vec();
        sorted.sort();
        sorted.dedup();
        let mut item = key(pk(thread), sk(workflow_id));
        item.insert("skipped".into(), s(serde_json::to_string(&sorted).map_err(|e| StoreError::Invalid(e.to_string()))?));
        item.insert("expiresAt".into(), n(super::db::now_secs() + TTL_SECS));
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}
