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
fn code_all_items_fails_at_the_item_n8n_fails_at() {
    // the reader of the result takes plain items and plain item data as they
    // are; everything else gets n8n's checks, with their errors
    const JSON_NOT_OBJECT: &str = "In the returned data, every key named 'json' must point to an object.";
    const NOT_ITEMS: &str = "Please return an array of objects, one for each item you would like to output.";
    let fails = |js: &str, message: &str, description: &str| {
        let st = run(&chain(vec![trigger(), two_items(), all(js)]));
        assert_eq!(st.status, ExecutionStatus::Error, "{js}");
        assert_eq!(error_message(&st), message, "{js}");
        assert_eq!(error_description(&st), description, "{js}");
    };
    fails("return [{json: {a: 1}}, {}];", "Inconsistent item format", "Either every returned item or none has a `json` key.");
    fails("return [{binary: {}}, {}];", "Inconsistent item format", "Either every returned item or none has a `binary` key.");
    fails(
        "return [{b: 2, index: 0}, {a: 1}];",
        "Invalid output format [item 0]",
        "An output item contains the reserved key <code>index</code>. To get around this, please wrap each item in an object, under a key called <code>json</code>.",
    );
    fails("return [{json: {}}, {json: {}, other: undefined}];", "Invalid output format [item 1]", "An output item contains the reserved key <code>json</code>. To get around this, please wrap each item in an object, under a key called <code>json</code>.");
    fails("return [{a: 1}, {b: 2}, {json: {}, c: 1}];", "Unknown top-level item key: a [item 0]", "Access the properties of an item under `.json`, e.g. `item.json`");
    fails("return [{json: {}}, {json: undefined}];", "A 'json' property isn't an object [item 1]", JSON_NOT_OBJECT);
    fails("return [{json: {}}, {json: new Date(0)}];", "A 'json' property isn't an object [item 1]", JSON_NOT_OBJECT);
    fails("return [{json: {}}, {json: [1]}];", "A 'json' property isn't an object [item 1]", JSON_NOT_OBJECT);
    // keys `for…in` does not see but `in` does
    fails("return [Object.defineProperty({b: 2}, 'json', {value: 5})];", "A 'json' property isn't an object [item 0]", JSON_NOT_OBJECT);
    fails(
        "class P { get json() { return 'x'; } }\nreturn [new P()];",
        "A 'json' property isn't an object [item 0]",
        JSON_NOT_OBJECT,
    );
    fails(
        "return [{json: {}}, Object.defineProperty({json: {}}, 'binary', {value: 'x'})];",
        "A 'binary' property isn't an object [item 1]",
        "In the returned data, every key named 'binary' must point to an object.",
    );
    fails("return [{a: 1}, new Date(0)];", "Code doesn't return items properly", NOT_ITEMS);
    // n8n checks every element before any is read
    fails("return [{a: 1n}, 5];", "Code doesn't return items properly", NOT_ITEMS);
    fails("return [{json: {a: 1n}}, {json: 'x'}];", "A 'json' property isn't an object [item 1]", JSON_NOT_OBJECT);
    fails("return [{a: 1}, null];", "Code doesn't return items properly", NOT_ITEMS);
    // plain items and plain item data pass, each as they are
    let st = run(&chain(vec![trigger(), two_items(), all("return [{json: {a: 1}, binary: undefined, pairedItem: {item: 1}}, {json: Object.create(null)}];")]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "a": 1 }), json!({})]);
    assert_eq!(pairs(&st, "Code"), vec![Some(1), Some(1)]);
    let st = run(&chain(vec![trigger(), two_items(), all("const o = Object.create(null); o.b = 2;\nreturn [{a: 1, nested: {json: 1}}, o];")]));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "a": 1, "nested": { "json": 1 } }), json!({ "b": 2 })]);
    // arrays that cannot grow are read all the same
    for js in ["return Object.freeze([{a: 1}]);", "return Object.defineProperty([{a: 1}], 'length', {writable: false});"] {
        let st = run(&chain(vec![trigger(), two_items(), all(js)]));
        assert_eq!(st.status, ExecutionStatus::Success, "{js}: {}", error_message(&st));
        assert_eq!(out(&st, "Code", 0), vec![json!({ "a": 1 })], "{js}");
    }
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
const ticked = new Promise((done) => {
  const id = setInterval(() => { ticks++; if (ticks === 3) { clearInterval(id); done(); } }, 5);
});
const cancelled = setTimeout(() => order.push('never'), 1);
clearTimeout(cancelled);
const started = Date.now();
await Promise.all([wait(40), ticked]);
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

/// Two Code nodes in a row each change the items they got and hand them back
/// after a timer: the first node's output keeps its own value.
#[test]
fn code_async_results_are_each_nodes_own() {
    let step = |name: &str, stage: i64| {
        let js = format!("for (const item of $input.all()) {{ item.json.stage = {stage}; }}\nreturn new Promise((resolve) => setTimeout(() => resolve($input.all()), 50));");
        node(name, "n8n-nodes-base.code", 1.0, json!({ "jsCode": js }))
    };
    let st = run(&chain(vec![trigger(), step("First", 1), step("Second", 2)]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(out(&st, "First", 0), vec![json!({ "stage": 1 })]);
    assert_eq!(out(&st, "Second", 0), vec![json!({ "stage": 2 })]);
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
fn code_all_items_turns_class_instances_into_json_text_like_n8n() {
    // n8n's standardizeOutput: instances of classes (no toJSON) nested in plain
    // objects become their JSON text; arrays, plain objects, Dates stay values
    let js = "class P { constructor() { this.x = 1; } }\n\
              const shared = new P();\n\
              return [{json: {a: 1, n: {p: new P(), l: [new P()]}, d: new Date(0)}}, {json: {s: shared, t: shared, e: new (class E {})()}}];";
    let st = run(&chain(vec![trigger(), all(js)]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(
        out(&st, "Code", 0),
        vec![
            json!({ "a": 1, "n": { "p": "{\"x\":1}", "l": [{ "x": 1 }] }, "d": "1970-01-01T00:00:00.000Z" }),
            // the same instance a second time is left as it is (n8n's seen set)
            json!({ "s": "{\"x\":1}", "t": { "x": 1 }, "e": {} }),
        ]
    );
    // a class instance that cannot become JSON text fails the node
    let st = run(&chain(vec![trigger(), all("class C { constructor() { this.self = this; } }\nreturn [{json: {c: new C()}}];")]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(error_message(&st).contains("circular"), "{}", error_message(&st));
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

// ---- HTTP Request ------------------------------------------------------------------

/// A local server for HTTP Request tests. `/echo` answers with what it got
/// (`method`, `path`, `query`, `headers`, `body` as text); other paths:
/// `/status/<code>`, `/text`, `/empty`, `/latin1`, `/image.png`, `/download`
/// (content disposition), `/redirect?to=<path>&code=<status>`, `/digest`,
/// `/slow`, `/pages?page=<n>` (three pages, a `next-url` header each).
fn http_server() -> String {
    use axum::body::Bytes;
    use axum::http::{HeaderMap, Method, StatusCode, Uri};
    use axum::response::IntoResponse;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async move {
            let handler = |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| async move {
                let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or("").to_string();
                let query: std::collections::HashMap<String, String> =
                    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).into_owned().collect();
                let path = uri.path().to_string();
                let json_reply = |code: u16, v: Value| (StatusCode::from_u16(code).unwrap_or(StatusCode::OK), axum::Json(v)).into_response();
                match path.as_str() {
                    "/echo" => {
                        let hs: serde_json::Map<String, Value> = headers.iter().map(|(k, v)| (k.as_str().to_string(), json!(v.to_str().unwrap_or("")))).collect();
                        json_reply(200, json!({ "method": method.as_str(), "path": path, "query": uri.query().unwrap_or(""), "headers": hs, "body": String::from_utf8_lossy(&body) }))
                    }
                    "/text" => ([("content-type", "text/plain")], "hello").into_response(),
                    "/empty" => ([("content-type", "text/plain")], "").into_response(),
                    "/latin1" => ([("content-type", "text/plain; charset=ISO-8859-1")], b"caf\xe9".to_vec()).into_response(),
                    "/image.png" => ([("content-type", "image/png")], b"\x89PNG".to_vec()).into_response(),
                    "/download" => ([("content-type", "application/pdf"), ("content-disposition", "attachment; filename=\"report.pdf\"")], b"%PDF".to_vec()).into_response(),
                    "/redirect" => {
                        let code = query.get("code").and_then(|c| c.parse().ok()).unwrap_or(302u16);
                        let to = query.get("to").cloned().unwrap_or_else(|| "/echo".into());
                        (StatusCode::from_u16(code).unwrap_or(StatusCode::FOUND), [("location", to)], "moved").into_response()
                    }
                    "/digest" => match headers.get("authorization").and_then(|v| v.to_str().ok()) {
                        Some(a) if a.starts_with("Digest ") && a.contains("username=\"dana\"") && a.contains("response=\"") => json_reply(200, json!({ "digest": "ok" })),
                        _ => (StatusCode::UNAUTHORIZED, [("www-authenticate", "Digest realm=\"test\", qop=\"auth\", nonce=\"abc123\", opaque=\"xyz\"")], "").into_response(),
                    },
                    "/slow" => {
                        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
                        json_reply(200, json!({}))
                    }
                    "/pages" => {
                        let page: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
                        let next = format!("http://{host}/pages?page={}", page + 1);
                        if page > 3 {
                            return (StatusCode::NOT_FOUND, [("next-url", next)], axum::Json(json!([]))).into_response();
                        }
                        (StatusCode::OK, [("next-url", next)], axum::Json(json!([{ "page": page }]))).into_response()
                    }
                    p if p.starts_with("/status/") => json_reply(p[8..].parse().unwrap_or(500), json!({ "error": "nope" })),
                    _ => json_reply(404, json!({ "error": "unknown path" })),
                }
            };
            let app = axum::Router::new().fallback(handler);
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            tx.send(l.local_addr().expect("addr")).expect("send");
            axum::serve(l, app).await.expect("serve");
        });
    });
    format!("http://{}", rx.recv().expect("server address"))
}

/// Hands out the credentials a test gives, by type.
struct TestCredentials(Value);
impl engine::host::CredentialsProvider for TestCredentials {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        self.0.get(cred_type).cloned().ok_or_else(|| format!("no {cred_type}"))
    }
}

fn http_node(version: f64, params: Value) -> Value {
    node("HTTP", "n8n-nodes-base.httpRequest", version, params)
}

/// Runs `http` after the trigger, with private addresses allowed and `credentials` available.
fn run_http(http: Value, credentials: Value) -> ExecutionState {
    let settings = EngineSettings { allow_private_network: true, http_timeout: Duration::from_secs(10), ..Default::default() };
    let host = Host { credentials: Some(std::sync::Arc::new(TestCredentials(credentials))), ..Default::default() };
    run_with(&chain(vec![trigger(), http]), settings, host)
}

fn http_out(http: Value) -> Vec<Value> {
    let st = run_http(http, json!({}));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    out(&st, "HTTP", 0)
}

#[test]
fn http_v4_query_headers_and_json_body_as_n8n_builds_them() {
    let base = http_server();
    let got = http_out(http_node(
        4.2,
        json!({
            "method": "POST", "url": format!("{base}/echo"),
            "sendQuery": true, "queryParameters": { "parameters": [{ "name": "a", "value": "1" }, { "name": "b", "value": "x y" }] },
            "sendHeaders": true, "headerParameters": { "parameters": [{ "name": "X-Custom", "value": "v" }] },
            "sendBody": true, "bodyParameters": { "parameters": [{ "name": "user.name", "value": "Ada" }, { "name": "n", "value": "5" }] },
            "options": {}
        }),
    ));
    let echo = &got[0];
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["query"], "a=1&b=x+y");
    assert_eq!(echo["headers"]["x-custom"], "v");
    assert_eq!(echo["headers"]["content-type"], "application/json");
    assert!(echo["headers"]["accept"].as_str().unwrap_or("").starts_with("application/json,text/html"));
    // v4: dotted names nest, values stay strings
    assert_eq!(serde_json::from_str::<Value>(echo["body"].as_str().unwrap()).unwrap(), json!({ "user": { "name": "Ada" }, "n": "5" }));
    // v3: names are taken as they are
    let got = http_out(http_node(3.0, json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "bodyParameters": { "parameters": [{ "name": "user.name", "value": "Ada" }] }, "options": {} })));
    assert_eq!(serde_json::from_str::<Value>(got[0]["body"].as_str().unwrap()).unwrap(), json!({ "user.name": "Ada" }));
}

