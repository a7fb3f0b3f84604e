//! The Schedule Trigger's rules and the item each tick emits, as n8n
//! defines them. When a rule fires is the host's business (it turns the
//! intervals into schedules); `recurrence` decides, at a tick, whether an
//! interval larger than the schedule's step has passed (n8n's `recurrenceCheck`).

use chrono::{DateTime, Datelike, TimeZone, Timelike};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::data::Item;
use crate::workflow::Node;

pub const SCHEDULE_TRIGGER_TYPE: &str = "n8n-nodes-base.scheduleTrigger";

/// One rule of `rule.interval`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "field")]
pub enum Interval {
    Seconds { every: u32 },
    Minutes { every: u32 },
    Hours { every: u32, minute: u32 },
    Days { every: u32, hour: u32, minute: u32 },
    /// `days`: 0 = Sunday … 6 = Saturday; empty = every day.
    Weeks { every: u32, days: Vec<u32>, hour: u32, minute: u32 },
    Months { every: u32, day_of_month: u32, hour: u32, minute: u32 },
    /// n8n's custom cron (5 fields, or 6 with seconds first).
    Cron { expression: String },
}

fn n(v: &Value, k: &str, default: u32) -> u32 {
    match v.get(k) {
        Some(Value::Number(x)) => x.as_f64().map(|f| f as u32).unwrap_or(default),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(default),
        _ => default,
    }
}

/// The node's rules with n8n's defaults, validated as n8n validates them.
pub fn intervals(node: &Node) -> Result<Vec<Interval>, String> {
    let rules = node
        .parameters
        .pointer("/rule/interval")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_else(|| vec![json!({"field": "days"})]);
    rules
        .iter()
        .map(|r| {
            let field = r.get("field").and_then(Value::as_str).unwrap_or("days");
            let range = |name: &str, v: u32, lo: u32, hi: u32, msg: &str| {
                if v < lo || v > hi {
                    Err(format!("Invalid interval: {msg} ({name} = {v})"))
                } else {
                    Ok(v)
                }
            };
            let minute = range("triggerAtMinute", n(r, "triggerAtMinute", 0), 0, 59, "Minute must be in range 0-59")?;
            let hour = range("triggerAtHour", n(r, "triggerAtHour", 0), 0, 23, "Hour must be in range 0-23")?;
            Ok(match field {
                "seconds" => Interval::Seconds {
                    every: range("secondsInterval", n(r, "secondsInterval", 30), 1, 59, "Seconds must be in range 1-59")?,
                },
                "minutes" => Interval::Minutes {
                    every: range("minutesInterval", n(r, "minutesInterval", 5), 1, 59, "Minutes must be in range 1-59")?,
                },
                "hours" => Interval::Hours {
                    every: range("hoursInterval", n(r, "hoursInterval", 1), 1, 23, "Hours must be in range 1-23")?,
                    minute,
                },
                "days" => Interval::Days {
                    every: range("daysInterval", n(r, "daysInterval", 1), 1, 31, "Days must be in range 1-31")?,
                    hour,
                    minute,
                },
                "weeks" => {
                    let days = match r.get("triggerAtDay") {
                        Some(Value::Array(a)) => a
                            .iter()
                            .filter_map(|d| d.as_u64().map(|d| d as u32).or_else(|| d.as_str()?.parse().ok()))
                            .map(|d| if d == 7 { 0 } else { d })
                            .collect(),
                        _ => vec![0],
                    };
                    if let Some(bad) = days.iter().find(|d| **d > 6) {
                        return Err(format!("Invalid interval: weekday {bad} is not 0-6"));
                    }
                    Interval::Weeks { every: n(r, "weeksInterval", 1).max(1), days, hour, minute }
                }
                "months" => Interval::Months {
                    every: n(r, "monthsInterval", 1).max(1),
                    day_of_month: range("triggerAtDayOfMonth", n(r, "triggerAtDayOfMonth", 1), 1, 31, "Day of month must be in range 1-31")?,
                    hour,
                    minute,
                },
                "cronExpression" => {
                    let expression = r.get("expression").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
                    if expression.is_empty() {
                        return Err("Invalid cron expression: it is empty".into());
                    }
                    Interval::Cron { expression }
                }
                other => return Err(format!("Unknown trigger interval \"{other}\"")),
            })
        })
        .collect()
}

