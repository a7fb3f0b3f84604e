//! `nodes` (7 actions) over `instance::nodes`: list, describe,
//! type-definition, search, suggested, explore-resources, and execute (one
//! node run standalone, under the `runWorkflow` policy, its output wrapped
//! as untrusted data).

use super::schema::action_variant as action;
use super::untrusted::{envelope, json_envelope};
use super::{Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::nodes::{self, ExecuteOutcome, ExecuteRequest, ExploreRequest, TypeRequest};
use protocol::events::{ConfirmationRequest, Severity};
use serde_json::{json, Map, Value};

pub struct Nodes;

/// Grant keys longer than this are not offered: one approved URL must not
/// stand for every URL sharing its prefix.
pub const MAX_GRANT_KEY: usize = 255;

fn str_arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

fn execute_request(args: &Value) -> Result<ExecuteRequest, String> {
    serde_json::from_value(args.clone()).map_err(|e| format!("invalid execute request: {e}"))
}

/// `nodes:execute:<type>[:<scope>]`, when it fits the grant column.
pub fn grant_key(req: &ExecuteRequest) -> Option<String> {
    let key = match req.scope_value() {
        Some(v) => format!("nodes:execute:{}:{v}", req.node_type),
        None => format!("nodes:execute:{}", req.node_type),
    };
    (key.chars().count() <= MAX_GRANT_KEY).then_some(key)
}

fn schema() -> Value {
    let node_type = |d: &str| json!({"type": "string", "minLength": 1, "description": d});
    let node_request = json!({"oneOf": [
        {"type": "string", "minLength": 1, "description": "Node type, e.g. n8n-nodes-base.httpRequest"},
        {"type": "object", "description": "A node type narrowed to one version, resource, operation or mode", "properties": {
            "nodeType": node_type("Node type, e.g. n8n-nodes-base.slack"),
            "version": {"type": ["string", "number"], "description": "Version, e.g. 4.2 (default: the latest)"},
            "resource": {"type": "string", "description": "Only the parameters of this resource (the node's `resource` discriminator)"},
            "operation": {"type": "string", "description": "Only the parameters of this operation (the node's `operation` discriminator)"},
            "mode": {"type": "string", "description": "Only the parameters of this mode (the node's `mode` discriminator)"}
        }, "required": ["nodeType"], "additionalProperties": false}
    ]});
    json!({"oneOf": [
        action("list", "List the node types, optionally filtered", json!({
            "query": {"type": "string", "description": "Filter by name or description"},
            "gatewayCreditsOnly": {"type": "boolean", "description": "Return only nodes supported by Gateway credits"}
        }), &[]),
        action("describe", "One node type's description: versions, parameters, credentials, inputs and outputs", json!({
            "nodeType": node_type("Node type (e.g. n8n-nodes-base.httpRequest)")
        }), &["nodeType"]),
        action("type-definition", "Exact TypeScript parameter definitions of one to five node types, for writing workflow code", json!({
            "nodeTypes": {"type": "array", "minItems": 1, "maxItems": 5, "items": node_request,
                          "description": "One to five node requests: a node type string or {nodeType, version?, resource?, operation?, mode?}"}
        }), &["nodeTypes"]),
        action("search", "Ranked search for node types, with builder hints and discriminators", json!({
            "query": {"type": "string", "description": "Short search query: a service name or node purpose (never prefixed with n8n)"},
            "connectionType": {"type": "string", "enum": nodes::AI_CONNECTION_TYPES, "description": "AI sub-node connection type"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Maximum results. Default 10"}
        }), &[]),
        action("suggested", "Curated nodes per technique category", json!({
            "categories": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "string"},
                           "description": format!("One to three technique categories: {}", nodes::CATEGORIES.join(", "))}
        }), &["categories"]),
        action("explore-resources", "Run one of a node's dynamic lookups (list-search or load-options) with a stored credential", json!({
            "nodeType": node_type("Node type whose lookup to run (e.g. n8n-nodes-base.notion)"),
            "version": {"type": "number", "description": "Node type version the lookup belongs to"},
            "methodName": {"type": "string", "minLength": 1, "description": "Exact annotated list-search or load-options method"},
            "methodType": {"type": "string", "enum": ["listSearch", "loadOptions"], "description": "Kind of lookup: listSearch (searchable resource lists) or loadOptions (option lists)"},
            "credentialType": {"type": "string", "minLength": 1, "description": "Credential type the lookup authenticates with (e.g. notionApi)"},
            "credentialId": {"type": "string", "minLength": 1, "description": "ID of a stored credential of that type (credentials list shows the ids)"},
            "filter": {"type": "string", "description": "Search text"},
            "paginationToken": {"type": "string", "description": "Token from a previous result"},
            "currentNodeParameters": {"type": "object", "description": "Parameters needed by dependent lookups"}
        }), &["nodeType", "version", "methodName", "methodType", "credentialType", "credentialId"]),
        action("execute", "Really run one node standalone with real credentials; asks the user first", json!({
            "type": node_type("Full node type name, e.g. n8n-nodes-base.set"),
            "version": {"type": "number", "description": "Node type version"},
            "config": {"type": "object", "description": "The node's configuration, as a workflow-sdk node's config", "properties": {
                "parameters": {"type": "object", "description": "Same shape as workflow-sdk NodeConfig.parameters"},
                "credentials": {"type": "object", "description": "Resolved credential references {id, name} by credential type"}
            }, "required": ["parameters"], "additionalProperties": false},
            "input": {"type": "array", "items": {"type": "object"}, "description": "Input items {json} (defaults to one empty item)"},
            "timeoutMs": {"type": "integer", "minimum": 1, "maximum": 60000, "description": "Max execution time, capped at 60 s"}
        }), &["type", "version", "config"]),
    ]})
}

