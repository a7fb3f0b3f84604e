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

/// A form page (the form, or the form again with an error) whose
/// submissions may end on another origin: the completion's redirect, or
/// whatever a Respond to Webhook node answers.
pub(crate) fn form_reply(status: u16, def: &FormDefinition, node: &engine::Node, page: String) -> HttpReply {
    let mut sources = Vec::new();
    if let Completion::Redirect { url } = &def.completion {
        sources.extend(origin(url));
    }
    if ResponseSpec::of(node).mode == ResponseMode::ResponseNode {
        // A Respond to Webhook node may redirect anywhere; the page has no script to abuse it.
        sources.push("https:".to_owned());
    }
    HttpReply::html(status, page).allow_form_action(&sources)
}

/// `scheme://host[:port]` of an absolute http(s) URL, as a CSP source.
fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next()?.rsplit('@').next()?;
    let valid = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'));
    valid.then(|| format!("{scheme}://{}", host.to_ascii_lowercase()))
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
        let mut incoming = request::incoming(req, target.params.clone()).await?;
        self.admit(&target.project_id, &target.node, &mut incoming).await?;
        if req.method == "GET" {
            return Ok(form_reply(200, &def, &target.node, html::form_page(&def, None, None)));
        }
        let (fields, files) = submission(&incoming)?;
        let mode = if scope == Scope::Test { "test" } else { "production" };
        let item = match def.submission_item(&fields, &files, &incoming.query, mode, &timezone(&target.workflow)) {
            Ok(item) => item,
            Err(e) => return Ok(form_reply(400, &def, &target.node, html::form_page(&def, Some(&e.0), Some(&fields)))),
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

#[cfg(test)]
mod tests {
    use super::origin;

    #[test]
    fn a_redirect_url_becomes_its_origin_and_nothing_else_passes() {
        assert_eq!(origin("https://Shop.example:8443/thanks?x=1#y").as_deref(), Some("https://shop.example:8443"));
        assert_eq!(origin(" http://user:pw@localhost:9000").as_deref(), Some("http://localhost:9000"));
        // nothing that could end or extend the CSP directive
        assert_eq!(origin("https://a.example; script-src *"), None);
        assert_eq!(origin("javascript://alert(1)"), None);
        assert_eq!(origin("/relative/thanks"), None);
        assert_eq!(origin("https:///nohost"), None);
    }
}
