//! Google Drive (API v3) against the local stand-in: a multipart upload,
//! downloads (Google's formats exported), search with page tokens,
//! permissions, deletes.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::google::{engine_with, store_with, File, Google};
use crate::support::{output, run_node};

const CRED: &str = "googleDriveOAuth2Api";

fn node(params: Value) -> Value {
    json!({"type": "n8n-nodes-base.googleDrive", "typeVersion": 3, "parameters": params, "credentials": {CRED: {"id": "d1", "name": "Drive account"}}})
}

fn run_with_binary(engine: &engine::Engine, node: Value) -> engine::ExecutionState {
    let mut node = node;
    node["name"] = json!("Service");
    node["position"] = json!([400, 0]);
    let code = "return [{json: {n: 1}, binary: {data: {data: 'aGVsbG8gZHJpdmU=', mimeType: 'text/plain', fileName: 'hello.txt'}}}];";
    let wf = json!({
        "nodes": [
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
            {"name": "Input", "type": "n8n-nodes-base.code", "typeVersion": 2, "parameters": {"jsCode": code}, "position": [200, 0]},
            node
        ],
        "connections": {"Start": {"main": [[{"node": "Input", "type": "main", "index": 0}]]}, "Input": {"main": [[{"node": "Service", "type": "main", "index": 0}]]}},
    });
    engine.run(&engine::Graph::from_json(&wf).unwrap(), engine::RunOptions::default()).unwrap().0
}

#[test]
fn upload_sends_metadata_and_content_then_sets_the_parent() {
    let g = Google::start();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let folder = json!({"__rl": true, "value": "https://drive.google.com/drive/folders/1Folder9", "mode": "url"});
    let params = json!({"name": "greeting.txt", "driveId": {"__rl": true, "value": "My Drive", "mode": "list"}, "folderId": folder, "options": {"propertiesUi": {"propertyValues": [{"key": "team", "value": "ops"}]}}});
    let st = run_with_binary(&engine, node(params));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen.iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>(), ["POST /upload/drive/v3/files", "PATCH /drive/v3/files/1file1"]);
    let body = String::from_utf8_lossy(&seen[0].body).into_owned();
    assert!(body.contains("{\"name\":\"greeting.txt\",\"parents\":[\"1Folder9\"]}") && body.contains("Content-Type: text/plain\r\n\r\nhello drive"), "{body}");
    assert_eq!(seen[1].query.get("addParents").map(String::as_str), Some("1Folder9"));
    assert_eq!(seen[1].query.get("fields").map(String::as_str), Some("*"));
    assert_eq!(seen[1].json(), json!({"mimeType": "text/plain", "name": "greeting.txt", "originalFilename": "hello.txt", "properties": {"team": "ops"}}));
    let f = &g.state.lock().unwrap().files[0];
    assert_eq!((f.content.as_slice(), f.parents.clone()), (b"hello drive".as_slice(), vec!["1Folder9".to_owned()]));
    assert_eq!(output(&st)[0]["id"], "1file1");
}

