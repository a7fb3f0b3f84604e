//! The executor loop: n8n's node execution stack, multi-input waiting,
//! error handling, pin data, waiting/resume, cancellation and timeouts.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use expression::Limits;

use crate::data::*;
use crate::error::{EngineError, Result};
use crate::expr::Expr;
use crate::host::Host;
use crate::nodes::{self, NodeContext, NodeOutput};
use crate::stack;
use crate::pack::Packer;
use crate::workflow::{ExecutionOrder, Graph, Node, OnError};

/// Engine-wide settings the host chooses.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Let HTTP Request reach private, loopback and link-local addresses.
    /// Off by default (SSRF guard); tests against a local server turn it on.
    pub allow_private_network: bool,
    /// If non-empty, HTTP Request may only call these hosts.
    pub allowed_hosts: Vec<String>,
    /// Upper bound for one execution's run time.
    pub execution_timeout: Option<Duration>,
    /// Sandbox limits for expressions and Code nodes.
    pub limits: Limits,
    /// Waits shorter than this sleep in-process; longer ones park the execution.
    pub max_inline_wait: Duration,
    /// Execution mode reported to expressions (`manual`, `trigger`, ...).
    pub mode: String,
    /// Default timezone when the workflow sets none.
    pub timezone: String,
    /// The zone of the n8n server process itself (its `TZ`), which n8n's
    /// legacy moment-based Date & Time 1 reads dates without a zone in and
    /// formats them in (JavaScript's local time). Lambda runs in UTC.
    pub host_timezone: String,
    /// Default HTTP timeout when the node sets none.
    pub http_timeout: Duration,
    /// Release a node's items from run data once its children have them,
    /// keeping only counts (leaves keep their items). Applies only when no
    /// expression can look back at other nodes (`$('…')`, `$node`, paired
    /// items); otherwise run data stays complete as in n8n. Bounds memory for
    /// large item counts.
    pub lean_run_data: bool,
    /// Pack a node run's outputs into serialized JSON once nothing in the run
    /// holds them any more, when they have at least this many items (0: never).
    /// Run data stays complete (a read decodes it again) in a fraction of the
    /// memory. Off when expressions can look back at other nodes.
    pub pack_run_data_from: usize,
    /// Base URL webhooks and forms are served under (`$execution.resumeUrl`
    /// is `<public_url>/webhook-waiting/<execution id>`); `None`: empty URLs.
    pub public_url: Option<String>,
    /// A frozen "now" for expressions, Code and nodes that read the clock
    /// (tests that expect a fixed instant); `None`: the system clock. Like
    /// the fake timers of n8n's tests, a frozen clock moves on by the time
    /// in-process waits would sleep, and they return at once.
    pub clock: Option<chrono::DateTime<chrono::Utc>>,
    /// How far the frozen clock has moved on (shared by an engine's runs).
    pub clock_advanced: ClockAdvance,
    /// Origins outbound requests are sent to instead (`https://slack.com` →
    /// `http://127.0.0.1:4000`): a service's local stand-in, a regional or
    /// proxy endpoint. The rewritten URL passes the SSRF guard like any other.
    pub origin_overrides: std::collections::BTreeMap<String, String>,
}

/// Milliseconds a frozen clock has advanced.
#[derive(Debug, Clone, Default)]
pub struct ClockAdvance(Arc<std::sync::atomic::AtomicI64>);

impl EngineSettings {
    /// The current instant: the system clock, or the frozen clock plus the
    /// waits it has been through.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        match self.clock {
            Some(c) => c + chrono::Duration::milliseconds(self.clock_advanced.0.load(Ordering::SeqCst)),
            None => chrono::Utc::now(),
        }
    }
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            allow_private_network: false,
            allowed_hosts: vec![],
            execution_timeout: None,
            limits: Limits::default(),
            max_inline_wait: Duration::from_secs(65),
            mode: "manual".into(),
            timezone: "UTC".into(),
            host_timezone: "UTC".into(),
            http_timeout: Duration::from_secs(300),
            lean_run_data: false,
            pack_run_data_from: 1000,
            public_url: None,
            clock: None,
            clock_advanced: ClockAdvance::default(),
            origin_overrides: Default::default(),
        }
    }
}

