//! The JSON text of stored workflow data (an execution's run data, the
//! engine state a Wait node is parked in, a webhook's response): the one
//! home for writing and parsing it.
//!
//! Workflow data nests deeper than serde_json's parser allows by default
//! (it refuses the 128th level): a Code node may return 256 levels, a Set
//! node's dotted field names nest as deep as the name is long, and an
//! execution's document wraps each item's `json` in 9 more levels. A record
//! that was written must read back, so:
//! - [`parse`] lifts serde_json's limit and runs on a stack that grows on
//!   the heap when it runs low (`serde_stacker`), so no depth can overflow
//!   the thread;
//! - [`to_vec`] refuses a document deeper than [`MAX_DEPTH`] levels with an
//!   error that says so (the save fails; nothing half-readable is stored).
//!   The cap is for the readers: they clone, convert (`serde_json::from_value`,
//!   e.g. the executor loading a parked Wait's engine state), compare and
//!   serialize the document again with a stack frame per level and no
//!   growth. Unoptimised (tests), on a 2 MiB thread (a tokio worker's),
//!   `from_value` into a `Value` overflows between 700 and 850 levels and
//!   `Value::clone` between 850 and 1,000 (measured); release builds take
//!   far less per level. 512 levels leave them room and are twice the Code
//!   node's limit. Serializing up to the cap recurses as deep, within the
//!   same bound.

use serde::ser::{Error as _, Serialize, Serializer};
use serde::Deserialize;
use serde_json::Value;

/// Deepest document (objects and arrays, the outermost counting as 1)
/// [`to_vec`] writes: above the Code node's 256 levels plus run data's
/// wrapping; see the module docs for why not more.
pub const MAX_DEPTH: usize = 512;

/// `value` as compact JSON, byte for byte what `serde_json::to_vec` writes;
/// an error when it nests deeper than [`MAX_DEPTH`] counting the `outer`
/// levels it sits in within the document it is part of (a node's runs are
/// stored apart from the `resultData.runData` they are read back into).
pub fn to_vec(value: &Value, outer: usize) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Capped { value, depth: outer })
}

/// Parses what [`to_vec`] wrote, however deep.
pub fn parse(json: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(json);
    de.disable_recursion_limit();
    let value = Value::deserialize(serde_stacker::Deserializer::new(&mut de))?;
    de.end()?;
    Ok(value)
}

/// A value inside `depth` arrays or objects, serialized as `Value` does but
/// refusing to go past [`MAX_DEPTH`].
struct Capped<'a> {
    value: &'a Value,
    depth: usize,
}

impl Serialize for Capped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let inner = |value| Capped { value, depth: self.depth + 1 };
        match self.value {
            Value::Array(_) | Value::Object(_) if self.depth >= MAX_DEPTH => {
                Err(S::Error::custom(format!("nested too deeply to store (more than {MAX_DEPTH} levels)")))
            }
            Value::Array(a) => s.collect_seq(a.iter().map(inner)),
            Value::Object(m) => s.collect_map(m.iter().map(|(k, v)| (k, inner(v)))),
            leaf => leaf.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `depth` levels: arrays and objects in turn, a string at the bottom.
    fn nested(depth: usize) -> Value {
        let mut v = json!("end \"quoted\" \u{e9}");
        for i in 0..depth {
            v = if i % 2 == 0 { json!([1, v, null]) } else { json!({ "k": v, "n": 1.5 }) };
        }
        v
    }

    #[test]
    fn writes_what_serde_json_writes_and_reads_it_back() {
        for depth in [0, 1, 2, 127, 128, 129, 256, MAX_DEPTH] {
            let v = nested(depth);
            let text = to_vec(&v, 0).unwrap();
            assert_eq!(text, serde_json::to_vec(&v).unwrap(), "{depth}");
            assert!(parse(&text).unwrap() == v, "{depth}");
        }
        assert!(serde_json::from_slice::<Value>(&to_vec(&nested(128), 0).unwrap()).is_err(), "the default limit");
    }

    #[test]
    fn refuses_to_write_past_the_cap() {
        let err = to_vec(&nested(MAX_DEPTH + 1), 0).unwrap_err();
        assert!(err.to_string().contains("nested too deeply to store (more than 512 levels)"), "{err}");
        assert!(to_vec(&nested(MAX_DEPTH - 2), 2).is_ok());
        assert!(to_vec(&nested(MAX_DEPTH - 1), 2).is_err(), "the outer levels count");
    }

    #[test]
    fn parses_any_depth_on_a_small_stack() {
        // Text deeper than anything written, on a thread of 256 KiB.
        let depth = 100_000;
        let text = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let ok = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let v = parse(text.as_bytes()).map_err(|e| e.to_string())?;
                // Dropping a Value recurses too: take it apart level by level.
                let mut levels = 0;
                let mut cur = v;
                while let Value::Array(mut a) = cur {
                    levels += 1;
                    cur = a.pop().unwrap_or(Value::Null);
                }
                Ok::<_, String>(levels)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(ok, Ok(depth));
        assert!(parse(b"[1] x").is_err(), "trailing characters");
        assert!(parse(b"[[1]").is_err());
    }
}
