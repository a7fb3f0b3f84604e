//! The short-lived feed of ephemeral frames (`text-delta`, `reasoning-delta`,
//! `status`, `filesystem-request`) that SSE tails read: a streaming Lambda
//! cannot be pushed to, so it polls this beside the log. LiveFrames table,
//! key `(threadId S, at S)`; `at` is `<epoch ms, 13 digits>-<counter>-<writer>`
//! so it sorts by time and never collides; items expire by TTL.
//!
//! Frames here have no id and are never replayed: a client that missed them
//! gets the coalesced `text-block` / `reasoning-block` from the log.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use protocol::events::Event;
use protocol::ids::ThreadId;
use std::collections::HashMap;
use std::time::Duration;

/// Long enough for any tail to read a frame, short enough to stay small.
pub const LIVE_FRAME_TTL_SECS: u64 = 600;
/// `BatchWriteItem` takes at most 25 items.
pub const MAX_BATCH: usize = 25;

#[derive(Clone, Debug, PartialEq)]
pub struct LiveFrame {
    /// Sort key: time-ordered and unique.
    pub at: String,
    pub event: Event,
}

#[derive(Clone, Debug)]
pub struct LiveFrames {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// The smallest `at` of millisecond `ms`: a cursor that reads everything from then on.
pub fn at_cursor(ms: u64) -> String {
    format!("{ms:013}")
}

/// A fresh, unique `at` key for a frame written now by `writer`.
pub fn make_at(ms: u64, counter: u64, writer: &str) -> String {
    format!("{ms:013}-{counter:010}-{writer}")
}

/// The millisecond an `at` key was made at.
pub fn at_millis(at: &str) -> u64 {
    at.get(..13).and_then(|p| p.parse().ok()).unwrap_or(0)
}

impl LiveFrames {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        LiveFrames { client, table: table.into() }
    }

    /// Writes frames in `BatchWriteItem`s of 25, retrying unprocessed items
    /// a few times (frames are best-effort: a lost delta is repaired by the
    /// block, so persistent throttling drops them with a warning).
    pub async fn put(&self, thread: &ThreadId, frames: &[LiveFrame]) -> Result<(), StoreError> {
        let expires = (now_ms() / 1000 + LIVE_FRAME_TTL_SECS).to_string();
        for chunk in frames.chunks(MAX_BATCH) {
            let mut requests = Vec::with_capacity(chunk.len());
            for f in chunk {
                let item = HashMap::from([
                    ("threadId".to_owned(), AttributeValue::S(thread.0.clone())),
                    ("at".to_owned(), AttributeValue::S(f.at.clone())),
                    ("event".to_owned(), AttributeValue::S(f.event.to_json())),
                    ("expiresAt".to_owned(), AttributeValue::N(expires.clone())),
                ]);
                let put = PutRequest::builder().set_item(Some(item)).build().map_err(StoreError::dynamo)?;
                requests.push(WriteRequest::builder().put_request(put).build());
            }
            let mut pending = HashMap::from([(self.table.clone(), requests)]);
            for attempt in 0..5u32 {
                let out = self
                    .client
                    .batch_write_item()
                    .set_request_items(Some(pending))
                    .send()
                    .await
                    .map_err(StoreError::dynamo)?;
                pending = out.unprocessed_items.unwrap_or_default();
                pending.retain(|_, v| !v.is_empty());
                if pending.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20 << attempt)).await;
            }
            if !pending.is_empty() {
                tracing::warn!(thread = %thread, "live frames dropped after retries (throttled)");
            }
        }
        Ok(())
    }

    /// Frames with `at > after`, oldest first.
    pub async fn read_after(&self, thread: &ThreadId, after: &str, limit: u32) -> Result<Vec<LiveFrame>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("threadId = :t AND #at > :a")
            .expression_attribute_names("#at", "at")
            .expression_attribute_values(":t", AttributeValue::S(thread.0.clone()))
            .expression_attribute_values(":a", AttributeValue::S(after.to_owned()))
            .scan_index_forward(true)
            .limit(limit.clamp(1, 1000) as i32)
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let mut frames = Vec::with_capacity(out.items().len());
        for item in out.items() {
            let (Some(AttributeValue::S(at)), Some(AttributeValue::S(json))) = (item.get("at"), item.get("event")) else {
                return Err(StoreError::Corrupt("live frame without at/event".into()));
            };
            let event = Event::from_json(json).map_err(|e| StoreError::Corrupt(format!("live frame {at}: {e}")))?;
            frames.push(LiveFrame { at: at.clone(), event });
        }
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_keys_sort_by_time_then_counter() {
        let a = make_at(1_700_000_000_000, 9, "w1");
        let b = make_at(1_700_000_000_000, 10, "w1");
        let c = make_at(1_700_000_000_001, 0, "w0");
        assert!(a < b && b < c);
        assert!(at_cursor(1_700_000_000_000) < a);
        assert_eq!(at_millis(&c), 1_700_000_000_001);
    }
}
