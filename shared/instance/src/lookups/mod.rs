//! `nodes(explore-resources)`: the values a node's resource locator or
//! options parameter can take (Slack channels, Airtable bases, GitHub
//! repositories…), found with the person's credential. n8n runs each
//! node's `listSearch` / `loadOptions` method as code; here each method is
//! data (`methods.json`: the request, where the entries are in the answer,
//! their name, value and link, how the service pages) run by one function
//! over the executor's lookup (the credential decrypted there, applied as
//! the HTTP Request node applies it, behind the SSRF guard).
//!
//! The filter text goes to the service where the method says so
//! (`"filter": "service"`, `{filter}` in the request; `"required"` when the
//! service needs one), else it keeps the entries whose name contains it
//! (case-insensitive), as n8n's methods do. A method that reads another
//! parameter (`{param:base}`) takes it from `currentNodeParameters`
//! (a resource locator's `value`).

use crate::nodes::{dynamic_methods, node_type, ExploreRequest};
use crate::{Caller, Instance, InstanceError};
use executions::LookupCall;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One lookup method as data.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Method {
    /// Where the path goes when the node's `requestDefaults.baseURL` is not
    /// a plain URL (GitHub's follows the credential's server).
    #[serde(default, rename = "baseURL")]
    base_url: Option<String>,
    path: String,
    #[serde(default)]
    query: BTreeMap<String, String>,
    /// Credential types the method works with (default: any the node takes).
    #[serde(default)]
    credential_types: Vec<String>,
    /// `local` (default), `service` or `required`.
    #[serde(default)]
    filter: Option<String>,
    /// Path of the entries' array in the answer (none: the answer is the array).
    #[serde(default)]
    results: Option<String>,
    name: String,
    value: String,
    #[serde(default)]
    url: Option<String>,
    /// Entries whose field holds one of these values are left out.
    #[serde(default)]
    exclude: BTreeMap<String, Vec<Value>>,
    #[serde(default)]
    paging: Option<Paging>,
    /// A 200 answer whose `okField` is false failed; `errorField` says why (Slack).
    #[serde(default)]
    ok_field: Option<String>,
    #[serde(default)]
    error_field: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
enum Paging {
    /// The answer's `next` field is the token; it goes back as `param`.
    Cursor { param: String, next: String },
    /// Numbered pages: more while `page * perPage < total`.
    #[serde(rename_all = "camelCase")]
    Page { param: String, per_page: u64, total: String },
    /// A full page's last entry's `from` field is the token (`after`).
    #[serde(rename_all = "camelCase")]
    After { param: String, page_size: usize, from: String },
}

fn methods() -> &'static BTreeMap<String, BTreeMap<String, Method>> {
    static METHODS: OnceLock<BTreeMap<String, BTreeMap<String, Method>>> = OnceLock::new();
    METHODS.get_or_init(|| serde_json::from_str(include_str!("methods.json")).expect("lookups/methods.json is valid"))
}

