//! Send Email against a local SMTP server written here (RFC 5321 with
//! STARTTLS per RFC 3207, implicit TLS, AUTH PLAIN and LOGIN per RFC 4954),
//! which records the session: the client's name, the login, the envelope
//! and the message, whose headers and MIME parts the tests read back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use engine::ExecutionStatus;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::support::{engine, output, run_node};

/// What one SMTP session carried.
#[derive(Debug, Default, Clone)]
pub struct Session {
    pub ehlo: String,
    pub tls: bool,
    pub login: Option<(String, String)>,
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

pub struct Smtp {
    pub port: u16,
    sessions: Arc<Mutex<Vec<Session>>>,
    open: Arc<AtomicUsize>,
}

impl Smtp {
    /// The finished sessions, once the server has closed the open ones (the
    /// client may move on as soon as it reads the answer to QUIT).
    pub fn sessions(&self) -> Vec<Session> {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while self.open.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.sessions.lock().unwrap().clone()
    }
}

fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let certs = vec![CertificateDer::from_pem_file(format!("{dir}/test_tls_cert.pem")).unwrap()];
    let key = PrivateKeyDer::from_pem_file(format!("{dir}/test_tls_key.pem")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// An SMTP server on a free port: implicit TLS when `implicit_tls`, else
/// plain with STARTTLS offered; the login `user`/`password` is the only one accepted.
pub fn smtp(implicit_tls: bool) -> Smtp {
    let sessions: Arc<Mutex<Vec<Session>>> = Arc::default();
    let log = sessions.clone();
    let open: Arc<AtomicUsize> = Arc::default();
    let opened = open.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().port()).unwrap();
            let acceptor = tls_acceptor();
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (log, acceptor, opened) = (log.clone(), acceptor.clone(), opened.clone());
                opened.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut s = Session::default();
                    if implicit_tls {
                        if let Ok(tls) = acceptor.accept(tcp).await {
                            s.tls = true;
                            converse(tls, &mut s, true, false).await;
                        }
                    } else if let Some(tcp) = converse(tcp, &mut s, true, true).await {
                        if let Ok(tls) = acceptor.accept(tcp).await {
                            s.tls = true;
                            converse(tls, &mut s, false, false).await;
                        }
                    }
                    if !s.from.is_empty() || s.login.is_some() || !s.ehlo.is_empty() {
                        log.lock().unwrap().push(s);
                    }
                    opened.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
    });
    Smtp { port: rx.recv().unwrap(), sessions, open }
}

