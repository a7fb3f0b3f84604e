//! The documentation registry behind `n8n-docs`: one Markdown page per node
//! type and credential type, generated from the engine's catalog (so it
//! always matches the build), and hand-written pages about credentials,
//! hosting and the API (`docs/pages/*.md`, compiled in). Pages carry a public
//! URL where one exists (n8n's page for a node or credential type); the
//! others have a `docs://instance-ai/…` address. Search is a ranked match
//! over titles, keywords and text, boosted by the node or credential type
//! and the intent a call names.

use engine::catalog::credential_types::{credential_types, nodes_accepting, CredentialType};
use engine::catalog::{self, NodeDescription, NodeProperty};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Node,
    Credential,
    Hosting,
    Api,
    General,
}

/// What a lookup is for (`intent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Intent {
    CredentialSetup,
    NodeHelp,
    Hosting,
    Api,
    General,
}

impl Intent {
    fn favours(self, kind: Kind) -> bool {
        matches!(
            (self, kind),
            (Intent::CredentialSetup, Kind::Credential) | (Intent::NodeHelp, Kind::Node) | (Intent::Hosting, Kind::Hosting) | (Intent::Api, Kind::Api)
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The registry address `read` accepts.
    pub url: String,
    /// n8n's public page on the same subject, when there is one.
    pub public_url: Option<String>,
    pub title: String,
    pub kind: Kind,
    pub node_type: Option<String>,
    pub credential_type: Option<String>,
    keywords: Vec<String>,
    pub content: String,
}

/// A search: the shared lookup fields of `n8n-docs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocQuery {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub intent: Option<Intent>,
    #[serde(default)]
    pub credential_type: Option<String>,
    #[serde(default)]
    pub credential_display_name: Option<String>,
    #[serde(default)]
    pub documentation_url: Option<String>,
    #[serde(default)]
    pub node_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Match {
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    pub title: String,
    pub kind: Kind,
    pub score: u32,
    pub summary: String,
}

const PAGES: &[(&str, &str)] = &[
    ("hosting-local", include_str!("pages/hosting-local.md")),
    ("hosting-aws", include_str!("pages/hosting-aws.md")),
    ("api-rest", include_str!("pages/api-rest.md")),
    ("api-mcp", include_str!("pages/api-mcp.md")),
    ("credentials-setup", include_str!("pages/credentials-setup.md")),
];

pub const INTERNAL_PREFIX: &str = "docs://instance-ai/";

/// Core nodes n8n's documentation has no page for (legacy, training, testing).
const WITHOUT_PUBLIC_PAGE: &[&str] = &[
    "n8n-nodes-base.function",
    "n8n-nodes-base.functionItem",
    "n8n-nodes-base.readBinaryFile",
    "n8n-nodes-base.readBinaryFiles",
    "n8n-nodes-base.writeBinaryFile",
    "n8n-nodes-base.htmlExtract",
    "n8n-nodes-base.itemLists",
    "n8n-nodes-base.n8nTrainingCustomerDatastore",
    "n8n-nodes-base.n8nTrainingCustomerMessenger",
    "n8n-nodes-testing.testData",
];

/// n8n's page of a node: core nodes (no codex category, or "Core Nodes")
/// under `core-nodes/`, service nodes under `app-nodes/`.
fn node_public_url(d: &NodeDescription) -> Option<String> {
    if WITHOUT_PUBLIC_PAGE.contains(&d.name.as_str()) {
        return None;
    }
    let slug = d.name.strip_prefix('@').unwrap_or(&d.name).trim_start_matches("n8n/").to_ascii_lowercase();
    let categories: Vec<&str> = d.codex.as_ref().and_then(|c| c.get("categories")).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let section = if categories.is_empty() || categories.contains(&"Core Nodes") { "core-nodes" } else { "app-nodes" };
    (slug.starts_with("n8n-nodes-base.") || slug.starts_with("n8n-nodes-langchain.")).then(|| format!("https://docs.n8n.io/integrations/builtin/{section}/{slug}/"))
}

fn property_line(p: &NodeProperty, out: &mut String) {
    let mut line = format!("- **{}** (`{}`, {}", p.display_name, p.name, p.prop_type);
    if p.required {
        line.push_str(", required");
    }
    line.push(')');
    if let Some(d) = p.description.as_deref().filter(|d| !d.is_empty()) {
        line.push_str(": ");
        line.push_str(d);
    }
    if p.prop_type == "options" || p.prop_type == "multiOptions" {
        let names: Vec<String> = p.options.iter().flatten().filter_map(|o| o.get("name").and_then(Value::as_str).map(str::to_owned)).take(12).collect();
        if !names.is_empty() {
            line.push_str(&format!(" Options: {}.", names.join(", ")));
        }
    }
    out.push_str(&line);
    out.push('\n');
}

fn node_page(d: &NodeDescription) -> Page {
    let mut c = format!("# {} node\n\n{}\n\nType `{}`, versions {}{}.\n", d.display_name, d.description, d.name,
        d.versions().iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "),
        if d.is_trigger() { "; a trigger: it starts workflows" } else { "" });
    if let Some(hint) = d.builder_hint.as_ref().and_then(|h| h.get("message")).and_then(Value::as_str) {
        c.push_str(&format!("\n{hint}\n"));
    }
    let creds = crate::catalog::credential_types(d);
    if !creds.is_empty() {
        c.push_str("\n## Credentials\n\n");
        for t in &creds {
            let name = engine::catalog::credential_types::credential_type(t).map(|ct| ct.display_name.as_str()).unwrap_or(t);
            c.push_str(&format!("- {name} (`{t}`)\n"));
        }
    }
    if !d.properties.is_empty() {
        c.push_str("\n## Parameters\n\n");
        for p in d.properties.iter().filter(|p| p.prop_type != "notice") {
            property_line(p, &mut c);
        }
    }
    let mut keywords: Vec<String> = d.codex.as_ref().and_then(|c| c.get("alias")).and_then(Value::as_array).into_iter().flatten().filter_map(|a| a.as_str().map(str::to_lowercase)).collect();
    keywords.push(d.name.to_ascii_lowercase());
    keywords.push(d.name.rsplit('.').next().unwrap_or_default().to_ascii_lowercase());
    Page {
        url: node_public_url(d).unwrap_or_else(|| format!("{INTERNAL_PREFIX}nodes/{}", d.name)),
        public_url: node_public_url(d),
        title: format!("{} node", d.display_name),
        kind: Kind::Node,
        node_type: Some(d.name.clone()),
        credential_type: None,
        keywords,
        content: c,
    }
}

fn credential_page(t: &CredentialType) -> Page {
    let mut c = format!("# {} credentials\n\n{}\n\nCredential type `{}`.", t.display_name, t.description, t.name);
    if t.generic_auth {
        c.push_str(" A generic HTTP authentication type: it says how requests authenticate, not which service they go to.");
    }
    c.push_str("\n\n## Fields\n\n");
    for p in &t.properties {
        property_line(p, &mut c);
    }
    c.push_str(match &t.test {
        Some(_) => "\nA credential of this type can be tested: the test makes a request as a node would.\n",
        None => "\nThis type has no connection test.\n",
    });
    let used_by: Vec<String> = nodes_accepting(&t.name).iter().map(|n| format!("{} (`{}`)", n.display_name, n.name)).collect();
    if !used_by.is_empty() {
        c.push_str(&format!("\nUsed by: {}.\n", used_by.join(", ")));
    }
    c.push_str("\nSecrets are entered in the credential form (the credentials REST API), never in the chat.\n");
    Page {
        url: t.documentation_url.clone().map(|u| format!("{u}#{}", t.name)).unwrap_or_else(|| format!("{INTERNAL_PREFIX}credentials/{}", t.name)),
        public_url: t.documentation_url.clone(),
        title: format!("{} credentials", t.display_name),
        kind: Kind::Credential,
        node_type: None,
        credential_type: Some(t.name.clone()),
        keywords: vec![t.name.to_ascii_lowercase(), "credential".into(), "credentials".into()],
        content: c,
    }
}

fn written_page(slug: &str, source: &str) -> Page {
    let (front, body) = source.strip_prefix("---\n").and_then(|r| r.split_once("\n---\n")).unwrap_or(("", source));
    let field = |name: &str| front.lines().find_map(|l| l.strip_prefix(&format!("{name}: "))).unwrap_or_default().trim().to_owned();
    let kind = match field("kind").as_str() {
        "hosting" => Kind::Hosting,
        "api" => Kind::Api,
        "credential" => Kind::Credential,
        "node" => Kind::Node,
        _ => Kind::General,
    };
    Page {
        url: format!("{INTERNAL_PREFIX}{slug}"),
        public_url: None,
        title: field("title"),
        kind,
        node_type: None,
        credential_type: None,
        keywords: field("keywords").split(',').map(|k| k.trim().to_lowercase()).filter(|k| !k.is_empty()).collect(),
        content: body.trim().to_owned() + "\n",
    }
}

/// Every page, built once.
pub fn pages() -> &'static [Page] {
    static ALL: OnceLock<Vec<Page>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<Page> = PAGES.iter().map(|(slug, src)| written_page(slug, src)).collect();
        all.extend(credential_types().iter().map(credential_page));
        all.extend(catalog::all().iter().map(|d| node_page(d)));
        all
    })
}

