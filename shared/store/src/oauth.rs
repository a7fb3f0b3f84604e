//! The OAuth 2.1 authorization server's records: registered clients,
//! authorization codes, grants and the tokens issued under them. Codes and
//! tokens are stored only as SHA-256 hashes (as API keys are); a lookup
//! hashes what was presented and compares in constant time.
//!
//! Layout (table `OAuth`, `pk`/`sk`, TTL `expiresAt`; every expiry is also
//! checked on read, since DynamoDB deletes expired items late):
//!
//! | item          | pk                 | sk       | holds                                          |
//! |---------------|--------------------|----------|------------------------------------------------|
//! | client        | `client#<id>`      | `client` | registration metadata, hash of its secret      |
//! | code          | `code#<hash>`      | `code`   | client, user, redirect URI, PKCE challenge, resource, scope, grant id; `usedAt` once redeemed |
//! | grant         | `grant#<id>`       | `grant`  | user, client, scope, resource; `revokedAt`     |
//! | access token  | `at#<hash>`        | `token`  | grant, user, client, scope, resource, expiry   |
//! | refresh token | `rt#<hash>`        | `token`  | the same, `rotatedAt` once exchanged           |
//!
//! A grant is one consent: every token issued from its code or its refresh
//! chain names it, and revoking it (revocation, a replayed code or refresh
//! token) invalidates them all at once. Tokens carry their grant id in clear
//! (`iaat_<grant>_<secret>`), so validating an access token is one
//! consistent `TransactGetItems` of the token and its grant.
//!
//! Races are decided by conditional writes: a code is redeemed by one
//! `usedAt` write (`attribute_not_exists`), a refresh token rotated by one
//! `rotatedAt` write in the transaction that issues its successors; whoever
//! loses learns it was a replay and revokes the grant.

use crate::data::db::{from_item, get_s, is_condition_failed, key, n, to_item, Item};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::{Get, Put, TransactGetItem, TransactWriteItem, Update};
use base64::Engine;
use protocol::UserId;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const ACCESS_PREFIX: &str = "iaat_";
const REFRESH_PREFIX: &str = "iart_";
const CODE_PREFIX: &str = "iac_";
const CLIENT_SECRET_PREFIX: &str = "iacs_";

/// How long an authorization code can be redeemed (the issue: within a minute).
pub const CODE_TTL_SECS: u64 = 60;

#[derive(Clone, Debug)]
pub struct OAuthStore {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

/// A registered client (RFC 7591), as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientRecord {
    pub client_id: String,
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub grant_types: Vec<String>,
    /// `none` (public client, PKCE only), `client_secret_basic` or `client_secret_post`.
    pub token_endpoint_auth_method: String,
    /// Hex SHA-256 of the client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hash: Option<String>,
    pub created_at: u64,
}

impl ClientRecord {
    /// Whether `secret` is this client's secret (constant time).
    pub fn secret_matches(&self, secret: &str) -> bool {
        match &self.secret_hash {
            Some(stored) => bool::from(stored.as_bytes().ct_eq(hash(secret).as_bytes())),
            None => false,
        }
    }
}

/// What a person approved on the consent page, carried by the code.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeRecord {
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    /// PKCE S256 challenge (base64url of SHA-256 of the verifier).
    pub code_challenge: String,
    /// The resource (RFC 8707) the tokens will be bound to.
    pub resource: String,
    /// Space-separated scopes granted.
    pub scope: String,
    pub grant_id: String,
    pub expires_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<u64>,
}

/// What an access or refresh token stands for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRecord {
    pub grant_id: String,
    pub user_id: String,
    pub client_id: String,
    pub scope: String,
    pub resource: String,
    pub expires_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<u64>,
}

