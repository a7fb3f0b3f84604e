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
        let clients = AwsClients::new(&config);
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

/// Every item of every table of the deployment as text, per table with its
/// item count: attribute values rendered, binary ones also inflated where
/// they hold DEFLATE data (run data, checkpoints, histories), so a grep sees
/// what the store really holds (the planted-secret tests).
pub async fn stored_text(clients: &AwsClients, config: &Config) -> std::collections::BTreeMap<&'static str, (usize, String)> {
    use aws_sdk_dynamodb::types::AttributeValue;
    fn render(v: &AttributeValue, out: &mut String) {
        match v {
            AttributeValue::S(s) | AttributeValue::N(s) => out.push_str(s),
            AttributeValue::B(b) => {
                let bytes = b.as_ref();
                out.push_str(&String::from_utf8_lossy(bytes));
                if let Ok(inflated) = crate::data::db::decompress(bytes) {
                    out.push(' ');
                    out.push_str(&String::from_utf8_lossy(&inflated));
                }
            }
            AttributeValue::Ss(l) | AttributeValue::Ns(l) => out.push_str(&l.join(" ")),
            AttributeValue::Bs(l) => l.iter().for_each(|b| render(&AttributeValue::B(b.clone()), out)),
            AttributeValue::L(l) => l.iter().for_each(|x| {
                render(x, out);
                out.push(' ');
            }),
            AttributeValue::M(m) => m.iter().for_each(|(k, x)| {
                out.push_str(k);
                out.push('=');
                render(x, out);
                out.push(' ');
            }),
            AttributeValue::Bool(b) => out.push_str(&b.to_string()),
            _ => {}
        }
    }
    let mut all = std::collections::BTreeMap::new();
    for def in crate::deployment::TABLES {
        let table = config.table(def.id).expect("a provisioned table").to_owned();
        let (mut count, mut text) = (0, String::new());
        let mut start = None;
        loop {
            let page = clients.dynamo.scan().table_name(&table).set_exclusive_start_key(start).send().await.expect("scan");
            for item in page.items.unwrap_or_default() {
                count += 1;
                render(&AttributeValue::M(item), &mut text);
                text.push('\n');
            }
            start = page.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        all.insert(def.env, (count, text));
    }
    all
}
