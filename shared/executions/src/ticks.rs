//! Schedule ticks: an EventBridge Scheduler schedule (one per rule of a
//! published Schedule Trigger) sends a [`TickMessage`] to the Runs queue;
//! the executor starts one `trigger` execution of the published version.
//!
//! At most one execution per tick, however often the message arrives
//! (Scheduler and SQS both deliver at least once): the tick is claimed by
//! one conditional put on `tick#<workflow>#<node>#<rule>` / `<time>#<offset>`
//! (Executions table, expiring after two days). Sub-minute rules ride a
//! one-minute schedule: the minute's tick fans out delayed copies, one per
//! offset, each claimed on its own. Intervals a schedule cannot step by
//! itself (every 3 days, every 2 weeks) fire on every matching tick and
//! are thinned by n8n's recurrence check, whose last value is kept beside
//! the claims.

use crate::error::{ExecutionError, Result};
use crate::{ExecutionId, ExecutionMode, Executor, StartRequest, WorkflowRef};
use aws_sdk_dynamodb::types::AttributeValue;
use engine::schedule::{self, recurrence_due};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use store::data::db::{self, get_s, key, s};

/// The body a schedule sends (its `Input`; `scheduledTime` is EventBridge's
/// `<aws.scheduler.scheduled-time>` context attribute).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TickMessage {
    pub schedule_tick: ScheduleTick,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleTick {
    pub workflow_id: String,
    /// The version published when the schedule was made; ticks of an
    /// older one (a republish is replacing its schedules) do nothing.
    pub version_id: String,
    pub node: String,
    pub rule: usize,
    pub scheduled_time: String,
    /// The rule's timezone (the workflow's, else the instance's).
    pub timezone: String,
    /// Sub-minute rules: the second offsets within the minute this tick fans out to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offsets: Vec<u32>,
    /// Set on a fanned-out copy: which offset it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
}

/// What a tick did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickOutcome {
    Started(ExecutionId),
    /// Already handled (a duplicate delivery).
    Duplicate,
    /// The workflow is no longer published at that version.
    Stale,
    /// The rule's interval has not passed yet (recurrence check).
    NotDue,
}

const TICK_TTL_SECS: u64 = 2 * 86_400;

fn tick_pk(t: &ScheduleTick) -> String {
    format!("tick#{}#{}#{}", t.workflow_id, t.node, t.rule)
}

impl Executor {
    /// Handles one tick: fans out sub-minute copies, claims it, checks
    /// the recurrence, then starts and runs the execution in this process.
    pub async fn handle_tick(&self, tick: &ScheduleTick) -> Result<TickOutcome> {
        let data = &self.inner.data;
        let meta = data.workflows.meta(&tick.workflow_id).await?;
        let live = meta.as_ref().is_some_and(|m| !m.is_archived && m.active_version_id.as_deref() == Some(tick.version_id.as_str()));
        if !live {
            tracing::info!(workflowId = %tick.workflow_id, "tick of a workflow no longer published at that version: ignored");
            return Ok(TickOutcome::Stale);
        }
        if tick.offset.is_none() {
            for &o in tick.offsets.iter().filter(|o| **o > 0) {
                let copy = ScheduleTick { offsets: Vec::new(), offset: Some(o), ..tick.clone() };
                self.inner.sweeper.enqueue_body(&serde_json::to_string(&TickMessage { schedule_tick: copy }).map_err(|e| ExecutionError::Queue(e.to_string()))?, Duration::from_secs(u64::from(o))).await?;
            }
        }
        let offset = tick.offset.unwrap_or(0);
        if !self.claim_tick(tick, offset).await? {
            tracing::info!(workflowId = %tick.workflow_id, scheduledTime = %tick.scheduled_time, "tick already handled");
            return Ok(TickOutcome::Duplicate);
        }
        let version = data
            .workflows
            .get_version(&tick.workflow_id, &tick.version_id)
            .await?
            .ok_or_else(|| ExecutionError::NotFound(format!("version {} of workflow {}", tick.version_id, tick.workflow_id)))?;
        let node_json = version
            .body
            .nodes
            .as_array()
            .and_then(|a| a.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(tick.node.as_str())))
            .cloned()
            .ok_or_else(|| ExecutionError::Invalid(format!("node {:?} is not in the published version", tick.node)))?;
        let node: engine::Node = serde_json::from_value(node_json).map_err(|e| ExecutionError::Invalid(e.to_string()))?;
        let tz = expression::tz::Tz::get_or_utc(&tick.timezone);
        let at = chrono::DateTime::parse_from_rfc3339(&tick.scheduled_time)
            .map(|t| t.with_timezone(&tz))
            .map_err(|e| ExecutionError::Invalid(format!("scheduledTime {:?}: {e}", tick.scheduled_time)))?
            + chrono::Duration::seconds(i64::from(offset));
        let interval = schedule::intervals(&node)
            .map_err(ExecutionError::Invalid)?
            .into_iter()
            .nth(tick.rule)
            .ok_or_else(|| ExecutionError::Invalid(format!("node {:?} has no rule {}", tick.node, tick.rule)))?;
        if let Some((unit, every)) = interval.recurrence() {
            let (now, _) = unit.value_at(&at);
            let pk = tick_pk(tick);
            let table = self.inner.data.executions.table();
            let last = table
                .get_raw(&pk, "recurrence")
                .await?
                .and_then(|i| get_s(&i, "last").and_then(|v| v.parse::<u32>().ok()));
            if !recurrence_due(unit, every, last, now) {
                return Ok(TickOutcome::NotDue);
            }
            let mut item = key(pk, "recurrence");
            item.insert("last".into(), s(now.to_string()));
            table.put(item).await?;
        }
        let mut req = StartRequest::new(
            WorkflowRef::Version { workflow_id: tick.workflow_id.clone(), version_id: tick.version_id.clone() },
            ExecutionMode::Trigger,
        );
        req.trigger = Some(tick.node.clone());
        req.trigger_items = Some(vec![schedule::trigger_item(at)]);
        let id = self.create(req).await?;
        tracing::info!(executionId = %id, workflowId = %tick.workflow_id, "schedule tick started an execution");
        // Run it here: this invocation is already the executor.
        self.run_execution(id.as_str()).await?;
        Ok(TickOutcome::Started(id))
    }

    /// One conditional put per tick and offset: exactly one delivery wins.
    async fn claim_tick(&self, tick: &ScheduleTick, offset: u32) -> Result<bool> {
        let table = self.inner.data.executions.table();
        let mut item = key(tick_pk(tick), format!("{}#{offset:02}", tick.scheduled_time));
        item.insert("expiresAt".into(), AttributeValue::N((db::now_secs() + TICK_TTL_SECS).to_string()));
        match table.put_new(item).await {
            Ok(()) => Ok(true),
            Err(store::StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// A Runs queue body: an execution to run, a schedule tick, or a job
/// another function waits on (`jobs`): the executor's to read.
pub(crate) enum Message {
    Run(crate::RunMessage),
    Tick(TickMessage),
    Job(crate::jobs::JobMessage),
}

pub(crate) fn parse(body: &str) -> Option<Message> {
    if let Ok(m) = serde_json::from_str::<crate::RunMessage>(body) {
        return Some(Message::Run(m));
    }
    if let Ok(m) = serde_json::from_str::<crate::jobs::JobMessage>(body) {
        return Some(Message::Job(m));
    }
    serde_json::from_str::<TickMessage>(body).ok().map(Message::Tick)
}
