//! The trigger-side nodes: Webhook (request → item, every version and body
//! kind), webhook authentication, Respond to Webhook (every `respondWith`),
//! the `lastNode` answer, Wait on a webhook call (parks, resumes with the
//! call's item or, past its limit, with its input), `$execution.resumeUrl`.

use std::sync::Arc;

use base64::Engine as _;
use engine::host::CredentialsProvider;
use engine::webhook::{
    authenticate, last_node_response, on_received_response, webhook_output, IncomingRequest, RequestBody,
    ResponseBody, ResponseSpec, TriggerContext, UploadedFile, WebhookAuth,
};
use engine::{Engine, EngineSettings, ExecutionState, ExecutionStatus, Graph, Host, Item, Node, RunOptions};
use serde_json::{json, Map, Value};

fn node(name: &str, ty: &str, version: f64, params: Value) -> Value {
    json!({ "id": name, "name": name, "type": ty, "typeVersion": version, "parameters": params, "position": [0, 0], "webhookId": "hook-1" })
}

fn chain(nodes: Vec<Value>) -> Value {
    let mut conns = Map::new();
    for w in nodes.windows(2) {
        conns.insert(w[0]["name"].as_str().unwrap_or("").into(), json!({ "main": [[{ "node": w[1]["name"], "type": "main", "index": 0 }]] }));
    }
    json!({ "nodes": nodes, "connections": conns, "settings": { "executionOrder": "v1" } })
}

fn as_node(v: Value) -> Node {
    serde_json::from_value(v).unwrap()
}

fn request(method: &str, body: RequestBody, raw: &[u8], content_type: Option<&str>) -> IncomingRequest {
    let mut headers = Map::new();
    headers.insert("host".into(), json!("example.test"));
    if let Some(ct) = content_type {
        headers.insert("content-type".into(), json!(ct));
    }
    let mut query = Map::new();
    query.insert("q".into(), json!("1"));
    IncomingRequest { method: method.into(), headers, query, body, raw_body: raw.to_vec(), ..Default::default() }
}

fn run(wf: &Value, items: Vec<Item>, settings: EngineSettings, host: Host) -> ExecutionState {
    let graph = Graph::from_json(wf).unwrap();
    let opts = RunOptions { trigger_items: Some(items), execution_id: Some("exec-1".into()), ..RunOptions::default() };
    Engine::new(settings, host).run(&graph, opts).unwrap().0
}

fn out(st: &ExecutionState, node: &str) -> Vec<Value> {
    st.run_data.get(node).and_then(|r| r.last()).and_then(|t| t.output(0)).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect()).unwrap_or_default()
}

#[test]
fn json_body_becomes_the_item_with_url_and_mode() {
    let n = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "in"})));
    let req = request("POST", RequestBody::Parsed(json!({"a": 1})), br#"{"a":1}"#, Some("application/json"));
    let ctx = TriggerContext { webhook_url: Some("http://h/webhook/in".into()), execution_mode: Some("production".into()), jwt_payload: None };
    let outs = webhook_output(&n, &req, &ctx).unwrap();
    let item = &outs[0][0];
    assert_eq!(item.json["body"], json!({"a": 1}));
    assert_eq!(item.json["query"], json!({"q": "1"}));
    assert_eq!(item.json["headers"]["content-type"], "application/json");
    assert_eq!(item.json["webhookUrl"], "http://h/webhook/in");
    assert_eq!(item.json["executionMode"], "production");
    assert!(item.binary.is_none());
}

#[test]
fn without_context_the_request_is_passed_as_is() {
    // What the conformance harness feeds: nothing added to the request.
    let n = as_node(node("Webhook", "n8n-nodes-base.webhook", 1.0, json!({"httpMethod": "POST", "path": "test", "options": {"binaryData": false}})));
    let mut req = request("POST", RequestBody::Multipart { fields: serde_json::from_value(json!({"a": ["b"]})).unwrap(), files: vec![] }, b"", Some("multipart/form-data"));
    req.params.insert("path".into(), json!("test"));
    let outs = webhook_output(&n, &req, &TriggerContext::default()).unwrap();
    assert_eq!(Value::clone(&outs[0][0].json), json!({"headers": req.headers, "params": {"path": "test"}, "query": {"q": "1"}, "body": {"a": ["b"]}}));
}

