//! Set (Edit Fields): v1/v2 typed value lists, v3.0–3.2 `fields.values`,
//! v3.3+ `assignments`, and raw JSON mode.

use serde_json::{Map, Value};

use super::conditions::{js_to_number, num_value, parse_bool};
use super::{set_path, string_list, NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 3.0 {
        return execute_v1(ctx);
    }
    let input = ctx.input(0);
    let mut out = Vec::with_capacity(input.len());
    for (i, item) in input.iter().enumerate() {
        match set_item(ctx, item, i) {
            Ok(it) => out.push(it),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// Fields of the input item that survive, per `include` / `includeOtherFields`.
fn base_object(ctx: &mut NodeContext<'_>, item: &Item, i: usize) -> Result<Map<String, Value>> {
    let v = ctx.version();
    let include = if v >= 3.3 {
        if ctx.param_bool("includeOtherFields", i, false)? {
            ctx.param_str("include", i, "all")?
        } else {
            "none".into()
        }
    } else {
        ctx.param_str("include", i, "all")?
    };
    let src = item.json.as_object();
    Ok(match include.as_str() {
        "all" => src.cloned().unwrap_or_default(),
        "selected" => {
            let fields = string_list(ctx.param_opt("includeFields", i)?.as_ref());
            let mut m = Map::new();
            for f in fields {
                if let Some(x) = src.and_then(|s| s.get(&f)) {
                    m.insert(f, x.clone());
                }
            }
            m
        }
        "except" => {
            let fields = string_list(ctx.param_opt("excludeFields", i)?.as_ref());
            let mut m = src.cloned().unwrap_or_default();
            for f in fields {
                m.shift_remove(&f);
            }
            m
        }
        _ => Map::new(),
    })
}

fn set_item(ctx: &mut NodeContext<'_>, item: &Item, i: usize) -> Result<Item> {
    let mut obj = Value::Object(base_object(ctx, item, i)?);
    let dot = ctx.raw("options.dotNotation").and_then(|v| v.as_bool()).unwrap_or(true);
    let ignore = ctx.raw("options.ignoreConversionErrors").and_then(|v| v.as_bool()).unwrap_or(false);
    let v = ctx.version();
    let put = |obj: &mut Value, name: &str, value: Value| {
        if dot {
            set_path(obj, name, value)
        } else if let Value::Object(o) = obj {
            o.insert(name.to_string(), value);
        }
    };
    if ctx.param_str("mode", i, "manual")? == "raw" {
        let raw = ctx.param("jsonOutput", i, Value::String("{}".into()))?;
        let parsed = match raw {
            Value::String(s) => serde_json::from_str::<Value>(&s)
                .map_err(|_| EngineError::node_with(format!("The 'JSON Output' in item {i} contains invalid JSON"), s))?,
            other => other,
        };
        let Value::Object(add) = parsed else {
            return Err(EngineError::node(format!("The 'JSON Output' in item {i} does not contain a valid JSON object")));
        };
        for (k, x) in add {
            put(&mut obj, &k, x);
        }
    } else if v >= 3.3 {
        let assignments = ctx.raw("assignments.assignments").and_then(|a| a.as_array()).map(|a| a.as_slice()).unwrap_or(&[]);
        for a in assignments {
            let name = match a.get("name") {
                Some(n) => crate::nodes::js_string(&ctx.resolve(n, i)?),
                None => continue,
            };
            let ty = a.get("type").and_then(|t| t.as_str()).unwrap_or("string");
            let value = ctx.resolve(a.get("value").unwrap_or(&Value::Null), i)?;
            let value = convert(&name, ty, value, i, ignore, v)?;
            put(&mut obj, &name, value);
        }
    } else {
        let fields = ctx.raw("fields.values").and_then(|a| a.as_array()).cloned().unwrap_or_default();
        for f in &fields {
            let name = match f.get("name") {
                Some(n) => crate::nodes::js_string(&ctx.resolve(n, i)?),
                None => continue,
            };
            let ty_key = f.get("type").and_then(|t| t.as_str()).unwrap_or("stringValue");
            let ty = ty_key.trim_end_matches("Value");
            let value = ctx.resolve(f.get(ty_key).unwrap_or(&Value::Null), i)?;
            let value = convert(&name, ty, value, i, ignore, v)?;
            put(&mut obj, &name, value);
        }
    }
    let include_binary = ctx.raw("options.includeBinary").and_then(|v| v.as_bool()).unwrap_or(true);
    let mut it = item_from(obj, i);
    if include_binary {
        it.binary = item.binary.clone();
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
        let mut obj = if keep_only { Value::Object(Map::new()) } else { item.json.clone() };
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
