//! HTTP Request v3, v4, v4.1, v4.2, v4.3, v4.4 (n8n's `HttpRequestV3`).

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{append_query, auth_for, body_text, file_entry, form_body, full_fields, multipart_body, not_null, send, timeout_of, ArrayFormat, Part, Redirects, Request, Response};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};
use crate::nodes::{js_string, NodeContext, NodeOutput};

/// MIME types an autodetected response is kept as a file for (n8n's `binaryContentTypes`).
const BINARY_CONTENT_TYPES: [&str; 5] = ["image/", "audio/", "video/", "application/octet-stream", "application/gzip"];
const MORE_BINARY_CONTENT_TYPES: [&str; 17] = [
    "application/zip",
    "application/vnd.rar",
    "application/epub+zip",
    "application/x-bzip",
    "application/x-bzip2",
    "application/x-cdf",
    "application/vnd.amazon.ebook",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.ms-fontobject",
    "application/vnd.oasis.opendocument.presentation",
    "application/pdf",
    "application/x-tar",
    "application/vnd.visio",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/x-7z-compressed",
];

fn is_binary_type(ct: &str) -> bool {
    BINARY_CONTENT_TYPES.iter().chain(MORE_BINARY_CONTENT_TYPES.iter()).any(|b| ct.contains(b))
}

/// The response options (`options.response.response`).
#[derive(Debug, Clone)]
struct ResponseOptions {
    format: String,
    full: bool,
    never_error: bool,
    property: String,
}

/// What the node sends for one item, before pagination.
struct Prepared {
    req: Request,
    /// Query parameters (pagination updates them per page).
    query: Map<String, Value>,
    array_format: ArrayFormat,
    /// The URL without the query above.
    base_url: url::Url,
    /// A JSON body pagination may update (`body` parameters).
    json_body: Option<Value>,
    /// A form body (urlencoded or multipart) pagination merges its `body`
    /// parameters into (n8n's `applyPaginationRequestData`: `form`/`formData`).
    form: Option<FormBody>,
    response: ResponseOptions,
    /// A connected OAuth2 credential's token, put on at send time.
    oauth: Option<crate::oauth2::Connection>,
}

#[derive(Clone)]
enum FormBody {
    Urlencoded(Map<String, Value>),
    Multipart(Vec<Part>),
}

impl FormBody {
    /// Sets field `name` (an existing field keeps its place).
    fn with(&mut self, name: &str, value: &Value) {
        match self {
            FormBody::Urlencoded(m) => {
                m.insert(name.to_string(), value.clone());
            }
            FormBody::Multipart(parts) => {
                let text = Part::Text(name.to_string(), js_string(value));
                match parts.iter().position(|p| matches!(p, Part::Text(n, _) | Part::File { name: n, .. } if n == name)) {
                    Some(k) => parts[k] = text,
                    None => parts.push(text),
                }
            }
        }
    }

    fn encode(&self) -> (Vec<u8>, String) {
        match self {
            FormBody::Urlencoded(m) => (form_body(m), "application/x-www-form-urlencoded".into()),
            FormBody::Multipart(parts) => multipart_body(parts),
        }
    }
}

fn json_parameter(v: Value) -> Result<Value> {
    match v {
        Value::String(s) => serde_json::from_str(&s).map_err(|_| EngineError::node("JSON parameter needs to be valid JSON")),
        other => Ok(other),
    }
}

/// `[{name, value}]` → `{name: value}` (the last of equal names wins); empty names are skipped.
fn key_values(list: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    for p in list.as_array().into_iter().flatten() {
        let name = p.get("name").map(js_string).unwrap_or_default();
        if name.is_empty() {
            continue;
        }
        m.insert(name, p.get("value").cloned().unwrap_or(Value::String(String::new())));
    }
    m
}

