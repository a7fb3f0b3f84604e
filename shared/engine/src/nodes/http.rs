//! HTTP Request (v1–v4): method, query, headers, JSON/form/raw/binary body,
//! credential auth through the host, response formats, full response,
//! never-error, timeout, pagination. Every request passes the SSRF guard:
//! resolved addresses (and IP literals, and redirect targets) that are
//! private, loopback or link-local are refused unless the engine allows them.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};
use crate::host::Resolver;
use crate::run::Env;

/// True for addresses a workflow must not reach by default.
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1])) // carrier-grade NAT
                || (o[0] == 198 && (o[1] == 18 || o[1] == 19)) // benchmarking
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden_ip(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64 can embed private v4
        }
    }
}

/// Resolver that refuses forbidden addresses; reqwest calls it on connect,
/// so the checked addresses are the ones connected to (no DNS rebinding gap).
struct GuardedResolver {
    inner: Arc<dyn Resolver>,
    allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let inner = self.inner.clone();
        let allow = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let ips = inner.resolve(&host, 0).map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            if ips.is_empty() {
                return Err(format!("no addresses for {host}").into());
            }
            if !allow {
                if let Some(bad) = ips.iter().find(|ip| is_forbidden_ip(**ip)) {
                    return Err(format!("request to {host} refused: it resolves to the non-public address {bad}").into());
                }
            }
            let addrs: Vec<SocketAddr> = ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A client plus the single-threaded runtime that drives it for this execution.
pub struct HttpClient {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    no_redirect: reqwest::Client,
    /// OAuth2 client-credentials access tokens of this execution, by credential reference.
    tokens: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

/// `scheme://host:port` of a URL, for messages: the path and query may carry
/// secrets (query-auth keys) that run data and tool output must not show.
fn origin(url: &url::Url) -> String {
    match url.origin() {
        o @ url::Origin::Tuple(..) => o.ascii_serialization(),
        url::Origin::Opaque(_) => url.host_str().unwrap_or_default().to_owned(),
    }
}

fn check_literal(url: &url::Url, allow_private: bool, allowed_hosts: &[String]) -> Result<()> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EngineError::node(format!("Unsupported URL scheme '{}'", url.scheme())));
    }
    let host = url.host_str().unwrap_or("");
    if !allowed_hosts.is_empty() && !allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Err(EngineError::Forbidden(origin(url)));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        _ => None,
    };
    if let Some(ip) = ip {
        if !allow_private && is_forbidden_ip(ip) {
            return Err(EngineError::Forbidden(origin(url)));
        }
    }
    if !allow_private && (host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost")) {
        return Err(EngineError::Forbidden(origin(url)));
    }
    Ok(())
}

impl HttpClient {
    pub fn new(env: &Env) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EngineError::Host(format!("cannot start HTTP runtime: {e}")))?;
        let build = |follow: bool| {
            let allow = env.settings.allow_private_network;
            let allowed = env.settings.allowed_hosts.clone();
            let policy = if follow {
                reqwest::redirect::Policy::custom(move |attempt| {
                    if attempt.previous().len() >= 21 {
                        return attempt.error("too many redirects");
                    }
                    match check_literal(attempt.url(), allow, &allowed) {
                        Ok(()) => attempt.follow(),
                        Err(e) => attempt.error(e.to_string()),
                    }
                })
            } else {
                reqwest::redirect::Policy::none()
            };
            reqwest::Client::builder()
                // proxies resolve names themselves and would bypass the guard
                .no_proxy()
                .redirect(policy)
                .dns_resolver(Arc::new(GuardedResolver { inner: env.host.resolver.clone(), allow_private: allow }))
                .build()
                .map_err(|e| EngineError::Host(format!("cannot build HTTP client: {e}")))
        };
        Ok(HttpClient { rt, client: build(true)?, no_redirect: build(false)?, tokens: Default::default() })
    }
}

/// One prepared request.
pub(crate) struct Request {
    pub method: reqwest::Method,
    pub url: url::Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Duration,
    pub follow: bool,
}

pub(crate) struct Response {
    pub status: u16,
    status_text: String,
    headers: Map<String, Value>,
    pub body: Vec<u8>,
    content_type: String,
}

