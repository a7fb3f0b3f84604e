//! The Chat Trigger's chat URL, `<webhookId>/chat` in the webhook spaces,
//! on two edges:
//!
//! - the HTTP API (`/webhook[-test]/<id>/chat`, the webhook function):
//!   the hosted page (GET), `loadPreviousSession`, and messages answered
//!   when the last node finishes or by a Respond to Webhook node. A
//!   streaming trigger's answer is buffered there (API Gateway's HTTP API
//!   cannot stream a Lambda response): the JSON lines once the run ends.
//! - the streaming URL (`/stream/webhook[-test]/<id>/chat` on the events
//!   function's Function URL, `RESPONSE_STREAM`): the same requests, and a
//!   streaming trigger's answer line by line as the run writes it. The
//!   hosted page of a streaming trigger posts there. A Webhook node in the
//!   `streaming` response mode answers there too.
//!
//! Who may call is the node's to say, checked before anything runs: a chat
//! that is not public answers 404 on the production URL (n8n: only the
//! editor's test chat may use it); `basicAuth` checks the node's
//! `httpBasicAuth` credential; `n8nUserAuth` (n8n: a signed-in user) takes
//! an API key of a member of the workflow's project.

use crate::answer::token;
use crate::error::{Result, TriggerError};
use crate::request::{self, HttpReply, HttpRequest};
use crate::webhook::Target;
use crate::Triggers;
use bytes::Bytes;
use engine::chat::{ChatAuth, ChatMode, ChatResponseMode, ChatSpec, LoadPreviousSession, CHAT_TRIGGER_TYPE};
use engine::webhook::{self, IncomingRequest, Refusal, ResponseMode, ResponseSpec, WebhookAuth};
use executions::{ExecutionId, ExecutionMode, Respond, StartRequest, WorkflowRef};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use store::data::webhooks::{EndpointKind, Scope};
use tokio::sync::mpsc;

/// Which edge a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    HttpApi,
    Streaming,
}

/// An answer that may stream: a whole body, or lines as they come.
pub struct StreamReply {
    pub status: u16,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: StreamBody,
}

pub enum StreamBody {
    Full(Vec<u8>),
    /// Ends when the execution's answer is complete (or the client left).
    Lines(mpsc::Receiver<Bytes>),
}

impl From<HttpReply> for StreamReply {
    fn from(r: HttpReply) -> Self {
        StreamReply { status: r.status, headers: r.headers, body: StreamBody::Full(r.body) }
    }
}

/// How long a streaming answer may run on the streaming URL (the events
/// function's limit is 900 s; its Function URL cuts the response there).
pub const MAX_STREAM: Duration = Duration::from_secs(840);

const STREAM_CONTENT_TYPE: &str = "application/json; charset=utf-8";
/// The largest request body sent to the executor to resolve a session key
/// (well below a queue message's 256 KB, with the memory node beside it).
const MAX_SESSION_BODY: usize = 64 * 1024;

pub(crate) fn is_chat(target: &Target) -> bool {
    target.node.node_type == CHAT_TRIGGER_TYPE
}

impl Triggers {
    /// The URL the page posts to: the streaming URL when the chat streams.
    fn chat_post_url(&self, req: &HttpRequest, scope: Scope, path: &str, streaming: bool) -> String {
        let space = if scope == Scope::Test { "webhook-test" } else { "webhook" };
        if streaming {
            let base = self.settings.stream_url.clone().unwrap_or_else(|| self.base_url(req));
            format!("{}/stream/{space}/{path}", base.trim_end_matches('/'))
        } else {
            format!("{}/{space}/{path}", self.base_url(req))
        }
    }

    /// The node's authentication (after the public check).
    async fn chat_admit(&self, target: &Target, spec: &ChatSpec, incoming: &IncomingRequest) -> Result<()> {
        match spec.auth {
            ChatAuth::None => Ok(()),
            ChatAuth::Basic => {
                let credential = self.credential(&target.project_id, &target.node, "httpBasicAuth").await;
                webhook::authenticate(WebhookAuth::Basic, credential.as_ref(), &incoming.headers).map(|_| ()).map_err(TriggerError::Refused)
            }
            ChatAuth::InstanceUser => {
                let refused = |status: u16, message: &str| TriggerError::Refused(Refusal { status, message: message.into(), challenge: false });
                let key = incoming
                    .headers
                    .get("authorization")
                    .and_then(Value::as_str)
                    .and_then(|h| h.trim().split_once(' '))
                    .filter(|(scheme, k)| scheme.eq_ignore_ascii_case("bearer") && !k.trim().is_empty() && k.len() <= 512)
                    .map(|(_, k)| k.trim().to_owned())
                    .ok_or_else(|| refused(401, "This chat requires an API key of this instance: send `Authorization: Bearer <key>`"))?;
                let keys = self.api_keys.as_ref().ok_or_else(|| TriggerError::Misconfigured("this function cannot check API keys".into()))?;
                let user = keys.lookup(&key).await?.ok_or_else(|| refused(401, "invalid API key"))?;
                match self.executor.data().projects.role(&user, &target.project_id).await? {
                    Some(_) => Ok(()),
                    None => Err(refused(403, "This chat is for members of the workflow's project")),
                }
            }
        }
    }

