//! The SSE endpoint through the local cloud over real HTTP, read the way a
//! browser's EventSource reads it: a client that connects while events are
//! being written, drops mid-stream and reconnects with `Last-Event-ID` sees
//! every durable event exactly once, in id order; ephemeral frames carry no
//! `id:` and never come back on replay; the header wins over
//! `?lastEventId=`; the spec's headers, `retry:` and keep-alive comments are
//! there; a stranger gets exactly what a missing thread gets; and a Simple
//! Query run's frames arrive in the log's order. Live frames reach the
//! endpoint through its WebSocket subscription (`api::live_feed`): the
//! replay → live hand-off stays exactly-once while writers append, a post
//! that never arrived is read from the log, and the subscription ends with
//! the client.

mod agent_common;

use agent_common::*;
use futures::StreamExt;
use protocol::events::*;
use protocol::ids::ThreadId;
use protocol::UserId;
use std::time::{Duration, Instant};
use store::connections::Connections;
use store::deployment::TableId;
use store::{EventLog, EventWriter, Publisher, Threads};
use tokio::sync::mpsc;

/// What the SSE parser hands the test, in arrival order.
#[derive(Debug, Clone)]
enum Item {
    /// A dispatched event: the `id:` of its own block (if any) and its data.
    Frame { id: Option<u64>, event: Event },
    /// A `: comment` line (keep-alives and the goodbye note).
    Comment(String),
    /// A `retry:` field.
    Retry(u64),
}

/// One SSE connection. Dropping it closes the connection (the reader task
/// owns the response body and is aborted).
struct Sse {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
    rx: mpsc::UnboundedReceiver<Item>,
    reader: Option<tokio::task::JoinHandle<()>>,
    /// Everything this connection delivered so far.
    seen: Vec<Item>,
}

impl Drop for Sse {
    fn drop(&mut self) {
        if let Some(r) = self.reader.take() {
            r.abort();
        }
    }
}

/// `GET /instance-ai/events/{thread}` with a bearer key, an optional
/// `Last-Event-ID` header and an optional query string.
async fn open(cloud: &Cloud, key: &str, thread: &str, last_event_id: Option<u64>, query: Option<&str>) -> Sse {
    let mut url = cloud.url(&format!("/instance-ai/events/{thread}"));
    if let Some(q) = query {
        url = format!("{url}?{q}");
    }
    let mut req = cloud.http.get(url).bearer_auth(key).header("accept", "text/event-stream");
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id.to_string());
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let (tx, rx) = mpsc::unbounded_channel();
    if status != 200 {
        let body = resp.text().await.unwrap_or_default();
        return Sse { status, headers, body, rx, reader: None, seen: Vec::new() };
    }
    let reader = tokio::spawn(parse(resp, tx));
    Sse { status, headers, body: String::new(), rx, reader: Some(reader), seen: Vec::new() }
}

