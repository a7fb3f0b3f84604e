//! What one `build-workflow` costs against moto: milliseconds and DynamoDB
//! requests (by operation) for a first build (creates the workflow) and a
//! rebuild (a new version of the bound workflow), doing what the tool does:
//! read the workspace file and its binding, build, record the binding.
//! Run with the local environment: `source infra/local/env.sh` first.
//!
//! cargo bench -p instance --bench build [-- <iterations>]

use instance::builder::BuildRequest;
use instance::{Caller, Instance};
use protocol::ids::ThreadId;
use protocol::UserId;
use std::collections::BTreeMap;
use std::time::Instant;
use store::counting::RequestCounter;
use store::data::workspace::{Expect, SourceBinding};
use store::testing::TestEnv;

const SOURCE: &str = r#"
const hook = trigger({ type: 'n8n-nodes-base.webhook', version: 2, config: { name: 'Webhook', parameters: { httpMethod: 'POST', path: 'orders' } } });
const prepare = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Prepare', parameters: {
  assignments: { assignments: [{ name: 'total', value: expr('{{ $json.body.total }}'), type: 'number' }] } } } });
const check = ifElse({ config: { name: 'Is big', parameters: { conditions: { combinator: 'and',
  conditions: [{ leftValue: expr('{{ $json.total }}'), rightValue: LIMIT, operator: { type: 'number', operation: 'gt' } }] } } } });
const big = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Big', parameters: { assignments: { assignments: [{ name: 'size', value: 'big', type: 'string' }] } } } });
const small = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Small', parameters: { assignments: { assignments: [{ name: 'size', value: 'small', type: 'string' }] } } } });
export default workflow('orders', 'Order triage').add(hook).to(prepare).to(check.onTrue(big).onFalse(small));
"#;

/// One build as the tool runs it; the workflow id.
async fn build(inst: &Instance, caller: &Caller, thread: &ThreadId, path: &str) -> String {
    let ws = &inst.data.workspace;
    let source = ws.read(thread, path).await.unwrap().unwrap().content;
    let binding = ws.binding(thread, path).await.unwrap();
    let out = inst
        .build_workflow(caller, BuildRequest { source, bound_workflow_id: binding.as_ref().map(|b| b.workflow_id.clone()), ..BuildRequest::default() })
        .await
        .unwrap();
    assert!(out.success, "{out:?}");
    let id = out.workflow_id.unwrap();
    let record = SourceBinding {
        path: path.into(),
        workflow_id: id.clone(),
        source_hash: out.source_hash,
        version_id: out.version_id.unwrap(),
        work_item_id: None,
        is_supporting_workflow: false,
        built_at: store::data::db::now_iso(),
    };
    ws.record_build(thread, &record, binding.is_none()).await.unwrap();
    id
}

struct Figures {
    ms: Vec<f64>,
    requests: BTreeMap<String, u64>,
}

impl Figures {
    fn print(&self, what: &str, n: usize) {
        let mut ms = self.ms.clone();
        ms.sort_by(|a, b| a.total_cmp(b));
        let total: u64 = self.requests.values().sum();
        let per: Vec<String> = self.requests.iter().map(|(op, c)| format!("{op} {:.1}", *c as f64 / n as f64)).collect();
        println!(
            "{what:<9} p50 {:>6.1} ms  p90 {:>6.1} ms  mean {:>6.1} ms  DynamoDB requests/build {:.1} ({})",
            ms[ms.len() / 2],
            ms[ms.len() * 9 / 10],
            ms.iter().sum::<f64>() / n as f64,
            total as f64 / n as f64,
            per.join(", ")
        );
    }
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(20);
    let env = TestEnv::new().await;
    let (dynamo, counter) = RequestCounter::instrument(&env.clients.dynamo);
    let mut clients = env.clients.clone();
    clients.dynamo = dynamo;
    let inst = Instance::new(&clients, &env.config).await.expect("instance");
    let caller = Caller::new(UserId("bench-user".into()));
    inst.user(&caller).await.unwrap();
    let thread = ThreadId("bench-thread".into());
    // Warm up the sandbox and the connection pool.
    inst.data.workspace.write(&thread, "warm.workflow.ts", &SOURCE.replace("LIMIT", "1"), Expect::Any).await.unwrap();
    build(&inst, &caller, &thread, "warm.workflow.ts").await;

    let mut first = Figures { ms: Vec::new(), requests: BTreeMap::new() };
    let mut again = Figures { ms: Vec::new(), requests: BTreeMap::new() };
    for i in 0..n {
        let path = format!("orders-{i}.workflow.ts");
        inst.data.workspace.write(&thread, &path, &SOURCE.replace("LIMIT", "100"), Expect::Any).await.unwrap();
        for (figures, limit) in [(&mut first, None), (&mut again, Some("250"))] {
            if let Some(l) = limit {
                inst.data.workspace.write(&thread, &path, &SOURCE.replace("LIMIT", l), Expect::Any).await.unwrap();
            }
            counter.reset();
            let t = Instant::now();
            build(&inst, &caller, &thread, &path).await;
            figures.ms.push(t.elapsed().as_secs_f64() * 1000.0);
            for (op, c) in counter.snapshot() {
                *figures.requests.entry(op).or_default() += c;
            }
        }
    }
    println!("build-workflow against moto, {n} builds each (5-node workflow, one user, no credentials):");
    first.print("create", n);
    again.print("rebuild", n);
}
