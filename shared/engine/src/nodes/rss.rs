//! RSS Read (`n8n-nodes-base.rssFeedRead`, v1–v1.2): fetches a feed (RSS 2.0,
//! RSS 1.0/RDF or Atom) through the guarded HTTP client and emits one item per
//! entry with the fields the `rss-parser` package gives n8n.

use serde_json::{Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    // v1 reads one feed (the first item's URL) paired with every item;
    // later versions one feed per item
    let v1 = ctx.version() < 1.1;
    let n = if v1 { input.len().min(1) } else { input.len() };
    let mut out = Vec::new();
    for i in 0..n {
        let start = out.len();
        match one(ctx, i, &mut out) {
            Ok(()) => {}
            Err(e) if ctx.continue_on_fail() && !matches!(e, EngineError::Canceled) => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
        if v1 && input.len() > 1 {
            let all = crate::data::PairedItem::Other(Box::new(Value::Array((0..input.len()).map(|k| serde_json::json!({ "item": k })).collect())));
            out[start..].iter_mut().for_each(|it| it.paired_item = Some(all.clone()));
        }
    }
    Ok(NodeOutput::one(out))
}

fn one(ctx: &mut NodeContext<'_>, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let url = ctx.param_str("url", i, "")?;
    if url.is_empty() {
        return Err(EngineError::node("The parameter \"URL\" has to be set!"));
    }
    let parsed = url::Url::parse(&url).map_err(|_| EngineError::node("The provided \"URL\" is not valid!"))?;
    let custom: Vec<String> = ctx
        .param_str("options.customFields", i, "")?
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let headers = vec![("accept".to_string(), "application/rss+xml, application/xml, text/xml, */*".to_string())];
    let (status, body) = super::http::get(ctx.env, parsed, headers).map_err(|e| match e {
        EngineError::Node { message, .. } if message.contains("Connection refused") => EngineError::node(format!(
            "It was not possible to connect to the URL. Please make sure the URL \"{url}\" it is valid!"
        )),
        other => other,
    })?;
    if status >= 400 {
        return Err(EngineError::node(format!("Status code {status}")));
    }
    let text = String::from_utf8_lossy(&body);
    for entry in parse_feed(&text, &custom)? {
        out.push(item_from(Value::Object(entry), i));
    }
    Ok(())
}

/// The entries of a feed document, each as `rss-parser` shapes it.
pub fn parse_feed(xml: &str, custom: &[String]) -> Result<Vec<Map<String, Value>>> {
    let opts = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(xml.trim_start_matches('\u{feff}'), opts)
        .map_err(|e| EngineError::node(format!("Invalid feed: {e}")))?;
    let root = doc.root_element();
    let entries: Vec<Map<String, Value>> = match root.tag_name().name() {
        "rss" => {
            let channel = child(root, "channel").ok_or_else(|| EngineError::node("Invalid feed: no channel"))?;
            children(channel, "item").map(|n| rss_item(n, custom)).collect()
        }
        // RSS 1.0: items are siblings of the channel
        "RDF" => children(root, "item").map(|n| rss_item(n, custom)).collect(),
        "feed" => children(root, "entry").map(|n| atom_entry(n, custom)).collect(),
        _ => return Err(EngineError::node("Feed not recognized as RSS 1 or 2.")),
    };
    Ok(entries)
}

fn qname(n: roxmltree::Node) -> String {
    let tag = n.tag_name();
    match (tag.namespace().and_then(|ns| n.lookup_prefix(ns)), tag.name()) {
        (Some(p), name) if !p.is_empty() => format!("{p}:{name}"),
        (_, name) => name.to_string(),
    }
}

fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    n.children().find(|c| c.is_element() && qname(*c) == name)
}

fn children<'a, 'i: 'a>(n: roxmltree::Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> + 'a {
    n.children().filter(move |c| c.is_element() && qname(*c) == name)
}

/// An element as xml2js gives it: its text, or `{_: text, $: attributes}`
/// when it has attributes, or nested elements as objects.
fn xml_value(n: roxmltree::Node) -> Value {
    let text: String = n.children().filter(|c| c.is_text()).filter_map(|c| c.text()).collect();
    let attrs: Map<String, Value> = n.attributes().map(|a| (a.name().to_string(), Value::String(a.value().to_string()))).collect();
    let elements: Vec<roxmltree::Node> = n.children().filter(|c| c.is_element()).collect();
    if elements.is_empty() && attrs.is_empty() {
        return Value::String(text);
    }
    let mut m = Map::new();
    if !text.trim().is_empty() {
        m.insert("_".into(), Value::String(text));
    }
    if !attrs.is_empty() {
        m.insert("$".into(), Value::Object(attrs));
    }
    for e in elements {
        let k = qname(e);
        let v = xml_value(e);
        match m.get_mut(&k) {
            Some(Value::Array(a)) => a.push(v),
            _ => {
                m.insert(k, Value::Array(vec![v]));
            }
        }
    }
    Value::Object(m)
}

fn text_of(n: roxmltree::Node) -> String {
    match xml_value(n) {
        Value::String(s) => s,
        Value::Object(m) => m.get("_").and_then(Value::as_str).unwrap_or("").to_string(),
        _ => String::new(),
    }
}

