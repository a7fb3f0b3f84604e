//! The per-thread workspace: the agent's files (`workspace_*` tools,
//! `build-workflow` sources) and which workflow each source file builds.
//!
//! Items (Agent table, partition `ws#<thread>`, no TTL: files outlive steps,
//! runs, restarts and sweeps, for as long as the thread exists):
//! - file `sk=file#<path>`: path, content, size (bytes), rev, updatedAt
//! - usage `sk=usage`: bytes and files of the whole workspace
//! - binding `sk=build#<path>`: the workflow a source file builds, with the
//!   source hash and workflow version of its last build
//!
//! Limits are per file and per thread ([`WorkspaceLimits`]). A write puts
//! the file (on condition its `rev` is the one read, so the size delta is
//! right) and moves the usage item (on condition the new total stays within
//! the limit) in one transaction: concurrent writers can never push a
//! thread past its limit, and a refused write changes nothing.

use super::db::{self, get_s, key, n, s, to_item, Item, Table};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use protocol::ids::ThreadId;
use serde::{Deserialize, Serialize};

pub const MAX_WORKSPACE_PATH: usize = 512;

/// How much one thread's workspace may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspaceLimits {
    /// One file's content, in bytes (below DynamoDB's item limit).
    pub max_file_bytes: usize,
    /// All files of a thread together, in bytes.
    pub max_thread_bytes: u64,
    pub max_files: u64,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        WorkspaceLimits { max_file_bytes: 256 * 1024, max_thread_bytes: 4 * 1024 * 1024, max_files: 500 }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceFile {
    pub path: String,
    pub content: String,
    pub size: u64,
    /// Incremented by every write: an edit writes on condition nothing
    /// changed the file since it was read.
    pub rev: u64,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceEntry {
    pub path: String,
    pub size: u64,
    pub rev: u64,
    pub updated_at: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WorkspaceUsage {
    pub bytes: u64,
    pub files: u64,
}

/// The workflow a source file builds (`build-workflow`'s thread metadata).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceBinding {
    pub path: String,
    pub workflow_id: String,
    /// SHA-256 of the source of the last successful build.
    pub source_hash: String,
    /// The workflow version that build saved.
    pub version_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default)]
    pub is_supporting_workflow: bool,
    pub built_at: String,
}

/// What a write expects of the file it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is there (a plain write; races with other writers are retried).
    Any,
    /// The revision the caller read (`None`: the file must not exist yet);
    /// anything else is `Conflict`.
    Rev(Option<u64>),
}

#[derive(Serialize, Deserialize)]
struct FileItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    file: WorkspaceFile,
}

#[derive(Serialize, Deserialize)]
struct BindingItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    binding: SourceBinding,
}

/// Relative, `/`-separated, no empty, `.` or `..` segments.
pub fn check_workspace_path(path: &str) -> Result<(), StoreError> {
    let bad = path.is_empty()
        || path.len() > MAX_WORKSPACE_PATH
        || path.starts_with('/')
        || path.contains('\\')
        || path.contains('\0')
        || path.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..");
    if bad {
        return Err(StoreError::Invalid(format!(
            "workspace path {path:?} must be relative, without empty, `.` or `..` segments, at most {MAX_WORKSPACE_PATH} bytes"
        )));
    }
    Ok(())
}

fn pk(thread: &ThreadId) -> String {
    format!("ws#{thread}")
}

fn num(item: &Item, name: &str) -> u64 {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().unwrap_or(0),
        _ => 0,
    }
}

fn entry_of(item: &Item) -> Option<WorkspaceEntry> {
    Some(WorkspaceEntry {
        path: get_s(item, "path")?.to_owned(),
        size: num(item, "size"),
        rev: num(item, "rev"),
        updated_at: get_s(item, "updatedAt").unwrap_or_default().to_owned(),
    })
}

/// Attempts at a write that keeps losing races before giving up.
const ATTEMPTS: usize = 5;

#[derive(Clone, Debug)]
pub struct Workspace {
    table: Table,
    limits: WorkspaceLimits,
}

impl Workspace {
    pub fn new(table: Table) -> Self {
        Workspace { table, limits: WorkspaceLimits::default() }
    }

    pub fn with_limits(table: Table, limits: WorkspaceLimits) -> Self {
        Workspace { table, limits }
    }

    pub fn limits(&self) -> WorkspaceLimits {
        self.limits
    }

    pub async fn read(&self, thread: &ThreadId, path: &str) -> Result<Option<WorkspaceFile>, StoreError> {
        check_workspace_path(path)?;
        Ok(self.table.get::<FileItem>(&pk(thread), &format!("file#{path}")).await?.map(|f| f.file))
    }

