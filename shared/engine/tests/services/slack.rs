//! Slack Web API (https://api.slack.com/web): bearer token, JSON or query
//! arguments, `{ok:false,error}` answers with HTTP 200, cursor pagination
//! (`response_metadata.next_cursor`), 429 with `Retry-After`.

use std::sync::atomic::{AtomicUsize, Ordering};

use engine::ExecutionStatus;
use serde_json::{json, Value};

use crate::support::{engine, output, run_node, serve, Reply, Seen, Server};

const TOKEN: &str = "xoxb-test-token";

fn slack() -> Server {
    let rate_limited = AtomicUsize::new(0);
    serve(move |r: &Seen| {
        if r.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return Reply::json(200, json!({"ok": false, "error": "invalid_auth"}));
        }
        let args = if r.method == "POST" { r.json() } else { json!(r.query) };
        let method = r.path.trim_start_matches("/api/");
        let ts = "1700000000.000100";
        match method {
            "chat.postMessage" | "chat.postEphemeral" => {
                if args.get("channel").is_none() {
                    return Reply::json(200, json!({"ok": false, "error": "channel_not_found"}));
                }
                if args.get("text").is_none() && args.get("blocks").is_none() && args.get("attachments").is_none() {
                    return Reply::json(200, json!({"ok": false, "error": "no_text"}));
                }
                let message = json!({"type": "message", "user": "U0BOT", "bot_id": "B01", "text": args["text"], "ts": ts});
                Reply::json(200, json!({"ok": true, "channel": args["channel"], "ts": ts, "message": message}))
            }
            "chat.update" => Reply::json(200, json!({"ok": true, "channel": args["channel"], "ts": args["ts"], "text": args["text"], "message": {"text": args["text"]}})),
            "chat.delete" => Reply::json(200, json!({"ok": true, "channel": args["channel"], "ts": args["ts"]})),
            "conversations.create" => Reply::json(200, json!({"ok": true, "channel": {"id": "C0NEW", "name": args["name"], "is_private": args["is_private"]}})),
            "conversations.list" | "conversations.history" => {
                let (key, all): (&str, Vec<Value>) = if method == "conversations.list" {
                    ("channels", (1..=5).map(|n| json!({"id": format!("C{n}"), "name": format!("channel-{n}")})).collect())
                } else {
                    ("messages", (1..=3).map(|n| json!({"type": "message", "text": format!("m{n}"), "ts": format!("170000000{n}.000000")})).collect())
                };
                let limit: usize = args["limit"].as_str().and_then(|l| l.parse().ok()).unwrap_or(100);
                let start: usize = args["cursor"].as_str().and_then(|c| c.strip_prefix("next:")).and_then(|c| c.parse().ok()).unwrap_or(0);
                let page: Vec<Value> = all.iter().skip(start).take(limit).cloned().collect();
                let next = if start + limit < all.len() { format!("next:{}", start + limit) } else { String::new() };
                Reply::json(200, json!({"ok": true, key: page, "response_metadata": {"next_cursor": next}}))
            }
            "users.info" => match args["user"].as_str() {
                Some("URATE") if rate_limited.fetch_add(1, Ordering::SeqCst) == 0 => {
                    let mut r = Reply::json(429, json!({"ok": false, "error": "ratelimited"}));
                    r.headers.push(("retry-after", "1".into()));
                    r
                }
                Some(id @ ("U1" | "URATE")) => Reply::json(200, json!({"ok": true, "user": {"id": id, "name": "ada", "real_name": "Ada Lovelace"}})),
                _ => Reply::json(200, json!({"ok": false, "error": "user_not_found"})),
            },
            "users.profile.get" => Reply::json(200, json!({"ok": true, "profile": {"real_name": "Bot"}})),
            _ => Reply::json(200, json!({"ok": false, "error": "unknown_method"})),
        }
    })
}

fn slack_node(parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.slack", "typeVersion": 2.3, "parameters": parameters, "credentials": {"slackApi": {"id": "s1", "name": "Slack bot"}}})
}

fn setup() -> (Server, engine::Engine) {
    let server = slack();
    let engine = engine(&[("slackApi", json!({"accessToken": TOKEN}))], &[("https://slack.com", server.base.as_str())]);
    (server, engine)
}

fn channel(id: &str) -> Value {
    json!({"__rl": true, "mode": "id", "value": id})
}

