use std::time::{Duration, Instant};

use models::openai::{OpenAiConfig, OpenAiProvider};
use models::{
    provider_from_config_with_env, AssistantPart, CancellationToken, FinishReason, Message,
    ModelChunk, ModelErrorKind, ModelProvider, ModelRequest, ToolDefinition, Usage,
};
use futures::StreamExt;
use serde_json::json;

use crate::common::*;

fn provider(server: &MockServer) -> OpenAiProvider {
    let mut config = OpenAiConfig::openai("sk-test", "gpt-4.1");
    config.base_url = format!("{}/v1", server.base);
    config.retry = fast_retry();
    OpenAiProvider::new(config).expect("provider")
}

fn request() -> ModelRequest {
    ModelRequest {
        system: "You are the Instance AI.".into(),
        messages: vec![Message::user("Check workflows and failed executions")],
        tools: vec![ToolDefinition {
            name: "workflows".into(),
            description: "List and manage workflows".into(),
            input_schema: json!({"type": "object"}),
        }],
    }
}

#[tokio::test]
async fn parallel_tool_calls_assembled_from_partial_chunks() {
    let server = MockServer::start(vec![MockResponse::sse(fixture("openai_tool_calls.sse"))]).await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        chunks,
        vec![
            ModelChunk::TextDelta("Checking ".into()),
            ModelChunk::TextDelta("both.".into()),
            ModelChunk::ToolInputStart {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "workflows".into()
            },
            ModelChunk::ToolInputStart {
                id: "call_Zx81QmF0cWJkNm9wcXJzdHV2".into(),
                name: "executions".into()
            },
            ModelChunk::ToolCall {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "workflows".into(),
                args: json!({"action": "list"})
            },
            ModelChunk::ToolCall {
                id: "call_Zx81QmF0cWJkNm9wcXJzdHV2".into(),
                name: "executions".into(),
                args: json!({"status": "error", "limit": 5})
            },
            ModelChunk::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 182,
                    output_tokens: 41
                }
            },
        ]
    );
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some("Bearer sk-test")
    );
    assert_eq!(r.body["stream"], json!(true));
    assert_eq!(
        r.body["tools"],
        json!([{"type": "function", "function": {"name": "workflows", "description": "List and manage workflows", "parameters": {"type": "object"}}}])
    );
}

#[tokio::test]
async fn history_is_converted() {
    let server = MockServer::start(vec![MockResponse::sse(fixture("openai_text.sse"))]).await;
    let mut req = request();
    req.messages.push(Message::Assistant {
        parts: vec![
            AssistantPart::Reasoning {
                text: "not sent".into(),
                signature: None,
            },
            AssistantPart::ToolCall {
                id: "call_1".into(),
                name: "workflows".into(),
                args: json!({"action": "list"}),
            },
        ],
    });
    req.messages.push(Message::ToolResult {
        tool_call_id: "call_1".into(),
        tool_name: "workflows".into(),
        content: "[]".into(),
        is_error: false,
    });
    let (chunks, error) = collect(provider(&server).stream(req, CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&chunks), "You have 3 active workflows.");
    assert_eq!(
        chunks.last(),
        Some(&ModelChunk::Finish {
            reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 20,
                output_tokens: 8
            }
        })
    );
    assert_eq!(
        server.requests()[0].body["messages"],
        json!([
            {"role": "system", "content": "You are the Instance AI."},
            {"role": "user", "content": "Check workflows and failed executions"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "workflows", "arguments": "{\"action\":\"list\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"}
        ])
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_ms_then_success() {
    let server = MockServer::start(vec![
        MockResponse::status(429, r#"{"error":{"message":"Rate limit reached for gpt-4.1","type":"requests","code":"rate_limit_exceeded"}}"#)
            .header("retry-after-ms", "250")
            .header("retry-after", "1"),
        MockResponse::sse(fixture("openai_text.sse")),
    ])
    .await;
    let started = Instant::now();
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&chunks), "You have 3 active workflows.");
    assert_eq!(server.requests().len(), 2);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_millis(1000),
        "{waited:?}"
    );
}

