//! Markdown: HTML to Markdown as n8n's node-html-markdown does it (its
//! translators, whitespace and escaping rules, table layout, option quirks),
//! and Markdown to HTML with pulldown-cmark, shaped like n8n's showdown output
//! (header ids, ellipses, code block classes, complete documents, the common
//! options). See NODES.md for the showdown options that are approximations.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use ego_tree::NodeRef;
use regex::Regex;
use scraper::{Html, Node};
use serde_json::{Map, Value};

use super::lodash::{self, js_to_string, truthy};
use super::{NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::{EngineError, Result};

/// A literal pattern of this module, compiled once.
macro_rules! re {
    ($pattern:expr) => {{
        static RE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| Regex::new($pattern).expect("the module's literal patterns are valid"));
        &*RE
    }};
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mode = ctx.param_str("mode", 0, "htmlToMarkdown")?;
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let r = (|| -> Result<Value> {
            let key = ctx.param_str("destinationKey", i, "data")?;
            let options = ctx.param("options", i, Value::Object(Map::new()))?;
            let converted = match mode.as_str() {
                "htmlToMarkdown" => html_to_markdown(&js_to_string(Some(&ctx.param("html", i, Value::String(String::new()))?)), &H2mOptions::from_params(&options)),
                "markdownToHtml" => markdown_to_html(&js_to_string(Some(&ctx.param("markdown", i, Value::String(String::new()))?)), &M2hOptions::from_params(&options)),
                other => return Err(EngineError::node(format!("The mode \"{other}\" is not known"))),
            };
            let mut json = Value::clone(&item.json);
            lodash::set(&mut json, &key, Value::String(converted));
            Ok(json)
        })();
        match r {
            Ok(json) => out.push(item_from(json, i)),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

// ---- HTML to Markdown (node-html-markdown) ------------------------------------------

/// node-html-markdown's options as n8n passes them (falsy values dropped, so
/// the library defaults apply).
pub struct H2mOptions {
    bullet: String,
    code_fence: String,
    em: String,
    strong: String,
    strike: String,
    /// n8n offers `fence`/`indented`, the library knows `fenced`: only an unset option fences.
    fenced: bool,
    max_newlines: Option<usize>,
    link_refs: bool,
    keep_data_images: bool,
    ignore: HashSet<String>,
    blocks: HashSet<String>,
    /// User escapes are plain strings: first occurrence per text node.
    global_escape: Option<(String, String)>,
    line_start_escape: Option<(String, String)>,
    text_replace: Vec<(String, String)>,
}

const BLOCK_ELEMENTS: &[&str] = &[
    "ADDRESS", "ARTICLE", "ASIDE", "AUDIO", "BLOCKQUOTE", "BODY", "CANVAS", "CENTER", "DD", "DIR", "DIV", "DL", "DT", "FIELDSET", "FIGCAPTION", "FIGURE",
    "FOOTER", "FORM", "FRAMESET", "H1", "H2", "H3", "H4", "H5", "H6", "HEADER", "HGROUP", "HR", "HTML", "ISINDEX", "LI", "MAIN", "MENU", "NAV", "NOFRAMES",
    "NOSCRIPT", "OL", "OUTPUT", "P", "PRE", "SECTION", "TABLE", "TBODY", "TD", "TFOOT", "TH", "THEAD", "TR", "UL",
];
const IGNORED_ELEMENTS: &[&str] =
    &["AREA", "BASE", "COL", "COMMAND", "EMBED", "HEAD", "INPUT", "KEYGEN", "LINK", "META", "PARAM", "SCRIPT", "SOURCE", "STYLE", "TRACK", "WBR"];

impl H2mOptions {
    fn from_params(o: &Value) -> Self {
        let s = |k: &str, d: &str| o.get(k).filter(|v| truthy(Some(v))).map(|v| js_to_string(Some(v))).unwrap_or_else(|| d.to_string());
        let list = |k: &str, defaults: &[&str]| -> HashSet<String> {
            let mut set: HashSet<String> = defaults.iter().map(|x| x.to_string()).collect();
            if let Some(v) = o.get(k).filter(|v| truthy(Some(v))) {
                set.extend(js_to_string(Some(v)).split(',').map(|e| e.trim().to_ascii_uppercase()));
            }
            set
        };
        let pair = |k: &str| -> Option<(String, String)> {
            let v = o.pointer(&format!("/{k}/value")).filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))?;
            Some((js_to_string(v.get("pattern")), js_to_string(v.get("replacement"))))
        };
        H2mOptions {
            bullet: s("bulletMarker", "*"),
            code_fence: s("codeFence", "```"),
            em: s("emDelimiter", "_"),
            strong: s("strongDelimiter", "**"),
            strike: "~~".into(),
            fenced: o.get("codeBlockStyle").filter(|v| truthy(Some(v))).is_none_or(|v| v.as_str() == Some("fenced")),
            max_newlines: Some(o.get("maxConsecutiveNewlines").filter(|v| truthy(Some(v))).and_then(Value::as_f64).unwrap_or(3.0))
                .filter(|n| *n >= 1.0)
                .map(|n| n as usize),
            link_refs: o.get("useLinkReferenceDefinitions").is_some_and(|v| truthy(Some(v))),
            keep_data_images: o.get("keepDataImages").is_some_and(|v| truthy(Some(v))),
            ignore: list("ignore", IGNORED_ELEMENTS),
            blocks: list("blockElements", BLOCK_ELEMENTS),
            global_escape: pair("globalEscape"),
            line_start_escape: pair("lineStartEscape"),
            text_replace: o
                .pointer("/textReplace/values")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|e| (js_to_string(e.get("pattern")), js_to_string(e.get("replacement")))).collect())
                .unwrap_or_default(),
        }
    }
}

