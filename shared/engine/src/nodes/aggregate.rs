//! Aggregate (and Item Lists' "Concatenate Items"): collect field values, or
//! whole items, into one item, optionally one item per group.

use serde_json::{json, Map, Value};

use super::lodash::{self, fields_list, get, get_field, js_order, json_stringify};
use super::split_out::names_param;
use super::{NodeContext, NodeOutput};
use crate::data::{paired_ref, Item, PairedItem};
use crate::error::{EngineError, Result};

/// One "Fields To Aggregate" entry.
struct FieldToAggregate {
    input: String,
    /// The output name when "Rename Field" is on (n8n drops it otherwise).
    rename_to: Option<String>,
}

/// How the running node reads its parameters (Aggregate and Item Lists differ).
#[derive(Clone, Copy)]
pub struct Flavor {
    /// Item Lists before 2.1: a field missing from every item is an error.
    pub require_fields: bool,
    /// Item Lists 1–2: include/exclude lists are `{fields: [{fieldName}]}` collections.
    pub field_collections: bool,
    /// Aggregate: `options.groupByFields`.
    pub grouping: bool,
    /// Aggregate and Item Lists 3.x: `options.includeBinaries` / `keepOnlyUnique`.
    pub binaries: bool,
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let items = concatenate(ctx, Flavor { require_fields: false, field_collections: false, grouping: true, binaries: true })?;
    Ok(NodeOutput::one(items))
}

fn paired_all(n: usize) -> PairedItem {
    PairedItem::Other(Box::new(Value::Array((0..n).map(|i| json!({ "item": i })).collect())))
}

