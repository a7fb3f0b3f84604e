//! Shared by the agent end-to-end tests: a local cloud with the scripted
//! model (tests/fixtures/agent_script.json), a few stand-in domain tools,
//! an HTTP client for chat/confirm/cancel and an SSE reader.
#![allow(dead_code)]

use agent::tools::{Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use futures::StreamExt;
use local_cloud::{start, Options, Running};
use protocol::events::{ConfirmationRequest, Event, EventPayload, EventType, Severity};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::testing::TestEnv;
use tokio::sync::mpsc;

pub const ALICE: &str = "alice-key-for-agent-tests";
pub const BOB: &str = "bob-key-for-agent-tests";

pub fn script_path(file: &str) -> String {
    if file.starts_with('/') {
        return file.to_owned();
    }
    format!("{}/fixtures/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// A stand-in `workflows` domain tool: `list` answers three workflows,
/// `delete` needs approval.
pub struct WorkflowsStub;

impl Tool for WorkflowsStub {
    fn name(&self) -> &'static str {
        "workflows"
    }
    fn description(&self) -> &'static str {
        "Workflows (test stand-in)"
    }
    fn input_schema(&self) -> Value {
        json!({"oneOf": [
            {"type": "object", "properties": {"action": {"const": "list"}}, "required": ["action"], "additionalProperties": false},
            {"type": "object", "properties": {"action": {"const": "delete"}, "workflowId": {"type": "string"}}, "required": ["action", "workflowId"], "additionalProperties": false}
        ]})
    }
    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let gate = (args["action"] == "delete").then(|| {
            Gate::permission(
                ConfirmationRequest::approval("", "", "workflows", Map::new(), Severity::Warning, "Archive workflow?"),
                "workflows.delete",
            )
        });
        Box::pin(async move { Ok(gate) })
    }
    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match args["action"].as_str() {
                Some("list") => ToolOutcome::Done(json!({"workflows": [
                    {"id": "1", "name": "Weather", "active": true},
                    {"id": "2", "name": "CRM", "active": false},
                    {"id": "3", "name": "Backup", "active": true}
                ]})),
                _ => ToolOutcome::Done(json!({"archived": args["workflowId"]})),
            }
        })
    }
}

/// A tool that takes a minute unless aborted.
pub struct SlowTool;

impl Tool for SlowTool {
    fn name(&self) -> &'static str {
        "slow"
    }
    fn description(&self) -> &'static str {
        "Takes a long time (test)"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, _args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            tokio::select! {
                _ = ctx.abort.cancelled() => ToolOutcome::Failed("aborted".into()),
                _ = tokio::time::sleep(Duration::from_secs(60)) => ToolOutcome::Done(json!({"slow": "done"})),
            }
        })
    }
}

pub struct Cloud {
    pub running: Running,
    pub http: reqwest::Client,
    /// SSE readers, aborted on stop: an open stream would hold the
    /// server's graceful shutdown forever.
    readers: std::sync::Mutex<Vec<tokio::task::AbortHandle>>,
}

#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Poll the Steps queue into the step handler.
    pub consumers: bool,
    pub lease_secs: Option<u64>,
    /// Configure the scripted model (false: no INSTANCE_AI_MODEL).
    pub model: bool,
    pub confirmation_timeout_secs: Option<u64>,
    /// `INSTANCE_AI_APPROVAL_POLICY`.
    pub approval_policy: Option<&'static str>,
    /// The model script, a file in `tests/fixtures/`.
    pub script: &'static str,
    /// Register the stand-in tools (`workflows`, `slow`) over the real ones.
    pub stubs: bool,
    /// Other documented configuration variables, set as given.
    pub vars: &'static [(&'static str, &'static str)],
    /// HTTP Request nodes and credential tests may reach 127.0.0.1 (a local
    /// service); every other private address stays refused.
    pub local_http: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            consumers: true,
            lease_secs: None,
            model: true,
            confirmation_timeout_secs: None,
            approval_policy: None,
            script: "agent_script.json",
            stubs: true,
            vars: &[],
            local_http: false,
        }
    }
}

pub async fn cloud(setup: Setup) -> Cloud {
    cloud_with(setup, |c| (c.clone(), ()), None).await.0
}

