//! The build → verify → patch loop of one work item as a state machine:
//! `report-verification-verdict` feeds it a verdict, it moves the work item
//! and answers the next action. The transitions are the table [`TABLE`];
//! a failure signature seen before escalates the verdict (patch → rebuild
//! → ask the user → stop) so the agent never loops on one failure.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopState {
    /// Built, not verified yet (every build starts here).
    Built,
    /// A patch is due, then verification again.
    Patching,
    /// The workflow is to be rebuilt from its source, then verified.
    Rebuilding,
    /// Verified by evidence; publishing needs no acknowledgement.
    Verified,
    /// Only the trigger could not be exercised; the rest passed.
    TriggerOnly,
    /// Waiting for the user (a credential, a decision, input data).
    AwaitingUser,
    /// Stopped: the loop gives up on this work item until it is rebuilt.
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Verified,
    NeedsPatch,
    NeedsRebuild,
    TriggerOnly,
    NeedsUserInput,
    FailedTerminal,
}

/// What the machine reads: the verdict, and for `verified` whether the
/// stored claim backs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Input {
    /// `verified`, and the stored claim is `verified`.
    Confirmed,
    /// `verified`, but the stored claim is not (pending triggers, nodes
    /// without coverage, a failed last run).
    Unconfirmed,
    NeedsPatch,
    NeedsRebuild,
    TriggerOnly,
    NeedsUserInput,
    FailedTerminal,
}

pub const STATES: [LoopState; 7] =
    [LoopState::Built, LoopState::Patching, LoopState::Rebuilding, LoopState::Verified, LoopState::TriggerOnly, LoopState::AwaitingUser, LoopState::Stopped];
pub const INPUTS: [Input; 7] =
    [Input::Confirmed, Input::Unconfirmed, Input::NeedsPatch, Input::NeedsRebuild, Input::TriggerOnly, Input::NeedsUserInput, Input::FailedTerminal];

/// Guidance texts (the next action), one per outcome.
const G_VERIFIED: &str = "Verified. You may publish when the user wants it live (no acknowledgement needed); tell the user what was verified and which nodes were simulated.";
const G_UNCONFIRMED: &str = "Not verified yet: the stored verification does not back a `verified` claim (see its evidence: pending triggers or nodes without coverage). Run verify-built-workflow for each pending trigger with input that reaches the uncovered nodes, or report `trigger_only` / `needs_user_input`.";
const G_PATCH: &str = "Patch the workflow source in the workspace (workspace_edit_file), build it again with build-workflow (same workItemId), then run verify-built-workflow again.";
const G_REBUILD: &str = "Rebuild: rewrite the workflow source from the requirements (the last patch did not fix it), build it with build-workflow (same workItemId), then verify again.";
const G_TRIGGER_ONLY: &str = "Everything after the trigger passed, but the trigger itself could not be exercised. Tell the user; publishing needs acknowledgeUnverified: true and the user's approval.";
const G_USER: &str = "Ask the user (ask-user) for what is missing — credentials (then apply-workflow-credentials), input data or a decision — and stop the loop until they answer.";
const G_STOP: &str = "Stop: do not retry. Tell the user what failed (the diagnosis) and that the workflow is not verified; publishing it needs acknowledgeUnverified: true.";
const G_STOPPED: &str = "This work item is stopped; do not retry it. Tell the user what failed. A new build (build-workflow) restarts the loop.";

/// One transition: in `from` (`None`: any state but `Stopped`), `input`
/// leads to `to` with `guidance`.
pub struct Row {
    pub from: Option<LoopState>,
    pub input: Input,
    pub to: LoopState,
    pub guidance: &'static str,
}

const fn row(from: Option<LoopState>, input: Input, to: LoopState, guidance: &'static str) -> Row {
    Row { from, input, to, guidance }
}

/// The machine. `Stopped` absorbs every input; elsewhere the input decides,
/// except that an unconfirmed `verified` leaves the state as it is (one row
/// per state).
pub const TABLE: &[Row] = &[
    row(Some(LoopState::Stopped), Input::Confirmed, LoopState::Stopped, G_STOPPED),
    row(Some(LoopState::Stopped), Input::Unconfirmed, LoopState::Stopped, G_STOPPED),
    row(Some(LoopState::Stopped), Input::NeedsPatch, LoopState::Stopped, G_STOPPED),
    row(Some(LoopState::Stopped), Input::NeedsRebuild, LoopState::Stopped, G_STOPPED),
    row(Some(LoopState::Stopped), Input::TriggerOnly, LoopState::Stopped, G_STOPPED),
    row(Some(LoopState::Stopped), Input::NeedsUserInput, LoopState::Stopped, G_STOPPED),
    row(Some(LoopState::Stopped), Input::FailedTerminal, LoopState::Stopped, G_STOPPED),
    row(None, Input::Confirmed, LoopState::Verified, G_VERIFIED),
    row(Some(LoopState::Built), Input::Unconfirmed, LoopState::Built, G_UNCONFIRMED),
    row(Some(LoopState::Patching), Input::Unconfirmed, LoopState::Patching, G_UNCONFIRMED),
    row(Some(LoopState::Rebuilding), Input::Unconfirmed, LoopState::Rebuilding, G_UNCONFIRMED),
    row(Some(LoopState::Verified), Input::Unconfirmed, LoopState::Verified, G_UNCONFIRMED),
    row(Some(LoopState::TriggerOnly), Input::Unconfirmed, LoopState::TriggerOnly, G_UNCONFIRMED),
    row(Some(LoopState::AwaitingUser), Input::Unconfirmed, LoopState::AwaitingUser, G_UNCONFIRMED),
    row(None, Input::NeedsPatch, LoopState::Patching, G_PATCH),
    row(None, Input::NeedsRebuild, LoopState::Rebuilding, G_REBUILD),
    row(None, Input::TriggerOnly, LoopState::TriggerOnly, G_TRIGGER_ONLY),
    row(None, Input::NeedsUserInput, LoopState::AwaitingUser, G_USER),
    row(None, Input::FailedTerminal, LoopState::Stopped, G_STOP),
];

