//! The requests each Google operation makes, measured against the local
//! stand-in of the service tests, for one input item and for three; and the
//! lines each service's description and code take.
//!
//! `cargo bench -p engine --bench google_requests`

#[path = "../tests/services/google.rs"]
#[allow(dead_code)]
mod google;
#[path = "../tests/services/support.rs"]
#[allow(dead_code)]
mod support;

use google::{engine_with, store_with, File, Google, Message, Tab, SPREADSHEET};
use serde_json::{json, Value};

fn sheet_tabs() -> Vec<Tab> {
    vec![
        Tab { id: 0, title: "Sheet1".into(), rows: vec![vec![json!("name"), json!("email")], vec![json!("Ann"), json!("ann@x.io")]], row_count: 2 },
        Tab { id: 7, title: "Empty".into(), rows: vec![], row_count: 100 },
    ]
}

fn seed(g: &Google) {
    let mut s = g.state.lock().unwrap();
    s.tabs = sheet_tabs();
    s.labels = vec![json!({"id": "INBOX", "name": "INBOX"}), json!({"id": "Label_1", "name": "Invoices"})];
    s.messages = (0..3).map(|i| Message { id: format!("m{i}"), thread_id: format!("t{i}"), labels: vec!["INBOX".into()], headers: vec![("From".into(), "a@x.io".into()), ("Subject".into(), "s".into()), ("Message-ID".into(), "<x@y>".into())] }).collect();
    s.files = vec![
        File { id: "f1".into(), name: "a.pdf".into(), mime: "application/pdf".into(), content: b"%PDF".to_vec(), ..File::default() },
        File { id: "f2".into(), name: "Doc".into(), mime: "application/vnd.google-apps.document".into(), ..File::default() },
    ];
}

fn rl(v: &str, mode: &str) -> Value {
    json!({"__rl": true, "value": v, "mode": mode})
}

