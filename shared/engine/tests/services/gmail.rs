//! Gmail (API v1) against the local stand-in: messages sent as MIME
//! (`raw`), replies in their thread, messages listed with filters and page
//! tokens then fetched, n8n's simplified output, labels.

use base64::Engine as _;
use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::google::{count, engine_with, store_with, Google, Message};
use crate::support::{output, run_node};

const CRED: &str = "gmailOAuth2";

fn node(params: Value) -> Value {
    json!({"type": "n8n-nodes-base.gmail", "typeVersion": 2.1, "parameters": params, "credentials": {CRED: {"id": "g1", "name": "Gmail account"}}, "webhookId": "5b1f0c1e"})
}

fn google() -> Google {
    let g = Google::start();
    let mut s = g.state.lock().unwrap();
    s.labels = vec![json!({"id": "INBOX", "name": "INBOX", "type": "system"}), json!({"id": "UNREAD", "name": "UNREAD", "type": "system"}), json!({"id": "Label_1", "name": "Invoices", "type": "user"})];
    for (i, subject) in ["Invoice 1", "Invoice 2", "Hello"].iter().enumerate() {
        s.messages.push(Message {
            id: format!("m{i}"),
            thread_id: format!("t{i}"),
            labels: vec!["INBOX".into(), "UNREAD".into()],
            headers: vec![("From".into(), "Ann <ann@x.io>".into()), ("To".into(), "me@example.com, bo@x.io".into()), ("Subject".into(), subject.to_string()), ("Message-ID".into(), format!("<id{i}@mail.x.io>"))],
        });
    }
    drop(s);
    g
}

fn mime_of(seen: &crate::support::Seen) -> String {
    let raw = seen.json()["raw"].as_str().unwrap().to_owned();
    String::from_utf8(base64::engine::general_purpose::URL_SAFE.decode(raw).unwrap()).unwrap()
}

