//! Convert to File (`n8n-nodes-base.convertToFile`, v1, v1.1): items → a CSV,
//! HTML table, JSON or text file, or a base64 string → a file. Spreadsheet
//! formats that need a workbook writer (xlsx, xls, ods, rtf) and iCal are
//! refused with a clear error.

use serde_json::{json, Map, Value};

use super::binary::{self, each_item};
use super::{get_path, NodeContext, NodeOutput};
use crate::data::{Item, PairedItem};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let op = ctx.param_str("operation", 0, "csv")?;
    let out = match op.as_str() {
        "csv" | "html" | "xlsx" => spreadsheet(ctx, &input, &op)?,
        "xls" | "ods" | "rtf" => {
            return Err(EngineError::node(format!(
                "Convert to File: the '{op}' format is not supported by this engine (supported: csv, html, xlsx, toJson, toText, toBinary)"
            )))
        }
        "iCal" => event_files(ctx, &input)?,
        "toJson" => to_json(ctx, &input)?,
        "toText" => each_item(ctx, &input, |ctx, item, i, out| {
            let key = ctx.param_str("sourceProperty", i, "")?;
            let prop = ctx.param_str("binaryPropertyName", i, "data")?;
            let text = source_text(item, &key)?;
            let bytes = binary::encode(&text, &ctx.param_str("options.encoding", i, "utf8")?, ctx.param_bool("options.addBOM", i, false)?)?;
            let name = non_empty(ctx.param_str("options.fileName", i, "")?, "file.txt");
            out.push(binary::item_with(json!({}), &prop, binary::entry(&bytes, &name, Some("text/plain")), i));
            Ok(())
        })?,
        "toBinary" => each_item(ctx, &input, |ctx, item, i, out| {
            let key = ctx.param_str("sourceProperty", i, "")?;
            let prop = ctx.param_str("binaryPropertyName", i, "data")?;
            let mut mime = ctx.param_str("options.mimeType", i, "")?;
            let bytes = if ctx.param_bool("options.dataIsBase64", i, true)? {
                from_base64(&source_text(item, &key)?, &mut mime)?
            } else {
                if matches!(get_path(&item.json, &key), Some(Value::Object(_) | Value::Array(_))) {
                    mime = "application/json".into();
                }
                binary::encode(&source_text(item, &key)?, &ctx.param_str("options.encoding", i, "utf8")?, ctx.param_bool("options.addBOM", i, false)?)?
            };
            let name = ctx.param_str("options.fileName", i, "")?;
            let mime = if mime.is_empty() { sniff_mime(&bytes, &name) } else { mime };
            let name = if name.is_empty() { default_name(&mime) } else { name };
            out.push(binary::item_with(json!({}), &prop, binary::entry(&bytes, &name, Some(&mime)), i));
            Ok(())
        })?,
        other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    };
    Ok(NodeOutput::one(out))
}

/// One iCalendar event file per item (`binaryPropertyName`, `additionalFields`).
fn event_files(ctx: &mut NodeContext<'_>, input: &[Item]) -> Result<Vec<Item>> {
    each_item(ctx, input, |ctx, _item, i, out| {
        let prop = ctx.param_str("binaryPropertyName", i, "data")?;
        let fields = ctx.param("additionalFields", i, json!({}))?;
        let ics = ical(ctx, i, &fields)?;
        let name = fields.get("fileName").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or("event.ics").to_string();
        out.push(binary::item_with(json!({}), &prop, binary::entry(ics.as_bytes(), &name, Some("text/calendar")), i));
        Ok(())
    })
}

/// iCalendar (`n8n-nodes-base.iCal`, v1): its one operation, Create Event
/// File, is Convert to File's iCal (n8n shares the code between them).
pub fn ical_node(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    match ctx.param_str("operation", 0, "createEventFile")?.as_str() {
        "createEventFile" => Ok(NodeOutput::one(event_files(ctx, &input)?)),
        other => Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    }
}

fn non_empty(s: String, default: &str) -> String {
    if s.is_empty() {
        default.to_string()
    } else {
        s
    }
}

/// n8n's `createBinaryFromJson` source: the value at a dot path, as text.
fn source_text(item: &Item, key: &str) -> Result<String> {
    match get_path(&item.json, key) {
        None | Some(Value::Null) => Err(EngineError::node(format!("The value in \"{key}\" is not set"))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Ok(v.to_string()),
    }
}

/// A date parameter as UTC (a string without offset is taken as UTC, the
/// zone of the function, as n8n's moment reads it in the process zone).
fn utc_date(v: &str, what: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    use chrono::{NaiveDate, NaiveDateTime, Utc};
    let v = v.trim();
    chrono::DateTime::parse_from_rfc3339(v)
        .map(|d| d.with_timezone(&Utc))
        .ok()
        .or_else(|| NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M:%S%.f").ok().map(|n| n.and_utc()))
        .or_else(|| NaiveDateTime::parse_from_str(v, "%Y-%m-%d %H:%M:%S").ok().map(|n| n.and_utc()))
        .or_else(|| NaiveDate::parse_from_str(v, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)).map(|n| n.and_utc()))
        .ok_or_else(|| EngineError::node(format!("'{what}' is not a valid date: '{v}'")))
}

/// iCalendar text escaping (RFC 5545 TEXT).
fn ics_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace(';', "\\;").replace(',', "\\,").replace("\r\n", "\\n").replace('\n', "\\n")
}

