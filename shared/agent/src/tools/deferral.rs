//! Tool deferral: only the tools of [`ALWAYS_LOADED`] are in every model
//! call; the others (and every connected MCP server's tools) are found with
//! `search_tools` and added to the run's later calls with `load_tool`, so
//! the model's context stays small. A deferred tool called by its exact
//! name still runs (and is loaded from then on): the name is all loading
//! would have given.

use super::{Audience, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use serde_json::{json, Value};

/// The tools every model call carries. A tool whose job is to reveal an
/// absence or redirect attention cannot be found by searching for it, so it
/// belongs here (`mcp-servers`: when nothing is connected, a search finds
/// no MCP tool; `conversation-history`: recall only works proactively;
/// `save_user_preference`: a preference can come at any time).
pub const ALWAYS_LOADED: &[&str] = &[
    "ask-user",
    "workflows",
    "build-workflow",
    "executions",
    "credentials",
    "data-tables",
    "nodes",
    "research",
    "n8n-docs",
    "verify-built-workflow",
    "parse-file",
    "mcp-servers",
    "conversation-history",
    "save_user_preference",
    "load_skill",
    "workspace_list_files",
    "workspace_read_file",
    "workspace_write_file",
    "workspace_edit_file",
    "workspace_grep",
    // what a checkpoint task needs to finish (CHECKPOINT_FOLLOW_UP_TOOL_NAMES)
    "complete-checkpoint",
    SEARCH_TOOLS,
    LOAD_TOOL,
];

pub const SEARCH_TOOLS: &str = "search_tools";
pub const LOAD_TOOL: &str = "load_tool";
/// Results one search returns at most.
pub const MAX_RESULTS: usize = 10;

pub fn is_always_loaded(name: &str) -> bool {
    ALWAYS_LOADED.contains(&name)
}

/// How well a tool matches the query's words: name hits count most.
fn score(tool: &dyn Tool, words: &[String]) -> usize {
    let name = tool.name().to_ascii_lowercase();
    let description = tool.description().to_ascii_lowercase();
    words.iter().map(|w| if name.contains(w.as_str()) { 3 } else if description.contains(w.as_str()) { 1 } else { 0 }).sum()
}

/// A description's first sentence, for a result list.
fn summary(description: &str) -> String {
    let first = description.split_inclusive(". ").next().unwrap_or(description).trim();
    crate::files::cut(first, 300).0
}

pub struct SearchTools;

impl Tool for SearchTools {
    fn name(&self) -> &str {
        SEARCH_TOOLS
    }

    fn description(&self) -> &str {
        "Find tools you do not have loaded yet (planning with create-tasks, task control, workspace folders and tags, \
model catalog search, evaluation configs, connected MCP servers' tools, …) by what they do. Load one with load_tool."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "What the tool should do, in a few words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "Max results (default 5)"}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn audience(&self) -> Audience {
        Audience::All
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let query = args["query"].as_str().unwrap_or_default().to_ascii_lowercase();
            let words: Vec<String> = query.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(str::to_owned).collect();
            let limit = args.get("limit").and_then(Value::as_u64).map_or(5, |l| l as usize);
            let mut hits: Vec<(usize, &dyn Tool)> = ctx
                .toolbox
                .available(ctx.offer)
                .filter(|t| !is_always_loaded(t.name()))
                .map(|t| (score(t.as_ref(), &words), t.as_ref()))
                .filter(|(s, _)| *s > 0)
                .collect();
            hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name().cmp(b.1.name())));
            let results: Vec<Value> = hits
                .into_iter()
                .take(limit)
                .map(|(_, t)| json!({"name": t.name(), "description": summary(t.description()), "loaded": ctx.offer.loaded.contains(t.name())}))
                .collect();
            let hint = if results.is_empty() {
                "No deferred tool matches; try other words. Your loaded tools are already in your tool list."
            } else {
                "Load a tool with load_tool({toolName}) to use it from your next step."
            };
            ToolOutcome::Done(json!({"results": results, "hint": hint}))
        })
    }
}

pub struct LoadTool;

impl Tool for LoadTool {
    fn name(&self) -> &str {
        LOAD_TOOL
    }

    fn description(&self) -> &str {
        "Load a tool found with search_tools: its full definition is in your tool list from your next step on, for the rest of this run."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"toolName": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The tool's exact name, from search_tools"}},
            "required": ["toolName"],
            "additionalProperties": false
        })
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let name = args["toolName"].as_str().unwrap_or_default();
            match ctx.toolbox.callable(ctx.offer, name) {
                Some(t) if is_always_loaded(t.name()) => ToolOutcome::Done(json!({"loaded": [name], "message": format!("{name} is always loaded; call it directly.")})),
                Some(t) => ToolOutcome::Done(json!({"loaded": [t.name()], "message": format!("{name} is loaded: call it from your next step.")})),
                None => ToolOutcome::Failed(format!("No tool named {name:?} is available to you; use search_tools to find one.")),
            }
        })
    }
}

/// The tools a settled call loaded: `load_tool`'s result names them.
pub fn loaded_by(tool_name: &str, result: &Value) -> Vec<String> {
    if tool_name != LOAD_TOOL {
        return Vec::new();
    }
    result.get("loaded").and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Offer, Registry, Toolbox};

    #[test]
    fn deferred_tools_are_left_out_until_loaded_and_every_always_loaded_name_exists() {
        let registry = Registry::standard();
        let names = registry.names();
        for n in ALWAYS_LOADED {
            assert!(names.iter().any(|x| x == n), "{n} is not a tool");
        }
        let mut offer = Offer { orchestrator: true, ..Offer::default() };
        let defs: Vec<String> = registry.definitions(&offer).into_iter().map(|d| d.name).collect();
        assert!(defs.contains(&"workflows".to_owned()) && !defs.contains(&"create-tasks".to_owned()), "{defs:?}");
        assert!(!defs.contains(&"parse-file".to_owned()), "no attachment, no parse-file");
        offer.loaded.insert("create-tasks".into());
        offer.attachments = true;
        let defs: Vec<String> = registry.definitions(&offer).into_iter().map(|d| d.name).collect();
        assert!(defs.contains(&"create-tasks".to_owned()) && defs.contains(&"parse-file".to_owned()));
        let toolbox = Toolbox::new(&registry, Vec::new());
        assert!(toolbox.callable(&Offer { orchestrator: true, ..Offer::default() }, "create-tasks").is_some(), "callable by name");
    }
}
