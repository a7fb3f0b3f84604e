//! Webhook-style triggers, as n8n's Webhook node and webhook runtime shape
//! them: an incoming HTTP request becomes the trigger item (`headers`,
//! `params`, `query`, `body`, files → binary), the node's authentication
//! and access options are checked, and the HTTP answer an execution owes
//! its caller is built (`onReceived`, `lastNode`, Respond to Webhook).
//!
//! Pure: the host parses HTTP, fetches credentials and stores what this
//! returns. The same functions serve the Webhook node, the Wait node's
//! "on webhook call" resume and the Form Trigger's response settings.

use std::net::IpAddr;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::data::{ExecutionState, Item};
use crate::error::{EngineError, Result};
use crate::workflow::Node;

pub const WEBHOOK_TYPE: &str = "n8n-nodes-base.webhook";
pub const FORM_TRIGGER_TYPE: &str = "n8n-nodes-base.formTrigger";
pub const WAIT_TYPE: &str = "n8n-nodes-base.wait";
pub const RESPOND_TYPE: &str = "n8n-nodes-base.respondToWebhook";

/// An HTTP request as a webhook sees it.
#[derive(Debug, Clone, Default)]
pub struct IncomingRequest {
    /// Upper case (`POST`).
    pub method: String,
    /// Lower-case names; repeated headers joined with `,` (as API Gateway does).
    pub headers: Map<String, Value>,
    /// `:name` segments of a dynamic path.
    pub params: Map<String, Value>,
    pub query: Map<String, Value>,
    pub body: RequestBody,
    /// The body as received (the `rawBody` option, binary uploads).
    pub raw_body: Vec<u8>,
    pub source_ip: Option<String>,
}

/// The request body after content-type parsing.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum RequestBody {
    /// Nothing was sent.
    #[default]
    Empty,
    /// JSON, `application/x-www-form-urlencoded` or `text/plain`, parsed.
    Parsed(Value),
    /// `multipart/form-data`: fields (a repeated field is an array) and files.
    Multipart { fields: Map<String, Value>, files: Vec<UploadedFile> },
    /// A content type n8n does not parse: the bytes are in `raw_body`.
    Unparsed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UploadedFile {
    /// The form field it came in.
    pub field: String,
    pub file_name: Option<String>,
    pub mime_type: String,
    pub data: Vec<u8>,
}

/// What the Webhook node adds to its item besides the request.
#[derive(Debug, Clone, Default)]
pub struct TriggerContext {
    /// `webhookUrl` (the node's own URL; `None` leaves the key out).
    pub webhook_url: Option<String>,
    /// `executionMode`: `test` or `production` (`None` leaves it out).
    pub execution_mode: Option<String>,
    /// The verified token of JWT authentication.
    pub jwt_payload: Option<Value>,
}

impl IncomingRequest {
    /// The content type's essence, lower case (`application/json`).
    pub fn content_type(&self) -> Option<String> {
        content_type_of(&self.headers)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(Value::as_str)
    }
}

pub fn content_type_of(headers: &Map<String, Value>) -> Option<String> {
    headers
        .get("content-type")
        .and_then(Value::as_str)
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty())
}

/// Content types n8n parses before a node sees the request (others arrive
/// as binary for Webhook v2+).
pub fn is_parsable(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|c| {
        c.starts_with("application/json")
            || c.starts_with("text/plain")
            || c.starts_with("application/x-www-form-urlencoded")
            || c.ends_with("/xml")
            || c.ends_with("+xml")
    })
}

/// Parses a body the way n8n's body parser does: JSON, form-urlencoded
/// (repeated keys become arrays) and `text/plain`; anything else stays
/// unparsed. XML bodies are not parsed (they arrive as binary).
pub fn parse_body(content_type: Option<&str>, raw: &[u8]) -> std::result::Result<RequestBody, String> {
    if raw.is_empty() {
        return Ok(RequestBody::Empty);
    }
    match content_type {
        Some("application/json") => serde_json::from_slice(raw)
            .map(RequestBody::Parsed)
            .map_err(|e| format!("Failed to parse request body: {e}")),
        Some("application/x-www-form-urlencoded") => Ok(RequestBody::Parsed(Value::Object(parse_query(raw)))),
        Some("text/plain") => Ok(RequestBody::Parsed(Value::String(String::from_utf8_lossy(raw).into_owned()))),
        _ => Ok(RequestBody::Unparsed),
    }
}

/// `a=1&a=2&b=x` → `{a: ["1","2"], b: "x"}` (Node's `querystring.parse`).
pub fn parse_query(raw: &[u8]) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in url::form_urlencoded::parse(raw) {
        add_repeated(&mut out, k.into_owned(), Value::String(v.into_owned()));
    }
    out
}

/// Inserts `value` under `key`; a key seen again becomes an array.
pub fn add_repeated(map: &mut Map<String, Value>, key: String, value: Value) {
    match map.get_mut(&key) {
        Some(Value::Array(a)) => a.push(value),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, value]);
        }
        None => {
            map.insert(key, value);
        }
    }
}

