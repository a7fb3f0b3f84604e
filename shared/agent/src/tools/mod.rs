//! The tool registry: each tool declares its JSON Schema input
//! (action-discriminated for domain tools), whether a call needs a human
//! first, and an async handler that gets the run context and the abort
//! signal. Input that fails the schema never reaches the handler: the model
//! gets a `tool-error` it can read and correct.

pub mod ask_user;
pub mod build_workflow;
pub mod load_skill;
pub mod mcp_servers;
pub mod executions;
pub mod conversation_history;
pub mod credentials;
pub mod deferral;
pub mod eval_config;
pub mod nodes;
pub mod parse_file;
pub mod data_table_card;
pub mod data_tables;
pub mod n8n_docs;
pub mod policy;
pub mod preferences;
pub mod research;
pub mod schema;
pub mod search_models;
pub mod tasks;
pub mod untrusted;
pub mod verification;
pub mod workflows;
pub mod workspace;
pub mod workflow_setup;
pub mod workspace_resources;

use crate::model::ToolDefinition;
use crate::runtime::Runtime;
use futures::future::BoxFuture;
use protocol::events::{ConfirmationRequest, EventPayload};
use protocol::ids::{AgentId, RunId, ThreadId};
use protocol::UserId;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use store::EventWriter;
use tokio::sync::Mutex;
pub use tokio_util::sync::CancellationToken;

/// What a handler sees of the run.
pub struct ToolContext<'a> {
    pub rt: &'a Runtime,
    pub run_id: &'a RunId,
    pub thread_id: &'a ThreadId,
    pub user_id: &'a UserId,
    /// The project the thread is bound to (`None`: the personal project).
    pub project_id: Option<&'a str>,
    pub agent_id: &'a AgentId,
    pub tool_call_id: &'a str,
    /// Fires on cancel: handlers race it and forward it into their I/O.
    pub abort: CancellationToken,
    /// The step's event writer (tools that publish, e.g. `tasks-update`).
    pub writer: &'a Mutex<EventWriter>,
    /// Every tool this step can reach, and what this model call offers
    /// (`search_tools` looks through them).
    pub toolbox: &'a Toolbox<'a>,
    pub offer: &'a Offer,
}

impl ToolContext<'_> {
    /// The domain layer; a clear error where this function was deployed without it.
    pub fn instance(&self) -> Result<&instance::Instance, String> {
        self.rt.instance.as_deref().ok_or_else(|| "this function has no access to the instance's data (deployment error)".to_owned())
    }

    /// Who acts: the run's user, writing to the thread's bound project.
    pub fn caller(&self) -> instance::Caller {
        instance::Caller { user: self.user_id.clone(), project: self.project_id.map(str::to_owned) }
    }

    pub async fn emit(&self, payload: EventPayload) -> Result<(), String> {
        let event = crate::runtime::event(self.run_id, self.agent_id, payload);
        self.writer.lock().await.emit(event).await.map(|_| ()).map_err(|e| e.to_string())
    }
}

/// A human gate: the confirmation to show (ids are filled in by the loop)
/// and events to publish before suspending.
pub struct Gate {
    pub request: ConfirmationRequest,
    pub before: Vec<EventPayload>,
    /// The admin policy action this gate falls under (`workflows.publish`,
    /// `runWorkflow`, …; see [`policy`]); `None` for gates that are questions
    /// or plan reviews, which no policy can skip.
    pub policy: Option<String>,
}

impl Gate {
    /// A question or review: always asks, never skipped by policy or grants.
    pub fn question(request: ConfirmationRequest, before: Vec<EventPayload>) -> Gate {
        Gate { request, before, policy: None }
    }

    /// A permission: subject to the admin policy `action` and session grants.
    pub fn permission(request: ConfirmationRequest, action: impl Into<String>) -> Gate {
        Gate { request, before: Vec::new(), policy: Some(action.into()) }
    }
}

pub enum ToolOutcome {
    /// `tool-result`.
    Done(Value),
    /// `tool-error`, readable by the model.
    Failed(String),
    /// Not settled yet: the call waits on a workflow execution. The step
    /// parks the chain on it (a wait record; no step runs meanwhile) and
    /// [`Tool::resume_wait`] settles the call once the execution settles,
    /// or at the deadline.
    Wait(ExecutionWait),
}

/// What a call parked on an execution waits for (kept in the wait record).
pub use store::suspensions::ExecutionWait;

/// A human's answer to a confirmation request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Decision {
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// Set by the sweep when a confirmation timed out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// A setup card's answer (see [`SetupAnswer`]).
    #[serde(default, skip_serializing_if = "SetupAnswer::is_empty")]
    pub setup: SetupAnswer,
}

