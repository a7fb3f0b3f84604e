//! The build → verify → patch loop's tools, front doors to
//! `instance::verification`: `verify-built-workflow` (a simulated run of
//! the built version; waits inline, then parks the chain like
//! `executions(run)`), `report-verification-verdict` (the loop's state
//! machine) and `apply-workflow-credentials`.
//!
//! A verification run never sends, writes or deletes (simulated nodes are
//! pinned to fixtures), so it asks nobody; `executions(run)` stays the
//! gated live test.

use super::executions::{untrusted, wait_inline, Executions, Inline};
use super::{ExecutionWait, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use instance::executions::{MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};
use instance::verification::verdict::Verdict;
use instance::verification::{VerdictReport, VerifyOutcome, VerifyRequest, VerifyStarted};
use instance::InstanceError;
use serde_json::{json, Value};

fn s<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn failed(e: InstanceError) -> ToolOutcome {
    ToolOutcome::Failed(e.message())
}

/// The model's view: item values and error text wrapped as untrusted.
fn shape(out: &VerifyOutcome) -> Value {
    let mut v = serde_json::to_value(out).unwrap_or(Value::Null);
    for key in ["data", "error", "resolvedParameterWarnings"] {
        if let Some(x) = v.get(key).cloned().filter(|x| !x.is_null()) {
            v[key] = untrusted(&x);
        }
    }
    v
}

// ------------------------------------------------------------ verify-built-workflow

pub struct VerifyBuiltWorkflow;

impl VerifyBuiltWorkflow {
    async fn finish(&self, ctx: &ToolContext<'_>, vs: &VerifyStarted, deadline_passed: bool) -> ToolOutcome {
        let inst = match ctx.instance() {
            Ok(i) => i,
            Err(e) => return ToolOutcome::Failed(e),
        };
        match inst.finish_verification(&ctx.caller(), ctx.thread_id, vs, deadline_passed).await {
            Ok(out) => ToolOutcome::Done(shape(&out)),
            Err(e) => failed(e),
        }
    }
}

impl Tool for VerifyBuiltWorkflow {
    fn name(&self) -> &'static str {
        "verify-built-workflow"
    }

    fn description(&self) -> &'static str {
        "Verify a built workflow: runs the version build-workflow saved with per-execution pin data (never saved). Nodes with \
side effects (writes, sends, deletes, non-GET HTTP, nodes with credentials, Wait, Form pages, send-and-wait) are SIMULATED with \
fixture output, so nothing is sent or written; pure logic runs for real. inputData is the trigger's payload, shaped by trigger \
type: Form → flat field map (not wrapped in formFields); Webhook → the body (or an envelope {body, query, headers, params} when \
expressions read $json.query/headers/params); Chat → {chatInput}; Schedule → omit. With several triggers pass triggerNodeName and \
verify once per trigger. Each call reserves one of the build's limited attempts. Read simulatedNodes, simulationNote, \
resolvedParameterWarnings and emptyOutputNote, then call report-verification-verdict."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "workItemId": {"type": "string", "minLength": 1, "description": "Work item ID from the build-workflow result"},
                "workflowId": {"type": "string", "minLength": 1, "description": "Workflow ID to verify (the one the work item built)"},
                "inputData": {"type": "object", "description": "Trigger payload, shaped by trigger type (see the description)"},
                "timeout": {"type": "integer", "minimum": MIN_TIMEOUT_MS, "maximum": MAX_TIMEOUT_MS, "description": "Max wait in ms (default 300000)"},
                "triggerNodeName": {"type": "string", "description": "The trigger to verify from; required when the workflow has several enabled triggers"}
            },
            "required": ["workItemId", "workflowId"],
            "additionalProperties": false
        })
    }

    fn handles_abort(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let inst = match ctx.instance() {
                Ok(i) => i,
                Err(e) => return ToolOutcome::Failed(e),
            };
            let caller = ctx.caller();
            let req = VerifyRequest {
                work_item_id: s(&args, "workItemId").unwrap_or_default().to_owned(),
                workflow_id: s(&args, "workflowId").unwrap_or_default().to_owned(),
                input_data: args.get("inputData").and_then(Value::as_object).cloned(),
                timeout_ms: args.get("timeout").and_then(Value::as_u64),
                trigger_node_name: s(&args, "triggerNodeName").map(str::to_owned),
            };
            let vs = match inst.start_verification(&caller, ctx.thread_id, &req).await {
                Ok(vs) => vs,
                Err(e) => return failed(e),
            };
            let state = serde_json::to_value(&vs).unwrap_or(Value::Null);
            match wait_inline(ctx, inst, &vs.started, state).await {
                Ok(Inline::Finish { deadline_passed }) => self.finish(ctx, &vs, deadline_passed).await,
                Ok(Inline::Park(wait)) => ToolOutcome::Wait(wait),
                Ok(Inline::Cancelled) => Executions.cancelled(inst, &caller, &vs.started).await,
                Err(e) => failed(e),
            }
        })
    }

    fn resume_wait<'a>(&'a self, ctx: &'a ToolContext<'a>, _args: Value, wait: ExecutionWait, deadline_passed: bool) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let vs: VerifyStarted = match serde_json::from_value(wait.state.clone()) {
                Ok(v) => v,
                Err(e) => return ToolOutcome::Failed(format!("the wait record of verification {} is unreadable: {e}", wait.execution_id)),
            };
            if ctx.abort.is_cancelled() {
                let inst = match ctx.instance() {
                    Ok(i) => i,
                    Err(e) => return ToolOutcome::Failed(e),
                };
                return Executions.cancelled(inst, &ctx.caller(), &vs.started).await;
            }
            self.finish(ctx, &vs, deadline_passed).await
        })
    }
}

