//! The eng-new nodes, each option of each version: Convert to File, Extract
//! from File, RSS Read (against a local feed server), Compression, JWT, TOTP,
//! the training nodes, the file nodes in a scratch folder, and the refused
//! Execute Command / Local File Trigger. Also runs round 2's ConvertToFile and
//! RssFeedRead fixtures (conformance/README.md rules).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use engine::host::{CredentialsProvider, FileProvider};
use engine::nodes::disk::ScratchDir;
use engine::{Engine, EngineSettings, ExecutionState, ExecutionStatus, Graph, Host, RunOptions};
use serde_json::{json, Value};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({ "id": name, "name": name, "type": format!("n8n-nodes-base.{ty}"), "typeVersion": version, "parameters": params, "position": [0, 0] })
}

fn chain(nodes: Vec<Value>) -> Value {
    let mut conns = serde_json::Map::new();
    for w in nodes.windows(2) {
        conns.insert(w[0]["name"].as_str().unwrap_or("").into(), json!({ "main": [[{ "node": w[1]["name"], "type": "main", "index": 0 }]] }));
    }
    json!({ "nodes": nodes, "connections": conns, "settings": { "executionOrder": "v1" } })
}

fn start(items: Value) -> Vec<Value> {
    vec![
        node("Trigger", "manualTrigger", 1.0, json!({})),
        json!({ "id": "Data", "name": "Data", "type": "n8n-nodes-testing.testData", "typeVersion": 1, "parameters": { "data": items }, "position": [0, 0] }),
    ]
}

fn run_with(mut nodes: Vec<Value>, more: Vec<Value>, host: Host) -> ExecutionState {
    nodes.extend(more);
    let graph = Graph::from_json(&chain(nodes)).expect("valid workflow");
    let settings = EngineSettings { allow_private_network: true, ..Default::default() };
    Engine::new(settings, host).run(&graph, RunOptions::default()).expect("run").0
}

fn run(items: Value, more: Vec<Value>) -> ExecutionState {
    run_with(start(items), more, Host::default())
}

fn items(st: &ExecutionState, n: &str) -> Vec<engine::Item> {
    st.run_data.get(n).and_then(|r| r.last()).and_then(|t| t.output(0)).map(|i| i.to_vec()).unwrap_or_default()
}

fn jsons(st: &ExecutionState, n: &str) -> Vec<Value> {
    items(st, n).iter().map(|i| Value::clone(&i.json)).collect()
}

fn file(st: &ExecutionState, n: &str, prop: &str) -> (Vec<u8>, Value) {
    let it = items(st, n).into_iter().next().unwrap_or_else(|| panic!("{n} has no output"));
    let entry = it.binary.as_ref().and_then(|b| b.get(prop)).cloned().unwrap_or_else(|| panic!("{n} has no binary {prop}"));
    (B64.decode(entry["data"].as_str().unwrap_or("")).expect("base64"), entry)
}

fn error(st: &ExecutionState) -> String {
    assert_eq!(st.status, ExecutionStatus::Error, "expected the run to fail");
    st.error.as_ref().map(|e| e.message.clone()).unwrap_or_default()
}

// ---- Convert to File / Extract from File ---------------------------------------

#[test]
fn csv_round_trip_with_options() {
    let rows = json!([{ "a": "1", "b": "x,y" }, { "a": 2, "c": true, "b": "say \"hi\"" }]);
    let st = run(rows.clone(), vec![node("Csv", "convertToFile", 1.1, json!({ "operation": "csv", "options": {} }))]);
    let (bytes, entry) = file(&st, "Csv", "data");
    assert_eq!(String::from_utf8(bytes).unwrap(), "\u{feff}a,b,c\n1,\"x,y\",\n2,\"say \"\"hi\"\"\",TRUE");
    assert_eq!(entry["fileName"], "File.csv");
    assert_eq!(entry["mimeType"], "text/csv");
    // one file for all items, paired with every input item
    assert_eq!(items(&st, "Csv").len(), 1);
    let st = run(
        rows,
        vec![
            node("Csv", "convertToFile", 1.1, json!({ "operation": "csv", "binaryPropertyName": "out", "options": { "delimiter": ";", "headerRow": false, "fileName": "x.csv" } })),
            node("Back", "extractFromFile", 1.0, json!({ "operation": "csv", "binaryPropertyName": "out", "options": { "delimiter": ";", "headerRow": false } })),
        ],
    );
    assert_eq!(file(&st, "Csv", "out").1["fileName"], "x.csv");
    // the file's BOM stays on the first cell unless the BOM option drops it
    assert_eq!(jsons(&st, "Back"), vec![json!({ "row": ["\u{feff}1", "x,y"] }), json!({ "row": ["2", "say \"hi\"", "TRUE"] })]);
    // nested values are flattened into dotted columns (n8n's flattenObject)
    let st = run(json!([{ "a": { "b": 1, "c": [true, null] }, "d": {} }]), vec![node("Csv", "convertToFile", 1.1, json!({ "operation": "csv" }))]);
    assert_eq!(String::from_utf8(file(&st, "Csv", "data").0).unwrap(), "\u{feff}a.b,a.c.0,a.c.1\n1,TRUE,");
}

#[test]
fn extract_csv_options() {
    let csv = "\u{feff}id,name,empty\n1,a,\n2,b,\n3,c,\n";
    let input = json!([{}]);
    let mk = |opts: Value| {
        vec![
            node("F", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "t", "options": {} })),
            node("X", "extractFromFile", 1.0, json!({ "operation": "csv", "options": opts })),
        ]
    };
    let with_text = |opts: Value| {
        let mut nodes = start(json!([{ "t": csv }]));
        nodes.extend(mk(opts));
        let _ = &input;
        run_with(nodes, vec![], Host::default())
    };
    let st = with_text(json!({}));
    assert_eq!(jsons(&st, "X")[0], json!({ "\u{feff}id": "1", "name": "a" }));
    let st = with_text(json!({ "enableBOM": true, "includeEmptyCells": true, "maxRowCount": 2 }));
    assert_eq!(jsons(&st, "X"), vec![json!({ "id": "1", "name": "a", "empty": "" }), json!({ "id": "2", "name": "b", "empty": "" })]);
}

