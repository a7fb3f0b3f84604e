//! WebSocket connections: who is behind each connection id, and which
//! threads each connection subscribes to. Items are TTL'd so a connection
//! whose `$disconnect` never arrived ages out.
//!
//! Keys: a connection is `(conn#<id>, meta)`; a subscription is
//! `(thread#<threadId>, conn#<connectionId>)` with `gsi1pk = conn#<id>` so
//! `$disconnect` finds a connection's subscriptions. A subscription's
//! `state` is `replaying` or `live`; publishers post only to `live` ones.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};
use protocol::ids::{ConnectionId, ThreadId};
use crate::data::db::now_secs;
use protocol::UserId;
use std::collections::HashMap;

/// How long a connection record lives without being refreshed (API Gateway
/// closes connections after 2 h anyway).
pub const CONNECTION_TTL_SECS: u64 = 3 * 3600;

#[derive(Clone, Debug)]
pub struct Connections {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

fn conn_pk(id: &ConnectionId) -> AttributeValue {
    AttributeValue::S(format!("conn#{}", id.0))
}


impl Connections {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        Connections { client, table: table.into() }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &aws_sdk_dynamodb::Client {
        &self.client
    }

    /// Records an authenticated connection.
    pub async fn open(&self, id: &ConnectionId, user: &UserId) -> Result<(), StoreError> {
        let now = now_secs();
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", conn_pk(id))
            .item("sk", AttributeValue::S("meta".into()))
            .item("userId", AttributeValue::S(user.0.clone()))
            .item("connectedAt", AttributeValue::N(now.to_string()))
            .item("expiresAt", AttributeValue::N((now + CONNECTION_TTL_SECS).to_string()))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    /// The user behind a connection, if it is open.
    pub async fn owner(&self, id: &ConnectionId) -> Result<Option<UserId>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", conn_pk(id))
            .key("sk", AttributeValue::S("meta".into()))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(out.item.and_then(|item| match item.get("userId") {
            Some(AttributeValue::S(u)) => Some(UserId(u.clone())),
            _ => None,
        }))
    }

    /// Forgets a connection (`$disconnect`, or a `410 Gone` on post).
    pub async fn close(&self, id: &ConnectionId) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", conn_pk(id))
            .key("sk", AttributeValue::S("meta".into()))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}

/// A subscription's phase: the subscribe handler replays while `Replaying`;
/// publishers post only to `Live` ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubState {
    Replaying,
    Live,
}

impl SubState {
    fn as_str(self) -> &'static str {
        match self {
            SubState::Replaying => "replaying",
            SubState::Live => "live",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub thread: ThreadId,
    pub connection: ConnectionId,
    pub user: UserId,
    pub state: SubState,
    /// Last seq replayed to the connection before it went live.
    pub cursor: u64,
}

/// Outcome of trying to flip a subscription to `live`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoLive {
    /// Live; every event after the cursor will be posted by its publisher.
    Live,
    /// Events after the cursor landed (or were being written) meanwhile:
    /// replay them and try again.
    Behind,
    /// The subscription was replaced or removed (re-subscribe, unsubscribe,
    /// disconnect): stop replaying.
    Superseded,
}

fn sub_pk(thread: &ThreadId) -> AttributeValue {
    AttributeValue::S(format!("thread#{}", thread.0))
}

fn sub_sk(conn: &ConnectionId) -> AttributeValue {
    AttributeValue::S(format!("conn#{}", conn.0))
}

fn get_s<'a>(item: &'a HashMap<String, AttributeValue>, key: &str) -> Option<&'a str> {
    match item.get(key) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

impl Connections {
    /// Starts (or restarts) a subscription in `replaying` at `cursor`.
    /// Returns a token that names this attempt: a later subscribe of the
    /// same connection to the same thread supersedes it.
    pub async fn subscribe_replaying(
        &self,
        thread: &ThreadId,
        conn: &ConnectionId,
        user: &UserId,
        cursor: u64,
    ) -> Result<String, StoreError> {
        let now = now_secs();
        let token = uuid::Uuid::new_v4().simple().to_string();
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", sub_pk(thread))
            .item("sk", sub_sk(conn))
            .item("gsi1pk", conn_pk(conn))
            .item("gsi1sk", sub_pk(thread))
            .item("threadId", AttributeValue::S(thread.0.clone()))
            .item("connectionId", AttributeValue::S(conn.0.clone()))
            .item("userId", AttributeValue::S(user.0.clone()))
            .item("state", AttributeValue::S(SubState::Replaying.as_str().into()))
            .item("cursor", AttributeValue::N(cursor.to_string()))
            .item("token", AttributeValue::S(token.clone()))
            .item("expiresAt", AttributeValue::N((now + CONNECTION_TTL_SECS).to_string()))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(token)
    }

