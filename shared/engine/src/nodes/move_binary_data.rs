//! Convert to/from binary data (`n8n-nodes-base.moveBinaryData`, 1 and 1.1):
//! n8n's older node that moves an item's JSON into a file and a file's text
//! back into JSON (its successors are Convert to File and Extract from File).

use base64::Engine as _;
use serde_json::{Map, Value};

use super::binary::{self, each_item};
use super::convert_to_file::sniff_mime;
use super::{lodash, NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mode = ctx.param_str("mode", 0, "binaryToJson")?;
    let out = match mode.as_str() {
        "binaryToJson" => each_item(ctx, &input, binary_to_json)?,
        "jsonToBinary" => each_item(ctx, &input, json_to_binary)?,
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not known!"))),
    };
    Ok(NodeOutput::one(out))
}

fn parse_json(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| EngineError::node(format!("The data is not valid JSON: {e}")))
}

/// The file at `sourceKey` as the item's whole JSON (`setAllData`, the
/// default) or as one field of it; an item without the file gives nothing.
fn binary_to_json(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let set_all = ctx.param_bool("setAllData", i, true)?;
    let source = ctx.param_str("sourceKey", i, "data")?;
    let files = item.binary.as_ref().map(|b| Value::clone(b)).unwrap_or(Value::Null);
    if lodash::get(&files, &source).is_none() {
        return Ok(());
    }
    let (bytes, _) = binary::read(item, &source, i)?;
    let encoding = non_empty(ctx.param_str("options.encoding", i, "")?, "utf8");
    // iconv-lite strips a BOM unless told not to
    let strip_bom = ctx.param_bool("options.stripBOM", i, true)?;
    let json = if set_all {
        parse_json(&binary::decode(&bytes, &encoding, strip_bom)?)?
    } else {
        let mut json = Value::clone(&item.json);
        let text = if ctx.param_bool("options.keepAsBase64", i, false)? { binary::B64.encode(&bytes) } else { binary::decode(&bytes, &encoding, strip_bom)? };
        let value = if ctx.param_bool("options.jsonParse", i, false)? { parse_json(&text)? } else { Value::String(text) };
        lodash::set(&mut json, &ctx.param_str("destinationKey", i, "")?, value);
        json
    };
    let mut files = files;
    if !ctx.param_bool("options.keepSource", i, false)? {
        lodash::unset(&mut files, &source);
    }
    let mut it = item_from(json, i);
    if files.as_object().is_some_and(|m| !m.is_empty()) {
        it.binary = Some(files.into());
    }
    out.push(it);
    Ok(())
}

/// The item's JSON (`convertAllData`, the default) or one field of it as a
/// file at `destinationKey`: JSON text unless `useRawData` keeps a string as
/// it is or `dataIsBase64` decodes it.
fn json_to_binary(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let convert_all = ctx.param_bool("convertAllData", i, true)?;
    let dest = ctx.param_str("destinationKey", i, "data")?;
    let source = if convert_all { None } else { Some(ctx.param_str("sourceKey", i, "data")?) };
    let value = match &source {
        None => Value::clone(&item.json),
        Some(key) => match lodash::get(&item.json, key) {
            Some(v) => v.into_owned(),
            None => return Ok(()),
        },
    };
    let encoding = non_empty(ctx.param_str("options.encoding", i, "")?, "utf8");
    let mut mime = ctx.param_str("options.mimeType", i, "")?;
    let bytes = if ctx.param_bool("options.dataIsBase64", i, false)? {
        // Node's Buffer.from(…, 'base64') skips what is not base64
        let text: String = lodash::js_to_string(Some(&value)).chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/')).collect();
        base64::engine::general_purpose::STANDARD_NO_PAD.decode(text.as_bytes()).map_err(|e| EngineError::node(format!("The data is not valid base64: {e}")))?
    } else {
        let text = match &value {
            Value::String(s) if ctx.param_bool("options.useRawData", i, false)? => s.clone(),
            v => {
                if mime.is_empty() {
                    mime = "application/json".into();
                }
                lodash::json_stringify(v)
            }
        };
        binary::encode(&text, &encoding, ctx.param_bool("options.addBOM", i, false)?)?
    };
    let version = ctx.version();
    if mime.is_empty() && version == 1.0 {
        mime = "application/json".into();
    }
    let mut name = ctx.param_str("options.fileName", i, "")?;
    if mime.is_empty() {
        mime = sniff_mime(&bytes, &name);
    }
    if name.is_empty() && version > 1.0 {
        name = match binary::extension_for(&mime) {
            Some(e) => format!("file.{e}"),
            None => "file".into(),
        };
    }
    let mut files = item.binary.as_ref().map(|b| Value::clone(b)).unwrap_or(Value::Object(Map::new()));
    lodash::set(&mut files, &dest, binary::entry(&bytes, &name, Some(&mime)));
    let json = if ctx.param_bool("options.keepSource", i, false)? {
        Value::clone(&item.json)
    } else if let Some(key) = &source {
        let mut json = Value::clone(&item.json);
        lodash::unset(&mut json, key);
        json
    } else {
        Value::Object(Map::new())
    };
    let mut it = item_from(json, i);
    it.binary = Some(files.into());
    out.push(it);
    Ok(())
}

fn non_empty(s: String, default: &str) -> String {
    if s.is_empty() {
        default.to_string()
    } else {
        s
    }
}