#[tokio::test]
async fn server_error_is_retried_then_reported() {
    let server = MockServer::start(vec![
        MockResponse::status(
            503,
            r#"{"error":{"message":"The server is overloaded"}}"#
        );
        3
    ])
    .await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert!(chunks.is_empty());
    let error = error.expect("error");
    assert_eq!(
        (error.provider.as_str(), error.status_code, error.retryable),
        ("openai", Some(503), true)
    );
    assert_eq!(error.message, "HTTP 503: The server is overloaded");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn malformed_chunk_is_a_clear_error() {
    let server = MockServer::start(vec![MockResponse::sse(fixture("openai_malformed.sse"))]).await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert_eq!(text_of(&chunks), "Hello");
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(
        error.message.starts_with("malformed stream chunk"),
        "{error}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn malformed_tool_arguments_are_a_clear_error() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\",\"function\":{\"name\":\"workflows\",\"arguments\":\"{\\\"action\\\": \"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let server = MockServer::start(vec![MockResponse::sse(body)]).await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert_eq!(
        chunks,
        vec![ModelChunk::ToolInputStart {
            id: "call_9".into(),
            name: "workflows".into()
        }]
    );
    let error = error.expect("error");
    assert!(
        error
            .message
            .contains("arguments of tool call call_9 (workflows) are not valid JSON"),
        "{error}"
    );
}

#[tokio::test]
async fn error_inside_the_stream_is_reported() {
    let body = "data: {\"error\":{\"message\":\"The model produced invalid content.\",\"type\":\"invalid_request_error\"}}\n\n";
    let server = MockServer::start(vec![MockResponse::sse(body)]).await;
    let (_, error) = collect(provider(&server).stream(request(), CancellationToken::new())).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Api);
    assert_eq!(
        error.message,
        "invalid_request_error: The model produced invalid content."
    );
    assert!(!error.retryable);
}

#[tokio::test]
async fn abort_mid_stream_stops_promptly() {
    let server =
        MockServer::start(vec![MockResponse::sse(fixture("openai_partial.sse")).hang()]).await;
    let cancel = CancellationToken::new();
    let mut stream = provider(&server).stream(request(), cancel.clone());
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("first chunk");
    assert!(
        matches!(first, Some(Ok(ModelChunk::TextDelta(_)))),
        "{first:?}"
    );
    let cancelled_at = Instant::now();
    cancel.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(2), collect(stream))
        .await
        .expect("ends after cancel");
    assert_eq!(rest, (vec![], None));
    assert!(cancelled_at.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn openai_compatible_from_config_with_reasoning() {
    let server = MockServer::start(vec![MockResponse::sse(fixture(
        "openai_compatible_reasoning.sse",
    ))])
    .await;
    // The model name contains a colon too (an Ollama tag).
    let spec = format!("openai-compatible:{}/v1:qwen3:8b", server.base);
    let provider = provider_from_config_with_env(Some(&spec), |_| None)
        .await
        .expect("provider");
    assert_eq!(
        (provider.provider(), provider.model()),
        ("openai-compatible", "qwen3:8b")
    );
    let (chunks, error) = collect(provider.stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(reasoning_of(&chunks), "The user greets me.");
    assert_eq!(text_of(&chunks), "Hi there!");
    assert_eq!(
        chunks.last(),
        Some(&ModelChunk::Finish {
            reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 11,
                output_tokens: 19
            }
        })
    );
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.body["model"], json!("qwen3:8b"));
    assert!(
        r.headers.get("authorization").is_none(),
        "no key configured, none sent"
    );
}

#[tokio::test]
async fn compatible_server_closing_without_done_after_finish_reason() {
    let server = MockServer::start(vec![MockResponse::sse(fixture(
        "vllm_reasoning_no_done.sse",
    ))])
    .await;
    let spec = format!("openai-compatible:{}/v1:deepseek-r1", server.base);
    let provider = provider_from_config_with_env(Some(&spec), |k| {
        (k == "OPENAI_COMPATIBLE_API_KEY").then(|| "local-key".to_string())
    })
    .await
    .expect("provider");
    let (chunks, error) = collect(provider.stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(reasoning_of(&chunks), "Thinking.");
    assert_eq!(text_of(&chunks), "Done.");
    assert!(matches!(
        chunks.last(),
        Some(ModelChunk::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));
    let r = &server.requests()[0];
    assert_eq!(
        r.headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some("Bearer local-key")
    );
}

#[tokio::test]
async fn unreachable_server_is_a_retryable_connection_error() {
    // Bind then drop a listener: the port is (almost certainly) closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let mut config = OpenAiConfig::compatible(format!("http://127.0.0.1:{port}/v1"), "m", None);
    config.retry = fast_retry();
    let provider = OpenAiProvider::new(config).expect("provider");
    let (_, error) = collect(provider.stream(request(), CancellationToken::new())).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Connection);
    assert!(error.retryable);
    assert_eq!(error.provider, "openai-compatible");
}
