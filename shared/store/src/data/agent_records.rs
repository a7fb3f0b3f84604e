//! Records the agent keeps beside its threads (Agent table):
//!
//! - saved user preferences (`save_user_preference`): `pk=user#<u>,
//!   sk=pref#<id>`, a content-hash item that refuses duplicates and a
//!   counter item that refuses past [`MAX_PREFERENCES`], all in one
//!   transaction, so a refusal writes nothing;
//! - a conversation index for `conversation-history`: per user and project
//!   `pk=conv#<u>#<p>, sk=thread#<t>` (title, updatedAt), and the visible
//!   messages of each thread `pk=convmsg#<t>, sk=<createdAt>#<messageId>`.
//!
//! Per-thread workspace files are [`super::workspace`].

use super::db::{self, key, s, to_item, tx_put, Table};
use crate::error::StoreError;
use protocol::ids::ThreadId;
use protocol::UserId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// `AI_PREFERENCE_CONTENT_MAX_LENGTH`, in characters.
pub const AI_PREFERENCE_CONTENT_MAX_LENGTH: usize = 500;
/// Preferences one user may hold (`scope_full` past it).
pub const MAX_PREFERENCES: u64 = 50;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preference {
    pub id: String,
    pub content: String,
    pub scope: String,
    pub created_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreferenceRejection {
    TooLong,
    ScopeFull,
    Duplicate,
}

/// The tool's answer: `{ ok: true, preference }` or `{ ok: false, reason, message }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SavePreference {
    Saved { ok: bool, preference: Preference },
    Rejected { ok: bool, reason: PreferenceRejection, message: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserAnswer {
    pub question: String,
    pub answer: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationMessage {
    pub message_id: String,
    /// `user` or `assistant`.
    pub role: String,
    pub created_at: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_answers: Vec<UserAnswer>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationEntry {
    pub thread_id: ThreadId,
    pub title: String,
    pub updated_at: String,
    pub message_count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Excerpt {
    pub message_id: String,
    pub text: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversationHit {
    pub thread_id: ThreadId,
    pub title: String,
    pub updated_at: String,
    /// `title`, `messages`, `user-answers`.
    pub matched_in: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_message_excerpt: Option<String>,
    pub excerpts: Vec<Excerpt>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageWindow {
    pub thread_id: ThreadId,
    pub title: String,
    pub messages: Vec<ConversationMessage>,
    pub has_more_before: bool,
    pub has_more_after: bool,
}

#[derive(Serialize, Deserialize)]
struct PrefItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    pref: Preference,
    hash: String,
}

#[derive(Serialize, Deserialize)]
struct EntryItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    entry: ConversationEntry,
}

#[derive(Serialize, Deserialize)]
struct MessageItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    message: ConversationMessage,
}

/// Normalised for duplicate detection: case and whitespace do not make a
/// preference new.
fn content_hash(content: &str) -> String {
    let norm = content.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    hex::encode(Sha256::digest(norm.as_bytes()))
}

fn excerpt(text: &str, needle: &str) -> String {
    let lower = text.to_lowercase();
    let chars: Vec<char> = text.chars().collect();
    // Character index of the match (the lowercase text has the same
    // characters for ASCII; for others we fall back to the start).
    let at = lower.find(needle).map(|b| lower[..b].chars().count()).unwrap_or(0).min(chars.len());
    let from = at.saturating_sub(60);
    let to = (at + needle.chars().count() + 60).min(chars.len());
    let mut out: String = chars[from..to].iter().collect();
    if from > 0 {
        out.insert(0, '…');
    }
    if to < chars.len() {
        out.push('…');
    }
    out
}

#[derive(Clone, Debug)]
pub struct AgentRecords {
    table: Table,
}

impl AgentRecords {
    pub fn new(table: Table) -> Self {
        AgentRecords { table }
    }

    // ---- preferences -------------------------------------------------

    /// Saves a preference; a rejection writes nothing.
    pub async fn save_preference(&self, user: &UserId, content: &str) -> Result<SavePreference, StoreError> {
        let content = content.trim();
        let reject = |reason, message: String| Ok(SavePreference::Rejected { ok: false, reason, message });
        if content.is_empty() {
            return Err(StoreError::Invalid("preference content is empty".into()));
        }
        if content.chars().count() > AI_PREFERENCE_CONTENT_MAX_LENGTH {
            return reject(
                PreferenceRejection::TooLong,
                format!("A preference can be at most {AI_PREFERENCE_CONTENT_MAX_LENGTH} characters."),
            );
        }
        let pk = format!("user#{user}");
        let hash = content_hash(content);
        let pref = Preference {
            id: db::new_id(),
            content: content.to_owned(),
            scope: "user".into(),
            created_at: db::now_iso(),
        };
        let t = &self.table.name;
        let items = vec![
            tx_put(
                t,
                to_item(&PrefItem {
                    pk: pk.clone(),
                    sk: format!("pref#{}", pref.id),
                    pref: pref.clone(),
                    hash: hash.clone(),
                })?,
                None,
            )?,
            tx_put(t, key(&pk, format!("prefhash#{hash}")), Some("attribute_not_exists(pk)"))?,
            db::tx_update(
                t,
                key(&pk, "prefcount"),
                "SET n = if_not_exists(n, :zero) + :one",
                Some("attribute_not_exists(n) OR n < :max"),
                &[],
                vec![(":zero", db::n(0)), (":one", db::n(1)), (":max", db::n(MAX_PREFERENCES))],
            )?,
        ];
        self.table.count();
        match self.table.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(SavePreference::Saved { ok: true, preference: pref }),
            Err(e) => match db::cancel_reasons(&e) {
                Some(r) if r.get(1).is_some_and(|c| c == "ConditionalCheckFailed") => {
                    reject(PreferenceRejection::Duplicate, "This preference is already saved.".into())
                }
                Some(r) if r.get(2).is_some_and(|c| c == "ConditionalCheckFailed") => reject(
                    PreferenceRejection::ScopeFull,
                    format!("You already have {MAX_PREFERENCES} saved preferences; remove one first."),
                ),
                Some(r) => Err(StoreError::Conflict(format!("preference save raced ({})", r.join(", ")))),
                None => Err(StoreError::dynamo(e)),
            },
        }
    }

    pub async fn preferences(&self, user: &UserId) -> Result<Vec<Preference>, StoreError> {
        let mut out: Vec<Preference> = self
            .table
            .query_prefix(&format!("user#{user}"), "pref#", false)
            .await?
            .into_iter()
            .map(|i| db::from_item::<PrefItem>(i).map(|p| p.pref))
            .collect::<Result<_, _>>()?;
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        Ok(out)
    }

    /// Rewrites a preference's content (the card's edit); the same rules as
    /// a save (length, duplicates). A missing or another user's preference is
    /// `NotFound`; a rejection writes nothing.
    pub async fn update_preference(&self, user: &UserId, id: &str, content: &str) -> Result<SavePreference, StoreError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(StoreError::Invalid("preference content is empty".into()));
        }
        if content.chars().count() > AI_PREFERENCE_CONTENT_MAX_LENGTH {
            return Ok(SavePreference::Rejected {
                ok: false,
                reason: PreferenceRejection::TooLong,
                message: format!("A preference can be at most {AI_PREFERENCE_CONTENT_MAX_LENGTH} characters."),
            });
        }
        let pk = format!("user#{user}");
        let old: PrefItem = self
            .table
            .get(&pk, &format!("pref#{id}"))
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("preference {id}")))?;
        let hash = content_hash(content);
        let pref = Preference { content: content.to_owned(), ..old.pref.clone() };
        let t = &self.table.name;
        let mut items = vec![tx_put(
            t,
            to_item(&PrefItem { pk: pk.clone(), sk: format!("pref#{id}"), pref: pref.clone(), hash: hash.clone() })?,
            Some("attribute_exists(pk)"),
        )?];
        if hash != old.hash {
            items.push(tx_put(t, key(&pk, format!("prefhash#{hash}")), Some("attribute_not_exists(pk)"))?);
            items.push(db::tx_delete(t, key(&pk, format!("prefhash#{}", old.hash)), None)?);
        }
        self.table.count();
        match self.table.client.transact_write_items().set_transact_items(Some(items)).send().await {
            Ok(_) => Ok(SavePreference::Saved { ok: true, preference: pref }),
            Err(e) => match db::cancel_reasons(&e) {
                Some(r) if r.get(1).is_some_and(|c| c == "ConditionalCheckFailed") => Ok(SavePreference::Rejected {
                    ok: false,
                    reason: PreferenceRejection::Duplicate,
                    message: "This preference is already saved.".into(),
                }),
                Some(r) if r.first().is_some_and(|c| c == "ConditionalCheckFailed") => Err(StoreError::NotFound(format!("preference {id}"))),
                Some(r) => Err(StoreError::Conflict(format!("preference edit raced ({})", r.join(", ")))),
                None => Err(StoreError::dynamo(e)),
            },
        }
    }

    /// Removes a preference (the "undo" of the card).
    pub async fn delete_preference(&self, user: &UserId, id: &str) -> Result<(), StoreError> {
        let pk = format!("user#{user}");
        let item: PrefItem = self
            .table
            .get(&pk, &format!("pref#{id}"))
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("preference {id}")))?;
        let t = &self.table.name;
        self.table
            .transact(
                vec![
                    db::tx_delete(t, key(&pk, format!("pref#{id}")), Some("attribute_exists(pk)"))?,
                    db::tx_delete(t, key(&pk, format!("prefhash#{}", item.hash)), None)?,
                    db::tx_update(
                        t,
                        key(&pk, "prefcount"),
                        "SET n = n - :one",
                        Some("n > :zero"),
                        &[],
                        vec![(":one", db::n(1)), (":zero", db::n(0))],
                    )?,
                ],
                &format!("preference {id} changed"),
            )
            .await
    }

    // ---- conversation index -----------------------------------------

    /// Creates or retitles a thread's index entry.
    pub async fn index_thread(
        &self,
        user: &UserId,
        project_id: &str,
        thread: &ThreadId,
        title: &str,
    ) -> Result<(), StoreError> {
        self.table.count();
        self.table
            .client
            .update_item()
            .table_name(&self.table.name)
            .set_key(Some(key(format!("conv#{user}#{project_id}"), format!("thread#{thread}"))))
            .update_expression("SET title = :t, threadId = :id, updatedAt = if_not_exists(updatedAt, :now), messageCount = if_not_exists(messageCount, :zero)")
            .expression_attribute_values(":t", s(title))
            .expression_attribute_values(":id", s(thread.as_str()))
            .expression_attribute_values(":now", s(db::now_iso()))
            .expression_attribute_values(":zero", db::n(0))
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(())
    }

    /// Records a visible message (user message, ask-user answer, final reply).
    pub async fn index_message(
        &self,
        user: &UserId,
        project_id: &str,
        thread: &ThreadId,
        message: &ConversationMessage,
    ) -> Result<(), StoreError> {
        let item = to_item(&MessageItem {
            pk: format!("convmsg#{thread}"),
            sk: format!("{}#{}", message.created_at, message.message_id),
            message: message.clone(),
        })?;
        let t = &self.table.name;
        self.table
            .transact(
                vec![
                    tx_put(t, item, None)?,
                    db::tx_update(
                        t,
                        key(format!("conv#{user}#{project_id}"), format!("thread#{thread}")),
                        "SET updatedAt = :now, messageCount = if_not_exists(messageCount, :zero) + :one, threadId = :id, title = if_not_exists(title, :empty)",
                        None,
                        &[],
                        vec![
                            (":now", s(&message.created_at)),
                            (":zero", db::n(0)),
                            (":one", db::n(1)),
                            (":id", s(thread.as_str())),
                            (":empty", s("")),
                        ],
                    )?,
                ],
                "conversation index write raced",
            )
            .await
    }

    async fn entries(&self, user: &UserId, project_id: &str) -> Result<Vec<ConversationEntry>, StoreError> {
        let mut out: Vec<ConversationEntry> = self
            .table
            .query_prefix(&format!("conv#{user}#{project_id}"), "thread#", false)
            .await?
            .into_iter()
            .map(|i| db::from_item::<EntryItem>(i).map(|e| e.entry))
            .collect::<Result<_, _>>()?;
        out.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        Ok(out)
    }

    async fn messages(&self, thread: &ThreadId) -> Result<Vec<ConversationMessage>, StoreError> {
        self.table
            .query_prefix(&format!("convmsg#{thread}"), "", false)
            .await?
            .into_iter()
            .map(|i| db::from_item::<MessageItem>(i).map(|m| m.message))
            .collect()
    }

    /// `conversation-history(action="search")`: the user's threads in the
    /// project (the current one excluded), newest first. With a query (2–200
    /// characters, one case-insensitive phrase) only threads whose title,
    /// user messages or ask-user answers contain it; without, the most
    /// recent. Threads with no messages are never returned.
    pub async fn search_conversations(
        &self,
        user: &UserId,
        project_id: &str,
        query: Option<&str>,
        limit: Option<usize>,
        exclude: Option<&ThreadId>,
    ) -> Result<Vec<ConversationHit>, StoreError> {
        let query = query.map(str::trim).filter(|q| !q.is_empty());
        if let Some(q) = query {
            let n = q.chars().count();
            if !(2..=200).contains(&n) {
                return Err(StoreError::Invalid("query must be 2–200 characters".into()));
            }
        }
        let limit = limit.unwrap_or(if query.is_some() { 10 } else { 5 }).clamp(1, 10);
        let needle = query.map(str::to_lowercase);
        let mut hits = Vec::new();
        for e in self.entries(user, project_id).await? {
            if hits.len() >= limit {
                break;
            }
            if e.message_count == 0 || exclude == Some(&e.thread_id) {
                continue;
            }
            let Some(n) = &needle else {
                hits.push(ConversationHit {
                    thread_id: e.thread_id,
                    title: e.title,
                    updated_at: e.updated_at,
                    matched_in: Vec::new(),
                    first_message_excerpt: None,
                    excerpts: Vec::new(),
                });
                continue;
            };
            let msgs = self.messages(&e.thread_id).await?;
            let mut matched_in = Vec::new();
            if e.title.to_lowercase().contains(n.as_str()) {
                matched_in.push("title");
            }
            let mut excerpts = Vec::new();
            let mut in_answers = false;
            for m in &msgs {
                if m.role == "user" && m.text.to_lowercase().contains(n.as_str()) {
                    excerpts.push(Excerpt {
                        message_id: m.message_id.clone(),
                        text: excerpt(&m.text, n),
                        created_at: m.created_at.clone(),
                    });
                }
                for a in &m.user_answers {
                    if a.answer.to_lowercase().contains(n.as_str()) || a.question.to_lowercase().contains(n.as_str()) {
                        in_answers = true;
                        excerpts.push(Excerpt {
                            message_id: m.message_id.clone(),
                            text: excerpt(&format!("{} {}", a.question, a.answer), n),
                            created_at: m.created_at.clone(),
                        });
                    }
                }
            }
            if excerpts.iter().any(|x| {
                msgs.iter().any(|m| {
                    m.message_id == x.message_id && m.role == "user" && m.text.to_lowercase().contains(n.as_str())
                })
            }) {
                matched_in.push("messages");
            }
            if in_answers {
                matched_in.push("user-answers");
            }
            if matched_in.is_empty() {
                continue;
            }
            excerpts.truncate(3);
            hits.push(ConversationHit {
                first_message_excerpt: msgs
                    .iter()
                    .find(|m| m.role == "user")
                    .map(|m| m.text.chars().take(120).collect()),
                thread_id: e.thread_id,
                title: e.title,
                updated_at: e.updated_at,
                matched_in,
                excerpts,
            });
        }
        Ok(hits)
    }

    /// `conversation-history(action="get-messages")`: a window of a thread's
    /// visible messages, oldest first. Without an anchor, `before` = the last
    /// N, `after` = the first N (max 5 each); a stranger's thread is `NotFound`.
    pub async fn get_messages(
        &self,
        user: &UserId,
        project_id: &str,
        thread: &ThreadId,
        around: Option<&str>,
        before: Option<usize>,
        after: Option<usize>,
    ) -> Result<MessageWindow, StoreError> {
        let entry: EntryItem = self
            .table
            .get(&format!("conv#{user}#{project_id}"), &format!("thread#{thread}"))
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("thread {thread}")))?;
        let msgs = self.messages(thread).await?;
        let (from, to) = match around {
            Some(anchor) => {
                let at = msgs
                    .iter()
                    .position(|m| m.message_id == anchor)
                    .ok_or_else(|| StoreError::NotFound(format!("message {anchor}")))?;
                let b = before.unwrap_or(2).min(5);
                let a = after.unwrap_or(2).min(5);
                (at.saturating_sub(b), (at + a + 1).min(msgs.len()))
            }
            None => match (before, after) {
                (Some(_), Some(_)) => {
                    return Err(StoreError::Invalid("before and after together need aroundMessageId".into()))
                }
                (_, Some(a)) => (0, a.min(5).min(msgs.len())),
                (b, None) => {
                    let b = b.unwrap_or(5).min(5);
                    (msgs.len().saturating_sub(b), msgs.len())
                }
            },
        };
        Ok(MessageWindow {
            thread_id: thread.clone(),
            title: entry.entry.title,
            has_more_before: from > 0,
            has_more_after: to < msgs.len(),
            messages: msgs[from..to].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_ignore_case_and_spacing() {
        assert_eq!(content_hash("Use  Slack"), content_hash("use slack"));
        assert_ne!(content_hash("use slack"), content_hash("use teams"));
    }
}
