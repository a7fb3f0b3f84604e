//! Summarize (and Item Lists' Summarize): aggregations (count, count unique,
//! sum, average, min, max, concatenate, append) over all items or per group
//! of split-by fields, as separate items or one nested item.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use super::lodash::{self, get_field, is_empty_value, js_object, js_to_string, json_equal, json_stringify};
use super::{NodeContext, NodeOutput};
use crate::data::{Item, PairedItem};
use crate::error::{EngineError, Result};

/// How group keys are formed, which differs between the node generations.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// Item Lists: a plain object — keys become strings, integer-like keys
    /// sort first; counting ignores "Include Empty Values".
    Legacy,
    /// Summarize 1: keys converted to strings, first-seen order.
    Strings,
    /// Summarize 1.1: keys keep their type (1 and "1" are two groups).
    Typed,
}

struct Aggregation {
    kind: String,
    field: String,
    include_empty: bool,
    separator: Option<String>,
}

impl Aggregation {
    fn output_key(&self) -> String {
        let prefix = match self.kind.as_str() {
            "append" => "appended_",
            "average" => "average_",
            "concatenate" => "concatenated_",
            "count" => "count_",
            "countUnique" => "unique_count_",
            "max" => "max_",
            "min" => "min_",
            "sum" => "sum_",
            _ => "undefined",
        };
        normalize_field_name(&format!("{prefix}{}", self.field))
    }
}

/// n8n's `normalizeFieldName`: brackets and quotes dropped, spaces and dots to `_`.
fn normalize_field_name(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '[' | ']' | '"')).map(|c| if c == ' ' || c == '.' { '_' } else { c }).collect()
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let grouping = if ctx.version() >= 1.1 { Grouping::Typed } else { Grouping::Strings };
    Ok(NodeOutput::one(summarize(ctx, grouping)?))
}

/// A group key as the generation forms it.
#[derive(Clone)]
enum Key {
    Str(String),
    /// `None` is `undefined`.
    Typed(Option<Value>),
}

impl Key {
    fn same(&self, other: &Key) -> bool {
        match (self, other) {
            (Key::Str(a), Key::Str(b)) => a == b,
            (Key::Typed(a), Key::Typed(b)) => match (a, b) {
                (None, None) => true,
                (Some(x), Some(y)) => json_equal(x, y) && std::mem::discriminant(x) == std::mem::discriminant(y),
                _ => false,
            },
            _ => false,
        }
    }
    /// The key as an object property name.
    fn name(&self) -> String {
        match self {
            Key::Str(s) => s.clone(),
            Key::Typed(v) => js_to_string(v.as_ref()),
        }
    }
    /// The value written into the output item's split field.
    fn value(&self) -> Option<Value> {
        match self {
            Key::Str(s) => Some(Value::String(s.clone())),
            Key::Typed(v) => v.clone(),
        }
    }
}

struct Group {
    keys: Vec<Key>,
    members: Vec<usize>,
}

