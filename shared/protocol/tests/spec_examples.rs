//! Every JSON example of `spec/streaming-protocol.md` parses into our types
//! and re-serialises to the same JSON. The examples are read from the spec
//! at test time, so a new example is covered without touching this file.

use protocol::events::Event;
use protocol::session::ThreadStatus;
use serde_json::Value;
use std::path::PathBuf;

fn spec_text() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/spec/streaming-protocol.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// JSON objects that start a line (optionally after `data: `), spanning
/// lines until their braces balance. TypeScript-ish sketches (`{runId: "r1"}`)
/// are not JSON and are skipped.
fn json_examples(text: &str) -> Vec<(usize, Value)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let line = line.strip_prefix("data: ").unwrap_or(line);
        if !line.starts_with('{') {
            i += 1;
            continue;
        }
        let start = i;
        let mut buf = String::new();
        let mut depth = 0i32;
        let mut in_str = false;
        let mut escaped = false;
        let mut first = true;
        'outer: while i < lines.len() {
            let l = if first { line } else { lines[i] };
            first = false;
            for c in l.chars() {
                buf.push(c);
                if in_str {
                    match (escaped, c) {
                        (true, _) => escaped = false,
                        (false, '\\') => escaped = true,
                        (false, '"') => in_str = false,
                        _ => {}
                    }
                    continue;
                }
                match c {
                    '"' => in_str = true,
                    '{' | '[' => depth += 1,
                    '}' | ']' => {
                        depth -= 1;
                        if depth == 0 {
                            break 'outer;
                        }
                    }
                    _ => {}
                }
            }
            buf.push('\n');
            i += 1;
        }
        i += 1;
        if let Ok(v) = serde_json::from_str::<Value>(&buf) {
            out.push((start + 1, v));
        }
    }
    out
}

#[test]
fn every_spec_example_round_trips() {
    let examples = json_examples(&spec_text());
    let mut events = 0;
    let mut statuses = 0;
    for (line, value) in &examples {
        if value.get("type").is_some() && value.get("payload").is_some() {
            let event = Event::from_value(value.clone()).unwrap_or_else(|e| panic!("spec line {line}: {e}\n{value}"));
            assert_eq!(&event.to_value(), value, "spec line {line} does not round-trip");
            // And through text, as it travels.
            let again = Event::from_json(&event.to_json()).unwrap_or_else(|e| panic!("spec line {line}: {e}"));
            assert_eq!(again, event);
            events += 1;
        } else if value.get("hasActiveRun").is_some() {
            let status: ThreadStatus =
                serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("spec line {line}: {e}"));
            assert_eq!(&serde_json::to_value(&status).unwrap(), value, "spec line {line}");
            statuses += 1;
        } else {
            panic!("spec line {line}: an example this test does not know how to check: {value}");
        }
    }
    // The spec has 20 event examples and one status answer today; fewer means
    // the extraction broke, not that the spec shrank.
    assert!(events >= 20, "found only {events} event examples");
    assert_eq!(statuses, 1);
}
