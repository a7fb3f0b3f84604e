//! Merge v2/v3: append, combine by fields / position / all combinations,
//! choose branch.

use serde_json::{json, Map, Value};

use super::{get_path, NodeContext, NodeOutput};
use crate::data::{paired_ref, Item};
use crate::error::Result;

struct Clash {
    resolve: String,
    deep: bool,
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let v3 = ctx.version() >= 3.0;
    let mode = ctx.param_str("mode", 0, "append")?;
    let in1 = ctx.input(0);
    let in2 = ctx.input(1);
    match mode.as_str() {
        "chooseBranch" => {
            let out = ctx.param_str("output", 0, if v3 { "specifiedInput" } else { "input1" })?;
            let pick = match out.as_str() {
                "empty" => return Ok(NodeOutput::one(vec![Item::new(json!({}))])),
                "input2" => 1,
                "specifiedInput" => (ctx.param_f64("useDataOfInput", 0, 1.0)? as usize).saturating_sub(1),
                _ => 0,
            };
            Ok(NodeOutput::Data(vec![ctx.input_arc(pick).unwrap_or_default()]))
        }
        "combine" | "mergeByKey" | "mergeByIndex" | "multiplex" => {
            let by = if v3 {
                ctx.param_str("combineBy", 0, "combineByFields")?
            } else {
                ctx.param_str("combinationMode", 0, "mergeByFields")?
            };
            let clash = clash_options(ctx)?;
            match by.as_str() {
                "combineByPosition" | "mergeByPosition" => by_position(ctx, &in1, &in2, &clash),
                "combineAll" | "multiplex" => {
                    let mut out = vec![];
                    for (i, a) in in1.iter().enumerate() {
                        for (j, b) in in2.iter().enumerate() {
                            out.push(merged(a, i, b, j, &clash));
                        }
                    }
                    Ok(NodeOutput::one(out))
                }
                _ => by_fields(ctx, &in1, &in2, &clash),
            }
        }
        _ => {
            // append: every input in order
            drop((in1, in2));
            let n = ctx.inputs.len().max(2);
            let total = ctx.inputs.iter().flatten().map(|i| i.len()).sum();
            let mut out = Vec::with_capacity(total);
            for k in 0..n {
                for (i, mut it) in ctx.take_input(k).into_iter().enumerate() {
                    it.paired_item = Some(paired_ref(i, k));
                    out.push(it);
                }
            }
            Ok(NodeOutput::one(out))
        }
    }
}

fn clash_options(ctx: &mut NodeContext<'_>) -> Result<Clash> {
    let v = ctx.param("options.clashHandling.values", 0, json!({}))?;
    Ok(Clash {
        resolve: v.get("resolveClash").and_then(|x| x.as_str()).unwrap_or("preferInput2").to_string(),
        deep: v.get("mergeMode").and_then(|x| x.as_str()).unwrap_or("deepMerge") == "deepMerge",
    })
}