    /// Flips a replaying subscription to `live` at `cursor` (the last seq
    /// replayed), atomically with a check that event `cursor + 1` does not
    /// exist yet in `events_table`. When it succeeds, every later event is
    /// appended after the flip, so its publisher (which reads subscriptions
    /// consistently after appending) sees this subscription live and posts
    /// it, while events up to `cursor` (replayed already) are filtered out by
    /// the publisher: nothing is missed and nothing is posted twice.
    pub async fn go_live(
        &self,
        thread: &ThreadId,
        conn: &ConnectionId,
        token: &str,
        cursor: u64,
        events_table: &str,
    ) -> Result<GoLive, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", sub_pk(thread))
            .key("sk", sub_sk(conn))
            .update_expression("SET #state = :live, #cursor = :c")
            .condition_expression("#token = :token AND #state = :replaying")
            .expression_attribute_names("#state", "state")
            .expression_attribute_names("#cursor", "cursor")
            .expression_attribute_names("#token", "token")
            .expression_attribute_values(":live", AttributeValue::S(SubState::Live.as_str().into()))
            .expression_attribute_values(":replaying", AttributeValue::S(SubState::Replaying.as_str().into()))
            .expression_attribute_values(":c", AttributeValue::N(cursor.to_string()))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .build()
            .map_err(StoreError::dynamo)?;
        let check = ConditionCheck::builder()
            .table_name(events_table)
            .key("threadId", AttributeValue::S(thread.0.clone()))
            .key("seq", AttributeValue::N((cursor + 1).to_string()))
            .condition_expression("attribute_not_exists(seq)")
            .build()
            .map_err(StoreError::dynamo)?;
        let result = self
            .client
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().update(update).build())
            .transact_items(TransactWriteItem::builder().condition_check(check).build())
            .send()
            .await;
        match result {
            Ok(_) => Ok(GoLive::Live),
            Err(e) => {
                use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
                let Some(TransactWriteItemsError::TransactionCanceledException(c)) = e.as_service_error() else {
                    return Err(StoreError::dynamo(e));
                };
                let failed = |i: usize| c.cancellation_reasons().get(i).and_then(|r| r.code()) == Some("ConditionalCheckFailed");
                let conflict = c.cancellation_reasons().iter().any(|r| r.code() == Some("TransactionConflict"));
                if failed(0) {
                    Ok(GoLive::Superseded)
                } else if failed(1) {
                    Ok(GoLive::Behind)
                } else if conflict {
                    // A write of `cursor + 1` (or of the subscription) was in
                    // flight: nothing changed; replay what landed and retry.
                    Ok(GoLive::Behind)
                } else {
                    Err(StoreError::dynamo(e))
                }
            }
        }
    }

    /// The subscriptions of `thread` (read consistently when `consistent`).
    pub async fn subscriptions(&self, thread: &ThreadId, consistent: bool) -> Result<Vec<Subscription>, StoreError> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", sub_pk(thread))
                .consistent_read(consistent)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            for item in page.items() {
                let (Some(conn), Some(user), Some(state)) =
                    (get_s(item, "connectionId"), get_s(item, "userId"), get_s(item, "state"))
                else {
                    continue;
                };
                let state = if state == "live" { SubState::Live } else { SubState::Replaying };
                let cursor = match item.get("cursor") {
                    Some(AttributeValue::N(c)) => c.parse().unwrap_or(0),
                    _ => 0,
                };
                out.push(Subscription {
                    thread: thread.clone(),
                    connection: ConnectionId(conn.to_owned()),
                    user: UserId(user.to_owned()),
                    state,
                    cursor,
                });
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(out);
            }
        }
    }

    /// The live subscribers of `thread`.
    pub async fn live_subscribers(&self, thread: &ThreadId, consistent: bool) -> Result<Vec<ConnectionId>, StoreError> {
        Ok(self
            .subscriptions(thread, consistent)
            .await?
            .into_iter()
            .filter(|s| s.state == SubState::Live)
            .map(|s| s.connection)
            .collect())
    }

    pub async fn unsubscribe(&self, thread: &ThreadId, conn: &ConnectionId) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", sub_pk(thread))
            .key("sk", sub_sk(conn))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    /// Threads a connection subscribes to (through gsi1, eventually
    /// consistent: a subscription missed here expires by TTL or is removed on
    /// the first post that answers 410).
    pub async fn subscriptions_of(&self, conn: &ConnectionId) -> Result<Vec<ThreadId>, StoreError> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name("gsi1")
                .key_condition_expression("gsi1pk = :c")
                .expression_attribute_values(":c", conn_pk(conn))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            out.extend(page.items().iter().filter_map(|i| get_s(i, "threadId")).map(|t| ThreadId(t.to_owned())));
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(out);
            }
        }
    }

    /// `$disconnect`: forgets the connection and all its subscriptions.
    pub async fn close_with_subscriptions(&self, conn: &ConnectionId) -> Result<(), StoreError> {
        for thread in self.subscriptions_of(conn).await? {
            self.unsubscribe(&thread, conn).await?;
        }
        self.close(conn).await
    }
}
