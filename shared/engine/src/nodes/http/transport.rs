//! Sending requests: one client per execution on its own current-thread
//! runtime, the SSRF guard on every address connected to (and on every
//! redirect target), redirects followed here (so the method rules of n8n's
//! request library apply and credentials are not sent to another origin),
//! digest authentication, cancellation and the execution deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::error::{EngineError, Result};
use crate::run::Env;

pub use outbound::is_forbidden_ip;
use outbound::GuardedResolver;

/// A client plus the single-threaded runtime that drives it for this execution.
pub struct HttpClient {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    insecure: reqwest::Client,
    /// OAuth2 client-credentials access tokens of this execution, by credential reference.
    tokens: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

/// `scheme://host:port` of a URL, for messages: the path and query may carry
/// secrets (query-auth keys) that run data and tool output must not show.
pub(crate) fn origin(url: &url::Url) -> String {
    outbound::guard::origin(url)
}

/// The guard's check of the URL as written (the resolver checks addresses).
fn check_literal(url: &url::Url, allow_private: bool, allowed_hosts: &[String]) -> Result<()> {
    let policy = outbound::Policy { allow_private, allowed_hosts: allowed_hosts.to_vec() };
    policy.check(url).map_err(|r| match r {
        outbound::Refusal::Scheme(s) => EngineError::node(format!("Unsupported URL scheme '{s}'")),
        outbound::Refusal::Forbidden(o) => EngineError::Forbidden(o),
        outbound::Refusal::Unresolved(h) => EngineError::node(format!("The host {h} cannot be found")),
    })
}

impl HttpClient {
    pub fn new(env: &Env) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EngineError::Host(format!("cannot start HTTP runtime: {e}")))?;
        let build = |accept_invalid_certs: bool| {
            reqwest::Client::builder()
                // proxies resolve names themselves and would bypass the guard
                .no_proxy()
                // redirects are followed by `send`, which checks every target
                .redirect(reqwest::redirect::Policy::none())
                .danger_accept_invalid_certs(accept_invalid_certs)
                .dns_resolver(Arc::new(GuardedResolver { inner: env.host.resolver.clone(), allow_private: env.settings.allow_private_network }))
                .build()
                .map_err(|e| EngineError::Host(format!("cannot build HTTP client: {e}")))
        };
        Ok(HttpClient { rt, client: build(false)?, insecure: build(true)?, tokens: Default::default() })
    }
}

/// Which redirects a request follows (n8n's request options).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Redirects {
    /// `followRedirect`: 3xx answers to GET and HEAD.
    pub get: bool,
    /// `followAllRedirects`: 3xx answers to any method.
    pub all: bool,
    pub max: usize,
}

impl Redirects {
    pub const NONE: Redirects = Redirects { get: false, all: false, max: 0 };
}

/// One prepared request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: reqwest::Method,
    pub url: url::Url,
    /// In order; names as given (n8n lowercases some of them itself).
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Duration,
    pub redirects: Redirects,
    /// `allowUnauthorizedCerts`.
    pub insecure: bool,
    /// Digest credentials: answered to a `WWW-Authenticate: Digest` challenge.
    pub digest: Option<(String, String)>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Sets a header, replacing any of the same name (case-insensitive).
    pub fn set_header(&mut self, name: &str, value: &str) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_string(), value.to_string()));
    }
}

/// A response: status, headers (lower-case names; repeated ones as arrays),
/// the raw body and the URL it finally came from.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub status: u16,
    pub status_text: String,
    pub headers: Map<String, Value>,
    pub body: Vec<u8>,
    pub url: url::Url,
}

impl Response {
    pub fn content_type(&self) -> String {
        self.headers.get("content-type").map(crate::nodes::js_string).unwrap_or_default()
    }
}

/// Why a request got no response (n8n's connection error texts).
fn transport_error(e: &reqwest::Error, url: &url::Url, timeout: Duration) -> EngineError {
    let e2 = e;
    let mut chain = e2.to_string();
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e2);
    while let Some(s) = src {
        chain = format!("{chain}: {s}");
        src = s.source();
    }
    let detail = format!("{} for {}", chain.replace(url.as_str(), &origin(url)), origin(url));
    if chain.contains(outbound::guard::RESOLVE_REFUSAL) {
        return EngineError::Forbidden(origin(url));
    }
    let lower = chain.to_lowercase();
    let message = if e.is_timeout() {
        format!("The connection timed out after {} ms, consider setting the 'Retry on Fail' option in the node settings", timeout.as_millis())
    } else if lower.contains("connection refused") {
        "The service refused the connection - perhaps it is offline".to_string()
    } else if lower.contains("dns") || lower.contains("no addresses") || lower.contains("failed to lookup") || lower.contains("name or service not known") {
        "The connection cannot be established, this usually occurs due to an incorrect host (domain) value".to_string()
    } else if lower.contains("connection reset") || lower.contains("connection closed") {
        "The connection to the server was closed unexpectedly, perhaps it is offline. You can retry the request immediately or wait and retry later.".to_string()
    } else if lower.contains("certificate") || lower.contains("tls") {
        "SSL certificate problem - the server's certificate could not be verified (set 'Ignore SSL Issues' to accept it)".to_string()
    } else {
        return EngineError::node(detail);
    };
    EngineError::node_with(message, detail)
}

