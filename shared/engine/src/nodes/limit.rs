//! Limit: keep the first or last N items (shares the input when nothing is cut).

use std::sync::Arc;

use super::{NodeContext, NodeOutput};
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let max = ctx.param_f64("maxItems", 0, 1.0)?.max(0.0) as usize;
    let last = ctx.param_str("keep", 0, "firstItems")? == "lastItems";
    let Some(input) = ctx.input_arc(0) else { return Ok(NodeOutput::one(vec![])) };
    if input.len() <= max {
        return Ok(NodeOutput::Data(vec![input.clone()]));
    }
    let kept = if last { input[input.len() - max..].to_vec() } else { input[..max].to_vec() };
    Ok(NodeOutput::Data(vec![Arc::new(kept)]))
}