fn prepare(ctx: &mut NodeContext<'_>, i: usize, item: &Item) -> Result<Prepared> {
    let version = ctx.version();
    let url_v = ctx.param("url", i, json!(""))?;
    let url_s = match &url_v {
        Value::String(s) => s.clone(),
        Value::Null => return Err(EngineError::node("URL parameter must be a string, got null")),
        other => return Err(EngineError::node(format!("URL parameter must be a string, got {}", js_type(other)))),
    };
    if !url_s.starts_with("http://") && !url_s.starts_with("https://") {
        return Err(EngineError::node(format!("Invalid URL: {url_s}. URL must start with \"http\" or \"https\".")));
    }
    let base_url = url::Url::parse(&url_s).map_err(|e| EngineError::node_with(format!("Invalid URL: {url_s}"), e.to_string()))?;

    let authentication = ctx.param_str("authentication", 0, "none")?;
    let auth = match authentication.as_str() {
        "genericCredentialType" => {
            let t = ctx.param_str("genericAuthType", 0, "")?;
            Some(auth_for(ctx, &t, &url_s, false)?)
        }
        "predefinedCredentialType" => {
            let t = ctx.param_str("nodeCredentialType", i, "")?;
            Some(auth_for(ctx, &t, &url_s, true)?)
        }
        _ => None,
    };
    if ctx.param_bool("provideSslCertificates", i, false)? {
        return Err(EngineError::node_with("SSL client certificates are not supported by this engine", "Turn off 'SSL Certificates' in the node settings."));
    }

    let method_s = ctx.param_str("method", i, "GET")?.to_uppercase();
    let method = reqwest::Method::from_bytes(method_s.as_bytes()).map_err(|_| EngineError::node(format!("Invalid method '{method_s}'")))?;
    // pagination values are expressions over `$response` & co., resolved per page
    let mut raw_options = ctx.raw("options").cloned().unwrap_or(json!({}));
    if let Value::Object(o) = &mut raw_options {
        o.shift_remove("pagination");
    }
    let options = ctx.resolve(&raw_options, i)?;
    let opt = |p: &str| options.pointer(p).cloned();
    if opt("/proxy").is_some_and(|p| !js_string(&p).is_empty()) {
        return Err(EngineError::node_with("Proxies are not supported by this engine", "Remove the 'Proxy' option: requests go out directly (and pass the engine's address checks)."));
    }
    let resp_opts = ResponseOptions {
        format: opt("/response/response/responseFormat").map(|v| js_string(&v)).filter(|s| !s.is_empty()).unwrap_or_else(|| "autodetect".into()),
        full: opt("/response/response/fullResponse").and_then(|v| v.as_bool()).unwrap_or(false),
        never_error: opt("/response/response/neverError").and_then(|v| v.as_bool()).unwrap_or(false),
        property: opt("/response/response/outputPropertyName").map(|v| js_string(&v)).filter(|s| !s.is_empty()).unwrap_or_else(|| "data".into()),
    };

    // query
    let send_query = ctx.param_bool("sendQuery", i, false)?;
    let mut query = Map::new();
    if send_query {
        if ctx.param_str("specifyQuery", i, "keypair")? == "json" {
            match json_parameter(ctx.param("jsonQuery", i, json!(""))?)? {
                Value::Object(o) => query = o,
                Value::Null => {}
                _ => return Err(EngineError::node("JSON parameter needs to be valid JSON")),
            }
        } else {
            query = key_values(&ctx.param("queryParameters.parameters", i, json!([]))?);
        }
    }
    let array_format = match opt("/queryParameterArrays") {
        Some(v) if send_query => ArrayFormat::parse(&js_string(&v)),
        _ => ArrayFormat::Indices,
    };

    // body
    let send_body = ctx.param_bool("sendBody", i, false)?;
    let content_type = ctx.param_str("contentType", i, "json")?;
    let specify_body = ctx.param_str("specifyBody", i, "keypair")?;
    let mut json_body: Option<Value> = None;
    let mut form: Option<FormBody> = None;
    let mut body: Option<Vec<u8>> = None;
    let mut headers: Vec<(String, String)> = vec![];
    let body_method = matches!(method_s.as_str(), "PATCH" | "POST" | "PUT" | "GET");
    if send_body {
        if content_type == "multipart-form-data" {
            let params = ctx.param("bodyParameters.parameters", i, json!([]))?;
            let mut parts = vec![];
            for p in params.as_array().into_iter().flatten() {
                let name = p.get("name").map(js_string).unwrap_or_default();
                if p.get("parameterType").and_then(Value::as_str) == Some("formBinaryData") {
                    let field = p.get("inputDataFieldName").map(js_string).unwrap_or_default();
                    if field.is_empty() {
                        continue;
                    }
                    let entry = binary_of(item, &field, i)?;
                    parts.push(Part::File {
                        name,
                        file_name: entry.get("fileName").and_then(Value::as_str).map(str::to_string),
                        content_type: entry.get("mimeType").and_then(Value::as_str).map(str::to_string),
                        bytes: crate::binary::bytes_of(entry).map_err(EngineError::node)?,
                    });
                } else if !name.is_empty() {
                    parts.push(Part::Text(name, p.get("value").map(js_string).unwrap_or_default()));
                }
            }
            if body_method {
                let (b, ct) = multipart_body(&parts);
                body = Some(b);
                headers.push(("content-type".into(), ct));
                form = Some(FormBody::Multipart(parts));
            } else {
                let mut m = Map::new();
                for p in &parts {
                    if let Part::Text(k, v) = p {
                        m.insert(k.clone(), Value::String(v.clone()));
                    }
                }
                json_body = Some(Value::Object(m));
            }
        } else {
            let object = if specify_body == "keypair" {
                let params = ctx.param("bodyParameters.parameters", i, json!([]))?;
                if content_type == "json" && version >= 4.0 {
                    // v4+: dot notation in names builds nested objects (lodash `set`)
                    let mut b = json!({});
                    for p in params.as_array().into_iter().flatten() {
                        let name = p.get("name").map(js_string).unwrap_or_default();
                        if !name.is_empty() {
                            crate::nodes::set_path(&mut b, &name, p.get("value").cloned().unwrap_or(json!("")));
                        }
                    }
                    Some(b)
                } else {
                    Some(Value::Object(key_values(&params)))
                }
            } else if specify_body == "json" {
                Some(json_parameter(ctx.param("jsonBody", i, json!(""))?)?)
            } else if specify_body == "string" {
                let s = ctx.param_str("body", i, "")?;
                let m: Map<String, Value> = url::form_urlencoded::parse(s.as_bytes()).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
                Some(Value::Object(m))
            } else {
                None
            };
            match content_type.as_str() {
                "form-urlencoded" if body_method => {
                    let m = object.and_then(|o| o.as_object().cloned()).unwrap_or_default();
                    body = Some(form_body(&m));
                    headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
                    form = Some(FormBody::Urlencoded(m));
                }
                "binaryData" if body_method => {
                    let field = ctx.param_str("inputDataFieldName", i, "")?;
                    let entry = binary_of(item, &field, i)?;
                    let bytes = crate::binary::bytes_of(entry).map_err(EngineError::node)?;
                    headers.push(("content-length".into(), bytes.len().to_string()));
                    headers.push(("content-type".into(), entry.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream").to_string()));
                    body = Some(bytes);
                }
                "raw" if body_method => body = Some(ctx.param_str("body", i, "")?.into_bytes()),
                "raw" | "binaryData" => {}
                _ => json_body = object,
            }
        }
    }

    // headers
    if ctx.param_bool("sendHeaders", i, false)? {
        let additional = if ctx.param_str("specifyHeaders", i, "keypair")? == "json" {
            match json_parameter(ctx.param("jsonHeaders", i, json!(""))?)? {
                Value::Object(o) => o,
                _ => Map::new(),
            }
        } else {
            key_values(&ctx.param("headerParameters.parameters", i, json!([]))?)
        };
        let lower = opt("/lowercaseHeaders").and_then(|v| v.as_bool()).unwrap_or(true);
        for (k, v) in additional {
            let k = if lower { k.to_lowercase() } else { k };
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(&k));
            headers.push((k, js_string(&v)));
        }
    }
    if send_body && content_type == "raw" {
        let rct = ctx.param_str("rawContentType", i, "")?;
        headers.retain(|(h, _)| !h.eq_ignore_ascii_case("content-type"));
        headers.push(("content-type".into(), rct));
    }

    let mut digest = None;
    let mut oauth = None;
    if let Some(a) = auth {
        oauth = a.conn;
        for (k, v) in a.headers {
            headers.retain(|(h, _)| h != &k);
            headers.push((k, v));
        }
        for (k, v) in a.query {
            query.insert(k, v);
        }
        if !a.body.is_empty() {
            let mut b = json_body.take().and_then(|b| b.as_object().cloned()).unwrap_or_default();
            b.extend(a.body);
            json_body = Some(Value::Object(b));
        }
        digest = a.digest;
    }
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
        let accept = match resp_opts.format.as_str() {
            "json" => "application/json,text/*;q=0.99",
            "text" => "application/json,text/html,application/xhtml+xml,application/xml,text/*;q=0.9, */*;q=0.1",
            _ => "application/json,text/html,application/xhtml+xml,application/xml,text/*;q=0.9, image/*;q=0.8, */*;q=0.7",
        };
        headers.push(("accept".into(), accept.into()));
    }

    // redirects: v4 follows by default, v3 only when asked
    let follow_opt = opt("/redirect/redirect/followRedirects").and_then(|v| v.as_bool());
    let follow = if version >= 4.0 { follow_opt != Some(false) } else { follow_opt == Some(true) };
    let max = opt("/redirect/redirect/maxRedirects").and_then(|v| v.as_f64()).map(|m| m.max(0.0) as usize).unwrap_or(21);
    let redirects = if follow { Redirects { get: true, all: true, max } } else { Redirects::NONE };

    let mut url = base_url.clone();
    append_query(&mut url, &query, array_format);
    if let Some(b) = &json_body {
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
            headers.push(("content-type".into(), "application/json".into()));
        }
        body = Some(serde_json::to_vec(b)?);
    }
    let req = Request {
        method,
        url,
        headers,
        body,
        timeout: timeout_of(opt("/timeout").and_then(|v| v.as_f64()), 300_000),
        redirects,
        insecure: opt("/allowUnauthorizedCerts").and_then(|v| v.as_bool()).unwrap_or(false),
        digest,
    };
    Ok(Prepared { req, query, array_format, base_url, json_body, form, response: resp_opts, oauth })
}