/// This execution's client, built on first use.
fn client(env: &Env) -> Result<&HttpClient> {
    match env.http.get() {
        Some(c) => Ok(c),
        None => {
            let c = HttpClient::new(env)?;
            let _ = env.http.set(c);
            env.http.get().ok_or_else(|| EngineError::Host("HTTP client unavailable".into()))
        }
    }
}

pub(crate) fn send(env: &Env, req: Request) -> Result<Response> {
    check_literal(&req.url, env.settings.allow_private_network, &env.settings.allowed_hosts)?;
    let client = client(env)?;
    let mut timeout = req.timeout;
    if let Some(d) = env.deadline {
        timeout = timeout.min(d.saturating_duration_since(Instant::now()));
    }
    let http = if req.follow { &client.client } else { &client.no_redirect };
    let mut rb = http.request(req.method, req.url.clone()).timeout(timeout);
    for (k, v) in &req.headers {
        rb = rb.header(k.as_str(), v.as_str());
    }
    if let Some(b) = req.body {
        rb = rb.body(b);
    }
    let cancel = env.cancel.clone();
    client.rt.block_on(async move {
        let fut = async {
            let resp = rb.send().await?;
            let status = resp.status();
            let mut headers = Map::new();
            for (k, v) in resp.headers() {
                headers.insert(k.as_str().to_string(), json!(v.to_str().unwrap_or("")));
            }
            let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            let body = resp.bytes().await?.to_vec();
            Ok::<_, reqwest::Error>(Response {
                status: status.as_u16(),
                status_text: status.canonical_reason().unwrap_or("").to_string(),
                headers,
                body,
                content_type: ct,
            })
        };
        let watch = async {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if cancel.is_canceled() {
                    return;
                }
            }
        };
        tokio::select! {
            r = fut => r.map_err(|e| {
                // reqwest names the full URL in its message; keep the origin only.
                let e = e.without_url();
                let mut msg = format!("{e} for {}", origin(&req.url));
                let mut src: Option<&dyn std::error::Error> = std::error::Error::source(&e);
                while let Some(s) = src {
                    msg = format!("{msg}: {s}");
                    src = s.source();
                }
                if msg.contains("refused: it resolves") {
                    EngineError::Forbidden(origin(&req.url))
                } else if e.is_timeout() {
                    EngineError::node(format!("Timeout of {}ms exceeded", timeout.as_millis()))
                } else {
                    EngineError::node(msg)
                }
            }),
            _ = watch => Err(EngineError::Canceled),
        }
    })
}

/// A plain GET through the same client and SSRF guard, for nodes that read
/// one URL (RSS Feed Read): status and body.
pub(crate) fn get(env: &Env, url: url::Url, headers: Vec<(String, String)>) -> Result<(u16, Vec<u8>)> {
    let req = Request { method: reqwest::Method::GET, url, headers, body: None, timeout: env.settings.http_timeout, follow: true };
    let resp = send(env, req)?;
    Ok((resp.status, resp.body))
}

/// `[{name, value}]` parameter lists → pairs.
fn pairs(v: &Value) -> Vec<(String, Value)> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.get("name").map(super::js_string)?;
            if name.is_empty() {
                return None;
            }
            Some((name, p.get("value").cloned().unwrap_or(Value::Null)))
        })
        .collect()
}

fn json_param(v: Value, what: &str) -> Result<Value> {
    match v {
        Value::String(s) if s.trim().is_empty() => Ok(json!({})),
        Value::String(s) => serde_json::from_str(&s).map_err(|_| EngineError::node(format!("JSON parameter needs to be valid JSON ({what})"))),
        other => Ok(other),
    }
}

fn api_error(status: u16, body: &str) -> EngineError {
    let message = match status {
        400 => "Bad request - please check your parameters".to_string(),
        401 => "Authorization failed - please check your credentials".to_string(),
        403 => "Forbidden - perhaps check your credentials?".to_string(),
        404 => "The resource you are requesting could not be found".to_string(),
        405 => "Method not allowed - please check you are using the right HTTP method".to_string(),
        429 => "The service is receiving too many requests from you".to_string(),
        500 => "The service was not able to process your request".to_string(),
        502 => "Bad gateway - the service failed to handle your request".to_string(),
        503 => "Service unavailable - try again later or consider setting this node to retry automatically (in the node settings)".to_string(),
        504 => "Gateway timed out - perhaps try again later?".to_string(),
        s => format!("Request failed with status code {s}"),
    };
    EngineError::Node { message, description: Some(body.chars().take(2000).collect()), http_code: Some(status.to_string()) }
}

