//! Streamed answers, n8n's `sendChunk`: while a run whose trigger answers in
//! the `streaming` response mode goes on, nodes that stream (the AI Agent
//! from version 2.1) send `begin`, `item` (a piece of text) and `end` chunks,
//! and a node that fails sends `error`. The host writes each chunk as one
//! JSON line to the caller (`{type, content, metadata}`), in order.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkKind {
    Begin,
    Item,
    End,
    Error,
}

/// Which node run and item a chunk belongs to (n8n's chunk metadata).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkMetadata {
    pub node_id: String,
    pub node_name: String,
    pub item_index: usize,
    pub run_index: usize,
    /// Epoch ms; n8n's error chunks carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
}

/// One chunk of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamChunk {
    #[serde(rename = "type")]
    pub kind: ChunkKind,
    /// Text of an `item`, message of an `error`; none on `begin`/`end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    pub metadata: ChunkMetadata,
}

impl StreamChunk {
    /// The chunk as one line of the answer (JSON and a newline).
    pub fn line(&self) -> String {
        let mut s = serde_json::to_string(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// Where a run's chunks go; present only when the caller waits for a stream.
#[derive(Clone)]
pub struct StreamHook(Arc<dyn Fn(StreamChunk) + Send + Sync>);

impl StreamHook {
    pub fn new(f: impl Fn(StreamChunk) + Send + Sync + 'static) -> Self {
        StreamHook(Arc::new(f))
    }

    pub fn send(&self, chunk: StreamChunk) {
        (self.0)(chunk)
    }
}

impl std::fmt::Debug for StreamHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamHook")
    }
}
