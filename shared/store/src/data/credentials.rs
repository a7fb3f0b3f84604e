//! Credentials: metadata readable by anyone with access, secrets encrypted
//! at rest (envelope encryption, see [`super::keys`]) and readable only
//! through [`Credentials::decrypt_secret`], called by the process that
//! needs the secret (the executor running a node).
//!
//! No read path returns secret data: the types that are returned have no
//! secret field, and the encrypted secret lives in its own item
//! (`sk=secret`) that no listing, index or `get` ever reads.
//!
//! Items (Instance table, partition `cred#<id>`):
//! - `sk=cred`: metadata, `gsi1pk=creds#<home project>`
//! - `sk=share#<project>`: shared into another project, `gsi1pk=creds#<project>`
//! - `sk=global`: available to every user, `gsi1pk=creds#global`
//! - `sk=secret`: ciphertext, nonce-prefixed; the wrapped data key; the provider name
//! - `sk=oauth`, `sk=connect#…`: an OAuth2 connection and pending connects ([`oauth`])

mod oauth;

pub use oauth::{ConnectState, OAuthConnection, CONNECT_SECS};

use super::db::{self, b, get_b, get_s, key, s, to_item, tx_put, Item, Table};
use super::keys::{open, seal, KeyProvider};
use super::users_projects::{Project, ProjectRole, ProjectType, Projects};
use crate::error::StoreError;
use protocol::UserId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub const DESCRIPTION_PREVIEW: usize = 256;

/// Secret credential data. Not `Serialize`, redacted in `Debug`: it can only
/// leave through [`SecretData::expose`], deliberately.
pub struct SecretData(Value);

impl SecretData {
    pub fn new(v: Value) -> Self {
        SecretData(v)
    }

    pub fn expose(&self) -> &Value {
        &self.0
    }
}

impl fmt::Debug for SecretData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretData(<redacted>)")
    }
}

/// Credential metadata (never any secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credential {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub description: Option<String>,
    pub home_project_id: String,
    pub shared_with_project_ids: Vec<String>,
    pub is_managed: bool,
    pub is_global: bool,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HomeProject {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ProjectType,
}

/// A credential as one user sees it in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialRow {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// At most 256 characters including the `…` marker; `None` when unset.
    pub description: Option<String>,
    pub scopes: Vec<String>,
    pub is_managed: bool,
    pub is_global: bool,
    pub home_project: Option<HomeProject>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialList {
    pub data: Vec<CredentialRow>,
    /// Every match before offset/limit.
    pub total: usize,
    pub has_more: bool,
}

#[derive(Debug, Clone, Default)]
pub struct CredentialQuery {
    /// Case-insensitive substring of the name.
    pub name: Option<String>,
    /// Case-insensitive substring of the type (`slack` finds `slackApi`).
    pub kind: Option<String>,
    /// Only credentials whose home is this project.
    pub project_id: Option<String>,
    /// Only credentials shared directly with the user (excludes global
    /// credentials and the user's own).
    pub only_shared_with_me: bool,
    /// Default 50, max 200.
    pub limit: Option<usize>,
    pub offset: usize,
}

pub struct NewCredential {
    pub name: String,
    pub kind: String,
    pub description: Option<String>,
    pub project_id: String,
    pub is_managed: bool,
    pub is_global: bool,
    pub secret: SecretData,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CredItem {
    pk: String,
    sk: String,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    credential: Credential,
}

fn pk(id: &str) -> String {
    format!("cred#{id}")
}

fn preview(d: &Option<String>) -> Option<String> {
    d.as_ref().map(|d| {
        if d.chars().count() <= DESCRIPTION_PREVIEW {
            d.clone()
        } else {
            let mut p: String = d.chars().take(DESCRIPTION_PREVIEW - 1).collect();
            p.push('…');
            p
        }
    })
}

fn check(name: &str, kind: &str) -> Result<(), StoreError> {
    if name.trim().is_empty() || name.chars().count() > 128 {
        return Err(StoreError::Invalid("credential name must be 1–128 characters".into()));
    }
    if kind.trim().is_empty() || kind.len() > 128 {
        return Err(StoreError::Invalid("credential type must be 1–128 characters".into()));
    }
    Ok(())
}

#[derive(Clone, Debug)]
pub struct Credentials {
    table: Table,
    projects: Projects,
    keys: Arc<dyn KeyProvider>,
}

impl Credentials {
    pub fn new(table: Table, projects: Projects, keys: Arc<dyn KeyProvider>) -> Self {
        Credentials { table, projects, keys }
    }

