//! The one way events leave an agent: [`EventWriter::emit`].
//!
//! - Ephemeral events (deltas, status, filesystem requests) are published
//!   live to the thread's WebSocket subscribers (the SSE endpoint is one of
//!   them: `api::live_feed`) and never stored.
//! - Text and reasoning deltas are accumulated per (agent, kind, responseId).
//!   Before that agent's next durable event, and on [`EventWriter::flush`],
//!   each open segment becomes one `text-block` / `reasoning-block` with its
//!   full text, appended in the same request as the durable event (one
//!   `TransactWriteItems`), so a replay shows exactly the text the live
//!   stream showed.
//! - Durable events are appended to the log first and published after, so a
//!   live frame always names an id that is already readable.
//! - A subscriber that joins while a segment is open (a page that connects
//!   just after posting its message) gets the segment's text so far as its
//!   first delta, then the deltas: no block covers that text yet, so without
//!   it the answer would show from mid-sentence until the block lands.

use crate::error::StoreError;
use crate::event_log::EventLog;
use crate::publisher::Publisher;
use protocol::events::{Event, EventPayload, TextBlock, WsFrame};
use protocol::ids::{AgentId, RunId, ThreadId, UserId};

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

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
    /// Connections this segment's text went to (they get deltas; others its text so far).
    seen_by: std::collections::HashSet<protocol::ids::ConnectionId>,
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
    publisher: Option<Publisher>,
    segments: Vec<Segment>,
}

impl EventWriter {
    pub fn new(thread: ThreadId, log: EventLog, publisher: Option<Publisher>) -> Self {
        EventWriter { thread, log, publisher, segments: Vec::new() }
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

    /// Appends every open segment as a block. Call at the end of a step (and
    /// before handing the thread to anyone).
    pub async fn flush(&mut self) -> Result<Vec<u64>, StoreError> {
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
        let Some((kind, text)) = delta else {
            if let Some(p) = &self.publisher {
                p.publish_ephemeral(&self.thread, &[WsFrame::ephemeral(event)]).await;
            }
            return Ok(());
        };
        let i = match self.segments.iter().position(|s| s.agent == event.agent_id && s.kind == kind && s.response_id == event.response_id) {
            Some(i) => {
                self.segments[i].text.push_str(text);
                i
            }
            None => {
                self.segments.push(Segment {
                    agent: event.agent_id.clone(),
                    run: event.run_id.clone(),
                    user: event.user_id.clone(),
                    response_id: event.response_id.clone(),
                    kind,
                    text: text.to_owned(),
                    ts: event.ts,
                    seen_by: Default::default(),
                });
                self.segments.len() - 1
            }
        };
        if let Some(p) = &self.publisher {
            let seg = &mut self.segments[i];
            p.publish_segment_delta(&self.thread, WsFrame::ephemeral(event), &seg.text, &mut seg.seen_by).await;
        }
        Ok(())
    }

    async fn emit_durable(&mut self, events: Vec<Event>) -> Result<Vec<u64>, StoreError> {
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
}
