//! Wait: after a time interval, until a date, or until a webhook call or a
//! form submission resumes it (optionally with a time limit).
//!
//! Short time waits sleep in-process; everything else parks the execution
//! (`waiting`). A webhook or form resume hands the request's item to the
//! node through its node state (`resumeItems`, written by the host before it
//! resumes the execution); a resume without it (the time limit passed)
//! passes the input on, as n8n does.

use chrono::{Duration, TimeZone, Utc};
use serde_json::Value;

use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

/// n8n's `WAIT_INDEFINITELY`.
pub fn indefinitely() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(3000, 1, 1, 0, 0, 0).single().unwrap_or_else(Utc::now)
}

/// The node-state key the host writes a resume's items under.
pub const RESUME_ITEMS: &str = "resumeItems";

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.resumed {
        if let Some(Value::Array(items)) = ctx.node_state.get_mut(RESUME_ITEMS).map(Value::take) {
            *ctx.node_state = Value::Null;
            let items: Vec<Item> = serde_json::from_value(Value::Array(items))?;
            return Ok(NodeOutput::one(items));
        }
        return Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()]));
    }
    let resume = ctx.param_str("resume", 0, "timeInterval")?;
    match resume.as_str() {
        "timeInterval" => {
            let amount = ctx.param_f64("amount", 0, 1.0)?;
            let unit = ctx.param_str("unit", 0, "hours")?;
            Ok(NodeOutput::Wait(ctx.now() + Duration::milliseconds((seconds(amount, &unit)? * 1000.0) as i64)))
        }
        "specificTime" => {
            let v = ctx.param("dateTime", 0, Value::Null)?;
            Ok(NodeOutput::Wait(date(ctx, &v)?))
        }
        "webhook" | "form" => Ok(NodeOutput::Park(limit(ctx)?.unwrap_or_else(indefinitely))),
        other => Err(EngineError::node(format!("The resume mode \"{other}\" is not supported"))),
    }
}

fn seconds(amount: f64, unit: &str) -> Result<f64> {
    Ok(match unit {
        "seconds" => amount,
        "minutes" => amount * 60.0,
        "hours" => amount * 3600.0,
        "days" => amount * 86400.0,
        other => return Err(EngineError::node(format!("Unknown wait unit '{other}'"))),
    })
}

fn date(ctx: &mut NodeContext<'_>, v: &Value) -> Result<chrono::DateTime<Utc>> {
    let d = super::conditions::parse_datetime(v, &ctx.timezone())
        .ok_or_else(|| EngineError::node(format!("Cannot parse date '{}'", super::js_string(v))))?;
    Ok(d.with_timezone(&Utc))
}

/// "Limit wait time": top-level parameters (Wait 1) or
/// `options.limitWaitTime.values` (Wait 1.1).
fn limit(ctx: &mut NodeContext<'_>) -> Result<Option<chrono::DateTime<Utc>>> {
    let (prefix, on) = if ctx.raw("options.limitWaitTime.values").is_some() {
        ("options.limitWaitTime.values.", true)
    } else {
        ("", ctx.param_bool("limitWaitTime", 0, false)?)
    };
    if !on {
        return Ok(None);
    }
    let limit_type = ctx.param_str(&format!("{prefix}limitType"), 0, "afterTimeInterval")?;
    let till = if limit_type == "afterTimeInterval" {
        let amount = ctx.param_f64(&format!("{prefix}resumeAmount"), 0, 1.0)?;
        let unit = ctx.param_str(&format!("{prefix}resumeUnit"), 0, "hours")?;
        ctx.now() + Duration::milliseconds((seconds(amount, &unit)? * 1000.0) as i64)
    } else {
        let v = ctx.param(&format!("{prefix}maxDateAndTime"), 0, Value::Null)?;
        date(ctx, &v).map_err(|e| EngineError::node_with("Could not configure Limit Wait Time", e.to_string()))?
    };
    Ok(Some(till))
}
