//! Tool sub-nodes: what the model sees of each (name, description, JSON
//! Schema of its arguments) and running one for a tool call. Arguments reach
//! a tool's parameters through `$fromAI` (and the legacy `{placeholder}`s of
//! HTTP Request Tool 1.x); the schema is built from those calls.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::model::ToolSpec;
use super::{calculator, tool_name, NodeContext};
use crate::data::Item;
use crate::error::{EngineError, Result};
use crate::workflow::Node;

/// A tool one root call offers the model.
pub struct Tool<'a> {
    pub node: &'a Node,
    pub spec: ToolSpec,
    /// The tool takes one free-text argument (`input`), handed on as a string.
    text_input: bool,
    /// MCP Client Tool: the tool's name on the server.
    mcp_tool: Option<String>,
}

/// The tools `node` supplies: one, or an MCP server's several.
pub fn supply_all<'a>(ctx: &mut NodeContext<'_>, node: &'a Node, item: usize) -> Result<Vec<Tool<'a>>> {
    if node.node_type == "@n8n/n8n-nodes-langchain.mcpClientTool" {
        let specs = super::mcp_client_tool::supply(ctx, item)?;
        return Ok(specs.into_iter().map(|spec| Tool { node, mcp_tool: Some(spec.name.clone()), spec, text_input: false }).collect());
    }
    Ok(vec![supply(ctx, node, item)?])
}

fn text_schema() -> Value {
    json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]})
}

fn from_ai_schema(node: &Node) -> Result<Value> {
    let args = expression::from_ai::from_ai_arguments(&node.parameters).map_err(|e| EngineError::node(e.to_string()))?;
    Ok(expression::from_ai::tool_schema(&args))
}

/// The schema a tool's "Specify Input Schema" options give (from an example or as written).
fn input_schema(ctx: &mut NodeContext<'_>, item: usize) -> Result<Option<Value>> {
    if !ctx.param_bool("specifyInputSchema", item, false)? {
        return Ok(None);
    }
    if ctx.param_str("schemaType", item, "fromJson")? == "fromJson" {
        let example = ctx.param_str("jsonSchemaExample", item, "{}")?;
        let example: Value = serde_json::from_str(&example).map_err(|e| EngineError::node(format!("The JSON example is not valid JSON: {e}")))?;
        return Ok(Some(super::output_parser::schema_from_example(&example)));
    }
    match ctx.param("inputSchema", item, json!("{}"))? {
        Value::String(s) => serde_json::from_str(&s).map(Some).map_err(|e| EngineError::node(format!("The input schema is not valid JSON: {e}"))),
        other => Ok(Some(other)),
    }
}

/// `{name}` placeholders in a string.
fn placeholders(s: &str, out: &mut Vec<String>) {
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        let after = &rest[i + 1..];
        let Some(j) = after.find('}') else { break };
        let name = &after[..j];
        if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-') && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
        rest = &after[j + 1..];
    }
}

/// HTTP Request Tool 1.x: the arguments its placeholders and model-provided values ask for.
fn http_tool_arguments(node: &Node) -> Vec<String> {
    let p = &node.parameters;
    let mut names = vec![];
    for key in ["url", "jsonQuery", "jsonHeaders", "jsonBody"] {
        if let Some(s) = p.get(key).and_then(Value::as_str) {
            placeholders(s, &mut names);
        }
    }
    for list in ["parametersQuery", "parametersHeaders", "parametersBody"] {
        for v in p.pointer(&format!("/{list}/values")).and_then(Value::as_array).into_iter().flatten() {
            let provider = v.get("valueProvider").and_then(Value::as_str).unwrap_or("modelRequired");
            match provider {
                "modelRequired" | "modelOptional" => {
                    if let Some(n) = v.get("name").and_then(Value::as_str).filter(|n| !names.iter().any(|x| x == n)) {
                        names.push(n.to_owned());
                    }
                }
                _ => {
                    if let Some(s) = v.get("value").and_then(Value::as_str) {
                        placeholders(s, &mut names);
                    }
                }
            }
        }
    }
    names
}

