//! What the engine refuses before a workflow runs: a `typeVersion` its
//! catalog does not describe, and the parameter values of catalog nodes it
//! does not implement (NODES.md's "Not yet" table). One list, read by
//! `Engine::validate` (every run, resume and partial run) and by the
//! instance's workflow validation, so no node runs with a version or an
//! option silently taken for another.

use serde_json::Value;

use crate::catalog;

/// A parameter the engine does not implement, found by its path: dot
/// separated, `*` for every element of a list (`formFields.values.*.x`).
enum Check {
    /// The parameter holds one of these values.
    Is(&'static str, &'static [&'static str]),
    /// The parameter is set (not absent, null, false, empty).
    Set(&'static str),
}

struct Refusal {
    node_type: &'static str,
    check: Check,
    what: &'static str,
}

const fn is(node_type: &'static str, path: &'static str, values: &'static [&'static str], what: &'static str) -> Refusal {
    Refusal { node_type, check: Check::Is(path, values), what }
}

const fn set(node_type: &'static str, path: &'static str, what: &'static str) -> Refusal {
    Refusal { node_type, check: Check::Set(path), what }
}

const FORM: &str = "n8n-nodes-base.formTrigger";
const WAIT: &str = "n8n-nodes-base.wait";
const WEBHOOK: &str = "n8n-nodes-base.webhook";
const SCHEDULE: &str = "n8n-nodes-base.scheduleTrigger";
const HTTP: &str = "n8n-nodes-base.httpRequest";
const EXTRACT: &str = "n8n-nodes-base.extractFromFile";
const CONVERT: &str = "n8n-nodes-base.convertToFile";
const CRYPTO: &str = "n8n-nodes-base.crypto";
const SPREADSHEET: &str = "n8n-nodes-base.spreadsheetFile";

const REFUSALS: &[Refusal] = &[
    is(FORM, "authentication", &["n8nUserAuth"], "n8n user authentication"),
    set(FORM, "formFields.values.*.defaultValue", "default values of form fields"),
    is(FORM, "formFields.values.*.limitSelection", &["exact"], "an exact number of selections (limitSelection exact)"),
    set(FORM, "options.customCss", "custom CSS (option customCss)"),
    set(FORM, "options.includeUserInOutput", "the option includeUserInOutput"),
    set(FORM, "options.path", "the option path"),
    set(FORM, "options.showHeaders", "the option showHeaders"),
    set(FORM, "requireExecuteAccess", "requireExecuteAccess"),
    set(WAIT, "formFields.values.*.defaultValue", "default values of form fields"),
    is(WAIT, "formFields.values.*.limitSelection", &["exact"], "an exact number of selections (limitSelection exact)"),
    set(WAIT, "options.onlyRunIf", "the option onlyRunIf"),
    is(WEBHOOK, "authentication", &["n8nOAuth2", "n8nUserAuth"], "this authentication"),
    set(WEBHOOK, "options.onlyRunIf", "the option onlyRunIf"),
    set(WEBHOOK, "requireExecuteAccess", "requireExecuteAccess"),
    set(SCHEDULE, "misfirePolicy", "misfirePolicy"),
    set(SCHEDULE, "misfireGraceSeconds", "misfireGraceSeconds"),
    set(SCHEDULE, "skipDurableScheduler", "skipDurableScheduler"),
    is(HTTP, "method", &["COPY", "LOCK", "MKCOL", "MOVE", "PROPFIND", "PROPPATCH", "REPORT", "SEARCH", "UNLOCK"], "WebDAV methods"),
    set(HTTP, "options.webdavMethods", "WebDAV methods"),
    set(HTTP, "options.sendCredentialsOnCrossOriginRedirect", "the option sendCredentialsOnCrossOriginRedirect"),
    set(HTTP, "provideSslCertificates", "client certificates (provideSslCertificates)"),
    set(HTTP, "optimizeResponse", "response optimisation (optimizeResponse)"),
    set(EXTRACT, "options.readAsString", "the option readAsString"),
    is(EXTRACT, "options.rawData", &["false"], "formatted cell values (option rawData off)"),
    set(SPREADSHEET, "options.readAsString", "the option readAsString"),
    set(CONVERT, "options.useWorkflowTimezone", "the iCal option useWorkflowTimezone"),
    set(CONVERT, "additionalFields.useWorkflowTimezone", "the iCal option useWorkflowTimezone"),
    is(CRYPTO, "action", &["encrypt", "decrypt"], "encryption and decryption"),
];

/// Why a node of `node_type` at `version` with `params` cannot run here, or
/// `None`. Node types outside the catalog (test and refused nodes) have no
/// version list to check.
pub fn refusal(node_type: &str, version: f64, params: &Value) -> Option<String> {
    if let Some(versions) = catalog::versions(node_type) {
        if !versions.contains(&version) {
            let list: Vec<String> = versions.iter().map(f64::to_string).collect();
            return Some(format!("typeVersion {version} of {node_type} is not supported by this engine (supported: {})", list.join(", ")));
        }
    }
    REFUSALS.iter().filter(|r| r.node_type == node_type).find(|r| matches(&r.check, params)).map(|r| format!("Not supported by this engine: {} ({node_type})", r.what))
}

fn matches(check: &Check, params: &Value) -> bool {
    match check {
        Check::Is(path, values) => at(params, path).iter().any(|v| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                _ => return false,
            };
            values.contains(&text.as_str())
        }),
        Check::Set(path) => at(params, path).iter().any(|v| match v {
            Value::Null | Value::Bool(false) => false,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Number(_) | Value::Bool(true) => true,
        }),
    }
}

