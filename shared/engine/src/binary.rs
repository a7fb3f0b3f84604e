//! n8n binary data entries (`item.binary[key]`): MIME types, file names and
//! sizes as n8n-core's `prepareBinaryData` derives them. The engine keeps the
//! bytes inline (`data`, base64), n8n's default binary mode.

use base64::Engine as _;
use serde_json::{json, Map, Value};

/// The extension n8n (mime-types' `extension()`) gives a MIME type.
pub fn extension_for(mime: &str) -> Option<String> {
    let m = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let known = match m.as_str() {
        "application/json" => "json",
        "application/pdf" => "pdf",
        "application/xml" | "text/xml" => "xml",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "application/x-tar" => "tar",
        "application/octet-stream" => "bin",
        "application/javascript" | "text/javascript" => "js",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "application/vnd.ms-powerpoint" => "ppt",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => "pptx",
        "application/vnd.oasis.opendocument.text" => "odt",
        "application/vnd.oasis.opendocument.spreadsheet" => "ods",
        "application/rtf" => "rtf",
        "application/x-7z-compressed" => "7z",
        "application/epub+zip" => "epub",
        "text/plain" => "txt",
        "text/html" => "html",
        "text/css" => "css",
        "text/csv" => "csv",
        "text/markdown" => "md",
        "text/calendar" => "ics",
        "image/jpeg" => "jpeg",
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" => "bmp",
        "image/tiff" => "tif",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "audio/mpeg" => "mpga",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/ogg" => "oga",
        "video/mp4" => "mp4",
        "video/mpeg" => "mpeg",
        "video/webm" => "webm",
        "video/quicktime" => "qt",
        _ => "",
    };
    if !known.is_empty() {
        return Some(known.to_string());
    }
    mime_guess::get_mime_extensions_str(&m).and_then(|e| e.first()).map(|e| e.to_string())
}

/// The MIME type of a file name by its extension (mime-types' `lookup()`).
pub fn mime_for_file(name: &str) -> Option<String> {
    let ext = name.rsplit_once('.').map(|(_, e)| e)?;
    if ext.is_empty() {
        return None;
    }
    mime_guess::from_ext(ext).first_raw().map(str::to_string)
}

/// n8n's `fileTypeFromMimeType`.
pub fn file_type(mime: &str) -> Option<&'static str> {
    if mime.starts_with("application/json") {
        Some("json")
    } else if mime.starts_with("text/html") {
        Some("html")
    } else if mime.starts_with("image/") {
        Some("image")
    } else if mime.starts_with("audio/") {
        Some("audio")
    } else if mime.starts_with("video/") {
        Some("video")
    } else if mime.starts_with("text/") || mime.starts_with("application/javascript") {
        Some("text")
    } else if mime.starts_with("application/pdf") {
        Some("pdf")
    } else {
        None
    }
}

/// `pretty-bytes` as n8n uses it for `fileSize`: `4 B`, `1.5 kB`, `1.23 MB`.
pub fn pretty_bytes(n: usize) -> String {
    const UNITS: [&str; 9] = ["B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let exp = ((n as f64).log10() / 3.0).floor().min(8.0) as i32;
    let v = n as f64 / 1000f64.powi(exp);
    // three significant digits, trailing zeros dropped (toPrecision(3) then Number)
    let digits = 2 - (v.log10().floor() as i32).clamp(0, 2);
    let s = format!("{:.*}", digits as usize, v);
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s} {}", UNITS[exp as usize])
}

/// The MIME type the leading bytes of common image and document formats
/// announce (what n8n's file-type detection finds when none is given).
pub fn sniff_mime(bytes: &[u8]) -> Option<&'static str> {
    const SIGNATURES: [(&[u8], &str); 5] = [
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"GIF8", "image/gif"),
        (b"%PDF-", "application/pdf"),
        (b"PK\x03\x04", "application/zip"),
    ];
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some("image/webp");
    }
    SIGNATURES.iter().find(|(sig, _)| bytes.starts_with(sig)).map(|(_, mime)| *mime)
}

