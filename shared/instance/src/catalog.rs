//! The builder's view of the engine's node catalog: search results, type
//! definitions and curated suggestions as text for the model. The node
//! descriptions themselves live in `engine::catalog`.

use engine::catalog::{self, NodeDescription};
use serde_json::Value;

/// The catalog entry of an exact node type name.
pub fn describe_exact(node_type: &str) -> Option<&'static NodeDescription> {
    catalog::all().iter().find(|d| d.name == node_type)
}

/// Credential types a node type accepts.
pub fn credential_types(d: &NodeDescription) -> Vec<String> {
    d.credentials.iter().filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
}

/// Number of main outputs the node has with these parameters.
pub fn output_count(d: &NodeDescription, parameters: &Value) -> usize {
    if d.name == "n8n-nodes-base.switch" {
        let mode = parameters.get("mode").and_then(Value::as_str).unwrap_or("rules");
        if mode == "expression" {
            return parameters.get("numberOutputs").and_then(Value::as_u64).unwrap_or(4) as usize;
        }
        let rules = parameters.pointer("/rules/values").and_then(Value::as_array).map_or(0, Vec::len);
        let fallback = parameters.pointer("/options/fallbackOutput").and_then(Value::as_str) == Some("extra");
        return rules.max(1) + usize::from(fallback);
    }
    d.outputs.len().max(1)
}

/// Number of main inputs.
pub fn input_count(d: &NodeDescription, parameters: &Value) -> usize {
    if d.name == "n8n-nodes-base.merge" {
        return parameters.get("numberInputs").and_then(Value::as_u64).unwrap_or(2) as usize;
    }
    d.inputs.len()
}

/// `search_nodes` output for several queries.
pub fn search_text(queries: &[String]) -> String {
    let mut out = String::new();
    for q in queries {
        let hits = catalog::search(q, 8);
        out.push_str(&format!("## Results for {q:?}\n"));
        if hits.is_empty() {
            out.push_str("No matching nodes. This instance implements the core nodes only; use the HTTP Request node (n8n-nodes-base.httpRequest) to call a service's API.\n\n");
            continue;
        }
        for h in hits {
            let Some(d) = describe_exact(&h.name) else { continue };
            out.push_str(&format!(
                "- nodeId: {} (\"{}\", version {}{})\n  {}\n",
                d.name,
                d.display_name,
                d.latest_version(),
                if d.is_trigger() { ", trigger" } else { "" },
                d.description
            ));
            let discriminators: Vec<String> = d
                .properties
                .iter()
                .filter(|p| matches!(p.name.as_str(), "resource" | "operation" | "mode") && p.prop_type == "options")
                .map(|p| {
                    let values: Vec<String> =
                        p.options.iter().flatten().filter_map(|o| o.get("value").map(|v| v.to_string())).collect();
                    format!("{}: {}", p.name, values.join(" | "))
                })
                .collect();
            if !discriminators.is_empty() {
                out.push_str(&format!("  discriminators: {}\n", discriminators.join("; ")));
            }
            let creds = credential_types(d);
            if !creds.is_empty() {
                out.push_str(&format!("  credentials: {}\n", creds.join(", ")));
            }
            if let Some(related) = related(&d.name) {
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
        let Some(d) = catalog::describe(&r.node_id) else {
            out.push_str(&format!("// {}: unknown node type; use search_nodes to find node IDs\n\n", r.node_id));
            continue;
        };
        let versions: Vec<String> = d.versions().iter().map(|v| v.to_string()).collect();
        out.push_str(&format!(
            "// {} — {} (node type \"{}\"; versions {}; use version {} unless told otherwise)\n// {}\n",
            d.display_name,
            if d.is_trigger() { "trigger" } else { "node" },
            d.name,
            versions.join(", "),
            r.version.clone().unwrap_or_else(|| d.latest_version().to_string()),
            d.description
        ));
        if let Some(v) = &r.version {
            if !versions.iter().any(|x| x == v) {
                out.push_str(&format!("// note: version {v} is not supported; supported versions are {}\n", versions.join(", ")));
            }
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
        out.push('\n');
    }
    out.push_str(SHARED_TYPES);
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

pub const CATEGORIES: &[&str] = &[
    "chatbot",
    "notification",
    "scheduling",
    "data_transformation",
    "data_persistence",
    "data_extraction",
    "document_processing",
    "form_input",
    "content_generation",
    "triage",
    "find_research",
];

/// Curated guidance per technique category (core nodes of this instance).
pub fn suggestions_text(categories: &[String]) -> String {
    let mut out = String::new();
    for c in categories {
        let text = match c.as_str() {
            "chatbot" => "Start with @n8n/n8n-nodes-langchain.chatTrigger; build the reply with n8n-nodes-base.set or call a model API with n8n-nodes-base.httpRequest; keep per-session state in a data table (n8n-nodes-base.dataTable) keyed by {{ $json.sessionId }}.",
            "notification" => "Trigger with n8n-nodes-base.scheduleTrigger or n8n-nodes-base.webhook; decide with n8n-nodes-base.if; send with n8n-nodes-base.httpRequest to the service's API (Slack/Teams/Discord webhooks take a POST with a JSON body). Put tokens in credentials (httpHeaderAuth), never in headers.",
            "scheduling" => "n8n-nodes-base.scheduleTrigger (rule.interval: [{ field: 'hours', hoursInterval: 1 }] or a cron expression); add n8n-nodes-base.dateTime to format times; n8n-nodes-base.wait to pause.",
            "data_transformation" => "n8n-nodes-base.set (assignments) to map fields; n8n-nodes-base.code for anything custom; n8n-nodes-base.splitOut / aggregate / summarize / sort / limit / removeDuplicates for list shaping; n8n-nodes-base.merge to join streams.",
            "data_persistence" => "n8n-nodes-base.dataTable (insert, get, update, upsert, delete rows); create tables first with create_data_table.",
            "data_extraction" => "n8n-nodes-base.httpRequest to fetch, n8n-nodes-base.html (extractHtmlContent with CSS selectors) to scrape, n8n-nodes-base.splitOut to turn arrays into items.",
            "document_processing" => "n8n-nodes-base.readBinaryFiles to load files, n8n-nodes-base.code to parse, n8n-nodes-base.crypto for hashes, n8n-nodes-base.httpRequest to send documents to an extraction API.",
            "form_input" => "n8n-nodes-base.formTrigger (formFields.values: [{ fieldLabel, fieldType, requiredField }]); validate with n8n-nodes-base.if; store with n8n-nodes-base.dataTable.",
            "content_generation" => "Call a model API with n8n-nodes-base.httpRequest (credential httpHeaderAuth), shape the prompt with n8n-nodes-base.set, post-process with n8n-nodes-base.code.",
            "triage" => "n8n-nodes-base.switch to route by rules (one output per rule, optional fallback), n8n-nodes-base.if for yes/no, n8n-nodes-base.filter to drop items.",
            "find_research" => "n8n-nodes-base.httpRequest against search APIs, n8n-nodes-base.splitInBatches to page through results, n8n-nodes-base.aggregate to collect them.",
            other => {
                out.push_str(&format!("## {other}\nUnknown category; available: {}\n\n", CATEGORIES.join(", ")));
                continue;
            }
        };
        out.push_str(&format!("## {c}\n{text}\n\n"));
    }
    out
}
