//! XML: JSON to XML and XML to JSON with xml2js' rules (n8n's library):
//! its builder's root choice, pretty printing and escaping, and its
//! parser's merging of attributes, arrays only for repeated children, text
//! under `_`, and whitespace handling.

use quick_xml::events::Event;
use quick_xml::Reader;
use serde_json::{Map, Value};

use super::lodash::js_to_string;
use super::{NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mode = ctx.param_str("mode", 0, "xmlToJson")?;
    let property = ctx.param_str("dataPropertyName", 0, "data")?;
    let options = ctx.param("options", 0, Value::Object(Map::new()))?;
    let opt_str = |k: &str, d: &str| options.get(k).map(|v| js_to_string(Some(v))).unwrap_or_else(|| d.to_string());
    let opt_bool = |k: &str, d: bool| options.get(k).map_or(d, |v| super::lodash::truthy(Some(v)));
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let r = match mode.as_str() {
            "xmlToJson" => {
                let po = ParseOptions {
                    attrkey: opt_str("attrkey", "$"),
                    charkey: opt_str("charkey", "_"),
                    explicit_array: opt_bool("explicitArray", false),
                    explicit_root: opt_bool("explicitRoot", true),
                    ignore_attrs: opt_bool("ignoreAttrs", false),
                    merge_attrs: opt_bool("mergeAttrs", true),
                    normalize: opt_bool("normalize", false),
                    normalize_tags: opt_bool("normalizeTags", false),
                    trim: opt_bool("trim", false),
                };
                match item.json.get(&property) {
                    None => Err(EngineError::node(format!("Item has no JSON property called \"{property}\""))),
                    Some(v) => parse(&js_to_string(Some(v)), &po),
                }
            }
            "jsonToxml" => {
                let bo = BuildOptions {
                    attrkey: opt_str("attrkey", "$"),
                    charkey: opt_str("charkey", "_"),
                    cdata: opt_bool("cdata", false),
                    headless: opt_bool("headless", false),
                    root_name: opt_str("rootName", "root"),
                };
                let mut m = Map::new();
                m.insert(property.clone(), Value::String(build(&item.json, &bo)));
                Ok(Value::Object(m))
            }
            other => Err(EngineError::node(format!("The operation \"{other}\" is not known!"))),
        };
        match r {
            Ok(json) => out.push(item_from(json, i)),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

// ---- JSON to XML (xml2js Builder + xmlbuilder pretty output) ----------------

pub struct BuildOptions {
    pub attrkey: String,
    pub charkey: String,
    pub cdata: bool,
    pub headless: bool,
    pub root_name: String,
}

enum Node {
    Element { name: String, attrs: Vec<(String, String)>, children: Vec<Node> },
    Text(String),
    Raw(String),
}

fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('\r', "&#xD;")
}

fn escape_attr(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('"', "&quot;").replace('\t', "&#x9;").replace('\n', "&#xA;").replace('\r', "&#xD;")
}

fn requires_cdata(s: &str) -> bool {
    s.contains(['&', '<', '>'])
}

fn wrap_cdata(s: &str) -> String {
    format!("<![CDATA[{}]]>", s.replace("]]>", "]]]]><![CDATA[>"))
}

/// xml2js `buildObject`.
pub fn build(json: &Value, o: &BuildOptions) -> String {
    let (root_name, body) = match json.as_object() {
        Some(m) if m.len() == 1 && o.root_name == "root" => {
            let (k, v) = m.iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap_or_default();
            (k, v)
        }
        _ => (o.root_name.clone(), json.clone()),
    };
    let mut root = Node::Element { name: root_name, attrs: vec![], children: vec![] };
    render(&mut root, &body, o);
    let mut out = String::new();
    if !o.headless {
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
    }
    write_node(&root, 0, &mut out);
    out
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => js_to_string(Some(other)),
    }
}

fn text_node(s: &str, cdata: bool) -> Node {
    if cdata && requires_cdata(s) {
        Node::Raw(wrap_cdata(s))
    } else {
        Node::Text(s.to_string())
    }
}

