//! Which blocking findings of an edited workflow become informational
//! (spec, `build-workflow`): an edit must not be blocked by a problem it did
//! not introduce. Only `INVALID_PARAMETER`, `HARDCODED_CREDENTIALS` and
//! `SWITCH_NO_OUTPUT_CONNECTIONS` can; a finding without a node name, or an
//! edit without a saved workflow to compare with, stays blocking, as does
//! every other code.
//!
//! - `INVALID_PARAMETER`: the saved workflow has the same finding (node,
//!   parameter, message).
//! - `HARDCODED_CREDENTIALS`: the saved workflow has the same finding and
//!   the node's authentication, credential selection, destination (a fixed,
//!   unchanged URL and method) and enabled state are unchanged; an
//!   expression URL stays blocking (its destination depends on data).
//!   Wiring, timeouts, response options and non-auth headers or query
//!   fields may change.
//! - `SWITCH_NO_OUTPUT_CONNECTIONS`: the same Switch was already enabled
//!   with no main outputs in the saved workflow. A new or re-enabled Switch,
//!   or one whose output branches were removed, stays blocking.

use crate::validate::{has_main_outputs, Finding, Severity, SECRET_HEADERS};
use serde_json::Value;

/// Parameters that decide where an HTTP Request goes and how it authenticates.
const AUTH_AND_DESTINATION: &[&str] = &["url", "method", "authentication", "genericAuthType", "nodeCredentialType"];

fn is_auth_header(name: &str) -> bool {
    SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str())
}

/// The saved state an edit is compared with.
pub struct Saved<'a> {
    /// The saved workflow JSON (`nodes`, `connections`).
    pub workflow: &'a Value,
    /// The saved workflow's own findings.
    pub findings: &'a [Finding],
}

fn node<'a>(wf: &'a Value, name: &str) -> Option<&'a Value> {
    wf.get("nodes")?.as_array()?.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(name))
}

fn enabled(n: &Value) -> bool {
    !n.get("disabled").and_then(Value::as_bool).unwrap_or(false)
}

fn same_finding(a: &Finding, b: &Finding) -> bool {
    a.code == b.code && a.node_name == b.node_name && a.parameter_path == b.parameter_path && a.message == b.message
}

fn auth_headers(n: &Value) -> Vec<(String, Value)> {
    n.pointer("/parameters/headerParameters/parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|h| {
            let name = h.get("name").and_then(Value::as_str)?;
            is_auth_header(name).then(|| (name.to_ascii_lowercase(), h.get("value").cloned().unwrap_or(Value::Null)))
        })
        .collect()
}

fn auth_unchanged(new: &Value, old: &Value) -> bool {
    let p = |n: &Value, k: &str| n.pointer(&format!("/parameters/{k}")).cloned();
    let url_fixed = p(new, "url").is_some_and(|u| u.as_str().is_some_and(|s| !s.starts_with('=')));
    url_fixed
        && AUTH_AND_DESTINATION.iter().all(|k| p(new, k) == p(old, k))
        && new.get("credentials") == old.get("credentials")
        && enabled(new) == enabled(old)
        && auth_headers(new) == auth_headers(old)
}

/// Whether a blocking finding of the edited workflow `new` is informational.
pub fn is_informational(f: &Finding, new: &Value, saved: Option<&Saved<'_>>) -> bool {
    let (Some(saved), Some(name)) = (saved, f.node_name.as_deref()) else { return false };
    match f.code.as_str() {
        "INVALID_PARAMETER" => saved.findings.iter().any(|s| same_finding(s, f)),
        "HARDCODED_CREDENTIALS" => {
            let before = saved.findings.iter().any(|s| s.code == f.code && s.node_name == f.node_name && s.parameter_path == f.parameter_path);
            before && matches!((node(new, name), node(saved.workflow, name)), (Some(n), Some(o)) if auth_unchanged(n, o))
        }
        "SWITCH_NO_OUTPUT_CONNECTIONS" => match node(saved.workflow, name) {
            Some(old) => {
                old.get("type") == node(new, name).and_then(|n| n.get("type"))
                    && enabled(old)
                    && !has_main_outputs(saved.workflow.get("connections").and_then(|c| c.get(name)))
            }
            None => false,
        },
        _ => false,
    }
}

