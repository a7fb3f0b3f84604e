//! The conversation index behind `conversation-history`
//! (`store::data::AgentRecords`): each completed turn of an orchestrator is
//! recorded as the user saw it (their message, the ask-user answers, the
//! final reply), and a new thread's first message gets the
//! `<past-conversations>` cue when the user's project has history.

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::model::Message;
use crate::runtime::Runtime;
use serde_json::Value;
use store::data::agent_records::{ConversationMessage, UserAnswer};
use store::runs::Chain;

/// The project a thread's turns are indexed under and recalled from: the
/// project the thread is bound to, else the user's personal project. The
/// index is keyed by user too, so a project's members never read each
/// other's conversations.
pub async fn project(rt: &Runtime, user: &protocol::UserId, bound: Option<&str>) -> Result<Option<String>, AgentError> {
    let Some(inst) = rt.instance.as_ref() else { return Ok(None) };
    if let Some(p) = bound {
        return Ok(Some(p.to_owned()));
    }
    let u = inst.user(&instance::Caller::new(user.clone())).await.map_err(|e| AgentError::Invalid(e.message()))?;
    Ok(Some(u.personal_project_id))
}

/// Answers of this run's ask-user calls, as `{question, answer}`.
fn answers(results: &[&Message]) -> Vec<UserAnswer> {
    let mut out = Vec::new();
    for m in results {
        let Message::ToolResult { tool_name, content, is_error: false, .. } = m else { continue };
        if tool_name != "ask-user" {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(content) else { continue };
        for a in v.get("answers").and_then(Value::as_array).into_iter().flatten() {
            let question = a.get("question").and_then(Value::as_str).unwrap_or_default().to_owned();
            let answer = match a.get("answer").or_else(|| a.get("selectedOptions")).or_else(|| a.get("customText")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => items.iter().map(|i| i.as_str().map(str::to_owned).unwrap_or_else(|| i.to_string())).collect::<Vec<_>>().join(", "),
                Some(other) => other.to_string(),
                None => continue,
            };
            out.push(UserAnswer { question, answer });
        }
    }
    out
}

/// Records a completed turn: the thread (titled), the run's user message with
/// its ask-user answers, and the final reply.
pub async fn index_turn(rt: &Runtime, chain: &Chain, ckpt: &Checkpoint, title: &str, reply: Option<&str>) -> Result<(), AgentError> {
    let Some(project) = project(rt, &chain.user_id, chain.project_id.as_deref()).await? else { return Ok(()) };
    let Some(inst) = rt.instance.as_ref() else { return Ok(()) };
    let records = &inst.data.agent;
    let Some(at) = ckpt.messages.iter().rposition(|m| matches!(m, Message::User { .. })) else { return Ok(()) };
    let Message::User { text } = &ckpt.messages[at] else { return Ok(()) };
    // The cue is ours, not what the user typed.
    let text = text.split("\n\n<past-conversations").next().unwrap_or(text);
    records.index_thread(&chain.user_id, &project, &chain.thread_id, title).await?;
    let now = store::data::db::now_iso();
    let later: Vec<&Message> = ckpt.messages[at + 1..].iter().collect();
    let user = ConversationMessage {
        message_id: format!("{}-user", chain.run_id),
        role: "user".into(),
        created_at: now.clone(),
        text: text.to_owned(),
        user_answers: answers(&later),
    };
    records.index_message(&chain.user_id, &project, &chain.thread_id, &user).await?;
    if let Some(reply) = reply.map(str::trim).filter(|r| !r.is_empty()) {
        let assistant = ConversationMessage {
            message_id: format!("{}-reply", chain.run_id),
            role: "assistant".into(),
            created_at: store::data::db::now_iso(),
            text: reply.to_owned(),
            user_answers: Vec::new(),
        };
        records.index_message(&chain.user_id, &project, &chain.thread_id, &assistant).await?;
    }
    Ok(())
}

/// The `<past-conversations>` block for a new thread's first message:
/// the most recent other conversations of the user's project, or nothing.
pub async fn past_conversations_cue(rt: &Runtime, chain: &Chain) -> Result<Option<String>, AgentError> {
    let Some(project) = project(rt, &chain.user_id, chain.project_id.as_deref()).await? else { return Ok(None) };
    let Some(inst) = rt.instance.as_ref() else { return Ok(None) };
    let recent = inst.data.agent.search_conversations(&chain.user_id, &project, None, Some(5), Some(&chain.thread_id)).await?;
    if recent.is_empty() {
        return Ok(None);
    }
    let mut cue = format!("\n\n<past-conversations count=\"{}\">\nRecent conversations of this project (recall them with conversation-history):\n", recent.len());
    for h in &recent {
        cue.push_str(&format!("- {} ({})\n", h.title.replace('\n', " "), h.updated_at));
    }
    cue.push_str("</past-conversations>");
    Ok(Some(cue))
}
