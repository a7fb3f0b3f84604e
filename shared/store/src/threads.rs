//! Thread ownership: `(thread#<id>, meta)` in the Agent table with the
//! owner's user id. Every thread-scoped endpoint checks it, and a stranger
//! gets the same answer as for a thread that does not exist (invariant 7).

use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use protocol::ids::ThreadId;
use protocol::UserId;

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
            .update_expression("SET userId = :u, threadId = :t, createdAt = if_not_exists(createdAt, :now)")
            .condition_expression("attribute_not_exists(pk) OR userId = :u")
            .expression_attribute_values(":u", AttributeValue::S(user.0.clone()))
            .expression_attribute_values(":t", AttributeValue::S(thread.0.clone()))
            .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
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
}
