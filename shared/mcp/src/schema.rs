//! JSON Schemas for tool inputs and outputs, derived from the Rust types
//! (schemars), inlined (no `$ref`/`$defs`, which some MCP clients ignore).

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

/// What a tool accepts. Optional parameters are plain types (not `T | null`):
/// the schema is for the model, and `null` is accepted anyway.
pub fn input<T: JsonSchema>() -> Value {
    let gen = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).for_deserialize().into_generator();
    let mut v = gen.into_root_schema_for::<T>().to_value();
    strip_null(&mut v);
    tidy(&mut v);
    v
}

/// What a tool returns in `structuredContent` (nullable where the value can
/// be `null`: clients validate results against it).
pub fn output<T: JsonSchema>() -> Value {
    let gen = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).for_serialize().into_generator();
    let mut v = gen.into_root_schema_for::<T>().to_value();
    tidy(&mut v);
    v
}

fn tidy(v: &mut Value) {
    if let Value::Object(m) = v {
        m.remove("$schema");
        m.remove("title");
        // MCP requires an object schema at the root.
        m.entry("type").or_insert_with(|| Value::String("object".into()));
    }
}

/// `["string", "null"]` → `"string"`, everywhere.
fn strip_null(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(types)) = m.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let t = types.remove(0);
                    m.insert("type".into(), t);
                }
            }
            if let Some(Value::Array(any)) = m.get_mut("anyOf") {
                any.retain(|s| s.get("type").and_then(Value::as_str) != Some("null"));
                if any.len() == 1 {
                    let only = any.remove(0);
                    m.remove("anyOf");
                    if let Value::Object(o) = only {
                        for (k, x) in o {
                            m.entry(k).or_insert(x);
                        }
                    }
                }
            }
            if let Some(Value::Array(e)) = m.get_mut("enum") {
                e.retain(|x| !x.is_null());
            }
            for x in m.values_mut() {
                strip_null(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strip_null),
        _ => {}
    }
}
