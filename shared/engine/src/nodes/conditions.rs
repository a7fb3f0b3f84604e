//! n8n's filter parameter (If v2, Filter v2, Switch v3 rules) and the
//! JavaScript coercions it relies on.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, TimeZone};
use serde_json::{Number, Value};

use crate::error::{EngineError, Result};

/// JavaScript `Number(v)`.
pub fn js_to_number(v: &Value) -> f64 {
    match v {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => str_to_number(s),
        Value::Array(a) if a.is_empty() => 0.0,
        Value::Array(a) if a.len() == 1 => js_to_number(&Value::String(crate::nodes::js_string(&a[0]))),
        _ => f64::NAN,
    }
}

pub fn str_to_number(s: &str) -> f64 {
    let t = s.trim();
    if t.is_empty() {
        return 0.0;
    }
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).map(|x| x as f64).unwrap_or(f64::NAN);
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    if t.chars().any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E') {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// JSON number from an f64 (integers stay integers).
pub fn num_value(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::Number(Number::from(f as i64))
    } else {
        Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null)
    }
}

/// JavaScript `String(n)` for a JSON number.
pub fn num_to_string(f: f64, n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        return format!("{}", f as i128);
    }
    format!("{f}")
}

/// JavaScript truthiness.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// Parses dates the way n8n's `tryToParseDateTime` does (ISO, RFC 2822, SQL, epoch ms).
pub fn parse_datetime(v: &Value, tz: &str) -> Option<DateTime<FixedOffset>> {
    match v {
        Value::Number(n) => {
            let ms = n.as_f64()? as i64;
            return chrono::Utc.timestamp_millis_opt(ms).single().map(|d| d.fixed_offset());
        }
        Value::String(_) => {}
        _ => return None,
    }
    let s = v.as_str()?.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some(d);
    }
    if let Ok(d) = DateTime::parse_from_rfc2822(s) {
        return Some(d);
    }
    for f in ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%d %H:%M:%S%.f%:z"] {
        if let Ok(d) = DateTime::parse_from_str(s, f) {
            return Some(d);
        }
    }
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .or_else(|| {
            ["%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y"]
                .iter()
                .find_map(|f| NaiveDate::parse_from_str(s, f).ok())
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })?;
    localize(naive, tz)
}

/// A wall-clock time in a named zone.
pub fn localize(naive: NaiveDateTime, tz: &str) -> Option<DateTime<FixedOffset>> {
    let zone = expression::tz::Tz::get_or_utc(tz);
    zone.from_local_datetime(&naive).earliest().map(|d| d.fixed_offset())
}

/// Regex from `/pattern/flags` or a bare pattern.
pub fn parse_regex(p: &str) -> Result<regex::Regex> {
    let (pat, flags) = match p.strip_prefix('/').and_then(|r| r.rfind('/').map(|i| (&r[..i], &r[i + 1..]))) {
        Some((pat, flags)) if flags.chars().all(|c| "gimusy".contains(c)) => (pat, flags),
        _ => (p, ""),
    };
    let mut b = regex::RegexBuilder::new(pat);
    b.case_insensitive(flags.contains('i')).multi_line(flags.contains('m')).dot_matches_new_line(flags.contains('s'));
    b.build().map_err(|e| EngineError::node(format!("Invalid regular expression: {e}")))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        _ => "object",
    }
}

/// A value coerced to an operator type (n8n's `validateFieldType`).
enum Typed {
    Str(String),
    Num(f64),
    Bool(bool),
    Date(DateTime<FixedOffset>),
    Arr(Vec<Value>),
    Obj(Value),
    Any(Value),
    Missing,
}

