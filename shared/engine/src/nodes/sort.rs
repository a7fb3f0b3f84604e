//! Sort (and Item Lists' Sort): by fields, randomly, or with a JavaScript
//! comparator.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::lodash::{get_field, is_equal, js_sort, lt};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Ok(NodeOutput::one(sort(ctx)?))
}

/// The Sort node's work; Item Lists' Sort is the same.
pub fn sort(ctx: &mut NodeContext<'_>) -> Result<Vec<Item>> {
    let ty = ctx.param_str("type", 0, "simple")?;
    let order: Vec<usize> = match ty.as_str() {
        "random" => {
            let mut idx: Vec<usize> = (0..ctx.input(0).len()).collect();
            shuffle(&mut idx);
            idx
        }
        "code" => code_order(ctx)?,
        _ => field_order(ctx)?,
    };
    // Items keep their own `pairedItem`, as n8n's sort hands back the input items.
    let mut items: Vec<Option<Item>> = ctx.take_input(0).into_iter().map(Some).collect();
    Ok(order.into_iter().filter_map(|i| items.get_mut(i).and_then(Option::take)).collect())
}

fn field_order(ctx: &mut NodeContext<'_>) -> Result<Vec<usize>> {
    let input = ctx.input(0);
    let dot = !ctx.param_bool("options.disableDotNotation", 0, false)?;
    let fields = ctx.param("sortFieldsUi.sortField", 0, Value::Array(vec![]))?;
    let fields: Vec<(String, bool)> = fields
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let name = f.get("fieldName").map(|v| super::lodash::js_to_string(Some(v))).unwrap_or_default();
            (name, f.get("order").and_then(Value::as_str).unwrap_or("ascending") != "ascending")
        })
        .collect();
    if fields.is_empty() {
        return Err(EngineError::node("No sorting specified. Please add a field to sort by"));
    }
    for (name, _) in &fields {
        let found = input.iter().any(|it| if dot { get_field(&it.json, name, true).is_some() } else { it.json.get(name).is_some() });
        if !found && !dot && name.contains('.') {
            return Err(EngineError::node_with(
                format!("Couldn't find the field '{name}' in the input data"),
                "If you're trying to use a nested field, make sure you turn off 'disable dot notation' in the node options",
            ));
        }
        if !found {
            return Err(EngineError::node(format!("Couldn't find the field '{name}' in the input data")));
        }
    }
    // Sort keys looked up once per item (strings lower-cased, as n8n compares them).
    let width = fields.len();
    let keys: Vec<SortKey<'_>> = input
        .iter()
        .flat_map(|it| {
            fields.iter().map(move |(f, _)| match get_field(&it.json, f, dot) {
                Some(Cow::Borrowed(v @ Value::Number(n))) => match n.as_f64() {
                    Some(f) => SortKey::Num(f, v),
                    None => SortKey::Other(Some(Cow::Borrowed(v))),
                },
                Some(v) => SortKey::Other(Some(match v.as_ref() {
                    Value::String(s) => Cow::Owned(Value::String(s.to_lowercase())),
                    _ => v,
                })),
                None => SortKey::Other(None),
            })
        })
        .collect();
    let mut idx: Vec<usize> = (0..input.len()).collect();
    js_sort(&mut idx, |&x, &y| {
        for (k, (_, desc)) in fields.iter().enumerate() {
            let (a, b) = (&keys[x * width + k], &keys[y * width + k]);
            let less = if let (SortKey::Num(a, _), SortKey::Num(b, _)) = (a, b) {
                // what `is_equal` and `lt` give for two numbers
                if a == b {
                    continue;
                }
                a < b
            } else {
                let (a, b) = (a.value(), b.value());
                if is_equal(a, b) {
                    continue;
                }
                lt(a, b)
            };
            return match (less, desc) {
                (true, false) | (false, true) => Ordering::Less,
                _ => Ordering::Greater,
            };
        }
        Ordering::Equal
    });
    Ok(idx)
}

/// One item's value of one sort field; numbers also as `f64`, compared
/// without going through the value each time.
enum SortKey<'a> {
    Num(f64, &'a Value),
    Other(Option<Cow<'a, Value>>),
}

impl SortKey<'_> {
    fn value(&self) -> Option<&Value> {
        match self {
            SortKey::Num(_, v) => Some(v),
            SortKey::Other(v) => v.as_deref(),
        }
    }
}

/// Runs the user's comparator in the sandbox over the input items and reads
/// back the resulting order.
fn code_order(ctx: &mut NodeContext<'_>) -> Result<Vec<usize>> {
    let code = ctx.param_str("code", 0, "")?;
    if !has_return(&code) {
        return Err(EngineError::node("Sort code doesn't return. Please add a 'return' statement to your code"));
    }
    let n = ctx.input(0).len();
    let script = format!(
        "const __items = $input.all();\nconst __idx = __items.map((_, i) => i);\n__idx.sort((__x, __y) => (function(a, b) {{\n{code}\n}})(__items[__x], __items[__y]));\nreturn [{{ json: {{ order: __idx }} }}];"
    );
    let res = ctx.run_code(&script, expression::CodeMode::AllItems, 0)?;
    let order = res
        .value
        .pointer("/0/json/order")
        .and_then(Value::as_array)
        .ok_or_else(|| EngineError::node("Sort code did not return an order"))?;
    Ok(order.iter().filter_map(|v| v.as_u64().map(|x| x as usize)).filter(|&x| x < n).collect())
}

/// `/\breturn\b/`.
fn has_return(code: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    code.match_indices("return").any(|(i, _)| !word(code[..i].chars().next_back()) && !word(code[i + 6..].chars().next()))
}

/// Fisher–Yates, as n8n's `shuffleArray`.
fn shuffle(v: &mut [usize]) {
    use rand::seq::SliceRandom;
    v.shuffle(&mut rand::rng());
}
