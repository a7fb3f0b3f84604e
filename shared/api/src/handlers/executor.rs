//! The executor SQS consumer: one workflow execution per Runs message
//! (`{"executionId": "..."}`), a schedule tick, or another function's job (a
//! connection test, a lookup); the work is `executions::Executor`.

use crate::App;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use executions::{ExecutionError, Executor, ExecutorSettings, QueueRecord};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use store::deployment::TableId;

/// The executor of this process, built on first use and then reused by
/// every invocation (its key provider and clients are not rebuilt per
/// batch). Keyed by table name: tests run several apps in one process.
async fn executor(app: &App) -> Result<Executor, ExecutionError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Executor>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = app.config.table(TableId::Executions)?.to_owned();
    if let Some(e) = cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(e);
    }
    // It does its queue's work itself, and a caller's `Dispatch::Inline`.
    let e = Executor::from_config(&app.clients, &app.config, ExecutorSettings::from_config(&app.config)).await?.running_here();
    if let Ok(mut m) = cache.lock() {
        m.insert(key, e.clone());
    }
    Ok(e)
}

/// Runs each record's execution. A record is reported failed (redelivered,
/// then dead-lettered) only when it is malformed or its execution could not
/// be run or recorded; a duplicate delivery (finished, or running under a
/// live lease) is acknowledged without effect.
pub async fn handle(app: &App, batch: SqsEvent) -> SqsBatchResponse {
    let exec = match executor(app).await {
        Ok(e) => e,
        Err(e) => {
            tracing::error!(error = %e, "executor unavailable");
            return crate::lambda::fail_all(batch);
        }
    };
    let records = batch
        .records
        .into_iter()
        .map(|r| QueueRecord { message_id: r.message_id.unwrap_or_default(), body: r.body });
    crate::lambda::failures(exec.handle_queue_batch(records).await)
}