/// What a person chose on a credential or workflow setup card. Only ids and
/// parameter values: a secret never passes through a confirmation (it goes
/// to the credentials REST API).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetupAnswer {
    /// `credentials(setup)`: credential type → chosen credential id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<BTreeMap<String, String>>,
    /// `workflows(setup)`: node name → credential type → credential id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_credentials: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// `workflows(setup)`: node name → parameter → value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_parameters: Option<BTreeMap<String, Map<String, Value>>>,
    /// `workflows(setup)`: nodes whose cards the person dismissed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_nodes: Option<Vec<String>>,
    /// `credentials(setup)`: the person asked for help creating this type in a browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_setup: Option<AutoSetup>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoSetup {
    pub credential_type: String,
}

impl SetupAnswer {
    pub fn is_empty(&self) -> bool {
        *self == SetupAnswer::default()
    }
}

impl Decision {
    /// Credential type → id the person chose: `credentials`, or the same
    /// map sent as `answers.credentials` (the page's cards).
    pub fn chosen_credentials(&self) -> std::collections::BTreeMap<String, String> {
        if let Some(c) = &self.setup.credentials {
            return c.clone();
        }
        self.answers
            .as_ref()
            .and_then(|a| a.get("credentials"))
            .and_then(|c| serde_json::from_value::<std::collections::BTreeMap<String, Option<String>>>(c.clone()).ok())
            .map(|m| m.into_iter().filter_map(|(t, id)| Some((t, id.filter(|i| !i.is_empty())?))).collect())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Once,
    Session,
}

/// Which agents get a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    All,
    Orchestrator,
    /// Background agents executing a `checkpoint` task.
    CheckpointAgent,
}

/// What one model call of an agent may be offered.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    pub orchestrator: bool,
    pub checkpoint_task: bool,
    /// The run's message carries attachments `parse-file` can read.
    pub attachments: bool,
    /// Deferred tools loaded in this run (by `load_tool`, or by a call).
    pub loaded: BTreeSet<String>,
}

impl Offer {
    fn admits(&self, audience: Audience) -> bool {
        match audience {
            Audience::All => true,
            Audience::Orchestrator => self.orchestrator,
            Audience::CheckpointAgent => self.checkpoint_task,
        }
    }
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn input_schema(&self) -> Value;
    fn audience(&self) -> Audience {
        Audience::All
    }
    /// Whether this call's context has what the tool needs (`parse-file`:
    /// an attachment); a tool not offered is neither listed nor callable.
    fn offered(&self, _offer: &Offer) -> bool {
        true
    }
    /// Checks the model's arguments before anything else (default: the
    /// input schema); the error is a `tool-error` the model can correct.
    fn check_input(&self, args: &Value) -> Result<(), String> {
        schema::validate(&self.input_schema(), args)
    }
    /// `Ok(Some)` when this call needs a human before it runs. It may read the
    /// domain (the card names the resource); `Err` refuses the call before
    /// anyone is asked (a missing workflow, bad input), as a `tool-error`.
    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, _args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async { Ok(None) })
    }
    /// The key an "always allow for this thread" decision is stored under;
    /// `None` for gates that are questions, not permissions (or when no
    /// grant may be offered).
    fn allow_key(&self, args: &Value) -> Option<String> {
        Some(format!("{}#{}", self.name(), args.get("action").and_then(Value::as_str).unwrap_or("*")))
    }
    /// Grant keys any of which lets this call run without asking: its own
    /// [`allow_key`](Tool::allow_key) and broader ones (a whole-workflow run
    /// grant covers a step of that workflow).
    fn covering_keys(&self, args: &Value) -> Vec<String> {
        self.allow_key(args).into_iter().collect()
    }
    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome>;
    /// Settles a call that returned [`ToolOutcome::Wait`]: after the
    /// execution settled, or with `deadline_passed` when its deadline came
    /// first (or the run is being cancelled: the tool stops the execution).
    fn resume_wait<'a>(&'a self, _ctx: &'a ToolContext<'a>, _args: Value, _wait: ExecutionWait, _deadline_passed: bool) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::Failed("this tool cannot wait on an execution".into()) })
    }
    /// `true` when the handler itself answers the abort signal (promptly,
    /// after undoing what it started, e.g. stopping an execution); the loop
    /// then awaits it instead of dropping it when the run is cancelled.
    fn handles_abort(&self) -> bool {
        false
    }
    /// Runs a gated call after the human decided. Approval runs the tool;
    /// denial answers with a structured denied result the model reads.
    fn resume<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        if decision.approved {
            self.run(ctx, args)
        } else {
            Box::pin(async move { ToolOutcome::Done(denied(&decision)) })
        }
    }
}

/// `<tool>:<action>:<part>…`, a session grant scoped to the resources a call
/// acts on: the values of `fields` in the call (absent ones left out, `:`
/// and `%` escaped so no two calls share a key by accident). `None` when the
/// key would not fit the grant column.
pub fn resource_grant(tool: &str, args: &Value, fields: &[&str]) -> Option<String> {
    let mut key = format!("{tool}:{}", args.get("action").and_then(Value::as_str).unwrap_or("*"));
    for f in fields {
        if let Some(v) = args.get(*f).and_then(Value::as_str).filter(|v| !v.is_empty()) {
            key.push(':');
            key.push_str(&v.replace('%', "%25").replace(':', "%3A"));
        }
    }
    (key.chars().count() <= nodes::MAX_GRANT_KEY).then_some(key)
}