#[test]
fn post_message_sends_json_with_the_bot_token_and_returns_the_message() {
    let (server, engine) = setup();
    let st = run_node(
        &engine,
        slack_node(json!({
            "select": "channel",
            "channelId": channel("C123"),
            "text": "=Hello {{ $json.name }}",
            "otherOptions": {
                "thread_ts": {"replyValues": {"thread_ts": "1699999999.000001", "reply_broadcast": true}},
                "unfurl_links": true,
                "botProfile": {"imageValues": {"profilePhotoType": "emoji", "icon_emoji": ":robot_face:"}},
                "includeLinkToWorkflow": false
            }
        })),
        json!([{"name": "Ada"}, {"name": "Grace"}]),
    );
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let seen = server.take();
    assert_eq!(seen.len(), 2, "one request per item");
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/chat.postMessage"));
    assert_eq!(r.header("authorization"), Some("Bearer xoxb-test-token"));
    assert_eq!(r.header("content-type"), Some("application/json; charset=utf-8"));
    assert_eq!(
        r.json(),
        json!({"channel": "C123", "text": "Hello Ada", "thread_ts": "1699999999.000001", "reply_broadcast": true, "unfurl_links": true, "icon_emoji": ":robot_face:"})
    );
    assert_eq!(seen[1].json()["text"], "Hello Grace");
    // n8n's Slack v2: the whole answer, `ts` renamed to `message_timestamp`.
    let out = output(&st);
    assert_eq!(out.len(), 2);
    assert_eq!(
        out[0],
        json!({"ok": true, "channel": "C123", "message": {"type": "message", "user": "U0BOT", "bot_id": "B01", "text": "Hello Ada", "ts": "1700000000.000100"}, "message_timestamp": "1700000000.000100"})
    );
}

