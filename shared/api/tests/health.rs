//! `/healthz` says ok only when DynamoDB and SQS answer.

use api::App;
use store::testing::TestEnv;

fn get(path: &str) -> lambda_http::Request {
    let event = serde_json::json!({
        "version": "2.0", "routeKey": format!("GET {path}"), "rawPath": path, "rawQueryString": "",
        "headers": {}, "isBase64Encoded": false,
        "requestContext": {"accountId": "1", "apiId": "a", "domainName": "d", "domainPrefix": "d",
            "http": {"method": "GET", "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "t"},
            "requestId": "r", "routeKey": format!("GET {path}"), "stage": "$default", "time": "t", "timeEpoch": 0},
    });
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

#[tokio::test]
async fn healthy_when_both_services_answer() {
    let env = TestEnv::new().await;
    let app = App::new(env.config.clone(), env.clients.clone());
    let resp = api::handlers::health::handle(&app, get("/healthz")).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn unavailable_when_a_service_does_not_answer() {
    let env = TestEnv::new().await;
    // Same tables, but every AWS call goes to a port where nothing listens.
    let mut config = env.config.clone();
    config.endpoint_url = Some("http://127.0.0.1:9".into());
    let clients = store::AwsClients::new(&config);
    let app = App::new(config, clients);
    let resp = api::handlers::health::handle(&app, get("/healthz")).await;
    assert_eq!(resp.status(), 503);
    let body: serde_json::Value = serde_json::from_slice(resp.body()).unwrap();
    assert_eq!(body["error"]["code"], "unavailable");
}