/// n8n's binary data entry for bytes the host received.
pub fn binary_data(bytes: &[u8], file_name: Option<&str>, mime_type: &str) -> Value {
    let mut entry = Map::new();
    entry.insert("data".into(), json!(base64::engine::general_purpose::STANDARD.encode(bytes)));
    entry.insert("mimeType".into(), json!(mime_type));
    let kind = mime_type.split('/').next().unwrap_or_default();
    let file_type = match kind {
        "image" | "video" | "audio" | "text" => Some(kind),
        _ if mime_type == "application/json" => Some("json"),
        _ if mime_type == "application/pdf" => Some("pdf"),
        _ => None,
    };
    if let Some(t) = file_type {
        entry.insert("fileType".into(), json!(t));
    }
    if let Some(name) = file_name.filter(|n| !n.is_empty()) {
        entry.insert("fileName".into(), json!(name));
        if let Some((_, ext)) = name.rsplit_once('.') {
            entry.insert("fileExtension".into(), json!(ext.to_ascii_lowercase()));
        }
    }
    entry.insert("fileSize".into(), json!(human_size(bytes.len())));
    Value::Object(entry)
}

fn human_size(n: usize) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1000.0 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    let s = format!("{v:.2}");
    format!("{} {unit}", s.trim_end_matches('0').trim_end_matches('.'))
}

fn option<'a>(node: &'a Node, name: &str) -> Option<&'a Value> {
    node.parameters.get("options").and_then(|o| o.get(name))
}

fn option_bool(node: &Node, name: &str) -> bool {
    matches!(option(node, name), Some(Value::Bool(true)))
}

fn option_str<'a>(node: &'a Node, name: &str) -> Option<&'a str> {
    option(node, name).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The methods a Webhook node listens to (v2.1 `multipleMethods` lists several).
pub fn webhook_methods(node: &Node) -> Vec<String> {
    match node.parameters.get("httpMethod") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_ascii_uppercase).collect(),
        Some(Value::String(s)) => vec![s.to_ascii_uppercase()],
        _ if node.parameters.get("multipleMethods") == Some(&Value::Bool(true)) => vec!["GET".into(), "POST".into()],
        _ => vec!["GET".into()],
    }
}

fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The Webhook node's output for a request: one item on the output of the
/// request's method (several outputs when it listens to several methods).
/// Also the Wait node's output when a webhook call resumes it.
pub fn webhook_output(node: &Node, req: &IncomingRequest, ctx: &TriggerContext) -> Result<Vec<Vec<Item>>> {
    let version = node.type_version;
    let base = |body: Value| {
        let mut json = Map::new();
        json.insert("headers".into(), Value::Object(req.headers.clone()));
        json.insert("params".into(), Value::Object(req.params.clone()));
        json.insert("query".into(), Value::Object(req.query.clone()));
        json.insert("body".into(), body);
        json
    };
    let binary_name = option_str(node, "binaryPropertyName");
    let mut item = if option_bool(node, "binaryData") && version < 2.0 || is_binary_upload(node, req) {
        // The body as one file.
        let mut item = Item::new(Value::Object(base(json!({}))));
        if !req.raw_body.is_empty() {
            let name = content_disposition_filename(req.header("content-disposition")).unwrap_or_else(uuid);
            let mime = req.content_type().unwrap_or_else(|| "application/octet-stream".into());
            let prop = binary_name.unwrap_or("data");
            item.binary = Some(json!({ prop: binary_data(&req.raw_body, Some(&name), &mime) }).into());
        }
        item
    } else if let RequestBody::Multipart { fields, files } = &req.body {
        let mut item = Item::new(Value::Object(base(Value::Object(fields.clone()))));
        if !files.is_empty() {
            item.binary = Some(Value::Object(multipart_binary(files, binary_name)).into());
        }
        item
    } else {
        let body = match &req.body {
            RequestBody::Parsed(v) => v.clone(),
            _ => json!({}),
        };
        let mut item = Item::new(Value::Object(base(body)));
        if option_bool(node, "rawBody") {
            let mime = req.content_type().unwrap_or_else(|| "application/json".into());
            item.binary = Some(
                json!({ "data": { "data": base64::engine::general_purpose::STANDARD.encode(&req.raw_body), "mimeType": mime } })
                    .into(),
            );
        }
        item
    };
    let mut json = Value::clone(&item.json);
    if let Value::Object(o) = &mut json {
        if let Some(u) = &ctx.webhook_url {
            o.insert("webhookUrl".into(), json!(u));
        }
        if let Some(m) = &ctx.execution_mode {
            o.insert("executionMode".into(), json!(m));
        }
        if let Some(p) = &ctx.jwt_payload {
            o.insert("jwtPayload".into(), p.clone());
        }
    }
    item.json = json.into();
    // Before 2.1 `httpMethod` is one method and there is one output.
    match node.parameters.get("httpMethod") {
        Some(Value::Array(methods)) if node.node_type == WEBHOOK_TYPE => {
            let idx = methods.iter().position(|m| m.as_str().is_some_and(|m| m.eq_ignore_ascii_case(&req.method)));
            let mut outs: Vec<Vec<Item>> = methods.iter().map(|_| Vec::new()).collect();
            match idx {
                Some(i) => outs[i].push(item),
                None => return Err(EngineError::node(format!("The webhook does not listen to {}", req.method))),
            }
            Ok(outs)
        }
        _ => Ok(vec![vec![item]]),
    }
}

