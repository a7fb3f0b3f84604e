//! A credential's OAuth2 connection: the pending connects (`state`,
//! single-use, bound to the user who started it and the credential,
//! expiring) and the tokens the provider issued, encrypted like the
//! credential's secret (their own data key, wrapped for the credential) and
//! bound to the user who connected and the credential (both in the
//! ciphertext's associated data).
//!
//! Items (partition `cred#<id>`, deleted with the credential):
//! - `sk=connect#<sha256(secret)>`: a pending connect — `userId`,
//!   `redirectUri`, the sealed PKCE verifier, `expiresAt` (Unix seconds).
//!   The `state` handed to the provider is `<credential id>.<secret>`.
//! - `sk=oauth`: the sealed token data, `connectedBy`, `connectedAt`,
//!   `tokenExpiresAt`, `scope`, `tokenHash` (SHA-256 of the access token:
//!   a refresh writes only over the token it replaced) and `codeHash`
//!   (SHA-256 of the authorization code the connection was made with: a
//!   redelivered exchange of that code finds it done).

use super::{pk, Credentials, SecretData};
use crate::data::db::{self, b, get_b, get_s, is_condition_failed, key, n, s, tx_put, Item};
use crate::data::keys::{open, seal};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine as _;
use protocol::UserId;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a connect may take, from the start route to the callback.
pub const CONNECT_SECS: u64 = 600;

/// A connection as anyone with access may see it: no token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthConnection {
    pub connected_by: String,
    pub connected_at: String,
    /// When the current access token expires (Unix seconds), if the provider said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_expires_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// A redeemed connect: what the callback needs to finish it.
pub struct ConnectState {
    pub credential_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub code_verifier: SecretData,
}

impl std::fmt::Debug for ConnectState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectState").field("credential_id", &self.credential_id).field("user_id", &self.user_id).finish_non_exhaustive()
    }
}

fn hash(v: &str) -> String {
    hex::encode(Sha256::digest(v.as_bytes()))
}

fn tokens_aad(id: &str, user: &str) -> Vec<u8> {
    format!("{id}#oauth#{user}").into_bytes()
}

fn state_aad(id: &str, user: &str, secret_hash: &str) -> Vec<u8> {
    format!("{id}#connect#{user}#{secret_hash}").into_bytes()
}

fn get_n(item: &Item, name: &str) -> Option<u64> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().ok(),
        _ => None,
    }
}

impl Credentials {
    async fn sealed(&self, id: &str, plain: &[u8], aad: &[u8]) -> Result<Item, StoreError> {
        let dk = self.keys.generate(id).await?;
        let mut item = Item::new();
        item.insert("ciphertext".into(), b(seal(&dk.plaintext, plain, aad)?));
        item.insert("wrappedKey".into(), b(dk.wrapped));
        item.insert("keyProvider".into(), s(self.keys.name()));
        Ok(item)
    }

    async fn unseal(&self, id: &str, item: &Item, aad: &[u8]) -> Result<Vec<u8>, StoreError> {
        if get_s(item, "keyProvider").unwrap_or_default() != self.keys.name() {
            return Err(StoreError::Invalid(format!("credential {id}'s connection was encrypted by another key provider")));
        }
        let wrapped = get_b(item, "wrappedKey").ok_or_else(|| StoreError::Corrupt(format!("credential {id}: no wrapped key")))?;
        let ciphertext = get_b(item, "ciphertext").ok_or_else(|| StoreError::Corrupt(format!("credential {id}: no ciphertext")))?;
        let dk = self.keys.unwrap(&wrapped, id).await?;
        open(&dk, &ciphertext, aad)
    }

