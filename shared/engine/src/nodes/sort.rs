//! Sort: by fields, randomly, or with a JavaScript comparator.

use std::cmp::Ordering;

use serde_json::Value;

use super::{get_path, NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

/// Compares two JSON values the way JavaScript's `<` orders them.
pub fn js_cmp(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Greater,
        (_, None) => Ordering::Less,
        (Some(Value::Number(x)), Some(Value::Number(y))) => x.as_f64().unwrap_or(0.0).total_cmp(&y.as_f64().unwrap_or(0.0)),
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (Some(x), Some(y)) => super::js_string(x).cmp(&super::js_string(y)),
    }
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let ty = ctx.param_str("type", 0, "simple")?;
    let mut idx: Vec<usize> = (0..input.len()).collect();
    match ty.as_str() {
        "random" => {
            use rand_shuffle::shuffle;
            shuffle(&mut idx);
        }
        "code" => {
            let code = ctx.param_str("code", 0, "")?;
            let script = format!(
                "const __cmp = function(a, b) {{\n{code}\n}};\nconst __all = $input.all();\nconst __idx = __all.map((_, i) => i);\n__idx.sort((x, y) => __cmp(__all[x], __all[y]));\nreturn [{{ json: {{ order: __idx }} }}];"
            );
            let res = ctx.run_code(&script, expression::CodeMode::AllItems, 0)?;
            let order = res
                .value
                .pointer("/0/json/order")
                .or_else(|| res.value.pointer("/0/order"))
                .or_else(|| res.value.get("order"))
                .and_then(|o| o.as_array())
                .ok_or_else(|| EngineError::node("Sort code did not return an order"))?;
            idx = order.iter().filter_map(|v| v.as_u64().map(|x| x as usize)).filter(|&x| x < input.len()).collect();
        }
        _ => {
            let fields = ctx.param("sortFieldsUi.sortField", 0, Value::Array(vec![]))?;
            let no_dot = ctx.param_bool("options.disableDotNotation", 0, false)?;
            let fields: Vec<(String, bool)> = fields
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    (
                        f.get("fieldName").and_then(|v| v.as_str()).unwrap_or("").to_string(),
                        f.get("order").and_then(|v| v.as_str()) == Some("descending"),
                    )
                })
                .collect();
            // Sort keys looked up once per item, not per comparison (one
            // flat table of references, `fields.len()` per item).
            let width = fields.len();
            let keys: Vec<Option<&Value>> = input
                .iter()
                .flat_map(|it| fields.iter().map(move |(f, _)| if no_dot { it.json.get(f) } else { get_path(&it.json, f) }))
                .collect();
            idx.sort_by(|&x, &y| {
                for (k, (_, desc)) in fields.iter().enumerate() {
                    let o = js_cmp(keys[x * width + k], keys[y * width + k]);
                    let o = if *desc { o.reverse() } else { o };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            });
        }
    }
    drop(input);
    let mut items: Vec<Option<Item>> = ctx.take_input(0).into_iter().map(Some).collect();
    let out = idx
        .into_iter()
        .filter_map(|i| {
            let mut it = items.get_mut(i)?.take()?;
            it.paired_item = Some(crate::data::paired_ref(i, 0));
            Some(it)
        })
        .collect();
    Ok(NodeOutput::one(out))
}

/// Tiny shuffle without pulling in an RNG crate: uuid v4 bytes are random.
mod rand_shuffle {
    pub fn shuffle(v: &mut [usize]) {
        for i in (1..v.len()).rev() {
            let r = u128::from_le_bytes(*uuid::Uuid::new_v4().as_bytes());
            v.swap(i, (r % (i as u128 + 1)) as usize);
        }
    }
}
