//! Slack's file, reaction and user group methods
//! (https://api.slack.com/methods): files go up in Slack's three steps
//! (`files.getUploadURLExternal`, the bytes to the upload URL,
//! `files.completeUploadExternal`); `{ok:false,error}` answers stop the chain.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

const TOKEN: &str = "xoxb-files";

fn slack() -> Server {
    // the upload URL points back at this server, which learns its address after binding
    let base: Arc<Mutex<String>> = Arc::default();
    let b = base.clone();
    let server = serve(move |r: &Seen| {
        if r.path.starts_with("/upload/") {
            assert_eq!(r.header("authorization"), None, "the upload URL is signed; no token goes there");
            return Reply { status: 200, headers: vec![("content-type", "text/plain".into())], body: format!("OK - {}", r.body.len()).into_bytes() };
        }
        if r.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return Reply::json(200, json!({"ok": false, "error": "invalid_auth"}));
        }
        let args = if r.method == "POST" { r.json() } else { json!(r.query) };
        match r.path.trim_start_matches("/api/") {
            "files.getUploadURLExternal" => {
                if args["filename"].as_str().is_none_or(str::is_empty) || args["length"].as_str().and_then(|l| l.parse::<u64>().ok()).is_none() {
                    return Reply::json(200, json!({"ok": false, "error": "invalid_arguments"}));
                }
                if args["filename"] == "forbidden.txt" {
                    return Reply::json(200, json!({"ok": false, "error": "file_uploads_disabled"}));
                }
                Reply::json(200, json!({"ok": true, "upload_url": format!("{}/upload/v1/F0UP", b.lock().unwrap()), "file_id": "F0UP"}))
            }
            "files.completeUploadExternal" => Reply::json(200, json!({"ok": true, "files": args["files"]})),
            "files.info" => Reply::json(200, json!({"ok": true, "file": {"id": args["file"], "name": "report.pdf"}, "comments": []})),
            "files.list" => {
                let page: u64 = args["page"].as_str().and_then(|p| p.parse().ok()).unwrap_or(1);
                let files: Vec<Value> = (1..=2).map(|n| json!({"id": format!("F{page}{n}")})).collect();
                Reply::json(200, json!({"ok": true, "files": files, "paging": {"count": 2, "total": 6, "page": page, "pages": 3}}))
            }
            "reactions.add" | "reactions.remove" => Reply::json(200, json!({"ok": true})),
            "reactions.get" => Reply::json(200, json!({"ok": true, "type": "message", "channel": args["channel"], "message": {"ts": args["timestamp"], "reactions": [{"name": "+1", "count": 2}]}})),
            "usergroups.create" | "usergroups.update" | "usergroups.enable" | "usergroups.disable" => {
                Reply::json(200, json!({"ok": true, "usergroup": {"id": args.get("usergroup").cloned().unwrap_or(json!("S0NEW")), "name": args.get("name").cloned().unwrap_or(json!("Ops")), "date_delete": 0}}))
            }
            "usergroups.list" => Reply::json(200, json!({"ok": true, "usergroups": (1..=4).map(|n| json!({"id": format!("S{n}")})).collect::<Vec<_>>()})),
            _ => Reply::json(200, json!({"ok": false, "error": "unknown_method"})),
        }
    });
    *base.lock().unwrap() = server.base.clone();
    server
}

fn node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.slack", "typeVersion": 2.3, "parameters": parameters, "credentials": {"slackApi": {"id": "s1", "name": "Slack bot"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = slack();
    let engine = engine(&[("slackApi", json!({"accessToken": TOKEN}))], &[("https://slack.com", server.base.as_str())]);
    (server, engine)
}

/// The parts of a multipart body: (name, file name, content).
fn parts(r: &Seen) -> Vec<(String, Option<String>, Vec<u8>)> {
    let ct = r.header("content-type").unwrap_or_default();
    let boundary = ct.split("boundary=").nth(1).expect("a multipart body").trim_matches('"');
    let body = r.body.as_slice();
    let delim = format!("--{boundary}");
    let text = String::from_utf8_lossy(body).into_owned();
    text.split(&delim)
        .filter(|p| !p.trim().is_empty() && p.trim() != "--")
        .map(|p| {
            let (head, content) = p.split_once("\r\n\r\n").unwrap();
            let name = head.split("name=\"").nth(1).and_then(|s| s.split('"').next()).unwrap().to_owned();
            let file = head.split("filename=\"").nth(1).and_then(|s| s.split('"').next()).map(str::to_owned);
            (name, file, content.strip_suffix("\r\n").unwrap_or(content).as_bytes().to_vec())
        })
        .collect()
}

#[test]
fn upload_a_binary_file_in_three_steps() {
    let (server, engine) = setup();
    let pdf = base64::engine::general_purpose::STANDARD.encode(b"%PDF-1.4 report");
    let input = json!([{"json": {}, "binary": {"doc": {"data": pdf, "mimeType": "application/pdf", "fileName": "report.pdf"}}}]);
    let params = json!({"resource": "file", "binaryData": true, "binaryPropertyName": "doc",
        "options": {"channelIds": ["C1", "C2"], "initialComment": "Weekly report", "title": "Report", "threadTs": "1700000000.000100"}});
    let st = run_node(&engine, node(params), input);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["/api/files.getUploadURLExternal", "/upload/v1/F0UP", "/api/files.completeUploadExternal"]);
    assert_eq!((seen[0].query.get("filename").map(String::as_str), seen[0].query.get("length").map(String::as_str)), (Some("report.pdf"), Some("15")));
    assert_eq!(parts(&seen[1]), vec![("file".to_owned(), Some("report.pdf".to_owned()), b"%PDF-1.4 report".to_vec())]);
    assert_eq!(seen[2].header("authorization"), Some("Bearer xoxb-files"));
    assert_eq!(
        seen[2].json(),
        json!({"files": [{"id": "F0UP", "title": "Report"}], "channels": "C1,C2", "initial_comment": "Weekly report", "thread_ts": "1700000000.000100"})
    );
    assert_eq!(output(&st), vec![json!({"id": "F0UP", "title": "Report"})]);
}

