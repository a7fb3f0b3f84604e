//! Data tables: typed tables per project, their rows in the DataRows table.
//!
//! **Layout.** A table's definition is one item in the Instance table
//! (`pk=dt#<id>, sk=dt`, listed per project through `gsi1pk=dts#<project>`)
//! holding the columns, a revision (column changes are conditional on it,
//! so two concurrent column edits cannot lose one another) and the row id
//! counter. Its name is claimed by a name item (`pk=project#<p>,
//! sk=dtname#<name>`) written with `attribute_not_exists` *before* the
//! table: of two racing creates or renames to one name, exactly one wins and
//! the loser has written nothing. (A claim whose writer died before writing
//! its table is recognised — its table does not carry the name — and taken
//! over after a grace period.) Rows live in one partition per table (`pk=dt#<table>,
//! sk=r#<zero-padded id>`), values keyed by *column id* (`c<columnId>`, ids a per-table sequence), so
//! renaming a column touches no row and a deleted column's values can never
//! reappear under a new column of the same name (they stay on the items,
//! ignored, until the row is next rewritten).
//!
//! **Queries.** Filters (`like`/`ilike` patterns, typed comparisons, dates)
//! are evaluated here, not by DynamoDB: a filtered or sorted query reads
//! the table's whole partition (paged Query, 1 MB per request), then
//! filters, sorts and pages in memory. An unfiltered query in id order reads
//! only the page it returns (plus a `Select=COUNT` pass for the total).
//!
//! **The size this serves well.** Up to roughly 10–50 thousand rows per
//! table of a couple of hundred bytes each (a row of five short columns is
//! ~190 B with keys and timestamps): a filtered query then reads 2–10 MB in
//! 2–10 Query pages of 1 MB, tens to a few hundred milliseconds in AWS, at
//! `table size / 4 KB` read units (strongly consistent, so a query sees the
//! insert that preceded it; eventually consistent reads would halve it).
//! Past that, time and cost grow linearly with the table: at 100k rows a
//! filtered query reads ~19 MB (~20 sequential requests, ~4,700 RCU, on the
//! order of one to two seconds in Lambda, plus the memory to hold the rows),
//! and every row of a table shares one partition's throughput (3,000 RCU /
//! 1,000 WCU per second, so ~a query every 1.5 s at 100k rows before
//! throttling). Nothing breaks or truncates; it gets slower and costlier per
//! query. The next steps for large tables: spread rows over N partition
//! shards read in parallel (time / N, throughput × N), then per-column index
//! items for selective filters (or export to a real query engine). Inserts
//! stay cheap at any size: 1 definition read + 1 counter update +
//! ⌈rows/25⌉ BatchWriteItem requests per call. (Against moto every Query
//! page costs time proportional to the whole partition, so the benchmark's
//! 100k-row queries take minutes there; that is moto, not this design.)
//!
//! **Atomicity.** Validation happens before any write: a bad row (unknown
//! column, wrong type) fails the whole call and nothing is written. Once
//! validated, a batch of up to 1,000 rows is written in 25-item batches
//! (DynamoDB transactions stop at 100 items); an AWS failure mid-way can
//! leave a prefix of the batch written, and the error says so.

use super::db::{self, get_s, key, s, to_item, Item, Table};
use super::users_projects::project_pk;
use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

pub const MAX_TABLE_NAME: usize = 128;
pub const MAX_COLUMN_NAME: usize = 63;
pub const MAX_ROWS_PER_INSERT: usize = 1000;
/// A name claim whose table does not carry the name is abandoned after this.
const NAME_CLAIM_GRACE_SECS: u64 = 60;
pub const SYSTEM_COLUMNS: &[&str] = &["id", "createdAt", "updatedAt"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    String,
    Number,
    Boolean,
    Date,
}