/// An SSE parser after the WHATWG event-stream rules: lines end in LF, CR
/// or CRLF; a blank line dispatches; `:` starts a comment; one space after
/// the colon is dropped; `data` lines join with LF.
async fn parse(resp: reqwest::Response, tx: mpsc::UnboundedSender<Item>) {
    let mut stream = resp.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    let (mut id, mut data, mut has_data) = (None::<u64>, String::new(), false);
    while let Some(Ok(bytes)) = stream.next().await {
        buf.extend_from_slice(&bytes);
        loop {
            let Some(end) = buf.iter().position(|b| *b == b'\n' || *b == b'\r') else { break };
            // A CR at the very end may be the first half of a CRLF: wait for more.
            if buf[end] == b'\r' && end + 1 == buf.len() {
                break;
            }
            let skip = if buf[end] == b'\r' && buf.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
            let line = String::from_utf8(buf[..end].to_vec()).expect("SSE is UTF-8");
            buf.drain(..end + skip);
            let item = if line.is_empty() {
                let frame = has_data.then(|| {
                    let text = data.strip_suffix('\n').unwrap_or(&data);
                    let event = Event::from_json(text).unwrap_or_else(|e| panic!("frame data is not an event ({e}): {text}"));
                    Item::Frame { id, event }
                });
                (id, data, has_data) = (None, String::new(), false);
                frame
            } else if let Some(comment) = line.strip_prefix(':') {
                Some(Item::Comment(comment.trim().to_owned()))
            } else {
                let (field, value) = line.split_once(':').unwrap_or((line.as_str(), ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => {
                        id = Some(value.parse().unwrap_or_else(|_| panic!("id is not a number: {value:?}")));
                        None
                    }
                    "data" => {
                        data.push_str(value);
                        data.push('\n');
                        has_data = true;
                        None
                    }
                    "retry" => Some(Item::Retry(value.parse().unwrap_or_else(|_| panic!("bad retry: {value:?}")))),
                    "event" => panic!("the server names no SSE event types (the type is in the data): {line}"),
                    other => panic!("unknown SSE field {other:?} in {line:?}"),
                }
            };
            if let Some(item) = item {
                if tx.send(item).is_err() {
                    return;
                }
            }
        }
    }
}

impl Sse {
    /// Reads until `stop` matches an item (included); panics after `timeout`.
    async fn until(&mut self, timeout: Duration, stop: impl Fn(&Item) -> bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(item)) => {
                    let done = stop(&item);
                    self.seen.push(item);
                    if done {
                        return;
                    }
                }
                Ok(None) => panic!("stream ended; got {}", describe(&self.seen)),
                Err(_) => panic!("timed out; got {}", describe(&self.seen)),
            }
        }
    }

    async fn until_id(&mut self, id: u64) {
        self.until(WAIT, |i| matches!(i, Item::Frame { id: Some(x), .. } if *x == id)).await;
    }

    /// Until the endpoint says its subscription is live, and publishers'
    /// cached subscriber lists (ephemeral frames use one up to
    /// `EPHEMERAL_SUBSCRIBERS_MAX_AGE` old) know it: from then on every
    /// published frame reaches it.
    async fn until_live(&mut self) {
        if !self.seen.iter().any(|i| matches!(i, Item::Comment(c) if c == "live")) {
            self.until(WAIT, |i| matches!(i, Item::Comment(c) if c == "live")).await;
        }
        tokio::time::sleep(store::publisher::EPHEMERAL_SUBSCRIBERS_MAX_AGE).await;
    }

    fn frames(&self) -> Vec<(Option<u64>, Event)> {
        self.seen
            .iter()
            .filter_map(|i| match i {
                Item::Frame { id, event } => Some((*id, event.clone())),
                _ => None,
            })
            .collect()
    }

    fn durable(&self) -> Vec<(u64, Event)> {
        self.frames().into_iter().filter_map(|(id, e)| id.map(|id| (id, e))).collect()
    }

    fn ephemeral(&self) -> Vec<Event> {
        self.frames().into_iter().filter(|(id, _)| id.is_none()).map(|(_, e)| e).collect()
    }
}

