//! HTML (1, 1.1, 1.2): generate from a template, extract content by CSS
//! selector (cheerio text before 1.2, html-to-text from 1.2; inner HTML,
//! attributes, form values), convert items to an HTML table; and the legacy
//! HTML Extract node.

use scraper::{ElementRef, Html, Node, Selector};
use serde_json::{json, Map, Value};

use super::lodash::{self, js_to_string};
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

/// What an extraction value reads from the matched elements.
struct ValueSpec {
    key: String,
    selector: Selector,
    ret: String,
    attribute: String,
    skip: Vec<Selector>,
    array: bool,
}

fn value_specs(values: &Value) -> Result<Vec<ValueSpec>> {
    let s = |v: &Value, k: &str| v.get(k).map(|x| js_to_string(Some(x))).unwrap_or_default();
    values
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            Ok(ValueSpec {
                key: s(v, "key"),
                selector: selector(&s(v, "cssSelector"))?,
                ret: v.get("returnValue").map(|x| js_to_string(Some(x))).unwrap_or_else(|| "text".into()),
                attribute: s(v, "attribute"),
                skip: s(v, "skipSelectors").split(',').map(str::trim).filter(|x| !x.is_empty()).map(selector).collect::<Result<_>>()?,
                array: v.get("returnArray").is_some_and(|x| lodash::truthy(Some(x))),
            })
        })
        .collect()
}

/// cheerio's `$.text()`: every text node below the matched elements.
fn all_text<'a>(els: impl Iterator<Item = ElementRef<'a>>) -> String {
    els.flat_map(|e| e.text().map(str::to_string).collect::<Vec<_>>()).collect()
}

/// cheerio's `.val()` of the first element.
fn form_value(el: ElementRef<'_>) -> Option<Value> {
    let v = el.value();
    match v.name() {
        "input" => v.attr("value").map(|x| json!(x)),
        "textarea" => Some(json!(el.text().collect::<String>())),
        "option" => Some(json!(v.attr("value").map(str::to_string).unwrap_or_else(|| el.text().collect()))),
        "select" => {
            let options: Vec<ElementRef<'_>> = el.descendants().filter_map(ElementRef::wrap).filter(|o| o.value().name() == "option").collect();
            let value_of = |o: &ElementRef<'_>| o.value().attr("value").map(str::to_string).unwrap_or_else(|| o.text().collect());
            let selected: Vec<&ElementRef<'_>> = options.iter().filter(|o| o.value().attr("selected").is_some()).collect();
            if v.attr("multiple").is_some() {
                Some(Value::Array(selected.iter().map(|o| json!(value_of(o))).collect()))
            } else {
                selected.first().copied().or(options.first()).map(|o| json!(value_of(o)))
            }
        }
        _ => None,
    }
}