impl ColumnType {
    fn as_str(self) -> &'static str {
        match self {
            ColumnType::String => "string",
            ColumnType::Number => "number",
            ColumnType::Boolean => "boolean",
            ColumnType::Date => "date",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Column {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ColumnType,
    pub index: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ColumnType,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataTable {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub columns: Vec<Column>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DataTablePage {
    pub data: Vec<DataTable>,
    pub count: usize,
}

/// A row as returned: `{ id, createdAt, updatedAt, <column>: value, ... }`.
pub type Row = Map<String, Value>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Op {
    Eq,
    Neq,
    Gt,
    Gte,
    Lt,
    Lte,
    Like,
    Ilike,
    IsEmpty,
    IsNotEmpty,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    pub column_name: String,
    pub condition: Op,
    #[serde(default)]
    pub value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FilterKind {
    #[default]
    And,
    Or,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Filter {
    #[serde(rename = "type", default)]
    pub kind: FilterKind,
    #[serde(rename = "filters", default)]
    pub conditions: Vec<Condition>,
}

impl Filter {
    pub fn and(conditions: Vec<Condition>) -> Self {
        Filter { kind: FilterKind::And, conditions }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SortDirection {
    #[default]
    Asc,
    Desc,
}

#[derive(Debug, Clone, Default)]
pub struct RowQuery {
    pub filter: Option<Filter>,
    /// Column name (system columns included); default `id` ascending.
    pub sort_by: Option<(String, SortDirection)>,
    /// Default 100, max 1000.
    pub limit: Option<usize>,
    pub offset: usize,
    /// From a previous page's `next_cursor` (replaces `offset`).
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RowPage {
    /// Every row matching the filter.
    pub count: usize,
    pub data: Vec<Row>,
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpsertResult {
    pub inserted: bool,
    pub rows: Vec<Row>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DefItem {
    pk: String,
    sk: String,
    gsi1pk: String,
    gsi1sk: String,
    #[serde(flatten)]
    table: DataTable,
    rev: u64,
    #[serde(default)]
    next_row_id: u64,
    /// Column ids are a per-table sequence, never reused: short attribute
    /// names (`c7`) keep rows small, and a deleted column's leftover values
    /// can never be read as a new column's.
    #[serde(default)]
    col_seq: u64,
}

fn def_pk(id: &str) -> String {
    format!("dt#{id}")
}

fn name_sk(name: &str) -> String {
    format!("dtname#{name}")
}

fn row_sk(id: u64) -> String {
    format!("r#{id:012}")
}

fn check_table_name(name: &str) -> Result<String, StoreError> {
    let name = name.trim();
    let n = name.chars().count();
    if n == 0 || n > MAX_TABLE_NAME {
        return Err(StoreError::Invalid(format!("data table name must be 1–{MAX_TABLE_NAME} characters, got {n}")));
    }
    Ok(name.to_owned())
}

/// `^[a-zA-Z][a-zA-Z0-9_]*$`, at most 63 characters, not a system column.
pub fn check_column_name(name: &str) -> Result<(), StoreError> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= MAX_COLUMN_NAME;
    if !ok {
        return Err(StoreError::Invalid(format!(
            "column name {name:?} must start with a letter, contain only letters, digits and underscores, at most {MAX_COLUMN_NAME} characters"
        )));
    }
    if SYSTEM_COLUMNS.iter().any(|c| c.eq_ignore_ascii_case(name)) {
        return Err(StoreError::Invalid(format!("column name {name:?} is reserved for a system column")));
    }
    Ok(())
}

/// Checks a value against a column type and returns the stored attribute
/// (`None` for null: the attribute is left out).
fn encode_value(kind: ColumnType, v: &Value) -> Result<Option<AttributeValue>, String> {
    let wrong = || format!("expected {}, got {}", kind.as_str(), json_type(v));
    match (kind, v) {
        (_, Value::Null) => Ok(None),
        (ColumnType::String, Value::String(s)) => Ok(Some(AttributeValue::S(s.clone()))),
        (ColumnType::Number, Value::Number(n)) if n.as_f64().is_some_and(f64::is_finite) => {
            Ok(Some(AttributeValue::N(n.to_string())))
        }
        (ColumnType::Boolean, Value::Bool(b)) => Ok(Some(AttributeValue::Bool(*b))),
        (ColumnType::Date, Value::String(s)) => db::parse_iso(s)
            .map(|d| Some(AttributeValue::S(d)))
            .ok_or_else(|| format!("expected an ISO 8601 date, got {s:?}")),
        _ => Err(wrong()),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn decode_value(av: Option<&AttributeValue>) -> Value {
    match av {
        Some(AttributeValue::S(s)) => Value::String(s.clone()),
        Some(AttributeValue::Bool(b)) => Value::Bool(*b),
        Some(AttributeValue::N(n)) => n
            .parse::<i64>()
            .map(Value::from)
            .ok()
            .or_else(|| n.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number))
            .unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn decode_row(table: &DataTable, item: &Item) -> Row {
    let mut row = Map::new();
    row.insert("id".into(), decode_value(item.get("id")));
    for c in &table.columns {
        row.insert(c.name.clone(), decode_value(item.get(&format!("c{}", c.id))));
    }
    row.insert("createdAt".into(), decode_value(item.get("createdAt")));
    row.insert("updatedAt".into(), decode_value(item.get("updatedAt")));
    row
}

fn column_type(table: &DataTable, name: &str) -> Option<ColumnType> {
    match name {
        "id" => Some(ColumnType::Number),
        "createdAt" | "updatedAt" => Some(ColumnType::Date),
        _ => table.columns.iter().find(|c| c.name == name).map(|c| c.kind),
    }
}

/// Validates values for insert/update: known, non-system columns of the
/// right type. `row` names the row in errors.
fn encode_values(
    table: &DataTable,
    values: &Map<String, Value>,
    row: Option<usize>,
) -> Result<Vec<(String, Option<AttributeValue>)>, StoreError> {
    let at = |col: &str| match row {
        Some(i) => format!("row {i}, column {col:?}"),
        None => format!("column {col:?}"),
    };
    let mut out = Vec::with_capacity(values.len());
    for (name, v) in values {
        if SYSTEM_COLUMNS.contains(&name.as_str()) {
            return Err(StoreError::Invalid(format!("{}: system columns are set automatically", at(name))));
        }
        let col =
            table.columns.iter().find(|c| &c.name == name).ok_or_else(|| {
                StoreError::Invalid(format!("{}: unknown column in table {:?}", at(name), table.name))
            })?;
        let av = encode_value(col.kind, v).map_err(|e| StoreError::Invalid(format!("{}: {e}", at(name))))?;
        out.push((format!("c{}", col.id), av));
    }
    Ok(out)
}

/// A dry run's pair as n8n's data-table service returns it: the row
/// `before` and `after` the write with `dryRunState` added; a side that does
/// not exist (before an insert, after a delete) is the other side's keys,
/// system columns first, all null.
pub fn dry_run_pair(before: Option<Row>, after: Option<Row>) -> [Row; 2] {
    let empty = |template: &Row| {
        let mut nulls = Map::new();
        for k in SYSTEM_COLUMNS.iter().copied().map(str::to_owned).chain(template.keys().cloned()) {
            nulls.insert(k, Value::Null);
        }
        nulls
    };
    let (mut before, mut after) = match (before, after) {
        (Some(b), Some(a)) => (b, a),
        (Some(b), None) => {
            let a = empty(&b);
            (b, a)
        }
        (None, Some(a)) => (empty(&a), a),
        (None, None) => (Map::new(), Map::new()),
    };
    before.insert("dryRunState".into(), Value::from("before"));
    after.insert("dryRunState".into(), Value::from("after"));
    [before, after]
}

/// Writes that change or delete rows say which: an empty filter would be
/// every row.
fn needs_filter(filter: &Filter, write: &str) -> Result<(), StoreError> {
    if filter.conditions.is_empty() {
        return Err(StoreError::Invalid(format!("{write} needs a non-empty filter")));
    }
    Ok(())
}

fn check_update(filter: &Filter, values: &Map<String, Value>) -> Result<(), StoreError> {
    needs_filter(filter, "update")?;
    if values.is_empty() {
        return Err(StoreError::Invalid("update needs at least one column value".into()));
    }
    Ok(())
}

/// `values` as `encode_values` stored them (dates in the stored form), by
/// name: it keeps the order of `values`, so names pair with attributes.
fn stored_values(values: &Map<String, Value>, encoded: &[(String, Option<AttributeValue>)]) -> Map<String, Value> {
    values.keys().zip(encoded).map(|(name, (_, av))| (name.clone(), decode_value(av.as_ref()))).collect()
}

/// Each row before and after `set` (and a new `updatedAt`).
fn updated_pairs(rows: Vec<Row>, set: &Map<String, Value>) -> Vec<Row> {
    let now = Value::String(db::now_iso());
    rows.into_iter()
        .flat_map(|before| {
            let mut after = before.clone();
            for (k, v) in set {
                after.insert(k.clone(), v.clone());
            }
            after.insert("updatedAt".into(), now.clone());
            dry_run_pair(Some(before), Some(after))
        })
        .collect()
}

/// SQL LIKE: `%` any run, `_` one character, `\` escapes. A pattern
/// without `%` is a contains-match (`%value%`), as the data-table service
/// does. `ilike` compares case-insensitively.
pub fn like_matches(value: &str, pattern: &str, case_insensitive: bool) -> bool {
    let pattern = if pattern.contains('%') { pattern.to_owned() } else { format!("%{pattern}%") };
    let (v, p): (Vec<char>, Vec<char>) = if case_insensitive {
        (value.to_lowercase().chars().collect(), pattern.to_lowercase().chars().collect())
    } else {
        (value.chars().collect(), pattern.chars().collect())
    };
    #[derive(Clone, Copy, PartialEq)]
    enum Tok {
        Any,
        One,
        Lit(char),
    }
    let mut toks = Vec::new();
    let mut it = p.into_iter();
    while let Some(c) = it.next() {
        toks.push(match c {
            '%' => Tok::Any,
            '_' => Tok::One,
            '\\' => Tok::Lit(it.next().unwrap_or('\\')),
            c => Tok::Lit(c),
        });
    }
    // Iterative wildcard match with backtracking to the last `%`.
    let (mut vi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while vi < v.len() {
        match toks.get(ti) {
            Some(Tok::Any) => {
                star = Some((ti, vi));
                ti += 1;
            }
            Some(Tok::One) => {
                vi += 1;
                ti += 1;
            }
            Some(Tok::Lit(c)) if *c == v[vi] => {
                vi += 1;
                ti += 1;
            }
            _ => match star {
                Some((st, sv)) => {
                    ti = st + 1;
                    vi = sv + 1;
                    star = Some((st, sv + 1));
                }
                None => return false,
            },
        }
    }
    toks[ti..].iter().all(|t| *t == Tok::Any)
}

/// Orders two values of one column type; nulls sort after everything.
fn cmp_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Null, _) => Ordering::Greater,
        (_, Value::Null) => Ordering::Less,
        (Value::Number(x), Value::Number(y)) => {
            x.as_f64().unwrap_or(f64::NAN).partial_cmp(&y.as_f64().unwrap_or(f64::NAN)).unwrap_or(Ordering::Equal)
        }
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

/// A filter checked against the table and ready to evaluate.
struct Compiled {
    kind: FilterKind,
    conds: Vec<(String, Op, Value)>,
}

fn compile(table: &DataTable, filter: Option<&Filter>) -> Result<Compiled, StoreError> {
    let Some(f) = filter else { return Ok(Compiled { kind: FilterKind::And, conds: Vec::new() }) };
    let mut conds = Vec::new();
    for c in &f.conditions {
        let kind = column_type(table, &c.column_name)
            .ok_or_else(|| StoreError::Invalid(format!("filter on unknown column {:?}", c.column_name)))?;
        let value = match c.condition {
            Op::IsEmpty | Op::IsNotEmpty => Value::Null,
            Op::Like | Op::Ilike => {
                if kind != ColumnType::String {
                    return Err(StoreError::Invalid(format!(
                        "{:?} applies to string columns; {:?} is {}",
                        c.condition,
                        c.column_name,
                        kind.as_str()
                    )));
                }
                match &c.value {
                    Value::String(_) => c.value.clone(),
                    other => {
                        return Err(StoreError::Invalid(format!(
                            "like pattern for {:?} must be a string, got {}",
                            c.column_name,
                            json_type(other)
                        )))
                    }
                }
            }
            _ => match encode_value(kind, &c.value) {
                Ok(Some(av)) => decode_value(Some(&av)),
                Ok(None) => Value::Null,
                Err(e) => return Err(StoreError::Invalid(format!("filter on {:?}: {e}", c.column_name))),
            },
        };
        conds.push((c.column_name.clone(), c.condition, value));
    }
    Ok(Compiled { kind: f.kind, conds })
}

impl Compiled {
    fn is_empty(&self) -> bool {
        self.conds.is_empty()
    }

    fn matches(&self, row: &Row) -> bool {
        if self.conds.is_empty() {
            return true;
        }
        let test = |(col, op, want): &(String, Op, Value)| {
            let have = row.get(col).unwrap_or(&Value::Null);
            match op {
                Op::IsEmpty => have.is_null() || have.as_str() == Some(""),
                Op::IsNotEmpty => !(have.is_null() || have.as_str() == Some("")),
                Op::Eq => {
                    if want.is_null() {
                        have.is_null()
                    } else {
                        !have.is_null() && cmp_values(have, want) == Ordering::Equal
                    }
                }
                Op::Neq => {
                    if want.is_null() {
                        !have.is_null()
                    } else {
                        have.is_null() || cmp_values(have, want) != Ordering::Equal
                    }
                }
                Op::Like | Op::Ilike => match (have.as_str(), want.as_str()) {
                    (Some(h), Some(p)) => like_matches(h, p, *op == Op::Ilike),
                    _ => false,
                },
                // Comparisons with null are false, as in SQL.
                Op::Gt | Op::Gte | Op::Lt | Op::Lte => {
                    if have.is_null() || want.is_null() {
                        return false;
                    }
                    let o = cmp_values(have, want);
                    match op {
                        Op::Gt => o == Ordering::Greater,
                        Op::Gte => o != Ordering::Less,
                        Op::Lt => o == Ordering::Less,
                        _ => o != Ordering::Greater,
                    }
                }
            }
        };
        match self.kind {
            FilterKind::And => self.conds.iter().all(test),
            FilterKind::Or => self.conds.iter().any(test),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Cursor {
    /// The sort value of the last row returned.
    v: Value,
    id: u64,
}

fn encode_cursor(c: &Cursor) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(c).unwrap_or_default())
}

fn decode_cursor(s: &str) -> Result<Cursor, StoreError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or_else(|| StoreError::Invalid("malformed cursor".into()))
}

fn row_id(row: &Row) -> u64 {
    row.get("id").and_then(Value::as_u64).unwrap_or(0)
}

#[derive(Clone, Debug)]
pub struct DataTables {
    defs: Table,
    rows: Table,
}

impl DataTables {
    /// `defs`: the Instance table; `rows`: the DataRows table.
    pub fn new(defs: Table, rows: Table) -> Self {
        DataTables { defs, rows }
    }

    /// The DataRows table handle (its request counter feeds the benchmark).
    pub fn rows_table(&self) -> &Table {
        &self.rows
    }

    pub fn defs_table(&self) -> &Table {
        &self.defs
    }

    async fn def(&self, id: &str) -> Result<DefItem, StoreError> {
        self.defs
            .get::<DefItem>(&def_pk(id), "dt")
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("data table {id}")))
    }

    pub async fn get(&self, id: &str) -> Result<Option<DataTable>, StoreError> {
        Ok(self.defs.get::<DefItem>(&def_pk(id), "dt").await?.map(|d| d.table))
    }

    /// Creates a table with at least one column. The name is unique in the
    /// project: of concurrent creates with one name, exactly one succeeds.
    pub async fn create(&self, project_id: &str, name: &str, columns: &[NewColumn]) -> Result<DataTable, StoreError> {
        let name = check_table_name(name)?;
        if columns.is_empty() {
            return Err(StoreError::Invalid("a data table needs at least one column".into()));
        }
        let mut cols = Vec::with_capacity(columns.len());
        for (i, c) in columns.iter().enumerate() {
            check_column_name(&c.name)?;
            if cols.iter().any(|x: &Column| x.name.eq_ignore_ascii_case(&c.name)) {
                return Err(StoreError::Invalid(format!("column {:?} is defined twice", c.name)));
            }
            cols.push(Column { id: (i + 1).to_string(), name: c.name.clone(), kind: c.kind, index: i });
        }
        let now = db::now_iso();
        let table = DataTable {
            id: db::new_id(),
            name: name.clone(),
            project_id: project_id.to_owned(),
            columns: cols,
            created_at: now.clone(),
            updated_at: now,
        };
        let def = DefItem {
            pk: def_pk(&table.id),
            sk: "dt".into(),
            gsi1pk: format!("dts#{project_id}"),
            gsi1sk: format!("dt#{}", table.id),
            table: table.clone(),
            rev: 0,
            next_row_id: 0,
            col_seq: columns.len() as u64,
        };
        if self.defs.get_raw(&project_pk(project_id), "project").await?.is_none() {
            return Err(StoreError::NotFound(format!("project {project_id}")));
        }
        // The name claim is one conditional put: of racing creates exactly
        // one wins, and the losers have written nothing.
        self.claim_name(project_id, &name, &table.id).await?;
        self.defs.count();
        let put = self
            .defs
            .client
            .put_item()
            .table_name(&self.defs.name)
            .set_item(Some(to_item(&def)?))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        if let Err(e) = put {
            self.release_name(project_id, &name, &table.id).await.ok();
            return Err(StoreError::dynamo(e));
        }
        Ok(table)
    }

    /// Claims `name` in the project for table `id`. A claim left by a
    /// writer that died before writing (or renaming) its table, i.e. one
    /// whose table does not carry that name, is taken over after a grace
    /// period.
    async fn claim_name(&self, project_id: &str, name: &str, id: &str) -> Result<(), StoreError> {
        for _ in 0..2 {
            let mut item = key(project_pk(project_id), name_sk(name));
            item.insert("dataTableId".into(), s(id));
            item.insert("claimedAt".into(), db::n(db::now_secs()));
            self.defs.count();
            match self
                .defs
                .client
                .put_item()
                .table_name(&self.defs.name)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if db::is_condition_failed(&e) => {}
                Err(e) => return Err(StoreError::dynamo(e)),
            }
            let taken =
                || StoreError::Conflict(format!("a data table named {name:?} already exists in project {project_id}"));
            let Some(cur) = self.defs.get_raw(&project_pk(project_id), &name_sk(name)).await? else { continue };
            let owner = get_s(&cur, "dataTableId").unwrap_or_default().to_owned();
            let age = match cur.get("claimedAt") {
                Some(AttributeValue::N(n)) => db::now_secs().saturating_sub(n.parse().unwrap_or(0)),
                _ => u64::MAX,
            };
            let live = self.get(&owner).await?.is_some_and(|t| t.name == name && t.project_id == project_id);
            if live || age < NAME_CLAIM_GRACE_SECS {
                return Err(taken());
            }
            self.release_name(project_id, name, &owner).await?;
        }
        Err(StoreError::Conflict(format!("the name {name:?} is being claimed concurrently; try again")))
    }

    /// Deletes a name claim if it still belongs to table `id`.
    async fn release_name(&self, project_id: &str, name: &str, id: &str) -> Result<(), StoreError> {
        self.defs.count();
        match self
            .defs
            .client
            .delete_item()
            .table_name(&self.defs.name)
            .set_key(Some(key(project_pk(project_id), name_sk(name))))
            .condition_expression("dataTableId = :id")
            .expression_attribute_values(":id", s(id))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if db::is_condition_failed(&e) => Ok(()),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// The table named exactly `name` in the project (one read of its name
    /// claim, one of the table; a stale claim, whose table no longer carries
    /// the name, is not a match).
    pub async fn by_name(&self, project_id: &str, name: &str) -> Result<Option<DataTable>, StoreError> {
        let Some(claim) = self.defs.get_raw(&project_pk(project_id), &name_sk(name)).await? else { return Ok(None) };
        let Some(id) = get_s(&claim, "dataTableId") else { return Ok(None) };
        Ok(self.get(id).await?.filter(|t| t.name == name && t.project_id == project_id))
    }

    /// Every table of a project, unsorted (the Data table node's table list
    /// filters, sorts and pages them itself).
    pub async fn list_all(&self, project_id: &str) -> Result<Vec<DataTable>, StoreError> {
        self.defs
            .query_gsi(&format!("dts#{project_id}"))
            .await?
            .into_iter()
            .map(|item| db::from_item::<DefItem>(item).map(|d| d.table))
            .collect()
    }

    /// `search_data_tables` over the given (readable) projects.
    pub async fn search(
        &self,
        project_ids: &[String],
        query: Option<&str>,
        limit: Option<usize>,
    ) -> Result<DataTablePage, StoreError> {
        let q = query.map(str::to_lowercase).filter(|q| !q.is_empty());
        let mut all = Vec::new();
        for p in project_ids {
            all.extend(self.list_all(p).await?.into_iter().filter(|t| q.as_ref().is_none_or(|q| t.name.to_lowercase().contains(q.as_str()))));
        }
        all.sort_by_key(|a| a.name.to_lowercase());
        let count = all.len();
        all.truncate(limit.unwrap_or(100).clamp(1, 100));
        Ok(DataTablePage { data: all, count })
    }

    /// Renames; the new name is claimed under the same race rule as create.
    pub async fn rename(&self, id: &str, new_name: &str) -> Result<DataTable, StoreError> {
        let new_name = check_table_name(new_name)?;
        let def = self.def(id).await?;
        if def.table.name == new_name {
            return Ok(def.table);
        }
        let p = def.table.project_id.clone();
        self.claim_name(&p, &new_name, id).await?;
        let now = db::now_iso();
        self.defs.count();
        let res = self
            .defs
            .client
            .update_item()
            .table_name(&self.defs.name)
            .set_key(Some(key(def_pk(id), "dt")))
            .update_expression("SET #n = :n, updatedAt = :now")
            .condition_expression("#n = :old")
            .expression_attribute_names("#n", "name")
            .expression_attribute_values(":n", s(&new_name))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":old", s(&def.table.name))
            .send()
            .await;
        match res {
            Ok(_) => {}
            Err(e) => {
                self.release_name(&p, &new_name, id).await.ok();
                return Err(if db::is_condition_failed(&e) {
                    StoreError::Conflict(format!("data table {id} was renamed or deleted meanwhile"))
                } else {
                    StoreError::dynamo(e)
                });
            }
        }
        self.release_name(&p, &def.table.name, id).await?;
        Ok(DataTable { name: new_name, updated_at: now, ..def.table })
    }

    /// Deletes the table, its name and all its rows.
    pub async fn delete(&self, id: &str) -> Result<(), StoreError> {
        let def = self.def(id).await?;
        self.defs.count();
        self.defs
            .client
            .delete_item()
            .table_name(&self.defs.name)
            .set_key(Some(key(def_pk(id), "dt")))
            .condition_expression("attribute_exists(pk)")
            .send()
            .await
            .map_err(|e| {
                if db::is_condition_failed(&e) {
                    StoreError::NotFound(format!("data table {id}"))
                } else {
                    StoreError::dynamo(e)
                }
            })?;
        self.release_name(&def.table.project_id, &def.table.name, id).await?;
        let items = self.rows.query_prefix(&def_pk(id), "r#", false).await?;
        let reqs = items
            .iter()
            .filter_map(|i| Some(key(get_s(i, "pk")?, get_s(i, "sk")?)))
            .map(db::delete_req)
            .collect::<Result<Vec<_>, _>>()?;
        self.rows.batch_write(reqs).await
    }

    /// Applies a column change computed from the current definition, on
    /// condition that the revision is unchanged; retried on a race.
    async fn change_columns<F>(&self, id: &str, mut change: F) -> Result<(DataTable, Column), StoreError>
    where
        F: FnMut(&mut Vec<Column>, String) -> Result<Column, StoreError>,
    {
        for _ in 0..5 {
            let def = self.def(id).await?;
            let mut cols = def.table.columns.clone();
            let touched = change(&mut cols, (def.col_seq + 1).to_string())?;
            for (i, c) in cols.iter_mut().enumerate() {
                c.index = i;
            }
            let now = db::now_iso();
            let cols_av =
                serde_dynamo::to_attribute_value(&cols).map_err(|e| StoreError::Invalid(format!("columns: {e}")))?;
            self.defs.count();
            let res = self
                .defs
                .client
                .update_item()
                .table_name(&self.defs.name)
                .set_key(Some(key(def_pk(id), "dt")))
                .update_expression("SET #c = :c, rev = :next, colSeq = :seq, updatedAt = :now")
                .condition_expression("rev = :rev")
                .expression_attribute_names("#c", "columns")
                .expression_attribute_values(":c", cols_av)
                .expression_attribute_values(":next", db::n(def.rev + 1))
                .expression_attribute_values(":seq", db::n(def.col_seq + 1))
                .expression_attribute_values(":rev", db::n(def.rev))
                .expression_attribute_values(":now", s(&now))
                .send()
                .await;
            match res {
                Ok(_) => return Ok((DataTable { columns: cols, updated_at: now, ..def.table }, touched)),
                Err(e) if db::is_condition_failed(&e) => continue,
                Err(e) => return Err(StoreError::dynamo(e)),
            }
        }
        Err(StoreError::Conflict(format!("data table {id} kept changing; try again")))
    }

    pub async fn add_column(&self, id: &str, column: &NewColumn) -> Result<Column, StoreError> {
        check_column_name(&column.name)?;
        let (_, c) = self
            .change_columns(id, |cols, col_id| {
                if cols.iter().any(|c| c.name.eq_ignore_ascii_case(&column.name)) {
                    return Err(StoreError::Conflict(format!("column {:?} already exists", column.name)));
                }
                let c = Column { id: col_id, name: column.name.clone(), kind: column.kind, index: cols.len() };
                cols.push(c.clone());
                Ok(c)
            })
            .await?;
        Ok(c)
    }

    /// Renames a column (its type is immutable). Rows are untouched: values
    /// are stored by column id.
    pub async fn rename_column(&self, id: &str, column_id: &str, new_name: &str) -> Result<Column, StoreError> {
        check_column_name(new_name)?;
        let (_, c) = self
            .change_columns(id, |cols, _| {
                if cols.iter().any(|c| c.id != column_id && c.name.eq_ignore_ascii_case(new_name)) {
                    return Err(StoreError::Conflict(format!("column {new_name:?} already exists")));
                }
                let c = cols
                    .iter_mut()
                    .find(|c| c.id == column_id)
                    .ok_or_else(|| StoreError::NotFound(format!("column {column_id}")))?;
                c.name = new_name.to_owned();
                Ok(c.clone())
            })
            .await?;
        Ok(c)
    }

    pub async fn delete_column(&self, id: &str, column_id: &str) -> Result<Column, StoreError> {
        let (_, c) = self
            .change_columns(id, |cols, _| {
                let pos = cols
                    .iter()
                    .position(|c| c.id == column_id)
                    .ok_or_else(|| StoreError::NotFound(format!("column {column_id}")))?;
                Ok(cols.remove(pos))
            })
            .await?;
        Ok(c)
    }

    /// Inserts 1–1000 rows. Every row is validated first; one bad value
    /// fails the call with the row and column named, and nothing is written.
    pub async fn insert_rows(&self, id: &str, rows: &[Map<String, Value>]) -> Result<Vec<Row>, StoreError> {
        if rows.is_empty() || rows.len() > MAX_ROWS_PER_INSERT {
            return Err(StoreError::Invalid(format!("insert takes 1–{MAX_ROWS_PER_INSERT} rows, got {}", rows.len())));
        }
        let def = self.def(id).await?;
        let encoded = rows
            .iter()
            .enumerate()
            .map(|(i, r)| encode_values(&def.table, r, Some(i)))
            .collect::<Result<Vec<_>, _>>()?;
        // Reserve a block of ids in one atomic counter update.
        self.defs.count();
        let out = self
            .defs
            .client
            .update_item()
            .table_name(&self.defs.name)
            .set_key(Some(key(def_pk(id), "dt")))
            .update_expression("ADD nextRowId :n")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":n", db::n(rows.len()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| {
                if db::is_condition_failed(&e) {
                    StoreError::NotFound(format!("data table {id}"))
                } else {
                    StoreError::dynamo(e)
                }
            })?;
        let last: u64 = match out.attributes.as_ref().and_then(|a| a.get("nextRowId")) {
            Some(AttributeValue::N(n)) => {
                n.parse().map_err(|_| StoreError::Corrupt("row counter is not a number".into()))?
            }
            _ => return Err(StoreError::Corrupt("row counter missing".into())),
        };
        let first = last + 1 - rows.len() as u64;
        let now = db::now_iso();
        let mut reqs = Vec::with_capacity(rows.len());
        let mut items = Vec::with_capacity(rows.len());
        for (i, values) in encoded.into_iter().enumerate() {
            let rid = first + i as u64;
            let mut item = key(def_pk(id), row_sk(rid));
            item.insert("id".into(), db::n(rid));
            item.insert("createdAt".into(), s(&now));
            item.insert("updatedAt".into(), s(&now));
            for (attr, v) in values {
                if let Some(v) = v {
                    item.insert(attr, v);
                }
            }
            items.push(decode_row(&def.table, &item));
            reqs.push(db::put_req(item)?);
        }
        self.rows.batch_write(reqs).await.map_err(|e| match e {
            StoreError::Aws { service, message } => StoreError::Aws {
                service,
                message: format!(
                    "{message} (insert interrupted: some of the {} rows may have been written)",
                    rows.len()
                ),
            },
            other => other,
        })?;
        Ok(items)
    }

    async fn all_rows(&self, table: &DataTable) -> Result<Vec<Row>, StoreError> {
        Ok(self
            .rows
            .query_prefix(&def_pk(&table.id), "r#", false)
            .await?
            .iter()
            .map(|i| decode_row(table, i))
            .collect())
    }

    /// Rows matching the filter, sorted and paged.
    pub async fn query(&self, id: &str, q: &RowQuery) -> Result<RowPage, StoreError> {
        let table = self.def(id).await?.table;
        let compiled = compile(&table, q.filter.as_ref())?;
        let (sort_col, dir) = q.sort_by.clone().unwrap_or(("id".into(), SortDirection::Asc));
        if column_type(&table, &sort_col).is_none() {
            return Err(StoreError::Invalid(format!("sort by unknown column {sort_col:?}")));
        }
        let limit = q.limit.unwrap_or(100).clamp(1, 1000);
        let cursor = q.cursor.as_deref().map(decode_cursor).transpose()?;
        if compiled.is_empty() && sort_col == "id" && dir == SortDirection::Asc && q.offset == 0 {
            return self.page_by_id(&table, limit, cursor.map(|c| c.id)).await;
        }
        let mut rows: Vec<Row> = self.all_rows(&table).await?.into_iter().filter(|r| compiled.matches(r)).collect();
        let order = |a: &Row, b: &Row| {
            let o = cmp_values(a.get(&sort_col).unwrap_or(&Value::Null), b.get(&sort_col).unwrap_or(&Value::Null));
            let o = if dir == SortDirection::Desc { o.reverse() } else { o };
            o.then_with(|| row_id(a).cmp(&row_id(b)))
        };
        rows.sort_by(order);
        let count = rows.len();
        let start = match &cursor {
            Some(c) => {
                let mut probe = Map::new();
                probe.insert(sort_col.clone(), c.v.clone());
                probe.insert("id".into(), Value::from(c.id));
                rows.partition_point(|r| order(r, &probe) != Ordering::Greater)
            }
            None => q.offset.min(rows.len()),
        };
        let data: Vec<Row> = rows[start..].iter().take(limit).cloned().collect();
        let next_cursor = (start + data.len() < count)
            .then(|| {
                data.last().map(|r| {
                    encode_cursor(&Cursor { v: r.get(&sort_col).cloned().unwrap_or(Value::Null), id: row_id(r) })
                })
            })
            .flatten();
        Ok(RowPage { count, data, next_cursor })
    }

    /// Unfiltered, in id order: reads only the requested page.
    async fn page_by_id(&self, table: &DataTable, limit: usize, after: Option<u64>) -> Result<RowPage, StoreError> {
        let pk = def_pk(&table.id);
        let mut data = Vec::new();
        let mut start: Option<Item> = after.map(|a| key(&pk, row_sk(a)));
        let mut more = false;
        loop {
            self.rows.count();
            let page = self
                .rows
                .client
                .query()
                .table_name(&self.rows.name)
                .key_condition_expression("pk = :pk AND begins_with(sk, :r)")
                .expression_attribute_values(":pk", s(&pk))
                .expression_attribute_values(":r", s("r#"))
                .consistent_read(true)
                .limit((limit - data.len()) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            data.extend(page.items.unwrap_or_default().iter().map(|i| decode_row(table, i)));
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => {
                    if data.len() >= limit {
                        more = true;
                        break;
                    }
                    start = Some(k);
                }
                _ => break,
            }
        }
        let count = self.count_rows(&table.id).await?;
        // A full page may have been the last one: the count settles it.
        let next_cursor = (more && data.last().is_some_and(|r| row_id(r) < u64::MAX) && count > data.len())
            .then(|| {
                data.last()
                    .map(|r| encode_cursor(&Cursor { v: r.get("id").cloned().unwrap_or(Value::Null), id: row_id(r) }))
            })
            .flatten();
        Ok(RowPage { count, data, next_cursor })
    }

    /// How many rows the table holds (a `Select=COUNT` pass).
    pub async fn count_rows(&self, id: &str) -> Result<usize, StoreError> {
        let mut total = 0usize;
        let mut start: Option<Item> = None;
        loop {
            self.rows.count();
            let page = self
                .rows
                .client
                .query()
                .table_name(&self.rows.name)
                .key_condition_expression("pk = :pk AND begins_with(sk, :r)")
                .expression_attribute_values(":pk", s(def_pk(id)))
                .expression_attribute_values(":r", s("r#"))
                .select(aws_sdk_dynamodb::types::Select::Count)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(StoreError::dynamo)?;
            total += page.count.max(0) as usize;
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(total),
            }
        }
    }

    /// Sets `values` on every row matching `filter` (which must not be
    /// empty); returns the updated rows. A row deleted meanwhile is skipped,
    /// never resurrected.
    pub async fn update_rows(
        &self,
        id: &str,
        filter: &Filter,
        values: &Map<String, Value>,
    ) -> Result<Vec<Row>, StoreError> {
        check_update(filter, values)?;
        let (table, matches, encoded) = self.matching(id, filter, values).await?;
        self.update_matching(&table, matches, &encoded).await
    }

    /// What `update_rows` would do, written nowhere (n8n's dry run): each
    /// matching row before and after, as `dry_run_pair` shapes them. The
    /// same checks as the update run first.
    pub async fn preview_update(
        &self,
        id: &str,
        filter: &Filter,
        values: &Map<String, Value>,
    ) -> Result<Vec<Row>, StoreError> {
        check_update(filter, values)?;
        let (_, matches, encoded) = self.matching(id, filter, values).await?;
        Ok(updated_pairs(matches, &stored_values(values, &encoded)))
    }

    /// What `upsert` would do, written nowhere: the updated rows' pairs, or
    /// the row it would insert (id 0) after an empty "before".
    pub async fn preview_upsert(
        &self,
        id: &str,
        filter: &Filter,
        values: &Map<String, Value>,
    ) -> Result<Vec<Row>, StoreError> {
        needs_filter(filter, "upsert")?;
        let (_, matches, encoded) = self.matching(id, filter, values).await?;
        let set = stored_values(values, &encoded);
        if !matches.is_empty() {
            return Ok(updated_pairs(matches, &set));
        }
        let now = Value::String(db::now_iso());
        let mut inserted = Map::new();
        inserted.insert("id".into(), Value::from(0));
        inserted.insert("createdAt".into(), now.clone());
        inserted.insert("updatedAt".into(), now);
        inserted.extend(set);
        Ok(dry_run_pair(None, Some(inserted)).into())
    }

    /// What `delete_rows` would delete, deleting nothing: each row before and
    /// an all-null row after.
    pub async fn preview_delete(&self, id: &str, filter: &Filter) -> Result<Vec<Row>, StoreError> {
        needs_filter(filter, "delete")?;
        let (_, matches, _) = self.matching(id, filter, &Map::new()).await?;
        Ok(matches.into_iter().flat_map(|r| dry_run_pair(Some(r), None)).collect())
    }

    /// The table, the rows of it a write with `filter` touches, and `values`
    /// encoded as the write stores them (checked first: a bad filter or
    /// value reads no row).
    async fn matching(
        &self,
        id: &str,
        filter: &Filter,
        values: &Map<String, Value>,
    ) -> Result<(DataTable, Vec<Row>, Vec<(String, Option<AttributeValue>)>), StoreError> {
        let table = self.def(id).await?.table;
        let compiled = compile(&table, Some(filter))?;
        let encoded = encode_values(&table, values, None)?;
        let matches = self.all_rows(&table).await?.into_iter().filter(|r| compiled.matches(r)).collect();
        Ok((table, matches, encoded))
    }

    /// Deletes every row of the table (the table and its columns stay);
    /// returns how many there were.
    pub async fn clear_rows(&self, id: &str) -> Result<usize, StoreError> {
        self.def(id).await?;
        let items = self.rows.query_prefix(&def_pk(id), "r#", false).await?;
        let reqs = items
            .iter()
            .filter_map(|i| Some(key(get_s(i, "pk")?, get_s(i, "sk")?)))
            .map(db::delete_req)
            .collect::<Result<Vec<_>, _>>()?;
        let n = reqs.len();
        self.rows.batch_write(reqs).await?;
        Ok(n)
    }

    async fn update_matching(
        &self,
        table: &DataTable,
        rows: Vec<Row>,
        encoded: &[(String, Option<AttributeValue>)],
    ) -> Result<Vec<Row>, StoreError> {
        let now = db::now_iso();
        let mut sets = vec!["updatedAt = :now".to_owned()];
        let mut removes = Vec::new();
        let mut names = Vec::new();
        let mut values = vec![(":now".to_owned(), s(&now))];
        for (i, (attr, v)) in encoded.iter().enumerate() {
            names.push((format!("#a{i}"), attr.clone()));
            match v {
                Some(v) => {
                    sets.push(format!("#a{i} = :v{i}"));
                    values.push((format!(":v{i}"), v.clone()));
                }
                None => removes.push(format!("#a{i}")),
            }
        }
        let mut expr = format!("SET {}", sets.join(", "));
        if !removes.is_empty() {
            expr.push_str(&format!(" REMOVE {}", removes.join(", ")));
        }
        let pk = def_pk(&table.id);
        // Futures collected first: a lazy `map` closure in the stream makes
        // the future not general enough to be spawned.
        let futs: Vec<_> =
            rows.iter().map(|row| self.update_one(table, &pk, row_id(row), &expr, &names, &values)).collect();
        let results: Vec<Result<Option<Row>, StoreError>> =
            futures::stream::iter(futs).buffer_unordered(16).collect().await;
        let mut out = Vec::new();
        for r in results {
            if let Some(row) = r? {
                out.push(row);
            }
        }
        out.sort_by_key(row_id);
        Ok(out)
    }

    /// Updates one row if it still exists (`None` when it was deleted).
    async fn update_one(
        &self,
        table: &DataTable,
        pk: &str,
        rid: u64,
        expr: &str,
        names: &[(String, String)],
        values: &[(String, AttributeValue)],
    ) -> Result<Option<Row>, StoreError> {
        let mut req = self
            .rows
            .client
            .update_item()
            .table_name(&self.rows.name)
            .set_key(Some(key(pk, row_sk(rid))))
            .update_expression(expr)
            .condition_expression("attribute_exists(pk)")
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew);
        for (n, a) in names {
            req = req.expression_attribute_names(n, a);
        }
        for (k, v) in values {
            req = req.expression_attribute_values(k, v.clone());
        }
        self.rows.count();
        match req.send().await {
            Ok(out) => Ok(Some(decode_row(table, &out.attributes.unwrap_or_default()))),
            Err(e) if db::is_condition_failed(&e) => Ok(None),
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Deletes the rows matching a non-empty filter; returns them.
    pub async fn delete_rows(&self, id: &str, filter: &Filter) -> Result<Vec<Row>, StoreError> {
        needs_filter(filter, "delete")?;
        let (_, doomed, _) = self.matching(id, filter, &Map::new()).await?;
        let reqs =
            doomed.iter().map(|r| db::delete_req(key(def_pk(id), row_sk(row_id(r))))).collect::<Result<Vec<_>, _>>()?;
        self.rows.batch_write(reqs).await?;
        Ok(doomed)
    }

    /// Updates the rows matching `filter`, or inserts one row of `values`
    /// when none match.
    pub async fn upsert(
        &self,
        id: &str,
        filter: &Filter,
        values: &Map<String, Value>,
    ) -> Result<UpsertResult, StoreError> {
        needs_filter(filter, "upsert")?;
        let (table, matches, encoded) = self.matching(id, filter, values).await?;
        if matches.is_empty() {
            let rows = self.insert_rows(id, std::slice::from_ref(values)).await?;
            return Ok(UpsertResult { inserted: true, rows });
        }
        Ok(UpsertResult { inserted: false, rows: self.update_matching(&table, matches, &encoded).await? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_names_follow_the_rule() {
        for ok in ["a", "Name", "first_name", "x1", &"a".repeat(63)] {
            check_column_name(ok).unwrap();
        }
        for bad in ["", "1a", "_a", "a-b", "a b", "é", &"a".repeat(64), "id", "createdAt"] {
            assert!(check_column_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dry_run_pairs_fill_the_missing_side_with_nulls() {
        let row = |v: Value| v.as_object().cloned().unwrap();
        let [b, a] = dry_run_pair(None, Some(row(serde_json::json!({"id": 0, "createdAt": "t", "updatedAt": "t", "name": "x"}))));
        assert_eq!(Value::Object(b), serde_json::json!({"id": null, "createdAt": null, "updatedAt": null, "name": null, "dryRunState": "before"}));
        assert_eq!(a["dryRunState"], "after");
        let [b, a] = dry_run_pair(Some(row(serde_json::json!({"id": 3, "name": "x", "createdAt": "t", "updatedAt": "t"}))), None);
        assert_eq!(b["id"], 3);
        let keys: Vec<&String> = a.keys().collect();
        assert_eq!(keys, ["id", "createdAt", "updatedAt", "name", "dryRunState"]);
    }

    #[test]
    fn like_wildcards() {
        assert!(like_matches("Hello World", "World", false));
        assert!(!like_matches("Hello World", "world", false));
        assert!(like_matches("Hello World", "world", true));
        assert!(like_matches("Hello World", "H%d", false));
        assert!(!like_matches("Hello World", "H%o", false));
        assert!(like_matches("Hello", "H_llo", false));
        assert!(like_matches("50% off", "50\\%%", false));
        assert!(!like_matches("500 off", "50\\%%", false));
        assert!(like_matches("abc", "%", false));
    }
}
