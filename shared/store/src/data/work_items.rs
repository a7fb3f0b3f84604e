//! Work items of a thread: what `build-workflow` built under a `workItemId`
//! (the build outcome, its simulation plan and fixtures) and what
//! verification found since (attempts, passes per trigger, the cumulative
//! verification, the verdict loop's state). The document's shape belongs to
//! `instance::verification`; this repository stores it with a revision.
//!
//! Item (Agent table, no TTL: it lives as long as the thread's workspace):
//! `pk=wi#<thread>, sk=item#<workItemId>`: `workflowId`, `rev`, `updatedAt`,
//! `doc` (the JSON document).
//!
//! Every change is read → change → put on condition `rev` is still the one
//! read (`attribute_not_exists` for the first): two verifications racing for
//! the last attempt cannot both take it, and nothing is ever half-written.

use super::db::{self, get_s, n, s, Item, Table};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use protocol::ids::ThreadId;

/// One stored document and the revision it was read at.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    pub rev: u64,
    pub doc: T,
}

#[derive(Clone, Debug)]
pub struct WorkItems {
    table: Table,
}

fn pk(thread: &ThreadId) -> String {
    format!("wi#{thread}")
}

fn sk(id: &str) -> String {
    format!("item#{id}")
}

fn decode<T: serde::de::DeserializeOwned>(item: &Item) -> Result<Versioned<T>, StoreError> {
    let rev = match item.get("rev") {
        Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
        _ => 0,
    };
    let doc = get_s(item, "doc").ok_or_else(|| StoreError::Invalid("work item without a document".into()))?;
    let doc = serde_json::from_str(doc).map_err(|e| StoreError::Invalid(format!("work item document: {e}")))?;
    Ok(Versioned { rev, doc })
}

impl WorkItems {
    pub fn new(table: Table) -> Self {
        WorkItems { table }
    }

    /// The work item, read consistently.
    pub async fn get<T: serde::de::DeserializeOwned>(&self, thread: &ThreadId, id: &str) -> Result<Option<Versioned<T>>, StoreError> {
        self.table.get_raw(&pk(thread), &sk(id)).await?.as_ref().map(decode).transpose()
    }

    /// Every work item of the thread that builds `workflow_id`.
    pub async fn for_workflow<T: serde::de::DeserializeOwned>(&self, thread: &ThreadId, workflow_id: &str) -> Result<Vec<Versioned<T>>, StoreError> {
        let items = self.table.query_prefix(&pk(thread), "item#", false).await?;
        items.iter().filter(|i| get_s(i, "workflowId") == Some(workflow_id)).map(decode).collect()
    }

    /// Every work item of the thread.
    pub async fn all<T: serde::de::DeserializeOwned>(&self, thread: &ThreadId) -> Result<Vec<Versioned<T>>, StoreError> {
        self.table.query_prefix(&pk(thread), "item#", false).await?.iter().map(decode).collect()
    }

    /// Puts the document on condition nothing changed it since `expected`
    /// was read (`None`: it must not exist yet). `Conflict` when it did;
    /// returns the new revision.
    pub async fn put<T: serde::Serialize>(&self, thread: &ThreadId, id: &str, workflow_id: &str, doc: &T, expected: Option<u64>) -> Result<u64, StoreError> {
        let body = serde_json::to_string(doc).map_err(|e| StoreError::Invalid(format!("work item document: {e}")))?;
        let rev = expected.map_or(1, |r| r + 1);
        let mut item = db::key(pk(thread), sk(id));
        item.insert("workflowId".into(), s(workflow_id));
        item.insert("rev".into(), n(rev));
        item.insert("updatedAt".into(), s(db::now_iso()));
        item.insert("doc".into(), s(body));
        self.table.count();
        let mut req = self.table.client.put_item().table_name(&self.table.name).set_item(Some(item));
        req = match expected {
            None => req.condition_expression("attribute_not_exists(pk)"),
            Some(r) => req.condition_expression("#r = :rev").expression_attribute_names("#r", "rev").expression_attribute_values(":rev", n(r)),
        };
        match req.send().await {
            Ok(_) => Ok(rev),
            Err(e) if db::is_condition_failed(&e) => Err(StoreError::Conflict(format!("work item {id} changed meanwhile"))),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }
}
