//! Sandbox limits, isolation, templates, data access and the Code node.

use std::time::{Duration, Instant};

use expression::{CodeMode, DataProxy, Evaluator, ExpressionError, Item, Limits, StaticData};
use serde_json::{json, Value};

fn evaluator() -> Evaluator {
    Evaluator::new(Limits { timeout: Duration::from_millis(500), memory_bytes: 32 << 20 }).expect("evaluator")
}

fn eval(ev: &mut Evaluator, expr: &str, json: Value) -> Result<Value, ExpressionError> {
    ev.evaluate(expr, &StaticData::from_json(json))
}

#[test]
fn evaluator_is_send() {
    fn is_send<T: Send>() {}
    is_send::<Evaluator>();
}

#[test]
fn runaway_loop_times_out_and_next_evaluation_works() {
    let mut ev = evaluator();
    let start = Instant::now();
    let err = eval(&mut ev, "={{ (() => { while (true) {} })() }}", json!({})).unwrap_err();
    assert!(matches!(err, ExpressionError::Timeout { .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(err.to_string().contains("while (true)"), "error names the expression: {err}");
    // a try/catch cannot swallow the interrupt
    let err = eval(&mut ev, "={{ (() => { for(;;) { try { while(true){} } catch (e) {} } })() }}", json!({})).unwrap_err();
    assert!(matches!(err, ExpressionError::Timeout { .. }), "{err:?}");
    assert_eq!(eval(&mut ev, "={{ $json.a + 1 }}", json!({"a": 1})).unwrap(), json!(2));
    assert_eq!(eval(&mut ev, "={{ [1,2,3].sum() }}", json!({})).unwrap(), json!(6));
    // catastrophic regex backtracking is interrupted too
    let err = eval(&mut ev, "={{ /^(a+)+$/.test('a'.repeat(40) + 'b') }}", json!({})).unwrap_err();
    assert!(matches!(err, ExpressionError::Timeout { .. }), "{err:?}");
    // Code node too
    let err = ev.run_code("while (true) {}", CodeMode::AllItems, &StaticData::from_json(json!({}))).unwrap_err();
    assert!(matches!(err, ExpressionError::Timeout { .. }), "{err:?}");
    assert_eq!(eval(&mut ev, "={{ 'ok'.toUpperCase() }}", json!({})).unwrap(), json!("OK"));
}

#[test]
fn allocation_bomb_hits_memory_limit_and_next_evaluation_works() {
    let mut ev = Evaluator::new(Limits { timeout: Duration::from_secs(10), memory_bytes: 32 << 20 }).unwrap();
    let err = eval(&mut ev, "={{ (() => { const a = []; while (true) a.push('x'.repeat(1000) + a.length); })() }}", json!({}))
        .unwrap_err();
    assert!(matches!(err, ExpressionError::OutOfMemory { .. }), "{err:?}");
    let err = eval(&mut ev, "={{ 'x'.repeat(1 << 29) }}", json!({})).unwrap_err();
    assert!(matches!(err, ExpressionError::OutOfMemory { .. } | ExpressionError::Runtime { .. }), "{err:?}");
    assert_eq!(eval(&mut ev, "={{ $json.n * 3 }}", json!({"n": 2})).unwrap(), json!(6));
    assert_eq!(eval(&mut ev, "={{ ({a: 1}).keys() }}", json!({})).unwrap(), json!(["a"]));
}

#[test]
fn no_host_access() {
    let mut ev = evaluator();
    for name in ["process", "require", "fetch", "std", "os", "module", "exports", "XMLHttpRequest", "Deno", "Bun", "__host", "luxon", "scriptArgs", "print"] {
        let got = eval(&mut ev, &format!("={{{{ typeof {name} }}}}"), json!({})).unwrap();
        assert_eq!(got, json!("undefined"), "{name} must not exist");
    }
    assert!(eval(&mut ev, "={{ $env.HOME }}", json!({})).is_err());
    assert!(eval(&mut ev, "={{ ''.constructor.constructor('return 1')() }}", json!({})).is_err());
    // dynamic import has no loader behind it
    let r = ev.run_code("return [{json: {m: await import('os').then(() => 'loaded', e => 'blocked')}}]", CodeMode::AllItems, &StaticData::from_json(json!({})));
    assert_eq!(r.unwrap().value, json!([{"json": {"m": "blocked"}}]));
}

#[test]
fn templates_mixing_text() {
    let mut ev = evaluator();
    let d = json!({"name": "Ada", "n": 3, "obj": {"a": 1}, "list": [1, 2], "none": null, "f": false, "z": 0});
    assert_eq!(eval(&mut ev, "=Hello {{ $json.name }}!", d.clone()).unwrap(), json!("Hello Ada!"));
    assert_eq!(eval(&mut ev, "={{ $json.n }} items, {{ $json.n * 2 }} total", d.clone()).unwrap(), json!("3 items, 6 total"));
    assert_eq!(eval(&mut ev, "={{ $json.n }}", d.clone()).unwrap(), json!(3));
    assert_eq!(eval(&mut ev, "={{ $json.n }} ", d.clone()).unwrap(), json!("3 "));
    assert_eq!(eval(&mut ev, "=a{{ $json.none }}b{{ $json.missing }}c", d.clone()).unwrap(), json!("abc"));
    assert_eq!(eval(&mut ev, "={{ $json.f }}/{{ $json.z }}", d.clone()).unwrap(), json!("false/0"));
    assert_eq!(eval(&mut ev, "=x {{ $json.obj }}", d.clone()).unwrap(), json!("x [object Object]"));
    assert_eq!(eval(&mut ev, "=x {{ $json.list }}", d.clone()).unwrap(), json!("x 1,2"));
    assert_eq!(eval(&mut ev, "=plain text", d.clone()).unwrap(), json!("plain text"));
    assert_eq!(eval(&mut ev, "={{ $json.obj }}", d.clone()).unwrap(), json!({"a": 1}));
    // resolve walks objects and arrays, leaving non-expressions alone
    let params = json!({"a": "={{ $json.n + 1 }}", "b": ["x", "={{ $json.name.toUpperCase() }}"], "c": 5, "d": "no"});
    assert_eq!(ev.resolve(&params, &StaticData::from_json(d)).unwrap(), json!({"a": 4, "b": ["x", "ADA"], "c": 5, "d": "no"}));
    assert!(expression::is_expression(&json!("={{1}}")));
    assert!(!expression::is_expression(&json!("{{1}}")));
}

/// An engine-like proxy: two upstream nodes, pairing through `pairedItem`.
struct Fake {
    input: Vec<Item>,
    index: i64,
}

impl DataProxy for Fake {
    fn input_items(&self) -> &[Item] {
        &self.input
    }
    fn item_index(&self) -> i64 {
        self.index
    }
    fn run_index(&self) -> usize {
        2
    }
    fn node_output(&self, node: &str, output: usize, _run: Option<usize>) -> Option<Vec<Item>> {
        match (node, output) {
            ("Source", 0) => Some(vec![
                Item::new(json!({"id": "s0"})),
                Item::new(json!({"id": "s1"})),
                Item::new(json!({"id": "s2"})),
            ]),
            ("Source", _) => Some(vec![]),
            _ => None,
        }
    }
    fn paired_item(&self, node: &str, item_index: usize) -> Result<Item, String> {
        if node != "Source" {
            return Err(format!("no path back to '{node}'"));
        }
        // input item i descends from Source item 2 - i
        let src = 2usize.checked_sub(item_index).ok_or("bad index")?;
        Ok(Item::new(json!({"id": format!("s{src}")})))
    }
    fn parameters(&self) -> Value {
        json!({"mode": "x"})
    }
    fn workflow(&self) -> Value {
        json!({"id": "wf1", "name": "Flow", "active": false})
    }
    fn execution(&self) -> Value {
        json!({"id": "ex9", "mode": "manual"})
    }
    fn vars(&self) -> Value {
        json!({"region": "eu"})
    }
    fn prev_node(&self) -> Option<Value> {
        Some(json!({"name": "Source", "outputIndex": 0, "runIndex": 0}))
    }
    fn node_parameters(&self, node: &str) -> Option<Value> {
        (node == "Source").then(|| json!({"url": "https://example.com"}))
    }
}

#[test]
fn node_access_through_data_proxy() {
    let mut ev = evaluator();
    let fake = Fake {
        input: vec![Item::new(json!({"v": 0})), Item::new(json!({"v": 1}))],
        index: 1,
    };
    let e = |ev: &mut Evaluator, s: &str| ev.evaluate(s, &fake).unwrap();
    assert_eq!(e(&mut ev, "={{ $('Source').item.json.id }}"), json!("s1"));
    assert_eq!(e(&mut ev, "={{ $('Source').itemMatching(0).json.id }}"), json!("s2"));
    assert_eq!(e(&mut ev, "={{ $('Source').first().json.id }}"), json!("s0"));
    assert_eq!(e(&mut ev, "={{ $('Source').last().json.id }}"), json!("s2"));
    assert_eq!(e(&mut ev, "={{ $('Source').all().length }}"), json!(3));
    assert_eq!(e(&mut ev, "={{ $('Source').all(1).length }}"), json!(0));
    assert_eq!(e(&mut ev, "={{ $node['Source'].json.id }}"), json!("s1"));
    assert_eq!(e(&mut ev, "={{ $items('Source')[2].json.id }}"), json!("s2"));
    assert_eq!(e(&mut ev, "={{ $items().length }}"), json!(2));
    assert_eq!(e(&mut ev, "={{ $input.item.json.v }}"), json!(1));
    assert_eq!(e(&mut ev, "={{ $input.first().json.v }}"), json!(0));
    assert_eq!(e(&mut ev, "={{ $input.all().map(i => i.json.v) }}"), json!([0, 1]));
    assert_eq!(e(&mut ev, "={{ $json.v }}"), json!(1));
    assert_eq!(e(&mut ev, "={{ $itemIndex }}/{{ $runIndex }}"), json!("1/2"));
    assert_eq!(e(&mut ev, "={{ $workflow.name }} {{ $execution.id }} {{ $vars.region }} {{ $parameter.mode }}"), json!("Flow ex9 eu x"));
    assert_eq!(e(&mut ev, "={{ $if($json.v > 0, 'pos', 'zero') }}"), json!("pos"));
    assert_eq!(e(&mut ev, "={{ $ifEmpty($json.missing, 'dflt') }}"), json!("dflt"));
    assert_eq!(e(&mut ev, "={{ $prevNode.name }}"), json!("Source"));
    assert_eq!(e(&mut ev, "={{ $('Source').params.url }}"), json!("https://example.com"));
    assert_eq!(e(&mut ev, "={{ $node['Source'].parameter.url }}"), json!("https://example.com"));
    assert_eq!(e(&mut ev, "={{ $mode }}"), json!("manual"));
    let err = ev.evaluate("={{ $('Nope').item.json }}", &fake).unwrap_err();
    assert!(err.to_string().contains("Nope"), "{err}");
    let err = ev.evaluate("={{ $('Missing').first() }}", &fake).unwrap_err();
    assert!(err.to_string().contains("hasn't been executed"), "{err}");
}

#[test]
fn code_node_both_modes_with_console() {
    let mut ev = evaluator();
    let data = StaticData::new(vec![json!({"value": 1}), json!({"value": 2})]);
    let out = ev
        .run_code(
            "let sum = 0;\nfor (const item of $input.all()) sum += item.json.value;\nconsole.log('sum is', sum, {a: 1});\nconsole.warn('careful');\nreturn [{sum}];",
            CodeMode::AllItems,
            &data,
        )
        .unwrap();
    assert_eq!(out.value, json!([{"json": {"sum": 3}}]));
    assert_eq!(out.console, vec!["sum is 3 {\"a\":1}".to_string(), "careful".to_string()]);

    let out = ev.run_code("return items.map(i => ({json: {double: i.json.value * 2}}))", CodeMode::AllItems, &data).unwrap();
    assert_eq!(out.value, json!([{"json": {"double": 2}}, {"json": {"double": 4}}]));
    assert!(out.console.is_empty());

    let out = ev.run_code("return {one: 1}", CodeMode::AllItems, &data).unwrap();
    assert_eq!(out.value, json!([{"json": {"one": 1}}]));

    for (i, code) in ["$input.item.json.myNewField = $input.item.json.value;\nreturn $input.item;", "item.json.myNewField = item.json.value;\nreturn item;"].iter().enumerate() {
        for idx in 0..2 {
            let d = data.clone().with_item_index(idx);
            let out = ev.run_code(code, CodeMode::EachItem, &d).unwrap();
            assert_eq!(out.value, json!({"json": {"value": idx + 1, "myNewField": idx + 1}}), "variant {i}");
        }
    }
    let out = ev.run_code("console.log($json.value); return {json: {v: $json.value + 10}}", CodeMode::EachItem, &data.clone().with_item_index(1)).unwrap();
    assert_eq!(out.value, json!({"json": {"v": 12}}));
    assert_eq!(out.console, vec!["2".to_string()]);

    let out = ev.run_code("const x = await Promise.resolve(5); return [{json: {x}}]", CodeMode::AllItems, &data).unwrap();
    assert_eq!(out.value, json!([{"json": {"x": 5}}]));

    let err = ev.run_code("throw new Error('boom')", CodeMode::AllItems, &data).unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
    let err = ev.run_code("return [", CodeMode::AllItems, &data).unwrap_err();
    assert!(matches!(err, ExpressionError::Syntax { .. }), "{err:?}");
}

/// `run_code_items` reads results straight into items; it must give what
/// `run_code`'s normalised JSON gives, read as n8n items.
#[test]
fn code_items_match_normalised_json() {
    let mut ev = evaluator();
    let data = StaticData::new(vec![json!({"value": 1}), json!({"value": 2})]);
    for code in [
        "return [{json: {a: 1}}, {b: 2}]",
        "return items",
        "return {one: 1}",
        "return null",
        "return undefined",
        "return []",
        "return [null, undefined, {x: 1}, () => 1, NaN]",
        "return [{json: {a: 1}, pairedItem: 0, binary: {data: {mimeType: 'text/plain'}}, index: 3, error: null}]",
        "return [{json: {a: 1}, pairedItem: {item: 1, input: 0}}, {json: {}, pairedItem: [{item: 0}, {item: 1}]}]",
        "return [{json: {a: 1}, other: 2}]",
        "return [{json: undefined, pairedItem: 1}]",
        "return [{json: 5}]",
        "return [1, 'x', [1, 2]]",
        "return [{json: {d: new Date(0)}}, new Date(0), {toJSON() { return {t: 1}; }}]",
        "return {toJSON() { return [{json: {x: 1}}, {y: 2}, null]; }}",
        "return [{2: 'b', 1: 'a', z: {1: 'y', 0: 'x'}}]",
        "const o = {json: {n: 1}}; return [o, o]",
    ] {
        let (items, _) = ev.run_code_items(code, &data).unwrap();
        let value = ev.run_code(code, CodeMode::AllItems, &data).unwrap().value;
        let expected: Vec<Value> = value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                let mut m = v.as_object().unwrap().clone();
                m.retain(|k, _| matches!(k.as_str(), "json" | "binary" | "pairedItem"));
                Value::Object(m)
            })
            .collect();
        let got: Vec<Value> = items.iter().map(|it| serde_json::to_value(it).unwrap()).collect();
        assert_eq!(got, expected, "{code}");
    }
    let err = ev.run_code_items("throw new Error('boom')", &data).unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
}

/// Reading results reuses key atoms across elements: each element still gets
/// its own keys, in its own order, whatever the elements before it had.
#[test]
fn code_items_keep_each_elements_keys_in_order() {
    let mut ev = evaluator();
    let data = StaticData::new(vec![]);
    let code = "return [{b: 1, a: 2}, {a: 3, c: 4, b: 5}, {json: {z: 1, y: 2}, pairedItem: 0}, {c: 1, json: 2}, {json: {b: 1}, a: 1}, {b: 6, a: 7}, {json: {}, binary: {f: {k: 1}}}]";
    let (items, _) = ev.run_code_items(code, &data).unwrap();
    let text: Vec<String> = items.iter().map(|it| serde_json::to_string(it).unwrap()).collect();
    assert_eq!(
        text,
        [
            r#"{"json":{"b":1,"a":2}}"#,
            r#"{"json":{"a":3,"c":4,"b":5}}"#,
            r#"{"json":{"z":1,"y":2},"pairedItem":0}"#,
            r#"{"json":{"c":1,"json":2}}"#,
            r#"{"json":{"json":{"b":1},"a":1}}"#,
            r#"{"json":{"b":6,"a":7}}"#,
            r#"{"json":{},"binary":{"f":{"k":1}}}"#,
        ]
    );
}

#[test]
fn errors_carry_expression_text() {
    let mut ev = evaluator();
    let err = eval(&mut ev, "={{ $json.a.b.c }}", json!({})).unwrap_err();
    match &err {
        ExpressionError::Runtime { expression, message } => {
            assert_eq!(expression, "={{ $json.a.b.c }}");
            assert!(message.contains("TypeError"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let err = eval(&mut ev, "={{ 1 + }}", json!({})).unwrap_err();
    assert!(matches!(err, ExpressionError::Syntax { .. }), "{err:?}");
    let err = eval(&mut ev, "={{ Math.max }}", json!({})).unwrap_err();
    assert!(err.to_string().contains("function"), "{err}");
}

#[test]
fn dates_follow_luxon() {
    let mut ev = evaluator();
    let d = json!({"ts": "2024-03-30T18:49:07.234Z", "ms": 1711824547234i64});
    let e = |ev: &mut Evaluator, s: &str| eval(ev, s, d.clone()).unwrap();
    assert_eq!(e(&mut ev, "={{ $now.isLuxonDateTime && $today.hour === 0 }}"), json!(true));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime().plus(2, 'days').toISO() }}"), json!("2024-04-01T18:49:07.234Z"));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime().minus({hours: 1}).hour }}"), json!(17));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime().format('dd LLL yyyy') }}"), json!("30 Mar 2024"));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime().toFormat('cccc, MMMM d') }}"), json!("Saturday, March 30"));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime().isWeekend() }}"), json!(true));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime().extract('month') }}"), json!(3));
    assert_eq!(e(&mut ev, "={{ $json.ts.toDateTime() }}"), json!("2024-03-30T18:49:07.234Z"));
    assert_eq!(e(&mut ev, "={{ DateTime.fromMillis($json.ms, {zone: 'UTC'}).toISODate() }}"), json!("2024-03-30"));
    assert_eq!(e(&mut ev, "={{ DateTime.fromISO('2024-07-01T12:00:00Z').setZone('Europe/Berlin').toISO() }}"), json!("2024-07-01T14:00:00.000+02:00"));
    assert_eq!(e(&mut ev, "={{ DateTime.fromISO('2024-01-05T09:05:00Z').toLocaleString(DateTime.DATETIME_MED) }}"), json!("Jan 5, 2024, 9:05 AM"));
    assert_eq!(e(&mut ev, "={{ '2024-01-01'.toDateTime().diffTo('2024-01-11', 'days') }}"), json!(-10));
    assert_eq!(e(&mut ev, "=at {{ DateTime.fromISO('2024-01-01T00:00:00Z') }}"), json!("at 2024-01-01T00:00:00.000Z"));
    assert_eq!(e(&mut ev, "={{ (1234.5).format() }}"), json!("1,234.5"));
    ev.set_timezone("America/New_York").unwrap();
    assert_eq!(e(&mut ev, "={{ DateTime.fromISO('2024-07-01T12:00:00Z').toISO() }}"), json!("2024-07-01T08:00:00.000-04:00"));
    assert_eq!(e(&mut ev, "={{ $now.zoneName }}"), json!("America/New_York"));
}

