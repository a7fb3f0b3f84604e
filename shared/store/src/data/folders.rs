//! Folders nest inside one project. A folder's path is root-relative
//! (`Clients/Acme`); names cannot contain `/`, so a path is unambiguous.
//! Names are unique (case-insensitively) among siblings, enforced by a
//! name claim written (conditionally) before the folder.
//!
//! Items (Instance table, in the project's partition, so one Query reads
//! the whole tree and paths are computed in memory):
//! - folder: `pk=project#<p>, sk=folder#<id>`
//! - sibling name: `pk=project#<p>, sk=foldername#<parent|root>#<lowercase name>`

use super::db::{self, key, s, to_item, tx_delete, tx_put, tx_update, Claim, Table, CLAIM_GRACE_SECS};
use super::users_projects::project_pk;
use crate::error::StoreError;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub const MAX_FOLDER_NAME: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Folder {
    pub id: String,
    pub name: String,
    pub parent_folder_id: Option<String>,
    pub project_id: String,
    /// Root-relative path, `Clients/Acme`.
    pub path: String,
    pub created_at: String,
    pub updated_at: String,
}

/// `{ id, name, path }` as workflow rows carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderRef {
    pub id: String,
    pub name: String,
    pub path: String,
}

impl From<&Folder> for FolderRef {
    fn from(f: &Folder) -> Self {
        FolderRef { id: f.id.clone(), name: f.name.clone(), path: f.path.clone() }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResolutionFailure {
    NotFound,
    Ambiguous,
    Unsupported,
    ScopeTooWide,
}

/// Why a requested folder did not resolve (`folderResolution`).
/// `candidates` are the matches for `ambiguous`, and for `not-found` the
/// project's real folders (at most 50) so the caller can pick one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FolderResolution {
    pub requested: String,
    pub reason: ResolutionFailure,
    pub candidates: Vec<FolderRef>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderSummary {
    pub id: String,
    pub name: String,
    pub parent_folder_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FolderPage {
    pub data: Vec<FolderSummary>,
    pub count: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FolderItem {
    pk: String,
    sk: String,
    id: String,
    name: String,
    parent_folder_id: Option<String>,
    project_id: String,
    created_at: String,
    updated_at: String,
}

fn name_sk(parent: Option<&str>, name: &str) -> String {
    format!("foldername#{}#{}", parent.unwrap_or("root"), name.to_lowercase())
}

pub fn check_folder_name(name: &str) -> Result<String, StoreError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_FOLDER_NAME {
        return Err(StoreError::Invalid(format!("folder name must be 1–{MAX_FOLDER_NAME} characters")));
    }
    if name.contains('/') {
        return Err(StoreError::Invalid(format!("folder name {name:?} contains '/'")));
    }
    Ok(name.to_owned())
}

fn segments(path: &str) -> Vec<String> {
    path.split('/').map(|p| p.trim().to_lowercase()).filter(|p| !p.is_empty()).collect()
}

/// Resolves a path the way the user named it, strictly and in stages,
/// never fuzzily: (1) the whole root-relative path; (2) folders whose path
/// ends with the given segments (`Acme` finds `Clients/Acme`). A stage with
/// one match resolves; with several it is `ambiguous`; with none, the next
/// stage runs; after the last, `not-found`. Case-insensitive throughout
/// (sibling names are unique case-insensitively).
pub fn resolve_path(folders: &[Folder], requested: &str) -> Result<Folder, FolderResolution> {
    let want = segments(requested);
    let fail = |reason, candidates| FolderResolution { requested: requested.to_owned(), reason, candidates };
    if want.is_empty() {
        return Err(fail(ResolutionFailure::NotFound, Vec::new()));
    }
    let exact: Vec<&Folder> = folders.iter().filter(|f| segments(&f.path) == want).collect();
    if exact.len() == 1 {
        return Ok(exact[0].clone());
    }
    let suffix: Vec<&Folder> = folders
        .iter()
        .filter(|f| {
            let have = segments(&f.path);
            have.len() >= want.len() && have[have.len() - want.len()..] == want[..]
        })
        .collect();
    match suffix.len() {
        1 => Ok(suffix[0].clone()),
        0 => {
            let mut all: Vec<FolderRef> = folders.iter().map(FolderRef::from).collect();
            all.sort_by(|a, b| a.path.cmp(&b.path));
            all.truncate(50);
            Err(fail(ResolutionFailure::NotFound, all))
        }
        _ => {
            let mut c: Vec<FolderRef> = suffix.into_iter().map(FolderRef::from).collect();
            c.sort_by(|a, b| a.path.cmp(&b.path));
            Err(fail(ResolutionFailure::Ambiguous, c))
        }
    }
}

/// The ids of `root` and every folder below it.
pub fn subtree(folders: &[Folder], root: &str) -> Vec<String> {
    let mut out = vec![root.to_owned()];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].clone();
        out.extend(
            folders.iter().filter(|f| f.parent_folder_id.as_deref() == Some(parent.as_str())).map(|f| f.id.clone()),
        );
        i += 1;
    }
    out
}

#[derive(Clone, Debug)]
pub struct Folders {
    table: Table,
}

impl Folders {
    pub fn new(table: Table) -> Self {
        Folders { table }
    }

