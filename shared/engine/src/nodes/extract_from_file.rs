//! Extract from File (`n8n-nodes-base.extractFromFile`, v1): a binary file →
//! rows of a CSV, or its text / JSON / XML / HTML / base64 in a field.
//! Workbook formats (xlsx, xls, ods, rtf), PDF and iCalendar need parsers this
//! engine does not carry: they fail with a clear error.

use serde_json::{Map, Value};

use super::binary::{self, each_item};
use super::{set_path, NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let op = ctx.param_str("operation", 0, "csv")?;
    let out = match op.as_str() {
        "csv" => each_item(ctx, &input, csv)?,
        "xlsx" | "html" => each_item(ctx, &input, |ctx, item, i, out| spreadsheet(ctx, item, i, out, &op))?,
        "xls" | "ods" | "rtf" | "pdf" | "fromIcs" => {
            return Err(EngineError::node(format!(
                "Extract from File: the '{op}' operation is not supported by this engine (supported: csv, xlsx, html, fromJson, text, xml, binaryToPropery)"
            )))
        }
        "fromJson" | "text" | "xml" | "binaryToPropery" => each_item(ctx, &input, |ctx, item, i, out| move_to(ctx, item, i, out, &op))?,
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    };
    Ok(NodeOutput::one(out))
}

/// n8n's `moveTo` operation: the file's content into `destinationKey`.
fn move_to(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>, op: &str) -> Result<()> {
    let prop = ctx.param_str("binaryPropertyName", i, "data")?;
    let dest = ctx.param_str("destinationKey", i, "data")?;
    // without the option n8n keeps neither the json nor the file
    let keep = ctx.param_str("options.keepSource", i, "")?;
    // an item without that file is skipped, as n8n does
    if item.binary.as_ref().and_then(|b| b.get(&prop)).is_none() {
        return Ok(());
    }
    let (bytes, _) = binary::read(item, &prop, i)?;
    let value = if op == "binaryToPropery" {
        use base64::Engine as _;
        Value::String(binary::B64.encode(&bytes))
    } else {
        let text = binary::decode(&bytes, &ctx.param_str("options.encoding", i, "utf8")?, ctx.param_bool("options.stripBOM", i, true)?)?;
        if op == "fromJson" {
            if text.is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(&text).map_err(|e| EngineError::node(format!("The file is not valid JSON: {e}")))?
            }
        } else {
            Value::String(text)
        }
    };
    let mut json = if keep == "json" || keep == "both" { Value::clone(&item.json) } else { Value::Object(Map::new()) };
    set_path(&mut json, &dest, value);
    let mut it = item_from(json, i);
    let mut bin = item.binary.as_ref().map(|b| Value::clone(b)).unwrap_or(Value::Object(Map::new()));
    if !(keep == "binary" || keep == "both") {
        if let Value::Object(m) = &mut bin {
            m.shift_remove(&prop);
        }
    }
    if bin.as_object().is_some_and(|m| !m.is_empty()) {
        it.binary = Some(bin.into());
    }
    out.push(it);
    Ok(())
}

