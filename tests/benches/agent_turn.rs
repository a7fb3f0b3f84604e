//! Agent turn figures against the local cloud over moto
//! (`cargo bench -p e2e --bench agent_turn`):
//!
//! - the extra latency from a model token (a chunk leaving the provider) to
//!   the client's frame, p50/p99, over the WebSocket API (pushed) and the
//!   SSE endpoint (polled);
//! - DynamoDB and SQS requests the functions send per simple turn (one model
//!   call, text only), per tool turn (two model calls around one tool) and
//!   per approval round trip (ask-user: suspend, confirm, resume), counted
//!   by an SDK interceptor on the runtime's clients (every attempt). The
//!   API-key lookup of each HTTP request (one GetItem) and the SQS event
//!   source's own receive/delete calls are not the functions' requests and
//!   are listed apart.
//!
//! moto is one Python process: latencies here are an upper bound dominated
//! by moto, the request counts are what DynamoDB and SQS would bill.

#[path = "../tests/agent_common/mod.rs"]
mod agent_common;

use agent::model::{CancellationToken, FinishReason, ModelChunk, ModelProvider, ModelRequest, ModelStream, Usage};
use agent_common::*;
use protocol::events::{EventPayload, EventType};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use store::counting::RequestCounter;

static EPOCH: OnceLock<Instant> = OnceLock::new();

fn now_us() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as u64
}

/// Streams `n` text deltas, each carrying the microsecond it was emitted.
struct StampingModel {
    n: usize,
    gap: Duration,
}

impl ModelProvider for StampingModel {
    fn provider(&self) -> &str {
        "bench"
    }
    fn model(&self) -> &str {
        "stamping"
    }
    fn stream(&self, _request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let (n, gap) = (self.n, self.gap);
        Box::pin(async_stream_like(n, gap, cancel))
    }
}

fn async_stream_like(n: usize, gap: Duration, cancel: CancellationToken) -> impl futures::Stream<Item = Result<ModelChunk, agent::model::ModelError>> + Send {
    futures::stream::unfold(0usize, move |i| {
        let cancel = cancel.clone();
        async move {
            if i > n || cancel.is_cancelled() {
                return None;
            }
            if i == n {
                return Some((Ok(ModelChunk::Finish { reason: FinishReason::Stop, usage: Usage::default() }), i + 1));
            }
            tokio::time::sleep(gap).await;
            Some((Ok(ModelChunk::TextDelta(format!("<{}>", now_us()))), i + 1))
        }
    })
}