#[test]
fn http_query_arrays_follow_the_array_format_option() {
    let base = http_server();
    let q = |format: Option<&str>| {
        let mut options = json!({});
        if let Some(f) = format {
            options["queryParameterArrays"] = json!(f);
        }
        let got = http_out(http_node(4.2, json!({ "url": format!("{base}/echo"), "sendQuery": true, "specifyQuery": "json", "jsonQuery": "{\"id\": [1, 2], \"o\": {\"k\": \"v\"}}", "options": options })));
        got[0]["query"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(q(None), "id%5B0%5D=1&id%5B1%5D=2&o%5Bk%5D=v");
    assert_eq!(q(Some("brackets")), "id%5B%5D=1&id%5B%5D=2&o%5Bk%5D=v");
    assert_eq!(q(Some("repeat")), "id=1&id=2&o%5Bk%5D=v");
}

#[test]
fn http_form_multipart_binary_and_raw_bodies() {
    let base = http_server();
    let echo = |params: Value| http_out(http_node(4.2, params)).remove(0);
    let e = echo(json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "contentType": "form-urlencoded", "bodyParameters": { "parameters": [{ "name": "a", "value": "1 2" }] }, "options": {} }));
    assert_eq!(e["body"], "a=1+2");
    assert_eq!(e["headers"]["content-type"], "application/x-www-form-urlencoded");
    let e = echo(json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "contentType": "form-urlencoded", "specifyBody": "string", "body": "x=1&y=2", "options": {} }));
    assert_eq!(e["body"], "x=1&y=2");
    let e = echo(json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "contentType": "multipart-form-data", "bodyParameters": { "parameters": [{ "name": "field", "value": "value" }] }, "options": {} }));
    assert!(e["headers"]["content-type"].as_str().unwrap_or("").starts_with("multipart/form-data; boundary="));
    assert!(e["body"].as_str().unwrap_or("").contains("Content-Disposition: form-data; name=\"field\"\r\n\r\nvalue\r\n"), "{}", e["body"]);
    let e = echo(json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "contentType": "raw", "rawContentType": "text/xml", "body": "<a/>", "options": {} }));
    assert_eq!((e["body"].as_str(), e["headers"]["content-type"].as_str()), (Some("<a/>"), Some("text/xml")));

    // binary upload: the file of an item, with its MIME type
    let file = node("File", "n8n-nodes-base.code", 2.0, json!({ "jsCode": "return [{json: {}, binary: {data: {data: 'aGVsbG8=', mimeType: 'text/plain', fileName: 'h.txt'}}}];" }));
    let http = http_node(4.2, json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "contentType": "binaryData", "inputDataFieldName": "data", "options": {} }));
    let st = run_with(&chain(vec![trigger(), file, http]), EngineSettings { allow_private_network: true, ..Default::default() }, Host::default());
    let e = &out(&st, "HTTP", 0)[0];
    assert_eq!((e["body"].as_str(), e["headers"]["content-type"].as_str()), (Some("hello"), Some("text/plain")));
}

#[test]
fn http_response_formats_as_n8n_outputs_them() {
    let base = http_server();
    assert_eq!(http_out(http_node(4.2, json!({ "url": format!("{base}/text"), "options": {} }))), vec![json!({ "data": "hello" })]);
    assert_eq!(http_out(http_node(4.2, json!({ "url": format!("{base}/empty"), "options": {} }))), vec![json!({})]);
    assert_eq!(http_out(http_node(4.2, json!({ "url": format!("{base}/latin1"), "options": {} }))), vec![json!({ "data": "café" })]);
    let named = http_out(http_node(4.2, json!({ "url": format!("{base}/text"), "options": { "response": { "response": { "responseFormat": "text", "outputPropertyName": "page" } } } })));
    assert_eq!(named, vec![json!({ "page": "hello" })]);
    let full = http_out(http_node(4.2, json!({ "url": format!("{base}/status/201"), "options": { "response": { "response": { "fullResponse": true } } } })));
    assert_eq!(full[0]["statusCode"], 201);
    assert_eq!(full[0]["statusMessage"], "Created");
    assert_eq!(full[0]["body"], json!({ "error": "nope" }));
    assert_eq!(full[0]["headers"]["content-type"], "application/json");
    // JSON format on a text body fails with n8n's advice
    let st = run_http(http_node(4.2, json!({ "url": format!("{base}/text"), "options": { "response": { "response": { "responseFormat": "json" } } } })), json!({}));
    assert_eq!(error_message(&st), "Response body is not valid JSON. Change \"Response Format\" to \"Text\"");
}

#[test]
fn http_file_responses_become_binary_with_their_names() {
    let base = http_server();
    let binary = |params: Value| {
        let st = run_http(http_node(4.2, params), json!({}));
        assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
        st.run_data["HTTP"][0].output(0).unwrap()[0].binary.as_ref().map(|b| Value::clone(b)).unwrap_or_default()
    };
    // autodetected from the content type
    let b = binary(json!({ "url": format!("{base}/image.png"), "options": {} }));
    assert_eq!((b["data"]["fileName"].as_str(), b["data"]["mimeType"].as_str(), b["data"]["fileSize"].as_str()), (Some("image.png"), Some("image/png"), Some("4 B")));
    // the content disposition names the file
    let b = binary(json!({ "url": format!("{base}/download"), "options": { "response": { "response": { "responseFormat": "file", "outputPropertyName": "report" } } } }));
    assert_eq!((b["report"]["fileName"].as_str(), b["report"]["fileType"].as_str()), (Some("report.pdf"), Some("pdf")));
    assert_eq!(b["report"]["data"], "JVBERg==");
}

#[test]
fn http_errors_read_like_n8n_and_continue_on_fail_keeps_the_error() {
    let base = http_server();
    let st = run_http(http_node(4.2, json!({ "url": format!("{base}/status/404"), "options": {} })), json!({}));
    let e = st.error.clone().unwrap();
    assert_eq!(e.message, "The resource you are requesting could not be found");
    assert_eq!(e.description.as_deref(), Some("404 - {\"error\":\"nope\"}"));
    assert_eq!(e.http_code.as_deref(), Some("404"));
    let st = run_http(http_node(4.2, json!({ "url": format!("{base}/status/418"), "options": {} })), json!({}));
    assert_eq!(error_message(&st), "Your request is invalid or could not be processed by the service");
    // never error: the error body is the output
    assert_eq!(http_out(http_node(4.2, json!({ "url": format!("{base}/status/500"), "options": { "response": { "response": { "neverError": true } } } }))), vec![json!({ "error": "nope" })]);
    // continue on fail: the error object of the request
    let mut h = http_node(4.2, json!({ "url": format!("{base}/status/503"), "options": {} }));
    h["onError"] = json!("continueRegularOutput");
    let got = http_out(h);
    assert_eq!(got[0]["error"], json!({ "message": "503 - {\"error\":\"nope\"}", "name": "Error" }));
    // URLs must be http(s)
    let st = run_http(http_node(4.2, json!({ "url": "ftp://example.com/x", "options": {} })), json!({}));
    assert_eq!(error_message(&st), "Invalid URL: ftp://example.com/x. URL must start with \"http\" or \"https\".");
    let st = run_http(http_node(4.2, json!({ "url": "https://example.com", "options": { "proxy": "http://proxy:3128" } })), json!({}));
    assert_eq!(error_message(&st), "Proxies are not supported by this engine");
}

/// Version 3 sends the method asked for, a PUT with its body parameters as
/// JSON and a DELETE without a body; the JSON answer is the item.
#[test]
fn http_v3_put_and_delete() {
    let base = http_server();
    let put = http_out(http_node(3.0, json!({ "method": "PUT", "url": format!("{base}/echo"), "sendBody": true, "bodyParameters": { "parameters": [{ "name": "owner", "value": "17" }] }, "options": {} })));
    assert_eq!((put[0]["method"].as_str(), put[0]["headers"]["content-type"].as_str()), (Some("PUT"), Some("application/json")));
    assert_eq!(serde_json::from_str::<Value>(put[0]["body"].as_str().unwrap_or("")).ok(), Some(json!({ "owner": "17" })));
    let delete = http_out(http_node(3.0, json!({ "method": "DELETE", "url": format!("{base}/echo"), "options": {} })));
    assert_eq!((delete[0]["method"].as_str(), delete[0]["body"].as_str()), (Some("DELETE"), Some("")));
}

/// A JSON body that does not parse fails before any request; with the
/// error output the item goes there as `{error}` (n8n's wording).
#[test]
fn http_invalid_json_body_goes_to_the_error_output() {
    let base = http_server();
    let mut h = http_node(4.2, json!({ "method": "POST", "url": format!("{base}/echo"), "sendBody": true, "specifyBody": "json", "jsonBody": "{\n  \"q\": \"abc\",\n}", "options": {} }));
    h["onError"] = json!("continueErrorOutput");
    let st = run_http(h, json!({}));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert!(out(&st, "HTTP", 0).is_empty());
    assert_eq!(out(&st, "HTTP", 1), vec![json!({ "error": "JSON parameter needs to be valid JSON" })]);
}

#[test]
fn http_redirects_per_version_and_option() {
    let base = http_server();
    let follow = |version: f64, options: Value, method: &str| {
        let got = http_out(http_node(version, json!({ "method": method, "url": format!("{base}/redirect?to=/echo"), "options": options })));
        got[0].get("path").is_some()
    };
    assert!(!follow(3.0, json!({}), "GET"), "v3 does not follow by default");
    assert!(follow(3.0, json!({ "redirect": { "redirect": { "followRedirects": true } } }), "GET"));
    assert!(follow(4.2, json!({}), "GET"), "v4 follows by default");
    assert!(!follow(4.2, json!({ "redirect": { "redirect": { "followRedirects": false } } }), "GET"));
    // a 303 after a POST is fetched with GET
    let got = http_out(http_node(4.2, json!({ "method": "POST", "url": format!("{base}/redirect?to=/echo&code=303"), "sendBody": true, "bodyParameters": { "parameters": [{ "name": "a", "value": "1" }] }, "options": {} })));
    assert_eq!((got[0]["method"].as_str(), got[0]["body"].as_str()), (Some("GET"), Some("")));
    let hops = "/redirect?to=/redirect%3Fto%3D/redirect%253Fto%253D/redirect%25253Fto%25253D/echo";
    assert!(http_out(http_node(4.2, json!({ "url": format!("{base}{hops}"), "options": {} })))[0].get("path").is_some());
    let st = run_http(http_node(4.2, json!({ "url": format!("{base}{hops}"), "options": { "redirect": { "redirect": { "maxRedirects": 3 } } } })), json!({}));
    assert_eq!(error_message(&st), "Maximum number of redirects exceeded");
}

#[test]
fn http_credentials_of_each_generic_type() {
    let base = http_server();
    let creds = json!({
        "httpBasicAuth": { "user": "u", "password": "p" },
        "httpBearerAuth": { "token": "t0k" },
        "httpQueryAuth": { "name": "key", "value": "s3" },
        "httpCustomAuth": { "json": "{\"headers\": {\"x-c\": \"1\"}, \"qs\": {\"c\": \"2\"}}" },
        "httpDigestAuth": { "user": "dana", "password": "pw" },
        "oAuth2Api": { "oauthTokenData": { "access_token": "oa" } },
    });
    let with = |ty: &str, path: &str| {
        let mut h = http_node(4.2, json!({ "url": format!("{base}{path}"), "authentication": "genericCredentialType", "genericAuthType": ty, "options": {} }));
        h["credentials"] = json!({ ty: { "id": "1", "name": ty } });
        let st = run_http(h, creds.clone());
        assert_eq!(st.status, ExecutionStatus::Success, "{ty}: {:?}", st.error);
        out(&st, "HTTP", 0).remove(0)
    };
    assert_eq!(with("httpBasicAuth", "/echo")["headers"]["authorization"], "Basic dTpw");
    assert_eq!(with("httpBearerAuth", "/echo")["headers"]["authorization"], "Bearer t0k");
    assert_eq!(with("oAuth2Api", "/echo")["headers"]["authorization"], "Bearer oa");
    assert_eq!(with("httpQueryAuth", "/echo")["query"], "key=s3");
    let c = with("httpCustomAuth", "/echo");
    assert_eq!((c["headers"]["x-c"].as_str(), c["query"].as_str()), (Some("1"), Some("c=2")));
    assert_eq!(with("httpDigestAuth", "/digest"), json!({ "digest": "ok" }));
    // a credential restricted to other domains is refused
    let mut h = http_node(4.2, json!({ "url": format!("{base}/echo"), "authentication": "genericCredentialType", "genericAuthType": "httpBearerAuth", "options": {} }));
    h["credentials"] = json!({ "httpBearerAuth": { "id": "1", "name": "b" } });
    let st = run_http(h, json!({ "httpBearerAuth": { "token": "t", "allowedHttpRequestDomains": "domains", "allowedDomains": "example.com" } }));
    assert!(error_message(&st).starts_with("Domain not allowed: This credential is restricted from accessing"), "{}", error_message(&st));
}

