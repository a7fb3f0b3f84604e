//! Published workflows run on their triggers.
//!
//! - [`Activation`] (`activation`): publishing claims the workflow's webhook
//!   and form paths (a path another live workflow holds is a conflict,
//!   refused before anything changes) and creates one EventBridge Scheduler
//!   schedule per Schedule Trigger rule (`schedules`); unpublish and archive
//!   release and delete them, republish replaces them.
//! - [`Triggers::handle`]: the `webhook` function's body. `/webhook/…` runs
//!   the published version of the workflow whose Webhook node has the path
//!   and method, `/webhook-test/…` its draft; `/form/…` serves and submits
//!   Form Triggers (`forms`, plain HTML in `html`); `/webhook-waiting/<id>`
//!   and `/form-waiting/<id>` resume Wait nodes (`waiting`). Requests are
//!   parsed in `request`; the node's access and authentication options are
//!   checked before anything runs; the answer follows the node's response
//!   mode, and past the configured wait the caller gets `202` with the
//!   execution id while the run goes on in the executor (`answer`).
//!
//! - [`Triggers::handle_stream`]: the streaming URL (`/stream/webhook/…`,
//!   the events function's Function URL): a Chat Trigger's streamed answer
//!   line by line (`chat`, the hosted page in `chat_page`).
//!
//! Executions run in the executor function (Runs queue); this crate only
//! starts, resumes and waits for them.

mod activation;
mod answer;
mod chat;
mod chat_page;
pub mod error;
mod forms;
pub mod html;
mod request;
mod schedules;
mod waiting;
mod webhook;

pub use activation::Activation;
pub use error::TriggerError;
pub use chat::{StreamBody, StreamReply, MAX_STREAM};
pub use request::{HttpReply, HttpRequest};
pub use schedules::{plan as plan_schedules, PlannedSchedule, Schedules};

use engine::webhook::IncomingRequest;
use executions::{Executor, ExecutorSettings};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{AwsClients, Config};

/// Limits of the webhook function, from the configuration.
#[derive(Debug, Clone)]
pub struct TriggerSettings {
    pub max_body_bytes: usize,
    /// How long a caller waits for an answer before `202`.
    pub response_wait: Duration,
    /// Base URL of webhook URLs; `None`: the request's own host.
    pub public_url: Option<String>,
    /// Base URL of the streaming URLs (`/stream/…`, the events function's
    /// Function URL); `None`: the request's own host (the local cloud).
    pub stream_url: Option<String>,
}

impl TriggerSettings {
    pub fn from_config(config: &Config) -> Self {
        TriggerSettings {
            max_body_bytes: config.webhook_max_body_bytes,
            response_wait: Duration::from_secs(config.webhook_response_wait_secs),
            public_url: config.public_url.clone(),
            stream_url: config.events_url.clone(),
        }
    }
}

/// The webhook function's service, built once per process.
#[derive(Clone)]
pub struct Triggers {
    executor: Executor,
    settings: TriggerSettings,
    /// Published versions and drafts are immutable: their JSON is kept
    /// once read (a few dozen, the most recent).
    versions: Arc<Mutex<HashMap<(String, String), Arc<Value>>>>,
    /// API keys (a Chat Trigger's `n8nUserAuth`); `None` where the function has no keys table.
    api_keys: Option<store::ApiKeys>,
}

const VERSION_CACHE: usize = 64;

impl Triggers {
    pub fn new(executor: Executor, settings: TriggerSettings) -> Self {
        Triggers { executor, settings, versions: Arc::default(), api_keys: None }
    }

    /// With the API keys a Chat Trigger's `n8nUserAuth` checks.
    pub fn with_api_keys(mut self, keys: store::ApiKeys) -> Self {
        self.api_keys = Some(keys);
        self
    }