/// Applies credentials from the host to headers/query.
fn apply_auth(ctx: &mut NodeContext<'_>, i: usize, headers: &mut Vec<(String, String)>, query: &mut Vec<(String, String)>) -> Result<()> {
    let auth = ctx.param_str("authentication", i, "none")?;
    let cred_type = match auth.as_str() {
        "none" => return Ok(()),
        "genericCredentialType" => ctx.param_str("genericAuthType", i, "")?,
        "predefinedCredentialType" => ctx.param_str("nodeCredentialType", i, "")?,
        other => other.to_string(),
    };
    let reference = ctx.node.credentials.as_ref().and_then(|c| c.get(&cred_type)).cloned().unwrap_or(Value::Null);
    let provider = ctx.env.host.credentials.clone().ok_or_else(|| EngineError::Host("no credentials provider configured".into()))?;
    let data = provider.get(&cred_type, &reference).map_err(EngineError::Host)?;
    let s = |k: &str| data.get(k).map(super::js_string).unwrap_or_default();
    match cred_type.as_str() {
        "httpBasicAuth" => {
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", s("user"), s("password")));
            headers.push(("authorization".into(), format!("Basic {token}")));
        }
        "httpHeaderAuth" => headers.push((s("name"), s("value"))),
        "httpQueryAuth" => query.push((s("name"), s("value"))),
        "httpBearerAuth" => headers.push(("authorization".into(), format!("Bearer {}", s("token")))),
        "httpCustomAuth" => {
            let custom = json_param(data.get("json").cloned().unwrap_or(json!({})), "custom auth")?;
            for (k, v) in custom.get("headers").and_then(|h| h.as_object()).into_iter().flatten() {
                headers.push((k.clone(), super::js_string(v)));
            }
            for (k, v) in custom.get("qs").and_then(|h| h.as_object()).into_iter().flatten() {
                query.push((k.clone(), super::js_string(v)));
            }
        }
        "oAuth2Api" if data.pointer("/oauthTokenData/access_token").is_none() => {
            // Client credentials: one exchange per credential and execution.
            let key = reference.to_string();
            let cached = client(ctx.env)?.tokens.lock().ok().and_then(|t| t.get(&key).cloned());
            let token = match cached {
                Some(t) => t,
                None => {
                    let t = crate::credentials::oauth2_client_credentials_token(ctx.env, &data)?;
                    if let Ok(mut tokens) = client(ctx.env)?.tokens.lock() {
                        tokens.insert(key, t.clone());
                    }
                    t
                }
            };
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        _ => {
            // Predefined/OAuth credentials: the host hands back a token.
            let token = data
                .pointer("/oauthTokenData/access_token")
                .or_else(|| data.get("accessToken"))
                .or_else(|| data.get("apiKey"))
                .or_else(|| data.get("token"))
                .map(super::js_string)
                .ok_or_else(|| EngineError::node(format!("Credentials of type '{cred_type}' carry no token")))?;
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
    }
    Ok(())
}

/// Builds the request for item `i` (without pagination overrides).
fn build(ctx: &mut NodeContext<'_>, i: usize, item: &Item) -> Result<(Request, Value)> {
    let v = ctx.version();
    let method = ctx.param_str(if v < 3.0 { "requestMethod" } else { "method" }, i, "GET")?;
    let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).map_err(|_| EngineError::node(format!("Invalid method '{method}'")))?;
    let url_s = ctx.param_str("url", i, "")?;
    let mut url = url::Url::parse(url_s.trim()).map_err(|e| EngineError::node(format!("Invalid URL '{url_s}': {e}")))?;
    // Pagination values refer to `$response`/`$pageCount`, resolved per page below.
    let mut raw_options = ctx.raw("options").cloned().unwrap_or(json!({}));
    if let Value::Object(o) = &mut raw_options {
        o.shift_remove("pagination");
    }
    let options = ctx.resolve(&raw_options, i)?;
    let mut headers: Vec<(String, String)> = vec![];
    let mut query: Vec<(String, String)> = vec![];
    if ctx.param_bool("sendQuery", i, false)? {
        if ctx.param_str("specifyQuery", i, "keypair")? == "json" {
            let q = json_param(ctx.param("jsonQuery", i, json!({}))?, "query")?;
            for (k, x) in q.as_object().into_iter().flatten() {
                query.push((k.clone(), super::js_string(x)));
            }
        } else {
            for (k, x) in pairs(&ctx.param("queryParameters.parameters", i, json!([]))?) {
                query.push((k, super::js_string(&x)));
            }
        }
    }
    if ctx.param_bool("sendHeaders", i, false)? {
        if ctx.param_str("specifyHeaders", i, "keypair")? == "json" {
            let h = json_param(ctx.param("jsonHeaders", i, json!({}))?, "headers")?;
            for (k, x) in h.as_object().into_iter().flatten() {
                headers.push((k.clone(), super::js_string(x)));
            }
        } else {
            for (k, x) in pairs(&ctx.param("headerParameters.parameters", i, json!([]))?) {
                headers.push((k, super::js_string(&x)));
            }
        }
    }
    apply_auth(ctx, i, &mut headers, &mut query)?;
    let mut body = None;
    if ctx.param_bool("sendBody", i, false)? {
        let ct = ctx.param_str("contentType", i, "json")?;
        let keypair = ctx.param_str("specifyBody", i, "keypair")? == "keypair";
        let set_ct = |headers: &mut Vec<(String, String)>, v: &str| {
            if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
                headers.push(("content-type".into(), v.to_string()));
            }
        };
        match ct.as_str() {
            "json" => {
                let b = if keypair {
                    let mut m = Map::new();
                    for (k, x) in pairs(&ctx.param("bodyParameters.parameters", i, json!([]))?) {
                        m.insert(k, x);
                    }
                    Value::Object(m)
                } else {
                    json_param(ctx.param("jsonBody", i, json!({}))?, "body")?
                };
                set_ct(&mut headers, "application/json");
                body = Some(serde_json::to_vec(&b)?);
            }
            "form-urlencoded" | "multipart-form-data" => {
                let mut ser = url::form_urlencoded::Serializer::new(String::new());
                if keypair {
                    for (k, x) in pairs(&ctx.param("bodyParameters.parameters", i, json!([]))?) {
                        ser.append_pair(&k, &super::js_string(&x));
                    }
                } else {
                    let b = ctx.param_str("body", i, "")?;
                    return Ok((
                        Request { method, url, headers, body: Some(b.into_bytes()), timeout: Duration::ZERO, follow: true },
                        options,
                    ))
                    .and_then(|(r, o)| finish(ctx, r, o));
                }
                set_ct(&mut headers, "application/x-www-form-urlencoded");
                body = Some(ser.finish().into_bytes());
            }
            "raw" => {
                let rct = ctx.param_str("rawContentType", i, "text/plain")?;
                set_ct(&mut headers, &rct);
                body = Some(ctx.param_str("body", i, "")?.into_bytes());
            }
            "binaryData" => {
                let prop = ctx.param_str("inputDataFieldName", i, "data")?;
                let entry = item.binary.as_ref().and_then(|b| b.get(&prop)).ok_or_else(|| EngineError::node(format!("No binary data property '{prop}' in item {i}")))?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(entry.get("data").and_then(|d| d.as_str()).unwrap_or(""))
                    .map_err(|e| EngineError::node(e.to_string()))?;
                if let Some(m) = entry.get("mimeType").and_then(|m| m.as_str()) {
                    set_ct(&mut headers, m);
                }
                body = Some(bytes);
            }
            other => return Err(EngineError::node(format!("Unsupported body content type '{other}'"))),
        }
    }
    if !query.is_empty() {
        let mut qp = url.query_pairs_mut();
        for (k, x) in &query {
            qp.append_pair(k, x);
        }
    }
    let req = Request { method, url, headers, body, timeout: Duration::ZERO, follow: true };
    finish(ctx, req, options)
}

