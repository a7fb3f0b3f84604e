//! Declarative service nodes: a node description whose properties say how to
//! build each request (n8n's `requestDefaults` and per-property `routing`), run
//! by this one runtime. A service is data (`catalog/nodes/<service>.json`);
//! nothing here knows any service.
//!
//! Per input item: the parameters are resolved and the shown properties'
//! defaults filled in ([`display`]); every shown property (and the chosen
//! option of an `options` property, and the set entries of a collection)
//! contributes its routing — `request` (method, url, qs, body, headers),
//! `send` (the value into query, body or a header, `preSend` steps),
//! `output` (`postReceive` steps, `maxResults`) and `operations.pagination`.
//! An operation that takes several requests lists the ones after the first
//! under `then` (our extension). The credential's `authenticate` goes on
//! last (a connected OAuth2 credential's token, refreshed on expiry or a 401
//! once per request, and a service account's exchanged token at send time:
//! [`crate::oauth2`]); the request goes through the HTTP Request node's
//! transport (SSRF guard, redirects); a 429 is retried after its
//! `Retry-After`, bounded. What routing cannot say, an operation names as
//! `run` code ([`call`]). Expressions in routing see `$value` (the
//! property's value), `$parameter` (resolved), `$credentials` and, after the answer,
//! `$response` / `$responseItem` (and `$responses`, every answer of the item's
//! requests in order). A body goes out as JSON, or as a form when the
//! request's content type is `application/x-www-form-urlencoded`.

mod call;
pub mod display;
mod routing;

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::catalog::{describe_exact, NodeDescription};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};
use crate::nodes::http::{self, Redirects, Request, Response};
use crate::nodes::{js_string, NodeContext, NodeOutput};

pub(crate) use call::{Call, Run, ServiceRequest};
pub use routing::resolve_bound;
use routing::{Bindings, RequestSpec};

/// Retries of a request answered 429 (n8n's Discord node uses the same bounds).
const MAX_RATE_LIMIT_RETRIES: usize = 3;
/// The longest `Retry-After` honoured; a longer one is cut to this.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// The wait when a 429 carries no usable `Retry-After`.
const FALLBACK_RETRY_WAIT: Duration = Duration::from_secs(1);
/// Pages one item may fetch (a `continue` that never turns false fails here).
const MAX_PAGES: usize = 1000;

/// Whether `node_type` is a declarative service node of the catalog.
pub fn is_declarative(node_type: &str) -> bool {
    describe_exact(node_type).is_some_and(NodeDescription::is_declarative)
}

/// How one item's request failed: the error, and the answer when there was one
/// (under "continue on fail" the item's error is the one HTTP Request gives).
struct Failed(EngineError, Option<Box<Response>>);

