//! Cost per turn (`cargo bench -p e2e --bench cost_per_turn`, with moto from
//! `infra/local/env.sh`): what AWS would bill, in dollars at the list
//! prices of `prices.rs`, for
//!
//! - a simple chat turn (one model call, text),
//! - an approval round trip (the agent asks to archive a workflow, the user
//!   approves, the agent goes on),
//! - a 10-step build-and-verify conversation (the real builder, workspace
//!   and executions tools, the scripted model: `tests/fixtures/cost_script.json`),
//! - one webhook execution of a published 5-node workflow (`lastNode`),
//! - an idle hour.
//!
//! Everything goes through the local cloud as a client would (HTTP, the
//! WebSocket API, MCP, the webhook URL; steps and executions reach their
//! functions through the SQS event sources). Counted: Lambda invocations
//! and handler time per function at its configured memory (the local
//! cloud's meter; each invocation rounded up to 1 ms), HTTP API requests,
//! WebSocket messages both ways and connection minutes, DynamoDB read and
//! write request units and SQS requests (moto_server.py's `/_usage`, from
//! item sizes). Handler times are this machine's against moto (slower than
//! DynamoDB), so the Lambda share is an upper bound. Not counted: model
//! tokens (the provider's bill), CloudWatch Logs, storage, cold starts.

#[path = "../../tests/agent_common/mod.rs"]
mod agent_common;
mod prices;

use agent_common::*;
use local_cloud::metering::Usage;
use local_cloud::{start, Options, Running};
use prices::*;
use protocol::events::EventType;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::{Duration, Instant};
use store::deployment::{FunctionId, QUEUES};
use store::testing::TestEnv;

/// DynamoDB and SQS usage of one table/queue prefix, as moto counts it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Storage {
    read_units: f64,
    write_units: f64,
    sqs_requests: u64,
    /// Empty long polls of the local event source (not what AWS bills per case).
    empty_receives: u64,
}

struct Moto {
    http: reqwest::Client,
    url: String,
    prefix: String,
}

impl Moto {
    async fn arm(prefix: &str) -> Moto {
        let moto = Moto { http: reqwest::Client::new(), url: store::testing::moto_endpoint(), prefix: prefix.to_owned() };
        let r = moto.http.post(format!("{}/_usage", moto.url)).json(&json!({"prefix": prefix})).send().await.expect("moto");
        assert!(r.status().is_success(), "moto_server.py does not meter: run with infra/local/env.sh's moto");
        moto
    }

    async fn usage(&self) -> Storage {
        let u: Value = self.http.get(format!("{}/_usage?prefix={}", self.url, self.prefix)).send().await.unwrap().json().await.unwrap();
        Storage {
            read_units: u["dynamodb"]["readUnits"].as_f64().unwrap_or(0.0),
            write_units: u["dynamodb"]["writeUnits"].as_f64().unwrap_or(0.0),
            sqs_requests: u["sqs"]["requests"].as_u64().unwrap_or(0),
            empty_receives: u["sqs"]["emptyReceives"].as_u64().unwrap_or(0),
        }
    }
}

#[derive(Clone)]
struct Snapshot {
    lambda: Usage,
    storage: Storage,
    at: Instant,
}

async fn snapshot(running: &Running, moto: &Moto) -> Snapshot {
    Snapshot { lambda: running.meter.snapshot(), storage: moto.usage().await, at: Instant::now() }
}

