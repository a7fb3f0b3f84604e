//! Google Sheets (API v4, https://developers.google.com/sheets/api/reference/rest):
//! the row/column mapping its description cannot say — a sheet found by
//! name, id or URL; rows as objects keyed by the header row; appends,
//! updates and upserts over the whole input with one read of the sheet;
//! reads with filters — as n8n's Google Sheets node (v3-4.7) does it.

use serde_json::{json, Map, Value};

use super::{api_error, at, count, item, locator, per_item, text};
use crate::data::{item_from, with_pair, Item};
use crate::declarative::{Call, Run, ServiceRequest};
use crate::error::{EngineError, Result};
use crate::nodes::js_string;
use reqwest::Method;

/// The virtual column of a row's number in read output.
const ROW_NUMBER: &str = "row_number";

pub(crate) fn code(op: &str) -> Option<Run> {
    Some(match op {
        "append" => append,
        "appendOrUpdate" => append_or_update,
        "update" => update,
        "read" => read,
        "clear" => clear,
        "create" => create_sheet,
        "remove" => remove_sheet,
        "delete" => delete_dimension,
        "spreadsheetCreate" => create_spreadsheet,
        _ => return None,
    })
}

/// One spreadsheet, and the sheet the node's parameters select.
struct Sheet {
    id: String,
    sheet_id: i64,
    title: String,
}

/// JavaScript's `encodeURIComponent` of a sheet name, the range after `!`
/// kept (a name alone quoted, so it is not read as a range).
fn encode_range(range: &str) -> String {
    match range.split_once('!') {
        Some((sheet, cells)) => format!("{}!{cells}", super::encode_component(sheet)),
        None => super::encode_component(&format!("'{range}'")),
    }
}

fn spreadsheet_id(p: &Map<String, Value>) -> Result<String> {
    let (mode, value) = locator(p, "documentId");
    if value.is_empty() {
        return Err(EngineError::node(format!("Can not get sheet '{}' with a value of ''", match mode.as_str() {
            "url" => "By URL",
            "list" => "From List",
            _ => "By ID",
        })));
    }
    if mode == "url" {
        // an id (or a whole URL the mode's pattern did not match)
        let re = regex::Regex::new(r"([-\w]{25,})").expect("a valid pattern");
        return Ok(re.find(&value).map(|m| m.as_str().to_owned()).unwrap_or_default());
    }
    Ok(value)
}

/// `gid=0` → 0, else the number the value starts with (`parseInt`).
fn sheet_id_of(v: &str) -> Option<i64> {
    if v == "gid=0" {
        return Some(0);
    }
    let digits: String = v.trim().chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse().ok()
}

fn start(call: &mut Call<'_, '_>) -> Result<Map<String, Value>> {
    call.api_error = api_error;
    call.params(0)
}

