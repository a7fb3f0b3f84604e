//! AWS SDK clients, built once per process (at Lambda init) and shared by
//! every invocation. `AWS_ENDPOINT_URL` is honoured by the SDK itself, so the
//! same code talks to moto locally and to AWS in production.

use crate::config::Config;
use aws_config::{BehaviorVersion, Region};

#[derive(Clone, Debug)]
pub struct AwsClients {
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    /// `None` when `WS_MANAGEMENT_URL` is not configured.
    pub connections: Option<aws_sdk_apigatewaymanagement::Client>,
    /// EventBridge Scheduler (schedules of published workflows).
    pub scheduler: aws_sdk_scheduler::Client,
}

/// The SDK clients' HTTPS client: hyper + rustls on ring, the system's
/// roots (as the SDK's default client). Named here rather than through the
/// SDK's `default-https-client`, which would link a second crypto library
/// (aws-lc) into every function; every SDK config gets it from [`loader`].
pub fn https_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    aws_smithy_http_client::Builder::new().tls_provider(Provider::Rustls(CryptoMode::Ring)).build_https()
}

/// The shared SDK configuration loader for this process: region, endpoint
/// override (moto locally), [`https_client`].
pub fn loader(config: &Config) -> aws_config::ConfigLoader {
    let loader = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new(config.region.clone()))
        .http_client(https_client());
    match &config.endpoint_url {
        Some(url) => loader.endpoint_url(url),
        None => loader,
    }
}

impl AwsClients {
    pub async fn new(config: &Config) -> Self {
        let shared = loader(config).load().await;
        // The management API lives at the WebSocket API's own URL, never at
        // the generic AWS endpoint (moto has no usable @connections).
        let connections = config.ws_management_url.as_ref().map(|url| {
            let conf = aws_sdk_apigatewaymanagement::config::Builder::from(&shared).endpoint_url(url).build();
            aws_sdk_apigatewaymanagement::Client::from_conf(conf)
        });
        AwsClients {
            dynamo: aws_sdk_dynamodb::Client::new(&shared),
            sqs: aws_sdk_sqs::Client::new(&shared),
            scheduler: aws_sdk_scheduler::Client::new(&shared),
            connections,
        }
    }
}