#[test]
fn http_pagination_by_next_url_status_code_and_page_limit() {
    let base = http_server();
    let pages = |pagination: Value| {
        let got = http_out(http_node(4.1, json!({ "url": format!("{base}/pages"), "options": { "pagination": { "pagination": pagination } } })));
        got.iter().map(|p| p["page"].as_u64().unwrap_or(0)).collect::<Vec<_>>()
    };
    let next = json!("={{ $response.headers[\"next-url\"] }}");
    assert_eq!(pages(json!({ "paginationMode": "responseContainsNextURL", "nextURL": next, "paginationCompleteWhen": "receiveSpecificStatusCodes", "statusCodesWhenComplete": "404" })), vec![1, 2, 3]);
    assert_eq!(pages(json!({ "paginationMode": "responseContainsNextURL", "nextURL": next, "limitPagesFetched": true, "maxRequests": 2 })), vec![1, 2]);
    assert_eq!(pages(json!({ "parameters": { "parameters": [{ "name": "page", "value": "={{ $pageCount + 1 }}" }] }, "paginationCompleteWhen": "other", "completeExpression": "={{ $response.body[0].page >= 2 }}" })), vec![1, 2]);
    // pages that never end are stopped when they repeat
    let mut h = http_node(4.1, json!({ "url": format!("{base}/text"), "options": { "pagination": { "pagination": { "parameters": { "parameters": [{ "name": "x", "value": "0" }] } } } } }));
    h["onError"] = json!("continueRegularOutput");
    let got = http_out(h);
    assert_eq!(got.last().unwrap()["error"]["message"], "The returned response was identical 5x, so requests got stopped");
    assert_eq!(got.last().unwrap()["error"]["name"], "NodeOperationError");
    // a next URL that is no URL
    let mut h = http_node(4.1, json!({ "url": format!("{base}/pages"), "options": { "pagination": { "pagination": { "paginationMode": "responseContainsNextURL", "limitPagesFetched": true, "maxRequests": "={{ 2 }}" } } } }));
    h["onError"] = json!("continueRegularOutput");
    let got = http_out(h);
    assert_eq!(got, vec![json!({ "error": { "message": "'' is not a valid URL.", "name": "NodeOperationError", "description": "Make sure the \"Next URL\" parameter evaluates to a valid URL.", "context": {} } })]);
}

#[test]
fn http_timeout_option_stops_a_slow_request() {
    let base = http_server();
    let st = run_http(http_node(4.2, json!({ "url": format!("{base}/slow"), "options": { "timeout": 200 } })), json!({}));
    assert!(error_message(&st).starts_with("The connection timed out after 200 ms"), "{}", error_message(&st));
}

#[test]
fn http_v1_and_v2_parameters() {
    let base = http_server();
    // UI parameters: repeated query names become a list, header names lower case
    let got = http_out(http_node(1.0, json!({
        "url": format!("{base}/echo"),
        "queryParametersUi": { "parameter": [{ "name": "t", "value": "a" }, { "name": "t", "value": "b" }] },
        "headerParametersUi": { "parameter": [{ "name": "X-One", "value": "1" }] },
        "options": { "useQueryString": true }
    })));
    assert_eq!(got[0]["query"], "t=a&t=b");
    assert_eq!(got[0]["headers"]["x-one"], "1");
    // JSON parameters
    let got = http_out(http_node(2.0, json!({ "requestMethod": "POST", "url": format!("{base}/echo"), "jsonParameters": true, "bodyParametersJson": "{\"a\": 1}", "options": {} })));
    assert_eq!(got[0]["body"], "{\"a\":1}");
    let st = run_http(http_node(1.0, json!({ "requestMethod": "POST", "url": format!("{base}/echo"), "jsonParameters": true, "bodyParametersJson": "{a: 1}", "options": {} })), json!({}));
    assert_eq!(error_message(&st), "The data in \"Body Parameters\" is no valid JSON. Set Body Content Type to \"RAW/Custom\" for XML or other types of payloads");
    // response formats
    assert_eq!(http_out(http_node(1.0, json!({ "url": format!("{base}/text"), "responseFormat": "string", "dataPropertyName": "txt", "options": {} }))), vec![json!({ "txt": "hello" })]);
    assert_eq!(http_out(http_node(2.0, json!({ "url": format!("{base}/pages"), "options": { "splitIntoItems": true } }))), vec![json!({ "page": 1 })]);
    assert_eq!(http_out(http_node(1.0, json!({ "url": format!("{base}/status/404"), "options": { "ignoreResponseCode": true } }))), vec![json!({ "error": "nope" })]);
    let st = run_http(http_node(1.0, json!({ "url": format!("{base}/image.png"), "responseFormat": "file", "options": {} })), json!({}));
    let b = st.run_data["HTTP"][0].output(0).unwrap()[0].binary.as_ref().map(|b| Value::clone(b)).unwrap_or_default();
    assert_eq!((b["data"]["fileName"].as_str(), b["data"]["mimeType"].as_str()), (Some("image.png"), Some("image/png")));
}

// ---------------------------------------------------------------- Merge

/// Trigger → In1 (`a`) and In2 (`b`) → Merge (inputs 1 and 2), v1 order.
fn merge_wf(version: f64, params: Value, a: Value, b: Value) -> Value {
    let nodes = vec![
        trigger(),
        node("In1", "n8n-nodes-testing.testData", 1.0, json!({ "data": a })),
        node("In2", "n8n-nodes-testing.testData", 1.0, json!({ "data": b })),
        node("Merge", "n8n-nodes-base.merge", version, params),
    ];
    json!({ "nodes": nodes, "settings": { "executionOrder": "v1" }, "connections": {
        "Trigger": { "main": [[{ "node": "In1", "type": "main", "index": 0 }, { "node": "In2", "type": "main", "index": 0 }]] },
        "In1": { "main": [[{ "node": "Merge", "type": "main", "index": 0 }]] },
        "In2": { "main": [[{ "node": "Merge", "type": "main", "index": 1 }]] },
    }})
}

fn merged(version: f64, params: Value, a: Value, b: Value) -> Vec<Value> {
    let st = run(&merge_wf(version, params, a, b));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    out(&st, "Merge", 0)
}

fn people() -> (Value, Value) {
    (json!([{ "id": 1, "name": "a", "x": { "p": 1, "q": [1, 2] } }, { "id": 2, "name": "b" }, { "id": 4, "name": "d" }]), json!([{ "id": 1, "name": "A", "x": { "q": [9] }, "extra": "" }, { "id": 3, "name": "C" }, { "id": 2, "name": "B" }]))
}

#[test]
fn merge_v2_combine_by_fields_join_modes() {
    let (a, b) = people();
    let by = |join: &str, extra: Value| {
        let mut p = json!({ "mode": "combine", "mergeByFields": { "values": [{ "field1": "id", "field2": "id" }] }, "joinMode": join, "options": {} });
        p.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        merged(2.1, p, a.clone(), b.clone())
    };
    let ids = |v: &[Value]| v.iter().map(|i| i["id"].clone()).collect::<Vec<_>>();
    // inner join, input 2 wins, nested objects and arrays deep-merged
    let m = by("keepMatches", json!({}));
    assert_eq!(m, vec![json!({ "id": 1, "name": "A", "x": { "p": 1, "q": [9, 2] }, "extra": "" }), json!({ "id": 2, "name": "B" })]);
    assert_eq!(ids(&by("keepMatches", json!({ "outputDataFrom": "input1" }))), vec![json!(1), json!(2)]);
    // input 2's matched items keep input 2's order
    assert_eq!(by("keepMatches", json!({ "outputDataFrom": "input2" }))[1], json!({ "id": 2, "name": "B" }));
    assert_eq!(by("keepNonMatches", json!({})), vec![json!({ "id": 4, "name": "d", "_source": "input1" }), json!({ "id": 3, "name": "C", "_source": "input2" })]);
    assert_eq!(ids(&by("keepNonMatches", json!({ "outputDataFrom": "input2" }))), vec![json!(3)]);
    assert_eq!(ids(&by("keepEverything", json!({}))), vec![json!(1), json!(2), json!(4), json!(3)]);
    assert_eq!(ids(&by("enrichInput1", json!({}))), vec![json!(1), json!(2), json!(4)]);
    // v2 Enrich Input 2 looks input 2's items up in input 1; input 2 wins
    let e2 = by("enrichInput2", json!({}));
    assert_eq!(ids(&e2), vec![json!(1), json!(2), json!(3)]);
    assert_eq!(e2[0]["name"], json!("A"));
    // clash handling: suffixes, input 1 wins, shallow merge, minimize empty fields
    let clash = |values: Value| by("keepMatches", json!({ "options": { "clashHandling": { "values": values } } }));
    assert_eq!(clash(json!({ "resolveClash": "addSuffix" }))[1], json!({ "id_1": 2, "name_1": "b", "id_2": 2, "name_2": "B" }));
    assert_eq!(clash(json!({ "resolveClash": "preferInput1", "mergeMode": "deepMerge" }))[0]["name"], json!("a"));
    assert_eq!(clash(json!({ "resolveClash": "preferInput2", "mergeMode": "shallowMerge" }))[0]["x"], json!({ "q": [9] }));
    let keep = by("keepMatches", json!({ "options": { "clashHandling": { "values": { "resolveClash": "preferInput1", "mergeMode": "shallowMerge", "overrideEmpty": true } } } }));
    assert_eq!(keep[0]["extra"], json!(""), "an empty field only gives way to a filled one");
}

#[test]
fn merge_by_fields_matching_options_and_errors() {
    let a = json!([{ "id": "1", "k": { "n": 5 } }, { "id": 2, "k": { "n": 6 } }]);
    let b = json!([{ "id": 1, "n": 5 }, { "id": 1, "n": 7 }, { "id": "2", "n": 6 }]);
    let p = |fields: Value, options: Value| json!({ "mode": "combine", "mergeByFields": { "values": fields }, "joinMode": "keepMatches", "options": options });
    // strict comparison: "1" is not 1
    assert_eq!(merged(2.1, p(json!([{ "field1": "id", "field2": "id" }]), json!({})), a.clone(), b.clone()).len(), 0);
    // fuzzy compare: every match of an item, or the first only
    assert_eq!(merged(2.1, p(json!([{ "field1": "id", "field2": "id" }]), json!({ "fuzzyCompare": true })), a.clone(), b.clone()).len(), 3);
    assert_eq!(merged(2.1, p(json!([{ "field1": "id", "field2": "id" }]), json!({ "fuzzyCompare": true, "multipleMatches": "first" })), a.clone(), b.clone()).len(), 2);
    // dotted paths unless dot notation is disabled
    assert_eq!(merged(2.1, p(json!([{ "field1": "k.n", "field2": "n" }]), json!({})), a.clone(), b.clone()).len(), 2);
    assert_eq!(merged(2.1, p(json!([{ "field1": "k.n", "field2": "n" }]), json!({ "disableDotNotation": true })), a.clone(), b.clone()).len(), 0);
    // n8n's validation texts
    let st = run(&merge_wf(2.1, p(json!([{ "field1": "", "field2": "" }]), json!({})), a.clone(), b.clone()));
    assert_eq!(error_message(&st), "You need to define at least one pair of fields in \"Fields to Match\" to match on");
    let st = run(&merge_wf(2.1, p(json!([{ "field1": "id", "field2": "" }]), json!({})), a.clone(), b.clone()));
    assert!(error_message(&st).starts_with("You need to define both fields in \"Fields to Match\" for pair 1,"), "{}", error_message(&st));
    // v2.0 requires the fields to exist in the inputs
    let st = run(&merge_wf(2.0, p(json!([{ "field1": "nope", "field2": "id" }]), json!({})), a.clone(), b.clone()));
    assert_eq!(error_message(&st), "Field 'nope' is not present in any of items in 'Input 1'");
    // v3 matches same-named fields from a comma-separated list
    let v3 = json!({ "mode": "combine", "combineBy": "combineByFields", "fieldsToMatchString": "id, n", "options": { "fuzzyCompare": true } });
    assert_eq!(merged(3.0, v3, json!([{ "id": 1, "n": 5 }]), json!([{ "id": "1", "n": "5", "z": true }])), vec![json!({ "id": "1", "n": "5", "z": true })]);
}

