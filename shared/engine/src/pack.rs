//! Packing consumed run data (`EngineSettings::pack_run_data_from`): once a
//! node run's children have taken its outputs, only run data holds them, and
//! they can live as serialized JSON until someone reads them. Packing pays
//! only when it frees the values: an output that shares its values with
//! others (If, Merge, Sort pass items through) waits until every holder of
//! those values can be packed too, and one whose values a leaf keeps is left.

use std::sync::Arc;

use expression::Json;
// The keys are value addresses, not outside input: a plain multiplicative
// hash does, where SipHash cost about 3% of a 100k-item run.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::data::{ExecutionState, OutputItems, StackEntry};
use crate::workflow::Graph;

/// A node run: (node, run index).
type RunRef = (String, usize);

/// Shared runs kept waiting for their group to close. Each new one re-counts
/// the holders of all of them; a loop that keeps adding runs whose values a
/// leaf keeps would make that quadratic, so the oldest are given up on.
const MAX_SHARED: usize = 32;

pub(crate) struct Packer {
    min_items: usize,
    /// Runs whose outputs children may still be holding.
    in_use: Vec<RunRef>,
    /// Runs only run data holds, whose values other runs share.
    shared: Vec<RunRef>,
}

impl Packer {
    pub(crate) fn new(min_items: usize) -> Self {
        Packer { min_items, in_use: vec![], shared: vec![] }
    }

    /// Called after each node run.
    pub(crate) fn node_finished(&mut self, graph: &Graph, st: &mut ExecutionState, node: &str) {
        if let Some(run) = st.run_data.get(node).and_then(|r| r.len().checked_sub(1)) {
            let run = (node.to_string(), run);
            // Leaves keep their items: they are the run's result.
            if graph.has_children(node) && outputs(st, &run).map(OutputItems::len).sum::<usize>() >= self.min_items {
                self.in_use.push(run);
            }
        }
        let mut newly_shared = false;
        let mut i = 0;
        while i < self.in_use.len() {
            let run = &self.in_use[i];
            if outputs(st, run).any(|o| o.unpacked().is_some_and(|v| Arc::strong_count(v) > 1)) {
                i += 1; // a child has not taken it yet
                continue;
            }
            let run = self.in_use.swap_remove(i);
            if outputs(st, &run).flat_map(items).all(|it| Json::holders(&it.json) == 1) {
                pack(st, &run);
            } else {
                self.shared.push(run);
                newly_shared = true;
            }
        }
        if newly_shared {
            if self.shared.len() > MAX_SHARED {
                let excess = self.shared.len() - MAX_SHARED;
                self.shared.drain(..excess);
            }
            self.pack_closed_groups(st);
        }
    }

    /// Called before `entry` runs a node that changes its input items in
    /// place when it alone holds them (see [`changes_input_in_place`]): the
    /// runs holding those items are packed first, so the node changes the
    /// values instead of copying each one, and run data keeps their text
    /// rather than a second copy. The node replaces the values, so these are
    /// runs the packer would pack after it anyway, unless another branch
    /// carries the same values on to a leaf (then one text is spent for nothing).
    pub(crate) fn before_in_place(&mut self, st: &mut ExecutionState, entry: &StackEntry) {
        if entry.inputs.iter().flatten().map(|v| v.len()).sum::<usize>() < self.min_items {
            return;
        }
        let mut wanted = HashSet::with_capacity_and_hasher(entry.inputs.iter().flatten().map(|v| v.len()).sum(), Default::default());
        wanted.extend(entry.inputs.iter().flatten().flat_map(|v| v.iter()).map(|it| Json::addr(&it.json)));
        let holds = |st: &ExecutionState, run: &RunRef| outputs(st, run).flat_map(items).any(|it| wanted.contains(&Json::addr(&it.json)));
        for list in [&mut self.in_use, &mut self.shared] {
            let (hit, keep): (Vec<RunRef>, Vec<RunRef>) = std::mem::take(list).into_iter().partition(|r| holds(st, r));
            *list = keep;
            for run in &hit {
                pack(st, run);
            }
        }
    }

    /// Packs the shared runs whose every value is held only by shared runs:
    /// packing them together frees those values.
    fn pack_closed_groups(&mut self, st: &mut ExecutionState) {
        let mut held: HashMap<usize, usize> = HashMap::default();
        for run in &self.shared {
            for it in outputs(st, run).flat_map(items) {
                *held.entry(Json::addr(&it.json)).or_default() += 1;
            }
        }
        let closed = |st: &ExecutionState, run: &RunRef| {
            outputs(st, run).flat_map(items).all(|it| held.get(&Json::addr(&it.json)) == Some(&Json::holders(&it.json)))
        };
        let (packable, open): (Vec<RunRef>, Vec<RunRef>) = std::mem::take(&mut self.shared).into_iter().partition(|r| closed(st, r));
        self.shared = open;
        for run in &packable {
            pack(st, run);
        }
    }
}

/// Node types that change their input items in place when they alone hold
/// them (Edit Fields (Set) keeping all fields).
pub(crate) fn changes_input_in_place(node_type: &str) -> bool {
    node_type == "n8n-nodes-base.set"
}

fn outputs<'a>(st: &'a ExecutionState, (node, run): &RunRef) -> impl Iterator<Item = &'a OutputItems> {
    st.run_data.get(node).and_then(|r| r.get(*run)).and_then(|t| t.data.as_ref()).into_iter().flat_map(|d| d.main.iter().flatten())
}

/// The items of an unpacked output (none once packed: nothing to free).
fn items(o: &OutputItems) -> impl Iterator<Item = &expression::Item> {
    o.unpacked().into_iter().flat_map(|v| v.iter())
}

fn pack(st: &mut ExecutionState, (node, run): &RunRef) {
    if let Some(d) = st.run_data.get_mut(node).and_then(|r| r.get_mut(*run)).and_then(|t| t.data.as_mut()) {
        for o in d.main.iter_mut().flatten() {
            o.pack();
        }
    }
}