fn finish(ctx: &mut NodeContext<'_>, mut req: Request, options: Value) -> Result<(Request, Value)> {
    let t = options.get("timeout").and_then(|t| t.as_f64()).filter(|t| *t > 0.0);
    req.timeout = t.map(|ms| Duration::from_millis(ms as u64)).unwrap_or(ctx.env.settings.http_timeout);
    req.follow = options.pointer("/redirect/redirect/followRedirects").and_then(|f| f.as_bool()).unwrap_or(true);
    Ok((req, options))
}

/// Substitutes `$response.*` / `$pageCount` in pagination values (evaluated
/// by the engine because the expression sandbox does not see responses).
fn pagination_value(template: &Value, resp: &Value, page: usize) -> Value {
    let Value::String(s) = template else { return template.clone() };
    let Some(body) = s.strip_prefix('=') else { return template.clone() };
    let eval = |e: &str| -> Value {
        let e = e.trim();
        if e == "$pageCount" {
            return json!(page);
        }
        if let Some(path) = e.strip_prefix("$response") {
            let ptr: String = path.split(['.', '[', ']']).filter(|x| !x.is_empty()).map(|x| format!("/{}", x.trim_matches(['"', '\'']))).collect();
            return resp.pointer(&ptr).cloned().unwrap_or(Value::Null);
        }
        if let Some((a, b)) = e.split_once('+') {
            if a.trim() == "$pageCount" {
                if let Ok(n) = b.trim().parse::<i64>() {
                    return json!(page as i64 + n);
                }
            }
        }
        Value::Null
    };
    let t = body.trim();
    if t.starts_with("{{") && t.ends_with("}}") && t.matches("{{").count() == 1 {
        return eval(&t[2..t.len() - 2]);
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some(a) = rest.find("{{") {
        out.push_str(&rest[..a]);
        let Some(b) = rest[a..].find("}}") else { break };
        out.push_str(&super::js_string(&eval(&rest[a + 2..a + b])));
        rest = &rest[a + b + 2..];
    }
    out.push_str(rest);
    Value::String(out)
}

fn response_value(resp: &Response, options: &Value, as_text: bool) -> Value {
    let format = options.pointer("/response/response/responseFormat").and_then(|v| v.as_str()).unwrap_or("autodetect");
    let text = || String::from_utf8_lossy(&resp.body).into_owned();
    let prop = options.pointer("/response/response/outputPropertyName").and_then(|v| v.as_str()).unwrap_or("data");
    match format {
        "json" => serde_json::from_slice(&resp.body).unwrap_or_else(|_| json!({ prop: text() })),
        "text" => json!({ prop: text() }),
        "file" => json!({ "__binary": base64::engine::general_purpose::STANDARD.encode(&resp.body) }),
        _ if resp.content_type.contains("json") || as_text => serde_json::from_slice(&resp.body).unwrap_or_else(|_| json!({ prop: text() })),
        _ if resp.body.is_empty() => json!({}),
        _ => match serde_json::from_slice::<Value>(&resp.body) {
            Ok(v) if resp.content_type.is_empty() => v,
            _ => json!({ prop: text() }),
        },
    }
}

fn to_items(value: Value, i: usize, out: &mut Vec<Item>) {
    match value {
        Value::Array(a) => {
            for v in a {
                let j = if v.is_object() { v } else { json!({ "data": v }) };
                out.push(item_from(j, i));
            }
        }
        Value::Object(mut o) if o.contains_key("__binary") => {
            let data = o.remove("__binary").unwrap_or(Value::Null);
            let mut it = item_from(json!({}), i);
            it.binary = Some(json!({ "data": { "data": data, "mimeType": "application/octet-stream" } }).into());
            out.push(it);
        }
        Value::Object(_) => out.push(item_from(value, i)),
        other => out.push(item_from(json!({ "data": other }), i)),
    }
}

fn one_item(ctx: &mut NodeContext<'_>, i: usize, item: &Item, out: &mut Vec<Item>) -> Result<()> {
    let (req, options) = build(ctx, i, item)?;
    let full = options.pointer("/response/response/fullResponse").and_then(|v| v.as_bool()).unwrap_or(false);
    let never_error = options.pointer("/response/response/neverError").and_then(|v| v.as_bool()).unwrap_or(false);
    let pag = ctx.raw("options.pagination.pagination").cloned().unwrap_or(Value::Null);
    let mode = pag.get("paginationMode").and_then(|v| v.as_str()).unwrap_or("off").to_string();
    let max_pages = if pag.get("limitPagesFetched").and_then(|v| v.as_bool()).unwrap_or(false) {
        pag.get("maxRequests").and_then(|v| v.as_u64()).unwrap_or(100) as usize
    } else {
        10_000
    };
    let mut req = req;
    let mut page = 0usize;
    loop {
        if ctx.env.cancel.is_canceled() {
            return Err(EngineError::Canceled);
        }
        let method = req.method.clone();
        let url = req.url.clone();
        let headers = req.headers.clone();
        let body = req.body.clone();
        let resp = send(ctx.env, Request { method, url, headers, body, timeout: req.timeout, follow: req.follow })?;
        if resp.status >= 400 && !never_error {
            return Err(api_error(resp.status, &String::from_utf8_lossy(&resp.body)));
        }
        let body_v = response_value(&resp, &options, false);
        let full_v = json!({ "body": body_v, "headers": resp.headers, "statusCode": resp.status, "statusMessage": resp.status_text });
        let is_empty = match &body_v {
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            _ => false,
        };
        if mode == "off" {
            to_items(if full { full_v } else { body_v }, i, out);
            return Ok(());
        }
        // Pagination: stop conditions first, then the next request.
        let complete = pag.get("paginationCompleteWhen").and_then(|v| v.as_str()).unwrap_or("responseIsEmpty");
        let done = match complete {
            "receiveSpecificStatusCodes" => {
                let codes = super::js_string(pag.get("statusCodesWhenComplete").unwrap_or(&Value::Null));
                codes.split(',').any(|c| c.trim() == resp.status.to_string())
            }
            "other" => super::conditions::truthy(&pagination_value(pag.get("completeExpression").unwrap_or(&Value::Null), &full_v, page + 1)),
            _ => is_empty,
        };
        // the terminating page is data unless it was the "complete" signal itself
        let terminal = (done && complete == "receiveSpecificStatusCodes") || (is_empty && complete == "responseIsEmpty");
        if !terminal {
            to_items(if full { full_v.clone() } else { body_v }, i, out);
        }
        page += 1;
        if done || page >= max_pages {
            return Ok(());
        }
        if mode == "responseContainsNextURL" {
            let next = super::js_string(&pagination_value(pag.get("nextURL").unwrap_or(&Value::Null), &full_v, page));
            if next.is_empty() || next == "null" {
                return Ok(());
            }
            req.url = req.url.join(&next).map_err(|e| EngineError::node(format!("Invalid next URL '{next}': {e}")))?;
        } else {
            for p in pag.pointer("/parameters/parameters").and_then(|v| v.as_array()).into_iter().flatten() {
                let name = p.get("name").map(super::js_string).unwrap_or_default();
                let value = super::js_string(&pagination_value(p.get("value").unwrap_or(&Value::Null), &full_v, page));
                match p.get("type").and_then(|t| t.as_str()).unwrap_or("qs") {
                    "headers" => {
                        req.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
                        req.headers.push((name, value));
                    }
                    "body" => {
                        let mut b: Value = req.body.as_deref().and_then(|b| serde_json::from_slice(b).ok()).unwrap_or(json!({}));
                        super::set_path(&mut b, &name, json!(value));
                        req.body = Some(serde_json::to_vec(&b)?);
                    }
                    _ => {
                        let kept: Vec<(String, String)> = req.url.query_pairs().filter(|(k, _)| k != &name).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
                        req.url.query_pairs_mut().clear().extend_pairs(kept).append_pair(&name, &value);
                    }
                }
            }
        }
        if let Some(ms) = pag.get("requestInterval").and_then(|v| v.as_u64()).filter(|ms| *ms > 0) {
            if crate::run::sleep_cancellable(Duration::from_millis(ms), ctx.env) {
                return Err(EngineError::Canceled);
            }
        }
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        match one_item(ctx, i, item, &mut out) {
            Ok(()) => {}
            Err(e @ EngineError::Canceled) => return Err(e),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