#[test]
fn merge_empty_inputs_follow_n8n() {
    let p = |join: &str, from: &str| json!({ "mode": "combine", "mergeByFields": { "values": [{ "field1": "id", "field2": "id" }] }, "joinMode": join, "outputDataFrom": from, "options": {} });
    let a = json!([{ "id": 1 }]);
    // keep matches with an empty input: nothing
    assert!(merged(2.1, p("keepMatches", "both"), a.clone(), json!([])).is_empty());
    // keep everything / non-matches: the items there are, without `_source`
    assert_eq!(merged(2.1, p("keepEverything", "both"), a.clone(), json!([])), vec![json!({ "id": 1 })]);
    assert_eq!(merged(2.1, p("keepNonMatches", "both"), a.clone(), json!([])), vec![json!({ "id": 1 })]);
    assert!(merged(2.1, p("keepNonMatches", "input2"), a.clone(), json!([])).is_empty());
    // by position: the input that has items
    assert_eq!(merged(2.0, json!({ "mode": "combine", "combinationMode": "mergeByPosition", "options": {} }), a.clone(), json!([])), vec![json!({ "id": 1 })]);
}

#[test]
fn merge_by_position_and_all_combinations() {
    let a = json!([{ "k": 1, "a": "x" }, { "k": 2, "a": "y" }, { "k": 3, "a": "z" }]);
    let b = json!([{ "k": 10, "b": true }, { "k": 20, "b": false }]);
    let v2 = |options: Value| merged(2.0, json!({ "mode": "combine", "combinationMode": "mergeByPosition", "options": options }), a.clone(), b.clone());
    assert_eq!(v2(json!({})), vec![json!({ "k": 10, "a": "x", "b": true }), json!({ "k": 20, "a": "y", "b": false })]);
    assert_eq!(v2(json!({ "includeUnpaired": true })).len(), 3);
    assert_eq!(v2(json!({ "clashHandling": { "values": { "resolveClash": "preferInput1" } } }))[0]["k"], json!(1));
    // v3: the preferred input is merged last; with suffixes n8n also merges
    // the preferred (last) input's own field names in
    let v3 = |options: Value| merged(3.1, json!({ "mode": "combine", "combineBy": "combineByPosition", "options": options }), a.clone(), b.clone());
    assert_eq!(v3(json!({}))[1], json!({ "k": 20, "a": "y", "b": false }));
    assert_eq!(v3(json!({ "clashHandling": { "values": { "resolveClash": "preferInput1" } } }))[1]["k"], json!(2));
    assert_eq!(v3(json!({ "clashHandling": { "values": { "resolveClash": "addSuffix" } } }))[0], json!({ "k_1": 1, "a_1": "x", "k_2": 10, "b_2": true, "k": 10, "b": true }));
    assert_eq!(v3(json!({ "includeUnpaired": true }))[2], json!({ "k": 3, "a": "z" }));
    // all combinations, input 1 outer
    let all = merged(3.0, json!({ "mode": "combine", "combineBy": "combineAll", "options": {} }), a.clone(), b.clone());
    assert_eq!(all.len(), 6);
    assert_eq!(all[1], json!({ "k": 20, "a": "x", "b": false }));
    let mx = merged(2.0, json!({ "mode": "combine", "combinationMode": "multiplex", "options": { "clashHandling": { "values": { "resolveClash": "preferInput1" } } } }), a.clone(), b.clone());
    assert_eq!(mx[0], json!({ "k": 1, "a": "x", "b": true }));
    assert_eq!(mx[1], json!({ "k": 2, "a": "y", "b": true }), "input 2 becomes the outer loop");
}

/// Version 2 by position: suffixes on every clashing field, input 1 or 2
/// preferred, unpaired items of the longer input kept on request; all
/// combinations with the same clash handling.
#[test]
fn merge_v2_clash_handling_by_position_and_all_combinations() {
    let a = json!([{ "sku": 1, "colour": "red", "from": "a" }, { "sku": 2, "colour": "blue", "from": "a" }]);
    let b = json!([{ "sku": 1, "colour": "pink", "from": "b" }, { "sku": 2, "colour": "navy", "from": "b" }, { "sku": 3, "colour": "teal", "from": "b" }]);
    let by = |mode: &str, options: Value| merged(2.0, json!({ "mode": "combine", "combinationMode": mode, "options": options }), a.clone(), b.clone());
    let clash = |resolve: &str| json!({ "clashHandling": { "values": { "resolveClash": resolve } } });
    assert_eq!(
        by("mergeByPosition", clash("addSuffix")),
        vec![
            json!({ "sku_1": 1, "colour_1": "red", "from_1": "a", "sku_2": 1, "colour_2": "pink", "from_2": "b" }),
            json!({ "sku_1": 2, "colour_1": "blue", "from_1": "a", "sku_2": 2, "colour_2": "navy", "from_2": "b" }),
        ]
    );
    assert_eq!(by("mergeByPosition", clash("preferInput1")), vec![json!({ "sku": 1, "colour": "red", "from": "a" }), json!({ "sku": 2, "colour": "blue", "from": "a" })]);
    let mut unpaired = clash("preferInput2");
    unpaired["includeUnpaired"] = json!(true);
    assert_eq!(by("mergeByPosition", unpaired), b.as_array().cloned().unwrap_or_default());
    let all = by("multiplex", clash("addSuffix"));
    assert_eq!(all.len(), 6);
    assert_eq!(all[1], json!({ "sku_1": 1, "colour_1": "red", "from_1": "a", "sku_2": 2, "colour_2": "navy", "from_2": "b" }));
    let preferred = by("multiplex", clash("preferInput2"));
    assert_eq!(preferred.iter().map(|i| i["colour"].clone()).collect::<Vec<_>>(), vec![json!("pink"), json!("navy"), json!("teal"), json!("pink"), json!("navy"), json!("teal")]);
}

/// Keep non-matches when one input is empty (the empty one a Code node that
/// returns nothing): the other input's items for "both" and for the other
/// input; asking for the empty input's items gives one empty item.
#[test]
fn merge_v2_keep_non_matches_with_an_empty_input() {
    let people = json!([{ "id": 1, "name": "Ann" }, { "id": 2, "name": "Bo" }]);
    let run_with_empty = |empty_is_first: bool, from: Option<&str>, always: bool| {
        let mut p = json!({ "mode": "combine", "mergeByFields": { "values": [{ "field1": "id", "field2": "id" }] }, "joinMode": "keepNonMatches", "options": {} });
        if let Some(f) = from {
            p["outputDataFrom"] = json!(f);
        }
        let mut wf = merge_wf(2.1, p, people.clone(), people.clone());
        let empty = if empty_is_first { "In1" } else { "In2" };
        for n in wf["nodes"].as_array_mut().into_iter().flatten() {
            if n["name"] == empty {
                *n = node(empty, "n8n-nodes-base.code", 2.0, json!({ "jsCode": "return [];" }));
            }
            if n["name"] == "Merge" {
                n["alwaysOutputData"] = json!(always);
            }
        }
        let st = run(&wf);
        assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
        out(&st, "Merge", 0)
    };
    let all = people.as_array().cloned().unwrap_or_default();
    assert_eq!(run_with_empty(false, None, false), all);
    assert_eq!(run_with_empty(true, None, false), all);
    assert_eq!(run_with_empty(false, Some("input1"), false), all);
    assert_eq!(run_with_empty(true, Some("input2"), true), all);
    assert!(run_with_empty(true, Some("input1"), false).is_empty());
    assert!(run_with_empty(false, Some("input2"), false).is_empty());
    assert_eq!(run_with_empty(true, Some("input1"), true), vec![json!({})]);
    assert_eq!(run_with_empty(false, Some("input2"), true), vec![json!({})]);
}

#[test]
fn merge_v3_many_inputs_append_and_choose_branch() {
    let mut wf = merge_wf(3.2, json!({ "mode": "append", "numberInputs": 3 }), json!([{ "n": 1 }]), json!([{ "n": 2 }]));
    wf["nodes"].as_array_mut().unwrap().push(node("In3", "n8n-nodes-testing.testData", 1.0, json!({ "data": [{ "n": 3 }, { "n": 4 }] })));
    wf["connections"]["Trigger"]["main"][0].as_array_mut().unwrap().push(json!({ "node": "In3", "type": "main", "index": 0 }));
    wf["connections"]["In3"] = json!({ "main": [[{ "node": "Merge", "type": "main", "index": 2 }]] });
    let st = run(&wf);
    assert_eq!(out(&st, "Merge", 0), vec![json!({ "n": 1 }), json!({ "n": 2 }), json!({ "n": 3 }), json!({ "n": 4 })]);
    wf["nodes"][3]["parameters"] = json!({ "mode": "chooseBranch", "numberInputs": 3, "useDataOfInput": 3 });
    assert_eq!(out(&run(&wf), "Merge", 0), vec![json!({ "n": 3 }), json!({ "n": 4 })]);
    wf["nodes"][3]["parameters"] = json!({ "mode": "chooseBranch", "numberInputs": 3, "useDataOfInput": 4 });
    let st = run(&wf);
    assert_eq!(error_message(&st), "Input 4 doesn't exist");
    assert_eq!(error_description(&st), "The node has only 3 inputs, so selecting input 4 is not possible.");
    let empty = merged(3.0, json!({ "mode": "chooseBranch", "output": "empty" }), json!([{ "n": 1 }]), json!([{ "n": 2 }]));
    assert_eq!(empty, vec![json!({})]);
    assert_eq!(merged(2.1, json!({ "mode": "chooseBranch", "output": "input2" }), json!([{ "n": 1 }]), json!([{ "n": 2 }])), vec![json!({ "n": 2 })]);
    let st = run(&merge_wf(3.0, json!({ "mode": "combineBySql", "query": "SELECT * FROM input1" }), json!([{ "n": 1 }]), json!([])));
    assert_eq!(error_message(&st), "The Merge node's SQL Query mode is not supported by this engine");
}

#[test]
fn merge_choose_branch_waits_for_both_inputs_append_does_not() {
    // v1 order: input 2 gets nothing. Append runs with input 1 alone,
    // choose branch (both inputs required) does not run.
    let wf = |params: Value| {
        let mut w = merge_wf(2.1, params, json!([{ "n": 1 }]), json!([{ "n": 2 }]));
        w["nodes"][2] = node("In2", "n8n-nodes-base.filter", 2.0, json!({ "conditions": { "conditions": [{ "leftValue": "={{ false }}", "rightValue": true, "operator": { "type": "boolean", "operation": "true", "singleValue": true } }], "combinator": "and", "options": {} } }));
        w
    };
    let st = run(&wf(json!({ "mode": "append" })));
    assert_eq!(out(&st, "Merge", 0), vec![json!({ "n": 1 })]);
    let st = run(&wf(json!({ "mode": "chooseBranch" })));
    assert!(!st.run_data.contains_key("Merge"), "choose branch must not run without input 2");
}

