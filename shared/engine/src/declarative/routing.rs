//! The routing of one request being built: what each property's `routing`
//! adds (n8n's `INodeRequestOptions`, `send`, `output`, `operations`), the
//! credential's `authenticate`, `preSend` steps, and the `postReceive` steps
//! that turn an answer into items.

use serde_json::{json, Map, Value};

use crate::catalog::credential_types::credential_type;
use crate::catalog::NodeProperty;
use crate::data::Item;
use crate::error::{EngineError, Result};
use crate::nodes::http::{self, Part, Response};
use crate::nodes::{get_path, js_string, set_path, NodeContext};

/// Values routing expressions see besides the node's own (`$json`, `$node`…).
#[derive(Clone, Copy, Default)]
pub struct Bindings<'a> {
    /// The node's resolved parameters with defaults (`$parameter`): n8n's
    /// routing sees values, not the expressions that made them.
    pub parameters: Option<&'a Value>,
    pub value: Option<&'a Value>,
    pub credentials: Option<&'a Value>,
    pub response: Option<&'a Value>,
    /// Every answer of the item's requests so far (an operation with `then`).
    pub responses: Option<&'a Value>,
    pub response_item: Option<&'a Value>,
}

/// Resolves `v` for item `i` with `$parameter`, `$value`, `$credentials`, `$response` and
/// `$responseItem` bound (written into the expression as JSON literals, so
/// the sandbox needs no new globals). An expression that fails while the
/// credential is bound reports no text of it: the literal holds secrets.
pub fn resolve_bound(ctx: &mut NodeContext<'_>, v: &Value, i: usize, b: &Bindings<'_>) -> Result<Value> {
    if !crate::expr::has_expression(v) {
        return Ok(v.clone());
    }
    static BOUND: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = BOUND.get_or_init(|| regex::Regex::new(r"\$(parameter|value|credentials|responseItem|responses|response)\b").expect("a valid pattern"));
    let mut uses_credentials = false;
    let bound = map_strings(v, &mut |s| {
        if !s.starts_with('=') {
            return s.to_owned();
        }
        re.replace_all(s, |c: &regex::Captures| {
            let value = match &c[1] {
                "parameter" => b.parameters,
                "value" => b.value,
                "credentials" => {
                    uses_credentials = true;
                    b.credentials
                }
                "response" => b.response,
                "responses" => b.responses,
                _ => b.response_item,
            };
            format!("({})", value.map(js_literal).unwrap_or_else(|| "undefined".into()))
        })
        .into_owned()
    });
    ctx.resolve(&bound, i).map_err(|e| match e {
        EngineError::Expression(_) if uses_credentials => EngineError::node("A routing expression over the credential failed"),
        other => other,
    })
}

/// `v` as a JavaScript literal that cannot end the `{{ }}` around it:
/// braces inside strings escaped, braces outside them spaced.
pub(super) fn js_literal(v: &Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        match c {
            '{' if in_string => out.push_str("\\u007b"),
            '}' if in_string => out.push_str("\\u007d"),
            '}' => out.push_str("} "),
            '{' => out.push_str("{ "),
            c => {
                if in_string && !escaped && c == '"' {
                    in_string = false;
                } else if !in_string && c == '"' {
                    in_string = true;
                }
                escaped = in_string && !escaped && c == '\\';
                out.push(c);
                continue;
            }
        }
        escaped = false;
    }
    out
}

fn map_strings(v: &Value, f: &mut impl FnMut(&str) -> String) -> Value {
    match v {
        Value::String(s) => Value::String(f(s)),
        Value::Array(a) => Value::Array(a.iter().map(|x| map_strings(x, f)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, x)| (k.clone(), map_strings(x, f))).collect()),
        other => other.clone(),
    }
}

/// n8n's `operations.pagination`.
#[derive(Debug, Clone)]
pub enum Pagination {
    /// `continue` evaluated on each answer; `request` (qs, body, url…) over
    /// `$response` gives the next request.
    Generic { continue_when: Value, request: Value },
    /// `limitParameter`/`offsetParameter` stepped by `pageSize` until a short page.
    /// A page is full when the answer (at `root_property`) holds `page_size` entries.
    Offset { limit_parameter: String, offset_parameter: String, page_size: u64, in_body: bool, root_property: Option<String> },
}