    /// Starts `user`'s connect of credential `id`: stores the PKCE verifier
    /// and redirect URI under a new single-use state and returns the state.
    /// Expired connects of the credential are removed on the way.
    pub async fn begin_connect(&self, id: &str, user: &UserId, code_verifier: &str, redirect_uri: &str) -> Result<String, StoreError> {
        let now = db::now_secs();
        let stale: Vec<_> = self
            .table
            .query_prefix(&pk(id), "connect#", false)
            .await?
            .into_iter()
            .filter(|i| get_n(i, "expiresAt").is_none_or(|t| t <= now))
            .filter_map(|i| Some(key(get_s(&i, "pk")?, get_s(&i, "sk")?)))
            .map(db::delete_req)
            .collect::<Result<_, _>>()?;
        if !stale.is_empty() {
            self.table.batch_write(stale).await?;
        }
        let mut bytes = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let secret_hash = hash(&secret);
        let mut item = self.sealed(id, code_verifier.as_bytes(), &state_aad(id, &user.0, &secret_hash)).await?;
        item.extend(key(pk(id), format!("connect#{secret_hash}")));
        item.insert("userId".into(), s(&user.0));
        item.insert("redirectUri".into(), s(redirect_uri));
        item.insert("expiresAt".into(), n(now + CONNECT_SECS));
        let t = &self.table.name;
        self.table
            .transact(vec![db::tx_check(t, key(pk(id), "cred"), "attribute_exists(pk)", vec![])?, tx_put(t, item, None)?], &format!("credential {id} does not exist"))
            .await?;
        Ok(format!("{id}.{secret}"))
    }