    pub async fn from_config(clients: &AwsClients, config: &Config) -> Result<Self, TriggerError> {
        let executor = Executor::from_config(clients, config, ExecutorSettings::from_config(config)).await?;
        let mut triggers = Triggers::new(executor, TriggerSettings::from_config(config));
        if let Ok(table) = config.table(store::deployment::TableId::ApiKeys) {
            triggers = triggers.with_api_keys(store::ApiKeys::new(clients.dynamo.clone(), table));
        }
        Ok(triggers)
    }

    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// Answers one request to a webhook, form or resume URL.
    pub async fn handle(&self, req: HttpRequest) -> Result<HttpReply, TriggerError> {
        if req.body.len() > self.settings.max_body_bytes {
            return Err(TriggerError::PayloadTooLarge(format!(
                "the request body is {} bytes; at most {} are accepted",
                req.body.len(),
                self.settings.max_body_bytes
            )));
        }
        let (space, rest) = request::split_space(&req.path)?;
        use request::Space::*;
        match space {
            Webhook => self.webhook(&req, &rest, store::data::webhooks::Scope::Production).await,
            WebhookTest => self.webhook(&req, &rest, store::data::webhooks::Scope::Test).await,
            Form => self.form(&req, &rest, store::data::webhooks::Scope::Production).await,
            FormTest => self.form(&req, &rest, store::data::webhooks::Scope::Test).await,
            WebhookWaiting => self.resume_webhook(&req, &rest).await,
            FormWaiting => self.resume_form(&req, &rest).await,
        }
    }

    /// The JSON of a stored version (`projectId` included), read once.
    async fn version_json(&self, workflow_id: &str, version_id: &str) -> Result<Arc<Value>, TriggerError> {
        let k = (workflow_id.to_owned(), version_id.to_owned());
        if let Some(v) = self.versions.lock().ok().and_then(|m| m.get(&k).cloned()) {
            return Ok(v);
        }
        let data = self.executor.data();
        let meta = data.workflows.meta(workflow_id).await?.ok_or_else(|| TriggerError::NotFound(format!("workflow {workflow_id}")))?;
        let v = data
            .workflows
            .get_version(workflow_id, version_id)
            .await?
            .ok_or_else(|| TriggerError::NotFound(format!("version {version_id} of workflow {workflow_id}")))?;
        let json = Arc::new(serde_json::json!({
            "id": workflow_id,
            "name": meta.name,
            "projectId": meta.project_id,
            "nodes": v.body.nodes,
            "connections": v.body.connections,
            "settings": if v.body.settings.is_object() { v.body.settings } else { serde_json::json!({}) },
        }));
        if let Ok(mut m) = self.versions.lock() {
            if m.len() >= VERSION_CACHE {
                m.clear();
            }
            m.insert(k, json.clone());
        }
        Ok(json)
    }

    /// The base URL webhook URLs of this request are built on.
    fn base_url(&self, req: &HttpRequest) -> String {
        self.settings.public_url.clone().unwrap_or_else(|| req.base_url.clone())
    }

    /// The node's credential for its authentication, if it selects one the
    /// workflow's project may use (`None` otherwise: the check then fails
    /// as n8n's does, with "No authentication data defined on node!").
    async fn credential(&self, project_id: &str, node: &engine::Node, cred_type: &str) -> Option<Value> {
        let reference = node.credentials.as_ref()?.get(cred_type)?;
        match executions::project_credential(self.executor.data(), project_id, cred_type, reference).await {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(node = %node.name, error = %e, "webhook credential unavailable");
                None
            }
        }
    }

    /// Access options (IP allow-list, bots) and authentication of a
    /// webhook-like node; `Ok` carries the verified JWT payload.
    async fn admit(&self, project_id: &str, node: &engine::Node, req: &mut IncomingRequest) -> Result<Option<Value>, TriggerError> {
        engine::webhook::check_access(node, req).map_err(TriggerError::Refused)?;
        let auth = engine::webhook::WebhookAuth::of(node).map_err(|e| TriggerError::Misconfigured(e.to_string()))?;
        let credential = match auth.credential_type() {
            Some(t) => self.credential(project_id, node, t).await,
            None => None,
        };
        let admitted = engine::webhook::authenticate(auth, credential.as_ref(), &req.headers).map_err(TriggerError::Refused)?;
        engine::webhook::redact_credential(auth, credential.as_ref(), &mut req.headers);
        Ok(admitted)
    }
}
