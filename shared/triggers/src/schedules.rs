//! Schedule Triggers as EventBridge Scheduler schedules: one per rule (two
//! when a custom cron restricts both day of month and day of week, which
//! cron ORs and EventBridge cannot), each sending a tick
//! (`executions::TickMessage`) to the Runs queue, in the workflow's timezone.
//!
//! EventBridge steps by the minute: a seconds rule becomes an every-minute
//! schedule whose tick fans out to its second offsets (the executor sends
//! delayed copies). Intervals a cron cannot step (every 3 days, every 2
//! weeks) fire daily or weekly and are thinned by n8n's recurrence check
//! at the tick.

use crate::error::{Result, TriggerError};
use aws_sdk_scheduler::types::{FlexibleTimeWindow, FlexibleTimeWindowMode, ScheduleState, Target};
use engine::schedule::{intervals, Interval, SCHEDULE_TRIGGER_TYPE};
use executions::{ScheduleTick, TickMessage};
use serde_json::Value;
use store::config::SchedulerTarget;
use store::{AwsClients, Config};

/// A schedule to create (or replace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedSchedule {
    pub name: String,
    /// `cron(…)` in EventBridge's six fields.
    pub expression: String,
    pub timezone: String,
    /// The target's `Input`: a tick message.
    pub input: String,
}

/// `*/n` as EventBridge writes it (`<start>/n`).
fn step(field: &str, start: &str) -> String {
    field.split(',').map(|p| p.strip_prefix("*/").map(|n| format!("{start}/{n}")).unwrap_or_else(|| p.to_owned())).collect::<Vec<_>>().join(",")
}

/// cron's day of week (0–7, Sunday 0 or 7; names) → EventBridge's (1–7, Sunday 1; names).
fn day_of_week(field: &str) -> std::result::Result<String, String> {
    let one = |t: &str| -> std::result::Result<String, String> {
        if t.chars().all(|c| c.is_ascii_alphabetic()) {
            return Ok(t.to_ascii_uppercase());
        }
        let n: u32 = t.parse().map_err(|_| format!("bad day of week {t:?}"))?;
        if n > 7 {
            return Err(format!("day of week {n} is not 0-7"));
        }
        Ok(((n % 7) + 1).to_string())
    };
    field
        .split(',')
        .map(|part| {
            if part == "*" || part == "?" {
                return Ok(part.to_owned());
            }
            if let Some(n) = part.strip_prefix("*/") {
                return Ok(format!("1/{n}"));
            }
            let (range, stepn) = part.split_once('/').map(|(r, s)| (r, Some(s))).unwrap_or((part, None));
            let conv = match range.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (one(a)?, one(b)?);
                    // "5-7" (Fri–Sun) becomes "6-1" in EventBridge numbering: spell it out.
                    match (a.parse::<u32>(), b.parse::<u32>()) {
                        (Ok(x), Ok(y)) if y < x => (x..=7).chain(1..=y).map(|d| d.to_string()).collect::<Vec<_>>().join(","),
                        _ => format!("{a}-{b}"),
                    }
                }
                None => one(range)?,
            };
            Ok(match stepn {
                Some(s) => format!("{conv}/{s}"),
                None => conv,
            })
        })
        .collect::<std::result::Result<Vec<_>, _>>()
        .map(|v| v.join(","))
}

