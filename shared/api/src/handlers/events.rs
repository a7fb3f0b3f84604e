//! `GET /instance-ai/events/{threadId}`: the SSE event stream.
//!
//! Bearer auth and an owner check (a stranger's thread is 404), then a
//! streamed body: a `retry:` hint, the replay of `seq > cursor` (cursor from
//! `Last-Event-ID`, else `?lastEventId=`, else 0), then a tail that polls
//! the log with short consistent queries and the LiveFrames feed for
//! ephemeral frames. Only durable frames carry `id:`. Idle streams get
//! keep-alive comments. The stream ends cleanly before the Lambda deadline
//! (the client reconnects with `Last-Event-ID`) and stops as soon as the
//! client disconnects (the body is dropped, the channel closes). Answers
//! carry CORS for the web page's origin ([`crate::cors`]): in AWS this is a
//! Function URL on another origin than the page.

use crate::sse::SseBody;
use crate::{ApiError, App};
use bytes::Bytes;
use lambda_http::{Request, RequestExt, Response};
use protocol::events::sse_frame;
use protocol::ids::ThreadId;
use std::collections::{BTreeSet, HashSet};
use std::time::{Duration, Instant};
use store::deployment::{FunctionId, TableId};
use store::live_frames::{at_cursor, at_millis, LiveFrames};
use store::{EventLog, Threads};
use tokio::sync::mpsc::Sender;

/// Knobs of one stream; [`SseOptions::default`] fits the `events` Lambda.
#[derive(Debug, Clone)]
pub struct SseOptions {
    /// End the stream this long after it started (before the function's limit).
    pub max_duration: Duration,
    /// Comment line after this much silence, so proxies keep the connection.
    pub keep_alive: Duration,
    /// Sleep between polls when nothing new arrived.
    pub poll_interval: Duration,
    /// The `retry:` hint (ms) the client waits before reconnecting.
    pub retry_ms: u64,
    /// Live frames are read from this far behind the newest one seen: a
    /// writer's 100 ms batch can land after a later-stamped frame.
    pub live_lag: Duration,
}

impl Default for SseOptions {
    fn default() -> Self {
        // Leave 30 s of the function's timeout for the goodbye and slack.
        let limit = u64::from(FunctionId::Events.def().timeout_secs);
        SseOptions {
            max_duration: Duration::from_secs(limit.saturating_sub(30).max(10)),
            keep_alive: Duration::from_secs(15),
            poll_interval: Duration::from_millis(200),
            retry_ms: 1000,
            live_lag: Duration::from_secs(1),
        }
    }
}

/// Durable events per log query.
const PAGE: u32 = 200;
/// Consecutive store failures after which the stream ends (the client
/// reconnects with its cursor, maybe to a healthier instance).
const MAX_FAILURES: u32 = 5;

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
    let live = LiveFrames::new(app.clients.dynamo.clone(), app.config.table(TableId::LiveFrames).map_err(internal)?);

    let (tx, body) = SseBody::channel();
    tokio::spawn(stream(log, live, thread, cursor, options, tx));
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
fn segment(e: &protocol::Event) -> Option<(String, Option<String>, bool)> {
    use protocol::EventType as T;
    let reasoning = match e.event_type() {
        T::TextDelta | T::TextBlock => false,
        T::ReasoningDelta | T::ReasoningBlock => true,
        _ => return None,
    };
    Some((e.agent_id.0.clone(), e.response_id.clone(), reasoning))
}