    /// Files under `prefix` (`""` for all), by path, without their content.
    pub async fn list(&self, thread: &ThreadId, prefix: &str) -> Result<Vec<WorkspaceEntry>, StoreError> {
        let items = self
            .table
            .query_prefix_projected(&pk(thread), &format!("file#{prefix}"), &["path", "size", "rev", "updatedAt"])
            .await?;
        Ok(items.iter().filter_map(entry_of).collect())
    }

    /// Files under `prefix` with their content (for searching).
    pub async fn read_all(&self, thread: &ThreadId, prefix: &str) -> Result<Vec<WorkspaceFile>, StoreError> {
        self.table
            .query_prefix(&pk(thread), &format!("file#{prefix}"), false)
            .await?
            .into_iter()
            .map(|i| db::from_item::<FileItem>(i).map(|f| f.file))
            .collect()
    }

    pub async fn usage(&self, thread: &ThreadId) -> Result<WorkspaceUsage, StoreError> {
        let item = self.table.get_raw(&pk(thread), "usage").await?.unwrap_or_default();
        Ok(WorkspaceUsage { bytes: num(&item, "bytes"), files: num(&item, "files") })
    }

    async fn current(&self, thread: &ThreadId, path: &str) -> Result<Option<WorkspaceEntry>, StoreError> {
        self.table.count();
        let out = self
            .table
            .client
            .get_item()
            .table_name(&self.table.name)
            .set_key(Some(key(pk(thread), format!("file#{path}"))))
            .consistent_read(true)
            .projection_expression("#p, #s, #r, #u")
            .expression_attribute_names("#p", "path")
            .expression_attribute_names("#s", "size")
            .expression_attribute_names("#r", "rev")
            .expression_attribute_names("#u", "updatedAt")
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(out.item.as_ref().and_then(entry_of))
    }

    /// Writes a file (creating or replacing it) within the limits.
    pub async fn write(
        &self,
        thread: &ThreadId,
        path: &str,
        content: &str,
        expect: Expect,
    ) -> Result<WorkspaceEntry, StoreError> {
        check_workspace_path(path)?;
        let size = content.len() as u64;
        if content.len() > self.limits.max_file_bytes {
            return Err(StoreError::Invalid(format!(
                "workspace file {path:?} would be {size} bytes; one file may hold at most {} bytes",
                self.limits.max_file_bytes
            )));
        }
        for _ in 0..ATTEMPTS {
            let old = self.current(thread, path).await?;
            if let Expect::Rev(rev) = expect {
                if old.as_ref().map(|o| o.rev) != rev {
                    return Err(changed(path));
                }
            }
            let entry = WorkspaceEntry {
                path: path.to_owned(),
                size,
                rev: old.as_ref().map_or(1, |o| o.rev + 1),
                updated_at: db::now_iso(),
            };
            let file = WorkspaceFile {
                path: entry.path.clone(),
                content: content.to_owned(),
                size,
                rev: entry.rev,
                updated_at: entry.updated_at.clone(),
            };
            let item = to_item(&FileItem { pk: pk(thread), sk: format!("file#{path}"), file })?;
            let put = match &old {
                None => db::tx_put(&self.table.name, item, Some("attribute_not_exists(pk)"))?,
                Some(o) => put_if_rev(&self.table.name, item, o.rev)?,
            };
            let old_size = old.as_ref().map_or(0, |o| o.size);
            let usage = self.usage_change(thread, size as i64 - old_size as i64, i64::from(old.is_none()))?;
            match self.transact(vec![put, usage]).await? {
                TxOutcome::Done => return Ok(entry),
                TxOutcome::Failed(0) if expect != Expect::Any => return Err(changed(path)),
                TxOutcome::Failed(0) | TxOutcome::Raced => continue,
                TxOutcome::Failed(_) => return Err(self.over_limit(thread, path, size, old_size).await),
            }
        }
        Err(StoreError::Conflict(format!("workspace file {path:?} keeps changing under concurrent writes; try again")))
    }

    /// Deletes a file; `false` when there was none.
    pub async fn delete(&self, thread: &ThreadId, path: &str) -> Result<bool, StoreError> {
        check_workspace_path(path)?;
        for _ in 0..ATTEMPTS {
            let Some(old) = self.current(thread, path).await? else { return Ok(false) };
            let del = aws_sdk_dynamodb::types::Delete::builder()
                .table_name(&self.table.name)
                .set_key(Some(key(pk(thread), format!("file#{path}"))))
                .condition_expression("#r = :rev")
                .expression_attribute_names("#r", "rev")
                .expression_attribute_values(":rev", n(old.rev))
                .build()
                .map_err(StoreError::dynamo)?;
            let usage = self.usage_change(thread, -(old.size as i64), -1)?;
            match self.transact(vec![TransactWriteItem::builder().delete(del).build(), usage]).await? {
                TxOutcome::Done => return Ok(true),
                _ => continue,
            }
        }
        Err(StoreError::Conflict(format!("workspace file {path:?} keeps changing under concurrent writes; try again")))
    }