/// One value from the selection (all matched elements, or one of them),
/// as n8n's `getValue` reads it per node generation.
fn read_value(els: &[ElementRef<'_>], spec: &ValueSpec, html_to_text: bool) -> Option<Value> {
    let first = els.first().copied();
    match spec.ret.as_str() {
        // `.attr()` without a name gives every attribute.
        "attribute" if spec.attribute.is_empty() => first.map(|e| Value::Object(e.value().attrs().map(|(k, v)| (k.to_string(), json!(v))).collect())),
        "attribute" => first.and_then(|e| e.value().attr(&spec.attribute)).map(|x| json!(x)),
        "html" => first.map(|e| e.inner_html()).filter(|h| !h.is_empty()).map(|h| json!(h)),
        "value" => first.and_then(form_value).map(|v| match v {
            Value::Array(a) if html_to_text => json!(a.iter().map(|x| js_to_string(Some(x))).collect::<Vec<_>>().join(",")),
            other => other,
        }),
        _ => {
            if html_to_text {
                // html-to-text over the first element's inner HTML.
                let inner = first.map(|e| e.inner_html()).unwrap_or_default();
                let frag = Html::parse_fragment(&inner);
                Some(json!(to_text(frag.root_element(), &spec.skip)))
            } else {
                Some(json!(all_text(els.iter().copied()))).filter(|t| t.as_str() != Some(""))
            }
        }
    }
}

/// Trim and clean up as the options say.
fn post_process(v: Value, trim: bool, clean: bool) -> Value {
    match v {
        Value::String(mut s) => {
            if trim {
                s = s.trim().to_string();
            }
            if clean {
                s = s.trim().replace("\r\n", "").replace(['\n', '\r'], "").split_whitespace().collect::<Vec<_>>().join(" ");
            }
            Value::String(s)
        }
        other => other,
    }
}

/// Runs the extraction values over each HTML string; one item per string.
fn extract_items(htmls: Vec<String>, specs: &[ValueSpec], i: usize, html_to_text: bool, trim: bool, clean: bool) -> Vec<crate::data::Item> {
    let mut out = vec![];
    for html in htmls {
        let doc = Html::parse_document(&html);
        let mut obj = Map::new();
        for spec in specs {
            let els: Vec<ElementRef<'_>> = doc.select(&spec.selector).collect();
            if spec.array {
                let list: Vec<Value> = els.iter().map(|e| read_value(&[*e], spec, html_to_text).map(|v| post_process(v, trim, clean)).unwrap_or(Value::Null)).collect();
                obj.insert(spec.key.clone(), Value::Array(list));
            } else {
                match read_value(&els, spec, html_to_text) {
                    Some(v) => {
                        obj.insert(spec.key.clone(), post_process(v, trim, clean));
                    }
                    // `undefined`: the key does not survive JSON.
                    None => {
                        obj.shift_remove(spec.key.as_str());
                    }
                }
            }
        }
        out.push(item_from(Value::Object(obj), i));
    }
    out
}

/// The HTML source of an item: a JSON property (a string or a list of
/// strings) or a binary property.
fn sources(item: &crate::data::Item, source: &str, prop: &str, dotted: bool) -> Result<Vec<String>> {
    if source == "binary" {
        let b64 = item
            .binary
            .as_deref()
            .and_then(|b| b.get(prop))
            .and_then(|b| b.get("data"))
            .and_then(Value::as_str)
            .ok_or_else(|| EngineError::node(format!("This operation expects the node's input data to contain a binary file '{prop}', but none was found [item 0]")))?;
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| EngineError::node(format!("Binary data could not be decoded: {e}")))?;
        return Ok(vec![String::from_utf8_lossy(&bytes).into_owned()]);
    }
    let value = item.json.get(prop).cloned().or_else(|| if dotted { lodash::get(&item.json, prop).map(|c| c.into_owned()) } else { None });
    match value {
        None => Err(EngineError::node(format!("No property named \"{prop}\" exists!"))),
        Some(Value::Array(a)) => Ok(a.iter().map(|x| js_to_string(Some(x))).collect()),
        Some(v) => Ok(vec![js_to_string(Some(&v))]),
    }
}

