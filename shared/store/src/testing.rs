//! Test support: every test gets its own set of tables and queues in moto
//! (a unique prefix), so tests run in parallel against one moto_server
//! without seeing each other's data.

use crate::aws::AwsClients;
use crate::config::Config;

/// Where tests find moto: `AWS_ENDPOINT_URL`, set by `infra/local/test.sh`.
pub fn moto_endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!("AWS_ENDPOINT_URL is not set: run the tests through ./infra/local/test.sh, which starts moto_server")
    })
}

/// A provisioned, isolated environment.
pub struct TestEnv {
    pub config: Config,
    pub clients: AwsClients,
    pub prefix: String,
}

impl TestEnv {
    pub async fn new() -> TestEnv {
        let endpoint = moto_endpoint();
        let mut config = Config::from_lookup(|name| match name {
            "AWS_REGION" => Some("us-east-1".into()),
            "AWS_ENDPOINT_URL" => Some(endpoint.clone()),
            "INSTANCE_AI_LOCAL_DATA_KEY" => Some("dGVzdC1vbmx5LWRhdGEta2V5LTMyLWJ5dGVzLWxvbmc=".into()),
            _ => None,
        })
        .expect("test configuration");
        ensure_test_credentials();
        let clients = AwsClients::new(&config).await;
        let prefix = format!("t{}", uuid::Uuid::new_v4().simple());
        crate::provision::provision(&clients, &mut config, &prefix).await.expect("provision tables and queues in moto");
        TestEnv { config, clients, prefix }
    }
}

/// moto accepts any credentials, but the SDK refuses to sign without some.
pub fn ensure_test_credentials() {
    if std::env::var("AWS_ACCESS_KEY_ID").is_err() {
        // SAFETY (of intent): tests set these before any client is built.
        unsafe {
            std::env::set_var("AWS_ACCESS_KEY_ID", "testing");
            std::env::set_var("AWS_SECRET_ACCESS_KEY", "testing");
        }
    }
}

/// Makes the local moto (`infra/local/moto_server.py`) fail the next `count`
/// `operation` requests (`PutItem`, `TransactWriteItems`) on `table` with a
/// transaction conflict, as DynamoDB does while a transaction holds an item:
/// moto never does so by itself.
pub fn inject_transaction_conflicts(table: &str, operation: &str, count: u32) {
    arm_fault(serde_json::json!({ "table": table, "operation": operation, "count": count }));
}

/// Makes the local moto answer the next `operation` request on `table`
/// `delay` late, with what the table holds by then (a slow read, for races).
pub fn delay_next_request(table: &str, operation: &str, delay: std::time::Duration) {
    arm_fault(serde_json::json!({ "table": table, "operation": operation, "count": 1, "delay_ms": delay.as_millis() as u64 }));
}

fn arm_fault(spec: serde_json::Value) {
    use std::io::{Read, Write};
    let endpoint = moto_endpoint();
    let authority = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let body = spec.to_string();
    let mut conn = std::net::TcpStream::connect(authority).expect("connect to moto");
    write!(
        conn,
        "POST /_faults HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send to moto");
    let mut answer = String::new();
    conn.read_to_string(&mut answer).expect("read moto's answer");
    assert!(answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"), "moto_server.py did not arm the fault: {answer}");
}