    /// A request to a Chat Trigger's URL, on either edge (its CORS headers
    /// and preflights are every webhook path's: `Triggers::cors`, `preflight`).
    pub(crate) async fn chat(&self, req: &HttpRequest, target: &Target, scope: Scope, edge: Edge) -> Result<StreamReply> {
        let spec = ChatSpec::of(&target.node).map_err(TriggerError::Misconfigured)?;
        self.chat_reply(req, target, &spec, scope, edge).await
    }

    async fn chat_reply(&self, req: &HttpRequest, target: &Target, spec: &ChatSpec, scope: Scope, edge: Edge) -> Result<StreamReply> {
        // n8n answers a private chat's production URL with a bare 404
        if !spec.public && scope == Scope::Production {
            return Err(TriggerError::NotFound(format!("The requested webhook \"{} {}\" is not registered.", req.method, target.registration.endpoint.path)));
        }
        let incoming = request::incoming(req, target.params.clone()).await?;
        webhook::check_access(&target.node, &incoming).map_err(TriggerError::Refused)?;
        let streaming = spec.response_mode == ChatResponseMode::Streaming;
        if req.method == "GET" {
            // the page is not secret: its messages are, behind the same checks
            if spec.mode != ChatMode::Hosted {
                return Err(TriggerError::NotFound("This chat is embedded elsewhere: its URL takes POST requests only (no hosted page)".into()));
            }
            let url = self.chat_post_url(req, scope, &target.registration.endpoint.path, streaming);
            let load = match spec.load_previous {
                LoadPreviousSession::Off => "notSupported",
                LoadPreviousSession::Memory => "memory",
                LoadPreviousSession::Manually => "manually",
            };
            let auth = match spec.auth {
                ChatAuth::None => "none",
                ChatAuth::Basic => "basicAuth",
                ChatAuth::InstanceUser => "n8nUserAuth",
            };
            return Ok(crate::chat_page::page(spec, &url, streaming, load, auth).into());
        }
        self.chat_admit(target, spec, &incoming).await?;
        let body = engine::chat::body_json(&incoming);
        if body.get("action").and_then(Value::as_str) == Some("loadPreviousSession") {
            match spec.load_previous {
                LoadPreviousSession::Memory => return Ok(HttpReply::json(200, &json!({"data": self.previous_session(target, &body).await?})).into()),
                LoadPreviousSession::Off => return Ok(HttpReply::json(200, &json!({"data": []})).into()),
                // the workflow answers it
                LoadPreviousSession::Manually => {}
            }
        }
        if spec.response_mode == ChatResponseMode::ResponseNodes {
            return Err(TriggerError::NotSupported(
                "the Chat Trigger's \"Using Response Nodes\" mode (Respond to Chat nodes) is not supported on this instance; choose \"When Last Node Finishes\" or \"Streaming\"".into(),
            ));
        }
        let item = engine::chat::message_item(&incoming);
        self.start_chat(target, scope, item, streaming, edge).await
    }

    /// Starts the run and answers as the trigger says.
    async fn start_chat(&self, target: &Target, scope: Scope, item: engine::Item, streaming: bool, edge: Edge) -> Result<StreamReply> {
        let spec = ResponseSpec::of(&target.node);
        if !streaming {
            let mode = if scope == Scope::Test { ExecutionMode::Manual } else { ExecutionMode::Webhook };
            return Ok(self.start_and_answer(target, mode, vec![item], 0, &spec).await?.into());
        }
        let id = self.start_streaming(target, scope, vec![item], 0).await?;
        Ok(self.stream_answer(id, edge).await)
    }

