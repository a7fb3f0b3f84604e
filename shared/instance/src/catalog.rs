//! The builder's view of the engine's node catalog: search results, type
//! definitions and curated suggestions as text for the model. The node
//! descriptions themselves live in `engine::catalog`.

use engine::catalog::{self, NodeDescription};
use serde_json::Value;

/// The catalog entry of an exact node type name.
pub fn describe_exact(node_type: &str) -> Option<&'static NodeDescription> {
    catalog::describe_exact(node_type)
}

/// Credential types a node type accepts.
pub fn credential_types(d: &NodeDescription) -> Vec<String> {
    d.credentials.iter().filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
}

/// Number of main outputs the node has with these parameters.
pub fn output_count(d: &NodeDescription, parameters: &Value, version: f64) -> usize {
    if d.name == "n8n-nodes-base.respondToWebhook" {
        return if engine::nodes::respond::response_output(version, parameters) { 2 } else { 1 };
    }
    if d.name == "n8n-nodes-base.switch" {
        let mode = parameters.get("mode").and_then(Value::as_str).unwrap_or("rules");
        if mode == "expression" {
            return parameters.get("numberOutputs").and_then(Value::as_u64).unwrap_or(4) as usize;
        }
        let rules = parameters.pointer("/rules/values").and_then(Value::as_array).map_or(0, Vec::len);
        let fallback = parameters.pointer("/options/fallbackOutput").and_then(Value::as_str) == Some("extra");
        return rules.max(1) + usize::from(fallback);
    }
    d.outputs.iter().filter(|o| o.as_str() == "main").count().max(1)
}

/// Number of main inputs.
pub fn input_count(d: &NodeDescription, parameters: &Value) -> usize {
    if d.name == "n8n-nodes-base.merge" {
        return parameters.get("numberInputs").and_then(Value::as_u64).unwrap_or(2) as usize;
    }
    d.inputs.iter().filter(|i| i.as_str() == "main").count()
}

/// `search_nodes` output for several queries: [`crate::nodes::search`]'s
/// ranked results as text.
pub fn search_text(queries: &[String]) -> String {
    let mut out = String::new();
    for q in queries {
        let hits = crate::nodes::search(Some(q), None, Some(8)).map(|(h, _)| h).unwrap_or_default();
        out.push_str(&format!("## Results for {q:?}\n"));
        if hits.is_empty() {
            out.push_str("No matching nodes. This instance implements the core nodes only; use the HTTP Request node (n8n-nodes-base.httpRequest) to call a service's API.\n\n");
            continue;
        }
        for h in hits {
            let trigger = describe_exact(&h.name).is_some_and(|d| d.is_trigger());
            out.push_str(&format!(
                "- nodeId: {} (\"{}\", version {}{})\n  {}\n",
                h.name,
                h.display_name,
                h.version,
                if trigger { ", trigger" } else { "" },
                h.description
            ));
            if let Some(d) = &h.discriminators {
                let mut parts = Vec::new();
                if !d.resources.is_empty() {
                    let rs: Vec<String> = d.resources.iter().map(|r| format!("{} ({})", r.name, r.operations.join(" | "))).collect();
                    parts.push(format!("resource: {}", rs.join("; ")));
                }
                if !d.operations.is_empty() {
                    parts.push(format!("operation: {}", d.operations.join(" | ")));
                }
                if !d.modes.is_empty() {
                    parts.push(format!("mode: {}", d.modes.join(" | ")));
                }
                out.push_str(&format!("  discriminators: {}\n", parts.join("; ")));
            }
            if !h.credentials.is_empty() {
                out.push_str(&format!("  credentials: {}\n", h.credentials.join(", ")));
            }
            if let Some(hint) = &h.builder_hint_message {
                out.push_str(&format!("  @builderHint {hint}\n"));
            }
            if let Some(related) = related(&h.name) {
                out.push_str(&format!("  related: {related}\n"));
            }
        }
        out.push('\n');
    }
    out
}

fn related(node: &str) -> Option<&'static str> {
    Some(match node {
        "n8n-nodes-base.webhook" => "n8n-nodes-base.respondToWebhook (answer the caller)",
        "n8n-nodes-base.if" | "n8n-nodes-base.switch" => "n8n-nodes-base.merge (join branches again), n8n-nodes-base.filter",
        "n8n-nodes-base.splitInBatches" => "n8n-nodes-base.wait, n8n-nodes-base.httpRequest (loop over items)",
        "@n8n/n8n-nodes-langchain.chatTrigger" => "n8n-nodes-base.respondToWebhook",
        "n8n-nodes-base.httpRequest" => "n8n-nodes-base.splitOut (split a response array into items)",
        _ => return None,
    })
}

/// One requested node id, with optional discriminators.
#[derive(Debug, Clone)]
pub struct NodeIdRequest {
    pub node_id: String,
    pub version: Option<String>,
    pub resource: Option<String>,
    pub operation: Option<String>,
    pub mode: Option<String>,
}