/// The native fast path must give exactly what QuickJS gives.
#[test]
fn fast_path_agrees_with_quickjs() {
    let mut ev = evaluator();
    let data = json!({
        "score": 21, "f": 1.5, "s": "12", "e": "", "name": "Ada", "neg": -0.0, "big": 1e21, "t": true, "nul": null,
        "obj": {"a": {"b": [1, 2, {"c": "deep"}]}, "2": "two", "1": "one"}, "arr": [3, "x", null], "uni": "héllo", "sp": " 7 "
    });
    let exprs = [
        "={{ $json.score * 2 }}", "={{ $json.score / 4 }}", "={{ $json.score % 4 }}", "={{ $json.f + $json.score }}",
        "={{ $json.s + 1 }}", "={{ $json.s - 1 }}", "={{ $json.s * '2' }}", "={{ $json.name + ' ' + $json.score }}",
        "={{ $json.f + 'x' }}", "={{ 0.1 + 0.2 }}", "={{ $json.big }}", "={{ $json.big + '' }}", "={{ 1e-7 + '' }}",
        "={{ $json.neg }}", "={{ -$json.score }}", "={{ +$json.s }}", "={{ +$json.sp }}", "={{ +$json.e }}", "={{ !$json.e }}",
        "={{ $json.score > 20 }}", "={{ $json.s > '100' }}", "={{ $json.s > 100 }}", "={{ $json.s == 12 }}", "={{ $json.s === 12 }}",
        "={{ $json.nul == undefined }}", "={{ $json.nul === undefined }}", "={{ $json.missing }}", "={{ $json.missing ?? 'd' }}",
        "={{ $json.nul ?? 5 }}", "={{ $json.e || 'empty' }}", "={{ $json.t && $json.name }}", "={{ $json.obj.a.b[2].c }}",
        "={{ $json['obj']['a']['b'].length }}", "={{ $json.arr[1] }}", "={{ $json.arr[5] }}", "={{ $json.obj?.zz?.yy }}",
        "={{ $json.obj }}", "={{ $json.arr }}", "={{ $json.uni.length }}", "={{ $json.name[0] }}", "={{ typeof $json.obj }}",
        "={{ typeof $json.missing }}", "={{ $json.score > 10 ? 'hi' : 'lo' }}", "={{ $json.t == 1 }}", "={{ $json.t + 1 }}",
        "={{ $json.nul + 1 }}", "={{ $json.missing + 1 }}", "={{ $json.score / 0 }}", "={{ 1 / 0 + '' }}", "={{ $json.score }} and {{ $json.f }}",
        "=n: {{ $json.nul }} {{ $json.t }} {{ $json.e }}.", "={{ 'a' < 'b' }}", "={{ $json.uni > 'hz' }}", "={{ $itemIndex + $runIndex }}",
        "={{ ($json.score + 1) * 2 }}", "={{ $json.score - -1 }}", "={{ 7 % -3 }}", "={{ -7 % 3 }}", "={{ 2e3 + 0x10 }}",
        "={{ $json[\"obj\"][\"1\"] }}", "={{ $json.obj[2] }}", "={{ $json.doubled }}", "={{ `tpl` + 1 }}", "={{ 'it\\'s' }}",
        "={{ $json.f * 3 }}", "={{ 123456789 * 1000000 }}", "={{ 2 ** 10 }}", "={{ $json.obj.hasOwnProperty }}",
    ];
    let d = StaticData::from_json(data);
    let (mut fast, mut natively) = (0, 0);
    for e in exprs {
        let a = ev.evaluate(e, &d);
        let b = ev.evaluate_js(e, &d);
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{e}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{e}: fast {a:?} vs js {b:?}"),
        }
        if Evaluator::has_fast_path(e) {
            fast += 1;
        }
        // without a sandbox: the same value, or a refusal
        if let Some(native) = Evaluator::evaluate_natively(e, &d) {
            assert_eq!(Some(&native), b.as_ref().ok(), "{e}: without the sandbox");
            natively += 1;
        }
    }
    assert!(fast >= 55, "only {fast} expressions took the fast path");
    assert!(natively >= 50, "only {natively} expressions were evaluated without the sandbox");
    // a key that is not there may be one the sandbox's prototypes answer: refused
    for e in ["={{ $json.missing }}", "={{ $json.obj.hasOwnProperty }}", "={{ $json.name.toUpperCase() }}", "={{ Math.max(1, 2) }}"] {
        assert_eq!(Evaluator::evaluate_natively(e, &d), None, "{e}");
    }
    assert_eq!(Evaluator::evaluate_natively("={{ $json.name }}", &d), Some(json!("Ada")));
    assert_eq!(Evaluator::evaluate_natively("plain text", &d), Some(json!("plain text")));
    // the vector set: fast and JS agree too
    let dir = std::env::var_os("CONFORMANCE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"));
    if let Ok(text) = std::fs::read_to_string(dir.join("expressions/extensions.json")) {
        let vectors: Vec<Value> = serde_json::from_str(&text).unwrap();
        for v in vectors {
            let expr = v["expression"].as_str().unwrap();
            let input: Vec<Value> = v.get("input").and_then(Value::as_array).cloned().unwrap_or_default();
            let d = StaticData::new(input);
            assert_eq!(ev.evaluate(expr, &d).ok(), ev.evaluate_js(expr, &d).ok(), "{expr}");
        }
    }
}

