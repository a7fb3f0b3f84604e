//! Postgres (`n8n-nodes-base.postgres` 2.x) and MySQL (`n8n-nodes-base.mySql`
//! 2.x): execute query with parameters, insert, update, upsert, select with
//! conditions, sort and limit, delete/truncate/drop, as n8n's nodes build
//! their SQL. The text is formatted with its values escaped ([`format`]),
//! as pg-promise and mysql2 do, and runs over the text protocol, so values
//! come back as the server writes them and are typed as node-postgres and
//! mysql2 type them ([`postgres`], [`mysql`]). Connections go to the
//! SSRF-checked addresses of the credential's host, from a pool per
//! execution ([`Pools`]) that closes when the execution ends.

pub mod format;
mod mysql;
mod postgres;

use std::any::Any;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};
use crate::nodes::{js_string, NodeContext, NodeOutput};
use crate::run::Env;

/// One statement's outcome: its rows, and whether it answered with a result set.
#[derive(Debug, Default)]
pub(crate) struct Statement {
    pub rows: Vec<Map<String, Value>>,
    pub has_rows: bool,
}

/// How a large number (Postgres BIGINT/NUMERIC, MySQL BIGINT) comes out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Numbers {
    Text,
    Numbers,
}

/// The pools of one execution and the runtime that drives them; closed when
/// the execution ends (the engine's `Env` drops this). Type-erased: they are
/// made, and their closing code reached, only by a database node's run, so
/// an engine that never runs one (every function but the executor validates
/// or exchanges OAuth codes with one) links no database client by dropping it.
#[derive(Default)]
pub struct Pools(Mutex<Option<Box<dyn Any + Send>>>);

struct Inner {
    rt: tokio::runtime::Runtime,
    pg: HashMap<String, sqlx::PgPool>,
    my: HashMap<String, sqlx::MySqlPool>,
    /// The connection each pool last lent, kept for the execution's next
    /// node (nodes run one at a time, so one is enough).
    held: HashMap<String, Conn>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // a graceful goodbye to each server; a pool dropped unclosed just cuts its sockets
        let held: Vec<Conn> = std::mem::take(&mut self.held).into_values().collect();
        let (pg, my) = (&self.pg, &self.my);
        self.rt.block_on(async {
            for c in held {
                let _ = match c {
                    Conn::Pg(c) => c.close().await,
                    Conn::My(c) => c.close().await,
                };
            }
            for p in pg.values() {
                p.close().await;
            }
            for p in my.values() {
                p.close().await;
            }
        });
    }
}

/// A database connection of this node run (from the execution's pool).
pub(crate) enum Conn {
    Pg(sqlx::pool::PoolConnection<sqlx::Postgres>),
    My(sqlx::pool::PoolConnection<sqlx::MySql>),
}

/// The credential's settings that make a pool (a different credential or
/// limit makes another one).
fn pool_key(kind: &str, credential: &Value, options: &Value) -> String {
    format!("{kind}:{credential}:{}", options.get("connectionTimeout").or(options.get("connectionTimeoutMillis")).map(js_string).unwrap_or_default())
}

impl Pools {
    /// Runs `f` with a connection of the credential's pool (made on first use)
    /// and the runtime that drives it.
    fn with<R>(&self, env: &Env, kind: &str, credential: &Value, options: &Value, f: impl FnOnce(&tokio::runtime::Runtime, &mut Conn) -> Result<R>) -> Result<R> {
        let mut guard = self.0.lock().map_err(|_| EngineError::Host("database pools unavailable".into()))?;
        if guard.is_none() {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| EngineError::Host(format!("cannot start the database runtime: {e}")))?;
            *guard = Some(Box::new(Inner { rt, pg: HashMap::new(), my: HashMap::new(), held: HashMap::new() }));
        }
        let inner = guard.as_mut().and_then(|b| b.downcast_mut::<Inner>()).ok_or_else(|| EngineError::Host("database pools unavailable".into()))?;
        let key = pool_key(kind, credential, options);
        // a pool belongs to the runtime it is made in
        let handle = inner.rt.handle().clone();
        let _entered = handle.enter();
        let mut conn = match inner.held.remove(&key) {
            Some(c) => c,
            None => Self::lend(env, inner, kind, &key, credential, options)?,
        };
        let out = f(&inner.rt, &mut conn);
        // after a failure the pool has it back (and checks it before lending it again)
        if out.is_ok() {
            inner.held.insert(key, conn);
        }
        out
    }

    /// A connection from the credential's pool (made on first use).
    fn lend(env: &Env, inner: &mut Inner, kind: &str, key: &str, credential: &Value, options: &Value) -> Result<Conn> {
        let key = key.to_owned();
        Ok(match kind {
            "postgres" => {
                if !inner.pg.contains_key(&key) {
                    let pool = postgres::pool(env, credential, options)?;
                    inner.pg.insert(key.clone(), pool);
                }
                let pool = inner.pg.get(&key).cloned().ok_or_else(|| EngineError::Host("no pool".into()))?;
                Conn::Pg(block(env, &inner.rt, async move { pool.acquire().await })?)
            }
            _ => {
                if !inner.my.contains_key(&key) {
                    let pool = mysql::pool(env, credential, options)?;
                    inner.my.insert(key.clone(), pool);
                }
                let pool = inner.my.get(&key).cloned().ok_or_else(|| EngineError::Host("no pool".into()))?;
                Conn::My(block(env, &inner.rt, async move { pool.acquire().await })?)
            }
        })
    }
}

