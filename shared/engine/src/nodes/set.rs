//! Set (Edit Fields): v1/v2 typed value lists, v3.0–3.2 `fields.values`,
//! v3.3+ `assignments`, and raw JSON mode.

use serde_json::{Map, Value};

use super::conditions::{js_to_number, num_value, parse_bool};
use super::{set_path, string_list, NodeContext, NodeOutput};
use crate::data::{item_from, Item, Json};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 3.0 {
        return execute_v1(ctx);
    }
    // In place when expressions only read their own item: the input item's
    // object becomes the output object without a copy.
    let in_place = !ctx.reads_other_items();
    let mut items = ctx.take_input(0);
    let mut out = Vec::with_capacity(items.len());
    // Parameters without expressions are read once, not per item.
    let fixed = |ctx: &NodeContext<'_>, keys: &[&str]| keys.iter().all(|k| ctx.raw(k).is_none_or(|v| !crate::expr::has_expression(v)));
    let (list_path, v33) = if ctx.version() >= 3.3 { ("assignments.assignments", true) } else { ("fields.values", false) };
    let list = ctx.raw(list_path).and_then(|a| a.as_array()).map(|a| a.as_slice()).unwrap_or(&[]);
    let consts = Consts {
        raw_mode: if fixed(ctx, &["mode"]) { Some(p_str(ctx, &[], "mode", 0, "manual")? == "raw") } else { None },
        include: if fixed(ctx, &["includeOtherFields", "include"]) { Some(include_mode(ctx, &[], 0)?) } else { None },
        ignore: ctx.raw("options.ignoreConversionErrors").and_then(|v| v.as_bool()).unwrap_or(false),
        dot: ctx.raw("options.dotNotation").and_then(|v| v.as_bool()).unwrap_or(true),
        include_binary: ctx.raw("options.includeBinary").and_then(|v| v.as_bool()).unwrap_or(true),
        fields: list
            .iter()
            .map(|a| {
                let (ty, value_key) = if v33 {
                    (a.get("type").and_then(|t| t.as_str()).unwrap_or("string"), "value")
                } else {
                    let k = a.get("type").and_then(|t| t.as_str()).unwrap_or("stringValue");
                    (k.trim_end_matches("Value"), k)
                };
                Field { name: a.get("name"), ty, value: a.get(value_key).unwrap_or(&Value::Null) }
            })
            .collect(),
    };
    for i in 0..items.len() {
        match set_item(ctx, &mut items, i, in_place, &consts) {
            Ok(it) => out.push(it),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

fn p_str(ctx: &mut NodeContext<'_>, items: &[Item], path: &str, i: usize, default: &str) -> Result<String> {
    Ok(match ctx.raw(path) {
        Some(v) => match ctx.resolve_in(items, v, i)? {
            Value::String(s) => s,
            Value::Null => default.to_string(),
            other => crate::nodes::js_string(&other),
        },
        None => default.to_string(),
    })
}

fn p_bool(ctx: &mut NodeContext<'_>, items: &[Item], path: &str, i: usize, default: bool) -> Result<bool> {
    Ok(match ctx.raw(path) {
        Some(v) => super::conditions::truthy(&ctx.resolve_in(items, v, i)?),
        None => default,
    })
}

/// What is the same for every item, read once per run.
struct Consts<'a> {
    raw_mode: Option<bool>,
    include: Option<String>,
    ignore: bool,
    dot: bool,
    include_binary: bool,
    fields: Vec<Field<'a>>,
}

/// One assignment: its raw name, declared type and raw value.
struct Field<'a> {
    name: Option<&'a Value>,
    ty: &'a str,
    value: &'a Value,
}

fn include_mode(ctx: &mut NodeContext<'_>, items: &[Item], i: usize) -> Result<String> {
    if ctx.version() >= 3.3 {
        if p_bool(ctx, items, "includeOtherFields", i, false)? {
            p_str(ctx, items, "include", i, "all")
        } else {
            Ok("none".into())
        }
    } else {
        p_str(ctx, items, "include", i, "all")
    }
}

/// The fields an item gets: `(name, value)` pairs, evaluated against the unmodified input.
fn writes(ctx: &mut NodeContext<'_>, items: &[Item], i: usize, ignore: bool, consts: &Consts) -> Result<Vec<(String, Value)>> {
    let v = ctx.version();
    let mut out = vec![];
    let raw_mode = match consts.raw_mode {
        Some(r) => r,
        None => p_str(ctx, items, "mode", i, "manual")? == "raw",
    };
    if raw_mode {
        let raw = match ctx.raw("jsonOutput") {
            Some(r) => ctx.resolve_in(items, r, i)?,
            None => Value::String("{}".into()),
        };
        let parsed = match raw {
            Value::String(s) => serde_json::from_str::<Value>(&s)
                .map_err(|_| EngineError::node_with(format!("The 'JSON Output' in item {i} contains invalid JSON"), s))?,
            other => other,
        };
        let Value::Object(add) = parsed else {
            return Err(EngineError::node(format!("The 'JSON Output' in item {i} does not contain a valid JSON object")));
        };
        out.extend(add);
        return Ok(out);
    }
    out.reserve_exact(consts.fields.len());
    for f in &consts.fields {
        let name = match f.name {
            Some(Value::String(n)) if !n.starts_with('=') => n.clone(),
            Some(n) => crate::nodes::js_string(&ctx.resolve_in(items, n, i)?),
            None => continue,
        };
        let value = ctx.resolve_in(items, f.value, i)?;
        let value = convert(&name, f.ty, value, i, ignore, v)?;
        out.push((name, value));
    }
    Ok(out)
}

