//! Small helpers over the DynamoDB client shared by the data repositories:
//! typed items through serde_dynamo, paged queries, batch writes that retry
//! their unprocessed items, and recognising conditional failures.

use crate::error::StoreError;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, TransactWriteItem, WriteRequest};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub type Item = HashMap<String, AttributeValue>;

/// DynamoDB's item limit is 400 KB; keep every item we write comfortably
/// below it (attribute names and keys count too).
pub const MAX_ITEM_PAYLOAD: usize = 350 * 1024;

/// One table and the client to reach it, plus a request counter (the
/// benchmark reports how many DynamoDB requests each operation costs).
#[derive(Clone, Debug)]
pub struct Table {
    pub client: aws_sdk_dynamodb::Client,
    pub name: String,
    requests: Arc<AtomicU64>,
}

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub fn b(v: Vec<u8>) -> AttributeValue {
    AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(v))
}

pub fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

pub fn to_item<T: Serialize>(v: &T) -> Result<Item, StoreError> {
    serde_dynamo::to_item(v).map_err(|e| StoreError::Invalid(format!("cannot encode item: {e}")))
}

pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(|e| StoreError::Corrupt(format!("cannot decode item: {e}")))
}

pub fn get_s<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

pub fn get_b(item: &Item, name: &str) -> Option<Vec<u8>> {
    match item.get(name) {
        Some(AttributeValue::B(v)) => Some(v.as_ref().to_vec()),
        _ => None,
    }
}

/// True when the error is a failed `ConditionExpression`.
pub fn is_condition_failed<E, R>(err: &SdkError<E, R>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    err.as_service_error().and_then(|e| e.code()) == Some("ConditionalCheckFailedException")
}

/// The cancellation reasons of a cancelled transaction (`None` when the error
/// is something else). Each entry is the code for one action, in order.
pub fn cancel_reasons<R>(err: &SdkError<TransactWriteItemsError, R>) -> Option<Vec<String>> {
    match err.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(e)) => {
            Some(e.cancellation_reasons().iter().map(|r| r.code().unwrap_or("None").to_owned()).collect())
        }
        _ => None,
    }
}

/// Formats a timestamp the way every record stores it: UTC, milliseconds,
/// fixed width, so strings sort in time order.
pub fn iso(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs()
}

pub fn now_iso() -> String {
    iso(time::OffsetDateTime::now_utc())
}

/// The stored form of the instant `secs` seconds ago.
pub fn iso_secs_ago(secs: u64) -> String {
    iso(time::OffsetDateTime::now_utc() - time::Duration::seconds(secs.min(i64::MAX as u64) as i64))
}

/// Parses an ISO 8601 timestamp (RFC 3339, or a bare `YYYY-MM-DD` as
/// midnight UTC) into the stored form.
pub fn parse_iso(v: &str) -> Option<String> {
    use time::format_description::well_known::Rfc3339;
    let v = v.trim();
    if let Ok(t) = time::OffsetDateTime::parse(v, &Rfc3339) {
        return Some(iso(t));
    }
    let date = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(v, &date).ok().map(|d| iso(d.midnight().assume_utc()))
}

/// A random 16-character alphanumeric id (workflows, folders, tags, ...).
pub fn new_id() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..16).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// A time-ordered id (uuid v7 as 32 hex digits): sorts in creation order,
/// which executions and versions rely on.
pub fn new_ordered_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

impl Table {
    pub fn new(client: aws_sdk_dynamodb::Client, name: impl Into<String>) -> Self {
        Table { client, name: name.into(), requests: Arc::new(AtomicU64::new(0)) }
    }

    /// Counts one DynamoDB request.
    pub fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests sent through this handle (and its clones) so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub async fn get_raw(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.count();
        let out = self
            .client
            .get_item()
            .table_name(&self.name)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(out.item)
    }

    pub async fn get<T: DeserializeOwned>(&self, pk: &str, sk: &str) -> Result<Option<T>, StoreError> {
        self.get_raw(pk, sk).await?.map(from_item).transpose()
    }

    /// All items of a partition whose sort key starts with `prefix`
    /// (every page), in sort-key order unless `backwards`.
    pub async fn query_prefix(&self, pk: &str, prefix: &str, backwards: bool) -> Result<Vec<Item>, StoreError> {
        self.query_prefix_with(pk, prefix, backwards, &[]).await
    }

    /// [`Table::query_prefix`] returning only the named attributes (in
    /// sort-key order).
    pub async fn query_prefix_projected(&self, pk: &str, prefix: &str, attributes: &[&str]) -> Result<Vec<Item>, StoreError> {
        self.query_prefix_with(pk, prefix, false, attributes).await
    }