/// The page at a registry address (exactly, or without a trailing slash or fragment difference).
pub fn read(url: &str) -> Option<&'static Page> {
    let url = url.trim();
    let norm = |u: &str| u.trim_end_matches('/').to_ascii_lowercase();
    pages().iter().find(|p| p.url == url).or_else(|| pages().iter().find(|p| norm(&p.url) == norm(url)))
}

fn words(s: &str) -> Vec<String> {
    s.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(str::to_owned).collect()
}

const STOP: &[&str] = &["the", "to", "a", "an", "how", "do", "i", "in", "of", "for", "and", "or", "with", "is", "my", "what", "use", "can", "on", "n8n"];

fn score(p: &Page, terms: &[String], q: &DocQuery) -> u32 {
    let title = words(&p.title);
    let body: HashMap<String, u32> = words(&p.content).into_iter().fold(HashMap::new(), |mut m, w| {
        *m.entry(w).or_default() += 1;
        m
    });
    let mut s = 0u32;
    for t in terms {
        if title.contains(t) {
            s += 6;
        }
        if p.keywords.iter().any(|k| k == t || words(k).contains(t)) {
            s += 4;
        }
        s += body.get(t).copied().unwrap_or(0).min(5);
    }
    let eq = |a: &Option<String>, b: &Option<String>| matches!((a, b), (Some(a), Some(b)) if a.eq_ignore_ascii_case(b.trim()));
    if eq(&p.node_type, &q.node_type) {
        s += 100;
    }
    if eq(&p.credential_type, &q.credential_type) {
        s += 100;
    }
    if let (Some(ct), Kind::Node) = (q.credential_type.as_deref(), p.kind) {
        if p.content.contains(&format!("(`{ct}`)")) {
            s += 10;
        }
    }
    if let (Some(want), Some(have)) = (q.documentation_url.as_deref(), p.public_url.as_deref()) {
        if want.trim().trim_end_matches('/').eq_ignore_ascii_case(have.trim_end_matches('/')) {
            s += 60;
        }
    }
    if s > 0 && q.intent.is_some_and(|i| i.favours(p.kind)) {
        s += 8;
    }
    s
}

