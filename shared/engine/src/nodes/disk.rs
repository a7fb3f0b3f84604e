//! Read/Write Files from Disk (`readWriteFile` v1), Read Binary File(s) and
//! Write Binary File (legacy): files go through the host's [`FileProvider`],
//! which in executions is a per-execution scratch folder ([`ScratchDir`]):
//! a workflow never reaches the function's own disk. Execute Command and the
//! Local File Trigger are refused: Lambda has no shell or watched disk.

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{json, Value};

use super::binary::{self, each_item};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};
use crate::host::FileProvider;

fn files(ctx: &NodeContext<'_>) -> Result<std::sync::Arc<dyn FileProvider>> {
    ctx.env.host.files.clone().ok_or_else(|| EngineError::Host("no file provider configured".into()))
}

fn read_into(ctx: &mut NodeContext<'_>, i: usize, selector: &str, prop: &str, out: &mut Vec<Item>) -> Result<()> {
    let found = files(ctx)?.read(selector).map_err(EngineError::node)?;
    let ext = ctx.param_str("options.fileExtension", i, "")?;
    let name = ctx.param_str("options.fileName", i, "")?;
    let mime = ctx.param_str("options.mimeType", i, "")?;
    for (path, bytes) in found {
        let file_name = if name.is_empty() { path.rsplit('/').next().unwrap_or(&path).to_string() } else { name.clone() };
        let file_name = match (ext.is_empty(), file_name.rsplit_once('.')) {
            (false, Some((stem, _))) => format!("{stem}.{ext}"),
            (false, None) => format!("{file_name}.{ext}"),
            _ => file_name,
        };
        let mut entry = binary::entry(&bytes, &file_name, if mime.is_empty() { None } else { Some(&mime) });
        if let Value::Object(m) = &mut entry {
            m.insert("directory".into(), json!(path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")));
        }
        out.push(binary::item_with(json!({}), prop, entry, i));
    }
    Ok(())
}

fn write_from(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>, name_param: &str) -> Result<()> {
    let file_name = ctx.param_str(name_param, i, "")?;
    if file_name.is_empty() {
        return Err(EngineError::node("The parameter \"File Path and Name\" has to be set!"));
    }
    let prop = ctx.param_str("dataPropertyName", i, "data")?;
    let (bytes, _) = binary::read(item, &prop, i)?;
    let append = ctx.param_bool("options.append", i, false)?;
    files(ctx)?.write(&file_name, &bytes, append).map_err(EngineError::node)?;
    let mut json = Value::clone(&item.json);
    if let Value::Object(m) = &mut json {
        m.insert("fileName".into(), json!(file_name));
    }
    let mut it = crate::data::item_from(json, i);
    it.binary = item.binary.clone();
    out.push(it);
    Ok(())
}

/// Read/Write Files from Disk.
pub fn read_write_file(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let op = ctx.param_str("operation", 0, "read")?;
    let out = match op.as_str() {
        "read" => each_item(ctx, &input, |ctx, _item, i, out| {
            let selector = ctx.param_str("fileSelector", i, "")?;
            let prop = ctx.param_str("options.dataPropertyName", i, "data")?;
            read_into(ctx, i, &selector, &prop, out)
        })?,
        "write" => each_item(ctx, &input, |ctx, item, i, out| write_from(ctx, item, i, out, "fileName"))?,
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    };
    Ok(NodeOutput::one(out))
}

/// Read Binary Files (legacy): every file a glob matches, for each item.
pub fn read_binary_files(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    // the legacy node runs once even without input items
    let input = match ctx.input(0) {
        i if i.is_empty() => std::sync::Arc::new(vec![Item::new(json!({}))]),
        i => i,
    };
    let out = each_item(ctx, &input, |ctx, _item, i, out| {
        let selector = ctx.param_str("fileSelector", i, "")?;
        let prop = ctx.param_str("dataPropertyName", i, "data")?;
        read_into(ctx, i, &selector, &prop, out)
    })?;
    Ok(NodeOutput::one(out))
}

/// Read Binary File (legacy): one file into each item, keeping its json.
pub fn read_binary_file(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let out = each_item(ctx, &input, |ctx, item, i, out| {
        let path = ctx.param_str("filePath", i, "")?;
        let prop = ctx.param_str("dataPropertyName", i, "data")?;
        let mut read = Vec::new();
        read_into(ctx, i, &path, &prop, &mut read)?;
        let Some(mut it) = read.into_iter().next() else { return Err(EngineError::node(format!("The file \"{path}\" could not be found"))) };
        it.json = item.json.clone();
        let mut bin = item.binary.as_ref().map(|b| Value::clone(b)).unwrap_or(json!({}));
        if let (Value::Object(m), Some(Value::Object(new))) = (&mut bin, it.binary.as_ref().map(|b| Value::clone(b))) {
            m.extend(new);
        }
        it.binary = Some(bin.into());
        out.push(it);
        Ok(())
    })?;
    Ok(NodeOutput::one(out))
}

/// Write Binary File (legacy).
pub fn write_binary_file(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let out = each_item(ctx, &input, |ctx, item, i, out| write_from(ctx, item, i, out, "fileName"))?;
    Ok(NodeOutput::one(out))
}

pub fn execute_command(_ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Err(EngineError::node_with(
        "Execute Command is not supported: workflows run on AWS Lambda, which has no shell for them",
        "Use the Code node for computations, or an HTTP Request to a service that runs the command",
    ))
}

pub fn local_file_trigger(_ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Err(EngineError::node_with(
        "Local File Trigger is not supported: workflows run on AWS Lambda, which has no disk to watch",
        "Start the workflow with a Webhook or Schedule Trigger instead",
    ))
}

/// A scratch folder for one execution: paths are relative to it (a leading
/// `/` is too), `..` is refused, and the folder is removed when dropped.
pub struct ScratchDir {
    root: OnceLock<PathBuf>,
}

impl Default for ScratchDir {
    fn default() -> Self {
        Self::new()
    }
}

impl ScratchDir {
    pub fn new() -> Self {
        ScratchDir { root: OnceLock::new() }
    }

    fn root(&self) -> std::result::Result<&Path, String> {
        if let Some(r) = self.root.get() {
            return Ok(r);
        }
        let dir = std::env::temp_dir().join(format!("instance-ai-files-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create the scratch folder: {e}"))?;
        Ok(self.root.get_or_init(|| dir))
    }

    /// `path` inside the scratch folder.
    fn resolve(&self, path: &str) -> std::result::Result<PathBuf, String> {
        let mut out = self.root()?.to_path_buf();
        for c in Path::new(path).components() {
            match c {
                Component::Normal(p) => out.push(p),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
                Component::ParentDir => return Err(format!("Access to '{path}' is not allowed: '..' leaves the execution's file folder")),
            }
        }
        Ok(out)
    }

    fn shown(&self, p: &Path) -> String {
        match self.root.get().and_then(|r| p.strip_prefix(r).ok()) {
            Some(rel) => format!("/{}", rel.display()),
            None => p.display().to_string(),
        }
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Some(r) = self.root.get() {
            let _ = std::fs::remove_dir_all(r);
        }
    }
}

impl FileProvider for ScratchDir {
    fn read(&self, selector: &str) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
        if !selector.contains(['*', '?', '[']) {
            let p = self.resolve(selector)?;
            let bytes = std::fs::read(&p).map_err(|_| format!("The file \"{selector}\" could not be found"))?;
            return Ok(vec![(self.shown(&p), bytes)]);
        }
        let pattern: Vec<String> = selector.split('/').filter(|s| !s.is_empty() && *s != ".").map(str::to_string).collect();
        if pattern.iter().any(|s| s == "..") {
            return Err(format!("Access to '{selector}' is not allowed: '..' leaves the execution's file folder"));
        }
        let mut found = Vec::new();
        walk(self.root()?, &pattern, &mut found);
        found.sort();
        found.into_iter().map(|p| std::fs::read(&p).map(|b| (self.shown(&p), b)).map_err(|e| e.to_string())).collect()
    }

    fn write(&self, path: &str, bytes: &[u8], append: bool) -> std::result::Result<String, String> {
        use std::io::Write;
        let p = self.resolve(path)?;
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&p)
            .map_err(|e| format!("The file \"{path}\" could not be written: {e}"))?;
        f.write_all(bytes).map_err(|e| e.to_string())?;
        Ok(self.shown(&p))
    }
}