#[test]
fn merge_v1_modes() {
    let a = json!([{ "id": 1, "v": "a", "keep": "" }, { "id": 2, "v": "b" }, { "v": "none" }, { "id": { "x": 1 }, "v": "obj" }]);
    let b = json!([{ "key": 1, "w": "A", "keep": "filled" }, { "key": "2", "w": "B" }, { "key": 0, "w": "zero" }]);
    let v1 = |mode: &str, extra: Value| {
        let mut p = json!({ "mode": mode, "propertyName1": "id", "propertyName2": "key" });
        p.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        merged(1.0, p, a.clone(), b.clone())
    };
    let vs = |items: &[Value]| items.iter().map(|i| i["v"].clone()).collect::<Vec<_>>();
    assert_eq!(v1("append", json!({})).len(), 7);
    // numbers are looked up as strings; objects and missing keys never match
    assert_eq!(vs(&v1("keepKeyMatches", json!({}))), vec![json!("a"), json!("b")]);
    assert_eq!(vs(&v1("removeKeyMatches", json!({}))), vec![json!("none"), json!("obj")]);
    let by_key = v1("mergeByKey", json!({}));
    assert_eq!(by_key[0], json!({ "id": 1, "v": "a", "keep": "filled", "w": "A" }));
    assert_eq!(by_key.len(), 2, "items without a usable key are dropped");
    assert_eq!(v1("mergeByKey", json!({ "overwrite": "undefined" }))[0]["keep"], json!(""));
    assert_eq!(v1("mergeByKey", json!({ "overwrite": "blank" }))[0]["keep"], json!("filled"));
    let by_index = |join: &str| merged(1.0, json!({ "mode": "mergeByIndex", "join": join }), a.clone(), b.clone());
    assert_eq!(by_index("left").len(), 4);
    assert_eq!(by_index("inner").len(), 3);
    assert_eq!(by_index("inner")[0], json!({ "id": 1, "v": "a", "keep": "filled", "key": 1, "w": "A" }));
    assert_eq!(by_index("outer").len(), 4);
    assert_eq!(merged(1.0, json!({ "mode": "multiplex" }), a.clone(), b.clone()).len(), 12);
    assert_eq!(merged(1.0, json!({ "mode": "passThrough", "output": "input2" }), a.clone(), b.clone()).len(), 3);
    assert_eq!(merged(1.0, json!({ "mode": "wait" }), a.clone(), b.clone()), vec![json!({})]);
}

// ---------------------------------------------------------------- Set / Edit Fields

fn set_node(version: f64, params: Value) -> Value {
    node("Set", "n8n-nodes-base.set", version, params)
}

fn set_out(version: f64, params: Value, input: Value) -> Vec<Value> {
    let st = run(&chain(vec![trigger(), data(input), set_node(version, params)]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    out(&st, "Set", 0)
}

fn set_error(version: f64, params: Value, input: Value) -> (String, String) {
    let st = run(&chain(vec![trigger(), data(input), set_node(version, params)]));
    assert_eq!(st.status, ExecutionStatus::Error);
    (error_message(&st), error_description(&st))
}

#[test]
fn set_v1_and_v2_typed_values() {
    let values = json!({
        "string": [{ "name": "s", "value": "={{ $json.n }}" }, { "name": "list[1]", "value": "x" }],
        "number": [{ "name": "deep.n", "value": "={{ '7' }}" }],
        "boolean": [{ "name": "b", "value": "={{ 'false' }}" }],
    });
    let input = json!([{ "n": 3, "list": ["a"] }]);
    // booleans are JavaScript truthiness, strings keep the expression's type,
    // paths go through lodash `set` (array indexes included)
    let v1 = set_out(1.0, json!({ "values": values.clone(), "options": {} }), input.clone());
    assert_eq!(v1, vec![json!({ "n": 3, "list": ["a", "x"], "b": true, "deep": { "n": "7" }, "s": 3 })]);
    // v2 turns numeric strings into numbers
    let v2 = set_out(2.0, json!({ "values": values.clone(), "options": {} }), input.clone());
    assert_eq!(v2[0]["deep"], json!({ "n": 7 }));
    let only = set_out(2.0, json!({ "keepOnlySet": true, "values": values.clone(), "options": { "dotNotation": false } }), input.clone());
    assert_eq!(only, vec![json!({ "b": true, "deep.n": 7, "s": 3, "list[1]": "x" })]);
}

#[test]
fn set_v3_field_types_and_conversion_errors() {
    let fields = |list: Value| json!({ "mode": "manual", "fields": { "values": list }, "include": "none", "options": {} });
    let got = set_out(3.2, fields(json!([
        { "name": "s", "type": "stringValue", "stringValue": "={{ { a: 1 } }}" },
        { "name": "n", "type": "numberValue", "numberValue": " 12 " },
        { "name": "t", "type": "booleanValue", "booleanValue": "true" },
        { "name": "one", "type": "booleanValue", "booleanValue": "={{ 1 }}" },
        { "name": "a", "type": "arrayValue", "arrayValue": "['x', 2]" },
        { "name": "o", "type": "objectValue", "objectValue": "{ key: 'v' }" },
        { "name": "e", "type": "objectValue", "objectValue": "={ \"n\": {{ $json.n }}, \"obj\": {{ $json.o }} }" },
        { "name": "nul", "type": "numberValue", "numberValue": "={{ null }}" },
    ])), json!([{ "n": 5, "o": { "k": true } }]));
    assert_eq!(got, vec![json!({ "s": "{\"a\":1}", "n": 12, "t": true, "one": true, "a": ["x", 2], "o": { "key": "v" }, "e": { "n": 5, "obj": { "k": true } }, "nul": null })]);
    let (msg, desc) = set_error(3.2, fields(json!([{ "name": "n", "type": "numberValue", "numberValue": "abc" }])), json!([{}]));
    assert_eq!(msg, "'n' expects a number but we got 'abc' [item 0]");
    assert!(desc.contains("Ignore Type Conversion Errors"), "{desc}");
    let (msg, _) = set_error(3.2, fields(json!([{ "name": "b", "type": "booleanValue", "booleanValue": "={{ [1, 2] }}" }])), json!([{}]));
    assert_eq!(msg, "'b' expects a boolean but we got array [item 0]");
    // v3.1 refuses null for a string; v3.0 writes "null"
    let null_string = json!([{ "name": "s", "type": "stringValue", "stringValue": "={{ null }}" }]);
    assert_eq!(set_error(3.1, fields(null_string.clone()), json!([{}])).0, "'s' expects a string but we got 'null' [item 0]");
    assert_eq!(set_out(3.0, fields(null_string.clone()), json!([{}])), vec![json!({ "s": "null" })]);
    assert_eq!(set_out(3.2, fields(null_string), json!([{}])), vec![json!({ "s": null })]);
    // ignoring conversion errors keeps the value as it came
    let lenient = json!({ "mode": "manual", "fields": { "values": [{ "name": "n", "type": "numberValue", "numberValue": "abc" }] }, "include": "none", "options": { "ignoreConversionErrors": true } });
    assert_eq!(set_out(3.2, lenient, json!([{}])), vec![json!({ "n": "abc" })]);
    let (msg, _) = set_error(3.2, fields(json!([{ "name": "e", "type": "objectValue", "objectValue": "={ nope {{ 1 }}" }])), json!([{}]));
    assert_eq!(msg, "The entry \"e\" inside 'Fields to Set' in item 0 contains invalid JSON");
}

#[test]
fn set_include_modes_per_version() {
    let input = json!([{ "a": 1, "b": { "c": 2, "d": 3 }, "x.y": 4 }]);
    let v32 = |include: &str, extra: Value| {
        let mut p = json!({ "mode": "manual", "fields": { "values": [{ "name": "new", "type": "stringValue", "stringValue": "v" }] }, "include": include, "options": {} });
        p.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        set_out(3.2, p, input.clone())
    };
    assert_eq!(v32("all", json!({}))[0], json!({ "a": 1, "b": { "c": 2, "d": 3 }, "x.y": 4, "new": "v" }));
    assert_eq!(v32("none", json!({}))[0], json!({ "new": "v" }));
    // selected dotted fields land under their last name
    assert_eq!(v32("selected", json!({ "includeFields": "a, b.c" }))[0], json!({ "a": 1, "c": 2, "new": "v" }));
    assert_eq!(v32("except", json!({ "excludeFields": "b.d,a" }))[0], json!({ "b": { "c": 2 }, "x.y": 4, "new": "v" }));
    assert_eq!(v32("except", json!({ "excludeFields": "['x.y']", "options": { "dotNotation": false } }))[0], json!({ "a": 1, "b": { "c": 2, "d": 3 }, "new": "v" }));
    // v3.3+: other fields only with includeOtherFields
    let v34 = |extra: Value| {
        let mut p = json!({ "mode": "manual", "assignments": { "assignments": [{ "id": "1", "name": "b.e", "type": "number", "value": "={{ $json.a + 1 }}" }] }, "options": {} });
        p.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        set_out(3.4, p, input.clone())
    };
    assert_eq!(v34(json!({}))[0], json!({ "b": { "e": 2 } }));
    assert_eq!(v34(json!({ "includeOtherFields": true }))[0], json!({ "a": 1, "b": { "c": 2, "d": 3, "e": 2 }, "x.y": 4 }));
    assert_eq!(v34(json!({ "includeOtherFields": true, "include": "selected", "includeFields": "a" }))[0], json!({ "a": 1, "b": { "e": 2 } }));
    let (msg, _) = set_error(3.2, json!({ "mode": "manual", "fields": { "values": [] }, "include": "some" }), input.clone());
    assert_eq!(msg, "The include option \"some\" is not known!");
}

#[test]
fn set_binary_handling_per_version_and_binary_fields() {
    let file = json!({ "data": "aGk=", "mimeType": "text/plain", "fileName": "a.txt" });
    let wf = |version: f64, params: Value| {
        let code = node("Code", "n8n-nodes-base.code", 2.0, json!({ "jsCode": format!("return [{{ json: {{ a: 1 }}, binary: {{ data: {file} }} }}];") }));
        chain(vec![trigger(), code, set_node(version, params)])
    };
    let binary_keys = |st: &ExecutionState| -> Vec<String> {
        st.run_data["Set"][0].output(0).unwrap()[0].binary.as_ref().and_then(|b| b.as_object().map(|m| m.keys().cloned().collect())).unwrap_or_default()
    };
    let base = json!({ "mode": "manual", "assignments": { "assignments": [] }, "includeOtherFields": true, "options": {} });
    // up to 3.3 binary data is kept only with the Include Binary File option
    assert!(binary_keys(&run(&wf(3.3, base.clone()))).is_empty());
    let mut with = base.clone();
    with["options"] = json!({ "includeBinary": true });
    assert_eq!(binary_keys(&run(&wf(3.3, with))), vec!["data".to_string()]);
    // 3.4 keeps it unless stripped, and never without other fields
    assert_eq!(binary_keys(&run(&wf(3.4, base.clone()))), vec!["data".to_string()]);
    let mut strip = base.clone();
    strip["options"] = json!({ "stripBinary": true });
    assert!(binary_keys(&run(&wf(3.4, strip))).is_empty());
    // a binary assignment copies an input file under a new name
    let copy = json!({ "mode": "manual", "assignments": { "assignments": [{ "id": "1", "name": "copy", "type": "binary", "value": "data" }] }, "options": {} });
    assert_eq!(binary_keys(&run(&wf(3.4, copy))), vec!["copy".to_string()]);
    let missing = json!({ "mode": "manual", "assignments": { "assignments": [{ "id": "1", "name": "copy", "type": "binary", "value": "nope" }] }, "options": {} });
    assert_eq!(error_message(&run(&wf(3.4, missing))), "The item has no binary field 'nope' [item 0]");
}

#[test]
fn set_json_mode_fills_templates_and_repairs_json() {
    let input = json!([{ "name": "Ann", "tags": ["a", "b"] }]);
    let raw = |json_output: &str, extra: Value| {
        let mut p = json!({ "mode": "raw", "jsonOutput": json_output, "includeOtherFields": true, "options": {} });
        p.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
        set_out(3.4, p, input.clone())
    };
    assert_eq!(raw("={ \"who\": \"{{ $json.name }}\", \"tags\": {{ $json.tags }} }", json!({}))[0], json!({ "name": "Ann", "tags": ["a", "b"], "who": "Ann" }));
    // n8n's repair: single quotes, bare keys, trailing commas
    assert_eq!(raw("{ k: 'v', }", json!({ "includeOtherFields": false }))[0], json!({ "k": "v" }));
    let st = run(&chain(vec![trigger(), data(input.clone()), set_node(3.4, json!({ "mode": "raw", "jsonOutput": "[1, 2]" }))]));
    assert_eq!(error_message(&st), "The 'JSON Output' in item 0 does not contain a valid JSON object");
    let st = run(&chain(vec![trigger(), data(input.clone()), set_node(3.4, json!({ "mode": "raw", "jsonOutput": "={ \"a\": {{ 1 }" }))]));
    assert_eq!(error_message(&st), "The 'JSON Output' in item 0 contains invalid JSON");
}

#[test]
fn set_continue_on_fail_and_duplicates() {
    let params = json!({ "mode": "manual", "assignments": { "assignments": [{ "id": "1", "name": "n", "type": "number", "value": "={{ $json.v }}" }] }, "options": {} });
    let mut s = set_node(3.4, params.clone());
    s["onError"] = json!("continueRegularOutput");
    let st = run(&chain(vec![trigger(), data(json!([{ "v": "1" }, { "v": "x" }])), s]));
    assert_eq!(out(&st, "Set", 0), vec![json!({ "n": 1 }), json!({ "error": "'n' expects a number but we got 'x' [item 1]" })]);
    let mut dup = params;
    dup["duplicateItem"] = json!(true);
    dup["duplicateCount"] = json!(2);
    assert_eq!(set_out(3.4, dup, json!([{ "v": 1 }])).len(), 3);
}

// ---------------------------------------------------------------- Split In Batches / Loop Over Items

/// Trigger → Data(items) → Loop; the loop output goes through `Body` (a Set
/// node recording the loop's context) back into Loop, done goes to `Done`.
fn loop_workflow(version: f64, items: Value, params: Value) -> Value {
    let (loop_out, done_out) = if version >= 3.0 { (1, 0) } else { (0, 1) };
    let ctx = |k: &str| format!("={{{{ $node[\"Loop\"].context[\"{k}\"] }}}}");
    let body = node(
        "Body",
        "n8n-nodes-base.set",
        3.4,
        json!({ "includeOtherFields": true, "assignments": { "assignments": [
            { "name": "run", "type": "number", "value": ctx("currentRunIndex") },
            { "name": "max", "type": "number", "value": ctx("maxRunIndex") },
            { "name": "left", "type": "boolean", "value": ctx("noItemsLeft") },
        ] } }),
    );
    let mut loop_conns = vec![json!([]), json!([])];
    loop_conns[loop_out] = json!([{ "node": "Body", "type": "main", "index": 0 }]);
    loop_conns[done_out] = json!([{ "node": "Done", "type": "main", "index": 0 }]);
    if version < 2.0 {
        loop_conns.truncate(1);
    }
    json!({
        "nodes": [trigger(), data(items), node("Loop", "n8n-nodes-base.splitInBatches", version, params), body, node("Done", "n8n-nodes-base.noOp", 1.0, json!({}))],
        "connections": {
            "Trigger": { "main": [[{ "node": "Data", "type": "main", "index": 0 }]] },
            "Data": { "main": [[{ "node": "Loop", "type": "main", "index": 0 }]] },
            "Loop": { "main": loop_conns },
            "Body": { "main": [[{ "node": "Loop", "type": "main", "index": 0 }]] },
        },
        "settings": { "executionOrder": "v1" },
    })
}

fn five() -> Value {
    json!([{ "n": 1 }, { "n": 2 }, { "n": 3 }, { "n": 4 }, { "n": 5 }])
}

/// `json` of every run of `node` on `output`, one list per run.
fn runs(st: &ExecutionState, node: &str, output: usize) -> Vec<Vec<Value>> {
    st.run_data.get(node).map(|r| r.iter().map(|t| t.output(output).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()).collect()).unwrap_or_default()
}

#[test]
fn loop_v3_batches_on_loop_and_everything_processed_on_done() {
    let st = run(&loop_workflow(3.0, five(), json!({ "batchSize": 2, "options": {} })));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    let batches = runs(&st, "Body", 0);
    let ns: Vec<Vec<i64>> = batches.iter().map(|b| b.iter().map(|i| i["n"].as_i64().unwrap_or(0)).collect()).collect();
    assert_eq!(ns, vec![vec![1, 2], vec![3, 4], vec![5]]);
    // the context as each batch saw it
    let ctx: Vec<(Value, Value, Value)> = batches.iter().map(|b| (b[0]["run"].clone(), b[0]["max"].clone(), b[0]["left"].clone())).collect();
    assert_eq!(ctx, vec![(json!(0), json!(3), json!(false)), (json!(1), json!(3), json!(false)), (json!(2), json!(3), json!(true))]);
    // done fires once, with what came back from the loop, in order
    let done = runs(&st, "Done", 0);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].iter().map(|i| i["n"].clone()).collect::<Vec<_>>(), vec![json!(1), json!(2), json!(3), json!(4), json!(5)]);
    assert_eq!(done[0][4]["run"], json!(2));
    // v3's output 0 is done: empty on every loop run
    assert!(runs(&st, "Loop", 0).iter().take(3).all(Vec::is_empty));
}

