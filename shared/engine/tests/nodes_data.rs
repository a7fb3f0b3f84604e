//! The data nodes against n8n's behaviour, option by option and version by
//! version: Aggregate, Summarize, Split Out, Sort, Limit, Remove Duplicates
//! (incl. its history across executions), Item Lists, Rename Keys, Compare
//! Datasets, Date & Time, HTML, Crypto, XML, Markdown. Expected values come
//! from n8n's node source and its test workflows (cited where a case is
//! taken from one).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use engine::host::ProcessedDataStore;
use engine::{Engine, EngineSettings, ExecutionState, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

// ---- harness -------------------------------------------------------------

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({ "id": format!("id-{name}"), "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0] })
}

/// Trigger → test data → the node under test (named "N").
fn workflow(ty: &str, version: f64, params: Value, input: Value) -> Value {
    let nodes = vec![
        node("Trigger", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
        node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": input })),
        node("N", ty, version, params),
    ];
    json!({
        "id": "wf-1",
        "nodes": nodes,
        "connections": {
            "Trigger": { "main": [[{ "node": "Data", "type": "main", "index": 0 }]] },
            "Data": { "main": [[{ "node": "N", "type": "main", "index": 0 }]] },
        },
        "settings": { "executionOrder": "v1" },
    })
}

fn execute(wf: &Value, host: Host) -> ExecutionState {
    let graph = Graph::from_json(wf).expect("valid workflow");
    Engine::new(EngineSettings::default(), host).run(&graph, RunOptions::default()).expect("run").0
}

fn output(st: &ExecutionState, node: &str, out: usize) -> Vec<Value> {
    st.run_data.get(node).and_then(|r| r.last()).and_then(|t| t.output(out)).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

/// Runs node "N" on `input` and returns its first output's JSON, or the error message.
fn run(ty: &str, version: f64, params: Value, input: Value) -> Result<Vec<Value>, String> {
    run_with(ty, version, params, input, Host::default())
}

fn run_with(ty: &str, version: f64, params: Value, input: Value, host: Host) -> Result<Vec<Value>, String> {
    let st = execute(&workflow(ty, version, params, input), host);
    if st.status != ExecutionStatus::Success {
        return Err(st.error.map(|e| e.message).unwrap_or_else(|| format!("{:?}", st.status)));
    }
    Ok(output(&st, "N", 0))
}

fn ok(ty: &str, version: f64, params: Value, input: Value) -> Vec<Value> {
    run(ty, version, params, input).unwrap_or_else(|e| panic!("{ty} failed: {e}"))
}

fn err(ty: &str, version: f64, params: Value, input: Value) -> String {
    match run(ty, version, params, input) {
        Ok(out) => panic!("{ty} should fail, gave {out:?}"),
        Err(e) => e,
    }
}

const AGGREGATE: &str = "n8n-nodes-base.aggregate";
const SUMMARIZE: &str = "n8n-nodes-base.summarize";
const SPLIT_OUT: &str = "n8n-nodes-base.splitOut";
const SORT: &str = "n8n-nodes-base.sort";
const LIMIT: &str = "n8n-nodes-base.limit";
const DEDUPE: &str = "n8n-nodes-base.removeDuplicates";
const ITEM_LISTS: &str = "n8n-nodes-base.itemLists";

/// Parcels at three depots (first seen: Leeds, Hull, York).
fn parcels() -> Value {
    json!([
        { "parcel": "P-17", "weight": 2.5, "depot": "Leeds" },
        { "parcel": "P-03", "weight": 0.4, "depot": "Hull" },
        { "parcel": "P-22", "weight": 7, "depot": "Leeds" },
        { "parcel": "P-09", "weight": 1.1, "depot": "York" },
        { "parcel": "P-11", "weight": 3, "depot": "Hull" },
    ])
}

// ---- Aggregate -----------------------------------------------------------

#[test]
fn aggregate_individual_fields_rename_merge_and_keep_missing() {
    let input = json!([{ "a": [1, null], "b": { "c": 1 } }, { "a": [2], "b": { "c": null } }, { "x": 1 }]);
    let params = |opts: Value| {
        json!({ "fieldsToAggregate": { "fieldToAggregate": [
            { "fieldToAggregate": "a" },
            { "fieldToAggregate": "b.c", "renameField": true, "outputFieldName": "cs" },
        ] }, "options": opts })
    };
    assert_eq!(ok(AGGREGATE, 1.0, params(json!({})), input.clone()), [json!({ "a": [[1], [2]], "cs": [1] })]);
    assert_eq!(ok(AGGREGATE, 1.0, params(json!({ "mergeLists": true })), input.clone()), [json!({ "a": [1, 2], "cs": [1] })]);
    assert_eq!(ok(AGGREGATE, 1.0, params(json!({ "keepMissing": true })), input.clone()), [json!({ "a": [[1, null], [2], null], "cs": [1, null, null] })]);
    // Without dot notation `b.c` is a literal key no item has.
    assert_eq!(ok(AGGREGATE, 1.0, params(json!({ "disableDotNotation": true })), input.clone()), [json!({ "a": [[1], [2]], "cs": [] })]);
    // A dotted input field lands under its last segment; a dotted rename nests.
    let nested = json!({ "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "b.c" }, { "fieldToAggregate": "a", "renameField": true, "outputFieldName": "out.list" }] } });
    assert_eq!(ok(AGGREGATE, 1.0, nested, input), [json!({ "c": [1], "out": { "list": [[1], [2]] } })]);
}

#[test]
fn aggregate_refuses_duplicate_outputs_and_missing_fields() {
    let dup = json!({ "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "a" }, { "fieldToAggregate": "b", "renameField": true, "outputFieldName": "a" }] } });
    assert_eq!(err(AGGREGATE, 1.0, dup, json!([{ "a": 1 }])), "The 'a' output field is used more than once");
    assert_eq!(err(AGGREGATE, 1.0, json!({ "fieldsToAggregate": { "fieldToAggregate": [] } }), json!([{ "a": 1 }])), "No fields specified");
}

#[test]
fn aggregate_all_item_data_with_include_and_exclude() {
    let input = json!([{ "a": 1, "b": 2 }, { "b": 3 }, { "c": 4 }]);
    assert_eq!(ok(AGGREGATE, 1.0, json!({ "aggregate": "aggregateAllItemData" }), input.clone()), [json!({ "data": [{ "a": 1, "b": 2 }, { "b": 3 }, { "c": 4 }] })]);
    let specified = json!({ "aggregate": "aggregateAllItemData", "destinationFieldName": "rows", "include": "specifiedFields", "fieldsToInclude": "a, b" });
    // An item left with no field is dropped.
    assert_eq!(ok(AGGREGATE, 1.0, specified, input.clone()), [json!({ "rows": [{ "a": 1, "b": 2 }, { "b": 3 }] })]);
    let except = json!({ "aggregate": "aggregateAllItemData", "include": "allFieldsExcept", "fieldsToExclude": "b" });
    assert_eq!(ok(AGGREGATE, 1.0, except, input), [json!({ "data": [{ "a": 1 }, { "c": 4 }] })]);
}

/// Group By in each aggregation mode: one item per group value, in the
/// order the values are first seen, the group field first.
#[test]
fn aggregate_group_by_fields_in_every_mode() {
    let group = |mut params: Value| {
        params["options"] = json!({ "groupByFields": "depot" });
        ok(AGGREGATE, 1.0, params, parcels())
    };
    assert_eq!(
        group(json!({ "aggregate": "aggregateAllItemData" })),
        [
            json!({ "depot": "Leeds", "data": [{ "parcel": "P-17", "weight": 2.5, "depot": "Leeds" }, { "parcel": "P-22", "weight": 7, "depot": "Leeds" }] }),
            json!({ "depot": "Hull", "data": [{ "parcel": "P-03", "weight": 0.4, "depot": "Hull" }, { "parcel": "P-11", "weight": 3, "depot": "Hull" }] }),
            json!({ "depot": "York", "data": [{ "parcel": "P-09", "weight": 1.1, "depot": "York" }] }),
        ]
    );
    let fields = json!({ "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "parcel" }, { "fieldToAggregate": "weight", "renameField": true, "outputFieldName": "weights" }] } });
    assert_eq!(
        group(fields),
        [
            json!({ "depot": "Leeds", "parcel": ["P-17", "P-22"], "weights": [2.5, 7] }),
            json!({ "depot": "Hull", "parcel": ["P-03", "P-11"], "weights": [0.4, 3] }),
            json!({ "depot": "York", "parcel": ["P-09"], "weights": [1.1] }),
        ]
    );
    let selected = json!({ "aggregate": "aggregateAllItemData", "destinationFieldName": "parcels", "include": "specifiedFields", "fieldsToInclude": "parcel, weight" });
    assert_eq!(
        group(selected),
        [
            json!({ "depot": "Leeds", "parcels": [{ "parcel": "P-17", "weight": 2.5 }, { "parcel": "P-22", "weight": 7 }] }),
            json!({ "depot": "Hull", "parcels": [{ "parcel": "P-03", "weight": 0.4 }, { "parcel": "P-11", "weight": 3 }] }),
            json!({ "depot": "York", "parcels": [{ "parcel": "P-09", "weight": 1.1 }] }),
        ]
    );
    let except = json!({ "aggregate": "aggregateAllItemData", "destinationFieldName": "items", "include": "allFieldsExcept", "fieldsToExclude": "depot" });
    assert_eq!(
        group(except),
        [
            json!({ "depot": "Leeds", "items": [{ "parcel": "P-17", "weight": 2.5 }, { "parcel": "P-22", "weight": 7 }] }),
            json!({ "depot": "Hull", "items": [{ "parcel": "P-03", "weight": 0.4 }, { "parcel": "P-11", "weight": 3 }] }),
            json!({ "depot": "York", "items": [{ "parcel": "P-09", "weight": 1.1 }] }),
        ]
    );
}

#[test]
fn aggregate_group_by_conflicts_and_non_scalars() {
    let conflict = json!({ "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "parcel", "renameField": true, "outputFieldName": "depot" }] }, "options": { "groupByFields": "depot" } });
    assert_eq!(err(AGGREGATE, 1.0, conflict, parcels()), "The output field 'depot' conflicts with a Group By field 'depot'");
    let dest = json!({ "aggregate": "aggregateAllItemData", "destinationFieldName": "depot", "options": { "groupByFields": "depot" } });
    assert_eq!(err(AGGREGATE, 1.0, dest, parcels()), "The destination field 'depot' conflicts with a Group By field 'depot'");
    let object = json!({ "aggregate": "aggregateAllItemData", "options": { "groupByFields": "user" } });
    assert_eq!(err(AGGREGATE, 1.0, object, json!([{ "user": { "name": "J" } }])), "Field \"user\" has a non-scalar value which cannot be used for grouping.");
}

// ---- Summarize -----------------------------------------------------------

fn summarize(values: Value, split: &str, options: Value) -> Value {
    json!({ "fieldsToSummarize": { "values": values }, "fieldsToSplitBy": split, "options": options })
}

/// Counting leaves out `undefined`, `null` and `""` unless `includeEmpty`
/// (then every item counts, and each kind of empty is one unique value);
/// `0` is a value.
#[test]
fn summarize_counts_with_and_without_empty_values() {
    let notes = json!([{ "note": "late" }, { "note": "" }, { "note": null }, { "note": "late" }, {}, { "note": null }, { "note": "on time" }, { "note": "" }]);
    let one = |agg: &str, include_empty: bool| ok(SUMMARIZE, 1.1, summarize(json!([{ "aggregation": agg, "field": "note", "includeEmpty": include_empty }]), "", json!({})), notes.clone());
    assert_eq!(one("count", false), [json!({ "count_note": 3 })]);
    assert_eq!(one("countUnique", false), [json!({ "unique_count_note": 2 })]);
    assert_eq!(one("count", true), [json!({ "count_note": 8 })]);
    // late, "", null, undefined, on time
    assert_eq!(one("countUnique", true), [json!({ "unique_count_note": 5 })]);

    // Two fields of one item set, each counted on its own.
    let loads = json!([{ "site": "A", "load": 10 }, { "site": "B", "load": null }, { "site": "A", "load": 0 }, { "site": "", "load": 30 }, { "site": "C" }, { "site": "", "load": "" }, { "site": "D", "load": 40 }]);
    let two = |site: &str, include_empty: bool| {
        let values = json!([{ "aggregation": site, "field": "site", "includeEmpty": include_empty }, { "aggregation": "count", "field": "load", "includeEmpty": include_empty }]);
        ok(SUMMARIZE, 1.1, summarize(values, "", json!({})), loads.clone())
    };
    assert_eq!(two("count", false), [json!({ "count_site": 5, "count_load": 4 })]);
    assert_eq!(two("countUnique", false), [json!({ "unique_count_site": 4, "count_load": 4 })]);
    assert_eq!(two("count", true), [json!({ "count_site": 7, "count_load": 7 })]);
    assert_eq!(two("countUnique", true), [json!({ "unique_count_site": 5, "count_load": 7 })]);

    // Item Lists' older summarize always leaves empty values out of counts.
    let legacy = ok(ITEM_LISTS, 3.0, json!({ "operation": "summarize", "fieldsToSummarize": { "values": [{ "field": "note", "includeEmpty": true }] } }), notes);
    assert_eq!(legacy, [json!({ "count_note": 3 })]);
}

/// Deliveries by zone and van; the first has a literal dotted key beside the nested one.
fn deliveries() -> Value {
    json!([
        { "zone": "east", "van": "V1", "driver": "kim", "stops": 4, "meta.shift": "early", "meta": { "shift": "early" } },
        { "zone": "west", "van": "V2", "driver": "lee", "stops": 9, "meta": { "shift": "late" } },
        { "zone": "east", "van": "V2", "driver": "kim", "stops": 2 },
        { "zone": "north", "van": "V1", "driver": "ray", "stops": 6, "meta": { "shift": "night" } },
        { "zone": "west", "van": "V2", "driver": "sam", "stops": 1 },
        { "zone": "east", "van": "V1", "driver": "ada", "stops": 5 },
        { "zone": "east", "van": "V1", "driver": "kim", "stops": 3 },
    ])
}

/// Split by two fields: groups nest (by zone in first-seen order, then by
/// van within the zone), as Summarize 1 and Item Lists 1 both do; the single
/// item output nests the summaries under the values.
#[test]
fn summarize_splits_by_several_fields_and_repeats_aggregations() {
    let text = json!([
        { "aggregation": "append", "field": "driver" },
        { "field": "driver" },
        { "aggregation": "countUnique", "field": "driver" },
        { "aggregation": "concatenate", "field": "driver", "separateBy": ", " },
    ]);
    let groups = [
        json!({ "zone": "east", "van": "V1", "appended_driver": ["kim", "ada", "kim"], "count_driver": 3, "unique_count_driver": 2, "concatenated_driver": "kim, ada, kim" }),
        json!({ "zone": "east", "van": "V2", "appended_driver": ["kim"], "count_driver": 1, "unique_count_driver": 1, "concatenated_driver": "kim" }),
        json!({ "zone": "west", "van": "V2", "appended_driver": ["lee", "sam"], "count_driver": 2, "unique_count_driver": 2, "concatenated_driver": "lee, sam" }),
        json!({ "zone": "north", "van": "V1", "appended_driver": ["ray"], "count_driver": 1, "unique_count_driver": 1, "concatenated_driver": "ray" }),
    ];
    let single = json!({
        "east": {
            "V1": { "appended_driver": ["kim", "ada", "kim"], "count_driver": 3, "unique_count_driver": 2, "concatenated_driver": "kim, ada, kim" },
            "V2": { "appended_driver": ["kim"], "count_driver": 1, "unique_count_driver": 1, "concatenated_driver": "kim" },
        },
        "west": { "V2": { "appended_driver": ["lee", "sam"], "count_driver": 2, "unique_count_driver": 2, "concatenated_driver": "lee, sam" } },
        "north": { "V1": { "appended_driver": ["ray"], "count_driver": 1, "unique_count_driver": 1, "concatenated_driver": "ray" } },
    });
    let numbers = json!([
        { "aggregation": "average", "field": "stops" },
        { "aggregation": "max", "field": "stops" },
        { "aggregation": "min", "field": "stops" },
        { "aggregation": "max", "field": "stops" },
        { "aggregation": "sum", "field": "stops" },
        { "aggregation": "append", "field": "stops" },
    ]);
    let by_zone = [
        json!({ "zone": "east", "average_stops": 3.5, "max_stops": 5, "min_stops": 2, "sum_stops": 14, "appended_stops": [4, 2, 5, 3] }),
        json!({ "zone": "west", "average_stops": 5, "max_stops": 9, "min_stops": 1, "sum_stops": 10, "appended_stops": [9, 1] }),
        json!({ "zone": "north", "average_stops": 6, "max_stops": 6, "min_stops": 6, "sum_stops": 6, "appended_stops": [6] }),
    ];
    for ty in [SUMMARIZE, ITEM_LISTS] {
        let params = |mut p: Value| {
            if ty == ITEM_LISTS {
                p["operation"] = json!("summarize");
            }
            p
        };
        assert_eq!(ok(ty, 1.0, params(summarize(text.clone(), "zone, van", json!({}))), deliveries()), groups, "{ty}");
        assert_eq!(ok(ty, 1.0, params(summarize(text.clone(), "zone, van", json!({ "outputFormat": "singleItem" }))), deliveries()), [single.clone()], "{ty}");
        // The same aggregation twice gives one field.
        assert_eq!(ok(ty, 1.0, params(summarize(numbers.clone(), "zone", json!({}))), deliveries()), by_zone, "{ty}");
    }
    // A third of 10 keeps JavaScript's double.
    let thirds = ok(SUMMARIZE, 1.0, summarize(json!([{ "aggregation": "average", "field": "n" }]), "", json!({})), json!([{ "n": 1 }, { "n": 4 }, { "n": 5 }]));
    assert_eq!(thirds, [json!({ "average_n": 3.3333333333333335 })]);
}

/// 1.1: a dotted field is a path unless dot notation is disabled, then the
/// literal key; the output name is the field's with `.` as `_` either way.
#[test]
fn summarize_dotted_fields_with_and_without_dot_notation() {
    let values = json!([{ "aggregation": "append", "field": "meta.shift" }]);
    assert_eq!(ok(SUMMARIZE, 1.1, summarize(values.clone(), "", json!({})), deliveries()), [json!({ "appended_meta_shift": ["early", "late", "night"] })]);
    assert_eq!(ok(SUMMARIZE, 1.1, summarize(values, "", json!({ "disableDotNotation": true })), deliveries()), [json!({ "appended_meta_shift": ["early"] })]);
}

#[test]
fn summarize_numeric_and_combining_aggregations() {
    let input = json!([{ "n": 1, "s": "b" }, { "n": "2", "s": "a" }, { "n": 3.5, "s": "" }, { "s": { "x": 1 } }]);
    let values = json!([
        { "aggregation": "sum", "field": "n" },
        { "aggregation": "average", "field": "n" },
        { "aggregation": "min", "field": "n" },
        { "aggregation": "max", "field": "s" },
        { "aggregation": "append", "field": "n" },
        { "aggregation": "concatenate", "field": "s", "separateBy": "other", "customSeparator": "|" },
        { "aggregation": "concatenate", "field": "n", "separateBy": ", ", "includeEmpty": true },
    ]);
    assert_eq!(
        ok(SUMMARIZE, 1.1, summarize(values, "", json!({})), input),
        [json!({
            "sum_n": 4.5,
            "average_n": 2.25,
            "min_n": 1,
            "max_s": "b",
            "appended_n": [1, "2", 3.5],
            "concatenated_s": "b|a|{\"x\":1}",
            "concatenated_n": "1, 2, 3.5, undefined",
        })]
    );
}

#[test]
fn summarize_groups_in_first_seen_order_with_typed_or_string_keys() {
    let input = json!([{ "k": 2, "v": 1 }, { "k": "2", "v": 2 }, { "k": 1, "v": 3 }, { "k": 2, "v": 4 }, { "v": 5 }]);
    let values = json!([{ "aggregation": "sum", "field": "v" }]);
    // 1.1: 2 and "2" are different groups, keys keep their types, first-seen order.
    assert_eq!(
        ok(SUMMARIZE, 1.1, summarize(values.clone(), "k", json!({})), input.clone()),
        [json!({ "k": 2, "sum_v": 5 }), json!({ "k": "2", "sum_v": 2 }), json!({ "k": 1, "sum_v": 3 }), json!({ "sum_v": 5 })]
    );
    // 1: keys become strings (so 2 and "2" merge), still first-seen order.
    assert_eq!(
        ok(SUMMARIZE, 1.0, summarize(values.clone(), "k", json!({})), input.clone()),
        [json!({ "k": "2", "sum_v": 7 }), json!({ "k": "1", "sum_v": 3 }), json!({ "k": "undefined", "sum_v": 5 })]
    );
    // Item Lists: a plain object, so integer-like keys come first, ascending.
    assert_eq!(
        ok(ITEM_LISTS, 3.0, json!({ "operation": "summarize", "fieldsToSummarize": { "values": values.clone() }, "fieldsToSplitBy": "k" }), input.clone()),
        [json!({ "k": "1", "sum_v": 3 }), json!({ "k": "2", "sum_v": 7 }), json!({ "k": "undefined", "sum_v": 5 })]
    );
    // Ignoring items without a group value.
    assert_eq!(ok(SUMMARIZE, 1.1, summarize(values, "k", json!({ "skipEmptySplitFields": true })), input).len(), 3);
}

#[test]
fn summarize_single_item_output_and_dotted_names() {
    let input = json!([{ "a": { "b": "x" }, "c d": 1 }, { "a": { "b": "y" }, "c d": 2 }, { "a": { "b": "x" }, "c d": 3 }]);
    let values = json!([{ "aggregation": "sum", "field": "c d" }]);
    assert_eq!(ok(SUMMARIZE, 1.1, summarize(values.clone(), "a.b", json!({ "outputFormat": "singleItem" })), input.clone()), [json!({ "x": { "sum_c_d": 4 }, "y": { "sum_c_d": 2 } })]);
    assert_eq!(ok(SUMMARIZE, 1.1, summarize(values, "a.b", json!({})), input), [json!({ "a_b": "x", "sum_c_d": 4 }), json!({ "a_b": "y", "sum_c_d": 2 })]);
}

#[test]
fn summarize_missing_field_is_an_error_only_in_version_1() {
    let values = json!([{ "aggregation": "count", "field": "nope" }]);
    assert_eq!(err(SUMMARIZE, 1.0, summarize(values.clone(), "", json!({})), json!([{ "a": 1 }])), "The field 'nope' does not exist in any items");
    assert_eq!(ok(SUMMARIZE, 1.0, summarize(values.clone(), "", json!({ "continueIfFieldNotFound": true })), json!([{ "a": 1 }])), [json!({ "count_nope": 0 })]);
    assert_eq!(ok(SUMMARIZE, 1.1, summarize(values, "", json!({})), json!([{ "a": 1 }])), [json!({ "count_nope": 0 })]);
    assert_eq!(
        err(SUMMARIZE, 1.1, summarize(json!([{ "aggregation": "count", "field": "" }]), "", json!({})), json!([{ "a": 1 }])),
        "You need to add at least one aggregation to 'Fields to Summarize' with non empty 'Field'"
    );
}

// ---- Split Out -----------------------------------------------------------

fn split_input() -> Value {
    json!([{ "data": [{ "id": 1, "char": "a" }, { "id": 2, "char": "b" }], "list": ["x", "y"], "obj": { "p": 1, "q": 2 }, "tag": "t" }])
}

/// The fields to include may come as a list; with other fields an object
/// entry stays under the field's name (alone, its keys become the item's); a
/// destination renames the split field; with all other fields a dotted
/// destination is a path in the new entry, which replaces the item's field of
/// that name (`{...item, ...entry}`), and the split field itself is left out.
#[test]
fn split_out_listed_fields_and_destination_names() {
    let input = json!([{ "rows": [{ "n": 1 }, { "n": 2 }], "meta": { "src": "a" }, "owner": "ops" }]);
    let listed = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "rows", "include": "selectedOtherFields", "fieldsToInclude": ["owner"], "options": {} }), input.clone());
    assert_eq!(listed, [json!({ "owner": "ops", "rows": { "n": 1 } }), json!({ "owner": "ops", "rows": { "n": 2 } })]);
    let renamed = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "rows", "options": { "destinationFieldName": "row" } }), input.clone());
    assert_eq!(renamed, [json!({ "row": { "n": 1 } }), json!({ "row": { "n": 2 } })]);
    let nested = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "rows", "include": "allOtherFields", "options": { "destinationFieldName": "meta.row" } }), input);
    assert_eq!(nested[1], json!({ "meta": { "row": { "n": 2 } }, "owner": "ops" }));
}

#[test]
fn split_out_include_modes_and_destinations() {
    assert_eq!(ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "data" }), split_input()), [json!({ "id": 1, "char": "a" }), json!({ "id": 2, "char": "b" })]);
    assert_eq!(ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "obj" }), split_input()), [json!({ "obj": 1 }), json!({ "obj": 2 })]);
    let selected = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "list", "include": "selectedOtherFields", "fieldsToInclude": "tag, missing" }), split_input());
    assert_eq!(selected, [json!({ "list": "x", "tag": "t" }), json!({ "list": "y", "tag": "t" })]);
    let all = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "list", "include": "allOtherFields", "options": { "destinationFieldName": "item" } }), split_input());
    assert_eq!(all[1], json!({ "data": [{ "id": 1, "char": "a" }, { "id": 2, "char": "b" }], "obj": { "p": 1, "q": 2 }, "tag": "t", "item": "y" }));
    // n8n's SplitOut/test/workflow.destinationFieldDotNotation.json (commit 5a5f17e1d71b): a dotted destination is a path.
    let dotted = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "data", "include": "allOtherFields", "options": { "destinationFieldName": "data.foo" } }), split_input());
    assert_eq!(dotted[0]["data"], json!({ "foo": { "id": 1, "char": "a" } }));
    // Several fields side by side, with as many destinations.
    let multi = ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "list, $json.obj", "options": { "destinationFieldName": "l, o" } }), split_input());
    assert_eq!(multi, [json!({ "l": "x", "o": 1 }), json!({ "l": "y", "o": 2 })]);
    assert_eq!(
        err(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "list, obj", "options": { "destinationFieldName": "l" } }), split_input()),
        "If multiple fields to split out are given, the same number of destination fields must be given"
    );
    // A destination through __proto__ is dropped (n8n's prototype-pollution workflow): the field keeps its name.
    assert_eq!(
        ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "list", "options": { "destinationFieldName": "__proto__.polluted" } }), split_input()),
        [json!({ "list": "x" }), json!({ "list": "y" })]
    );
    // A missing field gives nothing; a scalar one item.
    assert_eq!(ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "nope" }), split_input()), Vec::<Value>::new());
    assert_eq!(ok(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "tag" }), split_input()), [json!({ "tag": "t" })]);
    assert_eq!(
        err(SPLIT_OUT, 1.0, json!({ "fieldToSplitOut": "list", "include": "selectedOtherFields", "fieldsToInclude": "" }), split_input()),
        "No fields specified"
    );
}