impl Pagination {
    fn parse(v: &Value) -> Result<Pagination> {
        let p = v.get("properties").cloned().unwrap_or(json!({}));
        match v.get("type").and_then(Value::as_str) {
            Some("generic") => Ok(Pagination::Generic { continue_when: p.get("continue").cloned().unwrap_or(json!(false)), request: p.get("request").cloned().unwrap_or(json!({})) }),
            Some("offset") => Ok(Pagination::Offset {
                limit_parameter: p.get("limitParameter").map(js_string).unwrap_or_else(|| "limit".into()),
                offset_parameter: p.get("offsetParameter").map(js_string).unwrap_or_else(|| "offset".into()),
                page_size: p.get("pageSize").and_then(Value::as_u64).unwrap_or(100).max(1),
                in_body: p.get("type").and_then(Value::as_str) == Some("body"),
                root_property: p.get("rootProperty").map(js_string),
            }),
            other => Err(EngineError::node(format!("Pagination type {other:?} is not supported"))),
        }
    }
}

/// The request being built for one item, and what happens to its answer.
#[derive(Default)]
pub struct RequestSpec {
    pub method: String,
    pub base_url: String,
    pub url: String,
    pub qs: Map<String, Value>,
    pub headers: Map<String, Value>,
    pub body: Map<String, Value>,
    /// Set by a `multipartBinary` preSend step: the body and its content type.
    pub multipart: Option<(Vec<u8>, String)>,
    pub ignore_http_status_errors: bool,
    /// `postReceive` steps with the `$value` of the property that added them.
    pub post_receive: Vec<(Value, Value)>,
    pub pre_send: Vec<Value>,
    pub max_results: Option<Value>,
    pub pagination: Option<Pagination>,
    /// A `send.paginate` said yes (Return All).
    pub paginate: bool,
    /// Follow-up requests (routing `then`), in order.
    pub then: Vec<Value>,
    /// A request body that is not an object (`request.body` an array).
    pub raw_body: Option<Value>,
}

