//! Text Classifier (`textClassifier`, 1–1.1) and Information Extractor
//! (`informationExtractor`, 1–1.2): one model call per item with a system
//! prompt that carries a JSON Schema's format instructions, the answer parsed
//! against the schema; with auto-fixing (always for the extractor, the
//! `enableAutoFixing` option for the classifier) a failed parse goes back to
//! the model once with LangChain's `OutputFixingParser` prompt. The
//! classifier routes each input item to the outputs of the categories the
//! model set true (an extra "Other" output with fallback `other`); the
//! extractor outputs `{output}`.

use serde_json::{json, Map, Value};

use super::agent::call_model;
use super::model::{ChatModel, Message};
use super::output_parser::{schema_from_example, OutputParser};
use super::{NodeContext, LANGUAGE_MODEL};
use crate::data::{item_from, paired_ref, Item};
use crate::error::{EngineError, Result};
use crate::nodes::NodeOutput;
use crate::workflow::Node;

pub const CLASSIFIER_PROMPT: &str = "Please classify the text provided by the user into one of the following categories: {categories}, and use the provided formatting instructions below. Don't explain, and only output the json.";

pub const EXTRACTOR_PROMPT: &str = "You are an expert extraction algorithm.\nOnly extract relevant information from the text.\nIf you do not know the value of an attribute asked to extract, you may omit the attribute's value.";

/// The schema form zod-to-json-schema gives an object schema.
fn object_schema(props: Map<String, Value>, required: Vec<String>) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false, "$schema": "http://json-schema.org/draft-07/schema#"})
}

fn model_of<'a>(ctx: &mut NodeContext<'a>) -> Result<(&'a Node, ChatModel)> {
    let node = ctx.sub_nodes(LANGUAGE_MODEL).into_iter().next().ok_or_else(|| {
        EngineError::node_with("A Chat Model sub-node must be connected and enabled", "connect a chat model (e.g. OpenAI Chat Model) to the node's Model input")
    })?;
    // n8n supplies the model once, for item 0
    let model = ctx.with_sub_node(node, None, |c| super::model::supply(c, 0))?;
    Ok((node, model))
}

/// One model call for `system` + `human`, parsed by `parser`; with
/// `auto_fix`, one more call asking the model to repair a failed parse.
fn structured(ctx: &mut NodeContext<'_>, node: &Node, model: &ChatModel, system: String, human: String, parser: &OutputParser, auto_fix: bool) -> Result<Value> {
    let messages = vec![Message::System { content: system }, Message::User { content: human }];
    let mut ignored = String::new();
    let first = call_model(ctx, node, model, &messages, &[], None, &mut ignored)?;
    match parser.parse(&first.content) {
        Ok(v) => Ok(v),
        Err(e) if auto_fix => {
            let fix = format!(
                "Instructions:\n--------------\n{}\n--------------\nCompletion:\n--------------\n{}\n--------------\n\nAbove, the Completion did not satisfy the constraints given in the Instructions.\nError:\n--------------\n{}\n--------------\n\nPlease try again. Please only respond with an answer that satisfies the constraints laid out in the Instructions:",
                parser.format_instructions(),
                first.content,
                e
            );
            let second = call_model(ctx, node, model, &[Message::User { content: fix }], &[], None, &mut ignored)?;
            parser.parse(&second.content)
        }
        Err(e) => Err(e),
    }
}

fn text_param(ctx: &mut NodeContext<'_>, name: &str, item: usize) -> Result<String> {
    Ok(match ctx.param(name, item, json!(""))? {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => crate::nodes::js_string(&other),
    })
}

