//! Google Sheets (API v4) against the local stand-in: each operation's
//! requests (method, path with its A1 range, query, body, bearer token)
//! and the items n8n's node returns.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::google::{count, engine_with, store_with, values_of, Google, Tab, SPREADSHEET};
use crate::support::{output, run_node};

const CRED: &str = "googleSheetsOAuth2Api";

fn google() -> Google {
    let g = Google::start();
    g.state.lock().unwrap().tabs = vec![
        Tab { id: 0, title: "Sheet1".into(), rows: vec![vec![json!("name"), json!("email"), json!("plan")], vec![json!("Ann"), json!("ann@x.io"), json!("pro")]], row_count: 2 },
        Tab { id: 123, title: "Leads 2025".into(), rows: vec![], row_count: 1000 },
    ];
    g
}

fn node(version: f64, params: Value) -> Value {
    let mut p = json!({
        "documentId": {"__rl": true, "value": SPREADSHEET, "mode": "list", "cachedResultName": "CRM"},
        "sheetName": {"__rl": true, "value": "gid=0", "mode": "list", "cachedResultName": "Sheet1"},
    });
    for (k, v) in params.as_object().unwrap() {
        p[k] = v.clone();
    }
    json!({"type": "n8n-nodes-base.googleSheets", "typeVersion": version, "parameters": p, "credentials": {CRED: {"id": "c1", "name": "Sheets account"}}})
}

