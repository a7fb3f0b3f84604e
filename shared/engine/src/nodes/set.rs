//! Set / Edit Fields, every version as n8n runs it: v1/v2 typed value lists
//! (`values.{boolean,number,string}`, keep only set), v3.0–3.2 `fields.values`
//! with `include`, v3.3+ `assignments` (incl. binary fields) with
//! `includeOtherFields`, v3.4's binary handling, and the JSON (raw) mode.

use serde_json::{Map, Value};

use super::conditions::{js_to_number, num_value, truthy};
use super::lodash::{self, js_to_string};
use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item, Json};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 3.0 {
        return execute_v1(ctx);
    }
    // The input's objects become the outputs without a copy when nothing
    // else can read them (n8n deep-copies them).
    let in_place = !ctx.reads_other_items();
    let mut items = ctx.take_input(0);
    let v = ctx.version();
    let plan = Plan::read(ctx)?;
    let duplicates = if ctx.param_bool("duplicateItem", 0, false)? && ctx.env.settings.mode == "manual" {
        ctx.param_f64("duplicateCount", 0, 0.0)?.max(0.0) as usize
    } else {
        0
    };
    let mut out = Vec::with_capacity(items.len());
    for i in 0..items.len() {
        let it = match set_item(ctx, &mut items, i, in_place, &plan, v) {
            Ok(it) => it,
            Err(e) if ctx.continue_on_fail() => {
                let mut m = Map::new();
                m.insert("error".into(), Value::String(e.to_string()));
                item_from(Value::Object(m), i)
            }
            Err(e) => return Err(e),
        };
        for _ in 0..duplicates {
            out.push(it.clone());
        }
        out.push(it);
    }
    Ok(NodeOutput::one(out))
}

/// What is the same for every item, read once per run. `None` where a
/// parameter is an expression (then it is read per item, as n8n does).
struct Plan<'a> {
    raw_mode: Option<bool>,
    include: Option<String>,
    options: Option<Options>,
    /// v3.0–3.2 field list or v3.3+ assignments.
    fields: Vec<Field<'a>>,
    /// Raw mode: the JSON Output template (the raw text after `=`) when it is an expression.
    json_template: Option<String>,
}

#[derive(Clone)]
struct Options {
    ignore: bool,
    dot: bool,
    include_binary: Option<bool>,
    strip_binary: Option<bool>,
}

/// One field to set: its raw name, declared type and raw value.
struct Field<'a> {
    name: Option<&'a Value>,
    ty: &'a str,
    /// `ty` without its `Value` suffix (v3.0–3.2 names types `stringValue`, …)
    kind: &'a str,
    value: &'a Value,
}

static EMPTY_STRING: Value = Value::String(String::new());
static TRUE_TEXT: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::String("true".into()));
static EMPTY_OBJECT: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| Value::Object(Map::new()));