/// Drives a database future to its end, within the execution's deadline and
/// stopped by its cancel.
pub(crate) fn block<T>(env: &Env, rt: &tokio::runtime::Runtime, fut: impl std::future::Future<Output = std::result::Result<T, sqlx::Error>>) -> Result<T> {
    let cancel = env.cancel.clone();
    let limit = crate::nodes::net::remaining(env, Duration::from_secs(3600));
    rt.block_on(async move {
        let watch = async {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if cancel.is_canceled() {
                    return;
                }
            }
        };
        tokio::select! {
            r = tokio::time::timeout(limit, fut) => match r {
                Ok(r) => r.map_err(db_error),
                Err(_) => Err(EngineError::node("The query timed out (the execution's time is up)")),
            },
            _ = watch => Err(EngineError::Canceled),
        }
    })
}

/// A database failure as n8n's nodes report it: the server's message, what
/// it adds (detail, hint); connection failures in plain words.
pub(crate) fn db_error(e: sqlx::Error) -> EngineError {
    if let Some(d) = e.as_database_error() {
        let description = d.try_downcast_ref::<sqlx::postgres::PgDatabaseError>().and_then(|p| p.detail().or(p.hint()).map(str::to_owned));
        return EngineError::Node { message: d.message().to_owned(), description, http_code: None };
    }
    let text = e.to_string();
    let lower = text.to_lowercase();
    let message = if lower.contains("refused") {
        "Connection refused"
    } else if lower.contains("timed out") || matches!(e, sqlx::Error::PoolTimedOut) {
        "Connection timed out"
    } else if lower.contains("password") || lower.contains("authentication") || lower.contains("access denied") {
        "Authentication failed"
    } else if lower.contains("tls") || lower.contains("certificate") || lower.contains("ssl") {
        "The database's TLS connection could not be set up"
    } else {
        "The database connection failed"
    };
    EngineError::node_with(message, text)
}

impl Conn {
    /// Runs the text (one or more statements) and returns each statement's outcome.
    pub(crate) fn run(&mut self, env: &Env, rt: &tokio::runtime::Runtime, sql: &str, numbers: Numbers, version: f64) -> Result<Vec<Statement>> {
        match self {
            Conn::Pg(c) => postgres::run(env, rt, c, sql, numbers),
            Conn::My(c) => mysql::run(env, rt, c, sql, numbers, version),
        }
    }
}

/// A query and the values its placeholders take.
#[derive(Debug, Clone)]
struct Query {
    text: String,
    values: Vec<Value>,
}

/// Which database a node speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Postgres,
    MySql,
}

impl Dialect {
    fn kind(self) -> &'static str {
        match self {
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mySql",
        }
    }
    fn name(self, s: &str) -> String {
        match self {
            Dialect::Postgres => format::pg_name(s),
            Dialect::MySql => format::my_name(s),
        }
    }
    fn literal(self, v: &Value) -> String {
        match self {
            Dialect::Postgres => format::pg_literal(v),
            Dialect::MySql => format::my_literal(v),
        }
    }
    /// The query's text with its values written in.
    fn text(self, q: &Query) -> Result<String> {
        match self {
            Dialect::Postgres => format::pg_format(&q.text, &q.values),
            Dialect::MySql => Ok(format::my_format(&q.text, &q.values)),
        }
    }
}

pub fn postgres_node(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    run_node(ctx, Dialect::Postgres)
}

pub fn mysql_node(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    run_node(ctx, Dialect::MySql)
}

/// The connection test of a `postgres` or `mySql` credential: connect, log in, `SELECT 1`.
pub(crate) fn test(env: &Env, cred_type: &str, data: &Value) -> std::result::Result<String, String> {
    let pools = Pools::default();
    let kind = if cred_type == "postgres" { "postgres" } else { "mySql" };
    pools
        .with(env, kind, data, &json!({}), |rt, conn| conn.run(env, rt, "SELECT 1", Numbers::Text, 2.0))
        .map(|_| "Connection successful!".to_owned())
        .map_err(|e| match e {
            EngineError::Node { message, description: Some(d), .. } => format!("{message}: {d}"),
            other => other.to_string(),
        })
}

/// A resource locator's value (or a plain value) as text.
fn locator(v: &Value) -> String {
    match v {
        Value::Object(o) if o.contains_key("__rl") || o.contains_key("value") => o.get("value").map(js_string).unwrap_or_default(),
        other => js_string(other),
    }
}