/// Splits findings into blocking errors and warnings, moving the
/// informational ones (see the module doc) to the warnings with a note.
pub fn classify(findings: Vec<Finding>, new: &Value, saved: Option<&Saved<'_>>) -> (Vec<Finding>, Vec<Finding>) {
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for mut f in findings {
        match f.severity {
            Severity::Warning => warnings.push(f),
            Severity::Error if is_informational(&f, new, saved) => {
                f.severity = Severity::Warning;
                f.message.push_str(" (already so in the saved workflow and not changed by this edit; informational)");
                warnings.push(f);
            }
            Severity::Error => errors.push(f),
        }
    }
    (errors, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::validate;
    use serde_json::json;

    fn http(url: &str, auth_header: &str, timeout: u64) -> Value {
        json!({"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [0, 0], "parameters": {
            "url": url, "sendHeaders": true,
            "headerParameters": {"parameters": [{"name": "Authorization", "value": auth_header}, {"name": "X-Trace", "value": "1"}]},
            "options": {"timeout": timeout}}})
    }

    fn wf(nodes: Vec<Value>, connections: Value) -> Value {
        let mut all = vec![json!({"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]})];
        all.extend(nodes);
        json!({"nodes": all, "connections": connections})
    }

    fn start_to(target: &str) -> Value {
        json!({"Start": {"main": [[{"node": target, "type": "main", "index": 0}]]}})
    }

    /// The blocking codes left after classifying `new` against `old`.
    fn blocking(new: &Value, old: Option<&Value>) -> Vec<String> {
        let old_findings = old.map(|o| validate(o).findings);
        let saved = old.map(|o| Saved { workflow: o, findings: old_findings.as_deref().unwrap_or_default() });
        let (errors, _) = classify(validate(new).findings, new, saved.as_ref());
        errors.into_iter().map(|f| f.code).collect()
    }

    #[test]
    fn an_existing_hardcoded_secret_does_not_block_an_unrelated_edit() {
        let old = wf(vec![http("https://api.example.com/v1", "Bearer sk-1", 1000)], start_to("Call"));
        let new = wf(vec![http("https://api.example.com/v1", "Bearer sk-1", 5000)], start_to("Call"));
        assert_eq!(blocking(&new, Some(&old)), Vec::<String>::new(), "timeout change is not an auth change");
        assert_eq!(blocking(&new, None), ["HARDCODED_CREDENTIALS"], "no saved state: blocking");
        // A new secret, a new destination, an expression URL, or re-enabling: blocking.
        let new_secret = wf(vec![http("https://api.example.com/v1", "Bearer sk-2", 1000)], start_to("Call"));
        assert_eq!(blocking(&new_secret, Some(&old)), ["HARDCODED_CREDENTIALS"]);
        let moved = wf(vec![http("https://evil.example.com/v1", "Bearer sk-1", 1000)], start_to("Call"));
        assert_eq!(blocking(&moved, Some(&old)), ["HARDCODED_CREDENTIALS"]);
        let old_expr = wf(vec![http("={{ $json.url }}", "Bearer sk-1", 1000)], start_to("Call"));
        assert_eq!(blocking(&old_expr, Some(&old_expr)), ["HARDCODED_CREDENTIALS"], "expression URLs stay blocking");
        let mut disabled = old.clone();
        disabled["nodes"][1]["disabled"] = json!(true);
        assert_eq!(blocking(&old, Some(&disabled)), ["HARDCODED_CREDENTIALS"], "re-enabled node blocks");
    }

    #[test]
    fn a_parked_switch_stays_informational_but_removed_branches_block() {
        let switch = json!({"name": "Route", "type": "n8n-nodes-base.switch", "typeVersion": 3.2, "position": [0, 0], "parameters": {"rules": {"values": []}}});
        let set = json!({"name": "A", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [0, 0], "parameters": {}});
        let parked = wf(vec![switch.clone()], json!({}));
        // Connecting the parked Switch's input: still informational.
        let wired_in = wf(vec![switch.clone()], start_to("Route"));
        assert_eq!(blocking(&wired_in, Some(&parked)), Vec::<String>::new());
        // A new Switch without outputs: blocking.
        let before = wf(vec![], json!({}));
        assert_eq!(blocking(&wired_in, Some(&before)), ["SWITCH_NO_OUTPUT_CONNECTIONS"]);
        // Removing the branches a Switch had: blocking.
        let mut routed = wf(vec![switch.clone(), set.clone()], start_to("Route"));
        routed["connections"]["Route"] = json!({"main": [[{"node": "A", "type": "main", "index": 0}]]});
        let unrouted = wf(vec![switch.clone(), set], start_to("Route"));
        assert_eq!(blocking(&unrouted, Some(&routed)), ["SWITCH_NO_OUTPUT_CONNECTIONS"]);
        // Re-enabling a disabled Switch: blocking.
        let mut off = parked.clone();
        off["nodes"][1]["disabled"] = json!(true);
        assert_eq!(blocking(&wired_in, Some(&off)), ["SWITCH_NO_OUTPUT_CONNECTIONS"]);
    }

    #[test]
    fn only_the_same_invalid_parameter_is_informational() {
        let bad = |v: Value| json!({"name": "Check", "type": "n8n-nodes-base.if", "typeVersion": 2.2, "position": [0, 0], "parameters": {"conditions": {}, "looseTypeValidation": v}});
        let old = wf(vec![bad(json!("yes"))], start_to("Check"));
        assert_eq!(blocking(&old, Some(&old)), Vec::<String>::new());
        let other = wf(vec![bad(json!(3))], start_to("Check"));
        assert_eq!(blocking(&other, Some(&old)), ["INVALID_PARAMETER"], "a different finding on the same parameter blocks");
        // Codes the rules do not cover keep blocking even when already present.
        let unknown = wf(vec![json!({"name": "X", "type": "n8n-nodes-base.nope", "typeVersion": 1, "position": [0, 0]})], start_to("X"));
        assert_eq!(blocking(&unknown, Some(&unknown)), ["UNKNOWN_NODE_TYPE"]);
    }
}