/// `get_node_types` output: the TypeScript parameter types of each node.
pub fn types_text(requests: &[NodeIdRequest]) -> String {
    let mut out = String::new();
    for r in requests {
        match type_definition_text(r) {
            Ok((_, content)) => out.push_str(&content),
            Err(e) => out.push_str(&format!("// {}: {e}\n", r.node_id)),
        }
        out.push('\n');
    }
    out.push_str(SHARED_TYPES);
    out
}

/// The whole catalog as one reference document (the knowledge base's
/// `reference/node-types.md`): every node type's definition, by type name.
pub fn reference_text() -> String {
    let mut names: Vec<&str> = catalog::all().iter().map(|d| d.name.as_str()).collect();
    names.sort_unstable();
    let requests: Vec<NodeIdRequest> = names
        .into_iter()
        .map(|n| NodeIdRequest { node_id: n.to_owned(), version: None, resource: None, operation: None, mode: None })
        .collect();
    format!(
        "# Node types of this instance\n\nEvery node type the engine runs, with its versions, parameters (as TypeScript \
         types), credentials and outputs. Only these types exist here; call other services with HTTP Request.\n\n```ts\n{}```\n",
        types_text(&requests)
    )
}

/// One node's definition: `(version, TypeScript with builder hints)`, or
/// why there is none.
pub fn type_definition_text(r: &NodeIdRequest) -> Result<(String, String), String> {
    let Some(d) = catalog::describe(&r.node_id) else {
        return Err("unknown node type; use search_nodes to find node IDs".into());
    };
    let versions: Vec<String> = d.versions().iter().map(|v| v.to_string()).collect();
    let version = r.version.clone().unwrap_or_else(|| d.latest_version().to_string());
    let mut out = format!(
        "// {} — {} (node type \"{}\"; versions {}; use version {} unless told otherwise)\n// {}\n",
        d.display_name,
        if d.is_trigger() { "trigger" } else { "node" },
        d.name,
        versions.join(", "),
        version,
        d.description
    );
    if !versions.iter().any(|x| *x == version) {
        out.push_str(&format!("// note: version {version} is not supported; supported versions are {}\n", versions.join(", ")));
    }
    if let Some(hint) = crate::nodes::builder_hint(d) {
        out.push_str(&format!("/** @builderHint {hint} */\n"));
    }
    for (k, v) in [("resource", &r.resource), ("operation", &r.operation), ("mode", &r.mode)] {
        if let Some(v) = v {
            out.push_str(&format!("// requested {k} = {v:?}: use the union member with {k}: '{v}'\n"));
        }
    }
    out.push_str(&catalog::typescript(&d.name).unwrap_or_default());
    let creds = credential_types(d);
    if !creds.is_empty() {
        out.push_str(&format!("// credentials (node.credentials keys): {}\n", creds.join(", ")));
    }
    if let Some(names) = &d.output_names {
        out.push_str(&format!("// outputs: {}\n", names.iter().enumerate().map(|(i, n)| format!("{i} = {n}")).collect::<Vec<_>>().join(", ")));
    }
    Ok((version, out))
}

/// The shared value types a definition refers to.
pub fn shared_types_for(content: &str) -> String {
    let mut out = String::new();
    for block in SHARED_TYPES.split("\ntype ").skip(1) {
        let name = block.split_whitespace().next().unwrap_or_default();
        if content.contains(name) {
            out.push_str("type ");
            out.push_str(block.trim_end());
            out.push('\n');
        }
    }
    out
}

const SHARED_TYPES: &str = r#"// Shared parameter value types
type FilterValue = {
  options?: { caseSensitive?: boolean; leftValue?: string; typeValidation?: 'strict' | 'loose' };
  conditions: Array<{
    id?: string;
    leftValue: unknown;   // usually an expression: '={{ $json.field }}'
    rightValue?: unknown;
    operator: { type: 'string' | 'number' | 'boolean' | 'dateTime' | 'array' | 'object'; operation: string; singleValue?: boolean };
  }>;
  combinator: 'and' | 'or';
};
// string operations: equals, notEquals, contains, notContains, startsWith, endsWith, regex, exists, notExists, empty, notEmpty
// number operations: equals, notEquals, gt, lt, gte, lte; boolean: true, false, equals
type AssignmentCollectionValue = {
  assignments: Array<{ id?: string; name: string; value: unknown; type: 'string' | 'number' | 'boolean' | 'array' | 'object' }>;
};
type ResourceLocatorValue = { __rl: true; mode: 'list' | 'id' | 'url'; value: string };
"#;

/// Curated guidance per technique category ([`crate::nodes::suggested`] as text).
pub fn suggestions_text(categories: &[String]) -> String {
    let (results, unknown) = crate::nodes::suggested(categories);
    let mut out = String::new();
    for r in results {
        let nodes: Vec<String> = r
            .suggested_nodes
            .iter()
            .map(|n| match &n.note {
                Some(note) => format!("{} ({note})", n.name),
                None => n.name.clone(),
            })
            .collect();
        out.push_str(&format!("## {}\n{} {}\nNodes: {}\n\n", r.category, r.description, r.pattern_hint, nodes.join(", ")));
    }
    for c in unknown {
        out.push_str(&format!("## {c}\nUnknown category; available: {}\n\n", crate::nodes::CATEGORIES.join(", ")));
    }
    out
}