fn run_node(ctx: &mut NodeContext<'_>, dialect: Dialect) -> Result<NodeOutput> {
    let version = ctx.version();
    let credential = ctx.credential(dialect.kind())?;
    if credential.get("sshTunnel").and_then(Value::as_bool) == Some(true) {
        return Err(EngineError::node_with("SSH tunnels are not supported yet", "Reach the database directly (turn off SSH Tunnel in the credential)."));
    }
    let operation = ctx.param_str("operation", 0, "insert")?;
    let options = ctx.param("options", 0, json!({}))?;
    if options.get("detailedOutput").and_then(Value::as_bool) == Some(true) {
        return Err(EngineError::node("Detailed Output is not supported yet: turn it off to get the rows"));
    }
    let numbers = if options.get("largeNumbersOutput").and_then(Value::as_str) == Some("numbers") { Numbers::Numbers } else { Numbers::Text };
    let batching = options.get("queryBatching").and_then(Value::as_str).unwrap_or(if dialect == Dialect::MySql { "multiple" } else { "single" }).to_owned();
    let input: Vec<Item> = ctx.input(0).as_ref().clone();
    let items = if options.get("replaceEmptyStrings").and_then(Value::as_bool) == Some(true) { replace_empty_strings(&input) } else { input.clone() };
    let env = ctx.env;
    let pools = &env.sql;
    let continue_on_fail = ctx.continue_on_fail();
    // everything of this node run on one connection: schema lookups, queries, a transaction
    pools.with(env, dialect.kind(), &credential, &options, |rt, conn| {
        let mut run = |sql: &str| conn.run(env, rt, sql, numbers, version);
        let queries = build_queries(ctx, dialect, &operation, &items, version, &mut run)?;
        execute(dialect, &queries, &items, &operation, &batching, version, continue_on_fail, &mut run)
    })
    .map(NodeOutput::one)
}

fn replace_empty_strings(items: &[Item]) -> Vec<Item> {
    items
        .iter()
        .map(|it| {
            let mut it = it.clone();
            if let Some(o) = it.json.as_object_mut() {
                for v in o.values_mut() {
                    if v.as_str() == Some("") {
                        *v = Value::Null;
                    }
                }
            }
            it
        })
        .collect()
}

/// The columns of a table (`column_name`, `data_type`, `is_nullable`, `udt_name`).
fn table_schema(dialect: Dialect, schema: &str, table: &str, run: &mut dyn FnMut(&str) -> Result<Vec<Statement>>) -> Result<Vec<Map<String, Value>>> {
    let sql = match dialect {
        Dialect::Postgres => format::pg_format(
            "SELECT column_name, data_type, is_nullable, udt_name, column_default FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2",
            &[json!(schema), json!(table)],
        )?,
        Dialect::MySql => format::my_format("SELECT COLUMN_NAME AS column_name, DATA_TYPE AS data_type, IS_NULLABLE AS is_nullable FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?", &[json!(table)]),
    };
    Ok(run(&sql)?.into_iter().flat_map(|s| s.rows).collect())
}

/// n8n's check of an item against the table: every key a column, no null
/// in a column that takes none.
fn check_item(item: &Map<String, Value>, columns: &[Map<String, Value>], i: usize) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    for (k, v) in item {
        let Some(col) = columns.iter().find(|c| c.get("column_name").and_then(Value::as_str) == Some(k)) else {
            return Err(EngineError::node(format!("Column '{k}' does not exist in selected table [item {i}]")));
        };
        if v.is_null() && col.get("is_nullable").and_then(Value::as_str) != Some("YES") {
            return Err(EngineError::node(format!("Column '{k}' is not nullable [item {i}]")));
        }
    }
    Ok(())
}

/// Postgres array columns take JS arrays as Postgres array text (`{a,b}`); JSON columns JSON text.
fn pg_column_values(item: &mut Map<String, Value>, columns: &[Map<String, Value>]) {
    for col in columns {
        let (Some(name), Some(ty)) = (col.get("column_name").and_then(Value::as_str), col.get("data_type").and_then(Value::as_str)) else { continue };
        let Some(v) = item.get_mut(name) else { continue };
        if ty == "ARRAY" {
            if let Value::Array(a) = v {
                let parts: Vec<String> = a.iter().map(|x| match x {
                    Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
                    Value::Null => "NULL".into(),
                    other => js_string(other),
                }).collect();
                *v = Value::String(format!("{{{}}}", parts.join(",")));
            }
        } else if (ty == "json" || ty == "jsonb") && !v.is_null() && !v.is_string() {
            *v = Value::String(v.to_string());
        }
    }
}

