//! HTTP Request, every version: v1 and v2 (`legacy.rs`: request method,
//! JSON/RAW parameters, UI parameter lists, response format file/json/string,
//! split into items) and v3 to v4.4 (`v3.rs`: send query/headers/body,
//! body content types, options, autodetected responses, pagination).
//! Shared here: credentials, query strings as n8n's `qs` writes them, the
//! response → item conversion pieces and n8n's API error texts. Requests go
//! through `transport.rs` (SSRF guard, redirects, digest auth).

mod legacy;
mod transport;
mod v3;

use serde_json::{json, Map, Value};

pub use transport::{is_forbidden_ip, HttpClient};
pub(crate) use transport::{block_on, cached_token, guarded_client, send, service_url, Redirects, Request, Response};

use super::{NodeContext, NodeOutput};
use crate::error::{EngineError, Result};

/// A plain GET through the same client and SSRF guard, following
/// redirects, for nodes that read one URL (RSS Feed Read): status and body.
pub(crate) fn get(env: &crate::run::Env, url: url::Url, headers: Vec<(String, String)>) -> Result<(u16, Vec<u8>)> {
    let req = Request {
        method: reqwest::Method::GET,
        url,
        headers,
        body: None,
        timeout: env.settings.http_timeout,
        redirects: Redirects { get: true, all: false, max: 21 },
        insecure: false,
        digest: None,
    };
    // the raw transport error (callers word their own messages from it)
    let resp = send(env, &req).map_err(|e| match e {
        EngineError::Node { description: Some(detail), http_code: None, .. } => EngineError::node(detail),
        other => other,
    })?;
    Ok((resp.status, resp.body))
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 3.0 {
        legacy::execute(ctx)
    } else {
        v3::execute(ctx)
    }
}

/// How arrays in query parameters are written (qs' `arrayFormat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArrayFormat {
    /// `a[0]=x&a[1]=y` (qs' default)
    Indices,
    /// `a[]=x&a[]=y`
    Brackets,
    /// `a=x&a=y`
    Repeat,
}

impl ArrayFormat {
    fn parse(s: &str) -> ArrayFormat {
        match s {
            "brackets" => ArrayFormat::Brackets,
            "repeat" => ArrayFormat::Repeat,
            _ => ArrayFormat::Indices,
        }
    }
}

fn qs_pairs(prefix: &str, v: &Value, format: ArrayFormat, out: &mut Vec<(String, String)>) {
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let key = match format {
                    ArrayFormat::Indices => format!("{prefix}[{i}]"),
                    ArrayFormat::Brackets => format!("{prefix}[]"),
                    ArrayFormat::Repeat => prefix.to_string(),
                };
                qs_pairs(&key, x, format, out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                qs_pairs(&format!("{prefix}[{k}]"), x, format, out);
            }
        }
        // qs skips null and undefined values
        Value::Null => {}
        other => out.push((prefix.to_string(), super::js_string(other))),
    }
}

/// Appends `params` to the URL's query as n8n's request library does.
pub(crate) fn append_query(url: &mut url::Url, params: &Map<String, Value>, format: ArrayFormat) {
    let mut pairs = vec![];
    for (k, v) in params {
        qs_pairs(k, v, format, &mut pairs);
    }
    if pairs.is_empty() {
        return;
    }
    let mut qp = url.query_pairs_mut();
    for (k, v) in &pairs {
        qp.append_pair(k, v);
    }
}

/// `name=value&…` body of a form (`form-urlencoded`).
pub(crate) fn form_body(params: &Map<String, Value>) -> Vec<u8> {
    let mut pairs = vec![];
    for (k, v) in params {
        qs_pairs(k, v, ArrayFormat::Indices, &mut pairs);
    }
    let mut ser = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in &pairs {
        ser.append_pair(k, v);
    }
    ser.finish().into_bytes()
}

/// One part of a `multipart/form-data` body.
#[derive(Clone)]
pub(crate) enum Part {
    Text(String, String),
    File { name: String, file_name: Option<String>, content_type: Option<String>, bytes: Vec<u8> },
}