/// One side of the conversation; returns the stream when the client asks for STARTTLS.
/// The greeting is not repeated after STARTTLS.
async fn converse<S: AsyncRead + AsyncWrite + Unpin>(stream: S, s: &mut Session, greet: bool, offer_starttls: bool) -> Option<S> {
    let mut r = BufReader::new(stream);
    if greet {
        r.get_mut().write_all(b"220 mail.test ESMTP ready\r\n").await.ok()?;
    }
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let cmd = line.trim_end().to_owned();
        let upper = cmd.to_uppercase();
        let reply: String = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            s.ehlo = cmd[5..].trim().to_owned();
            let mut caps = vec!["250-mail.test", "250-SIZE 10485760", "250-8BITMIME", "250-AUTH PLAIN LOGIN"];
            if offer_starttls {
                caps.push("250-STARTTLS");
            }
            caps.push("250 SMTPUTF8");
            caps.join("\r\n") + "\r\n"
        } else if upper == "STARTTLS" {
            r.get_mut().write_all(b"220 2.0.0 Ready to start TLS\r\n").await.ok()?;
            return Some(r.into_inner());
        } else if upper.starts_with("AUTH PLAIN") {
            let raw = base64::engine::general_purpose::STANDARD.decode(cmd[10..].trim()).unwrap_or_default();
            let parts: Vec<String> = raw.split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).into_owned()).collect();
            login(s, parts.get(1).cloned().unwrap_or_default(), parts.get(2).cloned().unwrap_or_default())
        } else if upper.starts_with("AUTH LOGIN") {
            r.get_mut().write_all(b"334 VXNlcm5hbWU6\r\n").await.ok()?;
            let mut user = String::new();
            r.read_line(&mut user).await.ok()?;
            r.get_mut().write_all(b"334 UGFzc3dvcmQ6\r\n").await.ok()?;
            let mut pass = String::new();
            r.read_line(&mut pass).await.ok()?;
            let d = |x: &str| String::from_utf8_lossy(&base64::engine::general_purpose::STANDARD.decode(x.trim()).unwrap_or_default()).into_owned();
            login(s, d(&user), d(&pass))
        } else if upper.starts_with("MAIL FROM:") {
            s.from = cmd[10..].split_whitespace().next().unwrap_or("").trim_matches(['<', '>']).to_owned();
            "250 2.1.0 Ok\r\n".into()
        } else if upper.starts_with("RCPT TO:") {
            let to = cmd[8..].trim().trim_matches(['<', '>']).to_owned();
            if to.starts_with("nobody@") {
                "550 5.1.1 No such user\r\n".into()
            } else {
                s.to.push(to);
                "250 2.1.5 Ok\r\n".into()
            }
        } else if upper == "DATA" {
            r.get_mut().write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n").await.ok()?;
            let mut data = String::new();
            loop {
                let mut l = String::new();
                if r.read_line(&mut l).await.ok()? == 0 {
                    return None;
                }
                if l == ".\r\n" {
                    break;
                }
                data.push_str(l.strip_prefix('.').filter(|_| l.starts_with("..")).unwrap_or(&l));
            }
            s.data = data;
            "250 2.0.0 Ok: queued as 4F2A9\r\n".into()
        } else if upper == "QUIT" {
            r.get_mut().write_all(b"221 2.0.0 Bye\r\n").await.ok()?;
            return None;
        } else if upper == "NOOP" || upper == "RSET" {
            "250 2.0.0 Ok\r\n".into()
        } else {
            "502 5.5.2 Command not recognized\r\n".into()
        };
        r.get_mut().write_all(reply.as_bytes()).await.ok()?;
    }
}

fn login(s: &mut Session, user: String, pass: String) -> String {
    let ok = user == "mailer" && pass == "s3cret";
    s.login = Some((user, pass));
    if ok { "235 2.7.0 Authentication successful\r\n".into() } else { "535 5.7.8 Authentication credentials invalid\r\n".into() }
}

/// A header of a message (unfolded).
fn header(message: &str, name: &str) -> Option<String> {
    let head = message.split("\r\n\r\n").next()?;
    let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
    unfolded.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_owned()))
}

/// The leaf parts of a MIME message: (headers, decoded body).
fn parts(message: &str) -> Vec<(String, Vec<u8>)> {
    let (head, body) = message.split_once("\r\n\r\n").unwrap_or((message, ""));
    let ct = header(message, "content-type").unwrap_or_default();
    if let Some(b) = ct.split("boundary=").nth(1) {
        let boundary = b.trim_matches('"').split(';').next().unwrap_or("").trim_matches('"');
        return body
            .split(&format!("--{boundary}"))
            .filter(|p| !p.trim().is_empty() && !p.starts_with("--"))
            .flat_map(|p| parts(p.trim_start_matches("\r\n")))
            .collect();
    }
    let encoding = header(message, "content-transfer-encoding").unwrap_or_default().to_lowercase();
    let decoded = match encoding.as_str() {
        "base64" => base64::engine::general_purpose::STANDARD.decode(body.split_whitespace().collect::<String>()).unwrap_or_default(),
        "quoted-printable" => quoted_printable(body),
        _ => body.trim_end_matches("\r\n").as_bytes().to_vec(),
    };
    vec![(head.to_owned(), decoded)]
}

