//! MySQL (and MariaDB) connections and answers: a pool to the credential's
//! checked address, TLS when the credential turns it on, the session in UTC;
//! values typed as mysql2 types them with n8n's options (big numbers and
//! decimals as text, dates as the server writes them from 2.1 on, JSON
//! parsed, binary as a Buffer's JSON).

use std::time::Duration;

use futures::TryStreamExt;
use serde_json::{json, Map, Value};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions, MySqlSslMode, MySqlValueRef};
use sqlx::{Column, Either, Row, TypeInfo, ValueRef};

use super::{block, Numbers, Statement};
use crate::error::{EngineError, Result};
use crate::nodes::js_string;
use crate::run::Env;

pub(super) fn pool(env: &Env, credential: &Value, options: &Value) -> Result<sqlx::MySqlPool> {
    let host = credential.get("host").map(js_string).filter(|h| !h.trim().is_empty()).unwrap_or_else(|| "localhost".into());
    let port = credential.get("port").and_then(|p| p.as_u64().or_else(|| js_string(p).parse().ok())).unwrap_or(3306) as u16;
    let addr = crate::nodes::net::checked_addrs(env, &host, port)?.into_iter().next().ok_or_else(|| EngineError::node("Host not found"))?;
    let ssl = credential.get("ssl").and_then(Value::as_bool).unwrap_or(false);
    let mut opts = MySqlConnectOptions::new()
        .host(&addr.ip().to_string())
        .port(port)
        .username(&credential.get("user").map(js_string).unwrap_or_default())
        .password(&credential.get("password").map(js_string).unwrap_or_default())
        .charset("utf8mb4")
        .timezone(Some(String::from("+00:00")))
        .pipes_as_concat(false)
        .ssl_mode(if ssl { MySqlSslMode::Required } else { MySqlSslMode::Disabled });
    if let Some(db) = credential.get("database").map(js_string).filter(|d| !d.is_empty()) {
        opts = opts.database(&db);
    }
    if let Some(ca) = credential.get("caCertificate").map(js_string).filter(|c| ssl && !c.trim().is_empty()) {
        opts = opts.ssl_ca_from_pem(ca.into_bytes());
    }
    let millis = options.get("connectionTimeoutMillis").or(credential.get("connectTimeout")).and_then(Value::as_f64).filter(|m| *m > 0.0).unwrap_or(10_000.0);
    let limit = options.get("connectionLimit").and_then(Value::as_u64).unwrap_or(10).clamp(1, 20) as u32;
    Ok(MySqlPoolOptions::new().max_connections(limit).min_connections(0).acquire_timeout(crate::nodes::net::remaining(env, Duration::from_millis(millis as u64))).connect_lazy_with(opts))
}

pub(super) fn run(env: &Env, rt: &tokio::runtime::Runtime, conn: &mut sqlx::MySqlConnection, sql: &str, numbers: Numbers, version: f64) -> Result<Vec<Statement>> {
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
                        let v = row.try_get_raw(i).map(|v| value(v, numbers, version)).unwrap_or(Value::Null);
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

fn value(v: MySqlValueRef<'_>, numbers: Numbers, version: f64) -> Value {
    if v.is_null() {
        return Value::Null;
    }
    let ty = v.type_info().name().to_uppercase();
    match <&[u8] as sqlx::Decode<sqlx::MySql>>::decode(v) {
        Ok(bytes) => typed(&ty, bytes, numbers, version),
        Err(_) => Value::Null,
    }
}

fn typed(ty: &str, bytes: &[u8], numbers: Numbers, version: f64) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let base = ty.trim_end_matches(" UNSIGNED");
    match base {
        // TINYINT(1) is reported as BOOLEAN; mysql2 gives its number
        "TINYINT" | "BOOLEAN" | "BOOL" | "SMALLINT" | "MEDIUMINT" | "INT" | "INTEGER" | "YEAR" => text.parse::<i64>().map(Value::from).unwrap_or_else(|_| json!(text)),
        // mysql2 without big number support: a JavaScript number, precision as its
        "BIGINT" => match numbers {
            Numbers::Numbers => text.parse::<f64>().map(crate::nodes::conditions::num_value).unwrap_or_else(|_| json!(text)),
            Numbers::Text => json!(text),
        },
        "FLOAT" | "DOUBLE" | "REAL" => text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Value::Number).unwrap_or_else(|| json!(text)),
        "JSON" => serde_json::from_str(&text).unwrap_or_else(|_| json!(text)),
        // before 2.1 mysql2 made Dates of these (instants in UTC)
        "DATETIME" | "TIMESTAMP" if version < 2.1 => chrono::NaiveDateTime::parse_from_str(&text, "%Y-%m-%d %H:%M:%S%.f")
            .map(|d| json!(d.and_utc().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()))
            .unwrap_or_else(|_| json!(text)),
        "DATE" if version < 2.1 => chrono::NaiveDate::parse_from_str(&text, "%Y-%m-%d").map(|d| json!(format!("{}T00:00:00.000Z", d.format("%Y-%m-%d")))).unwrap_or_else(|_| json!(text)),
        "BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB" | "BINARY" | "VARBINARY" | "BIT" | "GEOMETRY" => json!({"type": "Buffer", "data": bytes}),
        _ => json!(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_values_are_typed_as_mysql2_types_them_for_n8n() {
        assert_eq!(typed("INT", b"7", Numbers::Text, 2.4), json!(7));
        assert_eq!(typed("INT UNSIGNED", b"7", Numbers::Text, 2.4), json!(7));
        assert_eq!(typed("BIGINT", b"9007199254740993", Numbers::Text, 2.4), json!("9007199254740993"));
        assert_eq!(typed("BIGINT", b"12", Numbers::Numbers, 2.4), json!(12));
        assert_eq!(typed("DECIMAL", b"1.50", Numbers::Numbers, 2.4), json!("1.50"));
        assert_eq!(typed("DATETIME", b"2024-03-01 10:20:30", Numbers::Text, 2.4), json!("2024-03-01 10:20:30"));
        assert_eq!(typed("DATETIME", b"2024-03-01 10:20:30", Numbers::Text, 2.0), json!("2024-03-01T10:20:30.000Z"));
        assert_eq!(typed("JSON", b"{\"a\":1}", Numbers::Text, 2.4), json!({"a": 1}));
        assert_eq!(typed("VARBINARY", b"Hi", Numbers::Text, 2.4), json!({"type": "Buffer", "data": [72, 105]}));
    }
}
