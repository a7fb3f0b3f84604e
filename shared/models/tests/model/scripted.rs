use std::time::{Duration, Instant};

use models::scripted::ScriptedProvider;
use models::{
    provider_from_config_with_env, AssistantPart, CancellationToken, FinishReason, Message,
    ModelChunk, ModelErrorKind, ModelProvider, ModelRequest, TurnBuilder,
};
use futures::StreamExt;
use serde_json::json;

use crate::common::*;

const SCRIPT: &str = r#"{
  "conversations": {
    "List my workflows": [
      {"reasoning": "The user wants the workflow list.", "toolCalls": [{"name": "workflows", "args": {"action": "list"}}]},
      {"text": "You have 3 workflows: Daily report, Slack alerts and Invoice sync."}
    ],
    "Hi": [
      {"text": "Hello!"}
    ],
    "Slow": [
      {"text": "one two three four five six seven eight", "chunkDelayMs": 200}
    ]
  }
}"#;

fn provider() -> ScriptedProvider {
    ScriptedProvider::from_json(SCRIPT).expect("script")
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        system: "sys".into(),
        messages,
        tools: vec![],
    }
}

#[tokio::test]
async fn first_turn_streams_reasoning_and_tool_calls() {
    let (chunks, error) = collect(provider().stream(
        request(vec![Message::user("List my workflows")]),
        CancellationToken::new(),
    ))
    .await;
    assert!(error.is_none(), "{error:?}");
    let reasoning: Vec<_> = chunks
        .iter()
        .filter(|c| matches!(c, ModelChunk::ReasoningDelta(_)))
        .collect();
    assert!(reasoning.len() >= 3, "{reasoning:?}");
    assert_eq!(reasoning_of(&chunks), "The user wants the workflow list.");
    let tail = &chunks[reasoning.len()..];
    assert_eq!(
        tail,
        &[
            ModelChunk::ToolInputStart {
                id: "scripted_0_0".into(),
                name: "workflows".into()
            },
            ModelChunk::ToolCall {
                id: "scripted_0_0".into(),
                name: "workflows".into(),
                args: json!({"action": "list"})
            },
            ModelChunk::Finish {
                reason: FinishReason::ToolCalls,
                usage: Default::default()
            },
        ]
    );
}

#[tokio::test]
async fn turn_is_chosen_by_assistant_turns_in_history() {
    let p = provider();
    let (first, _) = collect(p.stream(
        request(vec![Message::user("List my workflows")]),
        CancellationToken::new(),
    ))
    .await;
    let mut turn = TurnBuilder::new();
    first.iter().for_each(|c| turn.push(c));
    let history = vec![
        Message::user("List my workflows"),
        turn.into_message(),
        Message::ToolResult {
            tool_call_id: "scripted_0_0".into(),
            tool_name: "workflows".into(),
            content: "[]".into(),
            is_error: false,
        },
    ];
    let (chunks, error) = collect(p.stream(request(history), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    let deltas = chunks
        .iter()
        .filter(|c| matches!(c, ModelChunk::TextDelta(_)))
        .count();
    assert!(deltas >= 3, "text streamed in several chunks: {chunks:?}");
    assert_eq!(
        text_of(&chunks),
        "You have 3 workflows: Daily report, Slack alerts and Invoice sync."
    );
    assert!(matches!(
        chunks.last(),
        Some(ModelChunk::Finish {
            reason: FinishReason::Stop,
            ..
        })
    ));
}

#[tokio::test]
async fn short_text_is_still_chunked() {
    let (chunks, _) =
        collect(provider().stream(request(vec![Message::user("Hi")]), CancellationToken::new()))
            .await;
    let deltas: Vec<_> = chunks
        .iter()
        .filter(|c| matches!(c, ModelChunk::TextDelta(_)))
        .collect();
    assert_eq!(deltas.len(), 3);
    assert_eq!(text_of(&chunks), "Hello!");
}

#[tokio::test]
async fn later_run_in_the_same_thread_uses_its_own_message() {
    // Run 1 ("Hi") is in the history; run 2 starts with "List my workflows".
    let history = vec![
        Message::user("Hi"),
        Message::Assistant {
            parts: vec![AssistantPart::Text {
                text: "Hello!".into(),
            }],
        },
        Message::user("List my workflows"),
    ];
    let (chunks, error) =
        collect(provider().stream(request(history), CancellationToken::new())).await;
    assert!(error.is_none(), "{error:?}");
    // First turn of that conversation; ids count all assistant turns so far.
    assert!(chunks.contains(&ModelChunk::ToolInputStart {
        id: "scripted_1_0".into(),
        name: "workflows".into()
    }));
}

#[tokio::test]
async fn unknown_message_is_a_clear_error() {
    let (chunks, error) = collect(provider().stream(
        request(vec![Message::user("What is the weather?")]),
        CancellationToken::new(),
    ))
    .await;
    assert!(chunks.is_empty());
    let error = error.expect("error");
    assert_eq!(
        (error.provider.as_str(), error.kind, error.retryable),
        ("scripted", ModelErrorKind::Script, false)
    );
    assert!(
        error
            .message
            .contains("no scripted conversation for user message \"What is the weather?\""),
        "{error}"
    );
}

#[tokio::test]
async fn exhausted_script_is_a_clear_error() {
    let history = vec![
        Message::user("Hi"),
        Message::Assistant {
            parts: vec![AssistantPart::Text {
                text: "Hello!".into(),
            }],
        },
    ];
    let (_, error) = collect(provider().stream(request(history), CancellationToken::new())).await;
    let error = error.expect("error");
    assert_eq!(error.kind, ModelErrorKind::Script);
    assert!(error.message.contains("script exhausted"), "{error}");
    assert!(
        error.message.contains("has 1 turns, this is model call 2"),
        "{error}"
    );
}

#[tokio::test]
async fn chunk_delay_and_cancel() {
    let cancel = CancellationToken::new();
    let mut stream = provider().stream(request(vec![Message::user("Slow")]), cancel.clone());
    let started = Instant::now();
    let first = stream.next().await;
    assert!(matches!(first, Some(Ok(ModelChunk::TextDelta(_)))));
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "delay applied before the chunk"
    );
    cancel.cancel();
    let at = Instant::now();
    assert!(stream.next().await.is_none());
    assert!(at.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn from_config_reads_the_script_file() {
    let path = std::env::temp_dir().join(format!("agent-model-script-{}.json", std::process::id()));
    std::fs::write(&path, SCRIPT).expect("write script");
    let spec = format!("scripted:{}", path.display());
    let provider = provider_from_config_with_env(Some(&spec), |_| None)
        .await
        .expect("provider");
    assert_eq!(provider.provider(), "scripted");
    let (chunks, error) =
        collect(provider.stream(request(vec![Message::user("Hi")]), CancellationToken::new()))
            .await;
    assert!(error.is_none());
    assert_eq!(text_of(&chunks), "Hello!");
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn bad_script_files_fail_at_startup() {
    let missing =
        provider_from_config_with_env(Some("scripted:/nonexistent/script.json"), |_| None).await;
    let error = missing.err().expect("error");
    assert_eq!(error.kind, ModelErrorKind::Config);
    assert!(
        error
            .message
            .contains("cannot read model script /nonexistent/script.json"),
        "{error}"
    );

    let typo = ScriptedProvider::from_json(r#"{"conversations": {"Hi": [{"txt": "typo"}]}}"#);
    let error = typo.err().expect("unknown field rejected");
    assert!(error.message.contains("unknown field `txt`"), "{error}");
}