/// Runs `node` with `items` input items; the requests the service saw.
fn measure(cred: &str, node: Value, items: usize) -> (usize, String) {
    let g = Google::start();
    seed(&g);
    let engine = engine_with(&g, &store_with(&g, cred));
    // the first item matches the sheet's row (updates), the others are new
    let input: Vec<Value> = (0..items).map(|i| if i == 0 { json!({"name": "Ann B", "email": "ann@x.io"}) } else { json!({"name": format!("n{i}"), "email": format!("n{i}@x.io")}) }).collect();
    let st = support::run_node(&engine, node, Value::Array(input));
    assert!(st.error.is_none(), "{:?}", st.error);
    let seen = g.server.take();
    let mut kinds: Vec<String> = vec![];
    for r in &seen {
        let k = format!("{} {}", r.method, shape(&r.path));
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    (seen.len(), kinds.join(", "))
}

/// A path with its ids and ranges as placeholders.
fn shape(path: &str) -> String {
    let path = path.replace(SPREADSHEET, "{id}");
    let path = match path.split_once("/values/") {
        Some((head, rest)) => format!("{head}/values/{{range}}{}", rest.rsplit_once(':').map(|(_, a)| format!(":{a}")).unwrap_or_default()),
        None => path,
    };
    let mut out: Vec<String> = vec![];
    for seg in path.split('/') {
        let after_collection = matches!(out.last().map(String::as_str), Some("messages" | "files" | "labels"));
        out.push(if after_collection && seg != "send" { "{id}".into() } else { seg.to_owned() });
    }
    out.join("/")
}

fn sheets(params: Value) -> Value {
    let mut p = json!({"documentId": rl(SPREADSHEET, "id"), "sheetName": rl("gid=0", "list")});
    for (k, v) in params.as_object().unwrap() {
        p[k] = v.clone();
    }
    json!({"type": "n8n-nodes-base.googleSheets", "typeVersion": 4.5, "parameters": p, "credentials": {"googleSheetsOAuth2Api": {"id": "c", "name": "S"}}})
}

fn gmail(params: Value) -> Value {
    json!({"type": "n8n-nodes-base.gmail", "typeVersion": 2.1, "parameters": params, "credentials": {"gmailOAuth2": {"id": "c", "name": "G"}}})
}

fn drive(params: Value) -> Value {
    json!({"type": "n8n-nodes-base.googleDrive", "typeVersion": 3, "parameters": params, "credentials": {"googleDriveOAuth2Api": {"id": "c", "name": "D"}}})
}

fn lines(paths: &[&str]) -> usize {
    paths.iter().map(|p| std::fs::read_to_string(format!("{}/{p}", env!("CARGO_MANIFEST_DIR"))).map(|t| t.lines().count()).unwrap_or(0)).sum()
}

fn main() {
    let schema = json!([{"id": "name"}, {"id": "email"}]);
    let mapped = json!({"mappingMode": "defineBelow", "value": {"name": "={{ $json.name }}", "email": "={{ $json.email }}"}, "matchingColumns": ["email"], "schema": schema});
    let cases: Vec<(&str, &str, &str, Value)> = vec![
        ("Google Sheets", "append (map columns)", "googleSheetsOAuth2Api", sheets(json!({"operation": "append", "columns": mapped}))),
        ("Google Sheets", "append (auto-map, empty sheet)", "googleSheetsOAuth2Api", sheets(json!({"operation": "append", "sheetName": rl("Empty", "name"), "columns": {"mappingMode": "autoMapInputData", "value": {}}}))),
        ("Google Sheets", "appendOrUpdate", "googleSheetsOAuth2Api", sheets(json!({"operation": "appendOrUpdate", "columns": mapped}))),
        ("Google Sheets", "update", "googleSheetsOAuth2Api", sheets(json!({"operation": "update", "columns": mapped}))),
        ("Google Sheets", "read (all rows)", "googleSheetsOAuth2Api", sheets(json!({"operation": "read"}))),
        ("Google Sheets", "read (filter)", "googleSheetsOAuth2Api", sheets(json!({"operation": "read", "filtersUI": {"values": [{"lookupColumn": "name", "lookupValue": "Ann"}]}}))),
        ("Google Sheets", "clear", "googleSheetsOAuth2Api", sheets(json!({"operation": "clear"}))),
        ("Google Sheets", "create (sheet)", "googleSheetsOAuth2Api", sheets(json!({"operation": "create", "title": "={{ $json.name }}"}))),
        ("Google Sheets", "delete (rows)", "googleSheetsOAuth2Api", sheets(json!({"operation": "delete", "startIndex": 2, "numberToDelete": 1}))),
        ("Google Sheets", "create (document)", "googleSheetsOAuth2Api", sheets(json!({"resource": "spreadsheet", "operation": "create", "title": "T"}))),
        ("Gmail", "send", "gmailOAuth2", gmail(json!({"sendTo": "a@x.io", "subject": "s", "message": "m"}))),
        ("Gmail", "send (sender name)", "gmailOAuth2", gmail(json!({"sendTo": "a@x.io", "subject": "s", "message": "m", "options": {"senderName": "Ops"}}))),
        ("Gmail", "reply", "gmailOAuth2", gmail(json!({"operation": "reply", "messageId": "m0", "message": "ok"}))),
        ("Gmail", "get", "gmailOAuth2", gmail(json!({"operation": "get", "messageId": "m1"}))),
        ("Gmail", "getAll (limit 2)", "gmailOAuth2", gmail(json!({"operation": "getAll", "limit": 2}))),
        ("Gmail", "addLabels", "gmailOAuth2", gmail(json!({"operation": "addLabels", "messageId": "m1", "labelIds": ["Label_1"]}))),
        ("Gmail", "markAsRead", "gmailOAuth2", gmail(json!({"operation": "markAsRead", "messageId": "m1"}))),
        ("Gmail", "label getAll", "gmailOAuth2", gmail(json!({"resource": "label", "operation": "getAll", "returnAll": true}))),
        ("Google Drive", "download", "googleDriveOAuth2Api", drive(json!({"operation": "download", "fileId": rl("f1", "id")}))),
        ("Google Drive", "download (Google Doc exported)", "googleDriveOAuth2Api", drive(json!({"operation": "download", "fileId": rl("f2", "id")}))),
        ("Google Drive", "search (limit)", "googleDriveOAuth2Api", drive(json!({"resource": "fileFolder", "queryString": "a", "limit": 10}))),
        ("Google Drive", "share", "googleDriveOAuth2Api", drive(json!({"operation": "share", "fileId": rl("f1", "id"), "permissionsUi": {"permissionsValues": {"role": "reader", "type": "anyone"}}}))),
        ("Google Drive", "deleteFile (to the bin)", "googleDriveOAuth2Api", drive(json!({"operation": "deleteFile", "fileId": rl("f1", "id")}))),
    ];
    println!("{:<14} {:<32} {:>7} {:>8}  requests (in order of first use)", "service", "operation", "1 item", "3 items");
    for (service, op, cred, node) in cases {
        let (one, kinds) = measure(cred, node.clone(), 1);
        let (three, _) = measure(cred, node, 3);
        println!("{service:<14} {op:<32} {one:>7} {three:>8}  {kinds}");
    }
    println!("\n(uploads take a binary input: upload = 2 requests per item, multipart/related then files.update)");
    println!("(a connected token refreshed: +1 request on expiry, +2 on a 401 — the refresh and the resend)\n");
    println!("{:<14} {:>12} {:>10} {:>12}", "service", "description", "code", "credentials");
    let cred = |names: &[&str]| lines(&names.iter().map(|n| format!("src/catalog/credentials/{n}.json")).collect::<Vec<_>>().iter().map(String::as_str).collect::<Vec<_>>());
    println!("{:<14} {:>12} {:>10} {:>12}", "Google Sheets", lines(&["src/catalog/nodes/googleSheets.json"]), lines(&["src/nodes/google/sheets.rs"]), cred(&["googleSheetsOAuth2Api"]));
    println!("{:<14} {:>12} {:>10} {:>12}", "Gmail", lines(&["src/catalog/nodes/gmail.json"]), lines(&["src/nodes/google/gmail.rs", "src/nodes/google/mime.rs"]), cred(&["gmailOAuth2"]));
    println!("{:<14} {:>12} {:>10} {:>12}", "Google Drive", lines(&["src/catalog/nodes/googleDrive.json"]), lines(&["src/nodes/google/drive.rs"]), cred(&["googleDriveOAuth2Api"]));
    println!("{:<14} {:>12} {:>10} {:>12}", "(shared)", 0, lines(&["src/nodes/google/mod.rs"]), cred(&["googleOAuth2Api", "googleApi"]));
}
