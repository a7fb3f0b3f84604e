//! Progress of a running execution, stored as it goes, so a reader sees
//! `running` with the nodes executed so far and their output.
//!
//! The engine's hook runs on the engine thread and only hands off: the
//! first call sends a copy of the state (a resumed or partial run starts
//! with run data), later calls send the one node run that just finished
//! (items are shared `Arc`s, so this is cheap and a long loop stays linear).
//! A writer task on the runtime folds them into its own copy and stores the
//! document at most once per interval: the first write goes at once, later
//! ones when the interval has passed since the previous write, the latest
//! state only. The engine never waits on DynamoDB.
//!
//! The final document is not the writer's: the executor stops the writer
//! (waiting for a write in flight) before it writes the end state, so a late
//! progress write can never replace it.

use crate::document::{self, StartData};
use crate::host::Secrets;
use engine::{ExecutionState, ProgressHook, TaskData};
use serde_json::Value;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// What the hook sends.
enum Update {
    Full(Box<ExecutionState>),
    /// The last run of `node`, at `run_index`, with the runs of the
    /// sub-nodes it called during that run (an AI Agent's model and tool
    /// calls: `(sub-node, run index, run)`) and the execution's token count.
    Node {
        node: String,
        run_index: usize,
        task: Box<TaskData>,
        sub_runs: Vec<(String, usize, TaskData)>,
        token_usage: engine::data::TokenUsage,
    },
}

/// The runs sub-nodes recorded for `node`'s run `run_index`: each sub-node's
/// trailing runs whose source is that run (a root's calls are appended
/// after everything before them).
fn sub_runs_of(st: &ExecutionState, node: &str, run_index: usize) -> Vec<(String, usize, TaskData)> {
    let mut out = vec![];
    for (name, runs) in &st.run_data {
        let called = |t: &TaskData| {
            t.input_override.is_some()
                && t.source.first().and_then(|s| s.as_ref()).is_some_and(|s| s.previous_node == node && s.previous_node_run == run_index)
        };
        let n = runs.iter().rev().take_while(|t| called(t)).count();
        out.extend(runs.iter().enumerate().skip(runs.len() - n).map(|(i, t)| (name.clone(), i, t.clone())));
    }
    out
}

/// Folds an update into the writer's copy. The copy packs what it takes
/// (serialized JSON) and keeps no stack: holding the run's shared items would
/// keep the engine from packing or freeing them.
fn apply(state: &mut Option<ExecutionState>, update: Update) {
    match update {
        Update::Full(mut st) => {
            st.run_data.values_mut().flatten().for_each(TaskData::pack_outputs);
            st.stack.clear();
            st.waiting.clear();
            *state = Some(*st)
        }
        Update::Node {
            node,
            run_index,
            mut task,
            sub_runs,
            token_usage,
        } => {
            task.pack_outputs();
            let Some(st) = state.as_mut() else { return };
            for (name, i, mut sub) in sub_runs.into_iter().chain(std::iter::once((node.clone(), run_index, *task))) {
                sub.pack_outputs();
                let runs = st.run_data.entry(name).or_default();
                match runs.get_mut(i) {
                    Some(slot) => *slot = sub,
                    None => runs.push(sub),
                }
            }
            st.token_usage = token_usage;
            st.last_node_executed = Some(node);
        }
    }
}

/// At most one write per `every`; the first may go at once.
#[derive(Debug, Clone)]
pub(crate) struct Throttle {
    every: Duration,
    last: Option<Instant>,
}

impl Throttle {
    pub fn new(every: Duration) -> Self {
        Throttle { every, last: None }
    }

    /// The earliest time the next write may start.
    pub fn next_at(&self, now: Instant) -> Instant {
        match self.last {
            Some(last) => (last + self.every).max(now),
            None => now,
        }
    }

    pub fn ready(&self, now: Instant) -> bool {
        self.next_at(now) <= now
    }

    pub fn wrote(&mut self, at: Instant) {
        self.last = Some(at);
    }
}

/// Where snapshots go (the store; a recorder in tests).
pub(crate) trait Sink: Send + 'static {
    fn save(&mut self, state: &ExecutionState) -> impl Future<Output = ()> + Send;
}

/// Stores the execution document of a running execution.
pub(crate) struct StoreSink {
    pub executions: store::data::Executions,
    pub id: String,
    pub workflow: Value,
    pub start: StartData,
    /// `parentExecution` of a sub-execution's document.
    pub parent: Option<Value>,
    pub secrets: Secrets,
}

impl Sink for StoreSink {
    async fn save(&mut self, state: &ExecutionState) {
        // Progress is best effort: a failed write is logged, the run goes on
        // and the final write still comes.
        let mut doc = match document::after_run(&self.workflow, &self.start, state, None, false) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(executionId = %self.id, error = %e, "progress not stored");
                return;
            }
        };
        if let Some(p) = &self.parent {
            doc["parentExecution"] = p.clone();
        }
        self.secrets.scrub(&mut doc);
        if let Err(e) = self.executions.save_data(&self.id, &doc).await {
            tracing::warn!(executionId = %self.id, error = %e, "progress not stored");
        }
    }
}