#[test]
fn loop_default_batch_size_is_one_in_v3_and_ten_before() {
    let many: Vec<Value> = (0..12).map(|n| json!({ "n": n })).collect();
    let v3 = run(&loop_workflow(3.0, json!(many), json!({})));
    assert_eq!(runs(&v3, "Body", 0).len(), 12);
    let v2 = run(&loop_workflow(2.0, json!(many), json!({})));
    assert_eq!(runs(&v2, "Body", 0).iter().map(Vec::len).collect::<Vec<_>>(), vec![10, 2]);
}

#[test]
fn loop_v2_outputs_loop_then_done_and_sets_done_in_its_context() {
    let mut wf = loop_workflow(2.0, five(), json!({ "batchSize": 3 }));
    // Done reads the loop's `done` flag
    wf["nodes"][4] = node("Done", "n8n-nodes-base.set", 3.4, json!({ "assignments": { "assignments": [{ "name": "done", "type": "boolean", "value": "={{ $node[\"Loop\"].context[\"done\"] }}" }] } }));
    let st = run(&wf);
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(runs(&st, "Body", 0).iter().map(Vec::len).collect::<Vec<_>>(), vec![3, 2]);
    let done = runs(&st, "Done", 0);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].len(), 5);
    assert_eq!(done[0][0]["done"], json!(true));
    // the loop's last run: nothing on loop (output 0), everything on done (output 1)
    let last = st.run_data["Loop"].last().expect("ran");
    assert_eq!(last.output(0).map(|i| i.len()), Some(0));
    assert_eq!(last.output(1).map(|i| i.len()), Some(5));
}

#[test]
fn loop_v1_has_one_output_and_ends_the_branch_when_used_up() {
    let st = run(&loop_workflow(1.0, five(), json!({ "batchSize": 2 })));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(runs(&st, "Body", 0).iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2, 1]);
    // the fourth call returns n8n's `null`: the branch ends without a run
    // being recorded, and v1 has no done output
    assert_eq!(st.run_data["Loop"].len(), 3);
    assert!(!st.run_data.contains_key("Done"));
    assert_eq!(runs(&st, "Body", 0)[2][0]["left"], json!(true));
}

#[test]
fn loop_v2_1_marks_no_items_left_only_after_done() {
    let st = run(&loop_workflow(2.1, five(), json!({ "batchSize": 2 })));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    let left: Vec<Value> = runs(&st, "Body", 0).iter().map(|b| b[0]["left"].clone()).collect();
    // v2 says true on the last batch; v2.1 stays false until done has fired
    assert_eq!(left, vec![json!(false), json!(false), json!(false)]);
    let v2 = run(&loop_workflow(2.0, five(), json!({ "batchSize": 2 })));
    let left2: Vec<Value> = runs(&v2, "Body", 0).iter().map(|b| b[0]["left"].clone()).collect();
    assert_eq!(left2, vec![json!(false), json!(false), json!(true)]);
}

#[test]
fn loop_reset_restarts_with_the_new_input() {
    // reset bound to noItemsLeft (v2.1): a second pass of items after the
    // loop finished starts over instead of answering "done" at once
    let mut wf = loop_workflow(2.1, five(), json!({ "batchSize": 5, "options": { "reset": "={{ $node[\"Loop\"].context[\"noItemsLeft\"] }}" } }));
    // Done feeds a second round of items back into the loop once
    wf["nodes"].as_array_mut().expect("nodes").push(node("Again", "n8n-nodes-base.code", 2.0, json!({ "jsCode": "return $runIndex === 0 ? [{ json: { n: 10 } }, { json: { n: 11 } }] : [];" })));
    wf["connections"]["Done"] = json!({ "main": [[{ "node": "Again", "type": "main", "index": 0 }]] });
    wf["connections"]["Again"] = json!({ "main": [[{ "node": "Loop", "type": "main", "index": 0 }]] });
    let st = run(&wf);
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    let done = runs(&st, "Done", 0);
    let ns: Vec<Vec<Value>> = done.iter().map(|r| r.iter().map(|i| i["n"].clone()).collect()).collect();
    assert_eq!(ns, vec![vec![json!(1), json!(2), json!(3), json!(4), json!(5)], vec![json!(10), json!(11)]]);
}

// ---------------------------------------------------------------- Debug Helper

fn debug(params: Value) -> Value {
    node("Debug", "n8n-nodes-base.debugHelper", 1.0, params)
}

