//! Data table (`n8n-nodes-base.dataTable` 1, 1.1) through the host.
//!
//! Resource `row`: insert / get (`orderBy`) / update / delete / upsert / if
//! row (does not) exist, with n8n's options `optimizeBulk` (insert) and `dryRun`
//! (update, upsert, delete). Resource `table`: create (`createIfNotExists`
//! reuses a table of that name), list, rename (`update`), delete, clear.
//! Version 1.1 differs from 1 only in giving row dates as ISO strings where
//! 1 gave JavaScript `Date`s; in JSON both are the ISO strings the host
//! returns, so both versions run the same code.

use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{item_from, Item, Json};
use crate::error::{EngineError, Result};
use crate::host::{DataTableProvider, RowCondition, RowFilter, TableQuery};

/// The columns n8n sets itself, dropped from auto-mapped items so one data
/// table node's output feeds another.
const SYSTEM_COLUMNS: [&str; 3] = ["id", "createdAt", "updatedAt"];

/// n8n's ROWS_LIMIT_DEFAULT.
const LIMIT_DEFAULT: f64 = 50.0;

fn table_id(ctx: &mut NodeContext<'_>, i: usize) -> Result<String> {
    let v = ctx.param("dataTableId", i, Value::Null)?;
    Ok(match &v {
        Value::Object(o) => o.get("value").map(super::js_string).unwrap_or_default(),
        other => super::js_string(other),
    })
}

/// n8n inserts all items in one call unless the table is chosen by an
/// expression (`{` in the raw value), which may differ per item.
fn id_is_expression(ctx: &NodeContext<'_>) -> bool {
    let raw = ctx.raw("dataTableId.value").or_else(|| ctx.raw("dataTableId"));
    raw.and_then(Value::as_str).is_some_and(|s| s.contains('{'))
}

fn filter(ctx: &mut NodeContext<'_>, i: usize) -> Result<RowFilter> {
    let conds = ctx.param("filters.conditions", i, json!([]))?;
    let match_all = ctx.param_str("matchType", i, "anyCondition")? == "allConditions";
    let conditions = conds
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| RowCondition {
            column: c.get("keyName").and_then(|v| v.as_str()).unwrap_or("").to_string(),
            condition: c.get("condition").and_then(|v| v.as_str()).unwrap_or("eq").to_string(),
            value: c.get("keyValue").cloned().unwrap_or(Value::Null),
        })
        .collect();
    Ok(RowFilter { match_all, conditions })
}

/// Update, upsert and delete refuse to touch every row.
fn required_filter(ctx: &mut NodeContext<'_>, i: usize) -> Result<RowFilter> {
    let f = filter(ctx, i)?;
    if f.conditions.is_empty() {
        return Err(EngineError::node("At least one condition is required"));
    }
    Ok(f)
}