/// The item to write: the input item (auto-map), or the values set on the node.
fn item_to_write(ctx: &mut NodeContext<'_>, items: &[Item], i: usize, version: f64, postgres: bool) -> Result<(String, Map<String, Value>)> {
    let mapper = postgres && version >= 2.2;
    let mode = if mapper { ctx.param_str("columns.mappingMode", i, "defineBelow")? } else { ctx.param_str("dataMode", i, "autoMapInputData")? };
    let item = match mode.as_str() {
        "autoMapInputData" => items.get(i).and_then(|it| it.json.as_object().cloned()).unwrap_or_default(),
        _ if mapper => ctx.param("columns.value", i, json!({}))?.as_object().cloned().unwrap_or_default(),
        _ => {
            let values = ctx.param("valuesToSend", i, json!({}))?;
            let mut m = Map::new();
            for v in values.get("values").and_then(Value::as_array).into_iter().flatten() {
                m.insert(v.get("column").map(js_string).unwrap_or_default(), v.get("value").cloned().unwrap_or(Value::Null));
            }
            m
        }
    };
    Ok((mode, item))
}

/// `WHERE` from n8n's "Select Rows" conditions.
fn where_clause(dialect: Dialect, where_values: &Value, combine: &str, i: usize) -> Result<String> {
    let clauses: Vec<&Value> = where_values.get("values").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
    if clauses.is_empty() {
        return Ok(String::new());
    }
    let joiner = if combine == "OR" { " OR " } else { " AND " };
    let mut parts = vec![];
    for (n, c) in clauses.iter().enumerate() {
        let column = c.get("column").map(locator).unwrap_or_default();
        let condition = c.get("condition").and_then(Value::as_str).unwrap_or("equal");
        let op = match condition {
            "equal" => "=",
            other => other,
        };
        if !["=", "!=", "LIKE", ">", "<", ">=", "<=", "IS NULL", "IS NOT NULL"].contains(&op) {
            return Err(EngineError::node(format!("Unknown operator '{op}' in entry {} of 'Select Rows' [item {i}]", n + 1)));
        }
        let mut value = c.get("value").cloned().unwrap_or(Value::Null);
        if [">", "<", ">=", "<="].contains(&op) {
            let num = value.as_f64().or_else(|| js_string(&value).trim().parse().ok());
            value = match num {
                Some(x) => json!(x),
                None => return Err(EngineError::node(format!("Operator in entry {} of 'Select Rows' works with numbers, but value {} is not a number [item {i}]", n + 1, js_string(&value)))),
            };
        }
        let rhs = if op.starts_with("IS") { String::new() } else { format!(" {}", dialect.literal(&value)) };
        parts.push(format!("{} {op}{rhs}", dialect.name(&column)));
    }
    Ok(format!(" WHERE {}", parts.join(joiner)))
}

fn order_by(dialect: Dialect, sort: &Value) -> String {
    let rules: Vec<String> = sort
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| format!("{} {}", dialect.name(&r.get("column").map(locator).unwrap_or_default()), if r.get("direction").and_then(Value::as_str) == Some("DESC") { "DESC" } else { "ASC" }))
        .collect();
    if rules.is_empty() { String::new() } else { format!(" ORDER BY {}", rules.join(", ")) }
}

/// `RETURNING` of the output columns (Postgres).
fn returning(ctx: &mut NodeContext<'_>, i: usize) -> Result<String> {
    let cols = ctx.param("options.outputColumns", i, json!(["*"]))?;
    let cols: Vec<String> = cols.as_array().map(|a| a.iter().map(js_string).collect()).unwrap_or_default();
    if cols.is_empty() || cols.iter().any(|c| c == "*") {
        return Ok(" RETURNING *".into());
    }
    Ok(format!(" RETURNING {}", cols.iter().map(|c| format::pg_name(c)).collect::<Vec<_>>().join(",")))
}

/// `{{ … }}` chunks of a text (n8n's `getResolvables`).
fn resolvables(text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"\{\{[\s\S]*?\}\}").expect("a valid pattern");
    re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
}

/// n8n's `stringToArray`: comma-separated, trimmed, empty entries dropped.
fn string_to_array(s: &str) -> Vec<Value> {
    s.split(',').filter(|e| !e.is_empty()).map(|e| Value::String(e.trim().to_owned())).collect()
}

/// The query of Execute Query: an expression, or text whose `{{ … }}` chunks are resolved.
fn query_text(ctx: &mut NodeContext<'_>, i: usize) -> Result<String> {
    let mut query = ctx.param_str("query", i, "")?;
    for r in resolvables(&query) {
        let v = ctx.resolve(&Value::String(format!("={r}")), i)?;
        query = query.replacen(&r, &js_string(&v), 1);
    }
    Ok(query)
}

