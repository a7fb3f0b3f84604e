//! A small JSON Schema validator for tool inputs: the subset our tool
//! schemas use (`type`, `properties`, `required`, `additionalProperties`,
//! `enum`, `const`, `items`, `minItems`, `maxItems`, `minLength`, `maxLength`, `minimum`,
//! `maximum`, `oneOf`). Errors name
//! the path so the model can fix its call.

use serde_json::{json, Map, Value};

/// One member of a multi-action tool's `oneOf`: `action` fixed to `name`,
/// the action's own fields, closed to others.
pub fn action_variant(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    let mut props = Map::new();
    props.insert("action".into(), json!({"const": name, "description": description}));
    if let Value::Object(p) = properties {
        props.extend(p);
    }
    let mut req = vec![json!("action")];
    req.extend(required.iter().map(|r| json!(r)));
    json!({"type": "object", "properties": props, "required": req, "additionalProperties": false})
}

/// Paths of fields (entries of any `properties`, however deep: item
/// schemas, `oneOf` members) that carry no description; for the tests that
/// every field a model reads is described.
#[cfg(test)]
pub fn undescribed_fields(schema: &Value) -> Vec<String> {
    fn walk(s: &Value, path: &str, out: &mut Vec<String>) {
        let Some(o) = s.as_object() else { return };
        if let Some(props) = o.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                let at = format!("{path}.{name}");
                if !p.get("description").and_then(Value::as_str).is_some_and(|d| !d.trim().is_empty()) {
                    out.push(at.clone());
                }
                walk(p, &at, out);
            }
        }
        if let Some(items) = o.get("items") {
            walk(items, &format!("{path}[]"), out);
        }
        for (i, v) in o.get("oneOf").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let name = v.pointer("/properties/action/const").and_then(Value::as_str).map_or_else(|| i.to_string(), str::to_owned);
            walk(v, &format!("{path}<{name}>"), out);
        }
    }
    let mut out = Vec::new();
    walk(schema, "input", &mut out);
    out
}

/// Validates `value` against `schema`; the first problem, as a sentence.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "input")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(want: &str, v: &Value) -> bool {
    let got = type_name(v);
    got == want || (want == "number" && got == "integer")
}

fn check(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else { return Ok(()) };
    if let Some(variants) = s.get("oneOf").and_then(Value::as_array) {
        return check_one_of(variants, value, path);
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_matches(t, value) => {
            return Err(format!("{path} must be of type {t}, got {}", type_name(value)));
        }
        Some(Value::Array(ts)) if !ts.iter().filter_map(Value::as_str).any(|t| type_matches(t, value)) => {
            return Err(format!("{path} has the wrong type ({})", type_name(value)));
        }
        _ => {}
    }
    if let Some(c) = s.get("const") {
        if c != value {
            return Err(format!("{path} must be {c}"));
        }
    }
    if let Some(options) = s.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            return Err(format!("{path} must be one of {}", list.join(", ")));
        }
    }
    match value {
        Value::Object(obj) => check_object(s, obj, path)?,
        Value::Array(items) => {
            if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
                if (items.len() as u64) < min {
                    return Err(format!("{path} needs at least {min} item(s)"));
                }
            }
            if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
                if items.len() as u64 > max {
                    return Err(format!("{path} takes at most {max} item(s), got {}", items.len()));
                }
            }
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"))?;
                }
            }
        }
        Value::String(text) => {
            let len = text.chars().count() as u64;
            if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
                if len < min {
                    return Err(format!("{path} must not be empty"));
                }
            }
            if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
                if len > max {
                    return Err(format!("{path} must be at most {max} characters"));
                }
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
                if x < min {
                    return Err(format!("{path} must be at least {min}"));
                }
            }
            if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
                if x > max {
                    return Err(format!("{path} must be at most {max}"));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn check_object(s: &Map<String, Value>, obj: &Map<String, Value>, path: &str) -> Result<(), String> {
    let props = s.get("properties").and_then(Value::as_object);
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for r in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(r) {
                return Err(format!("{path}.{r} is required"));
            }
        }
    }
    for (k, v) in obj {
        match props.and_then(|p| p.get(k)) {
            Some(sub) => check(sub, v, &format!("{path}.{k}"))?,
            None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(format!("{path}.{k} is not a known field"));
            }
            None => {}
        }
    }
    Ok(())
}

/// Action-discriminated unions: pick the variant by its `const` discriminator
/// (so the error speaks about that action), else the first that validates.
fn check_one_of(variants: &[Value], value: &Value, path: &str) -> Result<(), String> {
    let discriminated = variants.iter().find_map(|v| {
        let props = v.get("properties")?.as_object()?;
        props.iter().find_map(|(k, p)| p.get("const").map(|c| (k.clone(), c.clone())))
    });
    if let (Some((key, _)), Some(obj)) = (discriminated, value.as_object()) {
        let given = obj.get(&key);
        for v in variants {
            if v.pointer(&format!("/properties/{key}/const")) == given && given.is_some() {
                return check(v, value, path);
            }
        }
        let allowed: Vec<String> =
            variants.iter().filter_map(|v| v.pointer(&format!("/properties/{key}/const"))).map(Value::to_string).collect();
        return Err(format!("{path}.{key} must be one of {}", allowed.join(", ")));
    }
    let mut first_err = None;
    for v in variants {
        match check(v, value, path) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| format!("{path} matches no allowed shape")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discriminated_unions_name_the_action() {
        let schema = json!({"oneOf": [
            {"type": "object", "properties": {"action": {"const": "a"}, "x": {"type": "string"}}, "required": ["action", "x"], "additionalProperties": false},
            {"type": "object", "properties": {"action": {"const": "b"}}, "required": ["action"], "additionalProperties": false}
        ]});
        assert!(validate(&schema, &json!({"action": "a", "x": "1"})).is_ok());
        assert_eq!(validate(&schema, &json!({"action": "a"})).unwrap_err(), "input.x is required");
        assert!(validate(&schema, &json!({"action": "c"})).unwrap_err().contains("one of \"a\", \"b\""));
        assert!(validate(&schema, &json!({"action": "b", "y": 1})).unwrap_err().contains("input.y is not a known field"));
        assert!(validate(&schema, &json!({"action": "a", "x": 5})).unwrap_err().contains("type string"));
    }

    #[test]
    fn bounds_on_numbers_and_strings() {
        let schema = json!({"type": "object", "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            "name": {"type": "string", "maxLength": 3}
        }});
        assert!(validate(&schema, &json!({"limit": 100, "name": "abc"})).is_ok());
        assert_eq!(validate(&schema, &json!({"limit": 0})).unwrap_err(), "input.limit must be at least 1");
        assert_eq!(validate(&schema, &json!({"limit": 101})).unwrap_err(), "input.limit must be at most 100");
        assert!(validate(&schema, &json!({"name": "abcd"})).unwrap_err().contains("at most 3 characters"));
    }
}
