//! Remove Duplicates 2: its operations that remember values across
//! executions, with n8n's processed-data rules (`DeduplicationHelper`): values
//! kept as md5 hashes ("entries", pruned to the history size) or as the one
//! highest number / latest date seen. The record lives in the host's
//! `ProcessedDataStore`; writes are conditional on the version read, retried
//! when another execution wrote in between.

use std::cmp::Ordering;

use base64::Engine as _;
use md5::{Digest, Md5};
use serde_json::{json, Value};

use super::lodash::{js_key_order, js_to_string};
use super::remove_duplicates::{remove_input_duplicates, Rules};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};
use crate::host::ProcessedDataStore;

const DEFAULT_HISTORY_SIZE: f64 = 10000.0;
const SAVE_ATTEMPTS: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Entries,
    LatestIncrementalKey,
    LatestDate,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Entries => "entries",
            Mode::LatestIncrementalKey => "latestIncrementalKey",
            Mode::LatestDate => "latestDate",
        }
    }
}

pub fn run(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    match ctx.param_str("operation", 0, "removeDuplicateInputItems")?.as_str() {
        "removeDuplicateInputItems" => Ok(NodeOutput::one(remove_input_duplicates(ctx, Rules { null_ok: true, ..Rules::default() })?)),
        "removeItemsSeenInPreviousExecutions" => seen_before(ctx),
        "clearDeduplicationHistory" => {
            if ctx.param_str("mode", 0, "cleanDatabase")? == "cleanDatabase" {
                let (store, workflow, context) = record(ctx)?;
                store.delete(&workflow, &context).map_err(EngineError::Host)?;
            }
            Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()]))
        }
        _ => Ok(NodeOutput::Data(vec![ctx.input_arc(0).unwrap_or_default()])),
    }
}

/// The store, the workflow id and the record's context for `options.scope`.
fn record(ctx: &mut NodeContext<'_>) -> Result<(std::sync::Arc<dyn ProcessedDataStore>, String, String)> {
    let scope = ctx.param_str("options.scope", 0, "node")?;
    let context = match scope.as_str() {
        "node" => format!("n:{}", ctx.node.id),
        "workflow" => String::new(),
        other => return Err(EngineError::node(format!("The scope '{other}' is not supported. Please select either \"node\" or \"workflow\"."))),
    };
    let store = ctx.env.host.processed_data.clone().ok_or_else(|| {
        EngineError::node("Remove Duplicates needs a deduplication store to remember items across executions; this host has none")
    })?;
    let workflow = ctx.graph.workflow.id.clone().filter(|w| !w.is_empty()).ok_or_else(|| {
        EngineError::node("Remove Duplicates can only remember items of a saved workflow (this one has no id)")
    })?;
    Ok((store, workflow, context))
}

fn seen_before(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let items = ctx.input(0);
    let logic = ctx.param_str("logic", 0, "removeItemsWithAlreadySeenKeyValues")?;
    let (mode, param) = match logic.as_str() {
        "removeItemsWithAlreadySeenKeyValues" => (Mode::Entries, "dedupeValue"),
        "removeItemsUpToStoredIncrementalKey" => (Mode::LatestIncrementalKey, "incrementalDedupeValue"),
        "removeItemsUpToStoredDate" => (Mode::LatestDate, "dateDedupeValue"),
        _ => return Ok(NodeOutput::Data(vec![items])),
    };
    let (store, workflow, context) = record(ctx)?;
    let tz = ctx.timezone();

    // Items grouped by their value, in a plain object's key order.
    let mut keys: Vec<String> = vec![];
    let mut groups: Vec<Vec<usize>> = vec![];
    for i in 0..items.len() {
        let raw = ctx.param_opt(param, i)?;
        let key = match mode {
            Mode::Entries => match &raw {
                None | Some(Value::Null) => String::new(),
                v => js_to_string(v.as_ref()),
            },
            Mode::LatestIncrementalKey => {
                let text = match &raw {
                    None | Some(Value::Null) => String::new(),
                    v => js_to_string(v.as_ref()),
                };
                if text.is_empty() {
                    return Err(EngineError::node("The `Value to Dedupe` On is empty. Please provide a value."));
                }
                let n = super::conditions::js_to_number(raw.as_ref().unwrap_or(&Value::Null));
                if n.is_nan() {
                    return Err(EngineError::node(format!("The value '{text}' is not a number. Please provide a number.")));
                }
                js_to_string(Some(&super::conditions::num_value(n)))
            }
            Mode::LatestDate => {
                let text = match &raw {
                    None | Some(Value::Null) => String::new(),
                    v => js_to_string(v.as_ref()),
                };
                if text.is_empty() {
                    return Err(EngineError::node("The `Value to Dedupe` On is empty. Please provide a value."));
                }
                if super::conditions::parse_datetime(&Value::String(text.clone()), &tz).is_none() {
                    return Err(EngineError::node(format!("The value '{text}' is not a valid date. Please provide a valid date.")));
                }
                text
            }
        };
        match keys.iter().position(|k| *k == key) {
            Some(p) => groups[p].push(i),
            None => {
                keys.push(key);
                groups.push(vec![i]);
            }
        }
    }
    let order = js_key_order(&keys);
    let keys: Vec<String> = order.iter().map(|&k| keys[k].clone()).collect();
    let groups: Vec<Vec<usize>> = order.iter().map(|&k| groups[k].clone()).collect();

    let history = ctx.param_f64("options.historySize", 0, DEFAULT_HISTORY_SIZE)?;
    if mode == Mode::Entries {
        let stored = store.load(&workflow, &context).map_err(EngineError::Host)?;
        let count = stored.as_ref().and_then(|(v, _)| v.get("data").and_then(Value::as_array).map(Vec::len)).unwrap_or(0);
        if (count + items.len()) as f64 > history {
            return Err(EngineError::node(
                "The number of items to be processed exceeds the maximum history size. Please increase the history size or reduce the number of items to be processed.",
            ));
        }
    }
    let max_entries = (mode == Mode::Entries && history > 0.0).then_some(history as usize);
    let (new, processed) = check_and_record(store.as_ref(), &workflow, &context, &keys, mode, max_entries, &tz)?;
    let pick = |vals: &[String]| -> Vec<Item> {
        vals.iter().filter_map(|v| keys.iter().position(|k| k == v)).flat_map(|g| groups[g].iter().map(|&i| items[i].clone())).collect()
    };
    Ok(NodeOutput::many(vec![pick(&new), pick(&processed)]))
}

