//! The first worksheet level of Office Open XML spreadsheets (`.xlsx`),
//! enough for Convert to File / Extract from File: cells as SheetJS's
//! `sheet_to_json` and `json_to_sheet` see them (shared and inline strings,
//! numbers, booleans, formulas' cached values). Built on `zip` + `roxmltree`.

use std::io::{Read, Write};

use serde_json::Value;

use crate::error::{EngineError, Result};

/// One sheet: cells by (row, column), zero-based, and the used range.
#[derive(Debug)]
pub struct Sheet {
    pub cells: Vec<(usize, usize, Value)>,
    /// `(first_row, first_col, last_row, last_col)`, `None` for an empty sheet.
    pub range: Option<(usize, usize, usize, usize)>,
}

const MAX_PART: u64 = 256 << 20;

fn err(e: impl std::fmt::Display) -> EngineError {
    EngineError::node(format!("The file is not a valid xlsx workbook: {e}"))
}

fn part(zip: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>, name: &str) -> Result<Option<String>> {
    let mut f = match zip.by_name(name) {
        Ok(f) => f,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(err(e)),
    };
    let mut s = String::new();
    (&mut f).take(MAX_PART).read_to_string(&mut s).map_err(err)?;
    Ok(Some(s))
}

fn parse(xml: &str) -> Result<roxmltree::Document<'_>> {
    roxmltree::Document::parse(xml).map_err(err)
}

/// `"AB12"` → (row 11, col 27).
pub fn cell_ref(r: &str) -> Option<(usize, usize)> {
    let letters: String = r.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let digits = &r[letters.len()..];
    if letters.is_empty() || digits.is_empty() {
        return None;
    }
    let col = letters.bytes().fold(0usize, |acc, b| acc * 26 + (b.to_ascii_uppercase() - b'A' + 1) as usize) - 1;
    let row: usize = digits.parse().ok()?;
    Some((row.checked_sub(1)?, col))
}

/// Column name of a zero-based index (`0` → `A`, `27` → `AB`).
pub fn column_name(mut c: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'A' + (c % 26) as u8);
        if c < 26 {
            break;
        }
        c = c / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).unwrap_or_default()
}

fn text_of(n: roxmltree::Node) -> String {
    // `<t>` runs (rich text: several `<r><t>`), phonetic runs left out
    n.descendants()
        .filter(|d| d.has_tag_name("t") && !d.ancestors().any(|a| a.has_tag_name("rPh")))
        .filter_map(|d| d.text())
        .collect()
}

/// Sheet names of a workbook and the named (or first) sheet's cells.
pub fn read(bytes: &[u8], sheet: Option<&str>) -> Result<(Vec<String>, Sheet)> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(err)?;
    let wb_text = part(&mut zip, "xl/workbook.xml")?.ok_or_else(|| err("no xl/workbook.xml"))?;
    let wb = parse(&wb_text)?;
    let sheets: Vec<(String, String)> = wb
        .descendants()
        .filter(|n| n.has_tag_name("sheet"))
        .map(|n| {
            let id = n.attributes().find(|a| a.name() == "id").map(|a| a.value().to_string()).unwrap_or_default();
            (n.attribute("name").unwrap_or("").to_string(), id)
        })
        .collect();
    let names: Vec<String> = sheets.iter().map(|(n, _)| n.clone()).collect();
    if sheets.is_empty() {
        return Err(EngineError::node("Spreadsheet does not have any sheets!"));
    }
    let (_, rid) = match sheet {
        Some(want) => sheets
            .iter()
            .find(|(n, _)| n == want)
            .ok_or_else(|| EngineError::node(format!("Spreadsheet does not contain sheet called \"{want}\"!")))?,
        None => &sheets[0],
    };
    let rels_text = part(&mut zip, "xl/_rels/workbook.xml.rels")?.unwrap_or_default();
    let target = if rels_text.is_empty() {
        None
    } else {
        let rels = parse(&rels_text)?;
        rels.descendants().find(|n| n.has_tag_name("Relationship") && n.attribute("Id") == Some(rid)).and_then(|n| n.attribute("Target")).map(str::to_string)
    };
    let path = match target {
        Some(t) if t.starts_with('/') => t.trim_start_matches('/').to_string(),
        Some(t) => format!("xl/{t}"),
        None => "xl/worksheets/sheet1.xml".into(),
    };
    let shared: Vec<String> = match part(&mut zip, "xl/sharedStrings.xml")? {
        Some(t) => parse(&t)?.descendants().filter(|n| n.has_tag_name("si")).map(text_of).collect(),
        None => Vec::new(),
    };
    let ws_text = part(&mut zip, &path)?.ok_or_else(|| err(format!("no {path}")))?;
    let ws = parse(&ws_text)?;
    let mut cells = Vec::new();
    let (mut r0, mut c0, mut r1, mut c1) = (usize::MAX, usize::MAX, 0usize, 0usize);
    let mut row_no = 0usize;
    for row in ws.descendants().filter(|n| n.has_tag_name("row")) {
        row_no = row.attribute("r").and_then(|r| r.parse::<usize>().ok()).map(|r| r - 1).unwrap_or(row_no);
        let mut col_no = 0usize;
        for c in row.children().filter(|n| n.has_tag_name("c")) {
            let (r, col) = c.attribute("r").and_then(cell_ref).unwrap_or((row_no, col_no));
            col_no = col + 1;
            let v = c.children().find(|n| n.has_tag_name("v")).and_then(|n| n.text()).unwrap_or("");
            let value = match c.attribute("t").unwrap_or("n") {
                "s" => v.trim().parse::<usize>().ok().and_then(|k| shared.get(k)).map(|s| Value::String(s.clone())),
                "inlineStr" => c.children().find(|n| n.has_tag_name("is")).map(|n| Value::String(text_of(n))),
                "str" | "d" => Some(Value::String(v.to_string())),
                "b" => Some(Value::Bool(v.trim() == "1" || v.trim() == "true")),
                "e" => None,
                _ if v.trim().is_empty() => None,
                _ => v.trim().parse::<f64>().ok().map(crate::nodes::binary::num_value),
            };
            if let Some(value) = value {
                r0 = r0.min(r);
                c0 = c0.min(col);
                r1 = r1.max(r);
                c1 = c1.max(col);
                cells.push((r, col, value));
            }
        }
        row_no += 1;
    }
    // the declared dimension wins where it is larger (SheetJS's `!ref`)
    if let Some(d) = ws.descendants().find(|n| n.has_tag_name("dimension")).and_then(|n| n.attribute("ref")) {
        let mut parts = d.split(':');
        if let (Some(a), b) = (parts.next().and_then(cell_ref), parts.next().and_then(cell_ref)) {
            let b = b.unwrap_or(a);
            if !cells.is_empty() || a != (0, 0) || b != (0, 0) {
                r0 = r0.min(a.0);
                c0 = c0.min(a.1);
                r1 = r1.max(b.0);
                c1 = c1.max(b.1);
            }
        }
    }
    let range = (r0 != usize::MAX).then_some((r0, c0, r1, c1));
    Ok((names, Sheet { cells, range }))
}

