//! HTTP Request v1 and v2 (n8n's `HttpRequestV1`/`HttpRequestV2`): the
//! request method, JSON/RAW or UI parameter lists for body, headers and
//! query, body content type as an option, and the response as file, JSON
//! or string.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{append_query, auth_for, body_text, form_body, full_fields, multipart_body, not_null, send, timeout_of, ArrayFormat, Auth, Part, Redirects, Request, Response};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};
use crate::nodes::{js_string, NodeContext, NodeOutput};

/// The body before it is encoded (n8n keeps it as an object until the request).
enum Body {
    None,
    Value(Value),
    Bytes(Vec<u8>),
    Parts(Vec<Part>),
}

/// v1's authentication values → credential types.
fn credential_type(ctx: &mut NodeContext<'_>, i: usize) -> Result<Option<(String, bool)>> {
    let auth = ctx.param_str("authentication", i, "none")?;
    Ok(match auth.as_str() {
        "none" => None,
        "basicAuth" => Some(("httpBasicAuth".into(), false)),
        "digestAuth" => Some(("httpDigestAuth".into(), false)),
        "headerAuth" => Some(("httpHeaderAuth".into(), false)),
        "queryAuth" => Some(("httpQueryAuth".into(), false)),
        "oAuth1" => Some(("oAuth1Api".into(), false)),
        "oAuth2" => Some(("oAuth2Api".into(), false)),
        "genericCredentialType" => Some((ctx.param_str("genericAuthType", 0, "")?, false)),
        "predefinedCredentialType" => Some((ctx.param_str("nodeCredentialType", i, "")?, true)),
        other => return Err(EngineError::node(format!("The authentication \"{other}\" is not known"))),
    })
}

fn binary_bytes(item: &Item, prop: &str, i: usize) -> Result<(Vec<u8>, Value)> {
    let binary = item.binary.as_ref().ok_or_else(|| EngineError::node_with("No binary data exists on item!", format!("item {i}")))?;
    let entry = binary
        .get(prop)
        .ok_or_else(|| EngineError::node(format!("No binary data property \"{prop}\" does not exists on item!")))?;
    Ok((crate::binary::bytes_of(entry).map_err(EngineError::node)?, entry.clone()))
}

struct Prepared {
    req: Request,
    format: String,
    full: bool,
    split: bool,
    property: String,
}