pub fn summarize(ctx: &mut NodeContext<'_>, grouping: Grouping) -> Result<Vec<Item>> {
    let items = ctx.input(0);
    let split_by: Vec<String> = ctx.param_str("fieldsToSplitBy", 0, "")?.split(',').map(str::trim).filter(|f| !f.is_empty()).map(str::to_string).collect();
    let raw = ctx.param("fieldsToSummarize.values", 0, Value::Array(vec![]))?;
    let aggs: Vec<Aggregation> = raw
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let s = |k: &str| a.get(k).map(|v| js_to_string(Some(v)));
            let kind = s("aggregation").unwrap_or_else(|| "count".into());
            let separator = match s("separateBy").as_deref() {
                Some("other") => s("customSeparator"),
                Some(sep) => Some(sep.to_string()),
                None => Some(",".into()),
            };
            Aggregation { kind, field: s("field").unwrap_or_default(), include_empty: a.get("includeEmpty").is_some_and(|v| lodash::truthy(Some(v))), separator }
        })
        .collect();
    if aggs.iter().all(|a| a.field.is_empty()) {
        return Err(EngineError::node("You need to add at least one aggregation to 'Fields to Summarize' with non empty 'Field'"));
    }
    let dot = !ctx.param_bool("options.disableDotNotation", 0, false)?;
    let single_item = ctx.param_str("options.outputFormat", 0, "separateItems")? == "singleItem";
    let skip_empty = ctx.param_bool("options.skipEmptySplitFields", 0, false)?;
    let continue_if_missing = ctx.param_bool("options.continueIfFieldNotFound", 0, false)?;

    // A field no item has: an error for Summarize 1 (unless told to go on)
    // and Item Lists before 2.1, a hint for the rest.
    let must_exist = match grouping {
        Grouping::Strings => !continue_if_missing,
        Grouping::Typed => false,
        Grouping::Legacy => ctx.version() < 2.1,
    };
    if must_exist {
        for a in aggs.iter().filter(|a| !a.field.is_empty()) {
            if !items.iter().any(|it| get_field(&it.json, &a.field, dot).is_some()) {
                return Err(EngineError::node(format!("The field '{}' does not exist in any items", a.field)));
            }
        }
    }

    let value = |i: usize, field: &str| get_field(&items[i].json, field, dot);
    let mut groups = vec![Group { keys: vec![], members: (0..items.len()).collect() }];
    for field in &split_by {
        let mut next = vec![];
        for g in groups {
            let mut sub: Vec<Group> = vec![];
            for &i in &g.members {
                let Some(key) = split_key(value(i, field).as_deref(), grouping, skip_empty) else { continue };
                match sub.iter_mut().find(|s| s.keys.last().is_some_and(|k| k.same(&key))) {
                    Some(s) => s.members.push(i),
                    None => {
                        let mut keys = g.keys.clone();
                        keys.push(key);
                        sub.push(Group { keys, members: vec![i] });
                    }
                }
            }
            if grouping == Grouping::Legacy {
                let names: Vec<String> = sub.iter().map(|s| s.keys.last().map(Key::name).unwrap_or_default()).collect();
                let order = lodash::js_key_order(&names);
                let mut slots: Vec<Option<Group>> = sub.into_iter().map(Some).collect();
                sub = order.into_iter().filter_map(|k| slots[k].take()).collect();
            }
            next.extend(sub);
        }
        groups = next;
    }

    let results: Vec<(Group, Map<String, Value>)> = groups
        .into_iter()
        .map(|g| {
            let data: Map<String, Value> = aggs.iter().map(|a| (a.output_key(), aggregate(&g.members, a, &value, grouping))).collect();
            (g, data)
        })
        .collect();

    if single_item {
        let mut root = Map::new();
        for (g, data) in results {
            insert_nested(&mut root, &g.keys, data);
        }
        let paired = PairedItem::Other(Box::new(Value::Array((0..items.len()).map(|i| json!({ "item": i })).collect())));
        return Ok(vec![Item { json: Value::Object(root).into(), binary: None, paired_item: Some(paired) }]);
    }
    let names: Vec<String> = split_by.iter().map(|f| normalize_field_name(f)).collect();
    Ok(results
        .into_iter()
        .map(|(g, mut data)| {
            for (name, key) in names.iter().zip(&g.keys).rev() {
                match key.value() {
                    Some(v) => {
                        if grouping == Grouping::Legacy {
                            // `{...splits, ...aggregations}`: an aggregation wins a clash.
                            data.entry(name.clone()).or_insert(v);
                        } else {
                            data.insert(name.clone(), v);
                        }
                    }
                    None => {
                        data.shift_remove(name.as_str());
                    }
                }
            }
            let paired = PairedItem::Other(Box::new(Value::Array(g.members.iter().map(|i| json!({ "item": i })).collect())));
            Item { json: Value::Object(data).into(), binary: None, paired_item: Some(paired) }
        })
        .collect())
}