/// One entry found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub name: String,
    pub value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `{results, paginationToken?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explored {
    pub results: Vec<Found>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pagination_token: Option<String>,
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').filter(|p| !p.is_empty()).try_fold(v, |v, k| v.get(k))
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A parameter of the node being built, as the method reads it (a resource
/// locator's value; `None` when missing or empty).
fn param_value(params: Option<&Map<String, Value>>, name: &str) -> Option<String> {
    let v = params?.get(name)?;
    let v = if v.get("__rl").is_some() { v.get("value")? } else { v };
    Some(text(v)).filter(|s| !s.trim().is_empty() && !s.starts_with('='))
}

/// `s` percent-encoded for one URL path segment (RFC 3986 unreserved kept).
fn path_segment(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Fills `{filter}`, `{param:x}`, `{value}` and `{field:path}` in `template`.
fn fill(template: &str, filter: &str, params: Option<&Map<String, Value>>, entry: Option<(&Value, &str)>, encode: bool) -> Result<String, InstanceError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').map(|e| e + start).ok_or_else(|| InstanceError::Internal(format!("lookup template {template:?} is unclosed")))?;
        let key = &rest[start + 1..end];
        let piece = match (key, key.split_once(':')) {
            ("filter", _) => filter.to_owned(),
            ("value", _) => entry.map(|(_, v)| v.to_owned()).unwrap_or_default(),
            (_, Some(("param", name))) => param_value(params, name).ok_or_else(|| {
                InstanceError::Invalid(format!("this lookup needs the node's {name:?} parameter: pass it in currentNodeParameters (e.g. {{\"{name}\": \"<its value>\"}})"))
            })?,
            (_, Some(("field", path))) => entry.and_then(|(e, _)| at(e, path)).map(text).unwrap_or_default(),
            _ => return Err(InstanceError::Internal(format!("lookup template {template:?} has an unknown placeholder {key:?}"))),
        };
        out.push_str(&if encode { path_segment(&piece) } else { piece });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Instance {
    /// `nodes(explore-resources)`: runs the node's lookup method with a
    /// credential the caller may use in the project they write to.
    pub async fn explore_resources(&self, caller: &Caller, req: &ExploreRequest) -> Result<Explored, InstanceError> {
        let d = node_type(&req.node_type)?;
        let declared = dynamic_methods(d);
        if declared.is_empty() {
            return Err(InstanceError::Invalid(format!(
                "{} has no dynamic resources (no listSearch or loadOptions methods): its parameters take fixed values; see its type definition",
                d.display_name
            )));
        }
        if !matches!(req.method_type.as_str(), "listSearch" | "loadOptions") {
            return Err(InstanceError::Invalid("methodType must be listSearch or loadOptions".into()));
        }
        if !declared.iter().any(|(m, t)| *m == req.method_name && *t == req.method_type) {
            let list: Vec<String> = declared.iter().map(|(m, t)| format!("{m} ({t})")).collect();
            return Err(InstanceError::Invalid(format!("{} has no {} method {:?}; it has {}", d.display_name, req.method_type, req.method_name, list.join(", "))));
        }
        let Some(method) = methods().get(&d.name).and_then(|m| m.get(&req.method_name)) else {
            return Err(InstanceError::Invalid(format!(
                "{}'s {} method {:?} is declared but this instance cannot run it yet: give the value by ID or URL instead",
                d.display_name, req.method_type, req.method_name
            )));
        };
        let accepted = crate::catalog::credential_types(d);
        if !accepted.contains(&req.credential_type) || (!method.credential_types.is_empty() && !method.credential_types.contains(&req.credential_type)) {
            let usable = if method.credential_types.is_empty() { accepted } else { method.credential_types.clone() };
            return Err(InstanceError::Invalid(format!("{} looks up {:?} with a {} credential, not {}", d.display_name, req.method_name, usable.join(" or "), req.credential_type)));
        }
        let project = self.write_project(caller, "credential:read").await?;
        self.pick_credential(caller, &project, &req.credential_type, &req.credential_id).await?;
        let credential = self.data.credentials.get(&req.credential_id).await?.ok_or_else(|| InstanceError::NotFound(format!("credential {}", req.credential_id)))?;

        let filter = req.filter.clone().unwrap_or_default();
        let filter_mode = method.filter.as_deref().unwrap_or("local");
        if filter_mode == "required" && filter.trim().is_empty() {
            return Err(InstanceError::Invalid(format!("{}'s {:?} searches the service: give a filter (the text to search for)", d.display_name, req.method_name)));
        }
        let params = req.current_node_parameters.as_ref();
        let base = match (&method.base_url, d.request_defaults.as_ref().and_then(|r| r.get("baseURL")).and_then(Value::as_str)) {
            (Some(b), _) => b.clone(),
            (None, Some(b)) if !b.starts_with('=') => b.to_owned(),
            _ => return Err(InstanceError::Internal(format!("lookup {:?} of {} has no base URL", req.method_name, d.name))),
        };
        let url = format!("{}{}", base.trim_end_matches('/'), fill(&method.path, &filter, params, None, true)?);
        let mut query: Vec<(String, String)> = method.query.iter().map(|(k, v)| Ok((k.clone(), fill(v, &filter, params, None, false)?.trim().to_owned()))).collect::<Result<_, InstanceError>>()?;
        let token = req.pagination_token.clone().filter(|t| !t.is_empty());
        let page: u64 = match (&method.paging, &token) {
            (Some(Paging::Page { .. }), Some(t)) => t.parse().map_err(|_| InstanceError::Invalid(format!("paginationToken {t:?} is not one this lookup gave")))?,
            _ => 1,
        };
        match (&method.paging, &token) {
            (Some(Paging::Cursor { param, .. } | Paging::After { param, .. }), Some(t)) => query.push((param.clone(), t.clone())),
            (Some(Paging::Page { param, .. }), _) => query.push((param.clone(), page.to_string())),
            _ => {}
        }
        // Literal headers the node sends with every request (GitHub's User-Agent).
        let headers: Vec<(String, String)> = d
            .request_defaults
            .as_ref()
            .and_then(|r| r.get("headers"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| v.as_str().filter(|s| !s.starts_with('=')).map(|s| (k.clone(), s.to_owned())))
            .filter(|(k, _)| !k.eq_ignore_ascii_case("content-type"))
            .collect();
        let answer = self
            .executor
            .lookup(&credential, LookupCall { url, query, headers }, self.dispatch)
            .await
            .map_err(crate::runner::job_error)?
            .map_err(|e| InstanceError::Invalid(format!("the {} lookup failed: {e}", d.display_name)))?;

        // An object answer is one item; a top-level array, one item per entry.
        let (entries, body): (Vec<Value>, Value) = match &method.results {
            Some(path) => {
                let body = answer.into_iter().next().unwrap_or(Value::Null);
                if let Some(ok) = &method.ok_field {
                    if at(&body, ok) == Some(&Value::Bool(false)) {
                        let why = method.error_field.as_deref().and_then(|f| at(&body, f)).map(text).unwrap_or_else(|| "no reason given".into());
                        return Err(InstanceError::Invalid(format!("the {} lookup failed: the service answered {why:?}", d.display_name)));
                    }
                }
                (at(&body, path).and_then(Value::as_array).cloned().unwrap_or_default(), body)
            }
            None => (answer, Value::Null),
        };
        let returned = entries.len();
        let last = entries.last().cloned();
        let needle = filter.trim().to_lowercase();
        let mut results = Vec::new();
        for e in &entries {
            if method.exclude.iter().any(|(field, values)| at(e, field).is_some_and(|v| values.contains(v))) {
                continue;
            }
            let name = at(e, &method.name).map(text).unwrap_or_default();
            let Some(value) = at(e, &method.value).filter(|v| !v.is_null()).cloned() else { continue };
            if filter_mode == "local" && !needle.is_empty() && !name.to_lowercase().contains(&needle) {
                continue;
            }
            let url = match &method.url {
                Some(t) => Some(fill(t, &filter, params, Some((e, &text(&value))), false)?),
                None => None,
            };
            results.push(Found { name, value, url });
        }
        let pagination_token = match &method.paging {
            Some(Paging::Cursor { next, .. }) => at(&body, next).map(text).filter(|t| !t.is_empty()),
            Some(Paging::Page { per_page, total, .. }) => at(&body, total).and_then(Value::as_u64).filter(|t| page * per_page < *t).map(|_| (page + 1).to_string()),
            Some(Paging::After { page_size, from, .. }) => last.filter(|_| returned >= *page_size).and_then(|l| at(&l, from).map(text)),
            None => None,
        };
        Ok(Explored { results, pagination_token })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every method of the data is one its node declares, of a node that
    /// takes the credential types it names; every declared method of the
    /// catalog's nodes is covered (a node added with methods must come
    /// with them here, or its lookup says it cannot run them).
    #[test]
    fn the_methods_are_the_catalogs() {
        let mut uncovered = Vec::new();
        for d in engine::catalog::all() {
            let declared = dynamic_methods(d);
            let data = methods().get(&d.name);
            for (name, m) in data.into_iter().flatten() {
                assert!(declared.iter().any(|(n, _)| n == name), "{} does not declare {name}", d.name);
                let accepted = crate::catalog::credential_types(d);
                assert!(m.credential_types.iter().all(|t| accepted.contains(t)), "{} {name}", d.name);
                assert!(m.base_url.is_some() || d.request_defaults.as_ref().and_then(|r| r.get("baseURL")).and_then(Value::as_str).is_some_and(|b| !b.starts_with('=')), "{} {name}: no base URL", d.name);
            }
            for (name, _) in declared {
                if data.and_then(|m| m.get(&name)).is_none() {
                    uncovered.push(format!("{} {name}", d.name));
                }
            }
        }
        assert!(methods().keys().all(|k| engine::catalog::describe_exact(k).is_some()), "every node of the data is in the catalog");
        // Nodes added in parallel may bring methods this data does not have yet: they answer "cannot run it yet".
        eprintln!("lookups without data (answered as not runnable): {uncovered:?}");
    }

    #[test]
    fn templates_take_the_filter_the_parameters_and_the_entry() {
        let params: Map<String, Value> = serde_json::from_value(serde_json::json!({"base": {"__rl": true, "mode": "list", "value": "appX"}, "owner": "acme", "empty": ""})).unwrap();
        assert_eq!(fill("/meta/bases/{param:base}/tables", "", Some(&params), None, true).unwrap(), "/meta/bases/appX/tables");
        assert_eq!(fill("{filter} user:{param:owner}", "web app", Some(&params), None, false).unwrap(), "web app user:acme");
        assert_eq!(fill("/x/{filter}", "a b/c", None, None, true).unwrap(), "/x/a%20b%2Fc");
        let e = fill("/guilds/{param:guildId}", "", Some(&params), None, true).unwrap_err();
        assert!(e.message().contains("currentNodeParameters") && e.message().contains("guildId"), "{e}");
        assert!(fill("{param:empty}", "", Some(&params), None, false).is_err(), "an empty value is missing");
        let entry = serde_json::json!({"html_url": "https://github.com/acme"});
        assert_eq!(fill("{field:html_url}#{value}", "", None, Some((&entry, "acme")), false).unwrap(), "https://github.com/acme#acme");
    }
}
