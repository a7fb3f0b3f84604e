//! Query text with its values written in, as n8n's database nodes send it:
//! pg-promise's formatting for Postgres (`$1`, `$1:name`, `$1:raw`,
//! `$1:value`, `$1:json`, `$1:csv`), mysql2's for MySQL (`?` values, `??`
//! identifiers). Values are escaped for the literal they land in: strings
//! quoted with quotes doubled (Postgres runs with
//! `standard_conforming_strings` on, set at connect), MySQL strings also
//! with backslashes escaped, so no value can end its literal whatever the
//! server's escape mode.

use serde_json::Value;

use crate::error::{EngineError, Result};
use crate::nodes::js_string;

/// A Postgres literal for `v` (pg-promise's `as.format` of one value).
pub fn pg_literal(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => js_string(v),
        Value::String(s) => pg_quote(s),
        // pg-promise writes arrays as ARRAY constructors
        Value::Array(a) => format!("array[{}]", a.iter().map(pg_literal).collect::<Vec<_>>().join(",")),
        Value::Object(_) => pg_quote(&v.to_string()),
    }
}

fn pg_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A Postgres identifier (`"a""b"`); `*` stays as it is.
pub fn pg_name(name: &str) -> String {
    if name == "*" {
        return name.into();
    }
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// pg-promise's `:name` of a value: a name, the names of an array, the keys of an object.
fn pg_names(v: &Value) -> Result<String> {
    match v {
        Value::String(s) => Ok(pg_name(s)),
        Value::Array(a) => Ok(a.iter().map(|x| pg_name(&js_string(x))).collect::<Vec<_>>().join(",")),
        Value::Object(o) => Ok(o.keys().map(|k| pg_name(k)).collect::<Vec<_>>().join(",")),
        other => Ok(pg_name(&js_string(other))),
    }
}

/// `query` with pg-promise's `$n[:modifier]` variables replaced by `values`.
/// A variable past the values fails as in pg-promise.
pub fn pg_format(query: &str, values: &[Value]) -> Result<String> {
    let mut out = String::with_capacity(query.len());
    let b = query.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let n: usize = query[start..j].parse().map_err(|_| EngineError::node("Invalid query variable"))?;
            // the modifier: `:name` and friends, or pg-promise's short forms
            let rest = &query[j..];
            let (modifier, len) = match rest {
                r if r.starts_with(":name") => ("name", 5),
                r if r.starts_with(":alias") => ("alias", 6),
                r if r.starts_with(":raw") => ("raw", 4),
                r if r.starts_with(":value") => ("value", 6),
                r if r.starts_with(":json") => ("json", 5),
                r if r.starts_with(":csv") => ("csv", 4),
                r if r.starts_with(":list") => ("csv", 5),
                r if r.starts_with('~') => ("name", 1),
                r if r.starts_with('^') => ("raw", 1),
                r if r.starts_with('#') => ("value", 1),
                _ => ("", 0),
            };
            let v = n.checked_sub(1).and_then(|k| values.get(k)).ok_or_else(|| {
                EngineError::node_with(format!("Variable ${n} out of range. Parameters array length: {}", values.len()), "Add a value for every $n of the query under Options > Query Parameters.")
            })?;
            out.push_str(&match modifier {
                "name" | "alias" => pg_names(v)?,
                "raw" => js_string(v),
                "value" => js_string(v).replace('\'', "''"),
                "json" => pg_quote(&v.to_string()),
                "csv" => match v {
                    Value::Array(a) => a.iter().map(pg_literal).collect::<Vec<_>>().join(","),
                    Value::Object(o) => o.values().map(pg_literal).collect::<Vec<_>>().join(","),
                    other => pg_literal(other),
                },
                _ => pg_literal(v),
            });
            i = j + len;
        } else {
            let ch = query[i..].chars().next().unwrap_or_default();
            out.push(ch);
            i += ch.len_utf8().max(1);
        }
    }
    Ok(out)
}

/// A MySQL literal for `v` (mysql2's `escape`): strings quoted and escaped,
/// arrays as lists, nested arrays as grouped lists, objects as JSON text.
pub fn my_literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => js_string(v),
        Value::String(s) => my_quote(s),
        Value::Array(a) => a.iter().map(|x| if let Value::Array(inner) = x { format!("({})", inner.iter().map(my_literal).collect::<Vec<_>>().join(", ")) } else { my_literal(x) }).collect::<Vec<_>>().join(", "),
        Value::Object(_) => my_quote(&v.to_string()),
    }
}

fn my_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{1a}' => out.push_str("\\Z"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// A MySQL identifier: `a`.`b` for a dotted name, backticks doubled.
pub fn my_name(name: &str) -> String {
    name.split('.').map(|p| format!("`{}`", p.trim().trim_matches('`').replace('`', "``"))).collect::<Vec<_>>().join(".")
}