impl Default for H2mOptions {
    fn default() -> Self {
        H2mOptions::from_params(&Value::Object(Map::new()))
    }
}

/// Which translator collection applies (node-html-markdown's `childTranslators`).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Coll {
    Main,
    CodeBlock,
    Table,
    Row,
    Cell,
    Link,
}

#[derive(Clone, Default)]
struct Meta {
    indent_level: Option<usize>,
    list_ol: Option<bool>,
    /// Shared by a list's items, as the library mutates one metadata object.
    item_number: Option<Rc<Cell<usize>>>,
    no_escape: bool,
    preserve_ws: bool,
    translators: Option<Coll>,
    caption: Option<Rc<RefCell<Option<String>>>>,
}

#[derive(Clone, Copy)]
enum Post {
    Surround(Delim),
    ListItem(usize),
    Blockquote,
    InlineCode,
    IndentCode,
    Table,
    Link,
    Caption,
    Row,
    TableCell,
}

#[derive(Clone, Copy)]
enum Delim {
    Strong,
    Em,
    Strike,
}

#[derive(Default)]
struct Cfg {
    prefix: String,
    postfix: String,
    content: Option<String>,
    post: Option<Post>,
    no_recurse: bool,
    newlines: usize,
    ignore: bool,
    no_escape: bool,
    space_if_repeating: bool,
    child: Option<Coll>,
}

enum PostResult {
    Text(String),
    Remove,
}

struct H2m<'o> {
    o: &'o H2mOptions,
    text: String,
    url_defs: Vec<String>,
    preserved: HashSet<ego_tree::NodeId>,
    line_start: &'static Regex,
    global: &'static Regex,
}

/// node-html-parser's `removeWhitespace`: whitespace-only text is dropped.
fn is_ws(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}

/// node-html-parser's `trimText`: trimmed, keeping one space (not a line
/// break) on a side that had one.
fn trim_text(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let Some(start) = chars.iter().position(|c| !c.is_whitespace()) else { return String::new() };
    let end = chars.iter().rposition(|c| !c.is_whitespace()).unwrap_or(start);
    let space = |c: char| c.is_whitespace() && c != '\n' && c != '\r';
    let mut out = String::new();
    if start > 0 && space(chars[start - 1]) {
        out.push(' ');
    }
    out.extend(&chars[start..=end]);
    if end + 1 < chars.len() && space(chars[end + 1]) {
        out.push(' ');
    }
    out
}

fn trim_newlines(s: &str) -> &str {
    s.trim_matches('\n')
}

/// JavaScript `String.prototype.replace` with a string pattern: the first
/// occurrence, `$$ $& $\` $'` in the replacement.
fn js_replace_str(s: &str, pattern: &str, replacement: &str) -> String {
    let Some(at) = s.find(pattern) else { return s.to_string() };
    let (before, after) = (&s[..at], &s[at + pattern.len()..]);
    let mut rep = String::new();
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' {
            match chars.peek() {
                Some('$') => rep.push('$'),
                Some('&') => rep.push_str(pattern),
                Some('`') => rep.push_str(before),
                Some('\'') => rep.push_str(after),
                _ => {
                    rep.push('$');
                    continue;
                }
            }
            chars.next();
        } else {
            rep.push(c);
        }
    }
    format!("{before}{rep}{after}")
}

