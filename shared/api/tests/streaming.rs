//! WebSocket subscribe and session restore through the handlers, against
//! moto and a fake Management API. The SSE endpoint needs the WebSocket API
//! itself (its live feed subscribes through it): its tests run against the
//! local cloud (`tests/tests/sse_stream.rs`).

use api::App;
use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use lambda_http::RequestExt;
use protocol::events::*;
use protocol::ids::{ConnectionId, ThreadId};
use protocol::UserId;
use std::collections::HashMap;
use std::time::Duration;
use store::connections::Connections;
use store::deployment::TableId;
use store::fake_ws::FakeManagementApi;
use store::testing::TestEnv;
use store::{ApiKeys, AwsClients, EventLog, EventWriter, Publisher, Threads};

struct Fixture {
    app: App,
    fake: FakeManagementApi,
    alice_key: String,
    bob_key: String,
}

async fn fixture() -> Fixture {
    let env = TestEnv::new().await;
    let fake = FakeManagementApi::start().await;
    let mut config = env.config.clone();
    config.ws_management_url = Some(fake.url.clone());
    let clients = AwsClients::new(&config);
    let keys = ApiKeys::new(clients.dynamo.clone(), config.table(TableId::ApiKeys).unwrap());
    let alice_key = keys.create(&UserId("alice".into()), "test").await.unwrap();
    let bob_key = keys.create(&UserId("bob".into()), "test").await.unwrap();
    Fixture { app: App::new(config, clients), fake, alice_key, bob_key }
}

impl Fixture {
    async fn thread(&self, owner: &str) -> ThreadId {
        let t = ThreadId(format!("th_{}", uuid::Uuid::new_v4().simple()));
        Threads::new(self.app.clients.dynamo.clone(), self.app.config.table(TableId::Agent).unwrap())
            .ensure(&t, &UserId(owner.into()))
            .await
            .unwrap();
        t
    }

    fn writer(&self, t: &ThreadId) -> EventWriter {
        let c = &self.app.config;
        let conns = Connections::new(self.app.clients.dynamo.clone(), c.table(TableId::Connections).unwrap());
        EventWriter::new(
            t.clone(),
            EventLog::from_config(self.app.clients.dynamo.clone(), c).unwrap(),
            Some(Publisher::new(conns, self.app.clients.connections.clone())),
        )
    }
}

fn tool_call(run: &str, id: &str) -> Event {
    Event::new(run, "a1", EventPayload::ToolCall(ToolCall { tool_call_id: id.into(), tool_name: "workflows".into(), args: Default::default() }))
}

fn run_start(run: &str, text: &str) -> Event {
    Event::new(run, "a1", EventPayload::RunStart(RunStart { message_id: format!("m-{run}"), trace_id: None, message_group_id: None, message: Some(text.into()), attachments: Vec::new() }))
}

fn run_finish(run: &str) -> Event {
    Event::new(run, "a1", EventPayload::RunFinish(RunFinish { status: RunStatus::Completed, reason: None, archived_workflow_ids: None }))
}

fn delta(run: &str, resp: &str, text: &str) -> Event {
    Event::new(run, "a1", EventPayload::TextDelta(TextDelta { text: text.into() })).with_response_id(resp)
}

fn get(path: &str, key: Option<&str>, headers: &[(&str, &str)]) -> lambda_http::Request {
    let mut b = http::Request::builder().method("GET").uri(path);
    if let Some(k) = key {
        b = b.header("authorization", format!("Bearer {k}"));
    }
    for (h, v) in headers {
        b = b.header(*h, *v);
    }
    let req = b.body(lambda_http::Body::Empty).unwrap();
    // The path parameter as API Gateway fills it.
    let segs: Vec<&str> = path.split('?').next().unwrap().split('/').collect();
    let thread = if segs.get(2) == Some(&"events") { segs[3] } else { segs.get(3).copied().unwrap_or_default() };
    let mut query = HashMap::new();
    if let Some(q) = path.split('?').nth(1) {
        for kv in q.split('&') {
            if let Some((k, v)) = kv.split_once('=') {
                query.insert(k.to_owned(), v.to_owned());
            }
        }
    }
    req.with_path_parameters(HashMap::from([("threadId".to_owned(), thread.to_owned())]))
        .with_query_string_parameters(query)
}