/// Webhook v2+: a body n8n did not parse becomes a file (unless `rawBody`).
fn is_binary_upload(node: &Node, req: &IncomingRequest) -> bool {
    node.type_version >= 2.0
        && !option_bool(node, "rawBody")
        && matches!(req.body, RequestBody::Unparsed | RequestBody::Empty)
        && !matches!(req.body, RequestBody::Multipart { .. })
}

/// Binary properties of uploaded files, named as n8n names them: the field
/// name (without `[]`), numbered when a field carries several files, or
/// `<binaryPropertyName><n>` when that option is set.
fn multipart_binary(files: &[UploadedFile], prefix: Option<&str>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut count = 0;
    let mut seen: Vec<&str> = Vec::new();
    for f in files {
        if seen.contains(&f.field.as_str()) {
            continue;
        }
        seen.push(&f.field);
        let group: Vec<&UploadedFile> = files.iter().filter(|g| g.field == f.field).collect();
        let multi = group.len() > 1;
        for (i, file) in group.iter().enumerate() {
            let mut name = file.field.strip_suffix("[]").unwrap_or(&file.field).to_owned();
            if multi {
                name.push_str(&i.to_string());
            }
            if let Some(p) = prefix {
                name = format!("{p}{count}");
            }
            out.insert(name, binary_data(&file.data, file.file_name.as_deref(), &file.mime_type));
            count += 1;
        }
    }
    out
}

fn content_disposition_filename(v: Option<&str>) -> Option<String> {
    let v = v?;
    v.split(';').map(str::trim).find_map(|p| {
        let (k, val) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("filename")).then(|| val.trim().trim_matches('"').to_owned())
    })
}

// ---------------------------------------------------------------------------
// Access: IP allow-list, bots, authentication
// ---------------------------------------------------------------------------

/// Why a request was refused before anything ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub message: String,
    /// Ask the caller for Basic credentials (`WWW-Authenticate`).
    pub challenge: bool,
}

impl Refusal {
    fn new(status: u16, message: Option<&str>) -> Self {
        let message = message.map(str::to_owned).unwrap_or_else(|| {
            match status {
                401 => "Authorization is required!",
                403 => "Authorization data is wrong!",
                _ => "Authorization problem!",
            }
            .to_owned()
        });
        Refusal { status, message, challenge: status == 401 || status == 403 }
    }
}

/// The IP allow-list and "ignore bots" options.
pub fn check_access(node: &Node, req: &IncomingRequest) -> std::result::Result<(), Refusal> {
    if let Some(list) = option_str(node, "ipWhitelist") {
        let ip = req.source_ip.as_deref().unwrap_or_default();
        if !ip_allowed(list, ip) {
            return Err(Refusal {
                status: 403,
                message: "IP is not whitelisted to access the webhook!".into(),
                challenge: false,
            });
        }
    }
    if option_bool(node, "ignoreBots") && is_bot(req.header("user-agent").unwrap_or_default()) {
        return Err(Refusal::new(403, None));
    }
    Ok(())
}

/// Entries are IP addresses or CIDR ranges (anything else matches as a
/// substring of the address, as older n8n did).
pub fn ip_allowed(list: &str, ip: &str) -> bool {
    let addr: Option<IpAddr> = ip.parse().ok();
    list.split(',').map(str::trim).filter(|e| !e.is_empty()).any(|entry| {
        if let Some((net, bits)) = entry.split_once('/') {
            if let (Ok(net), Ok(bits), Some(addr)) = (net.parse::<IpAddr>(), bits.parse::<u32>(), addr) {
                return in_cidr(addr, net, bits);
            }
        }
        match (entry.parse::<IpAddr>(), addr) {
            (Ok(e), Some(a)) => e == a,
            _ => ip.contains(entry),
        }
    })
}

fn in_cidr(addr: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (addr, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Link previewers and crawlers (the common user agents `isbot` knows).
pub fn is_bot(user_agent: &str) -> bool {
    let ua = user_agent.to_ascii_lowercase();
    [
        "bot", "crawl", "spider", "slurp", "facebookexternalhit", "embedly", "preview", "whatsapp", "vkshare",
        "w3c_validator", "outbrain", "pinterest", "headlesschrome", "lighthouse", "python-requests", "scrapy",
    ]
    .iter()
    .any(|m| ua.contains(m))
}

/// The authentication a webhook-like node asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookAuth {
    None,
    Basic,
    Header,
    Jwt,
    Bearer,
}

impl WebhookAuth {
    /// From the node: `authentication` (Webhook, Wait 1.1, Form Trigger) or
    /// `incomingAuthentication` (Wait 1). Unknown modes are refused.
    pub fn of(node: &Node) -> Result<WebhookAuth> {
        let p = &node.parameters;
        let mode = p
            .get("authentication")
            .or_else(|| p.get("incomingAuthentication"))
            .and_then(Value::as_str)
            .unwrap_or("none");
        Ok(match mode {
            "none" => WebhookAuth::None,
            "basicAuth" => WebhookAuth::Basic,
            "headerAuth" => WebhookAuth::Header,
            "jwtAuth" => WebhookAuth::Jwt,
            "bearerAuth" => WebhookAuth::Bearer,
            other => {
                return Err(EngineError::node(format!(
                    "The authentication method \"{other}\" of node \"{}\" is not supported",
                    node.name
                )))
            }
        })
    }

    /// The credential type the node's credential reference must be of.
    pub fn credential_type(self) -> Option<&'static str> {
        match self {
            WebhookAuth::None => None,
            WebhookAuth::Basic => Some("httpBasicAuth"),
            WebhookAuth::Header => Some("httpHeaderAuth"),
            WebhookAuth::Jwt => Some("jwtAuth"),
            WebhookAuth::Bearer => Some("httpBearerAuth"),
        }
    }
}

fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks the request against the credential the node selected (`None`
/// when it has none or it could not be read). `Ok` carries the JWT payload.
/// Statuses and messages are n8n's: 401 when credentials are missing, 403
/// when they are wrong, 500 when the node has no credential to check with.
pub fn authenticate(
    auth: WebhookAuth,
    credential: Option<&Value>,
    headers: &Map<String, Value>,
) -> std::result::Result<Option<Value>, Refusal> {
    let no_data = || Refusal { status: 500, message: "No authentication data defined on node!".into(), challenge: false };
    let field = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let header = |name: &str| headers.get(name).and_then(Value::as_str);
    match auth {
        WebhookAuth::None => Ok(None),
        WebhookAuth::Basic => {
            let c = credential.ok_or_else(no_data)?;
            let (Some(user), Some(password)) = (field(c, "user"), field(c, "password")) else { return Err(no_data()) };
            let provided = header("authorization").and_then(parse_basic).ok_or_else(|| Refusal::new(401, None))?;
            if constant_time_eq(&provided.0, &user) & constant_time_eq(&provided.1, &password) {
                Ok(None)
            } else {
                Err(Refusal::new(403, None))
            }
        }
        WebhookAuth::Header => {
            let c = credential.ok_or_else(no_data)?;
            let (Some(name), Some(value)) = (field(c, "name"), field(c, "value")) else { return Err(no_data()) };
            match header(&name.to_ascii_lowercase()) {
                Some(v) if constant_time_eq(v, &value) => Ok(None),
                _ => Err(Refusal::new(403, None)),
            }
        }
        WebhookAuth::Jwt => {
            let c = credential.ok_or_else(no_data)?;
            let token = header("authorization")
                .and_then(|h| h.split(' ').nth(1))
                .filter(|t| !t.is_empty())
                .ok_or_else(|| Refusal::new(401, Some("No token provided")))?;
            verify_jwt(c, token).map(Some).map_err(|m| Refusal { status: 403, message: m, challenge: false })
        }
        // n8n compares the whole header with `Bearer <token>`: a missing
        // header is 403 as a wrong one is (not 401 as for basic auth).
        WebhookAuth::Bearer => {
            let token = credential.and_then(|c| field(c, "token")).ok_or_else(no_data)?;
            match header("authorization") {
                Some(v) if constant_time_eq(v, &format!("Bearer {token}")) => Ok(None),
                _ => Err(Refusal::new(403, None)),
            }
        }
    }
}

/// After [`authenticate`] admitted a request: the header that carried the
/// credential, redacted in what becomes the trigger's item. n8n passes it on
/// as received; here the item is stored run data, which the agent and MCP
/// clients read, and a credential is never shown to them. The scheme stays
/// (`Bearer [redacted]`); that the workflow runs says the request passed.
pub fn redact_credential(auth: WebhookAuth, credential: Option<&Value>, headers: &mut Map<String, Value>) {
    let name = match auth {
        WebhookAuth::None => return,
        WebhookAuth::Header => match credential.and_then(|c| c.get("name")).and_then(Value::as_str) {
            Some(n) => n.to_ascii_lowercase(),
            None => return,
        },
        WebhookAuth::Basic | WebhookAuth::Jwt | WebhookAuth::Bearer => "authorization".to_owned(),
    };
    if let Some(v) = headers.get_mut(&name) {
        let scheme = v.as_str().and_then(|s| s.trim().split_once(' ')).map(|(scheme, _)| scheme.to_owned());
        *v = Value::String(match scheme {
            Some(s) if auth != WebhookAuth::Header => format!("{s} {REDACTED}"),
            _ => REDACTED.to_owned(),
        });
    }
}

const REDACTED: &str = "[redacted]";

/// `Basic base64(user:password)` (scheme case-insensitive, password may hold `:`).
fn parse_basic(v: &str) -> Option<(String, String)> {
    let (scheme, token) = v.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD.decode(token.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (u, p) = text.split_once(':')?;
    Some((u.to_owned(), p.to_owned()))
}

fn jwt_algorithm(c: &Value) -> std::result::Result<jsonwebtoken::Algorithm, String> {
    let name = c.get("algorithm").and_then(Value::as_str).unwrap_or("HS256");
    name.parse::<jsonwebtoken::Algorithm>().map_err(|_| format!("unsupported JWT algorithm {name:?}"))
}

/// A PEM key as n8n's `formatPrivateKey` repairs it: pasted on one line,
/// or with its line breaks escaped.
pub fn format_pem(key: &str) -> String {
    let key = key.replace("\\n", "\n");
    let Some(begin_end) = key.find("-----BEGIN").and_then(|b| key[b + 10..].find("-----").map(|e| b + 10 + e + 5)) else {
        return key;
    };
    let Some(end_start) = key.rfind("-----END") else { return key };
    if end_start < begin_end {
        return key;
    }
    let header = &key[key.find("-----BEGIN").unwrap_or(0)..begin_end];
    let footer = key[end_start..].trim();
    let body: String = key[begin_end..end_start].chars().filter(|c| !c.is_whitespace()).collect();
    let lines: Vec<String> = body.as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    format!("{header}\n{}\n{footer}\n", lines.join("\n"))
}

enum PemKind {
    Rsa,
    Ec,
    Ed,
}

enum JwtKey {
    Secret(String),
    Pem(PemKind, String),
}

/// A `jwtAuth` credential's key: its passphrase, or the PEM key in `pem_field`.
fn jwt_key(c: &Value, alg: jsonwebtoken::Algorithm, pem_field: &str) -> JwtKey {
    if c.get("keyType").and_then(Value::as_str).unwrap_or("passphrase") == "passphrase" {
        return JwtKey::Secret(c.get("secret").and_then(Value::as_str).unwrap_or_default().to_owned());
    }
    let kind = match alg {
        jsonwebtoken::Algorithm::ES256 | jsonwebtoken::Algorithm::ES384 => PemKind::Ec,
        jsonwebtoken::Algorithm::EdDSA => PemKind::Ed,
        _ => PemKind::Rsa,
    };
    JwtKey::Pem(kind, format_pem(c.get(pem_field).and_then(Value::as_str).unwrap_or_default()))
}

/// Verifies a token with a `jwtAuth` credential (passphrase or PEM public
/// key, the credential's algorithm); claims `exp`/`nbf` are checked when present.
pub fn verify_jwt(c: &Value, token: &str) -> std::result::Result<Value, String> {
    use jsonwebtoken::{decode, DecodingKey, Validation};
    let alg = jwt_algorithm(c)?;
    let key = match jwt_key(c, alg, "publicKey") {
        JwtKey::Secret(s) => DecodingKey::from_secret(s.as_bytes()),
        JwtKey::Pem(kind, pem) => match kind {
            PemKind::Ec => DecodingKey::from_ec_pem(pem.as_bytes()),
            PemKind::Ed => DecodingKey::from_ed_pem(pem.as_bytes()),
            PemKind::Rsa => DecodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .map_err(|e| format!("invalid public key: {e}"))?,
    };
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_aud = false;
    validation.validate_nbf = true;
    validation.leeway = 0;
    decode::<Value>(token, &key, &validation).map(|d| d.claims).map_err(|e| jwt_message(&e))
}

fn jwt_message(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => "jwt expired".into(),
        ErrorKind::ImmatureSignature => "jwt not active".into(),
        ErrorKind::InvalidSignature => "invalid signature".into(),
        ErrorKind::InvalidAlgorithm => "invalid algorithm".into(),
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => "jwt malformed".into(),
        other => format!("{other:?}"),
    }
}

/// Signs a payload with a `jwtAuth` credential (passphrase or PEM private key).
pub fn sign_jwt(c: &Value, payload: &Value) -> std::result::Result<String, String> {
    use jsonwebtoken::{encode, EncodingKey, Header};
    let alg = jwt_algorithm(c)?;
    let key = match jwt_key(c, alg, "privateKey") {
        JwtKey::Secret(s) => EncodingKey::from_secret(s.as_bytes()),
        JwtKey::Pem(kind, pem) => match kind {
            PemKind::Ec => EncodingKey::from_ec_pem(pem.as_bytes()),
            PemKind::Ed => EncodingKey::from_ed_pem(pem.as_bytes()),
            PemKind::Rsa => EncodingKey::from_rsa_pem(pem.as_bytes()),
        }
        .map_err(|e| format!("invalid private key: {e}"))?,
    };
    let mut payload = payload.clone();
    // jsonwebtoken wants an object; n8n's `jwt.sign` adds `iat`.
    if let Value::Object(o) = &mut payload {
        o.entry("iat").or_insert_with(|| json!(chrono::Utc::now().timestamp()));
    }
    encode(&Header::new(alg), &payload, &key).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/// When a webhook execution answers its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResponseMode {
    OnReceived,
    LastNode,
    ResponseNode,
    /// Webhook 2.1's streaming: not supported here (HTTP APIs buffer responses).
    Streaming,
}

/// What `lastNode` answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResponseData {
    FirstEntryJson,
    AllEntries,
    FirstEntryBinary,
    NoData,
}

/// A node's response settings (Webhook, Wait on webhook call, Form Trigger).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResponseSpec {
    pub mode: ResponseMode,
    pub code: u16,
    /// `lastNode`: which data.
    pub data: ResponseData,
    /// `onReceived`: the custom `responseData` text (`None`: n8n's default message).
    pub on_received_body: Option<String>,
    /// `onReceived` with "No Response Body".
    pub no_body: bool,
    pub property_name: Option<String>,
    pub content_type: Option<String>,
    pub binary_property: String,
    pub headers: Vec<(String, String)>,
}