fn js_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        _ => "object",
    }
}

fn binary_of<'i>(item: &'i Item, field: &str, i: usize) -> Result<&'i Value> {
    let binary = item.binary.as_ref().ok_or_else(|| EngineError::node_with("No binary data exists on item!", format!("item {i}")))?;
    binary.get(field).ok_or_else(|| EngineError::node(format!("The item has no binary field '{field}' [item {i}]")))
}

/// The body of a response as n8n's pagination and autodetect see it.
fn parsed_body(resp: &Response) -> Value {
    let text = body_text(resp);
    if resp.content_type().contains("application/json") {
        serde_json::from_str(&text).unwrap_or(json!({}))
    } else {
        Value::String(text)
    }
}

/// Turns one response into output items (n8n's response handling of v3+).
fn response_items(resp: &Response, p: &Prepared, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let ct = resp.content_type();
    let mut format = p.response.format.clone();
    let autodetect = format == "autodetect";
    // the body as the request helper hands it over
    let mut body: Value = if autodetect {
        if ct.contains("application/json") {
            format = "json".into();
            let text = body_text(resp);
            match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) if p.response.never_error => json!({}),
                Err(_) => return Err(EngineError::node("Invalid JSON in response body")),
            }
        } else if is_binary_type(&ct) {
            format = "file".into();
            Value::Null
        } else {
            format = "text".into();
            let text = body_text(resp);
            if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            }
        }
    } else if format == "file" {
        Value::Null
    } else {
        // json: true: bodies that parse as JSON arrive parsed
        let text = body_text(resp);
        match serde_json::from_str::<Value>(&text) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
            _ => Value::String(text),
        }
    };
    let paired = |json: Value| item_from(not_null(json), i);
    let (headers, status, status_text) = full_fields(resp);
    match format.as_str() {
        "file" => {
            let mut new = Item { json: item.json.clone(), binary: None, paired_item: Some(crate::data::paired_ref(i, 0)) };
            if p.response.full {
                new.json = json!({ "headers": headers, "statusCode": status, "statusMessage": status_text }).into();
            }
            let path = super::disposition_file_name(resp).or_else(|| Some(resp.url.path().to_string()));
            let mut entry = file_entry(resp, path);
            if entry.get("fileName").and_then(Value::as_str).is_none_or(str::is_empty) {
                if let Some(ext) = entry.get("fileExtension").and_then(Value::as_str).map(str::to_string) {
                    let name = if p.req.url.as_str().ends_with(&ext) {
                        p.req.url.path().rsplit('/').next().unwrap_or("").to_string()
                    } else {
                        format!("{}.{ext}", p.response.property)
                    };
                    entry["fileName"] = json!(name);
                }
            }
            let mut binary = item.binary.as_ref().map(|b| Value::clone(b)).and_then(|b| b.as_object().cloned()).unwrap_or_default();
            binary.insert(p.response.property.clone(), entry);
            new.binary = Some(Value::Object(binary).into());
            out.push(new);
        }
        "text" => {
            let text = match &body {
                Value::String(s) => Value::String(s.clone()),
                Value::Null => Value::Null,
                other => Value::String(other.to_string()),
            };
            let mut o = Map::new();
            // an empty body is `undefined` in n8n: the field is left out
            if !text.is_null() {
                o.insert(p.response.property.clone(), text);
            }
            if p.response.full {
                o.insert("headers".into(), headers);
                o.insert("statusCode".into(), status);
                o.insert("statusMessage".into(), status_text);
            }
            out.push(paired(Value::Object(o)));
        }
        _ => {
            if let Value::String(s) = &body {
                body = serde_json::from_str(s).map_err(|_| EngineError::node("Response body is not valid JSON. Change \"Response Format\" to \"Text\""))?;
            }
            if p.response.full {
                out.push(paired(json!({ "body": body, "headers": headers, "statusCode": status, "statusMessage": status_text })));
            } else if let Value::Array(a) = body {
                for x in a {
                    out.push(paired(x));
                }
            } else {
                out.push(paired(body));
            }
        }
    }
    Ok(())
}