/// Cancels an execution; checked between nodes and during waits.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst)
    }
    pub fn is_canceled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What nodes can reach of the engine while running.
pub struct Env {
    pub settings: EngineSettings,
    pub host: Host,
    pub cancel: CancelToken,
    pub deadline: Option<Instant>,
    pub(crate) http: OnceLock<crate::nodes::http::HttpClient>,
    /// This execution's database pools, closed when it ends.
    pub(crate) sql: crate::nodes::sql::Pools,
    /// Set when the caller waits for a streamed answer (n8n's `isStreaming()`).
    pub stream: Option<crate::stream::StreamHook>,
}

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Per-execution pin data: pinned nodes do not execute.
    pub pin_data: BTreeMap<String, Vec<Item>>,
    /// Trigger to start from (default: the first trigger).
    pub trigger: Option<String>,
    /// Items the trigger receives (default `[{json:{}}]`).
    pub trigger_items: Option<Vec<Item>>,
    /// The trigger output they leave on (a Webhook listening to several
    /// methods has one output per method).
    pub trigger_output: usize,
    pub cancel: Option<CancelToken>,
    pub timeout: Option<Duration>,
    pub execution_id: Option<String>,
    /// Stop after this node: only it and its ancestors run (run-step).
    pub destination: Option<String>,
    /// Told about every node run as it finishes (progress persistence).
    pub progress: Option<ProgressHook>,
    /// Chunks of a streamed answer go here (the trigger answers `streaming`).
    pub stream: Option<crate::stream::StreamHook>,
    /// A run-step on a tool: the arguments the model would have given it
    /// (`$fromAI` values by name, or a free-text tool's input).
    pub tool_arguments: Option<Value>,
}

/// Called on the engine's thread after each node run that lets the execution
/// go on (also when it is the run-step destination), with the state so far:
/// `last_node_executed` names the node, its run is the last in `run_data`.
/// The engine waits for it, so it should only hand off (clone what it needs,
/// send it elsewhere). The final state is the run's return value, not a call.
#[derive(Clone)]
pub struct ProgressHook(Arc<dyn Fn(&ExecutionState) + Send + Sync>);

impl ProgressHook {
    pub fn new(f: impl Fn(&ExecutionState) + Send + Sync + 'static) -> Self {
        ProgressHook(Arc::new(f))
    }

    pub fn notify(&self, st: &ExecutionState) {
        (self.0)(st)
    }
}

impl std::fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

/// Counters for one run (not persisted).
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    pub expression_evaluations: u64,
    pub nodes_executed: u64,
}

/// The workflow engine. Holds host services and settings; each run builds its
/// own expression sandbox on the calling thread (the JS runtime is not Send).
pub struct Engine {
    pub(crate) env_template: (EngineSettings, Host),
}

impl Engine {
    pub fn new(settings: EngineSettings, host: Host) -> Self {
        Engine { env_template: (settings, host) }
    }

    pub fn settings(&self) -> &EngineSettings {
        &self.env_template.0
    }

