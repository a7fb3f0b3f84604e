//! `n8n-docs` (3 actions): lookup, search and read over the documentation
//! registry (`instance::docs`). Our own pages, so not untrusted data; answers
//! must cite the titles and public URLs returned.

use super::schema::action_variant as action;
use super::{Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::docs::{self, DocQuery, Page};
use serde_json::{json, Map, Value};

pub struct N8nDocs;

const DEFAULT_MAX_PAGES: usize = 3;
const MAX_PAGES: usize = 5;
const DEFAULT_MAX_RESULTS: usize = 8;
const MAX_RESULTS: usize = 20;
const DEFAULT_MAX_CONTENT: usize = 30_000;
const MAX_CONTENT: usize = 100_000;

const CITE: &str = "Cite the titles and public URLs (publicUrl, else url) of the pages you use.";

fn lookup_fields(extra: Value) -> Value {
    let mut f = json!({
        "query": {"type": "string", "maxLength": 300, "description": "What to look up; optional when credentialType, nodeType or documentationUrl says enough"},
        "intent": {"type": "string", "enum": ["credential-setup", "node-help", "hosting", "api", "general"], "description": "What the lookup is for; favours pages of that kind"},
        "credentialType": {"type": "string", "description": "Credential type name, e.g. httpHeaderAuth"},
        "credentialDisplayName": {"type": "string", "description": "Credential type display name, e.g. Header Auth"},
        "documentationUrl": {"type": "string", "description": "A documentation URL a node or credential type names"},
        "nodeType": {"type": "string", "description": "Node type, e.g. n8n-nodes-base.httpRequest"}
    });
    if let (Some(f), Value::Object(e)) = (f.as_object_mut(), extra) {
        f.extend(e);
    }
    f
}

fn int(fields: &Map<String, Value>, name: &str, default: usize, max: usize) -> Result<usize, String> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if (1..=max as u64).contains(&n) => Ok(n as usize),
            _ => Err(format!("{name} must be an integer between 1 and {max}")),
        },
    }
}

fn doc_query(fields: &Map<String, Value>) -> Result<DocQuery, String> {
    let mut m = fields.clone();
    for k in ["maxPages", "maxResults", "maxContentLength", "oauthRedirectUrl"] {
        m.remove(k);
    }
    let q: DocQuery = serde_json::from_value(Value::Object(m)).map_err(|e| format!("invalid arguments: {e}"))?;
    let blank = |o: &Option<String>| o.as_deref().is_none_or(|s| s.trim().is_empty());
    if blank(&q.query) && blank(&q.credential_type) && blank(&q.node_type) && blank(&q.documentation_url) && blank(&q.credential_display_name) {
        return Err("give a query, or a credentialType, nodeType or documentationUrl to look up".into());
    }
    Ok(q)
}

fn document(p: &Page, max: usize) -> Value {
    let len = p.content.chars().count();
    let content: String = if len > max { p.content.chars().take(max).collect() } else { p.content.clone() };
    json!({
        "url": p.url, "publicUrl": p.public_url, "title": p.title, "kind": p.kind,
        "content": content, "truncated": len > max, "contentLength": len,
    })
}

impl Tool for N8nDocs {
    fn name(&self) -> &'static str {
        "n8n-docs"
    }

    fn description(&self) -> &'static str {
        "Documentation of this instance: one page per node type and credential type (parameters, credentials, versions), \
and pages on setting up credentials, hosting and the API. lookup: the best pages with their content; search: ranked \
matches without content; read: one page by its registry url. Answers based on these pages must cite their titles and \
public URLs."
    }

    fn input_schema(&self) -> Value {
        let max_content = json!({"type": "integer", "minimum": 1, "maximum": MAX_CONTENT, "description": "Max content characters per page. Default 30000, max 100000"});
        json!({"oneOf": [
            action("lookup", "Ranked matches and the best matching pages with their content", lookup_fields(json!({
                "oauthRedirectUrl": {"type": "string", "description": "The OAuth redirect URL to register with the service, when setting up an OAuth credential"},
                "maxPages": {"type": "integer", "minimum": 1, "maximum": MAX_PAGES, "description": "Pages returned with content. Default 3, max 5"},
                "maxContentLength": max_content
            })), &[]),
            action("search", "Ranked registry matches without page content", lookup_fields(json!({
                "maxResults": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "Max matches. Default 8, max 20"}
            })), &[]),
            action("read", "One registry page by its url (from a lookup or search result)", json!({
                "url": {"type": "string", "minLength": 1, "description": "The page's registry url"},
                "maxContentLength": max_content
            }), &["url"]),
        ]})
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Value::Object(mut fields) = args else { return ToolOutcome::Failed("arguments must be an object".into()) };
            let action = fields.remove("action");
            let out = match action.as_ref().and_then(Value::as_str) {
                Some("lookup") => lookup(&fields),
                Some("search") => search(&fields),
                Some("read") => Ok(read(&fields)),
                other => Err(format!("unknown n8n-docs action {other:?}")),
            };
            match out {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => ToolOutcome::Failed(e),
            }
        })
    }
}

fn lookup(fields: &Map<String, Value>) -> Result<Value, String> {
    let q = doc_query(fields)?;
    let pages = int(fields, "maxPages", DEFAULT_MAX_PAGES, MAX_PAGES)?;
    let max = int(fields, "maxContentLength", DEFAULT_MAX_CONTENT, MAX_CONTENT)?;
    let hits = docs::search(&q);
    let mut out = json!({
        "matches": hits.iter().take(DEFAULT_MAX_RESULTS).map(|(s, p)| p.as_match(*s)).collect::<Vec<_>>(),
        "documents": hits.iter().take(pages).map(|(_, p)| document(p, max)).collect::<Vec<_>>(),
        "hint": CITE,
    });
    if let Some(r) = fields.get("oauthRedirectUrl").and_then(Value::as_str).filter(|r| !r.trim().is_empty()) {
        out["hint"] = json!(format!("{CITE} Register this OAuth redirect URL with the service: {}", r.trim()));
    }
    if hits.is_empty() {
        out["hint"] = json!("No page matches; try fewer or other words, or a nodeType or credentialType.");
    }
    Ok(out)
}

fn search(fields: &Map<String, Value>) -> Result<Value, String> {
    let q = doc_query(fields)?;
    let max = int(fields, "maxResults", DEFAULT_MAX_RESULTS, MAX_RESULTS)?;
    let hits = docs::search(&q);
    Ok(json!({
        "matches": hits.iter().take(max).map(|(s, p)| p.as_match(*s)).collect::<Vec<_>>(),
        "total": hits.len(),
        "hint": if hits.is_empty() { "No page matches; try fewer or other words." } else { CITE },
    }))
}

fn read(fields: &Map<String, Value>) -> Value {
    let url = fields.get("url").and_then(Value::as_str).unwrap_or_default();
    let max = match int(fields, "maxContentLength", DEFAULT_MAX_CONTENT, MAX_CONTENT) {
        Ok(m) => m,
        Err(e) => return json!({"documents": [], "error": e}),
    };
    match docs::read(url) {
        Some(p) => json!({"documents": [document(p, max)], "hint": CITE}),
        None => json!({"documents": [], "error": format!("{url:?} is not a page of the documentation registry; read only serves urls that lookup or search returned")}),
    }
}
