//! The HTTP API through a real HTTP client: health, authentication, the
//! error shape, routing.

mod common;

use common::{cloud, ALICE_KEY};
use serde_json::Value;

async fn get_json(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body = resp.json::<Value>().await.expect("JSON body");
    (status, body)
}

fn assert_error_shape(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert_eq!(body.as_object().map(|o| o.len()), Some(1), "only the error key: {body}");
}

#[tokio::test]
async fn healthz_answers_ok_without_a_key() {
    let cloud = cloud().await;
    let (status, body) = get_json(reqwest::get(format!("{}/healthz", cloud.base_url())).await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(body, serde_json::json!({"status": "ok"}));
    cloud.shutdown().await;
}

#[tokio::test]
async fn every_other_route_requires_a_valid_bearer_key() {
    let cloud = cloud().await;
    let http = reqwest::Client::new();
    let base = cloud.base_url();
    let routes = [
        ("POST", "/instance-ai/chat/t1"),
        ("POST", "/instance-ai/chat/t1/cancel"),
        ("POST", "/instance-ai/confirm/cr_1"),
        ("GET", "/instance-ai/threads/t1/messages"),
        ("GET", "/instance-ai/threads/t1/status"),
        ("GET", "/instance-ai/events/t1"),
        ("POST", "/mcp"),
    ];
    for (method, path) in routes {
        let url = format!("{base}{path}");
        let m: reqwest::Method = method.parse().unwrap();
        // No header, a wrong key, a malformed header: all 401 in the one JSON shape.
        for auth in [None, Some("Bearer not-a-key"), Some("Basic YWxpY2U6eA==")] {
            let mut req = http.request(m.clone(), &url).body("{}");
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let resp = req.send().await.unwrap();
            let challenge = resp.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
            // `/mcp` also names where OAuth clients discover how to get a token.
            let expected = if path == "/mcp" { format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"") } else { "Bearer".into() };
            assert!(challenge == expected || (path == "/mcp" && challenge.starts_with(&expected)), "{path}: {challenge}");
            let (status, body) = get_json(resp).await;
            assert_eq!(status, 401, "{method} {path} with {auth:?}");
            assert_error_shape(&body, "unauthorized");
        }
        // The right key gets past authentication.
        let resp = http.request(m, &url).bearer_auth(ALICE_KEY).body("{}").send().await.unwrap();
        assert_ne!(resp.status().as_u16(), 401, "{method} {path} with a valid key");
    }
    cloud.shutdown().await;
}

#[tokio::test]
async fn unknown_routes_and_methods_use_the_error_shape() {
    let cloud = cloud().await;
    let http = reqwest::Client::new();
    let (status, body) = get_json(http.get(format!("{}/nope", cloud.base_url())).send().await.unwrap()).await;
    assert_eq!(status, 404);
    assert_error_shape(&body, "not_found");
    let (status, body) = get_json(http.delete(format!("{}/healthz", cloud.base_url())).send().await.unwrap()).await;
    assert_eq!(status, 405);
    assert_error_shape(&body, "method_not_allowed");
    cloud.shutdown().await;
}
