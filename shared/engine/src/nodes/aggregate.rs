//! Aggregate: collect field values, or whole items, into one item.

use serde_json::{Map, Value};

use super::{get_path, string_list, NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    if input.is_empty() {
        return Ok(NodeOutput::one(vec![]));
    }
    let paired: Vec<Value> = (0..input.len()).map(|i| serde_json::json!({ "item": i })).collect();
    let mode = ctx.param_str("aggregate", 0, "aggregateIndividualFields")?;
    let mut out = Map::new();
    if mode == "aggregateAllItemData" {
        let dest = ctx.param_str("destinationFieldName", 0, "data")?;
        let include = ctx.param_str("include", 0, "allFields")?;
        let incl = string_list(ctx.param_opt("fieldsToInclude", 0)?.as_ref());
        let excl = string_list(ctx.param_opt("fieldsToExclude", 0)?.as_ref());
        let rows = input
            .iter()
            .map(|it| match include.as_str() {
                "specifiedFields" => {
                    let mut m = Map::new();
                    for f in &incl {
                        if let Some(v) = get_path(&it.json, f) {
                            m.insert(f.clone(), v.clone());
                        }
                    }
                    Value::Object(m)
                }
                "allFieldsExcept" => {
                    let mut j = Value::clone(&it.json);
                    if let Value::Object(m) = &mut j {
                        for f in &excl {
                            m.shift_remove(f);
                        }
                    }
                    j
                }
                _ => Value::clone(&it.json),
            })
            .collect();
        out.insert(dest, Value::Array(rows));
    } else {
        let fields = ctx.param("fieldsToAggregate.fieldToAggregate", 0, Value::Array(vec![]))?;
        let merge_lists = ctx.param_bool("options.mergeLists", 0, false)?;
        let keep_missing = ctx.param_bool("options.keepMissing", 0, false)?;
        let fields = fields.as_array().cloned().unwrap_or_default();
        if fields.is_empty() {
            return Err(EngineError::node("No fields specified. Please add a field to aggregate"));
        }
        for f in &fields {
            let name = f.get("fieldToAggregate").and_then(|v| v.as_str()).unwrap_or("").to_string();
            let rename = f.get("renameField").and_then(|v| v.as_bool()).unwrap_or(false);
            let key = if rename { f.get("outputFieldName").and_then(|v| v.as_str()).unwrap_or(&name).to_string() } else { name.clone() };
            let mut values = vec![];
            for it in input.iter() {
                match get_path(&it.json, &name) {
                    Some(Value::Array(a)) if merge_lists => values.extend(a.iter().cloned()),
                    Some(Value::Null) | None if !keep_missing => {}
                    Some(v) => values.push(v.clone()),
                    None => values.push(Value::Null),
                }
            }
            out.insert(key, Value::Array(values));
        }
    }
    Ok(NodeOutput::one(vec![Item { json: Value::Object(out).into(), binary: None, paired_item: Some(Value::Array(paired).into()) }]))
}
