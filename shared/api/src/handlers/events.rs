//! `GET /instance-ai/events/{threadId}`: the SSE event stream.
//!
//! Bearer auth and an owner check (a stranger's thread is 404), then a
//! streamed body: a `retry:` hint, the replay of `seq > cursor` read from
//! the log (cursor from `Last-Event-ID`, else `?lastEventId=`, else 0), then
//! live frames pushed through a WebSocket subscription ([`crate::live_feed`]):
//! the function subscribes at the cursor its replay reached, so the
//! gateway's replaying → live hand-off and the publishers' posts give it
//! every later event once, in order, with no polling. Durable ids are still
//! checked here: an id already sent is dropped, and a gap (a post that
//! failed) is filled from the log before the frame that revealed it; each
//! keep-alive also reads the log once past the cursor, for a lost last post.
//! Only durable frames carry `id:`; `: live` marks the moment the
//! subscription is live (ephemeral frames published before it are not seen,
//! nor those of a publisher whose cached subscriber list predates it,
//! `store::publisher::EPHEMERAL_SUBSCRIBERS_MAX_AGE`; a text segment still
//! open when it joins comes whole in its first delta to this connection,
//! `store::event_writer`). The stream ends cleanly before the
//! Lambda deadline, or when the live feed closes (the client reconnects with
//! `Last-Event-ID`), and stops as soon as the client disconnects (the body
//! is dropped, the channel closes, the WebSocket is closed). Answers carry
//! CORS for the web page's origin ([`crate::cors`]): in AWS this is a
//! Function URL on another origin than the page.

use crate::sse::SseBody;
use crate::{ApiError, App};
use bytes::Bytes;
use lambda_http::{Request, RequestExt, Response};
use protocol::events::sse_frame;
use protocol::ids::ThreadId;
use crate::live_feed::{Incoming, LiveFeed};
use protocol::Event;
use std::collections::HashSet;
use std::time::Duration;
use store::deployment::{FunctionId, TableId};
use store::{EventLog, Threads};
use tokio::sync::mpsc::Sender;
use tokio::time::Instant;

/// Knobs of one stream; [`SseOptions::default`] fits the `events` Lambda.
#[derive(Debug, Clone)]
pub struct SseOptions {
    /// End the stream this long after it started (before the function's limit).
    pub max_duration: Duration,
    /// Comment line after this much silence, so proxies keep the connection;
    /// each one also reads the log once past the cursor (a publisher's post
    /// that failed is caught up within this).
    pub keep_alive: Duration,
    /// The `retry:` hint (ms) the client waits before reconnecting.
    pub retry_ms: u64,
}

impl Default for SseOptions {
    fn default() -> Self {
        // Leave 30 s of the function's timeout for the goodbye and slack.
        let limit = u64::from(FunctionId::Events.def().timeout_secs);
        SseOptions {
            max_duration: Duration::from_secs(limit.saturating_sub(30).max(10)),
            keep_alive: Duration::from_secs(15),
            retry_ms: 1000,
        }
    }
}

/// Durable events per log query.
const PAGE: u32 = 200;

pub async fn handle(app: &App, req: Request) -> Response<SseBody> {
    // the function's URL also carries the streaming webhook URLs
    if req.uri().path().starts_with("/stream/") {
        return super::stream::handle(app, req).await;
    }
    handle_with(app, req, SseOptions::default()).await
}

pub async fn handle_with(app: &App, req: Request, options: SseOptions) -> Response<SseBody> {
    let origins = &app.config.web_origins;
    if req.method() == http::Method::OPTIONS {
        let resp: Response<Bytes> = crate::cors::preflight(origins, req.headers(), "GET, OPTIONS");
        return resp.map(SseBody::full);
    }
    let mut resp = match start(app, &req, options).await {
        Ok(resp) => resp,
        Err(e) => {
            let resp = e.into_response();
            let (parts, body) = resp.into_parts();
            Response::from_parts(parts, SseBody::full(body_bytes(body)))
        }
    };
    crate::cors::decorate(&mut resp, origins, req.headers());
    resp
}

fn body_bytes(body: lambda_http::Body) -> Bytes {
    match body {
        lambda_http::Body::Text(t) => Bytes::from(t),
        lambda_http::Body::Binary(b) => Bytes::from(b),
        _ => Bytes::new(),
    }
}

