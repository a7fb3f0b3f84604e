//! The workspace file tools: `workspace_list_files`, `workspace_read_file`,
//! `workspace_write_file`, `workspace_edit_file`, `workspace_grep`. They map
//! arguments onto [`crate::workspace::ThreadWorkspace`] (the thread's files
//! with the read-only knowledge base over them) and shape its answers.

use super::{Tool, ToolContext, ToolOutcome};
use crate::workspace::{self, ThreadWorkspace, WorkspaceError};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use store::StoreError;

/// Runs `f` on the thread's workspace; errors become a `tool-error` the
/// model can act on (infrastructure details are logged, not shown).
async fn with_workspace<'a, F, Fut>(ctx: &'a ToolContext<'a>, f: F) -> ToolOutcome
where
    F: FnOnce(ThreadWorkspace<'a>) -> Fut,
    Fut: std::future::Future<Output = Result<Value, WorkspaceError>>,
{
    let instance = match ctx.instance() {
        Ok(i) => i,
        Err(e) => return ToolOutcome::Failed(e),
    };
    match f(ThreadWorkspace { store: &instance.data.workspace, thread: ctx.thread_id }).await {
        Ok(v) => ToolOutcome::Done(v),
        Err(e) => ToolOutcome::Failed(message(e)),
    }
}

pub(crate) fn message(e: WorkspaceError) -> String {
    match e {
        WorkspaceError::Store(StoreError::Invalid(m) | StoreError::Conflict(m) | StoreError::NotFound(m)) => m,
        WorkspaceError::Store(other) => {
            tracing::error!(error = %other, "workspace store failed");
            "the workspace is unavailable right now; try again".into()
        }
        other => other.to_string(),
    }
}

fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn usize_arg(args: &Value, name: &str) -> Option<usize> {
    args.get(name).and_then(Value::as_u64).map(|n| n as usize)
}

const PATH_DOC: &str = "Workspace path, relative, `/`-separated (e.g. `orders.workflow.ts`, `src/notify.json`)";

pub struct ListFiles;

impl Tool for ListFiles {
    fn name(&self) -> &'static str {
        "workspace_list_files"
    }
    fn description(&self) -> &'static str {
        "List the files of this conversation's workspace (your own files and the read-only knowledge-base/ folder), with sizes."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Folder to list (default: the whole workspace), e.g. `knowledge-base/templates`"}},
            "additionalProperties": false
        })
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(with_workspace(ctx, move |ws| async move {
            let files = ws.list(args.get("path").and_then(Value::as_str)).await?;
            let usage = ws.store.usage(ws.thread).await?;
            let limits = ws.store.limits();
            Ok(json!({
                "total": files.len(),
                "files": files,
                "usage": {"bytes": usage.bytes, "maxBytes": limits.max_thread_bytes, "files": usage.files, "maxFiles": limits.max_files, "maxFileBytes": limits.max_file_bytes},
            }))
        }))
    }
}

pub struct ReadFile;

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "workspace_read_file"
    }
    fn description(&self) -> &'static str {
        "Read a workspace file, whole or a window of lines (offset is the first line, 1-based; limit the number of lines, default 2000)."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": PATH_DOC},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based, default 1)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to return (default 2000)"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(with_workspace(ctx, move |ws| async move {
            let path = str_arg(&args, "path");
            let (content, rev) = ws.read(path).await?;
            let window = workspace::window(path, &content, usize_arg(&args, "offset"), usize_arg(&args, "limit"))?;
            let mut out = serde_json::to_value(window).map_err(|e| WorkspaceError::Invalid(e.to_string()))?;
            if rev.is_none() {
                out["readOnly"] = json!(true);
            }
            Ok(out)
        }))
    }
}

pub struct WriteFile;

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        "workspace_write_file"
    }
    fn description(&self) -> &'static str {
        "Create or overwrite a workspace file with the given content (workflow source: `.workflow.ts` SDK code or `.json` workflow JSON). knowledge-base/ is read-only."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": PATH_DOC},
                "content": {"type": "string", "description": "The complete new content of the file"}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(with_workspace(ctx, move |ws| async move {
            let e = ws.write(str_arg(&args, "path"), str_arg(&args, "content")).await?;
            Ok(json!({"path": e.path, "size": e.size, "created": e.rev == 1}))
        }))
    }
}

pub struct EditFile;

impl Tool for EditFile {
    fn name(&self) -> &'static str {
        "workspace_edit_file"
    }
    fn description(&self) -> &'static str {
        "Replace exact text in a workspace file: oldString must occur exactly once (or pass replaceAll). Fails, changing nothing, when oldString is absent or ambiguous."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": PATH_DOC},
                "oldString": {"type": "string", "minLength": 1, "description": "The exact text to replace, whitespace included (copy it from workspace_read_file)"},
                "newString": {"type": "string", "description": "The text to put in its place"},
                "replaceAll": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one (default false)"}
            },
            "required": ["path", "oldString", "newString"],
            "additionalProperties": false
        })
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(with_workspace(ctx, move |ws| async move {
            let all = args.get("replaceAll").and_then(Value::as_bool).unwrap_or(false);
            let (e, n) = ws.edit(str_arg(&args, "path"), str_arg(&args, "oldString"), str_arg(&args, "newString"), all).await?;
            Ok(json!({"path": e.path, "size": e.size, "replacements": n}))
        }))
    }
}

pub struct Grep;

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "workspace_grep"
    }
    fn description(&self) -> &'static str {
        "Search workspace files (knowledge base included) for a regular expression, line by line; returns path, line number and text of each match (at most 100)."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "Regular expression (Rust syntax; `(?i)` for case-insensitive)"},
                "path": {"type": "string", "description": "File or folder to search (default: the whole workspace)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(with_workspace(ctx, move |ws| async move {
            let r = ws.grep(str_arg(&args, "pattern"), args.get("path").and_then(Value::as_str)).await?;
            serde_json::to_value(r).map_err(|e| WorkspaceError::Invalid(e.to_string()))
        }))
    }
}
