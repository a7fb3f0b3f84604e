//! Code node: JavaScript through the expression sandbox, both modes.

use serde_json::{json, Value};

use expression::CodeMode;

use super::{NodeContext, NodeOutput};
use crate::data::{paired_ref, Item};
use crate::error::{EngineError, Result};

/// Turns what a script returned into items (`{json}` objects or plain objects).
pub fn normalize(value: Value) -> Result<Vec<Item>> {
    let list = match value {
        Value::Null => return Ok(vec![]),
        Value::Array(a) => a,
        other => vec![other],
    };
    list.into_iter()
        .map(|v| match v {
            Value::Object(mut o) if o.contains_key("json") && o.keys().all(|k| matches!(k.as_str(), "json" | "binary" | "pairedItem" | "index" | "error")) => {
                let json = o.remove("json").unwrap_or(json!({}));
                if !json.is_object() {
                    return Err(EngineError::node("A 'json' property isn't an object"));
                }
                Ok(Item { json: json.into(), binary: o.remove("binary").map(Into::into), paired_item: o.remove("pairedItem").map(Into::into) })
            }
            Value::Object(o) => Ok(Item::new(Value::Object(o))),
            other => Err(EngineError::node_with(
                "Code doesn't return items properly",
                format!("Please return an array of objects, one for each item you would like to output. Got: {other}"),
            )),
        })
        .collect()
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let lang = ctx.param_str("language", 0, "javaScript")?;
    if lang != "javaScript" {
        return Err(EngineError::node(format!("The {lang} language is not supported by this engine")));
    }
    let code = ctx.raw("jsCode").and_then(|v| v.as_str()).unwrap_or("").to_string();
    let each = ctx.param_str("mode", 0, "runOnceForAllItems")? == "runOnceForEachItem";
    let input_len = ctx.input(0).len();
    let mut out = vec![];
    if each {
        for i in 0..input_len {
            let res = ctx.run_code(&code, CodeMode::EachItem, i as i64);
            match res {
                Ok(r) => {
                    ctx.console.extend(r.console);
                    for mut it in normalize(r.value)? {
                        it.paired_item = Some(paired_ref(i, 0));
                        out.push(it);
                    }
                }
                Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
                Err(e) => return Err(e),
            }
        }
    } else {
        let r = ctx.run_code_items(&code, if input_len == 0 { -1 } else { 0 });
        match r {
            Ok((items, console)) => {
                ctx.console.extend(console);
                if items.iter().any(|it| !it.json.is_object()) {
                    return Err(EngineError::node("A 'json' property isn't an object"));
                }
                let same_len = items.len() == input_len;
                out = items;
                for (k, it) in out.iter_mut().enumerate() {
                    if it.paired_item.is_none() {
                        it.paired_item = Some(paired_ref(if same_len { k } else { 0 }, 0));
                    }
                }
            }
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, 0),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