impl RequestSpec {
    /// Merges a `request` object (`requestDefaults` or a routing's).
    pub fn apply_request(&mut self, ctx: &mut NodeContext<'_>, r: &Value, i: usize, b: &Bindings<'_>) -> Result<()> {
        let Some(r) = r.as_object() else { return Ok(()) };
        for (k, raw) in r {
            match k.as_str() {
                "qs" | "headers" | "body" => {
                    let target = match k.as_str() {
                        "qs" => &mut self.qs,
                        "headers" => &mut self.headers,
                        _ => &mut self.body,
                    };
                    if !raw.is_object() {
                        // one expression for the whole object (`"={{ Object.assign(…) }}"`)
                        // spreads what it comes to; a body that is not an object (a JSON
                        // array) goes out as it is
                        match resolve_bound(ctx, raw, i, b)? {
                            Value::Object(m) => target.extend(m),
                            Value::Null => {}
                            v if k == "body" => self.raw_body = Some(v),
                            _ => {}
                        }
                        continue;
                    }
                    for (name, x) in raw.as_object().into_iter().flatten() {
                        let v = resolve_bound(ctx, x, i, b)?;
                        // an expression that comes to undefined leaves the key out, as in n8n
                        if v.is_null() && crate::expr::has_expression(x) {
                            continue;
                        }
                        target.insert(name.clone(), v);
                    }
                }
                "method" | "baseURL" | "url" | "ignoreHttpStatusErrors" => {
                    let v = resolve_bound(ctx, raw, i, b)?;
                    match k.as_str() {
                        "method" => self.method = js_string(&v),
                        "baseURL" => self.base_url = js_string(&v),
                        "url" => self.url = js_string(&v),
                        _ => self.ignore_http_status_errors = v.as_bool().unwrap_or(false),
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Adds one `routing` object, `value` being what `$value` is.
    pub fn apply_routing(&mut self, ctx: &mut NodeContext<'_>, r: &Value, value: &Value, i: usize, b: &Bindings<'_>) -> Result<()> {
        let b = Bindings { value: Some(value), ..*b };
        if let Some(req) = r.get("request") {
            self.apply_request(ctx, req, i, &b)?;
        }
        // `send` is one object in n8n; a list is our shorthand for several.
        let sends: Vec<&Value> = match r.get("send") {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(s) => vec![s],
            None => vec![],
        };
        for send in sends {
            self.apply_send(ctx, send, value, i, &b)?;
        }
        if let Some(output) = r.get("output") {
            if let Some(steps) = output.get("postReceive").and_then(Value::as_array) {
                self.post_receive.extend(steps.iter().map(|s| (s.clone(), value.clone())));
            }
            if let Some(m) = output.get("maxResults") {
                self.max_results = Some(resolve_bound(ctx, m, i, &b)?);
            }
        }
        if let Some(steps) = r.get("then").and_then(Value::as_array) {
            // raw: each is built over the answer before it
            self.then.extend(steps.iter().cloned());
        }
        if let Some(p) = r.pointer("/operations/pagination") {
            // raw: `continue` and the next request are over each answer's `$response`
            self.pagination = Some(Pagination::parse(p)?);
        }
        Ok(())
    }

    fn apply_send(&mut self, ctx: &mut NodeContext<'_>, send: &Value, value: &Value, i: usize, b: &Bindings<'_>) -> Result<()> {
        if let Some(p) = send.get("paginate") {
            self.paginate = crate::nodes::conditions::truthy(&resolve_bound(ctx, p, i, b)?);
        }
        // resolved now, while `$value` is this property's; run once the request is complete
        for step in send.get("preSend").and_then(Value::as_array).into_iter().flatten() {
            // a step with `enabled` runs only when it holds
            if let Some(enabled) = step.get("enabled") {
                if !crate::nodes::conditions::truthy(&resolve_bound(ctx, enabled, i, b)?) {
                    continue;
                }
            }
            let mut step = step.clone();
            if let Some(props) = step.get("properties") {
                step["properties"] = resolve_bound(ctx, props, i, b)?;
            }
            self.pre_send.push(step);
        }
        let (Some(kind), Some(property)) = (send.get("type").and_then(Value::as_str), send.get("property")) else { return Ok(()) };
        let v = match send.get("value") {
            Some(template) => resolve_bound(ctx, template, i, b)?,
            None => value.clone(),
        };
        // n8n leaves out what resolves to undefined; a set empty string is sent
        if v.is_null() {
            return Ok(());
        }
        let property = js_string(&resolve_bound(ctx, property, i, b)?);
        let dotted = send.get("propertyInDotNotation").and_then(Value::as_bool).unwrap_or(true);
        let target = match kind {
            "query" => &mut self.qs,
            "body" => &mut self.body,
            "header" => &mut self.headers,
            other => return Err(EngineError::node(format!("routing send type {other:?} is not supported (query, body, header)"))),
        };
        if dotted && kind == "body" {
            let mut obj = Value::Object(std::mem::take(target));
            set_path(&mut obj, &property, v);
            *target = obj.as_object().cloned().unwrap_or_default();
        } else {
            target.insert(property, v);
        }
        Ok(())
    }

    /// A shown property's routing, its chosen option's, and for a collection
    /// the routing of each entry it sets.
    pub fn apply_property(&mut self, ctx: &mut NodeContext<'_>, p: &NodeProperty, value: &Value, values: &Map<String, Value>, i: usize, b: &Bindings<'_>) -> Result<()> {
        let value = locator_value(p.modes.as_ref(), value);
        let collection = matches!(p.prop_type.as_str(), "collection" | "fixedCollection");
        // An unset collection sends nothing (n8n's parameters leave it out).
        if collection && (value.as_object().is_some_and(Map::is_empty) || value.as_array().is_some_and(Vec::is_empty) || value.is_null()) {
            return Ok(());
        }
        if let Some(r) = &p.routing {
            self.apply_routing(ctx, r, &value, i, b)?;
        }
        let options = p.options.iter().flatten();
        match p.prop_type.as_str() {
            "options" => {
                if let Some(r) = options.clone().find(|o| o.get("value") == Some(&value)).and_then(|o| o.get("routing")) {
                    self.apply_routing(ctx, r, &value, i, b)?;
                }
            }
            "collection" | "fixedCollection" => {
                for (k, v) in value.as_object().into_iter().flatten() {
                    // the first entry of that name that is shown (a name may repeat with other displayOptions)
                    let named = |o: &&Value| o.get("name").and_then(Value::as_str) == Some(k);
                    let Some(sub) = options.clone().filter(named).find(|o| super::display::shown(o.get("displayOptions"), values, ctx.version())) else { continue };
                    let v = locator_value(sub.get("modes"), v);
                    if let Some(r) = sub.get("routing") {
                        self.apply_routing(ctx, r, &v, i, b)?;
                    }
                    if let Some(r) = sub.get("options").and_then(Value::as_array).and_then(|o| o.iter().find(|o| o.get("value") == Some(&v))).and_then(|o| o.get("routing")) {
                        self.apply_routing(ctx, r, &v, i, b)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Puts the credential on the request: the type's `authenticate`, or
    /// the access token of a connected OAuth2 credential as a bearer token
    /// (an authorization-code credential's and a service account's are put
    /// on at send time, where they are refreshed or exchanged).
    pub fn authenticate(&mut self, cred_type: &str, data: &Value) -> Result<()> {
        let t = credential_type(cred_type).ok_or_else(|| EngineError::node(format!("Unknown credential type {cred_type}")))?;
        let at_send = matches!(t.authenticate, Some(crate::catalog::credential_types::Authenticate::JwtBearer { .. }))
            || crate::oauth2::Settings::of(cred_type, data).is_some_and(|s| s.connects());
        if at_send {
            return Ok(());
        }
        if let Some(a) = &t.authenticate {
            let applied = a.apply(data).map_err(EngineError::node)?;
            for (k, v) in applied.headers {
                self.headers.retain(|h, _| !h.eq_ignore_ascii_case(&k));
                self.headers.insert(k, Value::String(v));
            }
            self.qs.extend(applied.qs);
            self.body.extend(applied.body);
            return Ok(());
        }
        match data.pointer("/oauthTokenData/access_token").and_then(Value::as_str) {
            Some(token) => {
                self.headers.insert("Authorization".into(), Value::String(format!("Bearer {token}")));
                Ok(())
            }
            None => Err(EngineError::node_with(
                format!("The {} credential is not connected", t.display_name),
                "Reconnect the credential: it holds no access token.",
            )),
        }
    }

    /// Sets a pagination parameter in the query or the body.
    pub fn set_param(&mut self, in_body: bool, name: &str, v: Value) {
        if in_body { &mut self.body } else { &mut self.qs }.insert(name.to_owned(), v);
    }

    /// Runs the `preSend` steps, in order.
    pub fn pre_send(&mut self, item: &Item, i: usize) -> Result<()> {
        for step in std::mem::take(&mut self.pre_send) {
            let props = step.get("properties").cloned().unwrap_or(json!({}));
            match step.get("type").and_then(Value::as_str) {
                // The JSON body as multipart form fields plus one file from the item's binary.
                // With `text` the file is that text (`fileName`) instead of the item's binary.
                Some("multipartBinary") => {
                    let field = props.get("field").map(js_string).unwrap_or_else(|| "file".into());
                    let property = props.get("binaryProperty").map(js_string).unwrap_or_else(|| "data".into());
                    let text_file;
                    let entry = match props.get("text").filter(|t| !t.is_null()) {
                        Some(text) => {
                            let name = props.get("fileName").map(js_string).unwrap_or_else(|| "file.txt".into());
                            text_file = crate::binary::entry(js_string(text).as_bytes(), Some(&name), Some("text/plain"));
                            &text_file
                        }
                        None => {
                            let binary = item.binary.as_ref().ok_or_else(|| EngineError::node_with("No binary data exists on item!", format!("item {i}")))?;
                            binary.get(&property).ok_or_else(|| EngineError::node(format!("The item has no binary field '{property}' [item {i}]")))?
                        }
                    };
                    let fields = std::mem::take(&mut self.body);
                    // The JSON body as one part (Discord's `payload_json`), or one part per field.
                    let mut parts: Vec<Part> = match props.get("jsonField").map(js_string) {
                        Some(name) => vec![Part::Text(name, Value::Object(fields).to_string())],
                        None => fields.into_iter().map(|(k, v)| Part::Text(k, js_string(&v))).collect(),
                    };
                    parts.push(Part::File {
                        name: field,
                        file_name: entry.get("fileName").and_then(Value::as_str).map(str::to_owned),
                        content_type: entry.get("mimeType").and_then(Value::as_str).map(str::to_owned),
                        bytes: crate::binary::bytes_of(entry).map_err(EngineError::node)?,
                    });
                    self.multipart = Some(http::multipart_body(&parts));
                }
                // What routing cannot do yet says so.
                Some("unsupported") => return Err(EngineError::node(props.get("message").map(js_string).unwrap_or_else(|| "This option is not supported".into()))),
                other => return Err(EngineError::node(format!("preSend step {other:?} is not supported"))),
            }
        }
        Ok(())
    }

    /// The answer's `errorWhen` checks alone (an intermediate answer of an
    /// operation with follow-up requests must pass them too).
    pub fn refusal(&self, ctx: &mut NodeContext<'_>, resp: &Response, response: &Value, i: usize, b: &Bindings<'_>) -> Result<()> {
        let checks = RequestSpec { post_receive: self.post_receive.iter().filter(|(s, _)| s.get("type").and_then(Value::as_str) == Some("errorWhen")).cloned().collect(), ..RequestSpec::default() };
        checks.post_receive(ctx, resp, response, i, b).map(|_| ())
    }

    /// The answer's items after the `postReceive` steps (n8n's: an array
    /// body is one item per entry, anything else one item).
    pub fn post_receive(&self, ctx: &mut NodeContext<'_>, resp: &Response, response: &Value, i: usize, b: &Bindings<'_>) -> Result<Vec<Item>> {
        let mut items: Vec<Item> = match &response["body"] {
            Value::Array(a) => a.iter().map(|x| item_of(x.clone())).collect(),
            Value::Null => vec![item_of(json!({}))],
            other => vec![item_of(other.clone())],
        };
        for (step, value) in &self.post_receive {
            let b = &Bindings { value: Some(value), ..*b };
            if let Some(enabled) = step.get("enabled") {
                if !crate::nodes::conditions::truthy(&resolve_bound(ctx, enabled, i, b)?) {
                    continue;
                }
            }
            let props = step.get("properties").cloned().unwrap_or(json!({}));
            // what does not depend on the item at hand resolves once
            let prop = |ctx: &mut NodeContext<'_>, name: &str| -> Result<String> { Ok(js_string(&resolve_bound(ctx, props.get(name).unwrap_or(&json!("")), i, b)?)) };
            match step.get("type").and_then(Value::as_str) {
                Some("errorWhen") => {
                    if crate::nodes::conditions::truthy(&resolve_bound(ctx, props.get("when").unwrap_or(&json!(false)), i, b)?) {
                        let message = js_string(&resolve_bound(ctx, props.get("message").unwrap_or(&json!("The service refused the request")), i, b)?);
                        let description = match props.get("description") {
                            Some(d) => Some(js_string(&resolve_bound(ctx, d, i, b)?)),
                            None => None,
                        };
                        return Err(EngineError::Node { message, description, http_code: Some(resp.status.to_string()) });
                    }
                }
                Some("rootProperty") => {
                    let property = prop(ctx, "property")?;
                    items = items
                        .into_iter()
                        .flat_map(|it| match get_path(&it.json, &property) {
                            Some(Value::Array(a)) => a.iter().cloned().map(item_of).collect::<Vec<_>>(),
                            Some(Value::Null) | None => vec![],
                            Some(v) => vec![item_of(v.clone())],
                        })
                        .collect();
                }
                Some("set") => {
                    items = match resolve_bound(ctx, props.get("value").unwrap_or(&Value::Null), i, b)? {
                        Value::Array(a) => a.into_iter().map(item_of).collect(),
                        v => vec![item_of(v)],
                    };
                }
                Some("setKeyValue") => {
                    let mut next = vec![];
                    for it in &items {
                        let json = Value::clone(&it.json);
                        let ib = Bindings { response_item: Some(&json), ..*b };
                        next.push(item_of(resolve_bound(ctx, &props, i, &ib)?));
                    }
                    items = next;
                }
                Some("filter") => {
                    let mut kept = vec![];
                    for it in items {
                        let json = Value::clone(&it.json);
                        let ib = Bindings { response_item: Some(&json), ..*b };
                        if crate::nodes::conditions::truthy(&resolve_bound(ctx, props.get("pass").unwrap_or(&json!(true)), i, &ib)?) {
                            kept.push(it);
                        }
                    }
                    items = kept;
                }
                Some("limit") => {
                    let max = resolve_bound(ctx, props.get("maxResults").unwrap_or(&Value::Null), i, b)?;
                    if let Some(m) = max.as_f64().or_else(|| js_string(&max).parse().ok()) {
                        items.truncate(m.max(0.0) as usize);
                    }
                }
                Some("sort") => {
                    let key = prop(ctx, "key")?;
                    use crate::nodes::lodash::{js_gt, js_lt};
                    items.sort_by(|a, b| {
                        let (x, y) = (get_path(&a.json, &key), get_path(&b.json, &key));
                        if js_lt(x, y) {
                            std::cmp::Ordering::Less
                        } else if js_gt(x, y) {
                            std::cmp::Ordering::Greater
                        } else {
                            std::cmp::Ordering::Equal
                        }
                    });
                }
                // Our extension: `sourceProperty` turns each item's base64 field into a
                // file of its own (an API that answers files inside JSON).
                Some("binaryData") if props.get("sourceProperty").is_some() => {
                    let property = Some(prop(ctx, "destinationProperty")?).filter(|p| !p.is_empty()).unwrap_or_else(|| "data".into());
                    let source = prop(ctx, "sourceProperty")?;
                    let mut files = vec![];
                    for it in &items {
                        let b64 = get_path(&it.json, &source).and_then(Value::as_str).ok_or_else(|| EngineError::node(format!("The answer has no base64 field '{source}'")))?;
                        use base64::Engine as _;
                        let bytes = base64::engine::general_purpose::STANDARD.decode(b64.trim()).map_err(|e| EngineError::node(format!("The answer's '{source}' is not base64: {e}")))?;
                        let mut binary = Map::new();
                        binary.insert(property.clone(), crate::binary::entry(&bytes, Some(&property), crate::binary::sniff_mime(&bytes)));
                        files.push(Item { json: json!({}).into(), binary: Some(Value::Object(binary).into()), paired_item: None });
                    }
                    items = files;
                }
                Some("binaryData") => {
                    let property = Some(prop(ctx, "destinationProperty")?).filter(|p| !p.is_empty()).unwrap_or_else(|| "data".into());
                    let name = http::disposition_file_name(resp).or_else(|| Some(resp.url.path().to_string()));
                    let mut binary = Map::new();
                    binary.insert(property, http::file_entry(resp, name));
                    items = vec![Item { json: json!({}).into(), binary: Some(Value::Object(binary).into()), paired_item: None }];
                }
                other => return Err(EngineError::node(format!("postReceive step {other:?} is not supported"))),
            }
        }
        Ok(items)
    }
}

fn item_of(json: Value) -> Item {
    Item { json: http::not_null(json).into(), binary: None, paired_item: None }
}

/// A resource locator's value (`{__rl, mode, value}`) as the routing sees it:
/// the value, extracted by the mode's `extractValue` regex when it has one.
pub(super) fn locator_value(modes: Option<&Value>, v: &Value) -> Value {
    let Some(o) = v.as_object().filter(|o| o.contains_key("__rl")) else { return v.clone() };
    let value = o.get("value").cloned().unwrap_or(Value::Null);
    let mode = o.get("mode").and_then(Value::as_str).unwrap_or_default();
    let regex = modes
        .and_then(Value::as_array)
        .and_then(|m| m.iter().find(|x| x.get("name").and_then(Value::as_str) == Some(mode)))
        .and_then(|m| m.pointer("/extractValue/regex"))
        .and_then(Value::as_str)
        .and_then(|r| regex::Regex::new(r).ok());
    match (regex, value.as_str()) {
        (Some(re), Some(s)) => re.captures(s).and_then(|c| c.get(1)).map(|m| Value::String(m.as_str().to_owned())).unwrap_or(value),
        _ => value,
    }
}
