//! Merge, every version as n8n runs it: v1's modes (append, keep/remove key
//! matches, merge by index or key, multiplex, pass-through, wait), v2's
//! append / combine (by fields, position, multiplex) / choose branch, and v3's
//! 2–10 inputs with append, combine by fields / position / all combinations
//! and choose branch. The SQL Query mode is refused: there is no SQL engine.

use serde_json::{json, Map, Value};

use super::compare_datasets::entries_equal;
use super::lodash::{get_field, js_order, js_to_string};
use super::{NodeContext, NodeOutput};
use crate::data::{paired_ref, Item, PairedItem};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let v = ctx.version();
    if v < 2.0 {
        return v1(ctx);
    }
    let count = if v >= 3.0 { ctx.param_f64("numberInputs", 0, 2.0)?.max(1.0) as usize } else { 2 };
    let inputs: Vec<Vec<Item>> = (0..count).map(|k| lineage(ctx, k)).collect();
    let mode = ctx.param_str("mode", 0, "append")?;
    let out = match mode.as_str() {
        "append" => inputs.into_iter().flatten().collect(),
        "chooseBranch" => choose_branch(ctx, inputs, v)?,
        "combine" => {
            let by = if v >= 3.0 { ctx.param_str("combineBy", 0, "combineByFields")? } else { ctx.param_str("combinationMode", 0, "mergeByFields")? };
            let clash = Clash::read(ctx)?;
            match by.as_str() {
                "multiplex" | "combineAll" => combine_all(inputs, &clash),
                "mergeByPosition" => by_position_v2(ctx, inputs, &clash)?,
                "combineByPosition" => by_position_v3(ctx, inputs, &clash)?,
                "mergeByFields" | "combineByFields" => by_fields(ctx, inputs, &clash)?,
                other => return Err(EngineError::node(format!("The combine mode '{other}' is not known"))),
            }
        }
        "combineBySql" => {
            return Err(EngineError::node_with(
                "The Merge node's SQL Query mode is not supported by this engine",
                "There is no SQL engine to run the query on. Use Combine (by matching fields, by position or all combinations) instead, or a Code node for custom joins.",
            ))
        }
        other => return Err(EngineError::node(format!("The mode '{other}' is not known"))),
    };
    Ok(NodeOutput::one(out))
}

/// Items of input `k` as the node sees them: n8n stamps each with its
/// origin (`{item, input}`) before the node runs.
fn lineage(ctx: &NodeContext<'_>, k: usize) -> Vec<Item> {
    ctx.input(k)
        .iter()
        .enumerate()
        .map(|(i, it)| Item { json: it.json.clone(), binary: it.binary.clone(), paired_item: Some(paired_ref(i, k)) })
        .collect()
}

/// n8n's `preparePairedItemDataArray`.
fn paired_list(p: Option<&PairedItem>) -> Vec<Value> {
    match p.map(PairedItem::to_value) {
        None | Some(Value::Null) => vec![],
        Some(Value::Number(n)) => vec![json!({ "item": n })],
        Some(Value::Array(a)) => a,
        Some(other) => vec![other],
    }
}

fn paired_of(list: Vec<Value>) -> Option<PairedItem> {
    Some(PairedItem::from_value(Value::Array(list)))
}

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// `addSuffixToEntriesKeys`: every top-level key gets `_<suffix>`.
fn suffixed(items: Vec<Item>, suffix: &str) -> Vec<Item> {
    items
        .into_iter()
        .map(|mut it| {
            let m: Map<String, Value> = obj(&it.json).into_iter().map(|(k, v)| (format!("{k}_{suffix}"), v)).collect();
            it.json = expression::Json::new(Value::Object(m));
            it
        })
        .collect()
}

/// Clash handling (`options.clashHandling.values`).
struct Clash {
    resolve: Option<String>,
    mode: Option<String>,
    override_empty: bool,
}

impl Clash {
    fn read(ctx: &mut NodeContext<'_>) -> Result<Clash> {
        let v = ctx.param("options.clashHandling.values", 0, json!({}))?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(Clash { resolve: s("resolveClash"), mode: s("mergeMode"), override_empty: v.get("overrideEmpty").and_then(Value::as_bool).unwrap_or(false) })
    }

