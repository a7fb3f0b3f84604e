//! Compression (`n8n-nodes-base.compression`, v1, v1.1): zip or gzip the
//! item's binary fields, or unpack zip / gzip files into `file_0`, `file_1`, …
//! Pure Rust (zip with deflate over flate2); unpacked data is capped so an
//! archive bomb fails instead of exhausting memory.

use std::io::{Read, Write};

use serde_json::{Map, Value};

use super::binary::{self, each_item};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

/// Most bytes one item may unpack to.
const MAX_UNPACKED: u64 = 256 << 20;
/// Extensions zip stores without compressing again (n8n's ALREADY_COMPRESSED).
const ALREADY_COMPRESSED: [&str; 16] =
    ["7z", "aifc", "bz2", "doc", "docx", "gif", "gz", "heic", "heif", "jpg", "jpeg", "mov", "mp3", "mp4", "png", "zip"];

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let op = ctx.param_str("operation", 0, "decompress")?;
    let out = match op.as_str() {
        "compress" => each_item(ctx, &input, compress)?,
        "decompress" => each_item(ctx, &input, decompress)?,
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    };
    Ok(NodeOutput::one(out))
}

fn names(ctx: &mut NodeContext<'_>, i: usize) -> Result<Vec<String>> {
    Ok(ctx.param_str("binaryPropertyName", i, "data")?.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
}

fn zip_err(e: impl std::fmt::Display) -> EngineError {
    EngineError::node(format!("Compression failed: {e}"))
}

fn compress(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let format = ctx.param_str("outputFormat", i, "zip")?;
    let mut binaries = Map::new();
    if format == "zip" {
        let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for name in names(ctx, i)? {
            let (bytes, meta) = binary::read(item, &name)?;
            let file_name = meta.get("fileName").and_then(Value::as_str).unwrap_or(&name).to_string();
            let ext = meta.get("fileExtension").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
            let method = if ALREADY_COMPRESSED.contains(&ext.as_str()) { zip::CompressionMethod::Stored } else { zip::CompressionMethod::Deflated };
            let opts = zip::write::SimpleFileOptions::default().compression_method(method);
            w.start_file(file_name, opts).map_err(zip_err)?;
            w.write_all(&bytes).map_err(zip_err)?;
        }
        let bytes = w.finish().map_err(zip_err)?.into_inner();
        let file_name = ctx.param_str("fileName", i, "")?;
        let prop = ctx.param_str("binaryPropertyOutput", i, "data")?;
        binaries.insert(prop, binary::entry(&bytes, &file_name, Some("application/zip")));
    } else if format == "gzip" {
        let prefix = ctx.param_str("outputPrefix", i, "data")?;
        for (index, name) in names(ctx, i)?.iter().enumerate() {
            let (bytes, meta) = binary::read(item, name)?;
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&bytes).map_err(zip_err)?;
            let gz = enc.finish().map_err(zip_err)?;
            let stem = meta.get("fileName").and_then(Value::as_str).unwrap_or("").split('.').next().unwrap_or("").to_string();
            binaries.insert(format!("{prefix}{index}"), binary::entry(&gz, &format!("{stem}.gzip"), Some("application/gzip")));
        }
    } else {
        return Err(EngineError::node(format!("Unknown output format \"{format}\"")));
    }
    let mut it = item.paired(i, 0);
    it.binary = Some(Value::Object(binaries).into());
    out.push(it);
    Ok(())
}

fn is_zip(ext: &str, bytes: &[u8]) -> bool {
    ext == "zip" || (ext.is_empty() && bytes.starts_with(b"PK\x03\x04"))
}

fn is_gzip(ext: &str, bytes: &[u8]) -> bool {
    ext == "gz" || ext == "gzip" || (ext.is_empty() && bytes.starts_with(&[0x1F, 0x8B]))
}

fn decompress(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let prefix = ctx.param_str("outputPrefix", i, "file_")?;
    let mut binaries = Map::new();
    let mut zip_index = 0;
    let mut budget = MAX_UNPACKED;
    for (index, name) in names(ctx, i)?.iter().enumerate() {
        let (bytes, meta) = binary::read(item, name)?;
        let ext = meta.get("fileExtension").and_then(Value::as_str).unwrap_or("").to_ascii_lowercase();
        if is_zip(&ext, &bytes) {
            let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(zip_err)?;
            for k in 0..archive.len() {
                let mut f = archive.by_index(k).map_err(zip_err)?;
                let key = f.name().map_err(zip_err)?.to_string();
                // macOS duplicates files under __MACOSX; directories carry no data
                if key.contains("__MACOSX") || f.is_dir() {
                    continue;
                }
                let data = read_capped(&mut f, &mut budget)?;
                binaries.insert(format!("{prefix}{zip_index}"), binary::entry(&data, &key, None));
                zip_index += 1;
            }
        } else if is_gzip(&ext, &bytes) {
            let mut dec = flate2::read::GzDecoder::new(&bytes[..]);
            let data = read_capped(&mut dec, &mut budget)?;
            let stem = meta.get("fileName").and_then(Value::as_str).unwrap_or("").split('.').next().unwrap_or("").to_string();
            let mut entry = binary::entry(&data, &stem, None);
            // n8n names the file after the detected type's extension
            let mime = if std::str::from_utf8(&data).is_ok() { "text/plain" } else { "application/octet-stream" };
            let ext = if mime == "text/plain" { "txt" } else { "bin" };
            if let Value::Object(m) = &mut entry {
                m.insert("mimeType".into(), Value::String(mime.into()));
                m.insert("fileName".into(), Value::String(format!("{stem}.{ext}")));
                m.insert("fileExtension".into(), Value::String(ext.into()));
            }
            binaries.insert(format!("{prefix}{index}"), entry);
        }
    }
    let mut it = item.paired(i, 0);
    it.binary = Some(Value::Object(binaries).into());
    out.push(it);
    Ok(())
}

fn read_capped(r: &mut impl Read, budget: &mut u64) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    let n = r.take(*budget + 1).read_to_end(&mut data).map_err(zip_err)? as u64;
    if n > *budget {
        return Err(EngineError::node(format!("Decompression stopped: the archive unpacks to more than {} MB", MAX_UNPACKED >> 20)));
    }
    *budget -= n;
    Ok(data)
}
