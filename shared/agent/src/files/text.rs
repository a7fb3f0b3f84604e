//! Text-like files → their text: plain text and Markdown as they are, HTML
//! as readable Markdown with its title and PDF text with its page count
//! (the extraction `research(fetch-url)` uses), and a Word document's
//! paragraphs as Markdown (headings and list items kept).

use super::{cut, Format, MAX_RESULT_CHARS};
use serde::Serialize;
use std::io::Read;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extracted {
    pub content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<usize>,
    pub truncated: bool,
}

pub fn extract(format: Format, bytes: &[u8], file_name: &str) -> Result<Extracted, String> {
    let (content, title, pages) = match format {
        Format::Text | Format::Markdown => (String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)).into_owned(), None, None),
        Format::Html => {
            let source = research::extract::decode(None, bytes);
            let page = research::extract::html(&source, "file:///attachment").map_err(|e| format!("Failed to parse HTML \"{file_name}\": {e}"))?;
            (page.content, Some(page.title).filter(|t| !t.is_empty()), None)
        }
        Format::Pdf => {
            let (text, pages) = research::extract::pdf(bytes).map_err(|e| format!("Failed to parse PDF \"{file_name}\": {e}"))?;
            if text.trim().is_empty() {
                return Err(format!("PDF \"{file_name}\" contains no extractable text (it may be a scanned image)."));
            }
            (text, research::extract::pdf_title(bytes), Some(pages))
        }
        Format::Docx => (docx(bytes, file_name)?, None, None),
        other => return Err(format!("{other:?} is not a text format")),
    };
    let content = content.trim();
    if content.is_empty() {
        return Err(format!("\"{file_name}\" contains no extractable text."));
    }
    let (content, truncated) = cut(content, MAX_RESULT_CHARS);
    Ok(Extracted { content, title, pages, truncated })
}

/// The body of `word/document.xml` as Markdown-ish text: a line per
/// paragraph, `#` for Heading/Title styles, `- ` for list paragraphs, tabs
/// and breaks kept, table cells separated by ` | `.
fn docx(bytes: &[u8], file_name: &str) -> Result<String, String> {
    super::check_archive(bytes, file_name)?;
    let invalid = |e: &dyn std::fmt::Display| format!("Failed to parse docx \"{file_name}\": {e}");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| invalid(&e))?;
    let mut xml = String::new();
    zip.by_name("word/document.xml")
        .map_err(|e| invalid(&e))?
        .take(super::MAX_OOXML_UNCOMPRESSED_BYTES)
        .read_to_string(&mut xml)
        .map_err(|e| invalid(&e))?;
    // DTDs stay refused (roxmltree's default): no entity expansion.
    let doc = roxmltree::Document::parse(&xml).map_err(|e| invalid(&e))?;
    let mut out = String::new();
    let Some(body) = doc.descendants().find(|n| n.has_tag_name("body")) else { return Ok(out) };
    for block in body.children().filter(|n| n.is_element()) {
        match block.tag_name().name() {
            "p" => {
                out.push_str(&paragraph(block));
                out.push('\n');
            }
            "tbl" => {
                for row in block.children().filter(|n| n.has_tag_name("tr")) {
                    let cells: Vec<String> = row
                        .children()
                        .filter(|n| n.has_tag_name("tc"))
                        .map(|tc| tc.children().filter(|n| n.has_tag_name("p")).map(paragraph).collect::<Vec<_>>().join(" "))
                        .collect();
                    out.push_str(&format!("| {} |\n", cells.join(" | ")));
                }
                out.push('\n');
            }
            _ => {}
        }
    }
    Ok(out)
}

fn paragraph(p: roxmltree::Node) -> String {
    let style = p
        .children()
        .find(|n| n.has_tag_name("pPr"))
        .map(|ppr| {
            let style = ppr.children().find(|n| n.has_tag_name("pStyle")).and_then(|s| s.attributes().find(|a| a.name() == "val")).map(|a| a.value().to_owned());
            let style = style.unwrap_or_default();
            // numbering on the paragraph, or a list style (ListBullet, ListNumber, …)
            let list = ppr.children().any(|n| n.has_tag_name("numPr")) || style.to_ascii_lowercase().starts_with("list");
            (style, list)
        })
        .unwrap_or_default();
    let mut text = String::new();
    for n in p.descendants() {
        if !n.is_element() {
            continue;
        }
        match n.tag_name().name() {
            "t" => text.push_str(n.text().unwrap_or_default()),
            "tab" if n.parent().is_some_and(|r| r.has_tag_name("r")) => text.push('\t'),
            "br" | "cr" => text.push('\n'),
            _ => {}
        }
    }
    let level = match style.0.to_ascii_lowercase().as_str() {
        "title" => Some(1),
        s => s.strip_prefix("heading").and_then(|n| n.trim().parse::<usize>().ok()).map(|n| n.clamp(1, 6)),
    };
    match (level, style.1) {
        (Some(l), _) if !text.trim().is_empty() => format!("{} {text}", "#".repeat(l)),
        (None, true) if !text.trim().is_empty() => format!("- {text}"),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_the_budget() {
        let long = "a".repeat(MAX_RESULT_CHARS + 5);
        let e = extract(Format::Text, long.as_bytes(), "a.txt").unwrap();
        assert!(e.truncated && e.content.len() == MAX_RESULT_CHARS);
        assert!(extract(Format::Markdown, b"  \n", "e.md").unwrap_err().contains("no extractable text"));
    }

    #[test]
    fn html_keeps_its_title_and_drops_scripts() {
        let html = b"<html><head><title>Price list</title><script>alert(1)</script></head><body><h1>Prices</h1><p>Tea costs 3 euros.</p></body></html>";
        let e = extract(Format::Html, html, "p.html").unwrap();
        assert_eq!(e.title.as_deref(), Some("Price list"));
        assert!(e.content.contains("Tea costs 3 euros") && !e.content.contains("alert"), "{}", e.content);
    }
}