/// The result a call blocked by the admin policy returns to the model.
pub fn blocked(action: &str) -> Value {
    json!({
        "blocked": true,
        "reason": "blocked_by_admin",
        "message": format!("An administrator has blocked this action ({action}) for the assistant; it was not performed. Tell the user, and do not try to achieve the same effect another way."),
    })
}

/// The result a denied call returns to the model.
pub fn denied(decision: &Decision) -> Value {
    let mut v = json!({
        "denied": true,
        "message": if decision.expired { "The confirmation request expired; the action was not performed." } else { "The user denied this action; it was not performed." },
    });
    if let Some(input) = &decision.user_input {
        v["userInput"] = Value::String(input.clone());
    }
    v
}

#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl Registry {
    pub fn empty() -> Self {
        Registry::default()
    }

    /// Every tool of this crate: orchestration, skills, workspace and domain tools.
    pub fn standard() -> Self {
        let mut r = Registry::empty();
        r.register(Arc::new(ask_user::AskUser));
        r.register(Arc::new(tasks::TaskControl));
        r.register(Arc::new(tasks::CreateTasks));
        r.register(Arc::new(tasks::CompleteCheckpoint));
        r.register(Arc::new(load_skill::LoadSkill));
        r.register(Arc::new(workspace::ListFiles));
        r.register(Arc::new(workspace::ReadFile));
        r.register(Arc::new(workspace::WriteFile));
        r.register(Arc::new(workspace::EditFile));
        r.register(Arc::new(workspace::Grep));
        r.register(Arc::new(workflows::Workflows));
        r.register(Arc::new(build_workflow::BuildWorkflow));
        r.register(Arc::new(executions::Executions));
        // Domain tools (front doors to `instance`).
        r.register(Arc::new(credentials::Credentials));
        r.register(Arc::new(nodes::Nodes));
        r.register(Arc::new(data_tables::DataTables));
        r.register(Arc::new(workspace_resources::Workspace));
        r.register(Arc::new(verification::VerifyBuiltWorkflow));
        r.register(Arc::new(verification::ReportVerificationVerdict));
        r.register(Arc::new(verification::ApplyWorkflowCredentials));
        r.register(Arc::new(research::Research));
        r.register(Arc::new(n8n_docs::N8nDocs));
        r.register(Arc::new(preferences::SaveUserPreference));
        r.register(Arc::new(search_models::SearchModels));
        r.register(Arc::new(conversation_history::ConversationHistory));
        r.register(Arc::new(parse_file::ParseFile));
        r.register(Arc::new(mcp_servers::McpServersTool));
        r.register(Arc::new(eval_config::EvalConfigTool));
        r.register(Arc::new(deferral::SearchTools));
        r.register(Arc::new(deferral::LoadTool));
        r
    }

    /// Adds (or replaces) a tool: domain tools are registered by their crates.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// The definitions the model sees in a call with `offer` (deferred
    /// tools only once loaded).
    pub fn definitions(&self, offer: &Offer) -> Vec<ToolDefinition> {
        Toolbox::new(self, Vec::new()).definitions(offer)
    }
}

/// The tools one step can reach: the process's [`Registry`] plus the
/// user's connected MCP servers' tools (read when the step starts).
pub struct Toolbox<'a> {
    registry: &'a Registry,
    extra: Vec<Arc<dyn Tool>>,
}

impl<'a> Toolbox<'a> {
    pub fn new(registry: &'a Registry, extra: Vec<Arc<dyn Tool>>) -> Toolbox<'a> {
        Toolbox { registry, extra }
    }

    /// Every tool an agent with `offer` may use, loaded or deferred.
    pub fn available<'s>(&'s self, offer: &'s Offer) -> impl Iterator<Item = &'s Arc<dyn Tool>> + 's {
        self.registry.tools.values().chain(self.extra.iter()).filter(move |t| offer.admits(t.audience()) && t.offered(offer))
    }

    /// Offered in this call: always-loaded tools and the deferred ones loaded.
    pub fn definitions(&self, offer: &Offer) -> Vec<ToolDefinition> {
        self.available(offer)
            .filter(|t| deferral::is_always_loaded(t.name()) || offer.loaded.contains(t.name()))
            .map(|t| ToolDefinition { name: t.name().to_owned(), description: t.description().to_owned(), input_schema: t.input_schema() })
            .collect()
    }

    /// The tool a call names, when the agent may use it (a deferred tool
    /// called by its exact name runs too: the name was all loading gives).
    pub fn callable(&self, offer: &Offer, name: &str) -> Option<Arc<dyn Tool>> {
        self.available(offer).find(|t| t.name() == name).cloned()
    }

    /// A tool by name, whoever may use it (resuming a suspended call).
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.registry.get(name).cloned().or_else(|| self.extra.iter().find(|t| t.name() == name).cloned())
    }
}