fn render(el: &mut Node, obj: &Value, o: &BuildOptions) {
    let Node::Element { attrs, children, .. } = el else { return };
    match obj {
        Value::Object(m) => {
            for (key, child) in m {
                if *key == o.attrkey {
                    if let Value::Object(a) = child {
                        for (k, v) in a {
                            attrs.push((k.clone(), scalar_text(v)));
                        }
                    }
                } else if *key == o.charkey {
                    children.push(text_node(&scalar_text(child), o.cdata));
                } else if let Value::Array(list) = child {
                    for entry in list {
                        let mut e = Node::Element { name: key.clone(), attrs: vec![], children: vec![] };
                        match entry {
                            Value::String(s) => {
                                if let Node::Element { children, .. } = &mut e {
                                    children.push(text_node(s, o.cdata));
                                }
                            }
                            other => render(&mut e, other, o),
                        }
                        children.push(e);
                    }
                } else {
                    let mut e = Node::Element { name: key.clone(), attrs: vec![], children: vec![] };
                    match child {
                        Value::Object(_) | Value::Null => render(&mut e, child, o),
                        other => {
                            let s = scalar_text(other);
                            if let Node::Element { children, .. } = &mut e {
                                // `ele(key, text)` adds a text node, even an empty one.
                                children.push(text_node(&s, o.cdata && other.is_string()));
                            }
                        }
                    }
                    children.push(e);
                }
            }
        }
        Value::Array(list) => {
            for child in list {
                if let Value::Object(m) = child {
                    for (key, entry) in m {
                        let mut e = Node::Element { name: key.clone(), attrs: vec![], children: vec![] };
                        render(&mut e, entry, o);
                        children.push(e);
                    }
                }
            }
        }
        Value::Null => {}
        other => children.push(text_node(&scalar_text(other), o.cdata)),
    }
}

fn write_node(n: &Node, depth: usize, out: &mut String) {
    let indent = "  ".repeat(depth);
    match n {
        Node::Text(t) => {
            out.push_str(&indent);
            out.push_str(&escape_text(t));
        }
        Node::Raw(r) => {
            out.push_str(&indent);
            out.push_str(r);
        }
        Node::Element { name, attrs, children } => {
            out.push_str(&indent);
            out.push('<');
            out.push_str(name);
            for (k, v) in attrs {
                out.push_str(&format!(" {k}=\"{}\"", escape_attr(v)));
            }
            let empty_text = |c: &Node| matches!(c, Node::Text(t) if t.is_empty());
            if children.is_empty() || children.iter().all(empty_text) {
                if children.is_empty() {
                    out.push_str("/>");
                } else {
                    out.push_str(&format!("></{name}>"));
                }
                return;
            }
            if let [only @ (Node::Text(_) | Node::Raw(_))] = children.as_slice() {
                out.push('>');
                match only {
                    Node::Text(t) => out.push_str(&escape_text(t)),
                    Node::Raw(r) => out.push_str(r),
                    Node::Element { .. } => {}
                }
                out.push_str(&format!("</{name}>"));
                return;
            }
            out.push_str(">\n");
            for (k, c) in children.iter().enumerate() {
                write_node(c, depth + 1, out);
                if k + 1 < children.len() {
                    out.push('\n');
                }
            }
            out.push('\n');
            out.push_str(&indent);
            out.push_str(&format!("</{name}>"));
        }
    }
}

// ---- XML to JSON (xml2js Parser) --------------------------------------------------

pub struct ParseOptions {
    pub attrkey: String,
    pub charkey: String,
    pub explicit_array: bool,
    pub explicit_root: bool,
    pub ignore_attrs: bool,
    pub merge_attrs: bool,
    pub normalize: bool,
    pub normalize_tags: bool,
    pub trim: bool,
}

struct Open {
    name: String,
    obj: Map<String, Value>,
    text: String,
    cdata: bool,
}

fn assign_or_push(obj: &mut Map<String, Value>, key: &str, value: Value, explicit_array: bool) {
    match obj.get_mut(key) {
        None => {
            obj.insert(key.to_string(), if explicit_array { Value::Array(vec![value]) } else { value });
        }
        Some(Value::Array(a)) => a.push(value),
        Some(existing) => {
            let first = std::mem::take(existing);
            *existing = Value::Array(vec![first, value]);
        }
    }
}

fn xml_error(e: impl std::fmt::Display) -> EngineError {
    EngineError::node(format!("The XML could not be parsed: {e}"))
}