impl<'a> Plan<'a> {
    fn read(ctx: &NodeContext<'a>) -> Result<Plan<'a>> {
        let fixed = |keys: &[&str]| keys.iter().all(|k| ctx.raw(k).is_none_or(|v| !crate::expr::has_expression(v)));
        let v33 = ctx.version() >= 3.3;
        let list_path = if v33 { "assignments.assignments" } else { "fields.values" };
        let list = ctx.raw(list_path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let fields = list
            .iter()
            .map(|a| {
                let field = |name, ty: &'a str, value| Field { name, ty, kind: ty.trim_end_matches("Value"), value };
                if v33 {
                    field(a.get("name"), a.get("type").and_then(Value::as_str).unwrap_or("string"), a.get("value").unwrap_or(&Value::Null))
                } else {
                    let key = a.get("type").and_then(Value::as_str).unwrap_or("stringValue");
                    // n8n fills a missing value with the property's default
                    let value = a.get(key).unwrap_or(match key {
                        "booleanValue" => &*TRUE_TEXT,
                        "objectValue" => &*EMPTY_OBJECT,
                        _ => &EMPTY_STRING,
                    });
                    field(a.get("name"), key, value)
                }
            })
            .collect();
        let mode_fixed = fixed(&["mode"]);
        let raw_mode = mode_fixed.then(|| ctx.raw("mode").and_then(Value::as_str).unwrap_or("manual") == "raw");
        let include = if fixed(&["includeOtherFields", "include"]) { Some(include_of(ctx.raw("includeOtherFields").cloned(), ctx.raw("include").cloned(), ctx.version())) } else { None };
        let options = fixed(&["options"]).then(|| options_of(ctx.raw("options").unwrap_or(&Value::Null)));
        let json_template = ctx.raw("jsonOutput").and_then(Value::as_str).filter(|s| s.starts_with('=')).map(|s| s.trim_start_matches('=').to_string());
        Ok(Plan { raw_mode, include, options, fields, json_template })
    }
}

fn options_of(o: &Value) -> Options {
    let b = |k: &str| o.get(k).map(truthy);
    Options { ignore: b("ignoreConversionErrors").unwrap_or(false), dot: b("dotNotation").unwrap_or(true), include_binary: b("includeBinary"), strip_binary: b("stripBinary") }
}

/// Which input fields an item keeps: v3.0–3.2 `include`; v3.3+ `include`
/// only when `includeOtherFields`, else none.
fn include_of(other: Option<Value>, include: Option<Value>, version: f64) -> String {
    let include = include.map(|v| js_to_string(Some(&v))).unwrap_or_else(|| "all".into());
    if version >= 3.3 && !other.as_ref().is_some_and(truthy) {
        return "none".into();
    }
    include
}

fn set_item(ctx: &mut NodeContext<'_>, items: &mut [Item], i: usize, in_place: bool, plan: &Plan, v: f64) -> Result<Item> {
    let include: std::borrow::Cow<str> = match &plan.include {
        Some(s) => s.as_str().into(),
        None => {
            let other = ctx.raw("includeOtherFields").map(|r| ctx.resolve_in(items, r, i)).transpose()?;
            let inc = ctx.raw("include").map(|r| ctx.resolve_in(items, r, i)).transpose()?;
            include_of(other, inc, v).into()
        }
    };
    let options = match &plan.options {
        Some(o) => o.clone(),
        None => options_of(&ctx.raw("options").map(|r| ctx.resolve_in(items, r, i)).transpose()?.unwrap_or(Value::Null)),
    };
    let raw_mode = match plan.raw_mode {
        Some(r) => r,
        None => {
            let m = ctx.raw("mode").map(|r| ctx.resolve_in(items, r, i)).transpose()?;
            m.as_ref().and_then(Value::as_str) == Some("raw")
        }
    };
    let (fields, binaries) = if raw_mode { (json_output(ctx, items, i, plan)?, vec![]) } else { manual_fields(ctx, items, i, plan, &options, v)? };
    let mut it = compose(ctx, items, i, in_place, &include, &options, fields, v)?;
    for (name, prop) in binaries {
        let entry = crate::binary::assert_entry(&items[i], &prop, i)?.clone();
        let mut b = it.binary.take().map(|b| b.into_value()).and_then(|b| match b {
            Value::Object(m) => Some(m),
            _ => None,
        }).unwrap_or_default();
        b.insert(name, entry);
        it.binary = Some(Json::new(Value::Object(b)));
    }
    Ok(it)
}

/// The fields an item gets in manual mode, as `(name, value)` in n8n's
/// `newData` key order (a repeated name keeps its first place, last value),
/// and the binary fields to copy (`(name, input binary property)`).
#[allow(clippy::type_complexity)]
fn manual_fields(ctx: &mut NodeContext<'_>, items: &[Item], i: usize, plan: &Plan, options: &Options, v: f64) -> Result<(Vec<(String, Value)>, Vec<(String, String)>)> {
    let mut out: Vec<(String, Value)> = Vec::with_capacity(plan.fields.len());
    let mut binaries = vec![];
    for f in &plan.fields {
        let name = match f.name {
            Some(Value::String(n)) if !n.starts_with('=') => n.clone(),
            Some(n) => js_to_string(Some(&ctx.resolve_in(items, n, i)?)),
            None => String::new(),
        };
        let ty = f.kind;
        let value = if f.ty == "objectValue" && f.value.as_str().is_some_and(|s| s.starts_with('=')) {
            // v3.0–3.2 read an expression object as JSON text with the
            // `{{ }}` parts filled in
            let resolved = ctx.resolve_in(items, f.value, i)?;
            if resolved.is_null() {
                resolved
            } else {
                let text = resolve_raw(ctx, items, i, f.value.as_str().unwrap_or("").trim_start_matches('='))?;
                Value::Object(parse_json_parameter(Value::String(text), i, Some(&name))?)
            }
        } else {
            ctx.resolve_in(items, f.value, i)?
        };
        if ty == "binary" {
            binaries.push((name, js_to_string(Some(&value))));
            continue;
        }
        let value = validate_entry(&name, ty, value, i, options.ignore, v)?;
        match out.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => out.push((name, value)),
        }
    }
    Ok((out, binaries))
}

/// Raw (JSON) mode: the JSON Output parameter as an object.
fn json_output(ctx: &mut NodeContext<'_>, items: &[Item], i: usize, plan: &Plan) -> Result<Vec<(String, Value)>> {
    let data = match &plan.json_template {
        Some(t) => Value::String(resolve_raw(ctx, items, i, t)?),
        None => match ctx.raw("jsonOutput") {
            Some(r) => ctx.resolve_in(items, r, i)?,
            None => Value::String("{\n  \"my_field_1\": \"value\",\n  \"my_field_2\": 1\n}".into()),
        },
    };
    Ok(parse_json_parameter(data, i, None)?.into_iter().collect())
}

/// n8n's `resolveRawData`: each `{{ … }}` of the text replaced by its value
/// (objects as JSON, the rest as `String(value)`).
fn resolve_raw(ctx: &mut NodeContext<'_>, items: &[Item], i: usize, text: &str) -> Result<String> {
    let mut out = text.to_string();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else { break };
        let part = &rest[start..start + len + 2];
        let value = ctx.resolve_in(items, &Value::String(format!("={part}")), i)?;
        let replacement = match &value {
            Value::Object(_) | Value::Array(_) => value.to_string(),
            other => js_to_string(Some(other)),
        };
        out = out.replacen(part, &replacement, 1);
        rest = &rest[start + len + 2..];
    }
    Ok(out)
}

