//! What several `instance` test binaries share.

use executions::{Executor, ExecutorSettings, QueueRecord};
use store::data::InstanceData;
use store::deployment::QueueId;
use store::testing::TestEnv;
use store::Config;

/// The executor function as Lambda runs it: Runs queue messages into
/// `handle_queue_batch`, each handled one deleted (the event source's part).
pub fn serve_runs_queue(env: &TestEnv, config: &Config) {
    let data = InstanceData::new(&env.clients, config).unwrap();
    let url = config.queue_url(QueueId::Runs).unwrap().to_owned();
    let sqs = env.clients.sqs.clone();
    let executor = Executor::new(data, sqs.clone(), url.clone(), ExecutorSettings::from_config(config));
    tokio::spawn(async move {
        loop {
            let Ok(out) = sqs.receive_message().queue_url(&url).max_number_of_messages(10).wait_time_seconds(1).send().await else { continue };
            let messages = out.messages.unwrap_or_default();
            let batch: Vec<QueueRecord> = messages.iter().map(|m| QueueRecord { message_id: m.message_id.clone().unwrap_or_default(), body: m.body.clone() }).collect();
            let failed = executor.handle_queue_batch(batch).await;
            for m in messages.iter().filter(|m| !failed.contains(m.message_id.as_ref().unwrap())) {
                let _ = sqs.delete_message().queue_url(&url).receipt_handle(m.receipt_handle.clone().unwrap_or_default()).send().await;
            }
        }
    });
}