/// Query parameters of Execute Query, as each node reads them. Postgres:
/// before 2.5 the raw list split at commas, an entry with `{{ … }}` its
/// resolved value; from 2.5 each `{{ … }}` resolved to text, which is one
/// value when it is JSON and else split at commas (values are text). MySQL:
/// the resolved option split at commas (or a list); from 2.3 numeric text as numbers.
fn query_values(ctx: &mut NodeContext<'_>, dialect: Dialect, version: f64, i: usize) -> Result<Vec<Value>> {
    if dialect == Dialect::MySql {
        let values = match ctx.param("options.queryReplacement", i, json!([]))? {
            Value::String(s) if s.is_empty() => vec![],
            Value::String(s) => s.split(',').map(|e| Value::String(e.trim().to_owned())).collect(),
            Value::Array(a) => a,
            Value::Null => vec![],
            _ => return Err(EngineError::node("Query Replacement must be a string of comma-separated values, or an array of values")),
        };
        if version >= 2.3 {
            return Ok(values
                .into_iter()
                .map(|v| {
                    let n = crate::nodes::conditions::js_to_number(&v);
                    if n != 0.0 && !n.is_nan() { crate::nodes::conditions::num_value(n) } else { v }
                })
                .collect());
        }
        return Ok(values);
    }
    let raw = ctx.node.parameters.pointer("/options/queryReplacement").cloned();
    match raw {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Number(n)) => Ok(vec![Value::String(n.to_string())]),
        Some(Value::String(s)) if s.is_empty() => Ok(vec![]),
        Some(Value::String(s)) if version >= 2.5 => {
            let text = s.trim_start_matches('=');
            let found = resolvables(text);
            if found.is_empty() {
                return Ok(string_to_array(text));
            }
            let mut out = vec![];
            for r in found {
                let v = ctx.resolve(&Value::String(format!("={r}")), i)?;
                let text = match &v {
                    Value::Null => "null".to_owned(),
                    Value::String(s) => s.clone(),
                    Value::Object(_) | Value::Array(_) => v.to_string(),
                    other => js_string(other),
                };
                if serde_json::from_str::<Value>(text.trim()).is_ok() {
                    out.push(Value::String(text));
                } else {
                    out.extend(string_to_array(&text));
                }
            }
            Ok(out)
        }
        Some(Value::String(s)) => {
            let text = s.trim_start_matches('=');
            let mut out = vec![];
            for entry in text.split(',').filter(|e| !e.is_empty()).map(str::trim) {
                let found = resolvables(entry);
                if found.is_empty() {
                    out.push(Value::String(entry.to_owned()));
                }
                for r in found {
                    out.push(ctx.resolve(&Value::String(format!("={r}")), i)?);
                }
            }
            Ok(out)
        }
        Some(Value::Array(a)) => a.iter().map(|v| ctx.resolve(v, i)).collect(),
        Some(_) => Err(EngineError::node("Query Parameters must be a string of comma-separated values or an array of values")),
    }
}

/// n8n's "Treat query parameters in single quotes as text": `'$n'` takes value n as a string.
fn quoted_as_text(query: &str, mut values: Vec<Value>) -> (String, Vec<Value>) {
    let re = regex::Regex::new(r"'\$(\d+)'").expect("a valid pattern");
    for c in re.captures_iter(query) {
        if let Some(v) = c[1].parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|k| values.get_mut(k)) {
            *v = Value::String(js_string(v));
        }
    }
    (re.replace_all(query, "$$$1").into_owned(), values)
}

/// "Combine Conditions": a parameter of its own (Postgres), or one of MySQL's options.
fn combine_conditions(ctx: &mut NodeContext<'_>, pg: bool, i: usize) -> Result<String> {
    let option = if pg { "AND".to_owned() } else { ctx.param_str("options.combineConditions", i, "AND")? };
    ctx.param_str("combineConditions", i, &option)
}