    /// Creates a folder under `parent` (or at the root). A sibling with the
    /// same name (case-insensitive) is a conflict, also under a race.
    pub async fn create(&self, project_id: &str, name: &str, parent: Option<&str>) -> Result<Folder, StoreError> {
        let name = check_folder_name(name)?;
        let now = db::now_iso();
        let item = FolderItem {
            pk: project_pk(project_id),
            sk: String::new(),
            id: db::new_id(),
            name: name.clone(),
            parent_folder_id: parent.map(str::to_owned),
            project_id: project_id.to_owned(),
            created_at: now.clone(),
            updated_at: now,
        };
        let item = FolderItem { sk: format!("folder#{}", item.id), ..item };
        let pk = project_pk(project_id);
        if self.table.get_raw(&pk, "project").await?.is_none() {
            return Err(StoreError::NotFound(format!("project {project_id}")));
        }
        if let Some(p) = parent {
            if self.table.get_raw(&pk, &format!("folder#{p}")).await?.is_none() {
                return Err(StoreError::NotFound(format!("parent folder {p}")));
            }
        }
        // Claim the sibling name first (one conditional put: of racing
        // creates exactly one wins), then write the folder.
        let sk = name_sk(parent, &name);
        for attempt in 0..2 {
            match self.table.try_claim(&pk, &sk, &item.id).await? {
                Claim::Won => break,
                Claim::Held { owner, age_secs } => {
                    let live = self.table.get_raw(&pk, &format!("folder#{owner}")).await?.is_some();
                    if live || age_secs < CLAIM_GRACE_SECS || attempt == 1 {
                        return Err(StoreError::Conflict(format!("a folder named {name:?} already exists there")));
                    }
                    // Abandoned by a writer that died before writing its folder.
                    self.table.release_claim(&pk, &sk, &owner).await?;
                }
            }
        }
        if let Err(e) = self.table.put_new(to_item(&item)?).await {
            self.table.release_claim(&pk, &sk, &item.id).await.ok();
            return Err(e);
        }
        let all = self.list(project_id).await?;
        all.into_iter()
            .find(|f| f.id == item.id)
            .ok_or_else(|| StoreError::NotFound(format!("folder {} vanished after create", item.id)))
    }

    /// Every folder of the project with its path, sorted by path.
    pub async fn list(&self, project_id: &str) -> Result<Vec<Folder>, StoreError> {
        let items: Vec<FolderItem> = self
            .table
            .query_prefix(&project_pk(project_id), "folder#", false)
            .await?
            .into_iter()
            .map(db::from_item)
            .collect::<Result<_, _>>()?;
        let by_id: HashMap<&str, &FolderItem> = items.iter().map(|f| (f.id.as_str(), f)).collect();
        let mut out: Vec<Folder> = items
            .iter()
            .map(|f| {
                let mut names = vec![f.name.clone()];
                let mut cur = f.parent_folder_id.as_deref();
                // Bounded walk: a corrupt cycle must not hang the reader.
                for _ in 0..256 {
                    let Some(p) = cur.and_then(|id| by_id.get(id)) else { break };
                    names.push(p.name.clone());
                    cur = p.parent_folder_id.as_deref();
                }
                names.reverse();
                Folder {
                    id: f.id.clone(),
                    name: f.name.clone(),
                    parent_folder_id: f.parent_folder_id.clone(),
                    project_id: f.project_id.clone(),
                    path: names.join("/"),
                    created_at: f.created_at.clone(),
                    updated_at: f.updated_at.clone(),
                }
            })
            .collect();
        out.sort_by_key(|a| a.path.to_lowercase());
        Ok(out)
    }

    pub async fn get(&self, project_id: &str, id: &str) -> Result<Option<Folder>, StoreError> {
        Ok(self.list(project_id).await?.into_iter().find(|f| f.id == id))
    }

    /// Strict path resolution inside one project (see [`resolve_path`]).
    pub async fn resolve(&self, project_id: &str, path: &str) -> Result<Result<Folder, FolderResolution>, StoreError> {
        Ok(resolve_path(&self.list(project_id).await?, path))
    }