#[test]
fn json_text_and_base64_files() {
    let rows = json!([{ "n": 1, "s": "héllo" }, { "n": 2, "s": "b" }]);
    let st = run(
        rows.clone(),
        vec![
            node("Json", "convertToFile", 1.1, json!({ "operation": "toJson", "options": { "format": true } })),
            node("Parsed", "extractFromFile", 1.0, json!({ "operation": "fromJson", "destinationKey": "all" })),
        ],
    );
    assert_eq!(file(&st, "Json", "data").1["fileName"], "file.json");
    assert_eq!(jsons(&st, "Parsed"), vec![json!({ "all": rows })]);
    let st = run(rows.clone(), vec![node("Each", "convertToFile", 1.1, json!({ "operation": "toJson", "mode": "each", "options": {} }))]);
    assert_eq!(items(&st, "Each").len(), 2);
    let st = run(
        rows.clone(),
        vec![
            node("Txt", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "s", "options": { "encoding": "latin1", "fileName": "a.txt" } })),
            node("Read", "extractFromFile", 1.0, json!({ "operation": "text", "options": { "encoding": "latin1", "keepSource": "both" } })),
            node("B64", "extractFromFile", 1.0, json!({ "operation": "binaryToPropery", "destinationKey": "b", "options": { "keepSource": "binary" } })),
        ],
    );
    assert_eq!(file(&st, "Txt", "data").0, b"h\xe9llo");
    // keepSource both kept the json and the file for the next node
    assert_eq!(jsons(&st, "B64")[0], json!({ "b": B64.encode(b"h\xe9llo") }));
    assert_eq!(jsons(&st, "Read")[0], json!({ "data": "héllo" }));
    let st = run(json!([{ "x": "aGk=" }]), vec![node("Bin", "convertToFile", 1.1, json!({ "operation": "toBinary", "sourceProperty": "x", "options": { "fileName": "hi.txt" } }))]);
    let (bytes, entry) = file(&st, "Bin", "data");
    assert_eq!((bytes.as_slice(), entry["mimeType"].as_str()), (&b"hi"[..], Some("text/plain")));
    let st = run(json!([{ "x": "data:image/png;base64,iVBORw0KGgo=" }]), vec![node("Bin", "convertToFile", 1.1, json!({ "operation": "toBinary", "sourceProperty": "x" }))]);
    let (bytes, entry) = file(&st, "Bin", "data");
    assert_eq!((&bytes[..4], entry["mimeType"].as_str(), entry["fileName"].as_str()), (&b"\x89PNG"[..], Some("image/png"), Some("file.png")));
    let st = run(json!([{ "x": "plain text!" }]), vec![node("Bin", "convertToFile", 1.1, json!({ "operation": "toBinary", "sourceProperty": "x" }))]);
    assert!(error(&st).starts_with("The provided string is not valid base64 data."));
    let st = run(json!([{ "x": { "k": 1 } }]), vec![node("Bin", "convertToFile", 1.1, json!({ "operation": "toBinary", "sourceProperty": "x", "options": { "dataIsBase64": false } }))]);
    let (bytes, entry) = file(&st, "Bin", "data");
    assert_eq!((bytes.as_slice(), entry["mimeType"].as_str(), entry["fileName"].as_str()), (&b"{\"k\":1}"[..], Some("application/json"), Some("file.json")));
    let st = run(json!([{}]), vec![node("Missing", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "nope" }))]);
    assert_eq!(error(&st), "The value in \"nope\" is not set");
    let st = run(json!([{}]), vec![node("X", "convertToFile", 1.1, json!({ "operation": "ods" }))]);
    assert!(error(&st).contains("not supported"));
    let st = run(json!([{}]), vec![node("X", "extractFromFile", 1.0, json!({ "operation": "pdf" }))]);
    assert!(error(&st).contains("not supported"));
    // text-like operations skip an item without the file; csv reports it
    let st = run(json!([{}]), vec![node("X", "extractFromFile", 1.0, json!({ "operation": "text" }))]);
    assert_eq!((st.status, jsons(&st, "X")), (ExecutionStatus::Success, vec![]));
    let st = run(json!([{}]), vec![node("X", "extractFromFile", 1.0, json!({ "operation": "csv" }))]);
    assert_eq!(error(&st), "This operation expects the node's input data to contain a binary file 'data', but none was found [item 0]");
}

#[test]
fn legacy_code_pages() {
    // after n8n's ExtractFromFile/test/workflow.non_utf8_encoding.json (commit 946e79ebbdce):
    // a text file written in windows1256 is read back; what the page lacks became '?'
    let text = "Karlovy Vary město lázní Příliš žluťoučký kůň úpěl ďábelské ódy.";
    let st = run(
        json!([{ "text": text }]),
        vec![
            node("windows1256", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "text", "binaryPropertyName": "myfile", "options": { "encoding": "windows1256" } })),
            node("Extract from File", "extractFromFile", 1.0, json!({ "operation": "text", "binaryPropertyName": "myfile", "options": { "encoding": "windows1256" } })),
        ],
    );
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let back = jsons(&st, "Extract from File")[0]["data"].as_str().unwrap().to_string();
    assert!(back.starts_with("Karlovy Vary m?sto l") && back.contains('?') && back.chars().count() == text.chars().count(), "{back}");
    let st = run(
        json!([{ "text": "Привет" }]),
        vec![
            node("F", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "text", "options": { "encoding": "koi8r" } })),
            node("X", "extractFromFile", 1.0, json!({ "operation": "text", "options": { "encoding": "koi8r" } })),
        ],
    );
    assert_eq!(file(&st, "F", "data").0, vec![0xF0, 0xD2, 0xC9, 0xD7, 0xC5, 0xD4]);
    assert_eq!(jsons(&st, "X")[0]["data"], "Привет");
}

#[test]
fn xlsx_round_trip() {
    let rows = json!([{ "id": 1, "name": "a", "ok": true }, { "id": 2.5, "name": "b & <c>" }, { "name": "", "x": "only" }]);
    let to = |opts: Value| node("X", "convertToFile", 1.1, json!({ "operation": "xlsx", "options": opts }));
    let back = |opts: Value| node("R", "extractFromFile", 1.0, json!({ "operation": "xlsx", "options": opts }));
    let st = run(rows.clone(), vec![to(json!({})), back(json!({}))]);
    let (bytes, entry) = file(&st, "X", "data");
    assert_eq!((&bytes[..2], entry["fileName"].as_str()), (&b"PK"[..], Some("File.xlsx")));
    assert_eq!(entry["mimeType"], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert_eq!(
        jsons(&st, "R"),
        vec![json!({ "id": 1, "name": "a", "ok": true }), json!({ "id": 2.5, "name": "b & <c>" }), json!({ "name": "", "x": "only" })]
    );
    let st = run(rows.clone(), vec![to(json!({ "sheetName": "Data", "compression": true })), back(json!({ "sheetName": "Data", "includeEmptyCells": true }))]);
    assert_eq!(jsons(&st, "R")[1], json!({ "id": 2.5, "name": "b & <c>", "ok": "", "x": "" }));
    let st = run(rows.clone(), vec![to(json!({})), back(json!({ "headerRow": false }))]);
    assert_eq!(jsons(&st, "R")[0], json!({ "row": ["id", "name", "ok", "x"] }));
    assert_eq!(jsons(&st, "R")[3], json!({ "row": [null, "", null, "only"] }));
    let st = run(rows.clone(), vec![to(json!({})), back(json!({ "range": "B2:C3" }))]);
    // B2:C3: the header row is row 2 ("a", TRUE), one data row
    assert_eq!(jsons(&st, "R"), vec![json!({ "a": "b & <c>" })]);
    let st = run(rows.clone(), vec![to(json!({})), back(json!({ "sheetName": "Nope" }))]);
    assert_eq!(error(&st), "Spreadsheet does not contain sheet called \"Nope\"!");
    // repeated and blank header cells get SheetJS's names
    let st = run(
        json!([{ "a": "x", "b": "y" }, { "a": "1", "b": "2" }]),
        vec![to(json!({ "headerRow": false })), node("R", "extractFromFile", 1.0, json!({ "operation": "xlsx" }))],
    );
    assert_eq!(jsons(&st, "R"), vec![json!({ "x": "1", "y": "2" })]);
}

/// Spreadsheet File writes csv / xlsx / html named `spreadsheet.<format>`
/// and reads them back: version 2 tells CSV by the file's type (read as
/// text) and a workbook by its content; version 1 reads workbooks and HTML
/// tables but refuses CSV (SheetJS's typed CSV reading); xls, ods and rtf are
/// refused, xls being the writer's default.
#[test]
fn spreadsheet_file_reads_and_writes_per_version() {
    let rows = json!([{ "sku": "A-1", "qty": 3 }, { "sku": "B-2", "qty": 10, "note": "rush" }]);
    let write = |version: f64, format: &str| node("Write", "spreadsheetFile", version, json!({ "operation": "toFile", "fileFormat": format, "options": {} }));
    let read = |version: f64, params: Value| node("Read", "spreadsheetFile", version, params);
    let auto = json!({ "operation": "fromFile", "fileFormat": "autodetect", "options": {} });

    let st = run(rows.clone(), vec![write(2.0, "csv"), read(2.0, auto.clone())]);
    let (bytes, entry) = file(&st, "Write", "data");
    assert_eq!((entry["fileName"].as_str(), entry["mimeType"].as_str()), (Some("spreadsheet.csv"), Some("text/csv")));
    assert_eq!(String::from_utf8(bytes).unwrap_or_default(), "\u{feff}sku,qty,note\nA-1,3,\nB-2,10,rush");
    // csv-parse keeps the BOM on the first header unless told to drop it; values stay text
    let st = run(rows.clone(), vec![write(2.0, "csv"), read(2.0, json!({ "operation": "fromFile", "fileFormat": "csv", "options": { "enableBOM": true } }))]);
    assert_eq!(jsons(&st, "Read"), vec![json!({ "sku": "A-1", "qty": "3" }), json!({ "sku": "B-2", "qty": "10", "note": "rush" })]);

    for version in [1.0, 2.0] {
        let st = run(rows.clone(), vec![write(version, "xlsx"), read(version, auto.clone())]);
        assert_eq!(file(&st, "Write", "data").1["fileName"], "spreadsheet.xlsx");
        assert_eq!(jsons(&st, "Read"), rows.as_array().cloned().unwrap_or_default(), "{version}");
        let st = run(rows.clone(), vec![write(version, "html"), read(version, json!({ "operation": "fromFile", "options": { "headerRow": false } }))]);
        assert_eq!(jsons(&st, "Read")[0], json!({ "row": ["sku", "qty", "note"] }), "{version}");
    }
    let st = run(rows.clone(), vec![write(1.0, "csv"), read(1.0, json!({ "operation": "fromFile", "options": {} }))]);
    assert!(error(&st).starts_with("Spreadsheet File 1 reads CSV as SheetJS types it"), "{:?}", st.error);
    let st = run(rows.clone(), vec![node("Write", "spreadsheetFile", 2.0, json!({ "operation": "toFile" }))]);
    assert_eq!(error(&st), "Spreadsheet File: the 'xls' format is not supported by this engine (supported: csv, html, xlsx)");
    let st = run(rows, vec![write(2.0, "xlsx"), read(2.0, json!({ "operation": "fromFile", "fileFormat": "ods" }))]);
    assert_eq!(error(&st), "Spreadsheet File: the 'ods' format is not supported by this engine (supported: csv, html, xlsx)");
}

#[test]
fn html_tables_both_ways() {
    let rows = json!([{ "id": 1, "name": "a <b>" }, { "id": 2, "name": "c" }]);
    let st = run(rows.clone(), vec![node("H", "convertToFile", 1.1, json!({ "operation": "html" })), node("R", "extractFromFile", 1.0, json!({ "operation": "html" }))]);
    assert_eq!(jsons(&st, "R"), rows.as_array().unwrap().clone());
    let page = "<html><body><p>x</p><table><tr><th>k</th><th colspan=\"2\">v</th></tr><tr><td> a  b </td><td>1.5</td><td>z</td></tr></table><table><tr><td>no</td></tr></table></body></html>";
    let st = run(
        json!([{ "page": page }]),
        vec![
            node("F", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "page", "options": { "fileName": "p.html" } })),
            node("R", "extractFromFile", 1.0, json!({ "operation": "html" })),
        ],
    );
    assert_eq!(jsons(&st, "R"), vec![json!({ "k": "a b", "v": 1.5, "__EMPTY": "z" })]);
}