fn http_tool_schema(node: &Node) -> Value {
    let defs: Vec<&Value> = node.parameters.pointer("/placeholderDefinitions/values").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
    let optional: Vec<&str> = ["parametersQuery", "parametersHeaders", "parametersBody"]
        .iter()
        .flat_map(|l| node.parameters.pointer(&format!("/{l}/values")).and_then(Value::as_array).into_iter().flatten())
        .filter(|v| v.get("valueProvider").and_then(Value::as_str) == Some("modelOptional"))
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    let mut props = Map::new();
    let mut required = vec![];
    for name in http_tool_arguments(node) {
        let def = defs.iter().find(|d| d.get("name").and_then(Value::as_str) == Some(name.as_str()));
        let ty = match def.and_then(|d| d.get("type")).and_then(Value::as_str).unwrap_or("string") {
            "number" => "number",
            "boolean" => "boolean",
            "json" => "object",
            _ => "string",
        };
        let mut p = json!({"type": ty});
        if let Some(d) = def.and_then(|d| d.get("description")).and_then(Value::as_str) {
            p["description"] = json!(d);
        }
        if !optional.contains(&name.as_str()) {
            required.push(json!(name));
        }
        props.insert(name, p);
    }
    json!({"type": "object", "properties": props, "required": required})
}

/// The tool `node` supplies (resolved in the sub-node's context `ctx`).
pub fn supply<'a>(ctx: &mut NodeContext<'_>, node: &'a Node, item: usize) -> Result<Tool<'a>> {
    let v = ctx.version();
    let described = |ctx: &mut NodeContext<'_>, key: &str| -> Result<String> {
        let d = ctx.param_str(key, item, "")?;
        Ok(if d.trim().is_empty() { format!("Call the tool {}", node.name) } else { d })
    };
    // older versions name the tool in a parameter; current ones by the node name
    let named = |ctx: &mut NodeContext<'_>, up_to: f64| -> Result<String> {
        let n = if v <= up_to { ctx.param_str("name", item, "")? } else { String::new() };
        Ok(if n.trim().is_empty() { tool_name(&node.name) } else { n })
    };
    let (name, description, parameters, text_input) = match node.node_type.as_str() {
        "@n8n/n8n-nodes-langchain.toolCalculator" => (
            "calculator".to_owned(),
            "Useful for getting the result of a math expression. The input to this tool should be a valid mathematical expression that could be executed by a simple calculator.".to_owned(),
            text_schema(),
            true,
        ),
        "@n8n/n8n-nodes-langchain.toolCode" => {
            if ctx.param_str("language", item, "javaScript")? != "javaScript" {
                return Err(EngineError::node("Code Tool: only JavaScript is supported on this instance (Python is not)"));
            }
            let schema = input_schema(ctx, item)?;
            let text = schema.is_none();
            (named(ctx, 1.1)?, described(ctx, "description")?, schema.unwrap_or_else(text_schema), text)
        }
        "@n8n/n8n-nodes-langchain.toolWorkflow" if v >= 2.0 => (named(ctx, 0.0)?, described(ctx, "description")?, from_ai_schema(node)?, false),
        "@n8n/n8n-nodes-langchain.toolWorkflow" => {
            let schema = input_schema(ctx, item)?;
            let text = schema.is_none();
            (named(ctx, 1.3)?, described(ctx, "description")?, schema.unwrap_or_else(text_schema), text)
        }
        "@n8n/n8n-nodes-langchain.toolHttpRequest" => {
            let mut schema = http_tool_schema(node);
            merge_schema(&mut schema, from_ai_schema(node)?);
            (tool_name(&node.name), described(ctx, "toolDescription")?, schema, false)
        }
        "n8n-nodes-base.httpRequestTool" => (tool_name(&node.name), described(ctx, "toolDescription")?, from_ai_schema(node)?, false),
        other => return Err(EngineError::node(format!("{other} is not a tool this instance supports"))),
    };
    Ok(Tool { node, spec: ToolSpec { name, description, parameters }, text_input, mcp_tool: None })
}

fn merge_schema(into: &mut Value, other: Value) {
    let (Some(props), Some(req)) = (other.get("properties").and_then(Value::as_object), other.get("required").and_then(Value::as_array)) else { return };
    if let Some(p) = into.get_mut("properties").and_then(Value::as_object_mut) {
        for (k, v) in props {
            p.entry(k.clone()).or_insert(v.clone());
        }
    }
    if let Some(r) = into.get_mut("required").and_then(Value::as_array_mut) {
        r.extend(req.iter().filter(|x| !r.contains(x)).cloned().collect::<Vec<_>>());
    }
}

/// What one tool call gave: the text the model sees, and the items its
/// run records (n8n's shape for that kind of tool).
pub struct ToolOutput {
    pub observation: String,
    pub record: Vec<Value>,
}

impl ToolOutput {
    /// A LangChain tool's answer: the run records `{response}`.
    fn text(observation: String) -> Self {
        ToolOutput { record: vec![json!({"response": observation})], observation }
    }
}