/// The values at `path` (several under a `*`).
fn at<'a>(v: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut here = vec![v];
    for key in path.split('.') {
        here = here
            .into_iter()
            .flat_map(|v| -> Vec<&Value> {
                match (key, v) {
                    ("*", Value::Array(a)) => a.iter().collect(),
                    (k, Value::Object(o)) => o.get(k).into_iter().collect(),
                    _ => vec![],
                }
            })
            .collect();
    }
    here
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_outside_the_catalog_and_listed_values_are_refused() {
        assert_eq!(
            refusal(HTTP, 4.5, &json!({})).as_deref(),
            Some("typeVersion 4.5 of n8n-nodes-base.httpRequest is not supported by this engine (supported: 1, 2, 3, 4, 4.1, 4.2, 4.3, 4.4)")
        );
        assert_eq!(refusal(HTTP, 4.2, &json!({ "method": "GET" })), None);
        assert_eq!(refusal(HTTP, 4.2, &json!({ "method": "PROPFIND" })).as_deref(), Some("Not supported by this engine: WebDAV methods (n8n-nodes-base.httpRequest)"));
        let fields = json!({ "formFields": { "values": [{ "fieldLabel": "a" }, { "fieldLabel": "b", "defaultValue": "x" }] } });
        assert!(refusal(FORM, 2.2, &fields).is_some_and(|m| m.starts_with("Not supported by this engine: default values of form fields")));
        assert_eq!(refusal(FORM, 2.2, &json!({ "formFields": { "values": [{ "fieldLabel": "a", "defaultValue": "" }] } })), None);
        // a false switch is the default, not a request
        assert!(!matches(&Check::Set("options.enableStreaming"), &json!({ "options": { "enableStreaming": false } })));
        assert_eq!(refusal("n8n-nodes-base.start", 7.0, &json!({})), None);
        // Data table 1.1, its options and table resource run
        let table = json!({ "resource": "table", "operation": "create", "options": { "createIfNotExists": true, "dryRun": true, "optimizeBulk": true } });
        assert_eq!(refusal("n8n-nodes-base.dataTable", 1.1, &table), None);
    }
}