    /// Starts a run whose chunks go to the store for a streaming caller.
    pub(crate) async fn start_streaming(&self, target: &Target, scope: Scope, items: Vec<engine::Item>, output: usize) -> Result<ExecutionId> {
        let mode = if scope == Scope::Test { ExecutionMode::Manual } else { ExecutionMode::Webhook };
        let mut start = StartRequest::new(WorkflowRef::Inline { workflow: (*target.workflow).clone(), project_id: target.project_id.clone() }, mode);
        start.trigger = Some(target.node.name.clone());
        start.trigger_items = Some(items);
        start.trigger_output = output;
        start.respond = Some(Respond { node: target.node.name.clone(), token: token(), stream: true });
        let id = self.executor.start_execution(start).await?;
        tracing::info!(executionId = %id, workflowId = %target.registration.workflow_id, node = %target.node.name, "a streaming request started an execution");
        Ok(id)
    }

    /// The streamed answer of execution `id`: on the streaming URL line by
    /// line, on the HTTP API all lines once the run ends (within the wait).
    pub(crate) async fn stream_answer(&self, id: ExecutionId, edge: Edge) -> StreamReply {
        let headers = vec![("content-type".to_owned(), STREAM_CONTENT_TYPE.to_owned()), ("cache-control".to_owned(), "no-cache".to_owned())];
        let (tx, mut rx) = mpsc::channel::<Bytes>(64);
        let me = self.clone();
        let limit = match edge {
            Edge::Streaming => MAX_STREAM,
            Edge::HttpApi => self.settings.response_wait,
        };
        let pump = tokio::spawn(async move { me.pump(&id, tx, limit).await });
        if edge == Edge::Streaming {
            return StreamReply { status: 200, headers, body: StreamBody::Lines(rx) };
        }
        let mut body = vec![];
        while let Some(b) = rx.recv().await {
            body.extend_from_slice(&b);
        }
        let _ = pump.await;
        StreamReply { status: 200, headers, body: StreamBody::Full(body) }
    }

