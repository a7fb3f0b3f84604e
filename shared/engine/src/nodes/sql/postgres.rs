//! Postgres connections and answers: a pool to the credential's checked
//! address, TLS as the credential says, the session in UTC with standard
//! strings; values typed as node-postgres types them (int8 and numeric as
//! text unless numbers are asked for, timestamps as ISO instants, json
//! parsed, bytea as a Buffer's JSON, arrays as lists).

use std::time::Duration;

use futures::TryStreamExt;
use serde_json::{json, Map, Value};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgSslMode, PgValueRef};
use sqlx::{Column, Either, Row, TypeInfo, ValueRef};

use super::{block, Numbers, Statement};
use crate::error::{EngineError, Result};
use crate::nodes::js_string;
use crate::run::Env;

pub(super) fn pool(env: &Env, credential: &Value, options: &Value) -> Result<sqlx::PgPool> {
    let host = credential.get("host").map(js_string).filter(|h| !h.trim().is_empty()).unwrap_or_else(|| "localhost".into());
    let port = credential.get("port").and_then(|p| p.as_u64().or_else(|| js_string(p).parse().ok())).unwrap_or(5432) as u16;
    let addr = crate::nodes::net::checked_addrs(env, &host, port)?.into_iter().next().ok_or_else(|| EngineError::node("Host not found"))?;
    let ssl = credential.get("ssl").and_then(Value::as_str).unwrap_or("disable");
    let insecure = credential.get("allowUnauthorizedCerts").and_then(Value::as_bool).unwrap_or(false);
    // A verified certificate names the host, so verification connects by name
    // (checked just above); everything else goes to the checked address.
    let (connect_to, mode) = match (ssl, insecure) {
        (_, true) => (addr.ip().to_string(), PgSslMode::Require),
        ("require", false) => (host.clone(), PgSslMode::VerifyFull),
        ("allow", false) => (addr.ip().to_string(), PgSslMode::Allow),
        _ => (addr.ip().to_string(), PgSslMode::Disable),
    };
    let opts = PgConnectOptions::new_without_pgpass()
        .host(&connect_to)
        .port(port)
        .username(&credential.get("user").map(js_string).unwrap_or_else(|| "postgres".into()))
        .password(&credential.get("password").map(js_string).unwrap_or_default())
        .database(&credential.get("database").map(js_string).unwrap_or_else(|| "postgres".into()))
        .ssl_mode(mode)
        .application_name("instance-ai")
        // values are written into the text: quotes double, backslashes stay literal
        .options([("standard_conforming_strings", "on"), ("TimeZone", "UTC"), ("DateStyle", "ISO, MDY")]);
    let timeout = options.get("connectionTimeout").and_then(Value::as_f64).filter(|s| *s > 0.0).map_or(Duration::from_secs(30), Duration::from_secs_f64);
    let max = credential.get("maxConnections").and_then(Value::as_u64).unwrap_or(10).clamp(1, 20) as u32;
    Ok(PgPoolOptions::new().max_connections(max).min_connections(0).acquire_timeout(crate::nodes::net::remaining(env, timeout)).connect_lazy_with(opts))
}

pub(super) fn run(env: &Env, rt: &tokio::runtime::Runtime, conn: &mut sqlx::PgConnection, sql: &str, numbers: Numbers) -> Result<Vec<Statement>> {
    let sql = sql.to_owned();
    block(env, rt, async move {
        let mut statements = vec![];
        let mut current = Statement::default();
        let mut stream = sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).fetch_many(&mut *conn);
        while let Some(next) = stream.try_next().await? {
            match next {
                Either::Left(_) => statements.push(std::mem::take(&mut current)),
                Either::Right(row) => {
                    current.has_rows = true;
                    let mut m = Map::new();
                    for (i, col) in row.columns().iter().enumerate() {
                        let v = row.try_get_raw(i).map(|v| value(v, numbers)).unwrap_or(Value::Null);
                        m.insert(col.name().to_owned(), v);
                    }
                    current.rows.push(m);
                }
            }
        }
        if current.has_rows {
            statements.push(current);
        }
        Ok(statements)
    })
}

/// One value as node-postgres gives it.
fn value(v: PgValueRef<'_>, numbers: Numbers) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    let ty = v.type_info().name().to_uppercase();
    let Ok(text) = v.as_str() else { return Value::Null };
    typed(&ty, text, numbers)
}