#[test]
fn ical_events() {
    let st = run(
        json!([{ "t": "Stand-up, daily" }]),
        vec![node("Cal", "convertToFile", 1.1, json!({
            "operation": "iCal", "title": "={{ $json.t }}", "start": "2024-03-01T09:30:00+01:00", "end": "2024-03-01T10:00:00Z",
            "additionalFields": { "uid": "u-1", "location": "Room; 2", "description": "line one\nline two",
                "attendeesUi": { "attendeeValues": [{ "name": "Ann", "email": "ann@x.io", "rsvp": true }] },
                "organizerUi": { "organizerValues": { "name": "Bob", "email": "bob@x.io" } }, "sequence": 2, "fileName": "m.ics" } })),
        ],
    );
    let (bytes, entry) = file(&st, "Cal", "data");
    assert_eq!((entry["fileName"].as_str(), entry["mimeType"].as_str()), (Some("m.ics"), Some("text/calendar")));
    let ics = String::from_utf8(bytes).unwrap();
    for line in [
        "BEGIN:VCALENDAR\r\n", "UID:u-1\r\n", "SUMMARY:Stand-up\\, daily\r\n", "DTSTART:20240301T083000Z\r\n", "DTEND:20240301T100000Z\r\n",
        "DESCRIPTION:line one\\nline two\r\n", "LOCATION:Room\\; 2\r\n", "STATUS:CONFIRMED\r\n", "ORGANIZER;CN=Bob:MAILTO:bob@x.io\r\n",
        "ATTENDEE;RSVP=TRUE;CN=Ann:MAILTO:ann@x.io\r\n", "SEQUENCE:2\r\n", "END:VCALENDAR\r\n",
    ] {
        assert!(ics.contains(line), "{line:?} in {ics}");
    }
    let st = run(json!([{}]), vec![node("Cal", "convertToFile", 1.1, json!({ "operation": "iCal", "title": "Off", "start": "2024-03-01", "end": "2024-03-02", "allDay": true }))]);
    let ics = String::from_utf8(file(&st, "Cal", "data").0).unwrap();
    assert!(ics.contains("DTSTART;VALUE=DATE:20240301\r\n") && ics.contains("DTEND;VALUE=DATE:20240303\r\n"), "{ics}");
    assert_eq!(file(&st, "Cal", "data").1["fileName"], "event.ics");
    let st = run(json!([{}]), vec![node("Cal", "convertToFile", 1.1, json!({ "operation": "iCal", "start": "soon", "end": "later" }))]);
    assert!(error(&st).contains("'Start' is not a valid date"));
}

/// The iCalendar node's Create Event File writes what Convert to File's
/// iCal does: one file per item, the item's JSON left empty.
#[test]
fn icalendar_node_creates_event_files() {
    let st = run(
        json!([{ "who": "Dana" }, { "who": "Eli" }]),
        vec![node("Cal", "iCal", 1.0, json!({
            "operation": "createEventFile", "title": "=Review with {{ $json.who }}", "start": "2024-05-06T14:00:00Z", "end": "2024-05-06T15:00:00Z",
            "binaryPropertyName": "invite", "additionalFields": { "uid": "rev-1", "status": "TENTATIVE", "busyStatus": "BUSY", "calName": "Team" } }))],
    );
    let out = items(&st, "Cal");
    assert_eq!(out.len(), 2);
    assert_eq!(Value::clone(&out[1].json), json!({}));
    let (bytes, entry) = file(&st, "Cal", "invite");
    assert_eq!((entry["fileName"].as_str(), entry["mimeType"].as_str()), (Some("event.ics"), Some("text/calendar")));
    let ics = String::from_utf8(bytes).unwrap_or_default();
    for line in ["X-WR-CALNAME:Team\r\n", "UID:rev-1\r\n", "SUMMARY:Review with Dana\r\n", "DTSTART:20240506T140000Z\r\n", "DTEND:20240506T150000Z\r\n", "STATUS:TENTATIVE\r\n", "X-MICROSOFT-CDO-BUSYSTATUS:BUSY\r\n"] {
        assert!(ics.contains(line), "{line:?} in {ics}");
    }
    let st = run(json!([{}]), vec![node("Cal", "iCal", 1.0, json!({ "operation": "createEventFile", "start": "whenever", "end": "2024-05-06T15:00:00Z" }))]);
    assert!(error(&st).contains("'Start' is not a valid date"));
}

