//! Bedrock: the ConverseStream event mapping and the request conversion,
//! with constructed SDK types (no network). The live path is untested here.

use models::bedrock::{
    code_status, converse_messages, document_to_json, json_to_document, ConverseStreamState,
};
use models::{AssistantPart, FinishReason, Message, ModelChunk, ModelErrorKind, Usage};
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ContentBlockDelta, ContentBlockDeltaEvent, ContentBlockStart,
    ContentBlockStartEvent, ContentBlockStopEvent, ConversationRole, ConverseStreamMetadataEvent,
    ConverseStreamOutput as Ev, MessageStartEvent, MessageStopEvent, ReasoningContentBlockDelta,
    StopReason, TokenUsage, ToolUseBlockDelta, ToolUseBlockStart,
};
use serde_json::json;

fn delta(index: i32, delta: ContentBlockDelta) -> Ev {
    Ev::ContentBlockDelta(
        ContentBlockDeltaEvent::builder()
            .content_block_index(index)
            .delta(delta)
            .build()
            .expect("delta"),
    )
}

fn tool_start(index: i32, id: &str, name: &str) -> Ev {
    let start = ToolUseBlockStart::builder()
        .tool_use_id(id)
        .name(name)
        .build()
        .expect("tool start");
    Ev::ContentBlockStart(
        ContentBlockStartEvent::builder()
            .content_block_index(index)
            .start(ContentBlockStart::ToolUse(start))
            .build()
            .expect("start"),
    )
}

fn stop(index: i32) -> Ev {
    Ev::ContentBlockStop(
        ContentBlockStopEvent::builder()
            .content_block_index(index)
            .build()
            .expect("stop"),
    )
}

fn tool_delta(index: i32, input: &str) -> Ev {
    delta(
        index,
        ContentBlockDelta::ToolUse(
            ToolUseBlockDelta::builder()
                .input(input)
                .build()
                .expect("tool delta"),
        ),
    )
}

fn run(
    events: Vec<Ev>,
) -> (
    Vec<ModelChunk>,
    Result<Vec<ModelChunk>, models::ModelError>,
) {
    let mut state = ConverseStreamState::default();
    let mut chunks = Vec::new();
    for event in events {
        chunks.extend(state.map_event(event).expect("maps"));
    }
    (chunks, state.finish())
}

#[test]
fn reasoning_text_and_tool_use_map_to_chunks() {
    let events = vec![
        Ev::MessageStart(
            MessageStartEvent::builder()
                .role(ConversationRole::Assistant)
                .build()
                .expect("start"),
        ),
        delta(
            0,
            ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text(
                "Need the ".into(),
            )),
        ),
        delta(
            0,
            ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Text("list.".into())),
        ),
        delta(
            0,
            ContentBlockDelta::ReasoningContent(ReasoningContentBlockDelta::Signature(
                "sig-abc".into(),
            )),
        ),
        stop(0),
        delta(1, ContentBlockDelta::Text("Let me ".into())),
        delta(1, ContentBlockDelta::Text("check.".into())),
        stop(1),
        tool_start(2, "tooluse_Ab12", "workflows"),
        tool_delta(2, "{\"action\":"),
        tool_delta(2, " \"list\", \"limit\": 3}"),
        stop(2),
        Ev::MessageStop(
            MessageStopEvent::builder()
                .stop_reason(StopReason::ToolUse)
                .build()
                .expect("stop"),
        ),
        Ev::Metadata(
            ConverseStreamMetadataEvent::builder()
                .usage(
                    TokenUsage::builder()
                        .input_tokens(300)
                        .output_tokens(42)
                        .total_tokens(342)
                        .build()
                        .expect("usage"),
                )
                .build(),
        ),
    ];
    let (chunks, finish) = run(events);
    assert_eq!(
        chunks,
        vec![
            ModelChunk::ReasoningDelta("Need the ".into()),
            ModelChunk::ReasoningDelta("list.".into()),
            ModelChunk::ReasoningSignature("sig-abc".into()),
            ModelChunk::TextDelta("Let me ".into()),
            ModelChunk::TextDelta("check.".into()),
            ModelChunk::ToolInputStart {
                id: "tooluse_Ab12".into(),
                name: "workflows".into()
            },
            ModelChunk::ToolCall {
                id: "tooluse_Ab12".into(),
                name: "workflows".into(),
                args: json!({"action": "list", "limit": 3})
            },
        ]
    );
    assert_eq!(
        finish.expect("finish"),
        vec![ModelChunk::Finish {
            reason: FinishReason::ToolCalls,
            usage: Usage {
                input_tokens: 300,
                output_tokens: 42
            }
        }]
    );
}

