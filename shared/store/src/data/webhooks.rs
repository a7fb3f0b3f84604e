//! Webhook and form paths: which workflow answers `METHOD /webhook/<path>`
//! (or `/form/<path>`), as n8n registers them.
//!
//! A workflow's endpoints come from its enabled Webhook, Form Trigger and
//! Chat Trigger nodes ([`endpoints`]; a Chat Trigger answers GET and POST
//! at `<webhookId>/chat`). Production endpoints are claimed when a version
//! is published (one conditional put per endpoint: a path another live
//! workflow holds is a conflict, reported before anything is published);
//! test endpoints are written for the current draft on every save, and
//! several drafts may share one (the request is then refused as ambiguous).
//!
//! Items (Instance table):
//! - endpoint `pk=hook#<kind>#<METHOD>#<first segment>`, `sk=prod#<path>`
//!   or `sk=test#<path>#<workflowId>`: workflow, node, version. Every path
//!   that can match a request shares its first segment (a dynamic path
//!   starts with the node's `webhookId`), so a lookup is one Query.
//! - record `pk=wfhooks#<workflowId>`, `sk=prod|test`: what the workflow
//!   holds (to release it on unpublish, or when the draft changes) and the
//!   names of its schedules.

use super::db::{get_s, key, s, Item, Table};
use crate::error::StoreError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Which URL space an endpoint lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EndpointKind {
    /// `/webhook/…`, `/webhook-test/…`
    Webhook,
    /// `/form/…`, `/form-test/…`
    Form,
}

impl EndpointKind {
    fn as_str(self) -> &'static str {
        match self {
            EndpointKind::Webhook => "webhook",
            EndpointKind::Form => "form",
        }
    }
}

/// Published version (production URLs) or current draft (test URLs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    Production,
    Test,
}

impl Scope {
    fn sk_prefix(self) -> &'static str {
        match self {
            Scope::Production => "prod#",
            Scope::Test => "test#",
        }
    }
    fn record_sk(self) -> &'static str {
        match self {
            Scope::Production => "prod",
            Scope::Test => "test",
        }
    }
}

/// One method and path a node answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub kind: EndpointKind,
    /// Upper case.
    pub method: String,
    /// Normalised (no leading or trailing `/`); dynamic segments are `:name`.
    pub path: String,
    pub node: String,
}

impl Endpoint {
    pub fn is_dynamic(&self) -> bool {
        self.path.split('/').any(|s| s.starts_with(':'))
    }

    fn first_segment(&self) -> &str {
        self.path.split('/').next().unwrap_or_default()
    }
}

/// An endpoint a workflow holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    #[serde(flatten)]
    pub endpoint: Endpoint,
    pub workflow_id: String,
    /// The published version (production) or the draft it was saved from (test).
    pub version_id: String,
}

/// A production path another workflow holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub endpoint: Endpoint,
    pub workflow_id: String,
    pub version_id: String,
}

/// What a workflow holds in one scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriggerRecord {
    #[serde(default)]
    pub version_id: String,
    #[serde(default)]
    pub endpoints: Vec<Registration>,
    /// EventBridge Scheduler schedule names (production only).
    #[serde(default)]
    pub schedules: Vec<String>,
}

/// n8n's path normalisation: no leading or trailing slashes.
pub fn normalize(path: &str) -> String {
    path.trim().trim_matches('/').to_owned()
}

fn str_param<'a>(node: &'a Value, name: &str) -> Option<&'a str> {
    node.get("parameters").and_then(|p| p.get(name)).and_then(Value::as_str)
}

/// The methods a Webhook node listens to: `httpMethod` (one method; a list
/// in 2.1 with `multipleMethods`), GET by default.
fn methods(node: &Value) -> Vec<String> {
    let p = node.get("parameters");
    match p.and_then(|p| p.get("httpMethod")) {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_ascii_uppercase).collect(),
        Some(Value::String(s)) if !s.is_empty() => vec![s.to_ascii_uppercase()],
        _ if p.and_then(|p| p.get("multipleMethods")) == Some(&Value::Bool(true)) => vec!["GET".into(), "POST".into()],
        _ => vec!["GET".into()],
    }
}