/// The row for `(state, input)`: the state's own row first, else the
/// any-state row (never for `Stopped`).
pub fn lookup(state: LoopState, input: Input) -> &'static Row {
    TABLE
        .iter()
        .find(|r| r.from == Some(state) && r.input == input)
        .or_else(|| TABLE.iter().find(|r| r.from.is_none() && r.input == input && state != LoopState::Stopped))
        .expect("the table covers every (state, input); see tests")
}

/// A verdict after escalation: `repeats` is how often the same failure
/// signature was reported before. Once more → rebuild instead of patch;
/// twice more → ask the user; three times or more → stop.
pub fn escalate(verdict: Verdict, repeats: u32) -> Verdict {
    use Verdict::*;
    match (verdict, repeats) {
        (v, 0) => v,
        (NeedsPatch, 1) => NeedsRebuild,
        (NeedsRebuild, 1) => NeedsUserInput,
        (NeedsPatch | NeedsRebuild, 2) => NeedsUserInput,
        (NeedsUserInput, 1 | 2) => NeedsUserInput,
        (NeedsPatch | NeedsRebuild | NeedsUserInput, _) => FailedTerminal,
        (v, _) => v,
    }
}

pub fn input_of(verdict: Verdict, claim_verified: bool) -> Input {
    match verdict {
        Verdict::Verified if claim_verified => Input::Confirmed,
        Verdict::Verified => Input::Unconfirmed,
        Verdict::NeedsPatch => Input::NeedsPatch,
        Verdict::NeedsRebuild => Input::NeedsRebuild,
        Verdict::TriggerOnly => Input::TriggerOnly,
        Verdict::NeedsUserInput => Input::NeedsUserInput,
        Verdict::FailedTerminal => Input::FailedTerminal,
    }
}

/// One step: the verdict (escalated by `repeats`) in `state`.
pub fn step(state: LoopState, verdict: Verdict, repeats: u32, claim_verified: bool) -> (LoopState, Verdict, &'static str) {
    let effective = escalate(verdict, repeats);
    let row = lookup(state, input_of(effective, claim_verified));
    (row.to, effective, row.guidance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_and_input_has_exactly_one_row() {
        for s in STATES {
            for i in INPUTS {
                let own = TABLE.iter().filter(|r| r.from == Some(s) && r.input == i).count();
                let any = TABLE.iter().filter(|r| r.from.is_none() && r.input == i).count();
                assert!(own <= 1 && any <= 1, "{s:?} {i:?}: duplicate rows");
                assert!(own == 1 || (any == 1 && s != LoopState::Stopped), "{s:?} {i:?}: no row");
            }
        }
    }

    /// The whole table, written out: each state × input → next state.
    #[test]
    fn the_transitions_are_the_expected_ones() {
        use Input as I;
        use LoopState as L;
        for s in STATES {
            for i in INPUTS {
                let want = match (s, i) {
                    (L::Stopped, _) => L::Stopped,
                    (_, I::Confirmed) => L::Verified,
                    (s, I::Unconfirmed) => s,
                    (_, I::NeedsPatch) => L::Patching,
                    (_, I::NeedsRebuild) => L::Rebuilding,
                    (_, I::TriggerOnly) => L::TriggerOnly,
                    (_, I::NeedsUserInput) => L::AwaitingUser,
                    (_, I::FailedTerminal) => L::Stopped,
                };
                assert_eq!(lookup(s, i).to, want, "{s:?} {i:?}");
                assert!(!lookup(s, i).guidance.is_empty());
            }
        }
        assert_eq!(lookup(L::Stopped, I::Confirmed).guidance, G_STOPPED);
        assert_eq!(lookup(L::Patching, I::Unconfirmed).guidance, G_UNCONFIRMED);
    }

    #[test]
    fn repeated_failure_signatures_escalate_instead_of_looping() {
        use Verdict::*;
        assert_eq!([0, 1, 2, 3, 9].map(|r| escalate(NeedsPatch, r)), [NeedsPatch, NeedsRebuild, NeedsUserInput, FailedTerminal, FailedTerminal]);
        assert_eq!([0, 1, 2, 3].map(|r| escalate(NeedsRebuild, r)), [NeedsRebuild, NeedsUserInput, NeedsUserInput, FailedTerminal]);
        assert_eq!([0, 1, 2, 3].map(|r| escalate(NeedsUserInput, r)), [NeedsUserInput, NeedsUserInput, NeedsUserInput, FailedTerminal]);
        for v in [Verified, TriggerOnly, FailedTerminal] {
            assert_eq!(escalate(v, 5), v);
        }
        // The loop a model would fall into: the same signature reported as needs_patch again and again.
        let mut state = LoopState::Built;
        let mut seen = Vec::new();
        for repeats in 0..5 {
            let (next, _, _) = step(state, NeedsPatch, repeats, false);
            seen.push(next);
            state = next;
        }
        assert_eq!(seen, [LoopState::Patching, LoopState::Rebuilding, LoopState::AwaitingUser, LoopState::Stopped, LoopState::Stopped]);
    }

    #[test]
    fn verified_needs_the_stored_claim() {
        assert_eq!(step(LoopState::Built, Verdict::Verified, 0, false).0, LoopState::Built);
        assert_eq!(step(LoopState::Patching, Verdict::Verified, 0, true).0, LoopState::Verified);
    }
}