fn describe(items: &[Item]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|i| match i {
            Item::Frame { id: Some(id), event } => format!("{id}:{}", event.event_type().as_str()),
            Item::Frame { id: None, event } => event.event_type().as_str().to_owned(),
            Item::Comment(c) => format!(": {c}"),
            Item::Retry(r) => format!("retry {r}"),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// The response headers the spec lists for the SSE endpoint.
fn assert_spec_headers(sse: &Sse) {
    let h = |name: &str| sse.headers.get(name).map(|v| v.to_str().unwrap_or_default().to_owned());
    assert_eq!(h("content-type").as_deref(), Some("text/event-stream; charset=UTF-8"));
    assert_eq!(h("cache-control").as_deref(), Some("no-cache, no-transform"));
    assert_eq!(h("x-accel-buffering").as_deref(), Some("no"));
    assert_eq!(h("connection").map(|v| v.to_ascii_lowercase()).as_deref(), Some("keep-alive"));
}

fn text_of(e: &Event) -> &str {
    match &e.payload {
        EventPayload::TextDelta(d) | EventPayload::ReasoningDelta(d) => &d.text,
        EventPayload::TextBlock(b) | EventPayload::ReasoningBlock(b) => &b.text,
        EventPayload::Status(s) => &s.message,
        _ => "",
    }
}

/// Writes one thread's events straight into the stack's store, as a step
/// does (log first, then posts to the live WebSocket subscribers).
fn writer(cloud: &Cloud, thread: &str) -> EventWriter {
    let app = &cloud.running.app;
    let log = EventLog::from_config(app.clients.dynamo.clone(), &app.config).expect("events table");
    EventWriter::new(ThreadId(thread.to_owned()), log, Some(publisher(cloud)))
}

fn publisher(cloud: &Cloud) -> Publisher {
    let app = &cloud.running.app;
    let conns = Connections::new(app.clients.dynamo.clone(), app.config.table(TableId::Connections).expect("connections table"));
    Publisher::new(conns, app.clients.connections.clone())
}

async fn own_thread(cloud: &Cloud, owner: &str) -> String {
    let t = thread();
    let app = &cloud.running.app;
    Threads::new(app.clients.dynamo.clone(), app.config.table(TableId::Agent).expect("agent table"))
        .ensure(&ThreadId(t.clone()), &UserId(owner.into()))
        .await
        .expect("thread");
    t
}

fn delta(run: &str, segment: &str, text: &str) -> Event {
    Event::new(run, "agent-001", EventPayload::TextDelta(TextDelta { text: text.into() })).with_response_id(segment)
}

fn status(run: &str, message: &str) -> Event {
    Event::new(run, "agent-001", EventPayload::Status(Status { message: message.into() }))
}

fn tool_call(run: &str, id: &str) -> Event {
    Event::new(run, "agent-001", EventPayload::ToolCall(ToolCall { tool_call_id: id.into(), tool_name: "workflows".into(), args: Default::default() }))
}

/// One streamed segment `<phase><i>` (two deltas and a status line, paced
/// like a model), closed by a tool call: two durable ids (block, call).
async fn segment(w: &mut EventWriter, phase: &str, i: usize, pace: Duration) {
    let seg = format!("{phase}{i}");
    w.emit(delta("r1", &seg, &format!("{seg}-x "))).await.expect("delta");
    tokio::time::sleep(pace).await;
    w.emit(status("r1", &format!("{seg} working"))).await.expect("status");
    w.emit(delta("r1", &seg, &format!("{seg}-y"))).await.expect("delta");
    tokio::time::sleep(pace).await;
    w.emit(tool_call("r1", &format!("tc-{seg}"))).await.expect("tool call");
}

/// The phase marker of an ephemeral frame ("a3-x " → 'a').
fn phase(e: &Event) -> char {
    text_of(e).chars().next().unwrap_or('?')
}

/// For every text block on this connection whose segment is in `phases`:
/// its deltas came first, and their text is the block's.
fn assert_live_text_matches_blocks(sse: &Sse, phases: &[char]) -> usize {
    let frames = sse.frames();
    let mut checked = 0;
    for (pos, (id, block)) in frames.iter().enumerate() {
        if block.event_type() != EventType::TextBlock || id.is_none() {
            continue;
        }
        let seg = block.response_id.clone().unwrap_or_default();
        if !seg.chars().next().is_some_and(|c| phases.contains(&c)) {
            continue;
        }
        let live: String = frames[..pos]
            .iter()
            .filter(|(_, e)| e.event_type() == EventType::TextDelta && e.response_id.as_deref() == Some(seg.as_str()))
            .map(|(_, e)| text_of(e))
            .collect();
        assert_eq!(live, text_of(block), "segment {seg}: live deltas before the block == block text");
        assert!(
            !frames[pos..].iter().any(|(_, e)| e.event_type() == EventType::TextDelta && e.response_id.as_deref() == Some(seg.as_str())),
            "segment {seg}: a delta after its block"
        );
        checked += 1;
    }
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reconnect_with_last_event_id_sees_every_durable_event_once_in_order() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let t = own_thread(&cloud, "alice").await;
    let pace = Duration::from_millis(40);

    // Before anyone listens: run-start (1), segment z0 (block 2, call 3).
    let mut w = writer(&cloud, &t);
    w.emit(Event::new("r1", "agent-001", EventPayload::RunStart(RunStart { message_id: "m1".into(), trace_id: None, message_group_id: None, message: Some("hi".into()), attachments: Vec::new() })))
        .await
        .expect("run-start");
    segment(&mut w, "z", 0, Duration::ZERO).await;

    // A stranger gets exactly what a missing thread gets; no key is 401.
    let stranger = open(&cloud, BOB, &t, None, None).await;
    let missing = open(&cloud, BOB, "t-does-not-exist", None, None).await;
    assert_eq!((stranger.status, missing.status), (404, 404));
    assert_eq!(stranger.body.replace(&t, "X"), missing.body.replace("t-does-not-exist", "X"));
    assert_eq!(stranger.headers.get("content-type"), missing.headers.get("content-type"));
    let anonymous = cloud.http.get(cloud.url(&format!("/instance-ai/events/{t}"))).send().await.expect("request");
    assert_eq!(anonymous.status().as_u16(), 401);

    // Connection 1: no cursor, the whole history, then live.
    let mut c1 = open(&cloud, ALICE, &t, None, None).await;
    assert_eq!(c1.status, 200, "{}", c1.body);
    assert_spec_headers(&c1);
    c1.until_id(3).await;
    assert!(matches!(c1.seen.first(), Some(Item::Retry(ms)) if *ms > 0), "a retry hint first: {}", describe(&c1.seen));
    c1.until_live().await;

    // Phase a: written while connection 1 reads. It drops after id 13,
    // mid-phase (the writer is still going), as a network failure would.
    let phase_a = tokio::spawn(async move {
        for i in 0..12 {
            segment(&mut w, "a", i, pace).await;
        }
        w
    });
    const K: u64 = 13;
    c1.until_id(K).await;
    let a_done_at_drop = phase_a.is_finished();
    // Aborting the reader drops the response: the connection closes.
    if let Some(r) = c1.reader.take() {
        r.abort();
    }
    let mut w = phase_a.await.expect("phase a writer");
    assert!(!a_done_at_drop, "connection 1 dropped only after the writer finished: not a mid-stream drop");

    // Phase b: written while nobody is connected.
    for i in 0..3 {
        segment(&mut w, "b", i, Duration::ZERO).await;
    }
    let head = EventLog::from_config(cloud.running.app.clients.dynamo.clone(), &cloud.running.app.config)
        .expect("events table")
        .head(&ThreadId(t.clone()))
        .await
        .expect("head");
    assert_eq!(head, 3 + 2 * 12 + 2 * 3);

    // Connection 2 resumes from Last-Event-ID; the stale query cursor
    // (which would replay 2..=K again) loses to the header.
    let mut c2 = open(&cloud, ALICE, &t, Some(K), Some("lastEventId=1")).await;
    assert_eq!(c2.status, 200, "{}", c2.body);
    assert_spec_headers(&c2);
    c2.until_id(head).await;
    assert!(matches!(c2.seen.first(), Some(Item::Retry(ms)) if *ms > 0), "a retry hint first: {}", describe(&c2.seen));
    c2.until_live().await;

    // Phase c: written while connection 2 is live, then the run ends.
    for i in 0..3 {
        segment(&mut w, "c", i, pace).await;
    }
    let finish = w
        .emit(Event::new("r1", "agent-001", EventPayload::RunFinish(RunFinish { status: RunStatus::Completed, reason: None, archived_workflow_ids: None })))
        .await
        .expect("run-finish")
        .expect("durable");
    w.flush().await.expect("flush");
    c2.until_id(finish).await;

    // Durable: 1..=K on the first connection, K+1..=N on the second, each
    // id once and in order, and each frame is the log's event of that id.
    let d1: Vec<u64> = c1.durable().iter().map(|(id, _)| *id).collect();
    let d2: Vec<u64> = c2.durable().iter().map(|(id, _)| *id).collect();
    assert_eq!(d1, (1..=K).collect::<Vec<_>>(), "connection 1: {}", describe(&c1.seen));
    assert_eq!(d2, (K + 1..=finish).collect::<Vec<_>>(), "connection 2: {}", describe(&c2.seen));
    let log = EventLog::from_config(cloud.running.app.clients.dynamo.clone(), &cloud.running.app.config).expect("events table");
    let stored = log.read_all_after(&ThreadId(t.clone()), 0).await.expect("log");
    assert_eq!(stored.len() as u64, finish, "nothing after run-finish");
    let streamed: Vec<(u64, Event)> = c1.durable().into_iter().chain(c2.durable()).collect();
    for ((id, event), s) in streamed.iter().zip(&stored) {
        assert_eq!((*id, event), (s.seq, &s.event), "frame {id} is not the log's event {}", s.seq);
    }

    // Ephemeral frames: never with an id, never durable types, only live.
    for sse in [&c1, &c2] {
        for (id, e) in sse.frames() {
            assert_eq!(id.is_none(), e.is_ephemeral(), "{} frame with id {id:?}", e.event_type().as_str());
        }
    }
    let phases1: std::collections::BTreeSet<char> = c1.ephemeral().iter().map(phase).collect();
    let phases2: std::collections::BTreeSet<char> = c2.ephemeral().iter().map(phase).collect();
    assert_eq!(phases1, ['a'].into(), "connection 1 gets phase a live, nothing older");
    assert_eq!(phases2, ['c'].into(), "connection 2 gets phase c live, no replayed deltas or statuses");
    assert!(c2.ephemeral().iter().any(|e| e.event_type() == EventType::Status), "status frames reach live clients");
    // Live text == replayed text, deltas before their block.
    assert_eq!(assert_live_text_matches_blocks(&c1, &['a']), 5, "blocks a0..a4 (ids 4..=12): {}", describe(&c1.seen));
    assert_eq!(assert_live_text_matches_blocks(&c2, &['c']), 3, "{}", describe(&c2.seen));
    // Segments a client missed live come back as blocks only, with the full text.
    let blocks: Vec<String> = c2.durable().iter().filter(|(_, e)| e.event_type() == EventType::TextBlock).map(|(_, e)| text_of(e).to_owned()).collect();
    assert!(blocks.contains(&"b1-x b1-y".to_owned()), "{blocks:?}");

    drop(c2);
    cloud.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idle_stream_sends_keep_alive_comments() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let t = own_thread(&cloud, "alice").await;
    let mut sse = open(&cloud, ALICE, &t, None, Some("lastEventId=0")).await;
    assert_eq!(sse.status, 200, "{}", sse.body);
    // The endpoint's keep-alive interval is 15 s.
    sse.until(Duration::from_secs(25), |i| matches!(i, Item::Comment(c) if c == "keep-alive")).await;
    assert!(sse.frames().is_empty(), "an empty thread has no events: {}", describe(&sse.seen));
    drop(sse);
    cloud.stop().await;
}

/// The spec's Simple Query, driven by the scripted model with steps run by
/// hand once the client is live: the frames arrive in the log's id order,
/// each delta after the event logged before it and before its block.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_simple_query_streams_in_log_order() {
    let cloud = cloud(Setup { consumers: false, ..Setup::default() }).await;
    let t = thread();
    let (code, body) = cloud.chat(ALICE, &t, "List my workflows").await;
    assert_eq!(code, 200, "{body}");
    let mut sse = open(&cloud, ALICE, &t, None, None).await;
    assert_eq!(sse.status, 200, "{}", sse.body);
    sse.until_id(1).await;
    sse.until_live().await;
    // The run's steps (model, tool, model) while the client is connected.
    let started = Instant::now();
    for _ in 0..2 {
        let step = receive(&cloud).await;
        api::handlers::step::handle(&cloud.running.app, step).await;
    }
    sse.until(WAIT, |i| matches!(i, Item::Frame { event, .. } if event.event_type() == EventType::RunFinish)).await;
    assert!(started.elapsed() < WAIT);

    let frames = sse.frames();
    let log = EventLog::from_config(cloud.running.app.clients.dynamo.clone(), &cloud.running.app.config).expect("events table");
    let stored = log.read_all_after(&ThreadId(t.clone()), 0).await.expect("log");
    let durable: Vec<(u64, Event)> = sse.durable();
    assert_eq!(
        durable.iter().map(|(id, e)| (*id, e.clone())).collect::<Vec<_>>(),
        stored.iter().map(|s| (s.seq, s.event.clone())).collect::<Vec<_>>(),
        "the SSE durable frames are the log, in id order"
    );
    let kinds: Vec<&str> = frames.iter().map(|(_, e)| e.event_type().as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run-start"));
    assert_eq!(kinds.last(), Some(&"run-finish"));
    // Each delta sits between the durable event logged before it and its
    // segment's block: reasoning after run-start, text after the tool result.
    let pos = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or_else(|| panic!("{k} missing in {kinds:?}"));
    let all = |k: &str| kinds.iter().enumerate().filter(|(_, x)| **x == k).map(|(i, _)| i).collect::<Vec<_>>();
    let (reasoning, text) = (all("reasoning-delta"), all("text-delta"));
    assert!(!reasoning.is_empty() && !text.is_empty(), "{kinds:?}");
    assert!(reasoning.iter().all(|&i| pos("run-start") < i && i < pos("reasoning-block")), "{kinds:?}");
    assert!(text.iter().all(|&i| pos("tool-result") < i && i < pos("text-block")), "{kinds:?}");
    assert!(pos("text-block") < pos("run-finish"));
    for (deltas, block) in [(&reasoning, pos("reasoning-block")), (&text, pos("text-block"))] {
        let live: String = deltas.iter().map(|&i| text_of(&frames[i].1)).collect();
        assert_eq!(live, text_of(&frames[block].1), "live text == block text");
    }
    drop(sse);
    cloud.stop().await;
}

fn run_finish(run: &str) -> Event {
    Event::new(run, "agent-001", EventPayload::RunFinish(RunFinish { status: RunStatus::Completed, reason: None, archived_workflow_ids: None }))
}

/// Clients connect at different cursors while a writer appends, some with
/// the gateway's subscribe slowed (events land between the endpoint's own
/// replay and its subscription) and one with the go-live flip slowed
/// (events land during the flip): each gets every id after its cursor
/// exactly once, in order, then the rest live.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_replay_to_live_hand_off_is_exactly_once_while_writers_append() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let t = own_thread(&cloud, "alice").await;
    let connections_table = cloud.running.app.config.table(TableId::Connections).expect("connections table").to_owned();
    let mut w = writer(&cloud, &t);
    for i in 0..5 {
        w.emit(tool_call("r1", &format!("pre{i}"))).await.expect("append");
    }
    let writing = tokio::spawn(async move {
        for i in 0..120 {
            w.emit(tool_call("r1", &format!("tc{i}"))).await.expect("append");
            if i % 9 == 0 {
                w.emit(delta("r1", &format!("s{i}"), "x")).await.expect("delta");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let finish = w.emit(run_finish("r1")).await.expect("run-finish").expect("durable");
        w.flush().await.expect("flush");
        finish
    });
    // (cursor, the gateway request slowed by 400 ms: its `$connect` record
    // or subscription put, or its go-live transaction)
    let cases: [(u64, Option<&str>); 5] = [(0, None), (2, Some("PutItem")), (5, Some("TransactWriteItems")), (3, None), (1, Some("PutItem"))];
    let mut clients = Vec::new();
    for (cursor, slowed) in cases {
        tokio::time::sleep(Duration::from_millis(150)).await;
        if let Some(op) = slowed {
            store::testing::delay_next_request(&connections_table, op, Duration::from_millis(400));
        }
        let sse = open(&cloud, ALICE, &t, Some(cursor), None).await;
        assert_eq!(sse.status, 200, "{}", sse.body);
        clients.push((cursor, sse));
    }
    let finish = writing.await.expect("writer");
    for (cursor, sse) in &mut clients {
        sse.until_id(finish).await;
        let ids: Vec<u64> = sse.durable().iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, (*cursor + 1..=finish).collect::<Vec<_>>(), "cursor {cursor}: {}", describe(&sse.seen));
        assert!(sse.seen.iter().any(|i| matches!(i, Item::Comment(c) if c == "live")), "went live: {}", describe(&sse.seen));
    }
    // The frames are the log's events.
    let log = EventLog::from_config(cloud.running.app.clients.dynamo.clone(), &cloud.running.app.config).expect("events table");
    let stored = log.read_all_after(&ThreadId(t.clone()), 0).await.expect("log");
    for (cursor, sse) in &clients {
        for ((id, event), s) in sse.durable().iter().zip(&stored[*cursor as usize..]) {
            assert_eq!((*id, event), (s.seq, &s.event));
        }
    }
    drop(clients);
    cloud.stop().await;
}

/// `GET /instance-ai/events/{thread}` as a Lambda request, for the handler
/// itself (with options a test chooses) on the running cloud's App.
fn request(thread: &str, key: Option<&str>, headers: &[(&str, &str)]) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let mut b = http::Request::builder().method("GET").uri(format!("/instance-ai/events/{thread}"));
    if let Some(k) = key {
        b = b.header("authorization", format!("Bearer {k}"));
    }
    for (h, v) in headers {
        b = b.header(*h, *v);
    }
    b.body(lambda_http::Body::Empty)
        .expect("request")
        .with_path_parameters(std::collections::HashMap::from([("threadId".to_owned(), thread.to_owned())]))
}

/// Reads a handler's streamed body until `until` holds for the text so far,
/// it ends (`true`), or `limit` passes.
async fn read_body(body: &mut api::sse::SseBody, limit: Duration, until: impl Fn(&str) -> bool) -> (String, bool) {
    use http_body::Body as _;
    let mut out = String::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let next = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx));
        match tokio::time::timeout_at(deadline, next).await {
            Err(_) => return (out, false),
            Ok(None) => return (out, true),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    out.push_str(&String::from_utf8_lossy(&data));
                }
                if until(&out) {
                    return (out, false);
                }
            }
            Ok(Some(Err(e))) => match e {},
        }
    }
}