/// The endpoints of a workflow's enabled Webhook and Form Trigger nodes
/// (n8n's `getNodeWebhookPath`): a static path as written (the node's
/// `webhookId` when empty); a dynamic path (`:param` segments) behind the
/// node's `webhookId`. An expression as path or method is refused.
pub fn endpoints(nodes: &Value) -> Result<Vec<Endpoint>, String> {
    let mut out = Vec::new();
    for node in nodes.as_array().into_iter().flatten() {
        if node.get("disabled").and_then(Value::as_bool).unwrap_or(false) {
            continue;
        }
        let ty = node.get("type").and_then(Value::as_str).unwrap_or_default();
        let name = node.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let webhook_id = node.get("webhookId").and_then(Value::as_str).filter(|s| !s.is_empty());
        let (kind, methods, raw_path) = match ty {
            "n8n-nodes-base.webhook" => (EndpointKind::Webhook, methods(node), str_param(node, "path").unwrap_or_default()),
            "n8n-nodes-base.formTrigger" => {
                let path = str_param(node, "path")
                    .filter(|p| !p.is_empty())
                    .or_else(|| node.pointer("/parameters/options/path").and_then(Value::as_str))
                    .unwrap_or_default();
                (EndpointKind::Form, vec!["GET".to_owned(), "POST".to_owned()], path)
            }
            // n8n's two chat webhooks, `setup` (GET: the hosted page) and
            // `default` (POST: messages), at `<webhookId>/chat`
            "@n8n/n8n-nodes-langchain.chatTrigger" => {
                let Some(id) = webhook_id else {
                    return Err(format!("Chat Trigger \"{name}\" has no webhookId (its chat URL is made from it)"));
                };
                let path = format!("{}/chat", normalize(id));
                for method in ["GET", "POST"] {
                    out.push(Endpoint { kind: EndpointKind::Webhook, method: method.into(), path: path.clone(), node: name.clone() });
                }
                continue;
            }
            _ => continue,
        };
        if raw_path.starts_with('=') || methods.iter().any(|m| m.starts_with('=')) {
            return Err(format!(
                "the path and method of node \"{name}\" must be fixed values, not expressions"
            ));
        }
        let mut path = normalize(raw_path);
        let dynamic = path.split('/').any(|s| s.starts_with(':'));
        match (path.is_empty(), dynamic, webhook_id) {
            (true, _, Some(id)) => path = id.to_owned(),
            (true, _, None) => return Err(format!("node \"{name}\" has no path (and no webhookId to default to)")),
            (false, true, Some(id)) => path = format!("{id}/{path}"),
            (false, true, None) => {
                return Err(format!("node \"{name}\" has a dynamic path but no webhookId to put in front of it"))
            }
            (false, false, _) => {}
        }
        if path.split('/').any(str::is_empty) {
            return Err(format!("the path of node \"{name}\" has an empty segment"));
        }
        for method in methods {
            if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD") {
                return Err(format!("node \"{name}\" listens to an unknown HTTP method {method:?}"));
            }
            out.push(Endpoint { kind, method, path: path.clone(), node: name.clone() });
        }
    }
    // Two nodes of one workflow on one endpoint: n8n refuses that too.
    for (i, a) in out.iter().enumerate() {
        if let Some(b) = out[i + 1..].iter().find(|b| b.kind == a.kind && b.method == a.method && b.path == a.path) {
            return Err(format!(
                "nodes \"{}\" and \"{}\" both listen to {} {}",
                a.node, b.node, a.method, a.path
            ));
        }
    }
    Ok(out)
}

/// Matches a request path against a registered one: `:name` segments take
/// any value (into the returned params), the rest must be equal.
pub fn match_path(pattern: &str, path: &str) -> Option<Map<String, Value>> {
    let (p, a): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), path.split('/').collect());
    if p.len() != a.len() {
        return None;
    }
    let mut params = Map::new();
    for (ps, av) in p.iter().zip(&a) {
        match ps.strip_prefix(':') {
            Some(name) => {
                params.insert(name.to_owned(), Value::String((*av).to_owned()));
            }
            None if ps == av => {}
            None => return None,
        }
    }
    Some(params)
}