fn str_param<'a>(node: &'a Node, name: &str) -> Option<&'a str> {
    node.parameters.get(name).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn num(v: Option<&Value>) -> Option<u16> {
    match v? {
        Value::Number(n) => n.as_f64().map(|f| f as u16),
        Value::String(s) => s.trim().parse::<f64>().ok().map(|f| f as u16),
        _ => None,
    }
}

/// Header entries of an `options.responseHeaders` collection.
pub fn header_entries(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(|h| h.get("entries"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let name = e.get("name").and_then(Value::as_str)?.trim().to_owned();
            if name.is_empty() {
                return None;
            }
            let value = match e.get("value") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            Some((name, value))
        })
        .collect()
}

impl ResponseSpec {
    /// The settings of a Webhook, Wait or Form Trigger node, with n8n's defaults.
    pub fn of(node: &Node) -> ResponseSpec {
        let p = &node.parameters;
        if node.node_type == crate::chat::CHAT_TRIGGER_TYPE {
            // n8n's chat webhook: `options.responseMode`, the first entry's json, 200
            let mode = match crate::chat::ChatSpec::of(node).map(|s| s.response_mode) {
                Ok(crate::chat::ChatResponseMode::Streaming) => ResponseMode::Streaming,
                Ok(crate::chat::ChatResponseMode::ResponseNode) => ResponseMode::ResponseNode,
                _ => ResponseMode::LastNode,
            };
            return ResponseSpec {
                mode,
                code: 200,
                data: ResponseData::FirstEntryJson,
                on_received_body: None,
                no_body: false,
                property_name: None,
                content_type: None,
                binary_property: "data".into(),
                headers: vec![],
            };
        }
        let mode = match str_param(node, "responseMode").unwrap_or("onReceived") {
            "lastNode" => ResponseMode::LastNode,
            "responseNode" => ResponseMode::ResponseNode,
            "streaming" => ResponseMode::Streaming,
            _ => ResponseMode::OnReceived,
        };
        // Webhook 1/1.1 and Wait: a top-level `responseCode`; Webhook 2+:
        // `options.responseCode.values` with an optional custom code.
        let code = num(p.get("responseCode"))
            .or_else(|| {
                // n8n's `getResponseCode`: a custom code, when set, wins.
                let values = option(node, "responseCode")?.get("values")?;
                num(values.get("customCode")).filter(|c| *c > 0).or_else(|| num(values.get("responseCode")))
            })
            .unwrap_or(200);
        let data = match str_param(node, "responseData").unwrap_or("firstEntryJson") {
            "allEntries" => ResponseData::AllEntries,
            "firstEntryBinary" => ResponseData::FirstEntryBinary,
            "noData" => ResponseData::NoData,
            _ => ResponseData::FirstEntryJson,
        };
        ResponseSpec {
            mode,
            code,
            data,
            on_received_body: option_str(node, "responseData").map(str::to_owned),
            no_body: option_bool(node, "noResponseBody"),
            property_name: option_str(node, "responsePropertyName").map(str::to_owned),
            content_type: option_str(node, "responseContentType").map(str::to_owned),
            binary_property: str_param(node, "responseBinaryPropertyName").unwrap_or("data").to_owned(),
            headers: header_entries(option(node, "responseHeaders")),
        }
    }
}