// ------------------------------------------------------------ report-verification-verdict

pub struct ReportVerificationVerdict;

impl Tool for ReportVerificationVerdict {
    fn name(&self) -> &'static str {
        "report-verification-verdict"
    }

    fn description(&self) -> &'static str {
        "Feed a verification result into the work item's loop state machine; returns {guidance}: the next action. Use a stable \
failureSignature (e.g. node + error class) for the same failure: a repeated signature escalates (patch → rebuild → ask the user \
→ stop) instead of looping. `verified` only counts when the stored verification backs it."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "workItemId": {"type": "string", "minLength": 1, "description": "Work item ID"},
                "verdict": {"type": "string", "enum": ["verified", "needs_patch", "needs_rebuild", "trigger_only", "needs_user_input", "failed_terminal"]},
                "failureSignature": {"type": "string", "maxLength": 300, "description": "Stable identifier of the failure, for repeated-failure detection"},
                "failedNodeName": {"type": "string", "description": "Node that failed"},
                "patch": {"type": "string", "description": "For needs_patch: the change you will make"},
                "diagnosis": {"type": "string", "description": "Failure analysis"}
            },
            "required": ["workItemId", "verdict"],
            "additionalProperties": false
        })
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let inst = match ctx.instance() {
                Ok(i) => i,
                Err(e) => return ToolOutcome::Failed(e),
            };
            let verdict: Verdict = match args.get("verdict").cloned().map(serde_json::from_value) {
                Some(Ok(v)) => v,
                _ => return ToolOutcome::Failed("verdict must be one of verified, needs_patch, needs_rebuild, trigger_only, needs_user_input, failed_terminal".into()),
            };
            let report = VerdictReport {
                work_item_id: s(&args, "workItemId").unwrap_or_default().to_owned(),
                verdict,
                failure_signature: s(&args, "failureSignature").map(str::to_owned),
                failed_node_name: s(&args, "failedNodeName").map(str::to_owned),
                diagnosis: s(&args, "diagnosis").map(str::to_owned),
            };
            match inst.report_verdict(ctx.thread_id, &report).await {
                Ok(out) => ToolOutcome::Done(serde_json::to_value(&out).unwrap_or(Value::Null)),
                Err(e) => failed(e),
            }
        })
    }
}

// ------------------------------------------------------------ apply-workflow-credentials

pub struct ApplyWorkflowCredentials;

impl Tool for ApplyWorkflowCredentials {
    fn name(&self) -> &'static str {
        "apply-workflow-credentials"
    }

    fn description(&self) -> &'static str {
        "Atomically apply real credentials to the built workflow's nodes (all or nothing; a credential you cannot use in the \
workflow's project is refused). credentials: {credentialType: credentialId} for every built node taking that type, or \
{nodeName: {credentialType: credentialId}}. Credential ids come from credentials(list); never a secret."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "workItemId": {"type": "string", "minLength": 1, "description": "Work item ID from the build-workflow result"},
                "credentials": {"type": "object", "minProperties": 1, "description": "Real credential mapping: {credentialType: credentialId} or {nodeName: {credentialType: credentialId}}"}
            },
            "required": ["workItemId", "credentials"],
            "additionalProperties": false
        })
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let inst = match ctx.instance() {
                Ok(i) => i,
                Err(e) => return ToolOutcome::Failed(e),
            };
            let creds = args.get("credentials").and_then(Value::as_object).cloned().unwrap_or_default();
            match inst.apply_workflow_credentials(&ctx.caller(), ctx.thread_id, s(&args, "workItemId").unwrap_or_default(), &creds).await {
                Ok(nodes) => ToolOutcome::Done(json!({"updatedNodes": nodes})),
                Err(e) => failed(e),
            }
        })
    }
}
