//! Tags, per instance. Names are unique case-insensitively (a name item in
//! the same transaction), so two racing creates of `Sales` make one tag.
//!
//! Items (Instance table): `pk=tags, sk=tag#<id>` and `pk=tags,
//! sk=tagname#<lowercase name>` (carrying the id).

use super::db::{self, key, s, to_item, tx_put, Table};
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
        let mut name_item = key("tags", format!("tagname#{}", name.to_lowercase()));
        name_item.insert("tagId".into(), s(&tag.id));
        let t = &self.table.name;
        self.table
            .transact(
                vec![
                    tx_put(t, to_item(&TagItem { pk: "tags".into(), sk: format!("tag#{}", tag.id), tag: tag.clone() })?, None)?,
                    tx_put(t, name_item, Some("attribute_not_exists(pk)"))?,
                ],
                &format!("tag {name:?} already exists"),
            )
            .await?;
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
            .map(|id| all.iter().find(|t| &t.id == id).cloned().ok_or_else(|| StoreError::NotFound(format!("tag {id}"))))
            .collect()
    }
}