/// Waits until nothing is billed for a while (the last step's writes and
/// the event source's delete land after the client's last frame).
async fn settled(running: &Running, moto: &Moto) -> Snapshot {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = snapshot(running, moto).await;
    loop {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let now = snapshot(running, moto).await;
        let busy = now.lambda != last.lambda || Storage { empty_receives: 0, ..now.storage.clone() } != Storage { empty_receives: 0, ..last.storage.clone() };
        if !busy || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// One case's bill.
struct Bill {
    usage: Usage,
    read_units: f64,
    write_units: f64,
    sqs_requests: u64,
    websocket_connection_minutes: f64,
}

impl Bill {
    fn between(before: &Snapshot, after: &Snapshot, websocket_connections: u32) -> Bill {
        Bill {
            usage: after.lambda.since(&before.lambda),
            read_units: after.storage.read_units - before.storage.read_units,
            write_units: after.storage.write_units - before.storage.write_units,
            sqs_requests: after.storage.sqs_requests - before.storage.sqs_requests,
            websocket_connection_minutes: f64::from(websocket_connections) * after.at.duration_since(before.at).as_secs_f64() / 60.0,
        }
    }

    fn gb_seconds(&self) -> f64 {
        self.usage
            .functions
            .iter()
            .map(|(id, f)| f.billed_ms as f64 / 1000.0 * f64::from(id.def().memory_mb) / 1024.0)
            .sum()
    }

    fn invocations(&self) -> u64 {
        self.usage.functions.values().map(|f| f.invocations).sum()
    }

    fn lambda(&self) -> f64 {
        self.gb_seconds() * LAMBDA_GB_SECOND + self.invocations() as f64 * LAMBDA_REQUEST
    }
    fn dynamodb(&self) -> f64 {
        self.read_units * DYNAMODB_READ_UNIT + self.write_units * DYNAMODB_WRITE_UNIT
    }
    fn sqs(&self) -> f64 {
        self.sqs_requests as f64 * SQS_REQUEST
    }
    fn api_gateway(&self) -> f64 {
        let u = &self.usage;
        u.http_api_requests as f64 * HTTP_API_REQUEST
            + (u.websocket_messages_in + u.websocket_messages_out) as f64 * WEBSOCKET_MESSAGE
            + self.websocket_connection_minutes * WEBSOCKET_CONNECTION_MINUTE
    }
    fn total(&self) -> f64 {
        self.lambda() + self.dynamodb() + self.sqs() + self.api_gateway()
    }

    fn scaled(&self, by: f64) -> Bill {
        let mut usage = self.usage.clone();
        for f in usage.functions.values_mut() {
            f.invocations = (f.invocations as f64 * by).round() as u64;
            f.billed_ms = (f.billed_ms as f64 * by).round() as u64;
        }
        usage.http_api_requests = (usage.http_api_requests as f64 * by).round() as u64;
        usage.websocket_messages_in = (usage.websocket_messages_in as f64 * by).round() as u64;
        usage.websocket_messages_out = (usage.websocket_messages_out as f64 * by).round() as u64;
        Bill {
            usage,
            read_units: self.read_units * by,
            write_units: self.write_units * by,
            sqs_requests: (self.sqs_requests as f64 * by).round() as u64,
            websocket_connection_minutes: self.websocket_connection_minutes * by,
        }
    }

    fn print(&self, case: &str) {
        let u = &self.usage;
        let mut functions = String::new();
        for (id, f) in &u.functions {
            let _ = write!(functions, "{}{:?} {}× {} ms", if functions.is_empty() { "" } else { ", " }, id, f.invocations, f.billed_ms);
        }
        println!("{case}: ${:.7}", self.total());
        println!(
            "    Lambda ${:.7}: {} invocations, {:.3} GB-s ({functions})",
            self.lambda(),
            self.invocations(),
            self.gb_seconds()
        );
        println!("    DynamoDB ${:.7}: {:.1} read units, {:.0} write units", self.dynamodb(), self.read_units, self.write_units);
        println!("    SQS ${:.7}: {} requests", self.sqs(), self.sqs_requests);
        println!(
            "    API Gateway ${:.7}: {} HTTP API requests, {} WebSocket messages ({} in, {} out), {:.2} connection minutes",
            self.api_gateway(),
            u.http_api_requests,
            u.websocket_messages_in + u.websocket_messages_out,
            u.websocket_messages_in,
            u.websocket_messages_out,
            self.websocket_connection_minutes
        );
    }
}

const TURN_WAIT: Duration = Duration::from_secs(120);

fn assert_finished(frames: &[Frame]) {
    let last = frames.last().expect("frames");
    assert_eq!(last.kind(), EventType::RunFinish, "{:?}", kinds(frames));
    assert_eq!(payload(last)["status"], "completed", "{:?}", kinds(frames));
    // Every tool call did its work: the figures are of a conversation that happened.
    for r in find(frames, EventType::ToolResult) {
        let p = payload(r);
        assert!(p.get("error").is_none_or(Value::is_null), "a tool failed: {p}");
    }
}

/// A thread with one finished turn and a subscribed WebSocket client (what
/// a person has after their first message), so a case measures a turn alone.
async fn open_thread(cloud: &Cloud) -> (String, Feed) {
    let t = thread();
    let (status, body) = cloud.chat(ALICE, &t, "Say hello").await;
    assert!(status < 300, "{status} {body}");
    let mut feed = cloud.events(ALICE, &t).await;
    assert_finished(&feed.until_type(EventType::RunFinish, TURN_WAIT).await);
    (t, feed)
}

async fn mcp(cloud: &Cloud, tool: &str, args: Value) -> Value {
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let (status, body) = cloud.post(ALICE, "/mcp", rpc).await;
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "{tool}: {body}");
    body["result"]["structuredContent"].clone()
}

/// Webhook → Name → Greet → Known (If) → Done, answering with the last node.
const WEBHOOK_WORKFLOW: &str = "
const hook = trigger({ type: 'n8n-nodes-base.webhook', version: 2, config: { name: 'Hook', parameters: { httpMethod: 'POST', path: 'cost-hook', responseMode: 'lastNode' } } });
const name = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Name', parameters: { assignments: { assignments: [{ name: 'name', value: expr('{{ $json.body.name }}'), type: 'string' }] } } } });
const greet = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Greet', parameters: { assignments: { assignments: [{ name: 'greeting', value: expr('hello {{ $json.name }}'), type: 'string' }] }, options: {} } } });
const known = ifElse({ version: 2.2, config: { name: 'Known', parameters: { conditions: { combinator: 'and', conditions: [{ leftValue: expr('{{ $json.greeting }}'), rightValue: '', operator: { type: 'string', operation: 'notEmpty', singleValue: true } }] } } } });
const done = node({ type: 'n8n-nodes-base.noOp', version: 1, config: { name: 'Done' } });
export default workflow('cost-hook', 'Cost webhook').add(hook).to(name).to(greet).to(known.onTrue(done));
";

async fn turns() -> Vec<(String, Bill)> {
    let (cloud, ()) = cloud_with(
        Setup {
            script: "cost_script.json",
            stubs: false,
            approval_policy: Some("*=always_allow,workflows.delete=require_approval"),
            ..Setup::default()
        },
        |c| (c.clone(), ()),
        None,
    )
    .await;
    let moto = Moto::arm(&cloud.running.app.config.table(store::deployment::TableId::Agent).unwrap().rsplit_once('-').unwrap().0.to_owned()).await;
    let running = &cloud.running;
    let mut bills = Vec::new();

    // --- a simple chat turn (the second turn of a thread, as a warm Lambda sees it)
    let (t, mut feed) = open_thread(&cloud).await;
    let before = settled(running, &moto).await;
    cloud.chat(ALICE, &t, "Say hello").await;
    assert_finished(&feed.until_type(EventType::RunFinish, TURN_WAIT).await);
    bills.push(("simple chat turn (1 model call, text)".to_owned(), Bill::between(&before, &settled(running, &moto).await, 1)));

    // --- an approval round trip: archive a workflow, approved on its card
    mcp(&cloud, "create_workflow_from_code", json!({"code": "export default workflow('scratch', 'Scratch').add(trigger({ type: 'n8n-nodes-base.manualTrigger', version: 1, config: { name: 'Start' } }));"})).await;
    let (t, mut feed) = open_thread(&cloud).await;
    let before = settled(running, &moto).await;
    cloud.chat(ALICE, &t, "Archive the scratch workflow").await;
    let frames = feed.until(TURN_WAIT, |f| matches!(f.kind(), EventType::ConfirmationRequest | EventType::RunFinish)).await;
    let (status, body) = cloud.confirm(ALICE, &request_id(&frames), json!({"approved": true})).await;
    assert_eq!(status, 200, "{body}");
    let frames = feed.until_type(EventType::RunFinish, TURN_WAIT).await;
    assert_finished(&frames);
    let archived = find(&frames, EventType::ToolResult).iter().any(|f| payload(f)["result"]["success"] == true);
    assert!(archived, "the approved archive ran: {:?}", find(&frames, EventType::ToolResult).iter().map(|f| payload(f)).collect::<Vec<_>>());
    bills.push(("approval round trip (3 model calls, archive approved on its card)".to_owned(), Bill::between(&before, &settled(running, &moto).await, 1)));

    // --- a 10-step build-and-verify conversation
    let (t, mut feed) = open_thread(&cloud).await;
    let before = settled(running, &moto).await;
    cloud.chat(ALICE, &t, "Build and verify the order triage").await;
    let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(300)).await;
    assert_finished(&frames);
    assert_eq!(find(&frames, EventType::ToolResult).len(), 9, "nine tool calls: {:?}", kinds(&frames));
    bills.push(("10-step build-and-verify conversation (build, run, inspect, edit, rebuild, rerun)".to_owned(), Bill::between(&before, &settled(running, &moto).await, 1)));

    // --- one webhook execution of a published 5-node workflow
    let wf = mcp(&cloud, "create_workflow_from_code", json!({"code": WEBHOOK_WORKFLOW})).await["workflowId"].as_str().unwrap().to_owned();
    mcp(&cloud, "publish_workflow", json!({"workflowId": wf})).await;
    let hook = || async {
        let r = cloud.http.post(cloud.url("/webhook/cost-hook")).json(&json!({"name": "Ada"})).send().await.unwrap();
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["greeting"], "hello Ada", "{body}");
    };
    hook().await; // warm
    let before = settled(running, &moto).await;
    hook().await;
    bills.push(("webhook execution, 5-node workflow, lastNode answer".to_owned(), Bill::between(&before, &settled(running, &moto).await, 0)));
    cloud.stop().await;
    bills
}