#[test]
fn multipart_files_become_binary_named_as_n8n_names_them() {
    let file = |field: &str, name: &str| UploadedFile { field: field.into(), file_name: Some(name.into()), mime_type: "text/plain".into(), data: b"hello".to_vec() };
    let body = RequestBody::Multipart {
        fields: serde_json::from_value(json!({"note": "x"})).unwrap(),
        files: vec![file("doc", "a.txt"), file("pics[]", "1.txt"), file("pics[]", "2.txt")],
    };
    let n = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "up"})));
    let outs = webhook_output(&n, &request("POST", body.clone(), b"", Some("multipart/form-data")), &TriggerContext::default()).unwrap();
    let bin = outs[0][0].binary.as_ref().unwrap();
    let keys: Vec<&String> = bin.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["doc", "pics0", "pics1"]);
    assert_eq!(bin["doc"]["fileName"], "a.txt");
    assert_eq!(bin["doc"]["fileExtension"], "txt");
    assert_eq!(bin["doc"]["data"], base64::engine::general_purpose::STANDARD.encode("hello"));
    assert_eq!(outs[0][0].json["body"], json!({"note": "x"}));
    // With "Field Name for Binary Data" set, files are numbered under it.
    let n = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "up", "options": {"binaryPropertyName": "file"}})));
    let outs = webhook_output(&n, &request("POST", body, b"", Some("multipart/form-data")), &TriggerContext::default()).unwrap();
    let keys: Vec<String> = outs[0][0].binary.as_ref().unwrap().as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["file0", "file1", "file2"]);
}

#[test]
fn an_unparsed_body_is_a_file_from_version_2_and_raw_body_keeps_bytes() {
    let png = [0x89u8, b'P', b'N', b'G', 0, 1, 2];
    let v2 = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "img"})));
    let outs = webhook_output(&v2, &request("POST", RequestBody::Unparsed, &png, Some("image/png")), &TriggerContext::default()).unwrap();
    let item = &outs[0][0];
    assert_eq!(item.json["body"], json!({}));
    let data = &item.binary.as_ref().unwrap()["data"];
    assert_eq!(data["mimeType"], "image/png");
    assert_eq!(data["fileType"], "image");
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data["data"].as_str().unwrap()).unwrap(), png);
    // v1 needs the "Binary File" option; rawBody keeps the bytes beside the parsed body.
    let raw = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "r", "options": {"rawBody": true}})));
    let outs = webhook_output(&raw, &request("POST", RequestBody::Parsed(json!({"a": 1})), br#"{"a":1}"#, Some("application/json")), &TriggerContext::default()).unwrap();
    assert_eq!(outs[0][0].json["body"], json!({"a": 1}));
    assert_eq!(outs[0][0].binary.as_ref().unwrap()["data"]["data"], base64::engine::general_purpose::STANDARD.encode(br#"{"a":1}"#));
}

#[test]
fn several_methods_have_an_output_each() {
    let n = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.1, json!({"multipleMethods": true, "httpMethod": ["GET", "POST"], "path": "m"})));
    let outs = webhook_output(&n, &request("POST", RequestBody::Empty, b"", None), &TriggerContext::default()).unwrap();
    assert_eq!((outs[0].len(), outs[1].len()), (0, 1));
}

fn headers(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs.iter().map(|(k, v)| (k.to_string(), json!(v))).collect()
}

#[test]
fn basic_and_header_auth_answer_as_n8n_does() {
    let basic = json!({"user": "ann", "password": "s3cret:x"});
    let good = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("ann:s3cret:x"));
    assert_eq!(authenticate(WebhookAuth::Basic, Some(&basic), &headers(&[("authorization", &good)])), Ok(None));
    let wrong = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("ann:nope"));
    assert_eq!(authenticate(WebhookAuth::Basic, Some(&basic), &headers(&[("authorization", &wrong)])).unwrap_err().status, 403);
    let missing = authenticate(WebhookAuth::Basic, Some(&basic), &headers(&[])).unwrap_err();
    assert_eq!((missing.status, missing.message.as_str(), missing.challenge), (401, "Authorization is required!", true));
    assert_eq!(authenticate(WebhookAuth::Basic, Some(&basic), &headers(&[("authorization", "Bearer x")])).unwrap_err().status, 401);
    assert_eq!(authenticate(WebhookAuth::Basic, None, &headers(&[])).unwrap_err().status, 500);
    let header = json!({"name": "X-Key", "value": "k-123"});
    assert_eq!(authenticate(WebhookAuth::Header, Some(&header), &headers(&[("x-key", "k-123")])), Ok(None));
    assert_eq!(authenticate(WebhookAuth::Header, Some(&header), &headers(&[("x-key", "k-12")])).unwrap_err().status, 403);
}