fn set_item(ctx: &mut NodeContext<'_>, items: &mut [Item], i: usize, in_place: bool, consts: &Consts) -> Result<Item> {
    let (ignore, dot) = (consts.ignore, consts.dot);
    let fields = writes(ctx, items, i, ignore, consts)?;
    let include = match &consts.include {
        Some(s) => s.clone(),
        None => include_mode(ctx, items, i)?,
    };
    let mut obj = match include.as_str() {
        // the input's object when nothing else holds it, else a copy with room for the new fields
        "all" if in_place && Json::is_unique(&items[i].json) => items[i].json.take(),
        "all" => items[i].json.object_with_room(fields.len()),
        "selected" | "except" => {
            let key = if include == "selected" { "includeFields" } else { "excludeFields" };
            let list = match ctx.raw(key) {
                Some(v) => string_list(Some(&ctx.resolve_in(items, v, i)?)),
                None => vec![],
            };
            let src = items[i].json.as_object();
            let mut m = Map::new();
            if include == "selected" {
                for f in list {
                    if let Some(x) = src.and_then(|s| s.get(&f)) {
                        m.insert(f, x.clone());
                    }
                }
            } else {
                m = src.cloned().unwrap_or_default();
                for f in list {
                    m.shift_remove(&f);
                }
            }
            Value::Object(m)
        }
        _ => Value::Object(Map::new()),
    };
    if !obj.is_object() {
        obj = Value::Object(Map::new());
    }
    for (name, value) in fields {
        if dot {
            set_path(&mut obj, &name, value);
        } else if let Value::Object(o) = &mut obj {
            o.insert(name, value);
        }
    }
    let mut it = item_from(obj, i);
    if consts.include_binary {
        it.binary = items[i].binary.clone();
    }
    Ok(it)
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "'null'".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        other => format!("'{}'", crate::nodes::js_string(other)),
    }
}

/// n8n's `validateEntry`: converts an assignment to its declared type.
fn convert(name: &str, ty: &str, value: Value, i: usize, ignore: bool, version: f64) -> Result<Value> {
    let fail = |value: &Value| {
        EngineError::node_with(
            format!("'{name}' expects a {ty} but we got {} [item {i}]", describe(value)),
            format!("To fix the error try to change the type for the field \"{name}\" or activate the option “Ignore Type Conversion Errors” to apply a less strict type validation"),
        )
    };
    if ty == "string" {
        if value.is_null() {
            if version > 3.0 && !ignore {
                return Err(fail(&value));
            }
            return Ok(Value::Null);
        }
        return Ok(Value::String(match &value {
            Value::Object(_) | Value::Array(_) => value.to_string(),
            other => crate::nodes::js_string(other),
        }));
    }
    if value.is_null() {
        return Ok(Value::Null);
    }
    let converted = match ty {
        "number" => {
            let n = js_to_number(&value);
            if n.is_nan() {
                None
            } else {
                Some(num_value(n))
            }
        }
        "boolean" => parse_bool(&value).map(Value::Bool),
        "array" => match &value {
            Value::Array(_) => Some(value.clone()),
            Value::String(s) => serde_json::from_str::<Value>(s)
                .or_else(|_| serde_json::from_str(&s.replace('\'', "\"")))
                .ok()
                .filter(|v| v.is_array()),
            _ => None,
        },
        "object" => match &value {
            Value::Object(_) => Some(value.clone()),
            Value::String(s) => serde_json::from_str::<Value>(s).ok().filter(|v| v.is_object()),
            _ => None,
        },
        _ => Some(value.clone()),
    };
    match converted {
        Some(v) => Ok(v),
        None if ignore => Ok(value),
        None => Err(fail(&value)),
    }
}

/// Set v1/v2: `values.{string,number,boolean}[]`, `keepOnlySet`.
fn execute_v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = Vec::with_capacity(input.len());
    let dot = ctx.raw("options.dotNotation").and_then(|v| v.as_bool()).unwrap_or(true);
    for (i, item) in input.iter().enumerate() {
        let keep_only = ctx.param_bool("keepOnlySet", i, false)?;
        let mut obj = if keep_only { Value::Object(Map::new()) } else { item.json.object_with_room(3) };
        let values = ctx.raw("values").cloned().unwrap_or(Value::Null);
        for ty in ["boolean", "number", "string"] {
            for entry in values.get(ty).and_then(|v| v.as_array()).into_iter().flatten() {
                let name = entry.get("name").and_then(|n| n.as_str()).unwrap_or("propertyName").to_string();
                let raw = entry.get("value").cloned().unwrap_or(match ty {
                    "boolean" => Value::Bool(false),
                    "number" => Value::from(0),
                    _ => Value::String(String::new()),
                });
                let v = ctx.resolve(&raw, i)?;
                let v = match ty {
                    "boolean" => Value::Bool(super::conditions::truthy(&v)),
                    "number" => num_value(js_to_number(&v)),
                    _ => Value::String(crate::nodes::js_string(&v)),
                };
                if dot {
                    set_path(&mut obj, &name, v);
                } else if let Value::Object(o) = &mut obj {
                    o.insert(name, v);
                }
            }
        }
        let mut it = item_from(obj, i);
        if !keep_only {
            it.binary = item.binary.clone();
        }
        out.push(it);
    }
    Ok(NodeOutput::one(out))
}
