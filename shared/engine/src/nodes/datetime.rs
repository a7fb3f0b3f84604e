//! Date & Time. Version 2 (Luxon): current date, add/subtract, format,
//! round, time between dates, extract part. Version 1 (moment.js): format
//! with from/to timezones, calculate. Date logic lives in `dates`.

use serde_json::{json, Map, Value};

use super::dates::{self, Dt, Zone};
use super::lodash::js_to_string;
use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 2.0 {
        return execute_v1(ctx);
    }
    let input = ctx.input(0);
    let workflow_tz = zone(&ctx.timezone())?;
    let operation = ctx.param_str("operation", 0, "getCurrentDate")?;
    let include_input = ctx.param_bool("options.includeInputFields", 0, false)?;
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        match v2_item(ctx, &operation, &workflow_tz, i) {
            Ok((field, value)) => {
                let mut json = if include_input { Value::clone(&item.json) } else { Value::Object(Map::new()) };
                if let Value::Object(o) = &mut json {
                    o.insert(field, value);
                }
                let mut it = item_from(json, i);
                if include_input {
                    it.binary = item.binary.clone();
                }
                out.push(it);
            }
            Err(e) if ctx.continue_on_fail() => {
                // n8n's error item here carries no pairedItem.
                ctx.error_items.push(out.len());
                out.push(Item::new(json!({ "error": e.to_string() })));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

fn zone(name: &str) -> Result<Zone> {
    Zone::parse(name).ok_or_else(|| EngineError::node(format!("The timezone {name} is not valid. Please check the timezone.")))
}

/// A parameter, or (for workflows saved by the first releases of version 2)
/// its old name.
fn param_or_legacy(ctx: &mut NodeContext<'_>, name: &str, legacy: &str, i: usize) -> Result<Value> {
    match ctx.param_opt(name, i)? {
        Some(v) => Ok(v),
        None => Ok(ctx.param_opt(legacy, i)?.unwrap_or(Value::String(String::new()))),
    }
}

fn v2_item(ctx: &mut NodeContext<'_>, operation: &str, wf: &Zone, i: usize) -> Result<(String, Value)> {
    Ok(match operation {
        "getCurrentDate" => {
            let include_time = ctx.param_bool("includeTime", i, true)?;
            let field = ctx.param_str("outputFieldName", i, "currentDate")?;
            let tz = ctx.param_str("options.timezone", i, "")?;
            let z = if tz.is_empty() { wf.clone() } else { zone(&tz)? };
            let now = Dt::new(ctx.now().timestamp_millis(), z);
            let now = if include_time { now } else { now.start_of("day").unwrap_or(now) };
            (field, json!(now.to_iso()))
        }
        "addToDate" | "subtractFromDate" => {
            let value = param_or_legacy(ctx, "magnitude", operation, i)?;
            let unit = ctx.param_str("timeUnit", i, "days")?;
            let amount = ctx.param_f64("duration", i, 0.0)?;
            let field = ctx.param_str("outputFieldName", i, "newDate")?;
            let d = parse_date(&value, Some(wf), None)?;
            let amount = if operation == "subtractFromDate" { -amount } else { amount };
            let r = d.plus(&unit, amount).ok_or_else(|| EngineError::node(format!("Invalid unit '{unit}'")))?;
            (field, json!(r.to_iso()))
        }
        "formatDate" => {
            let value = ctx.param("date", i, Value::String(String::new()))?;
            let format = ctx.param_str("format", i, "MM/dd/yyyy")?;
            let field = ctx.param_str("outputFieldName", i, "formattedDate")?;
            if value.is_null() {
                return Ok((field, Value::Null));
            }
            let use_wf = ctx.param_bool("options.timezone", i, false)?;
            let from_format = ctx.param_opt("options.fromFormat", i)?.map(|v| js_to_string(Some(&v)));
            let d = parse_date(&value, use_wf.then_some(wf), from_format.as_deref())?;
            let fmt = if format == "custom" { ctx.param_str("customFormat", i, "")? } else { format };
            (field, json!(dates::format_luxon(&d, &fmt)))
        }
        "roundDate" => {
            let value = ctx.param("date", i, Value::String(String::new()))?;
            let mode = ctx.param_str("mode", i, "roundDown")?;
            let field = ctx.param_str("outputFieldName", i, "roundedDate")?;
            let d = parse_date(&value, Some(wf), None)?;
            let r = if mode == "roundUp" {
                let to = ctx.param_str("to", i, "month")?;
                d.plus(&to, 1.0).and_then(|x| x.start_of(&to))
            } else {
                let to = ctx.param_str("toNearest", i, "month")?;
                d.start_of(&to)
            };
            (field, json!(r.ok_or_else(|| EngineError::node("Invalid unit"))?.to_iso()))
        }
        "getTimeBetweenDates" => {
            let start = parse_date(&ctx.param("startDate", i, Value::String(String::new()))?, Some(wf), None)?;
            let end = parse_date(&ctx.param("endDate", i, Value::String(String::new()))?, Some(wf), None)?;
            let units: Vec<String> = match ctx.param("units", i, json!(["day"]))? {
                Value::Array(a) => a.iter().map(|u| js_to_string(Some(u))).collect(),
                Value::String(s) => s.split(',').map(|u| u.trim().to_string()).filter(|u| !u.is_empty()).collect(),
                _ => vec![],
            };
            let field = ctx.param_str("outputFieldName", i, "timeDifference")?;
            let d = dates::diff(&end, &start, &units);
            let iso = ctx.param_bool("options.isoString", i, false)?;
            (field, if iso { json!(dates::duration_iso(&d)) } else { Value::Object(d) })
        }
        "extractDate" => {
            let value = ctx.param("date", i, Value::String(String::new()))?;
            let part = ctx.param_str("part", i, "month")?;
            let field = ctx.param_str("outputFieldName", i, "datePart")?;
            let d = parse_date(&value, Some(wf), None)?;
            (field, d.get(&part))
        }
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    })
}

/// Version 2's `parseDate`: a timestamp (seconds below 1e12, else ms), or a
/// date string (with `fromFormat` when given), shown in `tz` (UTC without one).
pub fn parse_date(v: &Value, tz: Option<&Zone>, from_format: Option<&str>) -> Result<Dt> {
    let target = tz.cloned().unwrap_or(Zone::Utc);
    let invalid = || EngineError::node("Invalid date format");
    let numeric = |n: f64| -> Result<Dt> {
        if !n.is_finite() {
            return Err(EngineError::node("Invalid numeric timestamp"));
        }
        let ms = if n.abs() < 1e12 { (n * 1000.0).round() } else { n.round() };
        Ok(Dt::new(ms as i64, target.clone()))
    };
    match v {
        Value::Null => Err(EngineError::node("Invalid date type")),
        Value::Number(n) => numeric(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => {
            let s = s.trim();
            if s.is_empty() {
                return Err(EngineError::node("Empty date string"));
            }
            if let Some(fmt) = from_format {
                return dates::parse_luxon_format(s, fmt, &target).ok_or_else(invalid);
            }
            let n = super::conditions::str_to_number(s);
            if !n.is_nan() {
                return numeric(n);
            }
            dates::parse_string(s, &target).ok_or_else(invalid)
        }
        _ => Err(EngineError::node("Invalid date type")),
    }
}

// ---- version 1 ----------------------------------------------------------------

fn execute_v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let wf = ctx.timezone();
    // moment without a zone works in the server process's local time.
    let host = v1_zone(&ctx.env.settings.host_timezone)?;
    let action = ctx.param_str("action", 0, "format")?;
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let r = if action == "calculate" { v1_calculate(ctx, &host, i) } else { v1_format(ctx, &wf, &host, i) };
        match r {
            Ok(Some((field, value))) => {
                let mut json = Value::clone(&item.json);
                if let Value::Object(o) = &mut json {
                    // `set(item, ['json', name])`: the name is one key, dots and all.
                    o.insert(field, value);
                }
                let mut it = item_from(json, i);
                it.binary = item.binary.clone();
                out.push(it);
            }
            Ok(None) => {}
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

fn v1_zone(name: &str) -> Result<Zone> {
    Zone::parse(name).ok_or_else(|| EngineError::node(format!("Invalid timezone \"{name}\"")))
}

fn v1_format(ctx: &mut NodeContext<'_>, wf: &str, host: &Zone, i: usize) -> Result<Option<(String, Value)>> {
    let value = ctx.param("value", i, Value::String(String::new()))?;
    let field = ctx.param_str("dataPropertyName", i, "data")?;
    let to_format = ctx.param_str("toFormat", i, "MM/DD/YYYY")?;
    let from_format = ctx.param_opt("options.fromFormat", i)?.map(|v| js_to_string(Some(&v)));
    let from_tz = ctx.param_opt("options.fromTimezone", i)?.map(|v| js_to_string(Some(&v))).filter(|s| !s.is_empty());
    let to_tz = ctx.param_opt("options.toTimezone", i)?.map(|v| js_to_string(Some(&v))).filter(|s| !s.is_empty());

    // `Number(value)`: numbers and numeric strings are timestamps (a fraction means seconds).
    let as_number = match &value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => Some(super::conditions::str_to_number(s)).filter(|n| !n.is_nan()),
        Value::Null => Some(0.0),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    let number = as_number.map(|n| if n.fract() != 0.0 { n * 1000.0 } else { n });
    let text = js_to_string(Some(&value));
    let invalid_input = || EngineError::node("The date input format could not be recognized. Please set the \"From Format\" field");
    // `moment(ms)` / `moment.unix(s)` / `moment(text)` are in the process's zone.
    let parsed: Option<Dt> = match number {
        Some(n) if n.fract() == 0.0 => {
            let digits = js_to_string(Some(&super::conditions::num_value(n))).len();
            Some(Dt::new(if digits < 12 { (n * 1000.0) as i64 } else { n as i64 }, host.clone()))
        }
        Some(n) => Some(Dt::new(n.round() as i64, host.clone())),
        None => {
            if from_format.is_none() && dates::moment_parse(&text, host, host).is_none() {
                return Err(invalid_input());
            }
            let fmt = from_format.as_deref().filter(|f| !f.is_empty());
            if from_tz.is_some() || to_tz.is_some() {
                // `moment.tz(value[, fromFormat], fromTimezone || workflow zone)`
                let z = v1_zone(from_tz.as_deref().unwrap_or(wf))?;
                match fmt {
                    Some(fmt) => dates::parse_moment_format(&text, fmt, &z, false),
                    None => dates::moment_parse(&text, &z, &Zone::Utc),
                }
            } else {
                match fmt {
                    Some(fmt) => dates::parse_moment_format(&text, fmt, host, false),
                    None => dates::moment_parse(&text, host, host),
                }
            }
        }
    };
    // An unparsable date formats as moment's "Invalid date".
    let Some(mut d) = parsed else { return Ok(Some((field, json!("Invalid date")))) };
    if from_tz.is_some() || to_tz.is_some() {
        d = d.set_zone(v1_zone(to_tz.as_deref().unwrap_or(wf))?);
    }
    Ok(Some((field, json!(dates::format_moment(&d, &to_format)))))
}

fn v1_calculate(ctx: &mut NodeContext<'_>, host: &Zone, i: usize) -> Result<Option<(String, Value)>> {
    let value = ctx.param("value", i, Value::String(String::new()))?;
    let operation = ctx.param_str("operation", i, "add")?;
    let duration = ctx.param_f64("duration", i, 0.0)?;
    let unit = ctx.param_str("timeUnit", i, "days")?;
    let from_format = ctx.param_opt("options.fromFormat", i)?.map(|v| js_to_string(Some(&v))).filter(|f| !f.is_empty());
    let field = ctx.param_str("dataPropertyName", i, "data")?;
    let d = match from_format {
        Some(fmt) => dates::parse_moment_format(&js_to_string(Some(&value)), &fmt, host, true)
            .ok_or_else(|| EngineError::node("Date input cannot be parsed. Please recheck the value and the \"From Format\" field."))?,
        None => {
            // `moment(new Date(value).toISOString())`: the process's local
            // time reads the value, the moment keeps that zone.
            let ms = match &value {
                Value::Number(n) => n.as_f64().map(|f| f as i64),
                Value::String(s) => dates::js_date_parse_in(s, host),
                Value::Null => Some(0),
                _ => None,
            };
            let ms = ms.ok_or_else(|| EngineError::node("Unrecognized date input. Please specify a format in the \"From Format\" field."))?;
            Dt::new(ms, host.clone())
        }
    };
    let amount = if operation == "subtract" { -duration } else { duration };
    // moment rounds fractional days/months to whole ones; clock units stay exact.
    let amount = match dates::normalize_unit(&unit) {
        Some("years" | "quarters" | "months" | "weeks" | "days") => amount.round(),
        _ => amount,
    };
    // Calendar units keep the wall clock of the process's zone (moment's local arithmetic).
    let r = d.plus(&unit, amount).ok_or_else(|| EngineError::node(format!("Invalid time unit '{unit}'")))?;
    Ok(Some((field, json!(r.to_iso_utc()))))
}