fn typed(ty: &str, text: &str, numbers: Numbers) -> Value {
    if let Some(element) = ty.strip_suffix("[]").or_else(|| ty.strip_prefix('_')) {
        return Value::Array(array_elements(text).into_iter().map(|e| e.map_or(Value::Null, |e| typed(element, &e, numbers))).collect());
    }
    match ty {
        "BOOL" => json!(text == "t" || text == "true"),
        "INT2" | "INT4" | "OID" | "SMALLINT" | "INTEGER" => text.parse::<i64>().map(Value::from).unwrap_or_else(|_| json!(text)),
        // node-postgres' parseInt / parseFloat: JavaScript numbers, precision as theirs
        "INT8" | "BIGINT" => match numbers {
            Numbers::Numbers => text.parse::<f64>().map(crate::nodes::conditions::num_value).unwrap_or_else(|_| json!(text)),
            Numbers::Text => json!(text),
        },
        "NUMERIC" => match numbers {
            Numbers::Numbers => text.parse::<f64>().map(crate::nodes::conditions::num_value).unwrap_or_else(|_| json!(text)),
            Numbers::Text => json!(text),
        },
        "FLOAT4" | "FLOAT8" | "REAL" | "DOUBLE PRECISION" => text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number).unwrap_or_else(|| json!(text)),
        "JSON" | "JSONB" => serde_json::from_str(text).unwrap_or_else(|_| json!(text)),
        "TIMESTAMPTZ" => instant(text, true).map(Value::String).unwrap_or_else(|| json!(text)),
        "TIMESTAMP" => instant(text, false).map(Value::String).unwrap_or_else(|| json!(text)),
        "DATE" => chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").map(|d| json!(format!("{}T00:00:00.000Z", d.format("%Y-%m-%d")))).unwrap_or_else(|_| json!(text)),
        "BYTEA" => {
            let bytes = text.strip_prefix("\\x").and_then(|h| hex::decode(h).ok()).unwrap_or_else(|| text.as_bytes().to_vec());
            json!({"type": "Buffer", "data": bytes})
        }
        _ => json!(text),
    }
}

/// A timestamp as JavaScript's `toISOString` writes it (UTC, milliseconds).
fn instant(text: &str, zoned: bool) -> Option<String> {
    let utc = if zoned {
        let t = if text.len() > 3 && matches!(text.as_bytes()[text.len() - 3], b'+' | b'-') { format!("{text}00") } else { text.to_owned() };
        chrono::DateTime::parse_from_str(&t, "%Y-%m-%d %H:%M:%S%.f%z").ok()?.with_timezone(&chrono::Utc)
    } else {
        chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").ok()?.and_utc()
    };
    Some(utc.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

/// The elements of a one-dimensional Postgres array literal (`{a,"b c",NULL}`).
fn array_elements(text: &str) -> Vec<Option<String>> {
    let inner = text.trim().strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or("");
    if inner.is_empty() {
        return vec![];
    }
    let mut out = vec![];
    let mut cur = String::new();
    let (mut quoted, mut was_quoted, mut escaped) = (false, false, false);
    for c in inner.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
        } else if c == '\\' && quoted {
            escaped = true;
        } else if c == '"' {
            quoted = !quoted;
            was_quoted = true;
        } else if c == ',' && !quoted {
            out.push(if !was_quoted && cur == "NULL" { None } else { Some(std::mem::take(&mut cur)) });
            cur.clear();
            was_quoted = false;
        } else {
            cur.push(c);
        }
    }
    out.push(if !was_quoted && cur == "NULL" { None } else { Some(cur) });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_values_are_typed_as_node_postgres_types_them() {
        assert_eq!(typed("INT4", "42", Numbers::Text), json!(42));
        assert_eq!(typed("INT8", "9007199254740993", Numbers::Text), json!("9007199254740993"));
        assert_eq!(typed("INT8", "12", Numbers::Numbers), json!(12));
        assert_eq!(typed("NUMERIC", "1.50", Numbers::Text), json!("1.50"));
        assert_eq!(typed("BOOL", "t", Numbers::Text), json!(true));
        assert_eq!(typed("JSONB", "{\"a\": [1]}", Numbers::Text), json!({"a": [1]}));
        assert_eq!(typed("TIMESTAMPTZ", "2024-03-01 10:20:30.5+00", Numbers::Text), json!("2024-03-01T10:20:30.500Z"));
        assert_eq!(typed("TIMESTAMPTZ", "2024-03-01 12:20:30+02", Numbers::Text), json!("2024-03-01T10:20:30.000Z"));
        assert_eq!(typed("TIMESTAMP", "2024-03-01 10:20:30", Numbers::Text), json!("2024-03-01T10:20:30.000Z"));
        assert_eq!(typed("DATE", "2024-03-01", Numbers::Text), json!("2024-03-01T00:00:00.000Z"));
        assert_eq!(typed("BYTEA", "\\x4869", Numbers::Text), json!({"type": "Buffer", "data": [72, 105]}));
        assert_eq!(typed("TEXT[]", "{a,\"b,c\",NULL,\"NULL\"}", Numbers::Text), json!(["a", "b,c", null, "NULL"]));
        assert_eq!(typed("INT4[]", "{1,2}", Numbers::Text), json!([1, 2]));
    }
}