    fn is(&self, r: &str) -> bool {
        self.resolve.as_deref() == Some(r)
    }

    /// n8n's `selectMergeMethod`: lodash `merge` (deep) or `assign`
    /// (shallow) into a new object, optionally keeping the earlier value
    /// where the later one is empty (`overrideEmpty`, only with an explicit mode).
    fn merge(&self, parts: &[&Value]) -> Value {
        let shallow = self.mode.as_deref() == Some("shallowMerge");
        let keep_filled = self.override_empty && matches!(self.mode.as_deref(), Some("deepMerge" | "shallowMerge"));
        let mut out = Map::new();
        for p in parts {
            if let Value::Object(src) = p {
                if shallow {
                    for (k, v) in src {
                        if keep_filled && is_blank(v) && out.contains_key(k) {
                            continue;
                        }
                        out.insert(k.clone(), v.clone());
                    }
                } else {
                    merge_into(&mut out, src, keep_filled);
                }
            }
        }
        Value::Object(js_order(out))
    }
}

fn is_blank(v: &Value) -> bool {
    v.is_null() || v.as_str() == Some("")
}

/// lodash `merge` of `src` into `dst`: objects merge key by key, arrays
/// index by index, anything else replaces.
fn merge_into(dst: &mut Map<String, Value>, src: &Map<String, Value>, keep_filled: bool) {
    for (k, sv) in src {
        if keep_filled && is_blank(sv) && dst.contains_key(k) {
            continue;
        }
        let merged = merge_value(dst.get(k), sv, keep_filled);
        dst.insert(k.clone(), merged);
    }
}

fn merge_value(dst: Option<&Value>, src: &Value, keep_filled: bool) -> Value {
    match (dst, src) {
        (Some(Value::Object(d)), Value::Object(s)) => {
            let mut d = d.clone();
            merge_into(&mut d, s, keep_filled);
            Value::Object(d)
        }
        // lodash keeps an array target and sets the object's keys on it,
        // which JSON does not show.
        (Some(Value::Array(d)), Value::Object(_)) => Value::Array(d.clone()),
        (_, Value::Object(s)) => {
            let mut d = Map::new();
            merge_into(&mut d, s, keep_filled);
            Value::Object(d)
        }
        (Some(Value::Array(d)), Value::Array(s)) => {
            let mut d = d.clone();
            merge_array(&mut d, s, keep_filled);
            Value::Array(d)
        }
        (_, Value::Array(s)) => {
            let mut d = vec![];
            merge_array(&mut d, s, keep_filled);
            Value::Array(d)
        }
        (_, other) => other.clone(),
    }
}

fn merge_array(dst: &mut Vec<Value>, src: &[Value], keep_filled: bool) {
    for (i, sv) in src.iter().enumerate() {
        if i < dst.len() {
            if keep_filled && is_blank(sv) {
                continue;
            }
            dst[i] = merge_value(Some(&dst[i]), sv, keep_filled);
        } else {
            dst.push(merge_value(None, sv, keep_filled));
        }
    }
}

fn merged_binary(parts: &[&Item]) -> Option<expression::Json> {
    let mut out = Map::new();
    for p in parts {
        if let Some(Value::Object(b)) = p.binary.as_deref() {
            merge_into(&mut out, b, false);
        }
    }
    (!out.is_empty()).then(|| expression::Json::new(Value::Object(out)))
}

// ---------------------------------------------------------------- choose branch

fn choose_branch(ctx: &mut NodeContext<'_>, inputs: Vec<Vec<Item>>, v: f64) -> Result<Vec<Item>> {
    let output = ctx.param_str("output", 0, if v >= 3.0 { "specifiedInput" } else { "input1" })?;
    Ok(match output.as_str() {
        "empty" => {
            // n8n pairs the empty item with the items of inputs 1 and 2.
            let paired = inputs.iter().take(2).flatten().flat_map(|it| paired_list(it.paired_item.as_ref())).collect();
            vec![Item { json: expression::Json::new(json!({})), binary: None, paired_item: paired_of(paired) }]
        }
        "input2" if v < 3.0 => inputs.into_iter().nth(1).unwrap_or_default(),
        "specifiedInput" if v >= 3.0 => {
            let n = ctx.param_f64("useDataOfInput", 0, 1.0)?;
            if n > inputs.len() as f64 {
                return Err(EngineError::node_with(
                    format!("Input {} doesn't exist", js_to_string(Some(&json!(n)))),
                    format!("The node has only {} inputs, so selecting input {} is not possible.", inputs.len(), js_to_string(Some(&json!(n)))),
                ));
            }
            let idx = (n as usize).saturating_sub(1);
            inputs.into_iter().nth(idx).unwrap_or_default()
        }
        "input1" if v < 3.0 => inputs.into_iter().next().unwrap_or_default(),
        _ => vec![],
    })
}

