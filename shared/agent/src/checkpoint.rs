//! The checkpoint: everything a step needs to continue a chain, saved on the
//! chain item after every step (and with a suspension, as the resume point).

use crate::error::AgentError;
use crate::model::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call the model asked for that has not been settled yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub args: Value,
}

/// A background agent's task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskBrief {
    pub task_id: String,
    pub title: String,
    pub kind: String,
    pub spec: String,
    /// Added to the agent's system prompt: the build → verify loop of a
    /// build task, the stored verification a checkpoint reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// The conversation so far (for the orchestrator: the thread's history
    /// once step 1 loaded it).
    pub messages: Vec<Message>,
    /// Tool calls of the last model turn still to run, in order; the first
    /// is the one a suspension waits on.
    #[serde(default)]
    pub pending: Vec<PendingCall>,
    /// Model calls made in this run (bounded by `max_steps`).
    #[serde(default)]
    pub model_calls: u32,
    /// Step 1 of an orchestrator run prepends the thread's history.
    #[serde(default)]
    pub needs_history: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskBrief>,
    /// The run's message's attachments (their bytes are stored apart,
    /// `store::data::Attachments`); `parse-file` is offered when one is parseable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<protocol::attachments::AttachmentInfo>,
    /// Deferred tools this run loaded (`load_tool`, or a call by name).
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub loaded_tools: std::collections::BTreeSet<String>,
}

impl Checkpoint {
    pub fn encode(&self) -> Result<Vec<u8>, AgentError> {
        serde_json::to_vec(self).map_err(|e| AgentError::Checkpoint(e.to_string()))
    }

    pub fn decode(bytes: Option<&[u8]>) -> Result<Checkpoint, AgentError> {
        match bytes {
            None => Ok(Checkpoint::default()),
            Some(b) => serde_json::from_slice(b).map_err(|e| AgentError::Checkpoint(e.to_string())),
        }
    }

    /// The bytes saved as the thread's history when the run ends.
    pub fn history_bytes(&self) -> Result<Vec<u8>, AgentError> {
        serde_json::to_vec(&self.messages).map_err(|e| AgentError::Checkpoint(e.to_string()))
    }

    pub fn history_from(bytes: &[u8]) -> Result<Vec<Message>, AgentError> {
        serde_json::from_slice(bytes).map_err(|e| AgentError::Checkpoint(e.to_string()))
    }
}
