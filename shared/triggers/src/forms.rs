//! `/form/<path>` and `/form-test/<path>`: `GET` renders the Form
//! Trigger's page, `POST` submits it (multipart or urlencoded, as a plain
//! HTML form sends it) and runs the workflow with the submission as its
//! item. The answer follows the node's "Respond When": the completion
//! screen (or the redirect) at once, after the workflow finishes, or what a
//! Respond to Webhook node returns. A submission that misses a required
//! field gets the page again with the message; nothing runs.

use crate::answer::token;
use crate::error::{Result, TriggerError};
use crate::html;
use crate::request::{self, HttpReply, HttpRequest};
use crate::Triggers;
use engine::form::{Completion, FormDefinition};
use engine::webhook::{IncomingRequest, RequestBody, ResponseMode, ResponseSpec, UploadedFile};
use executions::{ExecutionMode, Respond, StartRequest, WorkflowRef};
use serde_json::{Map, Value};
use store::data::webhooks::{EndpointKind, Scope};

/// The submitted fields and files, whichever way the form was posted.
pub(crate) fn submission(incoming: &IncomingRequest) -> Result<(Map<String, Value>, Vec<UploadedFile>)> {
    match &incoming.body {
        RequestBody::Multipart { fields, files } => Ok((fields.clone(), files.clone())),
        RequestBody::Parsed(Value::Object(fields)) => Ok((fields.clone(), Vec::new())),
        RequestBody::Empty => Ok((Map::new(), Vec::new())),
        _ => Err(TriggerError::BadRequest(
            "a form is submitted as multipart/form-data or application/x-www-form-urlencoded".into(),
        )),
    }
}

pub(crate) fn timezone(workflow: &Value) -> String {
    workflow.pointer("/settings/timezone").and_then(Value::as_str).unwrap_or("UTC").to_owned()
}

/// After a submission the workflow did not answer itself.
pub(crate) fn completion(def: &FormDefinition) -> HttpReply {
    match &def.completion {
        Completion::Redirect { url } if !url.is_empty() => HttpReply::redirect(url),
        _ => HttpReply::html(200, html::completion_page(def)),
    }
}

pub(crate) fn problem() -> HttpReply {
    HttpReply::html(500, html::message_page("Problem submitting response", "There was a problem submitting your response. Please try again."))
}

impl Triggers {
    pub(crate) async fn form(&self, req: &HttpRequest, path: &str, scope: Scope) -> Result<HttpReply> {
        if req.method != "GET" && req.method != "POST" {
            return Err(TriggerError::MethodNotAllowed(format!("a form answers GET and POST, not {}", req.method)));
        }
        let target = self.find(EndpointKind::Form, &req.method, path, scope).await?;
        let def = FormDefinition::of(&target.node).map_err(TriggerError::Misconfigured)?;
        let incoming = request::incoming(req, target.params.clone()).await?;
        self.admit(&target.project_id, &target.node, &incoming).await?;
        if req.method == "GET" {
            return Ok(HttpReply::html(200, html::form_page(&def, None, None)));
        }
        let (fields, files) = submission(&incoming)?;
        let mode = if scope == Scope::Test { "test" } else { "production" };
        let item = match def.submission_item(&fields, &files, &incoming.query, mode, &timezone(&target.workflow)) {
            Ok(item) => item,
            Err(e) => return Ok(HttpReply::html(400, html::form_page(&def, Some(&e.0), Some(&fields)))),
        };
        let spec = ResponseSpec::of(&target.node);
        let waits = matches!(spec.mode, ResponseMode::LastNode | ResponseMode::ResponseNode);
        let caller = token();
        let mut start = StartRequest::new(
            WorkflowRef::Inline { workflow: (*target.workflow).clone(), project_id: target.project_id.clone() },
            if scope == Scope::Test { ExecutionMode::Manual } else { ExecutionMode::Webhook },
        );
        start.trigger = Some(target.node.name.clone());
        start.trigger_items = Some(vec![item]);
        if waits {
            start.respond = Some(Respond { node: target.node.name.clone(), token: caller.clone(), stream: false });
        }
        let id = self.executor.start_execution(start).await?;
        tracing::info!(executionId = %id, workflowId = %target.registration.workflow_id, "form submission started an execution");
        match spec.mode {
            ResponseMode::ResponseNode => self.await_answer(&id, &caller).await,
            ResponseMode::LastNode => {
                let answer = self.await_answer(&id, &caller).await?;
                Ok(match answer.status {
                    202 => answer,
                    s if s < 400 => completion(&def),
                    _ => problem(),
                })
            }
            _ => Ok(completion(&def)),
        }
    }
}
