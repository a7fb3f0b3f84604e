//! Event delivery figures against the local cloud over moto
//! (`cargo bench -p e2e --bench event_delivery`): the time from the start
//! of an `EventWriter::emit` to the frame at a WebSocket client (pushed
//! through the `@connections` API) and at an SSE client (the endpoint polls
//! the log every 200 ms, LiveFrames are written in ~100 ms batches), p50 /
//! p99, for durable events and for ephemeral text deltas. Both clients are
//! real: tokio-tungstenite and an HTTP SSE reader, connected before the
//! timed events and reading concurrently.
//!
//! moto is one Python process serving DynamoDB one request at a time:
//! latencies here are an upper bound dominated by moto and the poll
//! intervals, not a DynamoDB prediction.

#[path = "../tests/agent_common/mod.rs"]
mod agent_common;

use agent_common::*;
use protocol::events::{Event, EventPayload, EventType, TextDelta, ToolCall};
use protocol::ids::ThreadId;
use protocol::UserId;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use store::connections::Connections;
use store::deployment::TableId;
use store::{EventLog, EventWriter, LiveFrames, Publisher, Threads};

const DURABLE: usize = 200;
const DELTAS: usize = 400;
/// Pause between events: a paced stream, not a flood (the figures are
/// per-event latency, not throughput).
const GAP: Duration = Duration::from_millis(20);

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn report(what: &str, sent: &HashMap<String, Instant>, frames: &[Frame], key: impl Fn(&Event) -> Option<String>) {
    let mut lat: Vec<f64> = frames
        .iter()
        .filter_map(|f| key(&f.event).and_then(|k| sent.get(&k)).map(|t0| f.at.duration_since(*t0).as_secs_f64() * 1000.0))
        .collect();
    lat.sort_by(f64::total_cmp);
    println!(
        "{what}: {} of {} frames, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lat.len(),
        sent.len(),
        pct(&lat, 0.5),
        pct(&lat, 0.99),
        lat.last().copied().unwrap_or(f64::NAN)
    );
}

fn call_id(e: &Event) -> Option<String> {
    match &e.payload {
        EventPayload::ToolCall(c) => Some(c.tool_call_id.clone()),
        _ => None,
    }
}

fn delta_text(e: &Event) -> Option<String> {
    match &e.payload {
        EventPayload::TextDelta(d) => Some(d.text.clone()),
        _ => None,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let cloud = cloud(Setup { consumers: false, model: false, ..Setup::default() }).await;
    let app = cloud.running.app.clone();
    let t = thread();
    let thread_id = ThreadId(t.clone());
    let table = |id| app.config.table(id).expect("table").to_owned();
    Threads::new(app.clients.dynamo.clone(), table(TableId::Agent)).ensure(&thread_id, &UserId("alice".into())).await.expect("thread");
    // The writer a step would build: log, LiveFrames for SSE tails, the
    // Management API publisher for WebSocket subscribers.
    let publisher = Publisher::new(Connections::new(app.clients.dynamo.clone(), table(TableId::Connections)), app.clients.connections.clone());
    let mut w = EventWriter::new(
        thread_id.clone(),
        EventLog::from_config(app.clients.dynamo.clone(), &app.config).expect("log"),
        Some(LiveFrames::new(app.clients.dynamo.clone(), table(TableId::LiveFrames))),
        Some(publisher),
    );

    let mut ws = cloud.events(ALICE, &t).await;
    let mut sse = cloud.sse_events(ALICE, &t).await;
    // Warm up until both clients are live.
    let tool_call = |id: String| {
        Event::new("run", "agent-001", EventPayload::ToolCall(ToolCall { tool_call_id: id, tool_name: "workflows".into(), args: Default::default() }))
    };
    let mut n = 0;
    loop {
        n += 1;
        let id = format!("warm-{n}");
        w.emit(tool_call(id.clone())).await.expect("emit");
        let got_ws = tokio::time::timeout(Duration::from_secs(2), ws.until(WAIT, |f| call_id(&f.event).as_deref() == Some(&id))).await.is_ok();
        let got_sse = tokio::time::timeout(Duration::from_secs(2), sse.until(WAIT, |f| call_id(&f.event).as_deref() == Some(&id))).await.is_ok();
        if got_ws && got_sse {
            break;
        }
        assert!(n < 20, "clients never went live");
    }

    // Durable events: one conditional PutItem each (+ the subscriber read
    // and the post for the WebSocket subscriber).
    let mut sent = HashMap::new();
    for i in 0..DURABLE {
        let id = format!("tc{i}");
        sent.insert(id.clone(), Instant::now());
        w.emit(tool_call(id)).await.expect("emit");
        tokio::time::sleep(GAP).await;
    }
    let last = format!("tc{}", DURABLE - 1);
    let ws_frames = ws.until(Duration::from_secs(120), |f| call_id(&f.event).as_deref() == Some(&last)).await;
    let sse_frames = sse.until(Duration::from_secs(120), |f| call_id(&f.event).as_deref() == Some(&last)).await;
    report("durable append → WebSocket frame", &sent, &ws_frames, call_id);
    report("durable append → SSE frame      ", &sent, &sse_frames, call_id);

    // Ephemeral text deltas: posted to WebSocket subscribers at once,
    // written to LiveFrames in batches for SSE tails.
    let mut sent = HashMap::new();
    for i in 0..DELTAS {
        let text = format!("d{i} ");
        sent.insert(text.clone(), Instant::now());
        let delta = Event::new("run", "agent-001", EventPayload::TextDelta(TextDelta { text })).with_response_id("resp-bench");
        w.emit(delta).await.expect("emit");
        tokio::time::sleep(GAP).await;
    }
    w.emit(tool_call("closer".into())).await.expect("emit");
    let ws_frames = ws.until(Duration::from_secs(120), |f| call_id(&f.event).as_deref() == Some("closer")).await;
    let sse_frames = sse.until(Duration::from_secs(120), |f| call_id(&f.event).as_deref() == Some("closer")).await;
    report("text delta → WebSocket frame    ", &sent, &ws_frames, delta_text);
    report("text delta → SSE frame          ", &sent, &sse_frames, delta_text);
    let blocks = sse_frames.iter().filter(|f| f.kind() == EventType::TextBlock).count();
    println!("(the SSE stream also carried {blocks} closing text-block; deltas are live-only, never replayed)");
    cloud.stop().await;
}
