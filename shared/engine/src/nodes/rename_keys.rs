//! Rename Keys: renames keys (dot paths allowed) and, optionally, every key
//! matching a regular expression down to a depth.

use serde_json::Value;

use super::lodash::{self, get, js_regex, js_replace_first};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let items = ctx.input(0);
    let mut out = vec![];
    for (i, item) in items.iter().enumerate() {
        let json = match rename_item(ctx, item, i) {
            Ok(json) => json,
            Err(e) if ctx.continue_on_fail() => {
                ctx.error_item(&mut out, &e, i);
                continue;
            }
            Err(e) => return Err(e),
        };
        out.push(Item { json: json.into(), binary: item.binary.clone(), paired_item: Some(crate::data::paired_ref(i, 0)) });
    }
    Ok(NodeOutput::one(out))
}

fn rename_item(ctx: &mut NodeContext<'_>, item: &Item, i: usize) -> Result<Value> {
    let keys = ctx.param("keys.key", i, Value::Array(vec![]))?;
    let replacements = ctx.param("additionalOptions.regexReplacement.replacements", i, Value::Array(vec![]))?;
    let mut json = Value::clone(&item.json);
    let s = |v: &Value, k: &str| v.get(k).map(|x| lodash::js_to_string(Some(x))).unwrap_or_default();
    for k in keys.as_array().into_iter().flatten() {
        let (current, new) = (s(k, "currentKey"), s(k, "newKey"));
        if current.is_empty() || new.is_empty() || current == new {
            continue;
        }
        // The value is read from the original item, so renames do not chain.
        let Some(value) = get(&item.json, &current).map(|c| c.into_owned()) else { continue };
        lodash::set(&mut json, &new, value);
        lodash::unset(&mut json, &current);
    }
    for r in replacements.as_array().into_iter().flatten() {
        let search = s(r, "searchRegex");
        let replace = s(r, "replaceRegex");
        let depth = r.pointer("/options/depth").and_then(Value::as_f64).unwrap_or(-1.0);
        let insensitive = r.pointer("/options/caseInsensitive").is_some_and(|v| lodash::truthy(Some(v)));
        if super::regex_safety::is_risky(&search, insensitive) {
            return Err(EngineError::node(format!(
                "Regex pattern \"{search}\" may cause performance issues. Please try a simpler pattern like \"[a-z]+\" or \"\\w+\". "
            )));
        }
        let re = js_regex(&search, insensitive)?;
        rename_matching(&mut json, &re, &replace, depth);
    }
    Ok(json)
}

/// n8n's `renameObjectKeys`: children first, then the key itself (first
/// match only); arrays are walked, never renamed; depth -1 is unlimited.
fn rename_matching(v: &mut Value, re: &regex::Regex, replace: &str, depth: f64) {
    match v {
        Value::Array(a) => {
            if depth != 0.0 {
                for x in a {
                    rename_matching(x, re, replace, depth - 1.0);
                }
            }
        }
        Value::Object(o) => {
            let keys: Vec<String> = o.keys().cloned().collect();
            for key in keys {
                if depth != 0.0 {
                    if let Some(child) = o.get_mut(&key) {
                        rename_matching(child, re, replace, depth - 1.0);
                    }
                }
                if re.is_match(&key) {
                    let new = js_replace_first(re, &key, replace);
                    if new != key {
                        if let Some(val) = o.shift_remove(&key) {
                            o.insert(new, val);
                        }
                    }
                }
            }
            let taken = std::mem::take(o);
            *o = lodash::js_order(taken);
        }
        _ => {}
    }
}