    /// Sends the execution's stored lines to `tx` in order until it ends,
    /// the client leaves or `limit` passes.
    async fn pump(&self, id: &ExecutionId, tx: mpsc::Sender<Bytes>, limit: Duration) {
        let executions = &self.executor.data().executions;
        let deadline = Instant::now() + limit;
        let mut after = 0u64;
        let mut pause = Duration::from_millis(20);
        loop {
            if tx.is_closed() {
                return;
            }
            match executions.poll_stream(id.as_str(), after).await {
                Ok(Some(p)) => {
                    let got = !p.batches.is_empty();
                    for (seq, lines) in p.batches {
                        after = seq;
                        if tx.send(Bytes::from(lines)).await.is_err() {
                            return;
                        }
                    }
                    // every line is stored before the final status (executions::stream)
                    if p.status.is_finished() || p.status == executions::ExecutionStatus::Waiting {
                        return;
                    }
                    pause = if got { Duration::from_millis(20) } else { (pause * 3 / 2).min(Duration::from_millis(150)) };
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(executionId = %id, error = %e, "reading the streamed answer failed; retrying"),
            }
            let now = Instant::now();
            if now >= deadline {
                let note = json!({"type": "error", "content": format!("The answer is still being written; it goes on in execution {id}"), "metadata": {"nodeId": "", "nodeName": "", "itemIndex": 0, "runIndex": 0}});
                let _ = tx.send(Bytes::from(format!("{note}\n"))).await;
                return;
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
        }
    }

    /// `loadPreviousSession` from memory: the session's messages as the
    /// memory sub-node connected to the trigger keeps them, in LangChain's
    /// serialized form (what the chat widget reads).
    async fn previous_session(&self, target: &Target, body: &Value) -> Result<Vec<Value>> {
        let graph = engine::Graph::from_json(&target.workflow).map_err(|e| TriggerError::Misconfigured(e.to_string()))?;
        let memory = graph.sub_nodes(&target.node.name, "ai_memory").into_iter().next().ok_or_else(|| {
            TriggerError::Misconfigured("Load Previous Session is \"From Memory\", but no memory sub-node is connected to the Chat Trigger".into())
        })?;
        let engine = engine::Engine::new(engine::EngineSettings::default(), engine::Host::default());
        let session = match engine::nodes::ai::memory::request_session_natively(&engine, &graph, memory, body).map_err(|e| TriggerError::BadRequest(e.to_string()))? {
            Some(Some(key)) => Some(key),
            // a `sessionKey` that takes JavaScript: the executor resolves it
            Some(None) => self.session_in_executor(target, &memory.name, body).await?,
            None => None,
        };
        let session = session.ok_or_else(|| TriggerError::NotSupported(format!("loading a session from {} is not supported", memory.node_type)))?;
        let stored = self.executor.data().chat_memory.load(&target.registration.workflow_id, &session).await?;
        Ok(engine::nodes::ai::memory::lc_messages(&stored))
    }

    /// The session key of the memory node `memory` for `body`, resolved by
    /// the executor (this function links no JavaScript sandbox). The job
    /// carries the workflow with that node alone, and a body of at most
    /// [`MAX_SESSION_BODY`] bytes: a queue message holds 256 KB.
    async fn session_in_executor(&self, target: &Target, memory: &str, body: &Value) -> Result<Option<String>> {
        if body.to_string().len() > MAX_SESSION_BODY {
            return Err(TriggerError::PayloadTooLarge(format!(
                "the memory's session key is an expression over the request; send at most {MAX_SESSION_BODY} bytes of JSON to load a session"
            )));
        }
        let mut workflow = Value::clone(&target.workflow);
        if let Some(w) = workflow.as_object_mut() {
            let node = w.get("nodes").and_then(Value::as_array).and_then(|ns| ns.iter().find(|n| n["name"] == memory)).cloned();
            w.retain(|k, _| matches!(k.as_str(), "id" | "name" | "settings"));
            w.insert("nodes".into(), Value::Array(node.into_iter().collect()));
            w.insert("connections".into(), json!({}));
        }
        self.executor.chat_session(workflow, memory, body.clone(), executions::Dispatch::Queue).await?.map_err(TriggerError::BadRequest)
    }

    /// A request on the streaming URL (`/stream/webhook[-test]/…`).
    pub async fn handle_stream(&self, req: HttpRequest) -> Result<StreamReply> {
        if req.body.len() > self.settings.max_body_bytes {
            return Err(TriggerError::PayloadTooLarge(format!("the request body is {} bytes; at most {} are accepted", req.body.len(), self.settings.max_body_bytes)));
        }
        let rest = req.path.strip_prefix("/stream").filter(|r| r.starts_with('/')).ok_or_else(|| TriggerError::NotFound(format!("no streaming URL at {}", req.path)))?;
        let (space, path) = request::split_space(rest)?;
        let scope = match space {
            request::Space::Webhook => Scope::Production,
            request::Space::WebhookTest => Scope::Test,
            _ => return Err(TriggerError::NotFound(format!("only webhook URLs stream (not {})", req.path))),
        };
        if req.method == "OPTIONS" {
            return Ok(self.preflight(&req, &path, scope).await?.into());
        }
        let target = self.find(EndpointKind::Webhook, &req.method, &path, scope).await?;
        let cors = Self::cors(&req, &target.node);
        let answer = self.stream_target(&req, &target, scope).await;
        crate::webhook::with_cors(answer, cors)
    }

    async fn stream_target(&self, req: &HttpRequest, target: &Target, scope: Scope) -> Result<StreamReply> {
        if is_chat(target) {
            return self.chat(req, target, scope, Edge::Streaming).await;
        }
        // a Webhook node answering `streaming`
        let spec = ResponseSpec::of(&target.node);
        if spec.mode != ResponseMode::Streaming {
            return Err(TriggerError::NotFound(format!(
                "\"{}\" does not stream its answer; call its webhook URL instead of the streaming one",
                target.node.name
            )));
        }
        let mut incoming = request::incoming(req, target.params.clone()).await?;
        let jwt = self.admit(&target.project_id, &target.node, &mut incoming).await?;
        let space = if scope == Scope::Test { "webhook-test" } else { "webhook" };
        let ctx = webhook::TriggerContext {
            webhook_url: Some(format!("{}/{space}/{}", self.base_url(req), target.registration.endpoint.path)),
            execution_mode: Some(if scope == Scope::Test { "test" } else { "production" }.into()),
            jwt_payload: jwt,
        };
        let outputs = webhook::webhook_output(&target.node, &incoming, &ctx).map_err(|e| TriggerError::BadRequest(e.to_string()))?;
        let (output, items) = outputs.into_iter().enumerate().find(|(_, o)| !o.is_empty()).ok_or_else(|| TriggerError::BadRequest("the request produced no item".into()))?;
        let id = self.start_streaming(target, scope, items, output).await?;
        Ok(self.stream_answer(id, Edge::Streaming).await)
    }
}
