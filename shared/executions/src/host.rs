//! The engine's host services over the store, scoped to the project of the
//! workflow being run: credentials (decrypted here, handed to the node,
//! never logged or persisted by this crate), data tables, sub-workflows.
//!
//! The engine calls these synchronously from its blocking thread; each
//! call drives the store's async client on the process runtime through
//! `Handle::block_on`, which is allowed there (never on a runtime worker).

use engine::host::{
    ChatMemoryStore, CredentialsProvider, DataTableProvider, Host, ProcessedDataStore, RowFilter,
    SubExecutionRecorder, SystemResolver, TableQuery, WorkflowProvider,
};
use engine::EngineSettings;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Mutex};
use store::data::data_tables::{
    ColumnType, Condition, DataTable, Filter, FilterKind, NewColumn, Op, RowQuery, SortDirection,
    MAX_ROWS_PER_INSERT,
};
use store::data::executions::ExecutionMode;
use store::data::credentials::SecretData;
use store::data::InstanceData;
use tokio::runtime::Handle;

/// Where HTTP Request nodes may connect.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HttpPolicy {
    /// Production: any public address; the engine's SSRF guard refuses
    /// private, loopback, link-local and other non-public addresses.
    #[default]
    PublicOnly,
    /// Only these hosts (names or IP literals), which may be private. For
    /// tests against a local server: nothing else is reachable at all.
    AllowListOnly(Vec<String>),
    /// Only these hosts, and only at public addresses.
    PublicHostsOnly(Vec<String>),
    /// Any host, private networks included (the guard is off): for an
    /// instance whose workflows must reach internal services.
    AnyHost,
}

impl HttpPolicy {
    /// From `INSTANCE_AI_HTTP_ALLOWED_HOSTS` and `INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK`.
    pub fn from_config(config: &store::Config) -> Self {
        let hosts = config.http_allowed_hosts.clone();
        match (hosts.is_empty(), config.http_allow_private_network) {
            (true, false) => HttpPolicy::PublicOnly,
            (false, false) => HttpPolicy::PublicHostsOnly(hosts),
            (false, true) => HttpPolicy::AllowListOnly(hosts),
            (true, true) => HttpPolicy::AnyHost,
        }
    }

    pub(crate) fn apply(&self, settings: &mut EngineSettings) {
        match self {
            HttpPolicy::PublicOnly => {
                settings.allow_private_network = false;
                settings.allowed_hosts = Vec::new();
            }
            HttpPolicy::PublicHostsOnly(hosts) => {
                settings.allow_private_network = false;
                settings.allowed_hosts = hosts.clone();
            }
            HttpPolicy::AnyHost => {
                settings.allow_private_network = true;
                settings.allowed_hosts = Vec::new();
            }
            HttpPolicy::AllowListOnly(hosts) => {
                // The engine lets private addresses through only together with
                // a non-empty host list here, so the guard still holds for
                // every host not listed.
                settings.allow_private_network = !hosts.is_empty();
                settings.allowed_hosts = hosts.clone();
                if hosts.is_empty() {
                    settings.allowed_hosts = vec!["invalid.".into()];
                }
            }
        }
    }
}

/// Secret strings handed to nodes during one run, so the runner can scrub
/// them from everything it stores or returns: a node can echo what it was
/// given (an HTTP error message carries the URL with a query-auth key; a
/// server may reflect headers), and run data reaches tools and the model.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Arc<Mutex<Vec<String>>>);

/// Shorter strings are too likely to be ordinary words to scrub safely.
const MIN_SECRET_LEN: usize = 6;
const REDACTED: &str = "[redacted]";

