//! What a verification run checks besides its status: the parameters of
//! the simulated nodes it reached (replayed, since their output is a
//! fixture and an empty expression leaves no trace) and nodes whose real
//! output is nothing but `{}`.

use crate::executions::ResolvedView;
use engine::{Graph, RunData};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// Entries each list shows across all passes of one build.
pub const MAX_ENTRIES: usize = 20;

/// Expressions that only resolve during a live run: replaying them says nothing.
const LIVE_ONLY: &[&str] = &["$secrets", "$response", "$pageCount", "$request"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Issue {
    Empty,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParameterWarning {
    pub node_name: String,
    pub execution_id: String,
    pub path: String,
    pub raw: String,
    pub issue: Issue,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    ParameterValuesDisabled,
    ReplayFailed,
    ExecutionUnavailable,
}

/// A check that could not be made (no values or error details in it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedCheck {
    pub node_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<String>,
    pub reason: SkipReason,
}

/// What one pass found, before the caps.
#[derive(Debug, Default)]
pub struct Found {
    pub warnings: Vec<ParameterWarning>,
    pub skips: Vec<SkippedCheck>,
}

fn live_only(expr: &str) -> bool {
    LIVE_ONLY.iter().any(|l| expr.contains(l))
}

impl Found {
    pub fn skip(&mut self, node: &str, execution_id: Option<&str>, reason: SkipReason) {
        self.skips.push(SkippedCheck { node_name: node.to_owned(), execution_id: execution_id.map(str::to_owned), reason });
    }

    /// The replay's failed and empty expressions as warnings.
    pub fn warnings_of(&mut self, node: &str, execution_id: &str, r: &ResolvedView) {
        if r.suppressed.is_some() {
            return self.skip(node, Some(execution_id), SkipReason::ParameterValuesDisabled);
        }
        for f in r.failed_expressions.iter().filter(|f| !live_only(&f.expression)) {
            self.warnings.push(ParameterWarning {
                node_name: node.to_owned(),
                execution_id: execution_id.to_owned(),
                path: f.path.clone(),
                raw: f.expression.clone(),
                issue: Issue::Failed,
                detail: Some(f.error.clone()),
            });
        }
        for e in r.empty_resolutions.iter().filter(|e| !live_only(&e.expression)) {
            self.warnings.push(ParameterWarning {
                node_name: node.to_owned(),
                execution_id: execution_id.to_owned(),
                path: e.path.clone(),
                raw: e.expression.clone(),
                issue: Issue::Empty,
                detail: None,
            });
        }
    }

    /// The entries this pass may show given what earlier passes showed,
    /// the total of skipped checks, and the note when entries are omitted.
    pub fn capped(self, shown_warnings: usize, shown_skips: usize) -> (Vec<ParameterWarning>, Vec<SkippedCheck>, usize, Option<String>) {
        let (tw, ts) = (self.warnings.len(), self.skips.len());
        let w: Vec<ParameterWarning> = self.warnings.into_iter().take(MAX_ENTRIES.saturating_sub(shown_warnings)).collect();
        let s: Vec<SkippedCheck> = self.skips.into_iter().take(MAX_ENTRIES.saturating_sub(shown_skips)).collect();
        let mut notes = Vec::new();
        if w.len() < tw {
            notes.push(format!("Showing {} of {tw} parameter warnings (at most {MAX_ENTRIES} per build across passes).", w.len()));
        }
        if ts > 0 {
            let reasons: BTreeSet<&str> = s.iter().map(|c| match c.reason {
                SkipReason::ParameterValuesDisabled => "parameter values are not shared with the assistant",
                SkipReason::ReplayFailed => "the replay failed",
                SkipReason::ExecutionUnavailable => "the execution is unavailable",
            }).collect();
            notes.push(format!(
                "{ts} parameter check(s) of simulated nodes were skipped ({}){}; their dynamic fields remain unverified.",
                reasons.into_iter().collect::<Vec<_>>().join(", "),
                if s.len() < ts { format!(", showing {} of {ts}", s.len()) } else { String::new() }
            ));
        }
        (w, s, ts, (!notes.is_empty()).then(|| notes.join(" ")))
    }
}

/// The first real node of each chain whose output is only `{}` items:
/// triggers and simulated nodes (`skip`), pinned runs and outputs with
/// binary data are not judged; a node below an empty one only passes the
/// emptiness on, so it is not named.
pub fn empty_output_note(graph: &Graph, runs: &RunData, order: &[String], skip: impl Fn(&str) -> bool) -> Option<String> {
    let empty: Vec<&String> = order
        .iter()
        .filter(|n| !skip(n))
        .filter(|n| {
            let Some(task) = runs.get(*n).and_then(|r| r.last()) else { return false };
            if task.origin.is_some() {
                return false;
            }
            let Some(items) = task.output(0) else { return false };
            !items.is_empty() && items.iter().all(|i| i.binary.is_none() && serde_json::to_value(&i.json).ok().is_some_and(|v| v == Value::Object(Default::default())))
        })
        .collect();
    let firsts: Vec<&str> = empty.iter().filter(|n| !graph.ancestors(n).iter().any(|a| empty.contains(&a))).map(|n| n.as_str()).collect();
    (!firsts.is_empty()).then(|| {
        format!(
            "{} returned only empty items ({{}}). Compare its parameters with its typeVersion before you reply: if they do not match, repair the node (even if you did not change it); if they match and you did not build it, leave it and tell the user it outputs no fields. The run still counts as a success.",
            firsts.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(failed: &[(&str, &str)], empty: &[(&str, &str)]) -> ResolvedView {
        ResolvedView {
            node_name: "N".into(),
            run_index: 0,
            item_index: 0,
            parameters: Value::Null,
            resolved: Value::Null,
            failed_expressions: failed.iter().map(|(p, e)| engine::partial::FailedExpression { path: (*p).into(), expression: (*e).into(), error: "boom".into() }).collect(),
            empty_resolutions: empty.iter().map(|(p, e)| engine::partial::EmptyResolution { path: (*p).into(), expression: (*e).into() }).collect(),
            suppressed: None,
        }
    }

    #[test]
    fn live_only_expressions_are_excluded_and_the_caps_hold_across_passes() {
        let mut f = Found::default();
        f.warnings_of("Post", "e1", &resolved(&[("url", "={{ $json.nope.x }}"), ("headers.k", "={{ $secrets.vault.key }}")], &[("body", "={{ $json.missing }}")]));
        assert_eq!(f.warnings.len(), 2);
        assert_eq!((f.warnings[0].issue, f.warnings[1].issue), (Issue::Failed, Issue::Empty));
        for i in 0..30 {
            f.skip(&format!("n{i}"), Some("e1"), SkipReason::ReplayFailed);
        }
        let (w, s, total, note) = f.capped(19, 5);
        assert_eq!((w.len(), s.len(), total), (1, 15, 30));
        let note = note.unwrap();
        assert!(note.contains("Showing 1 of 2") && note.contains("showing 15 of 30") && note.contains("the replay failed"), "{note}");
    }

    #[test]
    fn only_the_first_empty_node_of_a_chain_is_named() {
        let g = Graph::from_json(&serde_json::json!({
            "nodes": [
                {"name": "T", "type": "n8n-nodes-base.manualTrigger"},
                {"name": "A", "type": "n8n-nodes-base.set"},
                {"name": "B", "type": "n8n-nodes-base.noOp"}
            ],
            "connections": {"T": {"main": [[{"node": "A", "type": "main", "index": 0}]]}, "A": {"main": [[{"node": "B", "type": "main", "index": 0}]]}}
        }))
        .unwrap();
        let task = |json: Value| -> engine::data::TaskData {
            serde_json::from_value(serde_json::json!({"startTime": 0, "executionTime": 0, "executionStatus": "success", "data": {"main": [[{"json": json}]]}})).unwrap()
        };
        let mut runs = RunData::new();
        runs.insert("T".into(), vec![task(serde_json::json!({}))]);
        runs.insert("A".into(), vec![task(serde_json::json!({}))]);
        runs.insert("B".into(), vec![task(serde_json::json!({}))]);
        let order = ["T".to_owned(), "A".to_owned(), "B".to_owned()];
        let note = empty_output_note(&g, &runs, &order, |n| n == "T").unwrap();
        assert!(note.starts_with("\"A\" returned only empty items") && !note.contains("\"B\""), "{note}");
        runs.insert("A".into(), vec![task(serde_json::json!({"x": 1}))]);
        assert!(empty_output_note(&g, &runs, &order, |n| n == "T").unwrap().starts_with("\"B\""));
        assert!(empty_output_note(&g, &runs, &order, |n| n == "T" || n == "B").is_none());
        // A file output is not empty: its data is in the binary.
        let file: engine::data::TaskData = serde_json::from_value(serde_json::json!({"startTime": 0, "executionTime": 0, "executionStatus": "success",
            "data": {"main": [[{"json": {}, "binary": {"data": {"data": "aGk=", "mimeType": "text/plain", "fileName": "a.txt"}}}]]}})).unwrap();
        runs.insert("A".into(), vec![file]);
        assert!(empty_output_note(&g, &runs, &order, |n| n == "T").unwrap().starts_with("\"B\""), "A holds a file; B's {{}} is its own");
        // A pinned (simulated) run is fixture data, not judged.
        let mut pinned = task(serde_json::json!({}));
        pinned.origin = Some(engine::data::RunOrigin::Pinned);
        runs.insert("B".into(), vec![pinned]);
        assert!(empty_output_note(&g, &runs, &order, |n| n == "T").is_none());
    }
}