/// The spreadsheet's sheets (`fields=sheets.properties`).
fn sheets_of(call: &mut Call<'_, '_>, id: &str) -> Result<Vec<Value>> {
    let answer = call.json(ServiceRequest::new(Method::GET, format!("/v4/spreadsheets/{id}")).query("fields", "sheets.properties"))?;
    Ok(answer.get("sheets").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// The sheet `sheetName` selects, looked up by name or id.
fn sheet(call: &mut Call<'_, '_>, p: &Map<String, Value>) -> Result<Sheet> {
    let id = spreadsheet_id(p)?;
    let (mode, value) = locator(p, "sheetName");
    let found = sheets_of(call, &id)?.into_iter().map(|s| s.get("properties").cloned().unwrap_or(Value::Null)).find(|props| {
        if mode == "name" {
            props.get("title").and_then(Value::as_str) == Some(value.as_str())
        } else {
            props.get("sheetId").and_then(Value::as_i64).is_some_and(|s| Some(s) == sheet_id_of(&value))
        }
    });
    match found {
        Some(props) if props.get("title").and_then(Value::as_str).is_some_and(|t| !t.is_empty()) => Ok(Sheet {
            id,
            sheet_id: props.get("sheetId").and_then(Value::as_i64).unwrap_or(0),
            title: props["title"].as_str().unwrap_or_default().to_owned(),
        }),
        _ => Err(EngineError::node(format!("Sheet with {} {value} not found", if mode == "name" { "name" } else { "ID" }))),
    }
}

/// The values of `range` (`values.get`).
fn get_data(call: &mut Call<'_, '_>, id: &str, range: &str, render: &str, date_time: &str) -> Result<Vec<Vec<Value>>> {
    let answer = call.json(
        ServiceRequest::new(Method::GET, format!("/v4/spreadsheets/{id}/values/{}", encode_range(range))).query("valueRenderOption", render).query("dateTimeRenderOption", date_time),
    )?;
    Ok(answer.get("values").and_then(Value::as_array).map(|rows| rows.iter().map(|r| r.as_array().cloned().unwrap_or_default()).collect()).unwrap_or_default())
}

/// Writes `rows` from row `row` (`values.update`, or `values.append`).
fn update_rows(call: &mut Call<'_, '_>, id: &str, sheet: &str, rows: Vec<Vec<Value>>, input: &str, row: usize, append: bool) -> Result<Value> {
    let name = sheet.split('!').next().unwrap_or(sheet);
    let range = format!("{name}!{row}:{}", row + rows.len().max(1) - 1);
    let body = json!({"range": range, "values": rows});
    let (method, path) = if append { (Method::POST, format!("/v4/spreadsheets/{id}/values/{}:append", encode_range(&range))) } else { (Method::PUT, format!("/v4/spreadsheets/{id}/values/{}", encode_range(&range))) };
    call.json(ServiceRequest::new(method, path).query("valueInputOption", input).json(body))
}

/// One empty row at the end of the sheet (an update past the last row fails).
fn append_empty_row(call: &mut Call<'_, '_>, s: &Sheet) -> Result<()> {
    let body = json!({"requests": [{"appendDimension": {"sheetId": s.sheet_id, "dimension": "ROWS", "length": 1}}]});
    call.json(ServiceRequest::new(Method::POST, format!("/v4/spreadsheets/{}:batchUpdate", s.id)).json(body))?;
    Ok(())
}

fn cell_format_default(version: f64) -> &'static str {
    if version < 4.1 { "RAW" } else { "USER_ENTERED" }
}

fn header_row(options: Option<&Value>) -> usize {
    options.and_then(|o| o.pointer("/locationDefine/values/headerRow")).map(js_string).and_then(|v| v.trim().parse::<usize>().ok()).filter(|n| *n >= 1).unwrap_or(1)
}

/// Objects as rows in the order of `columns`: a missing value is `empty`,
/// an object or array its JSON.
fn to_rows(data: &[Value], columns: &[String], empty: Value) -> Vec<Vec<Value>> {
    data.iter()
        .map(|o| {
            columns
                .iter()
                .map(|c| match o.get(c) {
                    None | Some(Value::Null) => empty.clone(),
                    Some(v @ (Value::Object(_) | Value::Array(_))) => Value::String(v.to_string()),
                    Some(v) => v.clone(),
                })
                .collect()
        })
        .collect()
}

fn cell_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => js_string(other),
    }
}

/// The mapped values of item `i` (`columns.value`, or v3's `fieldsUi`).
fn mapped(call: &mut Call<'_, '_>, i: usize, v3_field: &str) -> Result<Map<String, Value>> {
    let p = call.params(i)?;
    if call.version() < 4.0 {
        let mut out = Map::new();
        for f in at(&p, v3_field).and_then(Value::as_array).into_iter().flatten() {
            out.insert(f.get("fieldId").map(js_string).unwrap_or_default(), f.get("fieldValue").cloned().unwrap_or(Value::Null));
        }
        return Ok(out);
    }
    let values = at(&p, "columns.value").and_then(Value::as_object).cloned().unwrap_or_default();
    if values.is_empty() {
        return Err(EngineError::node("At least one value has to be added under 'Values to Send'"));
    }
    Ok(values)
}

/// The header `schema` the node was set up with must still be the sheet's.
fn check_schema(header: &[Value], schema: Option<&Value>) -> Result<()> {
    let live: Vec<String> = header.iter().map(cell_text).filter(|c| !c.is_empty()).collect();
    let has_row_number = live.iter().any(|c| c == ROW_NUMBER);
    let missing: Vec<String> = schema
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("id").and_then(Value::as_str))
        .filter(|id| has_row_number || *id != ROW_NUMBER)
        .filter(|id| !live.iter().any(|c| c == id))
        .map(str::to_owned)
        .collect();
    if !missing.is_empty() {
        return Err(EngineError::node_with(
            "Column names were updated after the node's setup",
            format!("Refresh the columns list in the 'Column to Match On' parameter. Missing columns: {}", missing.join(", ")),
        ));
    }
    Ok(())
}

