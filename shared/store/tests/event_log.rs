//! The event log, the coalescing writer and the publisher,
//! against moto (and a fake Management API for 410 Gone).

use protocol::events::*;
use protocol::ids::{ConnectionId, ThreadId};
use protocol::UserId;
use store::connections::{Connections, GoLive};
use store::counting::RequestCounter;
use store::deployment::TableId;
use store::fake_ws::FakeManagementApi;
use store::testing::TestEnv;
use store::{AwsClients, EventLog, EventWriter, Publisher, StoreError};

fn thread() -> ThreadId {
    ThreadId(format!("th_{}", uuid::Uuid::new_v4().simple()))
}

fn tool_call(run: &str, agent: &str, id: &str) -> Event {
    let mut args = serde_json::Map::new();
    args.insert("action".into(), "list".into());
    Event::new(
        run,
        agent,
        EventPayload::ToolCall(ToolCall { tool_call_id: id.into(), tool_name: "workflows".into(), args }),
    )
}

fn text_delta(run: &str, agent: &str, response: &str, text: &str) -> Event {
    Event::new(run, agent, EventPayload::TextDelta(TextDelta { text: text.into() })).with_response_id(response)
}

fn reasoning_delta(run: &str, agent: &str, response: &str, text: &str) -> Event {
    Event::new(run, agent, EventPayload::ReasoningDelta(TextDelta { text: text.into() })).with_response_id(response)
}

