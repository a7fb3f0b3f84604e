//! The SDK's HTTPS client through a real SDK client (DynamoDB's) against a
//! local HTTP/1.1 server that answers as DynamoDB does: requests arrive
//! signed and whole, connections are reused, a slow answer is a timeout the
//! SDK retries, a refused connection is a dispatch failure, and an HTTPS
//! server whose certificate Mozilla's roots do not vouch for is refused.

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::list_tables::ListTablesError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// What the server saw.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: Mutex<Vec<(String, Vec<(String, String)>, String)>>,
}

/// A DynamoDB stand-in: every request gets `ListTables`' answer, after `delay`.
async fn server(delay: Duration) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut read = BufReader::new(read);
                loop {
                    let mut line = String::new();
                    if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let request_line = line.trim_end().to_string();
                    let mut headers = Vec::new();
                    loop {
                        let mut h = String::new();
                        read.read_line(&mut h).await.unwrap();
                        let h = h.trim_end();
                        if h.is_empty() {
                            break;
                        }
                        let (k, v) = h.split_once(':').unwrap();
                        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                    }
                    let len = headers
                        .iter()
                        .find(|(k, _)| k == "content-length")
                        .map_or(0, |(_, v)| v.parse().unwrap());
                    let mut body = vec![0; len];
                    read.read_exact(&mut body).await.unwrap();
                    s.requests.lock().unwrap().push((
                        request_line,
                        headers,
                        String::from_utf8(body).unwrap(),
                    ));
                    tokio::time::sleep(delay).await;
                    let answer = r#"{"TableNames":["runs","threads"]}"#;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: r1\r\ncontent-length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                    if write.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, seen)
}

fn client(
    url: &str,
    timeouts: aws_sdk_dynamodb::config::timeout::TimeoutConfig,
) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("eu-west-1"))
        .credentials_provider(Credentials::new(
            "AKIDEXAMPLE",
            "secret",
            None,
            None,
            "test",
        ))
        .endpoint_url(url)
        .http_client(sdk_http::https_client())
        .timeout_config(timeouts)
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

fn no_timeouts() -> aws_sdk_dynamodb::config::timeout::TimeoutConfig {
    aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder().build()
}

/// A ListTables call that must fail, and how.
async fn failed_list_tables(
    url: &str,
    timeouts: aws_sdk_dynamodb::config::timeout::TimeoutConfig,
    why: &str,
) -> SdkError<ListTablesError, HttpResponse> {
    client(url, timeouts).list_tables().send().await.expect_err(why)
}

#[tokio::test]
async fn requests_go_out_signed_and_answers_come_back_on_one_connection() {
    let (url, seen) = server(Duration::ZERO).await;
    let db = client(&url, no_timeouts());
    for _ in 0..3 {
        let out = db.list_tables().limit(5).send().await.expect("ListTables");
        assert_eq!(out.table_names(), ["runs", "threads"]);
    }
    assert_eq!(
        seen.connections.load(Ordering::SeqCst),
        1,
        "the pool keeps the connection"
    );
    let requests = seen.requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    let (line, headers, body) = &requests[0];
    assert_eq!(line, "POST / HTTP/1.1");
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("x-amz-target"), Some("DynamoDB_20120810.ListTables"));
    assert!(
        header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")),
        "{headers:?}"
    );
    assert_eq!(serde_json_value(body), serde_json_value(r#"{"Limit":5}"#));
}

#[tokio::test]
async fn a_slow_answer_is_a_timeout_and_is_retried() {
    let (url, seen) = server(Duration::from_millis(1500)).await;
    let timeouts = aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
        .read_timeout(Duration::from_millis(250))
        .build();
    let err = failed_list_tables(&url, timeouts, "too slow").await;
    assert!(
        matches!(&err, SdkError::DispatchFailure(f) if f.is_timeout()),
        "{err:?}"
    );
    // The standard retry policy makes three attempts at a timeout.
    assert_eq!(seen.requests.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_refused_connection_is_an_io_failure() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let err = failed_list_tables(&url, no_timeouts(), "nobody listens").await;
    assert!(
        matches!(&err, SdkError::DispatchFailure(f) if f.is_io()),
        "{err:?}"
    );
}

#[tokio::test]
async fn https_refuses_a_certificate_mozillas_roots_do_not_vouch_for() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    // A self-signed pair for localhost (the engine tests' fixtures).
    let dir = format!("{}/../engine/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let certs = vec![CertificateDer::from_pem_file(format!("{dir}/test_tls_cert.pem")).unwrap()];
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/test_tls_key.pem")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handshakes = Arc::new(Mutex::new(Vec::new()));
    let h = handshakes.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let outcome = acceptor
                .accept(socket)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string());
            h.lock().unwrap().push(outcome);
        }
    });
    let err = failed_list_tables(&format!("https://localhost:{port}"), no_timeouts(), "untrusted").await;
    assert!(matches!(&err, SdkError::DispatchFailure(_)), "{err:?}");
    let chain = format!(
        "{:?}",
        aws_smithy_types::error::display::DisplayErrorContext(&err)
    );
    assert!(chain.contains("InvalidCertificate"), "{chain}");
    let handshakes = handshakes.lock().unwrap();
    assert!(
        !handshakes.is_empty() && handshakes.iter().all(Result::is_err),
        "the client broke off every handshake: {handshakes:?}"
    );
}

fn serde_json_value(s: &str) -> String {
    // key order as the SDK writes it; compare without whitespace
    s.chars().filter(|c| !c.is_whitespace()).collect()
}