/// The row to write: the mapped columns, or the item without its system
/// columns when auto-mapping; as n8n's `dataObjectToApiInput`, nested values
/// are refused.
fn row(ctx: &mut NodeContext<'_>, i: usize) -> Result<Value> {
    let mode = ctx.param_str("columns.mappingMode", i, "defineBelow")?;
    let data = if mode == "autoMapInputData" {
        let mut m = match ctx.input(0).get(i).map(|it| Value::clone(&it.json)) {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        for c in SYSTEM_COLUMNS {
            m.remove(c);
        }
        m
    } else {
        match ctx.param("columns.value", i, json!({}))? {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    };
    for v in data.values() {
        let what = match v {
            Value::Array(_) => "array",
            Value::Object(_) => "object",
            _ => continue,
        };
        return Err(EngineError::node(format!("unexpected {what} input '{v}' in row {i}")));
    }
    Ok(Value::Object(data))
}

/// `options.dryRun`, which must be a boolean when set.
fn dry_run(ctx: &mut NodeContext<'_>, i: usize) -> Result<bool> {
    match ctx.param_opt("options.dryRun", i)? {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(other) => Err(EngineError::node(format!("unexpected input {other} for boolean dryRun"))),
    }
}

fn host<T>(r: std::result::Result<T, String>) -> Result<T> {
    r.map_err(EngineError::Host)
}

/// An item that pairs with no input item (n8n returns the bulk count bare).
fn unpaired(json: Value) -> Item {
    Item { json: Json::new(json), binary: None, paired_item: None }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let tables = ctx.env.host.data_tables.clone().ok_or_else(|| EngineError::Host("no data table provider configured".into()))?;
    let resource = ctx.param_str("resource", 0, "row")?;
    let op = ctx.param_str("operation", 0, if resource == "table" { "list" } else { "insert" })?;
    if resource == "row" && op == "insert" && !id_is_expression(ctx) {
        return bulk_insert(ctx, tables.as_ref());
    }
    let n = ctx.input(0).len();
    let mut out = vec![];
    for i in 0..n {
        let res = match resource.as_str() {
            "table" => table_op(ctx, tables.as_ref(), &op, i),
            "row" => row_op(ctx, tables.as_ref(), &op, i),
            other => Err(EngineError::node(format!("The resource '{other}' is not supported"))),
        };
        match res {
            Ok(items) => out.extend(items),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// Every input item's row in one insert; with `optimizeBulk` one item
/// `{success, insertedRows}` instead of the inserted rows.
fn bulk_insert(ctx: &mut NodeContext<'_>, tables: &dyn DataTableProvider) -> Result<NodeOutput> {
    let n = ctx.input(0).len();
    let res: Result<Vec<Item>> = (|| {
        if n == 0 {
            return Ok(vec![]);
        }
        let table = table_id(ctx, 0)?;
        let optimize = ctx.param_bool("options.optimizeBulk", 0, false)?;
        let rows = (0..n).map(|i| row(ctx, i)).collect::<Result<Vec<_>>>()?;
        let written = host(tables.insert(&table, rows))?;
        Ok(if optimize {
            vec![unpaired(json!({ "success": true, "insertedRows": written.len() }))]
        } else {
            written.into_iter().enumerate().map(|(i, r)| item_from(r, i)).collect()
        })
    })();
    match res {
        Ok(items) => Ok(NodeOutput::one(items)),
        Err(e) if ctx.continue_on_fail() => {
            let mut out = vec![];
            for i in 0..n {
                ctx.error_item(&mut out, &e, i);
            }
            Ok(NodeOutput::one(out))
        }
        Err(e) => Err(e),
    }
}

fn row_op(ctx: &mut NodeContext<'_>, tables: &dyn DataTableProvider, op: &str, i: usize) -> Result<Vec<Item>> {
    let table = table_id(ctx, i)?;
    let rows = match op {
        "insert" => {
            // The per-item path (the table is an expression): n8n cannot
            // bulk here, so optimizeBulk counts each item's one row.
            let optimize = ctx.param_bool("options.optimizeBulk", i, false)?;
            let written = host(tables.insert(&table, vec![row(ctx, i)?]))?;
            if optimize {
                vec![json!({ "success": true, "insertedRows": written.len() })]
            } else {
                written
            }
        }
        "get" => {
            let f = filter(ctx, i)?;
            let all = ctx.param_bool("returnAll", i, false)?;
            let limit = if all { None } else { Some(ctx.param_f64("limit", i, LIMIT_DEFAULT)? as usize) };
            // orderByColumn / orderByDirection default as the description
            // does (n8n fills description defaults in before a run).
            let column = if ctx.param_bool("orderBy", i, false)? { ctx.param_str("orderByColumn", i, "createdAt")? } else { String::new() };
            let desc = ctx.param_str("orderByDirection", i, "DESC")? == "DESC";
            let sort = (!column.is_empty()).then_some((column.as_str(), desc));
            host(tables.get_sorted(&table, &f, limit, sort))?
        }
        "update" => {
            let dry = dry_run(ctx, i)?;
            let set = row(ctx, i)?;
            let f = required_filter(ctx, i)?;
            host(if dry { tables.update_dry_run(&table, &f, &set) } else { tables.update(&table, &f, &set) })?
        }
        "deleteRows" | "delete" => {
            let dry = dry_run(ctx, i)?;
            let f = required_filter(ctx, i)?;
            host(if dry { tables.delete_dry_run(&table, &f) } else { tables.delete(&table, &f) })?
        }
        "upsert" => {
            let dry = dry_run(ctx, i)?;
            let set = row(ctx, i)?;
            let f = required_filter(ctx, i)?;
            host(if dry { tables.upsert_dry_run(&table, &f, &set) } else { tables.upsert(&table, &f, &set) })?
        }
        "rowExists" | "rowNotExists" => {
            let f = filter(ctx, i)?;
            let found = !host(tables.get(&table, &f, Some(1)))?.is_empty();
            let keep = found == (op == "rowExists");
            if keep {
                vec![Value::clone(&ctx.input(0)[i].json)]
            } else {
                vec![]
            }
        }
        other => return Err(EngineError::node(format!("The operation '{other}' is not supported"))),
    };
    Ok(rows.into_iter().map(|r| item_from(r, i)).collect())
}

fn table_op(ctx: &mut NodeContext<'_>, tables: &dyn DataTableProvider, op: &str, i: usize) -> Result<Vec<Item>> {
    let out = match op {
        "create" => {
            let name = ctx.param_str("tableName", i, "")?;
            let columns = ctx.param("columns.column", i, json!([]))?;
            let columns = columns
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let name = c.get("name").map(super::js_string).unwrap_or_default();
                    let kind = c.get("type").and_then(Value::as_str).unwrap_or("string").to_owned();
                    (name, kind)
                })
                .collect::<Vec<_>>();
            let reuse = ctx.param_bool("options.createIfNotExists", i, false)?;
            let existing = if reuse { host(tables.table_named(&name))? } else { None };
            match existing {
                Some(t) => vec![t],
                None => vec![host(tables.create_table(&name, &columns))?],
            }
        }
        "list" => {
            let all = ctx.param_bool("returnAll", i, true)?;
            let limit = ctx.param_f64("limit", i, LIMIT_DEFAULT)?;
            let field = ctx.param_str("options.sortField", i, "")?;
            let direction = ctx.param_str("options.sortDirection", i, "")?;
            let name = ctx.param_str("options.filterName", i, "")?;
            // n8n sorts only when both sort options are set.
            let sort = (!field.is_empty() && !direction.is_empty()).then(|| (field, direction == "desc"));
            let q = TableQuery {
                name_contains: (!name.is_empty()).then_some(name),
                sort,
                skip: 0,
                take: if all { None } else { Some(limit.max(0.0) as usize) },
            };
            host(tables.list_tables(&q))?.0
        }
        "update" => {
            let new_name = ctx.param_str("newName", i, "")?;
            let table = table_id(ctx, i)?;
            host(tables.rename_table(&table, &new_name))?;
            vec![json!({ "success": true, "name": new_name })]
        }
        "delete" => {
            let table = table_id(ctx, i)?;
            host(tables.delete_table(&table))?;
            vec![json!({ "success": true, "deletedTableId": table })]
        }
        "clear" => {
            let table = table_id(ctx, i)?;
            let deleted = host(tables.clear_table(&table))?;
            vec![json!({ "success": true, "deletedCount": deleted })]
        }
        other => return Err(EngineError::node(format!("The operation '{other}' is not supported"))),
    };
    Ok(out.into_iter().map(|t| item_from(t, i)).collect())
}