fn schema(cols: &[&str]) -> Value {
    Value::Array(cols.iter().map(|c| json!({"id": c, "displayName": c, "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true})).collect())
}

#[test]
fn append_maps_columns_reads_once_adds_a_row_and_writes_after_the_last() {
    let g = google();
    let store = store_with(&g, CRED);
    let engine = engine_with(&g, &store);
    let columns = json!({"mappingMode": "defineBelow", "value": {"name": "={{ $json.n }}", "email": "={{ $json.e }}"}, "matchingColumns": [], "schema": schema(&["name", "email", "plan"])});
    let st = run_node(&engine, node(4.5, json!({"operation": "append", "columns": columns, "options": {}})), json!([{"n": "Bo", "e": "bo@x.io"}, {"n": "Cy", "e": "cy@x.io"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    let lines: Vec<String> = seen.iter().map(|r| format!("{} {}", r.method, r.path)).collect();
    assert_eq!(
        lines,
        [
            format!("GET /v4/spreadsheets/{SPREADSHEET}"),
            format!("GET /v4/spreadsheets/{SPREADSHEET}/values/'Sheet1'"),
            format!("POST /v4/spreadsheets/{SPREADSHEET}:batchUpdate"),
            format!("PUT /v4/spreadsheets/{SPREADSHEET}/values/Sheet1!3:4"),
        ]
    );
    let token = format!("Bearer {}", crate::google::access_token(&store, CRED));
    assert!(seen.iter().all(|r| r.header("authorization") == Some(token.as_str())), "every request carries the connected token");
    assert_eq!(seen[1].query.get("valueRenderOption").map(String::as_str), Some("FORMATTED_VALUE"));
    assert_eq!(seen[2].json(), json!({"requests": [{"appendDimension": {"sheetId": 0, "dimension": "ROWS", "length": 1}}]}));
    assert_eq!(seen[3].query.get("valueInputOption").map(String::as_str), Some("USER_ENTERED"), "4.1+ lets Google format");
    assert_eq!(seen[3].json(), json!({"range": "Sheet1!3:4", "values": [["Bo", "bo@x.io", ""], ["Cy", "cy@x.io", ""]]}));
    assert_eq!(values_of(&g, "Sheet1")[2], vec![json!("Bo"), json!("bo@x.io")]);
    // v4's define-below output: the mapped values
    assert_eq!(output(&st), vec![json!({"name": "Bo", "email": "bo@x.io"}), json!({"name": "Cy", "email": "cy@x.io"})]);
}

#[test]
fn append_auto_maps_input_adds_new_columns_and_fills_an_empty_sheet() {
    let g = google();
    let store = store_with(&g, CRED);
    let engine = engine_with(&g, &store);
    let leads = json!({"__rl": true, "value": "Leads 2025", "mode": "name"});
    let auto = json!({"mappingMode": "autoMapInputData", "value": {}, "matchingColumns": [], "schema": []});
    let st = run_node(&engine, node(4.7, json!({"operation": "append", "sheetName": leads, "columns": auto, "options": {"cellFormat": "RAW"}})), json!([{"name": "Ann", "score": 3}, {"name": "Bo", "tags": ["a"]}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    let puts: Vec<(String, Value)> = seen.iter().filter(|r| r.method == "PUT").map(|r| (r.path.clone(), r.json()["values"].clone())).collect();
    // the header from the first item, then its extension, then the rows
    assert_eq!(puts[0], (format!("/v4/spreadsheets/{SPREADSHEET}/values/Leads%202025!1:1"), json!([["name", "score"]])));
    assert_eq!(puts[1], (format!("/v4/spreadsheets/{SPREADSHEET}/values/Leads%202025!1:1"), json!([["name", "score", "tags"]])));
    assert_eq!(puts[2].1, json!([["Ann", 3, ""], ["Bo", "", "[\"a\"]"]]));
    assert_eq!(values_of(&g, "Leads 2025"), vec![vec![json!("name"), json!("score"), json!("tags")], vec![json!("Ann"), json!(3)], vec![json!("Bo"), json!(""), json!("[\"a\"]")]]);
    // auto-mapping returns the input items
    assert_eq!(output(&st), vec![json!({"name": "Ann", "score": 3}), json!({"name": "Bo", "tags": ["a"]})]);
}

#[test]
fn append_refuses_columns_renamed_since_setup_and_empty_mappings() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let stale = json!({"mappingMode": "defineBelow", "value": {"name": "x"}, "schema": schema(&["name", "phone"])});
    let st = run_node(&engine, node(4.5, json!({"operation": "append", "columns": stale})), json!([{}]));
    let e = st.error.expect("an error");
    assert_eq!(e.message, "Column names were updated after the node's setup");
    assert!(e.description.unwrap_or_default().contains("Missing columns: phone"));
    assert_eq!(count(&g.server.take(), "PUT", &format!("/v4/spreadsheets/{SPREADSHEET}/values/Sheet1!3:3")), 0, "nothing written");
}

#[test]
fn read_rows_with_row_numbers_filters_and_first_match() {
    let g = google();
    g.state.lock().unwrap().tabs[0].rows = vec![
        vec![json!("name"), json!("plan"), json!("")],
        vec![json!("Ann"), json!("pro")],
        vec![],
        vec![json!("Bo"), json!("free")],
        vec![json!("Cy"), json!("pro")],
    ];
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(4.5, json!({"operation": "read"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen.len(), 2, "the sheet looked up, its values read once");
    assert_eq!(seen[1].query.get("valueRenderOption").map(String::as_str), Some("UNFORMATTED_VALUE"));
    assert_eq!(seen[1].query.get("dateTimeRenderOption").map(String::as_str), Some("FORMATTED_STRING"));
    assert_eq!(
        output(&st),
        vec![json!({"row_number": 2, "name": "Ann", "plan": "pro"}), json!({"row_number": 4, "name": "Bo", "plan": "free"}), json!({"row_number": 5, "name": "Cy", "plan": "pro"})]
    );

    let filters = json!({"values": [{"lookupColumn": "plan", "lookupValue": "pro"}]});
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "filtersUI": filters.clone()})), json!([{}]));
    assert_eq!(output(&st).iter().map(|r| r["name"].clone()).collect::<Vec<_>>(), vec![json!("Ann"), json!("Cy")]);
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "filtersUI": filters, "options": {"returnFirstMatch": true}})), json!([{}]));
    assert_eq!(output(&st), vec![json!({"row_number": 2, "name": "Ann", "plan": "pro"})]);
    // 4.3+ combines filters with AND by default
    let both = json!({"values": [{"lookupColumn": "plan", "lookupValue": "pro"}, {"lookupColumn": "name", "lookupValue": "Cy"}]});
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "filtersUI": both})), json!([{}]));
    assert_eq!(output(&st), vec![json!({"row_number": 5, "name": "Cy", "plan": "pro"})]);
    let unknown = json!({"values": [{"lookupColumn": "city", "lookupValue": "x"}]});
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "filtersUI": unknown})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "The column \"city\" could not be found");
}

