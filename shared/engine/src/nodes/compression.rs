//! Compression (`n8n-nodes-base.compression`, v1, v1.1): zip, gzip, tar or
//! tar.gz the item's binary fields, or unpack zip / gzip / tar / tar.gz files
//! into `file_0`, `file_1`, … Pure Rust (zip with deflate over flate2, the
//! `tar` crate); unpacked data is capped so an archive bomb fails instead of
//! exhausting memory.

use std::io::{Read, Write};

use serde_json::{Map, Value};

use super::binary::{self, each_item};
use super::{NodeContext, NodeOutput};
use crate::data::Item;
use crate::error::{EngineError, Result};

/// Most bytes one item may unpack to.
const MAX_UNPACKED: u64 = 256 << 20;
/// Most files one tar archive may unpack to (each becomes a binary field).
const MAX_TAR_ENTRIES: usize = 10_000;
/// Names n8n's `isSafeObjectProperty` refuses as keys; such tar entries are skipped.
const UNSAFE_KEYS: [&str; 15] = [
    "__proto__", "prototype", "constructor", "getPrototypeOf", "mainModule", "binding", "_linkedBinding", "_load", "prepareStackTrace",
    "__lookupGetter__", "__lookupSetter__", "__defineGetter__", "__defineSetter__", "caller", "arguments",
];
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
    let is_tar = format == "tar" || format == "targz";
    let mut tar_files: Vec<(String, Vec<u8>)> = vec![];
    for (index, name) in names(ctx, pi)?.iter().enumerate() {
        let (bytes, meta) = binary::read(item, name, i)?;
        if let Some(w) = zip.as_mut() {
            let file_name = meta_str(meta, "fileName").unwrap_or(name).to_string();
            let ext = meta_str(meta, "fileExtension").unwrap_or("");
            let method = if ALREADY_COMPRESSED.contains(&ext) { zip::CompressionMethod::Stored } else { zip::CompressionMethod::Deflated };
            w.start_file(file_name, zip::write::SimpleFileOptions::default().compression_method(method)).map_err(zip_err)?;
            w.write_all(&bytes).map_err(zip_err)?;
        } else if is_tar {
            // entries are named by the input file names, as zip's (field name if unnamed)
            tar_files.push((meta_str(meta, "fileName").unwrap_or(name).to_string(), bytes));
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
    } else if is_tar {
        let bytes = tar_archive(&tar_files, format == "targz")?;
        let file_name = ctx.param_str("fileName", pi, "")?;
        let prop = ctx.param_str("binaryPropertyOutput", pi, "data")?;
        let mime = archive_mime(&file_name, &bytes);
        binaries.insert(prop, binary::entry(&bytes, &file_name, Some(mime)));
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
        if ext.is_empty() {
            return Err(EngineError::node(format!("File extension not found for binary data {name}")));
        }
        // a `.tar.gz` keeps the `gz` extension, so n8n also looks at the name
        let is_tar = ext == "tar" || ext == "tgz" || meta_str(meta, "fileName").is_some_and(|n| n.to_lowercase().ends_with(".tar.gz"));
        if ext == "zip" || is_tar {
            let files = if is_tar { untar(&bytes, &mut budget)? } else { unzip(bytes, &mut budget)? };
            for (key, data) in files {
                // macOS duplicates files under __MACOSX
                if key.contains("__MACOSX") {
                    continue;
                }
                binaries.insert(format!("{prefix}{zip_index}"), unpacked(&data, &key));
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
        } else {
            return Err(EngineError::node_with(
                format!("Unsupported archive format \".{ext}\" for binary data {name}"),
                "The Decompress operation supports the following formats: zip, gzip, tar, tar.gz and tgz",
            ));
        }
    }
    let mut it = item.paired(i, 0);
    it.binary = Some(Value::Object(binaries).into());
    out.push(it);
    Ok(())
}

/// The files of a zip archive in order (directories carry no data).
fn unzip(bytes: Vec<u8>, budget: &mut u64) -> Result<Vec<(String, Vec<u8>)>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(zip_err)?;
    let mut files = vec![];
    for k in 0..archive.len() {
        let mut f = archive.by_index(k).map_err(zip_err)?;
        if f.is_dir() {
            continue;
        }
        let key = f.name().map_err(zip_err)?.to_string();
        let data = read_capped(&mut f, budget)?;
        files.push((key, data));
    }
    Ok(files)
}

