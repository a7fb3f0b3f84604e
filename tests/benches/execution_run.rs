//! What one `executions(action="run")` costs, waited on inline and parked
//! (`cargo bench -p e2e --bench execution_run`): DynamoDB and SQS requests
//! and Lambda wall time of the step function (the agent's two steps: the
//! model's tool call, then its answer) and of the executor function, for
//!
//! - a quick run (Manual → NoOp), answered inline;
//! - a 3 s run (Manual → Wait 3 s → NoOp) waited on inline (bound 5 s);
//! - the same 3 s run parked (bound 500 ms): the step ends, the executor's
//!   completion queues the resume step.
//!
//! Requests are counted by SDK interceptors on each function's clients
//! (every attempt); steps and executions are run by hand, one at a time, so
//! each is timed alone. moto is one Python process: times are an upper
//! bound dominated by moto; the request counts are what AWS would bill.
//! Not counted: the SQS event sources' own receive/delete calls and the
//! chat POST (the same in every mode).

#[path = "../tests/agent_common/mod.rs"]
mod agent_common;

use agent_common::*;
use protocol::events::EventType;
use protocol::UserId;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::counting::RequestCounter;
use store::data::workflows::{NewWorkflow, WorkflowBody};
use store::deployment::QueueId;

#[derive(Clone)]
struct Counters {
    dynamo: RequestCounter,
    sqs: RequestCounter,
}

impl Counters {
    /// `clients` with every DynamoDB and SQS request counted.
    fn counted(clients: &store::AwsClients) -> (store::AwsClients, Counters) {
        let mut c = clients.clone();
        let (dynamo, counter) = RequestCounter::instrument(&clients.dynamo);
        let sqs = RequestCounter::default();
        c.dynamo = dynamo;
        c.sqs = aws_sdk_sqs::Client::from_conf(clients.sqs.config().to_builder().interceptor(sqs.clone()).build());
        (c, Counters { dynamo: counter, sqs })
    }
    fn reset(&self) {
        self.dynamo.reset();
        self.sqs.reset();
    }
    fn line(&self) -> String {
        let ops = |m: BTreeMap<String, u64>| m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
        format!("{} DynamoDB ({}) + {} SQS ({})", self.dynamo.total(), ops(self.dynamo.snapshot()), self.sqs.total(), ops(self.sqs.snapshot()))
    }
}