/// Input items as rows keyed by the header (auto-mapping): new keys become
/// new columns, are ignored, or fail, as the options say. Returns the
/// objects and the final column names.
fn auto_map(call: &mut Call<'_, '_>, s: &Sheet, options: Option<&Value>) -> Result<(Vec<Value>, Vec<String>)> {
    let row = header_row(options);
    let handling = options.and_then(|o| o.get("handlingExtraData")).map(js_string).unwrap_or_else(|| "insertInNewColumn".into());
    let items = call.items();
    let fetched = get_data(call, &s.id, &format!("{}!{row}:{row}", s.title), "FORMATTED_VALUE", "FORMATTED_STRING")?;
    let mut columns: Vec<String> = fetched.first().map(|r| r.iter().map(cell_text).collect()).unwrap_or_default();
    let mut out = vec![];
    match handling.as_str() {
        "ignoreIt" => out.extend(items.iter().map(|it| Value::clone(&it.json))),
        "error" => {
            for (i, it) in items.iter().enumerate() {
                if let Some(key) = it.json.as_object().into_iter().flat_map(|o| o.keys()).find(|k| !columns.contains(k)) {
                    return Err(EngineError::node_with(
                        "Unexpected fields in node input",
                        format!("The input field '{key}' doesn't match any column in the Sheet. You can ignore this by changing the 'Handling extra data' field, which you can find under 'Options'. [item {i}]"),
                    ));
                }
                out.push(Value::clone(&it.json));
            }
        }
        _ => {
            if columns.is_empty() {
                let first: Vec<String> = items.first().and_then(|it| it.json.as_object().map(|o| o.keys().filter(|k| *k != ROW_NUMBER).cloned().collect())).unwrap_or_default();
                update_rows(call, &s.id, &s.title, vec![first.iter().map(|k| json!(k)).collect()], options.and_then(|o| o.get("cellFormat")).and_then(Value::as_str).unwrap_or("RAW"), row, false)?;
                columns = first;
            }
            let mut added = vec![];
            for it in items.iter() {
                let mut json = Value::clone(&it.json);
                for k in json.as_object().into_iter().flat_map(|o| o.keys()) {
                    if k != ROW_NUMBER && !columns.contains(k) && !added.contains(k) {
                        added.push(k.clone());
                    }
                }
                if let Some(o) = json.as_object_mut() {
                    o.remove(ROW_NUMBER);
                }
                out.push(json);
            }
            if !added.is_empty() {
                columns.extend(added);
                update_rows(call, &s.id, &s.title, vec![columns.iter().map(|k| json!(k)).collect()], options.and_then(|o| o.get("cellFormat")).and_then(Value::as_str).unwrap_or("RAW"), row, false)?;
            }
        }
    }
    Ok((out, columns.into_iter().filter(|c| c != ROW_NUMBER).collect()))
}

/// Append Row: the sheet read once, one empty row added, the rows written
/// after the last one (or `values.append` with Minimise API Calls).
fn append(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    let p = start(call)?;
    let version = call.version();
    let items = call.items();
    let mut mode = if version < 4.0 { text(&p, "dataMode") } else { at(&p, "columns.mappingMode").map(js_string).unwrap_or_default() };
    if items.is_empty() || mode == "nothing" {
        return Ok(vec![]);
    }
    let options = p.get("options").cloned();
    let key_row = header_row(options.as_ref());
    let s = sheet(call, &p)?;
    let sheet_data = get_data(call, &s.id, &s.title, "FORMATTED_VALUE", "FORMATTED_STRING")?;
    if sheet_data.is_empty() {
        mode = "autoMapInputData".into();
    }
    let input = options.as_ref().and_then(|o| o.get("cellFormat")).and_then(Value::as_str).unwrap_or(cell_format_default(version)).to_owned();
    let (data, columns) = if mode == "autoMapInputData" {
        auto_map(call, &s, options.as_ref())?
    } else {
        let header = sheet_data.get(key_row - 1).ok_or_else(|| EngineError::node(format!("Could not retrieve the column names from row {key_row}")))?;
        if version >= 4.4 {
            check_schema(header, at(&p, "columns.schema"))?;
        }
        let mut data = vec![];
        for i in 0..items.len() {
            data.push(Value::Object(mapped(call, i, "fieldsUi.fieldValues")?));
        }
        (data, header.iter().map(cell_text).collect())
    };
    if data.is_empty() {
        return Ok(vec![]);
    }
    let use_append = options.as_ref().and_then(|o| o.get("useAppend")).and_then(Value::as_bool).unwrap_or(false);
    if use_append {
        let last = get_data(call, &s.id, &s.title, "UNFORMATTED_VALUE", "FORMATTED_STRING")?.len() + 1;
        update_rows(call, &s.id, &s.title, to_rows(&data, &columns, Value::Null), &input, last, true)?;
    } else {
        append_empty_row(call, &s)?;
        let last = sheet_data.len().max(1) + 1;
        update_rows(call, &s.id, &s.title, to_rows(&data, &columns, json!("")), &input, last, false)?;
    }
    if version < 4.0 || mode == "autoMapInputData" {
        return Ok(items.iter().enumerate().map(|(i, it)| with_pair(it, i)).collect());
    }
    Ok(data.into_iter().enumerate().map(|(i, d)| item_from(d, i)).collect())
}

/// The column letters of a 0-based index (`A`, …, `Z`, `AA`).
fn column_name(index: usize) -> String {
    let mut n = index + 1;
    let mut out = vec![];
    while n > 0 {
        n -= 1;
        out.push((b'A' + (n % 26) as u8) as char);
        n /= 26;
    }
    out.iter().rev().collect()
}

/// `A` → 1, `AA` → 27.
fn column_number(letters: &str) -> usize {
    letters.to_ascii_uppercase().bytes().filter(u8::is_ascii_uppercase).fold(0, |n, c| n * 26 + (c - b'A') as usize + 1)
}

