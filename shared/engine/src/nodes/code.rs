//! Code node (JavaScript, "Run Once for All Items" and "Run Once for Each
//! Item") and the legacy Function and Function Item nodes.
//!
//! The user's code runs in the expression sandbox inside a wrapper that
//! defines n8n's variables (`items`, `item`, `$getWorkflowStaticData`, …) and
//! checks the result as n8n does (`code.js`: normalisation, validation errors
//! with their `[item N]` / `[line N]` suffixes, error texts). The wrapper
//! returns the items plus a trailing meta item (a failure, changed static
//! data), so the fast item conversion of the sandbox is kept. Promises and
//! timers (`setTimeout`, `setInterval`, `setImmediate`) run to completion
//! within the sandbox's time limit; `console.*` output goes to the run's
//! console. Python is refused: the engine runs JavaScript only.

use serde_json::{Map, Value};

use super::{NodeContext, NodeOutput};
use crate::data::{paired_ref, Item};
use crate::error::{EngineError, Result};

/// The result checks the wrapper calls (n8n's result-validation).
const CHECKS: &str = include_str!("code.js");

/// Which node's semantics a wrapper implements.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    CodeAll,
    CodeEach,
    FunctionAll,
    FunctionEach,
}

/// A failure the wrapper reported: as the Code node shows it (`message`,
/// `description`) and as thrown (`raw`, `line`) for the legacy nodes.
struct Failure {
    message: String,
    description: Option<String>,
    raw: String,
    line: Option<u64>,
}

/// What one run of a wrapper produced.
struct Outcome {
    items: Vec<Item>,
    failure: Option<Failure>,
    static_data: Option<Value>,
}

/// The wrapper around `code` for `kind`. Static data is embedded only when
/// the code asks for it (the source, and so its compiled form, stays the same
/// across runs otherwise).
fn wrapper(kind: Kind, code: &str, static_data: Option<&Value>, custom_data: Option<&Value>, node_name: &str) -> String {
    let sd = static_data.map(Value::to_string).unwrap_or_else(|| "null".into());
    let cd = custom_data.map(Value::to_string).unwrap_or_else(|| "null".into());
    // `$execution.customData` shadows the read-only one of the sandbox
    let custom = if custom_data.is_some() { "\nconst $execution = Object.assign({}, globalThis.$execution, { customData: __n8n.customData });" } else { "" };
    let name = Value::String(node_name.to_string()).to_string();
    let vars = match kind {
        Kind::CodeAll => "var items = $input.all();\nconst $getWorkflowStaticData = __n8n.getStaticData;",
        Kind::CodeEach => "var item = $input.item;\nconst $getWorkflowStaticData = __n8n.getStaticData;",
        Kind::FunctionAll => concat!(
            "var items = $input.all();\nfor (let i = 0; i < items.length; i++) items[i].index = i;\n",
            "const getWorkflowStaticData = __n8n.getStaticData;\n",
            "const getNodeParameter = (name) => $parameter[name];\n",
            "const getBinaryDataAsync = async (item) => (item ? item.binary : undefined);\n",
            "const setBinaryDataAsync = async (item, data) => {\n",
            "  if (!item) throw new Error('No item was provided to setBinaryDataAsync (item: INodeExecutionData, data: IBinaryKeyData).');\n",
            "  if (!data) throw new Error('No data was provided to setBinaryDataAsync (item: INodeExecutionData, data: IBinaryKeyData).');\n",
            "  item.binary = data;\n};"
        ),
        Kind::FunctionEach => concat!(
            "const __n8nItem = $input.item;\nvar item = __n8nItem.json;\n",
            "const getWorkflowStaticData = __n8n.getStaticData;\n",
            "const getNodeParameter = (name) => $parameter[name];\n",
            "const getBinaryData = () => __n8nItem.binary;\n",
            "const setBinaryData = async (data) => { __n8nItem.binary = data; };\n",
            "const getBinaryDataAsync = async () => __n8nItem.binary;\n",
            "const setBinaryDataAsync = async (data) => {\n",
            "  if (!data) throw new Error('No data was provided to setBinaryDataAsync (data: IBinaryKeyData).');\n",
            "  __n8nItem.binary = data;\n};"
        ),
    };
    let (index, check) = match kind {
        Kind::CodeAll => ("undefined", "__n8n.codeAll(__n8nResult)"),
        Kind::CodeEach => ("$itemIndex", "__n8n.codeEach(__n8nResult, $itemIndex)"),
        Kind::FunctionAll => ("undefined", "__n8n.functionAll(__n8nResult)"),
        Kind::FunctionEach => ("$itemIndex", "__n8n.functionEach(__n8nResult, $itemIndex, __n8nItem.binary)"),
    };
    let head = |first_line: usize| {
        format!(
            "(async function () {{\nconst __n8n = ({CHECKS})({first_line}, {sd}, {name}, {cd});\n{vars}{custom}\nlet __n8nResult;\ntry {{\n__n8nResult = await (async function () {{\n"
        )
    };
    // the user's first line is the line after the head
    let first_line = head(0).matches('\n').count() + 1;
    let user = expression::prepare_script(code);
    format!(
        "{}{user}\n}}).call(globalThis);\n}} catch (e) {{\nreturn __n8n.failed(e, {index});\n}}\ntry {{\nreturn {check};\n}} catch (e) {{\nreturn __n8n.failed(e, {index});\n}}\n}})",
        head(first_line)
    )
}

