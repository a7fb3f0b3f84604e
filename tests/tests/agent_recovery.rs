//! At-least-once delivery and crashes: a duplicate step message changes
//! nothing; a step killed after its tool call was published is settled by
//! the sweep as tool-interrupted + run-finish interrupted, never re-run.

mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_duplicate_step_message_is_acknowledged_without_effect() {
    let cloud = cloud(Setup { consumers: false, ..Setup::default() }).await;
    let app = cloud.running.app.clone();
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "List my workflows").await;
    // Step 1, delivered twice — the second time concurrently with the first.
    let step1 = receive(&cloud).await;
    let (a, b) = tokio::join!(api::handlers::step::handle(&app, step1.clone()), api::handlers::step::handle(&app, step1.clone()));
    assert!(a.batch_item_failures.is_empty() && b.batch_item_failures.is_empty(), "both acknowledged");
    let again = api::handlers::step::handle(&app, step1).await;
    assert!(again.batch_item_failures.is_empty());
    // Step 2 twice, one after the other.
    let step2 = receive(&cloud).await;
    api::handlers::step::handle(&app, step2.clone()).await;
    api::handlers::step::handle(&app, step2).await;
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let rest = feed.drain(Duration::from_millis(800)).await;
    assert!(rest.is_empty(), "{:?}", kinds(&rest));
    for t in [EventType::RunStart, EventType::ToolCall, EventType::ToolResult, EventType::TextBlock, EventType::ReasoningBlock, EventType::RunFinish] {
        assert_eq!(find(&frames, t).len(), 1, "{t}: {:?}", kinds(&frames));
    }
    let ids: Vec<u64> = frames.iter().filter_map(|f| f.id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "gapless, no duplicates");
    cloud.stop().await;
}

#[tokio::test]
async fn a_step_killed_mid_tool_is_interrupted_by_the_sweep() {
    let cloud = cloud(Setup { consumers: false, lease_secs: Some(2), ..Setup::default() }).await;
    let app = cloud.running.app.clone();
    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    cloud.chat(ALICE, &t, "Run the slow tool").await;
    let step1 = receive(&cloud).await;
    let worker = {
        let app = app.clone();
        tokio::spawn(async move { api::handlers::step::handle(&app, step1).await })
    };
    let frames = feed.until_type(EventType::ToolCall, WAIT).await;
    let call = payload(frames.last().unwrap());
    // The process dies with the tool in flight.
    worker.abort();
    let _ = worker.await;
    // Before the lease runs out the sweep leaves the run alone.
    api::handlers::sweep::handle(&app).await.unwrap();
    assert!(feed.drain(Duration::from_millis(300)).await.iter().all(|f| f.kind() != EventType::RunFinish));
    tokio::time::sleep(Duration::from_millis(2200)).await;
    api::handlers::sweep::handle(&app).await.unwrap();
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let interrupted = find(&frames, EventType::ToolInterrupted);
    assert_eq!(interrupted.len(), 1, "{:?}", kinds(&frames));
    assert_eq!(payload(interrupted[0])["toolCallId"], call["toolCallId"]);
    assert!(payload(interrupted[0])["error"].as_str().unwrap().contains("effect unverified"));
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "interrupted", "reason": "crash_interrupted"}));
    // The tool never ran again and a second sweep adds nothing.
    api::handlers::sweep::handle(&app).await.unwrap();
    let more = feed.drain(Duration::from_millis(500)).await;
    assert!(more.is_empty(), "{:?}", kinds(&more));
    assert!(find(&feed.seen, EventType::ToolResult).is_empty());
    // The slot is free again.
    let (status, _) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 200);
    cloud.stop().await;
}

/// The sweep's schedule (`store::sweep_schedule`) is off while nothing can
/// expire — an idle deployment invokes nothing — and on from a run's start
/// until nothing is left: a run whose step message is lost, started on an
/// idle cloud, still ends with one run-finish.
#[tokio::test]
async fn the_sweep_runs_while_a_run_can_expire_and_rests_when_nothing_can() {
    use store::sweep_schedule::SweepSchedule;
    let cloud = cloud(Setup { consumers: false, lease_secs: Some(2), ..Setup::default() }).await;
    let app = cloud.running.app.clone();
    let schedule = SweepSchedule::from_config(&app.clients.scheduler, &app.config).expect("SWEEP_SCHEDULE");
    assert!(schedule.enabled().await.unwrap(), "a fresh deployment's schedule is on");
    api::handlers::sweep::handle(&app).await.unwrap();
    assert!(!schedule.enabled().await.unwrap(), "nothing to sweep: off");

    let t = thread();
    let mut feed = cloud.events(ALICE, &t).await;
    let (status, body) = cloud.chat(ALICE, &t, "Say hello").await;
    assert_eq!(status, 200, "{body}");
    assert!(schedule.enabled().await.unwrap(), "a run started: on");
    // Step 1 is lost (taken off the queue, never run); its lease runs out.
    let _lost = receive(&cloud).await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    api::handlers::sweep::handle(&app).await.unwrap();
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap()), json!({"status": "interrupted", "reason": "crash_interrupted"}));
    assert!(schedule.enabled().await.unwrap(), "armed within the grace: still on");

    // The grace passes (the flag's last arm is made old): the next sweep rests.
    let old = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
        - 2 * store::sweep_schedule::GRACE.as_millis() as u64;
    app.clients
        .dynamo
        .update_item()
        .table_name(app.config.table(store::deployment::TableId::Agent).unwrap())
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S("sweep".into()))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("agent".into()))
        .update_expression("SET armedAt = :t")
        .expression_attribute_values(":t", aws_sdk_dynamodb::types::AttributeValue::N(old.to_string()))
        .send()
        .await
        .unwrap();
    api::handlers::sweep::handle(&app).await.unwrap();
    assert!(!schedule.enabled().await.unwrap(), "the run is over, nothing can expire: off");
    assert!(feed.drain(Duration::from_millis(300)).await.is_empty(), "one run-finish");
    cloud.stop().await;
}

/// An idle deployment does nothing of its own: the sweep's schedule fires
/// at start, the sweep finds nothing to watch and switches it off, and a
/// whole schedule period later no function has been invoked and no API
/// request made (AWS bills an idle hour $0 for our part).
#[tokio::test]
async fn an_idle_deployment_invokes_nothing() {
    use store::deployment::FunctionId;
    use store::sweep_schedule::SweepSchedule;
    let env = store::testing::TestEnv::new().await;
    let options = local_cloud::Options { config: env.config.clone(), prefix: env.prefix.clone(), port: 0, run_consumers: true, run_schedules: true };
    let running = local_cloud::start(options).await.expect("local cloud starts");
    let schedule = SweepSchedule::from_config(&running.app.clients.scheduler, &running.app.config).expect("SWEEP_SCHEDULE");
    let sweeps = |u: &local_cloud::metering::Usage| u.functions.get(&FunctionId::Sweep).map_or(0, |f| f.invocations);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while sweeps(&running.meter.snapshot()) == 0 || schedule.enabled().await.expect("schedule state") {
        assert!(std::time::Instant::now() < deadline, "the first sweep did not rest: {:?}", running.meter.snapshot());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let before = running.meter.snapshot();
    assert_eq!(sweeps(&before), 1, "{before:?}");
    // The schedule's next tick (60 s) passes.
    tokio::time::sleep(Duration::from_secs(62)).await;
    let idle = running.meter.snapshot().since(&before);
    assert_eq!(idle, local_cloud::metering::Usage::default(), "nothing ran while idle");
    running.shutdown().await;
}