/// The pagination settings (`options.pagination.pagination`, raw: its
/// values are expressions over `$response`, `$pageCount` and `$request`).
#[derive(Clone)]
struct Pagination {
    mode: String,
    next_url: Value,
    parameters: Vec<(String, String, Value)>,
    complete_when: String,
    status_codes: Vec<f64>,
    complete_expression: String,
    /// `maxRequests` when pages are limited (may be an expression).
    max_requests: Option<Value>,
    interval: u64,
}

fn pagination(ctx: &NodeContext<'_>) -> Result<Option<Pagination>> {
    let Some(p) = ctx.raw("options.pagination.pagination") else { return Ok(None) };
    let mode = p.get("paginationMode").and_then(Value::as_str).unwrap_or("updateAParameterInEachRequest").to_string();
    if mode == "off" {
        return Ok(None);
    }
    let mut parameters = vec![];
    if mode == "updateAParameterInEachRequest" {
        let list: Vec<Value> = p.pointer("/parameters/parameters").and_then(Value::as_array).cloned().unwrap_or_else(|| vec![json!({ "type": "qs", "name": "", "value": "" })]);
        if list.len() == 1 && js_string(&list[0]["name"]).is_empty() && js_string(list[0].get("value").unwrap_or(&json!(""))).is_empty() {
            return Err(EngineError::node(
                "At least one entry with 'Name' and 'Value' filled must be included in 'Parameters' to use 'Update a Parameter in Each Request' mode ",
            ));
        }
        for (k, x) in list.iter().enumerate() {
            let name = x.get("name").map(js_string).unwrap_or_default();
            if name.is_empty() {
                return Err(EngineError::node(format!("Parameter name must be set for parameter [{}] in pagination settings", k + 1)));
            }
            let value = x.get("value").cloned().unwrap_or(json!(""));
            if value == json!("") {
                return Err(EngineError::node(format!(
                    "Some value must be provided for parameter [{}] in pagination settings, omitting it will result in an infinite loop",
                    k + 1
                )));
            }
            parameters.push((x.get("type").and_then(Value::as_str).unwrap_or("qs").to_string(), name, value));
        }
    }
    let complete_when = p.get("paginationCompleteWhen").and_then(Value::as_str).unwrap_or("responseIsEmpty").to_string();
    let complete_expression = p.get("completeExpression").map(js_string).unwrap_or_default();
    if complete_when == "other" && (complete_expression.is_empty() || !complete_expression.starts_with('=')) {
        return Err(EngineError::node("Invalid or empty Complete Expression"));
    }
    let status_codes = p
        .get("statusCodesWhenComplete")
        .map(js_string)
        .unwrap_or_default()
        .split(',')
        .map(|c| c.trim().parse::<f64>().unwrap_or(f64::NAN))
        .collect();
    let limit = p.get("limitPagesFetched").and_then(Value::as_bool).unwrap_or(false);
    let max_requests = limit.then(|| p.get("maxRequests").cloned().unwrap_or(json!(100)));
    Ok(Some(Pagination {
        mode,
        next_url: p.get("nextURL").cloned().unwrap_or(json!("")),
        parameters,
        complete_when,
        status_codes,
        complete_expression,
        max_requests,
        interval: p.get("requestInterval").and_then(Value::as_f64).unwrap_or(0.0).max(0.0) as u64,
    }))
}