#[test]
fn debug_helper_throws_its_default_error_and_continues_with_an_error_item() {
    let st = run(&chain(vec![trigger(), debug(json!({}))]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(error_message(&st), "Node has thrown an error");
    for kind in ["NodeApiError", "NodeOperationError", "Error"] {
        let mut n = debug(json!({ "category": "throwError", "throwErrorType": kind, "throwErrorMessage": "boom" }));
        n["onError"] = json!("continueRegularOutput");
        let st = run(&chain(vec![trigger(), data(json!([{ "a": 1 }, { "a": 2 }])), n]));
        assert_eq!(st.status, ExecutionStatus::Success, "{kind}");
        assert_eq!(out(&st, "Debug", 0), vec![json!({ "error": "boom" }), json!({ "error": "boom" })], "{kind}");
        assert_eq!(pairs(&st, "Debug"), vec![Some(0), Some(1)]);
    }
}

#[test]
fn debug_helper_do_nothing_outputs_no_items_and_oom_is_refused() {
    let st = run(&chain(vec![trigger(), debug(json!({ "category": "doNothing" })), node("After", "n8n-nodes-base.noOp", 1.0, json!({}))]));
    assert_eq!(st.status, ExecutionStatus::Success);
    assert!(out(&st, "Debug", 0).is_empty());
    assert!(!st.run_data.contains_key("After"));
    let st = run(&chain(vec![trigger(), debug(json!({ "category": "oom", "memorySizeValue": 10 }))]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(error_message(&st).contains("not supported"), "{}", error_message(&st));
}

#[test]
fn debug_helper_random_data_has_n8ns_shapes_and_a_seed_repeats_it() {
    let gen = |kind: &str, extra: Value| {
        let mut p = json!({ "category": "randomData", "randomDataType": kind, "randomDataCount": 3, "randomDataSeed": "s1" });
        if let (Value::Object(p), Value::Object(e)) = (&mut p, extra) {
            p.extend(e);
        }
        let st = run(&chain(vec![trigger(), debug(p)]));
        assert_eq!(st.status, ExecutionStatus::Success, "{kind}: {}", error_message(&st));
        out(&st, "Debug", 0)
    };
    let users = gen("user", json!({}));
    assert_eq!(users.len(), 3);
    for u in &users {
        let keys: Vec<&str> = u.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(keys, vec!["uid", "email", "firstname", "lastname", "password"]);
        assert!(u["email"].as_str().is_some_and(|e| e.contains('@')));
    }
    assert_eq!(users, gen("user", json!({})), "the same seed gives the same data");
    let card = &gen("creditCard", json!({}))[0];
    assert!(["Visa", "MasterCard"].contains(&card["type"].as_str().unwrap_or("")));
    assert_eq!(card["exp"].as_str().map(str::len), Some(5));
    let addr = &gen("address", json!({}))[0];
    assert_eq!(addr["zip"].as_str().map(str::len), Some(5));
    assert!(gen("uuid", json!({}))[0].as_str().is_some_and(|u| uuid::Uuid::parse_str(u).is_ok()));
    assert!(gen("ipv4", json!({}))[0].as_str().is_some_and(|ip| ip.parse::<std::net::Ipv4Addr>().is_ok()));
    assert!(gen("ipv6", json!({}))[0].as_str().is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok()));
    assert_eq!(gen("macAddress", json!({}))[0].as_str().map(str::len), Some(17));
    let nano = gen("nanoid", json!({ "nanoidAlphabet": "ab", "nanoidLength": "8" }));
    assert!(nano.iter().all(|n| n.as_str().is_some_and(|s| s.len() == 8 && s.chars().all(|c| c == 'a' || c == 'b'))));
    // one item holding them all
    let single = gen("semver", json!({ "randomDataSingleArray": true }));
    assert_eq!(single.len(), 1);
    assert_eq!(single[0]["generatedItems"].as_array().map(Vec::len), Some(3));
}

// ---------------------------------------------------------------- Execution Data

fn execution_data(version: f64, values: Value) -> Value {
    node("Save", "n8n-nodes-base.executionData", version, json!({ "dataToSave": { "values": values } }))
}

#[test]
fn execution_data_saves_custom_data_per_item_and_passes_items_through() {
    let st = run(&chain(vec![
        trigger(),
        data(json!([{ "id": "a1", "n": 1 }, { "id": "b2", "n": 2 }])),
        execution_data(1.0, json!([{ "key": "id", "value": "={{ $json.id }}" }, { "key": "count", "value": "={{ $json.n }}" }])),
    ]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(out(&st, "Save", 0), vec![json!({ "id": "a1", "n": 1 }), json!({ "id": "b2", "n": 2 })]);
    // later items overwrite earlier ones; numbers are stored as text
    assert_eq!(st.custom_data.0.get("id").map(String::as_str), Some("b2"));
    assert_eq!(st.custom_data.0.get("count").map(String::as_str), Some("2"));
}

#[test]
fn execution_data_applies_n8ns_limits_and_errors() {
    let long_key = "k".repeat(60);
    let long_value = "v".repeat(600);
    let mut values: Vec<Value> = (0..12).map(|i| json!({ "key": format!("key{i}"), "value": "x" })).collect();
    values.insert(0, json!({ "key": long_key, "value": long_value }));
    let st = run(&chain(vec![trigger(), execution_data(1.0, json!(values))]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(st.custom_data.0.len(), 10, "at most 10 keys");
    assert_eq!(st.custom_data.0.get(&"k".repeat(50)).map(String::len), Some(512));
    let st = run(&chain(vec![trigger(), execution_data(1.0, json!([{ "key": "my-key", "value": "x" }]))]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(error_message(&st), "Custom data key can only contain letters, numbers, and underscores (key \"my-key\")");
    // v1 refuses a value that is not text; v1.1 saves a missing one as ""
    let st = run(&chain(vec![trigger(), execution_data(1.0, json!([{ "key": "k", "value": "={{ null }}" }]))]));
    assert_eq!(error_message(&st), "Custom data values must be a string (key \"k\")");
    let st = run(&chain(vec![trigger(), execution_data(1.1, json!([{ "key": "k", "value": "={{ null }}" }]))]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(st.custom_data.0.get("k").map(String::as_str), Some(""));
}

// ---------------------------------------------------------------- If v1 / Filter v1 (legacy conditions)

/// Runs `{ty: [condition]}` on one item `{v}` through If v1: true or false branch.
fn if_v1(ty: &str, cond: Value, item: Value) -> Result<bool, String> {
    let st = run(&chain(vec![trigger(), data(json!([item])), node("If", "n8n-nodes-base.if", 1.0, json!({ "conditions": { ty: [cond] } }))]));
    if st.status != ExecutionStatus::Success {
        return Err(error_message(&st));
    }
    Ok(!out(&st, "If", 0).is_empty())
}

#[test]
fn if_v1_operations_follow_javascript_semantics() {
    let c = |op: &str, v1: Value, v2: Value| json!({ "operation": op, "value1": v1, "value2": v2 });
    // defaults: dateTime "after", number "smaller", string and boolean "equal"
    assert_eq!(if_v1("dateTime", json!({ "value1": "2023-01-02T00:00:00Z", "value2": "2023-01-01T00:00:00Z" }), json!({})), Ok(true));
    assert_eq!(if_v1("number", json!({ "value1": 1, "value2": 2 }), json!({})), Ok(true));
    assert_eq!(if_v1("string", json!({ "value1": "a", "value2": "a" }), json!({})), Ok(true));
    assert_eq!(if_v1("boolean", json!({ "value1": true }), json!({})), Ok(false), "value2 defaults to false");
    // dates: epoch milliseconds and strings; an invalid one is n8n's error
    assert_eq!(if_v1("dateTime", c("before", json!(1_000), json!("1970-01-01T00:00:02Z")), json!({})), Ok(true));
    assert_eq!(if_v1("dateTime", c("after", json!("soon"), json!(0)), json!({})), Err("The value \"soon\" is not a valid DateTime.".into()));
    // strict equality: a number is not its text
    assert_eq!(if_v1("string", c("equal", json!(1), json!("1")), json!({})), Ok(false));
    assert_eq!(if_v1("number", c("largerEqual", json!(2), json!(2)), json!({})), Ok(true));
    // (v || '') — 0 is falsy, so it contains nothing
    assert_eq!(if_v1("string", c("contains", json!(0), json!("0")), json!({})), Ok(false));
    assert_eq!(if_v1("string", c("contains", json!([1, 2]), json!("1,2")), json!({})), Ok(true));
    assert_eq!(if_v1("string", c("startsWith", json!("abc"), json!("ab")), json!({})), Ok(true));
    assert_eq!(if_v1("string", c("endsWith", json!(5), json!("5")), json!({})), Err("value1.endsWith is not a function".into()));
    assert_eq!(if_v1("string", c("regex", json!("Hello"), json!("/^hello$/i")), json!({})), Ok(true));
    assert_eq!(if_v1("string", c("notRegex", json!("Hello"), json!("^hello$")), json!({})), Ok(true));
    assert_eq!(if_v1("number", c("isEmpty", json!(null), json!(0)), json!({})), Ok(true));
    assert_eq!(if_v1("string", c("isNotEmpty", json!({}), json!("")), json!({})), Ok(false));
    assert_eq!(if_v1("string", c("isNotEmpty", json!(false), json!("")), json!({})), Ok(true));
}

#[test]
fn if_v1_combines_all_or_any_and_filter_v1_and_or() {
    let conds = json!({ "number": [{ "operation": "larger", "value1": "={{ $json.n }}", "value2": 1 }], "string": [{ "operation": "equal", "value1": "={{ $json.s }}", "value2": "x" }] });
    let items = json!([{ "n": 2, "s": "x" }, { "n": 2, "s": "y" }, { "n": 0, "s": "y" }]);
    let ns = |st: &ExecutionState, node: &str, o: usize| out(st, node, o).iter().map(|i| i["s"].as_str().unwrap_or("").to_string() + &i["n"].to_string()).collect::<Vec<_>>();
    let all = run(&chain(vec![trigger(), data(items.clone()), node("If", "n8n-nodes-base.if", 1.0, json!({ "conditions": conds, "combineOperation": "all" }))]));
    assert_eq!(ns(&all, "If", 0), vec!["x2"]);
    assert_eq!(ns(&all, "If", 1), vec!["y2", "y0"]);
    let any = run(&chain(vec![trigger(), data(items.clone()), node("If", "n8n-nodes-base.if", 1.0, json!({ "conditions": conds, "combineOperation": "any" }))]));
    assert_eq!(ns(&any, "If", 0), vec!["x2", "y2"]);
    let or = run(&chain(vec![trigger(), data(items.clone()), node("Filter", "n8n-nodes-base.filter", 1.0, json!({ "conditions": conds, "combineConditions": "OR" }))]));
    assert_eq!(ns(&or, "Filter", 0), vec!["x2", "y2"]);
    let and = run(&chain(vec![trigger(), data(items), node("Filter", "n8n-nodes-base.filter", 1.0, json!({ "conditions": conds }))]));
    assert_eq!(ns(&and, "Filter", 0), vec!["x2"]);
    assert_eq!(pairs(&and, "Filter"), vec![Some(0)]);
}

// ---------------------------------------------------------------- Switch v1 / v2

fn switch_legacy(version: f64, params: Value) -> ExecutionState {
    run(&chain(vec![trigger(), data(json!([{ "n": 1 }, { "n": 5 }, { "n": 9 }])), node("Switch", "n8n-nodes-base.switch", version, params)]))
}

fn ns_of(st: &ExecutionState, o: usize) -> Vec<Value> {
    out(st, "Switch", o).iter().map(|i| i["n"].clone()).collect()
}

#[test]
fn switch_v1_routes_to_each_rules_output_with_a_fallback() {
    let rules = json!({ "rules": [
        { "operation": "smaller", "value2": 3, "output": 2 },
        { "operation": "smaller", "value2": 6, "output": 0 },
    ] });
    let st = switch_legacy(1.0, json!({ "dataType": "number", "value1": "={{ $json.n }}", "rules": rules, "fallbackOutput": 3 }));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(st.run_data["Switch"][0].data.as_ref().map(|d| d.main.len()), Some(4), "four fixed outputs");
    assert_eq!(ns_of(&st, 2), vec![json!(1)], "the first matching rule wins");
    assert_eq!(ns_of(&st, 0), vec![json!(5)]);
    assert_eq!(ns_of(&st, 3), vec![json!(9)]);
    // no fallback: unmatched items are dropped
    let st = switch_legacy(1.0, json!({ "dataType": "number", "value1": "={{ $json.n }}", "rules": rules }));
    assert_eq!((0..4).map(|o| ns_of(&st, o).len()).sum::<usize>(), 2);
    // expression mode and its range error
    let st = switch_legacy(1.0, json!({ "mode": "expression", "output": "={{ $json.n > 4 ? 1 : 0 }}" }));
    assert_eq!(ns_of(&st, 1), vec![json!(5), json!(9)]);
    let st = switch_legacy(1.0, json!({ "mode": "expression", "output": "={{ $json.n }}" }));
    assert_eq!(error_message(&st), "The ouput 5 is not allowed. It has to be between 0 and 3!");
}

#[test]
fn switch_v2_has_one_output_per_rule_and_compares_strings_and_dates() {
    let st = switch_legacy(2.0, json!({ "dataType": "string", "value1": "={{ 'n' + $json.n }}", "rules": { "rules": [
        { "operation": "equal", "value2": "n5", "outputKey": "five" },
        { "operation": "startsWith", "value2": "n", "outputKey": "any" },
    ] } }));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(ns_of(&st, 0), vec![json!(5)]);
    assert_eq!(ns_of(&st, 1), vec![json!(1), json!(9)]);
    let st = switch_legacy(2.0, json!({ "dataType": "dateTime", "value1": "={{ '2024-01-0' + $json.n + 'T00:00:00Z' }}", "rules": { "rules": [
        { "operation": "before", "value2": "2024-01-04T00:00:00Z" },
    ] }, "fallbackOutput": 0 }));
    assert_eq!(ns_of(&st, 0), vec![json!(1), json!(5), json!(9)]);
    let st = switch_legacy(2.0, json!({ "mode": "expression", "outputsAmount": 2, "output": "={{ $json.n > 4 ? 1 : 0 }}" }));
    assert_eq!(ns_of(&st, 0), vec![json!(1)]);
    assert_eq!(ns_of(&st, 1), vec![json!(5), json!(9)]);
}

/// A filter condition on `$json.v` (loose type validation unless `strict`).
fn filter_node(ty: &str, version: f64, operator: Value, right: Value, options: Value) -> Value {
    let cond = json!({ "conditions": [{ "leftValue": "={{ $json.v }}", "rightValue": right, "operator": operator }], "combinator": "and", "options": options });
    node("F", ty, version, json!({ "conditions": cond, "looseTypeValidation": true }))
}

fn kept(ty: &str, version: f64, operator: Value, right: Value, values: Value) -> Vec<Value> {
    let items: Vec<Value> = values.as_array().cloned().unwrap_or_default().into_iter().map(|v| json!({ "v": v })).collect();
    let st = run(&chain(vec![trigger(), data(Value::Array(items)), filter_node(ty, version, operator, right, json!({}))]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    out(&st, "F", 0).into_iter().map(|i| i["v"].clone()).collect()
}

#[test]
fn filter_versions_coerce_loose_values_as_n8n_does() {
    let is_true = json!({ "type": "boolean", "operation": "true", "singleValue": true });
    let values = json!(["false", "true", 0, "yes", ""]);
    // If/Filter 2.0–2.1 (filter version 1): JavaScript truthiness; 2.2+ parses "false" and 0 first
    for ty in ["n8n-nodes-base.if", "n8n-nodes-base.filter"] {
        assert_eq!(kept(ty, 2.1, is_true.clone(), json!(""), values.clone()), vec![json!("false"), json!("true"), json!("yes")], "{ty} 2.1");
        assert_eq!(kept(ty, 2.2, is_true.clone(), json!(""), values.clone()), vec![json!("true"), json!("yes")], "{ty} 2.2");
    }
    // the stored value's own `options.version` wins over the node version
    let items = json!([{ "v": "false" }]);
    let st = run(&chain(vec![trigger(), data(items), filter_node("n8n-nodes-base.filter", 2.2, is_true, json!(""), json!({ "version": 1 }))]));
    assert_eq!(out(&st, "F", 0).len(), 1);
    // version 3 (If/Filter 2.3, Switch 3.4): an empty string or list is empty, not 0
    let is_empty = json!({ "type": "number", "operation": "empty", "singleValue": true });
    let lt = json!({ "type": "number", "operation": "lt" });
    assert_eq!(kept("n8n-nodes-base.filter", 2.2, is_empty.clone(), json!(""), json!(["", 1])), Vec::<Value>::new());
    assert_eq!(kept("n8n-nodes-base.filter", 2.3, is_empty, json!(""), json!(["", 1])), vec![json!("")]);
    assert_eq!(kept("n8n-nodes-base.if", 2.2, lt.clone(), json!(1), json!(["", " "])), vec![json!(""), json!(" ")]);
    assert_eq!(kept("n8n-nodes-base.if", 2.3, lt, json!(1), json!(["", " "])), Vec::<Value>::new());
}

#[test]
fn filter_type_errors_read_like_n8n() {
    let num = json!({ "type": "number", "operation": "equals" });
    let strict = |right: Value, left: Value| {
        let cond = json!({ "conditions": [{ "leftValue": left, "rightValue": right, "operator": num }], "combinator": "and", "options": { "typeValidation": "strict" } });
        run(&chain(vec![trigger(), node("F", "n8n-nodes-base.if", 2.2, json!({ "conditions": cond }))]))
    };
    let st = strict(json!(1), json!("a"));
    assert_eq!(error_message(&st), "Wrong type: 'a' is a string but was expecting a number [condition 0, item 0]");
    assert_eq!(
        error_description(&st),
        "\n<p>Try either:</p>\n<ol>\n  <li>Enabling 'Convert types where required'</li>\n  <li>Converting the first field to a number by adding <code>.toNumber()</code></li>\n</ol>\n\t\t\t"
    );
    let st = strict(json!("b"), json!("a"));
    assert_eq!(error_message(&st), "Comparison type expects a number but both fields are a string");
    assert_eq!(error_description(&st), "Try changing the type of comparison. Alternatively you can enable 'Convert types where required'.");
    let st = strict(json!([1, 2]), json!(3));
    assert_eq!(error_message(&st), "Wrong type: '1,2' is an object but was expecting a number [condition 0, item 0]");
    // loose: a conversion error
    let loose = run(&chain(vec![trigger(), data(json!([{ "v": "x" }])), filter_node("n8n-nodes-base.if", 2.2, num, json!(1), json!({}))]));
    assert_eq!(error_message(&loose), "Conversion error: the string 'x' can't be converted to a number [condition 0, item 0]");
    assert_eq!(error_description(&loose), "Try changing the type of the comparison.");
}

fn switch_v3(params: Value, on_error: Option<&str>) -> ExecutionState {
    let mut sw = node("Switch", "n8n-nodes-base.switch", 3.2, params);
    if let Some(e) = on_error {
        sw["onError"] = json!(e);
    }
    run(&chain(vec![trigger(), data(json!([{ "n": 1 }, { "n": 5 }, { "n": 9 }])), sw]))
}

#[test]
fn switch_v3_ranges_fallbacks_and_errors_as_n8n() {
    let rule = |op: &str, n: i64| json!({ "conditions": { "conditions": [{ "leftValue": "={{ $json.n }}", "rightValue": n, "operator": { "type": "number", "operation": op } }], "combinator": "and", "options": {} } });
    // a numeric fallback output routes to an existing output
    let st = switch_v3(json!({ "rules": { "values": [rule("lt", 3), rule("lt", 6)] }, "options": { "fallbackOutput": 0 } }), None);
    assert_eq!(ns_of(&st, 0), vec![json!(1), json!(9)]);
    assert_eq!(ns_of(&st, 1), vec![json!(5)]);
    // every matching output
    let st = switch_v3(json!({ "rules": { "values": [rule("lt", 6), rule("gt", 0)] }, "options": { "allMatchingOutputs": true, "fallbackOutput": "extra" } }), None);
    assert_eq!((ns_of(&st, 0), ns_of(&st, 1), ns_of(&st, 2)), (vec![json!(1), json!(5)], vec![json!(1), json!(5), json!(9)], vec![]));
    // expression mode: n8n's range errors
    let st = switch_v3(json!({ "mode": "expression", "numberOutputs": 2, "output": "={{ $json.n > 4 ? 2 : 0 }}" }), None);
    assert_eq!(error_message(&st), "The ouput 2 is not allowed. ");
    assert_eq!(error_description(&st), "Output indexes are zero based, if you want to use the extra output use 1");
    let st = switch_v3(json!({ "mode": "expression", "numberOutputs": 2, "output": "={{ $json.n }}" }), None);
    assert_eq!((error_message(&st), error_description(&st)), ("The ouput 5 is not allowed".to_string(), "It has to be between 0 and 1".to_string()));
    // continue on fail: the error goes to the first output
    let st = switch_v3(json!({ "mode": "expression", "numberOutputs": 2, "output": "={{ $json.n > 4 ? 7 : 1 }}" }), Some("continueRegularOutput"));
    assert_eq!(st.status, ExecutionStatus::Success);
    assert_eq!(out(&st, "Switch", 0), vec![json!({ "error": "The ouput 7 is not allowed" }), json!({ "error": "The ouput 7 is not allowed" })]);
    assert_eq!(ns_of(&st, 1), vec![json!(1)]);
}

#[test]
fn code_sets_and_reads_execution_custom_data() {
    let set = code(2.0, "runOnceForAllItems", "$execution.customData.set('user', 'u1');\n$execution.customData.setAll({ plan: 'pro', seats: 3 });\nreturn [{ json: { seen: $execution.customData.get('plan'), all: $execution.customData.getAll() } }];");
    let mut read = code(2.0, "runOnceForAllItems", "return [{ json: $execution.customData.getAll() }];");
    read["name"] = json!("Read");
    read["id"] = json!("Read");
    let st = run(&chain(vec![trigger(), set, read]));
    assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
    assert_eq!(out(&st, "Code", 0), vec![json!({ "seen": "pro", "all": { "user": "u1", "plan": "pro", "seats": "3" } })]);
    // a later node sees what was saved
    assert_eq!(out(&st, "Read", 0), vec![json!({ "user": "u1", "plan": "pro", "seats": "3" })]);
    assert_eq!(st.custom_data.0.get("seats").map(String::as_str), Some("3"));
    let bad = code(2.0, "runOnceForAllItems", "$execution.customData.set('a b', 'x');\nreturn [];");
    let st = run(&chain(vec![trigger(), bad]));
    assert_eq!(error_message(&st), "Custom data key can only contain letters, numbers, and underscores (key \"a b\")");
}

#[test]
fn node_types_describe_the_latest_version_of_versioned_properties() {
    // If/Filter/Switch also describe their v1 legacy shapes; the types show v2+ / v3+
    let ts = engine::catalog::typescript("n8n-nodes-base.if").expect("if");
    assert!(ts.contains("conditions?: FilterValue"), "{ts}");
    assert!(!ts.contains("combineOperation"), "{ts}");
    let ts = engine::catalog::typescript("n8n-nodes-base.switch").expect("switch");
    assert!(!ts.contains("dataType") && !ts.contains("outputsAmount"), "{ts}");
    let ts = engine::catalog::typescript("n8n-nodes-base.splitInBatches").expect("loop");
    assert!(ts.contains("batchSize"), "{ts}");
}

// ---- Code: cyclic and deeply nested values ---------------------------------

/// Runs `f` on a thread with the 2 MiB stack tokio's blocking threads have
/// (the test harness's own threads follow RUST_MIN_STACK, which test.sh raises).
fn on_2mib_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).expect("spawn").join().expect("no stack overflow")
}

/// JS building an object nested `depth` levels deep (`{a: {a: … {end: true}}}`).
fn nested_js(depth: usize) -> String {
    format!("let o = {{ end: true }}; for (let i = 0; i < {depth}; i++) o = {{ a: o }};")
}

#[test]
fn code_returning_a_cyclic_object_fails_the_node_clearly() {
    on_2mib_stack(|| {
        for node in [
            all("const a = { x: 1 }; a.self = a; return [{ json: a }];"),
            all("const a = { x: 1 }; a.self = a; return [a];"),
            all("const a = []; a.push(a); return [{ json: { a } }];"),
            each("const a = { x: 1 }; a.self = a; return { json: a };"),
            each("const a = { x: 1 }; a.self = a; return a;"),
        ] {
            let mode = node["parameters"]["jsCode"].clone();
            let st = run(&chain(vec![trigger(), two_items(), node]));
            assert_eq!(st.status, ExecutionStatus::Error, "{mode}");
            let msg = error_message(&st);
            assert!(msg.contains("circular") || msg.contains("cyclic"), "{mode}: {msg}");
        }
    });
}

#[test]
fn code_returning_a_too_deeply_nested_object_fails_the_node_clearly() {
    on_2mib_stack(|| {
        let js = nested_js(10_000);
        for node in [all(&format!("{js} return [{{ json: o }}];")), each(&format!("{js} return {{ json: o }};"))] {
            let st = run(&chain(vec![trigger(), two_items(), node.clone()]));
            assert_eq!(st.status, ExecutionStatus::Error);
            let msg = error_message(&st);
            assert!(msg.contains("nested too deeply"), "{}: {msg}", node["parameters"]["mode"]);
        }
    });
}

#[test]
fn code_returning_an_object_nested_100_deep_round_trips() {
    on_2mib_stack(|| {
        let js = nested_js(100);
        let mut expected = json!({ "end": true });
        for _ in 0..100 {
            expected = json!({ "a": expected });
        }
        for node in [all(&format!("{js} return [{{ json: o }}];")), each(&format!("{js} return {{ json: o }};"))] {
            let mut wf = chain(vec![trigger(), data(json!([{ "a": 1 }])), node, all("return $input.all();")]);
            wf["nodes"][3]["name"] = json!("Again");
            wf["connections"]["Code"] = json!({ "main": [[{ "node": "Again", "type": "main", "index": 0 }]] });
            let st = run(&wf);
            assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
            assert_eq!(out(&st, "Again", 0), vec![expected.clone()]);
        }
    });
}

#[test]
fn code_given_an_input_item_nested_5000_deep_fails_clearly() {
    on_2mib_stack(|| {
        // a dotted field name is the way a workflow builds data this deep in Rust
        // (parsed JSON stops at 128 levels)
        let path = format!("{}end", "a.".repeat(5_000));
        let deep = set_node(3.4, json!({ "assignments": { "assignments": [{ "name": path, "type": "string", "value": "x" }] } }));
        for node in [all("return $input.all();"), each("return { json: { depth: Object.keys($json).length } };")] {
            let st = run(&chain(vec![trigger(), data(json!([{ "a": 1 }])), deep.clone(), node.clone()]));
            assert_eq!(st.status, ExecutionStatus::Error, "{}", node["parameters"]["mode"]);
            let msg = error_message(&st);
            assert!(msg.contains("nested too deeply"), "{}: {msg}", node["parameters"]["mode"]);
        }
    });
}

#[test]
fn nodes_comparing_items_nested_5000_deep_do_not_overflow() {
    on_2mib_stack(|| {
        let path = format!("{}end", "a.".repeat(5_000));
        let deep = set_node(3.4, json!({ "assignments": { "assignments": [{ "name": path, "type": "string", "value": "x" }] } }));
        let dedupe = node("Dedupe", "n8n-nodes-base.removeDuplicates", 1.0, json!({}));
        let st = run(&chain(vec![trigger(), data(json!([{ "a": 1 }, { "a": 1 }])), deep, dedupe]));
        assert_eq!(st.status, ExecutionStatus::Success, "{}", error_message(&st));
        assert_eq!(st.run_data["Dedupe"].last().and_then(|t| t.output(0)).map(|i| i.len()), Some(1));
    });
}