impl Tool for Nodes {
    fn name(&self) -> &'static str {
        "nodes"
    }

    fn description(&self) -> &'static str {
        "The node types of this instance: list, describe, type-definition (exact TypeScript parameters, 1-5 nodes), search \
(ranked, with builder hints and discriminators), suggested (nodes per technique category), explore-resources (a node's \
dynamic lookups with a credential), execute (really runs one node standalone with real credentials; asks the user first)."
    }

    fn input_schema(&self) -> Value {
        schema()
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            if str_arg(args, "action") != Some("execute") {
                return Ok(None);
            }
            let req = execute_request(args)?;
            // Field-level errors before anyone is asked.
            let d = nodes::check_execute(&req).map_err(|e| e.message())?;
            let inst = ctx.instance()?;
            let caller = ctx.caller();
            let project = inst.write_project(&caller, "workflow:execute").await.map_err(|e| e.message())?;
            let mut creds = Vec::new();
            for (kind, r) in req.config.credentials.iter().flatten() {
                let id = r.get("id").and_then(Value::as_str).unwrap_or_default();
                let picked = inst.pick_credential(&caller, &project, kind, id).await.map_err(|e| e.message())?;
                creds.push(json!({"credentialType": kind, "name": picked.name}));
            }
            let mut request = ConfirmationRequest::approval(
                "",
                "",
                "nodes",
                Map::new(),
                Severity::Warning,
                format!("Run the {} node once, standalone? It really runs: whatever it does (calls, writes) happens.", d.display_name),
            );
            request.resource_name = Some(d.display_name.clone());
            let p = &req.config.parameters;
            request.approval_details = Some(json!({
                "action": "execute-node",
                "nodeType": d.name,
                "version": req.version,
                "resource": p.get("resource"),
                "operation": p.get("operation"),
                "scope": req.scope_value(),
                "credentials": creds,
                "inputItems": req.input.as_ref().map_or(1, Vec::len),
            }));
            Ok(Some(Gate::permission(request, "runWorkflow")))
        })
    }

    fn allow_key(&self, args: &Value) -> Option<String> {
        if str_arg(args, "action") != Some("execute") {
            return None;
        }
        execute_request(args).ok().as_ref().and_then(grant_key)
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match str_arg(&args, "action") {
                Some("list") => {
                    if args.get("gatewayCreditsOnly").and_then(Value::as_bool) == Some(true) {
                        return ToolOutcome::Done(json!({"nodes": []}));
                    }
                    ToolOutcome::Done(json!({"nodes": nodes::list(str_arg(&args, "query"))}))
                }
                Some("describe") => match nodes::describe(str_arg(&args, "nodeType").unwrap_or_default()) {
                    Ok(v) => ToolOutcome::Done(v),
                    Err(e) => ToolOutcome::Failed(e.message()),
                },
                Some("type-definition") => type_definitions(&args),
                Some("search") => {
                    let limit = args.get("limit").and_then(Value::as_u64).map(|l| l as usize);
                    match nodes::search(str_arg(&args, "query"), str_arg(&args, "connectionType"), limit) {
                        Ok((results, total)) => ToolOutcome::Done(json!({"results": results, "totalResults": total})),
                        Err(e) => ToolOutcome::Failed(e.message()),
                    }
                }
                Some("suggested") => {
                    let categories: Vec<String> =
                        args.get("categories").and_then(|c| serde_json::from_value(c.clone()).ok()).unwrap_or_default();
                    if categories.is_empty() || categories.len() > 3 {
                        return ToolOutcome::Failed("categories must hold one to three categories".into());
                    }
                    let (results, unknown) = nodes::suggested(&categories);
                    ToolOutcome::Done(json!({"results": results, "unknownCategories": unknown}))
                }
                Some("explore-resources") => explore(ctx, &args).await,
                Some("execute") => execute(ctx, &args).await,
                other => ToolOutcome::Failed(format!("unknown nodes action {other:?}")),
            }
        })
    }
}