/// The writer task of one run.
pub(crate) struct ProgressWriter {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<u32>,
}

impl ProgressWriter {
    /// Stops writing (what is pending is dropped: the caller writes the
    /// final state) and waits for a write in flight. Returns how many
    /// progress writes were made.
    pub async fn stop(mut self) -> u32 {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.await.unwrap_or(0)
    }
}

/// The engine hook and the writer task behind it.
pub(crate) fn start(handle: &Handle, sink: impl Sink, every: Duration) -> (ProgressHook, ProgressWriter) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = oneshot::channel();
    let first = AtomicBool::new(true);
    let hook = ProgressHook::new(move |st: &ExecutionState| {
        let update = if first.swap(false, Ordering::Relaxed) {
            Update::Full(Box::new(st.clone()))
        } else {
            let Some(node) = st.last_node_executed.clone() else { return };
            let Some(runs) = st.run_data.get(&node) else { return };
            let Some(task) = runs.last() else { return };
            let run_index = runs.len() - 1;
            Update::Node {
                run_index,
                task: Box::new(task.clone()),
                sub_runs: sub_runs_of(st, &node, run_index),
                token_usage: st.token_usage,
                node,
            }
        };
        // Fails only once the writer stopped: then nothing is wanted.
        let _ = tx.send(update);
    });
    let task = handle.spawn(write_loop(sink, every, rx, stop_rx));
    (
        hook,
        ProgressWriter {
            stop: Some(stop_tx),
            task,
        },
    )
}