fn rss_item(n: roxmltree::Node, custom: &[String]) -> Map<String, Value> {
    let mut item = Map::new();
    // rss-parser's item fields: [from, to]
    const FIELDS: [(&str, &str); 14] = [
        ("author", "creator"),
        ("dc:creator", "creator"),
        ("dc:date", "date"),
        ("dc:title", "title"),
        ("dc:description", "description"),
        ("title", "title"),
        ("link", "link"),
        ("pubDate", "pubDate"),
        ("author", "author"),
        ("summary", "summary"),
        ("content:encoded", "content:encoded"),
        ("dc:creator", "dc:creator"),
        ("dc:date", "dc:date"),
        ("comments", "comments"),
    ];
    for (from, to) in FIELDS {
        if let Some(c) = child(n, from) {
            item.insert(to.to_string(), xml_value(c));
            if from == "content:encoded" {
                item.insert("content:encodedSnippet".into(), Value::String(snippet(&text_of(c))));
            }
        }
    }
    for f in custom {
        if let Some(c) = child(n, f) {
            item.insert(f.clone(), xml_value(c));
        }
    }
    if let Some(e) = child(n, "enclosure") {
        let attrs: Map<String, Value> = e.attributes().map(|a| (a.name().to_string(), Value::String(a.value().to_string()))).collect();
        item.insert("enclosure".into(), Value::Object(attrs));
    }
    if let Some(d) = child(n, "description") {
        let content = text_of(d);
        item.insert("contentSnippet".into(), Value::String(snippet(&content)));
        item.insert("content".into(), Value::String(content));
    }
    if let Some(g) = child(n, "guid") {
        item.insert("guid".into(), Value::String(text_of(g)));
    }
    let cats: Vec<Value> = children(n, "category").map(xml_value).collect();
    if !cats.is_empty() {
        item.insert("categories".into(), Value::Array(cats));
    }
    set_iso_date(&mut item);
    item
}

fn atom_entry(n: roxmltree::Node, custom: &[String]) -> Map<String, Value> {
    let mut item = Map::new();
    if let Some(name) = child(n, "author").and_then(|a| child(a, "name")) {
        item.insert("author".into(), Value::String(text_of(name)));
    }
    if let Some(t) = child(n, "title") {
        item.insert("title".into(), Value::String(text_of(t)));
    }
    let links: Vec<roxmltree::Node> = children(n, "link").collect();
    let alternate = links.iter().find(|l| l.attribute("rel").is_none_or(|r| r == "alternate")).or(links.first());
    if let Some(href) = alternate.and_then(|l| l.attribute("href")) {
        item.insert("link".into(), Value::String(href.to_string()));
    }
    if let Some(p) = child(n, "published").or_else(|| child(n, "updated")) {
        item.insert("pubDate".into(), Value::String(text_of(p)));
    }
    if let Some(c) = child(n, "content") {
        let content = inner_markup(c);
        item.insert("contentSnippet".into(), Value::String(snippet(&content)));
        item.insert("content".into(), Value::String(content));
    }
    if let Some(s) = child(n, "summary") {
        item.insert("summary".into(), Value::String(inner_markup(s)));
    }
    if let Some(id) = child(n, "id") {
        item.insert("id".into(), Value::String(text_of(id)));
    }
    for f in custom {
        if let Some(c) = child(n, f) {
            item.insert(f.clone(), xml_value(c));
        }
    }
    set_iso_date(&mut item);
    item
}

/// Atom content may be XHTML: its markup as text (rss-parser rebuilds it).
fn inner_markup(n: roxmltree::Node) -> String {
    if n.children().all(|c| !c.is_element()) {
        return text_of(n);
    }
    let src = n.document().input_text();
    let r = n.range();
    let whole = &src[r];
    match (whole.find('>'), whole.rfind("</")) {
        (Some(a), Some(b)) if a < b => whole[a + 1..b].to_string(),
        _ => text_of(n),
    }
}

/// rss-parser's `getSnippet`: tags out (block tags become line breaks),
/// entities decoded, trimmed.
fn snippet(html: &str) -> String {
    use std::sync::OnceLock;
    static BLOCK: OnceLock<regex::Regex> = OnceLock::new();
    static TAG: OnceLock<regex::Regex> = OnceLock::new();
    let block = BLOCK.get_or_init(|| {
        regex::Regex::new(r"([^\n])</?(h|br|p|ul|ol|li|blockquote|section|table|tr|div)(?:[^>]|\n)*?>([^\n])").expect("constant regex")
    });
    let tag = TAG.get_or_init(|| regex::Regex::new(r"<(?:[^>]|\n)*?>").expect("constant regex"));
    let s = block.replace_all(html, "$1\n$3");
    let s = tag.replace_all(&s, "");
    decode_entities(&s).trim().to_string()
}

fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        rest = &rest[p..];
        let end = rest.find(';').filter(|e| *e <= 10);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some('\u{a0}'),
                _ if name.starts_with("#x") || name.starts_with("#X") => u32::from_str_radix(&name[2..], 16).ok().and_then(char::from_u32),
                _ if name.starts_with('#') => name[1..].parse().ok().and_then(char::from_u32),
                _ => None,
            };
            c.map(|c| (c, e))
        });
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `isoDate` from `pubDate` (or `date`) as JavaScript's `new Date(…).toISOString()`.
fn set_iso_date(item: &mut Map<String, Value>) {
    let date = item.get("pubDate").or_else(|| item.get("date")).and_then(Value::as_str).map(|s| s.trim().to_string());
    let Some(d) = date else { return };
    let parsed = chrono::DateTime::parse_from_rfc2822(&d)
        .or_else(|_| chrono::DateTime::parse_from_rfc3339(&d))
        .map(|t| t.with_timezone(&chrono::Utc))
        .ok()
        .or_else(|| chrono::NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok().and_then(|n| n.and_hms_opt(0, 0, 0)).map(|n| n.and_utc()));
    if let Some(t) = parsed {
        item.insert("isoDate".into(), Value::String(t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()));
    }
}