fn waits(secs: u64) -> WorkflowBody {
    let mut nodes = vec![json!({"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}})];
    let mut conns = serde_json::Map::new();
    if secs > 0 {
        nodes.push(json!({"name": "Wait", "type": "n8n-nodes-base.wait", "typeVersion": 1.1, "position": [200, 0], "parameters": {"resume": "timeInterval", "amount": secs, "unit": "seconds"}}));
        conns.insert("Start".into(), json!({"main": [[{"node": "Wait", "type": "main", "index": 0}]]}));
        conns.insert("Wait".into(), json!({"main": [[{"node": "Done", "type": "main", "index": 0}]]}));
    } else {
        conns.insert("Start".into(), json!({"main": [[{"node": "Done", "type": "main", "index": 0}]]}));
    }
    nodes.push(json!({"name": "Done", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [400, 0], "parameters": {}}));
    WorkflowBody { nodes: Value::Array(nodes), connections: Value::Object(conns), settings: json!({}), pin_data: Value::Null, meta: Value::Null }
}

struct Bench {
    cloud: Cloud,
    late: Arc<LateScript>,
    steps: Counters,
    inst: instance::Instance,
}

async fn bench(inline_wait_ms: &'static str) -> Bench {
    let late = Arc::new(LateScript::default());
    let vars: &'static [(&'static str, &'static str)] = Box::leak(vec![("INSTANCE_AI_EXECUTION_INLINE_WAIT_MS", inline_wait_ms)].into_boxed_slice());
    let setup = Setup { consumers: false, approval_policy: Some("runWorkflow=always_allow"), vars, ..Setup::default() };
    let (cloud, steps) = cloud_with(setup, Counters::counted, Some(late.clone() as Arc<dyn agent::model::ModelProvider>)).await;
    let inst = instance::Instance::new(&cloud.running.app.clients, &cloud.running.app.config).await.unwrap();
    Bench { cloud, late, steps, inst }
}

impl Bench {
    async fn workflow(&self, name: &str, secs: u64) -> String {
        let alice = instance::Caller::new(UserId("alice".into()));
        let project = self.inst.write_project(&alice, "workflow:create").await.unwrap();
        let new = NewWorkflow { name: name.into(), description: None, project_id: project, folder_id: None, body: waits(secs), available_in_mcp: false };
        self.inst.data.workflows.create(new, &alice.user).await.unwrap().meta.id
    }

    /// One executor invocation on the next Runs message, counted and timed.
    async fn executor(&self) -> (Duration, Counters) {
        let app = &self.cloud.running.app;
        let (clients, counters) = Counters::counted(&app.clients);
        let data = store::data::InstanceData::new(&clients, &app.config).unwrap();
        let exec = executions::Executor::new(data, clients.sqs.clone(), app.config.queue_url(QueueId::Runs).unwrap(), executions::ExecutorSettings::from_config(&app.config))
            .notifying(app.config.queue_url(QueueId::Steps).ok().map(str::to_owned));
        let body = take(&self.cloud, QueueId::Runs).await;
        counters.reset();
        let t = Instant::now();
        let failed = exec.handle_queue_batch([executions::QueueRecord { message_id: "m".into(), body: Some(body) }]).await;
        assert!(failed.is_empty());
        (t.elapsed(), counters)
    }

    /// One agent run whose only tool call is `run` on `workflow`, its steps
    /// and execution driven by hand; prints its figures.
    async fn run(&self, label: &str, workflow: &str) {
        let message = format!("Run {workflow}");
        self.late.set(json!({"conversations": {message.clone(): [
            {"toolCalls": [{"name": "executions", "args": {"action": "run", "workflowId": workflow}}]},
            {"text": "Done."}
        ]}}));
        let t = thread();
        let mut feed = self.cloud.events(ALICE, &t).await;
        self.cloud.chat(ALICE, &t, &message).await;
        let app = self.cloud.running.app.clone();
        let step1 = receive(&self.cloud).await;
        self.steps.reset();
        // Step 1 and the executor run side by side: an inline wait needs the execution to progress.
        let started = Instant::now();
        let (step1_time, (exec_time, exec_counters)) = tokio::join!(
            async {
                api::handlers::step::handle(&app, step1).await;
                started.elapsed()
            },
            self.executor(),
        );
        let step1_counts = self.steps.line();
        self.steps.reset();
        let step2 = receive(&self.cloud).await;
        let t2 = Instant::now();
        api::handlers::step::handle(&app, step2).await;
        let step2_time = t2.elapsed();
        let frames = feed.until_type(EventType::RunFinish, Duration::from_secs(60)).await;
        let result = frames.iter().find(|f| f.kind() == EventType::ToolResult).map(payload).unwrap_or_default();
        assert_eq!(result["result"]["status"], "success", "{result}");
        println!("{label}");
        println!("  step 1 (model call, tool starts the run and waits or parks): {:.0} ms, {step1_counts}", step1_time.as_secs_f64() * 1e3);
        println!("  step 2 (tool result, model's answer, run-finish): {:.0} ms, {}", step2_time.as_secs_f64() * 1e3, self.steps.line());
        println!("  executor (one invocation): {:.0} ms, {}", exec_time.as_secs_f64() * 1e3, exec_counters.line());
        println!("  step function time for the run: {:.0} ms", (step1_time + step2_time).as_secs_f64() * 1e3);
    }
}

async fn take(cloud: &Cloud, queue: QueueId) -> String {
    let app = &cloud.running.app;
    let url = app.config.queue_url(queue).unwrap().to_owned();
    loop {
        let out = app.clients.sqs.receive_message().queue_url(&url).max_number_of_messages(1).wait_time_seconds(1).send().await.unwrap();
        if let Some(m) = out.messages.unwrap_or_default().into_iter().next() {
            app.clients.sqs.delete_message().queue_url(&url).receipt_handle(m.receipt_handle.unwrap()).send().await.unwrap();
            return m.body.unwrap();
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let inline = bench("5000").await;
    let quick = inline.workflow("Quick", 0).await;
    let slow = inline.workflow("Three seconds", 3).await;
    // A first run warms caches (user, project) out of the figures.
    inline.run("warm-up (not a figure)", &quick).await;
    inline.run("quick run, inline (bound 5 s)", &quick).await;
    inline.run("3 s run, inline (bound 5 s)", &slow).await;
    inline.cloud.stop().await;

    let parked = bench("500").await;
    let quick = parked.workflow("Quick", 0).await;
    let slow = parked.workflow("Three seconds", 3).await;
    parked.run("warm-up (not a figure)", &quick).await;
    parked.run("3 s run, parked (bound 500 ms)", &slow).await;
    parked.cloud.stop().await;
    println!("not counted: the chat POST; the SQS event sources' ReceiveMessage/DeleteMessageBatch");
}
