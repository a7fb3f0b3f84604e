//! A local server speaking OpenAI's chat-completions wire format (tool
//! calls included) and a small weather API, for AI node tests. The "model"
//! decides from what it is sent, so a test passes only when the engine sent
//! the right conversation: it calls `Get_Weather`, then `Lookup_Customer`,
//! then answers from both tool results; asked what came before, it answers
//! from the history it was given. Every request is recorded. A request with
//! `stream: true` is answered as chat-completions SSE chunks (the text in
//! several deltas; "in pieces" in the question spaces them 300 ms apart, so a
//! client can see them arrive one by one).

use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use serde_json::{json, Value};

#[derive(Clone, Default)]
pub struct Recorded {
    pub completions: Arc<Mutex<Vec<Value>>>,
    pub weather: Arc<Mutex<Vec<String>>>,
}

pub struct FakeOpenAi {
    pub base: String,
    pub recorded: Recorded,
}

impl FakeOpenAi {
    pub fn completions(&self) -> Vec<Value> {
        self.recorded.completions.lock().unwrap().clone()
    }
    pub fn weather_calls(&self) -> Vec<String> {
        self.recorded.weather.lock().unwrap().clone()
    }
}

pub fn start() -> FakeOpenAi {
    let recorded = Recorded::default();
    let state = recorded.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let app = axum::Router::new()
                .route("/v1/chat/completions", post(completions))
                .route("/weather", get(weather))
                .with_state(state);
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    FakeOpenAi { base: format!("http://{}", rx.recv().unwrap()), recorded }
}

async fn weather(State(s): State<Recorded>, Query(q): Query<std::collections::HashMap<String, String>>) -> Json<Value> {
    let city = q.get("city").cloned().unwrap_or_default();
    s.weather.lock().unwrap().push(city.clone());
    Json(json!({"city": city, "temperature": "18°C", "sky": "sunny"}))
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

async fn completions(State(s): State<Recorded>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    s.completions.lock().unwrap().push(body.clone());
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer sk-test") {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}))).into_response();
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tools: Vec<String> = body["tools"].as_array().into_iter().flatten().filter_map(|t| t.pointer("/function/name").and_then(Value::as_str).map(str::to_owned)).collect();
    let users: Vec<String> = messages.iter().filter(|m| m["role"] == "user").filter_map(|m| m["content"].as_str().map(str::to_owned)).collect();
    let question = users.last().cloned().unwrap_or_default();
    let observations: Vec<String> = messages.iter().filter(|m| m["role"] == "tool").filter_map(|m| m["content"].as_str().map(str::to_owned)).collect();
    let has = |t: &str| tools.iter().any(|x| x == t);
    let system = messages.first().filter(|m| m["role"] == "system").and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned();
    let (content, calls): (Value, Vec<Value>) = if system.contains("Please classify the text") {
        // Text Classifier: categories from the words; "garbled" answers badly first
        if question.contains("garbled") {
            (json!("I think it is about billing."), vec![])
        } else {
            let billing = question.contains("refund") || question.contains("invoice");
            let technical = question.contains("crash") || question.contains("error");
            (json!(format!("```json\n{{\"Billing\": {billing}, \"Technical\": {technical}, \"fallback\": {}}}\n```", !billing && !technical)), vec![])
        }
    } else if question.starts_with("Instructions:") {
        // LangChain's output fixing prompt: a valid answer this time
        if question.contains("Billing") {
            (json!("{\"Billing\": true, \"Technical\": false, \"fallback\": false}"), vec![])
        } else {
            (json!("{\"name\": \"Ada Lovelace\", \"born\": \"1815-12-10\"}"), vec![])
        }
    } else if system.contains("expert extraction algorithm") {
        if question.contains("broken") {
            (json!("Ada, born in December 1815"), vec![])
        } else {
            (json!("```json\n{\"name\": \"Ada Lovelace\", \"born\": \"1815-12-10\"}\n```"), vec![])
        }
    } else if question.contains("slow") {
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        (json!("late"), vec![])
    } else if question.contains("loop forever") && has("calculator") {
        (Value::Null, vec![tool_call(&format!("call_{}", observations.len()), "calculator", json!({"input": "1 + 1"}))])
    } else if question.contains("weather") {
        match observations.len() {
            0 if has("Get_Weather") => (json!("Checking the weather."), vec![tool_call("call_w", "Get_Weather", json!({"city": "Paris"}))]),
            1 if has("Lookup_Customer") => (Value::Null, vec![tool_call("call_c", "Lookup_Customer", json!({"customerId": "C42"}))]),
            _ => (json!(format!("Weather: {} | Customer: {}", observations.first().cloned().unwrap_or_default(), observations.get(1).cloned().unwrap_or_default())), vec![]),
        }
    } else if question.contains("calculate") && has("calculator") {
        match observations.first() {
            None => (Value::Null, vec![tool_call("call_k", "calculator", json!({"input": "2 + 3 * 4"}))]),
            Some(r) => (json!(format!("```json\n{{\"result\": {r}, \"unit\": \"none\"}}\n```")), vec![]),
        }
    } else if question.contains("code") && has("Shout") {
        match observations.first() {
            None => (Value::Null, vec![tool_call("call_s", "Shout", json!({"input": "hello"}))]),
            Some(r) => (json!(format!("The tool said {r}")), vec![]),
        }
    } else if question.to_lowercase().contains("what did i ask") {
        let earlier: Vec<&String> = users.iter().take(users.len().saturating_sub(1)).collect();
        match earlier.first() {
            Some(first) => (json!(format!("Earlier you asked: {first}")), vec![]),
            None => (json!("You have not asked anything before."), vec![]),
        }
    } else {
        (json!(format!("You said: {question}")), vec![])
    };
    let prompt = 10 * messages.len() as u64;
    if body["stream"] == true {
        return sse(content, calls, prompt, question.contains("in pieces"));
    }
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}
    }))
    .into_response()
}

