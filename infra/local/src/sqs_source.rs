//! The SQS event source mapping: polls a queue and invokes its consumer
//! with real SQS event payloads, as Lambda does: up to `batch_size` records
//! per invocation, `ReportBatchItemFailures` (only the reported records stay
//! on the queue), redelivery after the visibility timeout, and the queue's
//! redrive policy moving a record to the DLQ after `maxReceiveCount`.

use crate::dispatch::SqsHandler;
use api::App;
use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, MessageSystemAttributeName};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use store::deployment::QueueDef;
use store::StoreError;
use tokio::sync::watch;

/// One queue wired to one consumer.
#[derive(Debug, Clone)]
pub struct EventSource {
    pub queue_url: String,
    pub queue_arn: String,
    pub batch_size: i32,
    pub region: String,
}

impl EventSource {
    pub async fn for_queue(app: &App, queue: &QueueDef) -> Result<EventSource, StoreError> {
        let url = app.config.queue_url(queue.id)?.to_owned();
        Self::new(&app.clients.sqs, url, queue.batch_size as i32, &app.config.region).await
    }

    pub async fn new(sqs: &aws_sdk_sqs::Client, queue_url: String, batch_size: i32, region: &str) -> Result<EventSource, StoreError> {
        let arn = store::provision::queue_arn(sqs, &queue_url).await?;
        Ok(EventSource { queue_url, queue_arn: arn, batch_size: batch_size.clamp(1, 10), region: region.to_owned() })
    }
}

/// Polls until `shutdown` turns true.
pub async fn run(sqs: aws_sdk_sqs::Client, source: EventSource, handler: SqsHandler, mut shutdown: watch::Receiver<bool>) {
    loop {
        if *shutdown.borrow() {
            return;
        }
        let polled = tokio::select! {
            r = poll_once(&sqs, &source, &handler) => r,
            _ = shutdown.changed() => return,
        };
        match polled {
            Ok(0) => {}
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(queue = %source.queue_url, error = %e, "poll failed");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// One receive → invoke → delete cycle; returns how many records it handled.
pub async fn poll_once(sqs: &aws_sdk_sqs::Client, source: &EventSource, handler: &SqsHandler) -> Result<usize, StoreError> {
    let out = sqs
        .receive_message()
        .queue_url(&source.queue_url)
        .max_number_of_messages(source.batch_size)
        .wait_time_seconds(1)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await
        .map_err(StoreError::sqs)?;
    let messages = out.messages.unwrap_or_default();
    if messages.is_empty() {
        return Ok(0);
    }
    let receipts: HashMap<String, String> = messages
        .iter()
        .filter_map(|m| Some((m.message_id.clone()?, m.receipt_handle.clone()?)))
        .collect();
    let event = sqs_event(source, messages);
    let count = event.records.len();

    // A panicking handler fails the whole batch, like an invocation error.
    let failed: Option<HashSet<String>> = match tokio::spawn((handler)(event)).await {
        Ok(resp) => {
            let ids: HashSet<String> = resp.batch_item_failures.into_iter().map(|f| f.item_identifier).collect();
            // Lambda treats an empty or unknown identifier as a failed batch.
            if ids.iter().any(|id| !receipts.contains_key(id)) {
                None
            } else {
                Some(ids)
            }
        }
        Err(e) => {
            tracing::error!(queue = %source.queue_url, error = %e, "consumer panicked; whole batch will be retried");
            None
        }
    };
    let Some(failed) = failed else { return Ok(count) };
    let entries: Vec<DeleteMessageBatchRequestEntry> = receipts
        .iter()
        .filter(|(id, _)| !failed.contains(*id))
        .enumerate()
        .filter_map(|(i, (_, receipt))| {
            DeleteMessageBatchRequestEntry::builder().id(format!("m{i}")).receipt_handle(receipt).build().ok()
        })
        .collect();
    if !entries.is_empty() {
        sqs.delete_message_batch()
            .queue_url(&source.queue_url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(StoreError::sqs)?;
    }
    Ok(count)
}

/// The Lambda SQS event for received messages.
fn sqs_event(source: &EventSource, messages: Vec<aws_sdk_sqs::types::Message>) -> SqsEvent {
    let mut event = SqsEvent::default();
    event.records = messages
        .into_iter()
        .map(|m| {
            let mut rec = SqsMessage::default();
            rec.message_id = m.message_id;
            rec.receipt_handle = m.receipt_handle;
            rec.md5_of_body = m.md5_of_body;
            rec.md5_of_message_attributes = m.md5_of_message_attributes;
            rec.body = m.body;
            rec.attributes = m
                .attributes
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.as_str().to_owned(), v))
                .collect();
            rec.event_source = Some("aws:sqs".into());
            rec.event_source_arn = Some(source.queue_arn.clone());
            rec.aws_region = Some(source.region.clone());
            rec
        })
        .collect();
    event
}