// ---- Sort and Limit ------------------------------------------------------

fn letters() -> Value {
    json!([{ "id": 3, "char": "c" }, { "id": 1, "char": "B" }, { "id": 2, "char": "a" }, { "id": 1, "char": "A" }])
}

#[test]
fn sort_by_fields_code_and_random() {
    let by = |fields: Value, opts: Value| ok(SORT, 1.0, json!({ "sortFieldsUi": { "sortField": fields }, "options": opts }), letters());
    let ids = |v: Vec<Value>| v.iter().map(|x| format!("{}{}", x["id"], x["char"].as_str().unwrap_or(""))).collect::<Vec<_>>().join(" ");
    // Strings compare lower-cased; equal keys keep their order (stable).
    assert_eq!(ids(by(json!([{ "fieldName": "char" }]), json!({}))), "2a 1A 1B 3c");
    assert_eq!(ids(by(json!([{ "fieldName": "id", "order": "descending" }, { "fieldName": "char" }]), json!({}))), "3c 2a 1A 1B");
    assert_eq!(
        err(SORT, 1.0, json!({ "sortFieldsUi": { "sortField": [{ "fieldName": "nope" }] } }), letters()),
        "Couldn't find the field 'nope' in the input data"
    );
    assert_eq!(err(SORT, 1.0, json!({ "sortFieldsUi": {} }), letters()), "No sorting specified. Please add a field to sort by");
    let code = json!({ "type": "code", "code": "return a.json.id - b.json.id || (a.json.char < b.json.char ? -1 : 1);" });
    assert_eq!(ids(ok(SORT, 1.0, code, letters())), "1A 1B 2a 3c");
    assert_eq!(err(SORT, 1.0, json!({ "type": "code", "code": "a.json.id - b.json.id" }), letters()), "Sort code doesn't return. Please add a 'return' statement to your code");
    let mut random = ok(SORT, 1.0, json!({ "type": "random" }), letters());
    random.sort_by_key(|v| (v["id"].as_i64(), v["char"].as_str().map(str::to_string)));
    assert_eq!(ids(random), "1A 1B 2a 3c");
}

