//! The HTTP answer an execution owes the webhook caller that waits for it
//! (the webhook function polls `exec#<id>/response`, see
//! `store::data::executions::Executions::poll_response`).
//!
//! - Respond to Webhook (`responseNode`): stored the moment the node runs,
//!   from the engine's hook on its thread (the run goes on afterwards).
//! - `lastNode`: built from the final state when the run ends (or parks).
//! - Otherwise, at the end, whatever n8n would answer then: 500 for a
//!   failed run, an empty answer when no Respond to Webhook node ran.
//!
//! Only the first answer counts (n8n sends one response per request).

use crate::document::Respond;
use crate::host::Secrets;
use engine::webhook::{self, HttpResponse, ResponseMode, ResponseSpec};
use engine::{ExecutionState, Graph, ProgressHook};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use store::data::Executions;
use tokio::runtime::Handle;

#[derive(Clone)]
pub(crate) struct Responder {
    executions: Executions,
    id: String,
    token: String,
    spec: ResponseSpec,
    sent: Arc<AtomicBool>,
    secrets: Secrets,
}

impl Responder {
    /// `None` when the node is not one that answers HTTP (nothing is owed).
    pub fn new(executions: &Executions, id: &str, respond: &Respond, graph: &Graph, secrets: &Secrets) -> Option<Self> {
        let node = graph.node(&respond.node).filter(|n| webhook::is_webhook_node(&n.node_type))?;
        let spec = ResponseSpec::of(node);
        (spec.mode != ResponseMode::OnReceived).then(|| Responder {
            executions: executions.clone(),
            id: id.to_owned(),
            token: respond.token.clone(),
            spec,
            sent: Arc::new(AtomicBool::new(false)),
            secrets: secrets.clone(),
        })
    }

    fn value(&self, resp: &HttpResponse) -> Option<serde_json::Value> {
        let mut v = serde_json::to_value(resp).ok()?;
        self.secrets.scrub(&mut v);
        Some(v)
    }

    async fn send(&self, resp: &HttpResponse) {
        if self.sent.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(v) = self.value(resp) else { return };
        if let Err(e) = self.executions.put_response(&self.id, &self.token, &v).await {
            tracing::error!(error = %e, "the webhook response could not be stored");
            // The caller still learns the run failed to answer.
            let fallback = serde_json::to_value(webhook::error_response()).unwrap_or_default();
            let _ = self.executions.put_response(&self.id, &self.token, &fallback).await;
        }
    }

    /// For `responseNode`: a hook that stores the Respond to Webhook answer
    /// as soon as the engine has it. It blocks the engine's thread for the
    /// one write (a few ms), so the answer is out before the next node runs.
    pub fn hook(&self, handle: &Handle) -> Option<ProgressHook> {
        if self.spec.mode != ResponseMode::ResponseNode {
            return None;
        }
        let me = self.clone();
        let handle = handle.clone();
        Some(ProgressHook::new(move |st: &ExecutionState| {
            if me.sent.load(Ordering::SeqCst) {
                return;
            }
            let Some(resp) = st.webhook_response.as_ref().and_then(|v| serde_json::from_value::<HttpResponse>(v.clone()).ok()) else {
                return;
            };
            handle.block_on(me.send(&resp));
        }))
    }

    /// The execution parked (`waiting`): `lastNode` answers with what ran so far.
    pub async fn at_park(&self, state: &ExecutionState) {
        if self.spec.mode == ResponseMode::LastNode {
            self.send(&webhook::last_node_response(&self.spec, state)).await;
        }
    }

    /// The execution ended: the answer n8n gives at that point, unless one
    /// was given. `state` is `None` when the engine produced none.
    pub async fn at_end(&self, state: Option<&ExecutionState>, failed: bool) {
        if self.sent.load(Ordering::SeqCst) {
            return;
        }
        let resp = match (state, failed) {
            (Some(st), _) if self.spec.mode == ResponseMode::ResponseNode => match &st.webhook_response {
                Some(v) => serde_json::from_value(v.clone()).unwrap_or_else(|_| webhook::error_response()),
                None if failed => webhook::error_response(),
                None => webhook::no_response_node_response(&self.spec),
            },
            (Some(st), _) => webhook::last_node_response(&self.spec, st),
            (None, _) => webhook::error_response(),
        };
        self.send(&resp).await;
    }
}

/// Both hooks, called in order.
pub(crate) fn both(a: Option<ProgressHook>, b: Option<ProgressHook>) -> Option<ProgressHook> {
    match (a, b) {
        (Some(a), Some(b)) => Some(ProgressHook::new(move |st| {
            b.notify(st);
            a.notify(st);
        })),
        (a, b) => a.or(b),
    }
}