/// xml2js `parseString` with n8n's defaults.
pub fn parse(xml: &str, o: &ParseOptions) -> Result<Value> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Open> = vec![];
    let mut result: Option<Value> = None;
    let open = |e: &quick_xml::events::BytesStart<'_>| -> Result<Open> {
        let mut name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        if o.normalize_tags {
            name = name.to_lowercase();
        }
        let mut obj = Map::new();
        if !o.ignore_attrs {
            let mut attrs = Map::new();
            for a in e.attributes() {
                let a = a.map_err(xml_error)?;
                let key = String::from_utf8_lossy(a.key.as_ref()).into_owned();
                let value = a.unescape_value().map_err(xml_error)?.into_owned();
                if o.merge_attrs {
                    assign_or_push(&mut obj, &key, Value::String(value), o.explicit_array);
                } else {
                    attrs.insert(key, Value::String(value));
                }
            }
            if !o.merge_attrs && !attrs.is_empty() {
                obj.insert(o.attrkey.clone(), Value::Object(attrs));
            }
        }
        Ok(Open { name, obj, text: String::new(), cdata: false })
    };
    loop {
        let ev = reader.read_event().map_err(xml_error)?;
        match ev {
            Event::Start(e) => stack.push(open(&e)?),
            Event::Empty(e) => {
                let el = open(&e)?;
                close(el, &mut stack, &mut result, o);
            }
            Event::End(_) => {
                let el = stack.pop().ok_or_else(|| xml_error("unexpected close tag"))?;
                close(el, &mut stack, &mut result, o);
            }
            Event::Text(t) => {
                let s = t.unescape().map_err(xml_error)?;
                match stack.last_mut() {
                    Some(top) => top.text.push_str(&s),
                    None if s.trim().is_empty() => {}
                    None => return Err(xml_error("Non-whitespace before first tag.")),
                }
            }
            Event::CData(c) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&c.into_inner()));
                    top.cdata = true;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(xml_error("Unclosed root tag"));
    }
    Ok(result.unwrap_or(Value::Null))
}

fn close(el: Open, stack: &mut [Open], result: &mut Option<Value>, o: &ParseOptions) {
    let Open { name, mut obj, text, cdata } = el;
    let mut value: Value;
    if text.trim().is_empty() && !cdata {
        // Whitespace-only text is dropped; an empty element keeps it as its value.
        value = if obj.is_empty() { Value::String(text) } else { Value::Object(obj) };
    } else {
        let mut t = text;
        if o.trim {
            t = t.trim().to_string();
        }
        if o.normalize {
            t = t.split_whitespace().collect::<Vec<_>>().join(" ");
        }
        if obj.is_empty() {
            value = Value::String(t);
        } else {
            obj.insert(o.charkey.clone(), Value::String(t));
            value = Value::Object(obj);
        }
    }
    if let Value::Object(m) = &value {
        if m.is_empty() {
            value = Value::String(String::new());
        }
    }
    match stack.last_mut() {
        Some(parent) => assign_or_push(&mut parent.obj, &name, value, o.explicit_array),
        None => {
            *result = Some(if o.explicit_root {
                let mut m = Map::new();
                m.insert(name, value);
                Value::Object(m)
            } else {
                value
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bo() -> BuildOptions {
        BuildOptions { attrkey: "$".into(), charkey: "_".into(), cdata: false, headless: true, root_name: "root".into() }
    }

    fn po() -> ParseOptions {
        ParseOptions { attrkey: "$".into(), charkey: "_".into(), explicit_array: false, explicit_root: true, ignore_attrs: false, merge_attrs: true, normalize: false, normalize_tags: false, trim: false }
    }

    #[test]
    fn builds_like_xml2js() {
        let v = json!({ "data": { "$": { "id": "a\"b" }, "n": [1, "x<y"], "e": {}, "nil": null, "t": { "_": "hi", "$": { "k": "v" } } } });
        assert_eq!(
            build(&v, &bo()),
            "<data id=\"a&quot;b\">\n  <n>1</n>\n  <n>x&lt;y</n>\n  <e/>\n  <nil/>\n  <t k=\"v\">hi</t>\n</data>"
        );
        assert_eq!(build(&json!({ "a": 1, "b": 2 }), &bo()), "<root>\n  <a>1</a>\n  <b>2</b>\n</root>");
    }

    #[test]
    fn parses_like_xml2js() {
        let xml = "<?xml version=\"1.0\"?><r a=\"1\"> <x>1</x><x>2</x><y k=\"v\">t &amp; u</y><z/><w>  </w></r>";
        assert_eq!(parse(xml, &po()).expect("parse"), json!({ "r": { "a": "1", "x": ["1", "2"], "y": { "k": "v", "_": "t & u" }, "z": "", "w": "  " } }));
        let mut p = po();
        p.merge_attrs = false;
        p.explicit_array = true;
        assert_eq!(parse("<r a=\"1\"><x>1</x></r>", &p).expect("parse"), json!({ "r": { "$": { "a": "1" }, "x": ["1"] } }));
        assert!(parse("<r><x></r>", &po()).is_err());
    }
}