async fn start(app: &App, req: &Request, options: SseOptions) -> Result<Response<SseBody>, ApiError> {
    if req.method() != http::Method::GET {
        return Err(ApiError::MethodNotAllowed("use GET".into()));
    }
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let raw = path_thread(req).ok_or_else(|| ApiError::NotFound("thread not found".into()))?;
    if !protocol::ids::is_valid_path_id(&raw) {
        return Err(ApiError::NotFound("thread not found".into()));
    }
    let thread = ThreadId(raw);
    let cursor = cursor(req)?;
    let internal = |e: store::config::ConfigError| ApiError::Internal(e.to_string());
    let threads = Threads::new(app.clients.dynamo.clone(), app.config.table(TableId::Agent).map_err(internal)?);
    threads.check_owner(&thread, &user).await?;
    let log = EventLog::from_config(app.clients.dynamo.clone(), &app.config).map_err(|e| ApiError::Internal(e.to_string()))?;
    let feed_url = app.config.ws_api_url.clone().ok_or_else(|| ApiError::Internal("WS_API_URL is not configured".into()))?;
    // The live feed subscribes as the caller, with the key they presented.
    let key = crate::auth::bearer_token(req.headers()).unwrap_or_default().to_owned();

    let (tx, body) = SseBody::channel();
    tokio::spawn(stream(Source { log, feed_url, key }, thread, cursor, options, tx));
    Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, "text/event-stream; charset=UTF-8")
        .header(http::header::CACHE_CONTROL, "no-cache, no-transform")
        .header(http::header::CONNECTION, "keep-alive")
        .header("X-Accel-Buffering", "no")
        .body(body)
        .map_err(|e| ApiError::Internal(e.to_string()))
}

/// `{threadId}` from the route, or the last path segment when the caller
/// did not fill in path parameters.
fn path_thread(req: &Request) -> Option<String> {
    crate::http_util::path_param(req, "threadId").or_else(|| {
        let path = req.uri().path().trim_end_matches('/');
        path.strip_prefix("/instance-ai/events/").filter(|s| !s.contains('/')).map(str::to_owned)
    })
}

/// The replay cursor: `Last-Event-ID` wins over `?lastEventId=`; neither is 0.
fn cursor(req: &Request) -> Result<u64, ApiError> {
    if let Some(h) = req.headers().get("last-event-id") {
        let s = h.to_str().map_err(|_| ApiError::BadRequest("Last-Event-ID is not text".into()))?;
        return protocol::events::parse_cursor(s).map_err(ApiError::BadRequest);
    }
    let from_ext = req.query_string_parameters_ref().and_then(|q| q.first("lastEventId").map(str::to_owned));
    let from_uri = || {
        req.uri().query().and_then(|q| {
            q.split('&').find_map(|kv| kv.strip_prefix("lastEventId=").map(str::to_owned))
        })
    };
    match from_ext.or_else(from_uri) {
        Some(v) => protocol::events::parse_cursor(&v).map_err(ApiError::BadRequest),
        None => Ok(0),
    }
}

/// The text segment a delta or block belongs to: (agent, responseId, reasoning?).
type Segment = (String, Option<String>, bool);

fn segment(e: &Event) -> Option<Segment> {
    use protocol::EventType as T;
    let reasoning = match e.event_type() {
        T::TextDelta | T::TextBlock => false,
        T::ReasoningDelta | T::ReasoningBlock => true,
        _ => return None,
    };
    Some((e.agent_id.0.clone(), e.response_id.clone(), reasoning))
}

/// What the stream has sent: durable ids up to `cursor`, each once and in
/// order, and the segments whose block went out (a late delta of one of them
/// would be appended after the block's replace and show its text twice).
#[derive(Debug, Default)]
struct Relay {
    cursor: u64,
    closed: HashSet<Segment>,
}

/// What to do with a durable frame that arrived.
#[derive(Debug, PartialEq)]
enum Durable {
    /// The next id: send this SSE frame.
    Send(String),
    /// Sent already (a replay overlap): drop it.
    Duplicate,
    /// Ids between the cursor and this one are missing: read them first.
    Gap,
}