async fn write_loop(
    mut sink: impl Sink,
    every: Duration,
    mut rx: mpsc::UnboundedReceiver<Update>,
    mut stop: oneshot::Receiver<()>,
) -> u32 {
    let mut state: Option<ExecutionState> = None;
    let mut throttle = Throttle::new(every);
    let mut pending = false;
    let mut writes = 0;
    loop {
        let due = throttle.next_at(Instant::now());
        let update = tokio::select! {
            // A dropped writer handle counts as a stop too.
            _ = &mut stop => break,
            u = rx.recv() => match u {
                Some(u) => Some(u),
                // The engine is done; the final write is the executor's.
                None => break,
            },
            _ = tokio::time::sleep_until(due.into()), if pending => None,
        };
        if let Some(u) = update {
            apply(&mut state, u);
            // Whatever else queued up meanwhile: one write covers it all.
            while let Ok(u) = rx.try_recv() {
                apply(&mut state, u);
            }
            pending = true;
        }
        let now = Instant::now();
        if pending && throttle.ready(now) {
            if let Some(st) = &state {
                sink.save(st).await;
                writes += 1;
            }
            throttle.wrote(now);
            pending = false;
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn the_throttle_lets_the_first_write_go_and_spaces_the_rest() {
        let t0 = Instant::now();
        let every = Duration::from_millis(500);
        let mut t = Throttle::new(every);
        assert!(t.ready(t0), "the first write goes at once");
        t.wrote(t0);
        assert!(!t.ready(t0 + Duration::from_millis(10)));
        assert_eq!(t.next_at(t0 + Duration::from_millis(10)), t0 + every);
        assert!(t.ready(t0 + every));
        // Long after the last write, the next one goes at once.
        let later = t0 + Duration::from_secs(10);
        assert_eq!(t.next_at(later), later);
    }

    /// Records `(last node, runs of Loop)` of every save.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<(String, usize)>>>);

    impl Sink for Recorder {
        async fn save(&mut self, st: &ExecutionState) {
            let last = st.last_node_executed.clone().unwrap_or_default();
            let loops = st.run_data.get("Loop").map(Vec::len).unwrap_or(0);
            self.0.lock().unwrap().push((last, loops));
            // A write takes a while; updates queue up meanwhile.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn task() -> TaskData {
        serde_json::from_value(serde_json::json!({"startTime": 0, "executionTime": 0, "executionStatus": "success", "source": []})).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_thousand_node_runs_make_a_few_writes_and_the_last_state_is_written() {
        let every = Duration::from_millis(100);
        let saves = Recorder::default();
        let (hook, writer) = start(&Handle::current(), saves.clone(), every);
        let began = Instant::now();
        // The engine's side: 1000 runs of one node, ~1 ms apart, on a thread of its own.
        let engine = std::thread::spawn(move || {
            let mut st = ExecutionState::new("e".into());
            for _ in 0..1000 {
                st.run_data.entry("Loop".into()).or_default().push(task());
                st.last_node_executed = Some("Loop".into());
                hook.notify(&st);
                std::thread::sleep(Duration::from_micros(1000));
            }
            st.run_data.entry("Done".into()).or_default().push(task());
            st.last_node_executed = Some("Done".into());
            hook.notify(&st);
            // The hook stays alive (as while an engine still runs) until the test stops the writer.
            hook
        });
        let hook = tokio::task::spawn_blocking(move || engine.join().unwrap()).await.unwrap();
        let elapsed = began.elapsed();
        // The trailing write of what came last.
        tokio::time::sleep(every * 3).await;
        let writes = writer.stop().await;
        drop(hook);
        let saved = saves.0.lock().unwrap().clone();
        assert_eq!(writes as usize, saved.len());
        let bound = (elapsed.as_millis() / every.as_millis()) as usize + 2;
        assert!(saved.len() <= bound, "{} writes in {elapsed:?} (at most {bound})", saved.len());
        assert!(saved.len() >= 2, "{saved:?}");
        assert_eq!(saved.first().map(|s| s.1), Some(1), "the first node run is written at once");
        assert_eq!(saved.last(), Some(&("Done".to_owned(), 1000)), "the last state is written");
    }

    #[tokio::test]
    async fn stopping_drops_what_is_pending() {
        let saves = Recorder::default();
        let (hook, writer) = start(&Handle::current(), saves.clone(), Duration::from_secs(60));
        let mut st = ExecutionState::new("e".into());
        for node in ["A", "B"] {
            st.run_data.entry(node.into()).or_default().push(task());
            st.last_node_executed = Some(node.into());
            hook.notify(&st);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(writer.stop().await, 1);
        // A: written at once; B waits for an interval that never came.
        assert_eq!(saves.0.lock().unwrap().iter().map(|s| s.0.clone()).collect::<Vec<_>>(), ["A"]);
        // The engine's later calls go nowhere, harmlessly.
        hook.notify(&st);
    }

    /// An AI root's run brings the runs of the sub-nodes it called (each
    /// model and tool call) and the token count along.
    #[test]
    fn a_roots_update_carries_its_sub_node_calls() {
        let call = |root_run: usize| -> TaskData {
            serde_json::from_value(serde_json::json!({"startTime": 0, "executionTime": 0, "executionStatus": "success",
                "source": [{"previousNode": "Agent", "previousNodeRun": root_run}], "inputOverride": {"ai_languageModel": [[{"json": {}}]]},
                "data": {"ai_languageModel": [[{"json": {"response": root_run}}]]}}))
            .unwrap()
        };
        let mut st = ExecutionState::new("e".into());
        st.run_data.insert("Model".into(), vec![call(0), call(1), call(1)]);
        st.run_data.insert("Agent".into(), vec![task(), task()]);
        let subs = sub_runs_of(&st, "Agent", 1);
        assert_eq!(subs.iter().map(|(n, i, _)| (n.as_str(), *i)).collect::<Vec<_>>(), [("Model", 1), ("Model", 2)], "only the calls of run 1");
        let mut copy = None;
        apply(&mut copy, Update::Full(Box::new(ExecutionState::new("e".into()))));
        // as the hook sees it right after the Agent's first run
        let mut first = ExecutionState::new("e".into());
        first.run_data.insert("Model".into(), vec![call(0)]);
        first.run_data.insert("Agent".into(), vec![task()]);
        first.token_usage.total_tokens = 9;
        apply(&mut copy, Update::Node { node: "Agent".into(), run_index: 0, task: Box::new(task()), sub_runs: sub_runs_of(&first, "Agent", 0), token_usage: first.token_usage });
        let copy = copy.unwrap();
        assert_eq!(copy.run_data["Model"].len(), 1);
        assert_eq!(copy.token_usage.total_tokens, 9);
    }

    /// The writer's copy lets go of the run's items (else the engine could
    /// neither pack nor free them) and still stores the same output.
    #[test]
    fn the_writers_copy_holds_text_not_the_runs_items() {
        let items: engine::Items = Arc::new(engine::run::items_from_json(&[serde_json::json!({"n": 1}), serde_json::json!({"n": 2})]));
        let mut run = task();
        run.data = Some(engine::data::TaskOutputs::new([items.clone()]));
        let mut st = ExecutionState::new("e".into());
        st.run_data.insert("A".into(), vec![run.clone()]);
        let mut copy = None;
        apply(&mut copy, Update::Full(Box::new(st.clone())));
        apply(&mut copy, Update::Node { node: "B".into(), run_index: 0, task: Box::new(run), sub_runs: vec![], token_usage: Default::default() });
        drop(st);
        assert_eq!(Arc::strong_count(&items), 1, "only the test holds the items now");
        let copy = copy.unwrap();
        for node in ["A", "B"] {
            let out = copy.node_output(node, 0).unwrap();
            assert_eq!(out.iter().map(|i| i.json["n"].clone()).collect::<Vec<_>>(), [1, 2], "{node}");
        }
    }
}