// ---------------------------------------------------------------- all combinations

fn combine_all(inputs: Vec<Vec<Item>>, clash: &Clash) -> Vec<Item> {
    let mut it = inputs.into_iter();
    let (mut a, mut b) = (it.next().unwrap_or_default(), it.next().unwrap_or_default());
    if clash.is("preferInput1") {
        std::mem::swap(&mut a, &mut b);
    }
    if clash.is("addSuffix") {
        a = suffixed(a, "1");
        b = suffixed(b, "2");
    }
    let mut out = Vec::with_capacity(a.len() * b.len());
    for x in &a {
        for y in &b {
            let paired = [x.paired_item.as_ref(), y.paired_item.as_ref()].into_iter().flatten().map(PairedItem::to_value).collect();
            out.push(Item { json: expression::Json::new(clash.merge(&[&x.json, &y.json])), binary: merged_binary(&[x, y]), paired_item: paired_of(paired) });
        }
    }
    out
}

// ---------------------------------------------------------------- by position

/// v2 `mergeByPosition`.
fn by_position_v2(ctx: &mut NodeContext<'_>, inputs: Vec<Vec<Item>>, clash: &Clash) -> Result<Vec<Item>> {
    let include_unpaired = ctx.param_bool("options.includeUnpaired", 0, false)?;
    let mut it = inputs.into_iter();
    let (mut a, mut b) = (it.next().unwrap_or_default(), it.next().unwrap_or_default());
    if a.is_empty() || b.is_empty() {
        // n8n: the data of the input that has some
        return Ok(a.into_iter().chain(b).collect());
    }
    if clash.is("preferInput1") {
        std::mem::swap(&mut a, &mut b);
    }
    if clash.is("addSuffix") {
        a = suffixed(a, "1");
        b = suffixed(b, "2");
    }
    let n = if include_unpaired { a.len().max(b.len()) } else { a.len().min(b.len()) };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) => {
                let paired = [x.paired_item.as_ref(), y.paired_item.as_ref()].into_iter().flatten().map(PairedItem::to_value).collect();
                out.push(Item { json: expression::Json::new(clash.merge(&[&x.json, &y.json])), binary: merged_binary(&[x, y]), paired_item: paired_of(paired) });
            }
            (Some(x), None) => out.push(x.clone()),
            (None, Some(y)) => out.push(y.clone()),
            (None, None) => {}
        }
    }
    Ok(out)
}

/// v3 `combineByPosition` over any number of inputs; the preferred input
/// (`preferInputN`, else the last) is merged last.
fn by_position_v3(ctx: &mut NodeContext<'_>, mut inputs: Vec<Vec<Item>>, clash: &Clash) -> Result<Vec<Item>> {
    let include_unpaired = ctx.param_bool("options.includeUnpaired", 0, false)?;
    let preferred_idx = match clash.resolve.as_deref().and_then(|r| r.strip_prefix("preferInput")) {
        Some(n) => n.parse::<usize>().unwrap_or(0).saturating_sub(1),
        None => inputs.len().saturating_sub(1),
    };
    // n8n takes the preferred input before adding suffixes, so it is merged
    // in with its own field names.
    let preferred = inputs.get(preferred_idx).cloned().unwrap_or_default();
    if clash.is("addSuffix") {
        inputs = inputs.into_iter().enumerate().map(|(k, items)| suffixed(items, &(k + 1).to_string())).collect();
    }
    let lens = inputs.iter().map(Vec::len).chain([preferred.len()]);
    let n = if include_unpaired { lens.max().unwrap_or(0) } else { lens.min().unwrap_or(0) };
    let empty = Item::new(json!({}));
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let pref = preferred.get(i).unwrap_or(&empty);
        let rest: Vec<&Item> = inputs.iter().map(|input| input.get(i).unwrap_or(&empty)).collect();
        let parts: Vec<&Value> = rest.iter().map(|e| &*e.json).chain([&*pref.json]).collect();
        let mut bin_parts = rest.clone();
        bin_parts.push(pref);
        let paired = rest.iter().chain([&pref]).filter_map(|e| e.paired_item.as_ref()).map(PairedItem::to_value).collect();
        out.push(Item { json: expression::Json::new(clash.merge(&parts)), binary: merged_binary(&bin_parts), paired_item: paired_of(paired) });
    }
    Ok(out)
}