/// A cloud whose agent runtime uses the clients `wrap` makes (e.g. counted
/// ones) and, when given, another model.
pub async fn cloud_with<X>(
    setup: Setup,
    wrap: impl FnOnce(&store::AwsClients) -> (store::AwsClients, X),
    model: Option<Arc<dyn agent::model::ModelProvider>>,
) -> (Cloud, X) {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), ALICE.into()), ("bob".into(), BOB.into())];
    config.model = setup.model.then(|| format!("scripted:{}", script_path(setup.script)));
    if setup.local_http {
        config.http_allowed_hosts = vec!["127.0.0.1".into()];
        config.http_allow_private_network = true;
    }
    if let Some(l) = setup.lease_secs {
        config.step_lease_secs = l;
    }
    config.confirmation_timeout_secs = setup.confirmation_timeout_secs;
    if let Some(p) = setup.approval_policy {
        config.set_var("INSTANCE_AI_APPROVAL_POLICY", p);
    }
    for (name, value) in setup.vars {
        config.set_var(name, *value);
    }
    let running = start(Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: setup.consumers, run_schedules: false })
        .await
        .expect("local cloud starts");
    let (clients, extra) = wrap(&running.app.clients);
    // The runtime with the stand-in domain tools, installed before any request.
    let mut rt = agent::Runtime::from_config(&running.app.config, &clients).await.expect("runtime");
    if setup.stubs {
        rt.tools.register(Arc::new(WorkflowsStub));
        rt.tools.register(Arc::new(SlowTool));
    }
    rt.settings.cancel_poll = Duration::from_millis(200);
    if let Some(m) = model {
        rt.model = Ok(m);
    }
    running.app.agent.set(Arc::new(rt)).expect("runtime not yet built");
    (Cloud { running, http: reqwest::Client::new(), readers: Default::default() }, extra)
}

pub fn thread() -> String {
    format!("t-{}", uuid_like())
}

fn uuid_like() -> String {
    let n = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{n:x}")
}

impl Cloud {
    /// Closes every event stream opened so far (SSE and WebSocket readers).
    pub fn close_feeds(&self) {
        for r in self.readers.lock().unwrap().drain(..) {
            r.abort();
        }
    }

    /// Closes the event streams, then stops the cloud.
    pub async fn stop(self) {
        self.close_feeds();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.running.shutdown()).await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.running.base_url(), path)
    }

    pub async fn post(&self, key: &str, path: &str, body: Value) -> (u16, Value) {
        let resp = self.http.post(self.url(path)).bearer_auth(key).json(&body).send().await.expect("request");
        let status = resp.status().as_u16();
        let body = resp.json::<Value>().await.unwrap_or(Value::Null);
        (status, body)
    }

    pub async fn chat(&self, key: &str, thread: &str, message: &str) -> (u16, Value) {
        self.post(key, &format!("/instance-ai/chat/{thread}"), json!({"message": message})).await
    }

    pub async fn confirm(&self, key: &str, request_id: &str, body: Value) -> (u16, Value) {
        self.post(key, &format!("/instance-ai/confirm/{request_id}"), body).await
    }

    pub async fn cancel(&self, key: &str, thread: &str) -> (u16, Value) {
        self.post(key, &format!("/instance-ai/chat/{thread}/cancel"), json!({})).await
    }

    /// Subscribes to the thread's events over SSE from the beginning. The
    /// endpoint answers 404 until the thread exists (its first chat), so the
    /// reader retries until it is admitted; replay from 0 loses nothing.
    pub async fn sse_events(&self, key: &str, thread: &str) -> Feed {
        let (tx, rx) = mpsc::unbounded_channel();
        let (http, url, key) = (self.http.clone(), self.url(&format!("/instance-ai/events/{thread}")), key.to_owned());
        let reader = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let resp = http.get(&url).bearer_auth(&key).header("accept", "text/event-stream").send().await;
                let status = resp.as_ref().map(|r| r.status().as_u16()).unwrap_or(0);
                match resp {
                    Ok(r) if status == 200 => return read_sse(r, tx).await,
                    _ if Instant::now() > deadline => panic!("SSE never admitted the subscriber ({status})"),
                    _ => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        self.readers.lock().unwrap().push(reader.abort_handle());
        Feed { rx, seen: Vec::new() }
    }
}

impl Cloud {
    /// The thread's events over the WebSocket API, from the beginning:
    /// frames arrive in the order the writers published them. The gateway
    /// refuses a thread that does not exist yet (before its first chat), so
    /// the reader re-subscribes until it is admitted; replay from 0 loses nothing.
    pub async fn events(&self, key: &str, thread: &str) -> Feed {
        use tokio_tungstenite::tungstenite::Message as Ws;
        let url = format!("{}?token={key}", self.running.ws_url());
        let (mut socket, _) = tokio_tungstenite::connect_async(url.as_str()).await.expect("websocket connects");
        let sub = json!({"action": "subscribe", "threadId": thread, "lastEventId": 0}).to_string();
        futures::SinkExt::send(&mut socket, Ws::Text(sub.clone().into())).await.expect("subscribe sent");
        let (tx, rx) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            while let Some(Ok(msg)) = socket.next().await {
                let Ws::Text(text) = msg else { continue };
                let Ok(frame) = serde_json::from_str::<protocol::events::WsFrame>(&text) else {
                    if text.contains("\"error\"") {
                        assert!(Instant::now() < deadline, "gateway keeps refusing: {text}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        if futures::SinkExt::send(&mut socket, Ws::Text(sub.clone().into())).await.is_err() {
                            return;
                        }
                    }
                    continue; // acknowledgements
                };
                if tx.send(Frame { id: frame.id, event: frame.event, at: Instant::now() }).is_err() {
                    return;
                }
            }
        });
        self.readers.lock().unwrap().push(reader.abort_handle());
        Feed { rx, seen: Vec::new() }
    }
}