/// Evaluates a pagination value with `$response`, `$pageCount` and
/// `$request` bound (written into the expression as literals). On the first
/// request `$response` is empty and a failing expression counts as unset.
fn page_value(ctx: &mut NodeContext<'_>, v: &Value, i: usize, response: &Value, page: usize, request: &Value) -> Result<Value> {
    let Value::String(s) = v else { return Ok(v.clone()) };
    if !s.starts_with('=') {
        return Ok(v.clone());
    }
    let re = regex::Regex::new(r"\$(response|pageCount|request)\b").map_err(|e| EngineError::node(e.to_string()))?;
    let replaced = re.replace_all(s, |c: &regex::Captures| match &c[1] {
        "response" => format!("({response})"),
        "pageCount" => page.to_string(),
        _ => format!("({request})"),
    });
    ctx.resolve(&Value::String(replaced.into_owned()), i)
}

fn js_truthy(v: &Value) -> bool {
    crate::nodes::conditions::truthy(v)
}

/// Requests all pages for one item and turns each into items (n8n's
/// `requestWithAuthenticationPaginated`, then the node's response handling).
fn paginate(ctx: &mut NodeContext<'_>, mut p: Prepared, pag: Pagination, item: &Item, i: usize, out: &mut Vec<Item>) -> std::result::Result<(), Failure> {
    let req_err = |e: EngineError| Failure::Request(e, None);
    let mut response = json!({});
    let mut page = 0usize;
    let mut identical = (0usize, usize::MAX, String::new()); // count, previous length, previous hash
    let max_requests = match &pag.max_requests {
        Some(m) => match ctx.resolve(m, i).map_err(req_err)? {
            Value::Number(n) => n.as_f64().map(|f| f.max(0.0) as usize),
            Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f.max(0.0) as usize),
            _ => None,
        }
        .filter(|m| *m > 0),
        None => None,
    };
    loop {
        let request = json!({ "url": p.req.url.as_str(), "method": p.req.method.as_str(), "qs": p.query });
        let first = page == 0;
        // the request of this page
        let mut req = p.req.clone();
        if pag.mode == "responseContainsNextURL" {
            // an expression that fails on the first page (no `$response` yet) or
            // gives nothing leaves the URL as it is; anything else must be a URL
            let next = match page_value(ctx, &pag.next_url, i, &response, page, &request) {
                Ok(Value::Null) => None,
                Ok(v) => Some(js_string(&v)),
                Err(_) if first => None,
                Err(e) => return Err(req_err(e)),
            };
            if let Some(next) = next {
                req.url = url::Url::parse(&next)
                    .map_err(|_| req_err(EngineError::node_with(format!("'{next}' is not a valid URL."), "Make sure the \"Next URL\" parameter evaluates to a valid URL.")))?;
            }
        } else {
            let mut query = p.query.clone();
            let mut body = p.json_body.clone();
            let mut form = p.form.clone();
            for (ty, name, value) in &pag.parameters {
                let v = match page_value(ctx, value, i, &response, page, &request) {
                    Ok(v) => v,
                    Err(_) if first => continue,
                    Err(e) => return Err(req_err(e)),
                };
                match ty.as_str() {
                    "headers" => req.set_header(name, &js_string(&v)),
                    "body" => match &mut form {
                        Some(f) => f.with(name, &v),
                        None => crate::nodes::set_path(body.get_or_insert_with(|| json!({})), name, v),
                    },
                    _ => {
                        query.insert(name.clone(), v);
                    }
                }
            }
            let mut url = p.base_url.clone();
            super::append_query(&mut url, &query, p.array_format);
            req.url = url;
            if let Some(f) = form {
                let (b, ct) = f.encode();
                req.body = Some(b);
                req.set_header("content-type", &ct);
            } else if let Some(b) = body {
                req.body = Some(serde_json::to_vec(&b).map_err(|e| req_err(e.into()))?);
                if req.header("content-type").is_none() {
                    req.set_header("content-type", "application/json");
                }
            }
        }
        let resp = crate::oauth2::send_authorized(ctx.env, p.oauth.as_mut(), &mut req, &mut |r| send(ctx.env, r)).map_err(req_err)?;
        let new_response = json!({ "body": parsed_body(&resp), "headers": Value::Object(resp.headers.clone()), "statusCode": resp.status });

        // the same answer over and over means the stop condition never holds
        if p.response.format != "file" || resp.headers.contains_key("etag") {
            let length = resp.headers.get("content-length").map(js_string).and_then(|l| l.parse().ok()).unwrap_or(0usize);
            if identical.1 == length {
                let hash = match resp.headers.get("etag") {
                    Some(e) => js_string(e),
                    None => {
                        use base64::Engine as _;
                        use md5::{Digest, Md5};
                        base64::engine::general_purpose::STANDARD.encode(Md5::digest(&resp.body))
                    }
                };
                if identical.0 > 0 && identical.2 == hash {
                    identical.0 += 1;
                    if identical.0 > 2 {
                        return Err(req_err(EngineError::node_with(
                            "The returned response was identical 5x, so requests got stopped",
                            "Check if \"Pagination Completed When\" has been configured correctly.",
                        )));
                    }
                } else {
                    identical.0 = 1;
                }
                identical.2 = hash;
            } else {
                identical.0 = 0;
            }
            identical.1 = length;
        }

        page += 1;
        let status = resp.status;
        p.req.url = req.url.clone();
        response_items(&resp, &p, item, i, out).map_err(Failure::Process)?;
        response = new_response;
        if max_requests.is_some_and(|m| page >= m) {
            return Ok(());
        }
        let more = match pag.complete_when.as_str() {
            "receiveSpecificStatusCodes" => !pag.status_codes.contains(&(status as f64)),
            "other" => {
                let body = pag.complete_expression.trim();
                let inner = body.get(3..body.len().saturating_sub(2)).unwrap_or("");
                let expr = json!(format!("={{{{ !({inner}) }}}}"));
                js_truthy(&page_value(ctx, &expr, i, &response, page, &request).map_err(req_err)?)
            }
            _ => match &response["body"] {
                Value::Array(a) => !a.is_empty(),
                b => js_truthy(b),
            },
        };
        if !more {
            return Ok(());
        }
        if pag.interval > 0 && crate::run::sleep_cancellable(Duration::from_millis(pag.interval), ctx.env) {
            return Err(req_err(EngineError::Canceled));
        }
        if !(200..300).contains(&status) {
            return Err(Failure::Request(super::api_error(&resp), Some(resp)));
        }
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let pag = pagination(ctx)?;
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        if ctx.env.cancel.is_canceled() {
            return Err(EngineError::Canceled);
        }
        let mut prepared = match prepare(ctx, i, item) {
            Ok(p) => p,
            Err(e) if ctx.continue_on_fail() && !matches!(e, EngineError::Canceled) => {
                out.push(item_from(json!({ "error": e.to_string() }), i));
                continue;
            }
            Err(e) => return Err(e),
        };
        // batching: a pause before every batch after the first
        let batch = ctx.param("options.batching.batch", i, json!({}))?;
        let size = batch.get("batchSize").and_then(Value::as_f64).filter(|s| *s > 0.0).unwrap_or(1.0) as usize;
        let interval = batch.get("batchInterval").and_then(Value::as_f64).unwrap_or(0.0);
        if i > 0 && interval > 0.0 && i % size == 0 && crate::run::sleep_cancellable(Duration::from_millis(interval as u64), ctx.env) {
            return Err(EngineError::Canceled);
        }
        let result = match &pag {
            // n8n collects every page before it makes items: a failed page leaves none
            Some(pg) => {
                let mut pages = vec![];
                let r = paginate(ctx, prepared, pg.clone(), item, i, &mut pages);
                if r.is_ok() {
                    out.append(&mut pages);
                }
                r
            }
            None => match send_prepared(ctx, &mut prepared) {
                Ok(resp) if resp.status >= 400 && !prepared.response.never_error => Err(Failure::Request(super::api_error(&resp), Some(resp))),
                Ok(resp) => response_items(&resp, &prepared, item, i, &mut out).map_err(Failure::Process),
                Err(e) => Err(Failure::Request(e, None)),
            },
        };
        match result {
            Ok(()) => {}
            Err(Failure::Request(EngineError::Canceled, _)) | Err(Failure::Process(EngineError::Canceled)) => return Err(EngineError::Canceled),
            // n8n puts the failed request's error object in the item, and a processing error's message
            Err(Failure::Request(e, resp)) if ctx.continue_on_fail() => out.push(item_from(json!({ "error": super::error_json(&e, resp.as_ref()) }), i)),
            Err(Failure::Process(e)) if ctx.continue_on_fail() => out.push(item_from(json!({ "error": e.to_string() }), i)),
            Err(Failure::Request(e, _)) | Err(Failure::Process(e)) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

fn send_prepared(ctx: &NodeContext<'_>, p: &mut Prepared) -> Result<Response> {
    crate::oauth2::send_authorized(ctx.env, p.oauth.as_mut(), &mut p.req, &mut |r| send(ctx.env, r))
}

/// How an item's request went wrong.
enum Failure {
    /// No answer, a refused address, an error status or a pagination stop.
    Request(EngineError, Option<Response>),
    /// The answer could not be turned into items.
    Process(EngineError),
}