fn type_definitions(args: &Value) -> ToolOutcome {
    let Some(list) = args.get("nodeTypes").and_then(Value::as_array).filter(|l| (1..=5).contains(&l.len())) else {
        return ToolOutcome::Failed("nodeTypes must hold one to five node requests".into());
    };
    let mut definitions = Vec::new();
    for entry in list {
        let req = match entry {
            Value::String(s) => TypeRequest::plain(s.clone()),
            other => match serde_json::from_value::<TypeRequest>(other.clone()) {
                Ok(r) => r,
                Err(e) => return ToolOutcome::Failed(format!("invalid node request {other}: {e}")),
            },
        };
        definitions.push(nodes::type_definition(&req));
    }
    let failed: Vec<&str> = definitions.iter().filter(|d| d.error.is_some()).map(|d| d.node_id.as_str()).collect();
    let mut out = json!({"definitions": definitions});
    if !failed.is_empty() {
        out["error"] = json!(format!("No definition for {}; search the nodes for the right type names", failed.join(", ")));
    }
    ToolOutcome::Done(out)
}

async fn explore(ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
    let req: ExploreRequest = match serde_json::from_value(args.clone()) {
        Ok(r) => r,
        Err(e) => return ToolOutcome::Failed(format!("invalid explore-resources request: {e}")),
    };
    let inst = match ctx.instance() {
        Ok(i) => i,
        Err(e) => return ToolOutcome::Failed(e),
    };
    match inst.explore_resources(&ctx.caller(), &req).await {
        // Names and values come from the service: untrusted.
        Ok(found) => {
            let mut out = json!({
                "results": json_envelope("node-resources", &serde_json::to_value(&found.results).unwrap_or_default()),
                "builderHint": "Put a result's value in the parameter (a resource locator: {__rl: true, mode: 'list', value, cachedResultName: name}).",
            });
            if let Some(t) = found.pagination_token {
                out["paginationToken"] = json!(t);
            }
            ToolOutcome::Done(out)
        }
        Err(e) => ToolOutcome::Done(json!({"results": [], "error": e.message()})),
    }
}

