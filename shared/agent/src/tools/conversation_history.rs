//! `conversation-history` (orchestrator only): `search` and `get-messages`
//! over the user's other conversations in their project
//! (`store::data::AgentRecords`, written by [`crate::history`]). Never a
//! thrown tool error: a failed lookup answers the empty shape with `error`.
//! Past messages are the user's own words and the agent's replies, shown
//! inside the untrusted envelope (they may quote outside data).

use super::schema::action_variant as action;
use super::untrusted::json_envelope;
use super::{Audience, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use protocol::ids::ThreadId;
use serde_json::{json, Value};

pub struct ConversationHistory;

fn usize_arg(args: &Value, name: &str) -> Option<usize> {
    args.get(name).and_then(Value::as_u64).map(|n| n as usize)
}

impl Tool for ConversationHistory {
    fn name(&self) -> &'static str {
        "conversation-history"
    }

    fn description(&self) -> &'static str {
        "Recall the user's past conversations in this project (this one excluded). search: threads whose title, \
messages or ask-user answers contain one exact phrase — use few, short, distinctive words; without a query, the most \
recent threads. get-messages: a window of one thread's messages as the user saw them (around a message from a search \
excerpt, or the first/last few). Read-only."
    }

    fn input_schema(&self) -> Value {
        json!({"oneOf": [
            action("search", "Past conversations matching a phrase, newest first (no query: the most recent)", json!({
                "query": {"type": "string", "minLength": 2, "maxLength": 200, "description": "One exact phrase, case-insensitive (2-200 characters); omit to list recent conversations"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Max conversations (default 10 when searching, 5 when listing recent)"}
            }), &[]),
            action("get-messages", "Messages of one past conversation, oldest first", json!({
                "threadId": {"type": "string", "minLength": 1, "description": "Conversation id from a search result"},
                "aroundMessageId": {"type": "string", "description": "Center the read on this message id (from a search excerpt)"},
                "before": {"type": "integer", "minimum": 0, "maximum": 5, "description": "Messages before the anchor; without aroundMessageId, the last N messages"},
                "after": {"type": "integer", "minimum": 0, "maximum": 5, "description": "Messages after the anchor; without aroundMessageId, the first N messages"}
            }), &["threadId"]),
        ]})
    }

    fn audience(&self) -> Audience {
        Audience::Orchestrator
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let action = args.get("action").and_then(Value::as_str).unwrap_or_default().to_owned();
            let project = match crate::history::project(ctx.rt, ctx.user_id, ctx.project_id).await {
                Ok(Some(p)) => Ok(p),
                Ok(None) => Err("conversation history is not available in this deployment".to_owned()),
                Err(e) => Err(e.to_string()),
            };
            let inst = ctx.instance();
            match action.as_str() {
                "search" => {
                    let result = match (project, inst) {
                        (Ok(p), Ok(i)) => i
                            .data
                            .agent
                            .search_conversations(ctx.user_id, &p, args.get("query").and_then(Value::as_str), usize_arg(&args, "limit"), Some(ctx.thread_id))
                            .await
                            .map_err(|e| e.to_string()),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    };
                    ToolOutcome::Done(match result {
                        Ok(hits) => json!({"hits": json_envelope("conversation-history", &serde_json::to_value(&hits).unwrap_or_default()), "count": hits.len()}),
                        Err(e) => json!({"hits": [], "error": e}),
                    })
                }
                "get-messages" => {
                    let thread = ThreadId(args.get("threadId").and_then(Value::as_str).unwrap_or_default().to_owned());
                    let (before, after) = (usize_arg(&args, "before"), usize_arg(&args, "after"));
                    let around = args.get("aroundMessageId").and_then(Value::as_str);
                    let result = match (project, inst) {
                        (Ok(p), Ok(i)) => i.data.agent.get_messages(ctx.user_id, &p, &thread, around, before, after).await.map_err(|e| match e {
                            store::StoreError::NotFound(_) => format!("no conversation {thread} of yours in this project (or no message {})", around.unwrap_or("-")),
                            other => other.to_string(),
                        }),
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    };
                    ToolOutcome::Done(match result {
                        Ok(w) => json!({
                            "threadId": w.thread_id, "title": w.title,
                            "messages": json_envelope("conversation-history", &serde_json::to_value(&w.messages).unwrap_or_default()),
                            "hasMoreBefore": w.has_more_before, "hasMoreAfter": w.has_more_after,
                        }),
                        Err(e) => json!({"threadId": thread, "title": "", "messages": [], "hasMoreBefore": false, "hasMoreAfter": false, "error": e}),
                    })
                }
                other => ToolOutcome::Failed(format!("unknown conversation-history action {other:?}")),
            }
        })
    }
}