#[test]
fn deep_recursion_is_an_error_not_a_crash() {
    let mut ev = evaluator();
    let err = eval(&mut ev, "={{ (function f(n) { return f(n + 1) + 1; })(0) }}", json!({})).unwrap_err();
    assert!(matches!(err, ExpressionError::Runtime { .. }), "{err:?}");
    assert!(err.to_string().to_lowercase().contains("stack"), "{err}");
    assert_eq!(eval(&mut ev, "={{ $json.x ?? 'ok' }}", json!({})).unwrap(), json!("ok"));
}

#[test]
fn limits_can_change_between_calls() {
    let mut ev = evaluator();
    let big = "const a = []; for (let i = 0; i < 400000; i++) a.push({json: {i, s: 'v' + i}}); return a.length ? [{json: {n: a.length}}] : [];";
    ev.set_limits(Limits { timeout: Duration::from_secs(20), memory_bytes: 24 << 20 });
    let err = ev.run_code(big, CodeMode::AllItems, &StaticData::from_json(json!({}))).unwrap_err();
    assert!(matches!(err, ExpressionError::OutOfMemory { .. }), "{err:?}");
    ev.set_limits(Limits { timeout: Duration::from_secs(20), memory_bytes: 512 << 20 });
    let out = ev.run_code(big, CodeMode::AllItems, &StaticData::from_json(json!({}))).unwrap();
    assert_eq!(out.value, json!([{"json": {"n": 400000}}]));
}