/// Pages that match, best first (ties: the registry's order).
pub fn search(q: &DocQuery) -> Vec<(u32, &'static Page)> {
    let mut text = q.query.clone().unwrap_or_default();
    if let Some(n) = &q.credential_display_name {
        text.push(' ');
        text.push_str(n);
    }
    let terms: Vec<String> = words(&text).into_iter().filter(|w| !STOP.contains(&w.as_str())).collect();
    let mut hits: Vec<(u32, &Page)> = pages().iter().map(|p| (score(p, &terms, q), p)).filter(|(s, _)| *s > 0).collect();
    hits.sort_by(|a, b| b.0.cmp(&a.0));
    hits
}

impl Page {
    /// The first paragraph after the heading, for result lists.
    pub fn summary(&self) -> String {
        let para = self.content.split("\n\n").find(|b| !b.trim_start().starts_with('#') && !b.trim().is_empty()).unwrap_or_default();
        let s: String = para.split_whitespace().collect::<Vec<_>>().join(" ");
        if s.chars().count() > 240 { s.chars().take(239).collect::<String>() + "…" } else { s }
    }

    pub fn as_match(&self, score: u32) -> Match {
        Match { url: self.url.clone(), public_url: self.public_url.clone(), title: self.title.clone(), kind: self.kind, score, summary: self.summary() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(query: &str) -> DocQuery {
        DocQuery { query: Some(query.into()), ..Default::default() }
    }

    #[test]
    fn every_node_and_credential_type_has_a_page_and_urls_are_unique() {
        let all = pages();
        assert!(catalog::all().iter().all(|d| all.iter().any(|p| p.node_type.as_deref() == Some(d.name.as_str()))));
        assert!(credential_types().iter().all(|t| all.iter().any(|p| p.credential_type.as_deref() == Some(t.name.as_str()))));
        let mut urls: Vec<&str> = all.iter().map(|p| p.url.as_str()).collect();
        urls.sort();
        let n = urls.len();
        urls.dedup();
        assert_eq!(urls.len(), n, "registry URLs are unique");
        assert!(all.iter().all(|p| !p.title.is_empty() && !p.content.is_empty()));
    }

    #[test]
    fn searches_rank_the_page_a_person_means_first() {
        assert_eq!(search(&q("send an HTTP request to an API")).first().unwrap().1.node_type.as_deref(), Some("n8n-nodes-base.httpRequest"));
        assert_eq!(search(&q("deploy to AWS lambda")).first().unwrap().1.title, "Deploying Instance AI on AWS");
        assert_eq!(search(&q("MCP server oauth")).first().unwrap().1.title, "Instance AI as an MCP server");
        let by_type = search(&DocQuery { credential_type: Some("httpHeaderAuth".into()), intent: Some(Intent::CredentialSetup), ..Default::default() });
        assert_eq!(by_type[0].1.credential_type.as_deref(), Some("httpHeaderAuth"));
        let by_node = search(&DocQuery { node_type: Some("n8n-nodes-base.scheduleTrigger".into()), ..Default::default() });
        assert_eq!(by_node[0].1.public_url.as_deref(), Some("https://docs.n8n.io/integrations/builtin/core-nodes/n8n-nodes-base.scheduletrigger/"));
        assert!(search(&q("zzzzqqq")).is_empty());
    }

    #[test]
    fn read_serves_registry_addresses_only() {
        let p = read("https://docs.n8n.io/integrations/builtin/core-nodes/n8n-nodes-base.webhook").unwrap();
        assert_eq!(p.title, "Webhook node");
        assert!(read("docs://instance-ai/hosting-aws").is_some());
        assert!(read("https://example.com/").is_none());
        let slack = search(&DocQuery { node_type: Some("n8n-nodes-base.slack".into()), ..Default::default() });
        assert_eq!(slack[0].1.public_url.as_deref(), Some("https://docs.n8n.io/integrations/builtin/app-nodes/n8n-nodes-base.slack/"));
    }
}
