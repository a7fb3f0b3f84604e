//! The same executions through the Lambda entrypoints: the executor SQS
//! handler with real SQS event payloads, the scheduled sweep, and the local
//! cloud polling the Runs queue into the executor.

mod common;

use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use common::*;
use executions::{ExecutionStatus, StartRequest, WorkflowRef};
use serde_json::json;
use std::time::Duration;
use store::data::executions::ExecutionMode;

fn manual(id: &str) -> StartRequest {
    StartRequest::new(WorkflowRef::Draft(id.to_owned()), ExecutionMode::Manual)
}

fn workflow() -> serde_json::Value {
    chain(vec![
        trigger(),
        set("Set", "n", json!(7)),
        if_gt("If", "n", 5.0),
    ])
}

fn event(records: Vec<executions::QueueRecord>) -> SqsEvent {
    let mut e = SqsEvent::default();
    e.records = records
        .into_iter()
        .map(|r| {
            let mut m = SqsMessage::default();
            m.message_id = Some(r.message_id);
            m.body = r.body;
            m.event_source = Some("aws:sqs".into());
            m
        })
        .collect();
    e
}

#[tokio::test]
async fn the_executor_handler_runs_queued_executions_and_acknowledges_duplicates() {
    let c = ctx().await;
    let app = api::App::new(c.env.config.clone(), c.env.clients.clone());
    let wf = c.workflow(&workflow()).await;
    let id = c.executor.start_execution(manual(&wf)).await.unwrap();
    let batch = c.receive(Duration::from_secs(5)).await;
    let mut bad = batch.clone();
    bad.push(executions::QueueRecord {
        message_id: "garbage".into(),
        body: Some("not json".into()),
    });
    let resp = api::handlers::executor::handle(&app, event(bad)).await;
    let failed: Vec<String> = resp
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.clone())
        .collect();
    assert_eq!(
        failed,
        vec!["garbage".to_owned()],
        "only the malformed record fails"
    );
    assert_eq!(
        c.executor.outcome(id.as_str()).await.unwrap().status,
        ExecutionStatus::Success
    );
    assert_eq!(
        output(&c.run_data(id.as_str()).await, "If", 0),
        vec![json!({"n": 7})]
    );
    let before = c.data.executions.get(id.as_str()).await.unwrap();
    // Redelivered: acknowledged, nothing changes.
    let resp = api::handlers::executor::handle(&app, event(batch)).await;
    assert!(resp.batch_item_failures.is_empty());
    assert_eq!(c.data.executions.get(id.as_str()).await.unwrap(), before);
}

#[tokio::test]
async fn the_scheduled_sweep_resumes_due_executions() {
    let c = ctx().await;
    let app = api::App::new(c.env.config.clone(), c.env.clients.clone());
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 1),
            set("After", "b", json!(2)),
        ]))
        .await;
    // Parks (this test's executor never sleeps in-process).
    let o = c
        .executor
        .execute_and_wait(
            manual(&wf),
            Duration::from_secs(30),
            executions::Dispatch::Inline,
        )
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Waiting);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // The sweep's agent part may fail without a model configured; the
    // execution part runs first and regardless.
    let _ = api::handlers::sweep::handle(&app).await;
    // The sweep's message (and the delayed one queued when it parked).
    let resume = c.receive(Duration::from_secs(5)).await;
    assert!(!resume.is_empty());
    let resp = api::handlers::executor::handle(&app, event(resume)).await;
    assert!(resp.batch_item_failures.is_empty());
    assert_eq!(
        c.executor
            .outcome(o.execution_id.as_str())
            .await
            .unwrap()
            .status,
        ExecutionStatus::Success
    );
}

#[tokio::test]
async fn a_short_wait_resumes_on_time_without_the_sweep() {
    let c = ctx().await;
    let wf = c
        .workflow(&chain(vec![
            trigger(),
            wait_secs("Wait", 2),
            set("After", "b", json!(2)),
        ]))
        .await;
    let o = c
        .executor
        .execute_and_wait(
            manual(&wf),
            Duration::from_secs(30),
            executions::Dispatch::Inline,
        )
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Waiting);
    // The resume message was queued with a delay when it parked.
    let began = std::time::Instant::now();
    let msgs = c.receive(Duration::from_secs(8)).await;
    assert_eq!(msgs.len(), 1);
    assert!(
        began.elapsed() >= Duration::from_millis(1000),
        "delivered before it was due: {:?}",
        began.elapsed()
    );
    assert!(c.executor.handle_queue_batch(msgs).await.is_empty());
    assert_eq!(
        c.executor
            .outcome(o.execution_id.as_str())
            .await
            .unwrap()
            .status,
        ExecutionStatus::Success
    );
}

#[tokio::test]
async fn end_to_end_through_the_local_cloud() {
    let c = ctx().await;
    let cloud = local_cloud::start(local_cloud::Options {
        config: c.env.config.clone(),
        prefix: c.env.prefix.clone(),
        port: 0,
        run_consumers: true,
        run_schedules: false,
    })
    .await
    .expect("local cloud starts");
    let wf = c.workflow(&workflow()).await;
    // Enqueued by a tool's call; the local cloud's poller runs it.
    let o = c
        .executor
        .execute_and_wait(
            manual(&wf),
            Duration::from_secs(30),
            executions::Dispatch::Queue,
        )
        .await
        .unwrap();
    assert_eq!(o.status, ExecutionStatus::Success, "{o:?}");
    let doc = c.run_data(o.execution_id.as_str()).await;
    assert_eq!(output(&doc, "If", 0), vec![json!({"n": 7})]);
    cloud.shutdown().await;
}