/// The seconds a cron's first field names (0–59).
fn seconds(field: &str) -> std::result::Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in field.split(',') {
        let (range, stepn) = part.split_once('/').map(|(r, s)| (r, s.parse::<u32>().ok())).unwrap_or((part, Some(1)));
        let stepn = stepn.filter(|s| *s > 0).ok_or_else(|| format!("bad step in {part:?}"))?;
        let (lo, hi) = match range {
            "*" => (0, 59),
            r => match r.split_once('-') {
                Some((a, b)) => (a.parse().map_err(|_| format!("bad seconds {r:?}"))?, b.parse().map_err(|_| format!("bad seconds {r:?}"))?),
                None => {
                    let v: u32 = r.parse().map_err(|_| format!("bad seconds {r:?}"))?;
                    (v, if part.contains('/') { 59 } else { v })
                }
            },
        };
        if hi > 59 || lo > hi {
            return Err(format!("seconds {part:?} are not within 0-59"));
        }
        out.extend((lo..=hi).step_by(stepn as usize));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn check_field(f: &str) -> std::result::Result<(), String> {
    if f.is_empty() || !f.chars().all(|c| c.is_ascii_alphanumeric() || "*/,-?LW#".contains(c)) {
        return Err(format!("{f:?} is not a cron field"));
    }
    Ok(())
}

/// n8n's custom cron (5 fields, or 6 with seconds first; `@daily` and
/// friends) as EventBridge expressions with their second offsets.
pub fn from_cron(expr: &str) -> std::result::Result<Vec<(String, Vec<u32>)>, String> {
    let expanded = match expr.trim() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        other => other,
    };
    let f: Vec<&str> = expanded.split_whitespace().collect();
    let (sec, m, h, dom, mon, dow) = match f.as_slice() {
        [m, h, dom, mon, dow] => ("0", *m, *h, *dom, *mon, *dow),
        [s, m, h, dom, mon, dow] => (*s, *m, *h, *dom, *mon, *dow),
        _ => return Err(format!("Invalid cron expression {expr:?}: expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first")),
    };
    for x in [sec, m, h, dom, mon, dow] {
        check_field(x).map_err(|e| format!("Invalid cron expression {expr:?}: {e}"))?;
    }
    let offsets = seconds(sec).map_err(|e| format!("Invalid cron expression {expr:?}: {e}"))?;
    let (m, h, mon) = (step(m, "0"), step(h, "0"), step(mon, "1"));
    let dom = step(dom, "1");
    let dow = day_of_week(dow).map_err(|e| format!("Invalid cron expression {expr:?}: {e}"))?;
    let any = |x: &str| x == "*" || x == "?";
    let cron = |dom: &str, dow: &str| format!("cron({m} {h} {dom} {mon} {dow} *)");
    Ok(match (any(&dom), any(&dow)) {
        (true, true) => vec![(cron("*", "?"), offsets)],
        (false, true) => vec![(cron(&dom, "?"), offsets)],
        (true, false) => vec![(cron("?", &dow), offsets)],
        // cron fires when either matches: two schedules.
        (false, false) => vec![(cron(&dom, "?"), offsets.clone()), (cron("?", &dow), offsets)],
    })
}

/// A rule as EventBridge expressions (one, or two for an OR-ed cron) and
/// the second offsets each tick fans out to.
pub fn expressions(interval: &Interval) -> std::result::Result<Vec<(String, Vec<u32>)>, String> {
    Ok(match interval {
        Interval::Seconds { every } => vec![("cron(* * * * ? *)".into(), (0..60).step_by(*every as usize).collect())],
        Interval::Minutes { every } => vec![(format!("cron(0/{every} * * * ? *)"), vec![0])],
        Interval::Hours { every, minute } => vec![(format!("cron({minute} 0/{every} * * ? *)"), vec![0])],
        Interval::Days { hour, minute, .. } => vec![(format!("cron({minute} {hour} * * ? *)"), vec![0])],
        Interval::Weeks { days, hour, minute, .. } => {
            let dow = if days.is_empty() {
                "*".to_owned()
            } else {
                days.iter().map(|d| (d % 7 + 1).to_string()).collect::<Vec<_>>().join(",")
            };
            vec![(format!("cron({minute} {hour} ? * {dow} *)"), vec![0])]
        }
        Interval::Months { every, day_of_month, hour, minute } => {
            vec![(format!("cron({minute} {hour} {day_of_month} 1/{every} ? *)"), vec![0])]
        }
        Interval::Cron { expression } => from_cron(expression)?,
    })
}

/// The schedules of a workflow version's enabled Schedule Triggers.
pub fn plan(workflow_id: &str, version_id: &str, nodes: &Value, settings: &Value) -> Result<Vec<PlannedSchedule>> {
    let timezone = settings.get("timezone").and_then(Value::as_str).filter(|t| !t.is_empty() && *t != "DEFAULT").unwrap_or("UTC");
    if expression::tz::Tz::get(timezone).is_none() {
        return Err(TriggerError::Invalid(format!("the workflow's timezone {timezone:?} is not an IANA timezone")));
    }
    let mut out = Vec::new();
    for (index, n) in nodes.as_array().into_iter().flatten().enumerate() {
        if n.get("type").and_then(Value::as_str) != Some(SCHEDULE_TRIGGER_TYPE) || n.get("disabled").and_then(Value::as_bool).unwrap_or(false) {
            continue;
        }
        let node: engine::Node = serde_json::from_value(n.clone()).map_err(|e| TriggerError::Invalid(e.to_string()))?;
        let rules = intervals(&node).map_err(|e| TriggerError::Invalid(format!("node \"{}\": {e}", node.name)))?;
        for (rule, interval) in rules.iter().enumerate() {
            let exprs = expressions(interval).map_err(|e| TriggerError::Invalid(format!("node \"{}\": {e}", node.name)))?;
            for (part, (expression, offsets)) in exprs.into_iter().enumerate() {
                let tick = ScheduleTick {
                    workflow_id: workflow_id.to_owned(),
                    version_id: version_id.to_owned(),
                    node: node.name.clone(),
                    rule,
                    scheduled_time: "<aws.scheduler.scheduled-time>".into(),
                    timezone: timezone.to_owned(),
                    offsets: if offsets == [0] { Vec::new() } else { offsets },
                    offset: None,
                };
                let input = serde_json::to_string(&TickMessage { schedule_tick: tick }).map_err(|e| TriggerError::Invalid(e.to_string()))?;
                out.push(PlannedSchedule {
                    name: format!("wf-{workflow_id}-{index}-{rule}{}", if part == 0 { "" } else { "b" }),
                    expression,
                    timezone: timezone.to_owned(),
                    input,
                });
            }
        }
    }
    Ok(out)
}