/// Update Row and Append or Update Row: rows found by the match column's
/// value get the changed cells (`values.batchUpdate`); with `upsert`, the
/// others are appended.
fn write_matched(call: &mut Call<'_, '_>, upsert: bool) -> Result<Vec<Item>> {
    let p = start(call)?;
    let version = call.version();
    let items = call.items();
    let options = p.get("options").cloned().unwrap_or(json!({}));
    let input = options.get("cellFormat").and_then(Value::as_str).unwrap_or(cell_format_default(version)).to_owned();
    let mut header_index = 0usize;
    let mut first_data = 1usize;
    if let Some(l) = options.pointer("/locationDefine/values") {
        if let Some(h) = l.get("headerRow").map(js_string).and_then(|v| v.trim().parse::<usize>().ok()).filter(|n| *n >= 1) {
            header_index = h - 1;
        }
        if let Some(f) = l.get("firstDataRow").map(js_string).and_then(|v| v.trim().parse::<usize>().ok()).filter(|n| *n >= 1) {
            first_data = f - 1;
        }
    }
    let mode = if version < 4.0 { text(&p, "dataMode") } else { at(&p, "columns.mappingMode").map(js_string).unwrap_or_default() };
    let s = sheet(call, &p)?;
    let mut sheet_data = get_data(call, &s.id, &s.title, "FORMATTED_VALUE", "FORMATTED_STRING")?;
    if sheet_data.get(header_index).is_none() && mode != "autoMapInputData" {
        return Err(EngineError::node(format!("Could not retrieve the column names from row {}", header_index + 1)));
    }
    let mut columns: Vec<String> = sheet_data.get(header_index).map(|r| r.iter().map(cell_text).collect()).unwrap_or_default();
    let match_on: String = if version < 4.0 {
        text(&p, "columnToMatchOn")
    } else {
        let m = at(&p, "columns.matchingColumns").and_then(Value::as_array).and_then(|a| a.first()).map(js_string);
        match m {
            Some(m) => m,
            None if !upsert => {
                return Err(EngineError::node_with(
                    "`columns.matchingColumns` is required for the Update Row operation",
                    "Set `columns.matchingColumns` to a non-empty `string[]` of header names that uniquely identify the row to update (e.g. `[\"id\"]` or `[\"email\"]`).",
                ))
            }
            None => String::new(),
        }
    };
    let key_index = columns.iter().position(|c| *c == match_on);
    let mut updates: Vec<Value> = vec![];
    let mut appends: Vec<Value> = vec![];
    let mut mapped_values: Vec<Value> = vec![];
    for i in 0..items.len() {
        if mode == "nothing" {
            continue;
        }
        let mut new_columns: Vec<String> = vec![];
        let data: Value = if mode == "autoMapInputData" {
            let handling = options.get("handlingExtraData").map(js_string).unwrap_or_else(|| "insertInNewColumn".into());
            let json = Value::clone(&items[i].json);
            for k in json.as_object().into_iter().flat_map(|o| o.keys()) {
                if columns.contains(k) || (!upsert && k == ROW_NUMBER) {
                    continue;
                }
                match handling.as_str() {
                    "error" => {
                        return Err(EngineError::node_with(
                            "Unexpected fields in node input",
                            format!("The input field '{k}' doesn't match any column in the Sheet. You can ignore this by changing the 'Handling extra data' field, which you can find under 'Options'. [item {i}]"),
                        ))
                    }
                    "insertInNewColumn" if !new_columns.contains(k) => new_columns.push(k.clone()),
                    _ => {}
                }
            }
            json
        } else if version < 4.0 {
            let pi = call.params(i)?;
            let values = at(&pi, "fieldsUi.values").and_then(Value::as_array).cloned().unwrap_or_default();
            if values.is_empty() {
                return Err(EngineError::node("At least one value has to be added under 'Values to Send'"));
            }
            let mut fields = Map::new();
            for e in &values {
                let column = e.get("column").map(js_string).unwrap_or_default();
                let name = if column == "newColumn" { e.get("columnName").map(js_string).unwrap_or_default() } else { column };
                if !columns.contains(&name) && !new_columns.contains(&name) {
                    new_columns.push(name.clone());
                }
                fields.insert(name, e.get("fieldValue").cloned().unwrap_or(Value::Null));
            }
            let value = text(&pi, "valueToMatchOn");
            if value.is_empty() && !upsert {
                return Err(EngineError::node(format!("The 'Column to Match On' parameter is required [item {i}]")));
            }
            fields.insert(match_on.clone(), json!(value));
            Value::Object(fields)
        } else {
            let mut values = mapped(call, i, "")?;
            if !upsert && values.get(&match_on).is_none_or(|v| v.is_null() || v.as_str() == Some("")) {
                return Err(EngineError::node(format!("The 'Column to Match On' parameter is required [item {i}]")));
            }
            // empty values are sent as empty strings, so the API clears them
            for v in values.values_mut() {
                if v.is_null() {
                    *v = json!("");
                }
            }
            mapped_values.push(Value::Object(values.clone()));
            Value::Object(values)
        };
        if !new_columns.is_empty() {
            columns.extend(new_columns);
            update_rows(call, &s.id, &s.title, vec![columns.iter().map(|c| json!(c)).collect()], &input, header_index + 1, false)?;
            while sheet_data.len() <= header_index {
                sheet_data.push(vec![]);
            }
            sheet_data[header_index] = columns.iter().map(|c| json!(c)).collect();
        }
        let key = columns.iter().position(|c| *c == match_on).or(key_index);
        if match_on == ROW_NUMBER {
            if let Some(row) = data.get(ROW_NUMBER).and_then(|v| v.as_u64().or_else(|| js_string(v).parse().ok())) {
                push_cells(&mut updates, &s.title, &columns, &data, row as usize, &match_on);
            }
            continue;
        }
        let Some(key) = key else {
            if upsert {
                appends.push(data);
                continue;
            }
            return Err(EngineError::node(format!("Could not find column for key \"{match_on}\"")));
        };
        let Some(wanted) = data.get(&match_on).filter(|v| !v.is_null()) else {
            if upsert {
                appends.push(data);
            }
            continue;
        };
        let wanted = js_string(wanted);
        // the key column's values below the first data row
        let found = sheet_data.iter().enumerate().skip(first_data).find(|(_, row)| row.get(key).is_some_and(|c| cell_text(c) == wanted)).map(|(r, _)| r);
        match found {
            Some(r) => push_cells(&mut updates, &s.title, &columns, &data, r + 1, &match_on),
            None if upsert => appends.push(data),
            None => {}
        }
    }
    if !updates.is_empty() {
        call.json(ServiceRequest::new(Method::POST, format!("/v4/spreadsheets/{}/values:batchUpdate", s.id)).json(json!({"data": updates, "valueInputOption": input})))?;
    }
    if !appends.is_empty() {
        let last = sheet_data.len() + 1;
        let rows = to_rows(&appends, &columns, json!(""));
        if options.get("useAppend").and_then(Value::as_bool).unwrap_or(false) {
            update_rows(call, &s.id, &s.title, to_rows(&appends, &columns, Value::Null), &input, last, true)?;
        } else {
            append_empty_row(call, &s)?;
            update_rows(call, &s.id, &s.title, rows, &input, last, false)?;
        }
    }
    if version < 4.0 || mode == "autoMapInputData" {
        return Ok(items.iter().enumerate().map(|(i, it)| with_pair(it, i)).collect());
    }
    if !upsert && updates.is_empty() {
        return Ok(vec![]);
    }
    Ok(mapped_values.into_iter().enumerate().map(|(i, d)| item_from(d, i)).collect())
}

