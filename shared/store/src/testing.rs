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