/// The answer as chat-completions stream chunks: the text in pieces of a
/// few words, each tool call's arguments in two halves, the finish reason,
/// the usage, `[DONE]`.
fn sse(content: Value, calls: Vec<Value>, prompt: u64, slowly: bool) -> Response {
    let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
    let text = content.as_str().unwrap_or_default().to_owned();
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    for piece in words.chunks(3) {
        events.push(chunk(json!({"content": piece.concat()}), Value::Null));
    }
    for (i, c) in calls.iter().enumerate() {
        let args = c["function"]["arguments"].as_str().unwrap_or("{}").to_owned();
        let mut mid = args.len() / 2;
        while !args.is_char_boundary(mid) {
            mid += 1;
        }
        let (a, b) = args.split_at(mid);
        events.push(chunk(json!({"tool_calls": [{"index": i, "id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": a}}]}), Value::Null));
        events.push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}), Value::Null));
    }
    events.push(chunk(json!({}), json!(if calls.is_empty() { "stop" } else { "tool_calls" })));
    events.push(json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 7, "total_tokens": prompt + 7}}));
    let body = async_stream_body(events, slowly);
    Response::builder().status(200).header("content-type", "text/event-stream").body(body).unwrap()
}

fn async_stream_body(events: Vec<Value>, slowly: bool) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::convert::Infallible>>(64);
    tokio::spawn(async move {
        for e in events {
            if slowly {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            }
            if tx.send(Ok(format!("data: {e}\n\n"))).await.is_err() {
                return;
            }
        }
        let _ = tx.send(Ok("data: [DONE]\n\n".to_owned())).await;
    });
    Body::from_stream(tokio_stream_from(rx))
}

fn tokio_stream_from(mut rx: tokio::sync::mpsc::Receiver<Result<String, std::convert::Infallible>>) -> impl futures::Stream<Item = Result<String, std::convert::Infallible>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
