//! Wait: for a time interval, until a date, or (webhook/form) until resumed.
//! Short waits sleep in-process; long ones park the execution (`waiting`).

use chrono::{Duration, TimeZone, Utc};

use super::{NodeContext, NodeOutput};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.resumed {
        return Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()]));
    }
    let resume = ctx.param_str("resume", 0, "timeInterval")?;
    let till = match resume.as_str() {
        "timeInterval" => {
            let amount = ctx.param_f64("amount", 0, 1.0)?;
            let unit = ctx.param_str("unit", 0, "hours")?;
            let secs = match unit.as_str() {
                "seconds" => amount,
                "minutes" => amount * 60.0,
                "hours" => amount * 3600.0,
                "days" => amount * 86400.0,
                other => return Err(EngineError::node(format!("Unknown wait unit '{other}'"))),
            };
            Utc::now() + Duration::milliseconds((secs * 1000.0) as i64)
        }
        "specificTime" => {
            let v = ctx.param("dateTime", 0, serde_json::Value::Null)?;
            let d = super::conditions::parse_datetime(&v, &ctx.timezone())
                .ok_or_else(|| EngineError::node(format!("Cannot parse date '{}'", super::js_string(&v))))?;
            d.with_timezone(&Utc)
        }
        // Resumed by a webhook/form call: wait "forever" (n8n's WAIT_INDEFINITELY).
        _ => Utc.with_ymd_and_hms(3000, 1, 1, 0, 0, 0).single().ok_or_else(|| EngineError::node("bad date"))?,
    };
    Ok(NodeOutput::Wait(till))
}