/// Input items as n8n hands them to code: each paired with its own position.
fn repaired(input: &[Item]) -> Vec<Item> {
    input.iter().enumerate().map(|(i, it)| it.paired(i, 0)).collect()
}

/// Runs a wrapper against `input` (item `item` current) and splits off the meta item.
fn run(ctx: &mut NodeContext<'_>, kind: Kind, code: &str, input: &[Item], item: i64) -> Result<Outcome> {
    let static_data = code.contains("getWorkflowStaticData").then(|| ctx.static_data.clone());
    let custom_data = code.contains("customData").then(|| serde_json::to_value(&*ctx.custom_data).unwrap_or(Value::Null));
    let source = wrapper(kind, code, static_data.as_ref(), custom_data.as_ref(), &ctx.node.name);
    let (mut items, console) = ctx.run_script_items(&source, input, item).map_err(sandbox_failure)?;
    ctx.console.extend(console);
    let meta = items.pop().map(|m| m.json.into_value());
    let meta = meta.as_ref().and_then(|m| m.get("__n8nCodeMeta")).ok_or_else(|| EngineError::node("The code's result could not be read"))?;
    let failure = meta.get("failure").filter(|f| f.is_object()).map(|f| Failure {
        message: f["message"].as_str().unwrap_or("Unknown error").to_string(),
        description: f["description"].as_str().map(str::to_string),
        raw: f["raw"].as_str().unwrap_or("Unknown error").to_string(),
        line: f["line"].as_u64(),
    });
    // custom data written by the code, checked and stored as the Execution Data node does
    for w in meta.get("customData").and_then(Value::as_array).into_iter().flatten() {
        let key = w.get(0).map(super::js_string).unwrap_or_default();
        ctx.custom_data.set(&key, w.get(1).unwrap_or(&Value::Null)).map_err(EngineError::node)?;
    }
    Ok(Outcome { items, failure, static_data: meta.get("staticData").filter(|s| s.is_object()).cloned() })
}