/// The queries of the node's operation, one per item (MySQL's insert with
/// "Multiple Queries": one for all items, as n8n does).
fn build_queries(ctx: &mut NodeContext<'_>, dialect: Dialect, operation: &str, items: &[Item], version: f64, run: &mut dyn FnMut(&str) -> Result<Vec<Statement>>) -> Result<Vec<Query>> {
    let pg = dialect == Dialect::Postgres;
    let mut queries = vec![];
    let mut schemas: HashMap<(String, String), Vec<Map<String, Value>>> = HashMap::new();
    let count = items.len();
    if operation == "insert" && dialect == Dialect::MySql && ctx.param_str("options.queryBatching", 0, "multiple")? == "multiple" && !items.is_empty() {
        return Ok(vec![mysql_insert_all(ctx, items)?]);
    }
    for i in 0..count {
        let schema = if pg { locator(&ctx.param("schema", i, json!({"value": "public"}))?) } else { String::new() };
        let schema = if pg && schema.is_empty() { "public".to_owned() } else { schema };
        let table = locator(&ctx.param("table", i, json!(""))?);
        let target = if pg { format!("{}.{}", format::pg_name(&schema), format::pg_name(&table)) } else { format::my_name(&table) };
        let q = match operation {
            "executeQuery" => {
                let query = query_text(ctx, i)?;
                let values = query_values(ctx, dialect, version, i)?;
                if pg {
                    // `'$1'` as text: the quotes go, the value is written as a string
                    let (query, values) = if ctx.param_bool("options.treatQueryParametersInSingleQuotesAsText", i, false)? { quoted_as_text(&query, values) } else { (query, values) };
                    Query { text: query, values }
                } else {
                    let (text, values) = format::my_dollar_params(&query, &values, version >= 2.5)?;
                    Query { text, values }
                }
            }
            "select" => {
                let cols = ctx.param("options.outputColumns", i, json!(["*"]))?;
                let cols: Vec<String> = cols.as_array().map(|a| a.iter().map(js_string).collect()).unwrap_or_default();
                let what = if cols.is_empty() || cols.iter().any(|c| c == "*") { "*".to_owned() } else { cols.iter().map(|c| dialect.name(c)).collect::<Vec<_>>().join(", ") };
                let distinct = if !pg && ctx.param_bool("options.selectDistinct", i, false)? { "SELECT DISTINCT" } else { "SELECT" };
                let combine = combine_conditions(ctx, pg, i)?;
                let mut text = format!("{distinct} {what} FROM {target}{}{}", where_clause(dialect, &ctx.param("where", i, json!({}))?, &combine, i)?, order_by(dialect, &ctx.param("sort", i, json!({}))?));
                if !ctx.param_bool("returnAll", i, false)? {
                    let limit = ctx.param_f64("limit", i, 50.0)?;
                    text.push_str(&format!(" LIMIT {}", limit.max(0.0) as u64));
                }
                Query { text, values: vec![] }
            }
            "deleteTable" => {
                let command = ctx.param_str("deleteCommand", i, "truncate")?;
                let cascade = pg && ctx.param_bool("options.cascade", i, false)?;
                let text = match command.as_str() {
                    "drop" => format!("DROP TABLE IF EXISTS {target}{}", if cascade { " CASCADE" } else { "" }),
                    "truncate" => format!("TRUNCATE TABLE {target}{}{}", if pg && ctx.param_bool("restartSequences", i, false)? { " RESTART IDENTITY" } else { "" }, if cascade { " CASCADE" } else { "" }),
                    "delete" => {
                        let combine = combine_conditions(ctx, pg, i)?;
                        format!("DELETE FROM {target}{}", where_clause(dialect, &ctx.param("where", i, json!({}))?, &combine, i)?)
                    }
                    _ => return Err(EngineError::node(format!("Invalid delete command, only drop, delete and truncate are supported [item {i}]"))),
                };
                Query { text, values: vec![] }
            }
            "insert" | "update" | "upsert" => {
                let (_, mut item) = item_to_write(ctx, items, i, version, pg)?;
                let key = (schema.clone(), table.clone());
                if !schemas.contains_key(&key) {
                    let cols = table_schema(dialect, &schema, &table, run)?;
                    schemas.insert(key.clone(), cols);
                }
                let columns = schemas.get(&key).cloned().unwrap_or_default();
                if pg {
                    pg_column_values(&mut item, &columns);
                }
                check_item(&item, &columns, i)?;
                match operation {
                    "insert" => insert_query(ctx, dialect, &target, &item, i)?,
                    "update" => update_query(ctx, dialect, &target, &schema, &table, item, version, i, run)?,
                    _ => upsert_query(ctx, dialect, &target, item, version, i)?,
                }
            }
            other => return Err(EngineError::node(format!("The operation '{other}' is not supported"))),
        };
        queries.push(q);
    }
    Ok(queries)
}

fn insert_query(ctx: &mut NodeContext<'_>, dialect: Dialect, target: &str, item: &Map<String, Value>, i: usize) -> Result<Query> {
    let names = item.keys().map(|k| dialect.name(k)).collect::<Vec<_>>().join(if dialect == Dialect::Postgres { "," } else { ", " });
    let values = item.values().map(|v| dialect.literal(v)).collect::<Vec<_>>().join(",");
    let skip = ctx.param_bool("options.skipOnConflict", i, false)?;
    Ok(match dialect {
        Dialect::Postgres => Query { text: format!("INSERT INTO {target}({names}) VALUES({values}){}{}", if skip { " ON CONFLICT DO NOTHING" } else { "" }, returning(ctx, i)?), values: vec![] },
        Dialect::MySql => {
            let priority = ctx.param_str("options.priority", i, "")?;
            Query { text: format!("INSERT {priority} {} INTO {target} ({names}) VALUES ({values});", if skip { "IGNORE" } else { "" }), values: vec![] }
        }
    })
}