fn quoted_printable(s: &str) -> Vec<u8> {
    let joined = s.replace("=\r\n", "");
    let b = joined.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'=' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&joined[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn credential(port: u16, secure: bool) -> Value {
    json!({"host": "127.0.0.1", "port": port, "secure": secure, "user": "mailer", "password": "s3cret", "hostName": "n8n.test"})
}

fn node(version: f64, parameters: Value) -> Value {
    json!({"type": "n8n-nodes-base.emailSend", "typeVersion": version, "parameters": parameters, "credentials": {"smtp": {"id": "m1", "name": "Mail"}}})
}

#[test]
fn starttls_login_html_with_attachments_and_the_attribution() {
    let server = smtp(false);
    let engine = engine(&[("smtp", credential(server.port, false))], &[]);
    let pdf = b"%PDF-1.4 invoice".to_vec();
    let logo = b"\x89PNG\r\n\x1a\nlogo".to_vec();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let input = json!([{"json": {"name": "Ada"}, "binary": {
        "invoice": {"data": b64(&pdf), "mimeType": "application/pdf", "fileName": "invoice.pdf"},
        "logo": {"data": b64(&logo), "mimeType": "image/png", "fileName": "logo.png"}}}]);
    let params = json!({
        "fromEmail": "Shop <shop@example.com>", "toEmail": "ada@example.com, Grace <grace@example.com>", "subject": "=Invoice for {{ $json.name }}",
        "html": "=<p>Hello {{ $json.name }}</p><img src=\"cid:logo\">",
        "options": {"attachments": "invoice, logo", "ccEmail": "cc@example.com", "bccEmail": "audit@example.com", "replyTo": "help@example.com", "allowUnauthorizedCerts": true}
    });
    let st = run_node(&engine, node(2.1, params), input);
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let sessions = server.sessions();
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert!(s.tls, "STARTTLS was used");
    assert_eq!(s.ehlo, "n8n.test");
    assert_eq!(s.login, Some(("mailer".into(), "s3cret".into())));
    assert_eq!(s.from, "shop@example.com");
    assert_eq!(s.to, ["ada@example.com", "grace@example.com", "cc@example.com", "audit@example.com"]);
    let m = &s.data;
    assert_eq!(header(m, "subject").as_deref(), Some("Invoice for Ada"));
    assert_eq!(header(m, "from").as_deref(), Some("Shop <shop@example.com>"));
    assert_eq!(header(m, "to").as_deref(), Some("ada@example.com, Grace <grace@example.com>"));
    assert_eq!(header(m, "cc").as_deref(), Some("cc@example.com"));
    assert_eq!(header(m, "reply-to").as_deref(), Some("help@example.com"));
    assert_eq!(header(m, "bcc"), None, "Bcc stays out of the message");
    let parts = parts(m);
    assert_eq!(parts.len(), 3, "{parts:?}");
    let html = String::from_utf8(parts[0].1.clone()).unwrap();
    assert!(parts[0].0.contains("text/html"), "{}", parts[0].0);
    assert!(html.contains("<p>Hello Ada</p><img src=\"cid:logo\">") && html.contains("This email was sent automatically with <a href=\"https://n8n.io/"), "{html}");
    assert!(parts[1].0.contains("application/pdf") && parts[1].0.contains("invoice.pdf") && parts[1].0.contains("<invoice>"), "{}", parts[1].0);
    assert_eq!(parts[1].1, pdf);
    assert!(parts[2].0.contains("image/png") && parts[2].0.contains("<logo>"), "{}", parts[2].0);
    assert_eq!(parts[2].1, logo);
    // nodemailer's answer: accepted recipients, the server's reply, the message id
    let out = output(&st);
    assert_eq!(out[0]["accepted"], json!(["ada@example.com", "grace@example.com", "cc@example.com", "audit@example.com"]));
    assert_eq!(out[0]["rejected"], json!([]));
    assert_eq!(out[0]["response"], "250 2.0.0 Ok: queued as 4F2A9");
    assert_eq!(out[0]["envelope"], json!({"from": "shop@example.com", "to": ["ada@example.com", "grace@example.com", "cc@example.com", "audit@example.com"]}));
    assert_eq!(header(m, "message-id").as_deref(), out[0]["messageId"].as_str());
}

#[test]
fn implicit_tls_v1_text_and_html_without_attribution() {
    let server = smtp(true);
    let engine = engine(&[("smtp", credential(server.port, true))], &[]);
    let params = json!({"fromEmail": "a@example.com", "toEmail": "b@example.com", "subject": "Hi", "text": "plain", "html": "<b>rich</b>", "options": {"allowUnauthorizedCerts": true}});
    let st = run_node(&engine, node(1.0, params), json!([{}, {}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let sessions = server.sessions();
    assert_eq!(sessions.len(), 2, "one message per item");
    assert!(sessions[0].tls);
    let alternatives = parts(&sessions[0].data);
    assert_eq!(alternatives.iter().map(|(_, b)| String::from_utf8_lossy(b).into_owned()).collect::<Vec<_>>(), ["plain", "<b>rich</b>"]);
    assert!(header(&sessions[0].data, "content-type").unwrap().starts_with("multipart/alternative"));

    // v2 text only: the attribution under the text
    let st = run_node(&engine, node(2.0, json!({"fromEmail": "a@example.com", "toEmail": "b@example.com", "text": "plain", "options": {"allowUnauthorizedCerts": true, "appendAttribution": true}})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let data = &server.sessions()[2].data;
    assert_eq!(String::from_utf8_lossy(&parts(data)[0].1), "plain\r\n\r\n---\r\nThis email was sent automatically with n8n\r\nhttps://n8n.io");
}

#[test]
fn an_unverified_certificate_a_wrong_login_and_a_refused_recipient_fail_clearly() {
    let server = smtp(false);
    let engine = engine(&[("smtp", credential(server.port, false))], &[]);
    let params = json!({"fromEmail": "a@example.com", "toEmail": "b@example.com", "text": "x"});
    let st = run_node(&engine, node(2.1, params.clone()), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(st.error.unwrap().message.contains("certificate could not be verified"));

    let mut wrong = credential(server.port, false);
    wrong["password"] = json!("nope");
    let engine = crate::support::engine(&[("smtp", wrong.clone())], &[]);
    let mut n = node(2.1, json!({"fromEmail": "a@example.com", "toEmail": "b@example.com", "text": "x", "options": {"allowUnauthorizedCerts": true}}));
    let st = run_node(&engine, n.clone(), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    let e = st.error.unwrap();
    assert_eq!(e.message, "The mail server refused the login");
    assert!(!format!("{e:?}").contains("nope"), "no password in the error: {e:?}");

    // continue on fail: the error as the item, the next item still tried
    let engine = crate::support::engine(&[("smtp", credential(server.port, false))], &[]);
    n["parameters"]["toEmail"] = json!("={{ $json.to }}");
    n["onError"] = json!("continueRegularOutput");
    let st = run_node(&engine, n, json!([{"to": "nobody@example.com"}, {"to": "ok@example.com"}]));
    assert_eq!(st.status, ExecutionStatus::Success, "{:?}", st.error);
    let out = output(&st);
    assert!(out[0]["error"].as_str().unwrap().contains("refused the message"), "{out:?}");
    assert_eq!(out[1]["accepted"], json!(["ok@example.com"]));
}

#[test]
fn the_mail_server_is_behind_the_ssrf_guard_and_the_credential_test_logs_in() {
    let server = smtp(false);
    let guarded = engine::Engine::new(engine::EngineSettings::default(), engine::Host {
        credentials: Some(Arc::new(crate::support::Creds([("smtp".to_owned(), credential(server.port, false))].into()))),
        ..Default::default()
    });
    let st = run_node(&guarded, node(2.1, json!({"fromEmail": "a@example.com", "toEmail": "b@example.com", "text": "x"})), json!([{}]));
    assert_eq!(st.status, ExecutionStatus::Error);
    assert!(server.sessions().is_empty(), "nothing reached the private address");

    let mut cred = credential(server.port, false);
    cred["disableStartTls"] = json!(true);
    let engine = engine(&[("smtp", cred.clone())], &[]);
    let ok = engine.test_credential("smtp", &json!({"id": "m1"}));
    assert!(ok.success, "{}", ok.message);
    assert_eq!(server.sessions().last().unwrap().login, Some(("mailer".into(), "s3cret".into())));
    cred["password"] = json!("nope");
    let engine = crate::support::engine(&[("smtp", cred)], &[]);
    let bad = engine.test_credential("smtp", &json!({"id": "m1"}));
    assert!(!bad.success && bad.message.contains("refused the login"), "{}", bad.message);

    let st = run_node(&engine, node(2.1, json!({"operation": "sendAndWait", "fromEmail": "a@example.com", "toEmail": "b@example.com"})), json!([{}]));
    assert!(st.error.unwrap().message.contains("not supported yet"));
}
