//! `credentials` (6 actions): list, get, delete (approval), search-types,
//! test, setup (a credential card the person answers). A front door to
//! `instance::credentials`: the model never sees a secret — it lists and
//! tests credentials, and asks the person to pick or create one; the person
//! types secrets into the credentials REST API, never into the chat.

use super::schema::action_variant as action;
use super::{Decision, Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::credentials::{self as creds, CredentialRef};
use instance::{Caller, Instance, InstanceError};
use protocol::events::{ConfirmationRequest, CredentialFlow, Severity};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use store::data::credentials::CredentialQuery;

pub struct Credentials;

/// At most this many credential requests in one card.
const MAX_SETUP_REQUESTS: usize = 20;

fn str_arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

fn id_arg(args: &Value) -> Result<&str, String> {
    str_arg(args, "credentialId").filter(|s| !s.trim().is_empty()).ok_or_else(|| "credentialId is required".to_owned())
}

fn fail(e: InstanceError) -> ToolOutcome {
    ToolOutcome::Failed(e.message())
}

impl Tool for Credentials {
    fn name(&self) -> &'static str {
        "credentials"
    }

    fn description(&self) -> &'static str {
        "Credentials of this instance: list, get, delete (irreversible; asks the user), search-types, test (really connects), \
setup (opens a card where the user picks an existing credential or creates one). You never see or handle secrets: never ask \
the user to paste one in the chat; use setup, and the user enters it in the credential form."
    }

    fn input_schema(&self) -> Value {
        let id = json!({"type": "string", "minLength": 1, "description": "Credential ID"});
        json!({"oneOf": [
            action("list", "List the credentials you can use (metadata only, never secrets)", json!({
                "type": {"type": "string", "description": "Filter by credential type (e.g. `notionApi`)"},
                "name": {"type": "string", "description": "Case-insensitive substring filter on the credential name"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "Page size. Default 50 and maximum 200"},
                "offset": {"type": "integer", "minimum": 0, "description": "Number of credentials to skip. Default 0"}
            }), &[]),
            action("get", "One credential's metadata and the node types that can use it", json!({"credentialId": id}), &["credentialId"]),
            action("delete", "Delete a credential permanently. Asks the user first", json!({
                "credentialId": id,
                "credentialName": {"type": "string", "description": "Display name for the confirmation message"}
            }), &["credentialId"]),
            action("search-types", "Search the credential types by service name", json!({
                "query": {"type": "string", "description": "Search query, typically the service name. Required unless gatewayCreditsOnly is true"},
                "gatewayCreditsOnly": {"type": "boolean", "description": "Return credential types supported by Gateway credits"}
            }), &[]),
            action("test", "Test a credential: really connects to its service", json!({"credentialId": id}), &["credentialId"]),
            action("setup", "Open a card where the user picks an existing credential or creates one", json!({
                "credentials": {"type": "array", "minItems": 1, "description": "Credentials the user should pick or create", "items": {
                    "type": "object", "properties": {
                        "credentialType": {"type": "string", "minLength": 1, "description": "Credential type name (e.g. `httpHeaderAuth`)"},
                        "reason": {"type": "string", "description": "Why this credential is needed (shown to the user)"},
                        "suggestedName": {"type": "string", "description": "Name to suggest for a new credential"},
                        "preferNew": {"type": "boolean", "description": "The user asked for a new credential rather than an existing one"},
                        "setupHint": {"type": "object", "description": "Researched recipe for the credential form (docs URL, test URL, fields)"}
                    }, "required": ["credentialType"], "additionalProperties": false}},
                "workflowId": {"type": "string", "description": "The workflow the credentials are for, when one exists"},
                "projectId": {"type": "string", "description": "Project to create credentials in (defaults to the workflow's or your own)"},
                "requireUserSelection": {"type": "boolean", "description": "Keep the card open for an explicit choice"},
                "credentialFlow": {"type": "object", "description": "Where this card sits in the build flow (changes the card's wording and whether it settles without the user)",
                                   "properties": {"stage": {"type": "string", "enum": ["generic", "finalize"],
                                                            "description": "generic: credentials needed while building; finalize: the workflow is verified and the card asks for the credentials that make it production-ready (always shown)"}},
                                   "required": ["stage"], "additionalProperties": false}
            }), &["credentials"]),
        ]})
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            match str_arg(args, "action") {
                Some("delete") => delete_gate(ctx, args).await.map(Some),
                Some("setup") => setup_gate(ctx, args).await,
                _ => Ok(None),
            }
        })
    }

    /// `credentials:<action>:<credentialId>`: "always allow" on deleting one
    /// credential never covers another.
    fn allow_key(&self, args: &Value) -> Option<String> {
        // A setup card is a choice, never a standing permission.
        if str_arg(args, "action") == Some("setup") {
            return None;
        }
        super::resource_grant("credentials", args, &["credentialId"])
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let inst = match ctx.instance() {
                Ok(i) => i,
                Err(e) => return ToolOutcome::Failed(e),
            };
            let caller = ctx.caller();
            match str_arg(&args, "action") {
                Some("list") => list(inst, &caller, &args).await,
                Some("get") => get(inst, &caller, &args).await,
                Some("delete") => delete(inst, &caller, &args).await,
                Some("search-types") => search_types(&args),
                Some("test") => match id_arg(&args) {
                    Ok(id) => match inst.test_credential(&caller, id).await {
                        Ok(o) => ToolOutcome::Done(json!({"success": o.success, "message": o.message})),
                        Err(e) => fail(e),
                    },
                    Err(e) => ToolOutcome::Failed(e),
                },
                // Reached when nothing needs the user (one service credential
                // per type) or the admin policy lets the agent choose.
                Some("setup") => setup_without_card(inst, &caller, &args).await,
                other => ToolOutcome::Failed(format!("unknown credentials action {other:?}")),
            }
        })
    }

    fn resume<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match str_arg(&args, "action") {
                Some("setup") => match ctx.instance() {
                    Ok(inst) => setup_answered(inst, &ctx.caller(), &args, decision).await,
                    Err(e) => ToolOutcome::Failed(e),
                },
                _ if decision.approved => self.run(ctx, args).await,
                _ => ToolOutcome::Done(json!({"success": false, "denied": true, "reason": "User denied the action"})),
            }
        })
    }
}