fn children(node: NodeRef<'_, Node>) -> impl Iterator<Item = NodeRef<'_, Node>> {
    node.children().filter(|c| match c.value() {
        Node::Text(t) => !is_ws(t),
        Node::Element(_) => true,
        _ => false,
    })
}

fn tag(node: NodeRef<'_, Node>) -> Option<String> {
    node.value().as_element().map(|e| e.name().to_ascii_uppercase())
}

fn text_content(node: NodeRef<'_, Node>) -> String {
    match node.value() {
        Node::Text(t) => trim_text(t),
        _ => children(node).map(text_content).collect(),
    }
}

/// The library's `tagSurround`: delimiters around each line's non-blank
/// part, nested unescaped delimiters removed.
fn tag_surround(content: &str, delim: &str) -> String {
    let mut content = content.to_string();
    if content.contains(delim) {
        let escaped: String = delim.chars().map(|c| format!("\\{c}")).collect();
        if let Ok(re) = Regex::new(&format!(r"([^\\]){escaped}")) {
            content = re.replace_all(&content, "$1").into_owned();
        }
    }
    let mut res = String::new();
    for (text, newline) in split_lines(&content) {
        let chars: Vec<char> = text.chars().collect();
        let Some(start) = chars.iter().position(|c| !c.is_whitespace()) else {
            res.push_str(text);
            res.push_str(newline);
            continue;
        };
        let end = chars.iter().rposition(|c| !c.is_whitespace()).unwrap_or(start);
        if start > 0 {
            res.push(chars[start - 1]);
        }
        res.push_str(delim);
        res.extend(&chars[start..=end]);
        res.push_str(delim);
        if end + 1 < chars.len() {
            res.push(chars[end + 1]);
        }
        res.push_str(newline);
    }
    res
}

/// `splitSpecial`: lines with the line break that ended each.
fn split_lines(s: &str) -> Vec<(&str, &str)> {
    let mut out = vec![];
    let mut rest = s;
    while let Some(at) = rest.find('\n') {
        let (line, nl) = if at > 0 && rest.as_bytes()[at - 1] == b'\r' { (&rest[..at - 1], "\r\n") } else { (&rest[..at], "\n") };
        out.push((line, nl));
        rest = &rest[at + 1..];
    }
    out.push((rest, ""));
    out
}


impl<'o> H2m<'o> {
    fn new(o: &'o H2mOptions) -> Self {
        H2m {
            o,
            text: String::new(),
            url_defs: vec![],
            preserved: HashSet::new(),
            line_start: re!(r"(?m)^(\s*?)((?:\+\s)|(?:[=>-])|(?:#{1,6}\s))|(?:(\d+)(\.\s))"),
            global: re!(r"[\\`*_~\[\]]"),
        }
    }

    fn trailing(&self) -> (usize, usize) {
        let mut ws = 0;
        let mut nl = 0;
        for c in self.text.chars().rev().take(10) {
            if !c.is_whitespace() {
                break;
            }
            ws += 1;
            if c == '\n' {
                nl += 1;
            }
        }
        (ws, nl)
    }

    fn append(&mut self, s: &str, start: Option<usize>, space_if_repeating: bool) {
        if s.is_empty() && start.is_none() {
            return;
        }
        if let Some(p) = start {
            self.text.truncate(p);
        }
        if space_if_repeating && !s.is_empty() && self.text.chars().last() == s.chars().next() {
            self.text.push(' ');
        }
        self.text.push_str(s);
    }

    fn append_newlines(&mut self, count: usize) {
        let (_, nl) = self.trailing();
        let add = "\n".repeat(count.saturating_sub(nl));
        self.append(&add, None, false);
    }

    /// `optimizeTree`: which nodes have content worth visiting.
    fn mark(&mut self, node: NodeRef<'_, Node>) -> bool {
        let res = match node.value() {
            Node::Text(t) => !is_ws(t),
            Node::Element(e) if matches!(e.name(), "br" | "hr" | "img") => true,
            _ => {
                let kids: Vec<_> = children(node).collect();
                if kids.is_empty() {
                    // Elements whose translator is a factory are kept even when empty.
                    tag(node).is_some_and(|t| matches!(t.as_str(), "H1" | "H2" | "H3" | "H4" | "H5" | "H6" | "OL" | "UL" | "LI" | "CODE" | "TABLE" | "A"))
                } else {
                    let mut any = false;
                    for k in kids {
                        any |= self.mark(k);
                    }
                    any
                }
            }
        };
        if res {
            self.preserved.insert(node.id());
        }
        res
    }

    fn process_text(&self, text: &str, meta: &Meta) -> String {
        let mut res = if meta.preserve_ws { text.to_string() } else { collapse_ws(text) };
        if meta.no_escape {
            return res;
        }
        res = match &self.o.global_escape {
            Some((p, r)) => js_replace_str(&res, p, r),
            None => self.global.replace_all(&res, "\\$0").into_owned(),
        };
        res = match &self.o.line_start_escape {
            Some((p, r)) => js_replace_str(&res, p, r),
            None => self.line_start.replace_all(&res, "${1}${3}\\${2}${4}").into_owned(),
        };
        for (p, r) in &self.o.text_replace {
            res = js_replace_str(&res, p, r);
        }
        res
    }

    fn base(&self, coll: Coll, t: &str) -> Cfg {
        if matches!(coll, Coll::Main | Coll::CodeBlock) {
            // Block elements are set after ignored ones, so a block cannot be ignored.
            if self.o.blocks.contains(t) {
                return Cfg { newlines: 2, ..Default::default() };
            }
            if self.o.ignore.contains(t) {
                return Cfg { ignore: true, no_recurse: true, ..Default::default() };
            }
        }
        Cfg::default()
    }

    /// The translator config for element `node` in collection `coll`, or None
    /// when the collection has none (children are visited as they are).
    fn translator(&mut self, coll: Coll, node: NodeRef<'_, Node>, t: &str, meta: &Meta) -> Option<Cfg> {
        let o = self.o;
        let mut cfg = self.base(coll, t);
        let has_base = cfg.newlines > 0 || cfg.ignore;
        let el = node.value().as_element()?;
        let surround = |cfg: &mut Cfg, d: Delim| {
            cfg.space_if_repeating = true;
            cfg.post = Some(Post::Surround(d));
        };
        let heading_level = |t: &str| t.strip_prefix('H').and_then(|n| n.parse::<usize>().ok()).filter(|n| (1..=6).contains(n));
        let known = match (coll, t) {
            (Coll::Main | Coll::Link, "PRE") => {
                cfg.no_escape = true;
                true
            }
            (Coll::Main, "BR") => {
                cfg.content = Some("  \n".into());
                cfg.no_recurse = true;
                true
            }
            (Coll::CodeBlock | Coll::Link, "BR") => {
                cfg.content = Some("\n".into());
                cfg.no_recurse = true;
                true
            }
            (Coll::Main | Coll::CodeBlock, "HR") => {
                cfg.content = Some("---".into());
                cfg.no_recurse = true;
                true
            }
            (Coll::Link, "HR") => {
                cfg.content = Some("\n".into());
                cfg.no_recurse = true;
                true
            }
            (Coll::Main, h) if heading_level(h).is_some() => {
                cfg.prefix = format!("{} ", "#".repeat(heading_level(h).unwrap_or(1)));
                true
            }
            (Coll::CodeBlock, h) if heading_level(h).is_some() => {
                cfg.prefix = "[".into();
                cfg.postfix = "]".into();
                true
            }
            (Coll::Main | Coll::Cell | Coll::Link, "STRONG" | "B") => {
                surround(&mut cfg, Delim::Strong);
                true
            }
            (Coll::Main | Coll::Cell | Coll::Link, "DEL" | "S" | "STRIKE") => {
                surround(&mut cfg, Delim::Strike);
                true
            }
            (Coll::Main | Coll::Cell | Coll::Link, "EM" | "I") => {
                surround(&mut cfg, Delim::Em);
                true
            }
            (Coll::Main | Coll::CodeBlock, "OL" | "UL") => {
                // The list's own kind is already in the metadata, so always one newline.
                cfg.newlines = 1;
                true
            }
            (Coll::Main | Coll::CodeBlock, "LI") => {
                let indent = meta.indent_level.unwrap_or(0);
                let marker = match (meta.list_ol, &meta.item_number) {
                    (Some(true), Some(n)) => format!("{}. ", n.get()),
                    _ => format!("{} ", o.bullet),
                };
                cfg.prefix = format!("{}{marker}", "   ".repeat(indent));
                cfg.newlines = 1;
                cfg.post = Some(Post::ListItem(indent));
                true
            }
            (Coll::Main, "BLOCKQUOTE") => {
                cfg.post = Some(Post::Blockquote);
                true
            }
            (Coll::Main, "CODE") => {
                let parent = node.parent();
                let in_pre = parent.and_then(tag).is_some_and(|p| p == "PRE") && parent.is_some_and(|p| children(p).count() < 2);
                if !in_pre {
                    cfg.space_if_repeating = true;
                    cfg.no_escape = true;
                    cfg.post = Some(Post::InlineCode);
                } else if o.fenced {
                    let class = el.attr("class").unwrap_or("");
                    let language = class.split_whitespace().find_map(|c| c.strip_prefix("language-")).unwrap_or("");
                    cfg.no_escape = true;
                    cfg.prefix = format!("{}{language}\n", o.code_fence);
                    cfg.postfix = format!("\n{}", o.code_fence);
                    cfg.child = Some(Coll::CodeBlock);
                } else {
                    cfg.no_escape = true;
                    cfg.post = Some(Post::IndentCode);
                    cfg.child = Some(Coll::CodeBlock);
                }
                true
            }
            (Coll::Main, "TABLE") => {
                cfg.newlines = 2;
                cfg.child = Some(Coll::Table);
                cfg.post = Some(Post::Table);
                true
            }
            (Coll::Main | Coll::Cell, "A") => {
                if let Some(href) = el.attr("href").filter(|h| !h.is_empty()) {
                    let mut encoded = String::new();
                    for c in href.chars() {
                        match c {
                            '(' => encoded.push_str("%28"),
                            ')' => encoded.push_str("%29"),
                            '_' => encoded.push_str("%5F"),
                            '*' => encoded.push_str("%2A"),
                            c => encoded.push(c),
                        }
                    }
                    if text_content(node) == href {
                        cfg.content = Some(format!("<{encoded}>"));
                    } else {
                        let title = el.attr("title").filter(|t| !t.is_empty()).map(|t| format!(" \"{t}\"")).unwrap_or_default();
                        cfg.post = Some(Post::Link);
                        cfg.child = Some(Coll::Link);
                        cfg.prefix = "[".into();
                        cfg.postfix = if o.link_refs {
                            let id = match self.url_defs.iter().position(|u| *u == encoded) {
                                Some(i) => i + 1,
                                None => {
                                    self.url_defs.push(encoded.clone());
                                    self.url_defs.len()
                                }
                            };
                            format!("][{id}]")
                        } else {
                            format!("]({encoded}{title})")
                        };
                    }
                }
                true
            }
            (Coll::Main | Coll::Cell | Coll::Link, "IMG") => {
                let src = el.attr("src").unwrap_or("");
                if src.is_empty() || (!o.keep_data_images && src.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:"))) {
                    cfg.ignore = true;
                } else {
                    let alt = el.attr("alt").unwrap_or("");
                    let title = el.attr("title").filter(|t| !t.is_empty()).map(|t| format!(" \"{t}\"")).unwrap_or_default();
                    cfg.content = Some(format!("![{alt}]({src}{title})"));
                    cfg.no_recurse = true;
                }
                true
            }
            (Coll::CodeBlock, "IMG") => {
                cfg.no_recurse = true;
                true
            }
            (Coll::CodeBlock, "TR") => {
                cfg.newlines = 1;
                true
            }
            (Coll::Table, "CAPTION") => {
                cfg.child = Some(Coll::Cell);
                cfg.post = Some(Post::Caption);
                true
            }
            (Coll::Table, "TR") => {
                cfg.child = Some(Coll::Row);
                cfg.prefix = "| ".into();
                cfg.postfix = "\n".into();
                cfg.post = Some(Post::Row);
                true
            }
            (Coll::Table | Coll::Row, "TH" | "TD") => {
                cfg.child = Some(Coll::Cell);
                cfg.prefix = " ".into();
                cfg.postfix = " |".into();
                cfg.post = Some(Post::TableCell);
                true
            }
            _ => false,
        };
        (known || has_base).then_some(cfg)
    }

    fn postprocess(&self, post: Post, content: &str, meta: &Meta) -> PostResult {
        let blank = !content.chars().any(|c| !c.is_whitespace());
        match post {
            Post::Surround(d) => {
                if blank {
                    return PostResult::Remove;
                }
                let delim = match d {
                    Delim::Strong => &self.o.strong,
                    Delim::Em => &self.o.em,
                    Delim::Strike => &self.o.strike,
                };
                PostResult::Text(tag_surround(content, delim))
            }
            Post::ListItem(indent) => {
                if blank {
                    return PostResult::Remove;
                }
                let joined = re!(r"([^\r\n])(?:\r?\n)+").replace_all(content.trim(), format!("${{1}}  \n{}", "   ".repeat(indent)).as_str()).into_owned();
                PostResult::Text(re!(r"(?m)(\S+?)[^\S\r\n]+$").replace_all(&joined, "${1}  ").into_owned())
            }
            Post::Blockquote => PostResult::Text(re!(r"(?m)^(>*)[^\S\r\n]?").replace_all(trim_newlines(content), ">${1} ").into_owned()),
            Post::InlineCode => {
                let longest = re!("`+").find_iter(content).map(|m| m.len()).max().unwrap_or(0);
                let delim = "`".repeat(longest + 1);
                let pad = if delim.len() > 1 { " " } else { "" };
                PostResult::Text(format!("{delim}{pad}{content}{pad}{delim}"))
            }
            Post::IndentCode => PostResult::Text(re!("(?m)^").replace_all(content, "    ").into_owned()),
            Post::Link => PostResult::Text(re!(r"(?:\r?\n)+").replace_all(content, " ").into_owned()),
            Post::Caption => {
                let caption = re!(r"(?:\r?\n)+").replace_all(content, " ").trim().to_string();
                if let (false, Some(slot)) = (caption.is_empty(), &meta.caption) {
                    *slot.borrow_mut() = Some(format!("__{caption}__"));
                }
                PostResult::Remove
            }
            Post::Row => {
                if re!(r" \|\s*$").is_match(content) {
                    PostResult::Text(content.to_string())
                } else {
                    PostResult::Remove
                }
            }
            Post::TableCell => {
                let c = trim_newlines(content).replacen('|', "\\|", 1);
                PostResult::Text(re!(r"(?:\r?\n)+").replace_all(&c, " ").trim().to_string())
            }
            Post::Table => self.table(content, meta),
        }
    }

    fn table(&self, content: &str, meta: &Meta) -> PostResult {
        let edge = re!(r"^(?:\|\s+)?(.+)\s*\|\s*$");
        let mut rows: Vec<Vec<String>> = vec![];
        let mut widths: Vec<usize> = vec![];
        for (line, _) in split_lines(content) {
            let row = edge.replace(line, "$1");
            if row.is_empty() {
                continue;
            }
            let cols: Vec<String> = row
                .split(" |")
                .enumerate()
                .map(|(i, c)| {
                    let c = c.trim().to_string();
                    let n = c.chars().count();
                    if widths.len() < i + 1 {
                        widths.push(n);
                    } else if widths[i] < n {
                        widths[i] = n;
                    }
                    c
                })
                .collect();
            rows.push(cols);
        }
        if rows.is_empty() {
            return PostResult::Remove;
        }
        let mut res = String::new();
        if let Some(c) = meta.caption.as_ref().and_then(|c| c.borrow().clone()) {
            res.push_str(&c);
            res.push('\n');
        }
        let n = widths.len();
        for (r, cols) in rows.iter().enumerate() {
            res.push_str("| ");
            for (i, w) in widths.iter().enumerate() {
                let c = cols.get(i).map(String::as_str).unwrap_or("");
                res.push_str(c);
                res.push_str(&" ".repeat(w.saturating_sub(c.chars().count())));
                res.push_str(" |");
                if i < n - 1 {
                    res.push(' ');
                }
            }
            res.push('\n');
            if r == 0 {
                res.push('|');
                for w in &widths {
                    res.push_str(&format!(" {} |", "-".repeat(*w)));
                }
                res.push('\n');
            }
        }
        PostResult::Text(res)
    }

    fn visit(&mut self, node: NodeRef<'_, Node>, text_only: bool, meta: &Meta) {
        if !self.preserved.contains(&node.id()) {
            return;
        }
        if let Node::Text(t) = node.value() {
            let s = self.process_text(&trim_text(t), meta);
            self.append(&s, None, false);
            return;
        }
        let Some(t) = tag(node) else {
            for c in children(node) {
                self.visit(c, text_only, meta);
            }
            return;
        };
        if text_only {
            return;
        }
        let mut meta = meta.clone();
        match t.as_str() {
            "UL" | "OL" => {
                meta.item_number = Some(Rc::new(Cell::new(0)));
                meta.list_ol = Some(t == "OL");
                meta.indent_level = Some(meta.indent_level.map_or(0, |l| l + 1));
            }
            "LI" => {
                if let (Some(true), Some(n)) = (meta.list_ol, &meta.item_number) {
                    n.set(n.get() + 1);
                }
            }
            "PRE" => meta.preserve_ws = true,
            "TABLE" => meta.caption = Some(Rc::new(RefCell::new(None))),
            _ => {}
        }
        let coll = meta.translators.unwrap_or(Coll::Main);
        let Some(cfg) = self.translator(coll, node, &t, &meta) else {
            for c in children(node) {
                self.visit(c, text_only, &meta);
            }
            return;
        };
        if cfg.ignore {
            return;
        }
        if cfg.no_escape {
            meta.no_escape = true;
        }
        if let Some(c) = cfg.child {
            meta.translators = Some(c);
        }
        let outer = self.text.len();
        if cfg.newlines > 0 {
            self.append_newlines(cfg.newlines);
        }
        self.append(&cfg.prefix, None, false);
        if let Some(content) = &cfg.content {
            self.append(content, None, cfg.space_if_repeating);
        } else {
            let start = self.text.len();
            for c in children(node) {
                self.visit(c, cfg.no_recurse, &meta);
            }
            if let Some(post) = cfg.post {
                let content = self.text[start..].to_string();
                match self.postprocess(post, &content, &meta) {
                    PostResult::Remove => {
                        if let (true, Some(n)) = (t == "LI", &meta.item_number) {
                            if n.get() > 0 {
                                n.set(n.get() - 1);
                            }
                        }
                        self.append("", Some(outer), false);
                        return;
                    }
                    PostResult::Text(s) => self.append(&s, Some(start), cfg.space_if_repeating),
                }
            }
        }
        self.append(&cfg.postfix, None, false);
        if cfg.newlines > 0 {
            self.append_newlines(cfg.newlines);
        }
    }
}

fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_ws = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !in_ws {
                out.push(' ');
            }
            in_ws = true;
        } else {
            out.push(c);
            in_ws = false;
        }
    }
    out
}