#[test]
fn objects_render_like_n8n() {
    assert_eq!(expression::object_to_n8n_string(&json!({"a": 1, "b": "x"})), "[Object: {\"a\": 1, \"b\": \"x\"}]");
    assert_eq!(expression::object_to_n8n_string(&json!([1, 2])), "[Array: [1,2]]");
    assert_eq!(expression::object_to_n8n_string(&json!(1.5)), "1.5");
    assert_eq!(expression::object_to_n8n_string(&json!(null)), "null");
}

#[test]
fn extensions_dispatch_like_n8n() {
    let mut ev = evaluator();
    let d = json!({"a": 1, "list": [3, 1, 2], "s": "hello world", "n": 2.567});
    let e = |ev: &mut Evaluator, s: &str| eval(ev, s, d.clone()).unwrap();
    // a missing field named like an extension is just missing
    assert_eq!(e(&mut ev, "={{ $json.values }}"), json!(null));
    assert_eq!(e(&mut ev, "={{ $json.keys ?? 'none' }}"), json!("none"));
    assert_eq!(e(&mut ev, "={{ typeof $json.merge }}"), json!("undefined"));
    // calls dispatch by type, natives stay reachable
    assert_eq!(e(&mut ev, "={{ $json.keys() }}"), json!(["a", "list", "s", "n"]));
    assert_eq!(e(&mut ev, "={{ Object.keys($json).length }}"), json!(4));
    assert_eq!(e(&mut ev, "={{ [...$json.list.keys()] }}"), json!([0, 1, 2]));
    assert_eq!(e(&mut ev, "={{ [...new Map([['k', 1]]).keys()] }}"), json!(["k"]));
    assert_eq!(e(&mut ev, "={{ Math.round($json.n) + Math.max(1, 5) }}"), json!(8));
    assert_eq!(e(&mut ev, "={{ $json.n.round(1) }}"), json!(2.6));
    assert_eq!(e(&mut ev, "={{ $json.list.max() }}"), json!(3));
    assert_eq!(e(&mut ev, "={{ $json.s.toTitleCase() }}"), json!("Hello World"));
    assert_eq!(e(&mut ev, "={{ $json.s.length() }} {{ $json.s.length }}"), json!("11 11"));
    assert_eq!(e(&mut ev, "={{ new Intl.NumberFormat('en-US').format(1234) }}"), json!("1,234"));
    // n8n's generic isEmpty on a missing value; other functions name the problem
    assert_eq!(e(&mut ev, "={{ $json.missing.isEmpty() }}"), json!(true));
    let err = eval(&mut ev, "={{ $json.missing.toTitleCase() }}", d.clone()).unwrap_err();
    assert!(err.to_string().contains("toTitleCase can't be used on undefined value") && !err.to_string().contains("__n8n_"), "{err}");
    // in Code too, and a user's own method wins on plain objects
    let out = ev
        .run_code("const o = { merge: () => 'mine' }; return [{json: {m: o.merge(), e: $input.first().json.s.isEmpty(), k: ({x: 1}).keys()}}]", CodeMode::AllItems, &StaticData::from_json(d))
        .unwrap();
    assert_eq!(out.value, json!([{"json": {"m": "mine", "e": false, "k": ["x"]}}]));
}