/// One `{range, values}` per cell the item changes in sheet row `row`
/// (1-based); the match column itself is not written.
fn push_cells(updates: &mut Vec<Value>, title: &str, columns: &[String], data: &Value, row: usize, match_on: &str) {
    for (c, name) in columns.iter().enumerate() {
        if name == match_on || name == ROW_NUMBER {
            continue;
        }
        let Some(v) = data.get(name).filter(|v| !v.is_null()) else { continue };
        let v = match v {
            Value::Object(_) | Value::Array(_) => Value::String(v.to_string()),
            other => other.clone(),
        };
        updates.push(json!({"range": format!("{title}!{}{row}", column_name(c)), "values": [[v]]}));
    }
}

fn update(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    write_matched(call, false)
}

fn append_or_update(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    write_matched(call, true)
}

fn truthy(c: &Value) -> bool {
    match c {
        Value::String(s) => !s.is_empty(),
        Value::Number(_) => true,
        Value::Bool(b) => *b,
        Value::Null => false,
        _ => true,
    }
}

/// n8n's `prepareSheetData`: row numbers added, and with range detection
/// empty columns and rows removed. Returns the rows and the header and
/// first data row indexes.
fn prepare(data: Vec<Vec<Value>>, location: &Value) -> (Vec<Vec<Value>>, usize, usize) {
    let definition = location.get("rangeDefinition").and_then(Value::as_str).unwrap_or("detectAutomatically");
    let (mut header, mut first) = (0usize, 1usize);
    if definition == "specifyRange" {
        let n = |k: &str, d: usize| location.get(k).map(js_string).and_then(|v| v.trim().parse::<usize>().ok()).map(|v| v.saturating_sub(1)).unwrap_or(d);
        header = n("headerRow", 0);
        first = n("firstDataRow", 1);
    }
    if data.is_empty() {
        return (data, header, first);
    }
    let mut rows: Vec<Vec<Value>> = data.into_iter().enumerate().map(|(i, r)| std::iter::once(json!(i + 1)).chain(r).collect()).collect();
    if let Some(h) = rows.get_mut(header) {
        h[0] = json!(ROW_NUMBER);
    }
    if definition == "detectAutomatically" {
        // columns empty below an empty header go
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        let keep: Vec<usize> = (0..width)
            .filter(|&c| {
                let head = rows[0].get(c);
                head != Some(&json!("")) || rows.iter().skip(1).any(|r| r.get(c).is_some_and(|v| truthy(v) || v.is_number()))
            })
            .collect();
        rows = rows.into_iter().map(|r| keep.iter().map(|&c| r.get(c).cloned().unwrap_or(json!(""))).collect()).collect();
        // leading empty rows go
        let nonempty = |r: &Vec<Value>| r.iter().skip(1).any(|v| truthy(v) || v.is_number());
        let lead = rows.iter().position(nonempty).unwrap_or(rows.len().saturating_sub(1));
        rows.drain(..lead);
        if let Some(h) = rows.first_mut() {
            h[0] = json!(ROW_NUMBER);
        }
        if location.get("readRowsUntil").and_then(Value::as_str) == Some("firstEmptyRow") {
            if let Some(end) = rows.iter().position(|r| r.iter().skip(1).all(|v| v == &json!(""))) {
                rows.truncate(end);
            }
        } else {
            rows.retain(|r| r.iter().skip(1).any(|v| truthy(v) || v.is_number() || v.is_boolean()));
            if let Some(h) = rows.first_mut() {
                h[0] = json!(ROW_NUMBER);
            }
        }
    }
    (rows, header, first)
}