/// "Convert to HTML Table": one item holding a table of all input items.
fn html_table(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    if input.is_empty() {
        return Ok(NodeOutput::one(vec![]));
    }
    let custom = ctx.param_bool("options.customStyling", 0, false)?;
    let (table_style, header_style, cell_style) = if custom {
        ("", "", "")
    } else {
        (
            "style='border-spacing:0; font-family:helvetica,arial,sans-serif'",
            "style='margin:0; padding:7px 20px 7px 0px; border-bottom:1px solid #eee; text-align:left; color:#888; font-weight:normal'",
            "style='margin:0; padding:7px 20px 7px 0px; border-bottom:1px solid #eee'",
        )
    };
    let table_attrs = ctx.param_str("options.tableAttributes", 0, "")?;
    let header_attrs = ctx.param_str("options.headerAttributes", 0, "")?;
    let caption = ctx.param_str("options.caption", 0, "")?;
    let capitalize = ctx.param_bool("options.capitalize", 0, false)?;
    let mut headers: Vec<String> = vec![];
    for it in input.iter() {
        for k in it.json.as_object().into_iter().flat_map(|o| o.keys()) {
            if !headers.contains(k) {
                headers.push(k.clone());
            }
        }
    }
    let cap = |h: &str| -> String {
        if !capitalize {
            return h.to_string();
        }
        h.split('_').filter(|w| !w.is_empty()).map(|w| w.chars().next().map(|c| c.to_uppercase().collect::<String>() + &w[c.len_utf8()..]).unwrap_or_default()).collect::<Vec<_>>().join(" ")
    };
    let mut t = format!("<table {table_style} {table_attrs}>");
    if !caption.is_empty() {
        t += &format!("<caption>{caption}</caption>");
    }
    t += &format!("<thead {header_style} {header_attrs}><tr>");
    t += &headers.iter().map(|h| format!("<th>{}</th>", cap(h))).collect::<String>();
    t += "</tr></thead><tbody>";
    for (i, it) in input.iter().enumerate() {
        let row_attrs = ctx.param_str("options.rowAttributes", i, "")?;
        let cell_attrs = ctx.param_str("options.cellAttributes", i, "")?;
        t += &format!("<tr  {row_attrs}>");
        for h in &headers {
            let v = it.json.get(h);
            let cell = match v {
                Some(Value::Bool(b)) => format!("<input type=\"checkbox\" {}/>", if *b { "checked=\"checked\"" } else { "" }),
                other => js_to_string(other),
            };
            t += &format!("<td {cell_style} {cell_attrs}>{cell}</td>");
        }
        t += "</tr>";
    }
    t += "</tbody></table>";
    let paired = crate::data::PairedItem::Other(Box::new(Value::Array((0..input.len()).map(|i| json!({ "item": i })).collect())));
    Ok(NodeOutput::one(vec![crate::data::Item { json: json!({ "table": t }).into(), binary: None, paired_item: Some(paired) }]))
}

/// "Generate HTML Template": each `{{ … }}` in the template evaluated for the item.
fn html_template(ctx: &mut NodeContext<'_>, i: usize) -> Result<String> {
    let mut html = match ctx.raw("html") {
        Some(Value::String(s)) => s.strip_prefix('=').unwrap_or(s).to_string(),
        Some(other) => js_to_string(Some(other)),
        None => String::new(),
    };
    let mut resolvables = vec![];
    let mut rest = html.as_str();
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else { break };
        resolvables.push(rest[start..start + end + 2].to_string());
        rest = &rest[start + end + 2..];
    }
    for r in resolvables {
        let v = ctx.resolve(&Value::String(format!("={r}")), i)?;
        let text = match &v {
            Value::String(s) => s.clone(),
            Value::Object(_) | Value::Array(_) => lodash::json_stringify(&v),
            other => js_to_string(Some(other)),
        };
        html = html.replacen(&r, &text, 1);
    }
    Ok(html)
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let op = ctx.param_str("operation", 0, "generateHtmlTemplate")?;
    if op == "convertToHtmlTable" {
        return html_table(ctx);
    }
    let version = ctx.version();
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let r: Result<Vec<crate::data::Item>> = match op.as_str() {
            "generateHtmlTemplate" => html_template(ctx, i).map(|h| vec![item_from(json!({ "html": h }), i)]),
            "extractHtmlContent" => (|| {
                let source = ctx.param_str("sourceData", i, "json")?;
                let prop = ctx.param_str("dataPropertyName", i, "data")?;
                let specs = value_specs(&ctx.param("extractionValues.values", i, json!([]))?)?;
                let trim = ctx.param_bool("options.trimValues", i, false)?;
                let clean = ctx.param_bool("options.cleanUpText", i, false)?;
                let htmls = sources(item, &source, &prop, version > 1.0)?;
                Ok(extract_items(htmls, &specs, i, version > 1.1, trim, clean))
            })(),
            other => Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
        };
        match r {
            Ok(items) => out.extend(items),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// The legacy HTML Extract node: cheerio text, values trimmed unless told not to.
pub fn html_extract(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let r = (|| {
            let source = ctx.param_str("sourceData", i, "json")?;
            let prop = ctx.param_str("dataPropertyName", i, "data")?;
            let specs = value_specs(&ctx.param("extractionValues.values", i, json!([]))?)?;
            let trim = ctx.param_bool("options.trimValues", i, true)?;
            let htmls = sources(item, &source, &prop, true)?;
            Ok::<_, EngineError>(extract_items(htmls, &specs, i, false, trim, false))
        })();
        match r {
            Ok(items) => out.extend(items),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