    async fn secret_item(&self, id: &str, secret: &SecretData) -> Result<Item, StoreError> {
        let plain =
            serde_json::to_vec(secret.expose()).map_err(|e| StoreError::Invalid(format!("secret data: {e}")))?;
        let dk = self.keys.generate(id).await?;
        let ciphertext = seal(&dk.plaintext, &plain, id.as_bytes())?;
        let mut item = key(pk(id), "secret");
        item.insert("ciphertext".into(), b(ciphertext));
        item.insert("wrappedKey".into(), b(dk.wrapped));
        item.insert("keyProvider".into(), s(self.keys.name()));
        Ok(item)
    }

    pub async fn create(&self, new: NewCredential) -> Result<Credential, StoreError> {
        check(&new.name, &new.kind)?;
        let now = db::now_iso();
        let credential = Credential {
            id: db::new_id(),
            name: new.name.trim().to_owned(),
            kind: new.kind.trim().to_owned(),
            description: new.description.filter(|d| !d.trim().is_empty()),
            home_project_id: new.project_id.clone(),
            shared_with_project_ids: Vec::new(),
            is_managed: new.is_managed,
            is_global: new.is_global,
            created_at: now.clone(),
            updated_at: now,
        };
        let id = credential.id.clone();
        let secret = self.secret_item(&id, &new.secret).await?;
        let head = to_item(&CredItem {
            pk: pk(&id),
            sk: "cred".into(),
            gsi1pk: format!("creds#{}", new.project_id),
            gsi1sk: format!("cred#{id}"),
            credential: credential.clone(),
        })?;
        let t = &self.table.name;
        let mut tx = vec![
            db::tx_check(t, key(format!("project#{}", new.project_id), "project"), "attribute_exists(pk)", vec![])?,
            tx_put(t, head, Some("attribute_not_exists(pk)"))?,
            tx_put(t, secret, None)?,
        ];
        if new.is_global {
            tx.push(tx_put(t, self.marker(&id, "global", "creds#global"), None)?);
        }
        self.table.transact(tx, &format!("project {} does not exist", new.project_id)).await?;
        Ok(credential)
    }

    fn marker(&self, id: &str, sk: &str, gsi1pk: &str) -> Item {
        let mut item = key(pk(id), sk);
        item.insert("gsi1pk".into(), s(gsi1pk));
        item.insert("gsi1sk".into(), s(format!("{sk}#{id}")));
        item.insert("credentialId".into(), s(id));
        item
    }

    /// Metadata of one credential (no access check: internal callers).
    pub async fn get(&self, id: &str) -> Result<Option<Credential>, StoreError> {
        Ok(self.table.get::<CredItem>(&pk(id), "cred").await?.map(|c| c.credential))
    }

    /// Metadata as `user` may see it; `None` when they have no access.
    pub async fn get_for(&self, user: &UserId, id: &str) -> Result<Option<(Credential, Vec<String>)>, StoreError> {
        let Some(c) = self.get(id).await? else { return Ok(None) };
        let mut best: Option<Vec<String>> = None;
        if let Some(role) = self.projects.role(user, &c.home_project_id).await? {
            best = Some(role.scopes_for("credential"));
        } else {
            for p in &c.shared_with_project_ids {
                if self.projects.role(user, p).await?.is_some() {
                    best = Some(vec!["credential:read".into()]);
                    break;
                }
            }
        }
        if best.is_none() && c.is_global {
            best = Some(vec!["credential:read".into()]);
        }
        Ok(best.map(|scopes| (c, scopes)))
    }

