//! Envelope encryption for credential secrets.
//!
//! Each credential gets its own 256-bit data key; the secret is encrypted
//! with it (AES-256-GCM, the credential id as associated data, so a
//! ciphertext moved to another credential fails to decrypt). The data key
//! is stored only wrapped: by KMS in AWS (`GenerateDataKey` / `Decrypt`,
//! with the credential id as encryption context), or in development by the
//! configured local key (`INSTANCE_AI_LOCAL_DATA_KEY`), also AES-256-GCM.

use crate::config::{Config, ConfigError};
use crate::error::StoreError;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use rand::RngCore;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A fresh data key: the plaintext (used once, then dropped) and its
/// wrapped form (stored).
pub struct DataKey {
    pub plaintext: [u8; 32],
    pub wrapped: Vec<u8>,
}

impl fmt::Debug for DataKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DataKey").field("plaintext", &"<redacted>").field("wrapped_len", &self.wrapped.len()).finish()
    }
}

/// Makes and unwraps data keys. `context` binds a wrapped key to one
/// credential.
pub trait KeyProvider: Send + Sync + fmt::Debug {
    /// Names the provider in stored records (`local`, `kms:<key id>`), so a
    /// record says which provider can unwrap it.
    fn name(&self) -> String;
    fn generate<'a>(&'a self, context: &'a str) -> BoxFuture<'a, Result<DataKey, StoreError>>;
    fn unwrap<'a>(&'a self, wrapped: &'a [u8], context: &'a str) -> BoxFuture<'a, Result<[u8; 32], StoreError>>;
}

/// AES-256-GCM: `nonce (12 bytes) || ciphertext+tag`.
pub fn seal(key: &[u8; 32], plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, StoreError> {
    let cipher = Aes256Gcm::new_from_slice(key).map_err(|_| StoreError::Invalid("bad key length".into()))?;
    let mut nonce = [0u8; 12];
    rand::rng().fill_bytes(&mut nonce);
    let ct = cipher
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: plaintext, aad })
        .map_err(|_| StoreError::Invalid("encryption failed".into()))?;
    let mut out = nonce.to_vec();
    out.extend(ct);
    Ok(out)
}

pub fn open(key: &[u8; 32], sealed: &[u8], aad: &[u8]) -> Result<Vec<u8>, StoreError> {
    if sealed.len() < 12 + 16 {
        return Err(StoreError::Corrupt("ciphertext too short".into()));
    }
    let cipher = Aes256Gcm::new_from_slice(key).map_err(|_| StoreError::Invalid("bad key length".into()))?;
    let (nonce, ct) = sealed.split_at(12);
    cipher
        .decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad })
        .map_err(|_| StoreError::Corrupt("ciphertext does not authenticate (wrong key or tampered)".into()))
}

/// Development: data keys wrapped by the configured local key.
pub struct LocalKeyProvider {
    key: [u8; 32],
}

impl LocalKeyProvider {
    pub fn new(key: [u8; 32]) -> Self {
        LocalKeyProvider { key }
    }
}

impl fmt::Debug for LocalKeyProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalKeyProvider(<redacted>)")
    }
}

impl KeyProvider for LocalKeyProvider {
    fn name(&self) -> String {
        "local".into()
    }

    fn generate<'a>(&'a self, context: &'a str) -> BoxFuture<'a, Result<DataKey, StoreError>> {
        Box::pin(async move {
            let mut plaintext = [0u8; 32];
            rand::rng().fill_bytes(&mut plaintext);
            let wrapped = seal(&self.key, &plaintext, context.as_bytes())?;
            Ok(DataKey { plaintext, wrapped })
        })
    }

    fn unwrap<'a>(&'a self, wrapped: &'a [u8], context: &'a str) -> BoxFuture<'a, Result<[u8; 32], StoreError>> {
        Box::pin(async move {
            open(&self.key, wrapped, context.as_bytes())?
                .try_into()
                .map_err(|_| StoreError::Corrupt("unwrapped data key is not 32 bytes".into()))
        })
    }
}

