//! A provider that replays a JSON script: the model of local development
//! and end-to-end tests.
//!
//! ```json
//! {"conversations": {
//!   "List my workflows": [
//!     {"reasoning": "The user wants…", "toolCalls": [{"name": "workflows", "args": {"action": "list"}}]},
//!     {"text": "You have 3 workflows.", "chunkDelayMs": 20}
//!   ]
//! }}
//! ```
//!
//! **Turn selection.** The conversation is chosen by the run's user message:
//! the last `Message::User` in the history (equal to the first user message
//! of the thread for a single-run thread; for later runs in the same thread
//! it is the message that started that run). Turn `n` is played where `n`
//! is the number of assistant messages after that user message, i.e. the
//! n-th model call of the run plays the n-th turn. An exact key match wins,
//! then a match with surrounding whitespace trimmed (and without the host's
//! `<past-conversations>` cue on a thread's first message, and without the
//! `[ATTACHMENTS]` list of a message's files).
//!
//! **Output.** Reasoning then text, each split on word boundaries into at
//! least 3 chunks (fewer only when the text has fewer than 3 characters),
//! then for each tool call a `ToolInputStart` and a `ToolCall`, then
//! `Finish` (`ToolCalls` if there were any, else `Stop`; zero usage).
//! Tool call ids are `scripted_<a>_<k>`: `a` = assistant messages in the
//! whole history, `k` = the call's position in the turn; deterministic and
//! unique within a thread.
//!
//! **Earlier results.** A tool call argument may refer to the result of an
//! earlier call of the same run, so a script can chain calls on ids it cannot
//! know in advance (a workflow created in turn 0, run in turn 1):
//!
//! ```json
//! {"name": "workflows", "args": {"action": "get",
//!   "workflowId": {"$fromResult": {"turn": 0, "call": 0, "pointer": "/workflowId"}}}}
//! ```
//!
//! Any JSON value anywhere in `args` that is an object with the single key
//! `$fromResult` is replaced by the value at the JSON Pointer `pointer`
//! (RFC 6901; `""` is the whole result) in the result of call `call`
//! (0-based, in the order the turn listed its calls) of turn `turn` (0-based,
//! counted within the run, as turns are played). A reference that cannot be
//! resolved — a turn not played yet, a call that does not exist or has no
//! result, an error result, a pointer that matches nothing — fails the run
//! with an error naming the reference.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::{
    drive, CancellationToken, FinishReason, Message, ModelChunk, ModelError, ModelErrorKind,
    ModelProvider, ModelRequest, ModelStream, RetryPolicy, Usage,
};

const PROVIDER: &str = "scripted";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub conversations: HashMap<String, Vec<Turn>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Pause before each chunk, to make streaming visible.
    #[serde(default)]
    pub chunk_delay_ms: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub args: serde_json::Value,
}

fn empty_object() -> serde_json::Value {
    serde_json::json!({})
}

pub struct ScriptedProvider {
    script: Arc<Script>,
    label: String,
}