    /// Shares the credential into another project (read/use there).
    pub async fn share(&self, id: &str, project_id: &str) -> Result<(), StoreError> {
        let c = self.get(id).await?.ok_or_else(|| StoreError::NotFound(format!("credential {id}")))?;
        if c.home_project_id == project_id || c.shared_with_project_ids.iter().any(|p| p == project_id) {
            return Ok(());
        }
        let t = &self.table.name;
        self.table
            .transact(
                vec![
                    db::tx_check(t, key(format!("project#{project_id}"), "project"), "attribute_exists(pk)", vec![])?,
                    tx_put(t, self.marker(id, &format!("share#{project_id}"), &format!("creds#{project_id}")), None)?,
                    db::tx_update(
                        t,
                        key(pk(id), "cred"),
                        "SET sharedWithProjectIds = list_append(sharedWithProjectIds, :p), updatedAt = :now",
                        Some("attribute_exists(pk)"),
                        &[],
                        vec![
                            (":p", aws_sdk_dynamodb::types::AttributeValue::L(vec![s(project_id)])),
                            (":now", s(db::now_iso())),
                        ],
                    )?,
                ],
                &format!("credential {id} or project {project_id} changed"),
            )
            .await
    }

    /// Renames or re-describes (`Some(None)` clears the description).
    pub async fn update_meta(
        &self,
        id: &str,
        name: Option<&str>,
        description: Option<Option<&str>>,
    ) -> Result<Credential, StoreError> {
        let mut c = self.get(id).await?.ok_or_else(|| StoreError::NotFound(format!("credential {id}")))?;
        if let Some(n) = name {
            check(n, &c.kind)?;
            c.name = n.trim().to_owned();
        }
        if let Some(d) = description {
            c.description = d.map(str::to_owned).filter(|d| !d.trim().is_empty());
        }
        c.updated_at = db::now_iso();
        let head = to_item(&CredItem {
            pk: pk(id),
            sk: "cred".into(),
            gsi1pk: format!("creds#{}", c.home_project_id),
            gsi1sk: format!("cred#{id}"),
            credential: c.clone(),
        })?;
        self.table.count();
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(head))
            .condition_expression("attribute_exists(pk)")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(c)
    }