pub fn text_classifier(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let categories = ctx.param("categories.categories", 0, json!([]))?.as_array().cloned().unwrap_or_default();
    if categories.is_empty() {
        return Err(EngineError::node("At least one category must be defined"));
    }
    let names: Vec<String> = categories.iter().map(|c| c.get("category").map(crate::nodes::js_string).unwrap_or_default()).collect();
    let multi = ctx.param_bool("options.multiClass", 0, false)?;
    let fallback = ctx.param_str("options.fallback", 0, "discard")?;
    let auto_fix = ctx.param_bool("options.enableAutoFixing", 0, false)?;
    let mut props = Map::new();
    for (name, cat) in names.iter().zip(&categories) {
        let desc = cat.get("description").map(crate::nodes::js_string).unwrap_or_default();
        props.insert(name.clone(), json!({"type": "boolean", "description": format!("Should be true if the input has category \"{name}\" (description: {desc})")}));
    }
    let mut required = names.clone();
    if fallback == "other" {
        props.insert("fallback".into(), json!({"type": "boolean", "description": "Should be true if none of the other categories apply"}));
        required.push("fallback".into());
    }
    let parser = OutputParser { schema: object_schema(props, required) };
    let multi_prompt = if multi { "Categories are not mutually exclusive, and multiple can be true" } else { "Categories are mutually exclusive, and only one can be true" };
    let fallback_prompt = if fallback == "other" { "If no categories apply, select the \"fallback\" option." } else { "If there is not a very fitting category, select none of the categories." };
    let (model_node, model) = model_of(ctx)?;
    let input = ctx.input(0);
    let mut outs: Vec<Vec<Item>> = vec![vec![]; names.len() + usize::from(fallback == "other")];
    for i in 0..input.len() {
        let run = |ctx: &mut NodeContext<'_>| -> Result<Value> {
            let text = text_param(ctx, "inputText", i)?;
            if text.is_empty() {
                return Err(EngineError::node(format!("Text to classify for item {i} is not defined")));
            }
            let template = ctx.param_str("options.systemPromptTemplate", i, CLASSIFIER_PROMPT)?;
            let system = format!("{}\n\t{}\n\t{multi_prompt}\n\t{fallback_prompt}", template.replace("{categories}", &names.join(", ")), parser.format_instructions());
            structured(ctx, model_node, &model, system, text, &parser, auto_fix)
        };
        match run(ctx) {
            Ok(v) => {
                let mut item = input[i].clone();
                item.paired_item = Some(paired_ref(i, 0));
                for (k, name) in names.iter().enumerate() {
                    if v.get(name).and_then(Value::as_bool) == Some(true) {
                        outs[k].push(item.clone());
                    }
                }
                if fallback == "other" && v.get("fallback").and_then(Value::as_bool) == Some(true) {
                    let last = outs.len() - 1;
                    outs[last].push(item);
                }
            }
            Err(EngineError::Canceled) => return Err(EngineError::Canceled),
            Err(e) if ctx.continue_on_fail() => outs[0].push(item_from(json!({"error": e.to_string()}), i)),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::many(outs))
}

/// A JSON Schema from attribute definitions (`attributes.attributes`).
fn attributes_schema(attrs: &[Value]) -> Value {
    let mut props = Map::new();
    let mut required = vec![];
    for a in attrs {
        let name = a.get("name").map(crate::nodes::js_string).unwrap_or_default();
        let mut p = match a.get("type").and_then(Value::as_str).unwrap_or("string") {
            "number" => json!({"type": "number"}),
            "boolean" => json!({"type": "boolean"}),
            "date" => json!({"type": "string", "format": "date"}),
            _ => json!({"type": "string"}),
        };
        p["description"] = json!(a.get("description").map(crate::nodes::js_string).unwrap_or_default());
        if a.get("required").and_then(Value::as_bool).unwrap_or(false) {
            required.push(name.clone());
        }
        props.insert(name, p);
    }
    object_schema(props, required)
}

/// `fromJson` before 1.2: n8n's `generateSchemaFromExample` leaves properties optional.
fn optional_everywhere(mut s: Value) -> Value {
    if let Some(o) = s.as_object_mut() {
        o.remove("required");
        for v in o.values_mut() {
            let taken = v.take();
            *v = optional_everywhere(taken);
        }
    } else if let Some(a) = s.as_array_mut() {
        for v in a.iter_mut() {
            let taken = v.take();
            *v = optional_everywhere(taken);
        }
    }
    s
}

pub fn information_extractor(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let schema = match ctx.param_str("schemaType", 0, "fromAttributes")?.as_str() {
        "fromAttributes" => {
            let attrs = ctx.param("attributes.attributes", 0, json!([]))?.as_array().cloned().unwrap_or_default();
            if attrs.is_empty() {
                return Err(EngineError::node("At least one attribute must be specified"));
            }
            attributes_schema(&attrs)
        }
        "fromJson" => {
            let example = ctx.param_str("jsonSchemaExample", 0, "{}")?;
            let example: Value = serde_json::from_str(&example).map_err(|e| EngineError::node(format!("The JSON example is not valid JSON: {e}")))?;
            let s = schema_from_example(&example);
            if ctx.version() >= 1.2 {
                s
            } else {
                optional_everywhere(s)
            }
        }
        _ => match ctx.param("inputSchema", 0, json!("{}"))? {
            Value::String(s) => serde_json::from_str(&s).map_err(|e| EngineError::node(format!("The input schema is not valid JSON: {e}")))?,
            other => other,
        },
    };
    let parser = OutputParser { schema };
    let (model_node, model) = model_of(ctx)?;
    let input = ctx.input(0);
    let mut out = vec![];
    for i in 0..input.len() {
        let run = |ctx: &mut NodeContext<'_>| -> Result<Value> {
            let text = text_param(ctx, "text", i)?;
            if text.trim().is_empty() {
                return Err(EngineError::node(format!("Text for item {i} is not defined")));
            }
            let template = ctx.param_str("options.systemPromptTemplate", i, EXTRACTOR_PROMPT)?;
            let system = format!("{template}\n{}", parser.format_instructions());
            structured(ctx, model_node, &model, system, text, &parser, true)
        };
        match run(ctx) {
            Ok(v) => out.push(item_from(json!({"output": v}), i)),
            Err(EngineError::Canceled) => return Err(EngineError::Canceled),
            Err(e) if ctx.continue_on_fail() => out.push(item_from(json!({"error": e.to_string()}), i)),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
