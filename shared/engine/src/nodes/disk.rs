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

/// The binary entries of the files `found`, named (and typed) as the
/// options say.
fn entries_of(ctx: &mut NodeContext<'_>, i: usize, found: Vec<(String, Vec<u8>)>) -> Result<Vec<Value>> {
    let ext = ctx.param_opt("options.fileExtension", i)?.map(|v| super::js_string(&v));
    let name = ctx.param_opt("options.fileName", i)?.map(|v| super::js_string(&v));
    let mime = ctx.param_opt("options.mimeType", i)?.map(|v| super::js_string(&v));
    Ok(found
        .into_iter()
        .map(|(path, bytes)| {
            let file_name = path.rsplit('/').next().unwrap_or(&path).to_string();
            let mut entry = binary::entry(&bytes, &file_name, None);
            if let Value::Object(m) = &mut entry {
                // n8n sets the options on the prepared entry as given
                for (key, v) in [("fileName", &name), ("fileExtension", &ext), ("mimeType", &mime)] {
                    if let Some(v) = v {
                        m.insert(key.into(), json!(v));
                    }
                }
                m.insert("directory".into(), json!(path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")));
            }
            entry
        })
        .collect())
}

/// Windows drive paths as n8n's `normalizeFileSelector` gives them to the
/// glob: `C:\a\b` → `C:/a/b`.
fn normalize_selector(s: &str) -> String {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && s.contains('\\') {
        s.replace('\\', "/")
    } else {
        s.to_string()
    }
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
            let selector = normalize_selector(&ctx.param_str("fileSelector", i, "")?);
            let prop = ctx.param_opt("options.dataPropertyName", i)?.map(|v| super::js_string(&v)).filter(|p| !p.is_empty()).unwrap_or_else(|| "data".into());
            let literal = ctx.param_bool("options.literalBrackets", i, true)?;
            let found = files(ctx)?.glob(&selector, literal).map_err(EngineError::node)?;
            if found.is_empty() && ctx.version() > 1.0 {
                let hint = match (has_brackets(&selector), literal) {
                    (false, _) => "",
                    (true, true) => ". If [ ] and ( ) were meant as a character class or group, turn off 'Treat Brackets and Parentheses as Literal' in Options",
                    (true, false) => ". If [ ] and ( ) were meant as literal characters, turn on 'Treat Brackets and Parentheses as Literal' in Options",
                };
                return Err(EngineError::node_with("No file(s) found", format!("No file matching the selector \"{selector}\" found{hint}")));
            }
            for entry in entries_of(ctx, i, found)? {
                // the file's metadata is the item's json too
                let mut meta = serde_json::Map::new();
                for key in ["mimeType", "fileType", "fileName", "fileExtension", "fileSize"] {
                    if let Some(v) = entry.get(key) {
                        meta.insert(key.into(), v.clone());
                    }
                }
                out.push(binary::item_with(Value::Object(meta), &prop, entry, i));
            }
            Ok(())
        })?,
        "write" => each_item(ctx, &input, |ctx, item, i, out| write_from(ctx, item, i, out, "fileName"))?,
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    };
    Ok(NodeOutput::one(out))
}

fn has_brackets(s: &str) -> bool {
    s.contains(['[', ']', '(', ')'])
}

/// Read Binary Files (legacy): runs once, with the first item's
/// parameters: every file the glob matches, each paired with all input items.
pub fn read_binary_files(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let inputs = ctx.input(0).len();
    let selector = ctx.param_str("fileSelector", 0, "")?;
    let prop = ctx.param_str("dataPropertyName", 0, "data")?;
    let found = files(ctx)?.glob(&selector, false).map_err(EngineError::node)?;
    let paired: Vec<Value> = (0..inputs).map(|k| json!({ "item": k })).collect();
    let out = entries_of(ctx, 0, found)?
        .into_iter()
        .map(|entry| {
            let mut it = binary::item_with(json!({}), &prop, entry, 0);
            it.paired_item = Some(expression::PairedItem::Other(Box::new(Value::Array(paired.clone()))));
            it
        })
        .collect();
    Ok(NodeOutput::one(out))
}

