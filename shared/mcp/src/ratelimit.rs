//! Per-user rate limits on the tools that cost the most (running workflows,
//! creating them): a counter item per user, tool and fixed window, bumped
//! with one conditional `ADD`, expiring by TTL after its window.

use crate::error::McpError;
use aws_sdk_dynamodb::types::AttributeValue;
use std::time::{SystemTime, UNIX_EPOCH};

/// (tool, calls allowed per window, window in seconds).
pub const LIMITS: &[(&str, u32, u64)] =
    &[("execute_workflow", 30, 60), ("test_workflow", 30, 60), ("create_workflow_from_code", 20, 60)];

#[derive(Clone, Debug)]
pub struct RateLimiter {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

impl RateLimiter {
    pub fn new(client: aws_sdk_dynamodb::Client, table: String) -> Self {
        RateLimiter { client, table }
    }

    /// Counts one call of `tool` by `user`, or refuses it when the window is
    /// full (the refused call is not counted).
    pub async fn check(&self, user: &str, tool: &str) -> Result<(), McpError> {
        let Some(&(_, max, window)) = LIMITS.iter().find(|(t, _, _)| *t == tool) else { return Ok(()) };
        self.check_with(user, tool, max, window).await
    }

    pub async fn check_with(&self, user: &str, tool: &str, max: u32, window: u64) -> Result<(), McpError> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let start = now - now % window;
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("ratelimit#{user}#{tool}")))
            .key("sk", AttributeValue::S(format!("w#{start}")))
            .update_expression("ADD calls :one SET expiresAt = :exp")
            .condition_expression("attribute_not_exists(calls) OR calls < :max")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":max", AttributeValue::N(max.to_string()))
            .expression_attribute_values(":exp", AttributeValue::N((start + window * 2).to_string()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if store::data::db::is_condition_failed(&e) => Err(McpError::RateLimited(format!(
                "{tool} allows {max} calls per {window} s per user; try again in {} s",
                (start + window).saturating_sub(now).max(1)
            ))),
            Err(e) => Err(McpError::Internal(store::StoreError::dynamo(e).to_string())),
        }
    }
}
