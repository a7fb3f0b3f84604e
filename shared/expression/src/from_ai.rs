//! `$fromAI(key, description, type, default)` placeholders in node parameters,
//! parsed as n8n's `from-ai-parse-utils.ts` does: an AI tool node's schema is
//! built from them (the agent then supplies the values, which `$fromAI` reads
//! at run time through [`crate::DataProxy::from_ai_input`]).

use serde_json::{json, Map, Value};

/// The type a `$fromAI` placeholder asks for (default `string`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromAiType {
    String,
    Number,
    Boolean,
    Json,
}

impl FromAiType {
    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "string" => Some(FromAiType::String),
            "number" => Some(FromAiType::Number),
            "boolean" => Some(FromAiType::Boolean),
            "json" => Some(FromAiType::Json),
            _ => None,
        }
    }
}

/// One `$fromAI(…)` call's literal arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct FromAiArgument {
    pub key: String,
    pub description: Option<String>,
    pub arg_type: FromAiType,
    pub default_value: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FromAiError {
    #[error("Failed to parse $fromAI arguments: {args}: Error: Invalid type: {found}")]
    InvalidType { args: String, found: String },
    #[error("Unbalanced parentheses while parsing $fromAI call: {rest}")]
    Unbalanced { rest: String },
}

/// Every `$fromAI(` call in `s` (case-insensitive, as n8n's `/\$fromAI\s*\(\s*/gi`).
pub fn extract_from_ai_calls(s: &str) -> Result<Vec<FromAiArgument>, FromAiError> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while let Some(start) = find_call(&chars, i) {
        let mut cur = start;
        let mut quote: Option<char> = None;
        let mut depth = 1;
        let mut args = String::new();
        while cur < chars.len() && depth > 0 {
            let c = chars[cur];
            if let Some(q) = quote {
                if c == '\\' && cur + 1 < chars.len() {
                    args.push(c);
                    args.push(chars[cur + 1]);
                    cur += 2;
                    continue;
                }
                if c == q {
                    quote = None;
                }
                args.push(c);
            } else {
                match c {
                    '"' | '\'' | '`' => quote = Some(c),
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                if depth > 0 || c != ')' {
                    args.push(c);
                }
            }
            cur += 1;
        }
        if depth != 0 {
            return Err(FromAiError::Unbalanced { rest: chars[start..].iter().collect() });
        }
        out.push(parse_arguments(&args)?);
        i = cur;
    }
    Ok(out)
}

/// Index just after `$fromAI\s*(\s*` at or after `from`.
fn find_call(chars: &[char], from: usize) -> Option<usize> {
    const NAME: [char; 7] = ['$', 'f', 'r', 'o', 'm', 'a', 'i'];
    let mut i = from;
    while i + NAME.len() <= chars.len() {
        if chars[i..i + NAME.len()].iter().zip(NAME).all(|(c, n)| c.to_ascii_lowercase() == n) {
            let mut j = i + NAME.len();
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            if chars.get(j) == Some(&'(') {
                j += 1;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                return Some(j);
            }
        }
        i += 1;
    }
    None
}

fn parse_arguments(args_string: &str) -> Result<FromAiArgument, FromAiError> {
    // split on commas outside quotes; a backslash escapes the next char
    let mut args: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut escape = false;
    for c in args_string.chars() {
        if escape {
            cur.push(c);
            escape = false;
            continue;
        }
        if c == '\\' {
            escape = true;
            continue;
        }
        if matches!(c, '"' | '\'' | '`') {
            match quote {
                None => quote = Some(c),
                Some(q) if q == c => quote = None,
                _ => {}
            }
            cur.push(c);
            continue;
        }
        if c == ',' && quote.is_none() {
            args.push(cur.trim().to_string());
            cur.clear();
            continue;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        args.push(cur.trim().to_string());
    }
    let clean: Vec<String> = args
        .iter()
        .map(|a| {
            let t = a.trim();
            let quoted = t.len() >= 2
                && ((t.starts_with('\'') && t.ends_with('\''))
                    || (t.starts_with('`') && t.ends_with('`'))
                    || (t.starts_with('"') && t.ends_with('"')));
            if quoted {
                t[1..t.len() - 1].replace("\\'", "'").replace("\\`", "`").replace("\\\"", "\"").replace("\\\\", "\\")
            } else {
                t.to_string()
            }
        })
        .collect();
    let raw_type = clean.get(2).cloned().unwrap_or_else(|| "string".into());
    let arg_type = FromAiType::parse(&raw_type)
        .ok_or_else(|| FromAiError::InvalidType { args: args_string.to_string(), found: raw_type.clone() })?;
    Ok(FromAiArgument {
        key: clean.first().cloned().unwrap_or_default(),
        description: clean.get(1).cloned(),
        arg_type,
        default_value: clean.get(3).map(|v| parse_default(v, arg_type)),
    })
}

/// n8n's `parseDefaultValue`: strings stay strings, `true`/`false` and
/// numbers as such, anything else as JSON when it parses.
fn parse_default(v: &str, t: FromAiType) -> Value {
    let lower = v.to_ascii_lowercase();
    match t {
        FromAiType::String => return Value::String(v.to_string()),
        FromAiType::Boolean if lower == "true" || lower == "false" => return Value::Bool(lower == "true"),
        FromAiType::Number => {
            let n = crate::js_string_to_number(v);
            if !n.is_nan() {
                return crate::fast::num_to_json(n);
            }
        }
        _ => {}
    }
    serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()))
}