#[test]
fn upload_text_content_and_a_refused_first_step_stops_the_chain() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "file", "fileContent": "héllo", "options": {"fileName": "note.txt"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    // the length is the UTF-8 byte count
    assert_eq!(seen[0].query.get("length").map(String::as_str), Some("6"));
    assert_eq!(parts(&seen[1]), vec![("file".to_owned(), Some("note.txt".to_owned()), "héllo".as_bytes().to_vec())]);
    assert_eq!(seen[2].json(), json!({"files": [{"id": "F0UP", "title": "note.txt"}]}));

    let st = run_node(&engine, node(json!({"resource": "file", "fileContent": "x", "options": {"fileName": "forbidden.txt"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(st.error.unwrap().message, "Slack error response: \"file_uploads_disabled\"");
    assert_eq!(server.take().len(), 1, "nothing is uploaded after a refusal");
}

#[test]
fn get_and_list_files() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "file", "operation": "get", "fileId": "F9"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].query.get("file").map(String::as_str), Some("F9"));
    assert_eq!(output(&st), vec![json!({"id": "F9", "name": "report.pdf"})]);

    let params = json!({"resource": "file", "operation": "getAll", "returnAll": true, "filters": {"channelId": "C1", "types": ["images", "pdfs"], "userId": "U1"}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    // page numbers until the last page
    assert_eq!(seen.iter().map(|r| r.query.get("page").cloned()).collect::<Vec<_>>(), [None, Some("2".into()), Some("3".into())]);
    assert_eq!((seen[0].query["channel"].as_str(), seen[0].query["types"].as_str(), seen[0].query["user"].as_str(), seen[0].query["count"].as_str()), ("C1", "images,pdfs", "U1", "100"));
    assert_eq!(output(&st).len(), 6);

    let st = run_node(&engine, node(json!({"resource": "file", "operation": "getAll", "limit": 2})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].query.get("count").map(String::as_str), Some("2"));
    assert_eq!(output(&st).len(), 2);
}

#[test]
fn reactions_add_get_remove() {
    let (server, engine) = setup();
    let channel = json!({"__rl": true, "mode": "id", "value": "C7"});
    for (op, method, path) in [("add", "POST", "/api/reactions.add"), ("remove", "POST", "/api/reactions.remove")] {
        let st = run_node(&engine, node(json!({"resource": "reaction", "operation": op, "channelId": channel, "timestamp": 1663233118.856619, "name": "+1"})), json!([{}]));
        assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
        let r = &server.take()[0];
        assert_eq!((r.method.as_str(), r.path.as_str()), (method, path));
        assert_eq!(r.json(), json!({"channel": "C7", "timestamp": "1663233118.856619", "name": "+1"}));
        assert_eq!(output(&st), vec![json!({"ok": true})]);
    }
    let st = run_node(&engine, node(json!({"resource": "reaction", "operation": "get", "channelId": channel, "timestamp": 1663233118.856619})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.query.get("channel").map(String::as_str), r.query.get("timestamp").map(String::as_str)), ("GET", Some("C7"), Some("1663233118.856619")));
    assert_eq!(output(&st)[0]["message"]["reactions"][0]["count"], 2);
}

#[test]
fn user_groups() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"resource": "userGroup", "name": "Ops", "Options": {"channelIds": ["C1", "C2"], "handle": "ops", "include_count": false}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.path.as_str(), r.json()), ("/api/usergroups.create", json!({"name": "Ops", "channels": "C1,C2", "handle": "ops", "include_count": false})));
    assert_eq!(output(&st), vec![json!({"id": "S0NEW", "name": "Ops", "date_delete": 0})]);

    for (op, opts_name, path) in [("disable", "options", "/api/usergroups.disable"), ("enable", "option", "/api/usergroups.enable")] {
        let st = run_node(&engine, node(json!({"resource": "userGroup", "operation": op, "userGroupId": "S1", opts_name: {"include_count": true}})), json!([{}]));
        assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
        let r = &server.take()[0];
        assert_eq!((r.path.as_str(), r.json()), (path, json!({"usergroup": "S1", "include_count": true})));
        assert_eq!(output(&st)[0]["id"], "S1");
    }
    let st = run_node(&engine, node(json!({"resource": "userGroup", "operation": "update", "userGroupId": "S1", "updateFields": {"name": "Platform", "channels": ["C9"]}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"usergroup": "S1", "name": "Platform", "channels": "C9"}));

    let st = run_node(&engine, node(json!({"resource": "userGroup", "operation": "getAll", "limit": 3, "options": {"include_users": false}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].query.get("include_users").map(String::as_str), Some("false"));
    assert_eq!(output(&st).len(), 3);
}
