//! Tabular files → normalised column metadata and one page of rows.
//! CSV/TSV cells stay strings (types are inferred per column, as a data
//! table would); JSON must be an array of flat objects; an xlsx workbook's
//! first sheet is read by the engine's reader (cells as SheetJS sees them).

use super::{cut, Format, MAX_CELLS_PER_CALL, MAX_CELL_CHARS, MAX_COLUMNS, MAX_RESULT_CHARS};
use serde::Serialize;
use serde_json::{Map, Value};

/// How to read and page a tabular file.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    pub has_header: bool,
    pub delimiter: Option<char>,
    pub start_row: usize,
    pub max_rows: usize,
    pub file_name: &'a str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Column {
    pub original_name: String,
    pub name: String,
    /// `string`, `number`, `boolean` or `date`, from the returned rows.
    pub inferred_type: &'static str,
    pub index: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub columns: Vec<Column>,
    pub rows: Vec<Map<String, Value>>,
    pub total_rows: usize,
    pub returned_rows: usize,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_start_row: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Header names and rows of cells (`Null`, strings, numbers, booleans).
struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<Value>>,
}

pub fn parse(format: Format, bytes: &[u8], opts: &Options) -> Result<Page, String> {
    let table = match format {
        Format::Csv | Format::Tsv => delimited(format, bytes, opts)?,
        Format::Json => json(bytes)?,
        Format::Xlsx => xlsx(bytes, opts)?,
        other => return Err(format!("{other:?} is not a tabular format")),
    };
    if table.headers.len() > MAX_COLUMNS {
        return Err(format!("Too many columns: {} (max {MAX_COLUMNS})", table.headers.len()));
    }
    Ok(page(table, opts))
}

fn text_of(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

fn delimited(format: Format, bytes: &[u8], opts: &Options) -> Result<Table, String> {
    let delimiter = opts.delimiter.unwrap_or(if format == Format::Tsv { '\t' } else { ',' });
    if !delimiter.is_ascii() || matches!(delimiter, '\r' | '\n' | '\0') {
        return Err("The delimiter must be one ASCII character other than a newline".into());
    }
    let text = text_of(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter as u8)
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut records: Vec<Vec<String>> = Vec::new();
    for r in reader.records() {
        let r = r.map_err(|e| format!("Invalid {}: {e}", if format == Format::Tsv { "TSV" } else { "CSV" }))?;
        if r.iter().all(str::is_empty) {
            continue;
        }
        records.push(r.iter().map(str::to_owned).collect());
    }
    if records.is_empty() {
        return Ok(Table { headers: Vec::new(), rows: Vec::new() });
    }
    let width = records.iter().map(Vec::len).max().unwrap_or(0);
    let headers = if opts.has_header {
        let mut h = records.remove(0);
        h.resize(width, String::new());
        h
    } else {
        (0..width).map(|i| format!("column_{i}")).collect()
    };
    let rows = records
        .into_iter()
        .map(|r| (0..headers.len()).map(|i| r.get(i).filter(|c| !c.is_empty()).map_or(Value::Null, |c| Value::String(c.clone()))).collect())
        .collect();
    Ok(Table { headers, rows })
}

fn json(bytes: &[u8]) -> Result<Table, String> {
    let parsed: Value = serde_json::from_str(&text_of(bytes)).map_err(|e| format!("Invalid JSON: {e}"))?;
    let Value::Array(items) = parsed else {
        return Err("Expected a JSON array of objects, got a single value or object".into());
    };
    let mut headers: Vec<String> = Vec::new();
    for item in &items {
        let Value::Object(obj) = item else {
            return Err("JSON array items must be flat objects (not arrays, nulls, or primitives)".into());
        };
        for (k, v) in obj {
            if v.is_object() || v.is_array() {
                return Err(format!("Nested {} found at key \"{k}\". Only flat objects are supported.", if v.is_array() { "array" } else { "object" }));
            }
            if !headers.contains(k) {
                headers.push(k.clone());
            }
        }
    }
    let rows = items
        .iter()
        .map(|item| headers.iter().map(|h| item.get(h).cloned().unwrap_or(Value::Null)).collect())
        .collect();
    Ok(Table { headers, rows })
}

fn xlsx(bytes: &[u8], opts: &Options) -> Result<Table, String> {
    super::check_archive(bytes, opts.file_name)?;
    let (names, sheet) = engine::nodes::xlsx::read(bytes, None).map_err(|e| format!("Failed to parse xlsx \"{}\": {e}", opts.file_name))?;
    let Some((r0, c0, r1, c1)) = sheet.range else {
        return Err(format!("xlsx \"{}\" sheet \"{}\" is empty.", opts.file_name, names.first().map(String::as_str).unwrap_or_default()));
    };
    let width = c1 - c0 + 1;
    let mut grid: Vec<Vec<Value>> = vec![vec![Value::Null; width]; r1 - r0 + 1];
    for (r, c, v) in sheet.cells {
        if r >= r0 && c >= c0 && r <= r1 && c <= c1 {
            grid[r - r0][c - c0] = v;
        }
    }
    // Blank rows are left out, as SheetJS's `sheet_to_json` does.
    grid.retain(|row| row.iter().any(|v| !v.is_null() && v != ""));
    if grid.is_empty() {
        return Err(format!("xlsx \"{}\" sheet \"{}\" is empty.", opts.file_name, names.first().map(String::as_str).unwrap_or_default()));
    }
    let headers = if opts.has_header {
        grid.remove(0)
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            })
            .collect()
    } else {
        (0..width).map(|i| format!("column_{i}")).collect()
    };
    Ok(Table { headers, rows: grid })
}

