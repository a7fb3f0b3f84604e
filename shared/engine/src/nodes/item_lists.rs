//! Item Lists (1, 2, 2.1, 2.2, 3, 3.1): n8n's older combined node, whose
//! operations became Aggregate, Split Out, Summarize, Sort, Limit and Remove
//! Duplicates. Each operation runs those nodes' code with the differences of
//! its generation (parameter shapes, field checks, group-key rules).

use super::aggregate::{concatenate, Flavor};
use super::remove_duplicates::{remove_input_duplicates, Rules};
use super::summarize::{summarize, Grouping};
use super::{limit, sort, split_out, NodeContext, NodeOutput};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let v = ctx.version();
    let operation = ctx.param_str("operation", 0, "splitOutItems")?;
    let items = match operation.as_str() {
        "splitOutItems" if v >= 2.2 => split_out::split_out(ctx, false, v < 3.0)?,
        "splitOutItems" => split_out::split_out_legacy(ctx)?,
        "aggregateItems" if v < 3.0 => concatenate(ctx, Flavor { require_fields: v < 2.1, field_collections: true, grouping: false, binaries: false })?,
        "concatenateItems" if v >= 3.0 => concatenate(ctx, Flavor { require_fields: false, field_collections: false, grouping: false, binaries: true })?,
        "removeDuplicates" => remove_input_duplicates(ctx, Rules { null_ok: false, type_order: v >= 3.1, field_collections: v < 3.0 })?,
        "sort" => sort::sort(ctx)?,
        "limit" => return Ok(NodeOutput::Data(vec![limit::limit(ctx)?])),
        "summarize" => summarize(ctx, Grouping::Legacy)?,
        other => return Err(EngineError::node(format!("Operation '{other}' is not recognized"))),
    };
    Ok(NodeOutput::one(items))
}