impl From<EngineError> for Failed {
    fn from(e: EngineError) -> Self {
        Failed(e, None)
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let desc = describe_exact(&ctx.node.node_type).filter(|d| d.is_declarative()).ok_or_else(|| EngineError::node(format!("{} is not a declarative node", ctx.node.node_type)))?;
    let input = ctx.input(0);
    // An operation routing cannot say runs as code, over the whole input.
    if !input.is_empty() {
        let params = ctx.resolve(&ctx.node.parameters.clone(), 0)?;
        let values = display::with_defaults(&desc.properties, &params, ctx.version());
        if let Some(name) = code_of(desc, &values, ctx.version()) {
            let run = crate::nodes::service_code(&name).ok_or_else(|| EngineError::node(format!("{} has no code named {name}", desc.display_name)))?;
            let mut call = Call::new(ctx, desc, &values)?;
            return Ok(NodeOutput::one(run(&mut call)?));
        }
    }
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        if ctx.env.cancel.is_canceled() {
            return Err(EngineError::Canceled);
        }
        match run_item(ctx, desc, item, i, &mut out) {
            Ok(()) => {}
            Err(Failed(EngineError::Canceled, _)) => return Err(EngineError::Canceled),
            Err(Failed(e, resp)) if ctx.continue_on_fail() => out.push(item_from(json!({ "error": http::error_json(&e, resp.as_deref()) }), i)),
            Err(Failed(e, _)) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// The `run` (code) a shown property or its chosen option names.
fn code_of(desc: &NodeDescription, values: &Map<String, Value>, version: f64) -> Option<String> {
    display::shown_properties(&desc.properties, values, version).into_iter().find_map(|p| {
        let value = values.get(&p.name);
        let option = p.options.iter().flatten().find(|o| p.prop_type == "options" && o.get("value") == value);
        p.routing.as_ref().or_else(|| option.and_then(|o| o.get("routing"))).and_then(|r| r.get("run")).and_then(Value::as_str).map(str::to_owned)
    })
}

/// The credential a request goes out with: its data, and how its token is
/// got at send time (a connected OAuth2 credential's, refreshed when
/// needed; a service account's JWT exchange for the node's scopes).
pub(crate) struct Credential {
    pub cred_type: String,
    pub data: Value,
    conn: Option<crate::oauth2::Connection>,
    jwt: Option<(String, Vec<String>)>,
}

/// The credential the node's parameters select (a shown entry of the
/// description's `credentials`, the one the node references first) and its data.
fn credential(ctx: &NodeContext<'_>, desc: &NodeDescription, values: &Map<String, Value>) -> Result<Option<Credential>> {
    let version = ctx.version();
    let shown: Vec<&Value> = desc.credentials.iter().filter(|c| display::shown(c.get("displayOptions"), values, version)).collect();
    let name = |c: &&Value| c.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
    let referenced = |c: &&&Value| ctx.node.credentials.as_ref().is_some_and(|r| r.get(name(c)).is_some());
    let Some(entry) = shown.iter().find(referenced).or(shown.first()) else { return Ok(None) };
    let cred_type = name(entry);
    let data = ctx.credential(&cred_type)?;
    let reference = ctx.node.credentials.as_ref().and_then(|c| c.get(&cred_type)).cloned().unwrap_or(Value::Null);
    let jwt = match crate::catalog::credential_types::credential_type(&cred_type).and_then(|t| t.authenticate.as_ref()) {
        Some(crate::catalog::credential_types::Authenticate::JwtBearer { token_url, .. }) => {
            // the node's scopes (its description's credential entry)
            let scopes = entry.get("scopes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
            Some((token_url.clone(), scopes))
        }
        _ => None,
    };
    let conn = crate::oauth2::Connection::of(&cred_type, &reference, &data);
    Ok(Some(Credential { cred_type, data, conn, jwt }))
}

/// Sends `req` with the credential's token (when it has one), 429s retried.
fn send(ctx: &NodeContext<'_>, cred: Option<&mut Credential>, req: &mut Request) -> Result<Response> {
    let mut plain = |r: &Request| send_retrying(ctx, r);
    let Some(cred) = cred else { return plain(req) };
    if let Some((token_url, scopes)) = &cred.jwt {
        let token = crate::oauth2::jwt_bearer_token(ctx.env, token_url, &cred.data, scopes)?;
        req.set_header("Authorization", &format!("Bearer {token}"));
    }
    crate::oauth2::send_authorized(ctx.env, cred.conn.as_mut(), req, &mut plain)
}

fn run_item(ctx: &mut NodeContext<'_>, desc: &'static NodeDescription, item: &Item, i: usize, out: &mut Vec<Item>) -> std::result::Result<(), Failed> {
    let version = ctx.version();
    let params = ctx.resolve(&ctx.node.parameters.clone(), i)?;
    let mut values = display::with_defaults(&desc.properties, &params, version);
    display::with_nested_defaults(&desc.properties, &mut values, version);
    // a resource or operation the description lacks would send the bare request defaults
    for p in display::shown_properties(&desc.properties, &values, version).into_iter().filter(|p| matches!(p.name.as_str(), "resource" | "operation") && p.prop_type == "options") {
        let (Some(value), Some(options)) = (values.get(&p.name), p.options.as_ref()) else { continue };
        if !options.iter().any(|o| o.get("value") == Some(value)) {
            let known: Vec<String> = options.iter().filter_map(|o| o.get("value")).map(js_string).collect();
            return Err(Failed(EngineError::node_with(format!("The {} '{}' is not supported yet", p.display_name.to_lowercase(), js_string(value)), format!("{} here supports: {}", desc.display_name, known.join(", "))), None));
        }
    }
    let mut cred = credential(ctx, desc, &values)?;
    let credentials = cred.as_ref().map(|c| c.data.clone());
    // `$parameter`: locators keep their mode but carry the extracted value (a URL mode's id)
    let mut parameters = values.clone();
    for p in display::shown_properties(&desc.properties, &values, version).into_iter().filter(|p| p.prop_type == "resourceLocator") {
        if let Some(v) = parameters.get_mut(&p.name).filter(|v| v.get("__rl").is_some()) {
            v["value"] = routing::locator_value(p.modes.as_ref(), v);
        }
    }
    let parameters = Value::Object(parameters);
    let bind = Bindings { credentials: credentials.as_ref(), parameters: Some(&parameters), ..Bindings::default() };

    let mut spec = RequestSpec::default();
    if let Some(defaults) = &desc.request_defaults {
        spec.apply_request(ctx, defaults, i, &bind)?;
    }
    if let Some(r) = &desc.routing_defaults {
        spec.apply_routing(ctx, r, &Value::Null, i, &bind)?;
    }
    for p in display::shown_properties(&desc.properties, &values, version) {
        let value = values.get(&p.name).cloned().unwrap_or(Value::Null);
        spec.apply_property(ctx, p, &value, &values, i, &bind)?;
    }
    if let Some(c) = &cred {
        spec.authenticate(&c.cred_type, &c.data)?;
    }
    spec.pre_send(item, i)?;

    let max_results = match spec.max_results.clone() {
        Some(m) => Some(resolve_bound(ctx, &m, i, &bind)?).and_then(|v| v.as_f64().or_else(|| js_string(&v).parse().ok())).map(|n| n.max(0.0) as usize),
        None => None,
    };
    let paginate = spec.paginate;
    let mut results: Vec<Item> = vec![];
    let mut pages = 0usize;
    let mut offset = 0u64;
    loop {
        if let (true, Some(routing::Pagination::Offset { limit_parameter, offset_parameter, page_size, in_body, .. })) = (paginate, spec.pagination.clone()) {
            spec.set_param(in_body, &limit_parameter, json!(page_size));
            spec.set_param(in_body, &offset_parameter, json!(offset));
        }
        let mut req = spec.build(ctx.env.settings.http_timeout)?;
        let mut resp = send(ctx, cred.as_mut(), &mut req)?;
        let mut response = response_value(&resp);
        if resp.status >= 400 && !spec.ignore_http_status_errors {
            return Err(Failed(http::api_error(&resp), Some(Box::new(resp))));
        }
        // the follow-up requests of an operation that takes several (not with paging)
        let mut answers = vec![response.clone()];
        if !spec.then.is_empty() && !paginate {
            (resp, response) = follow_ups(ctx, desc, &spec, cred.as_mut(), item, i, &bind, resp, &mut answers)?;
        }
        let answers = Value::Array(answers);
        let page_bind = Bindings { response: Some(&response), responses: Some(&answers), ..bind };
        // a refused answer (an `errorWhen`) is the service's error, not a failed status
        let page = spec.post_receive(ctx, &resp, &response, i, &page_bind)?;
        // entries the service returned (before filters), for the offset paging's full-page test
        let returned = match &spec.pagination {
            Some(routing::Pagination::Offset { root_property: Some(root), .. }) => crate::nodes::get_path(&response["body"], root),
            _ => Some(&response["body"]),
        }
        .and_then(Value::as_array)
        .map_or(page.len(), Vec::len);
        results.extend(page);
        pages += 1;
        if !paginate || max_results.is_some_and(|m| results.len() >= m) {
            break;
        }
        if pages >= MAX_PAGES {
            // stopping quietly would hand on a part as if it were everything
            return Err(Failed(EngineError::node_with(format!("The service still had more pages after {MAX_PAGES} requests"), "Turn off Return All and set a limit, or narrow the request with filters."), None));
        }
        match spec.pagination.clone() {
            Some(routing::Pagination::Generic { continue_when, request }) => {
                if !crate::nodes::conditions::truthy(&resolve_bound(ctx, &continue_when, i, &page_bind)?) {
                    break;
                }
                spec.apply_request(ctx, &request, i, &page_bind)?;
            }
            Some(routing::Pagination::Offset { page_size, .. }) => {
                if (returned as u64) < page_size {
                    break;
                }
                offset += page_size;
            }
            None => break,
        }
    }
    if let Some(m) = max_results {
        results.truncate(m);
    }
    for r in results {
        out.push(Item { paired_item: Some(crate::data::paired_ref(i, 0)), ..r });
    }
    Ok(())
}

/// Runs an operation's follow-up requests (our `then` extension: n8n's
/// programmatic nodes make several requests where its declarative format
/// has one), each built like the first (request defaults, the step's
/// `request` and `preSend`, the credential unless `authenticate` is false)
/// with `$response` the answer before it and `$responses` every answer so
/// far. An answer the node's checks refuse (`errorWhen`) stops the chain.
/// Returns the last answer.
#[allow(clippy::too_many_arguments)]
fn follow_ups(
    ctx: &mut NodeContext<'_>,
    desc: &NodeDescription,
    spec: &RequestSpec,
    mut cred: Option<&mut Credential>,
    item: &Item,
    i: usize,
    bind: &Bindings<'_>,
    mut resp: Response,
    answers: &mut Vec<Value>,
) -> std::result::Result<(Response, Value), Failed> {
    for step in &spec.then {
        let previous = Value::Array(answers.clone());
        let last = answers.last().cloned().unwrap_or(Value::Null);
        let b = Bindings { response: Some(&last), responses: Some(&previous), ..*bind };
        // the answer so far must pass the node's checks before the next request
        spec.refusal(ctx, &resp, &last, i, &b)?;
        if let Some(enabled) = step.get("enabled") {
            if !crate::nodes::conditions::truthy(&resolve_bound(ctx, enabled, i, &b)?) {
                continue;
            }
        }
        let mut next = RequestSpec::default();
        if let Some(defaults) = &desc.request_defaults {
            next.apply_request(ctx, defaults, i, &b)?;
        }
        next.apply_routing(ctx, step, &Value::Null, i, &b)?;
        let authenticate = step.get("authenticate") != Some(&Value::Bool(false));
        if let Some(c) = cred.as_deref().filter(|_| authenticate) {
            next.authenticate(&c.cred_type, &c.data)?;
        }
        next.pre_send(item, i)?;
        let mut req = next.build(ctx.env.settings.http_timeout)?;
        resp = send(ctx, if authenticate { cred.as_deref_mut() } else { None }, &mut req)?;
        if resp.status >= 400 {
            return Err(Failed(http::api_error(&resp), Some(Box::new(resp))));
        }
        answers.push(response_value(&resp));
    }
    let last = answers.last().cloned().unwrap_or(Value::Null);
    Ok((resp, last))
}

/// `$response`: the answer as the routing expressions see it.
fn response_value(resp: &Response) -> Value {
    let text = http::body_text(resp);
    let body = if text.trim().is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
    json!({ "body": body, "headers": Value::Object(resp.headers.clone()), "statusCode": resp.status, "statusMessage": resp.status_text })
}

/// Sends `req`; a 429 is retried after its `Retry-After` (seconds or an HTTP
/// date, at most [`MAX_RETRY_WAIT`]) up to [`MAX_RATE_LIMIT_RETRIES`] times.
fn send_retrying(ctx: &NodeContext<'_>, req: &Request) -> Result<Response> {
    let mut attempt = 0;
    loop {
        let resp = http::send(ctx.env, req)?;
        if resp.status != 429 || attempt >= MAX_RATE_LIMIT_RETRIES {
            return Ok(resp);
        }
        attempt += 1;
        let wait = resp.headers.get("retry-after").map(js_string).and_then(|v| retry_after(&v, chrono::Utc::now())).unwrap_or(FALLBACK_RETRY_WAIT).min(MAX_RETRY_WAIT);
        if crate::run::sleep_cancellable(wait, ctx.env) {
            return Err(EngineError::Canceled);
        }
    }
}

/// RFC 9110 `Retry-After`: delay seconds or an HTTP date.
fn retry_after(v: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(MAX_RETRY_WAIT.as_secs_f64())));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    Some((at.with_timezone(&chrono::Utc) - now).to_std().unwrap_or_default())
}

impl RequestSpec {
    fn build(&self, timeout: Duration) -> Result<Request> {
        let full = if self.url.starts_with("http://") || self.url.starts_with("https://") || self.base_url.is_empty() {
            self.url.clone()
        } else {
            format!("{}{}", self.base_url.trim_end_matches('/'), self.url)
        };
        let mut url = url::Url::parse(&full).map_err(|e| EngineError::node_with(format!("Invalid URL: {}", redact(&full)), e.to_string()))?;
        http::append_query(&mut url, &self.qs, http::ArrayFormat::Indices);
        // n8n's default method is GET
        let method = if self.method.is_empty() { "GET".to_owned() } else { self.method.to_uppercase() };
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| EngineError::node(format!("Invalid method '{}'", self.method)))?;
        let mut headers: Vec<(String, String)> = self.headers.iter().map(|(k, v)| (k.clone(), js_string(v))).collect();
        let body = if let Some((bytes, content_type)) = &self.multipart {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
            headers.push(("content-type".into(), content_type.clone()));
            Some(bytes.clone())
        } else if let Some(raw) = &self.raw_body {
            if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
                headers.push(("content-type".into(), "application/json".into()));
            }
            Some(serde_json::to_vec(raw)?)
        } else if self.body.is_empty() {
            None
        } else if headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with("application/x-www-form-urlencoded")) {
            // a form body: nested values in qs' bracket notation (`metadata[key]=v`, `a[0]=x`)
            Some(http::form_body(&self.body))
        } else {
            if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
                headers.push(("content-type".into(), "application/json".into()));
            }
            Some(serde_json::to_vec(&self.body)?)
        };
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
            headers.push(("accept".into(), "application/json".into()));
        }
        Ok(Request { method, url, headers, body, timeout, redirects: Redirects { get: true, all: false, max: 21 }, insecure: false, digest: None })
    }
}

