//! Behaviour of the flow and code nodes, option by option and version by
//! version (Code, Function, Function Item, HTTP Request, Set, Merge, If,
//! Filter, Switch, Split In Batches, Execute Workflow, and the small nodes),
//! checked against what n8n's node source does.

use std::time::Duration;

use engine::{Engine, EngineSettings, ExecutionState, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({ "id": name, "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0] })
}

/// Nodes connected in list order (output 0 → input 0), execution order v1.
fn chain(nodes: Vec<Value>) -> Value {
    let mut conns = serde_json::Map::new();
    for w in nodes.windows(2) {
        conns.insert(w[0]["name"].as_str().unwrap_or("").into(), json!({ "main": [[{ "node": w[1]["name"], "type": "main", "index": 0 }]] }));
    }
    json!({ "nodes": nodes, "connections": conns, "settings": { "executionOrder": "v1" } })
}

fn trigger() -> Value {
    node("Trigger", "n8n-nodes-base.manualTrigger", 1.0, json!({}))
}

fn data(items: Value) -> Value {
    node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": items }))
}

fn run_with(wf: &Value, settings: EngineSettings, host: Host) -> ExecutionState {
    let graph = Graph::from_json(wf).expect("valid workflow");
    Engine::new(settings, host).run(&graph, RunOptions::default()).expect("run").0
}

fn run(wf: &Value) -> ExecutionState {
    run_with(wf, EngineSettings::default(), Host::default())
}

/// `json` of the items of `node`'s last run on `output`.
fn out(st: &ExecutionState, node: &str, output: usize) -> Vec<Value> {
    st.run_data.get(node).and_then(|r| r.last()).and_then(|t| t.output(output)).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

/// `pairedItem` targets (item index) of `node`'s output 0.
fn pairs(st: &ExecutionState, node: &str) -> Vec<Option<usize>> {
    st.run_data[node].last().and_then(|t| t.output(0)).map(|i| i.iter().map(|it| it.paired_item.as_ref().map(|p| p.target().0)).collect()).unwrap_or_default()
}

fn error_message(st: &ExecutionState) -> String {
    st.error.as_ref().map(|e| e.message.clone()).unwrap_or_default()
}

fn error_description(st: &ExecutionState) -> String {
    st.error.as_ref().and_then(|e| e.description.clone()).unwrap_or_default()
}

// ---- Code ---------------------------------------------------------------------

fn code(version: f64, mode: &str, js: &str) -> Value {
    node("Code", "n8n-nodes-base.code", version, json!({ "mode": mode, "jsCode": js }))
}

fn all(js: &str) -> Value {
    code(2.0, "runOnceForAllItems", js)
}

fn each(js: &str) -> Value {
    code(2.0, "runOnceForEachItem", js)
}

fn two_items() -> Value {
    data(json!([{ "a": 1 }, { "a": 2 }]))
}

#[test]
fn code_all_items_wraps_plain_objects_and_pairs_by_position() {
    let st = run(&chain(vec![trigger(), two_items(), all("return items.map(i => ({ b: i.json.a * 10 }));")]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "b": 10 }), json!({ "b": 20 })]);
    assert_eq!(pairs(&st, "Code"), vec![Some(0), Some(1)]);
}

#[test]
fn code_all_items_keeps_the_pairing_of_returned_input_items() {
    let st = run(&chain(vec![trigger(), two_items(), all("return [$input.all()[1], $input.first()];")]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "a": 2 }), json!({ "a": 1 })]);
    assert_eq!(pairs(&st, "Code"), vec![Some(1), Some(0)]);
}

#[test]
fn code_all_items_null_is_no_items_and_undefined_is_an_error() {
    let st = run(&chain(vec![trigger(), two_items(), all("return null;")]));
    assert_eq!(st.status, ExecutionStatus::Success);
    assert!(out(&st, "Code", 0).is_empty());
    let st = run(&chain(vec![trigger(), two_items(), all("const x = 1;")]));
    assert_eq!(error_message(&st), "Code doesn't return items properly");
    assert_eq!(error_description(&st), "Please return an array of objects, one for each item you would like to output.");
    let st = run(&chain(vec![trigger(), two_items(), all("return [1, 2];")]));
    assert_eq!(error_message(&st), "Code doesn't return items properly");
}

#[test]
fn code_all_items_validates_item_shapes_like_n8n() {
    let st = run(&chain(vec![trigger(), all("return {json: 'test'};")]));
    assert_eq!(error_message(&st), "A 'json' property isn't an object [item 0]");
    assert_eq!(error_description(&st), "In the returned data, every key named 'json' must point to an object.");
    let st = run(&chain(vec![trigger(), all("return [{json: {}}, {a: 1}];")]));
    assert_eq!(error_message(&st), "Unknown top-level item key: a [item 1]");
    let st = run(&chain(vec![trigger(), all("return [{json: {}, extra: 1}];")]));
    assert_eq!(error_message(&st), "Invalid output format [item 0]");
    assert!(error_description(&st).contains("<code>json</code>"), "{}", error_description(&st));
    let st = run(&chain(vec![trigger(), all("return [{json: {a: 1}, binary: 'x'}];")]));
    assert_eq!(error_message(&st), "A 'binary' property isn't an object [item 0]");
}

