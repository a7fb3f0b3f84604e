//! Runs every expression vector in `<conformance>/expressions/*.json` (see the
//! conformance README): `expression` evaluated with `input` as the node's input
//! items (`$json` = `input[0]`, item index 0, or -1 when `input` is empty) must
//! deep-equal `expected`.

use std::path::PathBuf;

use expression::{Evaluator, Limits, StaticData};
use serde_json::Value;

fn conformance_dir() -> PathBuf {
    match std::env::var_os("CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
    }
}

/// Deep equality where numbers compare by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn expression_vectors() {
    let dir = conformance_dir().join("expressions");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no vectors in {}", dir.display());

    let mut ev = Evaluator::new(Limits::default()).expect("evaluator");
    let (mut passed, mut failed) = (0usize, Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read vectors");
        let vectors: Vec<Value> = serde_json::from_str(&text).expect("parse vectors");
        for (i, v) in vectors.iter().enumerate() {
            let expr = v["expression"].as_str().unwrap_or_default();
            let expected = &v["expected"];
            let input: Vec<Value> = v.get("input").and_then(Value::as_array).cloned().unwrap_or_default();
            let data = StaticData::new(input);
            let name = format!("{}#{i} {expr}", file.file_name().map(|f| f.to_string_lossy()).unwrap_or_default());
            match ev.evaluate(expr, &data) {
                Ok(got) if same(&got, expected) => passed += 1,
                Ok(got) => failed.push(format!("{name}: expected {expected}, got {got}")),
                Err(e) => failed.push(format!("{name}: expected {expected}, error {e}")),
            }
        }
    }
    println!("expressions: {passed} passed, {} failed", failed.len());
    for f in &failed {
        println!("  FAIL {f}");
    }
    assert!(failed.is_empty(), "{} expression vectors failed", failed.len());
}
