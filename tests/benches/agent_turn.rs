//! Agent turn figures against the local cloud over moto
//! (`cargo bench -p e2e --bench agent_turn`):
//!
//! - the extra latency from a model token (a chunk leaving the provider) to
//!   the client's frame, p50/p99, through the SSE endpoint;
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
async fn counted_cloud(model: Option<Arc<dyn ModelProvider>>) -> (Cloud, Counters) {
    let cloud = agent_common::cloud_with(Setup::default(), |clients| {
        let (dynamo, dc) = RequestCounter::instrument(&clients.dynamo);
        let sc = RequestCounter::default();
        let sqs = aws_sdk_sqs::Client::from_conf(clients.sqs.config().to_builder().interceptor(sc.clone()).build());
        let mut c = clients.clone();
        c.dynamo = dynamo;
        c.sqs = sqs;
        (c, Counters { dynamo: dc, sqs: sc })
    }, model)
    .await;
    cloud
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    EPOCH.get_or_init(Instant::now);

    // --- token → frame latency
    let (cloud, _) = counted_cloud(Some(Arc::new(StampingModel { n: 200, gap: Duration::from_millis(10) }))).await;
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "stamp").await;
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
        "token → SSE frame: {} deltas, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lat.len(),
        pct(&lat, 0.5) as f64 / 1000.0,
        pct(&lat, 0.99) as f64 / 1000.0,
        lat.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    cloud.running.shutdown().await;

    // --- requests per turn (scripted model)
    let (cloud, counters) = counted_cloud(None).await;
    for (label, message) in [("simple turn (1 model call, text)", "Say hello"), ("tool turn (2 model calls, 1 tool)", "List my workflows")] {
        let t = thread();
        let mut feed = cloud.events(ALICE, &t).await;
        // Let the SSE reader settle so its reads are not counted (it has its own client).
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = counters.snap();
        cloud.chat(ALICE, &t, message).await;
        feed.until_type(EventType::RunFinish, WAIT).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        counters.report(label, &before);
    }

    // --- approval round trip
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = counters.snap();
    cloud.chat(ALICE, &t, "Ask me a question").await;
    let frames = feed.until_type(EventType::ConfirmationRequest, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    counters.report("ask-user run, chat → confirmation-request", &before);
    let mid = counters.snap();
    let started = Instant::now();
    cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true, "answers": [{"questionId": "q1", "selectedOptions": ["red"]}]})).await;
    let after_confirm = counters.snap();
    feed.until_type(EventType::ToolResult, WAIT).await;
    let to_result = started.elapsed();
    feed.until_type(EventType::RunFinish, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    counters.report("  confirm POST alone", &mid);
    counters.report("  resume step (tool-result, 2nd model call, run-finish)", &after_confirm);
    counters.report("approval round trip (confirm → run-finish)", &mid);
    counters.report("whole ask-user run", &before);
    println!("confirm POST → tool-result frame: {:.1} ms", to_result.as_secs_f64() * 1000.0);
    println!("not counted above: 1 GetItem (API key) per HTTP request; the SQS event source's ReceiveMessage/DeleteMessageBatch per step");
    cloud.running.shutdown().await;
}