pub fn html_to_markdown(html: &str, o: &H2mOptions) -> String {
    let mut v = H2m::new(o);
    // node-html-parser keeps a leading doctype as text (which the library
    // then deletes), so a space after it survives as the output's first character.
    if let Some(m) = re!(r"(?i)^<!doctype[^>]*>([ \t])").captures(html) {
        if m.get(1).is_some() {
            v.text.push(' ');
        }
    }
    let doc = Html::parse_document(html);
    let root = doc.tree.root();
    v.mark(root);
    v.visit(root, false, &Meta::default());
    let mut result = std::mem::take(&mut v.text);
    if o.link_refs {
        if !result.ends_with('\n') && !result.ends_with('\r') && !result.is_empty() {
            result.push('\n');
        }
        for (i, url) in v.url_defs.iter().enumerate() {
            result.push_str(&format!("\n[{}]: {url}", i + 1));
        }
    }
    if let Some(n) = o.max_newlines.filter(|n| *n <= 100) {
        if let Ok(re) = Regex::new(&format!(r"(?:\r?\n\s*)+((?:\r?\n\s*){{{n}}})")) {
            result = re.replace_all(&result, "$1").into_owned();
        }
    }
    trim_newlines(&result).to_string()
}

// ---- Markdown to HTML (showdown's shape over pulldown-cmark) ----------------------