/// n8n's `parseSingleFilterValue` for filter `version` 1–3.
fn coerce(v: &Value, ty: &str, strict: bool, tz: &str, version: u8) -> Option<Typed> {
    if v.is_null() {
        return Some(Typed::Missing);
    }
    if ty == "boolean" && !strict {
        // version 1 takes JavaScript truthiness; 2 parses "false"/"0" first
        let parsed = if version >= 2 { parse_bool(v) } else { None };
        return Some(Typed::Bool(parsed.unwrap_or_else(|| truthy(v))));
    }
    if ty == "number" && version >= 3 {
        // from version 3 `''` and `[]` are empty, not 0
        let empty = match v {
            Value::String(s) => s.trim().is_empty(),
            Value::Array(a) => a.is_empty(),
            _ => false,
        };
        if empty {
            return Some(Typed::Missing);
        }
    }
    Some(match ty {
        "string" => {
            if strict && !v.is_string() {
                return None;
            }
            Typed::Str(match v {
                Value::String(s) => s.clone(),
                Value::Array(_) | Value::Object(_) => v.to_string(),
                other => crate::nodes::js_string(other),
            })
        }
        "number" => {
            if strict && !v.is_number() {
                return None;
            }
            let n = js_to_number(v);
            if n.is_nan() {
                return None;
            }
            Typed::Num(n)
        }
        "boolean" => {
            if strict && !v.is_boolean() {
                return None;
            }
            Typed::Bool(parse_bool(v)?)
        }
        "dateTime" => Typed::Date(parse_datetime(v, tz)?),
        "array" => {
            if strict && !v.is_array() {
                return None;
            }
            match v {
                Value::Array(a) => Typed::Arr(a.clone()),
                Value::String(s) => match serde_json::from_str::<Value>(s).or_else(|_| serde_json::from_str(&s.replace('\'', "\""))) {
                    Ok(Value::Array(a)) => Typed::Arr(a),
                    _ => return None,
                },
                _ => return None,
            }
        }
        "object" => {
            if strict && !(v.is_object() || v.is_array()) {
                return None;
            }
            match v {
                Value::Object(_) => Typed::Obj(v.clone()),
                Value::String(s) => match serde_json::from_str::<Value>(s) {
                    Ok(o @ Value::Object(_)) => Typed::Obj(o),
                    _ => return None,
                },
                _ => return None,
            }
        }
        _ => Typed::Any(v.clone()),
    })
}

/// n8n's `tryToParseBoolean`.
pub fn parse_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
        Value::String(s) if s.trim().is_empty() => None,
        other => {
            let n = js_to_number(other);
            if n == 0.0 {
                Some(false)
            } else if n == 1.0 {
                Some(true)
            } else {
                None
            }
        }
    }
}

/// Filter options resolved from the parameter and node-level overrides.
pub struct FilterOptions {
    pub case_sensitive: bool,
    pub strict: bool,
    pub timezone: String,
    /// The filter parameter's `options.version` (1–3): how loose values coerce.
    pub version: u8,
}

/// Evaluates one resolved filter value (`{conditions, combinator, options}`).
pub fn execute_filter(value: &Value, opts: &FilterOptions, item_index: usize) -> Result<bool> {
    execute_filter_with(value, opts, item_index, &mut |v| Ok(v.clone()))
}

/// Evaluates a raw filter value, resolving only the operands (not the whole
/// structure) through `resolve`, and only the conditions the combinator needs.
pub fn execute_filter_with(value: &Value, opts: &FilterOptions, item_index: usize, resolve: &mut dyn FnMut(&Value) -> Result<Value>) -> Result<bool> {
    Filter::read(value).execute(opts, item_index, resolve)
}

/// A raw filter value's structure, read once for all items: only the
/// operands are resolved per item (the combinator and operators are what
/// the editor wrote, never expressions here).
pub struct Filter<'a> {
    any: bool,
    conditions: Vec<Condition<'a>>,
}

struct Condition<'a> {
    left: &'a Value,
    right: &'a Value,
    op: Operator<'a>,
}

/// A condition's `operator`, with n8n's defaults for missing parts.
#[derive(Clone, Copy)]
struct Operator<'a> {
    ty: &'a str,
    operation: &'a str,
    right_ty: &'a str,
    single: bool,
}

static NULL: Value = Value::Null;

