//! Thread ownership: `(thread#<id>, meta)` in the Agent table with the
//! owner's user id. Every thread-scoped endpoint checks it, and a stranger
//! gets the same answer as for a thread that does not exist (invariant 7).
//!
//! The same item is the thread's entry in its owner's list: `gsi1pk =
//! userthreads#<user>`, `gsi1sk = <lastActivityAt ms, 13 digits>#<thread>`,
//! so [`Threads::list`] is one index query, newest first; only the owner's
//! partition is ever read.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use protocol::ids::ThreadId;
use protocol::session::{ThreadList, ThreadSummary};
use protocol::UserId;
use std::collections::HashMap;

/// The owner's thread-list partition in `gsi1`.
pub fn list_pk(user: &UserId) -> String {
    format!("userthreads#{}", user.0)
}

/// What the list shows of a thread before it has a title: the first line
/// of its first message, at most 80 characters.
pub fn preview_of(message: &str) -> String {
    let line = message.trim().lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// A thread's place in its owner's list: by last activity, then id.
pub fn list_sk(last_activity_ms: u64, thread: &ThreadId) -> String {
    format!("{last_activity_ms:013}#{}", thread.0)
}

#[derive(Clone, Debug)]
pub struct Threads {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

fn pk(thread: &ThreadId) -> AttributeValue {
    AttributeValue::S(format!("thread#{}", thread.0))
}

fn not_found(thread: &ThreadId) -> StoreError {
    StoreError::NotFound(format!("thread {thread} not found"))
}

impl Threads {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Threads { client, table: table.into() }
    }

    /// Creates the thread owned by `user`, or confirms `user` owns it.
    /// Someone else's thread is `NotFound`, exactly like a missing one.
    pub async fn ensure(&self, thread: &ThreadId, user: &UserId) -> Result<(), StoreError> {
        let now = crate::data::db::now_secs();
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", pk(thread))
            .key("sk", AttributeValue::S("meta".into()))
            .update_expression(
                "SET userId = :u, threadId = :t, createdAt = if_not_exists(createdAt, :now), \
                 lastActivityAt = if_not_exists(lastActivityAt, :ms), gsi1pk = :upk, gsi1sk = if_not_exists(gsi1sk, :usk)",
            )
            .condition_expression("attribute_not_exists(pk) OR userId = :u")
            .expression_attribute_values(":u", AttributeValue::S(user.0.clone()))
            .expression_attribute_values(":t", AttributeValue::S(thread.0.clone()))
            .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
            .expression_attribute_values(":ms", AttributeValue::N((now * 1000).to_string()))
            .expression_attribute_values(":upk", AttributeValue::S(list_pk(user)))
            .expression_attribute_values(":usk", AttributeValue::S(list_sk(now * 1000, thread)))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                Err(not_found(thread))
            }
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// The owner of a thread, `None` if it does not exist.
    pub async fn owner(&self, thread: &ThreadId) -> Result<Option<UserId>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", pk(thread))
            .key("sk", AttributeValue::S("meta".into()))
            .consistent_read(true)
            .projection_expression("userId")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(out.item.and_then(|i| match i.get("userId") {
            Some(AttributeValue::S(u)) => Some(UserId(u.clone())),
            _ => None,
        }))
    }

    /// `Ok` when `user` owns `thread`; `NotFound` otherwise (missing or not theirs).
    pub async fn check_owner(&self, thread: &ThreadId, user: &UserId) -> Result<(), StoreError> {
        match self.owner(thread).await? {
            Some(owner) if &owner == user => Ok(()),
            _ => Err(not_found(thread)),
        }
    }

    /// `user`'s threads, most recently active first: at most `limit`, older
    /// than the `before` cursor (a previous answer's `nextBefore`). The
    /// index is eventually consistent: a run started a moment ago may sort
    /// by its previous activity for that moment.
    pub async fn list(&self, user: &UserId, limit: u32, before: Option<&str>) -> Result<ThreadList, StoreError> {
        let mut req = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("gsi1")
            .expression_attribute_values(":p", AttributeValue::S(list_pk(user)))
            .scan_index_forward(false)
            .limit(limit as i32 + 1);
        req = match before {
            Some(cursor) => req
                .key_condition_expression("gsi1pk = :p AND gsi1sk < :b")
                .expression_attribute_values(":b", AttributeValue::S(cursor.to_owned())),
            None => req.key_condition_expression("gsi1pk = :p"),
        };
        let out = req.send().await.map_err(StoreError::dynamo)?;
        let mut items = out.items.unwrap_or_default();
        let more = items.len() > limit as usize;
        items.truncate(limit as usize);
        let text = |i: &HashMap<String, AttributeValue>, k: &str| match i.get(k) {
            Some(AttributeValue::S(v)) => Some(v.clone()),
            _ => None,
        };
        let num = |i: &HashMap<String, AttributeValue>, k: &str| match i.get(k) {
            Some(AttributeValue::N(v)) => v.parse::<u64>().unwrap_or(0),
            _ => 0,
        };
        let next_before = if more { items.last().and_then(|i| text(i, "gsi1sk")) } else { None };
        let threads = items
            .iter()
            .filter(|i| text(i, "userId").as_deref() == Some(user.0.as_str()))
            .filter_map(|i| {
                Some(ThreadSummary {
                    thread_id: text(i, "threadId")?,
                    title: text(i, "title"),
                    preview: text(i, "preview"),
                    created_at: num(i, "createdAt"),
                    last_activity_at: num(i, "lastActivityAt"),
                    has_active_run: text(i, "activeRunId").is_some(),
                })
            })
            .collect();
        Ok(ThreadList { threads, next_before })
    }
}