/// Rows of a CSV file as csv-parse reads them for n8n: the header row names
/// the columns, empty cells are left out unless `includeEmptyCells`.
pub(crate) fn csv(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>) -> Result<()> {
    let prop = ctx.param_str("binaryPropertyName", i, "data")?;
    let (bytes, meta) = binary::read(item, &prop, i)?;
    let ext = meta.get("fileExtension").and_then(Value::as_str).unwrap_or("").to_string();
    let text = binary::decode(&bytes, &ctx.param_str("options.encoding", i, "utf8")?, ctx.param_bool("options.enableBOM", i, false)?)?;
    let delim = ctx.param_str("options.delimiter", i, ",")?;
    let header = ctx.param_bool("options.headerRow", i, true)?;
    let include_empty = ctx.param_bool("options.includeEmptyCells", i, false)?;
    let from_line = ctx.param_f64("options.fromLine", i, 0.0)?.max(0.0) as usize;
    let max_rows = ctx.param_f64("options.maxRowCount", i, -1.0)?;
    let delim_byte = match delim.as_bytes() {
        [] => b',',
        [b] => *b,
        _ => return Err(EngineError::node("Extract from File: the delimiter must be a single character")),
    };
    // the csv crate always drops a BOM; csv-parse keeps it unless `bom` is set,
    // so a kept BOM is put back on the first cell
    let (body, bom) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, "\u{feff}"),
        None => (text.as_str(), ""),
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delim_byte)
        .has_headers(false)
        .flexible(true)
        .from_reader(body.as_bytes());
    let mut columns: Option<Vec<String>> = None;
    let mut count = 0usize;
    for (line, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| {
            let mut m = format!("Invalid CSV: {e}");
            if !ext.is_empty() && ext != "csv" {
                m = "The file selected in 'Input Binary Field' is not in csv format".into();
            }
            EngineError::node(m)
        })?;
        if line + 1 < from_line {
            continue;
        }
        let mut cells: Vec<String> = rec.iter().map(str::to_string).collect();
        if line == 0 && !bom.is_empty() {
            if let Some(first) = cells.first_mut() {
                first.insert_str(0, bom);
            }
        }
        if header && columns.is_none() {
            columns = Some(cells);
            continue;
        }
        if max_rows >= 0.0 && count as f64 >= max_rows {
            break;
        }
        count += 1;
        let json = match &columns {
            Some(cols) => {
                let mut m = Map::new();
                for (k, v) in cols.iter().zip(cells) {
                    if include_empty || !v.is_empty() {
                        m.insert(k.clone(), Value::String(v));
                    }
                }
                Value::Object(m)
            }
            None => {
                let mut m = Map::new();
                m.insert("row".into(), Value::Array(cells.into_iter().filter(|c| include_empty || !c.is_empty()).map(Value::String).collect()));
                Value::Object(m)
            }
        };
        out.push(item_from(json, i));
    }
    Ok(())
}

/// Rows of the first (or the named) sheet of an xlsx file, or of the first
/// table of an HTML file, as SheetJS's `sheet_to_json` gives them to n8n:
/// the header row names the columns (`__EMPTY`, `name_1` for blank and
/// repeated names), blank rows are left out; without a header row each row
/// is `{row: [...]}`.
pub(crate) fn spreadsheet(ctx: &mut NodeContext<'_>, item: &Item, i: usize, out: &mut Vec<Item>, op: &str) -> Result<()> {
    let prop = ctx.param_str("binaryPropertyName", i, "data")?;
    let (bytes, meta) = binary::read(item, &prop, i)?;
    let ext = meta.get("fileExtension").and_then(Value::as_str).unwrap_or("").to_string();
    let sheet_name = ctx.param_str("options.sheetName", i, "")?;
    let header = ctx.param_bool("options.headerRow", i, true)?;
    let include_empty = ctx.param_bool("options.includeEmptyCells", i, false)?;
    let range = ctx.param_str("options.range", i, "")?;
    let read = if op == "html" {
        Ok(html_sheet(&String::from_utf8_lossy(&bytes)))
    } else {
        super::xlsx::read(&bytes, (!sheet_name.is_empty()).then_some(sheet_name.as_str())).map(|(_, s)| s)
    };
    let sheet = read.map_err(|e| {
        if !ext.is_empty() && ext != op {
            EngineError::node_with(
                format!("The file selected in 'Input Binary Field' is not in {op} format"),
                format!("Try to change the operation or select a {op} file in 'Input Binary Field'"),
            )
        } else {
            e
        }
    })?;
    let Some((mut r0, mut c0, mut r1, mut c1)) = sheet.range else { return Ok(()) };
    if !range.is_empty() {
        match range.trim().parse::<usize>() {
            Ok(start) => r0 = start,
            Err(_) => {
                let mut p = range.split(':');
                let a = p.next().and_then(super::xlsx::cell_ref).ok_or_else(|| EngineError::node(format!("Invalid range '{range}'")))?;
                let b = p.next().and_then(super::xlsx::cell_ref).unwrap_or(a);
                (r0, c0, r1, c1) = (a.0, a.1, b.0, b.1);
            }
        }
    }
    let at = |r: usize, c: usize| sheet.cells.iter().find(|(cr, cc, _)| *cr == r && *cc == c).map(|(_, _, v)| v);
    let defval = include_empty.then(|| Value::String(String::new()));
    if !header {
        for r in r0..=r1 {
            let mut row: Vec<Value> = Vec::new();
            let mut any = false;
            for c in c0..=c1 {
                match (at(r, c), &defval) {
                    (Some(v), _) => {
                        row.resize(c - c0, Value::Null);
                        row.push(v.clone());
                        any = true;
                    }
                    (None, Some(d)) => {
                        row.resize(c - c0, Value::Null);
                        row.push(d.clone());
                    }
                    (None, None) => {}
                }
            }
            let _ = any;
            out.push(item_from(serde_json::json!({ "row": row }), i));
        }
        return Ok(());
    }
    let mut names: Vec<String> = Vec::new();
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for c in c0..=c1 {
        let v = match at(r0, c) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => super::js_string(v),
            None => "__EMPTY".into(),
        };
        let name = match seen.get(&v).copied() {
            None => {
                seen.insert(v.clone(), 1);
                v
            }
            Some(mut counter) => {
                let mut vv = format!("{v}_{counter}");
                while seen.contains_key(&vv) {
                    counter += 1;
                    vv = format!("{v}_{counter}");
                }
                seen.insert(v.clone(), counter + 1);
                seen.insert(vv.clone(), 1);
                vv
            }
        };
        names.push(name);
    }
    for r in r0 + 1..=r1 {
        let mut m = Map::new();
        let mut any = false;
        for (k, c) in (c0..=c1).enumerate() {
            match (at(r, c), &defval) {
                (Some(v), _) => {
                    m.insert(names[k].clone(), v.clone());
                    any = true;
                }
                (None, Some(d)) => {
                    m.insert(names[k].clone(), d.clone());
                }
                (None, None) => {}
            }
        }
        if any {
            out.push(item_from(Value::Object(m), i));
        }
    }
    Ok(())
}