#[test]
fn tool_use_without_input_gets_empty_object() {
    let (chunks, _) = run(vec![tool_start(0, "t1", "list-credentials"), stop(0)]);
    assert_eq!(
        chunks[1],
        ModelChunk::ToolCall {
            id: "t1".into(),
            name: "list-credentials".into(),
            args: json!({})
        }
    );
}

#[test]
fn malformed_tool_input_is_an_error() {
    let mut state = ConverseStreamState::default();
    state
        .map_event(tool_start(0, "t1", "workflows"))
        .expect("start");
    state
        .map_event(tool_delta(0, "{\"action\": "))
        .expect("delta");
    let error = state.map_event(stop(0)).expect_err("invalid JSON");
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("not valid JSON"), "{error}");
}

#[test]
fn stream_cut_before_message_stop_is_retryable_error() {
    let (chunks, finish) = run(vec![delta(0, ContentBlockDelta::Text("partial".into()))]);
    assert_eq!(chunks, vec![ModelChunk::TextDelta("partial".into())]);
    let error = finish.expect_err("no messageStop");
    assert!(error.retryable);
}

#[test]
fn stop_reasons_map() {
    for (reason, expected) in [
        (StopReason::EndTurn, FinishReason::Stop),
        (StopReason::MaxTokens, FinishReason::Length),
        (StopReason::GuardrailIntervened, FinishReason::ContentFilter),
    ] {
        let (_, finish) = run(vec![Ev::MessageStop(
            MessageStopEvent::builder()
                .stop_reason(reason)
                .build()
                .expect("stop"),
        )]);
        assert_eq!(
            finish.expect("finish"),
            vec![ModelChunk::Finish {
                reason: expected,
                usage: Usage::default()
            }]
        );
    }
}

#[test]
fn history_converts_with_alternating_roles() {
    let history = vec![
        Message::user("List"),
        Message::Assistant {
            parts: vec![
                AssistantPart::Reasoning {
                    text: "r".into(),
                    signature: Some("s".into()),
                },
                AssistantPart::ToolCall {
                    id: "t1".into(),
                    name: "workflows".into(),
                    args: json!({"n": -1, "f": 1.5, "ok": true}),
                },
                AssistantPart::ToolCall {
                    id: "t2".into(),
                    name: "executions".into(),
                    args: json!({}),
                },
            ],
        },
        Message::ToolResult {
            tool_call_id: "t1".into(),
            tool_name: "workflows".into(),
            content: "[]".into(),
            is_error: false,
        },
        Message::ToolResult {
            tool_call_id: "t2".into(),
            tool_name: "executions".into(),
            content: "denied".into(),
            is_error: true,
        },
    ];
    let messages = converse_messages(&history).expect("converts");
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1].role, ConversationRole::Assistant);
    assert_eq!(messages[1].content.len(), 3);
    match &messages[1].content[1] {
        ContentBlock::ToolUse(tool) => assert_eq!(
            document_to_json(&tool.input),
            json!({"n": -1, "f": 1.5, "ok": true})
        ),
        other => panic!("expected tool use, got {other:?}"),
    }
    assert_eq!(messages[2].role, ConversationRole::User);
    assert_eq!(
        messages[2].content.len(),
        2,
        "both tool results in one user message"
    );
}

#[test]
fn document_round_trip_and_error_codes() {
    let value = json!({"a": [1, -2, 3.25, "x", null, {"b": false}]});
    assert_eq!(document_to_json(&json_to_document(&value)), value);
    assert_eq!(code_status("ThrottlingException"), Some(429));
    assert_eq!(code_status("ValidationException"), Some(400));
    assert_eq!(code_status("Whatever"), None);
}
