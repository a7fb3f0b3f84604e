//! Data Table: insert / get / update / delete / upsert rows through the host.

use serde_json::{json, Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::{EngineError, Result};
use crate::host::{RowCondition, RowFilter};

fn table_id(ctx: &mut NodeContext<'_>, i: usize) -> Result<String> {
    let v = ctx.param("dataTableId", i, Value::Null)?;
    Ok(match &v {
        Value::Object(o) => o.get("value").map(super::js_string).unwrap_or_default(),
        other => super::js_string(other),
    })
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

/// The row to write: the mapped columns, or the whole item when auto-mapping.
fn row(ctx: &mut NodeContext<'_>, i: usize) -> Result<Value> {
    let mode = ctx.param_str("columns.mappingMode", i, "defineBelow")?;
    if mode == "autoMapInputData" {
        return Ok(ctx.input(0).get(i).map(|it| Value::clone(&it.json)).unwrap_or(json!({})));
    }
    let v = ctx.param("columns.value", i, json!({}))?;
    Ok(if v.is_object() { v } else { Value::Object(Map::new()) })
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let tables = ctx.env.host.data_tables.clone().ok_or_else(|| EngineError::Host("no data table provider configured".into()))?;
    let op = ctx.param_str("operation", 0, "insert")?;
    let n = ctx.input(0).len();
    let mut out = vec![];
    for i in 0..n {
        let res: Result<Vec<Value>> = (|| {
            let table = table_id(ctx, i)?;
            let host = |r: std::result::Result<Vec<Value>, String>| r.map_err(EngineError::Host);
            match op.as_str() {
                "insert" => host(tables.insert(&table, vec![row(ctx, i)?])),
                "get" => {
                    let f = filter(ctx, i)?;
                    let all = ctx.param_bool("returnAll", i, false)?;
                    let limit = if all { None } else { Some(ctx.param_f64("limit", i, 50.0)? as usize) };
                    host(tables.get(&table, &f, limit))
                }
                "update" => {
                    let f = filter(ctx, i)?;
                    host(tables.update(&table, &f, &row(ctx, i)?))
                }
                "deleteRows" | "delete" => {
                    let f = filter(ctx, i)?;
                    host(tables.delete(&table, &f))
                }
                "upsert" => {
                    let f = filter(ctx, i)?;
                    host(tables.upsert(&table, &f, &row(ctx, i)?))
                }
                "rowExists" | "rowNotExists" => {
                    let f = filter(ctx, i)?;
                    let found = !tables.get(&table, &f, Some(1)).map_err(EngineError::Host)?.is_empty();
                    let keep = found == (op == "rowExists");
                    Ok(if keep { vec![Value::clone(&ctx.input(0)[i].json)] } else { vec![] })
                }
                other => Err(EngineError::node(format!("The operation '{other}' is not supported"))),
            }
        })();
        match res {
            Ok(rows) => out.extend(rows.into_iter().map(|r| item_from(r, i))),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
