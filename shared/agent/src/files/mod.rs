//! Reading the files a user attaches to a message, for `parse-file`:
//! tabular formats (CSV, TSV, JSON arrays, xlsx) as normalised columns and
//! a page of rows ([`tabular`]), text-like ones (text, Markdown, HTML, PDF,
//! docx) as extracted text ([`text`]). Pure functions over bytes; every
//! output is bounded (rows, cells, characters) so a large file costs the
//! model a page, never the whole file.

pub mod tabular;
pub mod text;

use serde::{Deserialize, Serialize};

/// Columns a tabular file may have.
pub const MAX_COLUMNS: usize = 50;
pub const MAX_ROWS_PER_CALL: usize = 100;
pub const DEFAULT_MAX_ROWS: usize = 20;
/// Cells (rows × columns) one call returns at most.
pub const MAX_CELLS_PER_CALL: usize = 2_000;
/// Characters of the serialized columns and rows (tabular) or of the
/// content (text) one call returns at most.
pub const MAX_RESULT_CHARS: usize = 40_000;
/// A longer cell is cut here (with a warning).
pub const MAX_CELL_CHARS: usize = 5_000;
/// Office files are ZIP archives: what they may inflate to, and how many
/// entries they may have, before they are refused as a decompression bomb.
pub const MAX_OOXML_UNCOMPRESSED_BYTES: u64 = 200 * 1024 * 1024;
pub const MAX_OOXML_ENTRIES: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Csv,
    Tsv,
    Json,
    Xlsx,
    Text,
    Markdown,
    Html,
    Pdf,
    Docx,
}

impl Format {
    pub const ALL: [&'static str; 9] = ["csv", "tsv", "json", "xlsx", "text", "markdown", "html", "pdf", "docx"];

    pub fn parse(s: &str) -> Option<Format> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }

    pub fn is_tabular(self) -> bool {
        matches!(self, Format::Csv | Format::Tsv | Format::Json | Format::Xlsx)
    }
}

/// The format of a file: by its extension, else its MIME type.
pub fn detect(file_name: &str, mime_type: &str) -> Option<Format> {
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let by_ext = match ext.as_str() {
        "csv" => Some(Format::Csv),
        "tsv" => Some(Format::Tsv),
        "json" => Some(Format::Json),
        "xlsx" => Some(Format::Xlsx),
        "txt" => Some(Format::Text),
        "md" | "markdown" => Some(Format::Markdown),
        "html" | "htm" => Some(Format::Html),
        "pdf" => Some(Format::Pdf),
        "docx" => Some(Format::Docx),
        _ => None,
    };
    by_ext.or(match mime_type.split(';').next().unwrap_or_default().trim() {
        "text/csv" | "application/csv" => Some(Format::Csv),
        "text/tab-separated-values" => Some(Format::Tsv),
        "application/json" => Some(Format::Json),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => Some(Format::Xlsx),
        "text/plain" => Some(Format::Text),
        "text/markdown" | "text/x-markdown" => Some(Format::Markdown),
        "text/html" | "application/xhtml+xml" => Some(Format::Html),
        "application/pdf" => Some(Format::Pdf),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => Some(Format::Docx),
        _ => None,
    })
}

/// Refuses a ZIP archive (xlsx, docx) whose central directory declares more
/// than [`MAX_OOXML_ENTRIES`] entries or [`MAX_OOXML_UNCOMPRESSED_BYTES`]
/// inflated: a small upload must not inflate to gigabytes.
pub fn check_archive(bytes: &[u8], file_name: &str) -> Result<(), String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("\"{file_name}\" is not a valid Office file: {e}"))?;
    if zip.len() > MAX_OOXML_ENTRIES {
        return Err(format!("\"{file_name}\" has too many archive entries ({} > {MAX_OOXML_ENTRIES}); refusing a potential decompression bomb", zip.len()));
    }
    let mut total = 0u64;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(|e| format!("\"{file_name}\" is not a valid Office file: {e}"))?;
        total = total.saturating_add(entry.size());
        if total > MAX_OOXML_UNCOMPRESSED_BYTES {
            return Err(format!(
                "\"{file_name}\" inflates to more than {} MB; refusing a potential decompression bomb",
                MAX_OOXML_UNCOMPRESSED_BYTES / (1024 * 1024)
            ));
        }
    }
    Ok(())
}

/// A string cut to `max` characters; `true` when it was cut.
pub fn cut(s: &str, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (s[..at].to_owned(), true),
        None => (s.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_wins_over_a_generic_mime_type() {
        assert_eq!(detect("data.csv", "application/octet-stream"), Some(Format::Csv));
        assert_eq!(detect("Report.PDF", ""), Some(Format::Pdf));
        assert_eq!(detect("export", "text/tab-separated-values"), Some(Format::Tsv));
        assert_eq!(detect("photo.png", "image/png"), None);
        assert_eq!(Format::parse("docx"), Some(Format::Docx));
        assert_eq!(Format::parse("exe"), None);
    }

    #[test]
    fn an_archive_declaring_too_much_is_refused_before_inflating() {
        use std::io::Write;
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut buf);
            let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
            w.start_file("big.xml", opts).unwrap();
            let zeros = vec![0u8; 1024 * 1024];
            for _ in 0..201 {
                w.write_all(&zeros).unwrap();
            }
            w.finish().unwrap();
        }
        let bytes = buf.into_inner();
        assert!(bytes.len() < 1024 * 1024, "a small upload");
        let e = check_archive(&bytes, "bomb.xlsx").unwrap_err();
        assert!(e.contains("decompression bomb"), "{e}");
    }
}