/// Runs `f` on a thread with the 2 MiB stack tokio's blocking threads have
/// (the harness's own threads follow RUST_MIN_STACK, which test.sh raises).
fn on_2mib_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new().stack_size(2 << 20).spawn(f).expect("spawn").join().expect("no stack overflow")
}

/// `{"a": {"a": … {"end": true}}}`, `depth` objects around the innermost one.
fn nested(depth: usize) -> Value {
    // moved in, not through json!, which would serialize (copy) `v` recursively
    (0..depth).fold(json!({ "end": true }), |v, _| Value::Object(serde_json::Map::from_iter([("a".to_string(), v)])))
}

#[test]
fn deeply_nested_input_is_refused_clearly_and_moderate_nesting_is_read() {
    on_2mib_stack(|| {
        let mut ev = evaluator();
        // deeper than any parsed JSON (serde_json stops at 128), as Rust code may build it
        let deep = StaticData::from_json(nested(5_000));
        let err = ev.evaluate("={{ $json.a.a.a }}", &deep).unwrap_err();
        assert!(err.to_string().contains("nested too deeply"), "{err}");
        let err = ev.run_code("return $input.all();", CodeMode::AllItems, &deep).unwrap_err();
        assert!(err.to_string().contains("nested too deeply"), "{err}");
        // the evaluator still works
        let moderate = StaticData::from_json(nested(100));
        let path = format!("={{{{ $json{}.end }}}}", ".a".repeat(100));
        assert_eq!(ev.evaluate(&path, &moderate).unwrap(), json!(true));
        let out = ev.run_code("return $input.all();", CodeMode::AllItems, &moderate).unwrap();
        assert_eq!(out.value, json!([{ "json": nested(100) }]));
    });
}
