//! `ask-user`: suspends the run for one or more human decisions
//! (`confirmation-request` with `inputType: "questions"`). The result is
//! `{answered: false}` when the user dismisses it, else `{answered: true,
//! answers}` with the question text added to every answer.

use super::{Decision, Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use protocol::events::{ConfirmationRequest, InputType, Question, Severity};
use serde_json::{json, Map, Value};

pub struct AskUser;

fn questions(args: &Value) -> Vec<Question> {
    args.get("questions")
        .and_then(|q| serde_json::from_value::<Vec<Question>>(q.clone()).ok())
        .unwrap_or_default()
}

impl Tool for AskUser {
    fn name(&self) -> &'static str {
        "ask-user"
    }

    fn description(&self) -> &'static str {
        "Suspend the run for one or more human decisions. Question type is single, multi or text."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "minLength": 1, "description": "Stable id of the question"},
                            "question": {"type": "string", "minLength": 1, "description": "The question text"},
                            "type": {"type": "string", "enum": ["single", "multi", "text"]},
                            "options": {"type": "array", "items": {"type": "string"}, "description": "Choices for single/multi"}
                        },
                        "required": ["id", "question", "type"],
                        "additionalProperties": false
                    }
                },
                "introMessage": {"type": "string", "description": "Text shown above the first question"}
            },
            "required": ["questions"],
            "additionalProperties": false
        })
    }

    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let qs = questions(args);
        let mut req = ConfirmationRequest::approval("", "", self.name(), Map::new(), Severity::Info, "");
        req.message = qs.first().map(|q| q.question.clone()).unwrap_or_default();
        req.input_type = Some(InputType::Questions);
        req.questions = Some(qs);
        req.intro_message = args.get("introMessage").and_then(Value::as_str).map(str::to_owned);
        Box::pin(async move { Ok(Some(Gate::question(req, Vec::new()))) })
    }

    fn allow_key(&self, _args: &Value) -> Option<String> {
        None
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, _args: Value) -> BoxFuture<'a, ToolOutcome> {
        // Only reached through `resume`: the gate always asks.
        Box::pin(async { ToolOutcome::Failed("ask-user needs the user's answer".into()) })
    }

    fn resume<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: Value, decision: Decision) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            if !decision.approved {
                return ToolOutcome::Done(json!({"answered": false}));
            }
            let qs = questions(&args);
            let answers = normalise_answers(&qs, decision.answers.as_ref(), decision.user_input.as_deref());
            ToolOutcome::Done(json!({"answered": true, "answers": answers}))
        })
    }
}

/// Answers as the client sent them (an array of `{questionId, …}` or an
/// object keyed by question id), each with its question's text added.
fn normalise_answers(qs: &[Question], answers: Option<&Value>, user_input: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    let question_text = |id: &str| qs.iter().find(|q| q.id == id).map(|q| q.question.clone());
    match answers {
        Some(Value::Array(items)) => {
            for item in items {
                let mut a = match item {
                    Value::Object(m) => m.clone(),
                    other => Map::from_iter([("answer".to_owned(), other.clone())]),
                };
                let id = a.get("questionId").or_else(|| a.get("id")).and_then(Value::as_str).map(str::to_owned);
                if let Some(text) = id.as_deref().and_then(question_text) {
                    a.insert("question".into(), Value::String(text));
                }
                out.push(Value::Object(a));
            }
        }
        Some(Value::Object(map)) => {
            for (id, answer) in map {
                let mut a = Map::new();
                a.insert("questionId".into(), Value::String(id.clone()));
                if let Some(text) = question_text(id) {
                    a.insert("question".into(), Value::String(text));
                }
                a.insert("answer".into(), answer.clone());
                out.push(Value::Object(a));
            }
        }
        _ => {}
    }
    if out.is_empty() {
        if let (Some(text), Some(q)) = (user_input, qs.first()) {
            out.push(json!({"questionId": q.id, "question": q.question, "answer": text}));
        }
    }
    out
}