/// A binary entry for `bytes` as `prepareBinaryData(bytes, filePath, mimeType)`
/// builds it: the MIME type from the argument, else from the file name, else
/// `text/plain`; the extension from the file name, else from the MIME type.
pub fn entry(bytes: &[u8], file_path: Option<&str>, mime: Option<&str>) -> Value {
    let file_path = file_path.map(|p| p.split('?').next().unwrap_or(p)).filter(|p| !p.is_empty());
    let mime = mime
        .map(str::to_string)
        .filter(|m| !m.is_empty())
        .or_else(|| file_path.and_then(mime_for_file))
        .unwrap_or_else(|| "text/plain".to_string());
    let mut o = Map::new();
    o.insert("mimeType".into(), json!(mime));
    if let Some(t) = file_type(&mime) {
        o.insert("fileType".into(), json!(t));
    }
    if let Some(ext) = extension_for(&mime) {
        o.insert("fileExtension".into(), json!(ext));
    }
    if let Some(path) = file_path {
        let (dir, base) = match path.rsplit_once('/') {
            Some((d, b)) => (d, b),
            None => ("", path),
        };
        if !dir.is_empty() {
            o.insert("directory".into(), json!(dir));
        }
        if !base.is_empty() {
            o.insert("fileName".into(), json!(base));
            if let Some((_, ext)) = base.rsplit_once('.').filter(|(stem, e)| !e.is_empty() && !stem.is_empty()) {
                o.insert("fileExtension".into(), json!(ext));
            }
        }
    }
    o.insert("data".into(), json!(base64::engine::general_purpose::STANDARD.encode(bytes)));
    o.insert("fileSize".into(), json!(pretty_bytes(bytes.len())));
    o.insert("bytes".into(), json!(bytes.len()));
    Value::Object(o)
}

/// The bytes of a binary entry (inline base64 `data`).
pub fn bytes_of(entry: &Value) -> Result<Vec<u8>, String> {
    let data = entry.get("data").and_then(Value::as_str).unwrap_or("");
    base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("binary data is not valid base64: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_pretty_bytes() {
        assert_eq!(pretty_bytes(4), "4 B");
        assert_eq!(pretty_bytes(999), "999 B");
        assert_eq!(pretty_bytes(1000), "1 kB");
        assert_eq!(pretty_bytes(1500), "1.5 kB");
        assert_eq!(pretty_bytes(1_234_567), "1.23 MB");
        assert_eq!(pretty_bytes(12_345_678), "12.3 MB");
    }

    #[test]
    fn entries_take_names_and_types_like_prepare_binary_data() {
        let e = entry(b"test", Some("/path/to/image.png"), Some("image/png"));
        assert_eq!(e["fileName"], "image.png");
        assert_eq!(e["directory"], "/path/to");
        assert_eq!(e["fileType"], "image");
        assert_eq!(e["fileExtension"], "png");
        assert_eq!(e["fileSize"], "4 B");
        let e = entry(b"testing", Some("testing.jpg"), None);
        assert_eq!(e["mimeType"], "image/jpeg");
        assert_eq!(e["fileExtension"], "jpg");
        let e = entry(b"x", None, None);
        assert_eq!(e["mimeType"], "text/plain");
        assert_eq!(e["fileExtension"], "txt");
    }
}

/// n8n's `assertBinaryData`: the entry `item.binary[prop]` of item `i`, or
/// n8n's errors when the item has no binary data or not that field.
pub fn assert_entry<'i>(item: &'i crate::data::Item, prop: &str, i: usize) -> crate::error::Result<&'i Value> {
    use crate::error::EngineError;
    let Some(all) = item.binary.as_deref().and_then(Value::as_object) else {
        return Err(EngineError::node_with(
            format!("This operation expects the node's input data to contain a binary file '{prop}', but none was found [item {i}]"),
            "Make sure that the previous node outputs a binary file",
        ));
    };
    all.get(prop).ok_or_else(|| {
        EngineError::node_with(
            format!("The item has no binary field '{prop}' [item {i}]"),
            "Check that the parameter where you specified the input binary field name is correct, and that it matches a field in the binary input",
        )
    })
}