/// Convert to/from binary data, JSON → file: the whole item (1: JSON's MIME
/// type and no name; 1.1: named `file.json`), or one key (removed from the
/// JSON unless kept), as raw text, or decoded from base64.
#[test]
fn move_binary_data_json_to_file() {
    let order = json!([{ "order": { "id": 7, "lines": ["tea"] }, "note": "héllo", "img": "iVBORw0KGgo=" }]);
    let st = run(order.clone(), vec![node("Move", "moveBinaryData", 1.0, json!({ "mode": "jsonToBinary", "options": {} }))]);
    let (bytes, entry) = file(&st, "Move", "data");
    assert_eq!(String::from_utf8(bytes).unwrap_or_default(), r#"{"order":{"id":7,"lines":["tea"]},"note":"héllo","img":"iVBORw0KGgo="}"#);
    assert_eq!((entry["mimeType"].as_str(), entry.get("fileName")), (Some("application/json"), None));
    assert_eq!(jsons(&st, "Move"), vec![json!({})]);
    let st = run(order.clone(), vec![node("Move", "moveBinaryData", 1.1, json!({ "mode": "jsonToBinary", "options": {} }))]);
    assert_eq!(file(&st, "Move", "data").1["fileName"], "file.json");

    let one = json!({ "mode": "jsonToBinary", "convertAllData": false, "sourceKey": "order.lines", "destinationKey": "lines", "options": { "keepSource": false } });
    let st = run(order.clone(), vec![node("Move", "moveBinaryData", 1.1, one)]);
    assert_eq!(String::from_utf8(file(&st, "Move", "lines").0).unwrap_or_default(), r#"["tea"]"#);
    assert_eq!(jsons(&st, "Move"), vec![json!({ "order": { "id": 7 }, "note": "héllo", "img": "iVBORw0KGgo=" })]);

    let raw = json!({ "mode": "jsonToBinary", "convertAllData": false, "sourceKey": "note", "options": { "useRawData": true, "encoding": "latin1", "fileName": "note.txt", "keepSource": true } });
    let st = run(order.clone(), vec![node("Move", "moveBinaryData", 1.1, raw)]);
    let (bytes, entry) = file(&st, "Move", "data");
    assert_eq!(bytes, b"h\xe9llo");
    assert_eq!((entry["fileName"].as_str(), entry["mimeType"].as_str()), (Some("note.txt"), Some("text/plain")));
    assert_eq!(jsons(&st, "Move")[0]["note"], "héllo");

    let b64 = json!({ "mode": "jsonToBinary", "convertAllData": false, "sourceKey": "img", "options": { "dataIsBase64": true } });
    let st = run(order.clone(), vec![node("Move", "moveBinaryData", 1.1, b64)]);
    let (bytes, entry) = file(&st, "Move", "data");
    assert_eq!(bytes, b"\x89PNG\r\n\x1a\n");
    assert_eq!((entry["mimeType"].as_str(), entry["fileName"].as_str()), (Some("image/png"), Some("file.png")));
    // a key the item lacks gives no item
    let missing = json!({ "mode": "jsonToBinary", "convertAllData": false, "sourceKey": "nope", "options": {} });
    assert!(items(&run(order, vec![node("Move", "moveBinaryData", 1.1, missing)]), "Move").is_empty());
}

/// Convert to/from binary data, file → JSON: the file's JSON as the item
/// (the default), or its text / base64 / parsed JSON into one key of the
/// item's JSON; the file is dropped unless kept; an item without it is skipped.
#[test]
fn move_binary_data_file_to_json() {
    // the file `doc` holds the item's `t` as UTF-8 text
    let make = || node("Make", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "t", "binaryPropertyName": "doc", "options": {} }));
    let input = json!([{ "t": "\u{feff}{\"city\":\"Oslo\",\"n\":3}" }]);
    let all = json!({ "mode": "binaryToJson", "sourceKey": "doc", "options": {} });
    let st = run(input.clone(), vec![make(), node("Move", "moveBinaryData", 1.1, all)]);
    assert_eq!(jsons(&st, "Move"), vec![json!({ "city": "Oslo", "n": 3 })]);
    assert!(items(&st, "Move")[0].binary.is_none(), "the file is moved, not copied");

    let text = json!({ "mode": "binaryToJson", "setAllData": false, "sourceKey": "doc", "destinationKey": "raw.text", "options": { "stripBOM": false, "keepSource": true } });
    let st = run(input.clone(), vec![make(), node("Move", "moveBinaryData", 1.0, text)]);
    assert_eq!(jsons(&st, "Move")[0]["raw"]["text"], "\u{feff}{\"city\":\"Oslo\",\"n\":3}");
    assert!(items(&st, "Move")[0].binary.as_ref().is_some_and(|b| b.get("doc").is_some()));

    let parsed = json!({ "mode": "binaryToJson", "setAllData": false, "sourceKey": "doc", "destinationKey": "parsed", "options": { "jsonParse": true } });
    let st = run(input.clone(), vec![make(), node("Move", "moveBinaryData", 1.1, parsed)]);
    assert_eq!(jsons(&st, "Move")[0]["parsed"], json!({ "city": "Oslo", "n": 3 }));

    let b64 = json!({ "mode": "binaryToJson", "setAllData": false, "sourceKey": "doc", "destinationKey": "b", "options": { "keepAsBase64": true } });
    let st = run(json!([{ "t": "hi" }]), vec![make(), node("Move", "moveBinaryData", 1.1, b64)]);
    assert_eq!(jsons(&st, "Move")[0]["b"], "aGk=");

    let elsewhere = json!({ "mode": "binaryToJson", "sourceKey": "other", "options": {} });
    assert!(items(&run(input.clone(), vec![make(), node("Move", "moveBinaryData", 1.1, elsewhere)]), "Move").is_empty());
    let broken = json!({ "mode": "binaryToJson", "sourceKey": "doc", "options": {} });
    assert!(error(&run(json!([{ "t": "not json" }]), vec![make(), node("Move", "moveBinaryData", 1.1, broken)])).starts_with("The data is not valid JSON"));
}

#[test]
fn html_table() {
    let st = run(json!([{ "a": 1, "b": "<x>" }]), vec![node("H", "convertToFile", 1.1, json!({ "operation": "html" }))]);
    let html = String::from_utf8(file(&st, "H", "data").0).unwrap();
    assert!(html.contains("<td data-t=\"s\" data-v=\"a\" id=\"sjs-A1\">a</td>"), "{html}");
    assert!(html.contains("<td data-t=\"n\" data-v=\"1\" id=\"sjs-A2\">1</td><td data-t=\"s\" data-v=\"&lt;x&gt;\" id=\"sjs-B2\">&lt;x&gt;</td>"), "{html}");
}

// ---- RSS Read -------------------------------------------------------------------

fn serve(body: String, content_type: &'static str) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            tx.send(l.local_addr().expect("addr")).expect("send");
            let app = axum::Router::new().fallback(move || {
                let b = body.clone();
                async move { ([("content-type", content_type)], b) }
            });
            let _ = axum::serve(l, app).await;
        });
    });
    format!("http://{}", rx.recv().expect("address"))
}

fn conformance_dir() -> PathBuf {
    match std::env::var("CONFORMANCE_DIR") {
        Ok(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
    }
}

/// Jest `toEqual` on JSON (numbers by value, key order free).
fn deep_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| deep_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| deep_eq(v, w))),
        _ => a == b,
    }
}

fn round2(rel: &str) -> Option<Value> {
    let p = conformance_dir().join("round2/n8n").join(rel);
    std::fs::read_to_string(p).ok().map(|t| serde_json::from_str(&t).expect("fixture JSON"))
}

/// Runs a round-2 fixture (pinData = expected first outputs) after `adjust`.
fn check_fixture(rel: &str, adjust: impl FnOnce(&mut Value)) {
    let Some(mut wf) = round2(rel) else {
        panic!("missing fixture {rel} under {}", conformance_dir().display());
    };
    let expected = wf.as_object_mut().and_then(|o| o.remove("pinData")).unwrap_or(Value::Null);
    adjust(&mut wf);
    let graph = Graph::from_json(&wf).expect("fixture workflow");
    let settings = EngineSettings { allow_private_network: true, ..Default::default() };
    let (st, _) = Engine::new(settings, Host::default()).run(&graph, RunOptions::default()).expect("run");
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    for (n, want) in expected.as_object().into_iter().flatten() {
        let want: Vec<Value> = want.as_array().into_iter().flatten().map(|i| i["json"].clone()).collect();
        let got = jsons(&st, n);
        assert!(deep_eq(&Value::Array(got.clone()), &Value::Array(want.clone())), "{n}: expected {want:?} got {got:?}");
    }
}

#[test]
fn round2_convert_to_file_fixture() {
    check_fixture("ConvertToFile/toText.workflow.json", |_| {});
}

#[test]
fn round2_rss_fixture_against_a_local_feed() {
    let mocks = round2("RssFeedRead/mocks.json").expect("RSS mocks");
    let mock = &mocks[0];
    let base = serve(mock["responseBody"].as_str().expect("utf8 body").to_string(), "application/rss+xml; charset=utf-8");
    let from = mock["baseUrl"].as_str().unwrap_or_default().to_string();
    check_fixture("RssFeedRead/workflow.rss.json", |wf| {
        *wf = serde_json::from_str(&wf.to_string().replace(&from, &base)).expect("rewritten");
    });
}

