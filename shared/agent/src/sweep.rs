//! The sweep (scheduled): finds chains whose lease expired — a step that
//! died, a message that never came, a finish whose event was never written,
//! a confirmation past its deadline, a call parked on an execution past its
//! deadline — and ends or resumes them, so every run ends with exactly one
//! `run-finish`.

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::finish::{finish_chain, parse_status, write_final, Ending, Settle};
use crate::runtime::{Runtime, StepMessage};
use crate::tools::Decision;
use protocol::events::RunStatus;
use store::runs::{now_ms, ChainState};
use tokio::sync::Mutex;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    pub interrupted: usize,
    pub finished_late: usize,
    pub expired_confirmations: usize,
    /// Calls parked on an execution resumed at their deadline.
    pub resumed_waits: usize,
}

pub async fn sweep(rt: &Runtime) -> Result<SweepReport, AgentError> {
    let mut report = SweepReport::default();
    for chain in rt.runs.expired(now_ms()).await? {
        let span = tracing::info_span!("run", runId = %chain.run_id, threadId = %chain.thread_id, agentId = %chain.agent_id);
        let _guard = span.enter();
        // Claim the expired lease first: a step that is merely slow, or
        // another sweep, makes this fail and we leave the chain alone.
        if !rt.runs.take_expired(&chain).await? {
            continue;
        }
        let writer = Mutex::new(rt.writer(&chain.thread_id));
        match chain.state {
            ChainState::Queued | ChainState::Running => {
                let ckpt = Checkpoint::decode(chain.checkpoint.as_deref()).unwrap_or_default();
                let open: Vec<String> = chain.open_tools.keys().cloned().collect();
                tracing::warn!(open = open.len(), "lease expired; finishing the run as interrupted");
                let ending = Ending { status: RunStatus::Interrupted, reason: Some("crash_interrupted".into()), result: None };
                if finish_chain(rt, &writer, &chain, chain.state, Some(chain.step), ckpt, open, Settle::Interrupted, ending).await? {
                    report.interrupted += 1;
                }
            }
            ChainState::Finishing => {
                tracing::warn!("finish was not completed; writing the final event");
                if chain.is_orchestrator() {
                    // The winner may have died before giving the slot back.
                    let ckpt = Checkpoint::decode(chain.checkpoint.as_deref()).unwrap_or_default();
                    rt.runs.release(&chain, Some(&ckpt.history_bytes()?)).await?;
                }
                let status = parse_status(chain.finish_status.as_deref().unwrap_or("interrupted"));
                let open: Vec<String> = chain.open_tools.keys().cloned().collect();
                write_final(rt, &writer, &chain, &open, Settle::Interrupted, status, chain.finish_reason.clone(), None).await?;
                report.finished_late += 1;
            }
            ChainState::Suspended => {
                let Some(request_id) = chain.suspended_request.clone() else { continue };
                let decision = Decision { approved: false, expired: true, ..Decision::default() };
                let json = serde_json::to_string(&decision).map_err(|e| AgentError::Invalid(e.to_string()))?;
                let lease = rt.lease_from_now();
                if rt.runs.decide(&chain.run_id, &chain.agent_id, &request_id, chain.step, "expired", &json, lease, None).await? {
                    rt.enqueue(&StepMessage {
                        run_id: chain.run_id.0.clone(),
                        agent_id: chain.agent_id.0.clone(),
                        step: chain.step + 1,
                        request_id: Some(request_id),
                        wait_id: None,
                    })
                    .await?;
                    report.expired_confirmations += 1;
                }
            }
            ChainState::Waiting => {
                // The wait's deadline passed with no completion (a lost
                // message, a dead executor): resume the call; the tool reports
                // how the execution stands and stops it if it is still going.
                let Some(wait_id) = chain.suspended_request.clone() else { continue };
                tracing::warn!(wait_id = %wait_id, "execution wait past its deadline; resuming the call");
                rt.enqueue(&StepMessage {
                    run_id: chain.run_id.0.clone(),
                    agent_id: chain.agent_id.0.clone(),
                    step: chain.step + 1,
                    request_id: None,
                    wait_id: Some(wait_id),
                })
                .await?;
                report.resumed_waits += 1;
            }
            ChainState::Finished => {}
        }
    }
    Ok(report)
}
