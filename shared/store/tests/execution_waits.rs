//! A chain parked on an execution, against moto: the park is one
//! transaction with the execution's waiter, so it fails (writing nothing)
//! once the execution settled; the waiter is taken exactly once; the resume
//! claims the chain exactly once, and a cancel that finished it first wins.

mod data_support;

use protocol::ids::{AgentId, RunId, ThreadId};
use protocol::UserId;
use serde_json::{json, Map};
use store::data::executions::{ExecutionMode, ExecutionStatus, NewExecution};
use store::deployment::TableId;
use store::runs::{now_ms, ChainState, NewChain, Runs, ORCHESTRATOR};
use store::suspensions::{ExecutionWait, Suspension, Suspensions};

async fn running_chain(runs: &Runs) -> (RunId, AgentId) {
    let run = RunId(format!("run_{}", uuid::Uuid::new_v4().simple()));
    let agent = AgentId(ORCHESTRATOR.into());
    let chain = NewChain {
        run_id: run.clone(),
        thread_id: ThreadId(format!("t-{}", uuid::Uuid::new_v4().simple())),
        user_id: UserId("alice".into()),
        agent_id: agent.clone(),
        role: "orchestrator".into(),
        parent_id: None,
        task_id: None,
        checkpoint: b"{}".to_vec(),
        lease_until: now_ms() + 60_000,
        project_id: None,
    };
    runs.start_run(&chain, "hi").await.unwrap().unwrap();
    runs.claim(&run, &agent, 1, now_ms() + 60_000).await.unwrap().expect("step 1 claimed");
    (run, agent)
}

fn record(run: &RunId, agent: &AgentId, id: &str, execution: &str) -> Suspension {
    Suspension {
        request_id: id.into(),
        thread_id: ThreadId("t".into()),
        run_id: run.clone(),
        agent_id: agent.clone(),
        user_id: UserId("alice".into()),
        tool_call_id: "call-1".into(),
        tool_name: "executions".into(),
        args: Map::new(),
        step: 1,
        state: "waiting".into(),
        decision: None,
        created_at: now_ms(),
        wait: Some(ExecutionWait { execution_id: execution.into(), deadline_ms: now_ms() + 600_000, state: json!({"timeoutMs": 5000}) }),
        allow_key: None,
    }
}

#[tokio::test]
async fn a_park_waits_only_on_an_unsettled_execution_and_is_resumed_once() {
    let (env, data) = data_support::data().await;
    let agent_table = env.config.table(TableId::Agent).unwrap();
    let runs = Runs::new(env.clients.dynamo.clone(), agent_table);
    let suspensions = Suspensions::new(env.clients.dynamo.clone(), agent_table);
    let new = |status| NewExecution { workflow_id: "wf".into(), mode: ExecutionMode::Manual, status, started_at: None, retry_of: None, retention_secs: None };

    // Settled before the park: nothing is written, the chain stays running.
    let (run, agent) = running_chain(&runs).await;
    let done = data.executions.create(new(ExecutionStatus::Success)).await.unwrap();
    let wait = record(&run, &agent, "ew_settled", &done.id);
    let watch = data.executions.watch(&done.id, "resume-1").unwrap();
    assert!(!runs.park(&run, &agent, 1, b"{}", wait.to_item(), "ew_settled", now_ms() + 600_000, watch).await.unwrap());
    assert_eq!(runs.chain(&run, &agent).await.unwrap().unwrap().state, ChainState::Running);
    assert!(suspensions.get("ew_settled").await.unwrap().is_none(), "no wait record was left behind");
    assert_eq!(data.executions.take_waiter(&done.id).await.unwrap(), None);

    // Running: parked; the settler takes the waiter exactly once.
    let going = data.executions.create(new(ExecutionStatus::Running)).await.unwrap();
    let wait = record(&run, &agent, "ew_going", &going.id);
    let watch = data.executions.watch(&going.id, "resume-2").unwrap();
    assert!(runs.park(&run, &agent, 1, b"{\"pending\":[]}", wait.to_item(), "ew_going", now_ms() + 600_000, watch).await.unwrap());
    let parked = runs.chain(&run, &agent).await.unwrap().unwrap();
    assert_eq!((parked.state, parked.suspended_request.as_deref()), (ChainState::Waiting, Some("ew_going")));
    let back = suspensions.get("ew_going").await.unwrap().unwrap();
    assert_eq!(back.wait, wait.wait, "the wait record round-trips");
    let (a, b) = tokio::join!(data.executions.take_waiter(&going.id), data.executions.take_waiter(&going.id));
    let taken: Vec<String> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(taken, ["resume-2"], "one of two concurrent settlers gets the message");

    // The resume claims once; a duplicate, or a resume for another wait, does not.
    assert!(runs.claim_wait(&run, &agent, 2, "ew_other", now_ms() + 60_000).await.unwrap().is_none());
    let (a, b) = tokio::join!(runs.claim_wait(&run, &agent, 2, "ew_going", now_ms() + 60_000), runs.claim_wait(&run, &agent, 2, "ew_going", now_ms() + 60_000));
    let claimed = [a.unwrap(), b.unwrap()].into_iter().flatten().count();
    assert_eq!(claimed, 1, "a completion delivered twice resumes once");
    let resumed = runs.chain(&run, &agent).await.unwrap().unwrap();
    assert_eq!((resumed.state, resumed.step, resumed.suspended_request), (ChainState::Running, 2, None));

    // A cancel requested before the park keeps the chain from parking.
    let (run, agent) = running_chain(&runs).await;
    assert!(runs.request_cancel(&run, &agent).await.unwrap());
    let going = data.executions.create(new(ExecutionStatus::New)).await.unwrap();
    let watch = data.executions.watch(&going.id, "resume-3").unwrap();
    assert!(!runs.park(&run, &agent, 1, b"{}", record(&run, &agent, "ew_cancelled", &going.id).to_item(), "ew_cancelled", now_ms() + 600_000, watch).await.unwrap());
    assert_eq!(data.executions.take_waiter(&going.id).await.unwrap(), None, "the execution got no waiter");
}