/// MySQL's insert of every item in one statement (n8n's "Multiple Queries").
fn mysql_insert_all(ctx: &mut NodeContext<'_>, items: &[Item]) -> Result<Query> {
    let table = locator(&ctx.param("table", 0, json!(""))?);
    let mode = ctx.param_str("dataMode", 0, "autoMapInputData")?;
    let rows: Vec<Map<String, Value>> = (0..items.len()).map(|i| item_to_write(ctx, items, i, 2.0, false).map(|(_, m)| m)).collect::<Result<_>>()?;
    let mut columns: Vec<String> = vec![];
    for r in &rows {
        for k in r.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let _ = mode;
    let priority = ctx.param_str("options.priority", 0, "")?;
    let ignore = if ctx.param_bool("options.skipOnConflict", 0, false)? { "IGNORE" } else { "" };
    let tuples: Vec<String> = rows.iter().map(|r| format!("({})", columns.iter().map(|c| format::my_literal(r.get(c).unwrap_or(&Value::Null))).collect::<Vec<_>>().join(","))).collect();
    Ok(Query {
        text: format!("INSERT {priority} {ignore} INTO {} ({}) VALUES {}", format::my_name(&table), columns.iter().map(|c| format::my_name(c)).collect::<Vec<_>>().join(", "), tuples.join(",")),
        values: vec![],
    })
}

#[allow(clippy::too_many_arguments)]
fn update_query(ctx: &mut NodeContext<'_>, dialect: Dialect, target: &str, schema: &str, table: &str, item: Map<String, Value>, version: f64, i: usize, run: &mut dyn FnMut(&str) -> Result<Vec<Statement>>) -> Result<Query> {
    let pg = dialect == Dialect::Postgres;
    let mapper = pg && version >= 2.2;
    let mut item = item;
    let match_columns: Vec<String> = if mapper {
        ctx.param("columns.matchingColumns", i, json!([]))?.as_array().map(|a| a.iter().map(js_string).collect()).unwrap_or_default()
    } else {
        vec![ctx.param_str("columnToMatchOn", i, "")?]
    };
    if !mapper {
        let mode = ctx.param_str("dataMode", i, "autoMapInputData")?;
        let column = match_columns.first().cloned().unwrap_or_default();
        if mode == "autoMapInputData" {
            if item.get(&column).is_none_or(|v| v.is_null() || v.as_str() == Some("")) {
                return Err(EngineError::node("Column to match on not found in input item. Add a column to match on or set the 'Data Mode' to 'Define Below' to define the value to match on."));
            }
        } else {
            let v = ctx.param("valueToMatchOn", i, json!(""))?;
            item.insert(column, v);
        }
    }
    if mapper {
        // n8n looks for the row first and says so when there is none
        let conds: Vec<String> = match_columns.iter().map(|c| format!("{}={}", format::pg_name(c), format::pg_literal(item.get(c).unwrap_or(&Value::Null)))).collect();
        let exists = run(&format!("SELECT EXISTS(SELECT 1 FROM {target} WHERE {})", conds.join(" AND ")))?;
        let found = exists.first().and_then(|s| s.rows.first()).and_then(|r| r.get("exists")).and_then(Value::as_bool).unwrap_or(false);
        if !found {
            let described: Vec<String> = match_columns.iter().map(|c| format!("{c}={}", item.get(c).map(js_string).unwrap_or_default())).collect();
            return Err(EngineError::node_with(
                "The row you are trying to update doesn't exist",
                format!("No rows matching the provided values ({}) were found in the table \"{table}\".", described.join(", ")),
            ));
        }
        let _ = schema;
    }
    let updates: Vec<String> = item.iter().filter(|(k, _)| !match_columns.contains(k)).map(|(k, v)| format!("{} = {}", dialect.name(k), dialect.literal(v))).collect();
    if updates.is_empty() {
        return Err(EngineError::node("Add values to update to the input item or set the 'Data Mode' to 'Define Below' to define the values to update."));
    }
    let condition: Vec<String> = match_columns.iter().map(|c| format!("{} = {}", dialect.name(c), dialect.literal(item.get(c).unwrap_or(&Value::Null)))).collect();
    let text = format!("UPDATE {target} SET {} WHERE {}", updates.join(", "), condition.join(" AND "));
    Ok(Query { text: if pg { format!("{text}{}", returning(ctx, i)?) } else { text }, values: vec![] })
}

fn upsert_query(ctx: &mut NodeContext<'_>, dialect: Dialect, target: &str, item: Map<String, Value>, version: f64, i: usize) -> Result<Query> {
    let pg = dialect == Dialect::Postgres;
    let match_columns: Vec<String> = if pg && version >= 2.2 {
        ctx.param("columns.matchingColumns", i, json!([]))?.as_array().map(|a| a.iter().map(js_string).collect()).unwrap_or_default()
    } else {
        vec![ctx.param_str("columnToMatchOn", i, "")?]
    };
    let mut item = item;
    if !(pg && version >= 2.2) && ctx.param_str("dataMode", i, "autoMapInputData")? != "autoMapInputData" {
        let v = ctx.param("valueToMatchOn", i, json!(""))?;
        item.insert(match_columns.first().cloned().unwrap_or_default(), v);
    }
    let names = item.keys().map(|k| dialect.name(k)).collect::<Vec<_>>().join(",");
    let values = item.values().map(|v| dialect.literal(v)).collect::<Vec<_>>().join(",");
    let updates: Vec<String> = item
        .keys()
        .filter(|k| !match_columns.contains(k))
        .map(|k| if pg { format!("{} = EXCLUDED.{}", format::pg_name(k), format::pg_name(k)) } else { format!("{} = VALUES({})", format::my_name(k), format::my_name(k)) })
        .collect();
    let text = match dialect {
        Dialect::Postgres => {
            let action = if updates.is_empty() { "DO NOTHING".to_owned() } else { format!("DO UPDATE SET {}", updates.join(", ")) };
            format!("INSERT INTO {target}({names}) VALUES({values}) ON CONFLICT ({}) {action}{}", match_columns.iter().map(|c| format::pg_name(c)).collect::<Vec<_>>().join(","), returning(ctx, i)?)
        }
        Dialect::MySql => format!("INSERT INTO {target}({names}) VALUES({values}) ON DUPLICATE KEY UPDATE {}", updates.join(", ")),
    };
    Ok(Query { text, values: vec![] })
}

/// Whether every statement of the text is a SELECT (n8n: then no rows is no items).
fn is_select(text: &str) -> bool {
    let no_comments = regex::Regex::new(r"(?s)/\*.*?\*/").map(|re| re.replace_all(text, "").into_owned()).unwrap_or_else(|_| text.to_owned());
    no_comments
        .replace('\n', "")
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.starts_with("--"))
        .all(|s| s.to_lowercase().starts_with("select"))
}