/// Sandbox failures (time or memory limit) in the words of n8n's task runner.
fn sandbox_failure(e: EngineError) -> EngineError {
    match e {
        EngineError::Expression(expression::ExpressionError::Timeout { limit_ms, .. }) => {
            let secs = (limit_ms as f64 / 1000.0).max(0.001);
            let unit = if secs == 1.0 { "second" } else { "seconds" };
            EngineError::node_with(
                format!("Task execution timed out after {} {unit}", expression::js_number_to_string(secs)),
                "The code ran longer than the time limit and was stopped. Make it faster, or have it process fewer items per run.",
            )
        }
        EngineError::Expression(expression::ExpressionError::OutOfMemory { limit_bytes, .. }) => EngineError::node_with(
            "Code ran out of memory",
            format!("The code used more than the memory limit of {limit_bytes} bytes and was stopped."),
        ),
        // failures outside the user's code (a syntax error, a timer's callback): the message alone
        EngineError::Expression(expression::ExpressionError::Syntax { message, .. }) => {
            let details = message.strip_prefix("SyntaxError: ").unwrap_or(&message).to_string();
            EngineError::node_with(details, "SyntaxError")
        }
        EngineError::Expression(expression::ExpressionError::Runtime { message, .. }) => EngineError::node(message),
        other => other,
    }
}

/// Error item `{json: {error}}`, marked for the error output.
fn push_error(ctx: &mut NodeContext<'_>, out: &mut Vec<Item>, message: &str, paired: Option<usize>) {
    ctx.error_items.push(out.len());
    let mut m = Map::new();
    m.insert("error".into(), Value::String(message.to_string()));
    out.push(Item { json: Value::Object(m).into(), binary: None, paired_item: paired.map(|i| paired_ref(i, 0)) });
}

fn keep_static_data(ctx: &mut NodeContext<'_>, outcome: &Outcome) {
    if let Some(sd) = &outcome.static_data {
        *ctx.static_data = sd.clone();
    }
}

/// n8n's automatic pairing of items a node returned without `pairedItem`:
/// one input item pairs everything with it, equal counts pair by position.
fn assign_pairs(items: &mut [Item], input_len: usize) {
    let same = items.len() == input_len;
    for (k, it) in items.iter_mut().enumerate() {
        if it.paired_item.is_none() {
            if input_len == 1 {
                it.paired_item = Some(paired_ref(0, 0));
            } else if same {
                it.paired_item = Some(paired_ref(k, 0));
            } else {
                break;
            }
        }
    }
}

/// The Code node (`n8n-nodes-base.code`, versions 1 and 2).
pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let language = if ctx.version() >= 2.0 { ctx.param_str("language", 0, "javaScript")? } else { "javaScript".into() };
    match language.as_str() {
        "javaScript" => {}
        "python" | "pythonNative" => {
            return Err(EngineError::node_with(
                "Python is not supported by this engine",
                "The Code node runs JavaScript here. Set the language to JavaScript and rewrite the code, or use other nodes for the same steps.",
            ))
        }
        other => return Err(EngineError::node(format!("The language \"{other}\" is not supported by the Code node"))),
    }
    let code = ctx.raw("jsCode").and_then(Value::as_str).unwrap_or("").to_string();
    let input = repaired(&ctx.input(0));
    let mode = ctx.param_str("mode", 0, "runOnceForAllItems")?;
    let mut out = vec![];
    match mode.as_str() {
        "runOnceForAllItems" => {
            let outcome = run(ctx, Kind::CodeAll, &code, &input, if input.is_empty() { -1 } else { 0 });
            match outcome {
                Ok(o) => {
                    keep_static_data(ctx, &o);
                    if let Some(f) = o.failure {
                        if !ctx.continue_on_fail() {
                            return Err(EngineError::Node { message: f.message, description: f.description, http_code: None });
                        }
                        push_error(ctx, &mut out, &f.message, None);
                    } else {
                        out = o.items;
                        assign_pairs(&mut out, input.len());
                    }
                }
                Err(e) if ctx.continue_on_fail() => push_error(ctx, &mut out, &e.to_string(), None),
                Err(e) => return Err(e),
            }
        }
        "runOnceForEachItem" => {
            for i in 0..input.len() {
                let failure = match disallowed_method(&code, i) {
                    Some(f) => Ok(Some(f)),
                    None => run(ctx, Kind::CodeEach, &code, &input, i as i64).map(|o| {
                        keep_static_data(ctx, &o);
                        match o.failure {
                            Some(f) => Some(f),
                            None => {
                                out.extend(o.items);
                                None
                            }
                        }
                    }),
                };
                let failure = match failure {
                    Ok(None) => continue,
                    Ok(Some(f)) => EngineError::Node { message: f.message, description: f.description, http_code: None },
                    Err(e) => e,
                };
                if !ctx.continue_on_fail() {
                    return Err(failure);
                }
                push_error(ctx, &mut out, &failure.to_string(), Some(i));
            }
        }
        other => return Err(EngineError::node(format!("The mode \"{other}\" is not known; use runOnceForAllItems or runOnceForEachItem"))),
    }
    Ok(NodeOutput::one(out))
}