fn ws_event(route: &str, conn: &str, body: Option<serde_json::Value>, token: Option<&str>) -> ApiGatewayWebsocketProxyRequest {
    let mut v = serde_json::json!({"requestContext": {"routeKey": route, "connectionId": conn, "connectedAt": 0, "requestTimeEpoch": 0, "apiId": "local", "stage": "local"}});
    if let Some(b) = body {
        v["body"] = serde_json::Value::String(b.to_string());
    }
    if let Some(t) = token {
        v["queryStringParameters"] = serde_json::json!({"token": t});
    }
    serde_json::from_value(v).unwrap()
}

async fn connect(f: &Fixture, conn: &str, key: &str) {
    let r = api::handlers::gateway::handle(&f.app, ws_event("$connect", conn, None, Some(key))).await;
    assert_eq!(r.status_code, 200, "{:?}", r.body);
}

fn ids_received(f: &Fixture, conn: &str) -> Vec<u64> {
    f.fake
        .received(conn)
        .iter()
        .filter_map(|s| serde_json::from_str::<WsFrame>(s).ok())
        .filter_map(|fr| fr.id)
        .collect()
}

#[tokio::test]
async fn ws_subscribe_replays_then_goes_live_without_gap_or_duplicate() {
    let f = fixture().await;
    let t = f.thread("alice").await;
    let mut w = f.writer(&t);
    for i in 0..5 {
        w.emit(tool_call("r1", &format!("tc{i}"))).await.unwrap();
    }
    let subs = [("c1", 50u64, 2u64), ("c2", 150, 0), ("c3", 300, 4), ("c4", 450, 1), ("c5", 600, 3)];
    for (c, _, _) in subs {
        connect(&f, c, &f.alice_key).await;
    }
    // A writer keeps appending while the subscriptions replay and flip.
    let writer = tokio::spawn(async move {
        for i in 5..80 {
            w.emit(tool_call("r1", &format!("tc{i}"))).await.unwrap();
            if i % 10 == 0 {
                w.emit(delta("r1", &format!("resp{i}"), "x")).await.unwrap();
            }
        }
        w.flush().await.unwrap();
        w
    });
    let app = std::sync::Arc::new(f.app.clone());
    let mut handles = Vec::new();
    for (c, after_ms, cursor) in subs {
        let app = app.clone();
        let t = t.clone();
        handles.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(after_ms)).await;
            let sub = ws_event("subscribe", c, Some(serde_json::json!({"action":"subscribe","threadId":t.0,"lastEventId":cursor})), None);
            api::handlers::gateway::handle(&app, sub).await
        }));
    }
    for h in handles {
        let r = h.await.unwrap();
        assert_eq!(r.status_code, 200, "{:?}", r.body);
    }
    let _w = writer.await.unwrap();
    let head = EventLog::from_config(f.app.clients.dynamo.clone(), &f.app.config).unwrap().head(&t).await.unwrap();
    assert!(head >= 80);
    for (c, _, cursor) in subs {
        let ids = ids_received(&f, c);
        assert_eq!(ids, (cursor + 1..=head).collect::<Vec<u64>>(), "{c}: every id after the cursor exactly once, in order");
    }
    assert!(f.fake.received("c1").iter().any(|s| s.contains("\"subscribed\"")));
}

#[tokio::test]
async fn ws_stranger_gets_not_found_and_disconnect_forgets_subscriptions() {
    let f = fixture().await;
    let t = f.thread("alice").await;
    connect(&f, "bob1", &f.bob_key).await;
    let sub = |thread: &str| ws_event("subscribe", "bob1", Some(serde_json::json!({"action":"subscribe","threadId":thread})), None);
    let stranger = api::handlers::gateway::handle(&f.app, sub(&t.0)).await;
    let missing = api::handlers::gateway::handle(&f.app, sub("th_missing")).await;
    assert_eq!(stranger.status_code, 404);
    assert_eq!(missing.status_code, 404);
    let frames = f.fake.received("bob1");
    assert_eq!(frames.len(), 2);
    assert_eq!(frames[0].replace(&t.0, "X"), frames[1].replace("th_missing", "X"));
    assert!(frames[0].contains("not_found"));

    // Bad frames get a clear error.
    let bad = api::handlers::gateway::handle(&f.app, ws_event("$default", "bob1", Some(serde_json::json!({"action":"dance"})), None)).await;
    assert_eq!(bad.status_code, 400);

    connect(&f, "al1", &f.alice_key).await;
    let r = api::handlers::gateway::handle(&f.app, ws_event("subscribe", "al1", Some(serde_json::json!({"action":"subscribe","threadId":t.0})), None)).await;
    assert_eq!(r.status_code, 200);
    let conns = Connections::new(f.app.clients.dynamo.clone(), f.app.config.table(TableId::Connections).unwrap());
    assert_eq!(conns.live_subscribers(&t, true).await.unwrap(), vec![ConnectionId("al1".into())]);
    let r = api::handlers::gateway::handle(&f.app, ws_event("$disconnect", "al1", None, None)).await;
    assert_eq!(r.status_code, 200);
    assert!(conns.subscriptions(&t, true).await.unwrap().is_empty());
}

