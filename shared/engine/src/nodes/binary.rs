//! Binary data as n8n's items carry it (`item.binary[prop]` =
//! `{data: base64, mimeType, fileType, fileName, fileExtension, fileSize, …}`),
//! text encodings, and the per-item loop the file nodes share.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::NodeContext;
use crate::data::Item;
use crate::error::{EngineError, Result};

pub(crate) const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The bytes and metadata of `item.binary[prop]` (item `i`), with n8n's
/// `assertBinaryData` errors when absent.
pub(crate) fn read<'i>(item: &'i Item, prop: &str, i: usize) -> Result<(Vec<u8>, &'i Value)> {
    let Some(all) = item.binary.as_ref().filter(|b| b.as_object().is_some_and(|m| !m.is_empty())) else {
        return Err(EngineError::node_with(
            format!("This operation expects the node's input data to contain a binary file '{prop}', but none was found [item {i}]"),
            "Make sure that the previous node outputs a binary file",
        ));
    };
    let entry = all.get(prop).ok_or_else(|| {
        EngineError::node_with(
            format!("The item has no binary field '{prop}' [item {i}]"),
            "Check that the parameter where you specified the input binary field name is correct, and that it matches a field in the binary input",
        )
    })?;
    let data = entry.get("data").and_then(Value::as_str).unwrap_or("");
    let bytes = B64.decode(data.trim()).map_err(|e| EngineError::node(format!("binary field '{prop}' is not valid base64: {e}")))?;
    Ok((bytes, entry))
}

/// A number as JSON the way JavaScript prints it (integral values without `.0`).
pub(crate) fn num_value(n: f64) -> Value {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
    }
}

/// n8n's `prepareBinaryData`: the entry for `bytes` named `file_name`.
pub(crate) fn entry(bytes: &[u8], file_name: &str, mime: Option<&str>) -> Value {
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).filter(|e| !e.is_empty());
    let mime = mime.map(str::to_string).unwrap_or_else(|| mime_for(ext.as_deref().unwrap_or("")).to_string());
    let mut m = Map::new();
    m.insert("mimeType".into(), json!(mime));
    if let Some(t) = file_type(&mime) {
        m.insert("fileType".into(), json!(t));
    }
    if !file_name.is_empty() {
        m.insert("fileName".into(), json!(file_name));
    }
    if let Some(e) = ext.or_else(|| extension_for(&mime).map(str::to_string)) {
        m.insert("fileExtension".into(), json!(e));
    }
    m.insert("fileSize".into(), json!(pretty_bytes(bytes.len())));
    m.insert("data".into(), json!(B64.encode(bytes)));
    Value::Object(m)
}

/// `item` with a single binary field `prop` and the given `json`.
pub(crate) fn item_with(json: Value, prop: &str, entry: Value, paired: usize) -> Item {
    let mut it = crate::data::item_from(json, paired);
    let mut b = Map::new();
    b.insert(prop.to_string(), entry);
    it.binary = Some(Value::Object(b).into());
    it
}

fn file_type(mime: &str) -> Option<&'static str> {
    let (top, sub) = mime.split_once('/').unwrap_or((mime, ""));
    Some(match (top, sub) {
        ("application", "json") => "json",
        ("application", "pdf") => "pdf",
        ("text", "html") => "html",
        ("text", _) => "text",
        ("image", _) => "image",
        ("audio", _) => "audio",
        ("video", _) => "video",
        _ => return None,
    })
}

pub(crate) fn mime_for(ext: &str) -> &'static str {
    match ext {
        "json" => "application/json",
        "txt" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "ics" => "text/calendar",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "gzip" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "rtf" => "application/rtf",
        "js" => "text/javascript",
        "md" => "text/markdown",
        _ => "application/octet-stream",
    }
}

pub(crate) fn extension_for(mime: &str) -> Option<&'static str> {
    Some(match mime {
        "application/json" => "json",
        "text/plain" => "txt",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "application/pdf" => "pdf",
        "text/csv" => "csv",
        "text/html" => "html",
        "application/zip" => "zip",
        "application/gzip" => "gz",
        "application/x-tar" => "tar",
        _ => return None,
    })
}

/// The `pretty-bytes` rendering n8n shows (`35 B`, `1.54 kB`, `2 MB`).
pub(crate) fn pretty_bytes(n: usize) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let exp = ((n as f64).log10() / 3.0).floor().min(5.0) as i32;
    let v = n as f64 / 1000f64.powi(exp);
    // three significant digits, trailing zeros dropped
    let s = format!("{:.*}", (2 - v.log10().floor() as i32).max(0) as usize, v);
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s} {}", UNITS[exp as usize])
}