impl TokenRecord {
    pub fn user(&self) -> UserId {
        UserId(self.user_id.clone())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GrantRecord {
    user_id: String,
    client_id: String,
    scope: String,
    resource: String,
    created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revoked_at: Option<u64>,
}

/// A freshly issued token pair: the only time the tokens exist in clear.
#[derive(Clone, Debug)]
pub struct IssuedTokens {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
    pub scope: String,
}

/// Lifetimes of what the server issues.
#[derive(Clone, Copy, Debug)]
pub struct Lifetimes {
    pub access_secs: u64,
    pub refresh_secs: u64,
}

/// Why a code or refresh token could not be exchanged. Replays have
/// already revoked their grant when this is returned.
#[derive(Debug, PartialEq, Eq)]
pub enum ExchangeRefusal {
    /// Unknown, expired, or of a revoked grant.
    Invalid,
    /// Redeemed or rotated before: the grant is now revoked.
    Replayed,
    /// A refresh asked for scopes beyond its grant.
    ScopeBeyondGrant,
}

#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    #[error("refused: {0:?}")]
    Refused(ExchangeRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Which kind of token a string is, by its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Refresh,
}

impl TokenKind {
    pub fn of(token: &str) -> Option<TokenKind> {
        if token.starts_with(ACCESS_PREFIX) {
            Some(TokenKind::Access)
        } else if token.starts_with(REFRESH_PREFIX) {
            Some(TokenKind::Refresh)
        } else {
            None
        }
    }
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

fn random_part() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The grant id a token names (`iaat_<grant>_<secret>`), if well-formed.
fn grant_of(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(ACCESS_PREFIX).or_else(|| token.strip_prefix(REFRESH_PREFIX))?;
    let (grant, secret) = rest.split_once('_')?;
    (grant.len() == 32 && grant.bytes().all(|b| b.is_ascii_hexdigit()) && !secret.is_empty()).then_some(grant)
}

fn token_key(kind: TokenKind, token: &str) -> Item {
    let prefix = match kind {
        TokenKind::Access => "at",
        TokenKind::Refresh => "rt",
    };
    key(format!("{prefix}#{}", hash(token)), "token")
}

fn grant_key(grant_id: &str) -> Item {
    key(format!("grant#{grant_id}"), "grant")
}

fn now() -> u64 {
    crate::data::db::now_secs()
}

/// Verifies a PKCE S256 `code_verifier` against its challenge (RFC 7636
/// §4.6), in constant time. The verifier's form (43-128 unreserved
/// characters) is checked too.
pub fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    well_formed && bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

impl OAuthStore {
    pub fn new(client: aws_sdk_dynamodb::Client, table: impl Into<String>) -> Self {
        OAuthStore { client, table: table.into() }
    }

    /// Registers a client. With `confidential`, a secret is generated and
    /// returned (its only time in clear); the record keeps its hash.
    pub async fn register_client(&self, mut record: ClientRecord, confidential: bool) -> Result<(ClientRecord, Option<String>), StoreError> {
        record.client_id = format!("mcpc_{}", new_id());
        record.created_at = now();
        let secret = confidential.then(|| format!("{CLIENT_SECRET_PREFIX}{}", random_part()));
        record.secret_hash = secret.as_deref().map(hash);
        let mut item = to_item(&record)?;
        item.extend(key(format!("client#{}", record.client_id), "client"));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok((record, secret))
    }

    pub async fn client(&self, client_id: &str) -> Result<Option<ClientRecord>, StoreError> {
        if client_id.is_empty() || client_id.len() > 100 {
            return Ok(None);
        }
        let item = self.get(key(format!("client#{client_id}"), "client")).await?;
        item.map(from_item).transpose()
    }

    /// Issues a single-use code for an approved authorization (expires in
    /// [`CODE_TTL_SECS`]).
    pub async fn issue_code(
        &self,
        client_id: &str,
        user: &UserId,
        redirect_uri: &str,
        code_challenge: &str,
        resource: &str,
        scope: &str,
    ) -> Result<String, StoreError> {
        let code = format!("{CODE_PREFIX}{}", random_part());
        let expires_at = now() + CODE_TTL_SECS;
        let record = CodeRecord {
            client_id: client_id.to_owned(),
            user_id: user.0.clone(),
            redirect_uri: redirect_uri.to_owned(),
            code_challenge: code_challenge.to_owned(),
            resource: resource.to_owned(),
            scope: scope.to_owned(),
            grant_id: new_id(),
            expires_at,
            used_at: None,
        };
        let mut item = to_item(&record)?;
        item.extend(key(format!("code#{}", hash(&code)), "code"));
        self.client.put_item().table_name(&self.table).set_item(Some(item)).send().await.map_err(StoreError::dynamo)?;
        Ok(code)
    }

    /// Redeems a code: exactly one caller gets its record. A second
    /// redemption is a replay (RFC 6749 §4.1.2: revoke what it issued), an
    /// unknown or expired code is invalid. The caller then checks client,
    /// redirect URI and PKCE against the record; the code is spent either way.
    pub async fn redeem_code(&self, code: &str) -> Result<CodeRecord, ExchangeError> {
        let k = key(format!("code#{}", hash(code)), "code");
        let t = now();
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(k.clone()))
            .update_expression("SET usedAt = :now")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(usedAt) AND expiresAt > :now")
            .expression_attribute_values(":now", n(t))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await;
        match res {
            Ok(out) => Ok(from_item(out.attributes.unwrap_or_default())?),
            Err(e) if is_condition_failed(&e) => {
                let Some(item) = self.get(k).await? else { return Err(ExchangeError::Refused(ExchangeRefusal::Invalid)) };
                let record: CodeRecord = from_item(item)?;
                if record.used_at.is_some() {
                    tracing::warn!(client = %record.client_id, "authorization code replayed; revoking its grant");
                    self.revoke_grant(&record.grant_id).await?;
                    return Err(ExchangeError::Refused(ExchangeRefusal::Replayed));
                }
                Err(ExchangeError::Refused(ExchangeRefusal::Invalid))
            }
            Err(e) => Err(StoreError::dynamo(e).into()),
        }
    }

    /// Opens the grant a redeemed code stands for and issues its first
    /// token pair, all or nothing.
    pub async fn open_grant(&self, code: &CodeRecord, life: Lifetimes) -> Result<IssuedTokens, StoreError> {
        let grant = GrantRecord {
            user_id: code.user_id.clone(),
            client_id: code.client_id.clone(),
            scope: code.scope.clone(),
            resource: code.resource.clone(),
            created_at: now(),
            revoked_at: None,
        };
        let mut grant_item = to_item(&grant)?;
        grant_item.extend(grant_key(&code.grant_id));
        grant_item.insert("expiresAt".into(), n(now() + life.refresh_secs));
        let put_grant = Put::builder()
            .table_name(&self.table)
            .set_item(Some(grant_item))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(StoreError::dynamo)?;
        let base = TokenRecord {
            grant_id: code.grant_id.clone(),
            user_id: code.user_id.clone(),
            client_id: code.client_id.clone(),
            scope: code.scope.clone(),
            resource: code.resource.clone(),
            expires_at: 0,
            rotated_at: None,
        };
        let (issued, puts) = self.token_pair(&base, life)?;
        let mut items = vec![TransactWriteItem::builder().put(put_grant).build()];
        items.extend(puts);
        self.client.transact_write_items().set_transact_items(Some(items)).send().await.map_err(StoreError::dynamo)?;
        Ok(issued)
    }

    /// Exchanges a refresh token of `client_id` for a new pair (rotation).
    /// The old one is spent by the same transaction that writes its
    /// successors; presenting it again revokes the grant. `scope` maps the
    /// granted scope to the new pair's (`None`: refused, beyond the grant).
    pub async fn refresh(
        &self,
        refresh_token: &str,
        client_id: &str,
        life: Lifetimes,
        scope: impl FnOnce(&str) -> Option<String>,
    ) -> Result<(TokenRecord, IssuedTokens), ExchangeError> {
        let invalid = || ExchangeError::Refused(ExchangeRefusal::Invalid);
        if TokenKind::of(refresh_token) != Some(TokenKind::Refresh) {
            return Err(invalid());
        }
        let grant_id = grant_of(refresh_token).ok_or_else(invalid)?.to_owned();
        let (token, grant) = self.token_and_grant(TokenKind::Refresh, refresh_token, &grant_id).await?;
        let (Some(token), Some(grant)) = (token, grant) else { return Err(invalid()) };
        if token.client_id != client_id || grant.revoked_at.is_some() || token.grant_id != grant_id {
            return Err(invalid());
        }
        if token.rotated_at.is_some() {
            tracing::warn!(client = %client_id, "refresh token replayed; revoking its grant");
            self.revoke_grant(&grant_id).await?;
            return Err(ExchangeError::Refused(ExchangeRefusal::Replayed));
        }
        let t = now();
        if token.expires_at <= t {
            return Err(invalid());
        }
        let spend = Update::builder()
            .table_name(&self.table)
            .set_key(Some(token_key(TokenKind::Refresh, refresh_token)))
            .update_expression("SET rotatedAt = :now")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(rotatedAt)")
            .expression_attribute_values(":now", n(t))
            .build()
            .map_err(StoreError::dynamo)?;
        let live = Update::builder()
            .table_name(&self.table)
            .set_key(Some(grant_key(&grant_id)))
            .update_expression("SET expiresAt = :exp")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(revokedAt)")
            .expression_attribute_values(":exp", n(t + life.refresh_secs))
            .build()
            .map_err(StoreError::dynamo)?;
        let scope = scope(&token.scope).ok_or(ExchangeError::Refused(ExchangeRefusal::ScopeBeyondGrant))?;
        let (issued, puts) = self.token_pair(&TokenRecord { scope, ..token.clone() }, life)?;
        let mut items = vec![
            TransactWriteItem::builder().update(spend).build(),
            TransactWriteItem::builder().update(live).build(),
        ];
        items.extend(puts);
        match self.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok((token, issued)),
            Err(e) => {
                let reasons = crate::data::db::cancel_reasons(&e);
                match reasons {
                    // The first action (the spend) lost: a concurrent refresh won.
                    Some(r) if r.first().map(String::as_str) == Some("ConditionalCheckFailed") => {
                        tracing::warn!(client = %client_id, "refresh token replayed concurrently; revoking its grant");
                        self.revoke_grant(&grant_id).await?;
                        Err(ExchangeError::Refused(ExchangeRefusal::Replayed))
                    }
                    Some(r) if r.iter().any(|c| c == "ConditionalCheckFailed") => Err(invalid()),
                    _ => Err(StoreError::dynamo(e).into()),
                }
            }
        }
    }

    /// What a live access token stands for: `None` when unknown, expired,
    /// or its grant is revoked. One consistent read of token and grant.
    pub async fn access_token(&self, token: &str) -> Result<Option<TokenRecord>, StoreError> {
        if TokenKind::of(token) != Some(TokenKind::Access) || token.len() > 200 {
            return Ok(None);
        }
        let Some(grant_id) = grant_of(token) else { return Ok(None) };
        let (record, grant) = self.token_and_grant(TokenKind::Access, token, grant_id).await?;
        let (Some(record), Some(grant)) = (record, grant) else { return Ok(None) };
        let live = record.grant_id == grant_id && grant.revoked_at.is_none() && record.expires_at > now();
        Ok(live.then_some(record))
    }

    /// RFC 7009 revocation by `client_id`: a refresh token revokes its whole
    /// grant (every token issued under it), an access token only itself.
    /// A token that is unknown or another client's is ignored (the endpoint
    /// answers 200 either way).
    pub async fn revoke(&self, token: &str, client_id: &str) -> Result<(), StoreError> {
        let Some(kind) = TokenKind::of(token) else { return Ok(()) };
        let Some(grant_id) = grant_of(token) else { return Ok(()) };
        let Some(item) = self.get(token_key(kind, token)).await? else { return Ok(()) };
        let record: TokenRecord = from_item(item)?;
        if record.client_id != client_id || record.grant_id != grant_id {
            return Ok(());
        }
        match kind {
            TokenKind::Refresh => self.revoke_grant(grant_id).await,
            TokenKind::Access => {
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(token_key(kind, token)))
                    .send()
                    .await
                    .map_err(StoreError::dynamo)?;
                Ok(())
            }
        }
    }