/// n8n's `parseJsonParameter`: JSON text (or an object) to an object, with
/// its repair of single quotes, bare keys and trailing commas.
fn parse_json_parameter(data: Value, i: usize, entry: Option<&str>) -> Result<Map<String, Value>> {
    let location = match entry {
        Some(n) => format!("entry \"{n}\" inside 'Fields to Set'"),
        None => "'JSON Output'".into(),
    };
    let parsed = match data {
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v) => v,
            Err(_) => {
                let recovered = super::field_type::repair_json(&s);
                serde_json::from_str::<Value>(&recovered).map_err(|_| {
                    let description = if recovered == s { s.clone() } else { format!("{recovered};\n Original input: {s}") };
                    EngineError::node_with(format!("The {location} in item {i} contains invalid JSON"), description)
                })?
            }
        },
        other => other,
    };
    match parsed {
        Value::Object(m) => Ok(m),
        _ => Err(EngineError::node(format!("The {location} in item {i} does not contain a valid JSON object"))),
    }
}

/// n8n's `validateEntry` + `validateFieldType`: converts a field's value to
/// its declared type, or fails with n8n's message.
fn validate_entry(name: &str, ty: &str, value: Value, i: usize, ignore: bool, version: f64) -> Result<Value> {
    if version >= 3.2 && value.is_null() {
        return Ok(Value::Null);
    }
    let description = || format!("To fix the error try to change the type for the field \"{name}\" or activate the option “Ignore Type Conversion Errors” to apply a less strict type validation");
    let value = if ty == "string" {
        if version > 3.0 && value.is_null() {
            if ignore {
                return Ok(Value::Null);
            }
            return Err(EngineError::node_with(format!("'{name}' expects a {ty} but we got 'null' [item {i}]"), description()));
        }
        match &value {
            Value::String(_) => value,
            Value::Object(_) | Value::Array(_) | Value::Null => Value::String(value.to_string()),
            other => Value::String(js_to_string(Some(other))),
        }
    } else {
        value
    };
    if value.is_null() {
        return Ok(Value::Null);
    }
    match super::field_type::validate(name, &value, ty, false, false, "UTC") {
        Ok(v) => Ok(v),
        Err(_) if ignore => Ok(value),
        Err(e) => Err(EngineError::node_with(format!("{e} [item {i}]"), description())),
    }
}

/// n8n's `sanitizeDataPathKey`: without dot notation `['a.b']` names the key `a.b`.
fn plain_key(obj: &Value, key: &str) -> String {
    if obj.get(key).is_some() {
        return key.to_string();
    }
    let quoted = (key.starts_with("['") && key.ends_with("']")) || (key.starts_with("[\"") && key.ends_with("\"]"));
    if quoted && key.len() >= 4 {
        let inner = &key[2..key.len() - 2];
        if obj.get(inner).is_some() {
            return inner.to_string();
        }
    }
    key.to_string()
}

/// Takes the key by value: the common plain key becomes the map's key as it is.
fn set_field(obj: &mut Value, key: String, value: Value, dot: bool) {
    if !dot {
        let k = plain_key(obj, &key);
        if let Value::Object(o) = obj {
            o.insert(k, value);
        }
    } else if !key.contains(['.', '[']) {
        if let Value::Object(o) = obj {
            if !lodash::is_unsafe_key(&key) {
                o.insert(key, value);
            }
        }
    } else {
        lodash::set(obj, &key, value);
    }
}