/// Folds a content line at 75 octets (RFC 5545 3.1).
fn ics_fold(line: &str, out: &mut String) {
    let mut n = 0;
    for c in line.chars() {
        if n + c.len_utf8() > 75 {
            out.push_str("\r\n ");
            n = 1;
        }
        out.push(c);
        n += c.len_utf8();
    }
    out.push_str("\r\n");
}

/// One event as the `ics` package n8n uses writes it.
fn ical(ctx: &mut NodeContext<'_>, i: usize, f: &Value) -> Result<String> {
    let title = ctx.param_str("title", i, "")?;
    let all_day = ctx.param_bool("allDay", i, false)?;
    let start = utc_date(&ctx.param_str("start", i, "")?, "Start")?;
    let mut end = utc_date(&ctx.param_str("end", i, "")?, "End")?;
    if all_day {
        end += chrono::Duration::days(1);
    }
    let date = |d: &chrono::DateTime<chrono::Utc>| if all_day { format!(";VALUE=DATE:{}", d.format("%Y%m%d")) } else { format!(":{}", d.format("%Y%m%dT%H%M%SZ")) };
    let text = |k: &str| f.get(k).map(super::js_string).filter(|s| !s.is_empty());
    let mut lines: Vec<String> = vec![
        "BEGIN:VCALENDAR".into(),
        "VERSION:2.0".into(),
        "CALSCALE:GREGORIAN".into(),
        "PRODID:adamgibbons/ics".into(),
        "METHOD:PUBLISH".into(),
        "X-PUBLISHED-TTL:PT1H".into(),
    ];
    if let Some(c) = text("calName") {
        lines.push(format!("X-WR-CALNAME:{}", ics_text(&c)));
    }
    lines.push("BEGIN:VEVENT".into());
    lines.push(format!("UID:{}", text("uid").unwrap_or_else(|| uuid::Uuid::new_v4().to_string())));
    lines.push(format!("SUMMARY:{}", ics_text(&title)));
    lines.push(format!("DTSTAMP:{}", chrono::Utc::now().format("%Y%m%dT%H%M00Z")));
    lines.push(format!("DTSTART{}", date(&start)));
    lines.push(format!("DTEND{}", date(&end)));
    if let Some(d) = text("description") {
        lines.push(format!("DESCRIPTION:{}", ics_text(&d)));
    }
    if let Some(u) = text("url") {
        lines.push(format!("URL:{u}"));
    }
    if let Some(g) = f.pointer("/geolocationUi/geolocationValues") {
        lines.push(format!("GEO:{};{}", g.get("lat").map(super::js_string).unwrap_or_default(), g.get("lon").map(super::js_string).unwrap_or_default()));
    }
    if let Some(l) = text("location") {
        lines.push(format!("LOCATION:{}", ics_text(&l)));
    }
    lines.push(format!("STATUS:{}", text("status").unwrap_or_else(|| "CONFIRMED".into())));
    if let Some(o) = f.pointer("/organizerUi/organizerValues") {
        let name = o.get("name").map(super::js_string).unwrap_or_default();
        let email = o.get("email").map(super::js_string).unwrap_or_default();
        lines.push(format!("ORGANIZER;CN={}:MAILTO:{email}", ics_text(&name)));
    }
    for a in f.pointer("/attendeesUi/attendeeValues").and_then(Value::as_array).into_iter().flatten() {
        let name = a.get("name").map(super::js_string).unwrap_or_default();
        let email = a.get("email").map(super::js_string).unwrap_or_default();
        let rsvp = if a.get("rsvp").and_then(Value::as_bool).unwrap_or(false) { "TRUE" } else { "FALSE" };
        lines.push(format!("ATTENDEE;RSVP={rsvp};CN={}:MAILTO:{email}", ics_text(&name)));
    }
    if let Some(b) = text("busyStatus") {
        lines.push(format!("X-MICROSOFT-CDO-BUSYSTATUS:{b}"));
    }
    if let Some(r) = text("recurrenceRule") {
        lines.push(format!("RRULE:{}", r.trim_start_matches("RRULE:")));
    }
    if let Some(n) = f.get("sequence").and_then(Value::as_f64) {
        lines.push(format!("SEQUENCE:{}", n as i64));
    }
    lines.push("END:VEVENT".into());
    lines.push("END:VCALENDAR".into());
    let mut out = String::new();
    for l in &lines {
        ics_fold(l, &mut out);
    }
    Ok(out)
}

