//! HTML: extract content by CSS selector (text as html-to-text renders it,
//! inner HTML, attributes, form values).

use scraper::{ElementRef, Html, Node, Selector};
use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::{EngineError, Result};

/// Plain-text rendering close to the `html-to-text` library n8n uses:
/// block elements separated by blank lines, headings upper-cased, links and
/// images as `text [url]`, whitespace collapsed.
struct TextWriter {
    out: String,
    breaks: usize,
    space: bool,
    upper: usize,
}

impl TextWriter {
    fn word(&mut self, w: &str) {
        if !self.out.is_empty() {
            if self.breaks > 0 {
                while self.out.ends_with(' ') {
                    self.out.pop();
                }
                self.out.push_str(&"\n".repeat(self.breaks));
            } else if self.space && !self.out.ends_with('\n') {
                self.out.push(' ');
            }
        }
        self.breaks = 0;
        self.space = false;
        if self.upper > 0 {
            self.out.push_str(&w.to_uppercase());
        } else {
            self.out.push_str(w);
        }
    }

    fn text(&mut self, t: &str) {
        if t.starts_with(char::is_whitespace) {
            self.space = true;
        }
        let mut first = true;
        for w in t.split_whitespace() {
            if !first {
                self.space = true;
            }
            // Inline text continues the current word unless whitespace separated it.
            if !self.space && self.breaks == 0 && !self.out.is_empty() {
                let s = if self.upper > 0 { w.to_uppercase() } else { w.to_string() };
                self.out.push_str(&s);
            } else {
                self.word(w);
            }
            first = false;
        }
        if t.ends_with(char::is_whitespace) && !t.trim().is_empty() {
            self.space = true;
        }
    }

    fn block(&mut self, n: usize) {
        if !self.out.is_empty() {
            self.breaks = self.breaks.max(n);
        }
    }
}

fn block_breaks(tag: &str) -> Option<(usize, usize)> {
    Some(match tag {
        "p" | "pre" | "blockquote" | "ul" | "ol" | "table" => (2, 2),
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => (3, 2),
        "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside" | "li" | "tr" | "form" | "figure" | "dl" | "dt" | "dd" => (1, 1),
        _ => return None,
    })
}

fn walk(el: ElementRef<'_>, w: &mut TextWriter, skip: &[Selector]) {
    let tag = el.value().name();
    if matches!(tag, "head" | "script" | "style" | "noscript" | "template" | "title" | "input" | "select" | "option" | "button") {
        return;
    }
    if skip.iter().any(|s| s.matches(&el)) {
        return;
    }
    match tag {
        "br" => {
            w.out.push('\n');
            w.space = false;
            return;
        }
        "img" => {
            let alt = el.value().attr("alt").unwrap_or("");
            let src = el.value().attr("src").unwrap_or("");
            let s = match (alt.is_empty(), src.is_empty()) {
                (false, false) => format!("{alt} [{src}]"),
                (false, true) => alt.to_string(),
                (true, false) => format!("[{src}]"),
                _ => return,
            };
            w.space = w.space || !w.out.is_empty();
            w.word(&s);
            return;
        }
        _ => {}
    }
    let blk = block_breaks(tag);
    if let Some((lead, _)) = blk {
        w.block(lead);
    }
    let heading = tag.len() == 2 && tag.starts_with('h') && tag[1..].parse::<u8>().is_ok();
    if heading {
        w.upper += 1;
    }
    for child in el.children() {
        match child.value() {
            Node::Text(t) => w.text(t),
            Node::Element(_) => {
                if let Some(c) = ElementRef::wrap(child) {
                    walk(c, w, skip);
                }
            }
            _ => {}
        }
    }
    if heading {
        w.upper -= 1;
    }
    if tag == "a" {
        if let Some(href) = el.value().attr("href") {
            w.space = true;
            w.word(&format!("[{href}]"));
        }
    }
    if let Some((_, trail)) = blk {
        w.block(trail);
    }
}

fn to_text(el: ElementRef<'_>, skip: &[Selector]) -> String {
    let mut w = TextWriter { out: String::new(), breaks: 0, space: false, upper: 0 };
    walk(el, &mut w, skip);
    w.out
}