impl Relay {
    fn new(cursor: u64) -> Relay {
        Relay { cursor, closed: HashSet::new() }
    }

    fn durable(&mut self, seq: u64, event: &Event) -> Durable {
        if seq <= self.cursor {
            return Durable::Duplicate;
        }
        if seq > self.cursor + 1 {
            return Durable::Gap;
        }
        if let Some(key) = segment(event) {
            self.closed.insert(key);
        }
        self.cursor = seq;
        Durable::Send(sse_frame(Some(seq), event))
    }

    /// The SSE frame of an ephemeral event, unless its segment was closed.
    fn ephemeral(&mut self, event: &Event) -> Option<String> {
        if segment(event).is_some_and(|key| self.closed.contains(&key)) {
            return None;
        }
        Some(sse_frame(None, event))
    }
}

/// Where a stream reads from: the log, and the WebSocket API as the caller.
struct Source {
    log: EventLog,
    feed_url: String,
    key: String,
}

/// One stream's output side.
struct Out {
    tx: Sender<Bytes>,
    relay: Relay,
    last_sent: Instant,
}

/// Why a stream stopped sending.
enum Stop {
    /// The client went away: nothing more to say.
    Gone,
    /// Tell the client to come back with its cursor (the reason is a comment).
    Reconnect(String),
}

impl Out {
    async fn send(&mut self, chunk: String) -> Result<(), Stop> {
        self.last_sent = Instant::now();
        self.tx.send(Bytes::from(chunk)).await.map_err(|_| Stop::Gone)
    }

    /// Sends what the log holds after the cursor: the replay, a gap's fill,
    /// the keep-alive's check for a lost post.
    async fn catch_up(&mut self, log: &EventLog, thread: &ThreadId) -> Result<(), Stop> {
        loop {
            let page = log.read_after(thread, self.relay.cursor, PAGE).await.map_err(|e| {
                tracing::warn!(thread = %thread, error = %e, "sse: log read failed");
                Stop::Reconnect("store unavailable, reconnect".into())
            })?;
            let short = page.len() < PAGE as usize;
            for stored in page {
                if let Durable::Send(frame) = self.relay.durable(stored.seq, &stored.event) {
                    self.send(frame).await?;
                }
            }
            if short {
                return Ok(());
            }
        }
    }

    async fn incoming(&mut self, log: &EventLog, thread: &ThreadId, incoming: Incoming) -> Result<(), Stop> {
        match incoming {
            Incoming::Durable(seq, event) => match self.relay.durable(seq, &event) {
                Durable::Send(frame) => self.send(frame).await,
                Durable::Duplicate => Ok(()),
                Durable::Gap => {
                    tracing::info!(thread = %thread, cursor = self.relay.cursor, seq, "sse: gap in the live feed; reading the log");
                    // The log holds every id up to `seq` (it was appended
                    // before it was posted), this one included.
                    self.catch_up(log, thread).await
                }
            },
            Incoming::Ephemeral(event) => match self.relay.ephemeral(&event) {
                Some(frame) => self.send(frame).await,
                None => Ok(()),
            },
            // A comment EventSource ignores; it tells a watcher (a test, a
            // person with curl) that frames published from now on arrive.
            Incoming::Subscribed { .. } => self.send(": live\n\n".to_owned()).await,
            Incoming::Refused(why) => {
                tracing::warn!(thread = %thread, why = %why, "sse: live feed refused the subscription");
                Err(Stop::Reconnect("live feed refused, reconnect".into()))
            }
        }
    }
}

async fn stream(source: Source, thread: ThreadId, cursor: u64, o: SseOptions, tx: Sender<Bytes>) {
    let mut out = Out { tx, relay: Relay::new(cursor), last_sent: Instant::now() };
    tracing::info!(thread = %thread, cursor, "sse stream started");
    let retry = format!("retry: {}\n\n", o.retry_ms);
    let stop = match run(&source, &thread, &o, &mut out, retry.clone()).await {
        Err(stop) => stop,
        Ok(never) => match never {},
    };
    match stop {
        Stop::Gone => tracing::info!(thread = %thread, "sse client gone"),
        Stop::Reconnect(why) => {
            // Ask the client to come back at once with its Last-Event-ID.
            let _ = out.send(format!(": {why}\n{retry}")).await;
            tracing::info!(thread = %thread, cursor = out.relay.cursor, why = %why, "sse stream ended");
        }
    }
}