#[test]
fn bearer_auth_answers_as_n8n_does() {
    let bearer = json!({"token": "t-0k3n"});
    assert_eq!(authenticate(WebhookAuth::Bearer, Some(&bearer), &headers(&[("authorization", "Bearer t-0k3n")])), Ok(None));
    let wrong = authenticate(WebhookAuth::Bearer, Some(&bearer), &headers(&[("authorization", "Bearer t-0k3")])).unwrap_err();
    assert_eq!((wrong.status, wrong.message.as_str(), wrong.challenge), (403, "Authorization data is wrong!", true));
    // n8n compares the whole header: a missing one or another scheme is 403 too (not 401)
    assert_eq!(authenticate(WebhookAuth::Bearer, Some(&bearer), &headers(&[])).unwrap_err().status, 403);
    assert_eq!(authenticate(WebhookAuth::Bearer, Some(&bearer), &headers(&[("authorization", "bearer t-0k3n")])).unwrap_err().status, 403);
    let none = authenticate(WebhookAuth::Bearer, Some(&json!({"token": ""})), &headers(&[("authorization", "Bearer ")])).unwrap_err();
    assert_eq!((none.status, none.message.as_str()), (500, "No authentication data defined on node!"));
    assert_eq!(authenticate(WebhookAuth::Bearer, None, &headers(&[])).unwrap_err().status, 500);
    let n = as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"path": "p", "authentication": "bearerAuth"})));
    assert_eq!(WebhookAuth::of(&n).unwrap().credential_type(), Some("httpBearerAuth"));
}

#[test]
fn jwt_auth_verifies_hmac_and_rsa_tokens() {
    let hs = json!({"keyType": "passphrase", "secret": "shh", "algorithm": "HS256"});
    let token = engine::webhook::sign_jwt(&hs, &json!({"sub": "u1"})).unwrap();
    let payload = authenticate(WebhookAuth::Jwt, Some(&hs), &headers(&[("authorization", &format!("Bearer {token}"))])).unwrap().unwrap();
    assert_eq!(payload["sub"], "u1");
    let other = json!({"keyType": "passphrase", "secret": "other", "algorithm": "HS256"});
    let bad = authenticate(WebhookAuth::Jwt, Some(&other), &headers(&[("authorization", &format!("Bearer {token}"))])).unwrap_err();
    assert_eq!((bad.status, bad.message.as_str()), (403, "invalid signature"));
    assert_eq!(authenticate(WebhookAuth::Jwt, Some(&hs), &headers(&[])).unwrap_err().message, "No token provided");
    let expired = engine::webhook::sign_jwt(&hs, &json!({"exp": 1_000})).unwrap();
    assert_eq!(authenticate(WebhookAuth::Jwt, Some(&hs), &headers(&[("authorization", &format!("Bearer {expired}"))])).unwrap_err().message, "jwt expired");
    let private = include_str!("fixtures/jwt_rsa_private.pem");
    let public = include_str!("fixtures/jwt_rsa_public.pem");
    let signer = json!({"keyType": "pemKey", "privateKey": private.replace('\n', " "), "algorithm": "RS256"});
    let token = engine::webhook::sign_jwt(&signer, &json!({"sub": "rsa"})).unwrap();
    let verifier = json!({"keyType": "pemKey", "publicKey": public, "algorithm": "RS256"});
    let payload = authenticate(WebhookAuth::Jwt, Some(&verifier), &headers(&[("authorization", &format!("Bearer {token}"))])).unwrap().unwrap();
    assert_eq!(payload["sub"], "rsa");
}

struct Creds;
impl CredentialsProvider for Creds {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        assert_eq!(cred_type, "jwtAuth");
        Ok(json!({"keyType": "passphrase", "secret": "shh", "algorithm": "HS256"}))
    }
}