/// A `multipart/form-data` body and its content type.
pub(crate) fn multipart_body(parts: &[Part]) -> (Vec<u8>, String) {
    let boundary = format!("--------------------------{}", uuid::Uuid::new_v4().simple());
    let mut body = Vec::new();
    let quote = |s: &str| s.replace('"', "%22").replace('\r', "%0D").replace('\n', "%0A");
    for p in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match p {
            Part::Text(name, value) => {
                body.extend_from_slice(format!("Content-Disposition: form-data; name=\"{}\"\r\n\r\n", quote(name)).as_bytes());
                body.extend_from_slice(value.as_bytes());
            }
            Part::File { name, file_name, content_type, bytes } => {
                let fname = file_name.as_deref().map(|f| format!("; filename=\"{}\"", quote(f))).unwrap_or_default();
                body.extend_from_slice(format!("Content-Disposition: form-data; name=\"{}\"{fname}\r\n", quote(name)).as_bytes());
                body.extend_from_slice(format!("Content-Type: {}\r\n\r\n", content_type.as_deref().unwrap_or("application/octet-stream")).as_bytes());
                body.extend_from_slice(bytes);
            }
        }
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={boundary}"))
}

/// Credentials applied to a request.
#[derive(Debug, Default)]
pub(crate) struct Auth {
    pub headers: Vec<(String, String)>,
    pub query: Map<String, Value>,
    pub body: Map<String, Value>,
    pub digest: Option<(String, String)>,
    /// A connected OAuth2 credential: its token is refreshed at send time.
    pub conn: Option<crate::oauth2::Connection>,
}

/// The decrypted credential data the node references for `cred_type`.
fn credential(ctx: &NodeContext<'_>, cred_type: &str) -> Result<Value> {
    let reference = ctx.node.credentials.as_ref().and_then(|c| c.get(cred_type)).cloned().unwrap_or(Value::Null);
    let provider = ctx.env.host.credentials.clone().ok_or_else(|| EngineError::Host("no credentials provider configured".into()))?;
    provider.get(cred_type, &reference).map_err(|e| EngineError::node_with(format!("Node credentials not found: {cred_type}"), e))
}

/// n8n's per-credential domain restriction (`allowedHttpRequestDomains`).
fn check_domains(data: &Value, url: &str, cred_type: &str, named: bool) -> Result<()> {
    match data.get("allowedHttpRequestDomains").and_then(Value::as_str) {
        Some("domains") => {
            let allowed = data.get("allowedDomains").and_then(Value::as_str).unwrap_or("");
            if allowed.trim().is_empty() {
                return Err(EngineError::node("No allowed domains specified. Configure allowed domains or change restriction setting."));
            }
            let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_lowercase)).unwrap_or_default();
            let ok = allowed.split(',').map(|d| d.trim().to_lowercase()).filter(|d| !d.is_empty()).any(|d| host == d || host.ends_with(&format!(".{d}")));
            if !ok {
                let info = if named { format!(" ({cred_type})") } else { String::new() };
                return Err(EngineError::node(format!(
                    "Domain not allowed: This credential{info} is restricted from accessing {url}. Only the following domains are allowed: {allowed}"
                )));
            }
            Ok(())
        }
        Some("none") => Err(EngineError::node("This credential is configured to prevent use within an HTTP Request node")),
        _ => Ok(()),
    }
}

