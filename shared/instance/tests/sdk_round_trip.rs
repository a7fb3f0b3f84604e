//! `get-as-code` round trips: for every conformance fixture whose nodes the
//! engine's catalog has (type and version), workflow JSON → SDK code →
//! workflow JSON gives the same nodes and connections, and generating code
//! again gives the same code.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

fn conformance_dir() -> PathBuf {
    match std::env::var("CONFORMANCE_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
    }
}

fn fixtures(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("conformance dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            fixtures(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") && !p.ends_with("mocks.json") && !p.ends_with("extensions.json") {
            out.push(p);
        }
    }
}

fn expressible(wf: &Value) -> bool {
    wf["nodes"].as_array().is_some_and(|nodes| {
        nodes.iter().all(|n| {
            let ty = n["type"].as_str().unwrap_or_default();
            let v = n["typeVersion"].as_f64().unwrap_or(-1.0);
            ty == "n8n-nodes-base.stickyNote" || engine::catalog::describe(ty).is_some_and(|d| d.versions().contains(&v))
        })
    })
}

/// Numbers compare by value (JavaScript has no 1 vs 1.0).
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => n.as_f64().and_then(serde_json::Number::from_f64).map_or(v.clone(), Value::Number),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), norm(x))).collect()),
        other => other.clone(),
    }
}

/// Connections without empty trailing outputs or sources with no targets
/// (the same graph; the SDK writes only what is connected).
fn graph(conns: &Value) -> Value {
    let mut out = Map::new();
    for (src, by_type) in conns.as_object().into_iter().flatten() {
        let mut main: Vec<Value> = by_type["main"].as_array().cloned().unwrap_or_default();
        while main.last().is_some_and(|o| o.as_array().is_none_or(Vec::is_empty)) {
            main.pop();
        }
        if !main.is_empty() {
            let main: Vec<Value> = main.into_iter().map(|o| if o.is_null() { Value::Array(vec![]) } else { o }).collect();
            out.insert(src.clone(), serde_json::json!({ "main": main }));
        }
    }
    norm(&Value::Object(out))
}

#[test]
fn every_expressible_fixture_round_trips() {
    let mut files = Vec::new();
    fixtures(&conformance_dir(), &mut files);
    files.sort();
    let (mut checked, mut skipped) = (0, 0);
    for path in &files {
        let wf: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        if !expressible(&wf) {
            skipped += 1;
            continue;
        }
        let code = instance::sdk::codegen::to_code(&wf).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back = instance::sdk::evaluate(&code).unwrap_or_else(|e| panic!("{}: {e}\n{code}", path.display()));
        // A node without a position gets one from the SDK's layout.
        let mut laid_out = wf["nodes"].clone();
        for (n, b) in laid_out.as_array_mut().unwrap().iter_mut().zip(back["nodes"].as_array().unwrap()) {
            if n.get("position").is_none() {
                n["position"] = b["position"].clone();
            }
        }
        assert_eq!(norm(&back["nodes"]), norm(&laid_out), "{}: nodes differ\n{code}", path.display());
        assert_eq!(graph(&back["connections"]), graph(&wf["connections"]), "{}: connections differ", path.display());
        let mut settings = wf["settings"].as_object().cloned().unwrap_or_default();
        settings.entry("executionOrder").or_insert("v1".into());
        assert_eq!(norm(&back["settings"]), norm(&Value::Object(settings)), "{}: settings differ", path.display());
        assert_eq!(back["name"], wf["name"].as_str().filter(|n| !n.trim().is_empty()).unwrap_or("My workflow"));
        let again = instance::sdk::codegen::to_code(&back).unwrap();
        if laid_out == wf["nodes"] {
            assert_eq!(again, code, "{}: code → JSON → code changed the code", path.display());
        }
        // With positions filled in, the code is a fixed point.
        let third = instance::sdk::codegen::to_code(&instance::sdk::evaluate(&again).unwrap()).unwrap();
        assert_eq!(third, again, "{}: code → JSON → code changed the code", path.display());
        checked += 1;
    }
    println!("round-tripped {checked} fixtures, skipped {skipped} with node types or versions outside the catalog");
    assert!(checked >= 48, "only {checked} fixtures were expressible");
}
