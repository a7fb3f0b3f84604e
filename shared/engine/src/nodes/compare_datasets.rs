//! Compare Datasets (1, 2, 2.1, 2.2, 2.3): matches items of input A with
//! input B on key fields and sorts them into four outputs: in A only, same,
//! different, in B only.

use serde_json::{json, Map, Value};

use super::lodash::{self, get, get_field, is_equal, is_unsafe_key, type_of};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

struct Pair {
    field1: String,
    field2: String,
}

struct Options {
    version: f64,
    fuzzy: bool,
    dot: bool,
    all_matches: bool,
    skip: Vec<String>,
    resolve: String,
    prefer: String,
    except: String,
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let version = ctx.version();
    let raw = ctx.param("mergeByFields.values", 0, json!([{ "field1": "", "field2": "" }]))?;
    let pairs = match_fields(&raw)?;
    let fuzzy = if version >= 2.0 { ctx.param_bool("fuzzyCompare", 0, false)? } else { ctx.param_bool("options.fuzzyCompare", 0, false)? };
    let dot = !ctx.param_bool("options.disableDotNotation", 0, false)?;
    let resolve = ctx.param_str("resolve", 0, if version >= 2.1 { "includeBoth" } else { "preferInput2" })?;
    let (prefer, except) = if resolve == "mix" { (ctx.param_str("preferWhenMix", 0, "input1")?, ctx.param_str("exceptWhenMix", 0, "")?) } else { (String::new(), String::new()) };
    let options = Options {
        version,
        fuzzy,
        dot,
        all_matches: ctx.param_str("options.multipleMatches", 0, "first")? == "all",
        skip: ctx.param_str("options.skipFields", 0, "")?.split(',').map(|f| f.trim().to_string()).collect(),
        resolve,
        prefer,
        except,
    };
    let a = non_empty(ctx.input(0).to_vec());
    let b = non_empty(ctx.input(1).to_vec());
    if version < 2.2 {
        require_fields(&a, pairs.iter().map(|p| p.field1.as_str()), dot, "Input A")?;
        require_fields(&b, pairs.iter().map(|p| p.field2.as_str()), dot, "Input B")?;
    }
    let outs = find_matches(a, b, &pairs, &options)?;
    Ok(NodeOutput::many(outs.to_vec()))
}

fn match_fields(raw: &Value) -> Result<Vec<Pair>> {
    let list = raw.as_array().cloned().unwrap_or_default();
    let s = |v: &Value, k: &str| v.get(k).map(|x| lodash::js_to_string(Some(x))).unwrap_or_default();
    if list.len() == 1 && s(&list[0], "field1").is_empty() && s(&list[0], "field2").is_empty() {
        return Err(EngineError::node("You need to define at least one pair of fields in \"Fields to Match\" to match on"));
    }
    let mut pairs = vec![];
    for (i, p) in list.iter().enumerate() {
        let (field1, field2) = (s(p, "field1"), s(p, "field2"));
        if field1.is_empty() || field2.is_empty() {
            return Err(EngineError::node(format!(
                "You need to define both fields in \"Fields to Match\" for pair {},\n\t\t\t\t field 1 = '{field1}'\n\t\t\t\t field 2 = '{field2}'",
                i + 1
            )));
        }
        pairs.push(Pair { field1, field2 });
    }
    Ok(pairs)
}

/// Items with an empty `json` take no part.
fn non_empty(items: Vec<Item>) -> Vec<Item> {
    items.into_iter().filter(|i| !matches!(&*i.json, Value::Object(o) if o.is_empty())).collect()
}

fn require_fields<'f>(items: &[Item], fields: impl Iterator<Item = &'f str>, dot: bool, label: &str) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    for f in fields {
        let present = items.iter().any(|it| if dot { get(&it.json, f).is_some() } else { it.json.get(f).is_some() });
        if !present {
            return Err(EngineError::node(format!("Field '{f}' is not present in any of items in '{label}'")));
        }
    }
    Ok(())
}

fn is_falsy(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Null)) || v.and_then(Value::as_str) == Some("") || v.and_then(Value::as_array).is_some_and(Vec::is_empty)
}