/// Files under `dir` matching the glob segments (`**` spans folders).
fn walk(dir: &Path, pattern: &[String], out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = pattern.split_first() else { return };
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let entries: Vec<_> = rd.flatten().collect();
    if first == "**" {
        walk(dir, rest, out);
        for e in &entries {
            if e.path().is_dir() {
                walk(&e.path(), pattern, out);
            }
        }
        return;
    }
    for e in entries {
        let name = e.file_name().to_string_lossy().to_string();
        if !glob_match(first, &name) {
            continue;
        }
        let p = e.path();
        if rest.is_empty() {
            if p.is_file() {
                out.push(p);
            }
        } else if p.is_dir() {
            walk(&p, rest, out);
        }
    }
}

/// One path segment against `*`, `?` and `[abc]`.
fn glob_match(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') => match p.iter().position(|c| *c == ']') {
                Some(end) if !n.is_empty() => p[1..end].contains(&n[0]) && go(&p[end + 1..], &n[1..]),
                _ => false,
            },
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    go(&p, &n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_folder_confines_paths() {
        let dir = ScratchDir::new();
        assert_eq!(dir.write("/data/a.txt", b"one", false).unwrap(), "/data/a.txt");
        dir.write("data/a.txt", b"+two", true).unwrap();
        dir.write("data/sub/b.csv", b"x", false).unwrap();
        assert_eq!(dir.read("/data/a.txt").unwrap(), vec![("/data/a.txt".to_string(), b"one+two".to_vec())]);
        let names: Vec<String> = dir.read("/data/**/*.*").unwrap().into_iter().map(|(p, _)| p).collect();
        assert_eq!(names, ["/data/a.txt", "/data/sub/b.csv"]);
        assert_eq!(dir.read("data/*.csv").unwrap().len(), 0);
        assert!(dir.write("../escape.txt", b"x", false).unwrap_err().contains("not allowed"));
        assert!(dir.read("/data/../../etc/passwd").unwrap_err().contains("not allowed"));
        assert!(dir.read("/missing.txt").unwrap_err().contains("could not be found"));
        let root = dir.root().unwrap().to_path_buf();
        drop(dir);
        assert!(!root.exists(), "the scratch folder is removed with the execution");
    }
}
