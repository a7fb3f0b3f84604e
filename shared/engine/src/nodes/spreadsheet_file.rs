//! Spreadsheet File (`n8n-nodes-base.spreadsheetFile`, 1 and 2): n8n's older
//! node for reading and writing spreadsheets, on Extract from File's readers
//! and Convert to File's writers (n8n's successors of this node).
//!
//! Read From File: version 2 reads CSV with the CSV reader (`fileFormat`, or
//! by the file's type under `autodetect`), xlsx and HTML tables with the
//! workbook reader; version 1 reads every file through SheetJS, whose typed
//! CSV parsing this engine does not have, so a CSV file is refused there.
//! Write to File: csv, html, xlsx named `spreadsheet.<format>`. xls, ods and
//! rtf are refused both ways (no reader or writer for them).

use serde_json::Value;

use super::binary::{self, each_item};
use super::{convert_to_file, extract_from_file, NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let out = match ctx.param_str("operation", 0, "fromFile")?.as_str() {
        "fromFile" => each_item(ctx, &input, read)?,
        "toFile" => {
            // version 1's default is xls as well
            let format = ctx.param_str("fileFormat", 0, "xls")?;
            match format.as_str() {
                "csv" | "html" | "xlsx" => convert_to_file::write_spreadsheet(ctx, &input, &format, "spreadsheet")?,
                other => return Err(refused(other)),
            }
        }
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    };
    Ok(NodeOutput::one(out))
}

fn refused(format: &str) -> EngineError {
    EngineError::node(format!("Spreadsheet File: the '{format}' format is not supported by this engine (supported: csv, html, xlsx)"))
}

fn read(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let prop = ctx.param_str("binaryPropertyName", i, "data")?;
    let (bytes, meta) = binary::read(item, &prop, i)?;
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (mime, ext) = (text("mimeType"), text("fileExtension"));
    let version = ctx.version();
    let mut format = if version >= 2.0 { ctx.param_str("fileFormat", i, "autodetect")? } else { "autodetect".to_string() };
    let csv_file = mime == "text/csv" || (mime == "text/plain" && ext == "csv");
    if format == "autodetect" {
        format = if csv_file {
            "csv".into()
        } else if bytes.starts_with(b"PK\x03\x04") {
            "xlsx".into()
        } else if String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase().contains("<table") {
            "html".into()
        } else if !ext.is_empty() {
            ext
        } else {
            "unknown".into()
        };
    }
    match format.as_str() {
        "csv" if version < 2.0 => Err(EngineError::node(
            "Spreadsheet File 1 reads CSV as SheetJS types it, which this engine does not support; use version 2 or Extract from File",
        )),
        "csv" => extract_from_file::csv(ctx, item, i, out),
        "xlsx" | "html" => extract_from_file::spreadsheet(ctx, item, i, out, &format),
        other => Err(refused(other)),
    }
}