    fn env(&self, cancel: Option<CancelToken>, timeout: Option<Duration>, graph: &Graph, stream: Option<crate::stream::StreamHook>) -> Env {
        let wf_timeout = graph
            .workflow
            .settings
            .execution_timeout
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s as u64));
        let t = [timeout, self.env_template.0.execution_timeout, wf_timeout].into_iter().flatten().min();
        Env {
            settings: self.env_template.0.clone(),
            host: self.env_template.1.clone(),
            cancel: cancel.unwrap_or_default(),
            deadline: t.map(|t| Instant::now() + t),
            http: OnceLock::new(),
            sql: Default::default(),
            stream,
        }
    }

    /// Fails on anything that would make a run meaningless: unknown node
    /// types (named), versions and parameter values the engine does not
    /// implement (`nodes::unsupported`), dangling connections.
    pub fn validate(&self, graph: &Graph) -> Result<()> {
        for n in graph.nodes() {
            if nodes::is_annotation(&n.node_type) {
                continue;
            }
            if !nodes::is_implemented(&n.node_type) {
                return Err(EngineError::UnknownNodeType { node: n.name.clone(), node_type: n.node_type.clone() });
            }
            if let Some(message) = nodes::unsupported::refusal(&n.node_type, n.type_version, &n.parameters).filter(|_| !n.disabled) {
                return Err(EngineError::Unsupported { node: n.name.clone(), message });
            }
        }
        Ok(())
    }

    /// Runs a workflow from its trigger. `Err` only for invalid input; node
    /// failures end the execution with status `error` and are in the state.
    pub fn run(&self, graph: &Graph, opts: RunOptions) -> Result<(ExecutionState, RunStats)> {
        if let Some(tool) = opts.destination.clone().filter(|d| graph.node(d).is_some_and(nodes::ai::tool_step::is_tool)) {
            // a step on a tool runs it through the Tool Executor in its owner's place
            let stepped = nodes::ai::tool_step::graph_for(graph, &tool, opts.tool_arguments.as_ref())?;
            let mut opts = opts;
            opts.pin_data.remove(&tool);
            opts.destination = Some(nodes::ai::tool_step::EXECUTOR_NAME.into());
            let (mut st, stats) = self.run(&stepped, opts)?;
            nodes::ai::tool_step::report(&mut st, graph, &tool);
            return Ok((st, stats));
        }
        self.validate(graph)?;
        let start = graph.start_node(opts.trigger.as_deref())?;
        let mut st = ExecutionState::new(opts.execution_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string()));
        st.pin_data = opts.pin_data.clone();
        if let Some(sd) = &graph.workflow.static_data {
            st.static_data = sd.clone();
        }
        let items = opts.trigger_items.clone().unwrap_or_else(|| vec![Item::new(json!({}))]);
        // Triggers emit their input k on output k.
        let mut inputs = vec![None; opts.trigger_output + 1];
        inputs[opts.trigger_output] = Some(Arc::new(items));
        st.stack.push_back(StackEntry { node: start.name.clone(), inputs, source: vec![], resume: false });
        let env = self.env(opts.cancel.clone(), opts.timeout, graph, opts.stream.clone());
        let stats = self.drive(graph, &mut st, &env, opts.destination.as_deref(), opts.progress.as_ref());
        Ok((st, stats))
    }

    /// Continues a `waiting` execution (e.g. after `wait_till`), possibly in
    /// another process from a deserialized state.
    pub fn resume(&self, graph: &Graph, st: ExecutionState, cancel: Option<CancelToken>) -> Result<(ExecutionState, RunStats)> {
        self.resume_with(graph, st, RunOptions { cancel, ..RunOptions::default() })
    }

    /// [`Engine::resume`] with options; only `cancel`, `timeout` and
    /// `progress` apply (the rest was fixed when the execution started).
    pub fn resume_with(&self, graph: &Graph, mut st: ExecutionState, opts: RunOptions) -> Result<(ExecutionState, RunStats)> {
        self.validate(graph)?;
        if st.status != ExecutionStatus::Waiting {
            return Err(EngineError::InvalidWorkflow(format!("execution is {:?}, not waiting", st.status)));
        }
        st.wait_till = None;
        let env = self.env(opts.cancel, opts.timeout, graph, opts.stream.clone());
        let stats = self.drive(graph, &mut st, &env, None, opts.progress.as_ref());
        Ok((st, stats))
    }

    /// Runs prepared state (used by partial runs).
    pub(crate) fn drive_state(&self, graph: &Graph, st: &mut ExecutionState, opts: &RunOptions) -> RunStats {
        let env = self.env(opts.cancel.clone(), opts.timeout, graph, opts.stream.clone());
        self.drive(graph, st, &env, opts.destination.as_deref(), opts.progress.as_ref())
    }

    fn drive(&self, graph: &Graph, st: &mut ExecutionState, env: &Env, destination: Option<&str>, progress: Option<&ProgressHook>) -> RunStats {
        let tz = graph.workflow.settings.timezone.clone().unwrap_or_else(|| env.settings.timezone.clone());
        let mut expr = Expr::new(env.settings.limits, tz).with_clock(env.settings.clock);
        let mut stats = RunStats::default();
        let allowed: Option<HashSet<String>> = destination.map(|d| {
            let mut s: HashSet<String> = graph.ancestors(d).into_iter().collect();
            s.insert(d.to_string());
            s
        });
        let reads_back = looks_back(graph);
        let lean = env.settings.lean_run_data && destination.is_none() && !reads_back;
        let pack_from = env.settings.pack_run_data_from;
        let mut packer = (!lean && pack_from > 0 && !reads_back).then(|| Packer::new(pack_from));
        st.status = ExecutionStatus::Running;
        let mut last_try: Option<(String, usize)> = None;
        loop {
            if env.cancel.is_canceled() {
                return self.finish(st, ExecutionStatus::Canceled, None, stats, &expr);
            }
            if env.deadline.is_some_and(|d| Instant::now() >= d) {
                let e = error_data(&EngineError::Timeout(0), None);
                let e = NodeError { message: "Workflow execution timed out".into(), ..e };
                return self.finish(st, ExecutionStatus::Canceled, Some(e), stats, &expr);
            }
            // Waiting multi-input nodes are released after a node runs (see
            // below), as n8n does; an empty stack ends the run.
            let Some(entry) = st.stack.pop_front() else { break };
            let Some(node) = graph.node(&entry.node) else { continue };
            let try_key = (node.name.clone(), st.run_data.get(&node.name).map(|r| r.len()).unwrap_or(0));
            if last_try.as_ref() == Some(&try_key) {
                let e = NodeError { message: "Stopped execution because it seems to be in an endless loop".into(), ..error_data(&EngineError::Canceled, None) };
                return self.finish(st, ExecutionStatus::Error, Some(e), stats, &expr);
            }
            if !stack::has_input_data(graph, &entry) {
                st.stack.push_back(entry);
                last_try = Some(try_key);
                continue;
            }
            stats.nodes_executed += 1;
            if env.settings.clock.is_some() {
                expr.set_clock(Some(env.settings.now()));
            }
            if let Some(p) = packer.as_mut().filter(|_| crate::pack::changes_input_in_place(&node.node_type)) {
                p.before_in_place(st, &entry);
            }
            match self.run_entry(graph, st, env, &mut expr, node, entry) {
                // No items to run on: the branch ends here.
                Step::Skipped => {}
                Step::Continue(children) => {
                    if destination != Some(node.name.as_str()) {
                        self.enqueue(graph, st, node, children, allowed.as_ref());
                        if lean {
                            release(graph, st, &node.name);
                        }
                        if st.stack.is_empty() && !st.waiting.is_empty() {
                            stack::release_waiting(graph, st);
                        }
                    }
                    if let Some(p) = packer.as_mut() {
                        p.node_finished(graph, st, &node.name);
                    }
                    if let Some(p) = progress {
                        p.notify(st);
                    }
                }
                Step::Parked => {
                    st.status = ExecutionStatus::Waiting;
                    stats.expression_evaluations = expr.evaluations;
                    return stats;
                }
                Step::Failed(err) => return self.finish(st, ExecutionStatus::Error, Some(err), stats, &expr),
                Step::Canceled => {
                    // A deadline that fired mid-node reads as a timeout, not a user cancel.
                    let timed_out = !env.cancel.is_canceled() && env.deadline.is_some_and(|d| Instant::now() >= d);
                    let err = timed_out.then(|| NodeError { message: "Workflow execution timed out".into(), ..error_data(&EngineError::Timeout(0), None) });
                    return self.finish(st, ExecutionStatus::Canceled, err, stats, &expr);
                }
            }
        }
        self.finish(st, ExecutionStatus::Success, None, stats, &expr)
    }

    fn finish(&self, st: &mut ExecutionState, status: ExecutionStatus, err: Option<NodeError>, mut stats: RunStats, expr: &Expr) -> RunStats {
        st.status = status;
        if err.is_some() {
            st.error = err;
        }
        st.finished_at = Some(now_iso());
        stats.expression_evaluations = expr.evaluations;
        stats
    }

    /// Runs one stack entry and records its run data.
    fn run_entry(&self, graph: &Graph, st: &mut ExecutionState, env: &Env, expr: &mut Expr, node: &Node, mut entry: StackEntry) -> Step {
        repair_inputs(&mut entry.inputs);
        let run_index = st.run_data.get(&node.name).map(|r| r.len()).unwrap_or(0);
        let input_lens: Vec<usize> = entry.inputs.iter().map(|i| i.as_ref().map(|v| v.len()).unwrap_or(0)).collect();
        let start = now_ms();
        let t0 = Instant::now();
        let mut console = vec![];
        let mut sub_runs = nodes::ai::SubRuns::default();
        let mut origin = None;
        let mut metadata = None;
        let result: Result<NodeOutput> = if let Some(pin) = st.pin_data.get(&node.name) {
            origin = Some(RunOrigin::Pinned);
            Ok(NodeOutput::Data(vec![Arc::new(pin.clone())]))
        } else if node.disabled {
            // Disabled nodes pass their first input through.
            match entry.inputs.first().cloned().flatten() {
                Some(first) => Ok(NodeOutput::Data(vec![first])),
                None => Ok(NodeOutput::Data(vec![])),
            }
        } else if !stack::has_items_to_run(graph, node, &entry) {
            Ok(NodeOutput::Data(vec![]))
        } else {
            let Some(f) = nodes::get(&node.node_type) else {
                let e = EngineError::UnknownNodeType { node: node.name.clone(), node_type: node.node_type.clone() };
                return Step::Failed(error_data(&e, Some(&node.name)));
            };
            let tries = if node.retry_on_fail { node.max_tries.unwrap_or(3).clamp(1, 5) } else { 1 };
            // The node may consume its input only when nothing needs it after a
            // failure (no retry, no pass-through on error).
            let consumable = tries == 1 && node.on_error() == OnError::StopWorkflow;
            let mut node_state = st.node_context.remove(&node.name).unwrap_or(Value::Null);
            let mut res = Err(EngineError::Canceled);
            for attempt in 0..tries {
                if attempt > 0 {
                    let wait = Duration::from_millis(node.wait_between_tries.unwrap_or(1000).min(5000));
                    if sleep_cancellable(wait, env) {
                        return Step::Canceled;
                    }
                }
                let inputs: Vec<Option<Items>> = if node.execute_once {
                    entry.inputs.iter().map(|i| i.as_ref().map(|v| Arc::new(v.iter().take(1).cloned().collect()))).collect()
                } else if consumable {
                    std::mem::take(&mut entry.inputs)
                } else {
                    entry.inputs.clone()
                };
                let mut ctx = NodeContext {
                    graph,
                    node,
                    run_data: &st.run_data,
                    inputs,
                    source: &entry.source,
                    run_index,
                    expr: &mut *expr,
                    env,
                    execution_id: &st.execution_id,
                    node_state: &mut node_state,
                    node_contexts: &st.node_context,
                    static_data: &mut st.static_data,
                    custom_data: &mut st.custom_data,
                    resumed: entry.resume,
                    console: vec![],
                    error_items: vec![],
                    webhook_response: None,
                    metadata: None,
                    from_ai: None,
                    sub_runs: Default::default(),
                };
                res = f(&mut ctx);
                sub_runs.append(&mut ctx.sub_runs);
                if consumable && !node.execute_once {
                    // what the node did not take (a parked Wait needs it back)
                    entry.inputs = std::mem::take(&mut ctx.inputs);
                }
                console = std::mem::take(&mut ctx.console);
                if let Some(r) = ctx.webhook_response.take() {
                    st.webhook_response = Some(r);
                }
                metadata = ctx.metadata.take().or(metadata);
                if res.is_ok() || matches!(res, Err(EngineError::Canceled)) {
                    break;
                }
            }
            if !node_state.is_null() {
                st.node_context.insert(node.name.clone(), node_state);
            }
            res
        };
        let mut task = TaskData {
            start_time: start,
            execution_time: 0,
            execution_status: ExecutionStatus::Success,
            source: entry.source.clone(),
            data: None,
            error: None,
            console,
            released_items: None,
            origin,
            metadata,
            input_override: None,
        };
        // Sub-node calls are runs of those sub-nodes, in call order (also when the root failed).
        sub_runs.record_into(st);
        let previous_last = st.last_node_executed.replace(node.name.clone());
        let outputs: Vec<Items> = match result {
            Ok(out @ (NodeOutput::Wait(_) | NodeOutput::Park(_))) => {
                let (till, external) = match out {
                    NodeOutput::Wait(t) => (t, false),
                    NodeOutput::Park(t) => (t, true),
                    NodeOutput::Data(_) => unreachable!("matched above"),
                };
                let remaining = (till - env.settings.now()).to_std().unwrap_or(Duration::ZERO);
                if !external && remaining <= env.settings.max_inline_wait {
                    if sleep_cancellable(remaining, env) {
                        return Step::Canceled;
                    }
                    vec![entry.inputs.first().cloned().flatten().unwrap_or_default()]
                } else {
                    // Park: the node re-runs on resume and then passes its input on.
                    st.wait_till = Some(till.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
                    st.stack.push_front(StackEntry { resume: true, ..entry });
                    return Step::Parked;
                }
            }
            Ok(NodeOutput::Data(outs)) => outs,
            Err(EngineError::Canceled) => return Step::Canceled,
            Err(e) => {
                let err = error_data(&e, Some(&node.name));
                if let Some(stream) = &env.stream {
                    // n8n tells a streaming caller about every failed node run
                    stream.send(crate::stream::StreamChunk {
                        kind: crate::stream::ChunkKind::Error,
                        content: err.description.clone(),
                        metadata: crate::stream::ChunkMetadata { node_id: node.id.clone(), node_name: node.name.clone(), item_index: 0, run_index, timestamp: None },
                    });
                }
                match node.on_error() {
                    OnError::StopWorkflow => {
                        task.execution_status = ExecutionStatus::Error;
                        task.execution_time = t0.elapsed().as_millis() as u64;
                        task.error = Some(err.clone());
                        st.run_data.entry(node.name.clone()).or_default().push(task);
                        return Step::Failed(err);
                    }
                    OnError::ContinueRegularOutput => {
                        // n8n passes the node's input through when it fails as a whole.
                        task.error = Some(err);
                        vec![entry.inputs.first().cloned().flatten().unwrap_or_default()]
                    }
                    OnError::ContinueErrorOutput => {
                        // n8n does the same here: a node that fails as a whole
                        // passes its input on its first output (only the items
                        // it marks as failed go to the error output).
                        task.error = Some(err);
                        vec![entry.inputs.first().cloned().flatten().unwrap_or_default()]
                    }
                }
            }
        };
        let mut outputs = outputs;
        if node.on_error() == OnError::ContinueErrorOutput && task.error.is_none() {
            outputs = split_error_output(node, outputs, &entry.inputs);
        }
        if outputs.first().is_none_or(|o| o.is_empty()) && node.always_output_data {
            // n8n: one empty item, paired with every input item.
            let paired: Vec<Value> = input_lens
                .iter()
                .enumerate()
                .flat_map(|(k, n)| (0..*n).map(move |j| json!({ "item": j, "input": k })))
                .collect();
            let item = Item { json: expression::Json::new(json!({})), binary: None, paired_item: Some(PairedItem::from_value(Value::Array(paired))) };
            if outputs.is_empty() {
                outputs.push(Arc::new(vec![item]));
            } else {
                outputs[0] = Arc::new(vec![item]);
            }
        } else if outputs.is_empty() && task.error.is_none() {
            // The node returned nothing (n8n's `null`): no run data, the branch ends.
            st.last_node_executed = previous_last;
            return Step::Skipped;
        }
        task.execution_time = t0.elapsed().as_millis() as u64;
        task.data = Some(TaskOutputs::new(outputs.iter().cloned()));
        st.run_data.entry(node.name.clone()).or_default().push(task);
        Step::Continue(outputs.into_iter().enumerate().map(|(o, items)| (o, items, run_index)).collect())
    }

    /// Adds the children that got data to the stack (or to `waiting` when
    /// they have several inputs), as n8n's executor does: v1 runs the
    /// top-left child first, depth first; the legacy order runs breadth first
    /// and also hands empty outputs to second and later inputs.
    fn enqueue(&self, graph: &Graph, st: &mut ExecutionState, node: &Node, outs: Vec<(usize, Items, usize)>, allowed: Option<&HashSet<String>>) {
        let order = graph.workflow.settings.execution_order;
        let mut adds = vec![];
        for (o, items, run) in outs {
            for t in graph.children(&node.name, o) {
                if items.is_empty() && !(t.index > 0 && order == ExecutionOrder::V0) {
                    continue;
                }
                if allowed.is_some_and(|a| !a.contains(&t.node)) {
                    continue;
                }
                adds.push((t.clone(), o, items.clone(), run));
            }
        }
        if order == ExecutionOrder::V1 {
            // n8n sorts bottom-right first and unshifts each, so the top-left
            // child ends up first on the stack.
            adds.sort_by(|a, b| {
                let pa = graph.node(&a.0.node).map(|n| n.pos()).unwrap_or_default();
                let pb = graph.node(&b.0.node).map(|n| n.pos()).unwrap_or_default();
                pb.1.total_cmp(&pa.1).then(pb.0.total_cmp(&pa.0))
            });
        }
        for (t, o, items, run) in adds {
            let d = stack::Delivery { parent: &node.name, output: o, run, target: &t.node, index: t.index, items };
            stack::add_node_to_be_executed(graph, st, d);
        }
    }
}

