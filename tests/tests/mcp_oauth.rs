//! MCP clients connecting with OAuth 2.1: the discovery documents and the
//! authorization server's refusals over raw HTTP, then the official MCP
//! Python SDK's `OAuthClientProvider` through the whole flow
//! (`tests/mcp/oauth_e2e.py`, run with `$INSTANCE_AI_PYTHON`). Two local
//! clouds share one store, as two instances behind one account could: a
//! token issued for one must not work at the other.

mod mcp_common;

use local_cloud::{start, Options, Running};
use serde_json::{json, Value};
use store::testing::TestEnv;

const ALICE_KEY: &str = "alice-key-for-oauth-tests";

async fn clouds() -> (Running, Running) {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.bootstrap_keys = vec![("alice".into(), ALICE_KEY.into())];
    let opts = |config| Options { config, prefix: env.prefix.clone(), port: 0, run_consumers: false, run_schedules: false };
    let a = start(opts(config.clone())).await.expect("local cloud starts");
    let b = start(opts(config)).await.expect("a second local cloud on the same store starts");
    (a, b)
}

/// One JSON-RPC request to `/mcp` with Alice's API key.
async fn with_api_key(base: &str, method: &str, params: Value) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .header("authorization", format!("Bearer {ALICE_KEY}"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn discovery_registration_and_authorize_refusals_over_http() {
    let (cloud, other) = clouds().await;
    let base = cloud.base_url();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    // The 401 points at the resource metadata, in both its forms.
    let r = http.post(format!("{base}/mcp")).json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let www = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(www.starts_with(&format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"")), "{www}");
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let prm: Value = http.get(format!("{base}{path}")).send().await.unwrap().json().await.unwrap();
        assert_eq!(prm["resource"], format!("{base}/mcp"), "{path}");
        assert_eq!(prm["authorization_servers"], json!([base]), "{path}");
    }
    let asm: Value = http.get(format!("{base}/.well-known/oauth-authorization-server")).send().await.unwrap().json().await.unwrap();
    assert_eq!(asm["issuer"], base);
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["registration_endpoint"], format!("{base}/register"));
    assert_eq!(asm["revocation_endpoint"], format!("{base}/revoke"));

    // Registration: https or loopback redirect URIs only, OAuth's error form.
    let r = http.post(format!("{base}/register")).json(&json!({"redirect_uris": ["http://evil.example/cb"]})).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"], "invalid_redirect_uri", "{e}");
    let reg: Value = http
        .post(format!("{base}/register"))
        .json(&json!({"redirect_uris": ["http://127.0.0.1:4000/cb"], "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"], "client_name": "raw"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = reg["client_id"].as_str().expect("a client id").to_owned();
    assert!(reg.get("client_secret").is_none(), "a public client gets no secret: {reg}");

    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    let authorize = |extra: &[(&str, &str)]| {
        let mut q: Vec<(&str, &str)> = vec![
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", "http://127.0.0.1:4000/cb"),
            ("state", "st-1"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
        ];
        for (k, v) in extra {
            q.retain(|(qk, _)| qk != k);
            q.push((k, v));
        }
        http.get(format!("{base}/authorize")).query(&q).send()
    };
    // A registered client and redirect URI: the consent page.
    let r = authorize(&[]).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["set-cookie"].to_str().unwrap().contains("HttpOnly"));
    // Errors once the redirect URI is trusted go back to the client, with state.
    let other_resource = format!("{}/mcp", other.base_url());
    for (extra, code) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("resource", other_resource.as_str())], "invalid_target"),
        (vec![("scope", "admin")], "invalid_scope"),
        (vec![("response_type", "token")], "unsupported_response_type"),
    ] {
        let r = authorize(&extra).await.unwrap();
        assert_eq!(r.status(), 303, "{extra:?}");
        let to = reqwest::Url::parse(r.headers()["location"].to_str().unwrap()).unwrap();
        let q: std::collections::HashMap<_, _> = to.query_pairs().into_owned().collect();
        assert_eq!((q["error"].as_str(), q["state"].as_str(), q["iss"].as_str()), (code, "st-1", base.as_str()), "{extra:?}: {to}");
    }
    // An unregistered redirect URI is never redirected to.
    let r = authorize(&[("redirect_uri", "https://evil.example/cb")]).await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.headers().get("location").is_none());
    // /token speaks OAuth's error form.
    let r = http.post(format!("{base}/token")).form(&[("grant_type", "password"), ("client_id", &client_id)]).send().await.unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "unsupported_grant_type");
    let r = http
        .post(format!("{base}/token"))
        .form(&[("grant_type", "authorization_code"), ("client_id", &client_id), ("code", "iac_forged"), ("code_verifier", &"a".repeat(43)), ("redirect_uri", "http://127.0.0.1:4000/cb")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.json::<Value>().await.unwrap()["error"], "invalid_grant");

    // API keys keep working on /mcp, with every tool.
    let r = with_api_key(&base, "tools/list", json!({})).await;
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 27);
    cloud.shutdown().await;
    other.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_sdk_oauth_client_end_to_end() {
    let (cloud, other) = clouds().await;
    let summary = mcp_common::run_client_script(
        "oauth_e2e.py",
        &[
            ("MCP_URL", format!("{}/mcp", cloud.base_url())),
            ("OTHER_MCP_URL", format!("{}/mcp", other.base_url())),
            ("MCP_KEY", ALICE_KEY.into()),
        ],
    )
    .await;
    println!("requests per first connection: {}", summary["firstConnection"]);

    // The refused write left nothing behind (seen through the API key's MCP door).
    let r = with_api_key(&cloud.base_url(), "tools/call", json!({"name": "search_data_tables", "arguments": {"query": "read token"}})).await;
    assert_eq!(r["result"]["structuredContent"]["count"], 0, "{r}");
    let r = with_api_key(&cloud.base_url(), "tools/call", json!({"name": "search_data_tables", "arguments": {"query": "oauth e2e"}})).await;
    assert_eq!(r["result"]["structuredContent"]["count"], 1, "the write-scope token's table is there: {r}");
    cloud.shutdown().await;
    other.shutdown().await;
}