    /// `search_folders`: case-insensitive substring on the name, max 100.
    pub async fn search(
        &self,
        project_id: &str,
        query: Option<&str>,
        limit: Option<usize>,
    ) -> Result<FolderPage, StoreError> {
        let q = query.map(str::to_lowercase).filter(|q| !q.is_empty());
        let all: Vec<FolderSummary> = self
            .list(project_id)
            .await?
            .into_iter()
            .filter(|f| q.as_ref().is_none_or(|q| f.name.to_lowercase().contains(q.as_str())))
            .map(|f| FolderSummary { id: f.id, name: f.name, parent_folder_id: f.parent_folder_id })
            .collect();
        let count = all.len();
        Ok(FolderPage { data: all.into_iter().take(limit.unwrap_or(100).clamp(1, 100)).collect(), count })
    }

    pub async fn rename(&self, project_id: &str, id: &str, new_name: &str) -> Result<Folder, StoreError> {
        let new_name = check_folder_name(new_name)?;
        let cur = self.get(project_id, id).await?.ok_or_else(|| StoreError::NotFound(format!("folder {id}")))?;
        let parent = cur.parent_folder_id.as_deref();
        let t = &self.table.name;
        let pk = project_pk(project_id);
        let mut tx = vec![tx_update(
            t,
            key(&pk, format!("folder#{id}")),
            "SET #n = :n, updatedAt = :u",
            Some("attribute_exists(pk) AND #n = :old"),
            &[("#n", "name")],
            vec![(":n", s(&new_name)), (":u", s(db::now_iso())), (":old", s(&cur.name))],
        )?];
        if cur.name.to_lowercase() != new_name.to_lowercase() {
            tx.push(tx_delete(t, key(&pk, name_sk(parent, &cur.name)), None)?);
            let mut claim = key(&pk, name_sk(parent, &new_name));
            claim.insert("owner".into(), s(id));
            claim.insert("claimedAt".into(), db::n(db::now_secs()));
            tx.push(tx_put(t, claim, Some("attribute_not_exists(pk)"))?);
        }
        self.table.transact(tx, &format!("folder {new_name:?} already exists there, or the folder changed")).await?;
        self.get(project_id, id).await?.ok_or_else(|| StoreError::NotFound(format!("folder {id}")))
    }

    /// Deletes one folder that has no subfolders. Workflows inside must be
    /// moved or archived first (see `Workflows::delete_folder`).
    pub async fn delete_empty(&self, project_id: &str, id: &str) -> Result<(), StoreError> {
        let all = self.list(project_id).await?;
        let cur = all.iter().find(|f| f.id == id).ok_or_else(|| StoreError::NotFound(format!("folder {id}")))?;
        if all.iter().any(|f| f.parent_folder_id.as_deref() == Some(id)) {
            return Err(StoreError::Conflict(format!("folder {} has subfolders", cur.path)));
        }
        let t = &self.table.name;
        let pk = project_pk(project_id);
        self.table
            .transact(
                vec![
                    tx_delete(t, key(&pk, format!("folder#{id}")), Some("attribute_exists(pk)"))?,
                    tx_delete(t, key(&pk, name_sk(cur.parent_folder_id.as_deref(), &cur.name)), None)?,
                ],
                &format!("folder {id} changed"),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: &str, path: &str) -> Folder {
        Folder {
            id: id.into(),
            name: path.rsplit('/').next().unwrap_or_default().into(),
            parent_folder_id: None,
            project_id: "p".into(),
            path: path.into(),
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn resolution_is_staged_and_strict() {
        let all = vec![f("1", "Clients"), f("2", "Clients/Acme"), f("3", "Partners/Acme"), f("4", "Acme")];
        assert_eq!(resolve_path(&all, "Clients/Acme").unwrap().id, "2");
        assert_eq!(resolve_path(&all, "/clients/acme/").unwrap().id, "2");
        // The root-level `Acme` wins stage one even though two more end with it.
        assert_eq!(resolve_path(&all, "Acme").unwrap().id, "4");
        let without_root: Vec<Folder> = all.iter().filter(|x| x.id != "4").cloned().collect();
        let amb = resolve_path(&without_root, "Acme").unwrap_err();
        assert_eq!(amb.reason, ResolutionFailure::Ambiguous);
        assert_eq!(
            amb.candidates.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
            ["Clients/Acme", "Partners/Acme"]
        );
        assert_eq!(resolve_path(&all, "Acm").unwrap_err().reason, ResolutionFailure::NotFound);
    }
}