/// A response as the HTTP edge sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpResponse {
    pub status: u16,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: ResponseBody,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ResponseBody {
    Empty,
    Json { value: Value },
    Text { text: String },
    Binary { base64: String },
}

impl HttpResponse {
    pub fn json(status: u16, value: Value) -> Self {
        HttpResponse { status, headers: Vec::new(), body: ResponseBody::Json { value } }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn set_header(&mut self, name: &str, value: impl Into<String>) {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.into()));
    }

    /// The content type the body implies when no header sets one (what
    /// Express answers with: JSON, `text/html` for strings).
    pub fn content_type(&self) -> Option<String> {
        if let Some(ct) = self.header("content-type") {
            return Some(ct.to_owned());
        }
        match &self.body {
            ResponseBody::Empty => None,
            ResponseBody::Json { .. } => Some("application/json; charset=utf-8".into()),
            ResponseBody::Text { .. } => Some("text/html; charset=utf-8".into()),
            ResponseBody::Binary { .. } => Some("application/octet-stream".into()),
        }
    }

    pub fn body_bytes(&self) -> Vec<u8> {
        match &self.body {
            ResponseBody::Empty => Vec::new(),
            ResponseBody::Json { value } => serde_json::to_vec(value).unwrap_or_default(),
            ResponseBody::Text { text } => text.clone().into_bytes(),
            ResponseBody::Binary { base64 } => base64::engine::general_purpose::STANDARD.decode(base64).unwrap_or_default(),
        }
    }

    fn with_headers(mut self, headers: &[(String, String)]) -> Self {
        for (n, v) in headers {
            self.set_header(n, v.clone());
        }
        self
    }
}

/// A body value as n8n's responder sends it: objects and arrays as JSON,
/// strings as text, nothing as an empty body.
pub fn body_of(v: Value) -> ResponseBody {
    match v {
        Value::Null => ResponseBody::Empty,
        Value::String(text) => ResponseBody::Text { text },
        value => ResponseBody::Json { value },
    }
}

/// `onReceived`: answered as soon as the execution exists.
pub fn on_received_response(spec: &ResponseSpec) -> HttpResponse {
    let body = if spec.no_body || spec.on_received_body.as_deref() == Some("noData") {
        ResponseBody::Empty
    } else {
        match &spec.on_received_body {
            Some(text) => ResponseBody::Text { text: text.clone() },
            None => ResponseBody::Json { value: json!({"message": "Workflow was started"}) },
        }
    };
    HttpResponse { status: spec.code, headers: Vec::new(), body }.with_headers(&spec.headers)
}