/// n8n's check that "Run Once for Each Item" code does not read all items.
fn disallowed_method(code: &str, item: usize) -> Option<Failure> {
    let re = regex::Regex::new(r"\$input\.(first|last|all|itemMatching)").ok()?;
    let method = re.captures(code)?.get(1)?.as_str().to_string();
    let line = code.split('\n').position(|l| {
        let l = l.trim_start();
        l.contains(method.as_str()) && !l.starts_with("//") && !l.starts_with("/*") && !l.starts_with('*')
    })? + 1;
    Some(Failure {
        message: format!("Can't use .{method}() here [line {line}, for item {item}]"),
        description: Some("This is only available in 'Run Once for All Items' mode".into()),
        raw: String::new(),
        line: Some(line as u64),
    })
}

/// The legacy Function node: code run once over all items (`items`).
pub fn function(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let code = ctx.raw("functionCode").and_then(Value::as_str).unwrap_or("").to_string();
    let input = repaired(&ctx.input(0));
    let failure = match run(ctx, Kind::FunctionAll, &code, &input, if input.is_empty() { -1 } else { 0 }) {
        Ok(o) => {
            keep_static_data(ctx, &o);
            match o.failure {
                None => {
                    let mut items = o.items;
                    assign_pairs(&mut items, input.len());
                    return Ok(NodeOutput::one(items));
                }
                Some(f) => {
                    let message = match f.line {
                        Some(l) => format!("{} [Line {l}]", f.raw),
                        None => f.raw.clone(),
                    };
                    (f.raw, EngineError::node(message))
                }
            }
        }
        Err(e) => (e.to_string(), e),
    };
    if !ctx.continue_on_fail() {
        return Err(failure.1);
    }
    let mut out = vec![];
    push_error(ctx, &mut out, &failure.0, None);
    Ok(NodeOutput::one(out))
}

/// The legacy Function Item node: code run per item, `item` is its json.
pub fn function_item(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let code = ctx.raw("functionCode").and_then(Value::as_str).unwrap_or("").to_string();
    let input = repaired(&ctx.input(0));
    let mut out = vec![];
    for i in 0..input.len() {
        let (raw, paired, err) = match run(ctx, Kind::FunctionEach, &code, &input, i as i64) {
            Ok(o) => {
                keep_static_data(ctx, &o);
                match o.failure {
                    None => {
                        out.extend(o.items);
                        continue;
                    }
                    // result checks fail like n8n's NodeOperationError: as they are
                    Some(f) if f.line.is_none() && f.raw.starts_with("No data got returned") => (f.raw.clone(), Some(i), EngineError::node(f.raw)),
                    Some(f) => {
                        let message = match f.line {
                            Some(l) => format!("{} [Line {l} | Item Index: {i}]", f.raw),
                            None => format!("{} [Item Index: {i}]", f.raw),
                        };
                        (f.raw, None, EngineError::node(message))
                    }
                }
            }
            Err(e) => (e.to_string(), Some(i), e),
        };
        if !ctx.continue_on_fail() {
            return Err(err);
        }
        push_error(ctx, &mut out, &raw, paired);
    }
    Ok(NodeOutput::one(out))
}
