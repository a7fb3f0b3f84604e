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
//! The credential's `authenticate` goes on last; the request goes through the
//! HTTP Request node's transport (SSRF guard, redirects); a 429 is retried
//! after its `Retry-After`, bounded. Expressions in routing see `$value` (the
//! property's value), `$parameter` (resolved), `$credentials` and, after the answer,
//! `$response` / `$responseItem`.

pub mod display;
mod routing;

use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::catalog::{describe_exact, NodeDescription};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};
use crate::nodes::http::{self, Redirects, Request, Response};
use crate::nodes::{js_string, NodeContext, NodeOutput};

pub use routing::resolve_bound;
use routing::{Bindings, RequestSpec};

/// Retries of a request answered 429 (n8n's Discord node uses the same bounds).
const MAX_RATE_LIMIT_RETRIES: usize = 3;
/// The longest `Retry-After` honoured; a longer one is cut to this.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// The wait when a 429 carries no usable `Retry-After`.
const FALLBACK_RETRY_WAIT: Duration = Duration::from_secs(1);
/// Pages one item may fetch (a `continue` that never turns false stops here).
const MAX_PAGES: usize = 1000;

/// Whether `node_type` is a declarative service node of the catalog.
pub fn is_declarative(node_type: &str) -> bool {
    describe_exact(node_type).is_some_and(NodeDescription::is_declarative)
}

/// How one item's request failed: the error, and the answer when there was one
/// (under "continue on fail" the item's error is the one HTTP Request gives).
struct Failed(EngineError, Option<Response>);

impl From<EngineError> for Failed {
    fn from(e: EngineError) -> Self {
        Failed(e, None)
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let desc = describe_exact(&ctx.node.node_type).filter(|d| d.is_declarative()).ok_or_else(|| EngineError::node(format!("{} is not a declarative node", ctx.node.node_type)))?;
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        if ctx.env.cancel.is_canceled() {
            return Err(EngineError::Canceled);
        }
        match run_item(ctx, desc, item, i, &mut out) {
            Ok(()) => {}
            Err(Failed(EngineError::Canceled, _)) => return Err(EngineError::Canceled),
            Err(Failed(e, resp)) if ctx.continue_on_fail() => out.push(item_from(json!({ "error": http::error_json(&e, resp.as_ref()) }), i)),
            Err(Failed(e, _)) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// The credential the node's parameters select (a shown entry of the
/// description's `credentials`, the one the node references first) and its data.
fn credential(ctx: &NodeContext<'_>, desc: &NodeDescription, values: &Map<String, Value>) -> Result<Option<(String, Value)>> {
    let version = ctx.version();
    let shown: Vec<&str> = desc
        .credentials
        .iter()
        .filter(|c| display::shown(c.get("displayOptions"), values, version))
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    let referenced = |t: &&&str| ctx.node.credentials.as_ref().is_some_and(|c| c.get(**t).is_some());
    let Some(chosen) = shown.iter().find(referenced).or(shown.first()) else { return Ok(None) };
    Ok(Some((chosen.to_string(), ctx.credential(chosen)?)))
}

fn run_item(ctx: &mut NodeContext<'_>, desc: &'static NodeDescription, item: &Item, i: usize, out: &mut Vec<Item>) -> std::result::Result<(), Failed> {
    let version = ctx.version();
    let params = ctx.resolve(&ctx.node.parameters.clone(), i)?;
    let values = display::with_defaults(&desc.properties, &params, version);
    let cred = credential(ctx, desc, &values)?;
    let credentials = cred.as_ref().map(|(_, d)| d.clone());
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
    if let Some((t, data)) = &cred {
        spec.authenticate(t, data)?;
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
        if let (true, Some(routing::Pagination::Offset { limit_parameter, offset_parameter, page_size, in_body })) = (paginate, spec.pagination.clone()) {
            spec.set_param(in_body, &limit_parameter, json!(page_size));
            spec.set_param(in_body, &offset_parameter, json!(offset));
        }
        let req = spec.build(ctx.env.settings.http_timeout)?;
        let resp = send_retrying(ctx, &req)?;
        let response = response_value(&resp);
        if resp.status >= 400 && !spec.ignore_http_status_errors {
            return Err(Failed(http::api_error(&resp), Some(resp)));
        }
        let page_bind = Bindings { response: Some(&response), ..bind };
        // a refused answer (an `errorWhen`) is the service's error, not a failed status
        let page = spec.post_receive(ctx, &resp, &response, i, &page_bind)?;
        let page_len = page.len();
        results.extend(page);
        pages += 1;
        if !paginate || max_results.is_some_and(|m| results.len() >= m) || pages >= MAX_PAGES {
            break;
        }
        match spec.pagination.clone() {
            Some(routing::Pagination::Generic { continue_when, request }) => {
                if !crate::nodes::conditions::truthy(&resolve_bound(ctx, &continue_when, i, &page_bind)?) {
                    break;
                }
                spec.apply_request(ctx, &request, i, &page_bind)?;
            }
            Some(routing::Pagination::Offset { page_size, .. }) => {
                if (page_len as u64) < page_size {
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
        let method = reqwest::Method::from_bytes(self.method.to_uppercase().as_bytes()).map_err(|_| EngineError::node(format!("Invalid method '{}'", self.method)))?;
        let mut headers: Vec<(String, String)> = self.headers.iter().map(|(k, v)| (k.clone(), js_string(v))).collect();
        let body = if let Some((bytes, content_type)) = &self.multipart {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
            headers.push(("content-type".into(), content_type.clone()));
            Some(bytes.clone())
        } else if self.body.is_empty() {
            None
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
