//! Limit (and Item Lists' Limit): keep the first or last N items (shares the
//! input when nothing is cut).

use std::sync::Arc;

use super::{NodeContext, NodeOutput};
use crate::data::Items;
use crate::error::Result;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    Ok(NodeOutput::Data(vec![limit(ctx)?]))
}

pub fn limit(ctx: &mut NodeContext<'_>) -> Result<Items> {
    let max = ctx.param_f64("maxItems", 0, 1.0)?;
    let last = ctx.param_str("keep", 0, "firstItems")? != "firstItems";
    let input = ctx.input_arc(0).unwrap_or_default();
    let len = input.len() as f64;
    if max > len || max.is_nan() {
        return Ok(input);
    }
    // `items.slice(0, max)` / `items.slice(len - max, len)` with JavaScript's index rules.
    let (start, end) = if last { (slice_index(len - max, len), input.len()) } else { (0, slice_index(max, len)) };
    if start == 0 && end == input.len() {
        return Ok(input);
    }
    Ok(Arc::new(input.get(start..end.max(start)).map(<[_]>::to_vec).unwrap_or_default()))
}

fn slice_index(i: f64, len: f64) -> usize {
    let i = i.trunc();
    (if i < 0.0 { (len + i).max(0.0) } else { i.min(len) }) as usize
}