/// Numbers sort by value whether written as integers or floats (`2` and
/// `2.0` are equal keys, kept in input order), past the size where the
/// merge sort takes over, also when some keys are not numbers.
#[test]
fn sort_numbers_by_value_and_stably() {
    let input: Vec<Value> = (0..90)
        .map(|i| {
            let x = (i * 37 % 23) as i64 - 11;
            let v = if i % 3 == 0 { json!(x as f64) } else if i % 3 == 1 { json!(x) } else { json!(x as f64 + 0.5) };
            json!({ "i": i, "v": v })
        })
        .collect();
    let key = |v: &Value| v["v"].as_f64().unwrap_or(f64::NAN);
    let mut expected = input.clone();
    expected.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let got = ok(SORT, 1.0, json!({ "sortFieldsUi": { "sortField": [{ "fieldName": "v" }] } }), Value::Array(input.clone()));
    assert_eq!(got, expected);
    let mut desc = input.clone();
    desc.sort_by(|a, b| key(b).total_cmp(&key(a)));
    let got = ok(SORT, 1.0, json!({ "sortFieldsUi": { "sortField": [{ "fieldName": "v", "order": "descending" }] } }), Value::Array(input));
    assert_eq!(got, desc);
    // a key that is not a number (a numeric string, a missing field) compares as lodash does
    let mixed = json!([{ "v": 3 }, { "v": "2" }, { "w": 0 }, { "v": 1.0 }, { "v": null }]);
    let got = ok(SORT, 1.0, json!({ "sortFieldsUi": { "sortField": [{ "fieldName": "v" }] } }), mixed);
    let order: Vec<String> = got.iter().map(|x| x.get("v").map_or("-".to_string(), |v| v.to_string())).collect();
    assert_eq!(order, ["null", "1.0", "\"2\"", "3", "-"]);
}

