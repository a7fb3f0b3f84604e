//! A node's dynamic-resource lookups (`nodes(explore-resources)`: the
//! channels, bases or repositories a parameter can name): one GET to the
//! service with the credential applied as the HTTP Request node applies a
//! predefined (or generic) type, through its SSRF guard. The credential is
//! decrypted here, as for a connection test, and the answer is scrubbed of
//! every value decrypted before it leaves. Nothing is recorded: a lookup is
//! a read for the builder, not an execution.

use crate::error::Result;
use crate::host;
use crate::jobs::LookupCall;
use crate::{ExecutionError, Executor};
use engine::{Engine, EngineSettings, ExecutionStatus as EngineStatus, Graph, RunOptions};
use serde_json::{json, Value};
use std::time::Duration;
use store::data::credentials::Credential;
use store::data::executions::ExecutionMode;

/// How long one lookup request may take (below `job_wait`).
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(20);

impl Executor {
    /// Makes `call` with `credential` (the caller checked access): the
    /// service's JSON answer as the HTTP Request node gives it (an object
    /// is one item, a top-level array one item per element), or why it
    /// failed (`Ok(Err)`: the service or the guard refused; the message
    /// names no secret).
    pub(crate) async fn lookup_here(&self, credential: &Credential, call: LookupCall) -> Result<std::result::Result<Vec<Value>, String>> {
        let generic = engine::catalog::credential_types::credential_type(&credential.kind).is_some_and(|t| t.generic_auth);
        let pairs = |l: &[(String, String)]| -> Vec<Value> { l.iter().map(|(k, v)| json!({"name": k, "value": v})).collect() };
        let (auth, key) = if generic { ("genericCredentialType", "genericAuthType") } else { ("predefinedCredentialType", "nodeCredentialType") };
        let workflow = json!({
            "name": "Lookup",
            "nodes": [
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
                {"name": "Lookup", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [200, 0],
                 "parameters": {
                     "method": "GET", "url": call.url, "authentication": auth, key: credential.kind,
                     "sendQuery": !call.query.is_empty(), "queryParameters": {"parameters": pairs(&call.query)},
                     "sendHeaders": !call.headers.is_empty(), "headerParameters": {"parameters": pairs(&call.headers)},
                     "options": {"timeout": LOOKUP_TIMEOUT.as_millis() as u64, "response": {"response": {"responseFormat": "json"}}}
                 },
                 "credentials": {credential.kind.clone(): {"id": credential.id, "name": credential.name}}}
            ],
            "connections": {"Start": {"main": [[{"node": "Lookup", "type": "main", "index": 0}]]}}
        });
        let graph = Graph::from_json(&workflow).map_err(|e| ExecutionError::Engine(e.to_string()))?;
        let mut settings = EngineSettings { execution_timeout: Some(LOOKUP_TIMEOUT), ..EngineSettings::default() };
        self.settings().apply_http(&mut settings);
        let secrets = host::Secrets::default();
        let host = host::credentials_only(host::Scope {
            data: self.data().clone(),
            handle: tokio::runtime::Handle::current(),
            project_id: credential.home_project_id.clone(),
            mode: ExecutionMode::Manual,
            secrets: secrets.clone(),
        });
        // The engine blocks (as in a connection test): a blocking thread.
        let st = tokio::task::spawn_blocking(move || Engine::new(settings, host).run(&graph, RunOptions { timeout: Some(LOOKUP_TIMEOUT), ..RunOptions::default() }))
            .await
            .map_err(|e| ExecutionError::Engine(format!("the lookup stopped: {e}")))?
            .map_err(|e| ExecutionError::Engine(e.to_string()))?
            .0;
        if st.status != EngineStatus::Success {
            let message = st.error.map(|e| match e.http_code {
                Some(code) => format!("{} (HTTP {code})", e.message),
                None => e.message,
            });
            return Ok(Err(secrets.scrub_str(&message.unwrap_or_else(|| format!("the lookup ended as {:?}", st.status)))));
        }
        let mut answer: Vec<Value> = st.node_output("Lookup", 0).map(|items| items.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default();
        answer.iter_mut().for_each(|v| secrets.scrub(v));
        Ok(Ok(answer))
    }
}