fn hash(value: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(Md5::digest(value.as_bytes()))
}

/// n8n's `checkProcessedAndRecord`: which values are new, which were seen;
/// records the new ones.
fn check_and_record(
    store: &dyn ProcessedDataStore,
    workflow: &str,
    context: &str,
    values: &[String],
    mode: Mode,
    max_entries: Option<usize>,
    tz: &str,
) -> Result<(Vec<String>, Vec<String>)> {
    for _ in 0..SAVE_ATTEMPTS {
        let stored = store.load(workflow, context).map_err(EngineError::Host)?;
        if let Some((v, _)) = &stored {
            if v.get("mode").and_then(Value::as_str) != Some(mode.name()) {
                return Err(EngineError::node(
                    "Deduplication data was originally saved with an incompatible setting of the ‘Keep Items Where’ parameter. Try ’Clean Database’ operation to reset.",
                ));
            }
        }
        let version = stored.as_ref().map(|(_, v)| *v);
        let (record, new, processed) = match mode {
            Mode::Entries => {
                let mut data: Vec<Value> = stored.as_ref().and_then(|(v, _)| v.get("data").and_then(Value::as_array).cloned()).unwrap_or_default();
                let mut new = vec![];
                let mut processed = vec![];
                for v in values {
                    let h = Value::String(hash(v));
                    if stored.is_some() && data.contains(&h) {
                        processed.push(v.clone());
                    } else {
                        new.push(v.clone());
                        data.push(h);
                    }
                }
                if let Some(max) = max_entries {
                    let excess = data.len().saturating_sub(max);
                    data.drain(..excess);
                }
                (json!({ "mode": mode.name(), "data": data }), new, processed)
            }
            Mode::LatestIncrementalKey | Mode::LatestDate => {
                let cmp = |a: &str, b: &str| -> Result<Ordering> { compare_latest(mode, a, b, tz) };
                // Sorted ascending by n8n's comparison (which never calls dates equal).
                let mut sorted: Vec<String> = values.to_vec();
                let mut failure = None;
                super::lodash::js_sort(&mut sorted, |a, b| match cmp(a, b) {
                    Ok(o) => o,
                    Err(e) => {
                        failure.get_or_insert(e);
                        Ordering::Equal
                    }
                });
                if let Some(e) = failure {
                    return Err(e);
                }
                match stored.as_ref().and_then(|(v, _)| v.get("data").cloned()) {
                    None => {
                        let largest = sorted.last().cloned().map(Value::String).unwrap_or(Value::Null);
                        (json!({ "mode": mode.name(), "data": largest }), values.to_vec(), vec![])
                    }
                    Some(Value::String(previous)) => {
                        let mut largest = previous.clone();
                        let mut new = vec![];
                        let mut processed = vec![];
                        for v in sorted {
                            if cmp(&v, &previous)? == Ordering::Greater {
                                if cmp(&v, &largest)? == Ordering::Greater {
                                    largest = v.clone();
                                }
                                new.push(v);
                            } else {
                                processed.push(v);
                            }
                        }
                        (json!({ "mode": mode.name(), "data": largest }), new, processed)
                    }
                    // A record n8n would not recognise: nothing is new.
                    Some(_) => return Ok((vec![], vec![])),
                }
            }
        };
        // Nothing new: the record stays as it is, without a write.
        if stored.as_ref().is_some_and(|(v, _)| *v == record) {
            return Ok((new, processed));
        }
        if store.save(workflow, context, &record, version).map_err(EngineError::Host)? {
            return Ok((new, processed));
        }
    }
    Err(EngineError::Host("the deduplication history kept changing under this execution; try again".into()))
}

fn compare_latest(mode: Mode, a: &str, b: &str, tz: &str) -> Result<Ordering> {
    match mode {
        Mode::LatestIncrementalKey => {
            let (x, y) = (super::conditions::str_to_number(a), super::conditions::str_to_number(b));
            if x.is_nan() || y.is_nan() {
                return Err(EngineError::node("Invalid value. Only numbers are supported in mode \"latestIncrementalKey\""));
            }
            Ok(x.partial_cmp(&y).unwrap_or(Ordering::Equal))
        }
        _ => {
            let parse = |s: &str| super::conditions::parse_datetime(&Value::String(s.to_string()), tz);
            match (parse(a), parse(b)) {
                // Two Luxon DateTimes are never `===`: equal dates count as "not later".
                (Some(x), Some(y)) => Ok(if x > y { Ordering::Greater } else { Ordering::Less }),
                _ => Err(EngineError::node("Invalid value. Only valid dates are supported in mode \"latestDate\"")),
            }
        }
    }
}