fn log_of(env: &TestEnv) -> EventLog {
    EventLog::new(env.clients.dynamo.clone(), env.config.table(TableId::Events).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_writers_get_ids_one_to_1600_exactly() {
    let env = TestEnv::new().await;
    let t = thread();
    let table = env.config.table(TableId::Events).unwrap().to_owned();
    let mut tasks = Vec::new();
    for w in 0..8 {
        // One EventLog per writer: separate head caches, like separate Lambdas,
        // so writers keep losing slots to each other and must catch up. The
        // writers run concurrently: the local moto makes each request atomic,
        // as DynamoDB does (infra/local/moto_server.py).
        let log = EventLog::new(env.clients.dynamo.clone(), table.clone());
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..200 {
                ids.push(log.append(&t, &tool_call("r", &format!("w{w}"), &format!("{w}-{i}"))).await?);
            }
            Ok::<_, StoreError>(ids)
        }));
    }
    let mut all_ids = Vec::new();
    for task in tasks {
        let ids = task.await.unwrap().unwrap();
        // Each writer's own ids increase: commit order follows program order.
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        all_ids.extend(ids);
    }
    all_ids.sort_unstable();
    assert_eq!(all_ids, (1..=1600).collect::<Vec<u64>>());
    let events = log_of(&env).read_all_after(&t, 0).await.unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=1600).collect::<Vec<u64>>());
    // Every writer's events are there, in its order.
    for w in 0..8 {
        let mine: Vec<String> = events
            .iter()
            .filter(|e| e.event.agent_id.0 == format!("w{w}"))
            .map(|e| match &e.event.payload {
                EventPayload::ToolCall(c) => c.tool_call_id.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(mine, (0..200).map(|i| format!("{w}-{i}")).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn a_warm_writer_pays_one_write_per_durable_event() {
    let env = TestEnv::new().await;
    let (client, counter) = RequestCounter::instrument(&env.clients.dynamo);
    let log = EventLog::new(client, env.config.table(TableId::Events).unwrap());
    let t = thread();
    for i in 0..20 {
        assert_eq!(log.append(&t, &tool_call("r", "a", &i.to_string())).await.unwrap(), i + 1);
    }
    // The head is learnt once, then one PutItem per event.
    assert_eq!(counter.get("Query"), 1, "{:?}", counter.snapshot());
    assert_eq!(counter.get("PutItem"), 20, "{:?}", counter.snapshot());
    assert_eq!(counter.total(), 21);

    counter.reset();
    let batch: Vec<Event> = (0..5).map(|i| tool_call("r", "a", &format!("b{i}"))).collect();
    assert_eq!(log.append_batch(&t, &batch).await.unwrap(), vec![21, 22, 23, 24, 25]);
    assert_eq!(counter.snapshot().into_iter().collect::<Vec<_>>(), vec![("TransactWriteItems".to_owned(), 1)]);
}

#[tokio::test]
async fn a_stale_writer_catches_up_and_batches_are_consecutive() {
    let env = TestEnv::new().await;
    let t = thread();
    let table = env.config.table(TableId::Events).unwrap();
    let a = EventLog::new(env.clients.dynamo.clone(), table);
    let b = EventLog::new(env.clients.dynamo.clone(), table);
    assert_eq!(a.append(&t, &tool_call("r", "a", "1")).await.unwrap(), 1);
    assert_eq!(b.append(&t, &tool_call("r", "b", "2")).await.unwrap(), 2);
    for i in 0..10 {
        b.append(&t, &tool_call("r", "b", &format!("x{i}"))).await.unwrap();
    }
    // `a` believes the head is 1; it is 12.
    let batch: Vec<Event> = (0..3).map(|i| tool_call("r", "a", &format!("y{i}"))).collect();
    assert_eq!(a.append_batch(&t, &batch).await.unwrap(), vec![13, 14, 15]);
    assert_eq!(a.append(&t, &tool_call("r", "a", "z")).await.unwrap(), 16);
    assert_eq!(a.head(&t).await.unwrap(), 16);
}

#[tokio::test]
async fn ephemeral_events_are_refused_by_the_log() {
    let env = TestEnv::new().await;
    let err = log_of(&env).append(&thread(), &text_delta("r", "a", "m", "hi")).await.unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
}

/// Deltas stream live; the log gets one block per segment, before the
/// durable event that follows it, and replay text equals live text.
#[tokio::test]
async fn coalesced_blocks_replay_exactly_the_live_text() {
    let env = TestEnv::new().await;
    let t = thread();
    // One live WebSocket subscriber sees what the writer streams.
    let fake = FakeManagementApi::start().await;
    let clients = clients_with_ws(&env, &fake).await;
    let conns = Connections::new(env.clients.dynamo.clone(), env.config.table(TableId::Connections).unwrap());
    let (conn, user) = (ConnectionId("c1".into()), UserId("alice".into()));
    conns.open(&conn, &user).await.unwrap();
    let token = conns.subscribe_replaying(&t, &conn, &user, 0).await.unwrap();
    assert_eq!(conns.go_live(&t, &conn, &token, 0, env.config.table(TableId::Events).unwrap()).await.unwrap(), GoLive::Live);
    let (client, counter) = RequestCounter::instrument(&env.clients.dynamo);
    let log = EventLog::new(client, env.config.table(TableId::Events).unwrap());
    let publisher = Publisher::new(conns.clone(), clients.connections.clone());
    let mut w = EventWriter::new(t.clone(), log.clone(), Some(publisher));

    w.emit(Event::new("r1", "a1", EventPayload::RunStart(RunStart { message_id: "m1".into(), trace_id: None, message_group_id: None, message: Some("hi".into()), attachments: Vec::new() })))
        .await
        .unwrap();
    for piece in ["Let me ", "look ", "that up."] {
        w.emit(reasoning_delta("r1", "a1", "resp1", piece)).await.unwrap();
    }
    for piece in ["You have ", "3 ", "workflows"] {
        w.emit(text_delta("r1", "a1", "resp1", piece)).await.unwrap();
    }
    // A background agent streams at the same time: its text is its own.
    w.emit(text_delta("r1", "a2", "resp9", "sub-agent text")).await.unwrap();
    w.emit(Event::new("r1", "a1", EventPayload::Status(Status { message: "working".into() }))).await.unwrap();
    counter.reset();
    w.emit(tool_call("r1", "a1", "tc1")).await.unwrap();
    // Two blocks + the tool call in one transaction (and the publisher's
    // consistent read of the subscribers).
    assert_eq!(counter.get("TransactWriteItems"), 1, "{:?}", counter.snapshot());
    assert_eq!(counter.get("PutItem"), 0);
    w.emit(text_delta("r1", "a1", "resp2", "Done.")).await.unwrap();
    w.emit(Event::new("r1", "a1", EventPayload::RunFinish(RunFinish { status: RunStatus::Completed, reason: None, archived_workflow_ids: None })))
        .await
        .unwrap();
    w.flush().await.unwrap();

    let replay = log.read_all_after(&t, 0).await.unwrap();
    let types: Vec<(&str, &str)> =
        replay.iter().map(|e| (e.event.event_type().as_str(), e.event.agent_id.as_str())).collect();
    assert_eq!(
        types,
        vec![
            ("run-start", "a1"),
            ("reasoning-block", "a1"),
            ("text-block", "a1"),
            ("tool-call", "a1"),
            ("text-block", "a1"),
            ("run-finish", "a1"),
            ("text-block", "a2"),
        ]
    );
    assert!(replay.iter().all(|e| !e.event.is_ephemeral()), "ephemeral event in the log");
    assert_eq!(replay.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=7).collect::<Vec<u64>>());

    // Live text per (agent, kind, responseId) == block text.
    let received: Vec<WsFrame> = fake.received("c1").iter().map(|f| serde_json::from_str(f).unwrap()).collect();
    let frames: Vec<&Event> = received.iter().filter(|f| f.id.is_none()).map(|f| &f.event).collect();
    assert_eq!(frames.len(), 9, "every ephemeral frame reached the subscriber");
    let live_text = |agent: &str, ty: EventType, resp: &str| -> String {
        frames
            .iter()
            .filter(|e| e.agent_id.0 == agent && e.event_type() == ty && e.response_id.as_deref() == Some(resp))
            .map(|e| match &e.payload {
                EventPayload::TextDelta(d) | EventPayload::ReasoningDelta(d) => d.text.clone(),
                _ => String::new(),
            })
            .collect()
    };
    let block_text = |agent: &str, ty: EventType, resp: &str| -> String {
        replay
            .iter()
            .filter(|e| e.event.agent_id.0 == agent && e.event.event_type() == ty && e.event.response_id.as_deref() == Some(resp))
            .map(|e| match &e.event.payload {
                EventPayload::TextBlock(b) | EventPayload::ReasoningBlock(b) => b.text.clone(),
                _ => String::new(),
            })
            .collect()
    };
    for (agent, delta, block, resp) in [
        ("a1", EventType::ReasoningDelta, EventType::ReasoningBlock, "resp1"),
        ("a1", EventType::TextDelta, EventType::TextBlock, "resp1"),
        ("a1", EventType::TextDelta, EventType::TextBlock, "resp2"),
        ("a2", EventType::TextDelta, EventType::TextBlock, "resp9"),
    ] {
        let l = live_text(agent, delta, resp);
        assert!(!l.is_empty());
        assert_eq!(l, block_text(agent, block, resp), "{agent} {resp}");
    }
    // Durable frames reached the subscriber in id order, after the deltas they close.
    let ids: Vec<u64> = received.iter().filter_map(|f| f.id).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<u64>>());
    let first_block = received.iter().position(|f| f.event.event_type() == EventType::ReasoningBlock).unwrap();
    assert_eq!(received[..first_block].iter().filter(|f| f.id.is_none()).count(), 8, "the deltas and status streamed before tc1 precede the blocks it closed");
}

async fn clients_with_ws(env: &TestEnv, fake: &FakeManagementApi) -> AwsClients {
    let mut config = env.config.clone();
    config.ws_management_url = Some(fake.url.clone());
    AwsClients::new(&config)
}

#[tokio::test]
async fn a_gone_subscriber_is_removed_on_the_next_publish_and_never_fails_it() {
    let env = TestEnv::new().await;
    let fake = FakeManagementApi::start().await;
    let clients = clients_with_ws(&env, &fake).await;
    let conns = Connections::new(env.clients.dynamo.clone(), env.config.table(TableId::Connections).unwrap());
    let events_table = env.config.table(TableId::Events).unwrap();
    let t = thread();
    let user = UserId("alice".into());
    for c in ["c-live", "c-gone", "c-replaying"] {
        conns.open(&ConnectionId(c.into()), &user).await.unwrap();
        let token = conns.subscribe_replaying(&t, &ConnectionId(c.into()), &user, 0).await.unwrap();
        if c != "c-replaying" {
            assert_eq!(conns.go_live(&t, &ConnectionId(c.into()), &token, 0, events_table).await.unwrap(), GoLive::Live);
        }
    }
    fake.mark_gone("c-gone");
    let publisher = Publisher::new(conns.clone(), clients.connections.clone());
    let mut w = EventWriter::new(t.clone(), log_of(&env), Some(publisher.clone()));
    w.emit(tool_call("r", "a", "tc1")).await.unwrap();

    let got = fake.received("c-live");
    assert_eq!(got.len(), 1);
    let frame: WsFrame = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(frame.id, Some(1));
    assert!(fake.received("c-replaying").is_empty(), "replaying subscriptions get nothing from publishers");
    let subs: Vec<String> = conns.subscriptions(&t, true).await.unwrap().into_iter().map(|s| s.connection.0).collect();
    assert!(!subs.contains(&"c-gone".to_owned()), "gone subscription removed: {subs:?}");
    assert!(conns.owner(&ConnectionId("c-gone".into())).await.unwrap().is_none());

    // Ephemeral frames carry no id.
    w.emit(text_delta("r", "a", "m", "hi")).await.unwrap();
    let got = fake.received("c-live");
    assert_eq!(got.len(), 2);
    assert!(!got[1].contains("\"id\""), "{}", got[1]);
}

/// A page connects just after posting its message: its subscription goes
/// live while the answer streams. Its first delta carries the segment's text
/// so far (no block covers it yet), then it gets the deltas like everyone.
#[tokio::test]
async fn a_subscriber_that_joins_mid_segment_gets_the_text_so_far_then_deltas() {
    let env = TestEnv::new().await;
    let fake = FakeManagementApi::start().await;
    let clients = clients_with_ws(&env, &fake).await;
    let conns = Connections::new(env.clients.dynamo.clone(), env.config.table(TableId::Connections).unwrap());
    let events_table = env.config.table(TableId::Events).unwrap();
    let t = thread();
    let user = UserId("alice".into());
    let join = |c: &'static str| {
        let (conns, t, user) = (conns.clone(), t.clone(), user.clone());
        async move {
            let c = ConnectionId(c.into());
            conns.open(&c, &user).await.unwrap();
            let token = conns.subscribe_replaying(&t, &c, &user, 0).await.unwrap();
            assert_eq!(conns.go_live(&t, &c, &token, 0, events_table).await.unwrap(), GoLive::Live);
        }
    };
    join("early").await;
    let publisher = Publisher::new(conns.clone(), clients.connections.clone());
    let mut w = EventWriter::new(t.clone(), log_of(&env), Some(publisher.clone()));
    w.emit(text_delta("r", "a", "m", "Hello ")).await.unwrap();
    join("late").await;
    // the subscriber list is cached for a moment: the late one is seen after it
    tokio::time::sleep(store::publisher::EPHEMERAL_SUBSCRIBERS_MAX_AGE + std::time::Duration::from_millis(50)).await;
    w.emit(text_delta("r", "a", "m", "wor")).await.unwrap();
    w.emit(text_delta("r", "a", "m", "ld")).await.unwrap();
    let texts = |c: &str| -> Vec<String> {
        fake.received(c)
            .iter()
            .filter_map(|f| match serde_json::from_str::<WsFrame>(f).unwrap().event.payload {
                EventPayload::TextDelta(d) => Some(d.text),
                _ => None,
            })
            .collect()
    };
    assert_eq!(texts("early"), ["Hello ", "wor", "ld"]);
    assert_eq!(texts("late"), ["Hello wor", "ld"], "the text so far once, then the deltas");
    // The block that closes the segment has the whole text; a later segment starts afresh for both.
    w.flush().await.unwrap();
    w.emit(text_delta("r", "a", "m2", "Next")).await.unwrap();
    assert_eq!(texts("late").last().map(String::as_str), Some("Next"));
}

#[tokio::test]
async fn go_live_is_refused_while_events_remain_to_replay() {
    let env = TestEnv::new().await;
    let conns = Connections::new(env.clients.dynamo.clone(), env.config.table(TableId::Connections).unwrap());
    let log = log_of(&env);
    let t = thread();
    let c = ConnectionId("c1".into());
    let user = UserId("u".into());
    log.append(&t, &tool_call("r", "a", "1")).await.unwrap();
    let token = conns.subscribe_replaying(&t, &c, &user, 0).await.unwrap();
    assert_eq!(conns.go_live(&t, &c, &token, 0, log.table()).await.unwrap(), GoLive::Behind);
    // A transaction conflict (an append racing the check) reads as "replay
    // again, then retry": nothing was flipped.
    store::testing::inject_transaction_conflicts(log.table(), "TransactWriteItems", 1);
    assert_eq!(conns.go_live(&t, &c, &token, 1, log.table()).await.unwrap(), GoLive::Behind);
    assert_eq!(conns.go_live(&t, &c, &token, 1, log.table()).await.unwrap(), GoLive::Live);
    // A newer subscribe supersedes an older attempt.
    let old = conns.subscribe_replaying(&t, &c, &user, 0).await.unwrap();
    let _new = conns.subscribe_replaying(&t, &c, &user, 0).await.unwrap();
    assert_eq!(conns.go_live(&t, &c, &old, 1, log.table()).await.unwrap(), GoLive::Superseded);
    conns.close_with_subscriptions(&c).await.unwrap();
}

/// DynamoDB refuses a write to an item a transaction holds (a subscriber's
/// go-live check on the next seq, another writer's batch); the SDK does not
/// retry it. An append waits and writes the same slot again: the ids stay
/// 1, 2, 3, … with nothing lost or doubled.
#[tokio::test]
async fn appends_survive_transaction_conflicts() {
    let env = TestEnv::new().await;
    let log = log_of(&env);
    let table = env.config.table(TableId::Events).unwrap().to_owned();
    let t = thread();
    assert_eq!(log.append(&t, &tool_call("r1", "a", "c1")).await.unwrap(), 1);

    store::testing::inject_transaction_conflicts(&table, "PutItem", 3);
    assert_eq!(log.append(&t, &tool_call("r1", "a", "c2")).await.unwrap(), 2);

    store::testing::inject_transaction_conflicts(&table, "TransactWriteItems", 2);
    let batch = [tool_call("r1", "a", "c3"), tool_call("r1", "a", "c4"), tool_call("r1", "a", "c5")];
    assert_eq!(log.append_batch(&t, &batch).await.unwrap(), vec![3, 4, 5]);

    let stored = log.read_all_after(&t, 0).await.unwrap();
    assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    let calls: Vec<String> = stored
        .iter()
        .map(|e| match &e.event.payload {
            EventPayload::ToolCall(c) => c.tool_call_id.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(calls, ["c1", "c2", "c3", "c4", "c5"]);
}