/// n8n's `fuzzyCompare(useFuzzy, version)`: strict `isEqual`, or tolerant of
/// number/string/boolean/JSON-text forms of the same value.
pub(crate) fn entries_equal(a: Option<&Value>, b: Option<&Value>, fuzzy: bool, version: f64) -> bool {
    if !fuzzy {
        return is_equal(a, b);
    }
    let (ta, tb) = (type_of(a), type_of(b));
    let null = |v: Option<&Value>| matches!(v, Some(Value::Null));
    if !null(a) && !null(b) && ta == tb {
        return is_equal(a, b);
    }
    let zeroish = |v: Option<&Value>| null(v) || v.and_then(Value::as_f64) == Some(0.0) && v.is_some_and(Value::is_number) || v.and_then(Value::as_str) == Some("0");
    if version >= 2.0 && ((null(a) && zeroish(b)) || (null(b) && zeroish(a))) {
        return true;
    }
    if is_falsy(a) && is_falsy(b) || is_falsy(a) && b.is_none() || a.is_none() && is_falsy(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Number(_)), Some(Value::String(s))) | (Some(Value::String(s)), Some(Value::Number(_))) => {
            let n = if a.is_some_and(Value::is_number) { a } else { b };
            return lodash::js_to_string(n) == *s;
        }
        (Some(o @ (Value::Object(_) | Value::Array(_))), Some(Value::String(s))) | (Some(Value::String(s)), Some(o @ (Value::Object(_) | Value::Array(_)))) => {
            return serde_json::from_str::<Value>(s).is_ok_and(|p| lodash::json_equal(&p, o));
        }
        (Some(Value::Bool(x)), Some(Value::String(s))) | (Some(Value::String(s)), Some(Value::Bool(x))) => {
            let l = s.to_lowercase();
            if (*x && (l == "true" || s == "1")) || (!*x && (l == "false" || s == "0")) {
                return true;
            }
        }
        (Some(Value::Bool(x)), Some(Value::Number(n))) | (Some(Value::Number(n)), Some(Value::Bool(x))) => {
            let n = n.as_f64();
            if (*x && n == Some(1.0)) || (!*x && n == Some(0.0)) {
                return true;
            }
        }
        _ => {}
    }
    is_equal(a, b)
}

fn find_matches(a: Vec<Item>, b: Vec<Item>, pairs: &[Pair], o: &Options) -> Result<[Vec<Item>; 4]> {
    if !o.dot {
        if let Some(f) = o.skip.iter().find(|f| f.contains('.')) {
            return Err(EngineError::node(format!("Dot notation is disabled, but field to skip comparing '{f}' contains dot")));
        }
    }
    let eq = |x: Option<&Value>, y: Option<&Value>| entries_equal(x, y, o.fuzzy, o.version);
    let mut matched: Vec<(usize, Vec<usize>)> = vec![];
    let mut only_a = vec![];
    let mut matched_b = vec![false; b.len()];
    for (i, entry) in a.iter().enumerate() {
        // The lookup is keyed by the B field (a later pair with the same B field wins).
        let mut lookup: Vec<(String, Option<Value>)> = vec![];
        for p in pairs {
            let v = get_field(&entry.json, &p.field1, o.dot).map(|c| c.into_owned());
            match lookup.iter_mut().find(|(k, _)| *k == p.field2) {
                Some(slot) => slot.1 = v,
                None => lookup.push((p.field2.clone(), v)),
            }
        }
        if lookup.iter().any(|(_, v)| v.is_none()) {
            only_a.push(i);
            continue;
        }
        let hits = |cand: &Item| lookup.iter().all(|(k, v)| eq(v.as_ref(), get_field(&cand.json, k, o.dot).as_deref()));
        let found: Vec<usize> = if o.all_matches { (0..b.len()).filter(|&j| hits(&b[j])).collect() } else { (0..b.len()).find(|&j| hits(&b[j])).into_iter().collect() };
        for &j in &found {
            matched_b[j] = true;
        }
        if found.is_empty() {
            only_a.push(i);
        } else {
            matched.push((i, found));
        }
    }

    let mut same = vec![];
    let mut different = vec![];
    for (i, found) in &matched {
        let entry = &a[*i];
        let mut copy: Option<Item> = None;
        for &j in found {
            let m = &b[j];
            let (ja, jb) = (without_skipped(&entry.json, &o.skip, o.dot), without_skipped(&m.json, &o.skip, o.dot));
            let equal = if o.fuzzy {
                ja.as_object().into_iter().flatten().all(|(k, v)| eq(Some(v), jb.get(k)))
            } else {
                eq(Some(&ja), Some(&jb))
            };
            if equal {
                if copy.is_none() {
                    copy = Some(if o.fuzzy && o.resolve == "preferInput2" { m.clone() } else { entry.clone() });
                }
                continue;
            }
            different.push(match o.resolve.as_str() {
                "preferInput1" => entry.clone(),
                "preferInput2" => m.clone(),
                "mix" => combine(entry, m, o),
                _ => compare_items(entry, m, pairs, o)?,
            });
        }
        same.extend(copy);
    }
    let only_b = (0..b.len()).filter(|&j| !matched_b[j]).map(|j| b[j].clone()).collect();
    Ok([only_a.into_iter().map(|i| a[i].clone()).collect(), same, different, only_b])
}

/// The item's JSON without the "Fields to Skip Comparing".
fn without_skipped(json: &Value, skip: &[String], dot: bool) -> Value {
    let mut v = json.clone();
    if skip.iter().all(|s| s.is_empty()) {
        return v;
    }
    for f in skip {
        lodash::unset_field(&mut v, f, dot && skip.iter().any(|s| s.contains('.')));
    }
    v
}