/// Sends one chunk; `false` once the client is gone.
async fn send(tx: &Sender<Bytes>, chunk: String) -> bool {
    tx.send(Bytes::from(chunk)).await.is_ok()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

async fn stream(log: EventLog, live: LiveFrames, thread: ThreadId, mut cursor: u64, o: SseOptions, tx: Sender<Bytes>) {
    let started = Instant::now();
    let mut last_sent = Instant::now();
    if !send(&tx, format!("retry: {}\n\n", o.retry_ms)).await {
        return;
    }
    // Ephemeral frames stamped from now on; earlier ones are covered by blocks.
    let lag_ms = o.live_lag.as_millis() as u64;
    let live_floor = at_cursor(now_ms());
    let mut live_newest = now_ms();
    let mut live_seen: BTreeSet<String> = BTreeSet::new();
    // Segments whose block this stream already sent: a late delta of one of
    // them would be appended after the block's replace and show text twice.
    let mut closed: HashSet<(String, Option<String>, bool)> = HashSet::new();
    let mut failures = 0u32;
    tracing::info!(thread = %thread, cursor, "sse stream started");
    loop {
        if tx.is_closed() {
            tracing::info!(thread = %thread, "sse client gone");
            return;
        }
        if started.elapsed() >= o.max_duration {
            // Ask the client to come back at once with its Last-Event-ID.
            let _ = send(&tx, format!(": deadline, reconnect\nretry: {}\n\n", o.retry_ms)).await;
            tracing::info!(thread = %thread, cursor, "sse stream ended at its deadline");
            return;
        }
        let mut sent_any = false;
        let mut failed = false;
        let durable = match log.read_after(&thread, cursor, PAGE).await {
            Ok(events) => events,
            Err(e) => {
                failed = true;
                tracing::warn!(thread = %thread, error = %e, "sse: log read failed");
                Vec::new()
            }
        };
        // A full page means we are still replaying: live frames belong after
        // the events not read yet, so they wait for the next poll.
        let replaying = durable.len() == PAGE as usize;
        let mut ephemeral = Vec::new();
        if !replaying {
            match live.read_after(&thread, &at_cursor(live_newest.saturating_sub(lag_ms)), 500).await {
                Ok(frames) => {
                    for f in frames {
                        if f.at < live_floor || !live_seen.insert(f.at.clone()) {
                            continue;
                        }
                        live_newest = live_newest.max(at_millis(&f.at));
                        ephemeral.push(f);
                    }
                    // Keys older than the look-back window are never read again.
                    let floor = at_cursor(live_newest.saturating_sub(lag_ms));
                    live_seen = live_seen.split_off(&floor);
                }
                Err(e) => {
                    failed = true;
                    tracing::warn!(thread = %thread, error = %e, "sse: live frames read failed");
                }
            }
        }
        // An event appended after the log read but before a delta read just
        // now must still go out before that delta: read the log once more up
        // to the newest frame's stamp (later events wait for the next poll, so
        // a block never overtakes deltas this poll has not seen).
        let mut durable = durable;
        if let (Some(newest), false) = (ephemeral.iter().map(|f| at_millis(&f.at)).max(), failed) {
            let after = durable.last().map(|e| e.seq).unwrap_or(cursor);
            match log.read_after(&thread, after, PAGE).await {
                Ok(more) => durable.extend(more.into_iter().take_while(|e| e.event.ts.unwrap_or(0) <= newest)),
                Err(e) => {
                    failed = true;
                    tracing::warn!(thread = %thread, error = %e, "sse: log read failed");
                }
            }
        }
        // A poll with any failed read counts towards giving up (a log that
        // keeps failing must end the stream even while live frames read fine).
        failures = if failed { failures + 1 } else { 0 };
        // One poll's frames go out in publish order (durable first on a tie),
        // so a delta never overtakes the event published before it. A delta
        // of a segment whose block was already sent is dropped: the block
        // replaced its text.
        let mut durable = durable.into_iter().peekable();
        let mut ephemeral: std::collections::VecDeque<_> = ephemeral.into();
        let mut out = Vec::new();
        loop {
            let take_durable = match (durable.peek(), ephemeral.front()) {
                (Some(d), Some(f)) => d.event.ts.unwrap_or(0) <= at_millis(&f.at),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_durable {
                let Some(stored) = durable.next() else { break };
                if let Some(key) = segment(&stored.event) {
                    // The segment's own deltas go before the block that
                    // replaces their text, whatever their stamps say.
                    let (mine, rest): (Vec<_>, Vec<_>) =
                        ephemeral.drain(..).partition(|f| segment(&f.event).as_ref() == Some(&key));
                    ephemeral = rest.into();
                    out.extend(mine.iter().map(|f| sse_frame(None, &f.event)));
                    closed.insert(key);
                }
                cursor = stored.seq;
                out.push(sse_frame(Some(stored.seq), &stored.event));
            } else {
                let Some(f) = ephemeral.pop_front() else { break };
                if segment(&f.event).is_some_and(|key| closed.contains(&key)) {
                    continue;
                }
                out.push(sse_frame(None, &f.event));
            }
        }
        for frame in out {
            sent_any = true;
            if !send(&tx, frame).await {
                return;
            }
        }
        if replaying {
            last_sent = Instant::now();
            continue;
        }
        if failures >= MAX_FAILURES {
            let _ = send(&tx, format!(": store unavailable, reconnect\nretry: {}\n\n", o.retry_ms)).await;
            return;
        }
        if sent_any {
            last_sent = Instant::now();
            continue;
        }
        if last_sent.elapsed() >= o.keep_alive {
            if !send(&tx, ": keep-alive\n\n".to_owned()).await {
                return;
            }
            last_sent = Instant::now();
        }
        tokio::select! {
            _ = tx.closed() => {
                tracing::info!(thread = %thread, "sse client gone");
                return;
            }
            _ = tokio::time::sleep(o.poll_interval) => {}
        }
    }
}