    /// Moves the usage item by `bytes`/`files`; growth is conditional on
    /// staying within the limits (the condition is the arbiter).
    fn usage_change(&self, thread: &ThreadId, bytes: i64, files: i64) -> Result<TransactWriteItem, StoreError> {
        let mut conds = Vec::new();
        let mut values = vec![(":b", n(bytes)), (":f", n(files))];
        if bytes > 0 {
            // total + bytes <= max  ⇔  total <= max - bytes (no arithmetic in conditions)
            let room = self.limits.max_thread_bytes as i64 - bytes;
            conds.push("(attribute_not_exists(bytes) OR bytes <= :maxb)");
            values.push((":maxb", n(room)));
        }
        if files > 0 {
            conds.push("(attribute_not_exists(files) OR files <= :maxf)");
            values.push((":maxf", n(self.limits.max_files as i64 - files)));
        }
        let cond = (!conds.is_empty()).then(|| conds.join(" AND "));
        db::tx_update(&self.table.name, key(pk(thread), "usage"), "ADD bytes :b, files :f", cond.as_deref(), &[], values)
    }

    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<TxOutcome, StoreError> {
        self.table.count();
        match self.table.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(TxOutcome::Done),
            Err(e) => match db::cancel_reasons(&e) {
                Some(reasons) => Ok(reasons
                    .iter()
                    .position(|r| r == "ConditionalCheckFailed")
                    .map_or(TxOutcome::Raced, TxOutcome::Failed)),
                None => Err(StoreError::dynamo(e)),
            },
        }
    }

    async fn over_limit(&self, thread: &ThreadId, path: &str, size: u64, old_size: u64) -> StoreError {
        let used = self.usage(thread).await.unwrap_or_default();
        let l = self.limits;
        if old_size == 0 && used.files >= l.max_files {
            return StoreError::Invalid(format!(
                "cannot create workspace file {path:?}: the workspace already holds {} files, the limit is {}",
                used.files, l.max_files
            ));
        }
        StoreError::Invalid(format!(
            "cannot write workspace file {path:?} ({size} bytes): the workspace holds {} of its {} bytes in {} files; \
             shrink or overwrite files it no longer needs",
            used.bytes, l.max_thread_bytes, used.files
        ))
    }

    // ---- source bindings (build-workflow) -------------------------------

    pub async fn binding(&self, thread: &ThreadId, path: &str) -> Result<Option<SourceBinding>, StoreError> {
        check_workspace_path(path)?;
        Ok(self.table.get::<BindingItem>(&pk(thread), &format!("build#{path}")).await?.map(|b| b.binding))
    }

    /// Every source binding of the thread (one per built file).
    pub async fn bindings(&self, thread: &ThreadId) -> Result<Vec<SourceBinding>, StoreError> {
        self.table
            .query_prefix(&pk(thread), "build#", false)
            .await?
            .into_iter()
            .map(|i| Ok(db::from_item::<BindingItem>(i)?.binding))
            .collect()
    }

    /// Records a build. The first build of a file binds it (`attribute_not_exists`):
    /// two first builds racing cannot bind one file to two workflows.
    pub async fn record_build(&self, thread: &ThreadId, binding: &SourceBinding, first: bool) -> Result<(), StoreError> {
        check_workspace_path(&binding.path)?;
        let item = to_item(&BindingItem {
            pk: pk(thread),
            sk: format!("build#{}", binding.path),
            binding: binding.clone(),
        })?;
        self.table.count();
        let mut req = self.table.client.put_item().table_name(&self.table.name).set_item(Some(item));
        req = if first {
            req.condition_expression("attribute_not_exists(pk)")
        } else {
            req.condition_expression("workflowId = :w").expression_attribute_values(":w", s(&binding.workflow_id))
        };
        match req.send().await {
            Ok(_) => Ok(()),
            Err(e) if db::is_condition_failed(&e) => Err(StoreError::Conflict(format!(
                "workspace file {:?} was bound to another workflow meanwhile",
                binding.path
            ))),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }
}

enum TxOutcome {
    Done,
    /// The condition of this action (its index) failed.
    Failed(usize),
    /// Cancelled for another reason (a concurrent transaction): retry.
    Raced,
}

fn put_if_rev(table: &str, item: Item, rev: u64) -> Result<TransactWriteItem, StoreError> {
    let put = aws_sdk_dynamodb::types::Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("#r = :rev")
        .expression_attribute_names("#r", "rev")
        .expression_attribute_values(":rev", n(rev))
        .build()
        .map_err(StoreError::dynamo)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

fn changed(path: &str) -> StoreError {
    StoreError::Conflict(format!("workspace file {path:?} changed since it was read; read it again"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_paths_stay_inside() {
        for ok in ["a.ts", "src/main.workflow.ts", "knowledge-base/index.json"] {
            check_workspace_path(ok).unwrap();
        }
        for bad in ["", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\\b", "a/"] {
            assert!(check_workspace_path(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
