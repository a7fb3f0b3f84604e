//! Remove Duplicates: keep the first item of each group of equal items.

use serde_json::{Map, Value};

use super::{get_path, string_list, NodeContext, NodeOutput};
use crate::data::item_from;
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let compare = ctx.param_str("compare", 0, "allFields")?;
    let remove_other = ctx.param_bool("options.removeOtherFields", 0, false)?;
    let excl = string_list(ctx.param_opt("fieldsToExclude", 0)?.as_ref());
    let sel = string_list(ctx.param_opt("fieldsToCompare", 0)?.as_ref());
    let mut seen: Vec<Value> = vec![];
    let mut out = vec![];
    for (i, it) in input.iter().enumerate() {
        let key = match compare.as_str() {
            "selectedFields" => {
                let mut m = Map::new();
                for f in &sel {
                    m.insert(f.clone(), get_path(&it.json, f).cloned().unwrap_or(Value::Null));
                }
                Value::Object(m)
            }
            "allFieldsExcept" => {
                let mut j = Value::clone(&it.json);
                if let Value::Object(m) = &mut j {
                    for f in &excl {
                        m.shift_remove(f);
                    }
                }
                j
            }
            _ => Value::clone(&it.json),
        };
        if seen.contains(&key) {
            continue;
        }
        let item = if remove_other && compare != "allFields" {
            let mut item = item_from(key.clone(), i);
            item.binary = it.binary.clone();
            item
        } else {
            it.paired(i, 0)
        };
        seen.push(key);
        out.push(item);
    }
    Ok(NodeOutput::one(out))
}