// ---------------------------------------------------------------- by fields

struct FieldPair {
    field1: String,
    field2: String,
}

struct MatchOptions {
    dot: bool,
    fuzzy: bool,
    first_only: bool,
    join: String,
    output_from: String,
}

struct Matches {
    matched: Vec<(Item, Vec<Item>)>,
    matched2: Vec<Item>,
    unmatched1: Vec<Item>,
    unmatched2: Vec<Item>,
}

/// n8n's `checkMatchFieldsInput`.
fn check_pairs(pairs: &[FieldPair]) -> Result<()> {
    if pairs.len() == 1 && pairs[0].field1.is_empty() && pairs[0].field2.is_empty() {
        return Err(EngineError::node("You need to define at least one pair of fields in \"Fields to Match\" to match on"));
    }
    for (i, p) in pairs.iter().enumerate() {
        if p.field1.is_empty() || p.field2.is_empty() {
            return Err(EngineError::node(format!(
                "You need to define both fields in \"Fields to Match\" for pair {},\n\t\t\t\t field 1 = '{}'\n\t\t\t\t field 2 = '{}'",
                i + 1,
                p.field1,
                p.field2
            )));
        }
    }
    Ok(())
}

/// n8n's `checkInput` (v2.0): every field must exist in some item.
fn check_input(items: &[Item], fields: &[&str], dot: bool, label: &str) -> Result<()> {
    for f in fields {
        let present = items.iter().any(|it| if dot { get_field(&it.json, f, true).is_some() } else { it.json.get(*f).is_some() });
        if !present {
            return Err(EngineError::node(format!("Field '{f}' is not present in any of items in '{label}'")));
        }
    }
    Ok(())
}

fn field_value<'v>(json: &'v Value, path: &str, dot: bool) -> Option<std::borrow::Cow<'v, Value>> {
    if dot {
        get_field(json, path, true)
    } else {
        json.get(path).map(std::borrow::Cow::Borrowed)
    }
}

fn find_matches(in1: Vec<Item>, in2: Vec<Item>, pairs: &[FieldPair], o: &MatchOptions) -> Matches {
    let mut m = Matches { matched: vec![], matched2: vec![], unmatched1: vec![], unmatched2: vec![] };
    let mut used2 = vec![false; in2.len()];
    let split = o.output_from == "both" || o.join == "enrichInput1" || o.join == "enrichInput2";
    'entries: for e1 in in1 {
        // lookup keyed by field2 (a later pair with the same field2 wins)
        let mut lookup: Vec<(String, Value)> = vec![];
        for p in pairs {
            let v = field_value(&e1.json, &p.field1, o.dot).map(|c| c.into_owned());
            let Some(v) = v else {
                m.unmatched1.push(e1);
                continue 'entries;
            };
            match lookup.iter_mut().find(|(k, _)| *k == p.field2) {
                Some(slot) => slot.1 = v,
                None => lookup.push((p.field2.clone(), v)),
            }
        }
        let mut found = vec![];
        for (i, e2) in in2.iter().enumerate() {
            let ok = lookup.iter().all(|(k, want)| {
                let got = field_value(&e2.json, k, o.dot);
                entries_equal(Some(want), got.as_deref(), o.fuzzy, 1.0)
            });
            if ok {
                found.push(i);
                if o.first_only {
                    break;
                }
            }
        }
        if found.is_empty() {
            m.unmatched1.push(e1);
            continue;
        }
        for &i in &found {
            used2[i] = true;
        }
        if split {
            for &i in &found {
                m.matched.push((e1.clone(), vec![in2[i].clone()]));
            }
        } else {
            m.matched.push((e1, found.iter().map(|&i| in2[i].clone()).collect()));
        }
    }
    for (i, e2) in in2.into_iter().enumerate() {
        if used2[i] {
            m.matched2.push(e2);
        } else {
            m.unmatched2.push(e2);
        }
    }
    m
}