/// The Aggregate node's work; Item Lists' Concatenate Items reuses it.
pub fn concatenate(ctx: &mut NodeContext<'_>, flavor: Flavor) -> Result<Vec<Item>> {
    let items = ctx.input(0);
    let mode = ctx.param_str("aggregate", 0, "aggregateIndividualFields")?;
    let group_by = if flavor.grouping { fields_list(ctx.param_opt("options.groupByFields", 0)?.as_ref(), "Group By Fields")? } else { vec![] };
    let include_binaries = flavor.binaries && ctx.param_bool("options.includeBinaries", 0, false)?;
    let unique_binaries = ctx.param_bool("options.keepOnlyUnique", 0, false)?;

    let individual = mode == "aggregateIndividualFields";
    let (fields, dot, merge_lists, keep_missing) = if individual {
        let dot = !ctx.param_bool("options.disableDotNotation", 0, false)?;
        let merge_lists = ctx.param_bool("options.mergeLists", 0, false)?;
        let keep_missing = ctx.param_bool("options.keepMissing", 0, false)?;
        let raw = ctx.param("fieldsToAggregate.fieldToAggregate", 0, Value::Array(vec![]))?;
        let fields: Vec<FieldToAggregate> = raw
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                let s = |k: &str| f.get(k).map(|v| lodash::js_to_string(Some(v))).unwrap_or_default();
                let rename = f.get("renameField").is_some_and(|v| lodash::truthy(Some(v)));
                FieldToAggregate { input: s("fieldToAggregate"), rename_to: rename.then(|| s("outputFieldName")) }
            })
            .collect();
        if fields.is_empty() {
            return Err(EngineError::node_with("No fields specified", "Please add a field to aggregate"));
        }
        (fields, dot, merge_lists, keep_missing)
    } else {
        (vec![], true, false, false)
    };
    let destination = if individual { String::new() } else { ctx.param_str("destinationFieldName", 0, "data")? };
    let include = if individual { String::new() } else { ctx.param_str("include", 0, "allFields")? };
    let exclude_list = if include == "allFieldsExcept" { names_param(ctx, "fieldsToExclude", 0, "Fields To Exclude", flavor.field_collections)? } else { vec![] };
    let include_list = if include == "specifiedFields" { names_param(ctx, "fieldsToInclude", 0, "Fields To Include", flavor.field_collections)? } else { vec![] };

    if individual {
        if flavor.require_fields {
            check_fields_exist(&items, &fields, dot, keep_missing)?;
        }
        check_unique_outputs(&fields)?;
    }

    // One group of everything, or n8n's groups in first-seen order.
    let groups: Vec<(Vec<Option<Value>>, Vec<usize>)> = if group_by.is_empty() {
        vec![(vec![], (0..items.len()).collect())]
    } else {
        let mut groups: Vec<(String, Vec<Option<Value>>, Vec<usize>)> = vec![];
        for (i, it) in items.iter().enumerate() {
            let mut values = vec![];
            for f in &group_by {
                let v = get(&it.json, f).map(|c| c.into_owned());
                if matches!(v, Some(Value::Object(_) | Value::Array(_))) {
                    return Err(EngineError::node_with(
                        format!("Field \"{f}\" has a non-scalar value which cannot be used for grouping."),
                        "Only scalar values (string, number, boolean, null) can be used in \"Group By Fields\".",
                    ));
                }
                values.push(v);
            }
            // JSON.stringify of the values: undefined and null group together.
            let key = json_stringify(&Value::Array(values.iter().map(|v| v.clone().unwrap_or(Value::Null)).collect()));
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.2.push(i),
                None => groups.push((key, values, vec![i])),
            }
        }
        groups.into_iter().map(|(_, v, m)| (v, m)).collect()
    };

    if !group_by.is_empty() && !groups.is_empty() {
        check_group_conflicts(&group_by, individual, &fields, &destination, dot)?;
    }

    let mut out = vec![];
    for (group_values, members) in groups {
        let mut json = Value::Object(Map::new());
        for (f, v) in group_by.iter().zip(&group_values) {
            if let Some(v) = v {
                lodash::set(&mut json, f, v.clone());
            }
        }
        let mut paired: Vec<usize> = members.clone();
        if individual {
            let values = aggregate_fields(&items, &members, &fields, dot, merge_lists, keep_missing);
            for (k, v) in values {
                if dot {
                    lodash::set(&mut json, &k, v);
                } else if let Value::Object(o) = &mut json {
                    o.insert(k, v);
                }
            }
        } else {
            let mut rows = vec![];
            let mut kept = vec![];
            for &i in &members {
                let Value::Object(obj) = &*items[i].json else {
                    rows.push(Value::clone(&items[i].json));
                    kept.push(i);
                    continue;
                };
                if exclude_list.is_empty() && include_list.is_empty() {
                    rows.push(Value::Object(obj.clone()));
                    kept.push(i);
                    continue;
                }
                let row: Map<String, Value> = obj
                    .iter()
                    .filter(|(k, _)| !exclude_list.contains(k) && (include_list.is_empty() || include_list.contains(k)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if !row.is_empty() {
                    rows.push(Value::Object(row));
                    kept.push(i);
                }
            }
            if let Value::Object(o) = &mut json {
                o.insert(destination.clone(), Value::Array(rows));
            }
            if group_by.is_empty() {
                paired = kept;
            }
        }
        let mut item = Item {
            json: json.into(),
            binary: None,
            paired_item: Some(if group_by.is_empty() { paired_all_of(&paired) } else { paired_ref(members[0], 0) }),
        };
        if include_binaries {
            // n8n takes the binaries of a group's members, or (ungrouped) of
            // the items the output pairs with: all-item data drops emptied items
            let from = if group_by.is_empty() { &paired } else { &members };
            add_binaries(&mut item, from.iter().map(|&i| &items[i]), unique_binaries);
        }
        out.push(item);
    }
    Ok(out)
}

fn paired_all_of(idx: &[usize]) -> PairedItem {
    if idx.iter().enumerate().all(|(k, &i)| k == i) {
        return paired_all(idx.len());
    }
    PairedItem::Other(Box::new(Value::Array(idx.iter().map(|i| json!({ "item": i })).collect())))
}

/// Item Lists before 2.1 refuse a field that no item has.
fn check_fields_exist(items: &[Item], fields: &[FieldToAggregate], dot: bool, keep_missing: bool) -> Result<()> {
    for f in fields {
        if items.is_empty() {
            continue;
        }
        if f.input.is_empty() {
            return Err(EngineError::node_with("Field to aggregate is blank", "Please add a field to aggregate"));
        }
        let found = items.iter().any(|it| if dot { get(&it.json, &f.input).is_some() } else { it.json.get(&f.input).is_some() });
        if !found && !dot && f.input.contains('.') {
            return Err(EngineError::node_with(
                format!("Couldn't find the field '{}' in the input data", f.input),
                "If you're trying to use a nested field, make sure you turn off 'disable dot notation' in the node options",
            ));
        }
        if !found && !keep_missing {
            return Err(EngineError::node(format!("Couldn't find the field '{}' in the input data", f.input)));
        }
    }
    Ok(())
}

/// Output key of an aggregated field: the rename, else the last path segment.
fn output_name(f: &FieldToAggregate, dot: bool) -> String {
    match &f.rename_to {
        Some(o) if !o.is_empty() => o.clone(),
        _ if dot && f.input.contains('.') => f.input.rsplit('.').next().unwrap_or_default().to_string(),
        _ => f.input.clone(),
    }
}

/// n8n checks the rename, or the raw input name, for duplicates.
fn check_unique_outputs(fields: &[FieldToAggregate]) -> Result<()> {
    let mut seen: Vec<&str> = vec![];
    for f in fields {
        let check = f.rename_to.as_deref().unwrap_or(&f.input);
        if seen.contains(&check) {
            return Err(EngineError::node_with(format!("The '{check}' output field is used more than once"), "Please make sure each output field name is unique"));
        }
        seen.push(check);
    }
    Ok(())
}

/// The aggregated lists of one group, keyed by output name.
fn aggregate_fields(items: &[Item], members: &[usize], fields: &[FieldToAggregate], dot: bool, merge_lists: bool, keep_missing: bool) -> Map<String, Value> {
    let mut values = Map::new();
    for f in fields {
        if f.input.is_empty() {
            continue;
        }
        let mut list = vec![];
        for &i in members {
            let mut value = get_field(&items[i].json, &f.input, dot).map(|c| c.into_owned());
            if !keep_missing {
                match &mut value {
                    Some(Value::Array(a)) => a.retain(|x| !x.is_null()),
                    None | Some(Value::Null) => continue,
                    _ => {}
                }
            }
            match value {
                Some(Value::Array(a)) if merge_lists => list.extend(a),
                Some(v) => list.push(v),
                // A kept missing value is `undefined` in n8n's list: `null` in JSON.
                None => list.push(Value::Null),
            }
        }
        values.insert(output_name(f, dot), Value::Array(list));
    }
    js_order(values)
}

/// With Group By, an output field may not overlap a group field.
fn check_group_conflicts(group_by: &[String], individual: bool, fields: &[FieldToAggregate], destination: &str, dot: bool) -> Result<()> {
    let conflicts = |a: &str, b: &str| {
        let (x, y): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
        x.iter().zip(&y).all(|(p, q)| p == q)
    };
    if !individual {
        if let Some(g) = group_by.iter().find(|g| conflicts(destination, g)) {
            return Err(EngineError::node_with(
                format!("The destination field '{destination}' conflicts with a Group By field '{g}'"),
                "Please choose a different destination field name or Group By field",
            ));
        }
        return Ok(());
    }
    let mut seen: Vec<String> = vec![];
    for f in fields {
        let field = match &f.rename_to {
            Some(o) => o.clone(),
            None => output_name(f, dot),
        };
        if seen.contains(&field) {
            return Err(EngineError::node_with(format!("The '{field}' output field is used more than once"), "Please make sure each output field name is unique"));
        }
        if let Some(g) = group_by.iter().find(|g| conflicts(&field, g)) {
            return Err(EngineError::node_with(
                format!("The output field '{field}' conflicts with a Group By field '{g}'"),
                "Please rename the aggregated field or choose a different Group By field",
            ));
        }
        seen.push(field);
    }
    Ok(())
}

/// n8n's `addBinariesToItem`: every binary of the aggregated items, a
/// repeated key suffixed `_1`, `_2`…; with `unique`, one per mime type,
/// file type, size and extension.
pub fn add_binaries<'i>(item: &mut Item, from: impl Iterator<Item = &'i Item>, unique: bool) {
    let mut out: Map<String, Value> = item.binary.as_ref().and_then(|b| b.as_object().cloned()).unwrap_or_default();
    let mut seen: Vec<[Option<Value>; 4]> = vec![];
    let mut any = false;
    for src in from {
        let Some(Value::Object(bins)) = src.binary.as_deref() else { continue };
        for (key, bin) in bins {
            any = true;
            if unique {
                let sig = ["mimeType", "fileType", "fileSize", "fileExtension"].map(|k| bin.get(k).cloned());
                if seen.contains(&sig) {
                    continue;
                }
                seen.push(sig);
            }
            let mut name = key.clone();
            let mut n = 1;
            while out.contains_key(&name) {
                name = format!("{key}_{n}");
                n += 1;
            }
            out.insert(name, bin.clone());
        }
    }
    if any {
        item.binary = Some(Value::Object(out).into());
    }
}
