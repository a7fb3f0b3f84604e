//! Event log figures against moto (`AWS_ENDPOINT_URL=http://127.0.0.1:5000
//! cargo bench -p store --bench event_log`): durable appends per second on
//! one thread and across 16 threads, the cost of contention, and DynamoDB
//! requests per durable and per ephemeral event, counted by an SDK
//! interceptor (every attempt, retries included). moto is a single Python
//! process: absolute rates say little about DynamoDB, request counts do.

use protocol::events::*;
use protocol::ids::{ConnectionId, ThreadId};
use protocol::UserId;
use std::time::Instant;
use store::connections::Connections;
use store::counting::RequestCounter;
use store::deployment::TableId;
use store::fake_ws::FakeManagementApi;
use store::testing::TestEnv;
use store::{AwsClients, EventLog, EventWriter, Publisher};

fn tool_call(i: usize) -> Event {
    let mut args = serde_json::Map::new();
    args.insert("i".into(), i.into());
    Event::new("run", "agent", EventPayload::ToolCall(ToolCall { tool_call_id: format!("tc{i}"), tool_name: "workflows".into(), args }))
}

fn thread(tag: &str) -> ThreadId {
    ThreadId(format!("bench_{tag}_{}", uuid::Uuid::new_v4().simple()))
}

fn per(counter: &RequestCounter, n: usize) -> String {
    let snap = counter.snapshot();
    let total: u64 = snap.values().sum();
    let detail: Vec<String> = snap.iter().map(|(k, v)| format!("{k} {:.3}", *v as f64 / n as f64)).collect();
    format!("{:.3} requests/event ({})", total as f64 / n as f64, detail.join(", "))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let env = TestEnv::new().await;
    let (client, counter) = RequestCounter::instrument(&env.clients.dynamo);
    let table = env.config.table(TableId::Events).unwrap().to_owned();

    // 1. One writer, one thread.
    let n = 500;
    let log = EventLog::new(client.clone(), &table);
    let t = thread("one");
    counter.reset();
    let start = Instant::now();
    for i in 0..n {
        log.append(&t, &tool_call(i)).await.expect("append");
    }
    let secs = start.elapsed().as_secs_f64();
    println!("durable appends, 1 writer, 1 thread:      {:>8.0} appends/s  {}", n as f64 / secs, per(&counter, n));

    // 2. 16 threads, one writer each, concurrently.
    let per_thread = 100;
    counter.reset();
    let start = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|k| {
            let log = EventLog::new(client.clone(), &table);
            let t = thread(&format!("m{k}"));
            tokio::spawn(async move {
                for i in 0..per_thread {
                    log.append(&t, &tool_call(i)).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer");
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "durable appends, 16 writers, 16 threads: {:>8.0} appends/s  {}",
        (16 * per_thread) as f64 / secs,
        per(&counter, 16 * per_thread)
    );

    // 3. Contention: 8 writers on one thread.
    let t = thread("contended");
    counter.reset();
    let start = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let log = EventLog::new(client.clone(), &table);
            let t = t.clone();
            tokio::spawn(async move {
                for i in 0..per_thread {
                    log.append(&t, &tool_call(i)).await.expect("append");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("writer");
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "durable appends, 8 writers, 1 thread:    {:>8.0} appends/s  {}",
        (8 * per_thread) as f64 / secs,
        per(&counter, 8 * per_thread)
    );

    // 4. Through the EventWriter with one live WebSocket subscriber: what a
    //    step pays per event.
    let fake = FakeManagementApi::start().await;
    let mut config = env.config.clone();
    config.ws_management_url = Some(fake.url.clone());
    let ws = AwsClients::new(&config);
    let conns = Connections::new(client.clone(), env.config.table(TableId::Connections).unwrap());
    let t = thread("writer");
    let c = ConnectionId("bench-conn".into());
    let user = UserId("bench".into());
    conns.open(&c, &user).await.expect("open");
    let token = conns.subscribe_replaying(&t, &c, &user, 0).await.expect("subscribe");
    conns.go_live(&t, &c, &token, 0, &table).await.expect("live");
    let publisher = Publisher::new(conns.clone(), ws.connections.clone());
    let log = EventLog::new(client.clone(), &table);
    let mut writer = EventWriter::new(t.clone(), log, Some(publisher));
    writer.emit(tool_call(0)).await.expect("warm up");

    counter.reset();
    let n = 200;
    let start = Instant::now();
    for i in 0..n {
        writer.emit(tool_call(i)).await.expect("emit");
    }
    let secs = start.elapsed().as_secs_f64();
    println!("durable via EventWriter + 1 subscriber:  {:>8.0} events/s   {}", n as f64 / secs, per(&counter, n));

    counter.reset();
    let n = 1000;
    let start = Instant::now();
    for i in 0..n {
        let delta = Event::new("run", "agent", EventPayload::TextDelta(TextDelta { text: format!("tok{i} ") })).with_response_id("resp");
        writer.emit(delta).await.expect("emit");
    }
    writer.flush().await.expect("flush");
    let secs = start.elapsed().as_secs_f64();
    println!(
        "ephemeral deltas via EventWriter:        {:>8.0} events/s   {} (incl. the one closing text-block)",
        n as f64 / secs,
        per(&counter, n)
    );
    println!("frames posted to the subscriber: {}", fake.received("bench-conn").len());
}