/// Could any expression or script read another node's run data?
fn looks_back(graph: &Graph) -> bool {
    graph.nodes().iter().any(|n| {
        let s = n.parameters.to_string();
        ["$(", "$node", "$items", "pairedItem", ".item", "$prevNode"].iter().any(|m| s.contains(m))
            && !matches!(n.node_type.as_str(), "n8n-nodes-base.stickyNote")
    })
}

/// Lean run data: drop the items of `node`'s last run once they are handed on.
fn release(graph: &Graph, st: &mut ExecutionState, node: &str) {
    if !graph.has_children(node) {
        return;
    }
    if let Some(task) = st.run_data.get_mut(node).and_then(|r| r.last_mut()) {
        if let Some(data) = task.data.take() {
            task.released_items = Some(data.main.iter().map(|o| o.as_ref().map(OutputItems::len).unwrap_or(0)).collect());
        }
    }
}

enum Step {
    Continue(Vec<(usize, Items, usize)>),
    Skipped,
    Parked,
    Failed(NodeError),
    Canceled,
}

/// Number of regular main outputs a node has (If/Switch/SplitInBatches have more).
fn main_output_count(node: &Node) -> usize {
    let short = node.node_type.rsplit('.').next().unwrap_or("");
    match short {
        "if" | "splitInBatches" | "filter" => 2,
        "switch" => {
            let rules = node.parameters.pointer("/rules/values").and_then(|v| v.as_array()).map(|a| a.len()).unwrap_or(0);
            rules.max(1)
        }
        "respondToWebhook" if crate::nodes::respond::has_response_output(node) => 2,
        _ => 1,
    }
}

