//! Discord API v10 (https://discord.com/developers/docs): webhooks execute
//! with `?wait=true` answering the message (204 without), bot messages with
//! `Authorization: Bot <token>`, 429 with `retry_after` and `Retry-After`.

use std::sync::atomic::{AtomicUsize, Ordering};

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

fn discord() -> Server {
    let limited = AtomicUsize::new(0);
    serve(move |r: &Seen| {
        if let Some(rest) = r.path.strip_prefix("/api/webhooks/") {
            if rest != "111/hook-token" {
                return Reply::json(401, json!({"message": "Invalid Webhook Token", "code": 50027}));
            }
            if r.method == "GET" {
                return Reply::json(200, json!({"id": "111", "type": 1, "name": "deploys"}));
            }
            let body = if r.header("content-type").is_some_and(|c| c.starts_with("multipart/")) { json!({"content": "(multipart)"}) } else { r.json() };
            if r.query.get("wait").map(String::as_str) == Some("true") {
                return Reply::json(200, json!({"id": "900", "channel_id": "55", "content": body["content"], "webhook_id": "111"}));
            }
            return Reply::empty(204);
        }
        if r.header("authorization") != Some("Bot bot-token") {
            return Reply::json(401, json!({"message": "401: Unauthorized", "code": 0}));
        }
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/api/v10/users/@me") => Reply::json(200, json!({"id": "1", "username": "n8n-bot", "bot": true})),
            ("POST", "/api/v10/channels/55/messages") => {
                if limited.fetch_add(1, Ordering::SeqCst) == 0 {
                    let mut reply = Reply::json(429, json!({"message": "You are being rate limited.", "retry_after": 0.2, "global": false}));
                    reply.headers.push(("retry-after", "0.2".into()));
                    return reply;
                }
                let b = r.json();
                Reply::json(200, json!({"id": "901", "channel_id": "55", "content": b["content"], "tts": b.get("tts").cloned().unwrap_or(json!(false)), "embeds": b.get("embeds").cloned().unwrap_or(json!([]))}))
            }
            _ => Reply::json(404, json!({"message": "Unknown Channel", "code": 10003})),
        }
    })
}

fn node(parameters: Value, credentials: Value) -> Value {
    json!({"type": "n8n-nodes-base.discord", "typeVersion": 2, "parameters": parameters, "credentials": credentials})
}

fn setup() -> (Server, engine::Engine) {
    let server = discord();
    let engine = engine(
        &[("discordBotApi", json!({"botToken": "bot-token"})), ("discordWebhookApi", json!({"webhookUri": "https://discord.com/api/webhooks/111/hook-token"}))],
        &[("https://discord.com", server.base.as_str())],
    );
    (server, engine)
}

#[test]
fn webhook_message_posts_to_the_webhook_url_with_options() {
    let (server, engine) = setup();
    let hook = json!({"discordWebhookApi": {"id": "d1", "name": "Deploys"}});
    let st = run_node(&engine, node(json!({"authentication": "webhook", "content": "Deployed {{ 1 + 1 }}", "options": {"username": "CI", "tts": false}}), hook.clone()), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/webhooks/111/hook-token"));
    assert!(r.query.is_empty());
    assert_eq!(r.json(), json!({"content": "Deployed {{ 1 + 1 }}", "username": "CI", "tts": false}));
    // 204 No Content: n8n's `{ success: true }`.
    assert_eq!(output(&st), vec![json!({"success": true})]);

    let st = run_node(&engine, node(json!({"authentication": "webhook", "content": "=Deployed {{ 1 + 1 }}", "options": {"wait": true, "flags": ["SUPPRESS_EMBEDS"]}}), hook), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.query.get("wait").map(String::as_str), Some("true"));
    assert_eq!(r.json(), json!({"content": "Deployed 2", "flags": 4}));
    assert_eq!(output(&st)[0]["id"], "900");
}

#[test]
fn bot_message_to_a_channel_with_embeds_retried_after_a_429() {
    let (server, engine) = setup();
    let params = json!({
        "resource": "message",
        "guildId": {"__rl": true, "mode": "id", "value": "77"},
        "channelId": {"__rl": true, "mode": "url", "value": "https://discord.com/channels/77/55"},
        "content": "Release ready",
        "options": {"message_reference": "800", "tts": true},
        "embeds": {"values": [{"inputMethod": "fields", "title": "v1.2", "color": "#ff0000", "url": "https://example.com/r"}]}
    });
    let st = run_node(&engine, node(params, json!({"discordBotApi": {"id": "b1", "name": "Bot"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.len(), 2, "429, then the retry");
    let r = &seen[1];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/v10/channels/55/messages"));
    assert_eq!(r.header("authorization"), Some("Bot bot-token"));
    assert_eq!(
        r.json(),
        json!({"content": "Release ready", "message_reference": {"message_id": "800", "guild_id": "77"}, "tts": true, "embeds": [{"color": 16711680, "title": "v1.2", "url": "https://example.com/r"}]})
    );
    assert_eq!(output(&st)[0]["id"], "901");
}

#[test]
fn what_the_runtime_cannot_do_yet_says_so() {
    let (server, engine) = setup();
    let bot = json!({"discordBotApi": {"id": "b1", "name": "Bot"}});
    let st = run_node(&engine, node(json!({"resource": "message", "sendTo": "user", "userId": {"__rl": true, "mode": "id", "value": "9"}, "content": "hi"}), bot.clone()), json!([{}]));
    assert!(st.error.unwrap().message.contains("Direct messages to a Discord user are not supported yet"));
    let st = run_node(&engine, node(json!({"resource": "channel", "operation": "create"}), bot), json!([{}]));
    assert!(st.error.unwrap().message.contains("channel operations are not supported yet"));
    assert!(server.take().is_empty(), "nothing was sent");
}

#[test]
fn credential_tests_for_bot_and_webhook() {
    let (server, engine) = setup();
    assert!(engine.test_credential("discordBotApi", &json!({"id": "b1"})).success);
    assert!(engine.test_credential("discordWebhookApi", &json!({"id": "d1"})).success);
    let paths: Vec<String> = server.take().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/api/v10/users/@me", "/api/webhooks/111/hook-token"]);
    let wrong = crate::support::engine(&[("discordWebhookApi", json!({"webhookUri": "https://discord.com/api/webhooks/111/bad"}))], &[("https://discord.com", server.base.as_str())]);
    let refused = wrong.test_credential("discordWebhookApi", &json!({"id": "d1"}));
    assert!(!refused.success && !refused.message.contains("/bad"), "{}", refused.message);
}
