//! `mcp-servers` (orchestrator): the external MCP servers of the registry
//! (`crate::mcp`). connected / details / search read; connect suspends with
//! the "Available tools" card (each server's tools, the credential it needs
//! and the user's credentials of that type), and on the user's answer
//! connects what the servers confirm: a live handshake and tool listing
//! with the chosen credential, then the connection is stored.

use super::schema::action_variant as action;
use super::{Audience, Decision, Gate, Tool, ToolContext, ToolOutcome};
use crate::mcp::{self, ServerConfig};
use futures::future::BoxFuture;
use protocol::events::{ConfirmationRequest, Severity};
use serde_json::{json, Value};
use store::data::mcp_connections::McpConnection;

pub struct McpServersTool;

/// Results one search returns at most.
pub const MAX_SEARCH_RESULTS: usize = 5;
/// Servers one connect call may offer.
pub const MAX_CONNECT: usize = 3;

fn strings(args: &Value, field: &str) -> Vec<String> {
    args.get(field).and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

/// How well a server matches the queries (title and slug count most).
fn score(s: &ServerConfig, queries: &[String]) -> usize {
    let head = format!("{} {}", s.slug, s.title).to_lowercase();
    let body = format!("{} {}", s.description, s.tools.join(" ")).to_lowercase();
    queries
        .iter()
        .flat_map(|q| q.to_lowercase().split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter(|w| w.len() > 1)
        .map(|w| if head.contains(&w) { 3 } else if body.contains(&w) { 1 } else { 0 })
        .sum()
}

impl Tool for McpServersTool {
    fn name(&self) -> &str {
        "mcp-servers"
    }

    fn description(&self) -> &str {
        "External MCP servers (other services' tools). connected: the servers the user connected, with tool counts. \
details: one connected server's tool names (its tools are named mcp_<server>__<tool>; find and load them with \
search_tools / load_tool). search: servers the user has not connected that match what you need. connect: ask the user \
to connect up to 3 servers found by search (a card lists their tools and the credential each needs); returns the \
servers actually connected."
    }

    fn input_schema(&self) -> Value {
        json!({"oneOf": [
            action("connected", "Every connected MCP server, with its tool count", json!({}), &[]),
            action("details", "One server's tool names", json!({
                "slug": {"type": "string", "minLength": 1, "maxLength": 40, "description": "Server slug, as returned by connected"}
            }), &["slug"]),
            action("search", "Servers the user has not connected, best match first (at most 5)", json!({
                "queries": {"type": "array", "minItems": 1, "maxItems": 5, "items": {"type": "string", "minLength": 1, "maxLength": 100, "description": "Free text matched against server name, title, description and tools"}, "description": "What the server should offer"}
            }), &["queries"]),
            action("connect", "Ask the user to connect servers found by search", json!({
                "serverSlugs": {"type": "array", "minItems": 1, "maxItems": MAX_CONNECT, "items": {"type": "string", "description": "A slug from search"}, "description": "Slugs returned by search, best match first, max 3"},
                "reason": {"type": "string", "minLength": 1, "maxLength": 300, "description": "One sentence for the confirmation record: why these servers"}
            }), &["serverSlugs", "reason"]),
        ]})
    }

    fn audience(&self) -> Audience {
        Audience::Orchestrator
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            if args.get("action").and_then(Value::as_str) != Some("connect") {
                return Ok(None);
            }
            let slugs = strings(args, "serverSlugs");
            let mut servers = Vec::new();
            for slug in &slugs {
                let s = ctx.rt.mcp_servers.get(slug).ok_or_else(|| format!("No MCP server {slug:?} in the registry; use search to find one."))?;
                let credentials = match &s.credential_type {
                    Some(kind) => {
                        let inst = ctx.instance()?;
                        let caller = ctx.caller();
                        let project = match ctx.project_id {
                            Some(p) => p.to_owned(),
                            None => inst.user(&caller).await.map_err(|e| e.message())?.personal_project_id,
                        };
                        let list = inst.usable_credentials(&caller, &project, kind).await.map_err(|e| e.message())?;
                        list.into_iter().map(|c| json!({"id": c.id, "name": c.name})).collect()
                    }
                    None => Vec::new(),
                };
                servers.push(json!({
                    "slug": s.slug, "title": s.title, "description": s.description, "tools": s.tools,
                    "credentialType": s.credential_type, "credentials": credentials,
                }));
            }
            let titles: Vec<&str> = slugs.iter().filter_map(|s| ctx.rt.mcp_servers.get(s)).map(|s| s.title.as_str()).collect();
            let map = args.as_object().cloned().unwrap_or_default();
            let mut request = ConfirmationRequest::approval("", "", "mcp-servers", map, Severity::Info, format!("Connect {}?", titles.join(", ")));
            request.resource_name = Some(titles.join(", "));
            request.mcp_connect_request = Some(json!({"reason": args.get("reason"), "servers": servers}));
            Ok(Some(Gate::permission(request, "mcp-servers.connect")))
        })
    }

    fn allow_key(&self, _args: &Value) -> Option<String> {
        // Each connection is the user's choice (and credential): never granted for the session.
        None
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match args.get("action").and_then(Value::as_str).unwrap_or_default() {
                "connect" => connect(ctx, &args, &Decision::default()).await,
                other => read(ctx, other, &args).await,
            }
        })
    }

    fn resume<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if !decision.approved {
                return ToolOutcome::Done(json!({"connectedSlugs": [], "message": "The user skipped connecting; nothing was connected."}));
            }
            connect(ctx, &args, &decision).await
        })
    }
}