/// n8n's choice among candidates: an exact static path, else the dynamic
/// path with the most equal static segments.
pub fn best_match<'a>(candidates: &'a [Registration], path: &str) -> Option<(&'a Registration, Map<String, Value>)> {
    if let Some(r) = candidates.iter().find(|r| !r.endpoint.is_dynamic() && r.endpoint.path == path) {
        return Some((r, Map::new()));
    }
    candidates
        .iter()
        .filter(|r| r.endpoint.is_dynamic())
        .filter_map(|r| match_path(&r.endpoint.path, path).map(|p| (r, p)))
        .max_by_key(|(r, _)| r.endpoint.path.split('/').filter(|s| !s.starts_with(':')).count())
}

fn endpoint_pk(kind: EndpointKind, method: &str, first: &str) -> String {
    format!("hook#{}#{}#{first}", kind.as_str(), method)
}

fn record_pk(workflow_id: &str) -> String {
    format!("wfhooks#{workflow_id}")
}

fn endpoint_key(r: &Registration, scope: Scope) -> Item {
    let e = &r.endpoint;
    let sk = match scope {
        Scope::Production => format!("prod#{}", e.path),
        Scope::Test => format!("test#{}#{}", e.path, r.workflow_id),
    };
    key(endpoint_pk(e.kind, &e.method, e.first_segment()), sk)
}

fn registration_item(r: &Registration, scope: Scope) -> Result<Item, StoreError> {
    let mut item = endpoint_key(r, scope);
    let body = serde_json::to_string(r).map_err(|e| StoreError::Invalid(e.to_string()))?;
    item.insert("workflowId".into(), s(&r.workflow_id));
    item.insert("versionId".into(), s(&r.version_id));
    item.insert("registration".into(), s(body));
    Ok(item)
}

fn registration_of(item: &Item) -> Result<Registration, StoreError> {
    let body = get_s(item, "registration").ok_or_else(|| StoreError::Corrupt("webhook registration without body".into()))?;
    serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("webhook registration: {e}")))
}

/// The endpoint repository.
#[derive(Clone, Debug)]
pub struct Webhooks {
    table: Table,
}

impl Webhooks {
    pub fn new(table: Table) -> Self {
        Webhooks { table }
    }

    /// Candidates for a request: every registration in `scope` whose path
    /// shares the request's first segment (one Query). Pick with [`best_match`].
    pub async fn candidates(
        &self,
        kind: EndpointKind,
        method: &str,
        path: &str,
        scope: Scope,
    ) -> Result<Vec<Registration>, StoreError> {
        let first = path.split('/').next().unwrap_or_default();
        let items = self.table.query_prefix(&endpoint_pk(kind, method, first), scope.sk_prefix(), false).await?;
        items.iter().map(registration_of).collect()
    }

    /// Claims a production endpoint for `r.workflow_id`: free, or already
    /// its own. `Err(holder)` when another workflow holds it.
    pub async fn claim(&self, r: &Registration) -> Result<Result<(), Holder>, StoreError> {
        self.put_if(r, "attribute_not_exists(pk) OR workflowId = :me", vec![(":me", s(&r.workflow_id))]).await
    }

    /// Takes a production endpoint over from a holder that no longer
    /// serves it (its workflow was unpublished or republished without it,
    /// and its release was lost), on condition it is still that holder.
    pub async fn take_over(&self, r: &Registration, stale: &Holder) -> Result<Result<(), Holder>, StoreError> {
        self.put_if(
            r,
            "workflowId = :them AND versionId = :their",
            vec![(":them", s(&stale.workflow_id)), (":their", s(&stale.version_id))],
        )
        .await
    }