#[test]
fn limit_keeps_first_or_last() {
    assert_eq!(ok(LIMIT, 1.0, json!({}), letters()), [json!({ "id": 3, "char": "c" })]);
    assert_eq!(ok(LIMIT, 1.0, json!({ "maxItems": 2, "keep": "lastItems" }), letters()), [json!({ "id": 2, "char": "a" }), json!({ "id": 1, "char": "A" })]);
    assert_eq!(ok(LIMIT, 1.0, json!({ "maxItems": 10 }), letters()).len(), 4);
}

// ---- Remove Duplicates -----------------------------------------------------

fn people() -> Value {
    json!([
        { "id": 1, "name": "a", "tags": { "x": 1 } },
        { "id": 2, "name": "b", "tags": { "x": 1 } },
        { "id": 1, "name": "a", "tags": { "x": 1 } },
        { "id": 3, "name": "a", "tags": { "x": 2 } },
    ])
}

#[test]
fn remove_duplicates_compare_modes() {
    let names = |v: Vec<Value>| v.iter().map(|x| x["id"].to_string()).collect::<Vec<_>>().join(",");
    for version in [1.0, 1.1, 2.0] {
        assert_eq!(names(ok(DEDUPE, version, json!({}), people())), "1,2,3", "v{version}");
        assert_eq!(names(ok(DEDUPE, version, json!({ "compare": "selectedFields", "fieldsToCompare": "name" }), people())), "1,2");
        assert_eq!(names(ok(DEDUPE, version, json!({ "compare": "selectedFields", "fieldsToCompare": "tags.x" }), people())), "1,3");
        assert_eq!(names(ok(DEDUPE, version, json!({ "compare": "allFieldsExcept", "fieldsToExclude": "id, tags.x" }), people())), "1,2");
    }
    let other = ok(DEDUPE, 1.1, json!({ "compare": "selectedFields", "fieldsToCompare": "name, tags.x", "options": { "removeOtherFields": true } }), people());
    assert_eq!(other, [json!({ "name": "a", "tags": { "x": 1 } }), json!({ "name": "b", "tags": { "x": 1 } }), json!({ "name": "a", "tags": { "x": 2 } })]);
    let literal = ok(DEDUPE, 1.1, json!({ "compare": "selectedFields", "fieldsToCompare": "name", "options": { "disableDotNotation": true } }), people());
    assert_eq!(literal.len(), 2);
}

#[test]
fn remove_duplicates_field_checks_per_version() {
    let mixed = json!([{ "v": 1 }, { "v": "1" }]);
    assert_eq!(err(DEDUPE, 1.0, json!({ "compare": "selectedFields", "fieldsToCompare": "v" }), mixed.clone()), "'v' isn't always the same type");
    assert_eq!(err(DEDUPE, 1.0, json!({ "compare": "selectedFields", "fieldsToCompare": "w" }), mixed.clone()), "'w' field is missing from some input items");
    assert_eq!(err(DEDUPE, 1.0, json!({ "compare": "selectedFields", "fieldsToCompare": "" }), mixed.clone()), "No fields specified. Please add a field to compare on");
    // 1.1 lets null through the type check; 1 does not.
    let nulls = json!([{ "v": 1 }, { "v": null }, { "v": 1 }]);
    assert_eq!(ok(DEDUPE, 1.1, json!({ "compare": "selectedFields", "fieldsToCompare": "v" }), nulls.clone()).len(), 2);
    assert_eq!(err(DEDUPE, 1.0, json!({ "compare": "selectedFields", "fieldsToCompare": "v" }), nulls), "'v' isn't always the same type");
    // Item Lists 3.1 orders mixed types instead of refusing them.
    assert_eq!(ok(ITEM_LISTS, 3.1, json!({ "operation": "removeDuplicates", "compare": "selectedFields", "fieldsToCompare": "v" }), mixed).len(), 2);
}

/// A processed-data store in memory, with the same conditional-write contract
/// as the DynamoDB one (`shared/executions` tests that one against moto).
#[derive(Default)]
struct MemoryStore(Mutex<BTreeMap<(String, String), (Value, u64)>>);

impl ProcessedDataStore for MemoryStore {
    fn load(&self, w: &str, c: &str) -> Result<Option<(Value, u64)>, String> {
        Ok(self.0.lock().map_err(|e| e.to_string())?.get(&(w.into(), c.into())).cloned())
    }
    fn save(&self, w: &str, c: &str, v: &Value, expected: Option<u64>) -> Result<bool, String> {
        let mut m = self.0.lock().map_err(|e| e.to_string())?;
        let key = (w.to_string(), c.to_string());
        if m.get(&key).map(|e| e.1) != expected {
            return Ok(false);
        }
        m.insert(key, (v.clone(), expected.unwrap_or(0) + 1));
        Ok(true)
    }
    fn delete(&self, w: &str, c: &str) -> Result<(), String> {
        self.0.lock().map_err(|e| e.to_string())?.remove(&(w.into(), c.into()));
        Ok(())
    }
}