fn deep_merge(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in y {
                match x.get_mut(k) {
                    Some(e) if e.is_object() && v.is_object() => deep_merge(e, v),
                    _ => {
                        x.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (a, b) => *a = b.clone(),
    }
}

fn merge_json(a: &Value, b: &Value, clash: &Clash) -> Value {
    match clash.resolve.as_str() {
        "addSuffix" => {
            let mut m = Map::new();
            for (src, suffix) in [(a, "_1"), (b, "_2")] {
                if let Some(o) = src.as_object() {
                    for (k, v) in o {
                        m.insert(format!("{k}{suffix}"), v.clone());
                    }
                }
            }
            Value::Object(m)
        }
        "preferInput1" => combine(b, a, clash.deep, Some(a)),
        _ => combine(a, b, clash.deep, None),
    }
}

/// `base` overwritten by `top`; `order` keeps input 1's key order when it wins.
fn combine(base: &Value, top: &Value, deep: bool, order: Option<&Value>) -> Value {
    let mut out = base.clone();
    if deep {
        deep_merge(&mut out, top);
    } else if let (Value::Object(o), Value::Object(t)) = (&mut out, top) {
        for (k, v) in t {
            o.insert(k.clone(), v.clone());
        }
    }
    let _ = order;
    out
}

fn merged(a: &Item, i: usize, b: &Item, j: usize, clash: &Clash) -> Item {
    Item {
        json: merge_json(&a.json, &b.json, clash).into(),
        binary: b.binary.clone().or_else(|| a.binary.clone()),
        paired_item: Some(json!([{ "item": i, "input": 0 }, { "item": j, "input": 1 }]).into()),
    }
}

fn tagged(it: &Item, i: usize, input: usize) -> Item {
    Item { json: it.json.clone(), binary: it.binary.clone(), paired_item: Some(paired_ref(i, input)) }
}

fn by_position(ctx: &mut NodeContext<'_>, in1: &[Item], in2: &[Item], clash: &Clash) -> Result<NodeOutput> {
    let unpaired = ctx.param_bool("options.includeUnpaired", 0, false)?;
    let n = if unpaired { in1.len().max(in2.len()) } else { in1.len().min(in2.len()) };
    let mut out = vec![];
    for k in 0..n {
        match (in1.get(k), in2.get(k)) {
            (Some(a), Some(b)) => out.push(merged(a, k, b, k, clash)),
            (Some(a), None) => out.push(tagged(a, k, 0)),
            (None, Some(b)) => out.push(tagged(b, k, 1)),
            _ => {}
        }
    }
    Ok(NodeOutput::one(out))
}

fn loose_eq(a: Option<&Value>, b: Option<&Value>, fuzzy: bool) -> bool {
    match (a, b) {
        (Some(x), Some(y)) if x == y => !x.is_null(),
        (Some(x), Some(y)) if fuzzy => super::js_string(x) == super::js_string(y),
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64() == y.as_f64(),
        _ => false,
    }
}

fn by_fields(ctx: &mut NodeContext<'_>, in1: &[Item], in2: &[Item], clash: &Clash) -> Result<NodeOutput> {
    let mut pairs: Vec<(String, String)> = vec![];
    let advanced = ctx.param_bool("advanced", 0, false)?;
    if ctx.version() >= 3.0 && !advanced {
        let s = ctx.param_str("fieldsToMatchString", 0, "")?;
        for f in s.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            pairs.push((f.to_string(), f.to_string()));
        }
    }
    if pairs.is_empty() {
        for v in ctx.param("mergeByFields.values", 0, json!([]))?.as_array().into_iter().flatten() {
            let f1 = v.get("field1").and_then(|x| x.as_str()).unwrap_or("").to_string();
            let f2 = v.get("field2").and_then(|x| x.as_str()).unwrap_or("").to_string();
            pairs.push((f1, f2));
        }
    }
    let join = ctx.param_str("joinMode", 0, "keepMatches")?;
    let from = ctx.param_str("outputDataFrom", 0, "both")?;
    let fuzzy = ctx.param_bool("options.fuzzyCompare", 0, false)?;
    let first_only = ctx.param_str("options.multipleMatches", 0, "all")? == "first";
    let matches = |a: &Item, b: &Item| pairs.iter().all(|(f1, f2)| loose_eq(get_path(&a.json, f1), get_path(&b.json, f2), fuzzy));

    // For every input-1 item, the input-2 items it matches.
    let mut matched2 = vec![false; in2.len()];
    let mut found: Vec<Vec<usize>> = Vec::with_capacity(in1.len());
    for a in in1 {
        let mut m = vec![];
        for (j, b) in in2.iter().enumerate() {
            if matches(a, b) {
                m.push(j);
                matched2[j] = true;
                if first_only {
                    break;
                }
            }
        }
        found.push(m);
    }
    let mut out = vec![];
    match join.as_str() {
        "keepNonMatches" => {
            if from != "input2" {
                for (i, a) in in1.iter().enumerate() {
                    if found[i].is_empty() {
                        let mut it = tagged(a, i, 0);
                        if from == "both" {
                            set_source(&mut it, "input1");
                        }
                        out.push(it);
                    }
                }
            }
            if from != "input1" {
                for (j, b) in in2.iter().enumerate() {
                    if !matched2[j] {
                        let mut it = tagged(b, j, 1);
                        if from == "both" {
                            set_source(&mut it, "input2");
                        }
                        out.push(it);
                    }
                }
            }
        }
        "keepEverything" => {
            for (i, a) in in1.iter().enumerate() {
                if found[i].is_empty() {
                    out.push(tagged(a, i, 0));
                }
                for &j in &found[i] {
                    out.push(merged(a, i, &in2[j], j, clash));
                }
            }
            for (j, b) in in2.iter().enumerate() {
                if !matched2[j] {
                    out.push(tagged(b, j, 1));
                }
            }
        }
        "enrichInput1" => {
            for (i, a) in in1.iter().enumerate() {
                if found[i].is_empty() {
                    out.push(tagged(a, i, 0));
                }
                for &j in &found[i] {
                    out.push(merged(a, i, &in2[j], j, clash));
                }
            }
        }
        "enrichInput2" => {
            for (j, b) in in2.iter().enumerate() {
                let hits: Vec<usize> = (0..in1.len()).filter(|&i| found[i].contains(&j)).collect();
                if hits.is_empty() {
                    out.push(tagged(b, j, 1));
                }
                for i in hits {
                    out.push(merged(&in1[i], i, b, j, clash));
                }
            }
        }
        _ => {
            // keepMatches
            for (i, a) in in1.iter().enumerate() {
                match from.as_str() {
                    "input1" => {
                        if !found[i].is_empty() {
                            out.push(tagged(a, i, 0));
                        }
                    }
                    "input2" => {}
                    _ => {
                        for &j in &found[i] {
                            out.push(merged(a, i, &in2[j], j, clash));
                        }
                    }
                }
            }
            if from == "input2" {
                for (j, b) in in2.iter().enumerate() {
                    if matched2[j] {
                        out.push(tagged(b, j, 1));
                    }
                }
            }
        }
    }
    Ok(NodeOutput::one(out))
}

fn set_source(it: &mut Item, s: &str) {
    if let Value::Object(o) = &mut *it.json {
        o.insert("_source".into(), Value::String(s.into()));
    }
}