fn prepare(ctx: &mut NodeContext<'_>, i: usize, item: &Item) -> Result<Prepared> {
    let method_s = ctx.param_str("requestMethod", i, "GET")?.to_uppercase();
    let method = reqwest::Method::from_bytes(method_s.as_bytes()).map_err(|_| EngineError::node(format!("Invalid method '{method_s}'")))?;
    let url_s = ctx.param_str("url", i, "")?;
    let mut url = url::Url::parse(url_s.trim()).map_err(|e| EngineError::node_with(format!("Invalid URL: {url_s}"), e.to_string()))?;
    let options = ctx.param("options", i, json!({}))?;
    let opt = |k: &str| options.get(k).cloned();
    if opt("proxy").is_some_and(|p| !js_string(&p).is_empty()) {
        return Err(EngineError::node_with("Proxies are not supported by this engine", "Remove the 'Proxy' option: requests go out directly (and pass the engine's address checks)."));
    }
    let content_type = opt("bodyContentType").map(|v| js_string(&v)).unwrap_or_else(|| "json".into());
    let format = ctx.param_str("responseFormat", 0, "json")?;
    let mut headers: Map<String, Value> = Map::new();
    let mut query: Map<String, Value> = Map::new();
    let mut body = Body::None;

    if ctx.param_bool("jsonParameters", i, false)? {
        let send_binary = ctx.param_bool("sendBinaryData", i, false)?;
        for (param, target, display) in [("bodyParametersJson", "body", "Body Parameters"), ("headerParametersJson", "headers", "Headers"), ("queryParametersJson", "qs", "Query Paramters")] {
            if target == "body" && send_binary {
                if content_type != "raw" && content_type != "multipart-form-data" {
                    return Err(EngineError::node(
                        "Sending binary data is only supported when option \"Body Content Type\" is set to \"RAW/CUSTOM\" or \"FORM-DATA/MULTIPART\"!",
                    ));
                }
                let prop = ctx.param_str("binaryPropertyName", i, "data")?;
                if content_type == "raw" {
                    body = Body::Bytes(binary_bytes(item, &prop, i)?.0);
                } else {
                    let names: Vec<String> = prop.split(',').map(|k| k.trim().to_string()).collect();
                    let mut parts = vec![];
                    for data in &names {
                        let (field, prop) = match data.split_once(':') {
                            Some((f, p)) => (f.to_string(), p.to_string()),
                            None if names.len() > 1 => {
                                return Err(EngineError::node(
                                    "If more than one property should be send it is needed to define the in the format:<code>\"sendKey1:binaryProperty1,sendKey2:binaryProperty2\"</code>",
                                ))
                            }
                            None => ("file".to_string(), data.clone()),
                        };
                        let (bytes, entry) = binary_bytes(item, &prop, i)?;
                        parts.push(Part::File {
                            name: field,
                            file_name: entry.get("fileName").and_then(Value::as_str).map(str::to_string),
                            content_type: entry.get("mimeType").and_then(Value::as_str).map(str::to_string),
                            bytes,
                        });
                    }
                    body = Body::Parts(parts);
                }
                continue;
            }
            let value = ctx.param(param, i, json!(""))?;
            if value == json!("") {
                continue;
            }
            let value = match value {
                Value::String(s) if content_type != "raw" => serde_json::from_str(&s).map_err(|_| {
                    EngineError::node(format!(
                        "The data in \"{display}\" is no valid JSON. Set Body Content Type to \"RAW/Custom\" for XML or other types of payloads"
                    ))
                })?,
                other => other,
            };
            match target {
                "body" => body = Body::Value(value),
                "headers" => headers = value.as_object().cloned().unwrap_or_default(),
                _ => query = value.as_object().cloned().unwrap_or_default(),
            }
        }
    } else {
        for (param, target) in [("bodyParametersUi", "body"), ("headerParametersUi", "headers"), ("queryParametersUi", "qs")] {
            let list = ctx.param(&format!("{param}.parameter"), i, Value::Null)?;
            let Some(list) = list.as_array() else { continue };
            let mut m = Map::new();
            for p in list {
                let name = p.get("name").map(js_string).unwrap_or_default();
                let value = p.get("value").cloned().unwrap_or(json!(""));
                match target {
                    // repeated query names collect into a list
                    "qs" => {
                        let next = match m.remove(&name) {
                            Some(Value::Array(mut a)) => {
                                a.push(value);
                                Value::Array(a)
                            }
                            Some(Value::String(old)) => json!([old, value]),
                            _ => value,
                        };
                        m.insert(name, next);
                    }
                    "headers" => {
                        m.insert(name.to_lowercase(), value);
                    }
                    _ => {
                        m.insert(name, value);
                    }
                }
            }
            match target {
                "body" => body = Body::Value(Value::Object(m)),
                "headers" => headers = m,
                _ => query = m,
            }
        }
    }

    let body_method = matches!(method_s.as_str(), "PATCH" | "POST" | "PUT");
    let mut header_list: Vec<(String, String)> = headers.into_iter().map(|(k, v)| (k, js_string(&v))).collect();
    let mut bytes: Option<Vec<u8>> = None;
    let set_ct = |list: &mut Vec<(String, String)>, ct: String| {
        list.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
        list.push(("Content-Type".into(), ct));
    };
    // encode the body as its content type asks
    match body {
        Body::Parts(parts) => {
            let (b, ct) = multipart_body(&parts);
            set_ct(&mut header_list, ct);
            bytes = Some(b);
        }
        Body::Bytes(b) => bytes = Some(b),
        Body::Value(v) if body_method && content_type == "multipart-form-data" => {
            let parts: Vec<Part> = v.as_object().into_iter().flatten().map(|(k, x)| Part::Text(k.clone(), js_string(x))).collect();
            let (b, ct) = multipart_body(&parts);
            set_ct(&mut header_list, ct);
            bytes = Some(b);
        }
        Body::Value(v) if body_method && content_type == "form-urlencoded" => {
            set_ct(&mut header_list, "application/x-www-form-urlencoded".into());
            bytes = Some(form_body(v.as_object().unwrap_or(&Map::new())));
        }
        Body::Value(Value::String(s)) if content_type == "raw" => bytes = Some(s.into_bytes()),
        Body::Value(v) => {
            if !header_list.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
                header_list.push(("content-type".into(), "application/json".into()));
            }
            bytes = Some(serde_json::to_vec(&v)?);
        }
        Body::None => {}
    }
    if let Some(m) = opt("bodyContentCustomMimeType").map(|v| js_string(&v)).filter(|m| !m.is_empty()) {
        set_ct(&mut header_list, m);
    }
    let mut auth = Auth::default();
    if let Some((t, predefined)) = credential_type(ctx, i)? {
        auth = auth_for(ctx, &t, &url_s, predefined)?;
    }
    for (k, v) in auth.headers {
        header_list.retain(|(h, _)| h != &k);
        header_list.push((k, v));
    }
    query.extend(auth.query);
    if !header_list.iter().any(|(k, _)| k == "accept") {
        let accept = match format.as_str() {
            "json" => "application/json,text/*;q=0.99",
            "string" => "application/json,text/html,application/xhtml+xml,application/xml,text/*;q=0.9, */*;q=0.1",
            _ => "application/json,text/html,application/xhtml+xml,application/xml,text/*;q=0.9, image/*;q=0.8, */*;q=0.7",
        };
        header_list.push(("accept".into(), accept.into()));
    }
    let array_format = if opt("useQueryString").and_then(|v| v.as_bool()) == Some(true) { ArrayFormat::Repeat } else { ArrayFormat::Indices };
    append_query(&mut url, &query, array_format);
    let redirects = Redirects {
        get: opt("followRedirect").and_then(|v| v.as_bool()).unwrap_or(true),
        all: opt("followAllRedirects").and_then(|v| v.as_bool()).unwrap_or(false),
        max: 10,
    };
    let req = Request {
        method,
        url,
        headers: header_list,
        body: bytes,
        timeout: timeout_of(opt("timeout").and_then(|v| v.as_f64()), 3_600_000),
        redirects,
        insecure: ctx.param_bool("allowUnauthorizedCerts", i, false)?,
        digest: auth.digest,
    };
    Ok(Prepared {
        req,
        full: opt("fullResponse").and_then(|v| v.as_bool()).unwrap_or(false),
        split: opt("splitIntoItems").and_then(|v| v.as_bool()).unwrap_or(false),
        property: ctx.param_str("dataPropertyName", 0, "data")?,
        format,
    })
}

