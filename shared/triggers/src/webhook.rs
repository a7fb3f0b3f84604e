//! `/webhook/<path>` (the published version) and `/webhook-test/<path>`
//! (the draft): find the workflow whose Webhook node has the path and
//! method, admit the request (access options, authentication; CORS headers
//! and preflights as n8n's webhook server answers them), start an
//! execution from that node with the request as its item, and answer as
//! the node says: at once (`onReceived`), when the last node finishes
//! (`lastNode`), or with a Respond to Webhook node (`responseNode`).

use crate::answer::token;
use crate::error::{Result, TriggerError};
use crate::request::{self, HttpReply, HttpRequest};
use crate::Triggers;
use engine::webhook::{self, ResponseMode, ResponseSpec, TriggerContext};
use executions::{ExecutionMode, Respond, StartRequest, WorkflowRef};
use serde_json::{Map, Value};
use std::sync::Arc;
use store::data::webhooks::{best_match, EndpointKind, Registration, Scope};

/// A webhook-like node, found for a request.
pub(crate) struct Target {
    pub registration: Registration,
    pub params: Map<String, Value>,
    /// The workflow JSON to run (with `projectId`).
    pub workflow: Arc<Value>,
    pub node: engine::Node,
    pub project_id: String,
}

impl Triggers {
    /// The workflow and node a request addresses, in `scope`.
    pub(crate) async fn find(&self, kind: EndpointKind, method: &str, path: &str, scope: Scope) -> Result<Target> {
        let data = self.executor.data();
        let candidates = data.webhooks.candidates(kind, method, path, scope).await?;
        let not_registered = || {
            let what = if kind == EndpointKind::Form { "form" } else { "webhook" };
            TriggerError::NotFound(match scope {
                Scope::Production => format!("The requested {what} \"{method} {path}\" is not registered."),
                Scope::Test => format!(
                    "The requested {what} \"{method} {path}\" is not registered: no saved draft has a node with this path and method."
                ),
            })
        };
        let (registration, params) = match scope {
            Scope::Production => best_match(&candidates, path).map(|(r, p)| (r.clone(), p)).ok_or_else(not_registered)?,
            Scope::Test => {
                let (first, params) = best_match(&candidates, path).map(|(r, p)| (r.clone(), p)).ok_or_else(not_registered)?;
                let sharing = candidates.iter().filter(|c| c.endpoint.path == first.endpoint.path).count();
                if sharing > 1 {
                    return Err(TriggerError::Conflict(format!(
                        "{sharing} draft workflows listen to the test URL \"{method} {path}\"; change the path of all but one"
                    )));
                }
                (first, params)
            }
        };
        let meta = data.workflows.meta(&registration.workflow_id).await?.filter(|m| !m.is_archived).ok_or_else(not_registered)?;
        let version = match scope {
            // A registration of a version no longer published answers nothing.
            Scope::Production => match &meta.active_version_id {
                Some(v) if *v == registration.version_id => v.clone(),
                _ => return Err(not_registered()),
            },
            Scope::Test => meta.version_id.clone(),
        };
        let workflow = self.version_json(&registration.workflow_id, &version).await?;
        let node = workflow
            .get("nodes")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|n| n.get("name").and_then(Value::as_str) == Some(registration.endpoint.node.as_str())))
            .and_then(|n| serde_json::from_value::<engine::Node>(n.clone()).ok())
            .filter(|n| !n.disabled)
            .ok_or_else(not_registered)?;
        Ok(Target { registration, params, project_id: meta.project_id, workflow, node })
    }

    pub(crate) async fn webhook(&self, req: &HttpRequest, path: &str, scope: Scope) -> Result<HttpReply> {
        if req.method == "OPTIONS" {
            return self.preflight(req, path, scope).await;
        }
        let target = self.find(EndpointKind::Webhook, &req.method, path, scope).await?;
        let cors = Self::cors(req, &target.node);
        let answer = self.webhook_answer(req, &target, scope).await;
        with_cors(answer, cors)
    }

    async fn webhook_answer(&self, req: &HttpRequest, target: &Target, scope: Scope) -> Result<HttpReply> {
        if crate::chat::is_chat(target) {
            let reply = self.chat(req, target, scope, crate::chat::Edge::HttpApi).await?;
            return Ok(match reply.body {
                crate::chat::StreamBody::Full(body) => HttpReply { status: reply.status, headers: reply.headers, body },
                // the HTTP API edge buffers (chat::stream_answer)
                crate::chat::StreamBody::Lines(_) => return Err(TriggerError::Misconfigured("a streamed answer on the HTTP API".into())),
            });
        }
        let mut incoming = request::incoming(req, target.params.clone()).await?;
        let jwt = self.admit(&target.project_id, &target.node, &mut incoming).await?;
        let spec = ResponseSpec::of(&target.node);
        check_response_mode(target, &spec)?;
        let space = if scope == Scope::Test { "webhook-test" } else { "webhook" };
        let ctx = TriggerContext {
            webhook_url: Some(format!("{}/{space}/{}", self.base_url(req), target.registration.endpoint.path)),
            execution_mode: Some(if scope == Scope::Test { "test" } else { "production" }.into()),
            jwt_payload: jwt,
        };
        let outputs = webhook::webhook_output(&target.node, &incoming, &ctx).map_err(|e| TriggerError::BadRequest(e.to_string()))?;
        let (output, items) = outputs
            .into_iter()
            .enumerate()
            .find(|(_, o)| !o.is_empty())
            .ok_or_else(|| TriggerError::BadRequest("the request produced no item".into()))?;
        let mode = if scope == Scope::Test { ExecutionMode::Manual } else { ExecutionMode::Webhook };
        self.start_and_answer(target, mode, items, output, &spec).await
    }

    /// The methods some workflow answers at this path (n8n's
    /// `getWebhookMethods`), asked of every method at once.
    async fn methods_at(&self, path: &str, scope: Scope) -> Result<Vec<&'static str>> {
        let data = self.executor.data();
        let found = futures::future::try_join_all(WEBHOOK_METHODS.iter().map(|m| async move {
            let candidates = data.webhooks.candidates(EndpointKind::Webhook, m, path, scope).await?;
            Ok::<_, TriggerError>(best_match(&candidates, path).is_some().then_some(*m))
        }))
        .await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// n8n's CORS headers for a request to `node`: only when it carries an
    /// `Origin`. n8n lists every method registered at the path; browsers
    /// read that list from a preflight's answer only, so here it names the
    /// method answered, and a request costs no lookup of the others.
    pub(crate) fn cors(req: &HttpRequest, node: &engine::Node) -> Vec<(String, String)> {
        let Some(origin) = req.header("origin") else { return Vec::new() };
        let method = req.method.to_ascii_uppercase();
        webhook::cors_headers(&req.method, Some(origin), None, &[method.as_str()], webhook::allowed_origins(node))
    }

    /// A CORS preflight, answered as n8n's webhook server does without
    /// running anything: 204, the methods registered at the path, the
    /// origin allowed by the node of the method asked for
    /// (`Access-Control-Request-Method`).
    pub(crate) async fn preflight(&self, req: &HttpRequest, path: &str, scope: Scope) -> Result<HttpReply> {
        let methods = self.methods_at(path, scope).await?;
        if methods.is_empty() {
            return Err(TriggerError::NotFound(format!("The requested webhook \"OPTIONS {path}\" is not registered.")));
        }
        let asked = req.header("access-control-request-method").map(str::to_ascii_uppercase).filter(|m| methods.contains(&m.as_str()));
        let target = match asked {
            // a registration whose workflow no longer answers sets no policy
            Some(m) => match self.find(EndpointKind::Webhook, &m, path, scope).await {
                Ok(t) => Some(t),
                Err(TriggerError::NotFound(_)) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        let allowed = target.as_ref().and_then(|t| webhook::allowed_origins(&t.node));
        let headers = webhook::cors_headers("OPTIONS", req.header("origin"), req.header("access-control-request-headers"), &methods, allowed);
        Ok(HttpReply { status: 204, headers, body: Vec::new() })
    }

    /// Starts the execution from the target's node and answers per `spec`.
    pub(crate) async fn start_and_answer(
        &self,
        target: &Target,
        mode: ExecutionMode,
        items: Vec<engine::Item>,
        output: usize,
        spec: &ResponseSpec,
    ) -> Result<HttpReply> {
        let waits = matches!(spec.mode, ResponseMode::LastNode | ResponseMode::ResponseNode);
        let token = token();
        let mut start = StartRequest::new(
            WorkflowRef::Inline { workflow: (*target.workflow).clone(), project_id: target.project_id.clone() },
            mode,
        );
        start.trigger = Some(target.node.name.clone());
        start.trigger_items = Some(items);
        start.trigger_output = output;
        if waits {
            start.respond = Some(Respond { node: target.node.name.clone(), token: token.clone(), stream: false });
        }
        let id = self.executor.start_execution(start).await?;
        tracing::info!(executionId = %id, workflowId = %target.registration.workflow_id, node = %target.node.name, "webhook started an execution");
        if waits {
            self.await_answer(&id, &token).await
        } else {
            Ok(webhook::on_received_response(spec).into())
        }
    }
}

const WEBHOOK_METHODS: [&str; 6] = ["DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"];

/// Adds CORS headers to an answer or an error. A header the workflow set
/// itself wins (n8n sets CORS first; the node's headers then replace them).
pub(crate) fn with_cors<R: HasHeaders>(answer: Result<R>, cors: Vec<(String, String)>) -> Result<R> {
    if cors.is_empty() {
        return answer;
    }
    match answer {
        Ok(mut reply) => {
            let headers = reply.headers_mut();
            for (n, v) in cors {
                if !headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(&n)) {
                    headers.push((n, v));
                }
            }
            Ok(reply)
        }
        Err(error) => Err(TriggerError::WithHeaders { error: Box::new(error), headers: cors }),
    }
}

