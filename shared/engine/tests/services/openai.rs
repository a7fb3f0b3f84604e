//! OpenAI REST API (https://platform.openai.com/docs/api-reference) as the
//! plain service node `n8n-nodes-base.openAi`: bearer key, JSON bodies,
//! `{error:{message,type,code}}` bodies, images as base64 JSON.

use base64::Engine as _;
use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

/// The first bytes of a PNG file (what `b64_json` carries).
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn openai() -> Server {
    serve(|r: &Seen| {
        if r.header("authorization") != Some("Bearer sk-test") {
            return Reply::json(401, json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}));
        }
        let b = r.json();
        let usage = json!({"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12});
        match (r.method.as_str(), r.path.as_str()) {
            ("POST", "/v1/chat/completions") => {
                if b["messages"].as_array().is_none_or(Vec::is_empty) {
                    return Reply::json(400, json!({"error": {"message": "[] is too short - 'messages'", "type": "invalid_request_error", "param": "messages", "code": null}}));
                }
                let choices: Vec<Value> = (0..b["n"].as_u64().unwrap_or(1))
                    .map(|i| json!({"index": i, "message": {"role": "assistant", "content": format!("Answer {i}")}, "logprobs": null, "finish_reason": "stop"}))
                    .collect();
                Reply::json(200, json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": b["model"], "choices": choices, "usage": usage}))
            }
            ("GET", "/v1/models") => Reply::json(200, json!({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "owned_by": "openai"}]})),
            ("POST", "/v1/completions") => Reply::json(200, json!({"id": "cmpl-1", "object": "text_completion", "model": b["model"], "choices": [{"text": "\n\nThis is a test. ", "index": 0, "logprobs": null, "finish_reason": "length"}], "usage": usage})),
            ("POST", "/v1/edits") => Reply::json(200, json!({"object": "edit", "created": 1700000000, "choices": [{"text": " What day of the week is it?\n", "index": 0}], "usage": usage})),
            ("POST", "/v1/moderations") => Reply::json(200, json!({"id": "modr-1", "model": b["model"], "results": [{"flagged": false, "categories": {"hate": false}, "category_scores": {"hate": 0.0001}}]})),
            ("POST", "/v1/images/generations") => {
                let n = b["n"].as_u64().unwrap_or(1);
                let data: Vec<Value> = (0..n)
                    .map(|i| match b["response_format"].as_str() {
                        Some("b64_json") => json!({"b64_json": base64::engine::general_purpose::STANDARD.encode(PNG), "revised_prompt": format!("cat {i}")}),
                        _ => json!({"url": format!("https://files.example/img-{i}.png"), "revised_prompt": format!("cat {i}")}),
                    })
                    .collect();
                Reply::json(200, json!({"created": 1700000000, "data": data}))
            }
            _ => Reply::json(404, json!({"error": {"message": "Invalid URL", "type": "invalid_request_error"}})),
        }
    })
}

fn node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.openAi", "typeVersion": 1.1, "parameters": parameters, "credentials": {"openAiApi": {"id": "o1", "name": "OpenAI"}}})
}

fn setup(org: &str) -> (Server, engine::Engine) {
    let server = openai();
    let base = format!("{}/v1", server.base);
    let engine = engine(&[("openAiApi", json!({"apiKey": "sk-test", "organizationId": org, "url": base}))], &[]);
    (server, engine)
}

#[test]
fn chat_complete_sends_messages_and_options_and_returns_the_choices() {
    let (server, engine) = setup("org-42");
    let params = json!({
        "resource": "chat",
        "model": "gpt-4o-mini",
        "prompt": {"messages": [{"role": "system", "content": "Be brief"}, {"content": "=Hello {{ $json.name }}"}]},
        "options": {"maxTokens": 64, "n": 2, "temperature": 0.2, "topP": 0.9, "frequency_penalty": 0.5}
    });
    let st = run_node(&engine, node(params), json!([{"name": "Ada"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.header("openai-organization"), Some("org-42"));
    assert_eq!(
        r.json(),
        json!({"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hello Ada"}], "max_tokens": 64, "n": 2, "temperature": 0.2, "top_p": 0.9, "frequency_penalty": 0.5})
    );
    // Simplify (the default): one item per choice.
    let out = output(&st);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1], json!({"index": 1, "message": {"role": "assistant", "content": "Answer 1"}, "logprobs": null, "finish_reason": "stop"}));

    // Without simplify the whole answer is one item; no organization header when none is set.
    let (server, engine) = setup("");
    let st = run_node(&engine, node(json!({"resource": "chat", "prompt": {"messages": [{"role": "user", "content": "hi"}]}, "simplifyOutput": false})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.header("openai-organization"), None);
    assert_eq!(r.json(), json!({"model": "gpt-3.5-turbo", "messages": [{"role": "user", "content": "hi"}]}));
    let out = output(&st);
    assert_eq!((out.len(), out[0]["id"].as_str(), out[0]["usage"]["total_tokens"].as_u64()), (1, Some("chatcmpl-1"), Some(12)));
}

