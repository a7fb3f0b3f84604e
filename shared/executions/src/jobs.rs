//! Engine work that answers its caller instead of recording an execution: a
//! credential's connection test (`probe`), a builder's resource lookup
//! (`lookup`), an OAuth2 connect's code exchange (`connect`), a chat
//! request's session key when it takes JavaScript, and the sandbox's work
//! for the builders (workflow code compiled, expressions checked, a past
//! run's parameters resolved again). With
//! [`Dispatch::Inline`] it runs in this process; with
//! [`Dispatch::Queue`] it goes over the Runs queue to the executor function,
//! which writes the answer beside the executions (`job#<id>`, expiring after
//! an hour) for the sender to poll, as `execute_and_wait` polls a record.
//!
//! Sent, the domain layer's other front doors (the credentials REST routes,
//! the MCP server, the agent's step) link none of the engine's node code:
//! only an executor made `running_here` (the executor function's queue
//! consumer, tests) reaches it. That is what keeps them small
//! (ARCHITECTURE.md: which function links what).

use crate::error::{ExecutionError, Result};
use crate::{Dispatch, Executor};
use engine::credentials::TestOutcome;
use protocol::UserId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{Duration, Instant};
use store::data::credentials::Credential;
use store::data::db::{self, get_b, Item};
use store::StoreError;

/// How long an answer is kept for its sender.
const ANSWER_TTL_SECS: u64 = 3_600;
/// SQS's message limit: a job is one message on the Runs queue.
const MAX_JOB_BYTES: usize = 256 * 1024;
/// DynamoDB's item limit is 400 KB; the answer (compressed) must fit below it.
const MAX_ANSWER_BYTES: usize = 350_000;

/// One request of a lookup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LookupCall {
    pub url: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
}

/// What the provider's callback gave an OAuth2 connect: its `code`, the
/// connect's PKCE `verifier` and the `redirect_uri` the code was issued for.
///
/// The code and the verifier travel in the job's body on the Runs queue
/// (encrypted at rest; deleted once answered, or dead-lettered after three
/// failed answers). They are short-lived: the provider redeems the code once,
/// within minutes of the callback, and the verifier is worth nothing
/// without it. Never logged: `Debug` leaves both out.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CodeGrant {
    pub code: String,
    pub verifier: String,
    pub redirect_uri: String,
}

impl fmt::Debug for CodeGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CodeGrant").field("code", &"<redacted>").field("verifier", &"<redacted>").field("redirect_uri", &self.redirect_uri).finish()
    }
}

/// A Runs queue body: one job and the id its answer is written under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobMessage {
    pub job_id: String,
    pub job: Job,
}

/// The work. The sender checked the caller's access to the credential; the
/// executor decrypts its secret, as it does for a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Job {
    TestCredential { credential: Credential },
    Lookup { credential: Credential, call: LookupCall },
    /// The exchange of a connect's code; the tokens are stored for `user`.
    OAuthConnect { credential: Credential, user: UserId, grant: CodeGrant },
    /// The session a chat request continues, when the memory node's
    /// `sessionKey` needs the JavaScript sandbox (the webhook functions link
    /// none). `workflow` holds the memory node `memory`; `body` is the request's.
    ChatSession { workflow: Value, memory: String, body: Value },
    /// Workflow code's script run in the sandbox, and the expressions of the
    /// workflow it gives syntax-checked there, in one round trip (the MCP
    /// server and the agent's steps link no sandbox). See [`compile_workflow_here`].
    CompileWorkflow { script: String },
    /// Each expression compiled in the sandbox: why it does not parse.
    CheckExpressions { expressions: Vec<String> },
    /// A node's parameters resolved again against an execution's data
    /// (the executor reads the execution; the caller checked access).
    ResolveParameters { execution_id: String, node: String, item_index: usize, run_index: Option<usize> },
}

/// What a job gives back (scrubbed of every secret it decrypted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Answer {
    Tested { success: bool, message: String, tested: bool },
    /// The service's items, or why the service or the guard refused.
    LookedUp { answer: std::result::Result<Vec<Value>, String> },
    /// The tokens are stored, or why the provider refused the code (no
    /// token or secret in it).
    Connected { answer: std::result::Result<(), String> },
    /// The session key, or why it could not be read from the request
    /// (`Ok(None)`: the node keeps no sessions).
    Session { answer: std::result::Result<Option<String>, String> },
    /// The workflow and its expressions' verdicts, or what the code's
    /// author should fix.
    Compiled { answer: std::result::Result<CompiledWorkflow, String> },
    /// Why each expression does not parse, in order (`None`: it parses).
    Checked { syntax_errors: Vec<Option<String>> },
    Resolved { answer: std::result::Result<engine::partial::ResolvedParameters, String> },
    /// The executor could not do the job (its store or engine failed).
    Failed { message: String },
}