#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<u64>,
    pub event: Event,
    pub at: Instant,
}

impl Frame {
    pub fn kind(&self) -> EventType {
        self.event.event_type()
    }
}

async fn read_sse(resp: reqwest::Response, tx: mpsc::UnboundedSender<Frame>) {
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    while let Some(Ok(bytes)) = stream.next().await {
        buf.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut id = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if data.is_empty() {
                continue;
            }
            match Event::from_json(&data) {
                Ok(event) => {
                    if tx.send(Frame { id, event, at: Instant::now() }).is_err() {
                        return;
                    }
                }
                Err(_) => continue, // control frames of the stream, not events
            }
        }
    }
}

pub struct Feed {
    rx: mpsc::UnboundedReceiver<Frame>,
    pub seen: Vec<Frame>,
}

impl Feed {
    /// Reads frames until `stop` matches one (included); panics after `timeout`.
    pub async fn until(&mut self, timeout: Duration, stop: impl Fn(&Frame) -> bool) -> Vec<Frame> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut got = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(f)) => {
                    self.seen.push(f.clone());
                    let done = stop(&f);
                    got.push(f);
                    if done {
                        return got;
                    }
                }
                Ok(None) => panic!("event stream ended; got {:?}", kinds(&got)),
                Err(_) => panic!("timed out; got {:?}", kinds(&got)),
            }
        }
    }

    pub async fn until_type(&mut self, t: EventType, timeout: Duration) -> Vec<Frame> {
        self.until(timeout, |f| f.kind() == t).await
    }

    /// Frames that arrive within `wait`.
    pub async fn drain(&mut self, wait: Duration) -> Vec<Frame> {
        let mut got = Vec::new();
        while let Ok(Some(f)) = tokio::time::timeout(wait, self.rx.recv()).await {
            self.seen.push(f.clone());
            got.push(f);
        }
        got
    }
}

pub fn kinds(frames: &[Frame]) -> Vec<&'static str> {
    frames.iter().map(|f| f.kind().as_str()).collect()
}

pub fn payload(frame: &Frame) -> Value {
    frame.event.to_value()["payload"].clone()
}

pub fn find(frames: &[Frame], t: EventType) -> Vec<&Frame> {
    frames.iter().filter(|f| f.kind() == t).collect()
}

pub fn request_id(frames: &[Frame]) -> String {
    let f = frames.iter().rev().find(|f| f.kind() == EventType::ConfirmationRequest).expect("a confirmation-request");
    match &f.event.payload {
        EventPayload::ConfirmationRequest(c) => c.request_id.clone(),
        _ => unreachable!(),
    }
}

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use store::deployment::QueueId;

/// Takes the next step message off the queue (as the event source would).
pub async fn receive(cloud: &Cloud) -> SqsEvent {
    let app = &cloud.running.app;
    let queue = app.config.queue_url(QueueId::Steps).unwrap().to_owned();
    for _ in 0..20 {
        let out = app.clients.sqs.receive_message().queue_url(&queue).max_number_of_messages(1).wait_time_seconds(1).send().await.unwrap();
        if let Some(m) = out.messages.unwrap_or_default().into_iter().next() {
            app.clients.sqs.delete_message().queue_url(&queue).receipt_handle(m.receipt_handle.clone().unwrap()).send().await.unwrap();
            let mut rec = SqsMessage::default();
            rec.message_id = m.message_id;
            rec.body = m.body;
            let mut ev = SqsEvent::default();
            ev.records = vec![rec];
            return ev;
        }
    }
    panic!("no step message arrived");
}

pub const WAIT: Duration = Duration::from_secs(20);

/// A scripted model whose script is set after the cloud started.
#[derive(Default)]
pub struct LateScript(std::sync::Mutex<Option<Arc<agent::model::scripted::ScriptedProvider>>>);

impl LateScript {
    pub fn set(&self, script: Value) {
        *self.0.lock().unwrap() = Some(Arc::new(agent::model::scripted::ScriptedProvider::from_json(&script.to_string()).expect("script parses")));
    }
}

impl agent::model::ModelProvider for LateScript {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "late"
    }
    fn stream(&self, request: agent::model::ModelRequest, cancel: agent::model::CancellationToken) -> agent::model::ModelStream {
        let p = self.0.lock().unwrap().clone().expect("the test set the script");
        p.stream(request, cancel)
    }
}