/// n8n's `mergeMatched`. `entry` items come from input 1, or from input 2
/// when `swapped` (v2's Enrich Input 2 matches input 2's items against input
/// 1). v2 names "input 2 wins" `preferInput2`, v3 "the last input wins"
/// `preferLast`; any other value leaves the merged item empty, as in n8n.
fn merge_matched(matched: Vec<(Item, Vec<Item>)>, clash: &Clash, join: &str, v3: bool, swapped: bool) -> Vec<Item> {
    let (entry_wins, matches_win) = match (v3, swapped) {
        (true, _) => ("preferInput1", "preferLast"),
        (false, false) => ("preferInput1", "preferInput2"),
        (false, true) => ("preferInput2", "preferInput1"),
    };
    let resolve = match clash.resolve.as_deref() {
        Some(r) => r.to_string(),
        None if v3 && join == "enrichInput2" => "preferInput1".into(),
        None if v3 => "preferLast".into(),
        None => "preferInput2".into(),
    };
    let (entry_suffix, match_suffix) = if swapped { ("2", "1") } else { ("1", "2") };
    matched
        .into_iter()
        .map(|(entry, matches)| {
            let (entry, matches) = if resolve == "addSuffix" { (suffixed(vec![entry], entry_suffix).remove(0), suffixed(matches, match_suffix)) } else { (entry, matches) };
            let order: Vec<&Item> = if resolve == entry_wins {
                matches.iter().chain([&entry]).collect()
            } else if resolve == matches_win || resolve == "addSuffix" {
                [&entry].into_iter().chain(matches.iter()).collect()
            } else {
                vec![]
            };
            let json = if order.is_empty() { json!({}) } else { clash.merge(&order.iter().map(|e| &*e.json).collect::<Vec<_>>()) };
            let paired = order.iter().flat_map(|e| paired_list(e.paired_item.as_ref())).collect();
            Item { json: expression::Json::new(json), binary: merged_binary(&order), paired_item: paired_of(paired) }
        })
        .collect()
}

fn with_source(items: Vec<Item>, source: &str) -> Vec<Item> {
    items
        .into_iter()
        .map(|mut it| {
            let mut m = obj(&it.json);
            m.insert("_source".into(), json!(source));
            it.json = expression::Json::new(Value::Object(m));
            it
        })
        .collect()
}