#[test]
fn download_returns_the_file_as_binary_and_exports_google_formats() {
    let g = Google::start();
    g.state.lock().unwrap().files = vec![
        File { id: "f1".into(), name: "notes.pdf".into(), mime: "application/pdf".into(), content: b"%PDF-1.4".to_vec(), ..File::default() },
        File { id: "f2".into(), name: "Plan".into(), mime: "application/vnd.google-apps.document".into(), ..File::default() },
    ];
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(json!({"operation": "download", "fileId": {"__rl": true, "value": "f1", "mode": "id"}, "options": {"binaryPropertyName": "file"}})), json!([{"keep": true}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen[1].query.get("alt").map(String::as_str), Some("media"));
    let items = st.node_output("Service", 0).unwrap();
    let file = &items[0].binary.as_ref().unwrap()["file"];
    assert_eq!((file["fileName"].as_str(), file["mimeType"].as_str()), (Some("notes.pdf"), Some("application/pdf")));
    assert_eq!(engine::binary::bytes_of(file).unwrap(), b"%PDF-1.4");
    assert_eq!(items[0].json["keep"], true, "the input's json stays");

    let conv = json!({"googleFileConversion": {"conversion": {"docsToFormat": "application/pdf"}}});
    let st = run_node(&engine, node(json!({"operation": "download", "fileId": {"__rl": true, "value": "f2", "mode": "id"}, "options": conv})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let export = g.server.take().into_iter().find(|r| r.path == "/drive/v3/files/f2/export").expect("exported");
    assert_eq!(export.query.get("mimeType").map(String::as_str), Some("application/pdf"));
    let items = st.node_output("Service", 0).unwrap();
    assert_eq!(engine::binary::bytes_of(&items[0].binary.as_ref().unwrap()["data"]).unwrap(), b"exported Plan as application/pdf");

    let st = run_node(&engine, node(json!({"operation": "download", "fileId": {"__rl": true, "value": "gone", "mode": "id"}})), json!([{}]));
    let e = st.error.unwrap();
    assert_eq!((e.message.as_str(), e.description.as_deref()), ("The resource you are requesting could not be found", Some("File not found: gone.")));
}

#[test]
fn search_builds_the_query_and_follows_page_tokens() {
    let g = Google::start();
    g.state.lock().unwrap().files = (0..120).map(|i| File { id: format!("r{i}"), name: format!("report-{i}"), mime: "text/plain".into(), trashed: i == 0, ..File::default() }).collect();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let params = json!({"resource": "fileFolder", "queryString": "report", "returnAll": true, "filter": {"whatToSearch": "files", "folderId": {"__rl": true, "value": "1Folder9", "mode": "id"}}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen.len(), 2, "two pages of 100");
    assert_eq!(
        seen[0].query.get("q").map(String::as_str),
        Some("name contains 'report' and '1Folder9' in parents and mimeType != 'application/vnd.google-apps.folder' and trashed = false")
    );
    assert_eq!(seen[0].query.get("fields").map(String::as_str), Some("nextPageToken, files(id, name)"));
    assert_eq!(seen[1].query.get("pageToken").map(String::as_str), Some("p100"));
    let out = output(&st);
    assert_eq!((out.len(), out[0].clone()), (119, json!({"id": "r1", "name": "report-1"})));

    let st = run_node(&engine, node(json!({"resource": "fileFolder", "queryString": "report-1", "limit": 5})), json!([{}]));
    assert_eq!(output(&st).len(), 5);
    assert_eq!(g.server.take()[0].query.get("pageSize").map(String::as_str), Some("5"));
}

#[test]
fn share_adds_a_permission_and_delete_trashes_or_removes() {
    let g = Google::start();
    g.state.lock().unwrap().files = vec![File { id: "f1".into(), name: "a".into(), mime: "text/plain".into(), ..File::default() }];
    let engine = engine_with(&g, &store_with(&g, CRED));
    let perm = json!({"permissionsValues": {"role": "writer", "type": "user", "emailAddress": "bo@x.io"}});
    let st = run_node(&engine, node(json!({"operation": "share", "fileId": {"__rl": true, "value": "f1", "mode": "id"}, "permissionsUi": perm, "options": {"sendNotificationEmail": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &g.server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/drive/v3/files/f1/permissions"));
    assert_eq!((r.query.get("supportsAllDrives").map(String::as_str), r.query.get("sendNotificationEmail").map(String::as_str)), (Some("true"), Some("true")));
    assert_eq!(r.json(), json!({"role": "writer", "type": "user", "emailAddress": "bo@x.io"}));
    assert_eq!(output(&st), vec![json!({"kind": "drive#permission", "id": "perm1", "type": "user", "role": "writer", "emailAddress": "bo@x.io"})]);
    let st = run_node(&engine, node(json!({"operation": "share", "fileId": {"__rl": true, "value": "f1", "mode": "id"}})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "The permission role field is required.");

    let st = run_node(&engine, node(json!({"operation": "deleteFile", "fileId": {"__rl": true, "value": "f1", "mode": "id"}})), json!([{}]));
    assert_eq!(output(&st), vec![json!({"id": "f1", "success": true})]);
    assert!(g.state.lock().unwrap().files[0].trashed, "to the bin by default");
    let st = run_node(&engine, node(json!({"operation": "deleteFile", "fileId": {"__rl": true, "value": "f1", "mode": "id"}, "options": {"deletePermanently": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert!(g.state.lock().unwrap().files.is_empty());
    let st = run_node(&engine, node(json!({"resource": "folder", "operation": "create"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Google Drive folder operations are not supported yet");
}