    /// Replaces the secret (with a fresh data key).
    pub async fn update_secret(&self, id: &str, secret: SecretData) -> Result<(), StoreError> {
        if self.get(id).await?.is_none() {
            return Err(StoreError::NotFound(format!("credential {id}")));
        }
        let item = self.secret_item(id, &secret).await?;
        self.table.count();
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    /// The decrypted secret. The only way to it: call it where the secret is
    /// used, never to answer a request.
    pub async fn decrypt_secret(&self, id: &str) -> Result<SecretData, StoreError> {
        let item = self
            .table
            .get_raw(&pk(id), "secret")
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("credential {id}")))?;
        let provider = get_s(&item, "keyProvider").unwrap_or_default();
        if provider != self.keys.name() {
            return Err(StoreError::Invalid(format!(
                "credential {id} was encrypted by key provider {provider:?}, this process has {:?}",
                self.keys.name()
            )));
        }
        let wrapped = get_b(&item, "wrappedKey")
            .ok_or_else(|| StoreError::Corrupt(format!("credential {id}: no wrapped key")))?;
        let ciphertext =
            get_b(&item, "ciphertext").ok_or_else(|| StoreError::Corrupt(format!("credential {id}: no ciphertext")))?;
        let dk = self.keys.unwrap(&wrapped, id).await?;
        let plain = open(&dk, &ciphertext, id.as_bytes())?;
        serde_json::from_slice(&plain).map(SecretData).map_err(|e| StoreError::Corrupt(format!("credential {id}: {e}")))
    }

    /// Deletes the credential, its shares and its secret.
    pub async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let items = self.table.query_prefix(&pk(id), "", false).await?;
        if items.is_empty() {
            return Err(StoreError::NotFound(format!("credential {id}")));
        }
        let reqs = items
            .iter()
            .filter_map(|i| Some(key(get_s(i, "pk")?, get_s(i, "sk")?)))
            .map(db::delete_req)
            .collect::<Result<Vec<_>, _>>()?;
        self.table.batch_write(reqs).await
    }

    /// Credentials `user` can access (`list_credentials`, `credentials(action="list")`).
    pub async fn list(&self, user: &UserId, q: &CredentialQuery) -> Result<CredentialList, StoreError> {
        let rows = self.list_all(user, q).await?;
        let total = rows.len();
        let limit = q.limit.unwrap_or(50).clamp(1, 200);
        let data: Vec<CredentialRow> = rows.into_iter().skip(q.offset).take(limit).collect();
        let has_more = q.offset + data.len() < total;
        Ok(CredentialList { data, total, has_more })
    }

    /// Every credential matching `q`'s filters (its `limit` and `offset`
    /// ignored), in [`list`](Self::list)'s order: for checks that must see
    /// all of them (a workflow's references, auto-assignment).
    pub async fn list_all(&self, user: &UserId, q: &CredentialQuery) -> Result<Vec<CredentialRow>, StoreError> {
        let projects = self.projects.projects_of(user).await?;
        let project_by_id: HashMap<String, (Project, ProjectRole)> =
            projects.iter().map(|p| (p.project.id.clone(), (p.project.clone(), p.role))).collect();
        let personal = projects.iter().find(|p| p.project.kind == ProjectType::Personal).map(|p| p.project.id.clone());
        // id → (scopes, shared directly with the user)
        let mut access: HashMap<String, (Vec<String>, bool)> = HashMap::new();
        let mut heads: HashMap<String, Credential> = HashMap::new();
        let mut to_fetch = Vec::new();
        for p in &projects {
            for item in self.table.query_gsi(&format!("creds#{}", p.project.id)).await? {
                match get_s(&item, "sk") {
                    Some("cred") => {
                        let c = db::from_item::<CredItem>(item)?.credential;
                        access.insert(c.id.clone(), (p.role.scopes_for("credential"), false));
                        heads.insert(c.id.clone(), c);
                    }
                    Some(sk) if sk.starts_with("share#") => {
                        let Some(id) = get_s(&item, "credentialId").map(str::to_owned) else { continue };
                        let direct = personal.as_deref() == Some(p.project.id.as_str());
                        let e = access.entry(id.clone()).or_insert_with(|| (vec!["credential:read".into()], direct));
                        e.1 |= direct;
                        to_fetch.push(id);
                    }
                    _ => {}
                }
            }
        }
        if !q.only_shared_with_me {
            for item in self.table.query_gsi("creds#global").await? {
                let Some(id) = get_s(&item, "credentialId").map(str::to_owned) else { continue };
                access.entry(id.clone()).or_insert_with(|| (vec!["credential:read".into()], false));
                to_fetch.push(id);
            }
        }
        to_fetch.retain(|id| !heads.contains_key(id));
        to_fetch.sort();
        to_fetch.dedup();
        // Only `sk=cred` keys: the secret item is never part of a listing.
        let keys = to_fetch.iter().map(|id| key(pk(id), "cred")).collect();
        for item in self.table.batch_get(keys).await? {
            let c = db::from_item::<CredItem>(item)?.credential;
            heads.insert(c.id.clone(), c);
        }
        let name = q.name.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
        let kind = q.kind.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
        let mut rows: Vec<CredentialRow> = heads
            .into_values()
            .filter_map(|c| {
                let (scopes, direct) = access.get(&c.id)?.clone();
                if q.only_shared_with_me && !direct {
                    return None;
                }
                if q.project_id.as_ref().is_some_and(|p| *p != c.home_project_id) {
                    return None;
                }
                if name.as_ref().is_some_and(|n| !c.name.to_lowercase().contains(n.as_str())) {
                    return None;
                }
                if kind.as_ref().is_some_and(|k| !c.kind.to_lowercase().contains(k.as_str())) {
                    return None;
                }
                let home_project = project_by_id.get(&c.home_project_id).map(|(p, _)| HomeProject {
                    id: p.id.clone(),
                    name: p.name.clone(),
                    kind: p.kind,
                });
                Some(CredentialRow {
                    description: preview(&c.description),
                    id: c.id,
                    name: c.name,
                    kind: c.kind,
                    scopes,
                    is_managed: c.is_managed,
                    is_global: c.is_global,
                    home_project,
                })
            })
            .collect();
        rows.sort_by(|a, b| a.name.to_lowercase().cmp(&b.name.to_lowercase()).then_with(|| a.id.cmp(&b.id)));
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_capped_with_a_marker() {
        let long = "x".repeat(300);
        let p = preview(&Some(long)).unwrap();
        assert_eq!(p.chars().count(), DESCRIPTION_PREVIEW);
        assert!(p.ends_with('…'));
        assert_eq!(preview(&None), None);
        assert_eq!(preview(&Some("short".into())).as_deref(), Some("short"));
    }

    #[test]
    fn secret_debug_is_redacted() {
        let s = SecretData::new(serde_json::json!({"token": "xoxb-123"}));
        assert!(!format!("{s:?}").contains("xoxb"));
    }
}