/// A base64 string (or `data:` URI) as bytes, as n8n's `createBinaryFromJson`.
fn from_base64(text: &str, mime: &mut String) -> Result<Vec<u8>> {
    use base64::Engine as _;
    let mut b64 = text.trim();
    if let Some(rest) = b64.strip_prefix("data:") {
        if let Some((media, data)) = rest.split_once(";base64,") {
            let media = media.split(';').next().unwrap_or("").trim();
            if mime.is_empty() && !media.is_empty() {
                *mime = media.to_string();
            }
            b64 = data;
        }
    }
    let cleaned: String = b64.chars().filter(|c| !c.is_whitespace()).collect();
    if !cleaned.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '-')) {
        return Err(EngineError::node(
            "The provided string is not valid base64 data. If you are trying to write plain text to a file, use the \"Convert to Text File\" operation instead.",
        ));
    }
    // Node's Buffer.from(…, 'base64') also takes the URL-safe alphabet and missing padding
    let standard: String = cleaned.trim_end_matches('=').replace('-', "+").replace('_', "/");
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(standard.as_bytes())
        .map_err(|_| EngineError::node("The provided string is not valid base64 data."))
}

/// `file.<ext>` for a file without a name (n8n's `createBinaryFromJson`).
fn default_name(mime: &str) -> String {
    match binary::extension_for(mime) {
        Some(e) => format!("file.{e}"),
        None => "file".into(),
    }
}

/// n8n's `prepareBinaryData` without a MIME type: by name, then content, else text.
pub(crate) fn sniff_mime(bytes: &[u8], name: &str) -> String {
    if let Some((_, ext)) = name.rsplit_once('.') {
        return binary::mime_for(&ext.to_ascii_lowercase()).to_string();
    }
    let m = match bytes {
        [0x89, b'P', b'N', b'G', ..] => "image/png",
        [0xFF, 0xD8, 0xFF, ..] => "image/jpeg",
        [b'G', b'I', b'F', b'8', ..] => "image/gif",
        [b'%', b'P', b'D', b'F', ..] => "application/pdf",
        [b'P', b'K', 3, 4, ..] => "application/zip",
        [0x1F, 0x8B, ..] => "application/gzip",
        _ => "text/plain",
    };
    m.to_string()
}

fn all_paired(n: usize) -> Option<PairedItem> {
    if n == 1 {
        return Some(PairedItem::Index(0));
    }
    Some(PairedItem::Other(Box::new(Value::Array((0..n).map(|i| json!({ "item": i })).collect()))))
}

fn to_json(ctx: &mut NodeContext<'_>, input: &[Item]) -> Result<Vec<Item>> {
    let mode = ctx.param_str("mode", 0, "once")?;
    let render = |v: &Value, pretty: bool| if pretty { serde_json::to_string_pretty(v) } else { serde_json::to_string(v) };
    if mode == "each" {
        return each_item(ctx, input, |ctx, item, i, out| {
            let prop = ctx.param_str("binaryPropertyName", i, "data")?;
            let text = render(&item.json, ctx.param_bool("options.format", i, false)?).map_err(|e| EngineError::node(e.to_string()))?;
            let bytes = binary::encode(&text, &ctx.param_str("options.encoding", i, "utf8")?, ctx.param_bool("options.addBOM", i, false)?)?;
            let name = non_empty(ctx.param_str("options.fileName", i, "")?, "file.json");
            out.push(binary::item_with(json!({}), &prop, binary::entry(&bytes, &name, Some("application/json")), i));
            Ok(())
        });
    }
    let prop = ctx.param_str("binaryPropertyName", 0, "data")?;
    let all = Value::Array(input.iter().map(|i| Value::clone(&i.json)).collect());
    let text = render(&all, ctx.param_bool("options.format", 0, false)?).map_err(|e| EngineError::node(e.to_string()))?;
    let bytes = binary::encode(&text, &ctx.param_str("options.encoding", 0, "utf8")?, ctx.param_bool("options.addBOM", 0, false)?)?;
    let name = non_empty(ctx.param_str("options.fileName", 0, "")?, "file.json");
    let mut it = binary::item_with(json!({}), &prop, binary::entry(&bytes, &name, Some("application/json")), 0);
    it.paired_item = all_paired(input.len());
    Ok(vec![it])
}

/// A cell as SheetJS writes it into CSV/HTML.
fn cell_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(true) => "TRUE".into(),
        Value::Bool(false) => "FALSE".into(),
        Value::String(s) => s.clone(),
        Value::Number(_) => super::js_string(v),
        other => other.to_string(),
    }
}

