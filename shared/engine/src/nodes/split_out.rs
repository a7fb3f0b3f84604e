//! Split Out: one item per element of an array (or value of an object) field.

use serde_json::{Map, Value};

use super::{get_path, remove_path, set_path, string_list, NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        let fields = string_list(Some(&ctx.param("fieldToSplitOut", i, Value::String(String::new()))?));
        let include = ctx.param_str("include", i, "noOtherFields")?;
        let dest = ctx.param_str("options.destinationFieldName", i, "")?;
        let no_dot = ctx.param_bool("options.disableDotNotation", i, false)?;
        let include_fields = string_list(ctx.param_opt("fieldsToInclude", i)?.as_ref());
        let lookup = |f: &str| if no_dot { item.json.get(f) } else { get_path(&item.json, f) };
        let mut lists: Vec<(String, Vec<Value>)> = vec![];
        for f in &fields {
            let v = match lookup(f) {
                Some(v) => v.clone(),
                None => {
                    let e = EngineError::node_with(format!("The field '{f}' wasn't found in item {i}"), "Make sure the field exists or disable dot notation");
                    if ctx.continue_on_fail() {
                        ctx.error_item(&mut out, &e, i);
                        continue;
                    }
                    return Err(e);
                }
            };
            let arr = match v {
                Value::Array(a) => a,
                Value::Object(o) => o.into_iter().map(|(_, x)| x).collect(),
                other => vec![other],
            };
            lists.push((f.clone(), arr));
        }
        let n = lists.iter().map(|l| l.1.len()).max().unwrap_or(0);
        for k in 0..n {
            let mut obj = match include.as_str() {
                "allOtherFields" => {
                    let mut o = Value::clone(&item.json);
                    for (f, _) in &lists {
                        if no_dot {
                            if let Value::Object(m) = &mut o {
                                m.shift_remove(f);
                            }
                        } else {
                            remove_path(&mut o, f);
                        }
                    }
                    o
                }
                "selectedOtherFields" => {
                    let mut o = Value::Object(Map::new());
                    for f in &include_fields {
                        if let Some(x) = lookup(f) {
                            set_path(&mut o, f, x.clone());
                        }
                    }
                    o
                }
                _ => Value::Object(Map::new()),
            };
            for (f, arr) in &lists {
                let Some(el) = arr.get(k) else { continue };
                let key = if dest.is_empty() { f.clone() } else { dest.clone() };
                // A lone object element becomes the item itself when nothing else is kept.
                if include == "noOtherFields" && dest.is_empty() && lists.len() == 1 && el.is_object() {
                    obj = el.clone();
                } else if let Value::Object(m) = &mut obj {
                    m.insert(key, el.clone());
                }
            }
            out.push(item_from(obj, i));
        }
    }
    Ok(NodeOutput::one(out))
}