#[test]
fn code_thrown_errors_carry_the_line_and_the_error_type() {
    let st = run(&chain(vec![trigger(), all("const a = 1;\nthrow new TypeError('bad thing');\nreturn [];")]));
    assert_eq!(error_message(&st), "bad thing [line 2]");
    assert_eq!(error_description(&st), "TypeError");
    let st = run(&chain(vec![trigger(), two_items(), each("if ($json.a === 2) {\n  undefinedFunction();\n}\nreturn $input.item;")]));
    assert_eq!(error_message(&st), "undefinedFunction is not defined [line 2, for item 1]");
    assert_eq!(error_description(&st), "ReferenceError");
}

#[test]
fn code_each_item_returns_one_item_per_input_paired_with_it() {
    let st = run(&chain(vec![trigger(), two_items(), each("item.json.b = $json.a + $itemIndex; return item;")]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "a": 1, "b": 1 }), json!({ "a": 2, "b": 3 })]);
    assert_eq!(pairs(&st, "Code"), vec![Some(0), Some(1)]);
    // null drops the item; a plain object becomes its json
    let st = run(&chain(vec![trigger(), two_items(), each("return $json.a === 1 ? null : { only: $json.a };")]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "only": 2 })]);
    assert_eq!(pairs(&st, "Code"), vec![Some(1)]);
}

#[test]
fn code_each_item_refuses_arrays_and_all_items_methods() {
    let st = run(&chain(vec![trigger(), two_items(), each("return [item];")]));
    assert_eq!(error_message(&st), "Code doesn't return a single object [item 0]");
    assert_eq!(error_description(&st), "An array of objects was returned. If you need to output multiple items, please use the 'Run Once for All Items' mode instead.");
    let st = run(&chain(vec![trigger(), two_items(), each("// $input.all() is not here\nconst x = $input.all();\nreturn item;")]));
    assert_eq!(error_message(&st), "Can't use .all() here [line 2, for item 0]");
    let st = run(&chain(vec![trigger(), two_items(), each("return 'x';")]));
    assert_eq!(error_message(&st), "Code doesn't return an object [item 0]");
    assert_eq!(error_description(&st), "Please return an object representing the output item. ('x' was returned instead.)");
}

#[test]
fn code_continue_on_fail_gives_error_items() {
    let mut c = each("if ($json.a === 1) throw new Error('nope'); return item;");
    c["onError"] = json!("continueRegularOutput");
    let st = run(&chain(vec![trigger(), two_items(), c]));
    assert_eq!(st.status, ExecutionStatus::Success);
    assert_eq!(out(&st, "Code", 0), vec![json!({ "error": "nope [line 1, for item 0]" }), json!({ "a": 2 })]);
    assert_eq!(pairs(&st, "Code"), vec![Some(0), Some(1)]);

    let mut c = all("throw new Error('all failed');");
    c["onError"] = json!("continueRegularOutput");
    let st = run(&chain(vec![trigger(), two_items(), c]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "error": "all failed [line 1]" })]);
}

#[test]
fn code_error_output_gets_the_failed_items_with_their_input() {
    let mut c = each("if ($json.a === 1) throw new Error('nope'); return item;");
    c["onError"] = json!("continueErrorOutput");
    let mut wf = chain(vec![trigger(), two_items(), c]);
    wf["nodes"].as_array_mut().unwrap().push(node("Ok", "n8n-nodes-base.noOp", 1.0, json!({})));
    wf["nodes"].as_array_mut().unwrap().push(node("Failed", "n8n-nodes-base.noOp", 1.0, json!({})));
    wf["connections"]["Code"] = json!({ "main": [[{ "node": "Ok", "type": "main", "index": 0 }], [{ "node": "Failed", "type": "main", "index": 0 }]] });
    let st = run(&wf);
    assert_eq!(out(&st, "Ok", 0), vec![json!({ "a": 2 })]);
    assert_eq!(out(&st, "Failed", 0), vec![json!({ "a": 1, "error": "nope [line 1, for item 0]" })]);
}

#[test]
fn code_runs_timers_promises_and_async_code() {
    let js = r#"
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
const order = [];
setTimeout(() => order.push('timeout 20'), 20);
setImmediate(() => order.push('immediate'));
Promise.resolve().then(() => order.push('microtask'));
let ticks = 0;
const id = setInterval(() => { ticks++; if (ticks === 3) clearInterval(id); }, 5);
const cancelled = setTimeout(() => order.push('never'), 1);
clearTimeout(cancelled);
const started = Date.now();
await wait(40);
return [{ json: { order, ticks, waited: Date.now() - started >= 35 } }];
"#;
    let st = run(&chain(vec![trigger(), all(js)]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "order": ["microtask", "immediate", "timeout 20"], "ticks": 3, "waited": true })]);
}