/// What a failed webhook execution answers (the failing node is not named).
pub fn error_response() -> HttpResponse {
    HttpResponse::json(500, json!({"message": "Error in workflow"}))
}

/// `responseNode` when the execution ended without reaching a Respond to
/// Webhook node: the node's code and no body.
pub fn no_response_node_response(spec: &ResponseSpec) -> HttpResponse {
    HttpResponse { status: spec.code, headers: Vec::new(), body: ResponseBody::Empty }
}

fn get_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    crate::nodes::get_path(v, path)
}

/// `lastNode`: built from the last executed node's first output, once the
/// execution has ended.
pub fn last_node_response(spec: &ResponseSpec, state: &ExecutionState) -> HttpResponse {
    let failed = state.error.is_some()
        || state.status == crate::data::ExecutionStatus::Error
        || state.last_node_executed.as_ref().and_then(|n| state.run_data.get(n)).and_then(|r| r.last()).is_some_and(|t| t.error.is_some());
    if failed {
        return error_response();
    }
    let Some(task) = state.last_node_executed.as_ref().and_then(|n| state.run_data.get(n)).and_then(|r| r.last()) else {
        return HttpResponse::json(
            spec.code,
            json!({"message": "Workflow executed successfully but the last node did not return any data"}),
        )
        .with_headers(&spec.headers);
    };
    let items: Vec<Item> = task.output(0).map(|i| i.as_ref().clone()).unwrap_or_default();
    let not_found = |m: &str| HttpResponse::json(500, json!({"code": 0, "message": m}));
    let resp = match spec.data {
        ResponseData::NoData => HttpResponse { status: spec.code, headers: Vec::new(), body: ResponseBody::Empty },
        ResponseData::AllEntries => HttpResponse::json(
            spec.code,
            Value::Array(items.iter().map(|i| Value::clone(&i.json)).collect()),
        ),
        ResponseData::FirstEntryJson => {
            let Some(first) = items.first() else { return not_found("No item to return was found") };
            let mut body = Value::clone(&first.json);
            if let Some(p) = &spec.property_name {
                body = get_path(&body, p).cloned().unwrap_or(Value::Null);
            }
            let mut r = HttpResponse { status: spec.code, headers: Vec::new(), body: body_of(body) };
            if let (Some(ct), ResponseBody::Text { .. } | ResponseBody::Json { .. }) = (&spec.content_type, &r.body) {
                r.set_header("content-type", ct.clone());
            }
            r
        }
        ResponseData::FirstEntryBinary => {
            let Some(first) = items.first() else { return not_found("No item was found to return") };
            let Some(binary) = first.binary.as_ref() else { return not_found("No binary data was found to return") };
            let Some(entry) = binary.get(spec.binary_property.as_str()) else {
                return not_found(&format!(
                    "The binary property '{}' which should be returned does not exist",
                    spec.binary_property
                ));
            };
            let mut r = HttpResponse {
                status: spec.code,
                headers: Vec::new(),
                body: ResponseBody::Binary {
                    base64: entry.get("data").and_then(Value::as_str).unwrap_or_default().to_owned(),
                },
            };
            r = r.with_headers(&spec.headers);
            // The file's type wins over a header the node set.
            if let Some(m) = entry.get("mimeType").and_then(Value::as_str) {
                r.set_header("content-type", m);
            }
            return r;
        }
    };
    let ct = resp.header("content-type").map(str::to_owned);
    let mut resp = resp.with_headers(&spec.headers);
    if let Some(ct) = ct {
        resp.set_header("content-type", ct);
    }
    resp
}

// ---------------------------------------------------------------------------
// CORS, as n8n's webhook server answers it (`WebhookRequestHandler`,
// `CorsPolicy.applyCorsHeaders`, cors-utils' `determineAllowedOrigin`)
// ---------------------------------------------------------------------------

/// A webhook-like node's `options.allowedOrigins` (Webhook, Chat Trigger):
/// `*` or a comma-separated list; `None` when unset or empty. n8n reads the
/// raw parameter (no expression is resolved for it).
pub fn allowed_origins(node: &Node) -> Option<&str> {
    node.parameters.get("options")?.get("allowedOrigins")?.as_str().filter(|s| !s.trim().is_empty())
}

/// The `Access-Control-Allow-Origin` n8n sends for a request from `origin`
/// under a node's `allowed` origins: `*` echoes the origin (`*` for none or
/// `null`, a file:// page); a list echoes an origin on it and otherwise
/// names its first entry (the browser then refuses the answer); no policy
/// echoes the origin.
pub fn allow_origin(allowed: Option<&str>, origin: Option<&str>) -> String {
    let origin = origin.filter(|o| !o.is_empty());
    match allowed.map(str::trim) {
        Some("*") => origin.filter(|o| *o != "null").unwrap_or("*").to_owned(),
        Some(list) => {
            let entries: Vec<&str> = list.split(',').map(str::trim).collect();
            match origin.filter(|o| *o != "null" && entries.contains(o)) {
                Some(o) => o.to_owned(),
                None => entries.first().copied().unwrap_or("*").to_owned(),
            }
        }
        None => origin.unwrap_or("*").to_owned(),
    }
}

