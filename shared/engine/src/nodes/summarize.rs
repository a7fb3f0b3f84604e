//! Summarize: aggregations (count, sum, average, min, max, concatenate,
//! append, countUnique) grouped by split fields.

use serde_json::{json, Map, Value};

use super::conditions::{js_to_number, num_value};
use super::{get_path, string_list, NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let aggs = ctx.param("fieldsToSummarize.values", 0, json!([{ "aggregation": "count", "field": "" }]))?;
    let aggs = aggs.as_array().cloned().unwrap_or_default();
    let split = string_list(ctx.param_opt("fieldsToSplitBy", 0)?.as_ref());
    // Groups in first-seen order.
    let mut groups: Vec<(Vec<Value>, Vec<usize>)> = vec![];
    for (i, it) in input.iter().enumerate() {
        let key: Vec<Value> = split.iter().map(|f| get_path(&it.json, f).cloned().unwrap_or(Value::Null)).collect();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    if groups.is_empty() && split.is_empty() {
        groups.push((vec![], vec![]));
    }
    let mut out = vec![];
    for (key, members) in groups {
        let mut m = Map::new();
        for (f, k) in split.iter().zip(key) {
            m.insert(f.clone(), k);
        }
        for a in &aggs {
            let agg = a.get("aggregation").and_then(|v| v.as_str()).unwrap_or("count");
            let field = a.get("field").and_then(|v| v.as_str()).unwrap_or("");
            let vals: Vec<Value> = members
                .iter()
                .filter_map(|&i| get_path(&input[i].json, field).cloned())
                .filter(|v| !v.is_null())
                .collect();
            let nums: Vec<f64> = vals.iter().map(js_to_number).filter(|n| !n.is_nan()).collect();
            let (name, value) = match agg {
                "count" => (format!("count_{field}"), json!(vals.len())),
                "countUnique" => {
                    let mut u: Vec<&Value> = vec![];
                    for v in &vals {
                        if !u.contains(&v) {
                            u.push(v);
                        }
                    }
                    (format!("unique_count_{field}"), json!(u.len()))
                }
                "sum" => (format!("sum_{field}"), num_value(nums.iter().sum())),
                "average" => (
                    format!("average_{field}"),
                    if nums.is_empty() { Value::Null } else { num_value(nums.iter().sum::<f64>() / nums.len() as f64) },
                ),
                "min" => (format!("min_{field}"), nums.iter().copied().reduce(f64::min).map(num_value).unwrap_or(Value::Null)),
                "max" => (format!("max_{field}"), nums.iter().copied().reduce(f64::max).map(num_value).unwrap_or(Value::Null)),
                "concatenate" => {
                    let sep = match a.get("separateBy").and_then(|v| v.as_str()).unwrap_or(",") {
                        "other" => a.get("customSeparator").and_then(|v| v.as_str()).unwrap_or("").to_string(),
                        "," => ",".into(),
                        s => s.to_string(),
                    };
                    (format!("concatenated_{field}"), json!(vals.iter().map(super::js_string).collect::<Vec<_>>().join(&sep)))
                }
                "append" => (format!("appended_{field}"), Value::Array(vals.clone())),
                _ => (format!("{agg}_{field}"), Value::Null),
            };
            m.insert(name, value);
        }
        let paired: Vec<Value> = members.iter().map(|i| json!({ "item": i })).collect();
        out.push(Item { json: Value::Object(m).into(), binary: None, paired_item: Some(Value::Array(paired).into()) });
    }
    Ok(NodeOutput::one(out))
}