#[test]
fn update_and_upsert_match_rows_by_a_column() {
    let g = google();
    g.state.lock().unwrap().tabs[0].rows = vec![vec![json!("email"), json!("plan")], vec![json!("ann@x.io"), json!("free")], vec![json!("bo@x.io"), json!("free")]];
    g.state.lock().unwrap().tabs[0].row_count = 3;
    let engine = engine_with(&g, &store_with(&g, CRED));
    let columns = json!({"mappingMode": "defineBelow", "value": {"email": "={{ $json.email }}", "plan": "pro"}, "matchingColumns": ["email"], "schema": schema(&["email", "plan"])});
    let st = run_node(&engine, node(4.6, json!({"operation": "update", "columns": columns.clone()})), json!([{"email": "bo@x.io"}, {"email": "nobody@x.io"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    let batch = seen.iter().find(|r| r.path.ends_with("/values:batchUpdate")).expect("one batch update");
    assert_eq!(batch.json(), json!({"data": [{"range": "Sheet1!B3", "values": [["pro"]]}], "valueInputOption": "USER_ENTERED"}));
    assert_eq!(values_of(&g, "Sheet1")[2], vec![json!("bo@x.io"), json!("pro")]);
    assert_eq!(output(&st).len(), 2);

    let st = run_node(&engine, node(4.6, json!({"operation": "appendOrUpdate", "columns": columns})), json!([{"email": "ann@x.io"}, {"email": "cy@x.io"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let sheet = values_of(&g, "Sheet1");
    assert_eq!(sheet[1], vec![json!("ann@x.io"), json!("pro")]);
    assert_eq!(sheet[3], vec![json!("cy@x.io"), json!("pro")], "the unmatched one appended");

    let missing = json!({"mappingMode": "defineBelow", "value": {"plan": "x"}, "matchingColumns": [], "schema": schema(&["email", "plan"])});
    let st = run_node(&engine, node(4.6, json!({"operation": "update", "columns": missing})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "`columns.matchingColumns` is required for the Update Row operation");
}

#[test]
fn clear_create_delete_rows_and_remove_a_sheet() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(4.5, json!({"operation": "clear", "clear": "wholeSheet", "keepFirstRow": true})), json!([{"a": 1}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    let clear = seen.iter().find(|r| r.path.ends_with(":clear")).unwrap();
    assert_eq!(clear.path, format!("/v4/spreadsheets/{SPREADSHEET}/values/'Sheet1':clear"));
    assert_eq!(clear.json(), json!({"spreadsheetId": SPREADSHEET, "range": "Sheet1"}));
    assert_eq!(values_of(&g, "Sheet1"), vec![vec![json!("name"), json!("email"), json!("plan")]], "the header row kept");
    assert_eq!(output(&st), vec![json!({"a": 1})]);

    let st = run_node(&engine, node(4.5, json!({"operation": "create", "title": "Q3", "options": {"tabColor": "ff0000", "hidden": false}})), json!([{}, {}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    let adds: Vec<Value> = seen.iter().filter(|r| r.path.ends_with(":batchUpdate")).map(|r| r.json()).collect();
    assert_eq!(adds, vec![json!({"requests": [{"addSheet": {"properties": {"tabColor": {"red": 1.0, "green": 0.0, "blue": 0.0}, "hidden": false, "title": "Q3"}}}]})], "a title the spreadsheet has is skipped");
    let out = output(&st);
    assert_eq!((out.len(), out[0]["title"].clone(), out[0]["spreadsheetId"].clone()), (1, json!("Q3"), json!(SPREADSHEET)));

    let q3 = json!({"__rl": true, "value": "Q3", "mode": "name"});
    let st = run_node(&engine, node(4.5, json!({"operation": "delete", "sheetName": q3.clone(), "toDelete": "rows", "startIndex": 2, "numberToDelete": 3})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let body = g.server.take().into_iter().find(|r| r.path.ends_with(":batchUpdate")).unwrap().json();
    assert_eq!(body["requests"][0]["deleteDimension"]["range"], json!({"sheetId": out[0]["sheetId"], "dimension": "ROWS", "startIndex": 1, "endIndex": 4}));
    assert_eq!(output(&st), vec![json!({"success": true})]);

    let st = run_node(&engine, node(4.5, json!({"operation": "remove", "sheetName": q3})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![json!({"spreadsheetId": SPREADSHEET})]);
    assert!(g.state.lock().unwrap().tabs.iter().all(|t| t.title != "Q3"));
}

#[test]
fn documents_are_created_and_deleted() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let params = json!({"resource": "spreadsheet", "operation": "create", "title": "Budget", "sheetsUi": {"sheetValues": [{"title": "Jan", "hidden": false}]}, "options": {"locale": "en_GB"}});
    let node_json = json!({"type": "n8n-nodes-base.googleSheets", "typeVersion": 4.5, "parameters": params, "credentials": {CRED: {"id": "c1", "name": "Sheets"}}});
    let st = run_node(&engine, node_json, json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &g.server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v4/spreadsheets"));
    assert_eq!(r.json(), json!({"properties": {"title": "Budget", "locale": "en_GB"}, "sheets": [{"properties": {"title": "Jan", "hidden": false}}]}));
    assert_eq!(output(&st)[0]["spreadsheetId"], "1NewSpreadsheet");

    let doc = json!({"__rl": true, "value": format!("https://docs.google.com/spreadsheets/d/{SPREADSHEET}/edit#gid=0"), "mode": "url"});
    let del = json!({"type": "n8n-nodes-base.googleSheets", "typeVersion": 4.5, "parameters": {"resource": "spreadsheet", "operation": "deleteSpreadsheet", "documentId": doc}, "credentials": {CRED: {"id": "c1", "name": "Sheets"}}});
    let st = run_node(&engine, del, json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &g.server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("DELETE", format!("/drive/v3/files/{SPREADSHEET}").as_str()), "the id taken from the URL");
    assert_eq!(output(&st), vec![json!({"success": true})]);
}

#[test]
fn unknown_sheets_and_google_errors_are_the_nodes_errors() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "sheetName": {"__rl": true, "value": "99", "mode": "id"}})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Sheet with ID 99 not found");
    let doc = json!({"__rl": true, "value": "1NoSuchDocument000000000000", "mode": "id"});
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "documentId": doc})), json!([{}]));
    let e = st.error.unwrap();
    assert_eq!((e.message.as_str(), e.description.as_deref()), ("The resource you are requesting could not be found", Some("Requested entity was not found.")));
    // a 400 says what is wrong in Google's words
    let st = run_node(&engine, node(4.5, json!({"operation": "clear", "clear": "specificRange", "range": "Nope!A1"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "the sheet's name before ! is replaced by the selected sheet");
    g.state.lock().unwrap().tabs.retain(|t| t.title != "Sheet1");
    let st = run_node(&engine, node(4.5, json!({"operation": "read", "sheetName": {"__rl": true, "value": "Leads 2025", "mode": "name"}, "options": {"dataLocationOnSheet": {"values": {"rangeDefinition": "specifyRangeA1", "range": "A1:B2"}}}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert!(output(&st).is_empty(), "an empty sheet reads as no rows");
}
