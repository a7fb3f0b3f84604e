//! Webhook figures (`cargo bench -p e2e --bench webhooks`, with moto from
//! `infra/local/env.sh`):
//!
//! - latency from request to response for a `lastNode` webhook on a 5-node
//!   workflow, through the local cloud over HTTP (webhook function → Runs
//!   queue → executor → stored answer → response), p50/p90/p99, and the
//!   Lambda invocations (per function, with handler time) and HTTP API
//!   requests per call, from the local cloud's meter;
//! - DynamoDB and SQS requests per webhook execution, counted on the
//!   clients of each function (the webhook function and the executor; the
//!   event source's own receive/delete calls are not the functions'), for
//!   `onReceived` and `lastNode`.
//!
//! Against moto the latency is this machine's, not AWS's (no network hop,
//! a local SQS poller instead of Lambda's event source mapping); the
//! request counts are what DynamoDB and SQS would bill.

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use local_cloud::{start, Options};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use store::counting::RequestCounter;
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::data::InstanceData;
use store::deployment::QueueId;
use store::testing::TestEnv;

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({"id": name, "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0]})
}

/// Webhook → Set → If → Set → NoOp.
fn five_nodes(path: &str, mode: &str) -> WorkflowBody {
    let set = |name: &str, field: &str, value: &str| {
        node(name, "n8n-nodes-base.set", 3.4, json!({"assignments": {"assignments": [{"id": "1", "name": field, "value": value, "type": "string"}]}, "options": {}}))
    };
    let nodes = vec![
        node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": path, "responseMode": mode})),
        set("Name", "name", "={{ $json.body.name }}"),
        node("Known", "n8n-nodes-base.if", 2.2, json!({"conditions": {"options": {"caseSensitive": true, "leftValue": "", "typeValidation": "loose"}, "conditions": [{"id": "c", "leftValue": "={{ $json.name }}", "rightValue": "", "operator": {"type": "string", "operation": "notEmpty", "singleValue": true}}], "combinator": "and"}, "options": {}})),
        set("Greet", "greeting", "=hello {{ $json.name }}"),
        node("Done", "n8n-nodes-base.noOp", 1.0, json!({})),
    ];
    let mut conns = serde_json::Map::new();
    for w in nodes.windows(2) {
        conns.insert(w[0]["name"].as_str().unwrap().into(), json!({"main": [[{"node": w[1]["name"], "type": "main", "index": 0}]]}));
    }
    WorkflowBody { nodes: Value::Array(nodes), connections: Value::Object(conns), settings: json!({"executionOrder": "v1"}), pin_data: json!({}), meta: json!({}) }
}

async fn published(data: &InstanceData, activation: &triggers::Activation, path: &str, mode: &str) {
    let alice = protocol::UserId::from("alice".to_owned());
    let project = match data.projects.user(&alice).await.unwrap() {
        Some(u) => u.personal_project_id,
        None => data.projects.create_user(&alice, "alice@example.com", None, None).await.unwrap().0.personal_project_id,
    };
    let wf = data
        .workflows
        .create(NewWorkflow { name: format!("bench {path}"), description: None, project_id: project, folder_id: None, body: five_nodes(path, mode), available_in_mcp: false }, &alice)
        .await
        .unwrap();
    activation.publish(&wf.meta.id, None).await.unwrap();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn latency() {
    let env = TestEnv::new().await;
    let cloud = start(Options { config: env.config.clone(), prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: false }).await.unwrap();
    let data = InstanceData::new(&cloud.app.clients, &cloud.app.config).unwrap();
    let activation = triggers::Activation::new(data.clone(), None);
    published(&data, &activation, "bench-last", "lastNode").await;
    let http = reqwest::Client::new();
    let url = format!("{}/webhook/bench-last", cloud.base_url());
    let call = || async {
        let t = Instant::now();
        let r = http.post(&url).json(&json!({"name": "Ada"})).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["greeting"], "hello Ada");
        t.elapsed()
    };
    for _ in 0..5 {
        call().await;
    }
    // Let the warm-up's last executor record its end before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cloud.meter.snapshot();
    let mut times = Vec::new();
    for _ in 0..40 {
        times.push(call().await);
    }
    // The last run's executor may still be recording its end after the answer went out.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let used = cloud.meter.snapshot().since(&before);
    let n = times.len() as f64;
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    println!(
        "lastNode webhook, 5 nodes, request → response over HTTP ({} requests): p50 {:?}, p90 {:?}, p99 {:?}, mean {:?}",
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.9),
        percentile(&times, 0.99),
        mean
    );
    let per_function: Vec<String> = used
        .functions
        .iter()
        .map(|(f, u)| format!("{f:?} {:.2} ({:.0} ms handler time each)", u.invocations as f64 / n, u.billed_ms as f64 / u.invocations.max(1) as f64))
        .collect();
    println!(
        "  per call: {:.2} Lambda invocations ({}), {:.2} HTTP API requests",
        used.functions.values().map(|u| u.invocations).sum::<u64>() as f64 / n,
        per_function.join(", "),
        used.http_api_requests as f64 / n
    );
    cloud.shutdown().await;
}