/// The group key of a value, `None` when "Ignore items without valid fields
/// to group by" drops the item.
fn split_key(v: Option<&Value>, grouping: Grouping, skip_empty: bool) -> Option<Key> {
    let key = match grouping {
        Grouping::Legacy | Grouping::Strings => Key::Str(match v {
            Some(o @ (Value::Object(_) | Value::Array(_))) => json_stringify(o),
            other => js_to_string(other),
        }),
        Grouping::Typed => Key::Typed(match v {
            Some(o @ (Value::Object(_) | Value::Array(_))) => Some(Value::String(json_stringify(o))),
            other => other.cloned(),
        }),
    };
    // `typeof key !== 'number' && !key`, on the key as each generation forms
    // it: Summarize 1 tests the stringified key, Item Lists the raw value
    // (its null is stringified first, so kept).
    let empty_str = v.and_then(Value::as_str) == Some("");
    let skip = skip_empty
        && match grouping {
            Grouping::Legacy => empty_str || matches!(v, None | Some(Value::Bool(false))),
            Grouping::Strings => empty_str,
            Grouping::Typed => empty_str || matches!(v, None | Some(Value::Null | Value::Bool(false))),
        };
    if skip {
        return None;
    }
    Some(key)
}

fn insert_nested(root: &mut Map<String, Value>, keys: &[Key], data: Map<String, Value>) {
    let Some((first, rest)) = keys.split_first() else {
        root.extend(data);
        return;
    };
    let name = first.name();
    let slot = root.entry(name).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = slot {
        insert_nested(m, rest, data);
    }
    let entries: Vec<(String, Value)> = std::mem::take(root).into_iter().collect();
    *root = js_object(entries);
}

fn aggregate<'v>(members: &[usize], a: &Aggregation, value: &impl Fn(usize, &str) -> Option<Cow<'v, Value>>, grouping: Grouping) -> Value {
    let f = a.field.as_str();
    let include_empty = a.include_empty && (grouping != Grouping::Legacy || matches!(a.kind.as_str(), "append" | "concatenate"));
    let vals = || members.iter().map(|&i| value(i, f));
    let non_empty = || vals().filter(|v| !is_empty_value(v.as_deref()));
    match a.kind.as_str() {
        "append" => {
            let list: Vec<Value> = if include_empty { vals().map(|v| v.map(Cow::into_owned).unwrap_or(Value::Null)).collect() } else { non_empty().flatten().map(Cow::into_owned).collect() };
            Value::Array(list)
        }
        "concatenate" => {
            let parts: Vec<String> = if include_empty { vals().collect() } else { non_empty().collect::<Vec<_>>() }
                .into_iter()
                .map(|v| match v.as_deref() {
                    Some(o @ (Value::Object(_) | Value::Array(_) | Value::Null)) => json_stringify(o),
                    other => js_to_string(other),
                })
                .collect();
            Value::String(parts.join(a.separator.as_deref().unwrap_or(",")))
        }
        "sum" | "average" => {
            let nums: Vec<f64> = vals().filter_map(|v| v.and_then(|v| v.as_f64())).collect();
            let sum = nums.iter().fold(0.0, |acc, n| acc + n);
            if a.kind == "sum" {
                super::conditions::num_value(sum)
            } else if nums.is_empty() {
                Value::Null
            } else {
                super::conditions::num_value(sum / nums.len() as f64)
            }
        }
        "min" | "max" => {
            let mut best: Option<Cow<'v, Value>> = None;
            for v in non_empty().flatten() {
                let better = match &best {
                    None => true,
                    Some(b) if a.kind == "min" => lodash::js_lt(Some(&v), Some(b)),
                    Some(b) => lodash::js_gt(Some(&v), Some(b)),
                };
                if better {
                    best = Some(v);
                }
            }
            best.map(Cow::into_owned).unwrap_or(Value::Null)
        }
        "countUnique" => {
            // A JavaScript Set: primitives by value, every object distinct.
            let mut seen: Vec<Option<Value>> = vec![];
            let mut count = 0;
            let source: Vec<Option<Cow<'v, Value>>> = if include_empty { vals().collect() } else { non_empty().collect() };
            for v in source {
                let v = v.map(Cow::into_owned);
                if matches!(v, Some(Value::Object(_) | Value::Array(_))) {
                    count += 1;
                    continue;
                }
                if !seen.iter().any(|s| match (s, &v) {
                    (None, None) => true,
                    (Some(x), Some(y)) => json_equal(x, y) && std::mem::discriminant(x) == std::mem::discriminant(y),
                    _ => false,
                }) {
                    seen.push(v);
                    count += 1;
                }
            }
            json!(count)
        }
        _ => {
            if include_empty {
                json!(members.len())
            } else {
                json!(non_empty().count())
            }
        }
    }
}