/// Sends `req` once (no redirects), within the deadline and cancellable.
fn send_once(env: &Env, client: &HttpClient, req: &Request, extra_headers: &[(String, String)]) -> Result<Response> {
    check_literal(&req.url, env.settings.allow_private_network, &env.settings.allowed_hosts)?;
    let mut timeout = req.timeout;
    if let Some(d) = env.deadline {
        timeout = timeout.min(d.saturating_duration_since(Instant::now()));
    }
    let http = if req.insecure { &client.insecure } else { &client.client };
    let mut rb = http.request(req.method.clone(), req.url.clone()).timeout(timeout);
    for (k, v) in req.headers.iter().chain(extra_headers) {
        rb = rb.header(k.as_str(), v.as_str());
    }
    if let Some(b) = &req.body {
        rb = rb.body(b.clone());
    }
    let cancel = env.cancel.clone();
    let url = req.url.clone();
    client.rt.block_on(async move {
        let fut = async {
            let resp = rb.send().await?;
            let status = resp.status();
            let mut headers = Map::new();
            for (k, v) in resp.headers() {
                let v = Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned());
                match headers.get_mut(k.as_str()) {
                    Some(Value::Array(a)) => a.push(v),
                    Some(prev) => *prev = Value::Array(vec![prev.take(), v]),
                    None => {
                        // n8n (node's http) always gives set-cookie as a list
                        let v = if k.as_str() == "set-cookie" { Value::Array(vec![v]) } else { v };
                        headers.insert(k.as_str().to_string(), v);
                    }
                }
            }
            let final_url = resp.url().clone();
            let body = resp.bytes().await?.to_vec();
            Ok::<_, reqwest::Error>(Response {
                status: status.as_u16(),
                status_text: status.canonical_reason().unwrap_or("").to_string(),
                headers,
                body,
                url: final_url,
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
            r = fut => r.map_err(|e| transport_error(&e, &url, timeout)),
            _ = watch => Err(EngineError::Canceled),
        }
    })
}

fn client(env: &Env) -> Result<&HttpClient> {
    if env.http.get().is_none() {
        let c = HttpClient::new(env)?;
        let _ = env.http.set(c);
    }
    env.http.get().ok_or_else(|| EngineError::Host("HTTP client unavailable".into()))
}

/// This execution's guarded client (the SSRF guard's resolver, no
/// proxies, no redirects), for clients that speak a service's protocol
/// themselves (the chat model providers). Use it only inside [`block_on`].
pub(crate) fn guarded_client(env: &Env) -> Result<reqwest::Client> {
    Ok(client(env)?.client.clone())
}

/// Runs `fut` on this execution's runtime, where [`guarded_client`]'s
/// connections live.
pub(crate) fn block_on<F: std::future::Future>(env: &Env, fut: F) -> Result<F::Output> {
    Ok(client(env)?.rt.block_on(fut))
}

/// A service's base URL as a request will use it: the origin override
/// applied, then the guard's check of the URL as written (IP literals,
/// schemes); names are checked by the resolver when connecting.
pub(crate) fn service_url(env: &Env, raw: &str) -> Result<url::Url> {
    let mut url = url::Url::parse(raw.trim()).map_err(|e| EngineError::node(format!("Invalid URL '{raw}': {e}")))?;
    if let Some(to) = env.settings.origin_overrides.get(&origin(&url)) {
        let rest = &url.as_str()[origin(&url).len()..];
        url = url::Url::parse(&format!("{}{rest}", to.trim_end_matches('/'))).map_err(|e| EngineError::Host(format!("origin override {to:?}: {e}")))?;
    }
    check_literal(&url, env.settings.allow_private_network, &env.settings.allowed_hosts)?;
    Ok(url)
}

/// This execution's token for `key`, fetched once.
pub(crate) fn cached_token(env: &Env, key: &str, fetch: impl FnOnce() -> Result<String>) -> Result<String> {
    let c = client(env)?;
    if let Some(t) = c.tokens.lock().ok().and_then(|t| t.get(key).cloned()) {
        return Ok(t);
    }
    let token = fetch()?;
    if let Ok(mut tokens) = c.tokens.lock() {
        tokens.insert(key.to_owned(), token.clone());
    }
    Ok(token)
}

/// Headers that carry credentials: not sent on to another origin after a redirect.
const CREDENTIAL_HEADERS: [&str; 4] = ["authorization", "cookie", "proxy-authorization", "x-api-key"];

/// Sends `req`, answering a digest challenge and following redirects as
/// `req.redirects` allows (303, and 301/302 for POST, turn into GET without a
/// body, as in node's request library).
pub(crate) fn send(env: &Env, req: &Request) -> Result<Response> {
    let client = client(env)?;
    let mut req = req.clone();
    if let Some(to) = env.settings.origin_overrides.get(&origin(&req.url)) {
        let rest = &req.url.as_str()[origin(&req.url).len()..];
        req.url = url::Url::parse(&format!("{}{rest}", to.trim_end_matches('/'))).map_err(|e| EngineError::Host(format!("origin override {to:?}: {e}")))?;
    }
    let start_origin = req.url.origin();
    let mut hops = 0usize;
    loop {
        let mut resp = send_once(env, client, &req, &[])?;
        if resp.status == 401 {
            if let Some((user, pass)) = req.digest.clone() {
                let challenge = resp.headers.get("www-authenticate").map(crate::nodes::js_string).unwrap_or_default();
                if let Some(auth) = digest_answer(&challenge, &user, &pass, req.method.as_str(), &req.url) {
                    resp = send_once(env, client, &req, &[("authorization".into(), auth)])?;
                }
            }
        }
        let redirect = (300..400).contains(&resp.status) && resp.status != 304;
        let may_follow = if matches!(req.method, reqwest::Method::GET | reqwest::Method::HEAD) { req.redirects.get || req.redirects.all } else { req.redirects.all };
        let location = resp.headers.get("location").map(crate::nodes::js_string);
        let (true, true, Some(location)) = (redirect, may_follow, location) else { return Ok(resp) };
        if hops >= req.redirects.max {
            return Err(EngineError::node_with("Maximum number of redirects exceeded", format!("more than {} redirects from {}", req.redirects.max, origin(&req.url))));
        }
        hops += 1;
        let next = req.url.join(&location).map_err(|e| EngineError::node(format!("Invalid redirect location '{location}': {e}")))?;
        let to_get = resp.status == 303 && req.method != reqwest::Method::HEAD
            || (matches!(resp.status, 301 | 302) && req.method == reqwest::Method::POST);
        if to_get {
            req.method = reqwest::Method::GET;
            req.body = None;
            req.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type") && !k.eq_ignore_ascii_case("content-length"));
        }
        if next.origin() != start_origin {
            req.headers.retain(|(k, _)| !CREDENTIAL_HEADERS.iter().any(|c| k.eq_ignore_ascii_case(c)));
            req.digest = None;
        }
        req.url = next;
    }
}

/// The `Authorization` value answering an RFC 7616 digest challenge (MD5, qop=auth).
fn digest_answer(challenge: &str, user: &str, pass: &str, method: &str, url: &url::Url) -> Option<String> {
    use md5::{Digest, Md5};
    let rest = challenge.trim().strip_prefix("Digest").or_else(|| challenge.trim().strip_prefix("digest"))?;
    let mut params = std::collections::HashMap::new();
    let re = regex::Regex::new(r#"(\w+)\s*=\s*(?:"([^"]*)"|([^,\s]*))"#).ok()?;
    for c in re.captures_iter(rest) {
        let v = c.get(2).or_else(|| c.get(3)).map(|m| m.as_str()).unwrap_or("");
        params.insert(c[1].to_ascii_lowercase(), v.to_string());
    }
    let realm = params.get("realm").cloned().unwrap_or_default();
    let nonce = params.get("nonce")?.clone();
    let hex = |s: String| hex::encode(Md5::digest(s.as_bytes()));
    let uri = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let ha1 = hex(format!("{user}:{realm}:{pass}"));
    let ha2 = hex(format!("{method}:{uri}"));
    let qop_auth = params.get("qop").is_some_and(|q| q.split(',').any(|x| x.trim() == "auth"));
    let cnonce = hex(uuid::Uuid::new_v4().to_string())[..16].to_string();
    let (response, qop_part) = if qop_auth {
        (hex(format!("{ha1}:{nonce}:00000001:{cnonce}:auth:{ha2}")), format!(", qop=auth, nc=00000001, cnonce=\"{cnonce}\""))
    } else {
        (hex(format!("{ha1}:{nonce}:{ha2}")), String::new())
    };
    let opaque = params.get("opaque").map(|o| format!(", opaque=\"{o}\"")).unwrap_or_default();
    Some(format!("Digest username=\"{user}\", realm=\"{realm}\", nonce=\"{nonce}\", uri=\"{uri}\", response=\"{response}\"{qop_part}{opaque}"))
}