struct Counters {
    dynamo: RequestCounter,
    sqs: RequestCounter,
}

impl Counters {
    fn snap(&self) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        (self.dynamo.snapshot(), self.sqs.snapshot())
    }
}

fn diff(now: &BTreeMap<String, u64>, before: &BTreeMap<String, u64>) -> (u64, String) {
    let mut total = 0;
    let mut parts = Vec::new();
    for (op, n) in now {
        let d = n - before.get(op).copied().unwrap_or(0);
        if d > 0 {
            total += d;
            parts.push(format!("{op} {d}"));
        }
    }
    (total, parts.join(", "))
}

fn report(what: &str, c: &Counters, before: &(BTreeMap<String, u64>, BTreeMap<String, u64>)) {
    let (d, s) = c.snap();
    let (dt, dd) = diff(&d, &before.0);
    let (st, sd) = diff(&s, &before.1);
    println!("  {what}: {dt} DynamoDB ({dd}) + {st} SQS ({sd})");
}

fn counted(clients: &store::AwsClients) -> (store::AwsClients, Counters) {
    let (dynamo, dc) = RequestCounter::instrument(&clients.dynamo);
    let sc = RequestCounter::default();
    let sqs = aws_sdk_sqs::Client::from_conf(clients.sqs.config().to_builder().interceptor(sc.clone()).build());
    let mut c = clients.clone();
    c.dynamo = dynamo;
    c.sqs = sqs;
    (c, Counters { dynamo: dc, sqs: sc })
}

fn event(path: &str) -> lambda_http::Request {
    let e = json!({
        "version": "2.0", "routeKey": "ANY /webhook/{proxy+}", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json", "host": "bench.example"},
        "requestContext": {"accountId": "1", "apiId": "b", "domainName": "bench.example", "domainPrefix": "b",
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.7", "userAgent": "bench"},
            "requestId": "r", "routeKey": "ANY /webhook/{proxy+}", "stage": "$default", "time": "01/Dec/2026:00:00:00 +0000", "timeEpoch": 0},
        "isBase64Encoded": false, "body": "{\"name\": \"Ada\"}"
    });
    lambda_http::request::from_str(&e.to_string()).unwrap()
}

/// Delivers Runs messages to the executor handler until `done` (receive and
/// delete through an uncounted client: the event source's, not the function's).
async fn pump(app: &api::App, plain: &aws_sdk_sqs::Client, url: &str, until: Instant) {
    while Instant::now() < until {
        let out = plain.receive_message().queue_url(url).max_number_of_messages(1).wait_time_seconds(1).send().await.unwrap();
        for m in out.messages.unwrap_or_default() {
            let mut rec = SqsMessage::default();
            rec.message_id = m.message_id.clone();
            rec.body = m.body.clone();
            let mut ev = SqsEvent::default();
            ev.records = vec![rec];
            api::handlers::executor::handle(app, ev).await;
            plain.delete_message().queue_url(url).receipt_handle(m.receipt_handle.unwrap_or_default()).send().await.unwrap();
            return;
        }
    }
}

async fn requests() {
    let env = TestEnv::new().await;
    // Two apps over one environment: the webhook function's clients and the
    // executor's are counted apart (each handler builds its service from
    // the app it is first called with).
    let (hook_clients, hook) = counted(&env.clients);
    let (exec_clients, exec) = counted(&env.clients);
    let hook_app = api::App::new(env.config.clone(), hook_clients);
    let exec_app = api::App::new(env.config.clone(), exec_clients);
    let data = InstanceData::new(&env.clients, &env.config).unwrap();
    let activation = triggers::Activation::new(data.clone(), None);
    published(&data, &activation, "bench-recv", "onReceived").await;
    published(&data, &activation, "bench-count", "lastNode").await;
    let runs = env.config.queue_url(QueueId::Runs).unwrap().to_owned();
    let run = |path: &'static str| {
        let (hook_app, exec_app, plain, runs) = (&hook_app, &exec_app, &env.clients.sqs, &runs);
        async move {
            let (r, _) = tokio::join!(
                api::handlers::webhook::handle(hook_app, event(path)),
                pump(exec_app, plain, runs, Instant::now() + Duration::from_secs(20))
            );
            assert!(r.status().is_success(), "{path}: {}", r.status());
        }
    };
    // Warm the function caches (clients, version JSON) as a warm Lambda has them.
    run("/webhook/bench-recv").await;
    run("/webhook/bench-count").await;
    println!("requests per webhook execution (warm functions; the executor counted from its Runs message on):");
    for (label, path) in [("onReceived", "/webhook/bench-recv"), ("lastNode", "/webhook/bench-count")] {
        let (h0, e0) = (hook.snap(), exec.snap());
        run(path).await;
        report(&format!("{label} — webhook function"), &hook, &h0);
        report(&format!("{label} — executor"), &exec, &e0);
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    latency().await;
    requests().await;
}