/// n8n's createTar: one regular file (mode 0644) per input file, in order,
/// gzip-compressed for `targz`.
fn tar_archive(files: &[(String, Vec<u8>)], gzip: bool) -> Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut header = tar::Header::new_ustar();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        // n8n's headers carry no time; zero keeps the archive reproducible
        header.set_mtime(0);
        // node-tar strips a leading `/` instead of refusing an absolute name
        let path = name.trim_start_matches('/');
        builder
            .append_data(&mut header, path, data.as_slice())
            .map_err(|e| EngineError::node(format!("The file \"{name}\" cannot be added to a tar archive: {e}")))?;
    }
    let archive = builder.into_inner().map_err(zip_err)?;
    if !gzip {
        return Ok(archive);
    }
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&archive).map_err(zip_err)?;
    enc.finish().map_err(zip_err)
}

/// The type n8n's prepareBinaryData gives an archive named `file_name`: by
/// the name's extension, else by content (gzip or tar).
fn archive_mime(file_name: &str, bytes: &[u8]) -> &'static str {
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match binary::mime_for(&ext) {
        "application/octet-stream" if ext != "bin" && bytes.starts_with(&[0x1f, 0x8b]) => "application/gzip",
        "application/octet-stream" if ext != "bin" => "application/x-tar",
        mime => mime,
    }
}

/// n8n's boundedUntar: the regular files of a tar archive (gzip-compressed
/// or not, by content), in order; directories, links and special files are
/// skipped, and so are names that are absolute, leave the archive's root or
/// are unsafe object keys. A repeated name keeps its first place, last data.
fn untar(bytes: &[u8], budget: &mut u64) -> Result<Vec<(String, Vec<u8>)>> {
    let reader: Box<dyn Read + '_> = if bytes.starts_with(&[0x1f, 0x8b]) { Box::new(flate2::read::GzDecoder::new(bytes)) } else { Box::new(bytes) };
    let mut archive = tar::Archive::new(reader);
    let mut files: Vec<(String, Vec<u8>)> = vec![];
    for entry in archive.entries().map_err(zip_err)? {
        let mut entry = entry.map_err(zip_err)?;
        if !matches!(entry.header().entry_type(), tar::EntryType::Regular | tar::EntryType::Continuous) {
            continue;
        }
        let key = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if escapes_root(&key) || UNSAFE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let known = files.iter().position(|(k, _)| *k == key);
        if known.is_none() && files.len() >= MAX_TAR_ENTRIES {
            return Err(EngineError::node(format!("The archive contains more than {MAX_TAR_ENTRIES} entries")));
        }
        let data = read_capped(&mut entry, budget)?;
        match known {
            Some(k) => files[k].1 = data,
            None => files.push((key, data)),
        }
    }
    Ok(files)
}

/// Whether a tar entry's name is absolute or reaches above the archive's root
/// once `.` and `..` are resolved (n8n's `escapesRoot`).
fn escapes_root(name: &str) -> bool {
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    if trimmed.starts_with('/') {
        return true;
    }
    let mut depth = 0usize;
    for part in trimmed.split('/') {
        match part {
            "" | "." => {}
            ".." if depth == 0 => return true,
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    false
}

/// n8n's prepareBinaryData for an unpacked file at `path`: the name without
/// its folder (the folder as `directory`), the type by the name's extension,
/// else by content.
fn unpacked(data: &[u8], path: &str) -> Value {
    let (dir, base) = path.rsplit_once('/').unwrap_or(("", path));
    let ext = base.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let mime = match binary::mime_for(&ext) {
        "application/octet-stream" if ext != "bin" => detected(data).1,
        m => m.to_string(),
    };
    let mut entry = binary::entry(data, base, Some(&mime));
    if let (false, Value::Object(m)) = (dir.is_empty(), &mut entry) {
        m.insert("directory".into(), Value::String(dir.to_string()));
    }
    entry
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