impl Interval {
    /// For intervals a schedule cannot step by itself (every 2 days, every
    /// 3 weeks, …): the unit and size n8n's `recurrenceCheck` compares.
    /// (Hours and months step in the cron expression itself.)
    pub fn recurrence(&self) -> Option<(RecurrenceUnit, u32)> {
        match *self {
            Interval::Days { every, .. } if every > 1 => Some((RecurrenceUnit::DayOfYear, every)),
            Interval::Weeks { every, .. } if every > 1 => Some((RecurrenceUnit::Week, every)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecurrenceUnit {
    Hour,
    DayOfYear,
    Week,
    Month,
}

impl RecurrenceUnit {
    /// The value of this unit at `at`, and its modulus.
    pub fn value_at<Tz: TimeZone>(self, at: &DateTime<Tz>) -> (u32, u32) {
        match self {
            RecurrenceUnit::Hour => (at.hour(), 24),
            RecurrenceUnit::DayOfYear => (at.ordinal(), 365),
            RecurrenceUnit::Week => (week_of_year(at), 52),
            RecurrenceUnit::Month => (at.month0(), 12),
        }
    }
}

/// moment's locale week (`week()`): weeks start on Sunday and week 1 holds January 1st.
fn week_of_year<Tz: TimeZone>(at: &DateTime<Tz>) -> u32 {
    let jan1 = at.with_ordinal(1).map(|d| d.weekday().num_days_from_sunday()).unwrap_or(0);
    (at.ordinal0() + jan1) / 7 + 1
}

/// n8n's `recurrenceCheck`: whether a rule that last fired at `last` (in
/// the unit's terms) fires now.
pub fn recurrence_due(unit: RecurrenceUnit, every: u32, last: Option<u32>, now: u32) -> bool {
    let modulus = match unit {
        RecurrenceUnit::Hour => 24,
        RecurrenceUnit::DayOfYear => 365,
        RecurrenceUnit::Week => 52,
        RecurrenceUnit::Month => 12,
    };
    match last {
        None => true,
        // Several weekdays in the same week all fire.
        Some(l) if unit == RecurrenceUnit::Week && l == now => true,
        Some(l) => (now + modulus - l % modulus) % modulus >= every,
    }
}

const MONTHS: [&str; 12] = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
];

fn ordinal(d: u32) -> String {
    let suffix = match (d % 10, d % 100) {
        (1, x) if x != 11 => "st",
        (2, x) if x != 12 => "nd",
        (3, x) if x != 13 => "rd",
        _ => "th",
    };
    format!("{d}{suffix}")
}

/// The item a tick emits (n8n's field names and moment formats).
pub fn trigger_item(at: DateTime<expression::tz::Tz>) -> Item {
    let (h12, pm) = {
        let h = at.hour();
        (if h % 12 == 0 { 12 } else { h % 12 }, h >= 12)
    };
    let ampm = if pm { "pm" } else { "am" };
    let time = format!("{h12}:{:02}:{:02} {ampm}", at.minute(), at.second());
    let month = MONTHS[at.month0() as usize];
    Item::new(json!({
        "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Millis, false),
        "Readable date": format!("{month} {} {}, {time}", ordinal(at.day()), at.year()),
        "Readable time": time,
        "Day of week": at.format("%A").to_string(),
        "Year": at.format("%Y").to_string(),
        "Month": month,
        "Day of month": at.format("%d").to_string(),
        "Hour": at.format("%H").to_string(),
        "Minute": at.format("%M").to_string(),
        "Second": at.format("%S").to_string(),
        "Timezone": format!("{} {}", at.format("%Z"), at.format("%:z")),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_item_reads_as_n8n_formats_it() {
        let tz = expression::tz::Tz::get("Europe/Berlin").unwrap();
        let at = tz.with_ymd_and_hms(2024, 3, 1, 14, 5, 9).unwrap();
        let item = trigger_item(at);
        assert_eq!(item.json["Readable date"], "March 1st 2024, 2:05:09 pm");
        assert_eq!(item.json["timestamp"], "2024-03-01T14:05:09.000+01:00");
        assert_eq!(item.json["Timezone"], "CET +01:00");
        assert_eq!(item.json["Day of week"], "Friday");
    }

    #[test]
    fn recurrence_waits_for_the_interval() {
        assert!(recurrence_due(RecurrenceUnit::DayOfYear, 2, None, 10));
        assert!(!recurrence_due(RecurrenceUnit::DayOfYear, 2, Some(10), 11));
        assert!(recurrence_due(RecurrenceUnit::DayOfYear, 2, Some(10), 12));
        assert!(recurrence_due(RecurrenceUnit::Month, 3, Some(10), 1), "wraps at the year");
        assert!(recurrence_due(RecurrenceUnit::Week, 2, Some(5), 5), "same week, another weekday");
    }

    #[test]
    fn defaults_and_ranges() {
        let node: Node = serde_json::from_value(json!({"name": "S", "type": SCHEDULE_TRIGGER_TYPE, "parameters": {"rule": {"interval": [
            {"field": "minutes"}, {"field": "weeks", "triggerAtDay": [1, 5], "triggerAtHour": 9}
        ]}}}))
        .unwrap();
        assert_eq!(
            intervals(&node).unwrap(),
            vec![Interval::Minutes { every: 5 }, Interval::Weeks { every: 1, days: vec![1, 5], hour: 9, minute: 0 }]
        );
        let bad: Node = serde_json::from_value(json!({"name": "S", "type": SCHEDULE_TRIGGER_TYPE, "parameters": {"rule": {"interval": [{"field": "seconds", "secondsInterval": 90}]}}})).unwrap();
        assert!(intervals(&bad).unwrap_err().contains("1-59"));
    }
}