/// A URL for a message: scheme and host only (a path or query may hold a token).
fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if scheme.is_empty() { host.to_owned() } else { format!("{scheme}://{host}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A local server: `/items?skip=&take=` pages over six records, `/file` a PDF.
    /// Each request's path and query, and its `X-Token` header.
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

    fn server(seen: Seen) -> String {
        use axum::http::{HeaderMap, Uri};
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
                    let seen = seen.clone();
                    async move {
                        let token = headers.get("x-token").and_then(|v| v.to_str().ok()).map(str::to_owned);
                        assert_eq!(headers.get("x-fixed").and_then(|v| v.to_str().ok()), Some("1"), "request defaults' header");
                        seen.lock().unwrap().push((uri.to_string(), token));
                        let q: std::collections::HashMap<String, String> = url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).into_owned().collect();
                        let n = |k: &str| q.get(k).and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
                        if uri.path() == "/file" {
                            return axum::response::Response::builder()
                                .header("content-type", "application/pdf")
                                .header("content-disposition", "attachment; filename=\"r.pdf\"")
                                .body(axum::body::Body::from("PDFDATA"))
                                .unwrap();
                        }
                        let all = [(1, "d", true), (2, "c", true), (3, "x", false), (4, "a", true), (5, "b", true), (6, "e", true)];
                        let data: Vec<Value> = all.iter().skip(n("skip")).take(q.get("take").map_or(100, |_| n("take"))).map(|(id, name, keep)| json!({"id": id, "name": name, "keep": keep})).collect();
                        axum::response::Response::builder().header("content-type", "application/json").body(axum::body::Body::from(json!({"data": data}).to_string())).unwrap()
                    }
                });
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(l.local_addr().unwrap()).unwrap();
                axum::serve(l, app).await.unwrap();
            });
        });
        format!("http://{}", rx.recv().unwrap())
    }

    /// Runs one item through `desc` as node parameters `params` would.
    fn run(desc: &'static NodeDescription, params: Value) -> Vec<Item> {
        let wf = json!({"nodes": [{"name": "N", "type": desc.name, "typeVersion": 1, "parameters": params}], "connections": {}});
        let graph = crate::Graph::from_json(&wf).unwrap();
        let node = &graph.workflow.nodes[0];
        let env = crate::run::Env {
            settings: crate::EngineSettings { allow_private_network: true, ..Default::default() },
            host: crate::Host::default(),
            cancel: Default::default(),
            deadline: None,
            http: Default::default(),
            sql: Default::default(),
            stream: None,
        };
        let (run_data, contexts) = (Default::default(), Default::default());
        let mut expr = crate::expr::Expr::new(Default::default(), "UTC".into());
        let (mut state, mut statics, mut custom) = (json!({}), json!({}), Default::default());
        let input = vec![item_from(json!({}), 0)];
        let mut ctx = NodeContext {
            graph: &graph,
            node,
            run_data: &run_data,
            inputs: vec![Some(Arc::new(input.clone()))],
            source: &[],
            run_index: 0,
            expr: &mut expr,
            env: &env,
            execution_id: "t",
            node_state: &mut state,
            node_contexts: &contexts,
            custom_data: &mut custom,
            static_data: &mut statics,
            resumed: false,
            console: vec![],
            error_items: vec![],
            webhook_response: None,
            metadata: None,
            from_ai: None,
            sub_runs: Default::default(),
        };
        let mut out = vec![];
        if let Err(Failed(e, _)) = run_item(&mut ctx, desc, &input[0], 0, &mut out) {
            panic!("{e}");
        }
        out
    }

    #[test]
    fn offset_pages_filter_set_key_value_sort_limit_headers_and_binary() {
        let seen: Seen = Arc::default();
        let base = server(seen.clone());
        let desc: NodeDescription = serde_json::from_value(json!({
            "name": "test.declarative", "displayName": "T", "description": "", "group": ["transform"], "version": 1, "defaults": {},
            "inputs": ["main"], "outputs": ["main"],
            "requestDefaults": {"baseURL": base, "headers": {"X-Fixed": "1"}},
            "properties": [
                {"displayName": "Mode", "name": "mode", "type": "options", "default": "list", "options": [
                    {"name": "List", "value": "list", "routing": {
                        "request": {"url": "/items"},
                        "operations": {"pagination": {"type": "offset", "properties": {"limitParameter": "take", "offsetParameter": "skip", "pageSize": 4, "type": "query", "rootProperty": "data"}}},
                        "output": {"postReceive": [
                            {"type": "rootProperty", "properties": {"property": "data"}},
                            {"type": "filter", "properties": {"pass": "={{ $responseItem.keep }}"}},
                            {"type": "setKeyValue", "properties": {"id": "={{ $responseItem.id }}", "label": "={{ $responseItem.name.toUpperCase() }}"}}]}}},
                    {"name": "File", "value": "file", "routing": {"request": {"url": "/file"}, "output": {"postReceive": [{"type": "binaryData", "properties": {"destinationProperty": "doc"}}]}}}]},
                {"displayName": "All", "name": "all", "type": "boolean", "default": true, "routing": {"send": {"paginate": "={{ $value }}"}}},
                {"displayName": "Token", "name": "token", "type": "string", "default": "abc", "displayOptions": {"hide": {"mode": ["file"]}}, "routing": {"send": {"type": "header", "property": "X-Token"}}},
                {"displayName": "Order", "name": "order", "type": "string", "default": "label", "displayOptions": {"show": {"mode": ["list"]}},
                 "routing": {"output": {"postReceive": [{"type": "sort", "properties": {"key": "={{ $value }}"}}, {"type": "limit", "properties": {"maxResults": 3}}]}}}
            ]
        }))
        .unwrap();
        let desc: &'static NodeDescription = Box::leak(Box::new(desc));
        // Per page: keep → {id, label} → sorted by label → at most 3; pages of 4 until a short one.
        let ids: Vec<Value> = run(desc, json!({})).iter().map(|i| i.json["id"].clone()).collect();
        assert_eq!(ids, [4, 2, 1, 5, 6].map(Value::from).to_vec());
        let requests = std::mem::take(&mut *seen.lock().unwrap());
        assert_eq!(requests, vec![("/items?take=4&skip=0".to_owned(), Some("abc".to_owned())), ("/items?take=4&skip=4".to_owned(), Some("abc".to_owned()))]);
        // Without Return All one request without paging parameters; the hidden Token is not sent for files.
        let ids: Vec<Value> = run(desc, json!({"all": false})).iter().map(|i| i.json["id"].clone()).collect();
        assert_eq!(ids, [4, 5, 2].map(Value::from).to_vec());
        assert_eq!(seen.lock().unwrap()[0].0, "/items");
        seen.lock().unwrap().clear();
        let file = run(desc, json!({"mode": "file"}));
        let doc = &file[0].binary.as_ref().unwrap()["doc"];
        assert_eq!((doc["fileName"].as_str(), doc["mimeType"].as_str()), (Some("r.pdf"), Some("application/pdf")));
        assert_eq!(crate::binary::bytes_of(doc).unwrap(), b"PDFDATA");
        assert_eq!(seen.lock().unwrap()[0], ("/file".to_owned(), None));
    }

    #[test]
    fn bound_values_cannot_close_the_expression() {
        assert_eq!(routing::js_literal(&json!({"a": {"b": "}}{{"}})), "{ \"a\":{ \"b\":\"\\u007d\\u007d\\u007b\\u007b\"} } ");
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_is_bounded() {
        let now = chrono::DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap().with_timezone(&chrono::Utc);
        assert_eq!(retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(retry_after("0.5", now), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("9999", now), Some(MAX_RETRY_WAIT));
        assert_eq!(retry_after("Wed, 01 Jan 2025 00:00:03 GMT", now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-1", now), None);
    }
}
