//! `parse-file` and chat attachments end to end through HTTP + SSE with the
//! scripted model: the chat POST carries real files (an xlsx and a docx
//! written by openpyxl and python-docx, `tests/files/make_office_files.py`;
//! a PDF written by lopdf; a semicolon CSV; a PNG it cannot read), they are
//! stored with the run, the tool is offered on that turn only, pages rows,
//! extracts text, and answers what it cannot read with `error`. Oversize or
//! malformed attachments are refused before anything starts.

mod agent_common;

#[path = "../../shared/research/tests/support/pages.rs"]
mod pages;

use agent_common::*;
use base64::Engine as _;
use protocol::events::EventType;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The scripted model, recording the tools and user message of every call.
#[derive(Default)]
struct Recording {
    script: LateScript,
    tools: Mutex<Vec<Vec<String>>>,
    users: Mutex<Vec<String>>,
}

impl agent::model::ModelProvider for Recording {
    fn provider(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "recording"
    }
    fn stream(&self, request: agent::model::ModelRequest, cancel: agent::model::CancellationToken) -> agent::model::ModelStream {
        self.tools.lock().unwrap().push(request.tools.iter().map(|t| t.name.clone()).collect());
        let last_user = request.messages.iter().rev().find_map(|m| match m {
            agent::model::Message::User { text } => Some(text.clone()),
            _ => None,
        });
        self.users.lock().unwrap().push(last_user.unwrap_or_default());
        self.script.stream(request, cancel)
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn office_files() -> (Vec<u8>, Vec<u8>) {
    let dir = std::env::temp_dir().join(format!("parse-file-{}", std::process::id()));
    let python = std::env::var("INSTANCE_AI_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = format!("{}/files/make_office_files.py", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(&python).arg(&script).arg(&dir).output().expect("python runs");
    assert!(out.status.success(), "{python} {script}: {}", String::from_utf8_lossy(&out.stderr));
    (std::fs::read(dir.join("orders.xlsx")).unwrap(), std::fs::read(dir.join("checklist.docx")).unwrap())
}

/// `(args, Ok(result) | Err(error))` of every call, in order.
fn settled(frames: &[Frame]) -> Vec<(Value, Result<Value, String>)> {
    find(frames, EventType::ToolCall)
        .into_iter()
        .map(|c| {
            let c = payload(c);
            let done = frames
                .iter()
                .filter(|f| matches!(f.kind(), EventType::ToolResult | EventType::ToolError))
                .map(payload)
                .find(|p| p["toolCallId"] == c["toolCallId"])
                .expect("every call settles");
            match done.get("result") {
                Some(r) => (c["args"].clone(), Ok(r.clone())),
                None => (c["args"].clone(), Err(done["error"].as_str().unwrap_or_default().to_owned())),
            }
        })
        .collect()
}

/// The JSON inside an `<untrusted_data source="attachment:N">` envelope.
fn enveloped(s: &Value, index: usize) -> Value {
    let s = s.as_str().unwrap_or_else(|| panic!("not an envelope: {s}"));
    let head = format!("<untrusted_data source=\"attachment:{index}\">\n");
    assert!(s.starts_with(&head), "{s}");
    let body = s[head.len()..].rsplit_once("\n</untrusted_data>").unwrap().0;
    serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned()))
}

fn parse(args: Value) -> Value {
    json!({"toolCalls": [{"name": "parse-file", "args": args}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn attached_files_are_stored_with_the_message_and_parsed_page_by_page() {
    let (xlsx, docx) = office_files();
    let model = Arc::new(Recording::default());
    model.script.set(json!({"conversations": {
        "Import these": [
            parse(json!({})),
            parse(json!({"startRow": 3, "maxRows": 2})),
            parse(json!({"attachmentIndex": 1})),
            parse(json!({"attachmentIndex": 2})),
            parse(json!({"attachmentIndex": 3, "delimiter": ";"})),
            parse(json!({"attachmentIndex": 4})),
            parse(json!({"attachmentIndex": 9})),
            parse(json!({"maxRows": 500})),
            {"text": "Five orders, a checklist and a report."}
        ],
        "And now?": [parse(json!({})), {"text": "No file this time."}]
    }}));
    let setup = Setup { stubs: false, ..Setup::default() };
    let cloud = cloud_with(setup, |c| (c.clone(), ()), Some(model.clone() as Arc<dyn agent::model::ModelProvider>)).await.0;
    let t = thread();
    let mut feed = cloud.sse_events(ALICE, &t).await;
    let attachments = json!([
        {"type": "file", "fileName": "orders.xlsx", "mimeType": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "data": b64(&xlsx)},
        {"fileName": "checklist.docx", "mimeType": "application/octet-stream", "data": b64(&docx)},
        {"fileName": "q3.pdf", "mimeType": "application/pdf", "data": format!("data:application/pdf;base64,{}", b64(&pages::pdf()))},
        {"fileName": "prices.csv", "mimeType": "text/csv", "data": b64("Product Name;Unit Price\nTea;3.5\nCoffee;4\n".as_bytes())},
        {"fileName": "photo.png", "mimeType": "image/png", "data": b64(b"\x89PNG\r\n\x1a\n")}
    ]);
    let (status, body) = cloud.post(ALICE, &format!("/instance-ai/chat/{t}"), json!({"message": "Import these", "attachments": attachments})).await;
    assert_eq!(status, 200, "{body}");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "completed", "{:?}", kinds(&frames));

    // The model read the list of files with its message, and had the tool.
    let first_user = model.users.lock().unwrap()[0].clone();
    assert!(first_user.starts_with("Import these\n\n[ATTACHMENTS]\n- [0] `orders.xlsx`"), "{first_user}");
    assert!(first_user.contains("- [4] `photo.png` (image/png, 8 bytes): not a format parse-file reads"), "{first_user}");
    assert!(model.tools.lock().unwrap()[0].contains(&"parse-file".to_owned()));
    let calls = settled(&frames);
    assert_eq!(calls.len(), 8);

    // The workbook's first sheet: normalised columns, types, the first page.
    let sheet = calls[0].1.as_ref().unwrap();
    assert_eq!((sheet["format"].as_str(), sheet["fileName"].as_str()), (Some("xlsx"), Some("orders.xlsx")));
    assert_eq!((sheet["totalRows"].as_u64(), sheet["returnedRows"].as_u64(), sheet["truncated"].as_bool()), (Some(5), Some(5), Some(false)));
    let columns = enveloped(&sheet["columns"], 0);
    let cols: Vec<(&str, &str, &str)> =
        columns.as_array().unwrap().iter().map(|c| (c["originalName"].as_str().unwrap(), c["name"].as_str().unwrap(), c["inferredType"].as_str().unwrap())).collect();
    assert_eq!(cols, [("Order ID", "order_id", "number"), ("Customer Name", "customer_name", "string"), ("Amount", "amount", "number"), ("Paid", "paid", "boolean")]);
    let rows = enveloped(&sheet["rows"], 0);
    assert_eq!(rows[0], json!({"order_id": 1001, "customer_name": "Ada Lovelace", "amount": 120.5, "paid": true}));
    // A later page.
    let page = calls[1].1.as_ref().unwrap();
    assert_eq!((page["returnedRows"].as_u64(), page["truncated"].as_bool(), page.get("nextStartRow")), (Some(2), Some(false), None));
    assert_eq!(enveloped(&page["rows"], 0)[1]["customer_name"], "Alan Turing");
    // The Word document as Markdown (by its extension: the MIME type was generic).
    let doc = calls[2].1.as_ref().unwrap();
    assert_eq!(doc["format"], "docx");
    let text = enveloped(&doc["content"], 1);
    let text = text.as_str().unwrap();
    assert!(text.starts_with("# Onboarding checklist\nEvery new customer gets a welcome email within one day."), "{text}");
    assert!(text.contains("- Create the CRM record\n- Send the contract") && text.contains("| Sales | Friday |"), "{text}");
    // The PDF's text and page count.
    let pdf = calls[3].1.as_ref().unwrap();
    assert_eq!((pdf["format"].as_str(), pdf["pages"].as_u64()), (Some("pdf"), Some(2)));
    assert!(enveloped(&pdf["content"], 2).as_str().unwrap().starts_with("Quarterly report: revenue grew 12 percent."));
    // A semicolon CSV with the delimiter given.
    let csv = calls[4].1.as_ref().unwrap();
    assert_eq!(enveloped(&csv["rows"], 3), json!([{"product_name": "Tea", "unit_price": "3.5"}, {"product_name": "Coffee", "unit_price": "4"}]));
    // What it cannot read is an answer with an error, never a crash.
    let png = calls[5].1.as_ref().unwrap();
    assert!(png["error"].as_str().unwrap().starts_with("Unsupported format for \"photo.png\""), "{png}");
    assert_eq!((png["format"].as_str(), png["rows"].clone()), (Some("unknown"), json!([])));
    let missing = calls[6].1.as_ref().unwrap();
    assert_eq!(missing["error"], "Invalid attachmentIndex: 9. Available: 0-4");
    assert!(calls[7].1.as_ref().unwrap_err().contains("maxRows"), "the schema caps maxRows at 100");

    // The next message carries no file: the tool is not offered, a call is refused.
    let (status, body) = cloud.post(ALICE, &format!("/instance-ai/chat/{t}"), json!({"message": "And now?"})).await;
    assert_eq!(status, 200, "{body}");
    let frames = feed.until_type(EventType::RunFinish, WAIT).await;
    let tools = model.tools.lock().unwrap().last().unwrap().clone();
    assert!(!tools.contains(&"parse-file".to_owned()), "{tools:?}");
    let refused = settled(&frames).remove(0).1.unwrap_err();
    assert!(refused.starts_with("Unknown tool \"parse-file\""), "{refused}");

    // Too much, or not base64: refused before a run starts, nothing stored.
    let fresh = thread();
    let big = b64(&vec![b'a'; protocol::attachments::MAX_ATTACHMENT_BYTES + 1]);
    let (status, body) = cloud.post(ALICE, &format!("/instance-ai/chat/{fresh}"), json!({"message": "Big", "attachments": [{"fileName": "big.csv", "mimeType": "text/csv", "data": big}]})).await;
    assert_eq!(status, 413, "{body}");
    let (status, body) = cloud.post(ALICE, &format!("/instance-ai/chat/{fresh}"), json!({"message": "Bad", "attachments": [{"fileName": "a.csv", "mimeType": "text/csv", "data": "%%%"}]})).await;
    assert_eq!((status, body["error"]["message"].as_str().unwrap().contains("base64")), (400, true), "{body}");
    let (status, _) = cloud.post(ALICE, &format!("/instance-ai/chat/{fresh}"), json!({"message": "Hi", "attachments": [{"type": "workflow", "fileName": "x", "mimeType": "", "data": ""}]})).await;
    assert_eq!(status, 400);
    let resp = cloud.http.get(cloud.url(&format!("/instance-ai/threads/{fresh}/status"))).bearer_auth(ALICE).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404, "no run, no thread");
    cloud.stop().await;
}

/// A reload restores the conversation from the event log: `run-start`
/// carries the message's files (metadata only, never their bytes), so the
/// SSE replay and the session-restore messages both show them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replayed_run_start_and_the_restored_message_list_the_files() {
    let model = Arc::new(Recording::default());
    model.script.set(json!({"conversations": {"Summarise this": [parse(json!({})), {"text": "Two products."}]}}));
    let setup = Setup { stubs: false, ..Setup::default() };
    let cloud = cloud_with(setup, |c| (c.clone(), ()), Some(model.clone() as Arc<dyn agent::model::ModelProvider>)).await.0;
    let t = thread();
    let csv = "Product,Price\nTea,3.5\nCoffee,4\n";
    let attachments = json!([
        {"type": "file", "fileName": "prices.csv", "mimeType": "text/csv", "data": b64(csv.as_bytes())},
        {"fileName": "photo.png", "mimeType": "IMAGE/PNG", "data": b64(b"\x89PNG\r\n\x1a\n")}
    ]);
    let mut live = cloud.sse_events(ALICE, &t).await;
    let (status, body) = cloud.post(ALICE, &format!("/instance-ai/chat/{t}"), json!({"message": "Summarise this", "attachments": attachments})).await;
    assert_eq!(status, 200, "{body}");
    let frames = live.until_type(EventType::RunFinish, WAIT).await;
    assert_eq!(payload(frames.last().unwrap())["status"], "completed", "{:?}", kinds(&frames));
    let want = json!([
        {"fileName": "prices.csv", "mimeType": "text/csv", "size": csv.len()},
        {"fileName": "photo.png", "mimeType": "image/png", "size": 8}
    ]);
    assert_eq!(payload(find(&frames, EventType::RunStart)[0])["attachments"], want, "live");

    // The replay a reloaded page reads: from the start of the log.
    let mut replay = cloud.sse_events(ALICE, &t).await;
    let frames = replay.until_type(EventType::RunFinish, WAIT).await;
    let start = find(&frames, EventType::RunStart)[0];
    assert!(start.id.is_some(), "run-start is a durable, replayable event");
    let start = payload(start);
    assert_eq!(start["attachments"], want, "replayed: {start}");
    assert_eq!(start["message"], "Summarise this");
    let raw = start.to_string();
    assert!(!raw.contains(&b64(csv.as_bytes())) && !raw.contains("\"data\""), "never the bytes: {raw}");

    // Session restore: the user's message lists them; the assistant's does not.
    let resp = cloud.http.get(cloud.url(&format!("/instance-ai/threads/{t}/messages"))).bearer_auth(ALICE).send().await.unwrap();
    let page: Value = resp.json().await.unwrap();
    let messages = page["messages"].as_array().unwrap();
    assert_eq!((messages[0]["role"].as_str(), &messages[0]["attachments"]), (Some("user"), &want), "{page}");
    assert!(messages[1].get("attachments").is_none(), "{}", messages[1]);

    // A message without files carries none.
    let (status, _) = cloud.post(ALICE, &format!("/instance-ai/chat/{t}"), json!({"message": "Summarise this"})).await;
    assert_eq!(status, 200);
    let frames = live.until_type(EventType::RunFinish, WAIT).await;
    assert!(payload(find(&frames, EventType::RunStart)[0]).get("attachments").is_none());
    cloud.stop().await;
}
