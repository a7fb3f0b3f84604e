//! Remove Duplicates (1, 1.1, 2) and Item Lists' Remove Duplicates: within
//! the input (n8n's sort-then-scan, so "first of each group" is n8n's first),
//! and, in version 2, against the values seen in previous executions (kept in
//! the host's processed-data store).

use std::cmp::Ordering;

use serde_json::Value;

use super::lodash::{flatten_keys, get_field, is_equal, js_sort, lt, pick, type_of};
use super::split_out::names_param;
use super::{NodeContext, NodeOutput};
use crate::data::{paired_ref, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    if ctx.version() < 2.0 {
        let rules = Rules { null_ok: ctx.version() > 1.0, ..Rules::default() };
        return Ok(NodeOutput::one(remove_input_duplicates(ctx, rules)?));
    }
    match super::dedupe_history::run(ctx) {
        Ok(out) => Ok(out),
        Err(e) if ctx.continue_on_fail() => {
            // n8n answers with the first input item, carrying the error.
            let first = ctx.input(0).first().map(|i| Value::clone(&i.json)).unwrap_or(Value::Null);
            ctx.error_items.push(0);
            let mut item = crate::data::item_from(first, 0);
            item.paired_item = Some(paired_ref(0, 0));
            let _ = e;
            Ok(NodeOutput::one(vec![item]))
        }
        Err(e) => Err(e),
    }
}

/// What differs between the generations of the in-input dedupe.
#[derive(Clone, Copy, Default)]
pub struct Rules {
    /// Remove Duplicates 1.1+: null values pass the type check.
    pub null_ok: bool,
    /// Item Lists 3.1: values of different types order by type first and
    /// need not share a type.
    pub type_order: bool,
    /// Item Lists 1–2: the field lists are `{fields: [{fieldName}]}` collections.
    pub field_collections: bool,
}

/// `typeToNumber` of Item Lists 3.1.
fn type_rank(v: Option<&Value>) -> i32 {
    match v {
        Some(Value::Array(_)) => 9,
        Some(Value::Null) => 10,
        Some(Value::String(_)) => 1,
        Some(Value::Number(_)) => 2,
        Some(Value::Bool(_)) => 4,
        None => 6,
        Some(Value::Object(_)) => 7,
    }
}

/// "Remove items repeated within current input".
pub fn remove_input_duplicates(ctx: &mut NodeContext<'_>, rules: Rules) -> Result<Vec<Item>> {
    let items = ctx.input(0);
    let compare = ctx.param_str("compare", 0, "allFields")?;
    let dot = !ctx.param_bool("options.disableDotNotation", 0, false)?;
    let remove_other = ctx.param_bool("options.removeOtherFields", 0, false)?;
    if items.is_empty() {
        return Ok(vec![]);
    }
    let item_keys = |v: &Value| -> Vec<String> {
        if dot {
            flatten_keys(v)
        } else {
            v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
        }
    };
    let mut keys: Vec<String> = vec![];
    for it in items.iter() {
        for k in item_keys(&it.json) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    match compare.as_str() {
        "allFieldsExcept" => {
            let exclude = names_param(ctx, "fieldsToExclude", 0, "Fields To Exclude", rules.field_collections)?;
            if exclude.is_empty() {
                return Err(EngineError::node("No fields specified. Please add a field to exclude from comparison"));
            }
            if dot {
                // n8n takes the first item's keys here.
                keys = flatten_keys(&items[0].json);
            }
            keys.retain(|k| !exclude.contains(k));
        }
        "selectedFields" => {
            let selected = names_param(ctx, "fieldsToCompare", 0, "Fields To Compare", rules.field_collections)?;
            if selected.is_empty() {
                return Err(EngineError::node("No fields specified. Please add a field to compare on"));
            }
            keys = selected.iter().map(|k| k.trim().to_string()).collect();
        }
        _ => {}
    }

    // Values looked up once per item and key.
    let width = keys.len();
    let values: Vec<Option<Value>> = items.iter().flat_map(|it| keys.iter().map(|k| get_field(&it.json, k, dot).map(|c| c.into_owned()))).collect();
    let val = |i: usize, k: usize| values[i * width + k].as_ref();

    let mut order: Vec<usize> = (0..items.len()).collect();
    js_sort(&mut order, |&a, &b| {
        for k in 0..width {
            let (x, y) = (val(a, k), val(b, k));
            if rules.type_order {
                let (tx, ty) = (type_rank(x), type_rank(y));
                if tx != ty {
                    return tx.cmp(&ty);
                }
            }
            if !is_equal(x, y) {
                return if lt(x, y) { Ordering::Less } else { Ordering::Greater };
            }
        }
        Ordering::Equal
    });

    for (k, key) in keys.iter().enumerate() {
        let mut ty: Option<&str> = None;
        for (pos, &i) in order.iter().enumerate() {
            if key.is_empty() {
                return Err(EngineError::node("Name of field to compare is blank"));
            }
            let v = val(i, k);
            if rules.null_ok && matches!(v, Some(Value::Null)) {
                continue;
            }
            if v.is_none() {
                let msg = format!("'{key}' field is missing from some input items");
                return Err(if !dot && key.contains('.') {
                    EngineError::node_with(msg, "If you're trying to use a nested field, make sure you turn off 'disable dot notation' in the node options")
                } else {
                    EngineError::node(msg)
                });
            }
            let this = type_of(v);
            if !rules.type_order {
                if let Some(t) = ty.filter(|t| *t != this) {
                    let mut description = "The type of this field varies between items".to_string();
                    if rules.null_ok {
                        description.push_str(&format!(", in item [{}] it's a {t} and in item [{pos}] it's a {this} ", pos.saturating_sub(1)));
                    }
                    return Err(EngineError::node_with(format!("'{key}' isn't always the same type"), description));
                }
            }
            ty = Some(this);
        }
    }

    let mut removed = vec![false; items.len()];
    let mut kept = order[0];
    for &i in &order[1..] {
        if (0..width).all(|k| is_equal(val(i, k), val(kept, k))) {
            removed[i] = true;
        } else {
            kept = i;
        }
    }
    let survivors = items.iter().enumerate().filter(|(i, _)| !removed[*i]);
    Ok(if remove_other {
        // n8n pairs these with their position in the output.
        survivors.enumerate().map(|(pos, (_, it))| Item { json: pick(&it.json, &keys).into(), binary: None, paired_item: Some(paired_ref(pos, 0)) }).collect()
    } else {
        survivors.map(|(i, it)| it.paired(i, 0)).collect()
    })
}
