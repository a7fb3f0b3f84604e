//! If (v1 legacy conditions, v2 filter conditions) and Filter (v2).

use serde_json::Value;

use super::conditions::{self, js_to_number, Filter, FilterOptions};
use super::{NodeContext, NodeOutput};
use crate::data::{with_pair, Item};
use crate::error::Result;

/// Filter options: the parameter's own options with the node-level overrides.
pub fn filter_options(ctx: &mut NodeContext<'_>, cond_path: &str) -> FilterOptions {
    let raw_opts = ctx.raw(&format!("{cond_path}.options")).cloned().unwrap_or(Value::Null);
    let mut case_sensitive = raw_opts.get("caseSensitive").and_then(|v| v.as_bool()).unwrap_or(true);
    let mut strict = raw_opts.get("typeValidation").and_then(|v| v.as_str()) == Some("strict");
    if ctx.raw("options.ignoreCase").and_then(|v| v.as_bool()) == Some(true) {
        case_sensitive = false;
    }
    if ctx.raw("options.caseSensitive").and_then(|v| v.as_bool()) == Some(false) {
        case_sensitive = false;
    }
    let loose = ctx.raw("looseTypeValidation").and_then(|v| v.as_bool()) == Some(true)
        || ctx.raw("options.looseTypeValidation").and_then(|v| v.as_bool()) == Some(true);
    if loose {
        strict = false;
    }
    // the value's own `options.version`, else what n8n's editor writes for this node version
    let version = match raw_opts.get("version").and_then(Value::as_f64) {
        Some(v) => v.clamp(1.0, 3.0) as u8,
        None => filter_version(&ctx.node.node_type, ctx.version()),
    };
    FilterOptions { case_sensitive, strict, timezone: ctx.timezone(), version }
}

/// The filter version n8n's editor stores for a node version: If and Filter
/// 2.2 → 2, 2.3 → 3; Switch 3.2 → 2, 3.4 → 3; 1 before.
fn filter_version(node_type: &str, v: f64) -> u8 {
    let (two, three) = if node_type.ends_with(".switch") { (3.2, 3.4) } else { (2.2, 2.3) };
    if v >= three {
        3
    } else if v >= two {
        2
    } else {
        1
    }
}

/// Evaluates the filter at `path` for every input item: (passed, failed).
/// Items are moved, not copied, when the node owns its input.
fn split(ctx: &mut NodeContext<'_>, path: &str) -> Result<(Vec<Item>, Vec<Item>)> {
    let opts = filter_options(ctx, path);
    let raw = ctx.raw(path).cloned().unwrap_or(Value::Null);
    let filter = Filter::read(&raw);
    let items = ctx.take_input(0);
    let mut pass = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        let r = filter.execute(&opts, i, &mut |v| ctx.resolve_in(&items, v, i));
        match r {
            Ok(p) => pass.push(p),
            Err(_) if ctx.continue_on_fail() => pass.push(false),
            Err(e) => return Err(e),
        }
    }
    let (mut yes, mut no) = (vec![], vec![]);
    for (i, (mut item, p)) in items.into_iter().zip(pass).enumerate() {
        item.paired_item = Some(crate::data::paired_ref(i, 0));
        if p {
            yes.push(item);
        } else {
            no.push(item);
        }
    }
    Ok((yes, no))
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 2.0 {
        return execute_v1(ctx);
    }
    let (yes, no) = split(ctx, "conditions")?;
    Ok(NodeOutput::many(vec![yes, no]))
}

pub fn filter(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 2.0 {
        return execute_v1(ctx);
    }
    let (yes, no) = split(ctx, "conditions")?;
    Ok(NodeOutput::many(vec![yes, no]))
}

/// If v1 and Filter v1: the legacy typed condition lists (boolean, dateTime,
/// number, string — in that order) combined with all/any (If:
/// `combineOperation`, Filter: `combineConditions` AND/OR); evaluation stops
/// at the first condition that decides the item, as n8n's loop does.
fn execute_v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let filter = ctx.node.node_type.ends_with(".filter");
    let input = ctx.input(0);
    let (mut yes, mut no) = (vec![], vec![]);
    for (i, item) in input.iter().enumerate() {
        let any = if filter { ctx.param_str("combineConditions", i, "AND")? == "OR" } else { ctx.param_str("combineOperation", i, "all")? == "any" };
        let mut decided = None;
        'types: for ty in ["boolean", "dateTime", "number", "string"] {
            let conds = ctx.param(&format!("conditions.{ty}"), i, Value::Array(vec![]))?;
            for c in conds.as_array().into_iter().flatten() {
                let op = c.get("operation").and_then(|v| v.as_str()).unwrap_or(match ty {
                    "dateTime" => "after",
                    "number" => "smaller",
                    _ => "equal",
                });
                let default = match ty {
                    "boolean" => Value::Bool(false),
                    "number" => Value::from(0),
                    _ => Value::String(String::new()),
                };
                let v1 = c.get("value1").cloned().unwrap_or_else(|| default.clone());
                let v2 = c.get("value2").cloned().unwrap_or(default);
                let r = match compare_v1(ty, op, &v1, &v2) {
                    Ok(r) => r,
                    Err(_) if ctx.continue_on_fail() => false,
                    Err(e) => return Err(e),
                };
                if r == any {
                    decided = Some(r);
                    break 'types;
                }
            }
        }
        if decided.unwrap_or(!any) {
            yes.push(with_pair(item, i));
        } else {
            no.push(with_pair(item, i));
        }
    }
    Ok(NodeOutput::many(vec![yes, no]))
}

