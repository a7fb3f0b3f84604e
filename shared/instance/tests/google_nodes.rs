//! Google Sheets, Gmail and Google Drive nodes as n8n exports them validate
//! clean against the catalog (the operations, resource locators, resource
//! mapper columns and collections n8n writes), and the verification
//! classifier knows which of their operations write.

use serde_json::{json, Value};

fn sheets(name: &str, version: f64, params: Value) -> Value {
    json!({"parameters": params, "name": name, "type": "n8n-nodes-base.googleSheets", "typeVersion": version, "position": [0, 0], "credentials": {"googleSheetsOAuth2Api": {"id": "s1", "name": "Google Sheets account"}}})
}

fn node(name: &str, ty: &str, version: f64, params: Value, cred: &str) -> Value {
    json!({"parameters": params, "name": name, "type": ty, "typeVersion": version, "position": [0, 0], "credentials": {cred: {"id": "c1", "name": "account"}}})
}

#[test]
fn n8n_exported_google_nodes_validate_clean() {
    let doc = json!({"__rl": true, "value": "1AbC", "mode": "list", "cachedResultName": "CRM", "cachedResultUrl": "https://docs.google.com/spreadsheets/d/1AbC/edit?usp=drivesdk"});
    let tab = json!({"__rl": true, "value": 1_186_345_127, "mode": "list", "cachedResultName": "Leads", "cachedResultUrl": "https://docs.google.com/spreadsheets/d/1AbC/edit#gid=1186345127"});
    let schema = json!([{"id": "email", "displayName": "email", "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true}, {"id": "row_number", "displayName": "row_number", "required": false, "defaultMatch": false, "display": true, "type": "string", "canBeUsedToMatch": true, "readOnly": true, "removed": true}]);
    let file = json!({"__rl": true, "value": "1FiLe", "mode": "list", "cachedResultName": "report.pdf", "cachedResultUrl": "https://drive.google.com/file/d/1FiLe/view?usp=drivesdk"});
    let nodes = json!([
        {"parameters": {}, "name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
        sheets("Read", 4.5, json!({"documentId": doc, "sheetName": tab, "filtersUI": {"values": [{"lookupColumn": "email", "lookupValue": "={{ $json.email }}"}]}, "options": {"returnFirstMatch": true}})),
        sheets("Update", 4.6, json!({"operation": "update", "documentId": doc, "sheetName": tab, "columns": {"mappingMode": "defineBelow", "value": {"email": "={{ $json.email }}"}, "matchingColumns": ["email"], "schema": schema, "attemptToConvertTypes": false, "convertFieldsToString": false}, "options": {}})),
        sheets("Upsert", 4.7, json!({"operation": "appendOrUpdate", "documentId": doc, "sheetName": tab, "columns": {"mappingMode": "autoMapInputData", "value": {}, "matchingColumns": ["email"], "schema": schema}, "options": {"cellFormat": "RAW", "useAppend": true}})),
        sheets("Clear", 4.5, json!({"operation": "clear", "documentId": doc, "sheetName": tab, "keepFirstRow": true})),
        sheets("New tab", 4.5, json!({"operation": "create", "documentId": doc, "title": "Archive", "options": {"tabColor": "0aa55c"}})),
        sheets("Append v3", 3.0, json!({"operation": "append", "documentId": doc, "sheetName": tab, "dataMode": "autoMapInputData", "options": {"cellFormat": "USER_ENTERED"}})),
        node("Inbox", "n8n-nodes-base.gmail", 2.1, json!({"operation": "getAll", "limit": 20, "filters": {"labelIds": ["INBOX"], "readStatus": "unread", "receivedAfter": "={{ $now.minus(1, 'day').toISO() }}"}}), "gmailOAuth2"),
        node("Label", "n8n-nodes-base.gmail", 2.1, json!({"operation": "addLabels", "messageId": "={{ $json.id }}", "labelIds": ["Label_1"]}), "gmailOAuth2"),
        node("Reply", "n8n-nodes-base.gmail", 2.1, json!({"operation": "reply", "messageId": "={{ $json.id }}", "message": "Got it", "options": {"replyToSenderOnly": true}}), "gmailOAuth2"),
        node("Upload", "n8n-nodes-base.googleDrive", 3.0, json!({"name": "={{ $json.fileName }}", "driveId": {"__rl": true, "mode": "list", "value": "My Drive"}, "folderId": {"__rl": true, "value": "root", "mode": "list", "cachedResultName": "/ (Root folder)"}, "options": {}}), "googleDriveOAuth2Api"),
        node("Download", "n8n-nodes-base.googleDrive", 3.0, json!({"operation": "download", "fileId": file, "options": {"googleFileConversion": {"conversion": {"docsToFormat": "application/pdf"}}}}), "googleDriveOAuth2Api"),
        node("Search", "n8n-nodes-base.googleDrive", 3.0, json!({"resource": "fileFolder", "queryString": "invoice", "limit": 10, "filter": {"whatToSearch": "files"}, "options": {"fields": ["id", "name", "webViewLink"]}}), "googleDriveOAuth2Api"),
        node("Share", "n8n-nodes-base.googleDrive", 3.0, json!({"operation": "share", "fileId": file, "permissionsUi": {"permissionsValues": {"role": "reader", "type": "anyone"}}, "options": {}}), "googleDriveOAuth2Api")
    ]);
    let names: Vec<String> = nodes.as_array().unwrap().iter().skip(1).map(|n| n["name"].as_str().unwrap().to_owned()).collect();
    let targets: Vec<Value> = names.iter().map(|n| json!({"node": n, "type": "main", "index": 0})).collect();
    let wf = json!({"name": "Google", "nodes": nodes, "connections": {"Start": {"main": [targets]}}, "settings": {"executionOrder": "v1"}});
    let report = instance::validate::validate_with_expressions(&wf);
    assert!(report.findings.is_empty(), "validates clean: {:#?}", report.findings);
}

#[test]
fn google_writes_are_simulated_and_reads_need_the_credential() {
    use instance::verification::simulation::{classify, Mode, Reason};
    let plan = |ty: &str, params: Value| {
        let p = classify(&json!({"name": "N", "type": ty, "parameters": params}), true);
        (p.mode, p.reason)
    };
    let write = (Mode::Simulate, Reason::WriteOperation);
    for op in ["append", "appendOrUpdate", "update", "clear", "create", "delete", "remove"] {
        assert_eq!(plan("n8n-nodes-base.googleSheets", json!({"operation": op})), write, "sheets {op}");
    }
    assert_eq!(plan("n8n-nodes-base.googleSheets", json!({"operation": "read"})), (Mode::Simulate, Reason::Credentials));
    for op in ["send", "reply", "delete", "addLabels", "removeLabels", "markAsRead", "markAsUnread"] {
        assert_eq!(plan("n8n-nodes-base.gmail", json!({"operation": op})), write, "gmail {op}");
    }
    assert_eq!(plan("n8n-nodes-base.gmail", json!({"operation": "getAll"})), (Mode::Simulate, Reason::Credentials));
    for op in ["upload", "share", "deleteFile"] {
        assert_eq!(plan("n8n-nodes-base.googleDrive", json!({"operation": op})), write, "drive {op}");
    }
    assert_eq!(plan("n8n-nodes-base.googleDrive", json!({"operation": "download"})), (Mode::Simulate, Reason::Credentials));
}
