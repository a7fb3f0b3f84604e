//! Split In Batches / Loop Over Items. v3 outputs `[done, loop]`, earlier
//! versions `[loop, done]`. State lives in the node context between runs.

use serde::{Deserialize, Serialize};

use super::{NodeContext, NodeOutput};
use crate::data::{with_pair, Item};
use crate::error::Result;

#[derive(Serialize, Deserialize, Default)]
struct LoopState {
    items: Vec<Item>,
    processed: Vec<Item>,
    done: bool,
    run: usize,
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let batch = ctx.param_f64("batchSize", 0, 10.0)?.max(1.0) as usize;
    let reset = ctx.param_bool("options.reset", 0, false)?;
    let input = ctx.input(0);
    let stored: Option<LoopState> = if ctx.node_state.is_null() { None } else { serde_json::from_value(ctx.node_state.clone()).ok() };
    let mut st = match stored {
        // A finished loop starts over when data arrives again (nested loops).
        Some(s) if !s.done && !reset => s,
        _ => {
            let mut s = LoopState { items: input.iter().enumerate().map(|(i, it)| with_pair(it, i)).collect(), ..Default::default() };
            let rest = s.items.split_off(batch.min(s.items.len()));
            let first = std::mem::replace(&mut s.items, rest);
            *ctx.node_state = serde_json::to_value(&s)?;
            return Ok(outputs(ctx.version(), vec![], first));
        }
    };
    st.run += 1;
    st.processed.extend(input.iter().cloned());
    let n = batch.min(st.items.len());
    let next: Vec<Item> = st.items.drain(..n).collect();
    if next.is_empty() {
        st.done = true;
        let done = std::mem::take(&mut st.processed);
        *ctx.node_state = serde_json::to_value(&st)?;
        return Ok(outputs(ctx.version(), done, vec![]));
    }
    *ctx.node_state = serde_json::to_value(&st)?;
    Ok(outputs(ctx.version(), vec![], next))
}

fn outputs(version: f64, done: Vec<Item>, looped: Vec<Item>) -> NodeOutput {
    if version >= 3.0 {
        NodeOutput::many(vec![done, looped])
    } else {
        NodeOutput::many(vec![looped, done])
    }
}