/// Text → bytes in n8n's (iconv-lite) encoding names: the Unicode forms,
/// latin1/ascii/base64/hex, and the legacy code pages `encoding_rs` knows;
/// characters a code page lacks become `?`, as in iconv-lite.
pub(crate) fn encode(text: &str, encoding: &str, bom: bool) -> Result<Vec<u8>> {
    let enc = normalize(encoding);
    let mut out = Vec::with_capacity(text.len() + 3);
    let unicode_bom = bom && matches!(enc.as_str(), "utf8" | "cesu8" | "ucs2" | "utf16le" | "utf16");
    match enc.as_str() {
        "utf8" | "cesu8" => {
            if unicode_bom {
                out.extend_from_slice(&[0xEF, 0xBB, 0xBF]);
            }
            out.extend_from_slice(text.as_bytes());
        }
        "utf16le" | "ucs2" | "utf16" => {
            if unicode_bom {
                out.extend_from_slice(&[0xFF, 0xFE]);
            }
            text.encode_utf16().for_each(|u| out.extend_from_slice(&u.to_le_bytes()));
        }
        "utf16be" => text.encode_utf16().for_each(|u| out.extend_from_slice(&u.to_be_bytes())),
        "utf32le" | "utf32" => text.chars().for_each(|c| out.extend_from_slice(&(c as u32).to_le_bytes())),
        "utf32be" => text.chars().for_each(|c| out.extend_from_slice(&(c as u32).to_be_bytes())),
        "latin1" | "binary" | "iso88591" => out.extend(text.chars().map(|c| if (c as u32) < 256 { c as u32 as u8 } else { b'?' })),
        "ascii" => out.extend(text.chars().map(|c| if c.is_ascii() { c as u8 } else { b'?' })),
        "base64" => out = B64.decode(text.trim()).map_err(|e| EngineError::node(e.to_string()))?,
        "hex" => out = hex::decode(text.trim()).map_err(|e| EngineError::node(e.to_string()))?,
        _ => {
            let codec = code_page(&enc).ok_or_else(|| unsupported(encoding))?;
            let mut encoder = codec.new_encoder();
            let mut buf = vec![0u8; text.len() * 4 + 16];
            let mut src = text;
            loop {
                let (r, read, written) = encoder.encode_from_utf8_without_replacement(src, &mut buf, true);
                out.extend_from_slice(&buf[..written]);
                src = &src[read..];
                match r {
                    encoding_rs::EncoderResult::InputEmpty => break,
                    encoding_rs::EncoderResult::Unmappable(_) => out.push(b'?'),
                    encoding_rs::EncoderResult::OutputFull => buf.resize(buf.len() * 2, 0),
                }
            }
        }
    }
    Ok(out)
}

/// Bytes → text; `strip_bom` drops a leading byte-order mark.
pub(crate) fn decode(bytes: &[u8], encoding: &str, strip_bom: bool) -> Result<String> {
    let enc = normalize(encoding);
    let units16 = |le: bool| -> Vec<u16> {
        bytes.chunks_exact(2).map(|c| if le { u16::from_le_bytes([c[0], c[1]]) } else { u16::from_be_bytes([c[0], c[1]]) }).collect()
    };
    let chars32 = |le: bool| -> String {
        bytes
            .chunks_exact(4)
            .map(|c| {
                let n = if le { u32::from_le_bytes([c[0], c[1], c[2], c[3]]) } else { u32::from_be_bytes([c[0], c[1], c[2], c[3]]) };
                char::from_u32(n).unwrap_or('\u{fffd}')
            })
            .collect()
    };
    let s = match enc.as_str() {
        "utf8" | "cesu8" => String::from_utf8_lossy(bytes).into_owned(),
        "utf16le" | "ucs2" => String::from_utf16_lossy(&units16(true)),
        "utf16be" => String::from_utf16_lossy(&units16(false)),
        // iconv's utf16: by BOM, little-endian without one
        "utf16" => String::from_utf16_lossy(&units16(!bytes.starts_with(&[0xFE, 0xFF]))),
        "utf32le" | "utf32" => chars32(!(enc == "utf32" && bytes.starts_with(&[0, 0, 0xFE, 0xFF]))),
        "utf32be" => chars32(false),
        "latin1" | "binary" | "iso88591" => bytes.iter().map(|b| *b as char).collect(),
        "ascii" => bytes.iter().map(|b| (b & 0x7f) as char).collect(),
        "base64" => B64.encode(bytes),
        "hex" => hex::encode(bytes),
        _ => {
            let codec = code_page(&enc).ok_or_else(|| unsupported(encoding))?;
            codec.decode_without_bom_handling(bytes).0.into_owned()
        }
    };
    Ok(match (strip_bom, s.strip_prefix('\u{feff}')) {
        (true, Some(rest)) => rest.to_string(),
        _ => s,
    })
}