/// A reply with lower-case headers (whole or streamed).
pub(crate) trait HasHeaders {
    fn headers_mut(&mut self) -> &mut Vec<(String, String)>;
}

impl HasHeaders for HttpReply {
    fn headers_mut(&mut self) -> &mut Vec<(String, String)> {
        &mut self.headers
    }
}

impl HasHeaders for crate::chat::StreamReply {
    fn headers_mut(&mut self) -> &mut Vec<(String, String)> {
        &mut self.headers
    }
}

/// n8n's `checkResponseModeConfiguration` (Webhook 2+), and what this
/// deployment cannot do.
fn check_response_mode(target: &Target, spec: &ResponseSpec) -> Result<()> {
    if spec.mode == ResponseMode::Streaming {
        return Err(TriggerError::NotSupported(format!(
            "this webhook streams its answer, which the HTTP API cannot carry: call its streaming URL, /stream/webhook/{} on the events function's URL",
            target.registration.endpoint.path
        )));
    }
    if target.node.type_version < 2.0 {
        return Ok(());
    }
    let graph = engine::Graph::from_json(&target.workflow).map_err(|e| TriggerError::Misconfigured(e.to_string()))?;
    let has_respond = graph
        .nodes()
        .iter()
        .filter(|n| !n.disabled && n.node_type == webhook::RESPOND_TYPE)
        .any(|n| graph.ancestors(&n.name).iter().any(|a| *a == target.node.name));
    match (spec.mode == ResponseMode::ResponseNode, has_respond) {
        (true, false) => Err(TriggerError::Misconfigured(
            "No Respond to Webhook node found in the workflow: insert one, or choose another option for the \"Respond\" parameter".into(),
        )),
        (false, true) => Err(TriggerError::Misconfigured(
            "Unused Respond to Webhook node found in the workflow: set the \"Respond\" parameter to \"Using Respond to Webhook Node\" or remove the Respond to Webhook node".into(),
        )),
        _ => Ok(()),
    }
}