#[test]
fn rss_versions_atom_custom_fields_and_errors() {
    let atom = r#"<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>
      <entry><title>One &amp; two</title><link rel="alternate" href="https://e.x/1"/><id>urn:1</id>
      <updated>2024-01-02T03:04:05Z</updated><author><name>Ann</name></author>
      <content type="html">&lt;p&gt;Hello&lt;/p&gt;&lt;p&gt;world&lt;/p&gt;</content></entry></feed>"#;
    let base = serve(atom.to_string(), "application/atom+xml");
    let st = run(json!([{ "u": format!("{base}/a") }, { "u": format!("{base}/b") }]), vec![node("R", "rssFeedRead", 1.1, json!({ "url": "={{ $json.u }}" }))]);
    let got = jsons(&st, "R");
    assert_eq!(got.len(), 2, "v1.1 reads one feed per item");
    assert_eq!(
        got[0],
        json!({ "author": "Ann", "title": "One & two", "link": "https://e.x/1", "pubDate": "2024-01-02T03:04:05Z",
                "contentSnippet": "Hello\nworld", "content": "<p>Hello</p><p>world</p>", "id": "urn:1", "isoDate": "2024-01-02T03:04:05.000Z" })
    );
    let st = run(json!([{ "u": format!("{base}/a") }, { "u": format!("{base}/b") }]), vec![node("R", "rssFeedRead", 1.0, json!({ "url": "={{ $json.u }}" }))]);
    assert_eq!(jsons(&st, "R").len(), 1, "v1 reads the first item's URL only");
    let rss = r#"<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><item><title>A</title><category>x</category><category>y</category>
      <enclosure url="https://e.x/a.mp3" length="5" type="audio/mpeg"/><media:rating>adult</media:rating></item></channel></rss>"#;
    let base = serve(rss.to_string(), "text/xml");
    let st = run(json!([{}]), vec![node("R", "rssFeedRead", 1.2, json!({ "url": base, "options": { "customFields": "media:rating" } }))]);
    assert_eq!(
        jsons(&st, "R"),
        vec![json!({ "title": "A", "enclosure": { "url": "https://e.x/a.mp3", "length": "5", "type": "audio/mpeg" }, "categories": ["x", "y"], "media:rating": "adult" })]
    );
    let st = run(json!([{}]), vec![node("R", "rssFeedRead", 1.2, json!({ "url": "http://127.0.0.1:1/feed" }))]);
    assert_eq!(error(&st), "It was not possible to connect to the URL. Please make sure the URL \"http://127.0.0.1:1/feed\" it is valid!");
    let st = run(json!([{}]), vec![node("R", "rssFeedRead", 1.2, json!({ "url": "not a url" }))]);
    assert_eq!(error(&st), "The provided \"URL\" is not valid!");
    let mut bad = node("R", "rssFeedRead", 1.2, json!({ "url": serve("<html>no</html>".into(), "text/html") }));
    bad["onError"] = json!("continueRegularOutput");
    let st = run(json!([{}]), vec![bad]);
    assert!(jsons(&st, "R")[0]["error"].as_str().unwrap_or("").starts_with("Feed not recognized as RSS 1 or 2."), "{:?}", jsons(&st, "R"));
}

// ---- Compression -------------------------------------------------------------------

#[test]
fn zip_and_gzip_round_trips() {
    let text = |prop: &str, name: &str| node(prop, "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": prop, "binaryPropertyName": prop, "options": { "fileName": name } }));
    let mut nodes = start(json!([{ "a": "first file", "b": "second" }]));
    nodes.push(text("a", "a.txt"));
    nodes.push(node("Zip", "compression", 1.1, json!({ "operation": "compress", "binaryPropertyName": "a", "outputFormat": "zip", "fileName": "all.zip", "binaryPropertyOutput": "archive" })));
    nodes.push(node("Unzip", "compression", 1.1, json!({ "operation": "decompress", "binaryPropertyName": "archive" })));
    let st = run_with(nodes, vec![], Host::default());
    let (zip, entry) = file(&st, "Zip", "archive");
    assert_eq!((entry["fileName"].as_str(), &zip[..2]), (Some("all.zip"), &b"PK"[..]));
    assert_eq!(file(&st, "Unzip", "file_0"), (b"first file".to_vec(), file(&st, "Unzip", "file_0").1));
    assert_eq!(file(&st, "Unzip", "file_0").1["fileName"], "a.txt");
    // the item's json passes through (empty after Convert to File)
    assert_eq!(jsons(&st, "Unzip")[0], json!({}));

    // v1 gzip: `<prefix><index>` named `<stem>.gzip`
    let mut nodes = start(json!([{ "a": "zipped twice" }]));
    nodes.push(text("a", "a.txt"));
    nodes.push(node("Gz", "compression", 1.0, json!({ "operation": "compress", "binaryPropertyName": "a", "outputFormat": "gzip", "outputPrefix": "gz" })));
    nodes.push(node("Gunzip", "compression", 1.0, json!({ "operation": "decompress", "binaryPropertyName": "gz0", "outputPrefix": "out" })));
    let st = run_with(nodes, vec![], Host::default());
    assert_eq!(file(&st, "Gz", "gz0").1["fileName"], "a.gzip");
    let (plain, entry) = file(&st, "Gunzip", "out0");
    assert_eq!((plain.as_slice(), entry["fileName"].as_str()), (&b"zipped twice"[..], Some("a.txt")));
    // v1.1 gzip: the output field, `<name>.<ext>.gz`, and back to `<name>.<ext>`
    let mut nodes = start(json!([{ "a": "{\"k\": 1}" }]));
    nodes.push(text("a", "doc.json"));
    nodes.push(node("Gz", "compression", 1.1, json!({ "operation": "compress", "binaryPropertyName": "a", "outputFormat": "gzip", "binaryPropertyOutput": "packed" })));
    nodes.push(node("Gunzip", "compression", 1.1, json!({ "operation": "decompress", "binaryPropertyName": "packed" })));
    let st = run_with(nodes, vec![], Host::default());
    assert_eq!(file(&st, "Gz", "packed").1["fileName"], "doc.json.gz");
    let (plain, entry) = file(&st, "Gunzip", "file_0");
    assert_eq!((plain.as_slice(), entry["fileName"].as_str(), entry["mimeType"].as_str()), (&b"{\"k\": 1}"[..], Some("doc.json"), Some("application/json")));
    // v1 with no output format set emits nothing, as n8n does
    let mut nodes = start(json!([{ "a": "x" }]));
    nodes.push(text("a", "a.txt"));
    nodes.push(node("None", "compression", 1.0, json!({ "operation": "compress", "binaryPropertyName": "a" })));
    assert!(items(&run_with(nodes, vec![], Host::default()), "None").is_empty());
    let st = run(json!([{}]), vec![node("Bad", "compression", 1.1, json!({ "operation": "decompress" }))]);
    assert!(error(&st).contains("expects the node's input data to contain a binary file 'data'"));
}

#[test]
fn n8n_compression_workflow() {
    // n8n's Compression/test/node/workflow.compression.json (commit 3985081fcddd): read a
    // file, zip it (v1), unzip it with every parameter at its default
    let dir = Arc::new(ScratchDir::new());
    dir.write("/home/me/Desktop/lorem.txt", b"Lorem ipsum dolor sit amet", false).unwrap();
    let host = Host { files: Some(dir), ..Default::default() };
    let nodes = vec![
        node("When clicking \"Execute Workflow\"", "manualTrigger", 1.0, json!({})),
        node("Read Binary File", "readWriteFile", 1.0, json!({ "fileSelector": "/home/me/Desktop/lorem.txt", "options": {} })),
        node("Compression", "compression", 1.0, json!({ "operation": "compress", "outputFormat": "zip", "fileName": "data.zip" })),
        node("Compression1", "compression", 1.0, json!({})),
    ];
    let st = run_with(nodes, vec![], host);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(file(&st, "Compression", "data").1["fileName"], "data.zip");
    let (text, entry) = file(&st, "Compression1", "file_0");
    assert_eq!((text.as_slice(), entry["fileName"].as_str(), entry["mimeType"].as_str()), (&b"Lorem ipsum dolor sit amet"[..], Some("lorem.txt"), Some("text/plain")));
}