    /// Marks a grant revoked: every token naming it stops working.
    pub async fn revoke_grant(&self, grant_id: &str) -> Result<(), StoreError> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(grant_key(grant_id)))
            .update_expression("SET revokedAt = if_not_exists(revokedAt, :now)")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":now", n(now()))
            .send()
            .await;
        match res {
            // A code replayed before its grant was opened: nothing to revoke yet.
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(StoreError::dynamo(e)),
            Ok(_) => Ok(()),
        }
    }

    /// Stores an access token for an existing grant with any resource:
    /// for tests that need a token bound to another audience.
    #[doc(hidden)]
    pub async fn mint_access_token_for_tests(&self, base: &TokenRecord, life: Lifetimes) -> Result<String, StoreError> {
        let (issued, puts) = self.token_pair(base, life)?;
        self.client.transact_write_items().set_transact_items(Some(puts)).send().await.map_err(StoreError::dynamo)?;
        Ok(issued.access_token)
    }

    fn token_pair(&self, base: &TokenRecord, life: Lifetimes) -> Result<(IssuedTokens, Vec<TransactWriteItem>), StoreError> {
        let t = now();
        let access_token = format!("{ACCESS_PREFIX}{}_{}", base.grant_id, random_part());
        let refresh_token = format!("{REFRESH_PREFIX}{}_{}", base.grant_id, random_part());
        let mut puts = Vec::new();
        for (kind, token, secs) in
            [(TokenKind::Access, &access_token, life.access_secs), (TokenKind::Refresh, &refresh_token, life.refresh_secs)]
        {
            let record = TokenRecord { expires_at: t + secs, rotated_at: None, ..base.clone() };
            let mut item = to_item(&record)?;
            item.extend(token_key(kind, token));
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .map_err(StoreError::dynamo)?;
            puts.push(TransactWriteItem::builder().put(put).build());
        }
        let issued = IssuedTokens { access_token, refresh_token, expires_in: life.access_secs, scope: base.scope.clone() };
        Ok((issued, puts))
    }

    async fn token_and_grant(&self, kind: TokenKind, token: &str, grant_id: &str) -> Result<(Option<TokenRecord>, Option<GrantRecord>), StoreError> {
        let get = |k: Item| Get::builder().table_name(&self.table).set_key(Some(k)).build().map_err(StoreError::dynamo);
        let out = self
            .client
            .transact_get_items()
            .transact_items(TransactGetItem::builder().get(get(token_key(kind, token))?).build())
            .transact_items(TransactGetItem::builder().get(get(grant_key(grant_id))?).build())
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let mut responses = out.responses.unwrap_or_default().into_iter().map(|r| r.item.filter(|i| !i.is_empty()));
        let token_item = responses.next().flatten();
        let grant_item = responses.next().flatten();
        // The hash is the key; compare it anyway in constant time, as API keys do.
        let token_item = token_item.filter(|i| {
            let expected = token_key(kind, token);
            let want = get_s(&expected, "pk").unwrap_or_default();
            bool::from(get_s(i, "pk").unwrap_or_default().as_bytes().ct_eq(want.as_bytes()))
        });
        Ok((token_item.map(from_item).transpose()?, grant_item.map(from_item).transpose()?))
    }

    async fn get(&self, k: Item) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(k))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(out.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_matches_the_rfc_example() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!pkce_matches(verifier, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"));
        assert!(!pkce_matches("short", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        let bad_chars = format!("{verifier}!");
        assert!(!pkce_matches(&bad_chars, "x"));
    }

    #[test]
    fn tokens_name_their_grant_and_kind() {
        let g = new_id();
        let at = format!("{ACCESS_PREFIX}{g}_{}", random_part());
        assert_eq!(grant_of(&at), Some(g.as_str()));
        assert_eq!(TokenKind::of(&at), Some(TokenKind::Access));
        assert_eq!(TokenKind::of(&format!("{REFRESH_PREFIX}{g}_x")), Some(TokenKind::Refresh));
        assert_eq!(TokenKind::of("alice-api-key"), None);
        assert_eq!(grant_of("iaat_nothex_abc"), None);
        assert_eq!(grant_of(&format!("{ACCESS_PREFIX}{g}_")), None);
    }
}