/// The scheduler client and where schedules go.
#[derive(Clone, Debug)]
pub struct Schedules {
    client: aws_sdk_scheduler::Client,
    target: SchedulerTarget,
}

fn sched_err(e: impl std::error::Error) -> TriggerError {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    TriggerError::Scheduler(msg)
}

impl Schedules {
    /// `None` when the deployment has no scheduler configured.
    pub fn from_config(clients: &AwsClients, config: &Config) -> Option<Self> {
        config.scheduler.clone().map(|target| Schedules { client: clients.scheduler.clone(), target })
    }

    pub fn group(&self) -> &str {
        &self.target.group
    }

    /// Creates the schedule, or replaces one of the same name.
    pub async fn put(&self, s: &PlannedSchedule) -> Result<()> {
        let target = Target::builder()
            .arn(&self.target.queue_arn)
            .role_arn(&self.target.role_arn)
            .input(&s.input)
            .build()
            .map_err(sched_err)?;
        let window = FlexibleTimeWindow::builder().mode(FlexibleTimeWindowMode::Off).build().map_err(sched_err)?;
        let created = self
            .client
            .create_schedule()
            .name(&s.name)
            .group_name(&self.target.group)
            .schedule_expression(&s.expression)
            .schedule_expression_timezone(&s.timezone)
            .flexible_time_window(window.clone())
            .target(target.clone())
            .state(ScheduleState::Enabled)
            .description("Instance AI: a published Schedule Trigger rule")
            .send()
            .await;
        match created {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conflict_exception()) => {
                self.client
                    .update_schedule()
                    .name(&s.name)
                    .group_name(&self.target.group)
                    .schedule_expression(&s.expression)
                    .schedule_expression_timezone(&s.timezone)
                    .flexible_time_window(window)
                    .target(target)
                    .state(ScheduleState::Enabled)
                    .send()
                    .await
                    .map_err(sched_err)?;
                Ok(())
            }
            Err(e) => Err(sched_err(e)),
        }
    }

    /// Deletes a schedule; one already gone is fine.
    pub async fn delete(&self, name: &str) -> Result<()> {
        match self.client.delete_schedule().name(name).group_name(&self.target.group).send().await {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_not_found_exception()) => Ok(()),
            Err(e) => Err(sched_err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crons_become_eventbridge_expressions() {
        assert_eq!(from_cron("0 15 * * 1-5").unwrap(), vec![("cron(0 15 ? * 2-6 *)".to_owned(), vec![0])]);
        assert_eq!(from_cron("*/10 * * * *").unwrap(), vec![("cron(0/10 * * * ? *)".to_owned(), vec![0])]);
        assert_eq!(from_cron("30 0 9 1 * *").unwrap(), vec![("cron(0 9 1 * ? *)".to_owned(), vec![30])]);
        assert_eq!(from_cron("*/20 * * * * *").unwrap()[0].1, vec![0, 20, 40]);
        assert_eq!(from_cron("0 12 1 * sun").unwrap().len(), 2, "dom OR dow: two schedules");
        assert_eq!(from_cron("0 0 * * 5-0").unwrap()[0].0, "cron(0 0 ? * 6-1 *)".replace("6-1", "6,7,1"));
        assert_eq!(from_cron("@daily").unwrap()[0].0, "cron(0 0 * * ? *)");
        assert!(from_cron("0 0 * *").is_err());
        assert!(from_cron("0 0 * * 9").is_err());
    }

    #[test]
    fn intervals_become_expressions() {
        assert_eq!(expressions(&Interval::Seconds { every: 15 }).unwrap(), vec![("cron(* * * * ? *)".to_owned(), vec![0, 15, 30, 45])]);
        assert_eq!(expressions(&Interval::Hours { every: 3, minute: 5 }).unwrap()[0].0, "cron(5 0/3 * * ? *)");
        assert_eq!(
            expressions(&Interval::Weeks { every: 2, days: vec![0, 3], hour: 8, minute: 30 }).unwrap()[0].0,
            "cron(30 8 ? * 1,4 *)"
        );
        assert_eq!(
            expressions(&Interval::Months { every: 2, day_of_month: 15, hour: 0, minute: 0 }).unwrap()[0].0,
            "cron(0 0 15 1/2 ? *)"
        );
    }
}
