//! Split Out (and Item Lists' "Split Out Items"): one item per element of an
//! array field (or value of an object field, or binary property).

use serde_json::{Map, Value};

use super::lodash::{self, fields_list, get_field, is_unsafe_key, to_path, unset_field};
use super::{NodeContext, NodeOutput};
use crate::data::{paired_ref, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Ok(NodeOutput::one(split_out(ctx, true, false)?))
}

/// Split Out and Item Lists 2.2+. `dotted_destination`: a dotted destination
/// field name is a path (Split Out), not a literal key (Item Lists);
/// `include_collection`: "Fields To Include" is Item Lists 2's
/// `{fields: [{fieldName}]}` collection.
pub fn split_out(ctx: &mut NodeContext<'_>, dotted_destination: bool, include_collection: bool) -> Result<Vec<Item>> {
    let items = ctx.input(0);
    let mut out = vec![];
    for (i, source) in items.iter().enumerate() {
        let fields: Vec<String> = ctx
            .param_str("fieldToSplitOut", i, "")?
            .split(',')
            .map(|f| {
                let f = f.trim();
                f.strip_prefix("$json.").unwrap_or(f).to_string()
            })
            .collect();
        let dot = !ctx.param_bool("options.disableDotNotation", i, false)?;
        let mut destinations: Vec<String> =
            ctx.param_str("options.destinationFieldName", i, "")?.split(',').map(str::trim).filter(|f| !f.is_empty()).map(str::to_string).collect();
        if !destinations.is_empty() && destinations.len() != fields.len() {
            return Err(EngineError::node("If multiple fields to split out are given, the same number of destination fields must be given"));
        }
        // A destination through `__proto__`/`constructor`/`prototype` is dropped:
        // the field keeps its own name (n8n's prototype-pollution test workflow).
        for d in destinations.iter_mut() {
            if to_path(d).iter().any(|s| is_unsafe_key(s)) {
                d.clear();
            }
        }
        let include = ctx.param_str("include", i, "noOtherFields")?;
        let include_binary = ctx.param_bool("options.includeBinary", i, false)?;
        let multi = fields.len() > 1;

        let mut splits: Vec<(Value, Option<Map<String, Value>>)> = vec![];
        for (k, field) in fields.iter().enumerate() {
            let dest = destinations.get(k).cloned().unwrap_or_default();
            let elements: Vec<Value> = if field == "$binary" {
                source.binary.as_deref().and_then(Value::as_object).map(|b| b.iter().map(|(k, v)| Value::Object(Map::from_iter([(k.clone(), v.clone())]))).collect()).unwrap_or_default()
            } else {
                match get_field(&source.json, field, dot).map(|c| c.into_owned()) {
                    None => vec![],
                    Some(Value::Array(a)) => a,
                    Some(Value::Object(o)) => o.into_iter().map(|(_, v)| v).collect(),
                    Some(other) => vec![other],
                }
            };
            for (e, element) in elements.into_iter().enumerate() {
                if splits.len() <= e {
                    splits.resize_with(e + 1, || (Value::Object(Map::new()), None));
                }
                let entry = &mut splits[e];
                if field == "$binary" {
                    if let Value::Object(b) = element {
                        entry.1.get_or_insert_with(Map::new).extend(b);
                    }
                    continue;
                }
                let name = if dest.is_empty() { field.clone() } else { dest.clone() };
                let spread = include == "noOtherFields" && dest.is_empty() && !multi;
                if spread && (element.is_object() || element.is_array()) {
                    // `{...json, ...element}`: an array spreads its indexes as keys.
                    if let Value::Object(j) = &mut entry.0 {
                        match element {
                            Value::Object(el) => j.extend(el),
                            Value::Array(el) => j.extend(el.into_iter().enumerate().map(|(k, v)| (k.to_string(), v))),
                            _ => {}
                        }
                    }
                } else if dotted_destination && dot && !dest.is_empty() {
                    lodash::set(&mut entry.0, &name, element);
                } else if let Value::Object(j) = &mut entry.0 {
                    j.insert(name, element);
                }
            }
        }

        for (json, binary) in splits {
            let mut json = json;
            match include.as_str() {
                "allOtherFields" => {
                    let mut copy = Value::clone(&source.json);
                    for f in &fields {
                        unset_field(&mut copy, f, dot);
                    }
                    if let (Value::Object(c), Value::Object(j)) = (&mut copy, json) {
                        c.extend(j);
                    }
                    json = copy;
                }
                "selectedOtherFields" => {
                    let include_fields = names_param(ctx, "fieldsToInclude", i, "Fields To Include", include_collection)?;
                    if include_fields.is_empty() {
                        return Err(EngineError::node_with("No fields specified", "Please add a field to include"));
                    }
                    if let Value::Object(j) = &mut json {
                        for f in &include_fields {
                            // `undefined` when missing: absent once serialized.
                            match get_field(&source.json, f, dot) {
                                Some(v) => {
                                    j.insert(f.clone(), v.into_owned());
                                }
                                None => {
                                    j.shift_remove(f.as_str());
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
            let binary = match binary {
                Some(b) => Some(Value::Object(b).into()),
                None if include_binary => source.binary.clone(),
                None => None,
            };
            out.push(Item { json: json.into(), binary, paired_item: Some(paired_ref(i, 0)) });
        }
    }
    Ok(out)
}

/// The names of a `[{fieldName}]` collection (Item Lists 1 and 2).
fn collection_names(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().map(|f| f.get("fieldName").map(|x| lodash::js_to_string(Some(x))).unwrap_or_default()).collect()
}

/// A field-list parameter: a comma-separated string, or (Item Lists 1–2) a
/// `{fields: [{fieldName}]}` collection.
pub fn names_param(ctx: &mut NodeContext<'_>, name: &str, item: usize, label: &str, collection: bool) -> Result<Vec<String>> {
    if collection {
        return Ok(collection_names(&ctx.param(&format!("{name}.fields"), item, Value::Array(vec![]))?));
    }
    fields_list(ctx.param_opt(name, item)?.as_ref(), label)
}

/// Item Lists 1 to 2.1 (one field; 1 wants an array, 2 also splits objects
/// and, from 2.1, treats a missing field as empty).
pub fn split_out_legacy(ctx: &mut NodeContext<'_>) -> Result<Vec<Item>> {
    let version = ctx.version();
    let items = ctx.input(0);
    let mut out = vec![];
    for (i, source) in items.iter().enumerate() {
        let field = ctx.param_str("fieldToSplitOut", i, "")?;
        let dot = !ctx.param_bool("options.disableDotNotation", 0, false)?;
        let dest = ctx.param_str("options.destinationFieldName", i, "")?;
        let include = ctx.param_str("include", i, "noOtherFields")?;
        let found = get_field(&source.json, &field, dot).map(|c| c.into_owned());
        let value = match found {
            Some(v) => v,
            None if version >= 2.1 => Value::Array(vec![]),
            None if field.contains('.') && !dot => {
                return Err(EngineError::node_with(
                    format!("Couldn't find the field '{field}' in the input data"),
                    "If you're trying to use a nested field, make sure you turn off 'disable dot notation' in the node options",
                ))
            }
            None => return Err(EngineError::node(format!("Couldn't find the field '{field}' in the input data"))),
        };
        let elements = match value {
            Value::Array(a) => a,
            Value::Object(o) if version >= 2.0 => o.into_iter().map(|(_, v)| v).collect(),
            _ if version >= 2.0 => return Err(EngineError::node(format!("The provided field '{field}' is not an array or object"))),
            _ => return Err(EngineError::node(format!("The provided field '{field}' is not an array"))),
        };
        for element in elements {
            let mut item = Map::new();
            match include.as_str() {
                "selectedOtherFields" => {
                    let names = names_param(ctx, "fieldsToInclude", i, "Fields To Include", true)?;
                    if names.is_empty() {
                        return Err(EngineError::node_with("No fields specified", "Please add a field to include"));
                    }
                    for name in names.into_iter().filter(|n| *n != field) {
                        if let Some(v) = get_field(&source.json, &name, dot) {
                            item.insert(name, v.into_owned());
                        }
                    }
                }
                "allOtherFields" => {
                    if let Value::Object(o) = &*source.json {
                        for k in o.keys() {
                            if let Some(v) = get_field(&source.json, k, dot) {
                                item.insert(k.clone(), v.into_owned());
                            }
                        }
                    }
                    let mut v = Value::Object(item);
                    lodash::unset(&mut v, &field);
                    item = match v {
                        Value::Object(o) => o,
                        _ => Map::new(),
                    };
                }
                _ => {}
            }
            match element {
                // `typeof null === 'object'`: spreading null adds nothing.
                Value::Object(el) if include == "noOtherFields" && dest.is_empty() => item.extend(el),
                Value::Array(el) if include == "noOtherFields" && dest.is_empty() => {
                    item.extend(el.into_iter().enumerate().map(|(k, v)| (k.to_string(), v)));
                }
                Value::Null if include == "noOtherFields" && dest.is_empty() => {}
                other => {
                    item.insert(if dest.is_empty() { field.clone() } else { dest.clone() }, other);
                }
            }
            out.push(crate::data::item_from(Value::Object(lodash::js_order(item)), i));
        }
    }
    Ok(out)
}