/// The first `<table>` of an HTML document as a sheet (SheetJS's HTML
/// reader): cell text, numbers as numbers, `colspan`/`rowspan` honoured.
fn html_sheet(html: &str) -> super::xlsx::Sheet {
    use scraper::{Html, Selector};
    let doc = Html::parse_document(html);
    let (Ok(table_sel), Ok(row_sel), Ok(cell_sel)) = (Selector::parse("table"), Selector::parse("tr"), Selector::parse("td, th")) else {
        return super::xlsx::Sheet { cells: Vec::new(), range: None };
    };
    let mut cells = Vec::new();
    let mut taken: std::collections::HashSet<(usize, usize)> = std::collections::HashSet::new();
    let (mut last_r, mut last_c) = (0usize, 0usize);
    if let Some(table) = doc.select(&table_sel).next() {
        for (r, tr) in table.select(&row_sel).enumerate() {
            let mut c = 0usize;
            for td in tr.select(&cell_sel) {
                while taken.contains(&(r, c)) {
                    c += 1;
                }
                let text: String = td.text().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ");
                let span = |a: &str| td.value().attr(a).and_then(|v| v.parse::<usize>().ok()).unwrap_or(1).clamp(1, 1000);
                let (cs, rs) = (span("colspan"), span("rowspan"));
                for dr in 0..rs {
                    for dc in 0..cs {
                        taken.insert((r + dr, c + dc));
                    }
                }
                if !text.is_empty() {
                    let v = match text.parse::<f64>() {
                        Ok(n) if n.is_finite() && !text.starts_with('+') => binary::num_value(n),
                        _ => Value::String(text),
                    };
                    cells.push((r, c, v));
                }
                last_r = last_r.max(r + rs - 1);
                last_c = last_c.max(c + cs - 1);
                c += cs;
            }
        }
    }
    let range = (!taken.is_empty()).then_some((0, 0, last_r, last_c));
    super::xlsx::Sheet { cells, range }
}
