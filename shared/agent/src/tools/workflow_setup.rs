//! `workflows(action="setup")` over `instance::setup`: one confirmation card
//! with a setup request per node still missing a credential or a required
//! parameter; the person's choices (credential ids, parameter values,
//! skipped nodes) are applied in one save on resume. The `workflows` tool
//! routes its `setup` action here.

use super::{Decision, Gate, ToolContext, ToolOutcome};
use instance::setup::{pending, SetupChoices, SetupOptions, SetupResult};
use instance::{Caller, Instance};
use protocol::events::{ConfirmationRequest, Severity};
use serde_json::{json, Map, Value};

/// The action's fields, for the `workflows` tool's schema.
pub fn properties() -> Value {
    let strings = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    json!({
        "workflowId": {"type": "string", "minLength": 1, "description": "Workflow to set up"},
        "projectId": {"type": "string", "description": "Project scope for credential creation"},
        "credentialHints": {"type": "array", "items": {"type": "object"}, "description": "Researched templates for custom auth credentials (shown on the card)"},
        "allowPlainGenericAuth": {"type": "boolean", "description": "Allow a user-selected plain generic auth type"},
        "preferNewCredentials": strings("Credential types for which the user explicitly requested a new credential"),
        "reopenSkipped": strings("Previously skipped credential types or node names to reopen at the user's request"),
        "includeAllNodes": {"type": "boolean", "description": "Include every node instead of only nodes changed by the last build (this conversation's last build-workflow of it; without one, every node is included)"}
    })
}

fn strings(args: &Value, key: &str) -> Vec<String> {
    args.get(key).and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default()
}

fn options(ctx: &ToolContext<'_>, args: &Value, test_credentials: bool) -> SetupOptions {
    SetupOptions {
        prefer_new: strings(args, "preferNewCredentials"),
        reopen_skipped: strings(args, "reopenSkipped"),
        thread: Some(ctx.thread_id.clone()),
        test_credentials,
        include_all_nodes: args.get("includeAllNodes").and_then(Value::as_bool).unwrap_or(false),
    }
}

fn workflow_id(args: &Value) -> &str {
    args.get("workflowId").and_then(Value::as_str).unwrap_or_default()
}

fn nothing_to_do(skipped: Vec<store::data::setup_skips::Skipped>) -> SetupResult {
    SetupResult {
        success: true,
        deferred: false,
        reason: Some("No nodes require setup.".into()),
        completed_nodes: Vec::new(),
        nodes_still_needing_setup: Vec::new(),
        skipped_by_user: skipped,
        failed_nodes: Vec::new(),
    }
}

fn done(r: SetupResult) -> ToolOutcome {
    ToolOutcome::Done(serde_json::to_value(r).unwrap_or_else(|e| json!({"success": false, "error": e.to_string()})))
}

/// The card, or `None` when nothing needs the person.
pub async fn gate(ctx: &ToolContext<'_>, args: &Value) -> Result<Option<Gate>, String> {
    let inst = ctx.instance()?;
    let caller = ctx.caller();
    if let Some(p) = args.get("projectId").and_then(Value::as_str) {
        inst.require_project(&caller, p, "credential:create").await.map_err(|e| e.message())?;
    }
    let a = inst.analyze_setup(&caller, workflow_id(args), &options(ctx, args, true)).await.map_err(|e| e.message())?;
    if a.requests.is_empty() {
        return Ok(None);
    }
    let mut req = ConfirmationRequest::approval("", "", "workflows", Map::new(), Severity::Info, "Configure credentials for your workflow");
    req.setup_requests = Some(a.requests.iter().filter_map(|r| serde_json::to_value(r).ok()).collect());
    req.workflow_id = Some(a.workflow_id.clone());
    req.project_id = Some(args.get("projectId").and_then(Value::as_str).map_or(a.project_id.clone(), str::to_owned));
    req.resource_name = Some(a.workflow_name.clone());
    req.approval_details = Some(json!({
        "action": "setup",
        "nodes": a.requests.iter().map(|r| &r.node.name).collect::<Vec<_>>(),
        "credentialHints": args.get("credentialHints"),
    }));
    Ok(Some(Gate::permission(req, "workflows.setup")))
}

/// Without a card: nothing to set up, or the admin policy lets the agent
/// apply what needs no choice.
pub async fn run(ctx: &ToolContext<'_>, args: &Value) -> ToolOutcome {
    let inst = match ctx.instance() {
        Ok(i) => i,
        Err(e) => return ToolOutcome::Failed(e),
    };
    let caller = ctx.caller();
    let opts = options(ctx, args, false);
    match inst.analyze_setup(&caller, workflow_id(args), &opts).await {
        Ok(a) if a.requests.is_empty() => done(nothing_to_do(a.skipped)),
        Ok(_) => result(inst.auto_setup(&caller, workflow_id(args), &opts).await),
        Err(e) => ToolOutcome::Failed(e.message()),
    }
}

fn result(r: Result<SetupResult, instance::InstanceError>) -> ToolOutcome {
    match r {
        Ok(r) => done(r),
        Err(e) => ToolOutcome::Failed(e.message()),
    }
}

/// The person answered the card.
pub async fn resume(ctx: &ToolContext<'_>, args: &Value, decision: Decision) -> ToolOutcome {
    let inst = match ctx.instance() {
        Ok(i) => i,
        Err(e) => return ToolOutcome::Failed(e),
    };
    let caller = ctx.caller();
    let opts = options(ctx, args, false);
    if !decision.approved {
        return deferred(inst, &caller, args, &opts, decision.expired).await;
    }
    let mut choices = SetupChoices {
        node_credentials: decision.setup.node_credentials.clone().unwrap_or_default(),
        node_parameters: decision.setup.node_parameters.clone().unwrap_or_default(),
        skipped_nodes: decision.setup.skipped_nodes.clone().unwrap_or_default(),
    };
    // A choice per credential type (a card grouped by type) applies to every
    // node that asked for that type.
    let by_type = decision.chosen_credentials();
    if !by_type.is_empty() {
        match inst.analyze_setup(&caller, workflow_id(args), &opts).await {
            Ok(a) => {
                for r in &a.requests {
                    let Some(t) = &r.credential_type else { continue };
                    if let Some(id) = by_type.get(t) {
                        choices.node_credentials.entry(r.node.name.clone()).or_default().entry(t.clone()).or_insert_with(|| id.clone());
                    }
                }
            }
            Err(e) => return ToolOutcome::Failed(e.message()),
        }
    }
    result(inst.apply_setup(&caller, workflow_id(args), &opts, &choices).await)
}

async fn deferred(inst: &Instance, caller: &Caller, args: &Value, opts: &SetupOptions, expired: bool) -> ToolOutcome {
    match inst.analyze_setup(caller, workflow_id(args), opts).await {
        Ok(a) => done(SetupResult {
            success: true,
            deferred: true,
            reason: Some(if expired { "The setup card expired before the user answered." } else { "User skipped workflow setup for now." }.into()),
            completed_nodes: Vec::new(),
            nodes_still_needing_setup: pending(&a.requests),
            skipped_by_user: a.skipped,
            failed_nodes: Vec::new(),
        }),
        Err(e) => ToolOutcome::Failed(e.message()),
    }
}
