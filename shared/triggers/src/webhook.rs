//! `/webhook/<path>` (the published version) and `/webhook-test/<path>`
//! (the draft): find the workflow whose Webhook node has the path and
//! method, admit the request (access options, authentication), start an
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
        if crate::chat::is_chat(&target) {
            let reply = self.chat(req, &target, scope, crate::chat::Edge::HttpApi).await?;
            return Ok(match reply.body {
                crate::chat::StreamBody::Full(body) => HttpReply { status: reply.status, headers: reply.headers, body },
                // the HTTP API edge buffers (chat::stream_answer)
                crate::chat::StreamBody::Lines(_) => return Err(TriggerError::Misconfigured("a streamed answer on the HTTP API".into())),
            });
        }
        let incoming = request::incoming(req, target.params.clone()).await?;
        let jwt = self.admit(&target.project_id, &target.node, &incoming).await?;
        let spec = ResponseSpec::of(&target.node);
        check_response_mode(&target, &spec)?;
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
        let mut reply = self.start_and_answer(&target, mode, items, output, &spec).await?;
        // Webhooks answer browsers of any origin, as n8n's do by default.
        if req.header("origin").is_some() && reply.header("access-control-allow-origin").is_none() {
            reply.headers.push(("access-control-allow-origin".into(), "*".into()));
        }
        Ok(reply)
    }

    /// A CORS preflight: the methods some workflow answers at this path.
    async fn preflight(&self, req: &HttpRequest, path: &str, scope: Scope) -> Result<HttpReply> {
        let data = self.executor.data();
        let mut methods = Vec::new();
        for m in ["DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"] {
            let candidates = data.webhooks.candidates(EndpointKind::Webhook, m, path, scope).await?;
            if best_match(&candidates, path).is_some() {
                methods.push(m);
            }
        }
        if methods.is_empty() {
            return Err(TriggerError::NotFound(format!("The requested webhook \"OPTIONS {path}\" is not registered.")));
        }
        methods.push("OPTIONS");
        let mut headers = vec![
            ("access-control-allow-origin".to_owned(), "*".to_owned()),
            ("access-control-allow-methods".to_owned(), methods.join(", ")),
            ("access-control-max-age".to_owned(), "300".to_owned()),
        ];
        if let Some(h) = req.header("access-control-request-headers") {
            headers.push(("access-control-allow-headers".into(), h.to_owned()));
        }
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

