//! Benchmark: the engine's overhead per AI Agent iteration, the model
//! excluded. A host-supplied scripted model answers at once (a Calculator
//! tool call, then a final answer), so what is timed is the agent's own
//! work: building the request (messages, tool schemas), recording the model
//! and tool calls as sub-node runs, running the tool, and the loop. Per
//! iteration = (T(n) − T(1)) / (n − 1), median of several runs.
//!
//! `cargo bench -p engine --bench agent`

use std::sync::Arc;
use std::time::Instant;

use engine::host::ChatModelProvider;
use engine::nodes::ai::model::ModelSetup;
use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, Item, RunOptions};
use models::{CancellationToken, FinishReason, Message, ModelChunk, ModelProvider, ModelRequest, ModelStream, Usage};
use serde_json::{json, Value};

/// Calls the calculator until it has seen `n - 1` results, then answers;
/// its chunks are ready at once.
struct Scripted {
    iterations: usize,
}

impl ModelProvider for Scripted {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "scripted"
    }
    fn stream(&self, req: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let seen = req.messages.iter().filter(|m| matches!(m, Message::ToolResult { .. })).count();
        let mut chunks = vec![];
        if seen + 1 < self.iterations {
            chunks.push(Ok(ModelChunk::ToolCall { id: format!("c{seen}"), name: "calculator".into(), args: json!({"input": "(2 + 3) * 4 ^ 2"}) }));
            chunks.push(Ok(ModelChunk::Finish { reason: FinishReason::ToolCalls, usage: Usage { input_tokens: 10, output_tokens: 5 } }));
        } else {
            chunks.push(Ok(ModelChunk::TextDelta("done".into())));
            chunks.push(Ok(ModelChunk::Finish { reason: FinishReason::Stop, usage: Usage { input_tokens: 10, output_tokens: 1 } }));
        }
        Box::pin(futures::stream::iter(chunks))
    }
}

struct Models(usize);
impl ChatModelProvider for Models {
    fn provider(&self, _setup: &ModelSetup) -> Option<Result<Box<dyn ModelProvider>, String>> {
        Some(Ok(Box::new(Scripted { iterations: self.0 })))
    }
}

fn workflow(extra_tools: usize, memory: bool) -> Value {
    let mut nodes = vec![
        json!({"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}}),
        json!({"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "parameters": {"promptType": "define", "text": "={{ $json.q }}", "options": {"maxIterations": 1000}}}),
        json!({"name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "parameters": {"model": "scripted"}, "credentials": {"openAiApi": {"id": "c", "name": "c"}}}),
        json!({"name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1, "parameters": {}}),
    ];
    let mut conns = json!({
        "Start": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
        "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
        "Calculator": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
    });
    for i in 0..extra_tools {
        let name = format!("Code {i}");
        nodes.push(json!({"name": name, "type": "@n8n/n8n-nodes-langchain.toolCode", "typeVersion": 1.3,
            "parameters": {"description": "Unused tool", "jsCode": "return query;", "specifyInputSchema": true, "jsonSchemaExample": "{\"a\": 1, \"b\": \"x\"}"}}));
        conns[name] = json!({"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]});
    }
    if memory {
        nodes.push(json!({"name": "Memory", "type": "@n8n/n8n-nodes-langchain.memoryBufferWindow", "typeVersion": 1.3, "parameters": {"sessionIdType": "customKey", "sessionKey": "bench"}}));
        conns["Memory"] = json!({"ai_memory": [[{"node": "Agent", "type": "ai_memory", "index": 0}]]});
    }
    json!({"id": "bench", "nodes": nodes, "connections": conns})
}

struct NoKey;
impl engine::host::CredentialsProvider for NoKey {
    fn get(&self, _t: &str, _r: &Value) -> Result<Value, String> {
        Ok(json!({"apiKey": "unused"}))
    }
}

/// Median seconds of `reps` runs of the agent doing `iterations` model calls.
fn time(wf: &Value, iterations: usize, reps: usize) -> f64 {
    let graph = Graph::from_json(wf).expect("workflow");
    let host = Host { chat_models: Some(Arc::new(Models(iterations))), credentials: Some(Arc::new(NoKey)), ..Default::default() };
    let engine = Engine::new(EngineSettings::default(), host);
    let mut times = vec![];
    for _ in 0..reps {
        let opts = RunOptions { trigger_items: Some(vec![Item::new(json!({"q": "compute"}))]), ..Default::default() };
        let t0 = Instant::now();
        let (st, _) = engine.run(&graph, opts).expect("run");
        times.push(t0.elapsed().as_secs_f64());
        assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
        assert_eq!(st.run_data["Model"].len(), iterations);
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let n = 101;
    println!("AI Agent: engine overhead per iteration (model excluded; one model call + one Calculator call + their run records)");
    for (tools, memory) in [(0, false), (10, false), (10, true)] {
        let wf = workflow(tools, memory);
        let one = time(&wf, 1, 9);
        let many = time(&wf, n, 9);
        let per = (many - one) / (n - 1) as f64;
        println!(
            "RESULT tools={} memory={memory} per_iteration_us={:.1} run_of_1_iteration_ms={:.2} run_of_{n}_iterations_ms={:.1}",
            tools + 1,
            per * 1e6,
            one * 1e3,
            many * 1e3
        );
    }
}