/// The body as the request library gives it with `json: true`: parsed when it is JSON.
fn body_value(resp: &Response) -> Value {
    let text = body_text(resp);
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

fn response_items(resp: &Response, p: &Prepared, url: &str, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let (headers, status, status_text) = full_fields(resp);
    match p.format.as_str() {
        "file" => {
            let file_name = url.rsplit('/').next().unwrap_or("").to_string();
            // a Buffer: the type comes from the file name (not the response)
            let entry = crate::binary::entry(&resp.body, (!file_name.is_empty()).then_some(file_name.as_str()), None);
            let json = if p.full { json!({ "headers": headers, "statusCode": status, "statusMessage": status_text }) } else { Value::clone(&item.json) };
            let mut binary = item.binary.as_ref().and_then(|b| b.as_object().cloned()).unwrap_or_default();
            binary.insert(p.property.clone(), entry);
            let mut it = item_from(json, i);
            it.binary = Some(Value::Object(binary).into());
            out.push(it);
        }
        "string" => {
            let body = body_value(resp);
            let mut o = Map::new();
            o.insert(p.property.clone(), body);
            if p.full {
                o.insert("headers".into(), headers);
                o.insert("statusCode".into(), status);
                o.insert("statusMessage".into(), status_text);
            }
            out.push(item_from(Value::Object(o), i));
        }
        _ => {
            let body = match body_value(resp) {
                Value::String(s) if !p.full => serde_json::from_str(&s).map_err(|_| EngineError::node("Response body is not valid JSON. Change \"Response Format\" to \"String\""))?,
                v => v,
            };
            if p.full {
                out.push(item_from(json!({ "body": body, "headers": headers, "statusCode": status, "statusMessage": status_text }), i));
            } else if let (true, Value::Array(a)) = (p.split, &body) {
                for x in a {
                    out.push(item_from(not_null(x.clone()), i));
                }
            } else {
                out.push(item_from(not_null(body), i));
            }
        }
    }
    Ok(())
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        if ctx.env.cancel.is_canceled() {
            return Err(EngineError::Canceled);
        }
        let options = ctx.param("options", i, json!({}))?;
        let size = options.get("batchSize").and_then(Value::as_f64).unwrap_or(50.0);
        let interval = options.get("batchInterval").and_then(Value::as_f64).unwrap_or(0.0);
        if i > 0 && size >= 0.0 && interval > 0.0 {
            let size = if size > 0.0 { size as usize } else { 1 };
            if i % size == 0 && crate::run::sleep_cancellable(Duration::from_millis(interval as u64), ctx.env) {
                return Err(EngineError::Canceled);
            }
        }
        // n8n v1/v2 stop on any error while preparing a request
        let p = prepare(ctx, i, item)?;
        let ignore_status = options.get("ignoreResponseCode").and_then(Value::as_bool).unwrap_or(false);
        let url = ctx.param_str("url", i, "")?;
        let result = match send(ctx.env, &p.req) {
            Ok(resp) if resp.status >= 400 && !ignore_status => Err((super::api_error(&resp), Some(resp))),
            Ok(resp) => response_items(&resp, &p, &url, item, i, &mut out).map_err(|e| (e, None)),
            Err(e) => Err((e, None)),
        };
        match result {
            Ok(()) => {}
            Err((EngineError::Canceled, _)) => return Err(EngineError::Canceled),
            Err((e, resp)) if ctx.continue_on_fail() => out.push(item_from(json!({ "error": super::error_json(&e, resp.as_ref()) }), i)),
            Err((e, _)) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
