//! n8n's `validateFieldType`: a value checked against (and converted to) a
//! field type, as the Set node, resource mappers and typed inputs use it.

use serde_json::Value;

use super::conditions::{js_to_number, num_value, parse_bool};
use super::lodash::js_to_string;

/// n8n's `getValueDescription`: `'text'`, `'null'`, `array` or `object`.
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "'null'".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        other => format!("'{}'", js_to_string(Some(other))),
    }
}

/// The repairs n8n's `jsonParse(…, {acceptJSObject})` makes to JSON that
/// does not parse: `'` → `"`, bare keys quoted, trailing commas dropped.
pub fn repair_json(s: &str) -> String {
    static KEYS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static TRAILING: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let keys = KEYS.get_or_init(|| regex::Regex::new(r#"(['"])?([a-zA-Z0-9_]+)(['"])?:"#).expect("static regex"));
    let trailing = TRAILING.get_or_init(|| regex::Regex::new(r",\s*([\]}])").expect("static regex"));
    let t = s.replace('\'', "\"");
    let t = keys.replace_all(&t, "\"$2\":");
    let t = trailing.replace_all(&t, "$1");
    t.trim_end_matches(',').to_string()
}

/// `value` as field `name` of type `ty` (`string`, `number`, `boolean`,
/// `array`, `object`, `dateTime`, `time`, anything else passes): the
/// converted value, or n8n's error message. `strict` refuses values of
/// another JSON type; `parse_strings` turns values into strings for `string`
/// fields (else strings pass as they are). `null` is always valid. Dates come
/// out as ISO text in `timezone` (what a Luxon value serializes to).
pub fn validate(name: &str, value: &Value, ty: &str, strict: bool, parse_strings: bool, timezone: &str) -> Result<Value, String> {
    if value.is_null() {
        return Ok(Value::Null);
    }
    let error = || format!("'{name}' expects a {ty} but we got {}", describe(value));
    let check = |ok: bool| if ok { Ok(()) } else { Err(error()) };
    match ty.to_ascii_lowercase().as_str() {
        "string" => {
            if !parse_strings {
                return Ok(value.clone());
            }
            check(!strict || value.is_string())?;
            Ok(Value::String(match value {
                Value::String(s) => s.clone(),
                Value::Object(_) | Value::Array(_) => value.to_string(),
                other => js_to_string(Some(other)),
            }))
        }
        "number" => {
            check(!strict || value.is_number())?;
            let n = js_to_number(value);
            if n.is_nan() {
                return Err(error());
            }
            Ok(num_value(n))
        }
        "boolean" => {
            check(!strict || value.is_boolean())?;
            parse_bool(value).map(Value::Bool).ok_or_else(error)
        }
        "array" => {
            check(!strict || value.is_array())?;
            match value {
                Value::Array(_) => Ok(value.clone()),
                other => {
                    let s = js_to_string(Some(other));
                    serde_json::from_str::<Value>(&s).or_else(|_| serde_json::from_str(&s.replace('\'', "\""))).ok().filter(Value::is_array).ok_or_else(error)
                }
            }
        }
        "object" => {
            check(!strict || value.is_object() || value.is_array())?;
            match value {
                Value::Object(_) => Ok(value.clone()),
                Value::Array(_) => Err(error()),
                other => {
                    let s = js_to_string(Some(other));
                    serde_json::from_str::<Value>(&s)
                        .or_else(|_| serde_json::from_str::<Value>(&repair_json(&s)))
                        .ok()
                        // `jsonParse('null')` is null, which passes as an object
                        .filter(|v| v.is_object() || v.is_null())
                        .ok_or_else(error)
                }
            }
        }
        "datetime" => {
            let zone = super::dates::Zone::parse(timezone).unwrap_or(super::dates::Zone::Utc);
            let parsed = match value {
                Value::Number(n) => n.as_f64().map(|ms| super::dates::Dt::new(ms as i64, zone)),
                Value::String(s) => super::dates::parse_string(s, &zone),
                _ => None,
            };
            parsed.map(|d| Value::String(d.to_iso())).ok_or_else(|| {
                format!(
                    "{} <br/><br/> Consider using <a href=\"https://moment.github.io/luxon/api-docs/index.html#datetimefromformat\" target=\"_blank\"><code>DateTime.fromFormat</code></a> to work with custom date formats.",
                    error()
                )
            })
        }
        "time" => {
            static TIME: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
            let re = TIME.get_or_init(|| regex::Regex::new(r"^\d{2}:\d{2}(:\d{2})?((\-|\+)\d{4})?((\-|\+)\d{1,2}(:\d{2})?)?$").expect("static regex"));
            let s = js_to_string(Some(value));
            if re.is_match(&s) {
                Ok(Value::String(s))
            } else {
                Err(format!("'{name}' expects time (hh:mm:(:ss)) but we got {}.", describe(value)))
            }
        }
        _ => Ok(value.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conversions_and_messages_as_n8n() {
        let v = |value: Value, ty: &str, strict: bool| validate("f", &value, ty, strict, true, "UTC");
        assert_eq!(v(json!("12"), "number", false), Ok(json!(12)));
        assert_eq!(v(json!(""), "number", false), Ok(json!(0)), "Number('') is 0");
        assert_eq!(v(json!("12"), "number", true), Err("'f' expects a number but we got '12'".into()));
        assert_eq!(v(json!("abc"), "number", false), Err("'f' expects a number but we got 'abc'".into()));
        assert_eq!(v(json!("FALSE"), "boolean", false), Ok(json!(false)));
        assert_eq!(v(json!(2), "boolean", false), Err("'f' expects a boolean but we got '2'".into()));
        assert_eq!(v(json!({ "a": 1 }), "string", false), Ok(json!("{\"a\":1}")));
        assert_eq!(v(json!(5), "string", true), Err("'f' expects a string but we got '5'".into()));
        assert_eq!(validate("f", &json!(5), "string", true, false, "UTC"), Ok(json!(5)), "strings pass unless parsed");
        assert_eq!(v(json!("['a', 'b']"), "array", false), Ok(json!(["a", "b"])));
        assert_eq!(v(json!("{a: 1,}"), "object", false), Ok(json!({ "a": 1 })));
        assert_eq!(v(json!([1]), "object", false), Err("'f' expects a object but we got array".into()));
        assert_eq!(v(json!("2024-01-02T03:04:05Z"), "dateTime", false), Ok(json!("2024-01-02T03:04:05.000Z")));
        assert_eq!(v(json!("10:30"), "time", false), Ok(json!("10:30")));
        assert_eq!(v(json!("noon"), "time", false), Err("'f' expects time (hh:mm:(:ss)) but we got 'noon'.".into()));
        assert_eq!(v(Value::Null, "number", true), Ok(Value::Null));
        assert_eq!(v(json!({ "x": 1 }), "any", true), Ok(json!({ "x": 1 })));
    }
}