/// n8n's `composeReturnItem`: the kept input fields, then the new ones.
#[allow(clippy::too_many_arguments)]
fn compose(ctx: &mut NodeContext<'_>, items: &mut [Item], i: usize, in_place: bool, include: &str, options: &Options, fields: Vec<(String, Value)>, v: f64) -> Result<Item> {
    let dot = options.dot;
    let list = |ctx: &mut NodeContext<'_>, items: &[Item], key: &str| -> Result<Vec<String>> {
        let raw = match ctx.raw(key) {
            Some(r) => ctx.resolve_in(items, r, i)?,
            None => Value::String(String::new()),
        };
        Ok(js_to_string(Some(&raw)).split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
    };
    let mut obj = match include {
        "all" if in_place && Json::is_unique(&items[i].json) => items[i].json.take(),
        "all" => items[i].json.object_with_room(fields.len()),
        "selected" => {
            let mut m = Value::Object(Map::new());
            for key in list(ctx, items, "includeFields")? {
                let value = if dot { lodash::get(&items[i].json, &key).map(|c| c.into_owned()) } else { items[i].json.get(plain_key(&items[i].json, &key)).cloned() };
                let target = if dot && key.contains('.') { key.rsplit('.').next().unwrap_or(&key).to_string() } else { key.clone() };
                if let Some(value) = value {
                    set_field(&mut m, target, value, dot);
                }
            }
            m
        }
        "except" => {
            let mut m = items[i].json.object_with_room(0);
            for key in list(ctx, items, "excludeFields")? {
                if dot {
                    lodash::unset(&mut m, &key);
                } else {
                    let k = plain_key(&m, &key);
                    if let Value::Object(o) = &mut m {
                        o.shift_remove(&k);
                    }
                }
            }
            m
        }
        "none" => Value::Object(Map::new()),
        other => return Err(EngineError::node(format!("The include option \"{other}\" is not known!"))),
    };
    if !obj.is_object() {
        obj = Value::Object(Map::new());
    }
    for (name, value) in fields {
        set_field(&mut obj, name, value, dot);
    }
    let mut it = item_from(obj, i);
    let keep_binary = if v >= 3.4 { !options.strip_binary.unwrap_or(false) && include != "none" } else { options.include_binary.unwrap_or(false) };
    if keep_binary {
        it.binary = items[i].binary.clone();
    }
    Ok(it)
}

/// Set v1/v2: `values.{boolean,number,string}[]` in that order, `keepOnlySet`.
fn execute_v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let mut input = ctx.input(0).as_ref().clone();
    if input.is_empty() {
        input.push(Item::new(serde_json::json!({})));
    }
    let v2 = ctx.version() >= 2.0;
    let values = ctx.raw("values").cloned().unwrap_or(Value::Null);
    let mut out = Vec::with_capacity(input.len());
    for i in 0..input.len() {
        let keep_only = match ctx.raw("keepOnlySet") {
            Some(r) => truthy(&ctx.resolve_in(&input, r, i)?),
            None => false,
        };
        let options = match ctx.raw("options") {
            Some(r) => ctx.resolve_in(&input, r, i)?,
            None => Value::Null,
        };
        let dot = options.get("dotNotation") != Some(&Value::Bool(false));
        let mut obj = if keep_only { Value::Object(Map::new()) } else { input[i].json.object_with_room(3) };
        for ty in ["boolean", "number", "string"] {
            for entry in values.get(ty).and_then(Value::as_array).into_iter().flatten() {
                let name = match entry.get("name") {
                    Some(n) => js_to_string(Some(&ctx.resolve_in(&input, n, i)?)),
                    None => "propertyName".to_string(),
                };
                let raw = entry.get("value").cloned().unwrap_or(match ty {
                    "boolean" => Value::Bool(false),
                    "number" => Value::from(0),
                    _ => Value::String(String::new()),
                });
                let v = ctx.resolve_in(&input, &raw, i)?;
                let v = match ty {
                    "boolean" => Value::Bool(truthy(&v)),
                    "number" if v2 => match &v {
                        Value::String(s) if !js_to_number(&v).is_nan() => num_value(super::conditions::str_to_number(s)),
                        _ => v,
                    },
                    _ => v,
                };
                set_field(&mut obj, name, v, dot);
            }
        }
        let mut it = item_from(obj, i);
        if !keep_only {
            it.binary = input[i].binary.clone();
        }
        out.push(it);
    }
    Ok(NodeOutput::one(out))
}
