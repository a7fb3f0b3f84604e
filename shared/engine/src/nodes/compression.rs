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
const ALREADY_COMPRESSED: [&str; 24] = [
    "7z", "aifc", "bz2", "doc", "docx", "gif", "gz", "heic", "heif", "jpg", "jpeg", "mov", "mp3", "mp4", "pdf", "png", "ppt", "pptx",
    "rar", "webm", "webp", "xls", "xlsx", "zip",
];

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
    Ok(ctx.param_str("binaryPropertyName", i, "data")?.split(',').map(|s| s.trim().to_string()).collect())
}

fn zip_err(e: impl std::fmt::Display) -> EngineError {
    EngineError::node(e.to_string())
}

fn meta_str<'m>(meta: &'m Value, key: &str) -> Option<&'m str> {
    meta.get(key).and_then(Value::as_str)
}

/// The part of a file name before its first dot (n8n's `fileName.split('.')[0]`).
fn stem(meta: &Value) -> String {
    meta_str(meta, "fileName").unwrap_or("").split('.').next().unwrap_or("").to_string()
}

fn compress(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    // v1 reads its parameters from the first item only
    let v2 = ctx.version() > 1.0;
    let pi = if v2 { i } else { 0 };
    let format = ctx.param_str("outputFormat", 0, if v2 { "zip" } else { "" })?;
    let mut binaries = Map::new();
    let mut zip = (format == "zip").then(|| zip::ZipWriter::new(std::io::Cursor::new(Vec::new())));
    for (index, name) in names(ctx, pi)?.iter().enumerate() {
        let (bytes, meta) = binary::read(item, name, i)?;
        if let Some(w) = zip.as_mut() {
            let file_name = meta_str(meta, "fileName").unwrap_or(name).to_string();
            let ext = meta_str(meta, "fileExtension").unwrap_or("");
            let method = if ALREADY_COMPRESSED.contains(&ext) { zip::CompressionMethod::Stored } else { zip::CompressionMethod::Deflated };
            w.start_file(file_name, zip::write::SimpleFileOptions::default().compression_method(method)).map_err(zip_err)?;
            w.write_all(&bytes).map_err(zip_err)?;
        } else if format == "gzip" {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&bytes).map_err(zip_err)?;
            let gz = enc.finish().map_err(zip_err)?;
            let (prop, path) = if v2 {
                let prefix = ctx.param_str("binaryPropertyOutput", i, "data")?;
                let prop = if index == 0 { prefix } else { format!("{prefix}{index}") };
                let given = ctx.param_str("fileName", i, "")?;
                let name = if given.is_empty() { stem(meta) } else { given.replace(".gz", "").replace(".gzip", "") };
                let ext = meta_str(meta, "fileExtension").map(|e| format!(".{}", e.to_ascii_lowercase())).unwrap_or_default();
                (prop, format!("{name}{ext}.gz"))
            } else {
                let prefix = ctx.param_str("outputPrefix", 0, "data")?;
                (format!("{prefix}{index}"), format!("{}.gzip", stem(meta)))
            };
            binaries.insert(prop, binary::entry(&gz, &path, Some("application/gzip")));
        }
    }
    if let Some(w) = zip {
        let bytes = w.finish().map_err(zip_err)?.into_inner();
        let file_name = ctx.param_str("fileName", pi, "")?;
        let prop = ctx.param_str("binaryPropertyOutput", pi, "data")?;
        binaries.insert(prop, binary::entry(&bytes, &file_name, Some("application/zip")));
    } else if format != "gzip" {
        // n8n emits nothing for an unset output format
        return Ok(());
    }
    let mut it = item.paired(i, 0);
    it.binary = Some(Value::Object(binaries).into());
    out.push(it);
    Ok(())
}

fn decompress(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let prefix = ctx.param_str("outputPrefix", 0, "file_")?;
    let mut binaries = Map::new();
    let mut zip_index = 0;
    let mut budget = MAX_UNPACKED;
    for (index, name) in names(ctx, 0)?.iter().enumerate() {
        let (bytes, meta) = binary::read(item, name, i)?;
        let ext = meta_str(meta, "fileExtension").unwrap_or("").to_ascii_lowercase();
        if ext == "zip" {
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
        } else if ext == "gz" || ext == "gzip" {
            let mut dec = flate2::read::GzDecoder::new(&bytes[..]);
            let data = read_capped(&mut dec, &mut budget)?;
            let stem = stem(meta);
            // the extension inside `name.ext.gz`, else the detected type's
            let inner = meta_str(meta, "fileName")
                .filter(|n| n.ends_with(".gz"))
                .map(|n| n.replacen(".gz", "", 1))
                .and_then(|n| n.rsplit_once('.').map(|(_, e)| e.to_string()));
            let (ext, mime) = match inner {
                Some(e) => {
                    let m = binary::mime_for(&e.to_ascii_lowercase()).to_string();
                    (e, m)
                }
                None => detected(&data),
            };
            let mut entry = binary::entry(&data, &format!("{stem}.{ext}"), Some(&mime));
            if let Value::Object(m) = &mut entry {
                m.insert("fileExtension".into(), Value::String(ext));
            }
            binaries.insert(format!("{prefix}{index}"), entry);
        }
    }
    let mut it = item.paired(i, 0);
    it.binary = Some(Value::Object(binaries).into());
    out.push(it);
    Ok(())
}

/// Extension and MIME type by content (n8n's file-type detection, the common cases).
fn detected(data: &[u8]) -> (String, String) {
    let (e, m) = match data {
        [0x89, b'P', b'N', b'G', ..] => ("png", "image/png"),
        [0xFF, 0xD8, 0xFF, ..] => ("jpg", "image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => ("gif", "image/gif"),
        [b'%', b'P', b'D', b'F', ..] => ("pdf", "application/pdf"),
        [b'P', b'K', 3, 4, ..] => ("zip", "application/zip"),
        _ if std::str::from_utf8(data).is_ok() => ("txt", "text/plain"),
        _ => ("bin", "application/octet-stream"),
    };
    (e.to_string(), m.to_string())
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