/// The (name, mode, contents) of every entry of a tar archive, read with the `tar` crate
/// (gunzipped first when `gz`).
fn tar_entries(bytes: &[u8], gz: bool) -> Vec<(String, u32, Vec<u8>)> {
    use std::io::Read;
    let reader: Box<dyn Read + '_> = if gz { Box::new(flate2::read::GzDecoder::new(bytes)) } else { Box::new(bytes) };
    let mut archive = tar::Archive::new(reader);
    let mut out = vec![];
    for entry in archive.entries().expect("a tar archive") {
        let mut entry = entry.expect("an entry");
        assert_eq!(entry.header().entry_type(), tar::EntryType::Regular);
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let mode = entry.header().mode().expect("mode");
        let mut data = vec![];
        entry.read_to_end(&mut data).expect("entry data");
        out.push((name, mode, data));
    }
    out
}

/// Trigger → a Code node emitting one item with the binary fields `binary`.
fn with_files(binary: Value) -> Vec<Value> {
    vec![node("Trigger", "manualTrigger", 1.0, json!({})), node("Make", "code", 2.0, json!({ "jsCode": format!("return [{{ json: {{}}, binary: {binary} }}];") }))]
}

fn with_file(entry: Value) -> Vec<Value> {
    with_files(json!({ "data": entry }))
}

fn text_file(prop: &str, name: &str) -> Value {
    node(prop, "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": prop, "binaryPropertyName": prop, "options": { "fileName": name } }))
}