#[test]
fn post_to_a_user_by_name_blocks_and_ephemeral_messages() {
    let (server, engine) = setup();
    let by_name = json!({"__rl": true, "mode": "username", "value": "ada"});
    let st = run_node(&engine, slack_node(json!({"select": "user", "user": by_name, "messageType": "block", "blocksUi": "{\"blocks\":[{\"type\":\"divider\"}]}", "text": "fallback"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take()[0].json(), json!({"channel": "@ada", "text": "fallback", "blocks": [{"type": "divider"}]}));

    let ephemeral = json!({"ephemeralValues": {"user": {"__rl": true, "mode": "id", "value": "U1"}, "ephemeral": true}});
    let st = run_node(&engine, slack_node(json!({"select": "channel", "channelId": channel("C1"), "text": "psst", "otherOptions": {"ephemeral": ephemeral}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.path, "/api/chat.postEphemeral");
    assert_eq!(r.json(), json!({"channel": "C1", "text": "psst", "user": "U1"}));
}

#[test]
fn update_and_delete_a_message() {
    let (server, engine) = setup();
    let st = run_node(&engine, slack_node(json!({"operation": "update", "channelId": channel("C1"), "ts": 1700000000.0001, "text": "edited", "updateFields": {"link_names": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!(r.path, "/api/chat.update");
    assert_eq!(r.json(), json!({"channel": "C1", "ts": "1700000000.0001", "text": "edited", "link_names": true}));
    assert_eq!(output(&st)[0]["message_timestamp"], "1700000000.0001");

    let st = run_node(&engine, slack_node(json!({"operation": "delete", "select": "channel", "channelId": channel("C1"), "timestamp": "1700000000.000100"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/chat.delete"));
    assert_eq!(r.json(), json!({"channel": "C1", "ts": "1700000000.000100"}));
    assert_eq!(output(&st), vec![json!({"ok": true, "channel": "C1", "message_timestamp": "1700000000.000100"})]);
}

#[test]
fn channel_list_follows_cursors_for_return_all_and_stops_at_the_limit_otherwise() {
    let (server, engine) = setup();
    let st = run_node(&engine, slack_node(json!({"resource": "channel", "operation": "getAll", "returnAll": true, "filters": {"types": ["public_channel", "private_channel"], "excludeArchived": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let names: Vec<Value> = output(&st).iter().map(|c| c["id"].clone()).collect();
    assert_eq!(names, ["C1", "C2", "C3", "C4", "C5"].map(Value::from).to_vec());
    let seen = server.take();
    assert_eq!(seen.len(), 1, "100 a page: five channels fit in one");
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].query.get("limit").map(String::as_str), Some("100"));
    assert_eq!(seen[0].query.get("types").map(String::as_str), Some("public_channel,private_channel"));
    assert_eq!(seen[0].query.get("exclude_archived").map(String::as_str), Some("true"));

    let st = run_node(&engine, slack_node(json!({"resource": "channel", "operation": "getAll", "limit": 2})), json!([{}]));
    assert_eq!(output(&st).len(), 2);
    let seen = server.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].query.get("limit").map(String::as_str), Some("2"));
    assert!(seen[0].body.is_empty(), "a GET carries no body");
}

#[test]
fn channel_history_pages_with_the_cursor_and_converts_dates() {
    let (server, engine) = setup();
    // The server pages by the limit it is given: 1 a page through `limit`…
    let st = run_node(&engine, slack_node(json!({"resource": "channel", "operation": "history", "channelId": channel("C9"), "limit": 1, "filters": {"oldest": "2023-11-14T22:13:20Z", "inclusive": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![json!({"type": "message", "text": "m1", "ts": "1700000001.000000"})]);
    let r = &server.take()[0];
    assert_eq!(r.path, "/api/conversations.history");
    assert_eq!(r.query.get("channel").map(String::as_str), Some("C9"));
    assert_eq!(r.query.get("oldest").map(String::as_str), Some("1700000000"));
    assert_eq!(r.query.get("inclusive").map(String::as_str), Some("true"));
}

#[test]
fn return_all_walks_every_page() {
    // A server that pages two at a time whatever the limit says.
    let server = serve(|r: &Seen| {
        let start: usize = r.query.get("cursor").and_then(|c| c.parse().ok()).unwrap_or(0);
        let page: Vec<Value> = (start..(start + 2).min(5)).map(|n| json!({"id": format!("C{n}")})).collect();
        let next = if start + 2 < 5 { (start + 2).to_string() } else { String::new() };
        Reply::json(200, json!({"ok": true, "channels": page, "response_metadata": {"next_cursor": next}}))
    });
    let engine = engine(&[("slackApi", json!({"accessToken": TOKEN}))], &[("https://slack.com", server.base.as_str())]);
    let st = run_node(&engine, slack_node(json!({"resource": "channel", "operation": "getAll", "returnAll": true})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st).len(), 5);
    let cursors: Vec<Option<String>> = server.take().iter().map(|r| r.query.get("cursor").cloned()).collect();
    assert_eq!(cursors, vec![None, Some("2".into()), Some("4".into())]);
}

#[test]
fn user_info_and_a_rate_limited_request_retried_after_retry_after() {
    let (server, engine) = setup();
    let st = run_node(&engine, slack_node(json!({"resource": "user", "user": {"__rl": true, "mode": "id", "value": "U1"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(output(&st), vec![json!({"id": "U1", "name": "ada", "real_name": "Ada Lovelace"})]);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/api/users.info"));
    assert_eq!(r.query.get("user").map(String::as_str), Some("U1"));

    let started = std::time::Instant::now();
    let st = run_node(&engine, slack_node(json!({"resource": "user", "user": {"__rl": true, "mode": "id", "value": "URATE"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    assert_eq!(server.take().len(), 2, "the 429, then the retry");
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "waited the Retry-After second");
    assert_eq!(output(&st)[0]["id"], "URATE");
}

#[test]
fn ok_false_answers_are_node_errors_or_error_items() {
    let (_server, engine) = setup();
    let st = run_node(&engine, slack_node(json!({"resource": "user", "user": {"__rl": true, "mode": "id", "value": "UNOPE"}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert_eq!(st.error.unwrap().message, "Slack error response: \"user_not_found\"");

    let mut node = slack_node(json!({"resource": "user", "user": {"__rl": true, "mode": "id", "value": "UNOPE"}}));
    node["onError"] = json!("continueRegularOutput");
    let st = run_node(&engine, node, json!([{}, {}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let out = output(&st);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["error"]["message"], "Slack error response: \"user_not_found\"");

    // The error output, as HTTP Request's: failed items leave on output 1.
    let mut node = slack_node(json!({"resource": "user", "user": "={{ $json.u }}"}));
    node["onError"] = json!("continueErrorOutput");
    let st = run_node(&engine, node, json!([{"u": "U1"}, {"u": "UNOPE"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let ok: Vec<Value> = st.node_output("Service", 0).unwrap().iter().map(|i| Value::clone(&i.json)).collect();
    let failed: Vec<Value> = st.node_output("Service", 1).unwrap().iter().map(|i| Value::clone(&i.json)).collect();
    assert_eq!((ok.len(), ok[0]["id"].as_str()), (1, Some("U1")));
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["error"]["message"], "Slack error response: \"user_not_found\"");

    let bad = crate::support::engine(&[("slackApi", json!({"accessToken": "xoxb-wrong"}))], &[("https://slack.com", _server.base.as_str())]);
    let st = run_node(&bad, slack_node(json!({"select": "channel", "channelId": channel("C1"), "text": "x"})), json!([{}]));
    assert_eq!(st.error.unwrap().message, "Slack error response: \"invalid_auth\"");
}

#[test]
fn the_credential_test_calls_users_profile_get_and_reads_the_body() {
    let (server, engine) = setup();
    let ok = engine.test_credential("slackApi", &json!({"id": "s1"}));
    assert!(ok.success, "{}", ok.message);
    let r = &server.take()[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/api/users.profile.get"));
    assert_eq!(r.header("authorization"), Some("Bearer xoxb-test-token"));

    let bad = crate::support::engine(&[("slackApi", json!({"accessToken": "xoxb-wrong"}))], &[("https://slack.com", server.base.as_str())]);
    let refused = bad.test_credential("slackApi", &json!({"id": "s1"}));
    assert!(!refused.success);
    assert_eq!(refused.message, "Invalid access token");
}