/// AWS: data keys from KMS under one customer key.
#[derive(Debug, Clone)]
pub struct KmsKeyProvider {
    client: aws_sdk_kms::Client,
    key_id: String,
}

fn kms_err<E: std::error::Error>(e: E) -> StoreError {
    let mut message = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        message.push_str(": ");
        message.push_str(&s.to_string());
        src = s.source();
    }
    StoreError::Aws { service: "kms", message }
}

impl KmsKeyProvider {
    pub fn new(client: aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        KmsKeyProvider { client, key_id: key_id.into() }
    }

    /// Builds the KMS client from the process configuration (once, at init).
    pub fn from_config(config: &Config, key_id: impl Into<String>) -> Self {
        KmsKeyProvider::new(aws_sdk_kms::Client::new(&crate::aws::sdk_config(config)), key_id)
    }
}

impl KeyProvider for KmsKeyProvider {
    fn name(&self) -> String {
        format!("kms:{}", self.key_id)
    }

    fn generate<'a>(&'a self, context: &'a str) -> BoxFuture<'a, Result<DataKey, StoreError>> {
        Box::pin(async move {
            let out = self
                .client
                .generate_data_key()
                .key_id(&self.key_id)
                .key_spec(aws_sdk_kms::types::DataKeySpec::Aes256)
                .encryption_context("credentialId", context)
                .send()
                .await
                .map_err(kms_err)?;
            let plaintext: [u8; 32] = out
                .plaintext()
                .map(|b| b.as_ref().to_vec())
                .unwrap_or_default()
                .try_into()
                .map_err(|_| StoreError::Corrupt("KMS returned a data key that is not 32 bytes".into()))?;
            let wrapped = out
                .ciphertext_blob()
                .map(|b| b.as_ref().to_vec())
                .ok_or_else(|| StoreError::Corrupt("KMS returned no wrapped key".into()))?;
            Ok(DataKey { plaintext, wrapped })
        })
    }

    fn unwrap<'a>(&'a self, wrapped: &'a [u8], context: &'a str) -> BoxFuture<'a, Result<[u8; 32], StoreError>> {
        Box::pin(async move {
            let out = self
                .client
                .decrypt()
                .key_id(&self.key_id)
                .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(wrapped.to_vec()))
                .encryption_context("credentialId", context)
                .send()
                .await
                .map_err(kms_err)?;
            out.plaintext()
                .map(|b| b.as_ref().to_vec())
                .unwrap_or_default()
                .try_into()
                .map_err(|_| StoreError::Corrupt("KMS returned a data key that is not 32 bytes".into()))
        })
    }
}

/// The provider this process is configured for: KMS when
/// `INSTANCE_AI_KMS_KEY_ID` is set, else the local key.
pub fn key_provider(config: &Config) -> Result<Arc<dyn KeyProvider>, StoreError> {
    if let Some(key_id) = &config.kms_key_id {
        return Ok(Arc::new(KmsKeyProvider::from_config(config, key_id.clone())));
    }
    match config.local_data_key {
        Some(k) => Ok(Arc::new(LocalKeyProvider::new(k))),
        None => Err(StoreError::Config(ConfigError::Missing {
            name: "INSTANCE_AI_KMS_KEY_ID",
            purpose: "KMS key for credential encryption (or INSTANCE_AI_LOCAL_DATA_KEY in development)",
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_binds_associated_data() {
        let key = [7u8; 32];
        let sealed = seal(&key, b"secret", b"cred-1").unwrap();
        assert_eq!(open(&key, &sealed, b"cred-1").unwrap(), b"secret");
        assert!(open(&key, &sealed, b"cred-2").is_err());
        assert!(open(&[8u8; 32], &sealed, b"cred-1").is_err());
    }
}
