//! The SQS event source emulation against moto: partial batch failures
//! redeliver only the failed record, and after maxReceiveCount it lands in
//! the dead-letter queue.

use aws_lambda_events::sqs::SqsEvent;
use local_cloud::dispatch::SqsHandler;
use local_cloud::sqs_source::{poll_once, EventSource};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::testing::TestEnv;

#[tokio::test]
async fn failed_records_are_redelivered_alone_then_dead_lettered() {
    let env = TestEnv::new().await;
    let sqs = env.clients.sqs.clone();
    let name = format!("{}-poller", env.prefix);
    let url = store::provision::create_queue_with(&sqs, &name, 1, 2).await.unwrap();
    let dlq_url = sqs.get_queue_url().queue_name(format!("{name}-dlq")).send().await.unwrap().queue_url.unwrap();
    for body in ["good-1", "bad", "good-2"] {
        sqs.send_message().queue_url(&url).message_body(body).send().await.unwrap();
    }

    // Records seen per body; "bad" always fails.
    let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let seen_in_handler = seen.clone();
    let handler: SqsHandler = Arc::new(move |event: SqsEvent| {
        let seen = seen_in_handler.clone();
        Box::pin(async move {
            let mut failed = Vec::new();
            for rec in &event.records {
                assert_eq!(rec.event_source.as_deref(), Some("aws:sqs"));
                assert!(rec.event_source_arn.as_deref().is_some_and(|a| a.starts_with("arn:aws:sqs:")));
                let body = rec.body.clone().unwrap_or_default();
                *seen.lock().unwrap().entry(body.clone()).or_default() += 1;
                if body == "bad" {
                    failed.extend(rec.message_id.clone());
                }
            }
            api::lambda::failures(failed)
        })
    });
    let source = EventSource::new(&sqs, url.clone(), 10, "us-east-1").await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        poll_once(&sqs, &source, &handler).await.unwrap();
        let in_dlq = sqs
            .receive_message()
            .queue_url(&dlq_url)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default();
        if let Some(m) = in_dlq.first() {
            assert_eq!(m.body(), Some("bad"));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the failing record never reached the DLQ: {seen:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.get("good-1"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("good-2"), Some(&1), "{seen:?}");
    assert_eq!(seen.get("bad"), Some(&2), "delivered maxReceiveCount times: {seen:?}");
    // Nothing is left on the main queue.
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    for v in attrs.values() {
        assert_eq!(v, "0", "{attrs:?}");
    }
}

#[tokio::test]
async fn a_panicking_consumer_fails_the_whole_batch() {
    let env = TestEnv::new().await;
    let sqs = env.clients.sqs.clone();
    let url = store::provision::create_queue_with(&sqs, &format!("{}-panic", env.prefix), 1, 5).await.unwrap();
    sqs.send_message().queue_url(&url).message_body("a").send().await.unwrap();
    let calls = Arc::new(Mutex::new(0));
    let calls_in = calls.clone();
    let handler: SqsHandler = Arc::new(move |_event: SqsEvent| {
        let calls = calls_in.clone();
        Box::pin(async move {
            let n = {
                let mut c = calls.lock().unwrap();
                *c += 1;
                *c
            };
            if n == 1 {
                panic!("consumer crashed");
            }
            api::lambda::failures(Vec::<String>::new())
        })
    });
    let source = EventSource::new(&sqs, url.clone(), 10, "us-east-1").await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while *calls.lock().unwrap() < 2 {
        poll_once(&sqs, &source, &handler).await.unwrap();
        assert!(tokio::time::Instant::now() < deadline, "message was not redelivered after the crash");
    }
}