/// n8n's `flattenObject`: nested objects and arrays become `a.b` / `a.0` keys.
fn flatten(v: &Value, prefix: &str, out: &mut Map<String, Value>) {
    let key = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| match x {
            Value::Object(_) | Value::Array(_) => flatten(x, &key(k), out),
            _ => {
                out.insert(key(k), x.clone());
            }
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(n, x)| match x {
            Value::Object(_) | Value::Array(_) => flatten(x, &key(&n.to_string()), out),
            _ => {
                out.insert(key(&n.to_string()), x.clone());
            }
        }),
        _ => {}
    }
}

/// Flattened rows in SheetJS `json_to_sheet` order: columns as keys first appear.
fn table(input: &[Item]) -> (Vec<String>, Vec<Map<String, Value>>) {
    let mut cols: Vec<String> = Vec::new();
    let mut rows = Vec::with_capacity(input.len());
    for it in input {
        let mut m = Map::new();
        flatten(&it.json, "", &mut m);
        for k in m.keys() {
            if !cols.iter().any(|c| c == k) {
                cols.push(k.clone());
            }
        }
        rows.push(m);
    }
    (cols, rows)
}

fn spreadsheet(ctx: &mut NodeContext<'_>, input: &[Item], op: &str) -> Result<Vec<Item>> {
    write_spreadsheet(ctx, input, op, "File")
}

/// One csv / xlsx / html file of all items, named `<stem>.<format>` unless
/// `options.fileName` says otherwise (also Spreadsheet File's Write to File).
pub(crate) fn write_spreadsheet(ctx: &mut NodeContext<'_>, input: &[Item], op: &str, stem: &str) -> Result<Vec<Item>> {
    let prop = ctx.param_str("binaryPropertyName", 0, "data")?;
    let header = ctx.param_bool("options.headerRow", 0, true)?;
    let (cols, rows) = table(input);
    let mut grid: Vec<Vec<Value>> = Vec::with_capacity(rows.len() + 1);
    if header {
        grid.push(cols.iter().map(|c| Value::String(c.clone())).collect());
    }
    for r in rows.iter() {
        grid.push(cols.iter().map(|c| r.get(c).cloned().unwrap_or(Value::Null)).collect());
    }
    let (bytes, mime) = if op == "csv" {
        let delim = ctx.param_str("options.delimiter", 0, ",")?;
        let delim = if delim.is_empty() { ",".to_string() } else { delim };
        let mut text = String::from("\u{feff}");
        for (n, row) in grid.iter().enumerate() {
            if n > 0 {
                text.push('\n');
            }
            let cells: Vec<String> = row.iter().map(|v| csv_field(&cell_text(v), &delim)).collect();
            text.push_str(&cells.join(&delim));
        }
        (text.into_bytes(), "text/csv")
    } else if op == "xlsx" {
        let sheet = match ctx.param_str("options.sheetName", 0, "")? {
            s if s.is_empty() => "Sheet".to_string(),
            s => s,
        };
        let compress = ctx.param_bool("options.compression", 0, false)?;
        (super::xlsx::write(&grid, &sheet, compress)?, binary::mime_for("xlsx"))
    } else {
        (html_table(&grid).into_bytes(), "text/html")
    };
    // an explicitly empty file name stays empty, as in n8n
    let name = match ctx.param_opt("options.fileName", 0)? {
        Some(v) => super::js_string(&v),
        None => format!("{stem}.{op}"),
    };
    let mut it = binary::item_with(json!({}), &prop, binary::entry(&bytes, &name, Some(mime)), 0);
    it.paired_item = all_paired(input.len());
    Ok(vec![it])
}

fn csv_field(s: &str, delim: &str) -> String {
    if s.contains(delim) || s.contains('"') || s.contains('\n') || s.contains('\r') {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#x27;")
}

/// SheetJS `sheet_to_html`'s shape (cells carry their type and value).
fn html_table(grid: &[Vec<Value>]) -> String {
    let mut s = String::from("<html><head><meta charset=\"utf-8\"/><title>SheetJS Table Export</title></head><body><table>");
    for (r, row) in grid.iter().enumerate() {
        s.push_str("<tr>");
        for (c, v) in row.iter().enumerate() {
            let id = format!("sjs-{}{}", super::xlsx::column_name(c), r + 1);
            let text = escape_html(&cell_text(v));
            let (t, raw) = match v {
                Value::Null => {
                    s.push_str(&format!("<td id=\"{id}\"></td>"));
                    continue;
                }
                Value::Number(_) => ("n", text.clone()),
                Value::Bool(b) => ("b", b.to_string()),
                _ => ("s", text.clone()),
            };
            s.push_str(&format!("<td data-t=\"{t}\" data-v=\"{raw}\" id=\"{id}\">{text}</td>"));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></body></html>");
    s
}