fn selector(s: &str) -> Result<Selector> {
    Selector::parse(s).map_err(|e| EngineError::node(format!("Invalid CSS selector '{s}': {e}")))
}

fn extract(el: ElementRef<'_>, ret: &str, attribute: &str, skip: &[Selector]) -> Value {
    match ret {
        "html" => json!(el.inner_html()),
        "attribute" => {
            if attribute.is_empty() {
                let m: Map<String, Value> = el.value().attrs().map(|(k, v)| (k.to_string(), json!(v))).collect();
                Value::Object(m)
            } else {
                el.value().attr(attribute).map(|v| json!(v)).unwrap_or(Value::Null)
            }
        }
        "value" => el.value().attr("value").map(|v| json!(v)).unwrap_or(Value::Null),
        _ => json!(to_text(el, skip)),
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let op = ctx.param_str("operation", 0, "generateHtmlTemplate")?;
    let input = ctx.input(0);
    let mut out = vec![];
    if op == "generateHtmlTemplate" {
        for (i, _) in input.iter().enumerate() {
            let html = ctx.param_str("html", i, "")?;
            out.push(item_from(json!({ "html": html }), i));
        }
        return Ok(NodeOutput::one(out));
    }
    if op != "extractHtmlContent" {
        return Err(EngineError::node(format!("The operation '{op}' is not supported")));
    }
    for (i, item) in input.iter().enumerate() {
        let prop = ctx.param_str("dataPropertyName", i, "data")?;
        let html = match ctx.param_str("sourceData", i, "json")?.as_str() {
            "binary" => {
                let b64 = item.binary.as_ref().and_then(|b| b.pointer(&format!("/{prop}/data"))).and_then(|d| d.as_str()).unwrap_or("");
                use base64::Engine as _;
                String::from_utf8_lossy(&base64::engine::general_purpose::STANDARD.decode(b64).unwrap_or_default()).into_owned()
            }
            _ => super::get_path(&item.json, &prop).map(super::js_string).unwrap_or_default(),
        };
        let doc = Html::parse_document(&html);
        let trim = ctx.param_bool("options.trimValues", i, false)?;
        let clean = ctx.param_bool("options.cleanUpText", i, false)?;
        let values = ctx.param("extractionValues.values", i, json!([]))?;
        let mut obj = Map::new();
        for v in values.as_array().into_iter().flatten() {
            let key = v.get("key").and_then(|x| x.as_str()).unwrap_or("").to_string();
            let sel = selector(v.get("cssSelector").and_then(|x| x.as_str()).unwrap_or(""))?;
            let ret = v.get("returnValue").and_then(|x| x.as_str()).unwrap_or("text");
            let attr = v.get("attribute").and_then(|x| x.as_str()).unwrap_or("");
            let skip: Vec<Selector> = v
                .get("skipSelectors")
                .and_then(|x| x.as_str())
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(selector)
                .collect::<Result<_>>()?;
            let post = |x: Value| match x {
                Value::String(s) => {
                    let s = if clean { s.replace(['\n', '\r'], "").split_whitespace().collect::<Vec<_>>().join(" ") } else { s };
                    json!(if trim { s.trim().to_string() } else { s })
                }
                other => other,
            };
            let found: Vec<Value> = doc.select(&sel).map(|el| post(extract(el, ret, attr, &skip))).collect();
            let value = if v.get("returnArray").and_then(|x| x.as_bool()).unwrap_or(false) {
                Value::Array(found)
            } else if ret == "text" || ret == "html" {
                // cheerio on a multi-element selection: text joins, html takes the first
                if ret == "text" {
                    let parts: Vec<String> = found.iter().filter_map(|x| x.as_str().map(str::to_string)).collect();
                    if parts.is_empty() { Value::Null } else { json!(parts.join("")) }
                } else {
                    found.into_iter().next().unwrap_or(Value::Null)
                }
            } else {
                found.into_iter().next().unwrap_or(Value::Null)
            };
            obj.insert(key, value);
        }
        out.push(item_from(Value::Object(obj), i));
    }
    Ok(NodeOutput::one(out))
}
