//! The thread's workspace as the model sees it: the thread's own files
//! (stored in DynamoDB by `store::data::Workspace`) with the read-only
//! `knowledge-base/` tree laid over them. The knowledge base is not copied
//! into each thread: it is compiled into the binary and answered from
//! memory, so every workspace has it, always matching this build, at no
//! storage cost; writes under `knowledge-base/` are refused.

use crate::knowledge_base::{self, KB_ROOT};
use protocol::ids::ThreadId;
use serde::Serialize;
use store::data::workspace::{check_workspace_path, Expect, Workspace, WorkspaceEntry};
use store::StoreError;

/// Lines `workspace_read_file` returns when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 2000;
/// Matches `workspace_grep` returns at most.
pub const MAX_GREP_MATCHES: usize = 100;
/// A matching line is cut to this many characters.
const MAX_GREP_LINE: usize = 300;
/// Edits that lose races with other writers are retried this often.
const EDIT_ATTEMPTS: usize = 3;

#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0}")]
    Invalid(String),
    #[error("no file {0:?} in the workspace; workspace_list_files shows what exists")]
    NotFound(String),
    #[error("{0}")]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileInfo {
    pub path: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// A window of a file's lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileWindow {
    pub path: String,
    pub content: String,
    /// First line returned (1-based).
    pub offset: usize,
    pub line_count: usize,
    pub total_lines: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrepMatch {
    pub path: String,
    pub line: usize,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepResult {
    pub matches: Vec<GrepMatch>,
    pub files_searched: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn in_kb(path: &str) -> bool {
    path == KB_ROOT || path.starts_with(&format!("{KB_ROOT}/"))
}

/// Normalises a directory argument: `""`, `"."` and `"/"` mean the root.
fn dir_prefix(path: Option<&str>) -> Result<String, WorkspaceError> {
    let p = path.unwrap_or("").trim().trim_matches('/');
    if p.is_empty() || p == "." {
        return Ok(String::new());
    }
    check_workspace_path(p)?;
    Ok(p.to_owned())
}

/// Whether `file` is `prefix` itself or below it.
fn under(file: &str, prefix: &str) -> bool {
    prefix.is_empty() || file == prefix || file.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'))
}

/// Lines `offset..offset+limit` (1-based offset) of `content`.
pub fn window(path: &str, content: &str, offset: Option<usize>, limit: Option<usize>) -> Result<FileWindow, WorkspaceError> {
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let total = lines.len();
    let offset = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_READ_LINES);
    if limit == 0 {
        return Err(WorkspaceError::Invalid("limit must be at least 1".into()));
    }
    if offset > total.max(1) {
        return Err(WorkspaceError::Invalid(format!("offset {offset} is past the end of {path:?} ({total} lines)")));
    }
    let end = (offset - 1 + limit).min(total);
    let slice = if total == 0 { String::new() } else { lines[offset - 1..end].concat() };
    let note = (offset > 1 || end < total).then(|| {
        if end < total {
            format!("lines {offset}-{end} of {total}; pass offset {} to read on", end + 1)
        } else {
            format!("lines {offset}-{end} of {total}")
        }
    });
    Ok(FileWindow { path: path.to_owned(), content: slice, offset, line_count: end + 1 - offset, total_lines: total, note })
}

/// Replaces `old` with `new` in `content`: exactly one occurrence, or every
/// one with `replace_all`. An absent or (without `replace_all`) ambiguous
/// `old` is an error naming the problem; nothing is replaced.
pub fn replace(path: &str, content: &str, old: &str, new: &str, replace_all: bool) -> Result<(String, usize), WorkspaceError> {
    if old.is_empty() {
        return Err(WorkspaceError::Invalid("oldString must not be empty".into()));
    }
    if old == new {
        return Err(WorkspaceError::Invalid("oldString and newString are the same; nothing would change".into()));
    }
    let count = content.matches(old).count();
    match count {
        0 => Err(WorkspaceError::Invalid(format!(
            "oldString was not found in {path:?}; read the file and copy the exact text, including whitespace"
        ))),
        n if n > 1 && !replace_all => Err(WorkspaceError::Invalid(format!(
            "oldString occurs {n} times in {path:?}; add surrounding text to make it unique, or pass replaceAll: true"
        ))),
        n => Ok((if replace_all { content.replace(old, new) } else { content.replacen(old, new, 1) }, n)),
    }
}

/// Searches `files` for `pattern` (a regular expression), line by line.
pub fn grep<'a>(pattern: &str, files: impl Iterator<Item = (&'a str, &'a str)>) -> Result<GrepResult, WorkspaceError> {
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| WorkspaceError::Invalid(format!("pattern is not a valid regular expression: {e}")))?;
    let mut out = GrepResult { matches: Vec::new(), files_searched: 0, note: None };
    let mut total = 0usize;
    for (path, content) in files {
        out.files_searched += 1;
        for (i, line) in content.lines().enumerate() {
            if !re.is_match(line) {
                continue;
            }
            total += 1;
            if out.matches.len() < MAX_GREP_MATCHES {
                let text: String = line.chars().take(MAX_GREP_LINE).collect();
                out.matches.push(GrepMatch { path: path.to_owned(), line: i + 1, text });
            }
        }
    }
    if total > out.matches.len() {
        out.note = Some(format!("showing {} of {total} matching lines; narrow the pattern or the path", out.matches.len()));
    }
    Ok(out)
}

