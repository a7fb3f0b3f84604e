//! n8n's extension functions, `$if`, `$ifEmpty`, `$jmespath` and the Luxon
//! methods n8n's docs use, beyond the shared vectors (`conformance.rs`).
//! Expected values follow n8n's `packages/workflow/src/extensions/*` and
//! `@n8n/expression-runtime/src/extensions/*`.

use std::time::Duration;

use expression::{CodeMode, Evaluator, Limits, StaticData};
use serde_json::{json, Value};

fn evaluator() -> Evaluator {
    Evaluator::new(Limits { timeout: Duration::from_millis(2000), memory_bytes: 64 << 20 }).expect("evaluator")
}

fn data() -> StaticData {
    StaticData::from_json(json!({
        "name": "Nathan", "blank": "   ", "zero": 0, "list": [3, 1, 2], "empty": {}, "none": null,
        "when": "2024-03-30T18:49:07.234Z", "people": [{"name": "a", "age": 30}, {"name": "b", "age": 20}],
    }))
}

fn ok(ev: &mut Evaluator, expr: &str) -> Value {
    ev.evaluate(expr, &data()).unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn err(ev: &mut Evaluator, expr: &str) -> String {
    match ev.evaluate(expr, &data()) {
        Ok(v) => panic!("{expr}: expected an error, got {v}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn generic_is_empty_on_missing_null_and_falsy_values() {
    let mut ev = evaluator();
    assert_eq!(ok(&mut ev, "={{ $json.missing.isEmpty() }}"), json!(true));
    assert_eq!(ok(&mut ev, "={{ $json.none.isEmpty() }}"), json!(true));
    assert_eq!(ok(&mut ev, "={{ $json.none.isNotEmpty() }}"), json!(false));
    // numbers and booleans have no isEmpty of their own: n8n's generic `!value`
    assert_eq!(ok(&mut ev, "={{ $json.zero.isEmpty() }}"), json!(true));
    assert_eq!(ok(&mut ev, "={{ (5).isEmpty() }}"), json!(false));
    assert_eq!(ok(&mut ev, "={{ (false).isEmpty() }}"), json!(true));
    // an optional call short-circuits as in JavaScript
    assert_eq!(ok(&mut ev, "={{ $json.missing?.isEmpty() }}"), json!(null));
    let e = err(&mut ev, "={{ $json.missing.toUpperCase().toSnakeCase() }}");
    assert!(e.contains("Cannot read") || e.contains("undefined"), "{e}");
    let e = err(&mut ev, "={{ $json.none.toSnakeCase() }}");
    assert!(e.contains("toSnakeCase can't be used on null value"), "{e}");
}

#[test]
fn wrong_type_errors_name_the_types() {
    let mut ev = evaluator();
    let e = err(&mut ev, "={{ (5).toSnakeCase() }}");
    assert!(e.contains("toSnakeCase() is only callable on type \"String\""), "{e}");
    let e = err(&mut ev, "={{ 'x'.sum() }}");
    assert!(e.contains("sum() is only callable on type \"Array\""), "{e}");
    let e = err(&mut ev, "={{ (5).isBetween(1, 2) }}");
    assert!(e.contains("isBetween() is only callable on type \"Date\""), "{e}");
    let e = err(&mut ev, "={{ (5).compact() }}");
    assert!(e.contains("compact() is only callable on types \"Array\", and \"Object\""), "{e}");
    // numbers have no toJsonString in n8n
    let e = err(&mut ev, "={{ (5).toJsonString() }}");
    assert!(e.contains("toJsonString() is only callable on types"), "{e}");
}

#[test]
fn strings() {
    let mut ev = evaluator();
    assert_eq!(ok(&mut ev, "={{ $json.blank.isBlank() }}"), json!(true));
    assert_eq!(ok(&mut ev, "={{ $json.blank.isEmpty() }}"), json!(false));
    assert_eq!(ok(&mut ev, "={{ $json.name.isNotBlank() }}"), json!(true));
    assert_eq!(ok(&mut ev, "={{ 'hello'.hash() }}"), json!("5d41402abc4b2a76b9719d911017c592"));
    assert_eq!(ok(&mut ev, "={{ 'hello'.hash('base64') }}"), json!("aGVsbG8="));
    assert_eq!(ok(&mut ev, "={{ '{\"a\":1}'.parseJson().a }}"), json!(1));
    let e = err(&mut ev, "={{ \"{'a':1}\".parseJson() }}");
    assert!(e.contains("Parsing failed. Check you're using double quotes"), "{e}");
    // a format that does not match gives an invalid DateTime, as Luxon's fromFormat does
    assert_eq!(ok(&mut ev, "={{ '23-06-2019'.toDateTime('dd-MM-yyyy').toISODate() }}"), json!("2019-06-23"));
    assert_eq!(ok(&mut ev, "={{ 'nope'.toDateTime('dd-MM-yyyy').isValid }}"), json!(false));
    assert_eq!(ok(&mut ev, "={{ '1708695471'.toDateTime('s').toMillis() }}"), json!(1708695471000i64));
    // an ISO string exactly as JS Date prints it dispatches to the date functions
    assert_eq!(ok(&mut ev, "={{ $json.when.extract('month') }}"), json!(3));
    assert_eq!(ok(&mut ev, "={{ $json.when.toDateTime().year }}"), json!(2024));
    assert_eq!(ok(&mut ev, "={{ 'I am a test!'.toSnakeCase() }}"), json!("i_am_a_test"));
}

#[test]
fn numbers() {
    let mut ev = evaluator();
    assert_eq!(ok(&mut ev, "={{ (1708695471000).toDateTime().toMillis() }}"), json!(1708695471000i64));
    assert_eq!(ok(&mut ev, "={{ (1708695471).toDateTime('s').toMillis() }}"), json!(1708695471000i64));
    assert_eq!(ok(&mut ev, "={{ (1708695471000000).toDateTime('us').toMillis() }}"), json!(1708695471000i64));
    assert_eq!(ok(&mut ev, "={{ (45345).toDateTime('excel').toUTC().toISO() }}"), json!("2024-02-23T00:00:00.000Z"));
    let e = err(&mut ev, "={{ (1).toDateTime('days') }}");
    assert!(e.contains("Unsupported format 'days'. toDateTime() supports 'ms', 's', 'us' and 'excel'."), "{e}");
    assert_eq!(ok(&mut ev, "={{ (1.256).round(2) }}"), json!(1.26));
    assert_eq!(ok(&mut ev, "={{ (-3).isOdd() }}"), json!(true));
    let e = err(&mut ev, "={{ (1.5).isEven() }}");
    assert!(e.contains("isEven() is only callable on integers"), "{e}");
    assert_eq!(ok(&mut ev, "={{ (123456.789).format('en-US') }}"), json!("123,456.789"));
}

#[test]
fn arrays_and_objects() {
    let mut ev = evaluator();
    // unique by fields compares those fields; items without them count as all-undefined
    assert_eq!(
        ok(&mut ev, "={{ [{a: 1, b: 1}, {a: 1, b: 2}, {c: 3}, {d: 4}, 5, 5].unique('a') }}"),
        json!([{"a": 1, "b": 1}, {"c": 3}, 5])
    );
    // compact: nested arrays and objects are compacted as objects, empty ones dropped
    assert_eq!(ok(&mut ev, "={{ ({a: {}, b: [], c: {d: null, e: 1} }).compact() }}"), json!({"c": {"e": 1}}));
    assert_eq!(ok(&mut ev, "={{ [[null, 1], {}, 0].compact() }}"), json!([{"1": 1}, 0]));
    assert_eq!(ok(&mut ev, "={{ [1, 2].toInt() }}"), json!(null));
    assert_eq!(ok(&mut ev, "={{ ({a: 1}).toBoolean() }}"), json!(null));
    assert_eq!(ok(&mut ev, "={{ $json.people.pluck('name') }}"), json!(["a", "b"]));
    assert_eq!(ok(&mut ev, "={{ $json.people.smartJoin('name', 'age') }}"), json!({"a": 30, "b": 20}));
    assert_eq!(ok(&mut ev, "={{ [1, 2].append(3, 4) }}"), json!([1, 2, 3, 4]));
    let e = err(&mut ev, "={{ [1].chunk(0) }}");
    assert!(e.contains("chunk(): expected non-zero numeric arg"), "{e}");
    let e = err(&mut ev, "={{ ['a'].sum() }}");
    assert!(e.contains("sum(): all array elements must be numbers"), "{e}");
    assert_eq!(ok(&mut ev, "={{ ({ name: 'Mr Nathan', city: 'hanoi' }).urlEncode() }}"), json!("name=Mr+Nathan&city=hanoi"));
    assert_eq!(ok(&mut ev, "={{ ({ a: 1 }).removeField('a') }}"), json!({}));
    let e = err(&mut ev, "={{ ({ a: 'x' }).removeFieldsContaining('') }}");
    assert!(e.contains("removeFieldsContaining(): expected non-empty string arg"), "{e}");
    // user objects keep their own methods of extension names? No: n8n's object
    // extension wins on plain objects, class instances keep theirs
    assert_eq!(ok(&mut ev, "={{ ({ keys: () => 'mine', a: 1 }).keys() }}"), json!(["keys", "a"]));
    assert_eq!(ok(&mut ev, "={{ [...new Map([['k', 1]]).keys()] }}"), json!(["k"]));
}

#[test]
fn dates() {
    let mut ev = evaluator();
    let dt = "DateTime.fromISO('2024-03-30T18:49:00.000Z', { zone: 'UTC' })";
    let e = |ev: &mut Evaluator, s: &str| ok(ev, &format!("={{{{ {} }}}}", s.replace("DT", dt)));
    assert_eq!(e(&mut ev, "DT.plus(7, 'days').toISO()"), json!("2024-04-06T18:49:00.000Z"));
    assert_eq!(e(&mut ev, "DT.minus(4, 'years').toISODate()"), json!("2020-03-30"));
    assert_eq!(e(&mut ev, "DT.plus({ hours: 2 }).hour"), json!(20));
    assert_eq!(e(&mut ev, "DT.format('dd/LL/yyyy')"), json!("30/03/2024"));
    assert_eq!(e(&mut ev, "DT.extract('hour')"), json!(18));
    assert_eq!(e(&mut ev, "DT.extract()"), json!(13));
    assert_eq!(e(&mut ev, "DT.isBetween('2020-06-01', '2025-06-01')"), json!(true));
    assert_eq!(e(&mut ev, "DT.isBetween('nonsense', '2025-06-01')"), json!(null));
    assert_eq!(e(&mut ev, "DT.isWeekend()"), json!(true));
    assert_eq!(e(&mut ev, "DT.isEmpty()"), json!(false));
    assert_eq!(e(&mut ev, "DT.beginningOf('month').toISODate()"), json!("2024-03-01"));
    assert_eq!(e(&mut ev, "DT.endOfMonth().day"), json!(31));
    assert_eq!(e(&mut ev, "DT.diffTo('2024-03-28T18:49:00.000Z', 'days')"), json!(2));
    assert_eq!(e(&mut ev, "DT.diffTo('2024-01-29T18:49:00.000Z', ['months', 'days'])"), json!({"months": 2, "days": 1}));
    let msg = err(&mut ev, &format!("={{{{ {dt}.diffTo('2024-01-01', 'fortnights') }}}}"));
    assert!(msg.contains("Unsupported unit 'fortnights'"), "{msg}");
    assert_eq!(e(&mut ev, "DT.toInt()"), json!(1711824540000i64));
    // JS Dates get the same functions and stay Dates
    assert_eq!(ok(&mut ev, "={{ new Date('2024-03-30T18:49:00.000Z').plus(1, 'day').toISOString() }}"), json!("2024-03-31T18:49:00.000Z"));
    // Luxon as n8n's docs use it
    assert_eq!(ok(&mut ev, "={{ DateTime.fromFormat('23-06-2019', 'dd-MM-yyyy').toISODate() }}"), json!("2019-06-23"));
    assert_eq!(
        ok(&mut ev, "={{ DateTime.fromISO('2019-06-23').diff(DateTime.fromISO('2019-05-23'), 'months').toObject() }}"),
        json!({"months": 1})
    );
    assert_eq!(
        ok(&mut ev, "={{ DateTime.fromISO('2019-06-16').toLocaleString({month: 'long', day: 'numeric', year: 'numeric'}) }}"),
        json!("June 16, 2019")
    );
    assert_eq!(ok(&mut ev, "={{ $today.hour + $today.minute }}"), json!(0));
    assert_eq!(ok(&mut ev, "={{ $now.minus({days: 7}) < $now }}"), json!(true));
}

#[test]
fn if_and_if_empty() {
    let mut ev = evaluator();
    assert_eq!(ok(&mut ev, "={{ $if($json.zero, 'yes', 'no') }}"), json!("no"));
    // a missing third argument is `false`, as n8n's rewrite to `a ? b : false`
    assert_eq!(ok(&mut ev, "={{ $if($json.zero, 'yes') }}"), json!(false));
    assert_eq!(ok(&mut ev, "={{ $if($json.name, 'yes') }}"), json!("yes"));
    // only the chosen branch runs (n8n rewrites $if to a ternary)
    assert_eq!(ok(&mut ev, "={{ $if($json.name, 'ok', $json.missing.deep.path) }}"), json!("ok"));
    assert_eq!(ok(&mut ev, "={{ $if($json.zero, $json.missing.deep, 'else') }}"), json!("else"));
    let e = err(&mut ev, "={{ $if(true) }}");
    assert!(e.contains("$if requires at least 2 parameters"), "{e}");
    assert_eq!(ok(&mut ev, "={{ $ifEmpty($json.empty, 'd') }}"), json!("d"));
    assert_eq!(ok(&mut ev, "={{ $ifEmpty($json.none, 'd') }}"), json!("d"));
    assert_eq!(ok(&mut ev, "={{ $ifEmpty([], 'd') }}"), json!("d"));
    assert_eq!(ok(&mut ev, "={{ $ifEmpty($json.zero, 'd') }}"), json!(0));
    assert_eq!(ok(&mut ev, "={{ $ifEmpty(new Date(), 'd') }}"), json!("d"));
    let e = err(&mut ev, "={{ $ifEmpty(1) }}");
    assert!(e.contains("expected two arguments (value, defaultValue) for this function"), "{e}");
    assert_eq!(ok(&mut ev, "={{ toPathSegment('a/b') }}"), json!("a%2Fb"));
    let e = err(&mut ev, "={{ toPathSegment('..') }}");
    assert!(e.contains("Invalid identifier: \"..\" is not allowed"), "{e}");
    assert_eq!(ok(&mut ev, "={{ zip(['a', 'b'], [1, 2]) }}"), json!({"a": 1, "b": 2}));
    assert_eq!(ok(&mut ev, "={{ average(1, 2, 3) + $max(1, 9) + not(false) }}"), json!(12));
}

#[test]
fn older_data_names() {
    let mut ev = evaluator();
    let mut d = data();
    d.execution = json!({ "id": "e1", "resumeUrl": "https://x/r" });
    let mut e = |s: &str| ev.evaluate(s, &d).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert_eq!(e("={{ $data.name }}"), json!("Nathan"));
    assert_eq!(e("={{ $thisItem.json.name }}"), json!("Nathan"));
    assert_eq!(e("={{ [$position, $thisItemIndex, $thisRunIndex] }}"), json!([0, 0, 0]));
    assert_eq!(e("={{ $executionId + ' ' + $resumeWebhookUrl }}"), json!("e1 https://x/r"));
}

#[test]
fn jmespath_like_n8n() {
    let mut ev = evaluator();
    let d = StaticData::from_json(json!({
        "body": {"items": [{"name": "a", "price": 120, "tags": ["x"]}, {"name": "b", "price": 80, "tags": []}]},
        "z": 1, "a": 2,
    }));
    let mut e = |s: &str| ev.evaluate(s, &d).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert_eq!(e("={{ $jmespath($json.body.items, '[*].name') }}"), json!(["a", "b"]));
    assert_eq!(e("={{ $jmespath($json, 'body.items[?price > `100`].name | [0]') }}"), json!("a"));
    assert_eq!(e("={{ $jmesPath($json.body, 'length(items)') }}"), json!(2));
    assert_eq!(e("={{ $jmespath($json, '{total: sum(body.items[].price), first: body.items[0].name}') }}"), json!({"total": 200, "first": "a"}));
    assert_eq!(e("={{ $jmespath($json, 'missing.path') }}"), json!(null));
    // key order of the data is kept (the JS library works on the objects themselves)
    assert_eq!(e("={{ Object.keys($jmespath({ wrap: $json }, 'wrap')) }}"), json!(["body", "z", "a"]));
    let err = ev.evaluate("={{ $jmespath('x', 'a') }}", &d).unwrap_err().to_string();
    assert!(err.contains("expected two arguments (Object, string) for this function"), "{err}");
    let err = ev.evaluate("={{ $jmespath($json, 'a[') }}", &d).unwrap_err().to_string();
    assert!(err.contains("Expected") || err.contains("Unexpected") || err.contains("Parse"), "{err}");
    // in the Code node too
    let out = ev
        .run_code("return [{ json: { n: $jmespath($input.all().map(i => i.json), '[].body.items[].name') } }]", CodeMode::AllItems, &d)
        .unwrap();
    assert_eq!(out.value, json!([{"json": {"n": ["a", "b"]}}]));
}

#[test]
fn from_ai_reads_the_tool_input() {
    struct Tool(StaticData, Option<Value>);
    impl expression::DataProxy for Tool {
        fn input_items(&self) -> &[expression::Item] {
            self.0.input_items()
        }
        fn item_index(&self) -> i64 {
            self.0.item_index()
        }
        fn run_index(&self) -> usize {
            0
        }
        fn node_output(&self, n: &str, o: usize, r: Option<usize>) -> Option<Vec<expression::Item>> {
            self.0.node_output(n, o, r)
        }
        fn paired_item(&self, n: &str, i: usize) -> Result<expression::Item, String> {
            self.0.paired_item(n, i)
        }
        fn parameters(&self) -> Value {
            json!({})
        }
        fn workflow(&self) -> Value {
            json!({})
        }
        fn execution(&self) -> Value {
            json!({})
        }
        fn vars(&self) -> Value {
            json!({})
        }
        fn from_ai_input(&self) -> Option<Value> {
            self.1.clone()
        }
    }
    let mut ev = evaluator();
    let tool = Tool(StaticData::from_json(json!({})), Some(json!({"email": "a@b.c"})));
    assert_eq!(ev.evaluate("={{ $fromAI('email', 'to whom') }}", &tool).unwrap(), json!("a@b.c"));
    assert_eq!(ev.evaluate("={{ $fromAI('count', '', 'number', 5) }}", &tool).unwrap(), json!(5));
    let none = Tool(StaticData::from_json(json!({})), None);
    let e = ev.evaluate("={{ $fromAI('email') }}", &none).unwrap_err().to_string();
    assert!(e.contains("No execution data available"), "{e}");
    let e = ev.evaluate("={{ $fromAI('bad key!') }}", &tool).unwrap_err().to_string();
    assert!(e.contains("Invalid parameter key"), "{e}");
}