impl Tool<'_> {
    /// What the tool gets for a call's arguments: the text of a free-text
    /// tool, else the arguments object.
    pub fn query(&self, args: &Value) -> Value {
        match (self.text_input, args) {
            (true, Value::Object(o)) => o.get("input").cloned().or_else(|| (o.len() == 1).then(|| o.values().next().cloned()).flatten()).unwrap_or(Value::String(String::new())),
            _ => args.clone(),
        }
    }

    /// The call's input as its run records it: a node used as a tool (n8n's
    /// `usableAsTool`) records the arguments themselves, LangChain tools
    /// record `{query}`.
    pub fn record_input(&self, args: &Value) -> Value {
        if self.node.node_type.starts_with("n8n-nodes-base.") {
            return args.clone();
        }
        json!({"query": self.query(args)})
    }

    /// Runs the tool for `args` in its sub-node context `ctx` (`$fromAI` reads `args`).
    pub fn run(&self, ctx: &mut NodeContext<'_>, args: &Value, item: usize) -> Result<ToolOutput> {
        let query = self.query(args);
        match self.node.node_type.as_str() {
            "@n8n/n8n-nodes-langchain.toolCalculator" => {
                let text = match &query {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                calculator::evaluate(&text).map(calculator::format).map(ToolOutput::text).map_err(EngineError::node)
            }
            "@n8n/n8n-nodes-langchain.toolCode" => {
                let code = ctx.raw("jsCode").and_then(Value::as_str).unwrap_or_default().to_owned();
                let source = format!(
                    "const query = {query};\nconst __result = await (async function() {{\n{code}\n}}).call({{}});\nreturn [{{json: {{response: __result === undefined ? null : __result}}}}];"
                );
                let out = ctx.run_code(&source, expression::CodeMode::AllItems, item as i64)?;
                ctx.console.extend(out.console);
                let response = out.value.pointer("/0/json/response").cloned().unwrap_or(Value::Null);
                Ok(ToolOutput::text(match response {
                    Value::String(s) => s,
                    other => other.to_string(),
                }))
            }
            "@n8n/n8n-nodes-langchain.toolWorkflow" => self.run_workflow(ctx, &query, item),
            "@n8n/n8n-nodes-langchain.toolHttpRequest" => {
                let request = http_request_node(self.node, args)?;
                run_http(ctx, &request, item).map(|(text, _)| ToolOutput::text(text))
            }
            "n8n-nodes-base.httpRequestTool" => {
                // n8n's node-as-tool: the items' json, recorded as `{response}`
                let (text, items) = run_http(ctx, self.node, item)?;
                Ok(ToolOutput { observation: text, record: vec![json!({"response": items})] })
            }
            "@n8n/n8n-nodes-langchain.mcpClientTool" => super::mcp_client_tool::call(ctx, self.mcp_tool.as_deref().unwrap_or(&self.spec.name), args, item).map(ToolOutput::text),
            other => Err(EngineError::node(format!("{other} is not a tool this instance supports"))),
        }
    }

    fn run_workflow(&self, ctx: &mut NodeContext<'_>, query: &Value, item: usize) -> Result<ToolOutput> {
        let workflow = crate::nodes::execute_workflow::workflow_json(ctx)?;
        let input = if ctx.version() >= 2.0 {
            // the mapped workflow inputs, `$fromAI` values filled in
            match ctx.param_opt("workflowInputs.value", item)? {
                Some(Value::Object(o)) => Value::Object(o),
                _ => json!({}),
            }
        } else {
            let mut o = Map::new();
            o.insert("query".into(), query.clone());
            for f in ctx.param("fields.values", item, json!([]))?.as_array().cloned().unwrap_or_default() {
                let Some(name) = f.get("name").and_then(Value::as_str) else { continue };
                let ty = f.get("type").and_then(Value::as_str).unwrap_or("stringValue");
                let key = if ty.ends_with("Value") { ty.to_owned() } else { format!("{ty}Value") };
                o.insert(name.to_owned(), f.get(&key).cloned().unwrap_or(Value::Null));
            }
            Value::Object(o)
        };
        let mut children = 0;
        let out = crate::nodes::execute_workflow::run_child(ctx, &workflow, vec![Item::new(input)], &mut children)?;
        if ctx.version() < 2.0 {
            let key = ctx.param_str("responsePropertyName", item, "response")?;
            return match out.first().and_then(|i| i.json.get(&key).cloned()) {
                Some(Value::String(s)) => Ok(ToolOutput::text(s)),
                Some(other) => Ok(ToolOutput::text(other.to_string())),
                None => Err(EngineError::node(format!("No response property \"{key}\" found in the sub-workflow's output"))),
            };
        }
        // 2+: the last node's first item, given to the model as indented
        // JSON; the run records that item (n8n's WorkflowToolService)
        let first = out.first().map(|i| (*i.json).clone()).ok_or_else(|| EngineError::node("There was an error: \"The workflow did not return a response\""))?;
        let observation = match &first {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        Ok(ToolOutput { observation, record: vec![first] })
    }
}

fn substitute(s: &str, args: &Value, encode: bool) -> String {
    let mut out = s.to_owned();
    if let Value::Object(o) = args {
        for (k, v) in o {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let text = if encode { url::form_urlencoded::byte_serialize(text.as_bytes()).collect() } else { text };
            out = out.replace(&format!("{{{k}}}"), &text);
        }
    }
    out
}

/// HTTP Request Tool 1.x as the HTTP Request node (v4.2) request it describes,
/// its placeholders and model-provided values filled from `args`.
fn http_request_node(tool: &Node, args: &Value) -> Result<Node> {
    let p = &tool.parameters;
    let s = |k: &str, d: &str| p.get(k).and_then(Value::as_str).unwrap_or(d).to_owned();
    let b = |k: &str| p.get(k).and_then(Value::as_bool).unwrap_or(false);
    let values = |list: &str| -> Vec<Value> {
        p.pointer(&format!("/{list}/values"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let name = v.get("name").and_then(Value::as_str)?;
                let provider = v.get("valueProvider").and_then(Value::as_str).unwrap_or("modelRequired");
                let value = match provider {
                    "fieldValue" => match v.get("value") {
                        Some(Value::String(t)) => Value::String(substitute(t, args, false)),
                        other => other.cloned().unwrap_or(Value::Null),
                    },
                    _ => match args.get(name) {
                        Some(Value::String(t)) => Value::String(t.clone()),
                        Some(Value::Null) | None if provider == "modelOptional" => return None,
                        Some(other) => Value::String(other.to_string()),
                        None => Value::String(String::new()),
                    },
                };
                Some(json!({"name": name, "value": value}))
            })
            .collect()
    };
    let mut params = json!({
        "method": s("method", "GET"),
        "url": substitute(&s("url", ""), args, true),
        "authentication": s("authentication", "none"),
        "genericAuthType": s("genericAuthType", ""),
        "nodeCredentialType": s("nodeCredentialType", ""),
        "options": {},
    });
    if b("sendQuery") {
        params["sendQuery"] = json!(true);
        if s("specifyQuery", "keypair") == "json" {
            params["specifyQuery"] = json!("json");
            params["jsonQuery"] = json!(substitute(&s("jsonQuery", "{}"), args, false));
        } else {
            params["queryParameters"] = json!({"parameters": values("parametersQuery")});
        }
    }
    if b("sendHeaders") {
        params["sendHeaders"] = json!(true);
        if s("specifyHeaders", "keypair") == "json" {
            params["specifyHeaders"] = json!("json");
            params["jsonHeaders"] = json!(substitute(&s("jsonHeaders", "{}"), args, false));
        } else {
            params["headerParameters"] = json!({"parameters": values("parametersHeaders")});
        }
    }
    if b("sendBody") {
        params["sendBody"] = json!(true);
        params["contentType"] = json!("json");
        if s("specifyBody", "keypair") == "json" {
            params["specifyBody"] = json!("json");
            params["jsonBody"] = json!(substitute(&s("jsonBody", "{}"), args, false));
        } else {
            params["bodyParameters"] = json!({"parameters": values("parametersBody")});
        }
    }
    let mut node = tool.clone();
    node.node_type = "n8n-nodes-base.httpRequest".into();
    node.type_version = 4.2;
    node.parameters = params;
    Ok(node)
}

/// Runs `request` (an HTTP Request node's parameters) once, for the root's
/// item `item`: the answer as text, and its items' json.
fn run_http(ctx: &mut NodeContext<'_>, request: &Node, item: usize) -> Result<(String, Vec<Value>)> {
    let one: Vec<Item> = ctx.input(0).get(item).cloned().into_iter().collect();
    let one = if one.is_empty() { vec![Item::new(json!({}))] } else { one };
    ctx.with_sub_node(request, ctx.from_ai.clone(), |c| {
        c.inputs = vec![Some(Arc::new(one))];
        let out = crate::nodes::http::execute(c)?;
        let items = match out {
            crate::nodes::NodeOutput::Data(outs) => outs.into_iter().next().map(|i| i.as_ref().clone()).unwrap_or_default(),
            _ => vec![],
        };
        let jsons: Vec<Value> = items.iter().map(|i| (*i.json).clone()).collect();
        let text = match jsons.as_slice() {
            // a text answer arrives as `{data: "…"}`
            [Value::Object(o)] if o.len() == 1 && o.get("data").is_some_and(Value::is_string) => o["data"].as_str().unwrap_or_default().to_owned(),
            [one] => one.to_string(),
            many => Value::Array(many.to_vec()).to_string(),
        };
        Ok((text, jsons))
    })
}
