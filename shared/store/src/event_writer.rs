//! The one way events leave an agent: [`EventWriter::emit`].
//!
//! - Ephemeral events (deltas, status, filesystem requests) are published
//!   live (WebSocket subscribers now, the LiveFrames feed for SSE tails in
//!   small batches) and never stored.
//! - Text and reasoning deltas are accumulated per (agent, kind, responseId).
//!   Before that agent's next durable event, and on [`EventWriter::flush`],
//!   each open segment becomes one `text-block` / `reasoning-block` with its
//!   full text, appended in the same request as the durable event (one
//!   `TransactWriteItems`), so a replay shows exactly the text the live
//!   stream showed.
//! - Durable events are appended to the log first and published after, so a
//!   live frame always names an id that is already readable.

use crate::error::StoreError;
use crate::event_log::EventLog;
use crate::live_frames::{make_at, now_ms, LiveFrame, LiveFrames};
use crate::publisher::Publisher;
use protocol::events::{Event, EventPayload, TextBlock, WsFrame};
use protocol::ids::{AgentId, RunId, ThreadId, UserId};
use std::time::{Duration, Instant};

/// Ephemeral frames are written to LiveFrames at least this often (and
/// whenever 25 are waiting), so an SSE tail lags by about this much.
pub const LIVE_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
}

#[derive(Debug)]
struct Segment {
    agent: AgentId,
    run: RunId,
    user: Option<UserId>,
    response_id: Option<String>,
    kind: Kind,
    text: String,
    ts: Option<u64>,
}

impl Segment {
    fn into_block(self) -> Event {
        let block = TextBlock { text: self.text };
        let payload = match self.kind {
            Kind::Text => EventPayload::TextBlock(block),
            Kind::Reasoning => EventPayload::ReasoningBlock(block),
        };
        Event {
            run_id: self.run,
            agent_id: self.agent,
            user_id: self.user,
            response_id: self.response_id,
            ts: self.ts,
            payload,
        }
    }
}

/// Writes one thread's events. Build one per step (or per agent task); the
/// [`EventLog`] inside should be shared per process so its head cache is.
pub struct EventWriter {
    thread: ThreadId,
    log: EventLog,
    live: Option<LiveFrames>,
    publisher: Option<Publisher>,
    segments: Vec<Segment>,
    live_buffer: Vec<LiveFrame>,
    live_since: Option<Instant>,
    writer_id: String,
    counter: u64,
}

impl EventWriter {
    pub fn new(thread: ThreadId, log: EventLog, live: Option<LiveFrames>, publisher: Option<Publisher>) -> Self {
        EventWriter {
            thread,
            log,
            live,
            publisher,
            segments: Vec::new(),
            live_buffer: Vec::new(),
            live_since: None,
            writer_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_owned(),
            counter: 0,
        }
    }

    pub fn thread(&self) -> &ThreadId {
        &self.thread
    }

    pub fn log(&self) -> &EventLog {
        &self.log
    }

    /// Emits one event. Returns its id when it was durable.
    pub async fn emit(&mut self, mut event: Event) -> Result<Option<u64>, StoreError> {
        if event.ts.is_none() {
            event.ts = Some(now_ms());
        }
        if event.is_ephemeral() {
            self.emit_ephemeral(event).await?;
            return Ok(None);
        }
        let ids = self.emit_durable(vec![event]).await?;
        Ok(ids.last().copied())
    }

    /// Appends every open segment as a block and writes pending live frames.
    /// Call at the end of a step (and before handing the thread to anyone).
    pub async fn flush(&mut self) -> Result<Vec<u64>, StoreError> {
        self.flush_live().await?;
        let blocks: Vec<Event> = self.segments.drain(..).map(Segment::into_block).collect();
        if blocks.is_empty() {
            return Ok(Vec::new());
        }
        self.append_and_publish(blocks).await
    }

    async fn emit_ephemeral(&mut self, event: Event) -> Result<(), StoreError> {
        let delta = match &event.payload {
            EventPayload::TextDelta(d) => Some((Kind::Text, d.text.as_str())),
            EventPayload::ReasoningDelta(d) => Some((Kind::Reasoning, d.text.as_str())),
            _ => None,
        };
        if let Some((kind, text)) = delta {
            let open = self.segments.iter_mut().find(|s| {
                s.agent == event.agent_id && s.kind == kind && s.response_id == event.response_id
            });
            match open {
                Some(s) => s.text.push_str(text),
                None => self.segments.push(Segment {
                    agent: event.agent_id.clone(),
                    run: event.run_id.clone(),
                    user: event.user_id.clone(),
                    response_id: event.response_id.clone(),
                    kind,
                    text: text.to_owned(),
                    ts: event.ts,
                }),
            }
        }
        if let Some(p) = &self.publisher {
            p.publish_ephemeral(&self.thread, &[WsFrame::ephemeral(event.clone())]).await;
        }
        if self.live.is_some() {
            self.counter += 1;
            let at = make_at(now_ms(), self.counter, &self.writer_id);
            self.live_buffer.push(LiveFrame { at, event });
            let since = *self.live_since.get_or_insert_with(Instant::now);
            if self.live_buffer.len() >= crate::live_frames::MAX_BATCH || since.elapsed() >= LIVE_FLUSH_INTERVAL {
                self.flush_live().await?;
            }
        }
        Ok(())
    }

    async fn emit_durable(&mut self, events: Vec<Event>) -> Result<Vec<u64>, StoreError> {
        // Deltas already streamed go out before the fact that follows them.
        self.flush_live().await?;
        let mut batch = Vec::new();
        for event in &events {
            // The agent's own block for a segment replaces ours.
            let own_block = match &event.payload {
                EventPayload::TextBlock(_) => Some(Kind::Text),
                EventPayload::ReasoningBlock(_) => Some(Kind::Reasoning),
                _ => None,
            };
            let mut i = 0;
            while i < self.segments.len() {
                let s = &self.segments[i];
                if s.agent != event.agent_id {
                    i += 1;
                    continue;
                }
                let seg = self.segments.remove(i);
                if own_block == Some(seg.kind) && seg.response_id == event.response_id {
                    continue;
                }
                batch.push(seg.into_block());
            }
        }
        batch.extend(events);
        self.append_and_publish(batch).await
    }

    async fn append_and_publish(&mut self, batch: Vec<Event>) -> Result<Vec<u64>, StoreError> {
        let ids = self.log.append_batch(&self.thread, &batch).await?;
        if let Some(p) = &self.publisher {
            let frames: Vec<WsFrame> = ids.iter().zip(batch).map(|(id, e)| WsFrame::durable(*id, e)).collect();
            p.publish_durable(&self.thread, &frames).await;
        }
        Ok(ids)
    }

    async fn flush_live(&mut self) -> Result<(), StoreError> {
        self.live_since = None;
        if self.live_buffer.is_empty() {
            return Ok(());
        }
        let frames = std::mem::take(&mut self.live_buffer);
        if let Some(live) = &self.live {
            // Live frames are best-effort: a failed write must not fail the run.
            if let Err(e) = live.put(&self.thread, &frames).await {
                tracing::warn!(thread = %self.thread, error = %e, "live frames lost");
            }
        }
        Ok(())
    }
}
