//! The AWS SDK clients' HTTPS client: HTTP/1.1 over hyper-util's pooled
//! client, TLS by rustls on ring, trusting Mozilla's roots compiled in.
//!
//! Why not the SDK's own (`aws-smithy-http-client`): it links HTTP/2 (h2,
//! about half a megabyte in every function) for services that answer us
//! over HTTP/1.1 (DynamoDB, SQS, KMS, Scheduler, API Gateway's management
//! API; Bedrock's streamed answers are chunked HTTP/1.1 event streams), and
//! its `default-https-client` a second crypto library (aws-lc). What is
//! left to write is the adapter below: an SDK request out through hyper,
//! the response back, errors sorted the way the SDK's retry policy reads
//! them, and the connect and read timeouts its settings ask for.
//!
//! One pool per timeout pair, kept for the process (a Lambda's warm
//! invocations reuse its connections). The trust store is Mozilla's roots
//! as parsed trust anchors (`webpki-roots`): nothing is read from disk or
//! parsed at a cold start, and the TLS configuration is made at the first
//! request, not at init.

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

type Pool = Client<hyper_rustls::HttpsConnector<TcpConnector>, SdkBody>;
type Timeouts = (Option<Duration>, Option<Duration>);

/// Idle connections are closed after this long (the SDK's own default).
const POOL_IDLE: Duration = Duration::from_secs(90);

/// The HTTPS client for an SDK config (`SdkConfig::builder().http_client(..)`).
pub fn https_client() -> SharedHttpClient {
    SharedHttpClient::new(SdkHttpClient::default())
}

/// Connectors by their settings' timeouts; each holds its pool.
#[derive(Default)]
struct SdkHttpClient {
    connectors: Mutex<Vec<(Timeouts, SharedHttpConnector)>>,
}

impl fmt::Debug for SdkHttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SdkHttpClient(http/1.1, rustls)")
    }
}

impl HttpClient for SdkHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let key = (settings.connect_timeout(), settings.read_timeout());
        // A poisoned lock only means another thread panicked mid-push: the list is still whole.
        let mut connectors = self.connectors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, c)) = connectors.iter().find(|(k, _)| *k == key) {
            return c.clone();
        }
        let connector = SharedHttpConnector::new(Connector::new(key));
        connectors.push((key, connector.clone()));
        connector
    }
}

/// One pool, with its read timeout (to a response's first byte).
struct Connector {
    pool: Pool,
    read_timeout: Option<Duration>,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("read_timeout", &self.read_timeout)
            .finish_non_exhaustive()
    }
}

impl Connector {
    fn new((connect_timeout, read_timeout): Timeouts) -> Self {
        let mut tcp = TcpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(connect_timeout);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls_config()).clone()) // it sets ALPN on its own copy
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let pool = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(https);
        Connector { pool, read_timeout }
    }
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let request = match request.try_into_http1x() {
            Ok(r) => r,
            Err(e) => return HttpConnectorFuture::ready(Err(ConnectorError::user(e.into()))),
        };
        let sent = self.pool.request(request);
        let read_timeout = self.read_timeout;
        HttpConnectorFuture::new(async move {
            let response = match read_timeout {
                Some(limit) => tokio::time::timeout(limit, sent).await.map_err(|_| {
                    ConnectorError::timeout(
                        format!("no response within the read timeout ({limit:?})").into(),
                    )
                })?,
                None => sent.await,
            }
            .map_err(connector_error)?;
            HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

/// The TLS client configuration of this process: rustls on ring, the one
/// crypto provider every client here uses, and Mozilla's roots compiled in.
/// Made once, at its first use (the first HTTPS connector; the events
/// function's `wss://` live feed takes it too).
pub fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports TLS 1.2 and 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Arc::new(config)
    });
    CONFIG.clone()
}

/// Sorts a failed request the way the SDK's retry classifier reads it: a
/// timeout or a broken connection is retried (a new connection), a request
/// we could not even send is the caller's, anything else is reported.
fn connector_error(e: hyper_util::client::legacy::Error) -> ConnectorError {
    if let Some(io) = find_source::<std::io::Error>(&e) {
        if io.kind() == std::io::ErrorKind::TimedOut {
            return ConnectorError::timeout(e.into());
        }
    }
    if e.is_connect() {
        return ConnectorError::io(e.into());
    }
    match find_source::<hyper::Error>(&e) {
        Some(h) if h.is_user() => ConnectorError::user(e.into()),
        Some(h) if h.is_closed() || h.is_canceled() || h.is_incomplete_message() => {
            ConnectorError::io(e.into())
        }
        _ if find_source::<std::io::Error>(&e).is_some() => ConnectorError::io(e.into()),
        _ => ConnectorError::other(e.into(), None),
    }
}

fn find_source<'a, E: StdError + 'static>(e: &'a (dyn StdError + 'static)) -> Option<&'a E> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(found) = err.downcast_ref::<E>() {
            return Some(found);
        }
        cur = err.source();
    }
    None
}
