//! Tags, per instance. Names are unique case-insensitively (a name claim
//! written before the tag), so two racing creates of `Sales` make one tag.
//!
//! Items (Instance table): `pk=tags, sk=tag#<id>` and the name claim
//! `pk=tags, sk=tagname#<lowercase name>` (its `owner` is the tag id),
//! written first with a condition.

use super::db::{self, to_item, Claim, Table, CLAIM_GRACE_SECS};
use crate::error::StoreError;
use serde::{Deserialize, Serialize};

pub const MAX_TAG_NAME: usize = 24;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tag {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TagItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    tag: Tag,
}

#[derive(Clone, Debug)]
pub struct Tags {
    table: Table,
}

fn check(name: &str) -> Result<String, StoreError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_TAG_NAME {
        return Err(StoreError::Invalid(format!("tag name must be 1–{MAX_TAG_NAME} characters")));
    }
    Ok(name.to_owned())
}

impl Tags {
    pub fn new(table: Table) -> Self {
        Tags { table }
    }

    /// Every tag, by name.
    pub async fn list(&self) -> Result<Vec<Tag>, StoreError> {
        let mut out: Vec<Tag> = self
            .table
            .query_prefix("tags", "tag#", false)
            .await?
            .into_iter()
            .map(|i| db::from_item::<TagItem>(i).map(|t| t.tag))
            .collect::<Result<_, _>>()?;
        out.sort_by_key(|t| t.name.to_lowercase());
        Ok(out)
    }

    /// Creates a tag; an existing name is a conflict.
    pub async fn create(&self, name: &str) -> Result<Tag, StoreError> {
        let name = check(name)?;
        let tag = Tag { id: db::new_id(), name: name.clone(), created_at: db::now_iso() };
        let sk = format!("tagname#{}", name.to_lowercase());
        let taken = || StoreError::Conflict(format!("tag {name:?} already exists"));
        // Claim the name first (one conditional put: racing creates have
        // exactly one winner), then write the tag.
        for attempt in 0..2 {
            match self.table.try_claim("tags", &sk, &tag.id).await? {
                Claim::Won => break,
                Claim::Held { owner, age_secs } => {
                    let live = self.table.get_raw("tags", &format!("tag#{owner}")).await?.is_some();
                    if live || age_secs < CLAIM_GRACE_SECS || attempt == 1 {
                        return Err(taken());
                    }
                    // Abandoned by a writer that died before writing its tag.
                    self.table.release_claim("tags", &sk, &owner).await?;
                }
            }
        }
        let item = to_item(&TagItem { pk: "tags".into(), sk: format!("tag#{}", tag.id), tag: tag.clone() })?;
        if let Err(e) = self.table.put_new(item).await {
            self.table.release_claim("tags", &sk, &tag.id).await.ok();
            return Err(e);
        }
        Ok(tag)
    }

    /// The tags with these names, creating the missing ones (a name created
    /// concurrently by someone else is picked up, not duplicated).
    pub async fn ensure(&self, names: &[String]) -> Result<Vec<Tag>, StoreError> {
        let mut out = Vec::new();
        for name in names {
            let name = check(name)?;
            let existing = self.list().await?.into_iter().find(|t| t.name.to_lowercase() == name.to_lowercase());
            match existing {
                Some(t) => out.push(t),
                None => match self.create(&name).await {
                    Ok(t) => out.push(t),
                    Err(StoreError::Conflict(_)) => {
                        let t = self.list().await?.into_iter().find(|t| t.name.to_lowercase() == name.to_lowercase());
                        out.push(t.ok_or_else(|| StoreError::Conflict(format!("tag {name:?} is being created")))?);
                    }
                    Err(e) => return Err(e),
                },
            }
        }
        Ok(out)
    }

    /// The tags with these ids, in the given order; an unknown id is an error.
    pub async fn by_ids(&self, ids: &[String]) -> Result<Vec<Tag>, StoreError> {
        let all = self.list().await?;
        ids.iter()
            .map(|id| {
                all.iter().find(|t| &t.id == id).cloned().ok_or_else(|| StoreError::NotFound(format!("tag {id}")))
            })
            .collect()
    }
}