/// Runs the queries as the node's "Query Batching" says and makes the items.
#[allow(clippy::too_many_arguments)]
fn execute(dialect: Dialect, queries: &[Query], items: &[Item], operation: &str, batching: &str, version: f64, continue_on_fail: bool, run: &mut dyn FnMut(&str) -> Result<Vec<Statement>>) -> Result<Vec<Item>> {
    let texts: Vec<String> = queries.iter().map(|q| dialect.text(q)).collect::<Result<_>>()?;
    let empty = |text: &str, i: usize| -> Vec<Item> {
        // n8n's old versions answer `success` for anything but a select; newer ones look at the statement
        let select = if (dialect == Dialect::Postgres && version < 2.3) || (dialect == Dialect::MySql && version < 2.2) { operation == "select" } else { is_select(text) };
        if select { vec![] } else { vec![item_from(json!({"success": true}), i)] }
    };
    let mut out = vec![];
    if texts.is_empty() {
        return Ok(out);
    }
    match batching {
        "single" | "multiple" => {
            let joined = texts.iter().map(|t| t.trim().trim_end_matches(';').to_owned()).collect::<Vec<_>>().join(";");
            match run(&joined) {
                Ok(statements) => {
                    for (n, s) in statements.into_iter().enumerate() {
                        // MySQL's answer to a statement without rows (an OkPacket) is no item
                        for r in s.rows {
                            out.push(item_from(Value::Object(r), n.min(items.len().saturating_sub(1))));
                        }
                    }
                    if out.is_empty() {
                        out = empty(&joined, 0);
                    }
                }
                Err(e) if continue_on_fail => out.push(item_from(json!({"message": e.to_string(), "error": error_json(&e, &joined)}), 0)),
                Err(e) => return Err(with_query(e, &joined)),
            }
        }
        "independently" | "transaction" => {
            let tx = batching == "transaction";
            if tx {
                run("BEGIN")?;
            }
            for (i, text) in texts.iter().enumerate() {
                match run(text) {
                    Ok(statements) => {
                        let rows: Vec<Item> = statements.into_iter().flat_map(|s| s.rows).map(|r| item_from(Value::Object(r), i)).collect();
                        if rows.is_empty() {
                            out.extend(empty(text, i));
                        } else {
                            out.extend(rows);
                        }
                    }
                    Err(e) => {
                        if tx {
                            let _ = run("ROLLBACK");
                        }
                        if !continue_on_fail {
                            return Err(with_query(e, text));
                        }
                        let item = items.get(i).map(|it| Value::clone(&it.json)).unwrap_or(Value::Null);
                        out.push(item_from(json!({"message": e.to_string(), "item": item, "error": error_json(&e, text)}), i));
                        if tx {
                            return Ok(out);
                        }
                    }
                }
            }
            if tx {
                run("COMMIT")?;
            }
        }
        other => return Err(EngineError::node(format!("Query Batching '{other}' is not supported"))),
    }
    Ok(out)
}

/// A failed query's error says which query failed (n8n's "Failed query: …").
fn with_query(e: EngineError, text: &str) -> EngineError {
    match e {
        EngineError::Node { message, description: None, http_code } => EngineError::Node { message, description: Some(format!("Failed query: {text}")), http_code },
        other => other,
    }
}

fn error_json(e: &EngineError, text: &str) -> Value {
    match e {
        EngineError::Node { message, description, .. } => json!({"message": message, "description": description.clone().unwrap_or_else(|| format!("Failed query: {text}"))}),
        other => json!({"message": other.to_string()}),
    }
}