impl<'a> Filter<'a> {
    pub fn read(value: &'a Value) -> Filter<'a> {
        let conds = value.get("conditions").and_then(|c| c.as_array()).map(Vec::as_slice).unwrap_or(&[]);
        let conditions = conds
            .iter()
            .map(|c| {
                let op = c.get("operator").unwrap_or(&NULL);
                let ty = op.get("type").and_then(|t| t.as_str()).unwrap_or("string");
                Condition {
                    left: c.get("leftValue").unwrap_or(&NULL),
                    right: c.get("rightValue").unwrap_or(&NULL),
                    op: Operator {
                        ty,
                        operation: op.get("operation").and_then(|t| t.as_str()).unwrap_or("equals"),
                        right_ty: op.get("rightType").and_then(|t| t.as_str()).unwrap_or(ty),
                        single: op.get("singleValue").and_then(|v| v.as_bool()).unwrap_or(false),
                    },
                }
            })
            .collect();
        Filter { any: value.get("combinator").and_then(|c| c.as_str()) == Some("or"), conditions }
    }

    /// The filter's result for one item (see [`execute_filter_with`]).
    pub fn execute(&self, opts: &FilterOptions, item_index: usize, resolve: &mut dyn FnMut(&Value) -> Result<Value>) -> Result<bool> {
        let any = self.any;
        for (i, c) in self.conditions.iter().enumerate() {
            let lv = resolve(c.left)?;
            let rv = resolve(c.right)?;
            let pass = execute_condition(&c.op, lv, rv, opts, i, item_index)?;
            if any && pass {
                return Ok(true);
            }
            if !any && !pass {
                return Ok(false);
            }
        }
        Ok(!any)
    }
}

fn execute_condition(op: &Operator, lv: Value, rv: Value, opts: &FilterOptions, index: usize, item_index: usize) -> Result<bool> {
    let Operator { ty, operation, right_ty, single } = *op;
    // n8n's `parseFilterConditionValues`: both operands first, then the error
    let article = |n: &str| if n.starts_with(['a', 'e', 'i', 'o', 'u']) { format!("an {n}") } else { format!("a {n}") };
    let plain = if opts.strict {
        "Try changing the type of comparison. Alternatively you can enable 'Convert types where required'."
    } else {
        "Try changing the type of the comparison."
    };
    let invalid = |t: &str, v: &Value, position: &str| {
        let suffix = format!("[condition {index}, item {item_index}]");
        let text = super::lodash::js_to_string(Some(v));
        let msg = if opts.strict {
            format!("Wrong type: '{text}' is {} but was expecting {} {suffix}", article(type_name(v)), article(t))
        } else {
            format!("Conversion error: the {} '{text}' can't be converted to {} {suffix}", type_name(v), article(t))
        };
        let conversion = match t {
            "string" => ".toString()",
            "number" => ".toNumber()",
            "boolean" => ".toBoolean()",
            _ => "",
        };
        let description = if opts.strict && !conversion.is_empty() {
            format!(
                "\n<p>Try either:</p>\n<ol>\n  <li>Enabling 'Convert types where required'</li>\n  <li>Converting the {position} field to {} by adding <code>{conversion}</code></li>\n</ol>\n\t\t\t",
                article(t)
            )
        } else {
            plain.to_string()
        };
        EngineError::node_with(msg, description)
    };
    let left = coerce(&lv, if ty == "any" { "any" } else { ty }, opts.strict, &opts.timezone, opts.version);
    let right = match coerce(&rv, if right_ty == "any" { "any" } else { right_ty }, opts.strict, &opts.timezone, opts.version) {
        None if single => Some(Typed::Missing),
        r => r,
    };
    let (left, right) = match (left, right) {
        (Some(l), Some(r)) => (l, r),
        (None, None) if type_name(&lv) == type_name(&rv) => {
            let msg = format!("Comparison type expects {} but both fields are {}", article(ty), article(type_name(&lv)));
            return Err(EngineError::node_with(msg, plain));
        }
        (None, _) => return Err(invalid(ty, &lv, "first")),
        (_, None) => return Err(invalid(right_ty, &rv, "second")),
    };
    let exists = !matches!(left, Typed::Missing);
    match operation {
        "exists" => return Ok(exists),
        "notExists" => return Ok(!exists),
        _ => {}
    }
    let ic = !opts.case_sensitive;
    Ok(match ty {
        "string" => {
            let mut l = match left {
                Typed::Str(s) => s,
                _ => String::new(),
            };
            let mut r = match right {
                Typed::Str(s) => s,
                _ => String::new(),
            };
            if ic {
                l = l.to_lowercase();
                if operation != "regex" && operation != "notRegex" {
                    r = r.to_lowercase();
                }
            }
            match operation {
                "empty" => l.is_empty(),
                "notEmpty" => !l.is_empty(),
                "equals" => l == r,
                "notEquals" => l != r,
                "contains" => l.contains(&r),
                "notContains" => !l.contains(&r),
                "startsWith" => l.starts_with(&r),
                "notStartsWith" => !l.starts_with(&r),
                "endsWith" => l.ends_with(&r),
                "notEndsWith" => !l.ends_with(&r),
                "regex" => parse_regex(&r)?.is_match(&l),
                "notRegex" => !parse_regex(&r)?.is_match(&l),
                _ => false,
            }
        }
        "number" => {
            let l = if let Typed::Num(n) = left { Some(n) } else { None };
            let r = if let Typed::Num(n) = right { Some(n) } else { None };
            match (operation, l, r) {
                ("empty", l, _) => l.is_none(),
                ("notEmpty", l, _) => l.is_some(),
                ("equals", l, r) => l == r,
                ("notEquals", l, r) => l != r,
                ("gt", Some(l), Some(r)) => l > r,
                ("lt", Some(l), Some(r)) => l < r,
                ("gte", Some(l), Some(r)) => l >= r,
                ("lte", Some(l), Some(r)) => l <= r,
                _ => false,
            }
        }
        "dateTime" => {
            let (Typed::Date(l), Typed::Date(r)) = (left, right) else { return Ok(false) };
            let (l, r) = (l.timestamp_millis(), r.timestamp_millis());
            match operation {
                "equals" => l == r,
                "notEquals" => l != r,
                "after" => l > r,
                "before" => l < r,
                "afterOrEquals" => l >= r,
                "beforeOrEquals" => l <= r,
                _ => false,
            }
        }
        "boolean" => {
            let l = matches!(left, Typed::Bool(true));
            let lb = if let Typed::Bool(b) = left { Some(b) } else { None };
            let rb = if let Typed::Bool(b) = right { Some(b) } else { None };
            match operation {
                "true" => l,
                "false" => lb == Some(false),
                "equals" => lb == rb,
                "notEquals" => lb != rb,
                "empty" => lb.is_none(),
                "notEmpty" => lb.is_some(),
                _ => false,
            }
        }
        "array" => {
            let l = if let Typed::Arr(a) = left { a } else { vec![] };
            let rv = match right {
                Typed::Str(s) if ic => Value::String(s.to_lowercase()),
                Typed::Str(s) => Value::String(s),
                Typed::Num(n) => num_value(n),
                Typed::Bool(b) => Value::Bool(b),
                Typed::Any(v) | Typed::Obj(v) => v,
                _ => rv.clone(),
            };
            let rn = js_to_number(&rv);
            let len = l.len() as f64;
            let contains = l.iter().any(|x| x == &rv || (x.is_number() && rv.is_number() && x.as_f64() == rv.as_f64()));
            match operation {
                "contains" => contains,
                "notContains" => !contains,
                "lengthEquals" => len == rn,
                "lengthNotEquals" => len != rn,
                "lengthGt" => len > rn,
                "lengthLt" => len < rn,
                "lengthGte" => len >= rn,
                "lengthLte" => len <= rn,
                "empty" => l.is_empty(),
                "notEmpty" => !l.is_empty(),
                _ => false,
            }
        }
        "object" => {
            let empty = match &left {
                Typed::Obj(Value::Object(o)) => o.is_empty(),
                Typed::Missing => true,
                _ => false,
            };
            match operation {
                "empty" => empty,
                "notEmpty" => !empty,
                _ => false,
            }
        }
        _ => {
            // `any` type: equality on raw values
            let (l, r) = (lv, rv);
            match operation {
                "equals" => l == r,
                "notEquals" => l != r,
                "empty" => l.is_null() || l == Value::String(String::new()),
                "notEmpty" => !(l.is_null() || l == Value::String(String::new())),
                _ => false,
            }
        }
    })
}
