//! EventBridge: the scheduled functions run at their rate while their
//! schedule is enabled (the sweep's, in moto, switched by the sweep), and
//! EventBridge Scheduler's schedules (published Schedule Triggers) fire
//! from their definitions as stored in moto — the same `CreateSchedule`
//! calls AWS receives: at each minute, every enabled schedule of the group
//! whose `cron(…)` matches that minute in its timezone sends its target
//! `Input` (with `<aws.scheduler.scheduled-time>` filled in) to its queue.

use crate::metering::Meter;
use api::App;
use chrono::{Datelike, TimeZone, Timelike};
use std::sync::Arc;
use std::time::Duration;
use store::deployment::{QueueId, SCHEDULES};
use store::sweep_schedule::SweepSchedule;
use tokio::sync::watch;

pub fn spawn_all(app: Arc<App>, meter: Arc<Meter>, shutdown: watch::Receiver<bool>) {
    for &(function, rate_secs) in SCHEDULES {
        let (app, meter) = (app.clone(), meter.clone());
        let mut shutdown = shutdown.clone();
        // Like EventBridge Scheduler, a disabled schedule fires nothing.
        let schedule = SweepSchedule::from_config(&app.clients.scheduler, &app.config).ok();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(u64::from(rate_secs)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        let enabled = match &schedule {
                            Some(s) => s.enabled().await.unwrap_or_else(|e| {
                                tracing::warn!(error = %e, "local scheduler: cannot read the sweep's schedule");
                                false
                            }),
                            None => true,
                        };
                        if enabled {
                            crate::dispatch::scheduled(&app, &meter, function).await;
                        }
                    }
                    _ = shutdown.changed() => return,
                }
            }
        });
    }
    spawn_workflow_schedules(app, shutdown);
}

/// Fires the group's schedules at each minute boundary.
fn spawn_workflow_schedules(app: Arc<App>, mut shutdown: watch::Receiver<bool>) {
    let Some(target) = app.config.scheduler.clone() else { return };
    tokio::spawn(async move {
        let mut last_minute = minute_now();
        loop {
            // Wake just after the next minute starts.
            let now = chrono::Utc::now();
            let wait = 60 - u64::from(now.second()) + 1;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(wait)) => {}
                _ = shutdown.changed() => return,
            }
            let minute = minute_now();
            if minute <= last_minute {
                continue;
            }
            last_minute = minute;
            if let Err(e) = fire(&app, &target.group, minute).await {
                tracing::warn!(error = %e, "local scheduler: a minute's schedules could not be fired");
            }
        }
    });
}

fn minute_now() -> chrono::DateTime<chrono::Utc> {
    let now = chrono::Utc::now();
    now.with_second(0).and_then(|t| t.with_nanosecond(0)).unwrap_or(now)
}