impl Answer {
    fn from_result(r: Result<Answer>) -> Answer {
        r.unwrap_or_else(|e| Answer::Failed { message: e.to_string() })
    }
}

fn pk(job_id: &str) -> String {
    format!("job#{job_id}")
}

const SK: &str = "answer";

impl Executor {
    /// Tests `credential` (metadata; the caller checked access) where
    /// `dispatch` says. Never returns or logs its secret.
    pub async fn test_credential(&self, credential: &Credential, dispatch: Dispatch) -> Result<TestOutcome> {
        match self.job(Job::TestCredential { credential: credential.clone() }, dispatch).await? {
            Answer::Tested { success, message, tested } => Ok(TestOutcome { success, message, tested }),
            other => Err(unexpected(other)),
        }
    }

    /// Makes a lookup `call` with `credential` where `dispatch` says (the
    /// caller checked access): the service's JSON answer as the HTTP Request
    /// node gives it, or why it failed (`Ok(Err)`: the service or the guard
    /// refused; the message names no secret). See `lookup`.
    pub async fn lookup(&self, credential: &Credential, call: LookupCall, dispatch: Dispatch) -> Result<std::result::Result<Vec<Value>, String>> {
        match self.job(Job::Lookup { credential: credential.clone(), call }, dispatch).await? {
            Answer::LookedUp { answer } => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// Exchanges an OAuth2 connect's callback `code` (with the connect's
    /// PKCE `verifier`) where `dispatch` says, and stores the tokens for
    /// `credential` (the caller checked access), bound to `user`. The
    /// provider's refusal is `Invalid`, scrubbed of the secret. See `connect`.
    pub async fn oauth_connect(&self, credential: &Credential, user: &UserId, code: &str, verifier: &str, redirect_uri: &str, dispatch: Dispatch) -> Result<()> {
        let grant = CodeGrant { code: code.to_owned(), verifier: verifier.to_owned(), redirect_uri: redirect_uri.to_owned() };
        match self.job(Job::OAuthConnect { credential: credential.clone(), user: user.clone(), grant }, dispatch).await? {
            Answer::Connected { answer } => answer.map_err(ExecutionError::Invalid),
            other => Err(unexpected(other)),
        }
    }

    /// The session a chat request `body` continues, read from the memory
    /// node `memory` of `workflow` with the full engine where `dispatch`
    /// says (see `engine::nodes::ai::memory::request_session`). `Ok(Err)`:
    /// the request names no session; `Ok(Ok(None))`: the node keeps none.
    pub async fn chat_session(&self, workflow: Value, memory: &str, body: Value, dispatch: Dispatch) -> Result<std::result::Result<Option<String>, String>> {
        match self.job(Job::ChatSession { workflow, memory: memory.to_owned(), body }, dispatch).await? {
            Answer::Session { answer } => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// Runs workflow code's `script` and syntax-checks the expressions of
    /// the workflow it gives, in the sandbox where `dispatch` says (see
    /// [`compile_workflow_here`]).
    pub async fn compile_workflow(&self, script: String, dispatch: Dispatch) -> Result<std::result::Result<CompiledWorkflow, String>> {
        match self.job(Job::CompileWorkflow { script }, dispatch).await? {
            Answer::Compiled { answer } => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    /// Why each of `expressions` does not parse (`None`: it parses),
    /// compiled in the sandbox where `dispatch` says.
    pub async fn syntax_errors(&self, expressions: Vec<String>, dispatch: Dispatch) -> Result<Vec<Option<String>>> {
        if expressions.is_empty() {
            return Ok(vec![]);
        }
        match self.job(Job::CheckExpressions { expressions }, dispatch).await? {
            Answer::Checked { syntax_errors } => Ok(syntax_errors),
            other => Err(unexpected(other)),
        }
    }

    /// `node`'s parameters resolved again against execution `execution_id`'s
    /// data and workflow snapshot, where `dispatch` says (the caller checked
    /// access). `Ok(Err)`: they cannot be (the reason).
    pub async fn resolve_parameters(&self, execution_id: &str, node: &str, item_index: usize, run_index: Option<usize>, dispatch: Dispatch) -> Result<std::result::Result<engine::partial::ResolvedParameters, String>> {
        let job = Job::ResolveParameters { execution_id: execution_id.to_owned(), node: node.to_owned(), item_index, run_index };
        match self.job(job, dispatch).await? {
            Answer::Resolved { answer } => Ok(answer),
            other => Err(unexpected(other)),
        }
    }

    async fn job(&self, job: Job, dispatch: Dispatch) -> Result<Answer> {
        let answer = match dispatch {
            Dispatch::Inline => self.here()?.job(self, job).await?,
            Dispatch::Queue => self.send_job(job).await?,
        };
        match answer {
            Answer::Failed { message } => Err(ExecutionError::Engine(message)),
            answer => Ok(answer),
        }
    }

    /// Sends `job` to the executor function and polls for its answer.
    async fn send_job(&self, job: Job) -> Result<Answer> {
        let job_id = db::new_id();
        let body = serde_json::to_string(&JobMessage { job_id: job_id.clone(), job })
            .map_err(|e| ExecutionError::Invalid(format!("a job that cannot be sent: {e}")))?;
        if body.len() > MAX_JOB_BYTES {
            return Err(ExecutionError::Invalid(format!("the request is too large to send to the executor ({} bytes; a queue message holds {MAX_JOB_BYTES})", body.len())));
        }
        self.inner.sweeper.enqueue_body(&body, Duration::ZERO).await?;
        let table = self.inner.data.executions.table();
        let wait = self.inner.settings.job_wait;
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(50);
        loop {
            if let Some(item) = table.get_raw(&pk(&job_id), SK).await? {
                return read_answer(&item);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ExecutionError::Unanswered(format!("the executor did not answer within {} s; try again", wait.as_secs())));
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// The executor function's side: does the job and writes its answer.
    /// `Err` only when the answer could not be written (redeliver).
    ///
    /// Delivery is at least once, and the first answer wins: a job already
    /// answered is not done again, and an answer never replaces another (an
    /// OAuth code is redeemed once: a second exchange's refusal must not
    /// hide the first one's success).
    pub(crate) async fn answer_job(&self, message: JobMessage) -> Result<()> {
        let table = self.inner.data.executions.table();
        if table.get_raw(&pk(&message.job_id), SK).await?.is_some() {
            tracing::info!(jobId = %message.job_id, "job already answered");
            return Ok(());
        }
        let answer = Answer::from_result(self.do_job(message.job).await);
        let mut item = db::key(pk(&message.job_id), SK);
        item.insert("answer".into(), db::b(encode_answer(&answer)?));
        item.insert("expiresAt".into(), db::n(db::now_secs() + ANSWER_TTL_SECS));
        match table.put_new(item).await {
            Ok(()) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) async fn do_job(&self, job: Job) -> Result<Answer> {
        Ok(match job {
            Job::TestCredential { credential } => {
                let o = self.test_credential_here(&credential).await?;
                Answer::Tested { success: o.success, message: o.message, tested: o.tested }
            }
            Job::Lookup { credential, call } => Answer::LookedUp { answer: self.lookup_here(&credential, call).await? },
            Job::OAuthConnect { credential, user, grant } => Answer::Connected { answer: self.oauth_connect_here(&credential, &user, grant).await? },
            Job::ChatSession { workflow, memory, body } => {
                let answer = tokio::task::spawn_blocking(move || chat_session_here(&workflow, &memory, &body))
                    .await
                    .map_err(|e| ExecutionError::Engine(format!("resolving the session key stopped: {e}")))?;
                Answer::Session { answer }
            }
            Job::CompileWorkflow { script } => {
                let answer = tokio::task::spawn_blocking(move || compile_workflow_here(&script))
                    .await
                    .map_err(|e| ExecutionError::Engine(format!("the script stopped: {e}")))?;
                Answer::Compiled { answer }
            }
            Job::CheckExpressions { expressions } => {
                let syntax_errors = tokio::task::spawn_blocking(move || {
                    let mut ev = expression::Evaluator::new(expression::Limits::default()).map_err(|e| ExecutionError::Engine(e.to_string()))?;
                    Ok::<_, ExecutionError>(expressions.iter().map(|e| ev.syntax_error(e)).collect())
                })
                .await
                .map_err(|e| ExecutionError::Engine(format!("the check stopped: {e}")))??;
                Answer::Checked { syntax_errors }
            }
            Job::ResolveParameters { execution_id, node, item_index, run_index } => {
                let doc = self.inner.data.executions.get_data(&execution_id, &store::data::executions::DataSelection::default()).await?.unwrap_or(Value::Null);
                let answer = tokio::task::spawn_blocking(move || resolve_parameters_here(&doc, &execution_id, &node, item_index, run_index))
                    .await
                    .map_err(|e| ExecutionError::Engine(format!("resolving the parameters stopped: {e}")))?;
                Answer::Resolved { answer }
            }
        })
    }
}

fn resolve_parameters_here(doc: &Value, execution_id: &str, node: &str, item_index: usize, run_index: Option<usize>) -> std::result::Result<engine::partial::ResolvedParameters, String> {
    let graph = doc
        .get("workflowData")
        .and_then(|w| engine::Graph::from_json(w).ok())
        .ok_or_else(|| format!("execution {execution_id} has no workflow snapshot to resolve against"))?;
    let mut state = engine::ExecutionState::new(execution_id.to_owned());
    state.run_data = doc.pointer("/resultData/runData").and_then(|v| serde_json::from_value(v.clone()).ok()).unwrap_or_default();
    let engine = engine::Engine::new(engine::EngineSettings::default(), engine::Host::default());
    engine.resolve_parameters(&graph, &state, node, item_index, run_index).map_err(|e| format!("cannot resolve the parameters of {node:?}: {e}"))
}

/// What workflow code gave: the workflow, and why each of its expressions
/// that does not parse does not, by the expression's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompiledWorkflow {
    pub workflow: Value,
    pub syntax_errors: BTreeMap<String, String>,
}

/// Runs workflow code's `script` in this process's sandbox, as a Code node
/// with no input: the script returns `[{json: {workflow: <its JSON text>}}]`
/// (`instance::sdk::prepare` writes such scripts). Then every expression in
/// the workflow's node parameters is compiled in the same sandbox. `Err`:
/// what the code's author should fix.
pub fn compile_workflow_here(script: &str) -> std::result::Result<CompiledWorkflow, String> {
    use expression::{CodeMode, Evaluator, ExpressionError, Limits, StaticData};
    let mut ev = Evaluator::new(Limits::default()).map_err(|e| format!("sandbox unavailable: {e}"))?;
    let items = ev.run_code(script, CodeMode::AllItems, &StaticData::new(Vec::new())).map_err(|e| match e {
        ExpressionError::Syntax { message, .. } => format!("syntax error: {message}"),
        ExpressionError::Runtime { message, .. } => format!("error while running the code: {message}"),
        ExpressionError::Timeout { limit_ms, .. } => format!("the code ran longer than {limit_ms} ms (an endless loop?)"),
        ExpressionError::OutOfMemory { limit_bytes, .. } => format!("the code used more than {limit_bytes} bytes of memory"),
        ExpressionError::Sandbox(m) => format!("sandbox failure: {m}"),
    })?;
    let text = items.value.pointer("/0/json/workflow").and_then(Value::as_str).ok_or_else(|| "the code did not produce a workflow".to_owned())?;
    let workflow: Value = serde_json::from_str(text).map_err(|e| format!("the workflow is not JSON: {e}"))?;
    let mut expressions = BTreeSet::new();
    for node in workflow.get("nodes").and_then(Value::as_array).into_iter().flatten() {
        expression::each_expression(node.get("parameters").unwrap_or(&Value::Null), "", &mut |_, text| {
            expressions.insert(text.to_owned());
        });
    }
    let syntax_errors = expressions.into_iter().filter_map(|e| ev.syntax_error(&e).map(|message| (e, message))).collect();
    Ok(CompiledWorkflow { workflow, syntax_errors })
}

fn chat_session_here(workflow: &Value, memory: &str, body: &Value) -> std::result::Result<Option<String>, String> {
    let graph = engine::Graph::from_json(workflow).map_err(|e| e.to_string())?;
    let node = graph.node(memory).ok_or_else(|| format!("the workflow has no node {memory:?}"))?;
    let engine = engine::Engine::new(engine::EngineSettings::default(), engine::Host::default());
    engine::nodes::ai::memory::request_session(&engine, &graph, node, body).map_err(|e| e.to_string())
}

fn unexpected(answer: Answer) -> ExecutionError {
    ExecutionError::Engine(format!("the executor gave an answer of another job: {answer:?}"))
}

/// The answer, compressed; one too large for an item is replaced by a
/// failure that says so.
fn encode_answer(answer: &Answer) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(answer).map_err(|e| ExecutionError::Engine(format!("an answer that cannot be stored: {e}")))?;
    let packed = db::compress(&json)?;
    if packed.len() <= MAX_ANSWER_BYTES {
        return Ok(packed);
    }
    let too_large = Answer::Failed {
        message: format!("the answer is too large to return ({} bytes of JSON); narrow the request", json.len()),
    };
    let json = serde_json::to_vec(&too_large).map_err(|e| ExecutionError::Engine(e.to_string()))?;
    Ok(db::compress(&json)?)
}

fn read_answer(item: &Item) -> Result<Answer> {
    let packed = get_b(item, "answer").ok_or_else(|| ExecutionError::Engine("the executor's answer is missing".into()))?;
    let json = db::decompress(&packed)?;
    serde_json::from_slice(&json).map_err(|e| ExecutionError::Engine(format!("the executor's answer cannot be read: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_round_trip_and_one_too_large_says_so() {
        let looked = Answer::LookedUp { answer: Ok(vec![json!({"id": "C1", "name": "general"})]) };
        let item = std::collections::HashMap::from([("answer".to_owned(), db::b(encode_answer(&looked).unwrap()))]);
        assert_eq!(read_answer(&item).unwrap(), looked);
        // incompressible text well past the item limit
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: String = (0..1_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect();
        let big = Answer::LookedUp { answer: Ok(vec![json!({ "text": noise })]) };
        let item = std::collections::HashMap::from([("answer".to_owned(), db::b(encode_answer(&big).unwrap()))]);
        match read_answer(&item).unwrap() {
            Answer::Failed { message } => assert!(message.contains("too large"), "{message}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn job_messages_are_told_apart_from_run_messages() {
        let m = JobMessage {
            job_id: "j1".into(),
            job: Job::Lookup { credential: serde_json::from_value(json!({"id": "c", "name": "n", "type": "slackApi", "description": null, "homeProjectId": "p", "sharedWithProjectIds": [], "isManaged": false, "isGlobal": false, "createdAt": "t", "updatedAt": "t"})).unwrap(), call: LookupCall { url: "https://slack.com/api/conversations.list".into(), ..LookupCall::default() } },
        };
        let body = serde_json::to_string(&m).unwrap();
        assert!(matches!(crate::ticks::parse(&body), Some(crate::ticks::Message::Job(j)) if j == m));
        assert!(matches!(crate::ticks::parse(r#"{"executionId":"e1"}"#), Some(crate::ticks::Message::Run(_))));
    }

    #[test]
    fn a_code_exchange_crosses_the_queue_but_never_shows_its_code_or_verifier() {
        let credential: Credential = serde_json::from_value(json!({"id": "c", "name": "n", "type": "oAuth2Api", "description": null, "homeProjectId": "p", "sharedWithProjectIds": [], "isManaged": false, "isGlobal": false, "createdAt": "t", "updatedAt": "t"})).unwrap();
        let grant = CodeGrant { code: "code-4f1c9e".into(), verifier: "verifier-77ab02".into(), redirect_uri: "https://i.example.com/instance-ai/oauth2/callback".into() };
        let m = JobMessage { job_id: "j2".into(), job: Job::OAuthConnect { credential, user: UserId::from("alice".to_owned()), grant } };
        let body = serde_json::to_string(&m).unwrap();
        assert!(body.contains("code-4f1c9e") && body.contains("verifier-77ab02"), "the executor needs them: {body}");
        assert!(matches!(crate::ticks::parse(&body), Some(crate::ticks::Message::Job(j)) if j == m));
        let shown = format!("{m:?}");
        assert!(!shown.contains("code-4f1c9e") && !shown.contains("verifier-77ab02"), "{shown}");
        assert!(shown.contains("OAuthConnect") && shown.contains("oauth2/callback"), "{shown}");
    }
}