fn by_fields(ctx: &mut NodeContext<'_>, inputs: Vec<Vec<Item>>, clash: &Clash) -> Result<Vec<Item>> {
    let v = ctx.version();
    let v3 = v >= 3.0;
    let pairs: Vec<FieldPair> = if v3 && !ctx.param_bool("advanced", 0, false)? {
        ctx.param_str("fieldsToMatchString", 0, "")?
            .split(',')
            .map(|f| FieldPair { field1: f.trim().to_string(), field2: f.trim().to_string() })
            .collect()
    } else {
        let values = ctx.param("mergeByFields.values", 0, json!([]))?;
        values
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|p| FieldPair {
                        field1: p.get("field1").map(|f| js_to_string(Some(f))).unwrap_or_default(),
                        field2: p.get("field2").map(|f| js_to_string(Some(f))).unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    check_pairs(&pairs)?;
    let join = ctx.param_str("joinMode", 0, "keepMatches")?;
    let output_from = ctx.param_str("outputDataFrom", 0, "both")?;
    let o = MatchOptions {
        dot: !ctx.param_bool("options.disableDotNotation", 0, false)?,
        fuzzy: ctx.param_bool("options.fuzzyCompare", 0, false)?,
        first_only: ctx.param_str("options.multipleMatches", 0, "all")? == "first",
        join: join.clone(),
        output_from: output_from.clone(),
    };
    let mut it = inputs.into_iter();
    let (in1, in2) = (it.next().unwrap_or_default(), it.next().unwrap_or_default());
    if v < 2.1 {
        check_input(&in1, &pairs.iter().map(|p| p.field1.as_str()).collect::<Vec<_>>(), o.dot, "Input 1")?;
        check_input(&in2, &pairs.iter().map(|p| p.field2.as_str()).collect::<Vec<_>>(), o.dot, "Input 2")?;
    }
    if in1.is_empty() || in2.is_empty() {
        if in1.is_empty() && join == "keepNonMatches" && output_from == "input1" {
            return Ok(vec![]);
        }
        if in2.is_empty() && join == "keepNonMatches" && output_from == "input2" {
            return Ok(vec![]);
        }
        return Ok(match join.as_str() {
            "keepMatches" => vec![],
            "enrichInput1" if in1.is_empty() => vec![],
            "enrichInput2" if in2.is_empty() => vec![],
            // the data of the input that has some
            _ => in1.into_iter().chain(in2).collect(),
        });
    }
    if !v3 && join == "enrichInput2" {
        // v2 looks input 2's items up in input 1
        let swapped_pairs: Vec<FieldPair> = pairs.iter().map(|p| FieldPair { field1: p.field2.clone(), field2: p.field1.clone() }).collect();
        let m = find_matches(in2, in1, &swapped_pairs, &o);
        let mut out = merge_matched(m.matched, clash, &join, false, true);
        out.extend(if clash.is("addSuffix") { suffixed(m.unmatched1, "2") } else { m.unmatched1 });
        return Ok(out);
    }
    let m = find_matches(in1, in2, &pairs, &o);
    Ok(match join.as_str() {
        "keepMatches" | "keepEverything" => {
            let mut out = match output_from.as_str() {
                "input1" => m.matched.iter().map(|(e, _)| e.clone()).collect(),
                "input2" => m.matched2,
                "both" => merge_matched(m.matched, clash, "", v3, false),
                _ => vec![],
            };
            if join == "keepEverything" {
                let (u1, u2) = if clash.is("addSuffix") { (suffixed(m.unmatched1, "1"), suffixed(m.unmatched2, "2")) } else { (m.unmatched1, m.unmatched2) };
                out.extend(u1);
                out.extend(u2);
            }
            out
        }
        "keepNonMatches" => match output_from.as_str() {
            "input1" => m.unmatched1,
            "input2" => m.unmatched2,
            "both" => with_source(m.unmatched1, "input1").into_iter().chain(with_source(m.unmatched2, "input2")).collect(),
            _ => vec![],
        },
        "enrichInput1" | "enrichInput2" => {
            let mut out = merge_matched(m.matched, clash, &join, v3, false);
            let (rest, suffix) = if join == "enrichInput1" { (m.unmatched1, "1") } else { (m.unmatched2, "2") };
            out.extend(if clash.is("addSuffix") { suffixed(rest, suffix) } else { rest });
            out
        }
        _ => vec![],
    })
}

// ---------------------------------------------------------------- v1

fn v1(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let mode = ctx.param_str("mode", 0, "append")?;
    let in1 = lineage(ctx, 0);
    let in2 = lineage(ctx, 1);
    let out = match mode.as_str() {
        "append" => in1.into_iter().chain(in2).collect(),
        "passThrough" => {
            if ctx.param_str("output", 0, "input1")? == "input1" {
                in1
            } else {
                in2
            }
        }
        "wait" => {
            let paired = (0..in1.len()).map(|i| json!({ "item": i })).collect();
            vec![Item { json: expression::Json::new(json!({})), binary: None, paired_item: paired_of(paired) }]
        }
        "multiplex" => {
            let mut out = vec![];
            for x in &in1 {
                for y in &in2 {
                    let mut m = obj(&x.json);
                    m.extend(obj(&y.json));
                    let paired = [x.paired_item.as_ref(), y.paired_item.as_ref()].into_iter().flatten().map(PairedItem::to_value).collect();
                    out.push(Item { json: expression::Json::new(Value::Object(js_order(m))), binary: None, paired_item: paired_of(paired) });
                }
            }
            out
        }
        "mergeByIndex" => {
            let join = ctx.param_str("join", 0, "left")?;
            if in1.is_empty() {
                return Ok(NodeOutput::one(if join == "outer" { in2 } else { vec![] }));
            }
            if in2.is_empty() {
                return Ok(NodeOutput::one(if join == "inner" { vec![] } else { in1 }));
            }
            let n = match join.as_str() {
                "inner" => in1.len().min(in2.len()),
                "outer" => in1.len().max(in2.len()),
                _ => in1.len(),
            };
            let mut out = vec![];
            for i in 0..n {
                match (in1.get(i), in2.get(i)) {
                    (Some(x), Some(y)) => {
                        let mut m = obj(&x.json);
                        for (k, v) in obj(&y.json) {
                            m.insert(k, v);
                        }
                        let mut bin = x.binary.as_deref().map(obj);
                        if let Some(b2) = y.binary.as_deref() {
                            bin.get_or_insert_with(Map::new).extend(obj(b2));
                        }
                        let paired = [x.paired_item.as_ref(), y.paired_item.as_ref()].into_iter().flatten().map(PairedItem::to_value).collect();
                        out.push(Item {
                            json: expression::Json::new(Value::Object(js_order(m))),
                            binary: bin.map(|b| expression::Json::new(Value::Object(b))),
                            paired_item: paired_of(paired),
                        });
                    }
                    (Some(x), None) => out.push(x.clone()),
                    (None, Some(y)) => out.push(y.clone()),
                    (None, None) => {}
                }
            }
            out
        }
        "keepKeyMatches" | "mergeByKey" | "removeKeyMatches" => key_matches(ctx, &mode, in1, in2)?,
        other => return Err(EngineError::node(format!("The mode '{other}' is not known"))),
    };
    Ok(NodeOutput::one(out))
}

/// v1 key modes: input 2's items are indexed by `String(value)` of
/// `propertyName2` (falsy values skipped); input 1's string or number values
/// look them up.
fn key_matches(ctx: &mut NodeContext<'_>, mode: &str, in1: Vec<Item>, in2: Vec<Item>) -> Result<Vec<Item>> {
    let p1 = ctx.param_str("propertyName1", 0, "")?;
    let p2 = ctx.param_str("propertyName2", 0, "")?;
    let overwrite = ctx.param_str("overwrite", 0, "always")?;
    if p1.is_empty() || p2.is_empty() {
        return Ok(if mode == "keepKeyMatches" { vec![] } else { in1 });
    }
    let mut index: std::collections::HashMap<String, Item> = std::collections::HashMap::new();
    for e in in2 {
        let Some(key) = get_field(&e.json, &p2, true).map(|c| c.into_owned()) else { continue };
        if !super::lodash::truthy(Some(&key)) {
            continue;
        }
        index.insert(js_to_string(Some(&key)), e);
    }
    let mut out = vec![];
    for mut e in in1 {
        let reference = get_field(&e.json, &p1, true).map(|c| c.into_owned());
        let key = match &reference {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(n @ Value::Number(_)) => Some(js_to_string(Some(n))),
            Some(Value::Null) => Some("null".to_string()),
            Some(_) => None,
        };
        let Some(key) = key else {
            if mode == "removeKeyMatches" {
                out.push(e);
            }
            continue;
        };
        match index.get(&key) {
            Some(found) => match mode {
                "removeKeyMatches" => {}
                "mergeByKey" => {
                    let mut m = obj(&e.json);
                    for (k, v) in obj(&found.json) {
                        if k == p2 {
                            continue;
                        }
                        let write = match overwrite.as_str() {
                            "undefined" => !m.contains_key(&k),
                            "blank" => m.get(&k).is_none_or(is_blank),
                            _ => true,
                        };
                        if write {
                            m.insert(k, v);
                        }
                    }
                    e.json = expression::Json::new(Value::Object(js_order(m)));
                    out.push(e);
                }
                _ => out.push(e),
            },
            None => {
                if mode != "keepKeyMatches" {
                    out.push(e);
                }
            }
        }
    }
    Ok(out)
}
