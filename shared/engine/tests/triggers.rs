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