/// Credentials for a credential type, as n8n's request helpers apply them.
pub(crate) fn auth_for(ctx: &NodeContext<'_>, cred_type: &str, url: &str, predefined: bool) -> Result<Auth> {
    let data = credential(ctx, cred_type)?;
    check_domains(&data, url, cred_type, predefined)?;
    let s = |k: &str| data.get(k).map(super::js_string).unwrap_or_default();
    let mut auth = Auth::default();
    use base64::Engine as _;
    let jwt_token_url = match crate::catalog::credential_types::credential_type(cred_type).and_then(|t| t.authenticate.as_ref()) {
        Some(crate::catalog::credential_types::Authenticate::JwtBearer { token_url, .. }) => Some(token_url.clone()),
        _ => None,
    };
    match cred_type {
        "httpBasicAuth" => {
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", s("user"), s("password")));
            auth.headers.push(("authorization".into(), format!("Basic {token}")));
        }
        "httpDigestAuth" => auth.digest = Some((s("user"), s("password"))),
        "httpHeaderAuth" => auth.headers.push((s("name"), s("value"))),
        "httpQueryAuth" => {
            auth.query.insert(s("name"), Value::String(s("value")));
        }
        "httpBearerAuth" => auth.headers.push(("Authorization".into(), format!("Bearer {}", s("token")))),
        "httpCustomAuth" => {
            let text = data.get("json").map(super::js_string).unwrap_or_else(|| "{}".into());
            let custom: Value = if text.trim().is_empty() { json!({}) } else { serde_json::from_str(&text).map_err(|_| EngineError::node("Invalid Custom Auth JSON"))? };
            for (k, v) in custom.get("headers").and_then(Value::as_object).into_iter().flatten() {
                auth.headers.push((k.clone(), super::js_string(v)));
            }
            for (k, v) in custom.get("qs").and_then(Value::as_object).into_iter().flatten() {
                auth.query.insert(k.clone(), v.clone());
            }
            for (k, v) in custom.get("body").and_then(Value::as_object).into_iter().flatten() {
                auth.body.insert(k.clone(), v.clone());
            }
        }
        "oAuth1Api" => {
            return Err(EngineError::node_with(
                "OAuth1 credentials are not supported by this engine",
                "Use an OAuth2, header, query or bearer credential instead.",
            ))
        }
        "oAuth2Api" if data.pointer("/oauthTokenData/access_token").is_none() => {
            // Client credentials: one exchange per credential and execution.
            let key = ctx.node.credentials.as_ref().and_then(|c| c.get(cred_type)).map(Value::to_string).unwrap_or_default();
            let token = cached_token(ctx.env, &key, || crate::oauth2::client_credentials_token(ctx.env, &data))?;
            auth.headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        _ if jwt_token_url.is_some() => {
            // a service account set up for the HTTP Request node: its own scopes
            let scopes: Vec<String> = s("scopes").split(|c: char| c == ',' || c.is_whitespace()).filter(|x| !x.is_empty()).map(str::to_owned).collect();
            let token = crate::oauth2::jwt_bearer_token(ctx.env, jwt_token_url.as_deref().unwrap_or_default(), &data, &scopes)?;
            auth.headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        t if crate::catalog::credential_types::credential_type(t).is_some_and(|t| t.authenticate.is_some()) => {
            // a service type that says how it authenticates (n8n's `authenticate`)
            let applied = crate::catalog::credential_types::credential_type(t)
                .and_then(|t| t.authenticate.as_ref())
                .map(|a| a.apply(&data))
                .transpose()
                .map_err(EngineError::node)?
                .unwrap_or_default();
            auth.headers = applied.headers;
            auth.query = applied.qs;
            auth.body = applied.body;
        }
        t if crate::oauth2::Settings::of(t, &data).is_some_and(|s| s.connects()) => {
            // a connected OAuth2 credential: the bearer token is put on (and
            // refreshed when needed) at send time
            let reference = ctx.node.credentials.as_ref().and_then(|c| c.get(cred_type)).cloned().unwrap_or(Value::Null);
            // the current token for the versions that send without refreshing
            if let Some(token) = data.pointer("/oauthTokenData/access_token").and_then(Value::as_str) {
                auth.headers.push(("Authorization".into(), format!("Bearer {token}")));
            }
            auth.conn = crate::oauth2::Connection::of(t, &reference, &data);
        }
        _ => {
            // OAuth2 (generic or a service's) and service credentials with a token
            let token = data
                .pointer("/oauthTokenData/access_token")
                .or_else(|| data.get("accessToken"))
                .or_else(|| data.get("apiKey"))
                .or_else(|| data.get("apiToken"))
                .or_else(|| data.get("token"))
                .map(super::js_string)
                .ok_or_else(|| {
                    EngineError::node_with(
                        format!("Credentials of type '{cred_type}' carry no token this engine can send"),
                        "OAuth2 credentials need a connected account (oauthTokenData.access_token); other service credentials need accessToken, apiKey or token.",
                    )
                })?;
            auth.headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
    }
    Ok(auth)
}

/// The body decoded as text with the response's charset (UTF-8 by default).
pub(crate) fn body_text(resp: &Response) -> String {
    let ct = resp.content_type();
    let charset = ct.split(';').skip(1).filter_map(|p| p.trim().strip_prefix("charset=")).next().map(|c| c.trim().trim_matches('"').trim_matches('\''));
    if let Some(enc) = charset.and_then(|c| encoding_rs::Encoding::for_label(c.as_bytes())) {
        return enc.decode(&resp.body).0.into_owned();
    }
    // a UTF-8 byte-order mark is dropped, as node's Buffer#toString does not but JSON.parse needs
    String::from_utf8_lossy(resp.body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&resp.body)).into_owned()
}

/// n8n's `NodeApiError` texts per status code.
fn status_message(status: u16) -> &'static str {
    match status {
        400 => "Bad request - please check your parameters",
        401 => "Authorization failed - please check your credentials",
        402 => "Payment required - perhaps check your payment details?",
        403 => "Forbidden - perhaps check your credentials?",
        404 => "The resource you are requesting could not be found",
        405 => "Method not allowed - please check you are using the right HTTP method",
        429 => "The service is receiving too many requests from you",
        500 => "The service was not able to process your request",
        502 => "Bad gateway - the service failed to handle your request",
        503 => "Service unavailable - try again later or consider setting this node to retry automatically (in the node settings)",
        504 => "Gateway timed out - perhaps try again later?",
        s if (400..500).contains(&s) => "Your request is invalid or could not be processed by the service",
        s if (500..600).contains(&s) => "The service failed to process your request",
        _ => "UNKNOWN ERROR - check the detailed error for more information",
    }
}

/// The body of an error response as n8n puts it in the error: JSON when it parses.
fn error_body(resp: &Response) -> Value {
    let text = body_text(resp);
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// The request library's message for a failed status: `404 - {"error":"…"}`.
fn status_detail(resp: &Response) -> String {
    format!("{} - {}", resp.status, serde_json::to_string(&error_body(resp)).unwrap_or_default())
}

/// A failed status as n8n's `NodeApiError`.
pub(crate) fn api_error(resp: &Response) -> EngineError {
    let description = if resp.status == 429 {
        "Try spacing your requests out using the batching settings under 'Options'".to_string()
    } else {
        status_detail(resp)
    };
    EngineError::Node { message: status_message(resp.status).to_string(), description: Some(description), http_code: Some(resp.status.to_string()) }
}

/// The `error` of an item for a request that failed under "continue on
/// fail": the error object n8n puts there, in the fields its tests compare
/// (`message`, `name`, `description`, `context`).
pub(crate) fn error_json(e: &EngineError, resp: Option<&Response>) -> Value {
    match (resp, e) {
        // the request helper's error for a failed status
        (Some(r), _) => json!({ "message": status_detail(r), "name": "Error" }),
        (None, EngineError::Node { message, description, http_code }) => {
            let mut o = Map::new();
            o.insert("message".into(), Value::String(message.clone()));
            o.insert("name".into(), json!(if http_code.is_some() { "NodeApiError" } else { "NodeOperationError" }));
            if let Some(d) = description {
                o.insert("description".into(), Value::String(d.clone()));
            }
            o.insert("context".into(), json!({}));
            Value::Object(o)
        }
        (None, other) => json!({ "message": other.to_string(), "name": "Error" }),
    }
}

/// n8n's `replaceNullValues`: an item whose json is null gets `{}`.
pub(crate) fn not_null(v: Value) -> Value {
    if v.is_null() {
        json!({})
    } else {
        v
    }
}

/// Response headers and status for "full response" outputs.
pub(crate) fn full_fields(resp: &Response) -> (Value, Value, Value) {
    (Value::Object(resp.headers.clone()), json!(resp.status), json!(resp.status_text))
}

/// `options.timeout` or the version's default, in milliseconds.
pub(crate) fn timeout_of(v: Option<f64>, default_ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(v.filter(|t| *t >= 1.0).map(|t| t as u64).unwrap_or(default_ms))
}

/// A binary item entry for a file response: the file name from the
/// content disposition or the final URL's path, the MIME type from the
/// content type or the file name.
pub(crate) fn file_entry(resp: &Response, file_path: Option<String>) -> Value {
    let ct = resp.content_type();
    let mime = ct.split(' ').next().unwrap_or("").split(';').next().unwrap_or("").trim().to_string();
    crate::binary::entry(&resp.body, file_path.as_deref(), (!mime.is_empty()).then_some(mime.as_str()))
}

/// The file name a response names in `content-disposition`.
pub(crate) fn disposition_file_name(resp: &Response) -> Option<String> {
    let cd = resp.headers.get("content-disposition").map(super::js_string)?;
    let re = regex::Regex::new(r#"(?i)filename\*?=(?:UTF-8'')?(?:"([^"]*)"|([^;]*))"#).ok()?;
    let c = re.captures(&cd)?;
    let name = c.get(1).or_else(|| c.get(2))?.as_str().trim();
    let decoded = url::form_urlencoded::parse(format!("x={name}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_else(|| name.to_string());
    (!decoded.is_empty()).then_some(decoded)
}