/// Every `$fromAI` call in a node's parameters (n8n's `traverseNodeParameters`).
pub fn from_ai_arguments(parameters: &Value) -> Result<Vec<FromAiArgument>, FromAiError> {
    let mut out = Vec::new();
    collect(parameters, &mut out)?;
    Ok(out)
}

fn collect(v: &Value, out: &mut Vec<FromAiArgument>) -> Result<(), FromAiError> {
    match v {
        Value::String(s) => out.extend(extract_from_ai_calls(s)?),
        Value::Array(a) => a.iter().try_for_each(|x| collect(x, out))?,
        Value::Object(m) => m.values().try_for_each(|x| collect(x, out))?,
        _ => {}
    }
    Ok(())
}

/// The JSON Schema of a tool whose inputs are these placeholders (what n8n
/// builds with zod: `json` is a non-empty object or array; a default makes
/// the key optional). The first of a repeated key wins.
pub fn tool_schema(args: &[FromAiArgument]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for a in args {
        if props.contains_key(&a.key) {
            continue;
        }
        let mut p = match a.arg_type {
            FromAiType::String => json!({"type": "string"}),
            FromAiType::Number => json!({"type": "number"}),
            FromAiType::Boolean => json!({"type": "boolean"}),
            FromAiType::Json => json!({"anyOf": [
                {"type": "object", "minProperties": 1, "additionalProperties": true},
                {"type": "array", "minItems": 1}
            ]}),
        };
        if let (Some(d), Value::Object(m)) = (&a.description, &mut p) {
            m.insert("description".into(), Value::String(d.clone()));
        }
        match (&a.default_value, &mut p) {
            (Some(d), Value::Object(m)) => {
                m.insert("default".into(), d.clone());
            }
            _ => required.push(Value::String(a.key.clone())),
        }
        props.insert(a.key.clone(), p);
    }
    json!({"type": "object", "properties": props, "required": required})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> FromAiArgument {
        let mut v = extract_from_ai_calls(s).unwrap();
        assert_eq!(v.len(), 1, "{s}");
        v.remove(0)
    }

    #[test]
    fn parses_like_n8n() {
        let a = one("={{ $fromAI('email', 'The recipient, e.g. \"a@b.c\"', 'string') }}");
        assert_eq!(a.key, "email");
        assert_eq!(a.description.as_deref(), Some("The recipient, e.g. \"a@b.c\""));
        assert_eq!(a.arg_type, FromAiType::String);
        assert_eq!(a.default_value, None);
        let a = one("{{ $fromAI(\"n\", `count, (max 5)`, 'NUMBER', 3) }}");
        assert_eq!((a.key.as_str(), a.arg_type, a.default_value), ("n", FromAiType::Number, Some(json!(3))));
        assert_eq!(a.description.as_deref(), Some("count, (max 5)"));
        assert_eq!(one("$fromai('b', '', 'boolean', 'true')").default_value, Some(json!(true)));
        assert_eq!(one("$fromAI('j', '', 'json', '{\"a\": 1}')").default_value, Some(json!({"a": 1})));
        assert_eq!(one("$fromAI('s', '', 'string', 42)").default_value, Some(json!("42")));
        assert_eq!(one("$fromAI ( 'k' )").arg_type, FromAiType::String);
        assert_eq!(one("$fromAI('it\\'s')").key, "it's");
        let two = extract_from_ai_calls("{{ $fromAI('a') }} and {{ $fromAI('b', 'x') }}").unwrap();
        assert_eq!(two.iter().map(|a| a.key.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(extract_from_ai_calls("no calls here").unwrap().is_empty());
    }

    #[test]
    fn errors_like_n8n() {
        let e = extract_from_ai_calls("$fromAI('a', 'b', 'date')").unwrap_err();
        assert_eq!(e.to_string(), "Failed to parse $fromAI arguments: 'a', 'b', 'date': Error: Invalid type: date");
        let e = extract_from_ai_calls("$fromAI('a', 'b'").unwrap_err();
        assert_eq!(e.to_string(), "Unbalanced parentheses while parsing $fromAI call: 'a', 'b'");
    }

    #[test]
    fn walks_parameters_and_builds_a_schema() {
        let params = json!({
            "url": "=https://x/{{ $fromAI('id', 'record id', 'number') }}",
            "options": {"body": [{"v": "={{ $fromAI('note', 'free text', 'string', 'none') }}"}], "n": 3},
        });
        let args = from_ai_arguments(&params).unwrap();
        assert_eq!(
            tool_schema(&args),
            json!({"type": "object", "properties": {
                "id": {"type": "number", "description": "record id"},
                "note": {"type": "string", "description": "free text", "default": "none"},
            }, "required": ["id"]})
        );
    }
}
