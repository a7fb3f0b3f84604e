//! AWS SDK clients, built once per process (at Lambda init) and shared by
//! every invocation. `AWS_ENDPOINT_URL` is honoured by the SDK itself, so the
//! same code talks to moto locally and to AWS in production.

use crate::config::Config;
use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;

#[derive(Clone, Debug)]
pub struct AwsClients {
    pub dynamo: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    /// `None` when `WS_MANAGEMENT_URL` is not configured.
    pub connections: Option<aws_sdk_apigatewaymanagement::Client>,
    /// EventBridge Scheduler (schedules of published workflows).
    pub scheduler: aws_sdk_scheduler::Client,
}

/// The SDK clients' HTTPS client: HTTP/1.1 and rustls on ring, Mozilla's
/// roots compiled in (`sdk_http`, which says why it is not the SDK's own).
/// Every SDK config gets it from [`sdk_config`]; Bedrock's client is built
/// the same way.
pub fn https_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    sdk_http::https_client()
}

/// The SDK configuration every client of this process is built from: the
/// region, the endpoint override (moto locally), [`https_client`], and the
/// credentials Lambda puts in the environment (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; `infra/local/env.sh` sets
/// moto's). Built directly rather than by `aws_config`'s loader, whose
/// default chain (profile files, SSO, web identity, container and instance
/// metadata) costs a cold start about 2 ms and links STS, for providers a
/// Lambda function never reaches. Retries, timeouts, the sleep and the
/// identity cache are the SDK clients' defaults for the behaviour version.
pub fn sdk_config(config: &Config) -> SdkConfig {
    let builder = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(config.region.clone()))
        .credentials_provider(SharedCredentialsProvider::new(EnvironmentVariableCredentialsProvider::new()))
        .http_client(https_client());
    match &config.endpoint_url {
        Some(url) => builder.endpoint_url(url),
        None => builder,
    }
    .build()
}

impl AwsClients {
    pub fn new(config: &Config) -> Self {
        let shared = sdk_config(config);
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