async fn list(inst: &Instance, caller: &Caller, args: &Value) -> ToolOutcome {
    let q = CredentialQuery {
        kind: str_arg(args, "type").map(str::to_owned),
        name: str_arg(args, "name").map(str::to_owned),
        limit: Some(args.get("limit").and_then(Value::as_u64).unwrap_or(50).clamp(1, 200) as usize),
        offset: args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize,
        ..CredentialQuery::default()
    };
    let list = match inst.list_credentials(caller, &q).await {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    let mut by_type: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &list.data {
        *by_type.entry(c.kind.as_str()).or_default() += 1;
    }
    let mut hints = Vec::new();
    let shared: Vec<&str> = by_type.iter().filter(|(_, n)| **n > 1).map(|(t, _)| *t).collect();
    if !shared.is_empty() {
        hints.push(format!(
            "Several credentials share the type {}: read their descriptions to choose, and get one for its full description if the preview does not settle it.",
            shared.join(", ")
        ));
    }
    if list.has_more {
        hints.push(format!("More credentials match: call again with offset {}.", q.offset + list.data.len()));
    }
    let credentials: Vec<Value> =
        list.data.iter().map(|c| json!({"id": c.id, "name": c.name, "type": c.kind, "description": c.description})).collect();
    let mut out = json!({"credentials": credentials, "total": list.total, "hasMore": list.has_more});
    if !hints.is_empty() {
        out["hint"] = json!(hints.join(" "));
    }
    ToolOutcome::Done(out)
}

async fn get(inst: &Instance, caller: &Caller, args: &Value) -> ToolOutcome {
    let id = match id_arg(args) {
        Ok(id) => id,
        Err(e) => return ToolOutcome::Failed(e),
    };
    match inst.get_credential(caller, id).await {
        Ok(d) => ToolOutcome::Done(json!({
            "id": d.credential.id,
            "name": d.credential.name,
            "type": d.credential.kind,
            "description": d.credential.description,
            "nodesWithAccess": d.nodes_with_access,
        })),
        Err(e) => fail(e),
    }
}

async fn delete_gate(ctx: &ToolContext<'_>, args: &Value) -> Result<Gate, String> {
    let id = id_arg(args)?;
    // The card names the credential: the name the model gave, else the stored one.
    let (name, kind) = match str_arg(args, "credentialName").filter(|n| !n.trim().is_empty()) {
        Some(n) => (n.to_owned(), None),
        None => {
            let d = ctx.instance()?.get_credential(&ctx.caller(), id).await.map_err(|e| e.message())?;
            (d.credential.name, Some(d.credential.kind))
        }
    };
    let mut req = ConfirmationRequest::approval(
        "",
        "",
        "credentials",
        Map::new(),
        Severity::Destructive,
        format!("Delete credential \"{name}\"? This cannot be undone."),
    );
    req.resource_name = Some(name);
    req.approval_details = Some(json!({"action": "delete", "irreversible": true, "credentialType": kind}));
    Ok(Gate::permission(req, "credentials.delete"))
}

async fn delete(inst: &Instance, caller: &Caller, args: &Value) -> ToolOutcome {
    match id_arg(args) {
        Ok(id) => match inst.delete_credential(caller, id).await {
            Ok(_) => ToolOutcome::Done(json!({"success": true})),
            Err(e) => fail(e),
        },
        Err(e) => ToolOutcome::Failed(e),
    }
}

fn search_types(args: &Value) -> ToolOutcome {
    if args.get("gatewayCreditsOnly").and_then(Value::as_bool) == Some(true) {
        // This instance has no Gateway credits: no type is covered by them.
        return ToolOutcome::Done(json!({"results": []}));
    }
    let Some(query) = str_arg(args, "query").filter(|q| !q.trim().is_empty()) else {
        return ToolOutcome::Failed("query is required unless gatewayCreditsOnly is true".into());
    };
    let results: Vec<Value> = creds::search_types(query)
        .into_iter()
        .map(|t| {
            json!({"type": t.name, "displayName": t.display_name, "description": t.description,
                   "genericAuth": t.generic_auth, "testable": t.testable})
        })
        .collect();
    ToolOutcome::Done(json!({"results": results}))
}

// ------------------------------------------------------------------ setup

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SetupItem {
    credential_type: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    suggested_name: Option<String>,
    #[serde(default)]
    prefer_new: bool,
    #[serde(default)]
    setup_hint: Option<Value>,
}

/// The card's content, per requested type.
struct Card {
    item: SetupItem,
    existing: Vec<CredentialRef>,
}

impl Card {
    /// The one credential that may be used without asking: a service type
    /// (never a generic one) with exactly one candidate, not asked to be new.
    fn auto(&self) -> Option<&CredentialRef> {
        (creds::is_service_scoped(&self.item.credential_type) && !self.item.prefer_new && self.existing.len() == 1)
            .then(|| &self.existing[0])
    }

    fn request(&self) -> Value {
        let mut r = json!({
            "credentialType": self.item.credential_type,
            "reason": self.item.reason.clone().unwrap_or_else(|| format!("Required for {}", self.item.credential_type)),
            "existingCredentials": self.existing,
        });
        if let Some(n) = &self.item.suggested_name {
            r["suggestedName"] = json!(n);
        }
        if self.item.prefer_new {
            r["preferNew"] = json!(true);
        }
        if let Some(h) = &self.item.setup_hint {
            r["setupHint"] = h.clone();
        }
        r
    }
}

/// The project the credentials are for: the given one, else the
/// workflow's, else the caller's own.
async fn setup_project(inst: &Instance, caller: &Caller, args: &Value) -> Result<String, InstanceError> {
    if let Some(p) = str_arg(args, "projectId") {
        inst.require_project(caller, p, "credential:read").await?;
        return Ok(p.to_owned());
    }
    if let Some(w) = str_arg(args, "workflowId") {
        return Ok(inst.workflow_access(caller, w, "workflow:read").await?.0.project_id);
    }
    inst.write_project(caller, "credential:create").await
}

/// The cards, or a validation error (a result the model reads and fixes).
async fn cards(inst: &Instance, caller: &Caller, args: &Value) -> Result<Result<(String, Vec<Card>), Value>, InstanceError> {
    let items: Vec<SetupItem> = match args.get("credentials").cloned().map(serde_json::from_value) {
        Some(Ok(items)) => items,
        _ => return Ok(Err(validation("credentials must be a list of {credentialType, reason?, suggestedName?, preferNew?, setupHint?}"))),
    };
    if items.is_empty() || items.len() > MAX_SETUP_REQUESTS {
        return Ok(Err(validation(&format!("credentials must hold 1-{MAX_SETUP_REQUESTS} requests"))));
    }
    for item in &items {
        if let Err(e) = creds::credential_type(&item.credential_type) {
            return Ok(Err(validation(&e.message())));
        }
    }
    let project = setup_project(inst, caller, args).await?;
    let mut out = Vec::new();
    for item in items {
        let existing = inst.usable_credentials(caller, &project, &item.credential_type).await?;
        out.push(Card { item, existing });
    }
    Ok(Ok((project, out)))
}

fn validation(message: &str) -> Value {
    json!({"success": false, "error": message})
}

fn finalize(args: &Value) -> bool {
    args.pointer("/credentialFlow/stage").and_then(Value::as_str) == Some("finalize")
}

/// Every card settles itself: nothing to ask.
fn all_auto(cards: &[Card], args: &Value) -> bool {
    let require = args.get("requireUserSelection").and_then(Value::as_bool).unwrap_or(false);
    !require && !finalize(args) && cards.iter().all(|c| c.auto().is_some())
}

async fn setup_gate(ctx: &ToolContext<'_>, args: &Value) -> Result<Option<Gate>, String> {
    let inst = ctx.instance()?;
    let (project, cards) = match cards(inst, &ctx.caller(), args).await.map_err(|e| e.message())? {
        Ok(c) => c,
        Err(_) => return Ok(None), // `run` answers with the validation error
    };
    if all_auto(&cards, args) {
        return Ok(None);
    }
    let names: Vec<&str> = cards.iter().map(|c| c.item.credential_type.as_str()).collect();
    let message = if finalize(args) {
        format!("Your workflow is verified. Add credentials to make it production-ready: {}", names.join(", "))
    } else if names.len() == 1 {
        format!("Select or create a {} credential", names[0])
    } else {
        format!("Select or create credentials: {}", names.join(", "))
    };
    let mut req = ConfirmationRequest::approval("", "", "credentials", Map::new(), Severity::Info, message);
    req.credential_requests = Some(cards.iter().map(Card::request).collect());
    req.project_id = Some(project);
    req.workflow_id = str_arg(args, "workflowId").map(str::to_owned);
    req.require_user_selection = args.get("requireUserSelection").and_then(Value::as_bool);
    req.credential_flow = args.get("credentialFlow").and_then(|f| serde_json::from_value::<CredentialFlow>(f.clone()).ok());
    Ok(Some(Gate::permission(req, "credentials.setup")))
}

fn completed(selected: BTreeMap<String, CredentialRef>, how: &str) -> Value {
    let names: Vec<String> = selected.iter().map(|(t, c)| format!("{t}: {}", c.name)).collect();
    let ids: BTreeMap<&String, &String> = selected.iter().map(|(t, c)| (t, &c.id)).collect();
    json!({"success": true, "credentials": ids, "message": format!("{how} {}", names.join(", "))})
}

async fn setup_without_card(inst: &Instance, caller: &Caller, args: &Value) -> ToolOutcome {
    let (_, cards) = match cards(inst, caller, args).await {
        Ok(Ok(c)) => c,
        Ok(Err(v)) => return ToolOutcome::Done(v),
        Err(e) => return fail(e),
    };
    let mut selected = BTreeMap::new();
    let mut open = Vec::new();
    for c in &cards {
        match c.auto() {
            Some(r) => {
                selected.insert(c.item.credential_type.clone(), r.clone());
            }
            None => open.push(format!("{} ({} candidates)", c.item.credential_type, c.existing.len())),
        }
    }
    if open.is_empty() {
        return ToolOutcome::Done(completed(selected, "Setup is already complete; using the only credential of each type:"));
    }
    ToolOutcome::Done(json!({
        "success": false,
        "error": format!("These need the user's choice and could not be set up without the card: {}", open.join(", ")),
        "credentials": selected.iter().map(|(t, c)| (t.clone(), c.id.clone())).collect::<BTreeMap<_, _>>(),
    }))
}

async fn setup_answered(inst: &Instance, caller: &Caller, args: &Value, decision: Decision) -> ToolOutcome {
    if !decision.approved {
        let reason = if decision.expired { "The credential card expired before the user answered." } else { "User deferred credential setup." };
        return ToolOutcome::Done(json!({"success": true, "deferred": true, "reason": reason}));
    }
    if let Some(auto) = &decision.setup.auto_setup {
        // The person asked for help creating it: what they need to enter, never values.
        return match creds::credential_type(&auto.credential_type) {
            Ok(t) => {
                let info = creds::CredentialTypeInfo::of(t);
                let required: Vec<Value> = info
                    .fields
                    .iter()
                    .filter(|f| f.required)
                    .map(|f| json!({"name": f.name, "displayName": f.display_name, "type": f.kind, "required": true, "description": f.description}))
                    .collect();
                ToolOutcome::Done(json!({"success": false, "needsBrowserSetup": true, "credentialType": t.name,
                                         "docsUrl": t.documentation_url, "requiredFields": required}))
            }
            Err(e) => ToolOutcome::Done(validation(&e.message())),
        };
    }
    let (project, cards) = match cards(inst, caller, args).await {
        Ok(Ok(c)) => c,
        Ok(Err(v)) => return ToolOutcome::Done(v),
        Err(e) => return fail(e),
    };
    let chosen = decision.chosen_credentials();
    let mut selected = BTreeMap::new();
    let mut problems = Vec::new();
    for t in chosen.keys() {
        if !cards.iter().any(|c| &c.item.credential_type == t) {
            problems.push(format!("{t} was not requested"));
        }
    }
    for c in &cards {
        let kind = &c.item.credential_type;
        match chosen.get(kind) {
            Some(id) => match inst.pick_credential(caller, &project, kind, id).await {
                Ok(r) => {
                    selected.insert(kind.clone(), r);
                }
                Err(e) => problems.push(format!("{kind}: {}", e.message())),
            },
            None => problems.push(format!("no {kind} credential was selected")),
        }
    }
    if problems.is_empty() {
        return ToolOutcome::Done(completed(selected, "The user selected"));
    }
    ToolOutcome::Done(json!({
        "success": false,
        "error": problems.join("; "),
        "credentials": selected.iter().map(|(t, c)| (t.clone(), c.id.clone())).collect::<BTreeMap<_, _>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(kind: &str, n: usize, prefer_new: bool) -> Card {
        Card {
            item: SetupItem { credential_type: kind.into(), reason: None, suggested_name: None, prefer_new, setup_hint: None },
            existing: (0..n).map(|i| CredentialRef { id: format!("c{i}"), name: format!("C{i}") }).collect(),
        }
    }

    #[test]
    fn only_a_single_service_credential_settles_without_the_user() {
        assert!(card("totpApi", 1, false).auto().is_some());
        assert!(card("totpApi", 2, false).auto().is_none());
        assert!(card("totpApi", 1, true).auto().is_none(), "the user asked for a new one");
        assert!(card("httpHeaderAuth", 1, false).auto().is_none(), "generic types always need a Continue");
        let args = json!({"credentials": []});
        assert!(all_auto(&[card("totpApi", 1, false)], &args));
        assert!(!all_auto(&[card("totpApi", 1, false)], &json!({"requireUserSelection": true})));
        assert!(!all_auto(&[card("totpApi", 1, false)], &json!({"credentialFlow": {"stage": "finalize"}})));
        let r = card("httpHeaderAuth", 1, true).request();
        assert_eq!(r["reason"], "Required for httpHeaderAuth");
        assert_eq!(r["existingCredentials"], json!([{"id": "c0", "name": "C0"}]));
        assert_eq!(r["preferNew"], true);
    }

    #[test]
    fn choices_come_from_credentials_or_the_pages_answers() {
        let d: Decision = serde_json::from_value(json!({"approved": true, "answers": {"credentials": {"a": "1", "b": null, "c": ""}}})).unwrap();
        assert_eq!(d.chosen_credentials(), BTreeMap::from([("a".to_owned(), "1".to_owned())]));
        let d: Decision = serde_json::from_value(json!({"approved": true, "setup": {"credentials": {"x": "9"}}, "answers": {"credentials": {"a": "1"}}})).unwrap();
        assert_eq!(d.chosen_credentials(), BTreeMap::from([("x".to_owned(), "9".to_owned())]));
        assert!(Decision::default().chosen_credentials().is_empty());
    }

    #[test]
    fn the_schema_covers_all_six_actions() {
        let s = Credentials.input_schema();
        let actions: Vec<&str> = s["oneOf"].as_array().unwrap().iter().filter_map(|v| v["properties"]["action"]["const"].as_str()).collect();
        assert_eq!(actions, ["list", "get", "delete", "search-types", "test", "setup"]);
        assert_eq!(crate::tools::schema::undescribed_fields(&s), Vec::<String>::new(), "every field has a description");
        assert!(crate::tools::schema::validate(&s, &json!({"action": "list", "limit": 50})).is_ok());
        assert!(crate::tools::schema::validate(&s, &json!({"action": "setup"})).is_err());
        assert!(Credentials.allow_key(&json!({"action": "setup"})).is_none());
    }

    #[test]
    fn a_delete_grant_covers_that_credential_only() {
        let one = json!({"action": "delete", "credentialId": "c1", "credentialName": "Old key"});
        let other = json!({"action": "delete", "credentialId": "c2"});
        assert_eq!(Credentials.allow_key(&one).as_deref(), Some("credentials:delete:c1"));
        let granted = Credentials.allow_key(&one).unwrap();
        assert!(!Credentials.covering_keys(&other).contains(&granted), "a grant for c1 does not cover c2");
        assert!(Credentials.covering_keys(&json!({"action": "delete", "credentialId": "c1"})).contains(&granted), "the display name is not part of the key");
        // Ids are escaped: no crafted id reaches another key.
        assert_ne!(Credentials.allow_key(&json!({"action": "delete", "credentialId": "c1:x"})), Credentials.allow_key(&json!({"action": "delete", "credentialId": "c1%3Ax"})));
        assert_eq!(Credentials.allow_key(&json!({"action": "delete", "credentialId": "x".repeat(300)})), None, "too long for the grant column");
    }
}