async fn get_json(f: &Fixture, path: &str, key: &str) -> (u16, serde_json::Value) {
    let resp = api::handlers::threads::handle(&f.app, get(path, Some(key), &[])).await;
    let status = resp.status().as_u16();
    let body = match resp.body() {
        lambda_http::Body::Text(t) => t.as_bytes().to_vec(),
        lambda_http::Body::Binary(b) => b.clone(),
        _ => Vec::new(),
    };
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

#[tokio::test]
async fn session_restore_folds_the_log() {
    let f = fixture().await;
    let t = f.thread("alice").await;
    let mut w = f.writer(&t);
    w.emit(run_start("r1", "list my workflows")).await.unwrap();
    w.emit(Event::new("r1", "a1", EventPayload::ReasoningDelta(TextDelta { text: "Let me check.".into() })).with_response_id("x")).await.unwrap();
    w.emit(tool_call("r1", "tc1")).await.unwrap();
    w.emit(Event::new("r1", "a1", EventPayload::ToolResult(ToolResult { tool_call_id: "tc1".into(), result: serde_json::json!({"n": 3}) }))).await.unwrap();
    w.emit(delta("r1", "y", "You have ")).await.unwrap();
    w.emit(delta("r1", "y", "3.")).await.unwrap();
    w.emit(run_finish("r1")).await.unwrap();
    w.emit(run_start("r2", "delete it")).await.unwrap();
    let mut cr = ConfirmationRequest::approval("cr1", "tc2", "workflows", Default::default(), Severity::Destructive, "Delete?");
    cr.input_type = Some(InputType::Approval);
    w.emit(Event::new("r2", "a1", EventPayload::ConfirmationRequest(cr))).await.unwrap();
    w.flush().await.unwrap();

    let (status, body) = get_json(&f, &format!("/instance-ai/threads/{}/messages", t.0), &f.alice_key).await;
    assert_eq!(status, 200, "{body}");
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(msgs[0]["content"], "list my workflows");
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"], "You have 3.");
    assert_eq!(msgs[1]["reasoning"], "Let me check.");
    assert_eq!(msgs[1]["agentTree"]["toolCalls"][0]["result"]["n"], 3);
    assert_eq!(msgs[3]["isStreaming"], true);
    let head = EventLog::from_config(f.app.clients.dynamo.clone(), &f.app.config).unwrap().head(&t).await.unwrap();
    assert_eq!(body["nextEventId"], head + 1);

    let (_, page) = get_json(&f, &format!("/instance-ai/threads/{}/messages?limit=1", t.0), &f.alice_key).await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 2);
    assert_eq!(page["nextBefore"], "r2");
    let (_, older) = get_json(&f, &format!("/instance-ai/threads/{}/messages?limit=1&before=r2", t.0), &f.alice_key).await;
    assert_eq!(older["messages"][0]["content"], "list my workflows");
    assert!(older.get("nextBefore").is_none());

    let (status, s) = get_json(&f, &format!("/instance-ai/threads/{}/status", t.0), &f.alice_key).await;
    assert_eq!(status, 200);
    assert_eq!(s, serde_json::json!({"hasActiveRun": true, "isSuspended": true, "backgroundTasks": []}));

    let (status, _) = get_json(&f, &format!("/instance-ai/threads/{}/status", t.0), &f.bob_key).await;
    assert_eq!(status, 404);
}
