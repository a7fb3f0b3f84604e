//! What `parse-file` spends parsing, per format, on files of about 1 MB
//! (10,000 rows × 8 columns; xlsx written by the engine's writer). A call
//! also reads the file from DynamoDB: 1 GetItem (the list) and 1 Query
//! (the parts, one page per MB). Prints figures.
//!
//! cargo bench --profile dev -p agent --bench parse_file

use agent::files::{tabular, text, Format};
use serde_json::{json, Value};
use std::time::Instant;

const ROWS: usize = 10_000;

fn time(label: &str, bytes: usize, mut f: impl FnMut()) {
    let runs = 5;
    let mut ms: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{label:<34} {:>8} bytes  p50 {:>7.1} ms  (of {runs})", bytes, ms[runs / 2]);
}

fn main() {
    let header = ["Order ID", "Customer", "Email", "Amount", "Paid", "Created", "Country", "Note"];
    let row = |i: usize| vec![json!(i), json!(format!("Customer {i}")), json!(format!("c{i}@example.com")), json!(i as f64 * 1.5), json!(i % 2 == 0), json!("2026-01-02"), json!("PT"), json!("rush delivery please")];
    let csv: String = std::iter::once(header.join(","))
        .chain((0..ROWS).map(|i| row(i).iter().map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())).collect::<Vec<_>>().join(",")))
        .collect::<Vec<_>>()
        .join("\n");
    let json_rows: Vec<Value> = (0..ROWS).map(|i| Value::Object(header.iter().map(|h| h.to_string()).zip(row(i)).collect())).collect();
    let json_text = serde_json::to_string(&json_rows).unwrap();
    let mut grid: Vec<Vec<Value>> = vec![header.iter().map(|h| json!(h)).collect()];
    grid.extend((0..ROWS).map(row));
    let xlsx = engine::nodes::xlsx::write(&grid, "Orders", true).unwrap();
    let page = |start: usize| tabular::Options { has_header: true, delimiter: None, start_row: start, max_rows: 20, file_name: "orders" };
    time("csv: first page of 20 rows", csv.len(), || {
        tabular::parse(Format::Csv, csv.as_bytes(), &page(0)).unwrap();
    });
    time("csv: page at row 9,980", csv.len(), || {
        tabular::parse(Format::Csv, csv.as_bytes(), &page(9_980)).unwrap();
    });
    time("json: first page of 20 rows", json_text.len(), || {
        tabular::parse(Format::Json, json_text.as_bytes(), &page(0)).unwrap();
    });
    time("xlsx: first page of 20 rows", xlsx.len(), || {
        tabular::parse(Format::Xlsx, &xlsx, &page(0)).unwrap();
    });
    let prose = "Every new customer gets a welcome email within one day. ".repeat(18_000);
    time("text: extracted (cut at 40,000)", prose.len(), || {
        text::extract(Format::Text, prose.as_bytes(), "notes.txt").unwrap();
    });
    let html = format!("<html><head><title>Notes</title></head><body><article>{}</article></body></html>", "<p>Every new customer gets a welcome email within one day.</p>".repeat(3_000));
    time("html: readable Markdown", html.len(), || {
        text::extract(Format::Html, html.as_bytes(), "notes.html").unwrap();
    });
}
