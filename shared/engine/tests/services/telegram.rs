//! Telegram Bot API (https://core.telegram.org/bots/api): the token in the
//! path (`/bot<token>/<method>`), JSON or multipart arguments, `{ok, result}`
//! answers, `{ok:false, error_code, description}` with the HTTP status.

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

const TOKEN: &str = "123456:ABC-token";

fn telegram() -> Server {
    serve(|r: &Seen| {
        let Some(method) = r.path.strip_prefix(&format!("/bot{TOKEN}/")) else {
            return Reply::json(401, json!({"ok": false, "error_code": 401, "description": "Unauthorized"}));
        };
        let multipart = r.header("content-type").is_some_and(|c| c.starts_with("multipart/form-data"));
        let args = if multipart { json!({"chat_id": "from-multipart"}) } else { r.json() };
        if args.get("chat_id").is_none() && method != "getMe" {
            return Reply::json(400, json!({"ok": false, "error_code": 400, "description": "Bad Request: chat_id is empty"}));
        }
        if args["chat_id"] == "404" {
            return Reply::json(400, json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}));
        }
        let chat = json!({"id": 42, "type": "private"});
        match method {
            "getMe" => Reply::json(200, json!({"ok": true, "result": {"id": 1, "is_bot": true, "username": "test_bot"}})),
            "sendMessage" => Reply::json(200, json!({"ok": true, "result": {"message_id": 7, "chat": chat, "date": 1700000000, "text": args["text"]}})),
            "sendPhoto" => Reply::json(200, json!({"ok": true, "result": {"message_id": 8, "chat": chat, "photo": [{"file_id": "AgAD", "width": 90, "height": 90}]}})),
            "sendDocument" => Reply::json(200, json!({"ok": true, "result": {"message_id": 9, "chat": chat, "document": {"file_id": "BQAD", "file_name": "report.txt"}}})),
            _ => Reply::json(404, json!({"ok": false, "error_code": 404, "description": "Not Found"})),
        }
    })
}

fn node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.telegram", "typeVersion": 1.2, "parameters": parameters, "credentials": {"telegramApi": {"id": "t1", "name": "Bot"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = telegram();
    let engine = engine(&[("telegramApi", json!({"accessToken": TOKEN, "baseUrl": "https://api.telegram.org"}))], &[("https://api.telegram.org", server.base.as_str())]);
    (server, engine)
}

#[test]
fn send_message_posts_json_to_the_bot_path_and_returns_the_whole_answer() {
    let (server, engine) = setup();
    let st = run_node(
        &engine,
        node(json!({"chatId": "={{ $json.chat }}", "text": "Build passed", "additionalFields": {"parse_mode": "MarkdownV2", "disable_notification": true, "appendAttribution": false}})),
        json!([{"chat": "42"}]),
    );
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/bot123456:ABC-token/sendMessage"));
    assert_eq!(r.header("authorization"), None, "the token travels in the path only");
    assert_eq!(r.json(), json!({"chat_id": "42", "text": "Build passed", "parse_mode": "MarkdownV2", "disable_notification": true}));
    assert_eq!(output(&st), vec![json!({"ok": true, "result": {"message_id": 7, "chat": {"id": 42, "type": "private"}, "date": 1700000000, "text": "Build passed"}})]);
}

#[test]
fn send_photo_by_url_and_send_document_from_binary_as_multipart() {
    let (server, engine) = setup();
    let st = run_node(&engine, node(json!({"operation": "sendPhoto", "chatId": "42", "file": "https://example.com/cat.png", "additionalFields": {"caption": "a cat"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.path, "/bot123456:ABC-token/sendPhoto");
    assert_eq!(r.json(), json!({"chat_id": "42", "photo": "https://example.com/cat.png", "caption": "a cat"}));
    assert_eq!(output(&st)[0]["result"]["message_id"], 8);

    // Code returns an item with a binary file (base64 "hello report").
    let input = json!([{"json": {}, "binary": {"data": {"data": "aGVsbG8gcmVwb3J0", "mimeType": "text/plain", "fileName": "report.txt"}}}]);
    let st = run_node(&engine, node(json!({"operation": "sendDocument", "chatId": "42", "binaryData": true})), input);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.path, "/bot123456:ABC-token/sendDocument");
    let body = r.text();
    assert!(r.header("content-type").unwrap().starts_with("multipart/form-data; boundary="));
    assert!(body.contains("name=\"chat_id\"\r\n\r\n42\r\n"), "{body}");
    assert!(body.contains("name=\"document\"; filename=\"report.txt\"\r\nContent-Type: text/plain\r\n\r\nhello report\r\n"), "{body}");
    assert_eq!(output(&st)[0]["result"]["document"]["file_name"], "report.txt");
}

#[test]
fn api_errors_carry_the_status_and_description() {
    let (_server, engine) = setup();
    let st = run_node(&engine, node(json!({"chatId": "404", "text": "x"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap();
    assert_eq!(e.http_code.as_deref(), Some("400"));
    assert!(e.description.unwrap_or_default().contains("chat not found"));
    // A missing binary field is the node's error, before any request.
    let st = run_node(&engine, node(json!({"operation": "sendPhoto", "chatId": "42", "binaryData": true})), json!([{}]));
    assert!(st.error.unwrap().message.contains("No binary data"));
}

#[test]
fn the_credential_test_calls_get_me_with_the_base_url() {
    let server = telegram();
    // The credential's own base URL (a local Bot API server), no override.
    let engine = engine(&[("telegramApi", json!({"accessToken": TOKEN, "baseUrl": server.base}))], &[]);
    let ok = engine.test_credential("telegramApi", &json!({"id": "t1"}));
    assert!(ok.success, "{}", ok.message);
    assert_eq!(server.take()[0].path, "/bot123456:ABC-token/getMe");
    let st = run_node(&engine, node(json!({"chatId": "1", "text": "hi"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].path, "/bot123456:ABC-token/sendMessage");

    let wrong = crate::support::engine(&[("telegramApi", json!({"accessToken": "nope", "baseUrl": server.base}))], &[]);
    let refused = wrong.test_credential("telegramApi", &json!({"id": "t1"}));
    assert!(!refused.success);
    assert!(refused.message.contains("401"), "{}", refused.message);
    assert!(!refused.message.contains("nope"), "the token never shows: {}", refused.message);
}
