//! Pushes frames to a thread's `live` WebSocket subscribers through the API
//! Gateway Management API (`PostToConnection`). A connection that answers
//! 410 Gone is forgotten (its subscription and its record); no failure of a
//! post ever fails the publisher: live delivery is best-effort, the log is
//! the truth and clients re-subscribe with their cursor.

use crate::connections::{Connections, SubState};
use protocol::events::{EventPayload, WsFrame};
use protocol::ids::{ConnectionId, ThreadId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Ephemeral frames may use a subscriber list this old: they are live-only
/// and best-effort, and a fresh consistent read per delta would double the
/// cost of streaming text. Durable frames always read the list afresh.
pub const EPHEMERAL_SUBSCRIBERS_MAX_AGE: Duration = Duration::from_secs(1);

/// Per thread: when the live subscriber list was read, and the list.
type SubscriberCache = Arc<Mutex<HashMap<String, (Instant, Vec<ConnectionId>)>>>;

#[derive(Clone, Debug)]
pub struct Publisher {
    connections: Connections,
    client: Option<aws_sdk_apigatewaymanagement::Client>,
    cache: SubscriberCache,
}

/// What one publish did (for logs and tests).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PublishReport {
    pub subscribers: usize,
    pub posted: usize,
    pub gone: usize,
    pub failed: usize,
}

enum Outcome {
    Posted,
    Gone,
    Failed,
}

impl Publisher {
    /// `client` is `AwsClients.connections`; without it nothing is posted.
    pub fn new(connections: Connections, client: Option<aws_sdk_apigatewaymanagement::Client>) -> Self {
        Publisher { connections, client, cache: Arc::new(Mutex::new(HashMap::new())) }
    }

    pub fn connections(&self) -> &Connections {
        &self.connections
    }

