//! The sweep runs only while there is something to sweep, so an idle
//! deployment invokes nothing and reads nothing (issue 21: an idle hour
//! costs $0), while invariant 5 holds: every lease that can expire is
//! watched by a sweep every minute.
//!
//! The sweep's EventBridge Scheduler schedule (`SWEEP_SCHEDULE`, every
//! minute) is enabled while a part has work — the agent's chain leases
//! (`runlease#<k>` in the Agent table's `gsi1`), the executions' running
//! leases and waits (`exec:running`, `exec:waiting` in the Executions
//! table's) — and the sweep turns it off when it finds none. Each part keeps
//! a flag item (`pk = sweep`, `sk = <part>`: `armed`, `armedAt`) in its own
//! table, so each writer touches only the table it is granted:
//!
//! - whoever writes work the sweep must watch (a run's first chain, an
//!   execution's claim) calls [`SweepFlag::arm`] right after: one UpdateItem
//!   (`armed = true, armedAt = now`); the call that turned the flag on also
//!   enables the schedule.
//! - the sweep, having found no work of a part in its index, turns the flag
//!   off only if nobody armed it within [`GRACE`] (a conditional write):
//!   work whose index entry the sweep's eventually consistent query did not
//!   show yet was armed within that grace, and work written after the flip
//!   finds the flag off and turns it on again. With every flag off the sweep
//!   disables the schedule, then reads the flags once more and enables it
//!   again if one came on meanwhile (that writer's enable may have landed
//!   before the disable).

use crate::config::{Config, ConfigError};
use crate::error::StoreError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use aws_sdk_scheduler::types::ScheduleState;
use std::time::Duration;

/// How recently an arm keeps the sweep from turning a flag off: far longer
/// than a GSI entry takes to show, far shorter than a lease.
pub const GRACE: Duration = Duration::from_secs(120);

/// The configuration variable naming the schedule.
pub const VARIABLE: &str = "SWEEP_SCHEDULE";

/// EventBridge Scheduler's group for schedules created without one.
const GROUP: &str = "default";

fn scheduler_err(e: impl std::error::Error) -> StoreError {
    StoreError::Aws { service: "scheduler", message: aws_sdk_scheduler::error::DisplayErrorContext(e).to_string() }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default()
}

/// The sweep's schedule.
#[derive(Clone, Debug)]
pub struct SweepSchedule {
    client: aws_sdk_scheduler::Client,
    name: String,
}

impl SweepSchedule {
    pub fn new(client: aws_sdk_scheduler::Client, name: impl Into<String>) -> Self {
        SweepSchedule { client, name: name.into() }
    }

    /// The schedule named by `SWEEP_SCHEDULE`.
    pub fn from_config(client: &aws_sdk_scheduler::Client, config: &Config) -> Result<Self, ConfigError> {
        let name = config
            .var(VARIABLE)
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or(ConfigError::Missing { name: VARIABLE, purpose: "the sweep's EventBridge Scheduler schedule" })?;
        Ok(SweepSchedule::new(client.clone(), name))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Creates the schedule, enabled, unless it exists (the local cloud; in
    /// AWS the template does): every minute, `target_arn` through `role_arn`.
    pub async fn provision(&self, target_arn: &str, role_arn: &str) -> Result<(), StoreError> {
        use aws_sdk_scheduler::types::{FlexibleTimeWindow, FlexibleTimeWindowMode, Target};
        let window = FlexibleTimeWindow::builder().mode(FlexibleTimeWindowMode::Off).build().map_err(scheduler_err)?;
        let target = Target::builder().arn(target_arn).role_arn(role_arn).input("{}").build().map_err(scheduler_err)?;
        let created = self
            .client
            .create_schedule()
            .group_name(GROUP)
            .name(&self.name)
            .schedule_expression("rate(1 minute)")
            .flexible_time_window(window)
            .target(target)
            .state(ScheduleState::Enabled)
            .description("Runs the sweep while it has work (it turns this off when idle)")
            .send()
            .await;
        match created {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conflict_exception()) => Ok(()),
            Err(e) => Err(scheduler_err(e)),
        }
    }

    pub async fn enabled(&self) -> Result<bool, StoreError> {
        let s = self.client.get_schedule().group_name(GROUP).name(&self.name).send().await.map_err(scheduler_err)?;
        Ok(s.state() == Some(&ScheduleState::Enabled))
    }

    /// Turns the schedule on or off, keeping the rest of its definition
    /// (UpdateSchedule replaces the whole schedule).
    pub async fn set(&self, enabled: bool) -> Result<(), StoreError> {
        let s = self.client.get_schedule().group_name(GROUP).name(&self.name).send().await.map_err(scheduler_err)?;
        let state = if enabled { ScheduleState::Enabled } else { ScheduleState::Disabled };
        if s.state() == Some(&state) {
            return Ok(());
        }
        self.client
            .update_schedule()
            .group_name(GROUP)
            .name(&self.name)
            .set_schedule_expression(s.schedule_expression().map(str::to_owned))
            .set_schedule_expression_timezone(s.schedule_expression_timezone().map(str::to_owned))
            .set_flexible_time_window(s.flexible_time_window().cloned())
            .set_target(s.target().cloned())
            .set_description(s.description().map(str::to_owned))
            .state(state)
            .send()
            .await
            .map_err(scheduler_err)?;
        tracing::info!(schedule = %self.name, enabled, "sweep schedule switched");
        Ok(())
    }
}

/// The work of one part: whose flag it is and where its index entries live.
#[derive(Clone, Debug)]
pub struct SweepFlag {
    dynamo: aws_sdk_dynamodb::Client,
    table: String,
    part: &'static str,
    /// `gsi1pk` values of the part's index entries (leases, waits).
    watched: Vec<String>,
    schedule: SweepSchedule,
}

impl SweepFlag {
    /// `part` names the flag; `watched` are the `gsi1pk` partitions of
    /// `table` that hold the part's work.
    pub fn new(
        dynamo: aws_sdk_dynamodb::Client,
        table: impl Into<String>,
        part: &'static str,
        watched: Vec<String>,
        schedule: SweepSchedule,
    ) -> Self {
        SweepFlag { dynamo, table: table.into(), part, watched, schedule }
    }

