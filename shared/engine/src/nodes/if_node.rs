//! If (v1 legacy conditions, v2 filter conditions) and Filter (v2).

use serde_json::Value;

use super::conditions::{self, execute_filter_with, js_to_number, FilterOptions};
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
    FilterOptions { case_sensitive, strict, timezone: ctx.timezone() }
}

/// Evaluates the filter at `path` for every input item: (passed, failed).
/// Items are moved, not copied, when the node owns its input.
fn split(ctx: &mut NodeContext<'_>, path: &str) -> Result<(Vec<Item>, Vec<Item>)> {
    let opts = filter_options(ctx, path);
    let raw = ctx.raw(path).cloned().unwrap_or(Value::Null);
    let items = ctx.take_input(0);
    let mut pass = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        let r = execute_filter_with(&raw, &opts, i, &mut |v| ctx.resolve_in(&items, v, i));
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
    let (yes, no) = split(ctx, "conditions")?;
    Ok(NodeOutput::many(vec![yes, no]))
}

/// If v1: typed condition lists combined with all/any.
fn execute_v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let (mut yes, mut no) = (vec![], vec![]);
    let tz = ctx.timezone();
    for (i, item) in input.iter().enumerate() {
        let conds = ctx.param("conditions", i, Value::Null)?;
        let any = ctx.param_str("combineOperation", i, "all")? == "any";
        let mut results = vec![];
        for ty in ["boolean", "dateTime", "number", "string"] {
            for c in conds.get(ty).and_then(|v| v.as_array()).into_iter().flatten() {
                let op = c.get("operation").and_then(|v| v.as_str()).unwrap_or(if ty == "string" || ty == "boolean" { "equal" } else { "smaller" });
                let v1 = c.get("value1").cloned().unwrap_or(Value::Null);
                let v2 = c.get("value2").cloned().unwrap_or(Value::Null);
                results.push(compare_v1(ty, op, &v1, &v2, &tz)?);
            }
        }
        let pass = if any { results.iter().any(|b| *b) } else { results.iter().all(|b| *b) };
        if pass {
            yes.push(with_pair(item, i));
        } else {
            no.push(with_pair(item, i));
        }
    }
    Ok(NodeOutput::many(vec![yes, no]))
}

fn compare_v1(ty: &str, op: &str, v1: &Value, v2: &Value, tz: &str) -> Result<bool> {
    let s = |v: &Value| super::js_string(v);
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(f64::is_nan),
        _ => false,
    };
    Ok(match ty {
        "dateTime" => {
            let a = conditions::parse_datetime(v1, tz).map(|d| d.timestamp_millis());
            let b = conditions::parse_datetime(v2, tz).map(|d| d.timestamp_millis());
            match (op, a, b) {
                ("after", Some(a), Some(b)) => a > b,
                ("before", Some(a), Some(b)) => a < b,
                _ => false,
            }
        }
        "number" | "boolean" if !matches!(op, "isEmpty" | "isNotEmpty") => {
            let (a, b) = if ty == "number" { (js_to_number(v1), js_to_number(v2)) } else { (f64::from(u8::from(conditions::truthy(v1))), f64::from(u8::from(conditions::truthy(v2)))) };
            match op {
                "smaller" => a < b,
                "smallerEqual" => a <= b,
                "equal" => a == b,
                "notEqual" => a != b,
                "larger" => a > b,
                "largerEqual" => a >= b,
                _ => false,
            }
        }
        _ => match op {
            "isEmpty" => empty(v1),
            "isNotEmpty" => !empty(v1),
            "contains" => s(v1).contains(&s(v2)),
            "notContains" => !s(v1).contains(&s(v2)),
            "startsWith" => s(v1).starts_with(&s(v2)),
            "notStartsWith" => !s(v1).starts_with(&s(v2)),
            "endsWith" => s(v1).ends_with(&s(v2)),
            "notEndsWith" => !s(v1).ends_with(&s(v2)),
            "equal" => s(v1) == s(v2),
            "notEqual" => s(v1) != s(v2),
            "regex" => conditions::parse_regex(&s(v2))?.is_match(&s(v1)),
            "notRegex" => !conditions::parse_regex(&s(v2))?.is_match(&s(v1)),
            _ => false,
        },
    })
}
