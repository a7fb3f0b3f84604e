//! Conversations of AI memory sub-nodes (Window Buffer Memory): one item
//! per workflow and session key, the window of messages as JSON, expiring
//! [`CHAT_MEMORY_TTL_SECS`] after its last write (DynamoDB TTL), so idle
//! sessions clean themselves up.
//!
//! Items (Executions table, which has the TTL): `pk=chatmem#<workflow id>`,
//! `sk=session#<session key>`, `messages` (JSON, DEFLATE-compressed, at
//! most [`MAX_ITEM_PAYLOAD`]), `updatedAt`, `expiresAt`.

use super::db::{self, b, get_b, key, n, s, Table, MAX_ITEM_PAYLOAD};
use crate::error::StoreError;
use serde_json::Value;

/// How long a session's memory lives after its last message: 30 days.
pub const CHAT_MEMORY_TTL_SECS: u64 = 30 * 86_400;

#[derive(Clone, Debug)]
pub struct ChatMemory {
    table: Table,
}

fn pk(workflow_id: &str) -> String {
    format!("chatmem#{workflow_id}")
}

fn sk(session: &str) -> String {
    format!("session#{session}")
}

impl ChatMemory {
    pub fn new(table: Table) -> Self {
        ChatMemory { table }
    }

    /// The session's messages, oldest first; empty when there are none or they expired.
    pub async fn load(&self, workflow_id: &str, session: &str) -> Result<Vec<Value>, StoreError> {
        let Some(item) = self.table.get_raw(&pk(workflow_id), &sk(session)).await? else { return Ok(vec![]) };
        // TTL deletion is lazy: an expired item may still be read
        let expires = item.get("expiresAt").and_then(|v| v.as_n().ok()).and_then(|v| v.parse::<u64>().ok());
        if expires.is_some_and(|t| t <= db::now_secs()) {
            return Ok(vec![]);
        }
        let data = get_b(&item, "messages").ok_or_else(|| StoreError::Invalid("chat memory without messages".into()))?;
        serde_json::from_slice(&db::decompress(&data)?).map_err(|e| StoreError::Invalid(format!("chat memory: {e}")))
    }

    /// Replaces the session's messages and renews its expiry.
    pub async fn save(&self, workflow_id: &str, session: &str, messages: &[Value]) -> Result<(), StoreError> {
        let data = db::compress(&serde_json::to_vec(messages).map_err(|e| StoreError::Invalid(e.to_string()))?)?;
        if data.len() > MAX_ITEM_PAYLOAD {
            return Err(StoreError::Invalid(format!(
                "the session's memory takes {} KB compressed, more than the {} KB one record holds: lower the memory's context window length",
                data.len() / 1024,
                MAX_ITEM_PAYLOAD / 1024
            )));
        }
        let mut item = key(pk(workflow_id), sk(session));
        item.insert("messages".into(), b(data));
        item.insert("updatedAt".into(), s(db::now_iso()));
        item.insert("expiresAt".into(), n(db::now_secs() + CHAT_MEMORY_TTL_SECS));
        self.table.count();
        self.table.client.put_item().table_name(&self.table.name).set_item(Some(item)).send().await.map_err(StoreError::dynamo)?;
        Ok(())
    }
}