/// The stream until it stops: replay, subscribe, relay.
async fn run(source: &Source, thread: &ThreadId, o: &SseOptions, out: &mut Out, retry: String) -> Result<std::convert::Infallible, Stop> {
    let deadline = Instant::now() + o.max_duration;
    out.send(retry).await?;
    // The handshake and `$connect`'s key check overlap the replay.
    let (url, key) = (source.feed_url.clone(), source.key.clone());
    let connecting = tokio::spawn(async move { LiveFeed::connect(&url, &key).await });
    let replayed = out.catch_up(&source.log, thread).await;
    if let Err(stop) = replayed {
        connecting.abort();
        return Err(stop);
    }
    let mut feed = match connecting.await {
        Ok(Ok(feed)) => feed,
        Ok(Err(e)) => {
            tracing::warn!(thread = %thread, error = %e, "sse: live feed unavailable");
            return Err(Stop::Reconnect("live feed unavailable, reconnect".into()));
        }
        Err(e) => return Err(Stop::Reconnect(format!("live feed task failed ({e}), reconnect"))),
    };
    let result = relay(source, thread, o, out, &mut feed, deadline).await;
    feed.close().await;
    result
}

async fn relay(
    source: &Source,
    thread: &ThreadId,
    o: &SseOptions,
    out: &mut Out,
    feed: &mut LiveFeed,
    deadline: Instant,
) -> Result<std::convert::Infallible, Stop> {
    if let Err(e) = feed.subscribe(thread, out.relay.cursor).await {
        tracing::warn!(thread = %thread, error = %e, "sse: subscribe failed");
        return Err(Stop::Reconnect("live feed unavailable, reconnect".into()));
    }
    loop {
        let tx = out.tx.clone();
        tokio::select! {
            _ = tx.closed() => return Err(Stop::Gone),
            _ = tokio::time::sleep_until(deadline) => return Err(Stop::Reconnect("deadline, reconnect".into())),
            _ = tokio::time::sleep_until(out.last_sent + o.keep_alive) => {
                out.send(": keep-alive\n\n".to_owned()).await?;
                out.catch_up(&source.log, thread).await?;
            }
            incoming = feed.next() => match incoming {
                Some(incoming) => out.incoming(&source.log, thread, incoming).await?,
                None => return Err(Stop::Reconnect("live feed closed, reconnect".into())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::events::{EventPayload, TextBlock, TextDelta, ToolCall};

    fn delta(resp: &str) -> Event {
        Event::new("r1", "a1", EventPayload::TextDelta(TextDelta { text: "x".into() })).with_response_id(resp)
    }

    fn block(resp: &str) -> Event {
        Event::new("r1", "a1", EventPayload::TextBlock(TextBlock { text: "x".into() })).with_response_id(resp)
    }

    fn call() -> Event {
        Event::new("r1", "a1", EventPayload::ToolCall(ToolCall { tool_call_id: "c".into(), tool_name: "w".into(), args: Default::default() }))
    }

    #[test]
    fn ids_go_out_once_in_order_and_a_gap_is_named() {
        let mut r = Relay::new(4);
        assert_eq!(r.durable(3, &call()), Durable::Duplicate);
        assert_eq!(r.durable(4, &call()), Durable::Duplicate);
        assert_eq!(r.durable(6, &call()), Durable::Gap);
        assert_eq!(r.cursor, 4, "a gap sends nothing");
        assert!(matches!(r.durable(5, &call()), Durable::Send(f) if f.starts_with("id: 5\n")));
        assert!(matches!(r.durable(6, &call()), Durable::Send(f) if f.starts_with("id: 6\n")));
        assert_eq!(r.durable(6, &call()), Durable::Duplicate);
    }

    #[test]
    fn a_delta_after_its_block_is_dropped() {
        let mut r = Relay::new(0);
        assert!(r.ephemeral(&delta("s1")).is_some());
        assert!(matches!(r.durable(1, &block("s1")), Durable::Send(_)));
        assert_eq!(r.ephemeral(&delta("s1")), None);
        assert!(r.ephemeral(&delta("s2")).is_some(), "another segment is open");
    }
}