/// "Use a Mix of Versions": the preferred item with the except-fields of the
/// other (a falsy value became null before 2.3; from 2.3 only a missing one).
fn combine(a: &Item, b: &Item, o: &Options) -> Item {
    let (except, dot) = (o.except.as_str(), o.dot);
    let (entry, other) = if o.prefer == "input1" { (a, b) } else { (b, a) };
    let mut json = Value::clone(&entry.json);
    let fields: Vec<&str> = if except.is_empty() { vec![] } else { except.split(',').map(str::trim).collect() };
    for f in fields {
        if !dot {
            match other.json.get(f) {
                Some(v) => set_key(&mut json, f, v.clone()),
                None => remove_key(&mut json, f),
            }
        } else if !lodash::to_path(f).iter().any(|s| is_unsafe_key(s)) {
            let v = get(&other.json, f).map(|c| c.into_owned()).filter(|v| o.version >= 2.3 || lodash::truthy(Some(v))).unwrap_or(Value::Null);
            if f.contains('.') {
                remove_key(&mut json, f);
            }
            lodash::set(&mut json, f, v);
        }
    }
    Item { json: json.into(), binary: entry.binary.clone(), paired_item: entry.paired_item.clone() }
}

fn set_key(v: &mut Value, k: &str, x: Value) {
    if let Value::Object(o) = v {
        o.insert(k.to_string(), x);
    }
}

fn remove_key(v: &mut Value, k: &str) {
    if let Value::Object(o) = v {
        o.shift_remove(k);
    }
}

/// "Include Both Versions": keys, same fields, and each differing field from both sides.
fn compare_items(a: &Item, b: &Item, pairs: &[Pair], o: &Options) -> Result<Item> {
    let empty = Map::new();
    let (ja, jb) = (a.json.as_object().unwrap_or(&empty), b.json.as_object().unwrap_or(&empty));
    let mut keys = Map::new();
    for p in pairs {
        match ja.get(&p.field1) {
            Some(v) => {
                keys.insert(p.field1.clone(), v.clone());
            }
            None => {
                keys.shift_remove(p.field1.as_str());
            }
        }
    }
    let mut all: Vec<&String> = ja.keys().collect();
    all.extend(jb.keys().filter(|k| !ja.contains_key(*k)));
    let compared: Vec<&String> = if o.fuzzy && o.version >= 2.1 { all.clone() } else { ja.keys().filter(|k| jb.contains_key(*k)).collect() };
    let eq = |x: Option<&Value>, y: Option<&Value>| entries_equal(x, y, o.fuzzy, o.version);
    let mut same = Map::new();
    for k in compared {
        if eq(ja.get(k), jb.get(k)) {
            same.insert(k.clone(), ja.get(k).cloned().unwrap_or(Value::Null));
        }
    }
    let nullish = |v: Option<&Value>| -> Value {
        if o.version >= 2.0 {
            v.cloned().unwrap_or(Value::Null)
        } else {
            v.filter(|x| lodash::truthy(Some(x))).cloned().unwrap_or(Value::Null)
        }
    };
    let (first, second) = if o.version >= 2.0 { ("inputA", "inputB") } else { ("input1", "input2") };
    let mut different = Map::new();
    let mut skipped = Map::new();
    for (i, k) in all.into_iter().filter(|k| !same.contains_key(*k)).enumerate() {
        match o.resolve.as_str() {
            "preferInput1" => {
                different.insert(k.clone(), nullish(ja.get(k)));
            }
            "preferInput2" => {
                different.insert(k.clone(), nullish(jb.get(k)));
            }
            _ => {
                let (mut x, mut y) = (nullish(ja.get(k)), nullish(jb.get(k)));
                if o.version >= 2.1 && o.dot && !o.skip.iter().any(|f| f == k) {
                    let nested: Vec<&String> = o.skip.iter().filter(|f| f.starts_with(k.as_str()) && f.contains('.')).collect();
                    if !nested.is_empty() && (!is_js_object(&x) || !is_js_object(&y)) {
                        return Err(EngineError::node(format!("The field '{k}' in item {i} is not an object. It is not possible to use dot notation.")));
                    }
                    if !nested.is_empty() {
                        let mut sx = Value::Object(Map::new());
                        let mut sy = Value::Object(Map::new());
                        for f in nested {
                            let inner = f.replacen(&format!("{k}."), "", 1);
                            lodash::set(&mut sx, &inner, get(&x, &inner).map(|c| c.into_owned()).unwrap_or(Value::Null));
                            lodash::set(&mut sy, &inner, get(&y, &inner).map(|c| c.into_owned()).unwrap_or(Value::Null));
                            lodash::unset(&mut x, &inner);
                            lodash::unset(&mut y, &inner);
                        }
                        skipped.insert(k.clone(), json!({ first: sx, second: sy }));
                    }
                    different.insert(k.clone(), json!({ first: x, second: y }));
                } else if o.skip.iter().any(|f| f == k) {
                    skipped.insert(k.clone(), json!({ first: x, second: y }));
                } else {
                    different.insert(k.clone(), json!({ first: x, second: y }));
                }
            }
        }
    }
    let mut out = Map::new();
    out.insert("keys".into(), Value::Object(keys));
    out.insert("same".into(), Value::Object(same));
    out.insert("different".into(), Value::Object(different));
    if !skipped.is_empty() {
        out.insert("skipped".into(), Value::Object(skipped));
    }
    Ok(Item::new(Value::Object(out)))
}

/// `typeof v === 'object'` (null included).
fn is_js_object(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_) | Value::Null)
}
