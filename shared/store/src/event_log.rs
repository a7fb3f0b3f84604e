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
//! A conditional failure can also be our own write: the SDK retries a
//! request whose answer was lost after it committed. Every item carries the
//! writer's `writeId`, returned with the failure (`ALL_OLD`), so a writer
//! recognises its own commit instead of appending the event twice.
//!
//! The head is cached per thread in the `EventLog` value (share it, e.g. in
//! an `Arc` or by `Clone`: clones share the cache), so the common case is one
//! request per durable event.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem};
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

    /// The log of a deployment: its Events table.
    pub fn from_config(
        client: aws_sdk_dynamodb::Client,
        config: &crate::config::Config,
    ) -> Result<Self, StoreError> {
        let table = config.table(crate::deployment::TableId::Events)?;
        Ok(EventLog::new(client, table))
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

    fn item(
        &self,
        thread: &ThreadId,
        seq: u64,
        write_id: &str,
        body: &(&str, &str, u64, String),
    ) -> HashMap<String, AttributeValue> {
        HashMap::from([
            ("writeId".to_owned(), s(write_id)),
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
        let write_id = uuid::Uuid::new_v4().simple().to_string();
        let mut misses = 0u32;
        let mut busy = 0u32;
        for _ in 0..MAX_ATTEMPTS {
            let first = head + 1;
            let slot = if chunk.len() == 1 {
                self.put_one(thread, first, &write_id, &chunk[0]).await?
            } else {
                self.put_many(thread, first, &write_id, chunk).await?
            };
            match slot {
                Slot::Won => {
                    self.remember(thread, first + chunk.len() as u64 - 1);
                    return Ok(first);
                }
                Slot::Busy => {
                    // Nothing was written; the same slot is tried again once
                    // the other transaction is through (a brief, growing pause).
                    busy += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(u64::from(busy.min(10)) * 5)).await;
                    continue;
                }
                Slot::Taken => busy = 0,
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

    /// Whether `seq` was won, is taken by another writer, or is busy.
    async fn put_one(
        &self,
        thread: &ThreadId,
        seq: u64,
        write_id: &str,
        body: &(&str, &str, u64, String),
    ) -> Result<Slot, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.item(thread, seq, write_id, body)))
            .condition_expression("attribute_not_exists(seq)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        use aws_sdk_dynamodb::operation::put_item::PutItemError;
        match result {
            Ok(_) => Ok(Slot::Won),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(c)) => match c.item() {
                    Some(old) => Ok(Slot::taken_unless_ours(is_ours(old, write_id))),
                    None => Ok(Slot::taken_unless_ours(self.written_by(thread, seq, write_id).await?)),
                },
                // A transaction holds the item (a subscriber's go-live check
                // of this very seq, or another writer's batch).
                Some(PutItemError::TransactionConflictException(_)) => Ok(Slot::Busy),
                _ => Err(StoreError::dynamo(e)),
            },
        }
    }

    /// Whether the item at `seq` was written by `write_id` (a consistent read;
    /// only needed when a failure did not return the existing item).
    async fn written_by(&self, thread: &ThreadId, seq: u64, write_id: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("threadId", s(&thread.0))
            .key("seq", n(seq))
            .consistent_read(true)
            .projection_expression("writeId")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(out.item.is_some_and(|i| is_ours(&i, write_id)))
    }

    /// `Taken` when any of `first..` is taken by another writer, `Busy` when
    /// another transaction or write held one of them (in both, nothing was
    /// written).
    async fn put_many(
        &self,
        thread: &ThreadId,
        first: u64,
        write_id: &str,
        chunk: &[(&str, &str, u64, String)],
    ) -> Result<Slot, StoreError> {
        let mut items = Vec::with_capacity(chunk.len());
        for (i, body) in chunk.iter().enumerate() {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(self.item(thread, first + i as u64, write_id, body)))
                .condition_expression("attribute_not_exists(seq)")
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .build()
                .map_err(StoreError::dynamo)?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        let result = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
        match result {
            Ok(_) => Ok(Slot::Won),
            Err(e) => {
                use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
                let Some(TransactWriteItemsError::TransactionCanceledException(c)) = e.as_service_error() else {
                    return Err(StoreError::dynamo(e));
                };
                let reasons = c.cancellation_reasons();
                let failed: Vec<_> = reasons.iter().filter(|r| r.code() == Some("ConditionalCheckFailed")).collect();
                if failed.is_empty() {
                    if reasons.iter().any(|r| r.code() == Some("TransactionConflict")) {
                        return Ok(Slot::Busy);
                    }
                    return Err(StoreError::dynamo(e));
                }
                // All-or-nothing: if any slot holds our writeId, all of them do.
                let ours = match failed.iter().find_map(|r| r.item()) {
                    Some(old) => is_ours(old, write_id),
                    None => self.written_by(thread, first, write_id).await?,
                };
                Ok(Slot::taken_unless_ours(ours))
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
        for (expected, item) in (cursor + 1..).zip(out.items()) {
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

/// What one conditional write of a slot found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Written now, or by this writer's earlier attempt whose answer was lost.
    Won,
    /// Another writer holds the slot: move on.
    Taken,
    /// DynamoDB refused the write because a transaction was in progress on
    /// the item (`TransactionConflict`): nothing was written, try it again.
    Busy,
}

impl Slot {
    fn taken_unless_ours(ours: bool) -> Slot {
        if ours {
            Slot::Won
        } else {
            Slot::Taken
        }
    }
}

fn is_ours(item: &HashMap<String, AttributeValue>, write_id: &str) -> bool {
    matches!(item.get("writeId"), Some(AttributeValue::S(w)) if w == write_id)
}

fn seq_of(item: &HashMap<String, AttributeValue>) -> Result<u64, StoreError> {
    match item.get("seq") {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| StoreError::Corrupt(format!("bad seq {v:?}"))),
        _ => Err(StoreError::Corrupt("event item without seq".into())),
    }
}
