//! The durable event log: Events table, key `(threadId S, seq N)`.
//!
//! Ids are gapless and commit-ordered per thread (invariant 1). A writer
//! learns the head once (Query newest-first, Limit 1, consistent), then puts
//! `head+1` with `attribute_not_exists(seq)`. A conditional failure proves
//! `head+1` exists, so the writer advances and retries; after a few misses in
//! a row it re-reads the head instead of walking one by one. A batch is one
//! `TransactWriteItems` of consecutive seqs. Seq N+1 is written only by a
//! writer that knows N exists, so a reader that sees N has everything below.
//!
//! The head is cached per thread in the `EventLog` value (share it, e.g. in
//! an `Arc` or by `Clone`: clones share the cache), so the common case is one
//! request per durable event.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use protocol::events::{Event, StoredEvent};
use protocol::ids::ThreadId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// DynamoDB items are limited to 400 KB; keep room for keys and attributes.
pub const MAX_EVENT_BYTES: usize = 380_000;
/// `TransactWriteItems` takes at most 100 items.
pub const MAX_BATCH: usize = 100;
/// Conditional misses in a row after which the head is re-read rather than
/// advanced one by one (a writer far behind would otherwise pay one failed
/// put per event it missed).
const WALK_BEFORE_REREAD: u32 = 2;
/// Gives up on a thread so contended that no slot was won in this many tries.
const MAX_ATTEMPTS: u32 = 10_000;

#[derive(Clone, Debug)]
pub struct EventLog {
    client: aws_sdk_dynamodb::Client,
    table: String,
    heads: Arc<Mutex<HashMap<String, u64>>>,
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

impl EventLog {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        EventLog { client, table: table.into(), heads: Arc::new(Mutex::new(HashMap::new())) }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.client
    }