    async fn query_prefix_with(
        &self,
        pk: &str,
        prefix: &str,
        backwards: bool,
        attributes: &[&str],
    ) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            self.count();
            let mut req = self.client.query().table_name(&self.name).expression_attribute_values(":pk", s(pk));
            // DynamoDB refuses an empty `begins_with` operand: no prefix, whole partition.
            req = if prefix.is_empty() {
                req.key_condition_expression("pk = :pk")
            } else {
                req.key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                    .expression_attribute_values(":prefix", s(prefix))
            };
            if !attributes.is_empty() {
                // Names through placeholders: `path`, `size` and more are reserved words.
                let names: Vec<String> = (0..attributes.len()).map(|i| format!("#a{i}")).collect();
                req = req.projection_expression(names.join(", "));
                for (name, attr) in names.iter().zip(attributes) {
                    req = req.expression_attribute_names(name, *attr);
                }
            }
            let req = req.scan_index_forward(!backwards).consistent_read(true).set_exclusive_start_key(start.take());
            let page = req.send().await.map_err(StoreError::dynamo)?;
            out.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    /// All items of one `gsi1` partition (every page), in `gsi1sk` order.
    pub async fn query_gsi(&self, gsi1pk: &str) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            self.count();
            let req = self
                .client
                .query()
                .table_name(&self.name)
                .index_name("gsi1")
                .key_condition_expression("gsi1pk = :pk")
                .expression_attribute_values(":pk", s(gsi1pk))
                .set_exclusive_start_key(start.take());
            let page = req.send().await.map_err(StoreError::dynamo)?;
            out.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    /// Writes (puts and deletes) in batches of 25, four batches in flight,
    /// retrying whatever DynamoDB reports unprocessed, with backoff, until
    /// every request is applied.
    pub async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
        use futures::StreamExt;
        // Futures collected first: a lazy `map` closure in the stream makes
        // the future not general enough to be spawned.
        let chunks: Vec<_> = requests.chunks(25).map(|c| self.write_chunk(c.to_vec())).collect();
        let results: Vec<Result<(), StoreError>> = futures::stream::iter(chunks).buffer_unordered(4).collect().await;
        results.into_iter().collect()
    }

    async fn write_chunk(&self, mut pending: Vec<WriteRequest>) -> Result<(), StoreError> {
        let mut attempt = 0u32;
        while !pending.is_empty() {
            self.count();
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.name, pending)
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            pending = out.unprocessed_items.and_then(|mut m| m.remove(&self.name)).unwrap_or_default();
            if !pending.is_empty() {
                attempt += 1;
                if attempt > 10 {
                    return Err(StoreError::Aws {
                        service: "dynamodb",
                        message: format!("{} batch writes still unprocessed after retries", pending.len()),
                    });
                }
                tokio::time::sleep(std::time::Duration::from_millis(20u64 << attempt.min(6))).await;
            }
        }
        Ok(())
    }

    /// Reads items by key in batches of 100 (unprocessed keys retried);
    /// missing items are simply absent from the result.
    pub async fn batch_get(&self, keys: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let mut out = Vec::new();
        for chunk in keys.chunks(100) {
            let mut pending = Some(chunk.to_vec());
            let mut attempt = 0u32;
            while let Some(keys) = pending.take().filter(|k| !k.is_empty()) {
                let ka = KeysAndAttributes::builder().set_keys(Some(keys)).consistent_read(true);
                self.count();
                let res = self
                    .client
                    .batch_get_item()
                    .request_items(&self.name, ka.build().map_err(StoreError::dynamo)?)
                    .send()
                    .await
                    .map_err(StoreError::dynamo)?;
                out.extend(res.responses.and_then(|mut r| r.remove(&self.name)).unwrap_or_default());
                pending = res.unprocessed_keys.and_then(|mut m| m.remove(&self.name)).map(|k| k.keys);
                if pending.as_ref().is_some_and(|k| !k.is_empty()) {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(20u64 << attempt.min(6))).await;
                }
            }
        }
        Ok(out)
    }

    /// Runs a transaction; a cancellation (a condition failed, or a
    /// concurrent transaction touched the same item) becomes `Conflict`
    /// carrying `what` and the reasons.
    pub async fn transact(&self, items: Vec<TransactWriteItem>, what: &str) -> Result<(), StoreError> {
        self.count();
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(()),
            Err(e) => match cancel_reasons(&e) {
                Some(reasons) => Err(StoreError::Conflict(format!("{what} ({})", reasons.join(", ")))),
                None => Err(StoreError::dynamo(e)),
            },
        }
    }
}

/// The outcome of claiming a unique key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    Won,
    /// Someone holds it: their id and how long ago they claimed it.
    Held {
        owner: String,
        age_secs: u64,
    },
}

/// A claim whose owner never materialised (its writer died between the
/// claim and the write) may be taken over after this long.
pub const CLAIM_GRACE_SECS: u64 = 60;