impl ScriptedProvider {
    /// Reads and validates the script once (at init), so a broken file is a
    /// startup error rather than a failed run.
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::config(
                PROVIDER,
                format!("cannot read model script {}: {e}", path.display()),
            )
        })?;
        let mut provider = Self::from_json(&text).map_err(|e| {
            ModelError::config(
                PROVIDER,
                format!("model script {}: {}", path.display(), e.message),
            )
        })?;
        provider.label = path.display().to_string();
        Ok(provider)
    }

    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        let script: Script = serde_json::from_str(text)
            .map_err(|e| ModelError::config(PROVIDER, format!("invalid script: {e}")))?;
        Ok(Self::new(script))
    }

    pub fn new(script: Script) -> Self {
        ScriptedProvider {
            script: Arc::new(script),
            label: "inline".to_string(),
        }
    }

    /// The chunks of the turn this request selects (no delays applied).
    pub fn plan(&self, request: &ModelRequest) -> Result<(Vec<ModelChunk>, Duration), ModelError> {
        let script_error = |msg: String| ModelError::new(PROVIDER, ModelErrorKind::Script, msg);
        let run_start = request
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }));
        let Some(start) = run_start else {
            return Err(script_error(
                "the history has no user message to select a scripted conversation".into(),
            ));
        };
        let Message::User { text: key } = &request.messages[start] else {
            return Err(script_error(
                "internal: selected message is not a user message".into(),
            ));
        };
        // The host's `<past-conversations>` cue and attachment list are not part of what the user typed.
        let typed = key.split("\n\n<past-conversations").next().unwrap_or(key);
        let typed = typed.split("\n\n[ATTACHMENTS]").next().unwrap_or(typed);
        let turns = self
            .script
            .conversations
            .get(key)
            .or_else(|| self.script.conversations.iter().find(|(k, _)| k.trim() == key.trim() || k.trim() == typed.trim()).map(|(_, v)| v))
            .ok_or_else(|| {
                script_error(format!(
                    "no scripted conversation for user message {:?} in script {} ({} conversations)",
                    super::http::truncate(key, 120),
                    self.label,
                    self.script.conversations.len()
                ))
            })?;
        let is_assistant = |m: &&Message| matches!(m, Message::Assistant { .. });
        let n = request.messages[start..]
            .iter()
            .filter(is_assistant)
            .count();
        let turn = turns.get(n).ok_or_else(|| {
            script_error(format!(
                "script exhausted: conversation {:?} has {} turns, this is model call {} of the run",
                super::http::truncate(key, 120),
                turns.len(),
                n + 1
            ))
        })?;
        let id_base = request.messages.iter().filter(is_assistant).count();

        let mut chunks = Vec::new();
        if let Some(reasoning) = &turn.reasoning {
            chunks.extend(
                split_chunks(reasoning)
                    .into_iter()
                    .map(ModelChunk::ReasoningDelta),
            );
        }
        if let Some(text) = &turn.text {
            chunks.extend(split_chunks(text).into_iter().map(ModelChunk::TextDelta));
        }
        for (k, call) in turn.tool_calls.iter().enumerate() {
            let id = format!("scripted_{id_base}_{k}");
            let args = resolve_references(&call.args, &request.messages[start..])
                .map_err(|e| script_error(format!("turn {n}, call {k} ({}): {e}", call.name)))?;
            chunks.push(ModelChunk::ToolInputStart {
                id: id.clone(),
                name: call.name.clone(),
            });
            chunks.push(ModelChunk::ToolCall {
                id,
                name: call.name.clone(),
                args,
            });
        }
        let reason = if turn.tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        chunks.push(ModelChunk::Finish {
            reason,
            usage: Usage::default(),
        });
        Ok((
            chunks,
            Duration::from_millis(turn.chunk_delay_ms.unwrap_or(0)),
        ))
    }
}

impl ModelProvider for ScriptedProvider {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.label
    }

    fn stream(&self, request: ModelRequest, cancel: CancellationToken) -> ModelStream {
        let plan = self.plan(&request);
        let mut plan = Some(plan);
        drive(
            PROVIDER.to_string(),
            RetryPolicy::none(),
            cancel,
            Box::new(move || {
                // One attempt only (the policy never retries); a second call
                // would find the plan taken, which cannot happen.
                let plan = plan.take();
                Box::pin(async move {
                    let (chunks, delay) = match plan {
                        Some(plan) => plan?,
                        None => {
                            return Err(ModelError::new(
                                PROVIDER,
                                ModelErrorKind::Script,
                                "script turn already played",
                            ))
                        }
                    };
                    let stream: ModelStream = Box::pin(async_stream::stream! {
                        for chunk in chunks {
                            if !delay.is_zero() {
                                tokio::time::sleep(delay).await;
                            }
                            yield Ok(chunk);
                        }
                    });
                    Ok(stream)
                })
            }),
        )
    }
}

/// Replaces every `{"$fromResult": {turn, call, pointer}}` in `args` with the
/// value it names in `run` (the messages of the run, from its user message).
fn resolve_references(args: &serde_json::Value, run: &[Message]) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    match args {
        Value::Object(map) if map.len() == 1 && map.contains_key("$fromResult") => {
            let r = &map["$fromResult"];
            let describe = || format!("$fromResult {r}");
            let index = |key: &str| {
                r.get(key)
                    .and_then(Value::as_u64)
                    .map(|n| n as usize)
                    .ok_or_else(|| format!("{}: `{key}` must be a non-negative integer", describe()))
            };
            let (turn, call) = (index("turn")?, index("call")?);
            let pointer = match r.get("pointer") {
                None => "",
                Some(Value::String(p)) => p.as_str(),
                Some(_) => return Err(format!("{}: `pointer` must be a string", describe())),
            };
            let parts = run
                .iter()
                .filter_map(|m| match m {
                    Message::Assistant { parts } => Some(parts),
                    _ => None,
                })
                .nth(turn)
                .ok_or_else(|| format!("{}: turn {turn} has not been played in this run", describe()))?;
            let call_id = parts
                .iter()
                .filter_map(|p| match p {
                    super::AssistantPart::ToolCall { id, .. } => Some(id),
                    _ => None,
                })
                .nth(call)
                .ok_or_else(|| format!("{}: turn {turn} has no call {call}", describe()))?;
            let (content, is_error) = run
                .iter()
                .find_map(|m| match m {
                    Message::ToolResult { tool_call_id, content, is_error, .. } if tool_call_id == call_id => {
                        Some((content, *is_error))
                    }
                    _ => None,
                })
                .ok_or_else(|| format!("{}: call {call_id} has no result yet", describe()))?;
            if is_error {
                return Err(format!("{}: call {call_id} failed: {}", describe(), super::http::truncate(content, 200)));
            }
            let result: Value = serde_json::from_str(content)
                .map_err(|_| format!("{}: the result of {call_id} is not JSON", describe()))?;
            result
                .pointer(pointer)
                .cloned()
                .ok_or_else(|| format!("{}: nothing at {pointer:?} in the result of {call_id}", describe()))
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), resolve_references(v, run)?)))
            .collect::<Result<serde_json::Map<_, _>, String>>()
            .map(Value::Object),
        Value::Array(items) => items.iter().map(|v| resolve_references(v, run)).collect::<Result<Vec<_>, _>>().map(Value::Array),
        other => Ok(other.clone()),
    }
}

