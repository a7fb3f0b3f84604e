//! API keys: stored as SHA-256 hashes with their owner, never in clear.
//!
//! A lookup hashes the presented key and reads the item by its hash; the
//! stored hash is then compared in constant time, so neither the lookup nor
//! the comparison leaks how much of a guessed key was right.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use protocol::UserId;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

#[derive(Clone, Debug)]
pub struct ApiKeys {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

/// Hex SHA-256 of a key: the only form a key is stored in.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A fresh random key: `ia_` + 32 random bytes in hex.
pub fn generate_key() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("ia_{}", hex::encode(bytes))
}

impl ApiKeys {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        ApiKeys { client, table: table.into() }
    }

    /// Stores `key` for `user` (idempotent for the same pair).
    pub async fn put(&self, user: &UserId, key: &str, label: &str) -> Result<(), StoreError> {
        let now = crate::data::db::now_secs();
        self.client
            .put_item()
            .table_name(&self.table)
            .item("keyHash", AttributeValue::S(hash_key(key)))
            .item("userId", AttributeValue::S(user.0.clone()))
            .item("label", AttributeValue::S(label.to_owned()))
            .item("createdAt", AttributeValue::N(now.to_string()))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    /// Creates a new random key for `user` and returns it: the only time it
    /// exists in clear.
    pub async fn create(&self, user: &UserId, label: &str) -> Result<String, StoreError> {
        let key = generate_key();
        self.put(user, &key, label).await?;
        Ok(key)
    }

    /// The owner of `key`, or `None` for an unknown key.
    pub async fn lookup(&self, key: &str) -> Result<Option<UserId>, StoreError> {
        let hash = hash_key(key);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("keyHash", AttributeValue::S(hash.clone()))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let Some(item) = out.item else { return Ok(None) };
        let stored = match item.get("keyHash") {
            Some(AttributeValue::S(s)) => s,
            _ => return Err(StoreError::Corrupt("api key item without keyHash".into())),
        };
        if !bool::from(stored.as_bytes().ct_eq(hash.as_bytes())) {
            return Ok(None);
        }
        match item.get("userId") {
            Some(AttributeValue::S(user)) => Ok(Some(UserId(user.clone()))),
            _ => Err(StoreError::Corrupt("api key item without userId".into())),
        }
    }

    /// Removes a key (revocation).
    pub async fn revoke(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("keyHash", AttributeValue::S(hash_key(key)))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(hash_key("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn generated_keys_are_distinct_and_long() {
        let (a, b) = (generate_key(), generate_key());
        assert_ne!(a, b);
        assert_eq!(a.len(), 3 + 64);
    }
}