/// The CORS headers of an answer at a webhook path: set on a preflight
/// (`OPTIONS`) and on any request with an `Origin` header, none otherwise.
/// `methods` are those registered at the path (`OPTIONS` goes first);
/// `allowed` is the `allowedOrigins` of the node answering the method
/// asked for (a preflight's `Access-Control-Request-Method`).
pub fn cors_headers(method: &str, origin: Option<&str>, request_headers: Option<&str>, methods: &[&str], allowed: Option<&str>) -> Vec<(String, String)> {
    let preflight = method.eq_ignore_ascii_case("OPTIONS");
    if !preflight && origin.is_none() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if !methods.is_empty() {
        let list: Vec<&str> = std::iter::once("OPTIONS").chain(methods.iter().copied()).collect();
        out.push(("access-control-allow-methods".to_owned(), list.join(", ")));
    }
    out.push(("access-control-allow-origin".to_owned(), allow_origin(allowed, origin)));
    if preflight {
        out.push(("access-control-max-age".to_owned(), "300".to_owned()));
        if let Some(h) = request_headers.filter(|h| !h.is_empty()) {
            out.push(("access-control-allow-headers".to_owned(), h.to_owned()));
        }
    }
    out
}

/// `n8n-nodes-base.webhook` and friends: whether a node answers HTTP calls
/// (so an execution may owe its caller a response).
pub fn is_webhook_node(node_type: &str) -> bool {
    matches!(node_type, WEBHOOK_TYPE | FORM_TRIGGER_TYPE | WAIT_TYPE | crate::chat::CHAT_TRIGGER_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(v: Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn sizes_read_as_n8n_prints_them() {
        assert_eq!(human_size(12), "12 B");
        assert_eq!(human_size(1500), "1.5 kB");
        assert_eq!(human_size(2_000_000), "2 MB");
    }

    #[test]
    fn cidr_and_plain_entries_match() {
        assert!(ip_allowed("10.0.0.0/8, 192.168.1.5", "10.2.3.4"));
        assert!(ip_allowed("10.0.0.0/8, 192.168.1.5", "192.168.1.5"));
        assert!(!ip_allowed("10.0.0.0/8", "11.0.0.1"));
        assert!(ip_allowed("::1", "::1"));
    }

    #[test]
    fn response_codes_of_every_version() {
        let v1 = node(json!({"name": "W", "type": WEBHOOK_TYPE, "typeVersion": 1, "parameters": {"responseCode": 201}}));
        assert_eq!(ResponseSpec::of(&v1).code, 201);
        let v2 = node(json!({"name": "W", "type": WEBHOOK_TYPE, "typeVersion": 2, "parameters": {"options": {"responseCode": {"values": {"responseCode": "customCode", "customCode": 418}}}}}));
        assert_eq!(ResponseSpec::of(&v2).code, 418);
        let v2b = node(json!({"name": "W", "type": WEBHOOK_TYPE, "typeVersion": 2, "parameters": {"options": {"responseCode": {"values": {"responseCode": 204}}}}}));
        assert_eq!(ResponseSpec::of(&v2b).code, 204);
    }

    #[test]
    fn the_header_that_carried_the_credential_is_redacted() {
        let mut headers = json!({"authorization": "Bearer tok-1", "x-key": "k-2", "accept": "*/*"}).as_object().cloned().unwrap_or_default();
        let header_cred = json!({"name": "X-Key", "value": "k-2"});
        redact_credential(WebhookAuth::Header, Some(&header_cred), &mut headers);
        assert_eq!(headers["x-key"], "[redacted]");
        assert_eq!(headers["authorization"], "Bearer tok-1", "not the header this credential names");
        redact_credential(WebhookAuth::Bearer, None, &mut headers);
        assert_eq!(headers["authorization"], "Bearer [redacted]");
        headers.insert("authorization".into(), json!("Basic YTpi"));
        redact_credential(WebhookAuth::Basic, None, &mut headers);
        assert_eq!(headers["authorization"], "Basic [redacted]");
        redact_credential(WebhookAuth::None, None, &mut headers);
        assert_eq!(headers["accept"], "*/*");
    }

    #[test]
    fn cors_origins_as_n8n_determines_them() {
        let o = Some("https://a.example");
        assert_eq!(allow_origin(Some("*"), o), "https://a.example");
        assert_eq!(allow_origin(Some("*"), Some("null")), "*");
        assert_eq!(allow_origin(None, o), "https://a.example");
        assert_eq!(allow_origin(Some("https://b.example, https://a.example"), o), "https://a.example");
        assert_eq!(allow_origin(Some("https://b.example, https://c.example"), o), "https://b.example");
        let pre = cors_headers("OPTIONS", o, Some("content-type"), &["GET", "POST"], Some("*"));
        assert_eq!(
            pre,
            [
                ("access-control-allow-methods", "OPTIONS, GET, POST"),
                ("access-control-allow-origin", "https://a.example"),
                ("access-control-max-age", "300"),
                ("access-control-allow-headers", "content-type"),
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert!(cors_headers("POST", None, None, &["POST"], Some("*")).is_empty(), "no Origin, no CORS headers");
    }

    #[test]
    fn pem_on_one_line_is_repaired() {
        let one = "-----BEGIN PUBLIC KEY----- AAAA BBBB -----END PUBLIC KEY-----";
        assert_eq!(format_pem(one), "-----BEGIN PUBLIC KEY-----\nAAAABBBB\n-----END PUBLIC KEY-----\n");
    }
}