/// Names a data table accepts: snake_case letters, digits and underscores,
/// starting with a letter, unique, never a system column.
pub fn normalize_names(raw: &[String]) -> Vec<String> {
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    raw.iter()
        .map(|r| {
            let mut snake = String::new();
            let mut prev_lower = false;
            for ch in r.trim().chars() {
                if ch.is_ascii_uppercase() && prev_lower {
                    snake.push('_');
                }
                prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
                let c = ch.to_ascii_lowercase();
                snake.push(if c.is_ascii_alphanumeric() { c } else { '_' });
            }
            let mut name = snake.split('_').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("_");
            if name.is_empty() {
                name = "column".into();
            }
            if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                name = format!("col_{name}");
            }
            if matches!(name.as_str(), "id" | "created_at" | "updated_at") {
                name = format!("data_{name}");
            }
            let base = name.clone();
            let mut n = 1;
            while seen.contains(&name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            seen.insert(name.clone());
            name
        })
        .collect()
}

fn looks_like_date(s: &str) -> bool {
    static DATE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}.*)?|\d{2}/\d{2}/\d{4})$").expect("valid pattern")
    });
    DATE.is_match(s)
}

pub fn infer_type(values: &[&Value]) -> &'static str {
    let present: Vec<&Value> = values.iter().copied().filter(|v| !v.is_null() && *v != "").collect();
    if present.is_empty() {
        return "string";
    }
    let is_bool = |v: &Value| v.is_boolean() || v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false"));
    let is_num = |v: &Value| v.is_number() || v.as_str().is_some_and(|s| s.trim().parse::<f64>().is_ok_and(f64::is_finite));
    if present.iter().all(|v| is_bool(v)) {
        "boolean"
    } else if present.iter().all(|v| is_num(v)) {
        "number"
    } else if present.iter().all(|v| v.as_str().is_some_and(looks_like_date)) {
        "date"
    } else {
        "string"
    }
}