impl Table {
    /// Claims `(pk, sk)` for `owner` with one conditional put: of racing
    /// claimers exactly one wins (single-item conditions are atomic in
    /// DynamoDB, and unlike failed transactions they do not roll back other
    /// writers' work in moto).
    pub async fn try_claim(&self, pk: &str, sk: &str, owner: &str) -> Result<Claim, StoreError> {
        let mut item = key(pk, sk);
        item.insert("owner".into(), s(owner));
        item.insert("claimedAt".into(), n(now_secs()));
        self.count();
        match self
            .client
            .put_item()
            .table_name(&self.name)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
        {
            Ok(_) => Ok(Claim::Won),
            Err(e) if is_condition_failed(&e) => {
                let cur = self.get_raw(pk, sk).await?.unwrap_or_default();
                let age = match cur.get("claimedAt") {
                    Some(AttributeValue::N(v)) => now_secs().saturating_sub(v.parse().unwrap_or(0)),
                    _ => u64::MAX,
                };
                Ok(Claim::Held { owner: get_s(&cur, "owner").unwrap_or_default().to_owned(), age_secs: age })
            }
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Deletes a claim if `owner` still holds it.
    pub async fn release_claim(&self, pk: &str, sk: &str, owner: &str) -> Result<(), StoreError> {
        self.count();
        match self
            .client
            .delete_item()
            .table_name(&self.name)
            .set_key(Some(key(pk, sk)))
            .condition_expression("#o = :o")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":o", s(owner))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Puts `item`, replacing what is there.
    pub async fn put(&self, item: Item) -> Result<(), StoreError> {
        self.count();
        self.client.put_item().table_name(&self.name).set_item(Some(item)).send().await.map_err(StoreError::dynamo)?;
        Ok(())
    }

    /// Puts `item` (a new entity) on condition it does not exist yet.
    pub async fn put_new(&self, item: Item) -> Result<(), StoreError> {
        self.count();
        match self
            .client
            .put_item()
            .table_name(&self.name)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Err(StoreError::Conflict("id collision".into())),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }
}

pub fn put_req(item: Item) -> Result<WriteRequest, StoreError> {
    Ok(WriteRequest::builder()
        .put_request(
            aws_sdk_dynamodb::types::PutRequest::builder().set_item(Some(item)).build().map_err(StoreError::dynamo)?,
        )
        .build())
}

pub fn delete_req(k: Item) -> Result<WriteRequest, StoreError> {
    Ok(WriteRequest::builder()
        .delete_request(
            aws_sdk_dynamodb::types::DeleteRequest::builder().set_key(Some(k)).build().map_err(StoreError::dynamo)?,
        )
        .build())
}

/// Transaction actions, built with the table name filled in.
pub fn tx_put(table: &str, item: Item, condition: Option<&str>) -> Result<TransactWriteItem, StoreError> {
    let put = aws_sdk_dynamodb::types::Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .set_condition_expression(condition.map(str::to_owned))
        .build()
        .map_err(StoreError::dynamo)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

pub fn tx_delete(table: &str, k: Item, condition: Option<&str>) -> Result<TransactWriteItem, StoreError> {
    let del = aws_sdk_dynamodb::types::Delete::builder()
        .table_name(table)
        .set_key(Some(k))
        .set_condition_expression(condition.map(str::to_owned))
        .build()
        .map_err(StoreError::dynamo)?;
    Ok(TransactWriteItem::builder().delete(del).build())
}

pub fn tx_update(
    table: &str,
    k: Item,
    update: &str,
    condition: Option<&str>,
    names: &[(&str, &str)],
    values: Vec<(&str, AttributeValue)>,
) -> Result<TransactWriteItem, StoreError> {
    let mut up = aws_sdk_dynamodb::types::Update::builder()
        .table_name(table)
        .set_key(Some(k))
        .update_expression(update)
        .set_condition_expression(condition.map(str::to_owned));
    for (n, v) in names {
        up = up.expression_attribute_names(*n, *v);
    }
    for (n, v) in values {
        up = up.expression_attribute_values(n, v);
    }
    Ok(TransactWriteItem::builder().update(up.build().map_err(StoreError::dynamo)?).build())
}

pub fn tx_check(
    table: &str,
    k: Item,
    condition: &str,
    values: Vec<(&str, AttributeValue)>,
) -> Result<TransactWriteItem, StoreError> {
    let mut c = aws_sdk_dynamodb::types::ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(k))
        .condition_expression(condition);
    for (n, v) in values {
        c = c.expression_attribute_values(n, v);
    }
    Ok(TransactWriteItem::builder().condition_check(c.build().map_err(StoreError::dynamo)?).build())
}

/// Compresses bytes with DEFLATE (run data and workflow bodies are JSON
/// and shrink 5–20×).
pub fn compress(data: &[u8]) -> Result<Vec<u8>, StoreError> {
    use std::io::Write;
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).map_err(|e| StoreError::Invalid(format!("compress: {e}")))?;
    enc.finish().map_err(|e| StoreError::Invalid(format!("compress: {e}")))
}

pub fn decompress(data: &[u8]) -> Result<Vec<u8>, StoreError> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::DeflateDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(|e| StoreError::Corrupt(format!("decompress: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_fixed_width_utc() {
        assert_eq!(parse_iso("2024-01-02T03:04:05+02:00").as_deref(), Some("2024-01-02T01:04:05.000Z"));
        assert_eq!(parse_iso("2024-01-02").as_deref(), Some("2024-01-02T00:00:00.000Z"));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(now_iso().len(), 24);
    }

    #[test]
    fn compression_round_trips() {
        let data = b"hello hello hello hello".repeat(100);
        let c = compress(&data).unwrap();
        assert!(c.len() < data.len());
        assert_eq!(decompress(&c).unwrap(), data);
    }
}