#[test]
fn text_complete_edit_and_moderate() {
    let (server, engine) = setup("");
    let st = run_node(&engine, node(json!({"prompt": "Say this is a test", "options": {"echo": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.path, "/v1/completions");
    assert_eq!(r.json(), json!({"model": "text-davinci-003", "prompt": "Say this is a test", "echo": true}));
    // the completion's text is trimmed, as n8n's simplified output
    assert_eq!(output(&st), vec![json!({"text": "This is a test.", "index": 0, "logprobs": null, "finish_reason": "length"})]);

    let st = run_node(&engine, node(json!({"operation": "edit", "input": "What day of the wek is it?", "instruction": "Fix the spelling"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.path.as_str(), r.json()), ("/v1/edits", json!({"model": "text-davinci-edit-001", "input": "What day of the wek is it?", "instruction": "Fix the spelling"})));
    assert_eq!(output(&st)[0]["text"], "What day of the week is it?");

    let st = run_node(&engine, node(json!({"operation": "moderate", "input": "My cat is adorable"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.path.as_str(), r.json()), ("/v1/moderations", json!({"model": "text-moderation-latest", "input": "My cat is adorable"})));
    assert_eq!(output(&st), vec![json!({"flagged": false, "categories": {"hate": false}, "category_scores": {"hate": 0.0001}})]);
}

#[test]
fn image_create_returns_files_or_urls() {
    let (server, engine) = setup("");
    let params = json!({"resource": "image", "prompt": "A cute cat", "model": "dall-e-3", "options": {"n": 2, "size": "1792x1024", "quality": "hd", "style": "natural"}});
    let st = run_node(&engine, node(params), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.path, "/v1/images/generations");
    // the dall-e-3 resolution (the option's second variant) is the one sent
    assert_eq!(r.json(), json!({"prompt": "A cute cat", "model": "dall-e-3", "response_format": "b64_json", "n": 2, "quality": "hd", "size": "1792x1024", "style": "natural"}));
    let items = st.node_output("Service", 0).unwrap();
    assert_eq!(items.len(), 2);
    let file = &items[0].binary.as_ref().unwrap()["data"];
    assert_eq!((file["mimeType"].as_str(), file["fileName"].as_str(), file["fileExtension"].as_str()), (Some("image/png"), Some("data"), Some("png")));
    assert_eq!(engine::binary::bytes_of(file).unwrap(), PNG);
    assert_eq!(*items[0].json, json!({}));

    let st = run_node(&engine, node(json!({"resource": "image", "prompt": "A dog", "responseFormat": "imageUrl"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"prompt": "A dog", "model": "dall-e-2", "response_format": "url"}));
    assert_eq!(output(&st), vec![json!({"url": "https://files.example/img-0.png", "revised_prompt": "cat 0"})]);
}

#[test]
fn api_errors_fail_the_node_or_become_items() {
    let server = openai();
    let engine = engine(&[("openAiApi", json!({"apiKey": "sk-wrong", "url": format!("{}/v1", server.base)}))], &[]);
    let st = run_node(&engine, node(json!({"resource": "chat", "prompt": {"messages": [{"content": "hi"}]}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.as_ref().unwrap();
    assert!(e.description.as_deref().unwrap_or_default().contains("Incorrect API key provided"), "{e:?}");

    let (_server, engine) = setup("");
    let mut n = node(json!({"resource": "chat", "prompt": {}}));
    n["onError"] = json!("continueRegularOutput");
    let st = run_node(&engine, n, json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert!(output(&st)[0]["error"]["message"].as_str().unwrap().contains("too short"), "{:?}", output(&st));
}

#[test]
fn the_credential_test_lists_the_models_at_the_base_url_or_openai() {
    let (server, engine) = setup("");
    let ok = engine.test_credential("openAiApi", &json!({"id": "o1"}));
    assert!(ok.success, "{}", ok.message);
    assert_eq!(server.take().iter().map(|r| (r.method.clone(), r.path.clone())).collect::<Vec<_>>(), [("GET".to_owned(), "/v1/models".to_owned())]);
    // no base URL: OpenAI's own
    let default = crate::support::engine(&[("openAiApi", json!({"apiKey": "sk-test", "url": ""}))], &[("https://api.openai.com", server.base.as_str())]);
    assert!(default.test_credential("openAiApi", &json!({"id": "o1"})).success);
    let wrong = crate::support::engine(&[("openAiApi", json!({"apiKey": "sk-nope", "url": format!("{}/v1", server.base)}))], &[]);
    let refused = wrong.test_credential("openAiApi", &json!({"id": "o1"}));
    assert!(!refused.success && refused.message.contains("401"), "{}", refused.message);
}