fn esc(s: &str) -> String {
    let s: String = s.chars().filter(|c| !matches!(*c as u32, 0..=8 | 11 | 12 | 14..=31)).collect();
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A workbook with one sheet holding `grid` (rows of cells; `Null` = empty).
pub fn write(grid: &[Vec<Value>], sheet_name: &str, compress: bool) -> Result<Vec<u8>> {
    let mut sheet = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<worksheet xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\">",
    );
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    if !grid.is_empty() && cols > 0 {
        sheet.push_str(&format!("<dimension ref=\"A1:{}{}\"/>", column_name(cols - 1), grid.len()));
    }
    sheet.push_str("<sheetData>");
    for (r, row) in grid.iter().enumerate() {
        sheet.push_str(&format!("<row r=\"{}\">", r + 1));
        for (c, v) in row.iter().enumerate() {
            let at = format!("{}{}", column_name(c), r + 1);
            match v {
                Value::Null => {}
                Value::Bool(b) => sheet.push_str(&format!("<c r=\"{at}\" t=\"b\"><v>{}</v></c>", u8::from(*b))),
                Value::Number(n) => sheet.push_str(&format!("<c r=\"{at}\"><v>{n}</v></c>")),
                Value::String(s) => sheet.push_str(&format!("<c r=\"{at}\" t=\"inlineStr\"><is><t xml:space=\"preserve\">{}</t></is></c>", esc(s))),
                other => sheet.push_str(&format!("<c r=\"{at}\" t=\"inlineStr\"><is><t>{}</t></is></c>", esc(&other.to_string()))),
            }
        }
        sheet.push_str("</row>");
    }
    sheet.push_str("</sheetData></worksheet>");
    let parts: [(&str, String); 5] = [
        (
            "[Content_Types].xml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\"><Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/><Default Extension=\"xml\" ContentType=\"application/xml\"/><Override PartName=\"/xl/workbook.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml\"/><Override PartName=\"/xl/worksheets/sheet1.xml\" ContentType=\"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml\"/></Types>".into(),
        ),
        (
            "_rels/.rels",
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument\" Target=\"xl/workbook.xml\"/></Relationships>".into(),
        ),
        (
            "xl/workbook.xml",
            format!("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<workbook xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\"><sheets><sheet name=\"{}\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>", esc(sheet_name)),
        ),
        (
            "xl/_rels/workbook.xml.rels",
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<Relationships xmlns=\"http://schemas.openxmlformats.org/package/2006/relationships\"><Relationship Id=\"rId1\" Type=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet\" Target=\"worksheets/sheet1.xml\"/></Relationships>".into(),
        ),
        ("xl/worksheets/sheet1.xml", sheet),
    ];
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let method = if compress { zip::CompressionMethod::Deflated } else { zip::CompressionMethod::Stored };
    for (name, body) in parts {
        w.start_file(name, zip::write::SimpleFileOptions::default().compression_method(method)).map_err(err)?;
        w.write_all(body.as_bytes()).map_err(err)?;
    }
    Ok(w.finish().map_err(err)?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_what_it_reads() {
        let grid = vec![vec![json!("id"), json!("name & co"), json!("ok")], vec![json!(1), json!("<a>"), json!(true)], vec![json!(2.5), Value::Null, json!(false)]];
        for compress in [false, true] {
            let bytes = write(&grid, "Data", compress).unwrap();
            let (names, sheet) = read(&bytes, None).unwrap();
            assert_eq!(names, ["Data"]);
            assert_eq!(sheet.range, Some((0, 0, 2, 2)));
            assert!(sheet.cells.contains(&(1, 1, json!("<a>"))) && sheet.cells.contains(&(2, 0, json!(2.5))) && sheet.cells.contains(&(1, 2, json!(true))));
            assert!(!sheet.cells.iter().any(|(r, c, _)| (*r, *c) == (2, 1)));
        }
        assert_eq!(cell_ref("AB12"), Some((11, 27)));
        assert_eq!(column_name(27), "AB");
        assert!(read(b"not a zip", None).is_err());
        let bytes = write(&grid, "Data", false).unwrap();
        assert!(read(&bytes, Some("Other")).unwrap_err().to_string().contains("does not contain sheet called \"Other\""));
    }
}