/// JavaScript's `String(v)` (arrays joined with commas, objects as
/// `[object Object]`).
fn js_to_string(v: &Value) -> String {
    match v {
        Value::Array(a) => a.iter().map(|x| if x.is_null() { String::new() } else { js_to_string(x) }).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".into(),
        other => super::js_string(other),
    }
}

/// JavaScript truthiness (`v || fallback`).
fn or_else(v: &Value, fallback: Value) -> Value {
    if conditions::truthy(v) {
        v.clone()
    } else {
        fallback
    }
}

/// JavaScript's relational comparison: strings by code units, anything else
/// as numbers (NaN compares false).
fn js_cmp(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x.encode_utf16().cmp(y.encode_utf16())),
        _ => js_to_number(a).partial_cmp(&js_to_number(b)),
    }
}

/// JavaScript's `===` on parameter values (objects are never equal).
fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(_), _) | (Value::Object(_), _) => false,
        _ => a == b,
    }
}

/// n8n's `convertDateTime`: a string through `new Date()` (a wall time
/// without offset is the process's, UTC here), a number as epoch
/// milliseconds; anything else is "not a valid DateTime".
pub(crate) fn v1_datetime(v: &Value) -> Result<Value> {
    let ms = match v {
        Value::Number(n) => n.as_f64().filter(|f| !f.is_nan()),
        Value::String(_) => conditions::parse_datetime(v, "UTC").map(|d| d.timestamp_millis() as f64),
        _ => None,
    };
    ms.map(Value::from).ok_or_else(|| crate::error::EngineError::node(format!("The value \"{}\" is not a valid DateTime.", js_to_string(v))))
}

pub(crate) fn compare_v1(ty: &str, op: &str, v1: &Value, v2: &Value) -> Result<bool> {
    use std::cmp::Ordering::*;
    let (a, b) = if ty == "dateTime" { (v1_datetime(v1)?, v1_datetime(v2)?) } else { (v1.clone(), v2.clone()) };
    let zero = || Value::from(0);
    let text = |v: &Value| js_to_string(&or_else(v, Value::String(String::new())));
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(f64::is_nan),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(_) => false,
    };
    // `(value1 as string).startsWith(...)` throws on anything but a string
    let string_method = |name: &str| -> Result<(String, String)> {
        match a.as_str() {
            Some(s) => Ok((s.to_string(), js_to_string(&b))),
            None => Err(crate::error::EngineError::node(format!("value1.{name} is not a function"))),
        }
    };
    Ok(match op {
        "after" | "larger" => js_cmp(&or_else(&a, zero()), &or_else(&b, zero())) == Some(Greater),
        "before" | "smaller" => js_cmp(&or_else(&a, zero()), &or_else(&b, zero())) == Some(Less),
        "largerEqual" => matches!(js_cmp(&or_else(&a, zero()), &or_else(&b, zero())), Some(Greater | Equal)),
        "smallerEqual" => matches!(js_cmp(&or_else(&a, zero()), &or_else(&b, zero())), Some(Less | Equal)),
        "equal" => strict_eq(&a, &b),
        "notEqual" => !strict_eq(&a, &b),
        "contains" => text(&a).contains(&text(&b)),
        "notContains" => !text(&a).contains(&text(&b)),
        "startsWith" => {
            let (s, p) = string_method("startsWith")?;
            s.starts_with(&p)
        }
        "notStartsWith" => {
            let (s, p) = string_method("startsWith")?;
            !s.starts_with(&p)
        }
        "endsWith" => {
            let (s, p) = string_method("endsWith")?;
            s.ends_with(&p)
        }
        "notEndsWith" => {
            let (s, p) = string_method("endsWith")?;
            !s.ends_with(&p)
        }
        "isEmpty" => empty(&a),
        "isNotEmpty" => !empty(&a),
        "regex" => conditions::parse_regex(&text(&b))?.is_match(&text(&a)),
        "notRegex" => !conditions::parse_regex(&text(&b))?.is_match(&text(&a)),
        other => return Err(crate::error::EngineError::node(format!("compareOperationFunctions[compareData.operation] is not a function (operation \"{other}\")"))),
    })
}