    async fn put_if(
        &self,
        r: &Registration,
        condition: &str,
        values: Vec<(&str, aws_sdk_dynamodb::types::AttributeValue)>,
    ) -> Result<Result<(), Holder>, StoreError> {
        let mut req = self
            .table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(registration_item(r, Scope::Production)?))
            .condition_expression(condition);
        for (k, v) in values {
            req = req.expression_attribute_values(k, v);
        }
        self.table.count();
        match req.send().await {
            Ok(_) => Ok(Ok(())),
            Err(e) if super::db::is_condition_failed(&e) => {
                let k = endpoint_key(r, Scope::Production);
                let (pk, sk) = (get_s(&k, "pk").unwrap_or_default(), get_s(&k, "sk").unwrap_or_default());
                let cur = self.table.get_raw(pk, sk).await?;
                Ok(Err(match cur.as_ref().map(registration_of).transpose()? {
                    Some(h) => Holder { endpoint: h.endpoint, workflow_id: h.workflow_id, version_id: h.version_id },
                    // Released in between: report it as held by nobody in particular.
                    None => Holder { endpoint: r.endpoint.clone(), workflow_id: String::new(), version_id: String::new() },
                }))
            }
            Err(e) => Err(StoreError::dynamo(e)),
        }
    }

    /// Releases production endpoints the workflow holds (others' are left).
    pub async fn release(&self, regs: &[Registration]) -> Result<(), StoreError> {
        for r in regs {
            let k = endpoint_key(r, Scope::Production);
            self.table.count();
            match self
                .table
                .client
                .delete_item()
                .table_name(&self.table.name)
                .set_key(Some(k))
                .condition_expression("workflowId = :me")
                .expression_attribute_values(":me", s(&r.workflow_id))
                .send()
                .await
            {
                Ok(_) => {}
                Err(e) if super::db::is_condition_failed(&e) => {}
                Err(e) => return Err(StoreError::dynamo(e)),
            }
        }
        Ok(())
    }

    pub async fn record(&self, workflow_id: &str, scope: Scope) -> Result<TriggerRecord, StoreError> {
        let Some(item) = self.table.get_raw(&record_pk(workflow_id), scope.record_sk()).await? else {
            return Ok(TriggerRecord::default());
        };
        let body = get_s(&item, "record").unwrap_or("{}");
        serde_json::from_str(body).map_err(|e| StoreError::Corrupt(format!("trigger record: {e}")))
    }

    pub async fn set_record(&self, workflow_id: &str, scope: Scope, record: &TriggerRecord) -> Result<(), StoreError> {
        let mut item = key(record_pk(workflow_id), scope.record_sk());
        item.insert(
            "record".into(),
            s(serde_json::to_string(record).map_err(|e| StoreError::Invalid(e.to_string()))?),
        );
        self.table.put(item).await
    }

    /// Points the draft's test endpoints at `nodes` (the saved draft):
    /// writes the new ones, deletes the ones it no longer has. Nothing is
    /// written when they did not change. A body whose paths are invalid
    /// registers none (the test URL then answers 404 until it is fixed).
    pub async fn sync_test(&self, workflow_id: &str, version_id: &str, nodes: &Value) -> Result<(), StoreError> {
        let wanted: Vec<Registration> = endpoints(nodes)
            .unwrap_or_default()
            .into_iter()
            .map(|endpoint| Registration { endpoint, workflow_id: workflow_id.to_owned(), version_id: version_id.to_owned() })
            .collect();
        let old = self.record(workflow_id, Scope::Test).await?;
        let same = |a: &[Registration], b: &[Registration]| {
            a.len() == b.len() && a.iter().all(|x| b.iter().any(|y| y.endpoint == x.endpoint))
        };
        if same(&old.endpoints, &wanted) {
            return Ok(());
        }
        let mut reqs = Vec::new();
        for r in &wanted {
            reqs.push(super::db::put_req(registration_item(r, Scope::Test)?)?);
        }
        for r in old.endpoints.iter().filter(|o| !wanted.iter().any(|w| w.endpoint == o.endpoint)) {
            reqs.push(super::db::delete_req(endpoint_key(r, Scope::Test))?);
        }
        self.table.batch_write(reqs).await?;
        self.set_record(
            workflow_id,
            Scope::Test,
            &TriggerRecord { version_id: version_id.to_owned(), endpoints: wanted, schedules: Vec::new() },
        )
        .await
    }

    /// Drops the draft's test endpoints (the workflow was archived or deleted).
    pub async fn clear_test(&self, workflow_id: &str) -> Result<(), StoreError> {
        let old = self.record(workflow_id, Scope::Test).await?;
        let reqs = old
            .endpoints
            .iter()
            .map(|r| super::db::delete_req(endpoint_key(r, Scope::Test)))
            .collect::<Result<Vec<_>, _>>()?;
        self.table.batch_write(reqs).await?;
        self.set_record(workflow_id, Scope::Test, &TriggerRecord::default()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reg(path: &str) -> Registration {
        Registration {
            endpoint: Endpoint { kind: EndpointKind::Webhook, method: "GET".into(), path: path.into(), node: "W".into() },
            workflow_id: path.into(),
            version_id: "v".into(),
        }
    }

    #[test]
    fn paths_follow_n8n() {
        let nodes = json!([
            {"name": "A", "type": "n8n-nodes-base.webhook", "webhookId": "id-a", "parameters": {"path": "/orders/", "httpMethod": "POST"}},
            {"name": "B", "type": "n8n-nodes-base.webhook", "webhookId": "id-b", "parameters": {"path": "users/:id"}},
            {"name": "C", "type": "n8n-nodes-base.webhook", "webhookId": "id-c", "parameters": {}},
            {"name": "D", "type": "n8n-nodes-base.webhook", "webhookId": "id-d", "parameters": {"path": "x", "multipleMethods": true, "httpMethod": ["GET", "PUT"]}},
            {"name": "E", "type": "n8n-nodes-base.formTrigger", "webhookId": "id-e", "parameters": {"path": "signup"}},
            {"name": "F", "type": "n8n-nodes-base.webhook", "disabled": true, "parameters": {"path": "off"}},
            {"name": "G", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "webhookId": "id-g", "parameters": {"public": true}}
        ]);
        let got: Vec<(String, String)> = endpoints(&nodes).unwrap().into_iter().map(|e| (e.method, e.path)).collect();
        assert_eq!(
            got,
            [("POST", "orders"), ("GET", "id-b/users/:id"), ("GET", "id-c"), ("GET", "x"), ("PUT", "x"), ("GET", "signup"), ("POST", "signup"), ("GET", "id-g/chat"), ("POST", "id-g/chat")]
                .map(|(m, p)| (m.to_owned(), p.to_owned()))
        );
        let dup = json!([
            {"name": "A", "type": "n8n-nodes-base.webhook", "parameters": {"path": "same"}},
            {"name": "B", "type": "n8n-nodes-base.webhook", "parameters": {"path": "same"}}
        ]);
        assert!(endpoints(&dup).unwrap_err().contains("both listen"));
        let chat = json!([{"name": "Chat", "type": "@n8n/n8n-nodes-langchain.chatTrigger", "parameters": {}}]);
        assert!(endpoints(&chat).unwrap_err().contains("no webhookId"));
        let expr = json!([{"name": "A", "type": "n8n-nodes-base.webhook", "parameters": {"path": "={{ 1 }}"}}]);
        assert!(endpoints(&expr).unwrap_err().contains("expressions"));
    }

    #[test]
    fn static_paths_win_then_the_most_specific_dynamic_one() {
        let c = vec![reg("id/users/:id"), reg("id/users/me"), reg("id/:a/:b")];
        let (r, p) = best_match(&c, "id/users/me").unwrap();
        assert_eq!((r.endpoint.path.as_str(), p.len()), ("id/users/me", 0));
        let (r, p) = best_match(&c, "id/users/42").unwrap();
        assert_eq!((r.endpoint.path.as_str(), p["id"].as_str()), ("id/users/:id", Some("42")));
        let (r, _) = best_match(&c, "id/teams/7").unwrap();
        assert_eq!(r.endpoint.path, "id/:a/:b");
        assert!(best_match(&c, "id/users").is_none());
    }
}