#[test]
fn remove_duplicates_across_executions() {
    let store = Arc::new(MemoryStore::default());
    let host = || Host { processed_data: Some(store.clone()), ..Default::default() };
    let seen = |input: Value, opts: Value| {
        run_with(DEDUPE, 2.0, json!({ "operation": "removeItemsSeenInPreviousExecutions", "dedupeValue": "={{ $json.id }}", "options": opts }), input, host())
    };
    let ids = |v: Vec<Value>| v.iter().map(|x| x["id"].to_string()).collect::<Vec<_>>().join(",");
    assert_eq!(ids(seen(json!([{ "id": 1 }, { "id": 2 }]), json!({})).expect("first")), "1,2");
    assert_eq!(ids(seen(json!([{ "id": 2 }, { "id": 3 }, { "id": 3 }]), json!({})).expect("second")), "3,3");
    // Workflow scope is a different record.
    assert_eq!(ids(seen(json!([{ "id": 1 }]), json!({ "scope": "workflow" })).expect("workflow scope")), "1");
    assert_eq!(
        seen(json!([{ "id": 9 }, { "id": 8 }]), json!({ "historySize": 4 })).expect_err("history full"),
        "The number of items to be processed exceeds the maximum history size. Please increase the history size or reduce the number of items to be processed."
    );
    // Clearing forgets.
    run_with(DEDUPE, 2.0, json!({ "operation": "clearDeduplicationHistory", "mode": "cleanDatabase" }), json!([{}]), host()).expect("clear");
    assert_eq!(ids(seen(json!([{ "id": 1 }]), json!({})).expect("after clear")), "1");

    // Incremental keys: only values above the highest seen (after a clean:
    // a record keeps the logic it was written with).
    let clear = || run_with(DEDUPE, 2.0, json!({ "operation": "clearDeduplicationHistory", "mode": "cleanDatabase" }), json!([{}]), host()).expect("clear");
    clear();
    let incremental = |input: Value| {
        run_with(DEDUPE, 2.0, json!({ "operation": "removeItemsSeenInPreviousExecutions", "logic": "removeItemsUpToStoredIncrementalKey", "incrementalDedupeValue": "={{ $json.id }}" }), input, host())
    };
    assert_eq!(ids(incremental(json!([{ "id": 5 }, { "id": 3 }])).expect("first")), "3,5");
    assert_eq!(ids(incremental(json!([{ "id": 4 }, { "id": 7 }, { "id": 6 }])).expect("second")), "6,7");
    assert_eq!(incremental(json!([{ "id": "x" }])).expect_err("not a number"), "The value 'x' is not a number. Please provide a number.");
    // The same record under another logic is refused until cleaned.
    let refused = run_with(DEDUPE, 2.0, json!({ "operation": "removeItemsSeenInPreviousExecutions", "dedupeValue": "={{ $json.id }}" }), json!([{ "id": 1 }]), host());
    assert!(refused.expect_err("mode clash").starts_with("Deduplication data was originally saved with an incompatible setting"));
    clear();
    let dates = run_with(
        DEDUPE,
        2.0,
        json!({ "operation": "removeItemsSeenInPreviousExecutions", "logic": "removeItemsUpToStoredDate", "dateDedupeValue": "={{ $json.d }}" }),
        json!([{ "d": "2024-01-02" }]),
        host(),
    );
    assert!(dates.is_ok(), "{dates:?}");
    let later = run_with(
        DEDUPE,
        2.0,
        json!({ "operation": "removeItemsSeenInPreviousExecutions", "logic": "removeItemsUpToStoredDate", "dateDedupeValue": "={{ $json.d }}" }),
        json!([{ "d": "2024-01-01" }, { "d": "2024-01-03T10:00:00Z" }]),
        host(),
    );
    assert_eq!(later.expect("dates").iter().map(|v| v["d"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>(), ["2024-01-03T10:00:00Z"]);
    // Without a store the node says so.
    let none = run(DEDUPE, 2.0, json!({ "operation": "removeItemsSeenInPreviousExecutions", "dedupeValue": "={{ $json.id }}" }), json!([{ "id": 1 }]));
    assert!(none.expect_err("no store").contains("deduplication store"));
}

// ---- Item Lists ----------------------------------------------------------

#[test]
fn item_lists_split_out_per_version() {
    let input = json!([{ "data": { "e1": { "id": 1 }, "e2": { "id": 2 } }, "list": ["a", "b"], "tag": "bar", "none": null }]);
    // 1 wants an array.
    assert_eq!(err(ITEM_LISTS, 1.0, json!({ "fieldToSplitOut": "data" }), input.clone()), "The provided field 'data' is not an array");
    assert_eq!(ok(ITEM_LISTS, 2.0, json!({ "fieldToSplitOut": "data" }), input.clone()), [json!({ "id": 1 }), json!({ "id": 2 })]);
    // Before 2.1 a missing field is an error, from 2.1 nothing.
    assert_eq!(err(ITEM_LISTS, 2.0, json!({ "fieldToSplitOut": "nope" }), input.clone()), "Couldn't find the field 'nope' in the input data");
    assert_eq!(ok(ITEM_LISTS, 2.1, json!({ "fieldToSplitOut": "nope" }), input.clone()), Vec::<Value>::new());
    let selected = json!({ "fieldToSplitOut": "list", "include": "selectedOtherFields", "fieldsToInclude": { "fields": [{ "fieldName": "tag" }] } });
    assert_eq!(ok(ITEM_LISTS, 2.0, selected.clone(), input.clone()), [json!({ "tag": "bar", "list": "a" }), json!({ "tag": "bar", "list": "b" })]);
    // n8n's ItemLists/test/node/workflow.update_2_2.json (commit 0a0bb4e3ada7): 2.2 splits several fields at once.
    let multi = json!({ "fieldToSplitOut": "list, tag", "include": "selectedOtherFields", "fieldsToInclude": { "fields": [{ "fieldName": "none" }] }, "options": { "destinationFieldName": "fromArray, singleField" } });
    assert_eq!(ok(ITEM_LISTS, 2.2, multi, input.clone()), [json!({ "fromArray": "a", "singleField": "bar", "none": null }), json!({ "fromArray": "b", "none": null })]);
    let v3 = json!({ "fieldToSplitOut": "list", "include": "selectedOtherFields", "fieldsToInclude": "tag" });
    assert_eq!(ok(ITEM_LISTS, 3.0, v3, input), [json!({ "list": "a", "tag": "bar" }), json!({ "list": "b", "tag": "bar" })]);
}

#[test]
fn item_lists_aggregate_per_version() {
    let input = json!([{ "a": 1, "b": 2 }, { "a": 3 }]);
    let fields = json!({ "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "b" }] } });
    let mut v2 = fields.clone();
    v2["operation"] = json!("aggregateItems");
    assert_eq!(ok(ITEM_LISTS, 2.0, v2.clone(), input.clone()), [json!({ "b": [2] })]);
    v2["fieldsToAggregate"]["fieldToAggregate"][0]["fieldToAggregate"] = json!("zz");
    assert_eq!(err(ITEM_LISTS, 2.0, v2.clone(), input.clone()), "Couldn't find the field 'zz' in the input data");
    assert_eq!(ok(ITEM_LISTS, 2.1, v2, input.clone()), [json!({ "zz": [] })]);
    let all = json!({ "operation": "aggregateItems", "aggregate": "aggregateAllItemData", "include": "allFieldsExcept", "fieldsToExclude": { "fields": [{ "fieldName": "b" }] } });
    assert_eq!(ok(ITEM_LISTS, 1.0, all, input.clone()), [json!({ "data": [{ "a": 1 }, { "a": 3 }] })]);
    let mut v3 = fields;
    v3["operation"] = json!("concatenateItems");
    assert_eq!(ok(ITEM_LISTS, 3.0, v3, input.clone()), [json!({ "b": [2] })]);
    assert_eq!(err(ITEM_LISTS, 3.0, json!({ "operation": "aggregateItems" }), input), "Operation 'aggregateItems' is not recognized");
}

/// Runs node "N" after a Code node that emits `items` (JSON with binaries) and returns
/// N's first output as `(json, binary)` pairs.
fn with_binaries(ty: &str, version: f64, params: Value, items: Value) -> Vec<(Value, Value)> {
    let code = format!("return {items};");
    let wf = json!({
        "id": "wf-1",
        "nodes": [
            node("Trigger", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
            node("Make", "n8n-nodes-base.code", 2.0, json!({ "jsCode": code })),
            node("N", ty, version, params),
        ],
        "connections": {
            "Trigger": { "main": [[{ "node": "Make", "type": "main", "index": 0 }]] },
            "Make": { "main": [[{ "node": "N", "type": "main", "index": 0 }]] },
        },
        "settings": { "executionOrder": "v1" },
    });
    let st = execute(&wf, Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let out = st.run_data.get("N").and_then(|r| r.last()).and_then(|t| t.output(0)).map(|i| i.to_vec()).unwrap_or_default();
    out.iter().map(|i| (Value::clone(&i.json), i.binary.as_deref().cloned().unwrap_or(Value::Null))).collect()
}

#[test]
fn item_lists_3_aggregate_with_binaries() {
    // n8n's ItemLists/V3/actions/itemList/concatenateItems.operation.ts (commit 8d732a59d50e):
    // `includeBinaries` adds the binaries of the items the output pairs with (addBinariesToItem:
    // a repeated key gets `_1`, `_2`…); `keepOnlyUnique` keeps one per mime type, file type,
    // size and extension
    let text = |name: &str, body: &str| {
        json!({ "data": B64.encode(body), "mimeType": "text/plain", "fileType": "text", "fileName": name, "fileExtension": "txt", "fileSize": format!("{} B", body.len()) })
    };
    let png = json!({ "data": "iVBO", "mimeType": "image/png", "fileType": "image", "fileName": "p.png", "fileExtension": "png", "fileSize": "3 B" });
    let input = json!([
        { "json": { "n": "a", "keep": 1 }, "binary": { "file": text("a.txt", "same") } },
        { "json": { "n": "b", "keep": 2 }, "binary": { "file": text("b.txt", "also"), "other": png } },
        { "json": { "n": "c" }, "binary": { "file": text("c.txt", "different") } },
    ]);
    let fields = json!({ "operation": "concatenateItems", "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "n" }] } });
    let names = |bin: &Value| -> Vec<(String, Value)> { bin.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v["fileName"].clone())).collect() };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, Value)> { list.iter().map(|(k, f)| (k.to_string(), json!(f))).collect() };

    // without the option: no binaries
    let out = with_binaries(ITEM_LISTS, 3.0, fields.clone(), input.clone());
    assert_eq!(out, [(json!({ "n": ["a", "b", "c"] }), Value::Null)]);
    // every binary, repeated keys suffixed
    let mut with = fields.clone();
    with["options"] = json!({ "includeBinaries": true });
    let out = with_binaries(ITEM_LISTS, 3.1, with.clone(), input.clone());
    assert_eq!(out[0].0, json!({ "n": ["a", "b", "c"] }));
    assert_eq!(names(&out[0].1), pairs(&[("file", "a.txt"), ("file_1", "b.txt"), ("other", "p.png"), ("file_2", "c.txt")]));
    assert_eq!(out[0].1["file"], text("a.txt", "same"), "binaries are copied whole");
    // unique: b.txt has a.txt's type, size and extension
    with["options"]["keepOnlyUnique"] = json!(true);
    let out = with_binaries(ITEM_LISTS, 3.0, with, input.clone());
    assert_eq!(names(&out[0].1), pairs(&[("file", "a.txt"), ("other", "p.png"), ("file_1", "c.txt")]));
    // all item data: only the items kept in the list give their binaries (c has no `keep`)
    let all = json!({ "operation": "concatenateItems", "aggregate": "aggregateAllItemData", "include": "specifiedFields", "fieldsToInclude": "keep", "options": { "includeBinaries": true } });
    let out = with_binaries(ITEM_LISTS, 3.1, all, input.clone());
    assert_eq!(out[0].0, json!({ "data": [{ "keep": 1 }, { "keep": 2 }] }));
    assert_eq!(names(&out[0].1), pairs(&[("file", "a.txt"), ("file_1", "b.txt"), ("other", "p.png")]));
    // the Aggregate node shares the code, ungrouped and grouped (each group its members')
    let all = json!({ "aggregate": "aggregateAllItemData", "include": "specifiedFields", "fieldsToInclude": "keep", "options": { "includeBinaries": true } });
    assert_eq!(names(&with_binaries(AGGREGATE, 1.0, all, input.clone())[0].1), pairs(&[("file", "a.txt"), ("file_1", "b.txt"), ("other", "p.png")]));
    let grouped = json!({ "fieldsToAggregate": { "fieldToAggregate": [{ "fieldToAggregate": "n" }] }, "options": { "groupByFields": "keep", "includeBinaries": true } });
    let out = with_binaries(AGGREGATE, 1.0, grouped, input);
    assert_eq!(out.iter().map(|(_, b)| names(b)).collect::<Vec<_>>(), [pairs(&[("file", "a.txt")]), pairs(&[("file", "b.txt"), ("other", "p.png")]), pairs(&[("file", "c.txt")])]);
}

#[test]
fn item_lists_sort_limit_and_dedupe() {
    assert_eq!(ok(ITEM_LISTS, 1.0, json!({ "operation": "limit", "maxItems": 2 }), letters()).len(), 2);
    let sorted = ok(ITEM_LISTS, 2.0, json!({ "operation": "sort", "sortFieldsUi": { "sortField": [{ "fieldName": "id", "order": "descending" }] } }), letters());
    assert_eq!(sorted[0]["id"], 3);
    let dedupe = json!({ "operation": "removeDuplicates", "compare": "selectedFields", "fieldsToCompare": { "fields": [{ "fieldName": "name" }] } });
    assert_eq!(ok(ITEM_LISTS, 2.0, dedupe, people()).len(), 2);
}

// ---- Crypto --------------------------------------------------------------

const CRYPTO: &str = "n8n-nodes-base.crypto";

struct Creds(Value);
impl engine::host::CredentialsProvider for Creds {
    fn get(&self, _kind: &str, _reference: &Value) -> Result<Value, String> {
        Ok(self.0.clone())
    }
}

fn with_creds(creds: Value) -> Host {
    Host { credentials: Some(Arc::new(Creds(creds))), ..Default::default() }
}

/// Node "N" with `onError: continueRegularOutput`.
fn run_continuing(ty: &str, version: f64, params: Value, input: Value, host: Host) -> Vec<Value> {
    let mut wf = workflow(ty, version, params, input);
    wf["nodes"][2]["onError"] = json!("continueRegularOutput");
    let st = execute(&wf, host);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    output(&st, "N", 0)
}

#[test]
fn crypto_hash_defaults_per_version_and_literal_property_names() {
    let input = json!([{ "keep": 1 }]);
    // Version 1 hashes with MD5 by default, version 2 with SHA256 (n8n's CryptoTest.workflow.json: md5("test")).
    assert_eq!(ok(CRYPTO, 1.0, json!({ "value": "test" }), input.clone()), [json!({ "keep": 1, "data": "098f6bcd4621d373cade4e832627b4f6" })]);
    let v2 = ok(CRYPTO, 2.0, json!({ "value": "test", "dataPropertyName": "a.b" }), input.clone());
    // lodash `set(item, ['json', name])`: the dotted name is one key.
    assert_eq!(v2, [json!({ "keep": 1, "a.b": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" })]);
    let b64 = ok(CRYPTO, 2.0, json!({ "value": "test", "type": "SHA3-256", "encoding": "base64" }), input.clone());
    assert_eq!(b64[0]["data"], "NvAoWAuwLMgnKpoCD0IA40bidq5mTkXugHRVdOL1q4A=");
    assert_eq!(err(CRYPTO, 1.0, json!({ "value": "test", "type": "WHIRLPOOL" }), input), "Digest method not supported");
}

#[test]
fn crypto_hmac_secret_from_parameter_in_1_and_credential_in_2() {
    let text = "The quick brown fox jumps over the lazy dog";
    let v1 = ok(CRYPTO, 1.0, json!({ "action": "hmac", "type": "SHA256", "value": text, "secret": "key" }), json!([{}]));
    assert_eq!(v1[0]["data"], "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
    let params = json!({ "action": "hmac", "type": "MD5", "value": text });
    let v2 = run_with(CRYPTO, 2.0, params.clone(), json!([{}]), with_creds(json!({ "hmacSecret": "key" }))).expect("hmac");
    assert_eq!(v2[0]["data"], "80070713463e7749b90c2dc24911e275");
    let missing = run_with(CRYPTO, 2.0, params, json!([{}]), with_creds(json!({}))).expect_err("no secret");
    assert_eq!(missing, "No HMAC secret set in credentials. Please add an HMAC secret to your Crypto credentials.");
}

#[test]
fn crypto_signs_with_rsa_and_the_signature_verifies() {
    use base64::Engine as _;
    use rsa::pkcs8::DecodePublicKey;
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
    let private = std::fs::read_to_string(format!("{dir}jwt-test-key.pem")).expect("key");
    let public = rsa::RsaPublicKey::from_public_key_pem(&std::fs::read_to_string(format!("{dir}jwt-test-key.pub")).expect("pub")).expect("pub key");
    // A key pasted on one line (spaces for line breaks), as formatPrivateKey repairs.
    let one_line = private.trim().replace('\n', " ");
    let params = json!({ "action": "sign", "value": "hello", "algorithm": "RSA-SHA256", "encoding": "base64" });
    let out = run_with(CRYPTO, 2.0, params, json!([{}]), with_creds(json!({ "signPrivateKey": one_line }))).expect("sign");
    let sig = base64::engine::general_purpose::STANDARD.decode(out[0]["data"].as_str().expect("signature")).expect("base64");
    let hashed = <sha2::Sha256 as sha2::Digest>::digest(b"hello");
    public.verify(rsa::Pkcs1v15Sign::new::<sha2::Sha256>(), &hashed, &sig).expect("signature verifies");
    // Version 1 takes the key from the parameter; SHA3 digests sign too.
    let v1 = ok(CRYPTO, 1.0, json!({ "action": "sign", "value": "hello", "algorithm": "sha3-512", "privateKey": private }), json!([{}]));
    assert_eq!(v1[0]["data"].as_str().map(str::len), Some(512));
}

#[test]
fn crypto_generates_random_values_and_keeps_binaries_it_did_not_read() {
    let out = ok(CRYPTO, 1.0, json!({ "action": "generate", "encodingType": "hex", "stringLength": 10, "dataPropertyName": "r" }), json!([{}, {}]));
    let values: Vec<&str> = out.iter().filter_map(|o| o["r"].as_str()).collect();
    assert!(values.iter().all(|v| v.len() == 10 && v.chars().all(|c| c.is_ascii_hexdigit())), "{values:?}");
    assert_ne!(values[0], values[1]);
    let uuid = ok(CRYPTO, 2.0, json!({ "action": "generate" }), json!([{}]));
    assert!(uuid::Uuid::parse_str(uuid[0]["data"].as_str().unwrap_or("")).is_ok_and(|u| u.get_version_num() == 4));
}

#[test]
fn crypto_failed_items_per_version() {
    // Node's crypto refuses non-string data; version 1 reports the message, version 2 an error object.
    let params = json!({ "value": "={{ $json.n }}" });
    let input = json!([{ "n": 12 }, { "n": "x" }]);
    let v1 = run_continuing(CRYPTO, 1.0, params.clone(), input.clone(), Host::default());
    let message = "The \"data\" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received type number (12)";
    assert_eq!(v1[0], json!({ "error": message }));
    assert_eq!(v1[1]["data"], "9dd4e461268c8034f5c8564e155c67a6");
    let v2 = run_continuing(CRYPTO, 2.0, params, input, Host::default());
    assert_eq!(v2[0], json!({ "error": { "message": message, "name": "TypeError", "code": "ERR_INVALID_ARG_TYPE" } }));
}

// ---- Markdown -------------------------------------------------------------

const MARKDOWN: &str = "n8n-nodes-base.markdown";

/// A small page of ours, written as a single line the way a web page often
/// arrives: head (title, metadata, a style sheet), then a heading, text and a link.
const CLUB_PAGE: &str = "<!doctype html> <html> <head> <title>Riverside Chess Club</title> <meta charset=\"utf-8\" /> <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" /> <style type=\"text/css\"> body { margin: 0; font-family: Georgia, serif; } h1 { color: #224; } @media (max-width: 600px) { body { margin: 1em; } } </style> </head> <body> <div> <h1>Riverside Chess Club</h1> <p>We meet every Tuesday evening in the library annex; beginners and visitors are always welcome.</p> <p><a href=\"https://chess.example.org/join\">Join us...</a></p> </div> </body> </html>";
const CLUB_TEXT: &str = "We meet every Tuesday evening in the library annex; beginners and visitors are always welcome.";

fn to_markdown(html: &str, options: Value) -> String {
    let out = ok(MARKDOWN, 1.0, json!({ "html": "={{ $json.data }}", "options": options }), json!([{ "data": html }]));
    out[0]["data"].as_str().unwrap_or_default().to_string()
}

fn to_html(md: &str, options: Value) -> String {
    let out = ok(MARKDOWN, 1.0, json!({ "mode": "markdownToHtml", "markdown": "={{ $json.data }}", "options": options }), json!([{ "data": md }]));
    out[0]["data"].as_str().unwrap_or_default().to_string()
}

/// A whole page to Markdown (head dropped; block elements cannot be ignored,
/// as the library sets block translators after ignored ones; text
/// replacement after conversion) and back to HTML (showdown's header ids and
/// ellipsis, and its complete document).
#[test]
fn markdown_round_trip_of_a_whole_page() {
    let expected = format!(" \n\n# Riverside Chess Club\n\n{CLUB_TEXT}\n\n[Join us...](https://chess.example.org/join)");
    assert_eq!(to_markdown(CLUB_PAGE, json!({})), expected);
    assert_eq!(to_markdown(CLUB_PAGE, json!({ "ignore": "h1" })), expected);
    let replaced = to_markdown(CLUB_PAGE, json!({ "textReplace": { "values": [{ "pattern": "Riverside Chess Club", "replacement": "RCC" }] } }));
    assert_eq!(replaced, expected.replace("# Riverside Chess Club", "# RCC"));
    let body = format!("<h1 id=\"riversidechessclub\">Riverside Chess Club</h1>\n<p>{CLUB_TEXT}</p>\n<p><a href=\"https://chess.example.org/join\">Join us…</a></p>");
    assert_eq!(to_html(&expected, json!({})), body);
    let doc = to_html(&expected, json!({ "completeHTMLDocument": true }));
    assert_eq!(doc, format!("<!DOCTYPE HTML>\n<html>\n<head>\n<meta charset=\"utf-8\">\n</head>\n<body>\n{body}\n</body>\n</html>"));
}

#[test]
fn markdown_from_html_elements_and_options() {
    let html = "<p>Some <b>bold</b>, <i>it</i>, <code>x`y</code> and <del>gone</del> * _</p><ul><li>one</li><li>two<ol><li>a</li><li>b</li></ol></li></ul><blockquote><p>quoted</p></blockquote><pre><code class=\"language-rust\">fn main() {}\n</code></pre><hr><img src=\"a.png\" alt=\"A\"><img src=\"data:image/gif;base64,xx\">";
    let md = to_markdown(html, json!({}));
    assert_eq!(
        md,
        "Some **bold**, _it_, `` x`y `` and ~~gone~~ \\* \\_\n\n* one\n* two  \n   1. a  \n   2. b\n\n> quoted\n\n```rust\nfn main() {}\n```\n\n---\n\n![A](a.png)"
    );
    let custom = to_markdown("<ul><li><strong>x</strong> <em>y</em></li></ul>", json!({ "bulletMarker": "-", "strongDelimiter": "__", "emDelimiter": "*" }));
    assert_eq!(custom, "- __x__*y*");
    // n8n's "Fence" value is not the library's "fenced": the block is indented.
    assert_eq!(to_markdown("<pre><code>a\nb</code></pre>", json!({ "codeBlockStyle": "fence" })), "    a\n    b");
    let links = to_markdown("<p><a href=\"https://x.test/a_(b)\">x</a> <a href=\"https://y.test\">https://y.test</a></p>", json!({ "useLinkReferenceDefinitions": true }));
    assert_eq!(links, "[x][1]<https://y.test>\n\n\n[1]: https://x.test/a%5F%28b%29");
    let table = to_markdown("<table><caption>T</caption><tr><th>Name</th><th>Qty</th></tr><tr><td>apple</td><td>10</td></tr></table>", json!({}));
    assert_eq!(table, "__T__\n| Name  | Qty |\n| ----- | --- |\n| apple | 10  |");
}

#[test]
fn markdown_to_html_options() {
    assert_eq!(to_html("#Title\n\nSame\n\n# Same\n\n# Same", json!({})), "<h1 id=\"title\">Title</h1>\n<p>Same</p>\n<h1 id=\"same\">Same</h1>\n<h1 id=\"same-1\">Same</h1>");
    assert_eq!(to_html("# A b", json!({ "noHeaderId": true, "headerLevelStart": 2 })), "<h2>A b</h2>");
    assert_eq!(to_html("# A b", json!({ "prefixHeaderId": "sec", "ghCompatibleHeaderId": true })), "<h1 id=\"seca-b\">A b</h1>");
    assert_eq!(to_html("```js\nlet a;\n```", json!({})), "<pre><code class=\"js language-js\">let a;\n</code></pre>");
    assert_eq!(to_html("a\nb", json!({ "simpleLineBreaks": true })), "<p>a<br />\nb</p>");
    assert_eq!(to_html("[x](https://x.test)", json!({ "openLinksInNewWindow": true })), "<p><a href=\"https://x.test\" rel=\"noopener noreferrer\" target=\"_blank\">x</a></p>");
    assert_eq!(to_html("see https://x.test.", json!({ "simplifiedAutoLink": true, "excludeTrailingPunctuationFromURLs": true })), "<p>see <a href=\"https://x.test\">https://x.test</a>.</p>");
    assert_eq!(to_html("~~no~~", json!({})), "<p>~~no~~</p>");
    assert_eq!(to_html("~~yes~~", json!({ "strikethrough": true })), "<p><del>yes</del></p>");
    assert_eq!(to_html("|a|b|\n|-|-|\n|1|2|", json!({})), "<p>|a|b|\n|-|-|\n|1|2|</p>");
    assert!(to_html("|a|b|\n|-|-|\n|1|2|", json!({ "tables": true })).starts_with("<table>"));
}

// ---- Compare Datasets -------------------------------------------------------

const COMPARE: &str = "n8n-nodes-base.compareDatasets";

/// Input A and input B into node "N"; its four outputs.
fn compare(version: f64, params: Value, a: Value, b: Value) -> [Vec<Value>; 4] {
    let st = execute(&compare_workflow(version, params, a, b), Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    [0, 1, 2, 3].map(|o| output(&st, "N", o))
}

/// Trigger → A (input A) and B (input B) → Compare Datasets "N".
fn compare_workflow(version: f64, params: Value, a: Value, b: Value) -> Value {
    let nodes = vec![
        node("Trigger", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
        node("A", "n8n-nodes-testing.testData", 1.0, json!({ "data": a })),
        node("B", "n8n-nodes-testing.testData", 1.0, json!({ "data": b })),
        node("N", COMPARE, version, params),
    ];
    json!({
        "id": "wf-1",
        "nodes": nodes,
        "connections": {
            "Trigger": { "main": [[{ "node": "A", "type": "main", "index": 0 }, { "node": "B", "type": "main", "index": 0 }]] },
            "A": { "main": [[{ "node": "N", "type": "main", "index": 0 }]] },
            "B": { "main": [[{ "node": "N", "type": "main", "index": 1 }]] },
        },
        "settings": { "executionOrder": "v1" },
    })
}

#[test]
fn compare_datasets_routes_and_resolves_differences_per_version() {
    let a = json!([{ "id": 1, "v": "x" }, { "id": 2, "v": "y", "n": 3 }, { "id": 3, "v": "z" }]);
    let b = json!([{ "id": 2, "v": "Y", "n": "3" }, { "id": 3, "v": "z" }, { "id": 4, "v": "w" }]);
    let by_id = json!({ "mergeByFields": { "values": [{ "field1": "id", "field2": "id" }] } });
    let [only_a, same, different, only_b] = compare(2.3, by_id.clone(), a.clone(), b.clone());
    assert_eq!(only_a, [json!({ "id": 1, "v": "x" })]);
    assert_eq!(same, [json!({ "id": 3, "v": "z" })]);
    assert_eq!(only_b, [json!({ "id": 4, "v": "w" })]);
    // From 2.1 both versions are kept by default, under inputA / inputB.
    assert_eq!(different, [json!({ "keys": { "id": 2 }, "same": { "id": 2 }, "different": { "v": { "inputA": "y", "inputB": "Y" }, "n": { "inputA": 3, "inputB": "3" } } })]);
    // Version 1: input B wins by default.
    let [_, _, v1, _] = compare(1.0, by_id.clone(), a.clone(), b.clone());
    assert_eq!(v1, [json!({ "id": 2, "v": "Y", "n": "3" })]);
    // Fuzzy compare treats 3 and "3" as the same; a mix takes input A except for the named fields.
    let mut mix = by_id.clone();
    mix["resolve"] = json!("mix");
    mix["preferWhenMix"] = json!("input1");
    mix["exceptWhenMix"] = json!("v");
    mix["fuzzyCompare"] = json!(true);
    let [_, _, mixed, _] = compare(2.3, mix, a.clone(), b.clone());
    assert_eq!(mixed, [json!({ "id": 2, "v": "Y", "n": 3 })]);
    // Skipped fields do not make items different.
    let mut skip = by_id;
    skip["options"] = json!({ "skipFields": "v, n" });
    let [_, same, different, _] = compare(2.3, skip, a, b);
    assert_eq!(same.len(), 2);
    assert!(different.is_empty());
}

// ---- Rename Keys ----------------------------------------------------------

const RENAME: &str = "n8n-nodes-base.renameKeys";

#[test]
fn rename_keys_paths_and_regex() {
    let input = json!([{ "a": { "b": 1 }, "c": 2, "user_name": "x", "nested": { "user_id": 3 } }]);
    let keys = json!({ "keys": { "key": [{ "currentKey": "a.b", "newKey": "moved.deep" }, { "currentKey": "c", "newKey": "d" }] } });
    assert_eq!(ok(RENAME, 1.0, keys, input.clone()), [json!({ "a": {}, "user_name": "x", "nested": { "user_id": 3 }, "moved": { "deep": 1 }, "d": 2 })]);
    let regex = |depth: i64| json!({ "additionalOptions": { "regexReplacement": { "replacements": [{ "searchRegex": "^user_(\\w+)", "replaceRegex": "$1", "options": { "depth": depth } }] } } });
    assert_eq!(ok(RENAME, 1.0, regex(-1), input.clone())[0], json!({ "a": { "b": 1 }, "c": 2, "name": "x", "nested": { "id": 3 } }));
    assert_eq!(ok(RENAME, 1.0, regex(0), input.clone())[0]["nested"], json!({ "user_id": 3 }));
    // n8n refuses patterns that can backtrack catastrophically (the node's InvalidRegex test workflow).
    let risky = json!({ "additionalOptions": { "regexReplacement": { "replacements": [{ "searchRegex": "(a+)+b", "replaceRegex": "x" }] } } });
    assert!(err(RENAME, 1.0, risky, input).contains("may cause performance issues"));
}


/// A current key written as a fixed expression (`=name`) is the name; a
/// pair without a new key leaves the item alone; a dotted rename moves the
/// value and leaves its emptied parent; a regex replacement renames keys at
/// every depth by default (depth −1), and renames inside a key.
#[test]
fn rename_keys_fixed_expressions_missing_targets_and_top_level_regex() {
    assert_eq!(ok(RENAME, 1.0, json!({ "keys": { "key": [{ "currentKey": "=qty", "newKey": "count" }] } }), json!([{ "qty": 0 }])), [json!({ "count": 0 })]);
    let order = json!([{ "order": { "total": 12.5 }, "ref": "R-1" }]);
    let moved = json!({ "keys": { "key": [{ "currentKey": "=order.total", "newKey": "sum.gross" }] } });
    assert_eq!(ok(RENAME, 1.0, moved, order.clone()), [json!({ "order": {}, "ref": "R-1", "sum": { "gross": 12.5 } })]);
    let no_target = json!({ "keys": { "key": [{ "currentKey": "=order.total" }] } });
    assert_eq!(ok(RENAME, 1.0, no_target, order), [json!({ "order": { "total": 12.5 }, "ref": "R-1" })]);
    let regex = json!({ "additionalOptions": { "regexReplacement": { "replacements": [{ "searchRegex": "ord", "replaceRegex": "purchase", "options": {} }] } } });
    let nested = json!([{ "wrapper": { "order_id": 7 }, "order_id": 7 }]);
    assert_eq!(ok(RENAME, 1.0, regex, nested), [json!({ "wrapper": { "purchaseer_id": 7 }, "purchaseer_id": 7 })]);
}

/// Match fields no item has: 2.2 takes that (with input B empty every A
/// item is "In A only"); before 2.2 it is n8n's error, and a node that
/// continues on fail passes input A on through its first output.
#[test]
fn compare_datasets_unknown_match_field_with_an_empty_input() {
    let a = json!([{ "sku": "k1" }, { "sku": "k2" }, { "sku": "k3" }]);
    let params = json!({ "mergeByFields": { "values": [{ "field1": "code", "field2": "code" }] }, "options": {} });
    let a_items = a.as_array().cloned().unwrap_or_default();
    let [only_a, same, different, only_b] = compare(2.2, params.clone(), a.clone(), json!([]));
    assert_eq!(only_a, a_items);
    assert!(same.is_empty() && different.is_empty() && only_b.is_empty());
    let mut wf = compare_workflow(2.1, params.clone(), a.clone(), json!([]));
    let st = execute(&wf, Host::default());
    assert_eq!(st.error.map(|e| e.message).as_deref(), Some("Field 'code' is not present in any of items in 'Input A'"));
    wf["nodes"][3]["continueOnFail"] = json!(true);
    let st = execute(&wf, Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st, "N", 0), a_items);
    // With both inputs filled, 2.2 does not ask for the field to exist: an
    // item without it matches nothing.
    let [only_a, same, _, only_b] = compare(2.2, params, a.clone(), json!([{ "sku": "k9" }]));
    assert_eq!((only_a.len(), same.len(), only_b), (3, 0, vec![json!({ "sku": "k9" })]));
}

// ---- Date & Time ----------------------------------------------------------

const DATE_TIME: &str = "n8n-nodes-base.dateTime";

/// Node "N" in a workflow whose timezone is America/New_York.
fn in_new_york(version: f64, params: Value, input: Value) -> Value {
    let mut wf = workflow(DATE_TIME, version, params, input);
    wf["settings"]["timezone"] = json!("America/New_York");
    let st = execute(&wf, Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    output(&st, "N", 0).into_iter().next().unwrap_or(Value::Null)
}

#[test]
fn date_time_2_luxon_operations_in_the_workflow_timezone() {
    let input = json!([{ "d": "2024-01-31T10:20:30.000Z", "s": "05/03/2024", "ts": 1709600000 }]);
    let run = |p: Value| in_new_york(2.0, p, input.clone());
    // Calendar arithmetic (31 January + 1 month is 29 February), results in the workflow's zone.
    assert_eq!(run(json!({ "operation": "addToDate", "magnitude": "={{ $json.d }}", "timeUnit": "months", "duration": 1 })), json!({ "newDate": "2024-02-29T05:20:30.000-05:00" }));
    // Formatting keeps the input's offset unless told to use the workflow's timezone.
    let format = json!({ "operation": "formatDate", "date": "={{ $json.d }}", "format": "custom", "customFormat": "yyyy-MM-dd HH:mm ZZ" });
    assert_eq!(run(format.clone()), json!({ "formattedDate": "2024-01-31 10:20 +00:00" }));
    let mut in_zone = format;
    in_zone["options"] = json!({ "timezone": true });
    assert_eq!(run(in_zone), json!({ "formattedDate": "2024-01-31 05:20 -05:00" }));
    assert_eq!(run(json!({ "operation": "formatDate", "date": "={{ $json.s }}", "format": "yyyy-MM-dd", "options": { "fromFormat": "dd/MM/yyyy" } })), json!({ "formattedDate": "2024-03-05" }));
    assert_eq!(run(json!({ "operation": "formatDate", "date": "={{ $json.ts }}", "format": "X" })), json!({ "formattedDate": "1709600000" }));
    assert_eq!(run(json!({ "operation": "roundDate", "date": "={{ $json.d }}", "mode": "roundDown", "toNearest": "week" })), json!({ "roundedDate": "2024-01-29T00:00:00.000-05:00" }));
    assert_eq!(run(json!({ "operation": "extractDate", "date": "={{ $json.d }}", "part": "week" })), json!({ "datePart": 5 }));
    let between = run(json!({ "operation": "getTimeBetweenDates", "startDate": "2024-01-01", "endDate": "={{ $json.d }}", "units": ["month", "day", "hour"] }));
    assert_eq!(between["timeDifference"]["days"], 30);
    assert!((between["timeDifference"]["hours"].as_f64().unwrap_or(0.0) - 5.3417).abs() < 0.001, "{between}");
    // includeInputFields keeps the item.
    let kept = run(json!({ "operation": "extractDate", "date": "={{ $json.d }}", "part": "year", "options": { "includeInputFields": true } }));
    assert_eq!(kept["datePart"], 2024);
    assert_eq!(kept["s"], "05/03/2024");
}

/// Format Date reads a number as epoch milliseconds when it is that large,
/// else as seconds (fractions kept); without `includeInputFields` the item
/// is only the output field.
#[test]
fn date_time_2_formats_epoch_numbers_with_and_without_the_input_fields() {
    let stamps = json!([{ "ms": 1700000000123u64, "secondsWithFraction": 1700000000.123, "seconds": 1700000000, "label": "x" }]);
    for field in ["ms", "secondsWithFraction", "seconds"] {
        let params = |options: Value| json!({ "operation": "formatDate", "date": format!("={{{{ $json.{field} }}}}"), "format": "yyyy/MM/dd", "outputFieldName": "day", "options": options });
        assert_eq!(in_new_york(2.0, params(json!({})), stamps.clone()), json!({ "day": "2023/11/14" }), "{field}");
        let mut kept = stamps[0].clone();
        kept["day"] = json!("2023/11/14");
        assert_eq!(in_new_york(2.0, params(json!({ "includeInputFields": true })), stamps.clone()), kept, "{field}");
    }
}

#[test]
fn date_time_1_moment_format_and_calculate() {
    let input = json!([{ "d": "2024-01-31T10:20:30.000Z", "s": "05/03/2024" }]);
    let run = |p: Value| in_new_york(1.0, p, input.clone());
    assert_eq!(run(json!({ "value": "={{ $json.d }}", "toFormat": "DD.MM.YYYY HH:mm", "options": { "toTimezone": "Europe/Berlin" } }))["data"], "31.01.2024 11:20");
    assert_eq!(run(json!({ "value": "={{ $json.s }}", "toFormat": "YYYY-MM-DD", "options": { "fromFormat": "DD/MM/YYYY" } }))["data"], "2024-03-05");
    let calc = run(json!({ "action": "calculate", "value": "={{ $json.d }}", "operation": "subtract", "duration": 2, "timeUnit": "weeks", "dataPropertyName": "earlier" }));
    assert_eq!(calc["earlier"], "2024-01-17T10:20:30.000Z");
    assert_eq!(calc["d"], "2024-01-31T10:20:30.000Z", "version 1 keeps the input fields");
}

/// Date & Time 1 in a workflow zoned America/Bahia, with the server process
/// in `host` (n8n's `TZ`).
fn date_time_1_on_host(host: &str, params: Value) -> Value {
    let mut wf = workflow(DATE_TIME, 1.0, params, json!([{}]));
    wf["settings"]["timezone"] = json!("America/Bahia");
    let settings = EngineSettings { host_timezone: host.into(), ..Default::default() };
    let st = Engine::new(settings, Host::default()).run(&Graph::from_json(&wf).expect("workflow"), RunOptions::default()).expect("run").0;
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    output(&st, "N", 0).into_iter().next().unwrap_or(Value::Null)["data"].clone()
}

#[test]
fn date_time_1_reads_and_formats_zoneless_dates_in_the_process_zone() {
    let calc = |host: &str, unit: &str, op: &str, n: u32| {
        date_time_1_on_host(host, json!({ "action": "calculate", "value": "08/01/2022", "operation": op, "duration": n, "timeUnit": unit }))
    };
    // `new Date("08/01/2022")` is local midnight of the process, not of the workflow's zone.
    assert_eq!(calc("UTC", "days", "add", 10), "2022-08-11T00:00:00.000Z");
    assert_eq!(calc("Europe/Berlin", "days", "add", 10), "2022-08-10T22:00:00.000Z");
    // Calendar units keep the process's wall clock across a DST change (CEST → CET).
    assert_eq!(calc("Europe/Berlin", "quarters", "add", 2), "2023-01-31T23:00:00.000Z");
    assert_eq!(calc("Asia/Tokyo", "months", "subtract", 2), "2022-05-31T15:00:00.000Z");
    // A date-only ISO string is UTC for JavaScript's Date, whatever the process zone.
    let iso = date_time_1_on_host("Europe/Berlin", json!({ "action": "calculate", "value": "2022-08-01", "duration": 1 }));
    assert_eq!(iso, "2022-08-02T00:00:00.000Z");
    // A format from a strict `fromFormat` also reads in the process zone.
    let by_format = date_time_1_on_host("Asia/Tokyo", json!({ "action": "calculate", "value": "01.08.2022 09:30", "duration": 0, "options": { "fromFormat": "DD.MM.YYYY HH:mm" } }));
    assert_eq!(by_format, "2022-08-01T00:30:00.000Z");

    // Formatting without zones shows the process's local time.
    let format = |host: &str, value: &str, options: Value| date_time_1_on_host(host, json!({ "value": value, "toFormat": "YYYY-MM-DD HH:mm", "options": options }));
    assert_eq!(format("UTC", "1663801200000", json!({})), "2022-09-21 23:00");
    assert_eq!(format("Europe/Berlin", "1663801200000", json!({})), "2022-09-22 01:00");
    assert_eq!(format("Europe/Berlin", "2022-09-21T23:00:00Z", json!({})), "2022-09-22 01:00");
    // With a zone option, moment.tz reads the text as UTC ("… UTC" appended) and shows the target zone.
    assert_eq!(format("Europe/Berlin", "08/01/2022", json!({ "fromTimezone": "US/Hawaii" })), "2022-07-31 21:00");
    assert_eq!(format("Asia/Tokyo", "08/01/2022", json!({ "fromTimezone": "US/Hawaii", "toTimezone": "US/Pacific" })), "2022-07-31 17:00");
}

// ---- XML ------------------------------------------------------------------

const XML: &str = "n8n-nodes-base.xml";

#[test]
fn xml_builds_and_parses_like_xml2js() {
    let doc = json!([{ "a": { "$": { "id": "1" }, "b": ["x", "y"], "_": "t" } }]);
    let built = ok(XML, 1.0, json!({ "mode": "jsonToxml" }), doc.clone());
    assert_eq!(built[0]["data"], "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<a id=\"1\">\n  <b>x</b>\n  <b>y</b>\n  t\n</a>");
    let headless = ok(XML, 1.0, json!({ "mode": "jsonToxml", "options": { "headless": true, "rootName": "r" } }), json!([{ "k": 1, "m": 2 }]));
    assert_eq!(headless[0]["data"], "<r>\n  <k>1</k>\n  <m>2</m>\n</r>");

    let xml = json!([{ "data": "<Root a=\"1\"><B> x </B><B>y</B><c k=\"v\">t</c></Root>" }]);
    assert_eq!(ok(XML, 1.0, json!({}), xml.clone()), [json!({ "Root": { "a": "1", "B": [" x ", "y"], "c": { "k": "v", "_": "t" } } })]);
    let arrays = ok(XML, 1.0, json!({ "options": { "explicitArray": true, "mergeAttrs": false } }), xml.clone());
    assert_eq!(arrays, [json!({ "Root": { "$": { "a": "1" }, "B": [" x ", "y"], "c": [{ "$": { "k": "v" }, "_": "t" }] } })]);
    let flat = ok(XML, 1.0, json!({ "options": { "explicitRoot": false, "normalizeTags": true, "trim": true } }), xml);
    assert_eq!(flat, [json!({ "a": "1", "b": ["x", "y"], "c": { "k": "v", "_": "t" } })]);
    // Malformed XML fails the item.
    err(XML, 1.0, json!({}), json!([{ "data": "<a><b></a>" }]));
}

// ---- HTML -----------------------------------------------------------------

const HTML: &str = "n8n-nodes-base.html";

#[test]
fn html_extract_generate_and_table() {
    let page = "<div><p class=\"p\"> One </p><p class=\"p\">Two <b>bold</b></p><a href=\"/x\">link</a><input name=\"q\" value=\"42\"></div>";
    let input = json!([{ "data": page, "title": "Hi", "a_b": 1 }]);
    let values = json!({ "values": [
        { "key": "ps", "cssSelector": ".p", "returnArray": true },
        { "key": "href", "cssSelector": "a", "returnValue": "attribute", "attribute": "href" },
        { "key": "q", "cssSelector": "input", "returnValue": "value" },
        { "key": "inner", "cssSelector": "p:nth-child(2)", "returnValue": "html" }
    ] });
    let got = ok(HTML, 1.2, json!({ "operation": "extractHtmlContent", "extractionValues": values }), input.clone());
    assert_eq!(got, [json!({ "ps": ["One", "Two bold"], "href": "/x", "q": "42", "inner": "Two <b>bold</b>" })]);
    // Without returnArray the matches' text is joined (cheerio's .text()).
    let joined = ok(HTML, 1.0, json!({ "operation": "extractHtmlContent", "extractionValues": { "values": [{ "key": "ps", "cssSelector": ".p" }] }, "options": { "trimValues": true } }), input.clone());
    assert_eq!(joined, [json!({ "ps": "One Two bold" })]);
    assert_eq!(ok(HTML, 1.2, json!({ "operation": "generateHtmlTemplate", "html": "<h1>{{ $json.title }}</h1>" }), input.clone()), [json!({ "html": "<h1>Hi</h1>" })]);
    let table = ok(HTML, 1.2, json!({ "operation": "convertToHtmlTable", "options": { "capitalize": true, "customStyling": true } }), json!([{ "a_b": 1, "c": "<x>" }]));
    let t = table[0]["table"].as_str().unwrap_or_default();
    assert!(t.starts_with("<table") && t.contains("<th>A B</th><th>C</th>") && t.contains("<td  >1</td>"), "{t}");
}