/// One thread's workspace.
pub struct ThreadWorkspace<'a> {
    pub store: &'a Workspace,
    pub thread: &'a ThreadId,
}

impl ThreadWorkspace<'_> {
    /// Every file under `path` (the whole workspace by default), the
    /// knowledge base included, by path.
    pub async fn list(&self, path: Option<&str>) -> Result<Vec<FileInfo>, WorkspaceError> {
        let prefix = dir_prefix(path)?;
        let mut out: Vec<FileInfo> = knowledge_base::files()
            .iter()
            .filter(|f| under(&f.path, &prefix))
            .map(|f| FileInfo { path: f.path.clone(), size: f.content.len() as u64, updated_at: None, read_only: true })
            .collect();
        if !in_kb(&prefix) {
            let stored: Vec<WorkspaceEntry> = self.store.list(self.thread, &prefix).await?;
            out.extend(stored.into_iter().filter(|e| under(&e.path, &prefix)).map(|e| FileInfo {
                path: e.path,
                size: e.size,
                updated_at: Some(e.updated_at),
                read_only: false,
            }));
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// A file's content and whether it is a thread file (`Some(rev)`).
    pub async fn read(&self, path: &str) -> Result<(String, Option<u64>), WorkspaceError> {
        check_workspace_path(path)?;
        if in_kb(path) {
            return knowledge_base::get(path)
                .map(|c| (c.to_owned(), None))
                .ok_or_else(|| WorkspaceError::NotFound(path.to_owned()));
        }
        match self.store.read(self.thread, path).await? {
            Some(f) => Ok((f.content, Some(f.rev))),
            None => Err(WorkspaceError::NotFound(path.to_owned())),
        }
    }

    fn writable(path: &str) -> Result<(), WorkspaceError> {
        check_workspace_path(path)?;
        if in_kb(path) {
            return Err(WorkspaceError::Invalid(format!(
                "{KB_ROOT}/ is read-only; write your own files elsewhere (e.g. copy a template to {:?})",
                path.rsplit('/').next().unwrap_or("workflow.ts")
            )));
        }
        Ok(())
    }

    pub async fn write(&self, path: &str, content: &str) -> Result<WorkspaceEntry, WorkspaceError> {
        Self::writable(path)?;
        Ok(self.store.write(self.thread, path, content, Expect::Any).await?)
    }

    /// Reads, replaces and writes back on condition the file did not change
    /// in between (retried from a fresh read when it did).
    pub async fn edit(&self, path: &str, old: &str, new: &str, replace_all: bool) -> Result<(WorkspaceEntry, usize), WorkspaceError> {
        Self::writable(path)?;
        let mut last = None;
        for _ in 0..EDIT_ATTEMPTS {
            let (content, rev) = self.read(path).await?;
            let (next, n) = replace(path, &content, old, new, replace_all)?;
            match self.store.write(self.thread, path, &next, Expect::Rev(rev)).await {
                Ok(e) => return Ok((e, n)),
                Err(StoreError::Conflict(m)) => last = Some(m),
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Conflict(last.unwrap_or_default()).into())
    }

    /// Greps the knowledge base and the thread's files under `path` (a file
    /// or a directory).
    pub async fn grep(&self, pattern: &str, path: Option<&str>) -> Result<GrepResult, WorkspaceError> {
        let prefix = dir_prefix(path)?;
        let stored = if in_kb(&prefix) { Vec::new() } else { self.store.read_all(self.thread, &prefix).await? };
        let kb = knowledge_base::files().iter().filter(|f| under(&f.path, &prefix)).map(|f| (f.path.as_str(), f.content.as_str()));
        let own = stored.iter().filter(|f| under(&f.path, &prefix)).map(|f| (f.path.as_str(), f.content.as_str()));
        grep(pattern, kb.chain(own))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_needs_exactly_one_match_unless_all() {
        let text = "a = 1;\nb = 1;\n";
        assert_eq!(replace("f", text, "a = 1", "a = 2", false).unwrap(), ("a = 2;\nb = 1;\n".into(), 1));
        let e = replace("f", text, "= 1", "= 2", false).unwrap_err().to_string();
        assert!(e.contains("occurs 2 times") && e.contains("replaceAll"), "{e}");
        assert_eq!(replace("f", text, "= 1", "= 2", true).unwrap(), ("a = 2;\nb = 2;\n".into(), 2));
        let e = replace("f", text, "c = 1", "c = 2", false).unwrap_err().to_string();
        assert!(e.contains("not found"), "{e}");
        assert!(replace("f", text, "", "x", false).is_err());
        assert!(replace("f", text, "a", "a", false).is_err());
    }

    #[test]
    fn windows_are_line_based_and_say_how_to_go_on() {
        let text = "1\n2\n3\n4\n5";
        let w = window("f", text, None, None).unwrap();
        assert_eq!((w.content.as_str(), w.total_lines, w.note.is_none()), (text, 5, true));
        let w = window("f", text, Some(2), Some(2)).unwrap();
        assert_eq!((w.content.as_str(), w.offset, w.line_count), ("2\n3\n", 2, 2));
        assert!(w.note.as_deref().unwrap().contains("pass offset 4"), "{:?}", w.note);
        let w = window("f", text, Some(5), Some(10)).unwrap();
        assert_eq!((w.content.as_str(), w.line_count), ("5", 1));
        assert!(window("f", text, Some(6), None).is_err());
        assert!(window("f", text, None, Some(0)).is_err());
        assert_eq!(window("f", "", None, None).unwrap().content, "");
    }

    #[test]
    fn grep_reports_lines_and_caps_matches() {
        let files = [("a.ts", "const x = 1;\nconst y = 2;\n"), ("b.md", "no match\nconst z\n")];
        let r = grep(r"const [xz]", files.iter().copied()).unwrap();
        assert_eq!(r.matches, vec![
            GrepMatch { path: "a.ts".into(), line: 1, text: "const x = 1;".into() },
            GrepMatch { path: "b.md".into(), line: 2, text: "const z".into() },
        ]);
        assert_eq!(r.files_searched, 2);
        let many = "hit\n".repeat(150);
        let r = grep("hit", [("m", many.as_str())].into_iter()).unwrap();
        assert_eq!(r.matches.len(), MAX_GREP_MATCHES);
        assert!(r.note.unwrap().contains("of 150"));
        assert!(grep("(", [("m", "x")].into_iter()).unwrap_err().to_string().contains("regular expression"));
    }

    #[test]
    fn paths_and_prefixes() {
        assert_eq!(dir_prefix(Some("/")).unwrap(), "");
        assert_eq!(dir_prefix(Some("src/")).unwrap(), "src");
        assert!(dir_prefix(Some("../x")).is_err());
        assert!(under("src/a.ts", "src") && !under("srcx/a.ts", "src") && under("a", ""));
        assert!(in_kb("knowledge-base/index.json") && !in_kb("knowledge-based.md"));
    }
}
