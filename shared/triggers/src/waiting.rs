//! Resume URLs of waiting executions: `/webhook-waiting/<id>[/<suffix>]`
//! continues a Wait node "on webhook call" (its method, suffix and
//! authentication apply), `/form-waiting/<id>` shows and takes the form of
//! a Wait node "on form submitted". One call resumes an execution; a second
//! finds it no longer waiting (409).

use crate::answer::token;
use crate::error::{Result, TriggerError};
use crate::forms::{completion, form_reply, problem, submission, timezone};
use crate::html;
use crate::request::{self, HttpReply, HttpRequest};
use crate::Triggers;
use engine::form::FormDefinition;
use engine::webhook::{self, ResponseMode, ResponseSpec, TriggerContext};
use executions::{Respond, ResumeRefused, WaitingOn};
use serde_json::{Map, Value};
use store::data::executions::ExecutionStatus;
use store::data::webhooks::normalize;

impl Triggers {
    /// The Wait node execution `id` waits in, resumed `how` (`webhook`/`form`).
    async fn waiting(&self, id: &str, how: &str) -> Result<WaitingOn> {
        let not_waiting = |why: String| TriggerError::NotFound(why);
        match self.executor.waiting_on(id).await? {
            Some(w) if w.node.node_type == webhook::WAIT_TYPE && w.node.parameters.get("resume").and_then(Value::as_str) == Some(how) => Ok(w),
            Some(_) => Err(not_waiting(format!("The execution \"{id}\" is not waiting for a {how} call"))),
            None => match self.executor.data().executions.get(id).await? {
                None => Err(not_waiting(format!("The execution \"{id}\" does not exist"))),
                Some(e) if e.status.is_finished() => Err(TriggerError::Conflict(format!("The execution \"{id}\" has finished already"))),
                Some(e) if e.status == ExecutionStatus::Running => Err(TriggerError::Conflict(format!("The execution \"{id}\" is running already"))),
                Some(_) => Err(not_waiting(format!("The execution \"{id}\" is not waiting"))),
            },
        }
    }

    async fn resume(&self, w: &WaitingOn, items: Vec<engine::Item>, respond: Option<Respond>) -> Result<()> {
        match self.executor.resume_waiting(&w.execution_id, &w.node.name, items, respond).await? {
            Ok(()) => Ok(()),
            Err(ResumeRefused::NotWaiting) => Err(TriggerError::Conflict(format!(
                "The execution \"{}\" was resumed already",
                w.execution_id
            ))),
        }
    }

    pub(crate) async fn resume_webhook(&self, req: &HttpRequest, rest: &str) -> Result<HttpReply> {
        let (id, suffix) = rest.split_once('/').unwrap_or((rest, ""));
        let w = self.waiting(id, "webhook").await?;
        let method = w.node.parameters.get("httpMethod").and_then(Value::as_str).unwrap_or("GET").to_ascii_uppercase();
        let want_suffix = normalize(w.node.parameters.pointer("/options/webhookSuffix").and_then(Value::as_str).unwrap_or_default());
        if method != req.method || want_suffix != normalize(suffix) {
            return Err(TriggerError::NotFound(format!(
                "The execution \"{id}\" is not waiting for \"{} {}\"",
                req.method,
                if suffix.is_empty() { "(no suffix)" } else { suffix }
            )));
        }
        let mut incoming = request::incoming(req, Map::new()).await?;
        let jwt = self.admit(&w.project_id, &w.node, &mut incoming).await?;
        let ctx = TriggerContext { jwt_payload: jwt, ..TriggerContext::default() };
        let items = webhook::webhook_output(&w.node, &incoming, &ctx)
            .map_err(|e| TriggerError::BadRequest(e.to_string()))?
            .into_iter()
            .next()
            .unwrap_or_default();
        let spec = ResponseSpec::of(&w.node);
        let waits = matches!(spec.mode, ResponseMode::LastNode | ResponseMode::ResponseNode);
        let caller = token();
        let respond = waits.then(|| Respond { node: w.node.name.clone(), token: caller.clone(), stream: false });
        self.resume(&w, items, respond).await?;
        let id = executions::ExecutionId(w.execution_id.clone());
        if waits {
            self.await_answer(&id, &caller).await
        } else {
            Ok(webhook::on_received_response(&spec).into())
        }
    }

    pub(crate) async fn resume_form(&self, req: &HttpRequest, rest: &str) -> Result<HttpReply> {
        let id = rest.split('/').next().unwrap_or_default();
        if req.method != "GET" && req.method != "POST" {
            return Err(TriggerError::MethodNotAllowed(format!("a form answers GET and POST, not {}", req.method)));
        }
        let w = self.waiting(id, "form").await?;
        let def = FormDefinition::of(&w.node).map_err(TriggerError::Misconfigured)?;
        let mut incoming = request::incoming(req, Map::new()).await?;
        self.admit(&w.project_id, &w.node, &mut incoming).await?;
        if req.method == "GET" {
            return Ok(form_reply(200, &def, &w.node, html::form_page(&def, None, None)));
        }
        let (fields, files) = submission(&incoming)?;
        let item = match def.submission_item(&fields, &files, &Map::new(), "production", &timezone(&w.workflow)) {
            Ok(item) => item,
            Err(e) => return Ok(form_reply(400, &def, &w.node, html::form_page(&def, Some(&e.0), Some(&fields)))),
        };
        let spec = ResponseSpec::of(&w.node);
        let waits = matches!(spec.mode, ResponseMode::LastNode | ResponseMode::ResponseNode);
        let caller = token();
        let respond = waits.then(|| Respond { node: w.node.name.clone(), token: caller.clone(), stream: false });
        self.resume(&w, vec![item], respond).await?;
        let id = executions::ExecutionId(w.execution_id.clone());
        match spec.mode {
            ResponseMode::ResponseNode => self.await_answer(&id, &caller).await,
            ResponseMode::LastNode => {
                let answer = self.await_answer(&id, &caller).await?;
                Ok(if answer.status == 202 { answer } else if answer.status < 400 { completion(&def) } else { problem() })
            }
            _ => Ok(completion(&def)),
        }
    }
}