    /// Redeems a `state`: exactly one caller gets its connect, and only
    /// before it expires; anything else (unknown, used, expired, malformed)
    /// is `None`.
    pub async fn take_connect(&self, state: &str) -> Result<Option<ConnectState>, StoreError> {
        let Some((id, secret)) = state.split_once('.') else { return Ok(None) };
        if id.is_empty() || id.len() > 64 || !id.bytes().all(|c| c.is_ascii_alphanumeric()) || secret.len() > 128 {
            return Ok(None);
        }
        let secret_hash = hash(secret);
        self.table.count();
        let res = self
            .table
            .client
            .delete_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(id), format!("connect#{secret_hash}"))))
            .condition_expression("attribute_exists(pk)")
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await;
        let item = match res {
            Ok(out) => out.attributes.unwrap_or_default(),
            Err(e) if is_condition_failed(&e) => return Ok(None),
            Err(e) => return Err(StoreError::dynamo(e)),
        };
        if get_n(&item, "expiresAt").is_none_or(|t| t <= db::now_secs()) {
            return Ok(None);
        }
        let user_id = get_s(&item, "userId").unwrap_or_default().to_owned();
        let plain = self.unseal(id, &item, &state_aad(id, &user_id, &secret_hash)).await?;
        let verifier = String::from_utf8(plain).map_err(|_| StoreError::Corrupt(format!("credential {id}: connect state")))?;
        Ok(Some(ConnectState {
            credential_id: id.to_owned(),
            user_id,
            redirect_uri: get_s(&item, "redirectUri").unwrap_or_default().to_owned(),
            code_verifier: SecretData::new(Value::String(verifier)),
        }))
    }

    fn token_meta(tokens: &Value) -> (Option<u64>, Option<String>, String) {
        let expires = tokens.get("expires_at").and_then(Value::as_u64);
        let scope = tokens.get("scope").and_then(Value::as_str).map(str::to_owned);
        (expires, scope, hash(tokens.get("access_token").and_then(Value::as_str).unwrap_or_default()))
    }

    async fn token_item(&self, id: &str, user: &str, connected_at: &str, tokens: &SecretData) -> Result<Item, StoreError> {
        let plain = serde_json::to_vec(tokens.expose()).map_err(|e| StoreError::Invalid(format!("token data: {e}")))?;
        let mut item = self.sealed(id, &plain, &tokens_aad(id, user)).await?;
        item.extend(key(pk(id), "oauth"));
        let (expires, scope, token_hash) = Self::token_meta(tokens.expose());
        item.insert("connectedBy".into(), s(user));
        item.insert("connectedAt".into(), s(connected_at));
        item.insert("tokenHash".into(), s(token_hash));
        if let Some(e) = expires {
            item.insert("tokenExpiresAt".into(), n(e));
        }
        if let Some(sc) = scope {
            item.insert("scope".into(), s(sc));
        }
        Ok(item)
    }

    /// Stores the tokens `user` connected credential `id` with, by
    /// exchanging authorization `code` (replacing any earlier connection),
    /// if the credential still exists.
    pub async fn connect(&self, id: &str, user: &UserId, code: &str, tokens: &SecretData) -> Result<(), StoreError> {
        let mut item = self.token_item(id, &user.0, &db::now_iso(), tokens).await?;
        item.insert("codeHash".into(), s(hash(code)));
        let t = &self.table.name;
        self.table
            .transact(vec![db::tx_check(t, key(pk(id), "cred"), "attribute_exists(pk)", vec![])?, tx_put(t, item, None)?], &format!("credential {id} does not exist"))
            .await
    }

    /// Stores refreshed tokens over the ones whose access token was
    /// `replaced`; `false` when another refresh (or a new connect) came first.
    pub async fn refresh_tokens(&self, id: &str, replaced: &str, tokens: &SecretData) -> Result<bool, StoreError> {
        let Some(current) = self.table.get_raw(&pk(id), "oauth").await? else { return Ok(false) };
        let user = get_s(&current, "connectedBy").unwrap_or_default().to_owned();
        let connected_at = get_s(&current, "connectedAt").unwrap_or_default().to_owned();
        let mut item = self.token_item(id, &user, &connected_at, tokens).await?;
        if let Some(code_hash) = current.get("codeHash") {
            item.insert("codeHash".into(), code_hash.clone());
        }
        self.table.count();
        let res = self
            .table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(item))
            .condition_expression("tokenHash = :old AND connectedBy = :user")
            .expression_attribute_values(":old", s(hash(replaced)))
            .expression_attribute_values(":user", s(user))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// The decrypted token data of credential `id`'s connection. Like
    /// [`Credentials::decrypt_secret`]: only where the tokens are used.
    pub async fn decrypt_tokens(&self, id: &str) -> Result<Option<SecretData>, StoreError> {
        let Some(item) = self.table.get_raw(&pk(id), "oauth").await? else { return Ok(None) };
        let user = get_s(&item, "connectedBy").unwrap_or_default().to_owned();
        let plain = self.unseal(id, &item, &tokens_aad(id, &user)).await?;
        serde_json::from_slice(&plain).map(|v| Some(SecretData::new(v))).map_err(|e| StoreError::Corrupt(format!("credential {id}: {e}")))
    }

    /// Whether credential `id` is connected by `user` with the tokens
    /// authorization `code` gave: an exchange delivered again after it
    /// stored them (a provider redeems a code once, and would refuse).
    pub async fn connected_with(&self, id: &str, user: &UserId, code: &str) -> Result<bool, StoreError> {
        let Some(item) = self.table.get_raw(&pk(id), "oauth").await? else { return Ok(false) };
        Ok(get_s(&item, "connectedBy") == Some(user.0.as_str()) && get_s(&item, "codeHash") == Some(hash(code).as_str()))
    }

    /// Credential `id`'s connection, without its tokens.
    pub async fn connection(&self, id: &str) -> Result<Option<OAuthConnection>, StoreError> {
        let Some(item) = self.table.get_raw(&pk(id), "oauth").await? else { return Ok(None) };
        Ok(Some(OAuthConnection {
            connected_by: get_s(&item, "connectedBy").unwrap_or_default().to_owned(),
            connected_at: get_s(&item, "connectedAt").unwrap_or_default().to_owned(),
            token_expires_at: get_n(&item, "tokenExpiresAt"),
            scope: get_s(&item, "scope").map(str::to_owned),
        }))
    }
}
