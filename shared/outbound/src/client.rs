//! The guarded async client of the agent's tools: every URL checked by the
//! [`Policy`], every connected address by the [`GuardedResolver`], redirects
//! followed here (each target checked again, the caller's headers kept only
//! on the first origin), the body capped while it streams in, one deadline
//! over the whole exchange, and the caller's abort signal obeyed mid-flight.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::guard::{origin, GuardedResolver, Policy, Refusal, Resolver, RESOLVE_REFUSAL};

/// One GET.
#[derive(Debug, Clone)]
pub struct Request {
    pub url: url::Url,
    /// Sent to the URL's origin only (dropped when a redirect leaves it:
    /// they may carry an API key).
    pub headers: Vec<(String, String)>,
    /// Deadline of the whole exchange, redirects included.
    pub timeout: Duration,
    /// The body is cut here ([`Response::truncated`]).
    pub max_bytes: usize,
    pub max_redirects: usize,
}

impl Request {
    pub fn get(url: url::Url) -> Request {
        Request { url, headers: Vec::new(), timeout: Duration::from_secs(15), max_bytes: 5 * 1024 * 1024, max_redirects: 5 }
    }

    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Where the body came from, after redirects.
    pub final_url: url::Url,
    /// The `content-type` header, lower-cased.
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// The body was longer than [`Request::max_bytes`].
    pub truncated: bool,
    /// HTTP requests made (1 + redirects followed).
    pub requests: u32,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("invalid URL: {0}")]
    InvalidUrl(String),
    #[error("{0}")]
    Refused(Refusal),
    #[error("no answer from {origin} within {} ms", .timeout.as_millis())]
    Timeout { origin: String, timeout: Duration },
    #[error("the request was cancelled")]
    Cancelled,
    #[error("more than {max} redirects from {origin}")]
    TooManyRedirects { origin: String, max: usize },
    #[error("cannot reach {origin}: {detail}")]
    Connect { origin: String, detail: String },
}

/// Built once per process; cheap to clone.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    policy: Policy,
}

impl Client {
    pub fn new(policy: Policy, resolver: Arc<dyn Resolver>) -> Result<Client, FetchError> {
        let http = reqwest::Client::builder()
            // proxies resolve names themselves and would bypass the guard
            .no_proxy()
            // redirects are followed by `get`, which checks every target
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver { inner: resolver, allow_private: policy.allow_private }))
            .user_agent(concat!("instance-ai/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Connect { origin: String::new(), detail: e.to_string() })?;
        Ok(Client { http, policy })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// GETs `req.url`, following redirects, until `abort` fires or the deadline passes.
    pub async fn get(&self, req: Request, abort: &CancellationToken) -> Result<Response, FetchError> {
        let deadline = Instant::now() + req.timeout;
        let start = origin(&req.url);
        tokio::select! {
            r = tokio::time::timeout_at(deadline.into(), self.follow(&req)) => {
                r.unwrap_or(Err(FetchError::Timeout { origin: start, timeout: req.timeout }))
            }
            _ = abort.cancelled() => Err(FetchError::Cancelled),
        }
    }

    async fn follow(&self, req: &Request) -> Result<Response, FetchError> {
        let first = req.url.origin();
        let mut url = req.url.clone();
        let mut requests = 0u32;
        loop {
            self.policy.check(&url).map_err(FetchError::Refused)?;
            let mut rb = self.http.get(url.clone());
            if url.origin() == first {
                for (k, v) in &req.headers {
                    rb = rb.header(k.as_str(), v.as_str());
                }
            }
            requests += 1;
            let resp = rb.send().await.map_err(|e| connect_error(&e, &url))?;
            let status = resp.status().as_u16();
            if (300..400).contains(&status) && status != 304 {
                if let Some(location) = resp.headers().get(reqwest::header::LOCATION).and_then(|l| l.to_str().ok()) {
                    if requests as usize > req.max_redirects {
                        return Err(FetchError::TooManyRedirects { origin: origin(&req.url), max: req.max_redirects });
                    }
                    url = url.join(location).map_err(|e| FetchError::InvalidUrl(format!("redirect to '{location}': {e}")))?;
                    continue;
                }
            }
            let content_type = resp.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase);
            let mut body = Vec::new();
            let mut truncated = false;
            let mut stream = resp.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| connect_error(&e, &url))?;
                let room = req.max_bytes.saturating_sub(body.len());
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(Response { status, final_url: url, content_type, body, truncated, requests });
        }
    }
}

fn connect_error(e: &reqwest::Error, url: &url::Url) -> FetchError {
    let mut chain = e.to_string();
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = src {
        chain = format!("{chain}: {s}");
        src = s.source();
    }
    if chain.contains(RESOLVE_REFUSAL) {
        return FetchError::Refused(Refusal::Forbidden(origin(url)));
    }
    // the path and query may carry secrets: messages name the origin only
    FetchError::Connect { origin: origin(url), detail: chain.replace(url.as_str(), &origin(url)) }
}

/// One exchange whose answer is read as it arrives (a POST with a JSON
/// body, a long-lived event stream). Redirects are not followed: a 3xx is
/// the answer (an API that redirects a POST is misconfigured, and the
/// target would need the guard's check anyway).
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: reqwest::Method,
    pub url: url::Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// Deadline for the answer's status and headers (the body is read by
    /// the caller, under its own deadline).
    pub timeout: Duration,
}

/// An answer whose body is still arriving.
#[derive(Debug)]
pub struct Streaming {
    pub status: u16,
    pub url: url::Url,
    pub headers: reqwest::header::HeaderMap,
    inner: reqwest::Response,
}

impl Streaming {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The next piece of the body (`None` at its end).
    pub async fn chunk(&mut self) -> Result<Option<bytes::Bytes>, FetchError> {
        self.inner.chunk().await.map_err(|e| connect_error(&e, &self.url))
    }
}

impl Client {
    /// Sends `req` (the guard checks its URL, the resolver every address)
    /// and hands back the answer once its headers arrived.
    pub async fn open(&self, req: Exchange, abort: &CancellationToken) -> Result<Streaming, FetchError> {
        self.policy.check(&req.url).map_err(FetchError::Refused)?;
        let mut rb = self.http.request(req.method.clone(), req.url.clone());
        for (k, v) in &req.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if let Some(body) = req.body {
            rb = rb.body(body);
        }
        let url = req.url.clone();
        tokio::select! {
            r = tokio::time::timeout(req.timeout, rb.send()) => match r {
                Ok(Ok(resp)) => Ok(Streaming { status: resp.status().as_u16(), url, headers: resp.headers().clone(), inner: resp }),
                Ok(Err(e)) => Err(connect_error(&e, &url)),
                Err(_) => Err(FetchError::Timeout { origin: origin(&url), timeout: req.timeout }),
            },
            _ = abort.cancelled() => Err(FetchError::Cancelled),
        }
    }
}