fn page(table: Table, opts: &Options) -> Page {
    let names = normalize_names(&table.headers);
    let total_rows = table.rows.len();
    let start = opts.start_row.min(total_rows);
    let slice = &table.rows[start..(start + opts.max_rows).min(total_rows)];
    let columns: Vec<Column> = table
        .headers
        .iter()
        .enumerate()
        .map(|(i, h)| Column {
            original_name: h.clone(),
            name: names[i].clone(),
            inferred_type: infer_type(&slice.iter().map(|r| &r[i]).collect::<Vec<_>>()),
            index: i,
        })
        .collect();
    let mut warnings = Vec::new();
    let mut long_cells = 0usize;
    let mut rows: Vec<Map<String, Value>> = slice
        .iter()
        .map(|r| {
            names
                .iter()
                .zip(r)
                .map(|(n, v)| {
                    let v = match v {
                        Value::String(s) => {
                            let (s, was_cut) = cut(s, MAX_CELL_CHARS);
                            long_cells += usize::from(was_cut);
                            Value::String(s)
                        }
                        Value::Number(n) if n.as_f64().is_some_and(|f| !f.is_finite()) => Value::Null,
                        other => other.clone(),
                    };
                    (n.clone(), v)
                })
                .collect()
        })
        .collect();
    if long_cells > 0 {
        warnings.push(format!("{long_cells} cell(s) longer than {MAX_CELL_CHARS} characters were cut"));
    }
    let mut truncated = false;
    if !columns.is_empty() && rows.len() * columns.len() > MAX_CELLS_PER_CALL {
        rows.truncate(MAX_CELLS_PER_CALL / columns.len());
        truncated = true;
        warnings.push(format!("Output truncated to {} rows to stay within the cell budget ({MAX_CELLS_PER_CALL} cells)", rows.len()));
    }
    let size = |rows: &[Map<String, Value>]| serde_json::json!({"columns": &columns, "rows": rows}).to_string().chars().count();
    if size(&rows) > MAX_RESULT_CHARS {
        // the most rows that fit, found by bisection
        let (mut lo, mut hi) = (0usize, rows.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if size(&rows[..mid]) <= MAX_RESULT_CHARS {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        rows.truncate(lo.max(1));
        truncated = true;
        warnings.push(format!("Output truncated to {} rows to stay within the character budget ({MAX_RESULT_CHARS} characters)", rows.len()));
    }
    let returned_rows = rows.len();
    let has_more = start + returned_rows < total_rows;
    Page {
        columns,
        rows,
        total_rows,
        returned_rows,
        truncated: truncated || has_more,
        next_start_row: (truncated || has_more).then_some(start + returned_rows),
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts(max_rows: usize) -> Options<'static> {
        Options { has_header: true, delimiter: None, start_row: 0, max_rows, file_name: "f" }
    }

    #[test]
    fn csv_pages_with_normalised_columns_and_inferred_types() {
        let csv = "First Name,Age,Active,Signed Up,id\nAda,36,true,2024-01-02,1\n\nGrace,45,false,2024-02-03,2\nLinus,,TRUE,2024-03-04,3\n";
        let p = parse(Format::Csv, csv.as_bytes(), &opts(2)).unwrap();
        let names: Vec<&str> = p.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["first_name", "age", "active", "signed_up", "data_id"]);
        let types: Vec<&str> = p.columns.iter().map(|c| c.inferred_type).collect();
        assert_eq!(types, ["string", "number", "boolean", "date", "number"]);
        assert_eq!((p.total_rows, p.returned_rows, p.truncated, p.next_start_row), (3, 2, true, Some(2)));
        assert_eq!(p.rows[1]["first_name"], json!("Grace"));
        let rest = parse(Format::Csv, csv.as_bytes(), &Options { start_row: 2, ..opts(2) }).unwrap();
        assert_eq!((rest.returned_rows, rest.truncated, rest.next_start_row), (1, false, None));
        assert_eq!(rest.rows[0]["age"], Value::Null);
    }

    #[test]
    fn headerless_semicolon_files_and_tsv() {
        let p = parse(Format::Csv, b"a;b\nc;d", &Options { has_header: false, delimiter: Some(';'), ..opts(20) }).unwrap();
        assert_eq!(p.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["column_0", "column_1"]);
        assert_eq!(p.total_rows, 2);
        let t = parse(Format::Tsv, b"x\ty\n1\t2", &opts(20)).unwrap();
        assert_eq!(t.rows[0]["y"], json!("2"));
    }

    #[test]
    fn json_arrays_of_flat_objects_only() {
        let p = parse(Format::Json, br#"[{"orderId": 1, "paid": true}, {"orderId": 2, "note": "rush"}]"#, &opts(20)).unwrap();
        assert_eq!(p.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["order_id", "paid", "note"]);
        assert_eq!(p.rows[1], serde_json::from_value::<Map<String, Value>>(json!({"order_id": 2, "paid": null, "note": "rush"})).unwrap());
        assert!(parse(Format::Json, br#"{"a": 1}"#, &opts(20)).unwrap_err().contains("array"));
        assert!(parse(Format::Json, br#"[{"a": {"b": 1}}]"#, &opts(20)).unwrap_err().contains("Nested object"));
    }

    #[test]
    fn budgets_cut_rows_and_cells_with_warnings() {
        let wide: String = (0..40).map(|i| format!("c{i}")).collect::<Vec<_>>().join(",");
        let row: String = (0..40).map(|_| "x").collect::<Vec<_>>().join(",");
        let csv = format!("{wide}\n{}", vec![row; 100].join("\n"));
        let p = parse(Format::Csv, csv.as_bytes(), &opts(100)).unwrap();
        assert_eq!((p.returned_rows, p.next_start_row), (50, Some(50)));
        assert!(p.warnings[0].contains("cell budget"));
        let long = format!("a\n{}", "y".repeat(MAX_CELL_CHARS + 10));
        let p = parse(Format::Csv, long.as_bytes(), &opts(1)).unwrap();
        assert_eq!(p.rows[0]["a"].as_str().unwrap().len(), MAX_CELL_CHARS);
        assert!(p.warnings[0].contains("cut"));
        let many: String = (0..51).map(|i| format!("c{i}")).collect::<Vec<_>>().join(",");
        assert!(parse(Format::Csv, many.as_bytes(), &opts(1)).unwrap_err().contains("Too many columns"));
    }

    #[test]
    fn duplicate_and_odd_names_are_made_unique() {
        let raw: Vec<String> = ["Name", "name", "  ", "2nd", "créé"].iter().map(|s| s.to_string()).collect();
        assert_eq!(normalize_names(&raw), ["name", "name_1", "column", "col_2nd", "cr"]);
    }
}