#[test]
fn tar_and_targz_archives() {
    // n8n's Compression.node.ts (commit e8e9010d370f): tar / targz bundle every input
    // field's file under its file name (createTar: regular files, mode 0644) into
    // `binaryPropertyOutput`, named `fileName`, typed as prepareBinaryData does
    let mut nodes = with_files(json!({
        "a": { "data": B64.encode("first file"), "mimeType": "text/plain", "fileName": "a.txt", "fileExtension": "txt" },
        "b": { "data": B64.encode("# second"), "mimeType": "text/markdown", "fileName": "notes.md", "fileExtension": "md" },
    }));
    nodes.push(node("Tar", "compression", 1.1, json!({ "operation": "compress", "binaryPropertyName": "a, b", "outputFormat": "tar", "fileName": "bundle.tar", "binaryPropertyOutput": "archive" })));
    nodes.push(node("Untar", "compression", 1.1, json!({ "operation": "decompress", "binaryPropertyName": "archive" })));
    let st = run_with(nodes, vec![], Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let tar_item = items(&st, "Tar").remove(0);
    let fields: Vec<&String> = tar_item.binary.as_ref().and_then(|b| b.as_object()).map(|m| m.keys().collect()).unwrap_or_default();
    assert_eq!(fields, ["archive"], "only the archive, as n8n's output item");
    let (tar, entry) = file(&st, "Tar", "archive");
    // two 512-byte headers, two data blocks, the two zero blocks that end an archive
    assert_eq!(tar.len(), 3072);
    assert_eq!(
        tar_entries(&tar, false),
        vec![("a.txt".to_string(), 0o644, b"first file".to_vec()), ("notes.md".to_string(), 0o644, b"# second".to_vec())]
    );
    assert_eq!(
        (entry["fileName"].as_str(), entry["fileExtension"].as_str(), entry["mimeType"].as_str()),
        (Some("bundle.tar"), Some("tar"), Some("application/x-tar"))
    );
    assert_eq!(entry["fileSize"], "3.07 kB");
    // decompress reads it back: file_0, file_1 in archive order, typed by name
    let (data, e0) = file(&st, "Untar", "file_0");
    assert_eq!((data.as_slice(), e0["fileName"].as_str(), e0["mimeType"].as_str()), (&b"first file"[..], Some("a.txt"), Some("text/plain")));
    let (data, e1) = file(&st, "Untar", "file_1");
    assert_eq!((data.as_slice(), e1["fileName"].as_str(), e1["fileExtension"].as_str()), (&b"# second"[..], Some("notes.md"), Some("md")));

    // targz: the tar gzip-compressed; `.tar.gz` (extension `gz`) and `.tgz` unpack as tar
    for name in ["bundle.tar.gz", "bundle.tgz"] {
        let mut nodes = start(json!([{ "a": "zipped text" }]));
        nodes.push(text_file("a", "a.txt"));
        nodes.push(node("Tgz", "compression", 1.1, json!({ "operation": "compress", "binaryPropertyName": "a", "outputFormat": "targz", "fileName": name })));
        nodes.push(node("Untgz", "compression", 1.1, json!({ "operation": "decompress", "outputPrefix": "out_" })));
        let st = run_with(nodes, vec![], Host::default());
        assert_eq!(st.status, ExecutionStatus::Success, "{name}: {:?}", st.error);
        let (tgz, entry) = file(&st, "Tgz", "data");
        assert_eq!(&tgz[..2], &[0x1f, 0x8b], "gzip magic");
        assert_eq!(tar_entries(&tgz, true), vec![("a.txt".to_string(), 0o644, b"zipped text".to_vec())]);
        let ext = name.rsplit('.').next().unwrap_or("");
        assert_eq!(
            (entry["fileName"].as_str(), entry["fileExtension"].as_str(), entry["mimeType"].as_str()),
            (Some(name), Some(ext), Some("application/gzip"))
        );
        let (data, out) = file(&st, "Untgz", "out_0");
        assert_eq!((data.as_slice(), out["fileName"].as_str()), (&b"zipped text"[..], Some("a.txt")));
    }

    // no file name: typed by content (file-type's tar / gz), no name
    for (format, ext, mime) in [("tar", "tar", "application/x-tar"), ("targz", "gz", "application/gzip")] {
        let mut nodes = start(json!([{ "a": "x" }]));
        nodes.push(text_file("a", "a.txt"));
        nodes.push(node("Pack", "compression", 1.1, json!({ "operation": "compress", "binaryPropertyName": "a", "outputFormat": format })));
        let entry = file(&run_with(nodes, vec![], Host::default()), "Pack", "data").1;
        assert_eq!((entry["fileExtension"].as_str(), entry["mimeType"].as_str(), entry.get("fileName")), (Some(ext), Some(mime), None), "{format}");
    }

    // v1 offers tar too, its file name and field read from the first item only; v1.1 per item
    for (version, names) in [(1.0, ["one.tar", "one.tar"]), (1.1, ["one.tar", "two.tar"])] {
        let mut nodes = start(json!([{ "a": "1", "n": "one" }, { "a": "2", "n": "two" }]));
        nodes.push(text_file("a", "a.txt"));
        nodes.push(node("Tar", "compression", version, json!({ "operation": "compress", "binaryPropertyName": "a", "outputFormat": "tar", "fileName": "={{ $('Data').item.json.n }}.tar" })));
        let st = run_with(nodes, vec![], Host::default());
        assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
        let got: Vec<Value> = items(&st, "Tar").iter().map(|i| i.binary.as_ref().map(|b| b["data"]["fileName"].clone()).unwrap_or_default()).collect();
        assert_eq!(got, names.map(Value::from), "v{version}");
    }
}

#[test]
fn untar_keeps_regular_files_inside_the_archive() {
    // n8n's BoundedUntar: regular files only; absolute names, names above the root and
    // unsafe object keys skipped; a file in a folder keeps its folder as `directory`
    let mut b = tar::Builder::new(Vec::new());
    let mut add = |name: &[u8], kind: tar::EntryType, data: &[u8]| {
        let mut h = tar::Header::new_ustar();
        // raw names: the tar crate refuses to write `..` and absolute paths itself
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append(&h, data).expect("append");
    };
    add(b"docs/", tar::EntryType::Directory, b"");
    add(b"docs/readme.txt", tar::EntryType::Regular, b"read me");
    add(b"link.txt", tar::EntryType::Symlink, b"");
    add(b"../evil.txt", tar::EntryType::Regular, b"evil");
    add(b"/etc/passwd", tar::EntryType::Regular, b"root");
    add(b"a/../../up.txt", tar::EntryType::Regular, b"up");
    add(b"__proto__", tar::EntryType::Regular, b"proto");
    add(b"__MACOSX/._x", tar::EntryType::Regular, b"mac");
    add(b"a/../fine.json", tar::EntryType::Regular, b"{}");
    let tar = b.into_inner().expect("tar");
    let entry = json!({ "data": B64.encode(&tar), "mimeType": "application/x-tar", "fileName": "in.tar", "fileExtension": "tar" });
    let st = run_with(with_file(entry), vec![node("Untar", "compression", 1.1, json!({ "operation": "decompress" }))], Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let out = items(&st, "Untar").remove(0);
    let bins = out.binary.as_ref().and_then(|b| b.as_object()).cloned().unwrap_or_default();
    assert_eq!(bins.keys().collect::<Vec<_>>(), ["file_0", "file_1"]);
    assert_eq!(
        (bins["file_0"]["fileName"].as_str(), bins["file_0"]["directory"].as_str(), bins["file_0"]["mimeType"].as_str()),
        (Some("readme.txt"), Some("docs"), Some("text/plain"))
    );
    assert_eq!(B64.decode(bins["file_0"]["data"].as_str().unwrap_or("")).ok(), Some(b"read me".to_vec()));
    assert_eq!((bins["file_1"]["fileName"].as_str(), bins["file_1"]["directory"].as_str()), (Some("fine.json"), Some("a/..")));

    // n8n refuses what it cannot unpack, and a file without an extension
    let mut nodes = start(json!([{ "a": "plain" }]));
    nodes.push(text_file("a", "a.txt"));
    nodes.push(node("Bad", "compression", 1.1, json!({ "operation": "decompress", "binaryPropertyName": "a" })));
    assert_eq!(error(&run_with(nodes, vec![], Host::default())), "Unsupported archive format \".txt\" for binary data a");
    let bare = json!({ "data": B64.encode(b"plain"), "mimeType": "application/octet-stream", "fileName": "noext" });
    let st = run_with(with_file(bare), vec![node("Bad", "compression", 1.1, json!({ "operation": "decompress" }))], Host::default());
    assert_eq!(error(&st), "File extension not found for binary data data");
}

// ---- JWT / TOTP -------------------------------------------------------------------------

struct Creds(Value);
impl CredentialsProvider for Creds {
    fn get(&self, _t: &str, _r: &Value) -> Result<Value, String> {
        Ok(self.0.clone())
    }
}

fn with_creds(creds: Value) -> Host {
    Host { credentials: Some(Arc::new(Creds(creds))), ..Default::default() }
}

fn jwt(name: &str, params: Value) -> Value {
    let mut n = node(name, "jwt", 1.0, params);
    n["credentials"] = json!({ "jwtAuth": { "id": "c1", "name": "jwt" } });
    n
}

#[test]
fn jwt_sign_decode_verify() {
    let host = || with_creds(json!({ "keyType": "passphrase", "secret": "baz", "algorithm": "HS256" }));
    // after n8n's Jwt/test/jwt.workflow.json (commit 0a0bb4e3ada7): claims go into the
    // payload under the node's own names, the JSON default payload, kid and header claims
    let st = run_with(
        start(json!([{}])),
        vec![
            jwt("Sign", json!({ "claims": { "audience": "test", "issuer": "test", "jwtid": "123", "subject": "test" }, "options": { "kid": "custom-kid" } })),
            jwt("Verify", json!({ "operation": "verify", "token": "={{ $json.token }}", "options": { "complete": true } })),
        ],
        host(),
    );
    let v = &jsons(&st, "Verify")[0];
    assert_eq!(v["header"], json!({ "alg": "HS256", "typ": "JWT", "kid": "custom-kid" }));
    assert_eq!((v["payload"]["audience"].clone(), v["payload"]["jwtid"].clone()), (json!("test"), json!("123")));
    assert!(v["payload"]["iat"].as_i64().is_some());
    let st = run_with(
        start(json!([{}])),
        vec![jwt("Sign", json!({ "useJson": true })), jwt("Decode", json!({ "operation": "decode", "token": "={{ $json.token }}" }))],
        host(),
    );
    let p = &jsons(&st, "Decode")[0]["payload"];
    assert_eq!((p["my_field_1"].clone(), p["my_field_2"].clone()), (json!("value 1"), json!("value 2")));
    let st = run_with(
        start(json!([{}])),
        vec![
            jwt("Sign", json!({ "claims": { "subject": "x" }, "headerClaims": "{\n  \"x5t\": \"abc123thumbprint\",\n  \"kid\": \"header-kid\"\n}", "options": { "kid": "option-kid" } })),
            jwt("Decode", json!({ "operation": "decode", "token": "={{ $json.token }}", "options": { "complete": true } })),
        ],
        host(),
    );
    assert_eq!(jsons(&st, "Decode")[0]["header"], json!({ "alg": "HS256", "typ": "JWT", "kid": "header-kid", "x5t": "abc123thumbprint" }));

    // a token from elsewhere: decode reads it, verify checks signature and expiry
    let h = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let body = format!("{}.{}", h.encode(br#"{"alg":"HS256","typ":"JWT"}"#), h.encode(br#"{"sub":"x","exp":1}"#));
    let forged = format!("{body}.{}", h.encode(b"not a signature"));
    let st = run_with(start(json!([{}])), vec![jwt("D", json!({ "operation": "decode", "token": forged }))], host());
    assert_eq!(jsons(&st, "D"), vec![json!({ "payload": { "sub": "x", "exp": 1 } })]);
    let st = run_with(start(json!([{}])), vec![jwt("D", json!({ "operation": "decode", "token": "abc" }))], host());
    assert_eq!(jsons(&st, "D"), vec![json!({ "payload": null })]);
    let st = run_with(start(json!([{}])), vec![jwt("V", json!({ "operation": "verify", "token": forged }))], host());
    assert_eq!(error(&st), "The JWT token can't be verified");
    let mut tolerant = jwt("V", json!({ "operation": "verify", "token": forged }));
    tolerant["onError"] = json!("continueRegularOutput");
    let st = run_with(start(json!([{ "keep": 1 }])), vec![tolerant], host());
    assert_eq!(jsons(&st, "V"), vec![json!({ "keep": 1 })], "a failed item keeps its input json");
    let st = run_with(start(json!([{}])), vec![jwt("V", json!({ "operation": "verify", "token": "" }))], host());
    assert_eq!(error(&st), "The JWT token was not provided");
    let expired = |opts: Value| {
        vec![
            jwt("Sign", json!({ "useJson": true, "claimsJson": "{\"exp\": 1}" })),
            jwt("V", json!({ "operation": "verify", "token": "={{ $json.token }}", "options": opts })),
        ]
    };
    let st = run_with(start(json!([{}])), expired(json!({})), host());
    assert_eq!(error(&st), "jwt expired");
    let st = run_with(start(json!([{}])), expired(json!({ "ignoreExpiration": true })), host());
    assert_eq!(jsons(&st, "V")[0]["payload"]["exp"], 1);
    let st = run_with(start(json!([{}])), vec![jwt("V", json!({ "operation": "verify", "token": "abc" }))], host());
    assert_eq!(error(&st), "jwt malformed");
    let st = run_with(start(json!([{}])), expired(json!({ "algorithm": "HS512" })), host());
    assert_eq!(error(&st), "invalid algorithm");

    let key = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jwt-test-key.pem")).unwrap();
    let public = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/jwt-test-key.pub")).unwrap();
    let rs = || with_creds(json!({ "keyType": "pemKey", "privateKey": key, "publicKey": public, "algorithm": "RS256" }));
    let st = run_with(
        start(json!([{}])),
        vec![
            jwt("Sign", json!({ "useJson": true, "claimsJson": "{\"role\": \"admin\"}", "options": { "kid": "k1" } })),
            jwt("V", json!({ "operation": "verify", "token": "={{ $json.token }}", "options": { "complete": true } })),
        ],
        rs(),
    );
    let v = &jsons(&st, "V")[0];
    assert_eq!((v["header"]["alg"].clone(), v["header"]["kid"].clone(), v["payload"]["role"].clone()), (json!("RS256"), json!("k1"), json!("admin")));
    // a key pasted on one line (no line breaks) still works
    let flat = key.replace('\n', " ");
    let st = run_with(start(json!([{}])), vec![jwt("S", json!({ "operation": "sign", "claims": { "a": 1 } }))], with_creds(json!({ "keyType": "pemKey", "privateKey": flat, "algorithm": "RS256" })));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let st = run_with(start(json!([{}])), vec![jwt("S", json!({ "operation": "sign", "options": { "algorithm": "ES256" } }))], rs());
    assert!(error(&st).contains("ES256 is not supported"));
}

#[test]
fn totp_codes() {
    let mut n = node("T", "totp", 1.0, json!({ "operation": "generateSecret", "options": { "digits": 8, "algorithm": "SHA256" } }));
    n["credentials"] = json!({ "totpApi": { "id": "t", "name": "t" } });
    let st = run_with(start(json!([{}])), vec![n.clone()], with_creds(json!({ "label": "n8n:me", "secret": "GEZDGNBVGY3TQOJQ" })));
    let out = &jsons(&st, "T")[0];
    let token = out["token"].as_str().unwrap();
    assert_eq!(token.len(), 8);
    let step = chrono::Utc::now().timestamp() as u64 / 30;
    let ok = [step, step.saturating_sub(1)].iter().any(|s| engine::nodes::totp::code(b"1234567890", "SHA256", 8, *s).unwrap() == token);
    assert!(ok, "{token} is the current code");
    assert!((0..=30).contains(&out["secondsRemaining"].as_i64().unwrap()));
    let st = run_with(start(json!([{}])), vec![n], with_creds(json!({ "label": "nolabel", "secret": "GEZDGNBVGY3TQOJQ" })));
    assert_eq!(error(&st), "Malformed label - expected `issuer:username`");
}

// ---- training nodes ---------------------------------------------------------------------

#[test]
fn training_nodes() {
    let st = run(json!([{}, {}]), vec![node("One", "n8nTrainingCustomerDatastore", 1.0, json!({ "operation": "getOnePerson" }))]);
    assert_eq!(jsons(&st, "One").len(), 2);
    assert_eq!(jsons(&st, "One")[0]["name"], "Jay Gatsby");
    let st = run(json!([{}]), vec![node("All", "n8nTrainingCustomerDatastore", 1.0, json!({ "operation": "getAllPeople", "limit": 2 }))]);
    assert_eq!(jsons(&st, "All").iter().map(|p| p["id"].clone()).collect::<Vec<_>>(), vec![json!("23423532"), json!("23423533")]);
    let st = run(json!([{}]), vec![node("All", "n8nTrainingCustomerDatastore", 1.0, json!({ "operation": "getAllPeople", "returnAll": true }))]);
    assert_eq!(jsons(&st, "All").len(), 5);
    assert_eq!(jsons(&st, "All")[3]["country"], Value::Null);
    let st = run(json!([{ "id": 7 }]), vec![node("M", "n8nTrainingCustomerMessenger", 1.0, json!({ "customerId": "={{ $json.id }}", "message": "Hi" }))]);
    assert_eq!(jsons(&st, "M"), vec![json!({ "output": "Sent message to customer 7:  Hi" })]);
}

// ---- files on disk ----------------------------------------------------------------------

#[test]
fn files_live_in_the_execution_scratch_folder() {
    let dir = Arc::new(ScratchDir::new());
    let host = Host { files: Some(dir.clone()), ..Default::default() };
    let st = run_with(
        start(json!([{ "t": "hello" }])),
        vec![
            node("F", "convertToFile", 1.1, json!({ "operation": "toText", "sourceProperty": "t", "options": { "fileName": "h.txt" } })),
            node("W", "readWriteFile", 1.0, json!({ "operation": "write", "fileName": "/out/h.txt" })),
            node("W2", "writeBinaryFile", 1.0, json!({ "fileName": "/out/h.txt", "options": { "append": true } })),
            node("R", "readWriteFile", 1.0, json!({ "operation": "read", "fileSelector": "/out/*.txt", "options": { "dataPropertyName": "f" } })),
            node("R1", "readBinaryFile", 1.0, json!({ "filePath": "/out/h.txt", "dataPropertyName": "g" })),
        ],
        host.clone(),
    );
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    // the input's json (empty after Convert to File) plus the file name
    assert_eq!(jsons(&st, "W")[0], json!({ "fileName": "/out/h.txt" }));
    let (bytes, entry) = file(&st, "R", "f");
    assert_eq!((bytes.as_slice(), entry["fileName"].as_str(), entry["directory"].as_str()), (&b"hellohello"[..], Some("h.txt"), Some("/out")));
    assert_eq!(file(&st, "R1", "g").0, b"hellohello");
    assert_eq!(dir.read("/out/h.txt").unwrap()[0].1, b"hellohello");
    let st = run_with(start(json!([{}])), vec![node("R", "readBinaryFiles", 1.0, json!({ "fileSelector": "/etc/../../passwd" }))], host);
    assert!(error(&st).contains("not allowed"));
}

#[test]
fn read_files_from_disk_per_version() {
    let dir = Arc::new(ScratchDir::new());
    for name in ["/d/a.txt", "/d/b.csv", "/d/r[1].txt"] {
        dir.write(name, b"x,y", false).unwrap();
    }
    let host = Host { files: Some(dir.clone()), ..Default::default() };
    let read = |version: f64, selector: &str, options: Value| {
        run_with(start(json!([{}])), vec![node("R", "readWriteFile", version, json!({ "fileSelector": selector, "options": options }))], host.clone())
    };
    // each file's metadata is also the item's json; the options overwrite the entry's fields
    let st = read(1.1, "/d/{a.txt,b.csv}", json!({ "fileExtension": "dat", "mimeType": "text/x-test" }));
    assert_eq!(
        jsons(&st, "R"),
        vec![
            json!({ "mimeType": "text/x-test", "fileType": "text", "fileName": "a.txt", "fileExtension": "dat", "fileSize": "3 B" }),
            json!({ "mimeType": "text/x-test", "fileType": "text", "fileName": "b.csv", "fileExtension": "dat", "fileSize": "3 B" }),
        ]
    );
    // brackets are literal unless the option says otherwise
    assert_eq!(jsons(&read(1.1, "/d/r[1].txt", json!({})), "R").len(), 1);
    assert_eq!(jsons(&read(1.1, "/d/[ab].*", json!({ "literalBrackets": false })), "R").len(), 2);
    // nothing found: version 1 outputs nothing, 1.1 fails and says why
    let st = read(1.0, "/d/missing.txt", json!({}));
    assert_eq!(st.status, ExecutionStatus::Success);
    assert!(jsons(&st, "R").is_empty());
    let st = read(1.1, "/d/[ab].*", json!({}));
    let e = st.error.clone().expect("an error");
    assert_eq!(e.message, "No file(s) found");
    assert_eq!(
        e.description.as_deref(),
        Some("No file matching the selector \"/d/[ab].*\" found. If [ ] and ( ) were meant as a character class or group, turn off 'Treat Brackets and Parentheses as Literal' in Options")
    );

    // Read Binary Files (legacy) runs once for all input items
    let st = run_with(start(json!([{ "n": 1 }, { "n": 2 }])), vec![node("L", "readBinaryFiles", 1.0, json!({ "fileSelector": "/d/*.txt" }))], host);
    let got = items(&st, "L");
    assert_eq!(got.len(), 2, "one item per file, not per input item");
    assert_eq!(got[0].paired_item.as_ref().map(|p| p.to_value()), Some(json!([{ "item": 0 }, { "item": 1 }])));
}

#[test]
fn shell_and_watched_disk_are_refused() {
    let st = run(json!([{}]), vec![node("C", "executeCommand", 1.0, json!({ "command": "ls" }))]);
    assert!(error(&st).contains("Execute Command is not supported"));
    let graph = Graph::from_json(&chain(vec![node("L", "localFileTrigger", 1.0, json!({ "path": "/tmp" }))])).expect("valid");
    let (st, _) = Engine::new(EngineSettings::default(), Host::default()).run(&graph, RunOptions::default()).expect("run");
    assert!(error(&st).contains("Local File Trigger is not supported"));
}