fn respond_run(params: Value, input: Value) -> engine::webhook::HttpResponse {
    let hook = node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "p", "responseMode": "responseNode"}));
    let data = node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": input }));
    let mut respond = node("Respond", "n8n-nodes-base.respondToWebhook", 1.1, params);
    respond["credentials"] = json!({"jwtAuth": {"id": "c1", "name": "jwt"}});
    let wf = chain(vec![hook, data, respond]);
    let host = Host { credentials: Some(Arc::new(Creds)), ..Host::default() };
    let st = run(&wf, vec![Item::new(json!({}))], EngineSettings::default(), host);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    serde_json::from_value(st.webhook_response.expect("a response")).unwrap()
}

#[test]
fn respond_to_webhook_builds_every_kind_of_answer() {
    let items = json!([{"a": 1}, {"a": 2}]);
    let r = respond_run(json!({"respondWith": "allIncomingItems", "options": {"responseKey": "data.items"}}), items.clone());
    assert_eq!(r.body, ResponseBody::Json { value: json!({"data": {"items": [{"a": 1}, {"a": 2}]}}) });
    let r = respond_run(json!({"respondWith": "firstIncomingItem", "options": {"responseCode": 201, "responseHeaders": {"entries": [{"name": "X-Trace", "value": "t1"}]}}}), items.clone());
    assert_eq!((r.status, r.header("x-trace")), (201, Some("t1")));
    assert_eq!(r.body, ResponseBody::Json { value: json!({"a": 1}) });
    let r = respond_run(json!({"respondWith": "json", "responseBody": "={{ JSON.stringify({n: $json.a}) }}"}), items.clone());
    assert_eq!(r.body, ResponseBody::Json { value: json!({"n": 1}) });
    let r = respond_run(json!({"respondWith": "text", "responseBody": "=done {{ $json.a }}"}), items.clone());
    assert_eq!(r.body, ResponseBody::Text { text: "done 1".into() });
    let r = respond_run(json!({"respondWith": "redirect", "redirectURL": "https://example.com/next"}), items.clone());
    assert_eq!((r.status, r.header("location")), (307, Some("https://example.com/next")));
    let r = respond_run(json!({"respondWith": "noData", "options": {"responseCode": 204}}), items.clone());
    assert_eq!((r.status, &r.body), (204, &ResponseBody::Empty));
    let r = respond_run(json!({"respondWith": "jwt", "payload": "{\"ok\": true}"}), items);
    let ResponseBody::Json { value } = r.body else { panic!("json") };
    let token = value["token"].as_str().unwrap();
    let claims = engine::webhook::verify_jwt(&json!({"keyType": "passphrase", "secret": "shh", "algorithm": "HS256"}), token).unwrap();
    assert_eq!(claims["ok"], true);
}

#[test]
fn respond_with_binary_sends_the_file_with_its_type() {
    let hook = node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "p", "responseMode": "responseNode"}));
    let respond = node("Respond", "n8n-nodes-base.respondToWebhook", 1.1, json!({"respondWith": "binary"}));
    let wf = chain(vec![hook, respond]);
    let mut item = Item::new(json!({}));
    item.binary = Some(json!({"file": engine::webhook::binary_data(b"%PDF-1", Some("a.pdf"), "application/pdf")}).into());
    let st = run(&wf, vec![item], EngineSettings::default(), Host::default());
    let r: engine::webhook::HttpResponse = serde_json::from_value(st.webhook_response.unwrap()).unwrap();
    assert_eq!(r.header("content-type"), Some("application/pdf"));
    assert_eq!(r.body_bytes(), b"%PDF-1");
}

/// Webhook → Data → Respond (`version`, `params`), whose output 0 feeds
/// "Passed" and output 1 (the Response output) feeds "Sent".
fn respond_branches(version: f64, params: Value, input: Value) -> Value {
    let hook = node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "p", "responseMode": "responseNode"}));
    let data = node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": input }));
    let respond = node("Respond", "n8n-nodes-base.respondToWebhook", version, params);
    let passed = node("Passed", "n8n-nodes-base.noOp", 1.0, json!({}));
    let sent = node("Sent", "n8n-nodes-base.noOp", 1.0, json!({}));
    json!({
        "nodes": [hook, data, respond, passed, sent],
        "connections": {
            "Webhook": {"main": [[{"node": "Data", "type": "main", "index": 0}]]},
            "Data": {"main": [[{"node": "Respond", "type": "main", "index": 0}]]},
            "Respond": {"main": [[{"node": "Passed", "type": "main", "index": 0}], [{"node": "Sent", "type": "main", "index": 0}]]}
        },
        "settings": {"executionOrder": "v1"}
    })
}

