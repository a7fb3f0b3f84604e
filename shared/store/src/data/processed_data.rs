//! What Remove Duplicates has seen in earlier executions (n8n's
//! `processed_data`): one record per workflow and context, versioned so that
//! concurrent executions never overwrite each other's values.
//!
//! Items (Instance table, in the workflow's partition `wf#<id>`, so deleting
//! the workflow deletes them): `sk=processed#<context>`, `ver` (the record's
//! version, 1 on creation), `data` (the JSON value, DEFLATE-compressed, at
//! most [`MAX_ITEM_PAYLOAD`] compressed). Writes are single conditional puts
//! on `ver`.

use super::db::{self, b, get_b, key, n, s, Table, MAX_ITEM_PAYLOAD};
use crate::error::StoreError;
use serde_json::Value;

#[derive(Clone, Debug)]
pub struct ProcessedData {
    table: Table,
}

fn pk(workflow_id: &str) -> String {
    format!("wf#{workflow_id}")
}

fn sk(context: &str) -> String {
    format!("processed#{context}")
}

impl ProcessedData {
    pub fn new(table: Table) -> Self {
        ProcessedData { table }
    }

    /// The record and its version.
    pub async fn load(&self, workflow_id: &str, context: &str) -> Result<Option<(Value, u64)>, StoreError> {
        let Some(item) = self.table.get_raw(&pk(workflow_id), &sk(context)).await? else { return Ok(None) };
        let version = item.get("ver").and_then(|v| v.as_n().ok()).and_then(|v| v.parse().ok()).unwrap_or(0);
        let data = get_b(&item, "data").ok_or_else(|| StoreError::Invalid("processed data record without data".into()))?;
        let value = serde_json::from_slice(&db::decompress(&data)?).map_err(|e| StoreError::Invalid(format!("processed data: {e}")))?;
        Ok(Some((value, version)))
    }

    /// Writes `value` as the version after `expected` (`None`: the record
    /// must not exist yet). `Ok(false)` when another writer got there first.
    pub async fn save(&self, workflow_id: &str, context: &str, value: &Value, expected: Option<u64>) -> Result<bool, StoreError> {
        let data = db::compress(&serde_json::to_vec(value).map_err(|e| StoreError::Invalid(e.to_string()))?)?;
        if data.len() > MAX_ITEM_PAYLOAD {
            return Err(StoreError::Invalid(format!(
                "the values seen in previous executions take {} KB compressed, more than the {} KB one record holds: lower the node's history size",
                data.len() / 1024,
                MAX_ITEM_PAYLOAD / 1024
            )));
        }
        let mut item = key(pk(workflow_id), sk(context));
        item.insert("ver".into(), n(expected.unwrap_or(0) + 1));
        item.insert("data".into(), b(data));
        item.insert("updatedAt".into(), s(db::now_iso()));
        self.table.count();
        let put = self.table.client.put_item().table_name(&self.table.name).set_item(Some(item));
        let put = match expected {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(v) => put.condition_expression("ver = :v").expression_attribute_values(":v", n(v)),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) if db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    pub async fn delete(&self, workflow_id: &str, context: &str) -> Result<(), StoreError> {
        self.table.count();
        self.table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(workflow_id), sk(context))))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}