/// `query` with mysql2's placeholders filled in order: `??` a name, `?` a value.
/// Placeholders beyond the values stay as written, as in mysql2.
pub fn my_format(query: &str, values: &[Value]) -> String {
    let mut out = String::with_capacity(query.len());
    let mut next = values.iter();
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '?' {
            out.push(c);
            continue;
        }
        let name = chars.peek() == Some(&'?');
        if name {
            chars.next();
        }
        match next.next() {
            Some(v) if name => out.push_str(&my_name(&js_string(v))),
            Some(v) => out.push_str(&my_literal(v)),
            None => out.push_str(if name { "??" } else { "?" }),
        }
    }
    out
}

/// n8n's MySQL `$n` / `$n:name` parameters (2.5: not inside quotes) turned
/// into mysql2 placeholders: the query with `?` and the values in order.
pub fn my_dollar_params(query: &str, replacements: &[Value], skip_quoted: bool) -> Result<(String, Vec<Value>)> {
    let re = regex::Regex::new(r"\$(\d+)(:name)?").map_err(|e| EngineError::node(e.to_string()))?;
    let mut out = String::with_capacity(query.len());
    let mut values = vec![];
    let mut last = 0;
    for m in re.captures_iter(query) {
        let whole = m.get(0).expect("a match");
        let before = &query[..whole.start()];
        if skip_quoted && (before.matches('\'').count() % 2 == 1 || before.matches('"').count() % 2 == 1) {
            continue;
        }
        let n: usize = m[1].parse().unwrap_or(0);
        let v = n.checked_sub(1).and_then(|k| replacements.get(k)).ok_or_else(|| {
            EngineError::node(format!("Parameter ${n} referenced in query but no replacement value provided at index {n}"))
        })?;
        out.push_str(&query[last..whole.start()]);
        if m.get(2).is_some() {
            out.push_str(&my_name(&js_string(v)));
        } else {
            out.push('?');
            values.push(v.clone());
        }
        last = whole.end();
    }
    out.push_str(&query[last..]);
    Ok((out, values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pg_values_cannot_leave_their_literal() {
        let q = pg_format("SELECT * FROM $1:name.$2:name WHERE a = $3 AND b IN ($4:csv) AND c = $5", &[json!("public"), json!("my\"table"), json!("x'); DROP TABLE t; --"), json!([1, "two"]), json!(null)]).unwrap();
        assert_eq!(q, "SELECT * FROM \"public\".\"my\"\"table\" WHERE a = 'x''); DROP TABLE t; --' AND b IN (1,'two') AND c = null");
        assert_eq!(pg_format("SELECT $1:json, $1, $2^, $3~", &[json!({"k": "it's"}), json!("now()"), json!(["a", "b"])]).unwrap(), "SELECT '{\"k\":\"it''s\"}', '{\"k\":\"it''s\"}', now(), \"a\",\"b\"");
        assert_eq!(pg_format("SELECT '$1', $10", &(1..=10).map(|n| json!(n)).collect::<Vec<_>>()).unwrap(), "SELECT '1', 10");
        let e = pg_format("SELECT $3", &[json!(1)]).unwrap_err();
        assert!(e.to_string().contains("Variable $3 out of range"), "{e}");
        assert_eq!(pg_format("SELECT 'é' || $1", &[json!("ü\\")]).unwrap(), "SELECT 'é' || 'ü\\'");
    }

    #[test]
    fn mysql_values_cannot_leave_their_literal_in_either_escape_mode() {
        assert_eq!(my_format("SELECT * FROM ?? WHERE a = ? AND b IN (?) AND c = ?", &[json!("db.t`x"), json!("x\\' OR 1=1 -- "), json!([1, "b"]), json!(null)]), "SELECT * FROM `db`.`t``x` WHERE a = 'x\\\\'' OR 1=1 -- ' AND b IN (1, 'b') AND c = NULL");
        assert_eq!(my_format("INSERT INTO t VALUES ?", &[json!([[1, "a"], [2, "b"]])]), "INSERT INTO t VALUES (1, 'a'), (2, 'b')");
        assert_eq!(my_format("SELECT ?, ?", &[json!(true)]), "SELECT true, ?");
        let (q, v) = my_dollar_params("SELECT $1:name FROM t WHERE a = $2 AND b = '$3' AND c = $1", &[json!("col"), json!(5), json!("x")], true).unwrap();
        assert_eq!((q.as_str(), v), ("SELECT `col` FROM t WHERE a = ? AND b = '$3' AND c = ?", vec![json!(5), json!("col")]));
        assert!(my_dollar_params("SELECT $4", &[json!(1)], true).is_err());
    }
}
