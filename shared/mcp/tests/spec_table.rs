//! Every tool's inputSchema against the table derived from the spec's
//! parameter tables (`spec_tools.json`, made by `derive_spec_table.py`):
//! same tools, same parameter names, JSON types, required flags and enums.

use serde_json::Value;
use std::collections::BTreeSet;

fn spec() -> serde_json::Map<String, Value> {
    let text = include_str!("spec_tools.json");
    serde_json::from_str::<Value>(text).expect("spec_tools.json parses").as_object().cloned().expect("an object")
}

fn tools() -> Vec<Value> {
    mcp_server::tools::list()
}

/// The schema's JSON type (a `["x", "null"]` list counts as `x`).
fn json_type(schema: &Value) -> Option<String> {
    match schema.get("type")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.iter().filter_map(Value::as_str).find(|t| *t != "null").map(str::to_owned),
        _ => None,
    }
}

fn required(schema: &Value) -> BTreeSet<String> {
    schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

#[test]
fn every_spec_tool_is_listed_and_nothing_else() {
    let spec: BTreeSet<String> = spec().keys().cloned().collect();
    let listed: BTreeSet<String> = tools().iter().map(|t| t["name"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(listed, spec, "tools/list differs from the spec");
    assert_eq!(spec.len(), 27);
}

#[test]
fn input_schemas_match_the_spec_tables() {
    let spec = spec();
    let mut problems = Vec::new();
    for tool in tools() {
        let name = tool["name"].as_str().unwrap_or_default();
        let schema = &tool["inputSchema"];
        let Some(params) = spec.get(name).and_then(Value::as_object) else { continue };
        if json_type(schema).as_deref() != Some("object") {
            problems.push(format!("{name}: inputSchema is not an object schema"));
        }
        let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
        let top: BTreeSet<&String> = params.keys().filter(|k| !k.contains("[].")).collect();
        let have: BTreeSet<&String> = props.keys().collect();
        if top != have {
            problems.push(format!("{name}: parameters {have:?}, spec {top:?}"));
        }
        for (param, want) in params {
            // `columns[].name` is a field of the items of `columns`.
            let (owner, prop) = match param.split_once("[].") {
                Some((arr, field)) => (props.get(arr).and_then(|a| a.get("items")).cloned().unwrap_or(Value::Null), field.to_owned()),
                None => (schema.clone(), param.clone()),
            };
            let Some(p) = owner.get("properties").and_then(|ps| ps.get(&prop)) else {
                problems.push(format!("{name}.{param}: missing from the schema"));
                continue;
            };
            let want_type = want["type"].as_str().unwrap_or_default();
            if json_type(p).as_deref() != Some(want_type) {
                problems.push(format!("{name}.{param}: type {:?}, spec {want_type:?}", json_type(p)));
            }
            if let Some(items) = want.get("items").and_then(Value::as_str) {
                let got = p.get("items").and_then(json_type);
                if got.as_deref() != Some(items) {
                    problems.push(format!("{name}.{param}: items {got:?}, spec {items:?}"));
                }
            }
            if let Some(values) = want.get("enum").and_then(Value::as_array) {
                if p.get("enum") != Some(&Value::Array(values.clone())) {
                    problems.push(format!("{name}.{param}: enum {:?}, spec {values:?}", p.get("enum")));
                }
            }
            let is_required = required(&owner).contains(&prop);
            if is_required != want["required"].as_bool().unwrap_or(false) {
                problems.push(format!("{name}.{param}: required {is_required}, spec {}", want["required"]));
            }
        }
    }
    assert!(problems.is_empty(), "schemas differ from the spec:\n{}", problems.join("\n"));
}

#[test]
fn output_schemas_are_objects_and_inputs_refuse_unknown_fields() {
    for tool in tools() {
        let name = tool["name"].as_str().unwrap_or_default();
        assert_eq!(json_type(&tool["outputSchema"]).as_deref(), Some("object"), "{name}");
        assert!(tool["outputSchema"].get("properties").is_some(), "{name}: output schema has no properties");
        assert_eq!(tool["inputSchema"]["additionalProperties"], Value::Bool(false), "{name}");
        assert!(!tool["description"].as_str().unwrap_or_default().is_empty(), "{name}");
        assert!(!tool.to_string().contains("$ref"), "{name}: schemas are inlined");
    }
}

/// The checked-in table is what the script derives from the spec beside the
/// repo (`../shared/spec`), so a spec change cannot go unnoticed.
#[test]
fn checked_in_table_matches_the_spec() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = dir.join("../../../shared/spec/mcp-server-tools.md");
    if !spec.exists() {
        eprintln!("skipped: {} not found", spec.display());
        return;
    }
    let out = std::process::Command::new("python3")
        .arg(dir.join("tests/derive_spec_table.py"))
        .arg(&spec)
        .output()
        .expect("python3 runs the derivation script");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let derived: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    let checked_in: Value = serde_json::from_str(include_str!("spec_tools.json")).expect("spec_tools.json parses");
    assert_eq!(derived, checked_in, "re-derive spec_tools.json: python3 shared/mcp/tests/derive_spec_table.py ../shared/spec/mcp-server-tools.md > shared/mcp/tests/spec_tools.json");
}