async fn read(ctx: &ToolContext<'_>, action: &str, args: &Value) -> ToolOutcome {
    let connections = match ctx.rt.mcp_connections.list(ctx.user_id).await {
        Ok(c) => c.into_iter().filter(|c| ctx.rt.mcp_servers.get(&c.slug).is_some()).collect::<Vec<_>>(),
        Err(e) => return ToolOutcome::Failed(format!("the connections could not be read: {e}")),
    };
    match action {
        "connected" => {
            let servers: Vec<Value> = connections.iter().map(|c| json!({"slug": c.slug, "toolCount": c.tools.len()})).collect();
            let mut out = json!({"servers": servers});
            if connections.is_empty() {
                out["hint"] = json!("No MCP server is connected. Use search to find one for the task, then connect to let the user connect it.");
            }
            ToolOutcome::Done(out)
        }
        "details" => {
            let slug = args.get("slug").and_then(Value::as_str).unwrap_or_default();
            match connections.iter().find(|c| c.slug == slug) {
                Some(c) => {
                    let tools: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
                    let mut out = json!({"slug": slug, "tools": tools});
                    if tools.is_empty() {
                        out["hint"] = json!(format!("{slug} is connected but its server listed no tools."));
                    }
                    ToolOutcome::Done(out)
                }
                None => ToolOutcome::Done(json!({"slug": slug, "tools": [], "hint": format!("{slug} is not connected; find it with search and connect it first.")})),
            }
        }
        "search" => {
            let queries = strings(args, "queries");
            let mut hits: Vec<(usize, &ServerConfig)> = ctx
                .rt
                .mcp_servers
                .all()
                .iter()
                .filter(|s| !connections.iter().any(|c| c.slug == s.slug))
                .map(|s| (score(s, &queries), s))
                .filter(|(n, _)| *n > 0)
                .collect();
            hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.slug.cmp(&b.1.slug)));
            let results: Vec<Value> = hits
                .into_iter()
                .take(MAX_SEARCH_RESULTS)
                .map(|(_, s)| json!({"slug": s.slug, "title": s.title, "description": s.description, "tools": s.tools}))
                .collect();
            let mut out = json!({"results": results});
            if results.is_empty() {
                out["hint"] = json!("No unconnected server matches; the integration may not be available as an MCP server here.");
            }
            ToolOutcome::Done(out)
        }
        other => ToolOutcome::Failed(format!("unknown mcp-servers action {other:?}")),
    }
}

/// Connects each server the call named with the credential the user chose
/// for it (`answers.connect[slug]`, or the card's pick by credential type):
/// a live handshake and tool listing decide, then the connection is kept.
async fn connect(ctx: &ToolContext<'_>, args: &Value, decision: &Decision) -> ToolOutcome {
    let chosen = decision.chosen_credentials();
    let per_slug = decision.answers.as_ref().and_then(|a| a.get("connect")).and_then(Value::as_object).cloned().unwrap_or_default();
    let mut connected = Vec::new();
    let mut problems = Vec::new();
    for slug in strings(args, "serverSlugs") {
        let Some(server) = ctx.rt.mcp_servers.get(&slug) else {
            problems.push(format!("{slug}: not in the registry"));
            continue;
        };
        if per_slug.get(&slug).is_some_and(Value::is_null) {
            problems.push(format!("{slug}: skipped by the user"));
            continue;
        }
        let credential = per_slug
            .get(&slug)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| server.credential_type.as_ref().and_then(|t| chosen.get(t).cloned()));
        match mcp::list_tools(ctx, server, credential.as_deref()).await {
            Ok(tools) => {
                let conn = McpConnection { slug: slug.clone(), credential_id: credential, connected_at: store::data::db::now_iso(), tools };
                match ctx.rt.mcp_connections.put(ctx.user_id, &conn).await {
                    Ok(()) => connected.push(slug),
                    Err(e) => problems.push(format!("{slug}: {e}")),
                }
            }
            Err(e) => problems.push(format!("{slug}: {e}")),
        }
    }
    let mut message = if connected.is_empty() { "Nothing was connected.".to_owned() } else { format!("Connected {}; their tools are found with search_tools.", connected.join(", ")) };
    if !problems.is_empty() {
        message.push_str(&format!(" Not connected: {}.", problems.join("; ")));
    }
    ToolOutcome::Done(json!({"connectedSlugs": connected, "message": message}))
}