impl Secrets {
    pub(crate) fn remember(&self, v: &Value) {
        let mut found = Vec::new();
        collect(v, None, &mut found);
        // Basic auth travels base64-encoded.
        if let (Some(u), Some(p)) = (
            v.get("user").and_then(Value::as_str),
            v.get("password").and_then(Value::as_str),
        ) {
            use base64::Engine as _;
            found.push(base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}")));
        }
        if let Ok(mut list) = self.0.lock() {
            for f in found {
                if f.len() >= MIN_SECRET_LEN && !list.contains(&f) {
                    list.push(f);
                }
            }
            // Longest first, so a secret containing another is scrubbed whole.
            list.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    pub fn scrub_str(&self, s: &str) -> String {
        let Ok(list) = self.0.lock() else {
            return s.to_owned();
        };
        let mut out = s.to_owned();
        for secret in list.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    pub fn scrub(&self, v: &mut Value) {
        if self.0.lock().map(|l| l.is_empty()).unwrap_or(true) {
            return;
        }
        match v {
            Value::String(s) => {
                let clean = self.scrub_str(s);
                if clean != *s {
                    *s = clean;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.scrub(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.scrub(x)),
            _ => {}
        }
    }
}

/// String leaves of credential data, except the `name` of a header/query
/// pair (not secret); a string holding JSON (custom auth) is looked into.
fn collect(v: &Value, key: Option<&str>, out: &mut Vec<String>) {
    match v {
        Value::String(s) if key != Some("name") => {
            if let Ok(inner @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(s)
            {
                collect(&inner, None, out);
            }
            out.push(s.clone());
        }
        Value::Array(a) => a.iter().for_each(|x| collect(x, None, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| collect(x, Some(k), out)),
        _ => {}
    }
}

/// Who is running: the project whose credentials, tables and workflows the
/// execution may use, and the mode (manual runs call sub-workflow drafts).
#[derive(Clone)]
pub(crate) struct Scope {
    pub data: InstanceData,
    pub handle: Handle,
    pub project_id: String,
    pub mode: ExecutionMode,
    pub secrets: Secrets,
}

pub(crate) fn host(scope: Scope, sub_executions: Arc<dyn SubExecutionRecorder>) -> Host {
    let scope = Arc::new(scope);
    Host {
        credentials: Some(Arc::new(StoreCredentials(scope.clone()))),
        workflows: Some(Arc::new(StoreWorkflows(scope.clone()))),
        sub_executions: Some(sub_executions),
        data_tables: Some(Arc::new(StoreDataTables(scope.clone()))),
        // the file nodes work in a scratch folder of this execution only
        files: Some(Arc::new(engine::nodes::disk::ScratchDir::new())),
        resolver: Arc::new(SystemResolver),
        processed_data: Some(Arc::new(StoreProcessedData(scope.clone()))),
        chat_memory: Some(Arc::new(StoreChatMemory(StoreProcessedData(scope)))),
        // Bedrock (the engine's own clients serve the other model nodes)
        chat_models: Some(Arc::new(crate::models::HostModels)),
    }
}

/// AI memory sub-nodes' sessions in DynamoDB (with a TTL), for workflows of
/// the running project only (the same check as Remove Duplicates' history).
struct StoreChatMemory(StoreProcessedData);

impl ChatMemoryStore for StoreChatMemory {
    fn load(&self, workflow_id: &str, session: &str) -> Result<Vec<Value>, String> {
        self.0.check_for(workflow_id, "chat memory sessions are")?;
        let s = &self.0 .0;
        s.handle.block_on(s.data.chat_memory.load(workflow_id, session)).map_err(|e| e.to_string())
    }

    fn save(&self, workflow_id: &str, session: &str, messages: &[Value]) -> Result<(), String> {
        self.0.check_for(workflow_id, "chat memory sessions are")?;
        let s = &self.0 .0;
        s.handle.block_on(s.data.chat_memory.save(workflow_id, session, messages)).map_err(|e| e.to_string())
    }
}

/// Remove Duplicates' history, for workflows of the running project only.
struct StoreProcessedData(Arc<Scope>);

impl StoreProcessedData {
    fn check(&self, workflow_id: &str) -> Result<(), String> {
        self.check_for(workflow_id, "values seen in previous executions are")
    }

    /// `what` says what is kept per workflow, for the unsaved-workflow error.
    fn check_for(&self, workflow_id: &str, what: &str) -> Result<(), String> {
        let s = &self.0;
        if workflow_id.trim().is_empty() {
            return Err(format!("save the workflow first: {what} kept per workflow"));
        }
        let meta = s
            .handle
            .block_on(s.data.workflows.meta(workflow_id))
            .map_err(|e| format!("workflow {workflow_id}: {e}"))?;
        match meta {
            Some(m) if m.project_id == s.project_id => Ok(()),
            // Same answer as a missing one: another project's workflow.
            _ => Err(format!("workflow {workflow_id} does not exist")),
        }
    }
}

impl ProcessedDataStore for StoreProcessedData {
    fn load(&self, workflow_id: &str, context: &str) -> Result<Option<(Value, u64)>, String> {
        self.check(workflow_id)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.processed_data.load(workflow_id, context))
            .map_err(|e| e.to_string())
    }

    fn save(
        &self,
        workflow_id: &str,
        context: &str,
        value: &Value,
        expected: Option<u64>,
    ) -> Result<bool, String> {
        self.check(workflow_id)?;
        let s = &self.0;
        s.handle
            .block_on(
                s.data
                    .processed_data
                    .save(workflow_id, context, value, expected),
            )
            .map_err(|e| e.to_string())
    }

    fn delete(&self, workflow_id: &str, context: &str) -> Result<(), String> {
        self.check(workflow_id)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.processed_data.delete(workflow_id, context))
            .map_err(|e| e.to_string())
    }
}

/// A host with only the credentials of `scope` (a connection test needs nothing else).
pub(crate) fn credentials_only(scope: Scope) -> Host {
    Host {
        credentials: Some(Arc::new(StoreCredentials(Arc::new(scope)))),
        ..Host::default()
    }
}

struct StoreCredentials(Arc<Scope>);

impl CredentialsProvider for StoreCredentials {
    fn get(&self, cred_type: &str, reference: &Value) -> Result<Value, String> {
        let s = &self.0;
        let secret = s.handle.block_on(project_credential(
            &s.data,
            &s.project_id,
            cred_type,
            reference,
        ))?;
        s.secrets.remember(&secret);
        Ok(secret)
    }

    fn save_oauth_tokens(
        &self,
        cred_type: &str,
        reference: &Value,
        replaced: &str,
        tokens: &Value,
    ) -> Result<(), String> {
        let s = &self.0;
        s.secrets.remember(tokens);
        // the same access check as reading it
        s.handle.block_on(project_credential(&s.data, &s.project_id, cred_type, reference))?;
        let id = reference.get("id").and_then(Value::as_str).unwrap_or_default();
        let stored = s
            .handle
            .block_on(s.data.credentials.refresh_tokens(id, replaced, &SecretData::new(tokens.clone())))
            .map_err(|e| format!("credential {id}: {e}"))?;
        if !stored {
            tracing::info!(credentialId = %id, "another run refreshed the credential's token first");
        }
        Ok(())
    }
}

/// The decrypted data of the credential a node's reference (`{id, name}`)
/// selects, if the project may use it and it is of `cred_type`. A
/// credential the project cannot see reads as missing.
pub async fn project_credential(
    data: &InstanceData,
    project_id: &str,
    cred_type: &str,
    reference: &Value,
) -> Result<Value, String> {
    let id = reference
        .get("id")
        .and_then(Value::as_str)
        .filter(|i| !i.is_empty())
        .ok_or_else(|| format!("the node selects no {cred_type} credential (reference without id)"))?;
    let meta = data
        .credentials
        .get(id)
        .await
        .map_err(|e| format!("credential {id}: {e}"))?
        .ok_or_else(|| format!("credential {id} does not exist"))?;
    let usable = meta.is_global
        || meta.home_project_id == project_id
        || meta.shared_with_project_ids.iter().any(|p| *p == project_id);
    if !usable {
        return Err(format!("credential {id} does not exist"));
    }
    if meta.kind != cred_type {
        return Err(format!(
            "credential {id} is of type {}, the node needs {cred_type}",
            meta.kind
        ));
    }
    let secret = data
        .credentials
        .decrypt_secret(id)
        .await
        .map_err(|e| format!("credential {id}: {e}"))?;
    let mut value = secret.expose().clone();
    // a connected OAuth2 credential's tokens, as n8n hands them to nodes
    if engine::oauth2::may_connect(cred_type) {
        let tokens = data
            .credentials
            .decrypt_tokens(id)
            .await
            .map_err(|e| format!("credential {id}: {e}"))?;
        if let (Some(t), Some(obj)) = (tokens, value.as_object_mut()) {
            obj.insert("oauthTokenData".into(), t.expose().clone());
        }
    }
    Ok(value)
}

struct StoreWorkflows(Arc<Scope>);

impl WorkflowProvider for StoreWorkflows {
    fn get_workflow(&self, id: &str) -> Result<Value, String> {
        let s = &self.0;
        let id = id.trim();
        let meta = s
            .handle
            .block_on(s.data.workflows.meta(id))
            .map_err(|e| format!("workflow {id}: {e}"))?
            .ok_or_else(|| format!("workflow {id} does not exist"))?;
        if meta.project_id != s.project_id {
            // n8n's default caller policy: workflows of the same owner only.
            return Err(format!("workflow {id} does not exist"));
        }
        if meta.is_archived {
            return Err(format!("workflow {id} is archived"));
        }
        // Manual runs call drafts; other modes the published version when there is one.
        let body = match (&meta.active_version_id, s.mode) {
            (Some(active), m) if m != ExecutionMode::Manual => {
                s.handle
                    .block_on(s.data.workflows.get_version(id, active))
                    .map_err(|e| format!("workflow {id}: {e}"))?
                    .ok_or_else(|| {
                        format!("published version {active} of workflow {id} does not exist")
                    })?
                    .body
            }
            _ => {
                s.handle
                    .block_on(s.data.workflows.get(id))
                    .map_err(|e| format!("workflow {id}: {e}"))?
                    .ok_or_else(|| format!("workflow {id} does not exist"))?
                    .body
            }
        };
        Ok(json!({
            "id": meta.id,
            "name": meta.name,
            "nodes": body.nodes,
            "connections": body.connections,
            "settings": if body.settings.is_object() { body.settings } else { json!({}) },
        }))
    }
}

struct StoreDataTables(Arc<Scope>);

fn filter(f: &RowFilter) -> Result<Filter, String> {
    let conditions = f
        .conditions
        .iter()
        .map(|c| {
            let op: Op = serde_json::from_value(Value::String(c.condition.clone()))
                .map_err(|_| format!("unknown condition {:?}", c.condition))?;
            Ok(Condition {
                column_name: c.column.clone(),
                condition: op,
                value: c.value.clone(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Filter {
        kind: if f.match_all {
            FilterKind::And
        } else {
            FilterKind::Or
        },
        conditions,
    })
}

fn object(v: &Value) -> Result<Map<String, Value>, String> {
    v.as_object()
        .cloned()
        .ok_or_else(|| "a row must be a JSON object".to_owned())
}

fn rows(rows: Vec<Map<String, Value>>) -> Vec<Value> {
    rows.into_iter().map(Value::Object).collect()
}

impl StoreDataTables {
    /// A table of the workflow's project, by id or else by name.
    fn resolve(&self, table: &str) -> Result<String, String> {
        let s = &self.0;
        let table = table.trim();
        if table.is_empty() {
            return Err("the node selects no data table".into());
        }
        if let Some(t) = s
            .handle
            .block_on(s.data.data_tables.get(table))
            .map_err(|e| e.to_string())?
        {
            if t.project_id == s.project_id {
                return Ok(t.id);
            }
        }
        let page = s
            .handle
            .block_on(s.data.data_tables.search(
                std::slice::from_ref(&s.project_id),
                Some(table),
                Some(50),
            ))
            .map_err(|e| e.to_string())?;
        page.data
            .into_iter()
            .find(|t| t.name == table)
            .map(|t| t.id)
            .ok_or_else(|| {
                format!("data table {table:?} does not exist in this workflow's project")
            })
    }
}

fn table_json(t: &DataTable) -> Result<Value, String> {
    serde_json::to_value(t).map_err(|e| e.to_string())
}

impl DataTableProvider for StoreDataTables {
    fn insert(&self, table: &str, new_rows: Vec<Value>) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let maps = new_rows.iter().map(object).collect::<Result<Vec<_>, _>>()?;
        let s = &self.0;
        // A bulk insert (every input item at once) may exceed the store's
        // batch: written batch by batch.
        let mut out = Vec::with_capacity(maps.len());
        for batch in maps.chunks(MAX_ROWS_PER_INSERT) {
            let written = s
                .handle
                .block_on(s.data.data_tables.insert_rows(&id, batch))
                .map_err(|e| e.to_string())?;
            out.extend(rows(written));
        }
        Ok(out)
    }

    fn get(&self, table: &str, f: &RowFilter, limit: Option<usize>) -> Result<Vec<Value>, String> {
        self.get_sorted(table, f, limit, None)
    }

    fn get_sorted(
        &self,
        table: &str,
        f: &RowFilter,
        limit: Option<usize>,
        sort: Option<(&str, bool)>,
    ) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let sort_by = sort.map(|(column, desc)| {
            let dir = if desc {
                SortDirection::Desc
            } else {
                SortDirection::Asc
            };
            (column.to_owned(), dir)
        });
        let filter = (!f.conditions.is_empty()).then(|| filter(f)).transpose()?;
        let s = &self.0;
        let mut out = Vec::new();
        let mut cursor = None;
        // `limit: None` is n8n's "return all": page through 1,000 at a time.
        loop {
            let want = limit
                .map(|l| l.saturating_sub(out.len()).min(1000))
                .unwrap_or(1000);
            if want == 0 {
                return Ok(out);
            }
            let q = RowQuery {
                filter: filter.clone(),
                sort_by: sort_by.clone(),
                limit: Some(want),
                cursor: cursor.take(),
                ..RowQuery::default()
            };
            let page = s
                .handle
                .block_on(s.data.data_tables.query(&id, &q))
                .map_err(|e| e.to_string())?;
            out.extend(rows(page.data));
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(out),
            }
        }
    }

    fn update(&self, table: &str, f: &RowFilter, set: &Value) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(
                s.data
                    .data_tables
                    .update_rows(&id, &filter(f)?, &object(set)?),
            )
            .map(rows)
            .map_err(|e| e.to_string())
    }

    fn delete(&self, table: &str, f: &RowFilter) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.delete_rows(&id, &filter(f)?))
            .map(rows)
            .map_err(|e| e.to_string())
    }

    fn upsert(&self, table: &str, f: &RowFilter, row: &Value) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.upsert(&id, &filter(f)?, &object(row)?))
            .map(|r| rows(r.rows))
            .map_err(|e| e.to_string())
    }

    fn update_dry_run(&self, table: &str, f: &RowFilter, set: &Value) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.preview_update(&id, &filter(f)?, &object(set)?))
            .map(rows)
            .map_err(|e| e.to_string())
    }

    fn upsert_dry_run(&self, table: &str, f: &RowFilter, row: &Value) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.preview_upsert(&id, &filter(f)?, &object(row)?))
            .map(rows)
            .map_err(|e| e.to_string())
    }

    fn delete_dry_run(&self, table: &str, f: &RowFilter) -> Result<Vec<Value>, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.preview_delete(&id, &filter(f)?))
            .map(rows)
            .map_err(|e| e.to_string())
    }

    fn list_tables(&self, q: &TableQuery) -> Result<(Vec<Value>, usize), String> {
        let s = &self.0;
        let mut all = s
            .handle
            .block_on(s.data.data_tables.list_all(&s.project_id))
            .map_err(|e| e.to_string())?;
        if let Some(needle) = q.name_contains.as_deref().map(str::to_lowercase) {
            all.retain(|t| t.name.to_lowercase().contains(&needle));
        }
        match &q.sort {
            Some((field, desc)) => {
                all.sort_by(|a, b| {
                    let o = match field.as_str() {
                        "createdAt" => a.created_at.cmp(&b.created_at),
                        "updatedAt" => a.updated_at.cmp(&b.updated_at),
                        _ => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
                    };
                    if *desc {
                        o.reverse()
                    } else {
                        o
                    }
                });
            }
            // Unsorted requests list by name, as the instance's search does.
            None => all.sort_by_key(|t| t.name.to_lowercase()),
        }
        let count = all.len();
        let page = all
            .iter()
            .skip(q.skip)
            .take(q.take.unwrap_or(usize::MAX))
            .map(table_json)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((page, count))
    }

    fn table_named(&self, name: &str) -> Result<Option<Value>, String> {
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.by_name(&s.project_id, name))
            .map_err(|e| e.to_string())?
            .as_ref()
            .map(table_json)
            .transpose()
    }

    fn create_table(&self, name: &str, columns: &[(String, String)]) -> Result<Value, String> {
        let columns = columns
            .iter()
            .map(|(name, kind)| {
                let kind: ColumnType = serde_json::from_value(Value::String(kind.clone()))
                    .map_err(|_| format!("column {name:?}: unknown type {kind:?}"))?;
                Ok(NewColumn {
                    name: name.clone(),
                    kind,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.create(&s.project_id, name, &columns))
            .map_err(|e| e.to_string())
            .and_then(|t| table_json(&t))
    }

    fn rename_table(&self, table: &str, new_name: &str) -> Result<(), String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.rename(&id, new_name))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn delete_table(&self, table: &str) -> Result<(), String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.delete(&id))
            .map_err(|e| e.to_string())
    }

    fn clear_table(&self, table: &str) -> Result<usize, String> {
        let id = self.resolve(table)?;
        let s = &self.0;
        s.handle
            .block_on(s.data.data_tables.clear_rows(&id))
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::host::RowCondition;

    #[test]
    fn filters_map_to_store_conditions() {
        let f = RowFilter {
            match_all: true,
            conditions: vec![RowCondition {
                column: "name".into(),
                condition: "ilike".into(),
                value: json!("%a%"),
            }],
        };
        let out = filter(&f).unwrap();
        assert_eq!(out.kind, FilterKind::And);
        assert_eq!(out.conditions[0].condition, Op::Ilike);
        let bad = RowFilter {
            match_all: false,
            conditions: vec![RowCondition {
                column: "x".into(),
                condition: "near".into(),
                value: Value::Null,
            }],
        };
        assert!(filter(&bad).unwrap_err().contains("near"));
    }

    #[test]
    fn secrets_are_scrubbed_wherever_they_appear() {
        let s = Secrets::default();
        s.remember(&json!({"name": "X-Api-Key", "value": "tok-123456"}));
        s.remember(&json!({"user": "alice", "password": "hunter22"}));
        s.remember(&json!({"json": "{\"headers\": {\"k\": \"custom-secret\"}}"}));
        let mut v = json!({"msg": "url http://h/?X-Api-Key=tok-123456 failed", "h": ["Basic YWxpY2U6aHVudGVyMjI="], "c": "custom-secret!"});
        s.scrub(&mut v);
        let text = v.to_string();
        for leaked in [
            "tok-123456",
            "hunter22",
            "YWxpY2U6aHVudGVyMjI=",
            "custom-secret",
        ] {
            assert!(!text.contains(leaked), "{leaked} in {text}");
        }
        assert!(text.contains("X-Api-Key"), "names are not secret: {text}");
    }

    #[test]
    fn allow_lists_keep_the_guard_for_everything_else() {
        let mut s = EngineSettings::default();
        HttpPolicy::AllowListOnly(vec!["127.0.0.1".into()]).apply(&mut s);
        assert!(s.allow_private_network && s.allowed_hosts == ["127.0.0.1"]);
        HttpPolicy::PublicOnly.apply(&mut s);
        assert!(!s.allow_private_network && s.allowed_hosts.is_empty());
        HttpPolicy::AllowListOnly(vec![]).apply(&mut s);
        assert!(!s.allow_private_network && !s.allowed_hosts.is_empty());
    }

    #[test]
    fn the_configured_http_policy_reaches_the_engine_settings() {
        let policy = |hosts: &str, private: &str| {
            let config = store::Config::from_lookup(|k| match k {
                "AWS_REGION" => Some("us-east-1".into()),
                "INSTANCE_AI_HTTP_ALLOWED_HOSTS" => Some(hosts.into()),
                "INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK" => Some(private.into()),
                _ => None,
            })
            .unwrap();
            let mut s = EngineSettings::default();
            HttpPolicy::from_config(&config).apply(&mut s);
            (s.allowed_hosts, s.allow_private_network)
        };
        assert_eq!(policy("", ""), (vec![], false), "default: public hosts only");
        assert_eq!(policy("api.example.com", "false"), (vec!["api.example.com".to_owned()], false));
        assert_eq!(policy("10.0.0.5", "true"), (vec!["10.0.0.5".to_owned()], true));
        assert_eq!(policy("", "true"), (vec![], true));
    }
}