/// Splits text on word boundaries into at least 3 chunks (about two words
/// each for longer text); texts of fewer than 3 words are split by
/// characters instead. The chunks concatenate to the input exactly.
pub fn split_chunks(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    // Words with their trailing whitespace (leading whitespace stays with
    // the first word).
    let mut words: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    let mut seen_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else {
            if in_space && seen_word {
                words.push(&text[start..i]);
                start = i;
            }
            in_space = false;
            seen_word = true;
        }
    }
    words.push(&text[start..]);

    if words.len() < 3 {
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let chars = bounds.len() - 1;
        let parts = chars.min(3);
        return (0..parts)
            .map(|p| text[bounds[p * chars / parts]..bounds[(p + 1) * chars / parts]].to_string())
            .collect();
    }
    // About two words per chunk, at least 3 chunks, spread evenly.
    let parts = (words.len() / 2).max(3);
    (0..parts)
        .map(|p| words[p * words.len() / parts..(p + 1) * words.len() / parts].concat())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{resolve_references, split_chunks, Message};
    use crate::AssistantPart;
    use serde_json::json;

    fn run_with_result(content: &str, is_error: bool) -> Vec<Message> {
        vec![
            Message::user("go"),
            Message::Assistant {
                parts: vec![
                    AssistantPart::ToolCall { id: "c0".into(), name: "a".into(), args: json!({}) },
                    AssistantPart::ToolCall { id: "c1".into(), name: "b".into(), args: json!({}) },
                ],
            },
            Message::ToolResult { tool_call_id: "c0".into(), tool_name: "a".into(), content: "{}".into(), is_error: false },
            Message::ToolResult { tool_call_id: "c1".into(), tool_name: "b".into(), content: content.into(), is_error },
        ]
    }

    #[test]
    fn references_resolve_anywhere_in_the_arguments() {
        let run = run_with_result(r#"{"workflowId":"wf_9","nodes":[{"name":"Set"}]}"#, false);
        let args = json!({
            "action": "get",
            "workflowId": {"$fromResult": {"turn": 0, "call": 1, "pointer": "/workflowId"}},
            "deep": [{"n": {"$fromResult": {"turn": 0, "call": 1, "pointer": "/nodes/0/name"}}}],
            "whole": {"$fromResult": {"turn": 0, "call": 0}},
        });
        let out = resolve_references(&args, &run).unwrap();
        assert_eq!(out, json!({"action": "get", "workflowId": "wf_9", "deep": [{"n": "Set"}], "whole": {}}));
    }

    #[test]
    fn unresolvable_references_name_themselves() {
        let run = run_with_result(r#"{"workflowId":"wf_9"}"#, false);
        for (args, expect) in [
            (json!({"$fromResult": {"turn": 1, "call": 0}}), "turn 1 has not been played"),
            (json!({"$fromResult": {"turn": 0, "call": 2}}), "turn 0 has no call 2"),
            (json!({"$fromResult": {"turn": 0, "call": 1, "pointer": "/nope"}}), "nothing at \"/nope\""),
            (json!({"$fromResult": {"turn": "x", "call": 1}}), "`turn` must be"),
        ] {
            let e = resolve_references(&args, &run).unwrap_err();
            assert!(e.contains("$fromResult") && e.contains(expect), "{e}");
        }
        let failed = run_with_result("workflow not found", true);
        let e = resolve_references(&json!({"$fromResult": {"turn": 0, "call": 1}}), &failed).unwrap_err();
        assert!(e.contains("failed: workflow not found"), "{e}");
    }

    #[test]
    fn chunks_concatenate_to_the_text() {
        for text in [
            "a",
            "ab",
            "héllo",
            "two words",
            "one two three",
            "a b c d e f g h i j k",
            "  lead and trail  ",
        ] {
            let chunks = split_chunks(text);
            assert_eq!(chunks.concat(), text);
            assert!(
                chunks.len() >= 3.min(text.chars().count()),
                "{text:?} -> {chunks:?}"
            );
            assert!(
                chunks.iter().all(|c| !c.is_empty()),
                "{text:?} -> {chunks:?}"
            );
        }
    }
}