    fn key(&self) -> std::collections::HashMap<String, AttributeValue> {
        std::collections::HashMap::from([
            ("pk".to_owned(), AttributeValue::S("sweep".into())),
            ("sk".to_owned(), AttributeValue::S(self.part.into())),
        ])
    }

    /// Call right after writing work the sweep must watch: the sweep runs
    /// until that work is gone.
    pub async fn arm(&self) -> Result<(), StoreError> {
        let out = self
            .dynamo
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key()))
            .update_expression("SET armed = :on, armedAt = :now")
            .expression_attribute_values(":on", AttributeValue::Bool(true))
            .expression_attribute_values(":now", AttributeValue::N(now_ms().to_string()))
            .return_values(ReturnValue::UpdatedOld)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        let was_on = matches!(out.attributes().and_then(|a| a.get("armed")), Some(AttributeValue::Bool(true)));
        if !was_on {
            self.schedule.set(true).await?;
        }
        Ok(())
    }

    /// Whether the flag is on (a consistent read).
    pub async fn armed(&self) -> Result<bool, StoreError> {
        let out = self
            .dynamo
            .get_item()
            .table_name(&self.table)
            .set_key(Some(self.key()))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::dynamo)?;
        Ok(matches!(out.item().and_then(|i| i.get("armed")), Some(AttributeValue::Bool(true))))
    }

    /// Whether any index entry of the part exists (one item per partition at most).
    pub async fn has_work(&self) -> Result<bool, StoreError> {
        for pk in &self.watched {
            let out = self
                .dynamo
                .query()
                .table_name(&self.table)
                .index_name("gsi1")
                .key_condition_expression("gsi1pk = :pk")
                .expression_attribute_values(":pk", AttributeValue::S(pk.clone()))
                .limit(1)
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            if !out.items().is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Turns the flag off unless someone armed it within [`GRACE`]; whether
    /// it is off now.
    async fn disarm(&self) -> Result<bool, StoreError> {
        let cutoff = now_ms().saturating_sub(GRACE.as_millis() as u64);
        let result = self
            .dynamo
            .update_item()
            .table_name(&self.table)
            .set_key(Some(self.key()))
            .update_expression("SET armed = :off")
            .condition_expression("attribute_not_exists(armed) OR armed = :off OR armedAt < :cutoff")
            .expression_attribute_values(":off", AttributeValue::Bool(false))
            .expression_attribute_values(":cutoff", AttributeValue::N(cutoff.to_string()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if crate::data::db::is_condition_failed(&e) => Ok(false),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }
}

/// The sweep's last act: turns each part's flag off when its index holds no
/// work (and nobody armed it lately), and the schedule off when every flag
/// is. Returns whether the schedule is off now.
pub async fn rest_if_idle(schedule: &SweepSchedule, flags: &[SweepFlag]) -> Result<bool, StoreError> {
    let mut all_off = true;
    for flag in flags {
        if flag.has_work().await? || !flag.disarm().await? {
            all_off = false;
        }
    }
    if !all_off {
        return Ok(false);
    }
    schedule.set(false).await?;
    // A writer that turned its flag on after our disarm may have enabled the
    // schedule before our disable landed: look again.
    for flag in flags {
        if flag.armed().await? {
            schedule.set(true).await?;
            return Ok(false);
        }
    }
    Ok(true)
}

/// The agent part: chain leases in the Agent table's `runlease#<k>`
/// partitions. `None` when `SWEEP_SCHEDULE` is not configured.
pub fn agent_flag(clients: &crate::AwsClients, config: &Config) -> Result<Option<SweepFlag>, ConfigError> {
    flag(clients, config, crate::deployment::TableId::Agent, "agent", crate::runs::lease_partitions())
}

/// A part's flag over `table` (`None` when `SWEEP_SCHEDULE` is not configured).
pub fn flag(
    clients: &crate::AwsClients,
    config: &Config,
    table: crate::deployment::TableId,
    part: &'static str,
    watched: Vec<String>,
) -> Result<Option<SweepFlag>, ConfigError> {
    if config.var(VARIABLE).is_none() {
        return Ok(None);
    }
    let schedule = SweepSchedule::from_config(&clients.scheduler, config)?;
    Ok(Some(SweepFlag::new(clients.dynamo.clone(), config.table(table)?, part, watched, schedule)))
}
