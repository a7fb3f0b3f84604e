use std::time::{Duration, Instant};

use models::anthropic::{AnthropicConfig, AnthropicProvider};
use models::{
    AssistantPart, CancellationToken, FinishReason, Message, ModelChunk, ModelErrorKind,
    ModelProvider, ModelRequest, ToolDefinition, TurnBuilder, Usage,
};
use futures::StreamExt;
use serde_json::json;

use crate::common::*;

fn provider(server: &MockServer) -> AnthropicProvider {
    let mut config = AnthropicConfig::new("sk-ant-test", "claude-sonnet-4-5");
    config.base_url = server.base.clone();
    config.retry = fast_retry();
    AnthropicProvider::new(config).expect("provider")
}

fn request() -> ModelRequest {
    ModelRequest {
        system: "You are the Instance AI.".into(),
        messages: vec![Message::user("Show my active workflows")],
        tools: vec![ToolDefinition {
            name: "workflows".into(),
            description: "List and manage workflows".into(),
            input_schema: json!({"type": "object", "properties": {"action": {"type": "string"}}}),
        }],
    }
}

#[tokio::test]
async fn thinking_text_and_tool_calls_split_across_chunks() {
    // Once with LF line ends, once with CRLF: both are valid SSE.
    for body in [
        fixture("anthropic_thinking_tool_use.sse"),
        fixture("anthropic_thinking_tool_use.sse").replace('\n', "\r\n"),
    ] {
        let server = MockServer::start(vec![MockResponse::sse(body)]).await;
        let (chunks, error) =
            collect(provider(&server).stream(request(), CancellationToken::new())).await;
        assert!(error.is_none(), "{error:?}");

        assert_eq!(
            reasoning_of(&chunks),
            "The user wants their active workflows. I'll call the workflows tool with a filter."
        );
        assert_eq!(
            text_of(&chunks),
            "Let me look up your workflows — “active” only."
        );
        let starts: Vec<_> = chunks
            .iter()
            .filter(|c| matches!(c, ModelChunk::ToolInputStart { .. }))
            .collect();
        assert_eq!(starts.len(), 2);
        let mut turn = TurnBuilder::new();
        chunks.iter().for_each(|c| turn.push(c));
        assert_eq!(
            turn.tool_calls(),
            vec![
                (
                    "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                    "workflows",
                    &json!({"action": "list", "filter": {"active": true}})
                ),
                (
                    "toolu_01PZ2mVq5AyK3r1fTmUy8nXe",
                    "executions",
                    &json!({"status": "error", "limit": 5})
                ),
            ]
        );
        // The start of a call precedes its complete form.
        let start_at = chunks.iter().position(
            |c| matches!(c, ModelChunk::ToolInputStart { name, .. } if name == "workflows"),
        );
        let call_at = chunks
            .iter()
            .position(|c| matches!(c, ModelChunk::ToolCall { name, .. } if name == "workflows"));
        assert!(start_at < call_at);
        assert_eq!(
            chunks.last(),
            Some(&ModelChunk::Finish {
                reason: FinishReason::ToolCalls,
                usage: Usage {
                    input_tokens: 472,
                    output_tokens: 89
                }
            })
        );
        match &turn.parts()[0] {
            AssistantPart::Reasoning { signature, .. } => {
                assert!(signature.as_deref().is_some_and(|s| s.starts_with("EqQB")))
            }
            other => panic!("expected reasoning first, got {other:?}"),
        }

        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let r = &requests[0];
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(
            r.headers.get("x-api-key").and_then(|v| v.to_str().ok()),
            Some("sk-ant-test")
        );
        assert_eq!(
            r.headers
                .get("anthropic-version")
                .and_then(|v| v.to_str().ok()),
            Some("2023-06-01")
        );
        assert_eq!(r.body["stream"], json!(true));
        assert_eq!(r.body["model"], json!("claude-sonnet-4-5"));
        assert_eq!(
            r.body["system"],
            json!([{"type": "text", "text": "You are the Instance AI.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(r.body["tools"][0]["input_schema"]["type"], json!("object"));
        assert_eq!(
            r.body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(r.body.get("thinking").is_none());
    }
}

#[tokio::test]
async fn history_is_converted_and_tool_results_grouped() {
    let server = MockServer::start(vec![MockResponse::sse(fixture("anthropic_text.sse"))]).await;
    let mut req = request();
    req.messages.push(Message::Assistant {
        parts: vec![
            AssistantPart::Reasoning {
                text: "think".into(),
                signature: Some("sig1".into()),
            },
            AssistantPart::Reasoning {
                text: "unsigned (dropped)".into(),
                signature: None,
            },
            AssistantPart::Text {
                text: "Looking.".into(),
            },
            AssistantPart::ToolCall {
                id: "toolu_1".into(),
                name: "workflows".into(),
                args: json!({"action": "list"}),
            },
            AssistantPart::ToolCall {
                id: "toolu_2".into(),
                name: "executions".into(),
                args: json!({}),
            },
        ],
    });
    req.messages.push(Message::ToolResult {
        tool_call_id: "toolu_1".into(),
        tool_name: "workflows".into(),
        content: "[]".into(),
        is_error: false,
    });
    req.messages.push(Message::ToolResult {
        tool_call_id: "toolu_2".into(),
        tool_name: "executions".into(),
        content: "boom".into(),
        is_error: true,
    });
    let (chunks, error) = collect(provider(&server).stream(req, CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&chunks), "You have 3 active workflows.");
    assert!(matches!(
        chunks.last(),
        Some(ModelChunk::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));

    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Show my active workflows"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "think", "signature": "sig1"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "workflows", "input": {"action": "list"}},
                {"type": "tool_use", "id": "toolu_2", "name": "executions", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[]", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": true,
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = MockServer::start(vec![
        MockResponse::status(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#)
            .header("retry-after", "0.3"),
        MockResponse::sse(fixture("anthropic_text.sse")),
    ])
    .await;
    let started = Instant::now();
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&chunks), "You have 3 active workflows.");
    assert_eq!(server.requests().len(), 2);
    // retry-after (300 ms) was honoured rather than the 10 ms backoff.
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn server_error_is_retried_then_reported() {
    let body = r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
    let server = MockServer::start(vec![MockResponse::status(500, body); 3]).await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert!(chunks.is_empty());
    let error = error.expect("error");
    assert_eq!(error.provider, "anthropic");
    assert_eq!(error.status_code, Some(500));
    assert!(error.retryable);
    assert!(error.message.contains("Internal server error"), "{error}");
    // First attempt + 2 retries (fast_retry).
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn client_error_is_not_retried() {
    let body =
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
    let server = MockServer::start(vec![MockResponse::status(401, body)]).await;
    let (_, error) = collect(provider(&server).stream(request(), CancellationToken::new())).await;
    let error = error.expect("error");
    assert_eq!(error.status_code, Some(401));
    assert!(!error.retryable);
    assert_eq!(error.message, "HTTP 401: invalid x-api-key");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn overloaded_event_before_output_is_retried() {
    let server = MockServer::start(vec![
        MockResponse::sse(fixture("anthropic_overloaded.sse")),
        MockResponse::sse(fixture("anthropic_text.sse")),
    ])
    .await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(text_of(&chunks), "You have 3 active workflows.");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_event_that_persists_is_reported() {
    let server = MockServer::start(vec![
        MockResponse::sse(fixture("anthropic_overloaded.sse"));
        3
    ])
    .await;
    let (_, error) = collect(provider(&server).stream(request(), CancellationToken::new())).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Api);
    assert_eq!(error.status_code, Some(529));
    assert_eq!(error.message, "overloaded_error: Overloaded");
}

#[tokio::test]
async fn malformed_chunk_is_a_clear_error() {
    let server =
        MockServer::start(vec![MockResponse::sse(fixture("anthropic_malformed.sse"))]).await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert_eq!(text_of(&chunks), "Hello");
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("malformed stream event"), "{error}");
    assert!(!error.retryable);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_cut_after_output_is_not_retried() {
    let server = MockServer::start(vec![
        MockResponse::sse(fixture("anthropic_partial.sse")),
        MockResponse::sse(fixture("anthropic_text.sse")),
    ])
    .await;
    let (chunks, error) =
        collect(provider(&server).stream(request(), CancellationToken::new())).await;
    assert_eq!(text_of(&chunks), "Working on it");
    let error = error.expect("error");
    assert!(error.message.contains("before message_stop"), "{error}");
    // Retrying would repeat the text already streamed.
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn abort_mid_stream_stops_promptly() {
    let server = MockServer::start(vec![
        MockResponse::sse(fixture("anthropic_partial.sse")).hang()
    ])
    .await;
    let cancel = CancellationToken::new();
    let mut stream = provider(&server).stream(request(), cancel.clone());
    // Read until the first text, then cancel while the server stalls.
    loop {
        match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
            Ok(Some(Ok(ModelChunk::TextDelta(_)))) => break,
            Ok(Some(Ok(_))) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
    let cancelled_at = Instant::now();
    cancel.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(2), collect(stream))
        .await
        .expect("stream ends after cancel");
    assert_eq!(rest, (vec![], None));
    assert!(cancelled_at.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn abort_during_backoff_stops_promptly() {
    let server = MockServer::start(vec![
        MockResponse::status(429, "{}").header("retry-after", "4")
    ])
    .await;
    let cancel = CancellationToken::new();
    let stream = provider(&server).stream(request(), cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let (chunks, error) = tokio::time::timeout(Duration::from_secs(3), collect(stream))
        .await
        .expect("ends");
    assert!(chunks.is_empty() && error.is_none());
    assert!(started.elapsed() < Duration::from_secs(2));
    canceller.await.expect("canceller");
}

#[tokio::test]
async fn thinking_budget_is_sent_and_validated() {
    let server = MockServer::start(vec![MockResponse::sse(fixture("anthropic_text.sse"))]).await;
    let mut config = AnthropicConfig::new("k", "claude-sonnet-4-5");
    config.base_url = server.base.clone();
    config.thinking_budget = Some(2048);
    config.prompt_caching = false;
    let provider = AnthropicProvider::new(config.clone()).expect("provider");
    let (_, error) = collect(provider.stream(request(), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    let body = &server.requests()[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are the Instance AI."}])
    );

    config.thinking_budget = Some(config.max_tokens);
    let error = AnthropicProvider::new(config)
        .err()
        .expect("budget must leave room");
    assert_eq!(error.kind, ModelErrorKind::Config);
}