#[test]
fn code_that_waits_forever_or_loops_is_stopped_at_the_time_limit() {
    let mut settings = EngineSettings::default();
    settings.limits.timeout = Duration::from_millis(300);
    let st = run_with(&chain(vec![trigger(), all("await new Promise(() => {}); return [];")]), settings.clone(), Host::default());
    assert_eq!(error_message(&st), "script awaited something that never settles");
    let st = run_with(&chain(vec![trigger(), all("await new Promise((r) => setTimeout(r, 60000)); return [];")]), settings.clone(), Host::default());
    assert_eq!(error_message(&st), "Task execution timed out after 0.3 seconds");
    let st = run_with(&chain(vec![trigger(), all("while (true) {}")]), settings, Host::default());
    assert_eq!(error_message(&st), "Task execution timed out after 0.3 seconds");
}

#[test]
fn code_cannot_change_the_items_of_the_node_before_it() {
    let st = run(&chain(vec![trigger(), two_items(), all("for (const i of $input.all()) i.json.a = 99; return $input.all();")]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "a": 99 }), json!({ "a": 99 })]);
    assert_eq!(out(&st, "Data", 0), vec![json!({ "a": 1 }), json!({ "a": 2 })]);
}

#[test]
fn code_console_output_is_kept_with_the_run() {
    let st = run(&chain(vec![trigger(), all("console.log('hello', {a: 1}); return [];")]));
    let console = &st.run_data["Code"][0].console;
    assert_eq!(console.len(), 1, "{console:?}");
    assert!(console[0].contains("hello") && console[0].contains("\"a\":1"), "{console:?}");
}

#[test]
fn code_static_data_persists_in_the_execution() {
    let js = "const s = $getWorkflowStaticData('global'); s.count = (s.count || 0) + 1; const n = $getWorkflowStaticData('node'); n.seen = true; return [{json: {count: s.count}}];";
    let mut wf = chain(vec![trigger(), all(js)]);
    wf["staticData"] = json!({ "global": { "count": 41 } });
    let st = run(&wf);
    assert_eq!(out(&st, "Code", 0), vec![json!({ "count": 42 })]);
    assert_eq!(st.static_data, json!({ "global": { "count": 42 }, "node:Code": { "seen": true } }));
}

#[test]
fn code_version_1_and_dates_in_output() {
    let st = run(&chain(vec![trigger(), code(1.0, "runOnceForAllItems", "return [{json: {d: new Date(0), when: DateTime.fromMillis(0, {zone: 'UTC'})}}];")]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "d": "1970-01-01T00:00:00.000Z", "when": "1970-01-01T00:00:00.000Z" })]);
}

#[test]
fn code_python_is_refused_clearly() {
    let st = run(&chain(vec![trigger(), node("Code", "n8n-nodes-base.code", 2.0, json!({ "language": "python", "pythonCode": "return []" }))]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(error_message(&st), "Python is not supported by this engine");
}

// ---- Function / Function Item (legacy) -----------------------------------------------

#[test]
fn function_node_runs_once_over_items() {
    let f = node("Function", "n8n-nodes-base.function", 1.0, json!({ "functionCode": "for (item of items) { item.json.i = item.index; }\nreturn items;" }));
    let st = run(&chain(vec![trigger(), two_items(), f]));
    assert_eq!(out(&st, "Function", 0), vec![json!({ "a": 1, "i": 0 }), json!({ "a": 2, "i": 1 })]);
    let f = node("Function", "n8n-nodes-base.function", 1.0, json!({ "functionCode": "return [{json: 1}];" }));
    let st = run(&chain(vec![trigger(), f]));
    assert_eq!(error_message(&st), "The json-property has to be an object!");
    let f = node("Function", "n8n-nodes-base.function", 1.0, json!({ "functionCode": "\nnotDefined();" }));
    let st = run(&chain(vec![trigger(), f]));
    assert_eq!(error_message(&st), "notDefined is not defined [Line 2]");
}

#[test]
fn function_item_node_gets_the_json_as_item() {
    let f = node("FI", "n8n-nodes-base.functionItem", 1.0, json!({ "functionCode": "item.b = item.a * 2;\nreturn item;" }));
    let st = run(&chain(vec![trigger(), two_items(), f]));
    assert_eq!(out(&st, "FI", 0), vec![json!({ "a": 1, "b": 2 }), json!({ "a": 2, "b": 4 })]);
    assert_eq!(pairs(&st, "FI"), vec![Some(0), Some(1)]);
    let f = node("FI", "n8n-nodes-base.functionItem", 1.0, json!({ "functionCode": "if (item.a === 2) throw new Error('two');\nreturn item;" }));
    let st = run(&chain(vec![trigger(), two_items(), f]));
    assert_eq!(error_message(&st), "two [Line 1 | Item Index: 1]");
    let f = node("FI", "n8n-nodes-base.functionItem", 1.0, json!({ "functionCode": "const x = 1;" }));
    let st = run(&chain(vec![trigger(), two_items(), f]));
    assert_eq!(error_message(&st), "No data got returned. Always an object has to be returned!");
}
