//! A streamed answer's chunks (the Chat Trigger's `streaming` response
//! mode): the engine's stream hook hands each chunk (one JSON line, secrets
//! scrubbed) to a writer task, which appends what arrived within a short
//! window as one batch (`store::data::Executions::put_stream_batch`); the
//! streaming endpoint reads the batches in order. The executor drains the
//! writer before it writes the execution's final status, so a reader that
//! sees that status has every line.

use crate::host::Secrets;
use engine::stream::{StreamChunk, StreamHook};
use std::time::Duration;
use store::data::Executions;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Lines that arrive within this window after the first go out together.
const BATCH_WINDOW: Duration = Duration::from_millis(40);
/// A batch never grows past this (one DynamoDB item holds it).
const BATCH_BYTES: usize = 64 * 1024;

pub(crate) struct ChunkWriter {
    task: JoinHandle<u64>,
}

/// The engine's hook and the writer task behind it.
pub(crate) fn start(handle: &tokio::runtime::Handle, executions: Executions, id: &str, secrets: Secrets) -> (StreamHook, ChunkWriter) {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let hook = StreamHook::new(move |chunk: StreamChunk| {
        let mut v = serde_json::to_value(&chunk).unwrap_or_default();
        secrets.scrub(&mut v);
        let mut line = v.to_string();
        line.push('\n');
        // the writer outlives the engine's run; a send fails only after it stopped
        let _ = tx.send(line);
    });
    let id = id.to_owned();
    let task = handle.spawn(async move {
        let mut seq = 0u64;
        while let Some(first) = rx.recv().await {
            let mut batch = first;
            let until = tokio::time::Instant::now() + BATCH_WINDOW;
            while batch.len() < BATCH_BYTES {
                match tokio::time::timeout_at(until, rx.recv()).await {
                    Ok(Some(line)) => batch.push_str(&line),
                    Ok(None) | Err(_) => break,
                }
            }
            seq += 1;
            if let Err(e) = executions.put_stream_batch(&id, seq, &batch).await {
                tracing::error!(executionId = %id, error = %e, "a batch of the streamed answer could not be stored");
            }
        }
        seq
    });
    (hook, ChunkWriter { task })
}

impl ChunkWriter {
    /// Waits until every line the engine sent is stored (the engine's hook,
    /// and with it the channel's sender, is gone by then); the batch count.
    pub async fn finish(self) -> u64 {
        self.task.await.unwrap_or(0)
    }
}