    /// The highest seq of `thread` (0 when empty), read consistently.
    pub async fn head(&self, thread: &ThreadId) -> Result<u64, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("threadId = :t")
            .expression_attribute_values(":t", s(&thread.0))
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true)
            .projection_expression("seq")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let head = match out.items().first() {
            Some(item) => seq_of(item)?,
            None => 0,
        };
        self.remember(thread, head);
        Ok(head)
    }

    fn cached_head(&self, thread: &ThreadId) -> Option<u64> {
        self.heads.lock().ok().and_then(|h| h.get(&thread.0).copied())
    }

    fn remember(&self, thread: &ThreadId, seq: u64) {
        if let Ok(mut heads) = self.heads.lock() {
            let e = heads.entry(thread.0.clone()).or_insert(0);
            *e = (*e).max(seq);
        }
    }

    /// Appends one durable event; returns its id.
    pub async fn append(&self, thread: &ThreadId, event: &Event) -> Result<u64, StoreError> {
        let ids = self.append_batch(thread, std::slice::from_ref(event)).await?;
        ids.first().copied().ok_or_else(|| StoreError::Corrupt("append assigned no id".into()))
    }

    /// Appends durable events with consecutive ids, all or nothing per chunk
    /// of [`MAX_BATCH`] (one `TransactWriteItems` each; a single event is a
    /// plain conditional `PutItem`, half the write cost of a transaction).
    pub async fn append_batch(&self, thread: &ThreadId, events: &[Event]) -> Result<Vec<u64>, StoreError> {
        let mut bodies = Vec::with_capacity(events.len());
        for e in events {
            if e.is_ephemeral() {
                return Err(StoreError::Invalid(format!("{} events are live-only and never stored", e.event_type())));
            }
            let json = e.to_json();
            if json.len() > MAX_EVENT_BYTES {
                return Err(StoreError::Invalid(format!(
                    "{} event is {} bytes; the log stores at most {MAX_EVENT_BYTES}",
                    e.event_type(),
                    json.len()
                )));
            }
            bodies.push((e.event_type().as_str(), e.run_id.0.as_str(), e.ts.unwrap_or_else(now_ms), json));
        }
        let mut ids = Vec::with_capacity(events.len());
        for chunk in bodies.chunks(MAX_BATCH) {
            let first = self.append_chunk(thread, chunk).await?;
            ids.extend(first..first + chunk.len() as u64);
        }
        Ok(ids)
    }

    fn item(&self, thread: &ThreadId, seq: u64, body: &(&str, &str, u64, String)) -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("threadId".to_owned(), s(&thread.0)),
            ("seq".to_owned(), n(seq)),
            ("type".to_owned(), s(body.0)),
            ("runId".to_owned(), s(body.1)),
            ("at".to_owned(), n(body.2)),
            ("event".to_owned(), s(body.3.clone())),
        ])
    }

    /// Writes `chunk` at head+1.. and returns the first id.
    async fn append_chunk(&self, thread: &ThreadId, chunk: &[(&str, &str, u64, String)]) -> Result<u64, StoreError> {
        let mut head = match self.cached_head(thread) {
            Some(h) => h,
            None => self.head(thread).await?,
        };
        let mut misses = 0u32;
        for _ in 0..MAX_ATTEMPTS {
            let first = head + 1;
            let won = if chunk.len() == 1 {
                self.put_one(thread, first, &chunk[0]).await?
            } else {
                self.put_many(thread, first, chunk).await?
            };
            if won {
                self.remember(thread, first + chunk.len() as u64 - 1);
                return Ok(first);
            }
            misses += 1;
            if chunk.len() == 1 && misses <= WALK_BEFORE_REREAD {
                // head+1 exists (that is what the condition said): step over it.
                head += 1;
                self.remember(thread, head);
            } else {
                head = self.head(thread).await?;
                misses = 0;
            }
        }
        Err(StoreError::Conflict(format!("thread {thread}: no free event slot after {MAX_ATTEMPTS} attempts")))
    }

    /// `Ok(false)` when `seq` is taken.
    async fn put_one(&self, thread: &ThreadId, seq: u64, body: &(&str, &str, u64, String)) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.item(thread, seq, body)))
            .condition_expression("attribute_not_exists(seq)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// `Ok(false)` when any of `first..` is taken (nothing was written).
    async fn put_many(
        &self,
        thread: &ThreadId,
        first: u64,
        chunk: &[(&str, &str, u64, String)],
    ) -> Result<bool, StoreError> {
        let mut items = Vec::with_capacity(chunk.len());
        for (i, body) in chunk.iter().enumerate() {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(self.item(thread, first + i as u64, body)))
                .condition_expression("attribute_not_exists(seq)")
                .build()
                .map_err(StoreError::dynamo)?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        let result = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
        match result {
            Ok(_) => Ok(true),
            Err(e) => {
                let conflict = e.as_service_error().is_some_and(|se| match se {
                    aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c) => c
                        .cancellation_reasons()
                        .iter()
                        .any(|r| r.code() == Some("ConditionalCheckFailed")),
                    _ => false,
                });
                if conflict {
                    Ok(false)
                } else {
                    Err(StoreError::dynamo(e))
                }
            }
        }
    }

    /// Up to `limit` events with `seq > cursor`, in order, read consistently.
    ///
    /// Only the gapless prefix is returned: ids are gapless by construction,
    /// so a hole means a write still landing (a batch that is visible in
    /// part); the caller reads again from the last id it got.
    pub async fn read_after(&self, thread: &ThreadId, cursor: u64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("threadId = :t AND seq > :c")
            .expression_attribute_values(":t", s(&thread.0))
            .expression_attribute_values(":c", n(cursor))
            .scan_index_forward(true)
            .limit(limit.clamp(1, 1000) as i32)
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let mut events = Vec::with_capacity(out.items().len());
        let mut expected = cursor + 1;
        for item in out.items() {
            let seq = seq_of(item)?;
            if seq != expected {
                tracing::debug!(thread = %thread, expected, got = seq, "hole in the log; stopping at it");
                break;
            }
            let json = match item.get("event") {
                Some(AttributeValue::S(j)) => j,
                _ => return Err(StoreError::Corrupt(format!("event {thread}/{seq} has no body"))),
            };
            let event = protocol::Event::from_json(json)
                .map_err(|e| StoreError::Corrupt(format!("event {thread}/{seq}: {e}")))?;
            events.push(StoredEvent { seq, event });
            expected += 1;
        }
        if let Some(last) = events.last() {
            self.remember(thread, last.seq);
        }
        Ok(events)
    }

    /// Every event after `cursor` (pages of 500).
    pub async fn read_all_after(&self, thread: &ThreadId, mut cursor: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let mut all = Vec::new();
        loop {
            let page = self.read_after(thread, cursor, 500).await?;
            let Some(last) = page.last() else { break };
            cursor = last.seq;
            all.extend(page);
        }
        Ok(all)
    }
}

fn seq_of(item: &HashMap<String, AttributeValue>) -> Result<u64, StoreError> {
    match item.get("seq") {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| StoreError::Corrupt(format!("bad seq {v:?}"))),
        _ => Err(StoreError::Corrupt("event item without seq".into())),
    }
}