/// Rows from `start` as objects keyed by `keys` (cells the row has).
fn objects(rows: &[Vec<Value>], start: usize, keys: &[String], add_empty: bool) -> Vec<Value> {
    rows.iter()
        .skip(start)
        .filter_map(|r| {
            let mut o = Map::new();
            for (c, v) in r.iter().enumerate() {
                if let Some(k) = keys.get(c).filter(|k| !k.is_empty()) {
                    o.insert(k.clone(), v.clone());
                }
            }
            (add_empty || !o.is_empty()).then_some(Value::Object(o))
        })
        .collect()
}

fn header_keys(row: &[Value], width: usize) -> Vec<String> {
    (0..width).map(|c| row.get(c).filter(|v| truthy(v)).map(js_string).unwrap_or_else(|| format!("col_{c}"))).collect()
}

/// Get Row(s): the sheet's rows as objects, or those matching the filters.
fn read(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    let p = start(call)?;
    let version = call.version();
    let s = sheet(call, &p)?;
    let n = if version > 4.1 { call.items().len() } else { 1 };
    let mut out = vec![];
    for i in 0..n {
        let pi = call.params(i)?;
        let options = pi.get("options").cloned().unwrap_or(json!({}));
        let location = options.pointer("/dataLocationOnSheet/values").cloned().unwrap_or(json!({}));
        let range = match (location.get("rangeDefinition").and_then(Value::as_str), location.get("range").map(js_string)) {
            (Some("specifyRangeA1"), Some(r)) if !r.is_empty() => format!("{}!{r}", s.title),
            _ => s.title.clone(),
        };
        let general = options.pointer("/outputFormatting/values/general").map(js_string).filter(|v| !v.is_empty()).unwrap_or_else(|| "UNFORMATTED_VALUE".into());
        let date = options.pointer("/outputFormatting/values/date").map(js_string).filter(|v| !v.is_empty()).unwrap_or_else(|| "FORMATTED_STRING".into());
        let data = get_data(call, &s.id, &range, &general, &date)?;
        if data.is_empty() {
            continue;
        }
        let (rows, key_row, first) = prepare(data, &location);
        let mut lookups: Vec<(String, String)> = filters(&pi);
        if version <= 4.1 {
            for j in 1..call.items().len() {
                let pj = call.params(j)?;
                lookups.extend(filters(&pj));
            }
        }
        let found = if lookups.is_empty() {
            if key_row >= rows.len() || first < key_row {
                vec![]
            } else {
                let width = rows.iter().map(Vec::len).max().unwrap_or(0);
                objects(&rows, first, &header_keys(&rows[key_row], width), false)
            }
        } else {
            let all = if version < 4.5 {
                options.get("returnAllMatches").and_then(Value::as_str) == Some("returnAllMatches")
            } else {
                !options.get("returnFirstMatch").and_then(Value::as_bool).unwrap_or(false)
            };
            let combine = text(&pi, "combineFilters");
            lookup(rows, key_row, first, &lookups, all, combine == "AND")?
        };
        out.extend(found.into_iter().map(|o| item_from(o, i)));
    }
    Ok(out)
}

