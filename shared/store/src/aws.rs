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

/// The SDK clients' HTTPS client: hyper + rustls on ring, trusting Mozilla's
/// root certificates compiled in (`webpki-root-certs`, the set the live
/// feed's `wss://` trusts). Named here rather than through the SDK's
/// `default-https-client`, which would link a second crypto library (aws-lc)
/// into every function; and not on the system's roots, whose loading (a
/// directory of CA files) was most of a function's cold start. Every SDK
/// config gets it from [`sdk_config`]; Bedrock's client is built the same way.
///
/// Every SDK client validates its HTTP client once when it is constructed,
/// by building a connector it throws away; the smithy client would parse the
/// whole trust store for it, about a millisecond per client at init. Without
/// settings (that probe) a plain connector is returned: there are no CA files
/// to load early, and a request's TLS connector is built (and cached by
/// settings) at the first request.
pub fn https_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider, TlsContext};
    use aws_smithy_http_client::{Builder, Connector};
    // The roots' PEM text is made once per process, however many clients (a
    // Bedrock node builds one per run) ask for an HTTPS client.
    static TLS: std::sync::LazyLock<TlsContext> = std::sync::LazyLock::new(|| {
        TlsContext::builder().with_trust_store(compiled_in_roots()).build().expect("a TLS context of valid roots")
    });
    let tls = TLS.clone();
    Builder::new().build_with_connector_fn(move |settings, components| match settings {
        None => Connector::builder().build_http(),
        Some(settings) => {
            let mut connector = Connector::builder().connector_settings(settings.clone());
            if let Some(components) = components {
                connector.set_sleep_impl(components.sleep_impl());
            }
            connector.tls_provider(Provider::Rustls(CryptoMode::Ring)).tls_context(tls.clone()).build()
        }
    })
}

/// Mozilla's roots, as the trust store the SDK's HTTPS client takes.
fn compiled_in_roots() -> aws_smithy_http_client::tls::TrustStore {
    aws_smithy_http_client::tls::TrustStore::empty().with_native_roots(false).with_pem_certificate(roots_pem())
}

/// The trust store takes PEM only: Mozilla's DER roots, base64 armoured.
fn roots_pem() -> String {
    use base64::Engine as _;
    let mut pem = String::with_capacity(webpki_root_certs::TLS_SERVER_ROOT_CERTS.len() * 2600);
    for cert in webpki_root_certs::TLS_SERVER_ROOT_CERTS {
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        pem.push_str(&base64::engine::general_purpose::STANDARD.encode(cert.as_ref()));
        pem.push_str("\n-----END CERTIFICATE-----\n");
    }
    pem
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

#[cfg(test)]
mod tests {
    /// The trust store's PEM decodes to exactly Mozilla's roots, each one a
    /// trust anchor rustls accepts (the SDK client panics on one it rejects).
    #[test]
    fn compiled_in_roots_are_mozillas_roots_and_each_parses_as_an_anchor() {
        use rustls::pki_types::{pem::PemObject, CertificateDer};
        let text = super::roots_pem();
        let ders: Vec<CertificateDer> = CertificateDer::pem_slice_iter(text.as_bytes()).collect::<Result<_, _>>().expect("valid PEM");
        assert_eq!(ders.len(), webpki_root_certs::TLS_SERVER_ROOT_CERTS.len());
        assert!(ders.len() > 100);
        let mut roots = rustls::RootCertStore::empty();
        for (der, expected) in ders.into_iter().zip(webpki_root_certs::TLS_SERVER_ROOT_CERTS) {
            assert_eq!(der.as_ref(), expected.as_ref());
            roots.add(der).expect("a trust anchor");
        }
    }
}