/// Read Binary File (legacy): one file into each item, keeping its json.
pub fn read_binary_file(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let out = each_item(ctx, &input, |ctx, item, i, out| {
        let path = ctx.param_str("filePath", i, "")?;
        let prop = ctx.param_str("dataPropertyName", i, "data")?;
        let found = files(ctx)?.read(&path).map_err(EngineError::node)?;
        let Some(entry) = entries_of(ctx, i, found)?.into_iter().next() else { return Err(EngineError::node(format!("The file \"{path}\" could not be found"))) };
        let mut it = crate::data::item_from(Value::clone(&item.json), i);
        let mut bin = item.binary.as_ref().map(|b| Value::clone(b)).unwrap_or(json!({}));
        if let Value::Object(m) = &mut bin {
            m.insert(prop, entry);
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
        walk(self.root()?, &pattern, false, &mut found);
        found.sort();
        found.into_iter().map(|p| std::fs::read(&p).map(|b| (self.shown(&p), b)).map_err(|e| e.to_string())).collect()
    }

    fn glob(&self, pattern: &str, literal_brackets: bool) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
        let mut found: Vec<PathBuf> = Vec::new();
        for one in expand_braces(pattern) {
            let is_glob = one.contains(['*', '?']) || (!literal_brackets && one.contains('['));
            if !is_glob {
                let p = self.resolve(&one)?;
                if p.is_file() {
                    found.push(p);
                }
                continue;
            }
            let segments: Vec<String> = one.split('/').filter(|s| !s.is_empty() && *s != ".").map(str::to_string).collect();
            if segments.iter().any(|s| s == "..") {
                return Err(format!("Access to '{pattern}' is not allowed: '..' leaves the execution's file folder"));
            }
            walk(self.root()?, &segments, literal_brackets, &mut found);
        }
        found.sort();
        found.dedup();
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

/// `a{b,c}d` → `abd`, `acd` (nested braces too); a brace without a comma stays as it is.
fn expand_braces(pattern: &str) -> Vec<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let Some(open) = chars.iter().position(|c| *c == '{') else { return vec![pattern.to_string()] };
    // the matching close brace and the top-level commas between
    let (mut depth, mut commas, mut close) = (0, vec![], None);
    for (k, c) in chars.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(k),
            _ => {}
        }
    }
    let Some(close) = close.filter(|_| !commas.is_empty()) else {
        // not an alternation: keep `{` and expand what follows
        let rest: String = chars[open + 1..].iter().collect();
        let head: String = chars[..=open].iter().collect();
        return expand_braces(&rest).into_iter().map(|r| format!("{head}{r}")).collect();
    };
    let head: String = chars[..open].iter().collect();
    let tail: String = chars[close + 1..].iter().collect();
    let mut bounds = vec![open];
    bounds.extend(commas);
    bounds.push(close);
    bounds
        .windows(2)
        .flat_map(|w| {
            let alt: String = chars[w[0] + 1..w[1]].iter().collect();
            expand_braces(&format!("{head}{alt}{tail}"))
        })
        .collect()
}

/// Files under `dir` matching the glob segments (`**` spans folders).
fn walk(dir: &Path, pattern: &[String], literal_brackets: bool, out: &mut Vec<PathBuf>) {
    let Some((first, rest)) = pattern.split_first() else { return };
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let entries: Vec<_> = rd.flatten().collect();
    if first == "**" {
        walk(dir, rest, literal_brackets, out);
        for e in &entries {
            if e.path().is_dir() {
                walk(&e.path(), pattern, literal_brackets, out);
            }
        }
        return;
    }
    for e in entries {
        let name = e.file_name().to_string_lossy().to_string();
        if !glob_match(first, &name, literal_brackets) {
            continue;
        }
        let p = e.path();
        if rest.is_empty() {
            if p.is_file() {
                out.push(p);
            }
        } else if p.is_dir() {
            walk(&p, rest, literal_brackets, out);
        }
    }
}

/// One path segment against `*`, `?` and (unless `literal_brackets`) `[abc]` / `[a-z]` / `[!a]`.
fn glob_match(pat: &str, name: &str, literal_brackets: bool) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    fn class(set: &[char], c: char) -> bool {
        let (negate, set) = match set.first() {
            Some('!' | '^') => (true, &set[1..]),
            _ => (false, set),
        };
        let mut k = 0;
        let mut hit = false;
        while k < set.len() {
            if k + 2 < set.len() && set[k + 1] == '-' {
                hit |= set[k] <= c && c <= set[k + 2];
                k += 3;
            } else {
                hit |= set[k] == c;
                k += 1;
            }
        }
        hit != negate
    }
    fn go(p: &[char], n: &[char], lit: bool) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..], lit)),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..], lit),
            Some('[') if !lit => match p.iter().position(|c| *c == ']') {
                Some(end) if !n.is_empty() => class(&p[1..end], n[0]) && go(&p[end + 1..], &n[1..], lit),
                _ => false,
            },
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..], lit),
        }
    }
    go(&p, &n, literal_brackets)
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
        // fast-glob's patterns: braces, classes (or literal brackets), and no
        // error for a path that matches nothing
        dir.write("/g/a(1).txt", b"", false).unwrap();
        dir.write("/g/b[2].txt", b"", false).unwrap();
        dir.write("/g/c3.csv", b"", false).unwrap();
        let globbed = |p: &str, lit: bool| dir.glob(p, lit).unwrap().into_iter().map(|(p, _)| p).collect::<Vec<_>>();
        assert_eq!(globbed("/g/*.{txt,csv}", true), ["/g/a(1).txt", "/g/b[2].txt", "/g/c3.csv"]);
        assert_eq!(globbed("/g/b[2].txt", true), ["/g/b[2].txt"]);
        assert_eq!(globbed("/g/c[0-9].csv", false), ["/g/c3.csv"]);
        assert_eq!(globbed("/g/c[!0-9].csv", false), Vec::<String>::new());
        assert_eq!(globbed("/g/a(1).txt", true), ["/g/a(1).txt"]);
        assert!(globbed("/g/missing.txt", true).is_empty());
        assert!(dir.glob("/g/../../x/*", true).unwrap_err().contains("not allowed"));
        let root = dir.root().unwrap().to_path_buf();
        drop(dir);
        assert!(!root.exists(), "the scratch folder is removed with the execution");
    }
}