fn filters(p: &Map<String, Value>) -> Vec<(String, String)> {
    at(p, "filtersUI.values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|f| (f.get("lookupColumn").map(js_string).unwrap_or_default(), f.get("lookupValue").map(cell_text).unwrap_or_default()))
        .collect()
}

/// The rows matching the filters (any of them, or all with `and`), first
/// match per filter unless `all`; columns empty throughout dropped.
fn lookup(mut rows: Vec<Vec<Value>>, key_row: usize, first: usize, lookups: &[(String, String)], all: bool, and: bool) -> Result<Vec<Value>> {
    if key_row >= rows.len() || first < key_row {
        return Err(EngineError::node("The key row does not exist"));
    }
    let keys = header_keys(&rows[key_row], rows[key_row].len());
    for r in rows.iter_mut() {
        while r.len() < keys.len() {
            r.push(json!(""));
        }
    }
    let column = |name: &str| keys.iter().position(|k| k == name).ok_or_else(|| EngineError::node(format!("The column \"{name}\" could not be found")));
    let mut picked: Vec<usize> = vec![];
    if and {
        let cols = lookups.iter().map(|(c, v)| Ok((column(c)?, v))).collect::<Result<Vec<_>>>()?;
        for r in first..rows.len() {
            if cols.iter().all(|(c, v)| cell_text(&rows[r][*c]) == **v) {
                picked.push(r);
                if !all {
                    break;
                }
            }
        }
    } else {
        for (name, value) in lookups {
            let c = column(name)?;
            for r in first..rows.len() {
                if cell_text(&rows[r][c]) == *value {
                    if !picked.contains(&r) {
                        picked.push(r);
                    }
                    if !all {
                        break;
                    }
                }
            }
        }
    }
    // the header, then the matches; columns without a name and without data go
    let mut table: Vec<Vec<Value>> = vec![keys.iter().map(|k| json!(k)).collect()];
    table.extend(picked.into_iter().map(|r| rows[r].clone()));
    let width = table.iter().map(Vec::len).max().unwrap_or(0);
    let keep: Vec<usize> = (0..width).filter(|&c| table[0].get(c) != Some(&json!("")) || table.iter().skip(1).any(|r| r.get(c).is_some_and(|v| truthy(v) || v.is_number()))).collect();
    let table: Vec<Vec<Value>> = table.into_iter().map(|r| keep.iter().map(|&c| r.get(c).cloned().unwrap_or(json!(""))).collect()).collect();
    let head: Vec<String> = table[0].iter().map(cell_text).collect();
    Ok(objects(&table, 1, &head, true))
}

/// Clear: the whole sheet, rows, columns or a range, per item (the header
/// row written back with Keep First Row).
fn clear(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    let p = start(call)?;
    let s = sheet(call, &p)?;
    let items = call.items();
    for i in 0..items.len() {
        let pi = call.params(i)?;
        let n = |k: &str| count(&pi, k, 1);
        let range = match text(&pi, "clear").as_str() {
            "specificRows" => {
                let start = n("startIndex");
                format!("{}!{start}:{}", s.title, start + n("rowsToDelete") - 1)
            }
            "specificColumns" => {
                let start = text(&pi, "startIndex");
                let end = column_number(&start) + n("columnsToDelete") - 1;
                format!("{}!{start}:{}", s.title, column_name(end.saturating_sub(1)))
            }
            "specificRange" => {
                let r = text(&pi, "range");
                let region = r.split_once('!').map(|(_, cells)| cells.to_owned()).unwrap_or(r);
                format!("{}!{region}", s.title)
            }
            _ => s.title.clone(),
        };
        let keep_first = pi.get("keepFirstRow").and_then(Value::as_bool).unwrap_or(false);
        let first_row = if keep_first { Some(get_data(call, &s.id, &format!("{}!1:1", s.title), "FORMATTED_VALUE", "FORMATTED_STRING")?) } else { None };
        call.json(ServiceRequest::new(Method::POST, format!("/v4/spreadsheets/{}/values/{}:clear", s.id, encode_range(&range))).json(json!({"spreadsheetId": s.id, "range": range})))?;
        if let Some(row) = first_row.filter(|r| !r.is_empty()) {
            update_rows(call, &s.id, &s.title, row, "RAW", 1, false)?;
        }
    }
    Ok(items.iter().enumerate().map(|(i, it)| with_pair(it, i)).collect())
}

fn hex_color(hex: &str) -> Option<Value> {
    let h = hex.trim().trim_start_matches('#');
    let full: String = if h.len() == 3 { h.chars().flat_map(|c| [c, c]).collect() } else { h.to_owned() };
    if full.len() != 6 {
        return None;
    }
    let c = |i: usize| u8::from_str_radix(&full[i..i + 2], 16).ok().map(|v| f64::from(v) / 255.0);
    Some(json!({"red": c(0)?, "green": c(2)?, "blue": c(4)?}))
}

/// Create (a sheet): `addSheet` per item, titles the spreadsheet has skipped.
fn create_sheet(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    let p = start(call)?;
    let id = spreadsheet_id(&p)?;
    let mut existing: Vec<String> = sheets_of(call, &id)?.iter().filter_map(|s| s.pointer("/properties/title").and_then(Value::as_str).map(str::to_owned)).collect();
    let mut out = vec![];
    for i in 0..call.items().len() {
        let pi = call.params(i)?;
        let title = text(&pi, "title");
        if existing.contains(&title) {
            continue;
        }
        let mut props = pi.get("options").and_then(Value::as_object).cloned().unwrap_or_default();
        props.insert("title".into(), json!(title));
        if let Some(color) = props.get("tabColor").map(js_string) {
            match hex_color(&color) {
                Some(rgb) => props.insert("tabColor".into(), rgb),
                None => props.remove("tabColor"),
            };
        }
        let mut answer = call.json(ServiceRequest::new(Method::POST, format!("/v4/spreadsheets/{id}:batchUpdate")).json(json!({"requests": [{"addSheet": {"properties": props}}]})))?;
        if let (Some(o), Some(added)) = (answer.as_object_mut().cloned(), answer.pointer("/replies/0/addSheet/properties").and_then(Value::as_object).cloned()) {
            let mut o = o;
            o.remove("replies");
            o.extend(added);
            answer = Value::Object(o);
        }
        existing.push(title);
        out.push(item_from(answer, i));
    }
    Ok(out)
}

/// Delete (a sheet): `deleteSheet` per item.
fn remove_sheet(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    let p = start(call)?;
    let s = sheet(call, &p)?;
    per_item(call, |call, _| {
        let mut answer = call.json(ServiceRequest::new(Method::POST, format!("/v4/spreadsheets/{}:batchUpdate", s.id)).json(json!({"requests": [{"deleteSheet": {"sheetId": s.sheet_id}}]})))?;
        if let Some(o) = answer.as_object_mut() {
            o.remove("replies");
        }
        Ok(vec![item(answer)])
    })
}

/// Delete Rows or Columns: `deleteDimension` per item; one `{success}` item.
fn delete_dimension(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    let p = start(call)?;
    let s = sheet(call, &p)?;
    let items = call.items();
    for i in 0..items.len() {
        let pi = call.params(i)?;
        let number = count(&pi, "numberToDelete", 1);
        let (dimension, start) = if text(&pi, "toDelete") == "columns" {
            ("COLUMNS", column_number(&text(&pi, "startIndex")).saturating_sub(1))
        } else {
            ("ROWS", count(&pi, "startIndex", 2) - 1)
        };
        let range = json!({"sheetId": s.sheet_id, "dimension": dimension, "startIndex": start, "endIndex": start + number});
        call.json(ServiceRequest::new(Method::POST, format!("/v4/spreadsheets/{}:batchUpdate", s.id)).json(json!({"requests": [{"deleteDimension": {"range": range}}]})))?;
    }
    let mut one = item(json!({"success": true}));
    one.paired_item = Some(crate::data::paired_ref(0, 0));
    Ok(if items.is_empty() { vec![] } else { vec![one] })
}

/// Create (a spreadsheet): its title, sheets and locale per item.
fn create_spreadsheet(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call)?;
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let mut properties = json!({"title": text(&p, "title")});
        for k in ["locale", "autoRecalc"] {
            if let Some(v) = at(&p, &format!("options.{k}")).filter(|v| !js_string(v).is_empty()) {
                properties[k] = v.clone();
            }
        }
        let sheets: Vec<Value> = at(&p, "sheetsUi.sheetValues")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| json!({"properties": {"title": s.get("title").cloned().unwrap_or(json!("")), "hidden": s.get("hidden").and_then(Value::as_bool).unwrap_or(false)}}))
            .collect();
        let mut body = json!({"properties": properties});
        if !sheets.is_empty() {
            body["sheets"] = json!(sheets);
        }
        Ok(vec![item(call.json(ServiceRequest::new(Method::POST, "/v4/spreadsheets").json(body))?)])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_encoded_as_n8n_does() {
        assert_eq!(encode_range("Sheet 1"), "'Sheet%201'");
        assert_eq!(encode_range("Données!A1:B2"), "Donn%C3%A9es!A1:B2");
        assert_eq!((column_name(0), column_name(25), column_name(26)), ("A".into(), "Z".into(), "AA".into()));
        assert_eq!((column_number("A"), column_number("z"), column_number("AA")), (1, 26, 27));
        assert_eq!((sheet_id_of("gid=0"), sheet_id_of("123"), sheet_id_of("gid=5")), (Some(0), Some(123), None));
    }

    #[test]
    fn detection_drops_empty_columns_and_rows_and_numbers_rows() {
        let data = vec![vec![json!("name"), json!(""), json!("age")], vec![], vec![json!("Ann"), json!(""), json!(31)], vec![json!(""), json!(""), json!("")], vec![json!("Bo")]];
        let (rows, h, f) = prepare(data, &json!({}));
        assert_eq!((h, f), (0, 1));
        assert_eq!(rows, vec![vec![json!(ROW_NUMBER), json!("name"), json!("age")], vec![json!(3), json!("Ann"), json!(31)], vec![json!(5), json!("Bo"), json!("")]]);
        let found = lookup(rows, 0, 1, &[("age".into(), "31".into())], true, false).unwrap();
        assert_eq!(found, vec![json!({"row_number": 3, "name": "Ann", "age": 31})]);
    }
}