pub struct M2hOptions {
    complete_document: bool,
    no_header_id: bool,
    prefix_header_id: String,
    raw_prefix_header_id: bool,
    gh_compatible_header_id: bool,
    raw_header_id: bool,
    customized_header_id: bool,
    header_level_start: usize,
    open_links_in_new_window: bool,
    simple_line_breaks: bool,
    simplified_auto_link: bool,
    exclude_trailing_punctuation: bool,
    gh_mentions: bool,
    gh_mentions_link: String,
    tables: bool,
    strikethrough: bool,
    tasklists: bool,
    require_space_before_heading: bool,
}

impl M2hOptions {
    fn from_params(o: &Value) -> Self {
        let b = |k: &str| o.get(k).is_some_and(|v| truthy(Some(v)));
        let prefix = match o.get("prefixHeaderId") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(true)) => "section-".into(),
            _ => String::new(),
        };
        M2hOptions {
            complete_document: b("completeHTMLDocument"),
            no_header_id: b("noHeaderId"),
            prefix_header_id: prefix,
            raw_prefix_header_id: b("rawPrefixHeaderId"),
            gh_compatible_header_id: b("ghCompatibleHeaderId"),
            raw_header_id: b("rawHeaderId"),
            customized_header_id: b("customizedHeaderId"),
            header_level_start: o.get("headerLevelStart").and_then(Value::as_f64).filter(|n| *n >= 1.0).map_or(1, |n| n as usize),
            open_links_in_new_window: b("openLinksInNewWindow"),
            simple_line_breaks: b("simpleLineBreaks"),
            simplified_auto_link: b("simplifiedAutoLink"),
            exclude_trailing_punctuation: b("excludeTrailingPunctuationFromURLs"),
            gh_mentions: b("ghMentions"),
            gh_mentions_link: o.get("ghMentionsLink").filter(|v| truthy(Some(v))).map(|v| js_to_string(Some(v))).unwrap_or_else(|| "https://github.com/{u}".into()),
            tables: b("tables"),
            strikethrough: b("strikethrough"),
            tasklists: b("tasklists"),
            require_space_before_heading: b("requireSpaceBeforeHeadingText"),
        }
    }
}

