//! Event delivery figures against the local cloud over moto
//! (`cargo bench -p e2e --bench event_delivery`): the time from the start
//! of an `EventWriter::emit` to the frame at a WebSocket client (pushed
//! through the `@connections` API) and at an SSE client (the endpoint is
//! itself subscribed through the WebSocket API, `api::live_feed`), p50 /
//! p99, for durable events and for ephemeral text deltas. Both clients are
//! real: tokio-tungstenite and an HTTP SSE reader, connected before the
//! timed events and reading concurrently. Then what an SSE client costs in
//! DynamoDB reads per connected minute: the events function's own requests
//! (and the gateway's for its subscription), counted by moto, over an idle
//! minute and over a minute of a streaming turn.
//!
//! moto is one Python process serving DynamoDB one request at a time:
//! latencies here are an upper bound dominated by moto and the poll
//! intervals, not a DynamoDB prediction.

#[path = "../tests/agent_common/mod.rs"]
mod agent_common;

use agent_common::*;
use protocol::events::{Event, EventPayload, EventType, Status, TextDelta, ToolCall};
use protocol::ids::ThreadId;
use protocol::UserId;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use store::connections::Connections;
use store::deployment::TableId;
use store::{EventLog, EventWriter, Publisher, Threads};

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
    // The writer a step would build: the log and the Management API
    // publisher for WebSocket subscribers (the SSE endpoint is one).
    let publisher = Publisher::new(Connections::new(app.clients.dynamo.clone(), table(TableId::Connections)), app.clients.connections.clone());
    let mut w = EventWriter::new(thread_id.clone(), EventLog::from_config(app.clients.dynamo.clone(), &app.config).expect("log"), Some(publisher));

    let mut ws = cloud.events(ALICE, &t).await;
    let mut sse = cloud.sse_events(ALICE, &t).await;
    let tool_call = |id: String| {
        Event::new("run", "agent-001", EventPayload::ToolCall(ToolCall { tool_call_id: id, tool_name: "workflows".into(), args: Default::default() }))
    };
    live(&mut w, &mut [&mut ws, &mut sse]).await;

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

    // Ephemeral text deltas: posted to WebSocket subscribers at once.
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
    drop((ws, sse));
    cloud.close_feeds();
    reads_per_client_minute(&cloud, &t).await;
    cloud.stop().await;
}

/// Emits ephemeral frames (live-only: no replay can deliver them) until
/// every feed has one: from then on each is live.
async fn live(w: &mut EventWriter, feeds: &mut [&mut Feed]) {
    for n in 0..40 {
        let marker = format!("warm-{n}");
        w.emit(Event::new("run", "agent-001", EventPayload::Status(Status { message: marker.clone() }))).await.expect("emit");
        let mut all = true;
        for feed in feeds.iter_mut() {
            let seen = |f: &Frame| matches!(&f.event.payload, EventPayload::Status(s) if s.message == marker);
            if feed.seen.iter().any(|f| seen(f)) {
                continue;
            }
            let got = feed.drain(Duration::from_millis(250)).await;
            all &= got.iter().any(|f| seen(f));
        }
        if all {
            return;
        }
    }
    panic!("clients never went live");
}

/// moto's meter of DynamoDB read units for this cloud's tables (the cost
/// bench's source, `moto_server.py` `/_usage`).
struct Meter {
    http: reqwest::Client,
    url: String,
    prefix: String,
}

impl Meter {
    async fn arm(cloud: &Cloud) -> Meter {
        let agent = cloud.running.app.config.table(TableId::Agent).expect("table");
        let prefix = agent.rsplit_once('-').expect("prefixed table name").0.to_owned();
        let meter = Meter { http: reqwest::Client::new(), url: store::testing::moto_endpoint(), prefix };
        let r = meter.http.post(format!("{}/_usage", meter.url)).json(&serde_json::json!({"prefix": meter.prefix})).send().await.expect("moto");
        assert!(r.status().is_success(), "moto_server.py does not meter: run with infra/local/env.sh's moto");
        meter
    }

    async fn read_units(&self) -> f64 {
        let u: serde_json::Value =
            self.http.get(format!("{}/_usage?prefix={}", self.url, self.prefix)).send().await.expect("moto").json().await.expect("json");
        u["dynamodb"]["readUnits"].as_f64().unwrap_or(0.0)
    }
}

/// DynamoDB read units per connected SSE client-minute, idle (nothing
/// written: what holding a stream open costs), and what opening one costs.
async fn reads_per_client_minute(cloud: &Cloud, t: &str) {
    const IDLE: Duration = Duration::from_secs(60);
    let meter = Meter::arm(cloud).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let r0 = meter.read_units().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let background = (meter.read_units().await - r0) / 10.0;
    let head = EventLog::from_config(cloud.running.app.clients.dynamo.clone(), &cloud.running.app.config).expect("log").head(&ThreadId(t.to_owned())).await.expect("head");
    let before_open = meter.read_units().await;
    let mut sse = cloud.sse_events(ALICE, t).await;
    let mut w = EventWriter::new(ThreadId(t.to_owned()), EventLog::from_config(cloud.running.app.clients.dynamo.clone(), &cloud.running.app.config).expect("log"), Some(Publisher::new(
        Connections::new(cloud.running.app.clients.dynamo.clone(), cloud.running.app.config.table(TableId::Connections).expect("table")),
        cloud.running.app.clients.connections.clone(),
    )));
    live(&mut w, &mut [&mut sse]).await;
    let opened = meter.read_units().await;
    let started = Instant::now();
    tokio::time::sleep(IDLE).await;
    let idle = meter.read_units().await - opened - background * started.elapsed().as_secs_f64();
    println!(
        "DynamoDB reads of one SSE client: {:.1} read units per idle connected minute; {:.1} to open a stream (key, owner, replay of {} events, the subscription)",
        idle * 60.0 / started.elapsed().as_secs_f64(),
        opened - before_open,
        head,
    );
    drop(sse);
}
