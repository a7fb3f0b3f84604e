//! Property: with concurrent writers (single appends as conditional puts,
//! batches as transactions, the one path the log has) and a reader that
//! reads mid-write and re-reads from random earlier cursors, the reader sees
//! every durable event exactly once per pass, in id order, and an id always
//! names the same event (invariant 1). Many seeds, against the local moto,
//! which makes each DynamoDB request atomic as DynamoDB does.

use proptest::prelude::*;
use protocol::events::*;
use protocol::ids::ThreadId;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use store::deployment::TableId;
use store::testing::TestEnv;
use store::EventLog;

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap())
}

/// One set of tables for every case (each case writes its own thread).
fn env() -> &'static TestEnv {
    static ENV: OnceLock<TestEnv> = OnceLock::new();
    ENV.get_or_init(|| runtime().block_on(TestEnv::new()))
}

fn event(writer: usize, i: usize) -> Event {
    Event::new(
        "r",
        format!("w{writer}").as_str(),
        EventPayload::ToolResult(ToolResult { tool_call_id: format!("{writer}-{i}"), result: serde_json::json!(i) }),
    )
}

#[derive(Debug, Clone)]
struct Case {
    /// Per writer: the sizes of its successive appends (1 = PutItem, >1 = transaction).
    writers: Vec<Vec<usize>>,
    /// Reader moves: page size, and whether to jump back (and how far, 0..=255 of the way).
    reads: Vec<(u32, Option<u8>)>,
}

/// `batch_weight` in 0..=4: how often an append is a batch rather than one event.
fn case(batch_weight: u32) -> impl Strategy<Value = Case> {
    let size = prop_oneof![4 => Just(1usize), batch_weight => 2usize..6];
    (
        prop::collection::vec(prop::collection::vec(size, 3..10), 2..5),
        prop::collection::vec((1u32..12, prop::option::weighted(0.2, any::<u8>())), 5..40),
    )
        .prop_map(|(writers, reads)| Case { writers, reads })
}

async fn run(env: &'static TestEnv, case: Case) -> Result<(), TestCaseError> {
    let table = env.config.table(TableId::Events).unwrap().to_owned();
    let thread = ThreadId(format!("prop_{}", uuid::Uuid::new_v4().simple()));
    let total: usize = case.writers.iter().flatten().sum();

    let mut handles = Vec::new();
    for (w, batches) in case.writers.iter().cloned().enumerate() {
        // Writers append concurrently and collide through their separate,
        // stale head caches (like separate Lambdas).
        let log = EventLog::new(env.clients.dynamo.clone(), table.clone());
        let thread = thread.clone();
        handles.push(tokio::spawn(async move {
            let mut i = 0;
            for size in batches {
                let batch: Vec<Event> = (i..i + size).map(|k| event(w, k)).collect();
                i += size;
                log.append_batch(&thread, &batch).await?;
            }
            Ok::<_, store::StoreError>(())
        }));
    }

    // The reader runs while the writers write.
    let reader = EventLog::new(env.clients.dynamo.clone(), table.clone());
    let mut seen: BTreeMap<u64, Event> = BTreeMap::new();
    let mut cursor = 0u64;
    let mut moves = case.reads.iter().cycle();
    // Jumps back are taken only from the newest id seen, and never twice
    // without a read from there in between: the moves are a fixed cycle, and
    // jumping back from anywhere could pin the reader below the head forever.
    let mut may_jump = true;
    let mut idle_rounds = 0;
    let mut progress = std::time::Instant::now();
    while seen.len() < total {
        let (limit, jump) = moves.next().copied().unwrap_or((5, None));
        if cursor == seen.len() as u64 {
            match jump {
                Some(j) if may_jump => {
                    cursor = cursor * u64::from(j) / 255;
                    may_jump = false;
                }
                _ => may_jump = true,
            }
        }
        let page = reader.read_after(&thread, cursor, limit).await.map_err(|e| TestCaseError::fail(e.to_string()))?;
        if page.is_empty() {
            if handles.iter().all(|h| h.is_finished()) && idle_rounds > 20 {
                for h in handles.drain(..) {
                    h.await.unwrap().map_err(|e| TestCaseError::fail(format!("writer failed: {e}")))?;
                }
            }
            idle_rounds += 1;
            prop_assert!(
                progress.elapsed() < std::time::Duration::from_secs(30),
                "reader stalled at {cursor} with {} of {total}",
                seen.len()
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            continue;
        }
        for e in page {
            prop_assert_eq!(e.seq, cursor + 1, "a read skipped or repeated an id");
            cursor = e.seq;
            match seen.get(&e.seq) {
                Some(prev) => prop_assert_eq!(prev, &e.event, "id {} changed meaning", e.seq),
                None => {
                    // A new id is always the next one: nothing below it can appear later.
                    prop_assert_eq!(e.seq, seen.len() as u64 + 1, "new id {} with {} seen", e.seq, seen.len());
                    seen.insert(e.seq, e.event);
                    progress = std::time::Instant::now();
                }
            }
        }
    }
    for h in handles {
        h.await.unwrap().map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    prop_assert_eq!(reader.head(&thread).await.unwrap(), total as u64);
    // Each event exactly once, each writer's in its order.
    for (w, batches) in case.writers.iter().enumerate() {
        let n: usize = batches.iter().sum();
        let mine: Vec<String> = seen
            .values()
            .filter(|e| e.agent_id.0 == format!("w{w}"))
            .map(|e| match &e.payload {
                EventPayload::ToolResult(r) => r.tool_call_id.clone(),
                _ => String::new(),
            })
            .collect();
        prop_assert_eq!(mine, (0..n).map(|i| format!("{w}-{i}")).collect::<Vec<_>>());
    }
    Ok(())
}

/// Cases per property: each case is a few hundred requests to moto, which
/// serves DynamoDB one request at a time.
const CASES: u32 = 24;

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, max_shrink_iters: 8, failure_persistence: None, ..ProptestConfig::default() })]

    /// Mostly single appends, some batches.
    #[test]
    fn readers_see_every_durable_event_exactly_once_in_order(c in case(1)) {
        runtime().block_on(run(env(), c))?;
    }

    /// Mostly batches: concurrent transactions collide with each other and
    /// with conditional puts; the reader still reads mid-batch.
    #[test]
    fn readers_see_concurrent_transactional_batches_exactly_once_in_order(c in case(8)) {
        runtime().block_on(run(env(), c))?;
    }
}