async fn execute(ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
    let req = match execute_request(args) {
        Ok(r) => r,
        Err(e) => return ToolOutcome::Failed(e),
    };
    let inst = match ctx.instance() {
        Ok(i) => i,
        Err(e) => return ToolOutcome::Failed(e),
    };
    match inst.execute_node(&ctx.caller(), &req).await {
        Ok(ExecuteOutcome::Success { items, total }) => {
            let mut out = json!({"status": "success", "output": json_envelope("execution-output", &Value::Array(items.clone()))});
            if items.len() < total {
                out["truncated"] = json!({"shown": items.len(), "total": total});
            }
            ToolOutcome::Done(out)
        }
        Ok(ExecuteOutcome::Withheld { total }) => {
            ToolOutcome::Done(json!({"status": "success", "itemCount": total, "suppressed": instance::executions::view::WITHHELD}))
        }
        Ok(ExecuteOutcome::Error { message, description, node_error_type }) => {
            let mut error = json!({"message": message});
            if let Some(d) = description {
                // Error details can quote the service's answer.
                error["description"] = json!(envelope("execution-output", &d));
            }
            if let Some(t) = node_error_type {
                error["nodeErrorType"] = json!(t);
            }
            ToolOutcome::Done(json!({"status": "error", "error": error}))
        }
        Err(e) => ToolOutcome::Done(json!({"status": "error", "error": {"message": e.message()}})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_keys_are_scoped_and_withheld_when_too_long() {
        let args = |params: Value| json!({"action": "execute", "type": "n8n-nodes-base.httpRequest", "version": 4.2, "config": {"parameters": params}});
        assert_eq!(
            Nodes.allow_key(&args(json!({"url": "http://127.0.0.1:1/a", "method": "GET"}))).as_deref(),
            Some("nodes:execute:n8n-nodes-base.httpRequest:http://127.0.0.1:1/a")
        );
        let long = format!("https://example.com/{}", "a".repeat(300));
        assert_eq!(Nodes.allow_key(&args(json!({"url": long}))), None);
        let dt = json!({"action": "execute", "type": "n8n-nodes-base.dataTable", "version": 1,
                        "config": {"parameters": {"resource": "row", "operation": "get"}}});
        assert_eq!(Nodes.allow_key(&dt).as_deref(), Some("nodes:execute:n8n-nodes-base.dataTable:row:get"));
        assert_eq!(Nodes.allow_key(&json!({"action": "search", "query": "x"})), None);
    }

    #[test]
    fn the_schema_covers_all_seven_actions_and_type_definitions_report_misses() {
        let s = Nodes.input_schema();
        let actions: Vec<&str> = s["oneOf"].as_array().unwrap().iter().filter_map(|v| v["properties"]["action"]["const"].as_str()).collect();
        assert_eq!(actions, ["list", "describe", "type-definition", "search", "suggested", "explore-resources", "execute"]);
        assert_eq!(crate::tools::schema::undescribed_fields(&s), Vec::<String>::new(), "every field has a description");
        let ToolOutcome::Done(v) = type_definitions(&json!({"nodeTypes": ["n8n-nodes-base.set", {"nodeType": "n8n-nodes-base.nope", "version": 1}]})) else {
            panic!("type-definition failed")
        };
        assert!(v["definitions"][0]["content"].as_str().unwrap().contains("n8n-nodes-base.set"));
        assert_eq!(v["definitions"][1]["nodeId"], "n8n-nodes-base.nope");
        assert!(v["error"].as_str().unwrap().contains("n8n-nodes-base.nope"));
        assert!(matches!(type_definitions(&json!({"nodeTypes": ["a", "b", "c", "d", "e", "f"]})), ToolOutcome::Failed(_)));
    }
}
