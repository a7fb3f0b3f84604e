//! Structured Output Parser (`outputParserStructured`): a JSON Schema (given,
//! or generated from an example), the format instructions the model gets,
//! and the parse of its answer (JSON, possibly in a ```json fence) checked
//! against the schema's types and required properties.

use serde_json::{json, Map, Value};

use super::NodeContext;
use crate::error::{EngineError, Result};

pub struct OutputParser {
    pub schema: Value,
}

pub fn supply(ctx: &mut NodeContext<'_>, item: usize) -> Result<OutputParser> {
    if ctx.node.node_type != "@n8n/n8n-nodes-langchain.outputParserStructured" {
        return Err(EngineError::node(format!("{} is not an output parser this instance supports", ctx.node.node_type)));
    }
    let schema_type = if ctx.version() >= 1.2 { ctx.param_str("schemaType", item, "fromJson")? } else { "manual".to_owned() };
    let schema = if schema_type == "fromJson" {
        let example = ctx.param_str("jsonSchemaExample", item, "{}")?;
        let example: Value = serde_json::from_str(&example).map_err(|e| EngineError::node(format!("The JSON example is not valid JSON: {e}")))?;
        schema_from_example(&example)
    } else {
        let text = match ctx.param_opt("inputSchema", item)? {
            Some(v) => v,
            None => ctx.param("jsonSchema", item, json!("{}"))?,
        };
        match text {
            Value::String(s) => serde_json::from_str(&s).map_err(|e| EngineError::node(format!("The input schema is not valid JSON: {e}")))?,
            other => other,
        }
    };
    Ok(OutputParser { schema })
}

/// A JSON Schema describing `example` (every property required, as n8n's `generateSchemaFromExample`).
pub fn schema_from_example(example: &Value) -> Value {
    match example {
        Value::Object(o) => {
            let props: Map<String, Value> = o.iter().map(|(k, v)| (k.clone(), schema_from_example(v))).collect();
            json!({"type": "object", "properties": props, "required": o.keys().collect::<Vec<_>>()})
        }
        Value::Array(a) => match a.first() {
            Some(first) => json!({"type": "array", "items": schema_from_example(first)}),
            None => json!({"type": "array"}),
        },
        Value::String(_) => json!({"type": "string"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Null => json!({"type": "null"}),
    }
}

impl OutputParser {
    /// What the model is told about the answer's form (LangChain's wording).
    pub fn format_instructions(&self) -> String {
        format!(
            "You must format your output as a JSON value that adheres to a given \"JSON Schema\" instance.\n\nYour output will be parsed and type-checked according to the provided schema instance, so make sure all fields in your output match the schema exactly and there are no trailing commas!\n\nHere is the JSON Schema instance your output must adhere to. Include the enclosing markdown codeblock:\n```json\n{}\n```",
            self.schema
        )
    }

    /// The model's answer as the schema's value.
    pub fn parse(&self, text: &str) -> Result<Value> {
        let body = fenced(text).unwrap_or(text).trim();
        let v: Value = serde_json::from_str(body).map_err(|e| EngineError::node_with("Model output doesn't fit required format", format!("the answer is not JSON ({e}): {}", text.chars().take(200).collect::<String>())))?;
        // n8n wraps the schema in `{output: …}` for the model; accept both forms
        let v = match v {
            Value::Object(mut o) if o.len() == 1 && o.contains_key("output") && !has_property(&self.schema, "output") => o.remove("output").unwrap_or_default(),
            other => other,
        };
        check(&self.schema, &v, "").map_err(|m| EngineError::node_with("Model output doesn't fit required format", m))?;
        Ok(v)
    }
}

fn has_property(schema: &Value, name: &str) -> bool {
    schema.pointer(&format!("/properties/{name}")).is_some()
}

fn fenced(text: &str) -> Option<&str> {
    let start = text.find("```")?;
    let rest = &text[start + 3..];
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    let end = rest.find("```")?;
    Some(&rest[..end])
}

/// Types and required properties, recursively (enough to catch a model that ignored the format).
fn check(schema: &Value, v: &Value, path: &str) -> std::result::Result<(), String> {
    let at = if path.is_empty() { "the output".to_owned() } else { format!("`{path}`") };
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        let ok = match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
            "number" => v.is_number(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => true,
        };
        if !ok {
            return Err(format!("{at} should be of type {t}, got {v}"));
        }
    }
    if schema.get("format").and_then(Value::as_str) == Some("date") {
        let ok = v.as_str().is_some_and(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_ok());
        if !ok {
            return Err(format!("{at} should be a date (YYYY-MM-DD), got {v}"));
        }
    }
    if let Value::Object(o) = v {
        for r in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if !o.contains_key(r) {
                return Err(format!("{at} is missing the required property `{r}`"));
            }
        }
        for (k, sub) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
            if let Some(x) = o.get(k) {
                check(sub, x, &if path.is_empty() { k.clone() } else { format!("{path}.{k}") })?;
            }
        }
    }
    if let (Value::Array(a), Some(items)) = (v, schema.get("items")) {
        for (i, x) in a.iter().enumerate() {
            check(items, x, &format!("{path}[{i}]"))?;
        }
    }
    Ok(())
}