fn ids_in(text: &str) -> Vec<u64> {
    text.lines().filter_map(|l| l.strip_prefix("id: ")).map(|v| v.parse().expect("numeric id")).collect()
}

/// A publisher's post that never arrived (PostToConnection failed) leaves a
/// hole the next frame reveals: the stream reads the missing event from the
/// log and sends both in order. A lost *last* post is found by the next
/// keep-alive's log read.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_post_that_never_arrived_is_read_from_the_log() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let t = own_thread(&cloud, "alice").await;
    let app = cloud.running.app.clone();
    let opts = api::handlers::events::SseOptions { keep_alive: Duration::from_millis(700), ..Default::default() };
    let resp = api::handlers::events::handle_with(&app, request(&t, Some(ALICE), &[]), opts).await;
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let (text, _) = read_body(&mut body, WAIT, |s| s.contains(": live\n")).await;
    assert!(ids_in(&text).is_empty(), "{text}");

    // Appended, never posted (a writer without a publisher), then one posted.
    let log = EventLog::from_config(app.clients.dynamo.clone(), &app.config).expect("events table");
    let mut unposted = EventWriter::new(ThreadId(t.clone()), log.clone(), None);
    let mut posted = writer(&cloud, &t);
    unposted.emit(tool_call("r1", "lost")).await.expect("append");
    posted.emit(tool_call("r1", "after")).await.expect("append");
    let (text, _) = read_body(&mut body, WAIT, |s| s.contains("id: 2\n")).await;
    assert_eq!(ids_in(&text), vec![1, 2], "{text}");
    assert!(text.find("\"lost\"") < text.find("\"after\""), "{text}");

    // The last post lost: the keep-alive's read finds it (well before the
    // 15 s default, with this stream's 700 ms keep-alive).
    unposted.emit(tool_call("r1", "lost-last")).await.expect("append");
    let started = Instant::now();
    let (text, _) = read_body(&mut body, WAIT, |s| s.contains("id: 3\n")).await;
    assert_eq!(ids_in(&text), vec![3], "{text}");
    assert!(text.contains(": keep-alive"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(body);
    cloud.stop().await;
}

/// The stream ends by itself before its deadline with a `retry:` goodbye;
/// a client that leaves ends it at once: its WebSocket subscription is gone
/// and it reads nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stream_ends_before_its_deadline_and_with_its_client() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let t = own_thread(&cloud, "alice").await;
    let opts = api::handlers::events::SseOptions {
        max_duration: Duration::from_secs(2),
        keep_alive: Duration::from_millis(300),
        ..Default::default()
    };
    let mut body = api::handlers::events::handle_with(&cloud.running.app, request(&t, Some(ALICE), &[]), opts.clone()).await.into_body();
    let (text, ended) = read_body(&mut body, Duration::from_secs(6), |_| false).await;
    assert!(ended, "the stream must end by itself before the deadline: {text}");
    assert!(text.contains(": keep-alive"), "{text}");
    assert!(text.trim_end().ends_with("retry: 1000"), "{text}");

    // An App whose DynamoDB requests are counted, on the same cloud.
    let mut clients = cloud.running.app.clients.clone();
    let (dynamo, counter) = store::counting::RequestCounter::instrument(&clients.dynamo);
    clients.dynamo = dynamo;
    let app = api::App::new(cloud.running.app.config.clone(), clients);
    let conns = Connections::new(cloud.running.app.clients.dynamo.clone(), cloud.running.app.config.table(TableId::Connections).expect("table"));
    let opts = api::handlers::events::SseOptions { max_duration: Duration::from_secs(60), ..opts };
    let mut body = api::handlers::events::handle_with(&app, request(&t, Some(ALICE), &[]), opts).await.into_body();
    let _ = read_body(&mut body, WAIT, |s| s.contains(": live\n")).await;
    assert_eq!(conns.live_subscribers(&ThreadId(t.clone()), true).await.expect("subscribers").len(), 1);
    drop(body);
    let deadline = Instant::now() + WAIT;
    while !conns.subscriptions(&ThreadId(t.clone()), true).await.expect("subscriptions").is_empty() {
        assert!(Instant::now() < deadline, "the subscription outlived its client");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = counter.total();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(counter.total(), before, "the stream kept reading after the client left");
    cloud.stop().await;
}

/// A malformed cursor is 400 and changes nothing; a wrong key is 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_cursors_and_keys_are_refused() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let t = own_thread(&cloud, "alice").await;
    let bad = open(&cloud, ALICE, &t, None, Some("lastEventId=abc")).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let req = cloud.http.get(cloud.url(&format!("/instance-ai/events/{t}"))).bearer_auth(ALICE).header("last-event-id", "-1").send().await.expect("request");
    assert_eq!(req.status().as_u16(), 400);
    let wrong = open(&cloud, "nope-nope-nope", &t, None, None).await;
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    cloud.stop().await;
}