fn pct(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn diff(after: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> (u64, String) {
    let mut total = 0;
    let mut parts = Vec::new();
    for (k, v) in after {
        let d = v - before.get(k).copied().unwrap_or(0);
        if d > 0 {
            total += d;
            parts.push(format!("{k} {d}"));
        }
    }
    (total, parts.join(", "))
}

struct Counters {
    dynamo: RequestCounter,
    sqs: RequestCounter,
}

impl Counters {
    fn snap(&self) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        (self.dynamo.snapshot(), self.sqs.snapshot())
    }
    fn report(&self, what: &str, before: &(BTreeMap<String, u64>, BTreeMap<String, u64>)) {
        let (d, s) = self.snap();
        let (dt, dd) = diff(&d, &before.0);
        let (st, sd) = diff(&s, &before.1);
        println!("{what}: {dt} DynamoDB ({dd}) + {st} SQS ({sd})");
    }
}

/// A cloud whose agent runtime sends through counted clients.
async fn counted_cloud(setup: Setup, model: Option<Arc<dyn ModelProvider>>) -> (Cloud, Counters) {
    agent_common::cloud_with(
        setup,
        |clients| {
            let (dynamo, dc) = RequestCounter::instrument(&clients.dynamo);
            let sc = RequestCounter::default();
            let sqs = aws_sdk_sqs::Client::from_conf(clients.sqs.config().to_builder().interceptor(sc.clone()).build());
            let mut c = clients.clone();
            c.dynamo = dynamo;
            c.sqs = sqs;
            (c, Counters { dynamo: dc, sqs: sc })
        },
        model,
    )
    .await
}

/// Runs queued steps by hand until the queue stays empty (phases stay apart).
async fn pump(cloud: &Cloud, steps: usize) {
    for _ in 0..steps {
        let ev = receive(cloud).await;
        api::handlers::step::handle(&cloud.running.app, ev).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    EPOCH.get_or_init(Instant::now);

    // --- token → frame latency, SSE and WebSocket side by side
    let (cloud, _) = counted_cloud(Setup::default(), Some(Arc::new(StampingModel { n: 200, gap: Duration::from_millis(10) }))).await;
    let t = thread();
    // A first run creates the thread, so both streams are admitted and live
    // before the measured run starts.
    let mut ws = cloud.events(ALICE, &t).await;
    let mut sse = cloud.sse_events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "warm up").await;
    ws.until_type(EventType::RunFinish, Duration::from_secs(60)).await;
    sse.until_type(EventType::RunFinish, Duration::from_secs(60)).await;
    cloud.chat(ALICE, &t, "stamp").await;
    for (name, feed) in [("WebSocket", &mut ws), ("SSE", &mut sse)] {
        let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(60)).await;
        let mut lat: Vec<u64> = Vec::new();
        for f in &frames {
            if let EventPayload::TextDelta(d) = &f.event.payload {
                let sent: u64 = d.text.trim_matches(|c| c == '<' || c == '>').parse().unwrap_or(0);
                let got = f.at.duration_since(*EPOCH.get().unwrap()).as_micros() as u64;
                lat.push(got.saturating_sub(sent));
            }
        }
        lat.sort_unstable();
        println!(
            "token → {name} frame: {} deltas, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            lat.len(),
            pct(&lat, 0.5) as f64 / 1000.0,
            pct(&lat, 0.99) as f64 / 1000.0,
            lat.last().copied().unwrap_or(0) as f64 / 1000.0
        );
    }
    cloud.stop().await;

    // --- requests per turn (scripted model), steps run by hand so each
    // phase is counted alone (the SSE reader uses its own clients).
    let (cloud, counters) = counted_cloud(Setup { consumers: false, ..Setup::default() }, None).await;
    for (label, message, steps) in [("simple turn (1 step: 1 model call, text)", "Say hello", 1), ("tool turn (2 steps: model, tool, model)", "List my workflows", 2)] {
        let t = thread();
        let mut feed = cloud.events(ALICE, &t).await;
        let before = counters.snap();
        cloud.chat(ALICE, &t, message).await;
        counters.report(&format!("{label} — chat POST"), &before);
        let mid = counters.snap();
        pump(&cloud, steps).await;
        feed.until_type(EventType::RunFinish, WAIT).await;
        counters.report(&format!("{label} — step(s)"), &mid);
        counters.report(&format!("{label} — total"), &before);
    }

    // --- approval round trip (ask-user)
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    let before = counters.snap();
    cloud.chat(ALICE, &t, "Ask me a question").await;
    pump(&cloud, 1).await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    counters.report("ask-user run until suspended (chat POST + step 1)", &before);
    let mid = counters.snap();
    let started = Instant::now();
    cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true, "answers": [{"questionId": "q1", "selectedOptions": ["red"]}]})).await;
    counters.report("  confirm POST", &mid);
    let after_confirm = counters.snap();
    pump(&cloud, 1).await;
    feed.until_type(EventType::ToolResult, WAIT).await;
    let to_result = started.elapsed();
    feed.until_type(EventType::RunFinish, WAIT).await;
    counters.report("  resume step (tool-result, 2nd model call, run-finish)", &after_confirm);
    counters.report("approval round trip (confirm POST + resume step)", &mid);
    counters.report("whole ask-user run", &before);
    println!("confirm POST → tool-result frame (step run by hand at once): {:.1} ms", to_result.as_secs_f64() * 1000.0);
    println!("not counted above: 1 GetItem (API key) per HTTP request; the SQS event source's ReceiveMessage/DeleteMessageBatch per step");
    cloud.stop().await;
}