/// n8n's error output (`continueErrorOutput`, its `handleNodeErrorOutput`):
/// items of the regular outputs that carry only an error (`{error}`, or
/// `{error, message}`) move to the error output (the last), merged over the
/// json of the input item they pair with.
fn split_error_output(node: &Node, outputs: Vec<Items>, inputs: &[Option<Items>]) -> Vec<Items> {
    let n = main_output_count(node);
    let mut outputs = outputs;
    outputs.resize_with(n, Items::default);
    let is_error = |j: &Value| {
        let Value::Object(o) = j else { return false };
        let truthy = o.get("error").is_some_and(|e| match e {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(x) => x.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
            Value::String(s) => !s.is_empty(),
            _ => true,
        });
        truthy && (o.len() == 1 || (o.len() == 2 && o.get("message").is_some_and(|m| !m.is_null())))
    };
    let mut errors = vec![];
    for out in outputs.iter_mut() {
        if !out.iter().any(|it| is_error(&it.json)) {
            continue;
        }
        let mut ok = vec![];
        for it in out.iter() {
            if !is_error(&it.json) {
                ok.push(it.clone());
                continue;
            }
            let paired = it.paired_item.as_ref().map(|p| p.target());
            let source = paired.and_then(|(item, input)| inputs.get(input).and_then(|i| i.as_ref()).and_then(|i| i.get(item)));
            match source {
                Some(src) => {
                    let mut j = src.json.object_with_room(2);
                    if let (Value::Object(m), Value::Object(e)) = (&mut j, &*it.json) {
                        for (k, v) in e {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                    errors.push(Item { json: j.into(), binary: it.binary.clone(), paired_item: it.paired_item.clone() });
                }
                None => errors.push(it.clone()),
            }
        }
        *out = Arc::new(ok);
    }
    outputs.push(Arc::new(errors));
    outputs
}

/// n8n points every input item at its own place before a node runs
/// (`pairedItem: {item: i, input: k}`), so items a node hands back unchanged
/// (No Operation, Sort, Limit, Code returning its input) pair with its
/// input, not with what their previous node paired them with. The run data
/// keeps the previous node's items as they were (paired-item lookups walk
/// those); only a node's own copy changes, and only when a pairing differs.
fn repair_inputs(inputs: &mut [Option<Items>]) {
    for (k, slot) in inputs.iter_mut().enumerate() {
        let Some(items) = slot else { continue };
        if items.iter().enumerate().all(|(i, it)| it.paired_item.as_ref() == Some(&PairedItem::new(i, k))) {
            continue;
        }
        let mut own = Arc::unwrap_or_clone(std::mem::take(items));
        for (i, it) in own.iter_mut().enumerate() {
            it.paired_item = Some(PairedItem::new(i, k));
        }
        *items = Arc::new(own);
    }
}

/// Sleeps up to `d`, waking early on cancel/deadline. Returns true if canceled.
pub(crate) fn sleep_cancellable(d: Duration, env: &Env) -> bool {
    if env.settings.clock.is_some() {
        // fake timers: the frozen clock moves on instead
        env.settings.clock_advanced.0.fetch_add(d.as_millis() as i64, Ordering::SeqCst);
        return env.cancel.is_canceled();
    }
    let end = Instant::now() + d;
    loop {
        if env.cancel.is_canceled() || env.deadline.is_some_and(|x| Instant::now() >= x) {
            return true;
        }
        let now = Instant::now();
        if now >= end {
            return false;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

/// Run-data form of an engine error.
pub fn error_data(e: &EngineError, node: Option<&str>) -> NodeError {
    let (description, http_code, name) = match e {
        EngineError::Node { description, http_code, .. } => (
            description.clone(),
            http_code.clone(),
            if http_code.is_some() { "NodeApiError" } else { "NodeOperationError" },
        ),
        EngineError::Expression(_) => (None, None, "ExpressionError"),
        _ => (None, None, "NodeOperationError"),
    };
    NodeError {
        message: e.to_string(),
        description,
        name: name.into(),
        node: node.map(str::to_string),
        http_code,
        timestamp: now_ms(),
    }
}

/// `{json: {...}}` objects for tests and hosts.
pub fn items_from_json(v: &[Value]) -> Vec<Item> {
    v.iter().map(|j| Item::new(j.clone())).collect()
}