/// An hour with nobody connected: what the functions do on their own,
/// measured over a window holding one tick of the sweep's schedule (which
/// the sweep switched off at its first run: nothing to sweep).
async fn idle_hour() -> Bill {
    let env = TestEnv::new().await;
    let running = start(Options { config: env.config.clone(), prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: true })
        .await
        .expect("local cloud starts");
    let moto = Moto::arm(&env.prefix).await;
    // The schedule's first run is at start; the window holds the next.
    let before = settled(&running, &moto).await;
    tokio::time::sleep(Duration::from_secs(62)).await;
    let after = settled(&running, &moto).await;
    let window = after.at.duration_since(before.at).as_secs_f64();
    let bill = Bill::between(&before, &after, 0).scaled(3600.0 / window);
    let polls = (after.storage.empty_receives - before.storage.empty_receives) as f64 * 3600.0 / window;
    println!("(idle: the local event source's empty long polls, {polls:.0}/hour over {} queues, are not billed here: see below)", QUEUES.len());
    running.shutdown().await;
    bill
}

/// Lambda's SQS event source mapping long-polls each queue on AWS's side
/// and SQS bills those receives. AWS does not publish the idle poller count;
/// this assumes the documented starting five pollers, 20 s long polls each.
const ESM_IDLE_RECEIVES_PER_QUEUE_HOUR: f64 = 5.0 * 3600.0 / 20.0;

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    println!("prices: AWS on-demand list prices, us-east-1, arm64, checked {PRICES_DATE} (tests/benches/cost_per_turn/prices.rs)");
    for (case, bill) in turns().await {
        bill.print(&case);
    }
    let idle = idle_hour().await;
    idle.print("idle hour (nobody connected): the functions' own work");
    let ticks = idle.usage.functions.get(&FunctionId::Sweep).map_or(0, |f| f.invocations);
    println!("idle hour: EventBridge Scheduler: {ticks} sweep ticks = ${:.7}", ticks as f64 * SCHEDULER_INVOCATION);
    println!(
        "idle hour total of what the deployment does (the sweep's schedule is off with nothing to sweep): ${:.7}",
        idle.total() + ticks as f64 * SCHEDULER_INVOCATION
    );
    let polling = QUEUES.len() as f64 * ESM_IDLE_RECEIVES_PER_QUEUE_HOUR;
    println!(
        "idle hour, not ours to switch off: the SQS event sources' own long polls on AWS's side (assumed, not measured: {} queues, 5 pollers, 20 s polls): {polling:.0} receives = ${:.7}",
        QUEUES.len(),
        polling * SQS_REQUEST
    );
    println!(
        "for comparison, an SSE client left open an hour holds the events function ({} MB) streaming: ${:.5}/hour",
        FunctionId::Events.def().memory_mb,
        3600.0 * f64::from(FunctionId::Events.def().memory_mb) / 1024.0 * LAMBDA_GB_SECOND + 4.0 * LAMBDA_REQUEST
    );
}
