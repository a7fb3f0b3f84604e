//! Code for what routing cannot say: an operation whose routing names a
//! `run` (`{"routing": {"run": "googleSheets.append"}}`) is executed by
//! that function of the host program ([`crate::nodes::service_code`]) over
//! the node's whole input. It still gets everything else from the
//! description — parameters with their defaults, the credential the
//! parameters select, the request defaults — and makes its requests here,
//! as routing makes them: the credential applied (a connected OAuth2
//! token refreshed when needed), 429s retried, the SSRF guard, origin
//! overrides.

use serde_json::{Map, Value};

use super::{display, routing, Credential};
use crate::catalog::NodeDescription;
use crate::data::{Item, Items};
use crate::error::{EngineError, Result};
use crate::nodes::http::{self, Response};
use crate::nodes::{js_string, NodeContext};

/// A service's code for one operation: the node's output items.
pub(crate) type Run = fn(&mut Call<'_, '_>) -> Result<Vec<Item>>;

/// A request body.
pub(crate) enum Body {
    None,
    Json(Value),
    /// Bytes with their content type (an upload, a multipart message).
    Raw(Vec<u8>, String),
}

/// One request of a service's code. `path` is under the request defaults'
/// `baseURL` unless it is a whole URL.
pub(crate) struct ServiceRequest {
    pub method: reqwest::Method,
    pub path: String,
    pub qs: Map<String, Value>,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl ServiceRequest {
    pub fn new(method: reqwest::Method, path: impl Into<String>) -> Self {
        ServiceRequest { method, path: path.into(), qs: Map::new(), headers: vec![], body: Body::None }
    }
    pub fn query(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.qs.insert(k.to_owned(), v.into());
        self
    }
    pub fn json(mut self, body: Value) -> Self {
        self.body = Body::Json(body);
        self
    }
    pub fn raw(mut self, bytes: Vec<u8>, content_type: impl Into<String>) -> Self {
        self.body = Body::Raw(bytes, content_type.into());
        self
    }
}

/// What a service's code works with.
pub(crate) struct Call<'a, 'n> {
    pub ctx: &'a mut NodeContext<'n>,
    desc: &'static NodeDescription,
    cred: Option<Credential>,
    base_url: String,
    headers: Map<String, Value>,
    /// Turns a failed status into the service's error (its error body read
    /// as the service documents it).
    pub(crate) api_error: fn(&Response) -> EngineError,
    /// Requests made so far (the figures a test or a bench reads).
    pub requests: usize,
}

impl<'a, 'n> Call<'a, 'n> {
    pub(super) fn new(ctx: &'a mut NodeContext<'n>, desc: &'static NodeDescription, values: &Map<String, Value>) -> Result<Self> {
        let cred = super::credential(ctx, desc, values)?;
        let parameters = Value::Object(values.clone());
        let bind = routing::Bindings { credentials: cred.as_ref().map(|c| &c.data), parameters: Some(&parameters), ..Default::default() };
        let mut spec = routing::RequestSpec::default();
        if let Some(defaults) = &desc.request_defaults {
            spec.apply_request(ctx, defaults, 0, &bind)?;
        }
        Ok(Call { ctx, desc, cred, base_url: spec.base_url, headers: spec.headers, api_error: http::api_error, requests: 0 })
    }

    pub fn items(&self) -> Items {
        self.ctx.input(0)
    }

    pub fn version(&self) -> f64 {
        self.ctx.version()
    }

    /// Item `i`'s parameters: resolved, the shown properties' defaults filled
    /// in; a resource locator keeps its `mode` and carries its extracted `value`.
    pub fn params(&mut self, i: usize) -> Result<Map<String, Value>> {
        let version = self.ctx.version();
        let resolved = self.ctx.resolve(&self.ctx.node.parameters.clone(), i)?;
        let mut values = display::with_defaults(&self.desc.properties, &resolved, version);
        for p in display::shown_properties(&self.desc.properties, &values.clone(), version).into_iter().filter(|p| p.prop_type == "resourceLocator") {
            if let Some(v) = values.get_mut(&p.name).filter(|v| v.get("__rl").is_some()) {
                v["value"] = routing::locator_value(p.modes.as_ref(), v);
            }
        }
        Ok(values)
    }

    pub fn continue_on_fail(&self) -> bool {
        self.ctx.continue_on_fail()
    }

    /// Sends `r`; a status of 400 or more is the service's error.
    pub(crate) fn send(&mut self, r: ServiceRequest) -> Result<Response> {
        let resp = self.send_any(r)?;
        if resp.status >= 400 {
            return Err((self.api_error)(&resp));
        }
        Ok(resp)
    }

    /// Sends `r` and reads its JSON answer (`null` for an empty one).
    pub(crate) fn json(&mut self, r: ServiceRequest) -> Result<Value> {
        let resp = self.send(r)?;
        let text = http::body_text(&resp);
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&text).map_err(|_| EngineError::node("The service answered with something other than JSON"))
    }

    /// Sends `r` whatever its answer's status.
    pub(crate) fn send_any(&mut self, r: ServiceRequest) -> Result<Response> {
        let full = if r.path.starts_with("http://") || r.path.starts_with("https://") { r.path.clone() } else { format!("{}{}", self.base_url.trim_end_matches('/'), r.path) };
        let mut url = url::Url::parse(&full).map_err(|_| EngineError::node("Invalid URL"))?;
        http::append_query(&mut url, &r.qs, http::ArrayFormat::Repeat);
        let mut headers: Vec<(String, String)> = self.headers.iter().map(|(k, v)| (k.clone(), js_string(v))).collect();
        for (k, v) in r.headers {
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(&k));
            headers.push((k, v));
        }
        let body = match r.body {
            Body::None => None,
            Body::Json(v) => {
                headers.push(("content-type".into(), "application/json".into()));
                Some(serde_json::to_vec(&v)?)
            }
            Body::Raw(bytes, ct) => {
                headers.push(("content-type".into(), ct));
                Some(bytes)
            }
        };
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
            headers.push(("accept".into(), "application/json".into()));
        }
        let mut req = http::Request {
            method: r.method,
            url,
            headers,
            body,
            timeout: self.ctx.env.settings.http_timeout,
            redirects: http::Redirects { get: true, all: false, max: 21 },
            insecure: false,
            digest: None,
        };
        self.requests += 1;
        super::send(self.ctx, self.cred.as_mut(), &mut req)
    }
}