async fn fire(app: &App, group: &str, minute: chrono::DateTime<chrono::Utc>) -> Result<(), String> {
    let client = &app.clients.scheduler;
    let mut names = Vec::new();
    let mut token = None;
    loop {
        let page = client
            .list_schedules()
            .group_name(group)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        names.extend(page.schedules().iter().filter_map(|s| s.name().map(str::to_owned)));
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    let runs = app.config.queue_url(QueueId::Runs).map_err(|e| e.to_string())?.to_owned();
    for name in names {
        let s = client.get_schedule().group_name(group).name(&name).send().await.map_err(|e| format!("{e:?}"))?;
        if s.state().is_some_and(|st| st.as_str() != "ENABLED") {
            continue;
        }
        let (Some(expr), Some(target)) = (s.schedule_expression(), s.target()) else { continue };
        let tz = expression::tz::Tz::get_or_utc(s.schedule_expression_timezone().unwrap_or("UTC"));
        match cron_matches(expr, &minute.with_timezone(&tz)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!(schedule = %name, error = %e, "local scheduler: expression not understood");
                continue;
            }
        }
        let input = target
            .input()
            .unwrap_or_default()
            .replace("<aws.scheduler.scheduled-time>", &minute.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .replace("<aws.scheduler.schedule-arn>", s.arn().unwrap_or_default());
        // Every schedule of this deployment targets the Runs queue.
        app.clients
            .sqs
            .send_message()
            .queue_url(&runs)
            .message_body(input)
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        tracing::info!(schedule = %name, minute = %minute, "local scheduler fired");
    }
    Ok(())
}

const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Whether one EventBridge cron field (`*`, `?`, numbers, names, lists,
/// ranges, `a/b` steps) holds `value` within `lo..=hi`.
fn field_matches(field: &str, value: u32, lo: u32, hi: u32, names: &[&str], name_base: u32) -> Result<bool, String> {
    let num = |t: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(t)) {
            return Ok(i as u32 + name_base);
        }
        t.parse().map_err(|_| format!("bad cron value {t:?}"))
    };
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().map_err(|_| format!("bad step {s:?}"))?.max(1)),
            None => (part, 1),
        };
        let (a, b) = match range {
            "*" | "?" => (lo, hi),
            r => match r.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None if part.contains('/') => (num(r)?, hi),
                None => {
                    let v = num(r)?;
                    (v, v)
                }
            },
        };
        if value >= a && value <= b && (value - a) % step == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `cron(m h dom mon dow year)` or `rate(n minutes|hours|days)` at a minute.
pub fn cron_matches<Tz: TimeZone>(expr: &str, at: &chrono::DateTime<Tz>) -> Result<bool, String> {
    if let Some(rate) = expr.strip_prefix("rate(").and_then(|r| r.strip_suffix(')')) {
        let (n, unit) = rate.split_once(' ').ok_or("bad rate")?;
        let n: i64 = n.parse().map_err(|_| "bad rate")?;
        let minutes = match unit.trim_end_matches('s') {
            "minute" => n,
            "hour" => n * 60,
            "day" => n * 1440,
            _ => return Err(format!("bad rate unit {unit:?}")),
        };
        return Ok((at.timestamp() / 60) % minutes.max(1) == 0);
    }
    let inner = expr.strip_prefix("cron(").and_then(|c| c.strip_suffix(')')).ok_or_else(|| format!("not a cron: {expr}"))?;
    let f: Vec<&str> = inner.split_whitespace().collect();
    let [m, h, dom, mon, dow, year] = f.as_slice() else { return Err(format!("cron needs six fields: {expr}")) };
    Ok(field_matches(m, at.minute(), 0, 59, &[], 0)?
        && field_matches(h, at.hour(), 0, 23, &[], 0)?
        && field_matches(dom, at.day(), 1, 31, &[], 0)?
        && field_matches(mon, at.month(), 1, 12, &MONTHS, 1)?
        && field_matches(dow, at.weekday().num_days_from_sunday() + 1, 1, 7, &DAYS, 1)?
        && field_matches(year, at.year() as u32, 1970, 2199, &[], 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_fields_match_as_eventbridge_reads_them() {
        let at = chrono::Utc.with_ymd_and_hms(2026, 12, 1, 9, 30, 0).unwrap(); // a Tuesday
        assert!(cron_matches("cron(* * * * ? *)", &at).unwrap());
        assert!(cron_matches("cron(0/15 9 * * ? *)", &at).unwrap());
        assert!(!cron_matches("cron(0/20 9 * * ? *)", &at).unwrap());
        assert!(cron_matches("cron(30 9 ? * 3 *)", &at).unwrap(), "3 = Tuesday");
        assert!(cron_matches("cron(30 9 ? * TUE *)", &at).unwrap());
        assert!(!cron_matches("cron(30 9 ? * 2,4-6 *)", &at).unwrap());
        assert!(cron_matches("cron(30 9 1 DEC ? *)", &at).unwrap());
        assert!(cron_matches("rate(5 minutes)", &at).unwrap());
    }
}