    /// Posts durable frames (already in the log) to every live subscriber,
    /// reading the subscriptions consistently *after* the append, and only
    /// frames after the id the subscription went live at (earlier ones were
    /// replayed by the subscribe handler): together with the flip's check
    /// that the next id did not exist yet (`Connections::go_live`), each
    /// event reaches each subscriber exactly once.
    pub async fn publish_durable(&self, thread: &ThreadId, frames: &[WsFrame]) -> PublishReport {
        if self.client.is_none() || frames.is_empty() {
            return PublishReport::default();
        }
        let subs = match self.connections.subscriptions(thread, true).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(thread = %thread, error = %e, "publish: cannot read subscriptions");
                return PublishReport::default();
            }
        };
        let live: Vec<_> = subs.into_iter().filter(|s| s.state == SubState::Live).collect();
        self.remember(thread, &live.iter().map(|s| s.connection.clone()).collect::<Vec<_>>());
        let mut report = PublishReport::default();
        // Subscribers that went live at the same id get the same frames.
        let mut by_cursor: Vec<(u64, Vec<ConnectionId>)> = Vec::new();
        for s in live {
            match by_cursor.iter_mut().find(|(c, _)| *c == s.cursor) {
                Some((_, conns)) => conns.push(s.connection),
                None => by_cursor.push((s.cursor, vec![s.connection])),
            }
        }
        for (cursor, conns) in by_cursor {
            let after: Vec<WsFrame> = frames.iter().filter(|f| f.id.is_none_or(|id| id > cursor)).cloned().collect();
            if after.is_empty() {
                continue;
            }
            let r = self.post_all(thread, &conns, &after).await;
            report.subscribers += r.subscribers;
            report.posted += r.posted;
            report.gone += r.gone;
            report.failed += r.failed;
        }
        report
    }

    /// Posts ephemeral frames to live subscribers (subscriber list cached
    /// for [`EPHEMERAL_SUBSCRIBERS_MAX_AGE`]).
    pub async fn publish_ephemeral(&self, thread: &ThreadId, frames: &[WsFrame]) -> PublishReport {
        if self.client.is_none() || frames.is_empty() {
            return PublishReport::default();
        }
        let Some(subs) = self.ephemeral_subscribers(thread).await else { return PublishReport::default() };
        self.post_all(thread, &subs, frames).await
    }

    /// Posts one delta of an open text segment: the delta to the connections
    /// in `seen_by`; to a connection that joined since, the same delta
    /// carrying `text_so_far` (the segment's text up to and including this
    /// delta), built only when someone joined. Joiners are added to `seen_by`.
    pub async fn publish_segment_delta(&self, thread: &ThreadId, delta: WsFrame, text_so_far: &str, seen_by: &mut std::collections::HashSet<ConnectionId>) -> PublishReport {
        if self.client.is_none() {
            return PublishReport::default();
        }
        let Some(subs) = self.ephemeral_subscribers(thread).await else { return PublishReport::default() };
        let (known, joined): (Vec<ConnectionId>, Vec<ConnectionId>) = subs.into_iter().partition(|c| seen_by.contains(c));
        let mut report = self.post_all(thread, &known, std::slice::from_ref(&delta)).await;
        if !joined.is_empty() {
            let mut so_far = delta;
            if let EventPayload::TextDelta(d) | EventPayload::ReasoningDelta(d) = &mut so_far.event.payload {
                d.text = text_so_far.to_owned();
            }
            let r = self.post_all(thread, &joined, std::slice::from_ref(&so_far)).await;
            report = PublishReport { subscribers: report.subscribers + r.subscribers, posted: report.posted + r.posted, gone: report.gone + r.gone, failed: report.failed + r.failed };
            seen_by.extend(joined);
        }
        report
    }

    /// The live subscribers ephemeral frames go to (cached for
    /// [`EPHEMERAL_SUBSCRIBERS_MAX_AGE`]); `None` when they cannot be read.
    async fn ephemeral_subscribers(&self, thread: &ThreadId) -> Option<Vec<ConnectionId>> {
        let cached = self.cache.lock().ok().and_then(|c| {
            c.get(&thread.0).filter(|(at, _)| at.elapsed() < EPHEMERAL_SUBSCRIBERS_MAX_AGE).map(|(_, s)| s.clone())
        });
        if cached.is_some() {
            return cached;
        }
        match self.connections.live_subscribers(thread, false).await {
            Ok(s) => {
                self.remember(thread, &s);
                Some(s)
            }
            Err(e) => {
                tracing::warn!(thread = %thread, error = %e, "publish: cannot read subscriptions");
                None
            }
        }
    }

    fn remember(&self, thread: &ThreadId, subs: &[ConnectionId]) {
        if let Ok(mut c) = self.cache.lock() {
            c.insert(thread.0.clone(), (Instant::now(), subs.to_vec()));
        }
    }

    fn forget(&self, thread: &ThreadId, conn: &ConnectionId) {
        if let Ok(mut c) = self.cache.lock() {
            if let Some((_, subs)) = c.get_mut(&thread.0) {
                subs.retain(|s| s != conn);
            }
        }
    }

    async fn post_all(&self, thread: &ThreadId, subs: &[ConnectionId], frames: &[WsFrame]) -> PublishReport {
        let mut report = PublishReport { subscribers: subs.len(), ..Default::default() };
        let payloads: Vec<String> = frames.iter().map(WsFrame::to_json).collect();
        let payloads = &payloads;
        // Connections are independent: post to them concurrently, each in order.
        let results = futures::future::join_all(subs.iter().map(|conn| async move {
            for data in payloads {
                match self.post(conn, data.as_bytes()).await {
                    Outcome::Posted => {}
                    other => return (conn, other, 0usize),
                }
            }
            (conn, Outcome::Posted, payloads.len())
        }))
        .await;
        for (conn, outcome, n) in results {
            report.posted += n;
            match outcome {
                Outcome::Posted => {}
                Outcome::Failed => report.failed += 1,
                Outcome::Gone => {
                    report.gone += 1;
                    self.forget(thread, conn);
                    tracing::info!(thread = %thread, connection = %conn, "connection gone; removing its subscription");
                    if let Err(e) = self.connections.unsubscribe(thread, conn).await {
                        tracing::warn!(connection = %conn, error = %e, "cannot remove subscription of gone connection");
                    }
                    if let Err(e) = self.connections.close(conn).await {
                        tracing::warn!(connection = %conn, error = %e, "cannot remove gone connection");
                    }
                }
            }
        }
        report
    }

    /// Posts raw bytes to one connection; `true` unless it is gone. Used for
    /// replies (errors, acknowledgements) outside any thread fan-out.
    pub async fn post_raw(&self, conn: &ConnectionId, data: &[u8]) -> bool {
        !matches!(self.post(conn, data).await, Outcome::Gone)
    }

    async fn post(&self, conn: &ConnectionId, data: &[u8]) -> Outcome {
        let Some(client) = &self.client else { return Outcome::Failed };
        let result = client
            .post_to_connection()
            .connection_id(&conn.0)
            .data(aws_sdk_apigatewaymanagement::primitives::Blob::new(data))
            .send()
            .await;
        match result {
            Ok(_) => Outcome::Posted,
            Err(e) if e.as_service_error().is_some_and(|s| s.is_gone_exception()) => Outcome::Gone,
            // A 410 without the typed error body (some emulators) is still gone.
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 410) => Outcome::Gone,
            Err(e) => {
                tracing::warn!(connection = %conn, error = %aws_sdk_apigatewaymanagement::error::DisplayErrorContext(&e), "post to connection failed");
                Outcome::Failed
            }
        }
    }
}