#[test]
fn send_builds_the_mime_message_with_recipients_sender_and_attachment() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let params = json!({
        "sendTo": "={{ $json.to }}", "subject": "Report ✓", "emailType": "html", "message": "<b>Done</b>",
        "options": {"ccList": "cc@x.io", "bccList": "Audit <audit@x.io>", "senderName": "Ops Bot", "appendAttribution": false, "attachmentsUi": {"attachmentsBinary": [{"property": "data"}]}}
    });
    let st = run_code_node(&engine, node(params), "[{json: {to: 'ann@x.io, bo@x.io'}, binary: {data: {data: 'YSxiCjEsMg==', mimeType: 'text/csv', fileName: 'r.csv'}}}]");
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen.iter().map(|r| format!("{} {}", r.method, r.path)).collect::<Vec<_>>(), ["GET /gmail/v1/users/me/profile", "POST /gmail/v1/users/me/messages/send"]);
    let mime = mime_of(&seen[1]);
    assert!(mime.contains("From: \"Ops Bot\" <me@example.com>"), "{mime}");
    assert!(mime.contains("To: <ann@x.io>, <bo@x.io>"), "{mime}");
    assert!(mime.contains("Cc: <cc@x.io>") && mime.contains("Bcc: \"Audit\" <audit@x.io>"), "{mime}");
    assert!(mime.contains("Subject: =?utf-8?"), "{mime}");
    assert!(mime.contains("<b>Done</b>") && mime.contains("filename=\"r.csv\"") && mime.contains("Content-Type: text/csv"), "{mime}");
    assert!(!mime.contains("sent automatically with n8n"));
    assert_eq!(output(&st), vec![json!({"id": "18c00004", "threadId": "18c00004", "labelIds": ["SENT"]})]);

    // an address without @ is refused before anything is sent
    let st = run_node(&engine, node(json!({"sendTo": "nobody", "subject": "x", "message": "y"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Invalid email address");
    assert!(g.server.take().is_empty());
}

/// Manual Trigger → Code (`items` as written) → the node.
fn run_code_node(engine: &engine::Engine, node: Value, items: &str) -> engine::ExecutionState {
    let mut node = node;
    node["name"] = json!("Service");
    node["position"] = json!([400, 0]);
    let wf = json!({
        "nodes": [
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
            {"name": "Input", "type": "n8n-nodes-base.code", "typeVersion": 2, "parameters": {"jsCode": format!("return {items};")}, "position": [200, 0]},
            node
        ],
        "connections": {"Start": {"main": [[{"node": "Input", "type": "main", "index": 0}]]}, "Input": {"main": [[{"node": "Service", "type": "main", "index": 0}]]}},
    });
    engine.run(&engine::Graph::from_json(&wf).unwrap(), engine::RunOptions::default()).unwrap().0
}

#[test]
fn reply_goes_to_the_sender_and_others_in_the_thread() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(json!({"operation": "reply", "messageId": "m1", "emailType": "text", "message": "Thanks!", "options": {}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    assert_eq!(seen[0].query.get("format").map(String::as_str), Some("metadata"));
    let send = seen.iter().find(|r| r.path.ends_with("/messages/send")).unwrap();
    assert_eq!(send.json()["threadId"], "t1");
    let mime = mime_of(send);
    assert!(mime.contains("To: \"Ann\" <ann@x.io>, <bo@x.io>"), "the account's own address left out: {mime}");
    assert!(mime.contains("Subject: Invoice 2") && mime.contains("In-Reply-To: <id1@mail.x.io>") && mime.contains("References: <id1@mail.x.io>"), "{mime}");
    assert!(mime.contains("Thanks!"));
    assert_eq!(output(&st)[0]["threadId"], "t1");
}

#[test]
fn get_many_filters_pages_fetches_and_simplifies() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let params = json!({"operation": "getAll", "returnAll": true, "filters": {"readStatus": "unread", "labelIds": ["INBOX"], "q": "invoice", "receivedAfter": "2024-01-02T00:00:00Z"}});
    g.state.lock().unwrap().messages[2].labels = vec!["INBOX".into()];
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = g.server.take();
    let list = seen.iter().find(|r| r.path == "/gmail/v1/users/me/messages").unwrap();
    assert_eq!(list.query.get("q").map(String::as_str), Some("invoice is:unread after:1704153600"));
    assert_eq!(list.query.get("labelIds").map(String::as_str), Some("INBOX"));
    assert_eq!(list.query.get("maxResults").map(String::as_str), Some("100"));
    let get = seen.iter().find(|r| r.path == "/gmail/v1/users/me/messages/m0").unwrap();
    assert_eq!(get.raw_query, "format=metadata&metadataHeaders=From&metadataHeaders=To&metadataHeaders=Cc&metadataHeaders=Bcc&metadataHeaders=Subject");
    assert_eq!(count(&seen, "GET", "/gmail/v1/users/me/labels"), 1, "labels read once for the batch");
    let out = output(&st);
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0],
        json!({"id": "m0", "threadId": "t0", "snippet": "Hi & welcome", "payload": {"mimeType": "multipart/alternative"}, "sizeEstimate": 1234, "historyId": "99", "internalDate": "1704153600000",
               "labels": [{"id": "INBOX", "name": "INBOX"}, {"id": "UNREAD", "name": "UNREAD"}], "From": "Ann <ann@x.io>", "To": "me@example.com, bo@x.io", "Subject": "Invoice 1"})
    );

    // pages of `limit`; the next page token is followed with Return All
    let st = run_node(&engine, node(json!({"operation": "getAll", "limit": 1})), json!([{}]));
    assert_eq!(output(&st).len(), 1);
    let lists = g.server.take().into_iter().filter(|r| r.path == "/gmail/v1/users/me/messages").count();
    assert_eq!(lists, 1);
    g.state.lock().unwrap().messages.extend((3..150).map(|i| Message { id: format!("x{i}"), thread_id: format!("x{i}"), labels: vec!["INBOX".into()], ..Message::default() }));
    let st = run_node(&engine, node(json!({"operation": "getAll", "returnAll": true, "filters": {"labelIds": ["INBOX"]}})), json!([{}]));
    assert_eq!(output(&st).len(), 150);
    let tokens: Vec<Option<String>> = g.server.take().into_iter().filter(|r| r.path == "/gmail/v1/users/me/messages").map(|r| r.query.get("pageToken").cloned()).collect();
    assert_eq!(tokens, vec![None, Some("page-100".to_owned())]);
}

#[test]
fn get_simplifies_and_not_found_says_message_not_found() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(json!({"operation": "get", "messageId": "m2"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st)[0]["Subject"], "Hello");
    let st = run_node(&engine, node(json!({"operation": "get", "messageId": "nope"})), json!([{}]));
    let e = st.error.unwrap();
    assert_eq!((e.message.as_str(), e.http_code.as_deref()), ("Message not found", Some("404")));
    let st = run_node(&engine, node(json!({"operation": "get", "messageId": "m2", "simple": false})), json!([{}]));
    assert!(st.error.unwrap().message.contains("not supported yet"), "the raw message is refused clearly");
}

#[test]
fn labels_on_messages_and_label_operations() {
    let g = google();
    let engine = engine_with(&g, &store_with(&g, CRED));
    let st = run_node(&engine, node(json!({"operation": "addLabels", "messageId": "m0", "labelIds": ["Label_1"]})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &g.server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/gmail/v1/users/me/messages/m0/modify"));
    assert_eq!(r.json(), json!({"addLabelIds": ["Label_1"]}));
    assert_eq!(output(&st), vec![json!({"id": "m0", "threadId": "t0", "labelIds": ["INBOX", "UNREAD", "Label_1"]})]);
    let st = run_node(&engine, node(json!({"operation": "markAsRead", "messageId": "m0"})), json!([{}]));
    assert_eq!(g.server.take()[0].json(), json!({"removeLabelIds": ["UNREAD"]}));
    assert_eq!(output(&st)[0]["labelIds"], json!(["INBOX", "Label_1"]));
    let st = run_node(&engine, node(json!({"operation": "delete", "messageId": "m0"})), json!([{}]));
    assert_eq!(output(&st), vec![json!({"success": true})]);
    assert_eq!(g.server.take()[0].method, "DELETE");

    let st = run_node(&engine, node(json!({"resource": "label", "operation": "create", "name": "Receipts", "options": {"labelListVisibility": "labelHide"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(g.server.take()[0].json(), json!({"labelListVisibility": "labelHide", "messageListVisibility": "show", "name": "Receipts"}));
    assert_eq!(output(&st)[0]["id"], "Label_4");
    let st = run_node(&engine, node(json!({"resource": "label", "operation": "getAll", "limit": 2})), json!([{}]));
    assert_eq!(output(&st).iter().map(|l| l["id"].clone()).collect::<Vec<_>>(), vec![json!("INBOX"), json!("UNREAD")]);
    let st = run_node(&engine, node(json!({"resource": "label", "operation": "get", "labelId": "Label_404"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Label ID not found");
    let st = run_node(&engine, node(json!({"resource": "label", "operation": "create", "name": "Receipts"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Label name exists or conflicts");
    let st = run_node(&engine, node(json!({"resource": "draft", "operation": "create"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Gmail draft operations are not supported yet");
}