fn output_of(st: &ExecutionState, node: &str, k: usize) -> Option<Vec<Value>> {
    st.run_data.get(node).and_then(|r| r.last()).and_then(|t| t.output(k)).map(|i| i.iter().map(|i| Value::clone(&i.json)).collect())
}

/// n8n's Response output: always on 1.3, with `enableResponseOutput` from
/// 1.4; one item `{response: {body, headers, statusCode}}` that the next
/// node gets, while output 0 passes the input on and the caller is answered.
#[test]
fn respond_to_webhook_response_output_as_n8n_shapes_it() {
    let items = json!([{"a": 1}, {"a": 2}]);
    let answer = json!({
        "respondWith": "json",
        "responseBody": "={{ JSON.stringify({n: $json.a}) }}",
        "options": {"responseCode": 201, "responseHeaders": {"entries": [{"name": "X-Trace", "value": "t1"}]}}
    });
    let expected = json!([{"response": {"body": {"n": 1}, "headers": {"x-trace": "t1"}, "statusCode": 201}}]);
    let mut on = answer.clone();
    on["enableResponseOutput"] = json!(true);
    for (version, params) in [(1.3, answer.clone()), (1.4, on.clone()), (1.5, on.clone())] {
        let st = run(&respond_branches(version, params, items.clone()), vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
        assert_eq!(st.status, ExecutionStatus::Success, "{version}: {:?}", st.error);
        assert_eq!(output_of(&st, "Respond", 0), Some(vec![json!({"a": 1}), json!({"a": 2})]), "{version}");
        assert_eq!(output_of(&st, "Respond", 1), expected.as_array().cloned(), "{version}");
        assert_eq!(out(&st, "Sent"), expected.as_array().cloned().unwrap_or_default(), "{version}: the next node gets the response");
        assert_eq!(out(&st, "Passed"), vec![json!({"a": 1}), json!({"a": 2})], "{version}");
        // two items came in: n8n leaves the response item unpaired
        let task = st.run_data["Respond"].last().unwrap();
        assert_eq!(task.output(1).unwrap()[0].paired_item, None, "{version}");
        let r: engine::webhook::HttpResponse = serde_json::from_value(st.webhook_response.clone().expect("answered")).unwrap();
        assert_eq!((r.status, r.header("x-trace")), (201, Some("t1")), "{version}");
    }
    // 1.4 and 1.5 without the switch: one output, the answer as before
    for version in [1.4, 1.5] {
        let st = run(&respond_branches(version, answer.clone(), items.clone()), vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
        assert_eq!(st.status, ExecutionStatus::Success, "{version}: {:?}", st.error);
        assert_eq!(output_of(&st, "Respond", 1), None, "{version}");
        assert!(!st.run_data.contains_key("Sent"), "{version}");
        assert_eq!(out(&st, "Passed").len(), 2);
        assert!(st.webhook_response.is_some(), "{version}");
    }
    // no body: the key is absent; a redirect's code
    let redirect = json!({"enableResponseOutput": true, "respondWith": "redirect", "redirectURL": "https://example.com/next"});
    let st = run(&respond_branches(1.4, redirect, json!([{"a": 1}])), vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
    assert_eq!(out(&st, "Sent"), vec![json!({"response": {"headers": {"location": "https://example.com/next"}, "statusCode": 307}})]);
    // one item came in: the response item pairs with it
    assert_eq!(st.run_data["Respond"].last().unwrap().output(1).unwrap()[0].paired_item, Some(engine::data::PairedItem::Index(0)));
    let text = json!({"enableResponseOutput": true, "respondWith": "text", "responseBody": "=done {{ $json.a }}"});
    let st = run(&respond_branches(1.5, text, json!([{"a": 1}])), vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
    assert_eq!(out(&st, "Sent"), vec![json!({"response": {"body": "done 1", "headers": {}, "statusCode": 200}})]);
}

/// A file in the Response output is n8n's serialized `Buffer`, its length a number.
#[test]
fn respond_to_webhook_response_output_of_a_file() {
    let hook = node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"httpMethod": "POST", "path": "p", "responseMode": "responseNode"}));
    let respond = node("Respond", "n8n-nodes-base.respondToWebhook", 1.4, json!({"respondWith": "binary", "enableResponseOutput": true}));
    let mut wf = chain(vec![hook, respond]);
    wf["nodes"].as_array_mut().unwrap().push(node("Sent", "n8n-nodes-base.noOp", 1.0, json!({})));
    wf["connections"]["Respond"] = json!({"main": [[], [{"node": "Sent", "type": "main", "index": 0}]]});
    let mut item = Item::new(json!({}));
    item.binary = Some(json!({"file": engine::webhook::binary_data(b"%PDF-1", Some("a.pdf"), "application/pdf")}).into());
    let st = run(&wf, vec![item], EngineSettings::default(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let bytes: Vec<Value> = b"%PDF-1".iter().map(|b| json!(b)).collect();
    assert_eq!(
        out(&st, "Sent"),
        vec![json!({"response": {"body": {"type": "Buffer", "data": bytes}, "headers": {"content-length": 6, "content-type": "application/pdf"}, "statusCode": 200}})]
    );
    let r: engine::webhook::HttpResponse = serde_json::from_value(st.webhook_response.unwrap()).unwrap();
    assert_eq!(r.body_bytes(), b"%PDF-1");
}

/// Respond to Webhook in a run whose caller waits for a stream (the trigger
/// answers `streaming`): the chunks it sends, and whether it answers.
fn respond_streaming(version: f64, params: Value) -> (Vec<engine::stream::StreamChunk>, ExecutionState) {
    let hook = node("Webhook", "n8n-nodes-base.webhook", 2.1, json!({"httpMethod": "POST", "path": "p", "responseMode": "streaming"}));
    let data = node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": [{"a": 1}, {"a": 2}] }));
    let mut respond = node("Respond", "n8n-nodes-base.respondToWebhook", version, params);
    respond["credentials"] = json!({"jwtAuth": {"id": "c1", "name": "jwt"}});
    let graph = Graph::from_json(&chain(vec![hook, data, respond])).unwrap();
    let chunks = Arc::new(std::sync::Mutex::new(vec![]));
    let sink = chunks.clone();
    let stream = engine::stream::StreamHook::new(move |c| sink.lock().unwrap().push(c));
    let opts = RunOptions { trigger_items: Some(vec![Item::new(json!({}))]), execution_id: Some("exec-1".into()), stream: Some(stream), ..RunOptions::default() };
    let host = Host { credentials: Some(Arc::new(Creds)), ..Host::default() };
    let (st, _) = Engine::new(EngineSettings::default(), host).run(&graph, opts).unwrap();
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let got = chunks.lock().unwrap().clone();
    (got, st)
}

/// (type, itemIndex, content) of each chunk.
fn chunk_list(chunks: &[engine::stream::StreamChunk]) -> Vec<(String, usize, Option<String>)> {
    chunks.iter().map(|c| (serde_json::to_value(c.kind).unwrap().as_str().unwrap().to_owned(), c.metadata.item_index, c.content.clone())).collect()
}

fn triple(i: usize, content: &str) -> Vec<(String, usize, Option<String>)> {
    vec![("begin".into(), i, None), ("item".into(), i, Some(content.into())), ("end".into(), i, None)]
}

/// 1.5 streams the answer (begin/item/end) instead of sending it, unless
/// `enableStreaming` is off; earlier versions answer; a file always answers;
/// all incoming items go out as chunks in any version (as n8n sends them).
#[test]
fn respond_to_webhook_1_5_streams_its_answer_to_a_streaming_caller() {
    let (chunks, st) = respond_streaming(1.5, json!({"respondWith": "json", "responseBody": "{\"ok\": true, \"n\": 2}"}));
    assert_eq!(chunk_list(&chunks), triple(0, r#"{"ok":true,"n":2}"#));
    assert_eq!(chunks[1].metadata.node_name, "Respond");
    assert!(chunks[1].metadata.timestamp.is_some());
    assert_eq!(st.webhook_response, None, "streamed, not sent");
    let (chunks, st) = respond_streaming(1.5, json!({"respondWith": "text", "responseBody": "=hi {{ $json.a }}"}));
    assert_eq!((chunk_list(&chunks), st.webhook_response), (triple(0, "hi 1"), None));
    // the first item as it is: responseKey shapes only the sent answer
    let (chunks, _) = respond_streaming(1.5, json!({"respondWith": "firstIncomingItem", "options": {"responseKey": "data"}}));
    assert_eq!(chunk_list(&chunks), triple(0, r#"{"a":1}"#));
    let (chunks, _) = respond_streaming(1.5, json!({"respondWith": "jwt", "payload": "{\"ok\": true}"}));
    let token = chunks[1].content.clone().unwrap_or_default();
    assert!(token.starts_with(r#"{"token":"ey"#), "{token}");
    // a redirect streams nothing and is not sent either (n8n)
    let (chunks, st) = respond_streaming(1.5, json!({"respondWith": "redirect", "redirectURL": "https://example.com"}));
    assert!(chunks.is_empty() && st.webhook_response.is_none());
    let all = [triple(0, r#"{"a":1}"#), triple(1, r#"{"a":2}"#)].concat();
    let (chunks, st) = respond_streaming(1.5, json!({"respondWith": "allIncomingItems"}));
    assert_eq!((chunk_list(&chunks), st.webhook_response), (all.clone(), None));
    // switched off, or before 1.5: answered, not streamed
    let (chunks, st) = respond_streaming(1.5, json!({"respondWith": "json", "responseBody": "{}", "options": {"enableStreaming": false}}));
    assert!(chunks.is_empty() && st.webhook_response.is_some());
    let (chunks, st) = respond_streaming(1.4, json!({"respondWith": "json", "responseBody": "{}"}));
    assert!(chunks.is_empty() && st.webhook_response.is_some());
    let (chunks, st) = respond_streaming(1.4, json!({"respondWith": "allIncomingItems"}));
    assert_eq!(chunk_list(&chunks), all);
    assert!(st.webhook_response.is_some());
    // with the response output on, it carries the answer that was streamed
    let (_, st) = respond_streaming(1.5, json!({"respondWith": "text", "responseBody": "streamed", "enableResponseOutput": true}));
    assert_eq!(output_of(&st, "Respond", 1), Some(vec![json!({"response": {"body": "streamed", "headers": {}, "statusCode": 200}})]));
    // no streaming caller: 1.5 answers as before
    let st = run(&respond_branches(1.5, json!({"respondWith": "json", "responseBody": "{}"}), json!([{"a": 1}])), vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
    assert!(st.webhook_response.is_some());
}

#[test]
fn respond_to_webhook_without_a_webhook_fails_from_1_1() {
    let wf = chain(vec![
        node("Manual", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
        node("Respond", "n8n-nodes-base.respondToWebhook", 1.1, json!({"respondWith": "noData"})),
    ]);
    let st = run(&wf, vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(st.error.unwrap().message, "No Webhook node found in the workflow");
}

/// n8n's list of what a Respond to Webhook may answer: a Chat Trigger
/// (response mode "Using Respond to Webhook Node") is one.
#[test]
fn respond_to_webhook_answers_a_chat_trigger() {
    let wf = chain(vec![
        node("Chat", "@n8n/n8n-nodes-langchain.chatTrigger", 1.1, json!({"options": {"responseMode": "responseNode"}})),
        node("Respond", "n8n-nodes-base.respondToWebhook", 1.5, json!({"respondWith": "text", "responseBody": "=echo {{ $json.chatInput }}"})),
    ]);
    let st = run(&wf, vec![Item::new(json!({"chatInput": "hi"}))], EngineSettings::default(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r: engine::webhook::HttpResponse = serde_json::from_value(st.webhook_response.expect("answered")).unwrap();
    assert_eq!(r.body, ResponseBody::Text { text: "echo hi".into() });
}

#[test]
fn last_node_answers_with_the_selected_data() {
    let wf = chain(vec![
        node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"path": "p", "responseMode": "lastNode"})),
        node("Data", "n8n-nodes-testing.testData", 1.0, json!({ "data": [{"r": {"v": 7}}, {"r": {"v": 8}}] })),
    ]);
    let st = run(&wf, vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
    let hook = |params: Value| as_node(node("Webhook", "n8n-nodes-base.webhook", 2.0, params));
    let first = last_node_response(&ResponseSpec::of(&hook(json!({"responseMode": "lastNode"}))), &st);
    assert_eq!((first.status, first.body), (200, ResponseBody::Json { value: json!({"r": {"v": 7}}) }));
    let all = last_node_response(&ResponseSpec::of(&hook(json!({"responseMode": "lastNode", "responseData": "allEntries"}))), &st);
    assert_eq!(all.body, ResponseBody::Json { value: json!([{"r": {"v": 7}}, {"r": {"v": 8}}]) });
    let prop = last_node_response(
        &ResponseSpec::of(&hook(json!({"responseMode": "lastNode", "options": {"responsePropertyName": "r.v", "responseContentType": "text/plain"}}))),
        &st,
    );
    assert_eq!((&prop.body, prop.header("content-type")), (&ResponseBody::Json { value: json!(7) }, Some("text/plain")));
    let none = last_node_response(&ResponseSpec::of(&hook(json!({"responseMode": "lastNode", "responseData": "noData"}))), &st);
    assert_eq!(none.body, ResponseBody::Empty);
    let received = on_received_response(&ResponseSpec::of(&hook(json!({"options": {"responseData": "thanks"}}))));
    assert_eq!(received.body, ResponseBody::Text { text: "thanks".into() });
}

#[test]
fn a_failed_run_answers_500_without_naming_the_node() {
    let wf = chain(vec![
        node("Webhook", "n8n-nodes-base.webhook", 2.0, json!({"path": "p", "responseMode": "lastNode"})),
        node("Boom", "n8n-nodes-base.stopAndError", 1.0, json!({"errorMessage": "secret detail"})),
    ]);
    let st = run(&wf, vec![Item::new(json!({}))], EngineSettings::default(), Host::default());
    let r = last_node_response(&ResponseSpec::of(&as_node(node("W", "n8n-nodes-base.webhook", 2.0, json!({"responseMode": "lastNode"})))), &st);
    assert_eq!(r.status, 500);
    assert!(!String::from_utf8_lossy(&r.body_bytes()).contains("secret"));
}

#[test]
fn wait_on_webhook_parks_even_with_a_short_limit_and_resumes_with_the_call() {
    let wf = chain(vec![
        node("Manual", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
        node("Url", "n8n-nodes-base.set", 3.4, json!({"assignments": {"assignments": [{"id": "1", "name": "url", "value": "={{ $execution.resumeUrl }}", "type": "string"}]}, "options": {}})),
        node("Wait", "n8n-nodes-base.wait", 1.1, json!({"resume": "webhook", "options": {"limitWaitTime": {"values": {"limitType": "afterTimeInterval", "resumeAmount": 2, "resumeUnit": "seconds"}}}})),
        node("After", "n8n-nodes-base.noOp", 1.0, json!({})),
    ]);
    let settings = EngineSettings { public_url: Some("https://ia.example".into()), ..EngineSettings::default() };
    let st = run(&wf, vec![Item::new(json!({}))], settings.clone(), Host::default());
    assert_eq!(st.status, ExecutionStatus::Waiting, "a 2 s limit still parks: only a call or the limit resumes it");
    assert_eq!(out(&st, "Url")[0]["url"], "https://ia.example/webhook-waiting/exec-1");
    // The host puts the call's item in the Wait node's state, then resumes.
    let mut resumed = st.clone();
    resumed.node_context.insert("Wait".into(), json!({"resumeItems": [{"json": {"body": {"ok": 1}}}]}));
    let graph = Graph::from_json(&wf).unwrap();
    let done = Engine::new(settings.clone(), Host::default()).resume(&graph, resumed, None).unwrap().0;
    assert_eq!(done.status, ExecutionStatus::Success);
    assert_eq!(out(&done, "After"), vec![json!({"body": {"ok": 1}})]);
    // Past the limit (no call): the input goes on.
    let done = Engine::new(settings, Host::default()).resume(&graph, st, None).unwrap().0;
    assert_eq!(out(&done, "After"), vec![json!({"url": "https://ia.example/webhook-waiting/exec-1"})]);
}

#[test]
fn schedule_and_error_triggers_emit_what_the_host_hands_them() {
    for ty in ["n8n-nodes-base.scheduleTrigger", "n8n-nodes-base.errorTrigger", "n8n-nodes-base.formTrigger"] {
        let wf = chain(vec![node("T", ty, 1.0, json!({})), node("After", "n8n-nodes-base.noOp", 1.0, json!({}))]);
        let st = run(&wf, vec![Item::new(json!({"from": ty}))], EngineSettings::default(), Host::default());
        assert_eq!(out(&st, "After"), vec![json!({"from": ty})], "{ty}");
    }
}