/// An iconv-lite code page name (normalized) as an `encoding_rs` encoding.
fn code_page(enc: &str) -> Option<&'static encoding_rs::Encoding> {
    let label = match enc {
        "shiftjis" | "sjis" => "shift_jis".to_string(),
        "eucjp" => "euc-jp".into(),
        "euckr" | "cp949" => "euc-kr".into(),
        "cp936" => "gbk".into(),
        "cp950" | "big5hkscs" => "big5".into(),
        "cp866" => "ibm866".into(),
        "koi8r" => "koi8-r".into(),
        "koi8u" => "koi8-u".into(),
        "koi8ru" => "koi8-ru".into(),
        "macroman" | "macintosh" => "macintosh".into(),
        "maccyrillic" | "macukraine" => "x-mac-cyrillic".into(),
        "tis620" => "tis-620".into(),
        e => {
            if let Some(n) = e.strip_prefix("windows").or_else(|| e.strip_prefix("win")).or_else(|| e.strip_prefix("cp")) {
                format!("windows-{n}")
            } else if let Some(n) = e.strip_prefix("iso8859") {
                format!("iso-8859-{n}")
            } else {
                e.to_string()
            }
        }
    };
    encoding_rs::Encoding::for_label(label.as_bytes())
}

fn normalize(encoding: &str) -> String {
    let e: String = encoding.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    if e.is_empty() {
        "utf8".into()
    } else {
        e
    }
}

fn unsupported(encoding: &str) -> EngineError {
    EngineError::node(format!(
        "Encoding '{encoding}' is not supported (supported: the Unicode forms, latin1, ascii, base64, hex, windows-125x/874, iso-8859-x, koi8, mac roman/cyrillic, cp866, Shift_JIS, EUC-JP, EUC-KR, GBK, GB18030, Big5)"
    ))
}

/// Runs `f` for every input item (one pass with no input item when there is
/// none), collecting its items; a failing item becomes `{error}` under
/// continue-on-fail, as n8n's nodes do.
pub(crate) fn each_item(
    ctx: &mut NodeContext<'_>,
    input: &[Item],
    mut f: impl FnMut(&mut NodeContext<'_>, &Item, usize, &mut Vec<Item>) -> Result<()>,
) -> Result<Vec<Item>> {
    let mut out = Vec::with_capacity(input.len());
    for (i, item) in input.iter().enumerate() {
        if let Err(e) = f(ctx, item, i, &mut out) {
            if ctx.continue_on_fail() && !matches!(e, EngineError::Canceled) {
                ctx.error_item(&mut out, &e, i);
            } else {
                return Err(e);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_like_pretty_bytes() {
        assert_eq!(pretty_bytes(35), "35 B");
        assert_eq!(pretty_bytes(1000), "1 kB");
        assert_eq!(pretty_bytes(1536), "1.54 kB");
        assert_eq!(pretty_bytes(2_000_000), "2 MB");
        assert_eq!(pretty_bytes(123_456_789), "123 MB");
    }

    #[test]
    fn encodings_round_trip() {
        for enc in ["utf8", "utf-16le", "UTF16BE", "latin1", "ucs2"] {
            let b = encode("héllo", enc, false).unwrap();
            assert_eq!(decode(&b, enc, true).unwrap(), "héllo", "{enc}");
        }
        assert_eq!(encode("a", "utf8", true).unwrap(), vec![0xEF, 0xBB, 0xBF, b'a']);
        assert_eq!(decode(&[0xEF, 0xBB, 0xBF, b'a'], "utf8", true).unwrap(), "a");
        assert_eq!(decode(&[0xEF, 0xBB, 0xBF, b'a'], "utf8", false).unwrap(), "\u{feff}a");
        assert_eq!(decode(&[0x80], "windows-1252", false).unwrap(), "€");
        assert_eq!(decode(&[0x80], "latin1", false).unwrap(), "\u{80}", "latin1 is ISO-8859-1, not windows-1252");
        // iconv-lite names; characters a code page lacks become '?'
        assert_eq!(encode("Příliš ž", "windows1250", false).unwrap(), vec![b'P', 0xF8, 0xED, b'l', b'i', 0x9A, b' ', 0x9E]);
        assert_eq!(encode("ř", "windows1256", false).unwrap(), b"?");
        assert_eq!(decode(&encode("Привет", "koi8r", false).unwrap(), "koi8r", false).unwrap(), "Привет");
        assert_eq!(decode(&encode("日本", "shiftjis", false).unwrap(), "shiftjis", false).unwrap(), "日本");
        assert_eq!(decode(&encode("ab", "utf32le", false).unwrap(), "utf32le", false).unwrap(), "ab");
        assert!(encode("a", "armscii8", false).unwrap_err().to_string().contains("not supported"));
    }
}
