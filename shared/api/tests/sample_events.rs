//! Every sample in `events/` (what `cargo lambda invoke --data-file` sends)
//! parses as its function's Lambda event and is handled by that function's
//! handler, against moto.

use api::App;
use aws_lambda_events::apigw::ApiGatewayWebsocketProxyRequest;
use aws_lambda_events::sqs::SqsEvent;
use store::testing::TestEnv;

fn sample(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../events").join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

async fn app() -> App {
    let env = TestEnv::new().await;
    let mut config = env.config.clone();
    config.ws_management_url = Some("http://127.0.0.1:9".into());
    let app = App::new(config, env.clients.clone());
    // The samples carry `Bearer sample-key-alice`.
    app.api_keys.as_ref().unwrap().put(&"alice".into(), "sample-key-alice", "samples").await.unwrap();
    app
}

fn http_request(name: &str) -> lambda_http::Request {
    lambda_http::request::from_str(&sample(name)).unwrap_or_else(|e| panic!("{name}.json is not an API Gateway event: {e}"))
}

#[tokio::test]
async fn there_is_one_sample_per_function() {
    for f in store::deployment::FUNCTIONS {
        sample(f.package);
    }
}

#[tokio::test]
async fn the_health_sample_answers_ok() {
    let app = app().await;
    let resp = api::handlers::health::handle(&app, http_request("health")).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(std::str::from_utf8(resp.body()).unwrap(), r#"{"status":"ok"}"#);
}

#[tokio::test]
async fn http_samples_authenticate_and_reach_their_handlers() {
    let app = app().await;
    let cases: Vec<(&str, lambda_http::Response<lambda_http::Body>)> = vec![
        ("chat", api::handlers::chat::handle(&app, http_request("chat")).await),
        ("confirm", api::handlers::confirm::handle(&app, http_request("confirm")).await),
        ("cancel", api::handlers::cancel::handle(&app, http_request("cancel")).await),
        ("threads", api::handlers::threads::handle(&app, http_request("threads")).await),
        ("mcp", api::handlers::mcp::handle(&app, http_request("mcp")).await),
        ("credentials", api::handlers::credentials::handle(&app, http_request("credentials")).await),
    ];
    for (name, resp) in cases {
        let status = resp.status().as_u16();
        assert!(status != 401 && status != 500, "{name}: {status} {:?}", resp.body());
    }
}

#[tokio::test]
async fn the_webhook_sample_reaches_the_webhook_handler_without_an_api_key() {
    let app = app().await;
    let resp = api::handlers::webhook::handle(&app, http_request("webhook")).await;
    // No workflow listens to POST orders/42 in a fresh environment.
    assert_eq!(resp.status(), 404, "{:?}", resp.body());
    let body = std::str::from_utf8(resp.body().as_ref()).unwrap().to_owned();
    assert!(body.contains("POST orders/42") && body.contains("not registered"), "{body}");
}

#[tokio::test]
async fn the_oauth_sample_answers_authorization_server_metadata_for_its_host() {
    let app = app().await;
    let resp = api::handlers::oauth::handle(&app, http_request("oauth")).await;
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = serde_json::from_slice(resp.body()).unwrap();
    assert_eq!(body["issuer"], "https://abc123.execute-api.us-east-1.amazonaws.com");
    assert_eq!(body["token_endpoint"], "https://abc123.execute-api.us-east-1.amazonaws.com/token");
}

#[tokio::test]
async fn the_gateway_sample_connects_and_records_the_connection() {
    let app = app().await;
    let event: ApiGatewayWebsocketProxyRequest = serde_json::from_str(&sample("gateway")).unwrap();
    let id = event.request_context.connection_id.clone().unwrap();
    let resp = api::handlers::gateway::handle(&app, event).await;
    assert_eq!(resp.status_code, 200);
    let table = app.config.table(store::deployment::TableId::Connections).unwrap();
    let conns = store::connections::Connections::new(app.clients.dynamo.clone(), table);
    assert_eq!(conns.owner(&id.into()).await.unwrap().map(|u| u.0), Some("alice".to_owned()));
}

#[tokio::test]
async fn sqs_samples_get_batch_responses_about_their_own_records() {
    let app = app().await;
    for name in ["step", "executor"] {
        let event: SqsEvent = serde_json::from_str(&sample(name)).unwrap();
        let ids: Vec<String> = event.records.iter().filter_map(|r| r.message_id.clone()).collect();
        let resp = match name {
            "step" => api::handlers::step::handle(&app, event).await,
            _ => api::handlers::executor::handle(&app, event).await,
        };
        for f in &resp.batch_item_failures {
            assert!(ids.contains(&f.item_identifier), "{name}: unknown id {}", f.item_identifier);
        }
    }
}

#[tokio::test]
async fn the_sweep_sample_is_an_eventbridge_event() {
    let app = app().await;
    let event: serde_json::Value = serde_json::from_str(&sample("sweep")).unwrap();
    assert_eq!(event["detail-type"], "Scheduled Event");
    api::handlers::sweep::handle(&app).await.unwrap();
}

#[tokio::test]
async fn the_web_sample_serves_the_page_under_a_strict_csp() {
    let app = app().await;
    let resp = api::handlers::web::handle(&app, http_request("web")).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let csp = resp.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
    let html = std::str::from_utf8(resp.body()).unwrap();
    assert!(html.contains("/assets/app.") && html.contains("type=\"module\""), "{html}");
}
