//! `save_user_preference {content, scope: "user"}`: writes at once (no
//! suspension) through `store::data::AgentRecords`; `{ok: true, preference}`
//! or `{ok: false, reason, message}` with nothing written. Saved preferences
//! reach the system prompt of the user's later runs ([`prompt_section`]).

use super::policy::Mode;
use super::{Audience, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use store::data::agent_records::{Preference, AI_PREFERENCE_CONTENT_MAX_LENGTH};

pub struct SaveUserPreference;

pub const POLICY_ACTION: &str = "save_user_preference";

fn rejected(reason: &str, message: impl Into<String>) -> ToolOutcome {
    ToolOutcome::Done(json!({"ok": false, "reason": reason, "message": message.into()}))
}

impl Tool for SaveUserPreference {
    fn name(&self) -> &'static str {
        "save_user_preference"
    }

    fn description(&self) -> &'static str {
        "Save a durable preference of the current user (how they like things done), in their own terms. It is written \
at once and applies to their later conversations; the user sees a card to edit or undo it. Returns {ok: true, \
preference} or {ok: false, reason, message} (blocked_by_admin, too_long, scope_full, duplicate, not_permitted, failed): \
never say it was saved without ok: true."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "content": {"type": "string", "minLength": 1, "description": format!("The preference in the user's own terms, at most {AI_PREFERENCE_CONTENT_MAX_LENGTH} characters")},
            "scope": {"type": "string", "enum": ["user"], "description": "Only `user` exists: the preference applies to this user's conversations"}
        }, "required": ["content", "scope"], "additionalProperties": false})
    }

    /// Only the orchestrator speaks for the user.
    fn audience(&self) -> Audience {
        Audience::Orchestrator
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if ctx.rt.policy.mode(POLICY_ACTION) == Mode::Blocked {
                return rejected("blocked_by_admin", "An administrator has turned off saving preferences for the assistant; nothing was saved.");
            }
            if args.get("scope").and_then(Value::as_str) != Some("user") {
                return rejected("not_permitted", "Only preferences of scope \"user\" can be saved.");
            }
            let content = args.get("content").and_then(Value::as_str).unwrap_or_default();
            if content.trim().is_empty() {
                return ToolOutcome::Failed("content must not be empty".into());
            }
            let inst = match ctx.instance() {
                Ok(i) => i,
                Err(e) => return rejected("failed", e),
            };
            match inst.data.agent.save_preference(ctx.user_id, content).await {
                Ok(saved) => ToolOutcome::Done(serde_json::to_value(saved).unwrap_or_default()),
                Err(e) => {
                    tracing::warn!(error = %e, "saving a preference failed");
                    rejected("failed", "The preference could not be saved; nothing was written. Try again later.")
                }
            }
        })
    }
}

/// The system prompt's section listing the user's saved preferences (none: empty).
pub fn prompt_section(prefs: &[Preference]) -> String {
    if prefs.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "## The user's saved preferences\n\nThe user asked you to remember these (saved with save_user_preference). Follow them unless the user says otherwise in this conversation:\n\n",
    );
    for p in prefs {
        s.push_str(&format!("- {}\n", p.content.replace('\n', " ")));
    }
    s
}