impl Default for M2hOptions {
    fn default() -> Self {
        M2hOptions::from_params(&Value::Object(Map::new()))
    }
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn escape_attr(s: &str) -> String {
    escape_html(s).replace('"', "&quot;")
}

/// showdown's `headerId` (before `spanGamut`, from the header's source text).
fn header_id(raw: &str, o: &M2hOptions, counts: &mut HashMap<String, usize>) -> String {
    let mut m = raw.to_string();
    if o.customized_header_id {
        if let Some(c) = re!(r"\{([^{]+?)\}\s*$").captures(&m).and_then(|c| c.get(1)) {
            m = c.as_str().to_string();
        }
    }
    let prefix = &o.prefix_header_id;
    let mut title = if o.raw_prefix_header_id { m } else { format!("{prefix}{m}") };
    title = if o.gh_compatible_header_id {
        let t = title.replace(' ', "-").replace("&amp;", "");
        re!(r##"[&+$,/:;=?@"#{}|^¨~\[\]`\\*)(%.!'<>]"##).replace_all(&t, "").to_lowercase()
    } else if o.raw_header_id {
        title.replace(' ', "-").replace("&amp;", "&").replace(['"', '\''], "-").to_lowercase()
    } else {
        // JavaScript's \w is ASCII only.
        title.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>().to_lowercase()
    };
    if o.raw_prefix_header_id {
        title = format!("{prefix}{title}");
    }
    match counts.get_mut(&title) {
        Some(n) => {
            let id = format!("{title}-{n}");
            *n += 1;
            id
        }
        None => {
            counts.insert(title.clone(), 1);
            title
        }
    }
}

/// The text of an ATX or setext heading's source line(s).
fn heading_source(src: &str) -> String {
    let first = src.lines().next().unwrap_or("").trim();
    if first.starts_with('#') {
        let t = first.trim_start_matches('#').trim();
        t.trim_end_matches('#').trim_end().to_string()
    } else {
        first.to_string()
    }
}

/// showdown's autolinking of bare URLs (`simplifiedAutoLink`) and `@mentions`.
fn linkify(text: &str, o: &M2hOptions, out: &mut String) {
    let url = re!(r"(?i)\b(?:https?://|ftp://|www\.)[^\s<>]+");
    let mention = re!(r"(^|\s)@([A-Za-z0-9_-]+)");
    let mut pieces: Vec<(usize, usize, String)> = vec![];
    if o.simplified_auto_link {
        for m in url.find_iter(text) {
            let mut link = m.as_str();
            if o.exclude_trailing_punctuation {
                link = link.trim_end_matches(['.', '!', '?', '(', ')']);
            }
            let href = if link.to_ascii_lowercase().starts_with("www.") { format!("http://{link}") } else { link.to_string() };
            let target = if o.open_links_in_new_window { " rel=\"noopener noreferrer\" target=\"_blank\"" } else { "" };
            pieces.push((m.start(), m.start() + link.len(), format!("<a href=\"{}\"{target}>{}</a>", escape_attr(&href), escape_html(link))));
        }
    }
    if o.gh_mentions {
        for c in mention.captures_iter(text) {
            let (Some(whole), Some(lead), Some(user)) = (c.get(0), c.get(1), c.get(2)) else { continue };
            if pieces.iter().any(|(s, e, _)| whole.start() < *e && *s < whole.end()) {
                continue;
            }
            let href = o.gh_mentions_link.replace("{u}", user.as_str());
            pieces.push((lead.end(), whole.end(), format!("<a href=\"{}\">@{}</a>", escape_attr(&href), escape_html(user.as_str()))));
        }
    }
    pieces.sort_by_key(|p| p.0);
    let mut at = 0;
    for (s, e, html) in pieces {
        out.push_str(&escape_html(&text[at..s]));
        out.push_str(&html);
        at = e;
    }
    out.push_str(&escape_html(&text[at..]));
}

pub fn markdown_to_html(md: &str, o: &M2hOptions) -> String {
    use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

    // showdown reads `#Title` as a heading unless a space is required.
    let source = if o.require_space_before_heading {
        md.to_string()
    } else {
        let mut fenced = false;
        md.split('\n')
            .map(|line| {
                if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
                    fenced = !fenced;
                }
                match re!(r"^(#{1,6})([^#\s])").captures(line) {
                    Some(c) if !fenced => format!("{} {}", &c[1], &line[c[1].len()..]),
                    _ => line.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut opts = Options::empty();
    if o.tables {
        opts.insert(Options::ENABLE_TABLES);
    }
    if o.strikethrough {
        opts.insert(Options::ENABLE_STRIKETHROUGH);
    }
    if o.tasklists {
        opts.insert(Options::ENABLE_TASKLISTS);
    }
    let mut counts = HashMap::new();
    let mut events: Vec<Event> = vec![];
    let mut in_code = 0usize;
    let mut in_link = 0usize;
    let mut heading_end: Option<String> = None;
    for (ev, range) in Parser::new_ext(&source, opts).into_offset_iter() {
        match ev {
            Event::Start(Tag::Heading { level, .. }) => {
                let n = (o.header_level_start - 1 + level as usize).min(6);
                let id = if o.no_header_id { String::new() } else { format!(" id=\"{}\"", escape_attr(&header_id(&heading_source(&source[range.clone()]), o, &mut counts))) };
                events.push(Event::Html(CowStr::from(format!("<h{n}{id}>"))));
                heading_end = Some(format!("</h{n}>\n"));
            }
            Event::End(TagEnd::Heading(_)) => {
                events.push(Event::Html(CowStr::from(heading_end.take().unwrap_or_else(|| "</h1>\n".into()))));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                in_code += 1;
                let class = match &kind {
                    CodeBlockKind::Fenced(lang) => lang.split_whitespace().next().map(|l| format!(" class=\"{0} language-{0}\"", escape_attr(l))).unwrap_or_default(),
                    CodeBlockKind::Indented => String::new(),
                };
                events.push(Event::Html(CowStr::from(format!("<pre><code{class}>"))));
            }
            Event::End(TagEnd::CodeBlock) => {
                in_code = in_code.saturating_sub(1);
                events.push(Event::Html(CowStr::from("</code></pre>\n")));
            }
            Event::Start(Tag::Link { dest_url, title, link_type, id }) => {
                in_link += 1;
                if o.open_links_in_new_window {
                    let title = if title.is_empty() { String::new() } else { format!(" title=\"{}\"", escape_attr(&title)) };
                    events.push(Event::Html(CowStr::from(format!("<a href=\"{}\"{title} rel=\"noopener noreferrer\" target=\"_blank\">", escape_attr(&dest_url)))));
                } else {
                    events.push(Event::Start(Tag::Link { dest_url, title, link_type, id }));
                }
            }
            Event::End(TagEnd::Link) => {
                in_link = in_link.saturating_sub(1);
                events.push(if o.open_links_in_new_window { Event::Html(CowStr::from("</a>")) } else { Event::End(TagEnd::Link) });
            }
            Event::Text(t) if in_code == 0 => {
                // showdown's ellipsis (on by default).
                let mut text = t.replace("...", "…");
                if o.customized_header_id && heading_end.is_some() {
                    text = re!(r"\s?\{[^{]+?\}\s*$").replace(&text, "").into_owned();
                }
                if in_link == 0 && (o.simplified_auto_link || o.gh_mentions) {
                    let mut html = String::new();
                    linkify(&text, o, &mut html);
                    events.push(Event::InlineHtml(CowStr::from(html)));
                } else {
                    events.push(Event::Text(CowStr::from(text)));
                }
            }
            Event::SoftBreak if o.simple_line_breaks => events.push(Event::HardBreak),
            other => events.push(other),
        }
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    let body = html.trim().to_string();
    if o.complete_document {
        format!("<!DOCTYPE HTML>\n<html>\n<head>\n<meta charset=\"utf-8\">\n</head>\n<body>\n{body}\n</body>\n</html>")
    } else {
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_text_keeps_one_space_but_not_line_breaks() {
        assert_eq!(trim_text("  a b  "), " a b ");
        assert_eq!(trim_text("\n a\n"), " a");
        assert_eq!(trim_text(" \na"), "a");
    }

    #[test]
    fn js_string_replace_semantics() {
        assert_eq!(js_replace_str("a-b-c", "-", "[$&]"), "a[-]b-c");
        assert_eq!(js_replace_str("abc", "", "X"), "Xabc");
        assert_eq!(js_replace_str("abc", "b", "$$"), "a$c");
    }

    #[test]
    fn tag_surround_wraps_the_non_blank_part_of_each_line() {
        assert_eq!(tag_surround(" a ", "**"), " **a** ");
        assert_eq!(tag_surround("a\nb", "_"), "_a_\n_b_");
    }
}
