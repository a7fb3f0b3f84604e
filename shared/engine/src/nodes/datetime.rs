//! Date & Time: v2 operations (current date, add/subtract, format, round,
//! time between, extract part) with Luxon formats; v1 format/calculate with
//! moment formats. Dates are interpreted in the workflow timezone.

use chrono::{DateTime, Datelike, Duration, FixedOffset, Months, NaiveTime, TimeZone, Timelike, Utc};
use serde_json::{json, Map, Value};

use super::conditions::{num_value, parse_datetime};
use super::{set_path, NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::{EngineError, Result};

type Dt = DateTime<FixedOffset>;

fn zone(tz: &str) -> chrono_tz::Tz {
    tz.parse().unwrap_or(chrono_tz::UTC)
}

/// A date in a named zone.
pub fn in_zone(d: Dt, tz: &str) -> Dt {
    d.with_timezone(&zone(tz)).fixed_offset()
}

/// Luxon's `toISO()`: millisecond precision, `Z` only for the UTC zone.
pub fn to_iso(d: Dt, tz: &str) -> String {
    if tz == "UTC" || tz == "Etc/UTC" {
        d.with_timezone(&Utc).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    } else {
        d.to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
    }
}

fn parse(v: &Value, tz: &str) -> Result<Dt> {
    parse_datetime(v, tz)
        .map(|d| in_zone(d, tz))
        .ok_or_else(|| EngineError::node(format!("The value '{}' is not a valid date", super::js_string(v))))
}

pub fn add(d: Dt, unit: &str, n: f64) -> Result<Dt> {
    let whole = n as i64;
    let months = |m: i64| -> Option<Dt> {
        if m >= 0 {
            d.checked_add_months(Months::new(m as u32))
        } else {
            d.checked_sub_months(Months::new((-m) as u32))
        }
    };
    let r = match unit.trim_end_matches('s') {
        "year" => months(whole * 12),
        "quarter" => months(whole * 3),
        "month" => months(whole),
        "week" => d.checked_add_signed(Duration::milliseconds((n * 7.0 * 86_400_000.0) as i64)),
        "day" => d.checked_add_signed(Duration::milliseconds((n * 86_400_000.0) as i64)),
        "hour" => d.checked_add_signed(Duration::milliseconds((n * 3_600_000.0) as i64)),
        "minute" => d.checked_add_signed(Duration::milliseconds((n * 60_000.0) as i64)),
        "second" => d.checked_add_signed(Duration::milliseconds((n * 1000.0) as i64)),
        "millisecond" => d.checked_add_signed(Duration::milliseconds(whole)),
        other => return Err(EngineError::node(format!("Unknown time unit '{other}'"))),
    };
    r.ok_or_else(|| EngineError::node("Date out of range"))
}

const MONTHS: [&str; 12] = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

fn offset(d: &Dt, colon: bool) -> String {
    let s = d.offset().local_minus_utc();
    let sign = if s < 0 { '-' } else { '+' };
    let (h, m) = (s.abs() / 3600, (s.abs() % 3600) / 60);
    if colon {
        format!("{sign}{h:02}:{m:02}")
    } else {
        format!("{sign}{h:02}{m:02}")
    }
}

/// Splits a format into (token, is_literal) runs; `quote` delimits literals.
fn tokens(fmt: &str, open: char, close: char) -> Vec<(String, bool)> {
    let mut out = vec![];
    let chars: Vec<char> = fmt.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == open {
            let mut lit = String::new();
            i += 1;
            while i < chars.len() && chars[i] != close {
                lit.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push((lit, true));
        } else if c.is_ascii_alphabetic() {
            let mut j = i;
            while j < chars.len() && chars[j] == c {
                j += 1;
            }
            out.push((chars[i..j].iter().collect(), false));
            i = j;
        } else {
            out.push((c.to_string(), true));
            i += 1;
        }
    }
    out
}

fn h12(h: u32) -> u32 {
    match h % 12 {
        0 => 12,
        x => x,
    }
}

/// Luxon `toFormat`.
pub fn format_luxon(d: &Dt, fmt: &str) -> String {
    let mut s = String::new();
    for (t, lit) in tokens(fmt, '\'', '\'') {
        if lit {
            s.push_str(&t);
            continue;
        }
        let v = match t.as_str() {
            "yyyy" | "y" => format!("{:04}", d.year()),
            "yy" => format!("{:02}", d.year() % 100),
            "M" | "L" => d.month().to_string(),
            "MM" | "LL" => format!("{:02}", d.month()),
            "MMM" | "LLL" => MONTHS[d.month0() as usize][..3].to_string(),
            "MMMM" | "LLLL" => MONTHS[d.month0() as usize].to_string(),
            "d" => d.day().to_string(),
            "dd" => format!("{:02}", d.day()),
            "E" | "c" => d.weekday().number_from_monday().to_string(),
            "EEE" | "ccc" => DAYS[d.weekday().num_days_from_monday() as usize][..3].to_string(),
            "EEEE" | "cccc" => DAYS[d.weekday().num_days_from_monday() as usize].to_string(),
            "H" => d.hour().to_string(),
            "HH" => format!("{:02}", d.hour()),
            "h" => h12(d.hour()).to_string(),
            "hh" => format!("{:02}", h12(d.hour())),
            "m" => d.minute().to_string(),
            "mm" => format!("{:02}", d.minute()),
            "s" => d.second().to_string(),
            "ss" => format!("{:02}", d.second()),
            "S" => (d.timestamp_subsec_millis()).to_string(),
            "SSS" => format!("{:03}", d.timestamp_subsec_millis()),
            "a" => (if d.hour() < 12 { "AM" } else { "PM" }).to_string(),
            "Z" => {
                let o = d.offset().local_minus_utc();
                if o % 3600 == 0 {
                    format!("{}{}", if o < 0 { '-' } else { '+' }, (o / 3600).abs())
                } else {
                    offset(d, true)
                }
            }
            "ZZ" => offset(d, true),
            "ZZZ" => offset(d, false),
            "X" => d.timestamp().to_string(),
            "x" => d.timestamp_millis().to_string(),
            "o" => d.ordinal().to_string(),
            "ooo" => format!("{:03}", d.ordinal()),
            "q" => ((d.month0() / 3) + 1).to_string(),
            "W" => d.iso_week().week().to_string(),
            "WW" => format!("{:02}", d.iso_week().week()),
            "kkkk" => format!("{:04}", d.iso_week().year()),
            other => other.to_string(),
        };
        s.push_str(&v);
    }
    s
}

/// moment.js `format`.
pub fn format_moment(d: &Dt, fmt: &str) -> String {
    let mut s = String::new();
    for (t, lit) in tokens(fmt, '[', ']') {
        if lit {
            s.push_str(&t);
            continue;
        }
        let v = match t.as_str() {
            "YYYY" => format!("{:04}", d.year()),
            "YY" => format!("{:02}", d.year() % 100),
            "M" => d.month().to_string(),
            "MM" => format!("{:02}", d.month()),
            "MMM" => MONTHS[d.month0() as usize][..3].to_string(),
            "MMMM" => MONTHS[d.month0() as usize].to_string(),
            "D" => d.day().to_string(),
            "DD" => format!("{:02}", d.day()),
            "d" => d.weekday().num_days_from_sunday().to_string(),
            "ddd" => DAYS[d.weekday().num_days_from_monday() as usize][..3].to_string(),
            "dddd" => DAYS[d.weekday().num_days_from_monday() as usize].to_string(),
            "H" => d.hour().to_string(),
            "HH" => format!("{:02}", d.hour()),
            "h" => h12(d.hour()).to_string(),
            "hh" => format!("{:02}", h12(d.hour())),
            "m" => d.minute().to_string(),
            "mm" => format!("{:02}", d.minute()),
            "s" => d.second().to_string(),
            "ss" => format!("{:02}", d.second()),
            "SSS" => format!("{:03}", d.timestamp_subsec_millis()),
            "A" => (if d.hour() < 12 { "AM" } else { "PM" }).to_string(),
            "a" => (if d.hour() < 12 { "am" } else { "pm" }).to_string(),
            "Z" => offset(d, true),
            "ZZ" => offset(d, false),
            "X" => d.timestamp().to_string(),
            "x" => d.timestamp_millis().to_string(),
            other => other.to_string(),
        };
        s.push_str(&v);
    }
    s
}

fn start_of(d: Dt, unit: &str) -> Dt {
    let tz = *d.offset();
    let date = d.date_naive();
    let naive = match unit {
        "year" => date.with_month(1).and_then(|x| x.with_day(1)).unwrap_or(date).and_time(NaiveTime::MIN),
        "month" => date.with_day(1).unwrap_or(date).and_time(NaiveTime::MIN),
        "week" => (date - Duration::days(d.weekday().num_days_from_monday() as i64)).and_time(NaiveTime::MIN),
        "day" => date.and_time(NaiveTime::MIN),
        "hour" => date.and_hms_opt(d.hour(), 0, 0).unwrap_or_default(),
        "minute" => date.and_hms_opt(d.hour(), d.minute(), 0).unwrap_or_default(),
        "second" => date.and_hms_opt(d.hour(), d.minute(), d.second()).unwrap_or_default(),
        _ => d.naive_local(),
    };
    tz.from_local_datetime(&naive).single().unwrap_or(d)
}

/// Luxon-style difference decomposed into the requested units.
fn diff(start: Dt, end: Dt, units: &[String]) -> Value {
    let order = ["year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond"];
    let mut wanted: Vec<&str> = order.iter().copied().filter(|u| units.iter().any(|x| x.trim_end_matches('s') == *u)).collect();
    if wanted.is_empty() {
        wanted.push("day");
    }
    let mut out = Map::new();
    let mut cursor = start;
    for (k, u) in wanted.iter().enumerate() {
        let last = k == wanted.len() - 1;
        let key = format!("{u}s");
        match *u {
            "year" | "quarter" | "month" => {
                let per = match *u {
                    "year" => 12,
                    "quarter" => 3,
                    _ => 1,
                };
                let mut n = 0i64;
                while let Ok(next) = add(cursor, "month", ((n + 1) * per) as f64) {
                    if next > end {
                        break;
                    }
                    n += 1;
                    if n > 100_000 {
                        break;
                    }
                }
                cursor = add(cursor, "month", (n * per) as f64).unwrap_or(cursor);
                out.insert(key, json!(n));
            }
            _ => {
                let ms_per = match *u {
                    "week" => 604_800_000.0,
                    "day" => 86_400_000.0,
                    "hour" => 3_600_000.0,
                    "minute" => 60_000.0,
                    "second" => 1000.0,
                    _ => 1.0,
                };
                let rem = (end - cursor).num_milliseconds() as f64 / ms_per;
                let n = if last { rem } else { rem.trunc() };
                cursor += Duration::milliseconds((n * ms_per) as i64);
                out.insert(key, num_value(n));
            }
        }
    }
    Value::Object(out)
}

fn unit_of(part: &str, d: &Dt) -> Value {
    json!(match part {
        "year" => d.year() as i64,
        "month" => d.month() as i64,
        "week" => d.iso_week().week() as i64,
        "day" => d.day() as i64,
        "hour" => d.hour() as i64,
        "minute" => d.minute() as i64,
        "second" => d.second() as i64,
        _ => 0,
    })
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 2.0 {
        return execute_v1(ctx);
    }
    let input = ctx.input(0);
    let tz = ctx.timezone();
    let op = ctx.param_str("operation", 0, "getCurrentDate")?;
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let res: Result<(String, Value)> = (|| {
            let item_tz = ctx.param_str("options.timezone", i, &tz)?;
            Ok(match op.as_str() {
                "getCurrentDate" => {
                    let include_time = ctx.param_bool("includeTime", i, true)?;
                    let now = in_zone(Utc::now().fixed_offset(), &item_tz);
                    let now = if include_time { now } else { start_of(now, "day") };
                    (ctx.param_str("outputFieldName", i, "currentDate")?, json!(to_iso(now, &item_tz)))
                }
                "addToDate" | "subtractFromDate" => {
                    let d = parse(&ctx.param("magnitude", i, Value::Null)?, &tz)?;
                    let unit = ctx.param_str("timeUnit", i, "days")?;
                    let n = ctx.param_f64("duration", i, 0.0)?;
                    let n = if op == "subtractFromDate" { -n } else { n };
                    (ctx.param_str("outputFieldName", i, "newDate")?, json!(to_iso(add(d, &unit, n)?, &tz)))
                }
                "formatDate" => {
                    let d = parse(&ctx.param("date", i, Value::Null)?, &tz)?;
                    let d = in_zone(d, &item_tz);
                    let mut fmt = ctx.param_str("format", i, "MM/dd/yyyy")?;
                    if fmt == "custom" {
                        fmt = ctx.param_str("customFormat", i, "")?;
                    }
                    (ctx.param_str("outputFieldName", i, "formattedDate")?, json!(format_luxon(&d, &fmt)))
                }
                "roundDate" => {
                    let d = parse(&ctx.param("date", i, Value::Null)?, &tz)?;
                    let mode = ctx.param_str("mode", i, "roundDown")?;
                    let unit = if mode == "roundDown" { ctx.param_str("toNearest", i, "day")? } else { ctx.param_str("to", i, "day")? };
                    let unit = unit.trim_end_matches('s').to_string();
                    let down = start_of(d, &unit);
                    let r = if mode == "roundDown" || down == d { down } else { add(down, &unit, 1.0)? };
                    (ctx.param_str("outputFieldName", i, "roundedDate")?, json!(to_iso(r, &tz)))
                }
                "getTimeBetweenDates" => {
                    let s = parse(&ctx.param("startDate", i, Value::Null)?, &tz)?;
                    let e = parse(&ctx.param("endDate", i, Value::Null)?, &tz)?;
                    let units = super::string_list(ctx.param_opt("units", i)?.as_ref());
                    (ctx.param_str("outputFieldName", i, "timeDifference")?, diff(s, e, &units))
                }
                "extractDate" => {
                    let d = parse(&ctx.param("date", i, Value::Null)?, &tz)?;
                    let part = ctx.param_str("part", i, "month")?;
                    (ctx.param_str("outputFieldName", i, "datePart")?, unit_of(&part, &d))
                }
                other => return Err(EngineError::node(format!("The operation '{other}' is not supported"))),
            })
        })();
        match res {
            Ok((field, value)) => {
                let include = ctx.param_bool("options.includeInputFields", i, false)?;
                let mut json = if include { item.json.object_with_room(1) } else { Value::Object(Map::new()) };
                set_path(&mut json, &field, value);
                out.push(item_from(json, i));
            }
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

fn execute_v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let tz = ctx.timezone();
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let action = ctx.param_str("action", i, "format")?;
        let value = ctx.param("value", i, Value::Null)?;
        let prop = ctx.param_str("dataPropertyName", i, "data")?;
        let d = parse(&value, &ctx.param_str("options.fromTimezone", i, &tz)?)?;
        let result = if action == "calculate" {
            let op = ctx.param_str("operation", i, "add")?;
            let n = ctx.param_f64("duration", i, 0.0)?;
            let unit = ctx.param_str("timeUnit", i, "days")?;
            let r = add(d, &unit, if op == "subtract" { -n } else { n })?;
            r.with_timezone(&Utc).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        } else {
            let to_tz = ctx.param_str("options.toTimezone", i, &tz)?;
            let d = in_zone(d, &to_tz);
            let custom = ctx.param_bool("custom", i, false)?;
            let fmt = ctx.param_str("toFormat", i, if custom { "" } else { "MM/DD/YYYY" })?;
            format_moment(&d, &fmt)
        };
        let mut json = item.json.object_with_room(1);
        set_path(&mut json, &prop, json!(result));
        out.push(item_from(json, i));
    }
    Ok(NodeOutput::one(out))
}
