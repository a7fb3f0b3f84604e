//! Send Email (`n8n-nodes-base.emailSend`, versions 1, 2 and 2.1) over SMTP
//! with `lettre`: implicit TLS when the credential says SSL/TLS, else
//! STARTTLS whenever the server offers it (unless the credential turns it
//! off); login with the credential's user and password; the item's binary
//! fields as attachments. The mail server is reached through the SSRF guard
//! (`net::checked_addrs`): lettre connects to the checked address and
//! verifies the certificate against the host's name.

use std::time::Duration;

use lettre::message::header::{self, ContentType};
use lettre::message::{Mailbox, Mailboxes, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{Message, SmtpTransport, Transport};
use serde_json::{json, Value};

use crate::data::item_from;
use crate::error::{EngineError, Result};
use crate::nodes::{js_string, NodeContext, NodeOutput};
use crate::run::Env;

/// How long connecting and each SMTP exchange may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(60);

/// The attribution n8n's 2.1 appends unless turned off.
const ATTRIBUTION: &str = "This email was sent automatically with ";
const ATTRIBUTION_LINK: &str = "https://n8n.io/?utm_source=n8n-internal&utm_medium=powered_by&utm_campaign=n8n-nodes-base.emailSend";

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let version = ctx.version();
    if ctx.param_str("operation", 0, "send")? == "sendAndWait" {
        return Err(EngineError::node_with(
            "Send and Wait for Response is not supported yet",
            "Send the email with the Send operation, and wait for the answer with a Wait node resumed by a webhook.",
        ));
    }
    let credential = ctx.credential("smtp")?;
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        if ctx.env.cancel.is_canceled() {
            return Err(EngineError::Canceled);
        }
        match send_item(ctx, version, &credential, item, i) {
            Ok(info) => out.push(item_from(info, i)),
            Err(EngineError::Canceled) => return Err(EngineError::Canceled),
            Err(e) if ctx.continue_on_fail() => out.push(item_from(json!({ "error": e.to_string() }), i)),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

/// The fields of one email, as the node's version names them.
struct Email {
    from: String,
    to: String,
    cc: String,
    bcc: String,
    reply_to: String,
    subject: String,
    text: Option<String>,
    html: Option<String>,
    attachments: String,
    allow_unauthorized: bool,
}

fn email(ctx: &mut NodeContext<'_>, version: f64, i: usize) -> Result<Email> {
    let options = ctx.param("options", i, json!({}))?;
    let opt = |k: &str| options.get(k).map(js_string).unwrap_or_default();
    let v1 = version < 2.0;
    let (text, html) = if v1 {
        (Some(ctx.param_str("text", i, "")?), Some(ctx.param_str("html", i, "")?))
    } else {
        let format = ctx.param_str("emailFormat", i, if version >= 2.1 { "html" } else { "text" })?;
        let text = matches!(format.as_str(), "text" | "both").then(|| ctx.param_str("text", i, "")).transpose()?;
        let html = matches!(format.as_str(), "html" | "both").then(|| ctx.param_str("html", i, "")).transpose()?;
        (text, html)
    };
    let mut e = Email {
        from: ctx.param_str("fromEmail", i, "")?,
        to: ctx.param_str("toEmail", i, "")?,
        cc: if v1 { ctx.param_str("ccEmail", i, "")? } else { opt("ccEmail") },
        bcc: if v1 { ctx.param_str("bccEmail", i, "")? } else { opt("bccEmail") },
        reply_to: opt("replyTo"),
        subject: ctx.param_str("subject", i, "")?,
        text,
        html,
        attachments: if v1 { ctx.param_str("attachments", i, "")? } else { opt("attachments") },
        allow_unauthorized: options.get("allowUnauthorizedCerts").and_then(Value::as_bool).unwrap_or(false),
    };
    // v1 sends what is set, as nodemailer leaves empty text or HTML out
    if v1 {
        e.text = e.text.filter(|t| !t.is_empty());
        e.html = e.html.filter(|h| !h.is_empty());
    }
    let attribution = options.get("appendAttribution").and_then(Value::as_bool).unwrap_or(version >= 2.1);
    if attribution && !v1 {
        if e.html.is_some() {
            let html = e.html.take().unwrap_or_default();
            e.html = Some(format!("\n{html}\n<br>\n<br>\n---\n<br>\n<em>{ATTRIBUTION}<a href=\"{ATTRIBUTION_LINK}\" target=\"_blank\">n8n</a></em>\n"));
        } else {
            let text = e.text.take().unwrap_or_default();
            e.text = Some(format!("{text}\n\n---\n{ATTRIBUTION}n8n\nhttps://n8n.io"));
        }
    }
    Ok(e)
}

fn addresses(list: &str, field: &str) -> Result<Vec<Mailbox>> {
    if list.trim().is_empty() {
        return Ok(vec![]);
    }
    let parsed: Mailboxes = list.parse().map_err(|e| EngineError::node_with(format!("Invalid email address in {field}"), format!("{list:?}: {e}")))?;
    Ok(parsed.into_iter().collect())
}

fn send_item(ctx: &mut NodeContext<'_>, version: f64, credential: &Value, item: &crate::data::Item, i: usize) -> Result<Value> {
    let e = email(ctx, version, i)?;
    let from = addresses(&e.from, "From Email")?.into_iter().next().ok_or_else(|| EngineError::node("No sender (From Email) is set"))?;
    let to = addresses(&e.to, "To Email")?;
    let cc = addresses(&e.cc, "CC Email")?;
    let bcc = addresses(&e.bcc, "BCC Email")?;
    if to.is_empty() && cc.is_empty() && bcc.is_empty() {
        return Err(EngineError::node("No recipients defined"));
    }
    let domain = from.email.domain().to_owned();
    let message_id = format!("<{}@{domain}>", uuid::Uuid::new_v4());
    let mut b = Message::builder().from(from.clone()).subject(e.subject.clone()).message_id(Some(message_id.clone()));
    for m in &to {
        b = b.to(m.clone());
    }
    for m in &cc {
        b = b.cc(m.clone());
    }
    for m in &bcc {
        b = b.bcc(m.clone());
    }
    for m in addresses(&e.reply_to, "Reply To")? {
        b = b.reply_to(m);
    }
    let body = match (&e.text, &e.html) {
        (Some(t), Some(h)) => Body::Multi(MultiPart::alternative_plain_html(t.clone(), h.clone())),
        (None, Some(h)) => Body::Single(SinglePart::html(h.clone())),
        (Some(t), None) => Body::Single(SinglePart::plain(t.clone())),
        (None, None) => Body::Single(SinglePart::plain(String::new())),
    };
    let files = attachments(item, &e.attachments, version, i)?;
    let message = if files.is_empty() {
        match body {
            Body::Multi(m) => b.multipart(m),
            Body::Single(s) => b.singlepart(s),
        }
    } else {
        let mut mixed = match body {
            Body::Multi(m) => MultiPart::mixed().multipart(m),
            Body::Single(s) => MultiPart::mixed().singlepart(s),
        };
        for f in files {
            mixed = mixed.singlepart(f);
        }
        b.multipart(mixed)
    }
    .map_err(|e| EngineError::node(format!("The email cannot be built: {e}")))?;

    let transport = transport(ctx.env, credential, e.allow_unauthorized)?;
    let size = message.formatted().len();
    let answer = transport.send(&message).map_err(smtp_error)?;
    let envelope = message.envelope();
    let accepted: Vec<String> = envelope.to().iter().map(ToString::to_string).collect();
    Ok(json!({
        "accepted": accepted,
        "rejected": [],
        "messageSize": size,
        "response": format!("{} {}", answer.code(), answer.message().collect::<Vec<_>>().join(" ")),
        "envelope": {"from": envelope.from().map(ToString::to_string), "to": accepted},
        "messageId": message_id,
    }))
}

enum Body {
    Single(SinglePart),
    Multi(MultiPart),
}

/// The binary fields named (comma-separated) as attachments; v2 gives each
/// the field's name as its Content-ID (`<img src="cid:…">`), v1 skips a
/// missing field where v2 fails.
fn attachments(item: &crate::data::Item, names: &str, version: f64, i: usize) -> Result<Vec<SinglePart>> {
    let names: Vec<&str> = names.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    let Some(binary) = item.binary.as_ref().filter(|_| !names.is_empty()) else { return Ok(vec![]) };
    let mut parts = vec![];
    for name in names {
        let entry = match binary.get(name) {
            Some(e) => e,
            None if version < 2.0 => continue,
            None => return Err(EngineError::node_with(format!("This operation expects the node's input data to contain a binary file '{name}', but none was found [item {i}]"), "Make sure that the previous node outputs a binary file")),
        };
        let bytes = crate::binary::bytes_of(entry).map_err(EngineError::node)?;
        let file_name = entry.get("fileName").and_then(Value::as_str).filter(|f| !f.is_empty()).unwrap_or("unknown").to_owned();
        let mime = entry.get("mimeType").and_then(Value::as_str).and_then(|m| ContentType::parse(m).ok()).unwrap_or_else(|| ContentType::parse("application/octet-stream").expect("a valid MIME type"));
        let mut part = SinglePart::builder().header(mime).header(header::ContentDisposition::attachment(&file_name));
        if version >= 2.0 {
            part = part.header(header::ContentId::from(format!("<{name}>")));
        }
        parts.push(part.body(bytes));
    }
    Ok(parts)
}

/// A transport for the credential: the checked address of its host, TLS as
/// it says (implicit with SSL/TLS on; STARTTLS when offered, unless turned
/// off), its user and password when set.
pub(crate) fn transport(env: &Env, credential: &Value, allow_unauthorized: bool) -> Result<SmtpTransport> {
    let host = credential.get("host").map(js_string).unwrap_or_default();
    if host.trim().is_empty() {
        return Err(EngineError::node("The SMTP credential has no host"));
    }
    let secure = credential.get("secure").and_then(Value::as_bool).unwrap_or(true);
    let port = credential.get("port").and_then(|p| p.as_u64().or_else(|| js_string(p).parse().ok())).map_or(if secure { 465 } else { 587 }, |p| p as u16);
    let addr = crate::nodes::net::checked_addrs(env, &host, port)?.into_iter().next().ok_or_else(|| EngineError::node("Host not found"))?;
    let tls_name = host.trim().trim_start_matches('[').trim_end_matches(']').to_owned();
    let params = TlsParameters::builder(tls_name)
        .dangerous_accept_invalid_certs(allow_unauthorized)
        .dangerous_accept_invalid_hostnames(allow_unauthorized)
        .build_rustls()
        .map_err(|e| EngineError::node(format!("TLS setup failed: {e}")))?;
    let tls = if secure {
        Tls::Wrapper(params)
    } else if credential.get("disableStartTls").and_then(Value::as_bool).unwrap_or(false) {
        Tls::None
    } else {
        Tls::Opportunistic(params)
    };
    let client = credential.get("hostName").map(js_string).filter(|h| !h.trim().is_empty()).unwrap_or_else(|| "localhost".into());
    let mut b = SmtpTransport::builder_dangerous(addr.ip().to_string())
        .port(addr.port())
        .tls(tls)
        .hello_name(ClientId::Domain(client))
        .timeout(Some(crate::nodes::net::remaining(env, SMTP_TIMEOUT)));
    let user = credential.get("user").map(js_string).unwrap_or_default();
    let password = credential.get("password").map(js_string).unwrap_or_default();
    if !user.is_empty() || !password.is_empty() {
        b = b.credentials(Credentials::new(user, password)).authentication(vec![Mechanism::Plain, Mechanism::Login]);
    }
    Ok(b.build())
}

/// An SMTP failure as the node reports it (what the server said, no secrets).
pub(crate) fn smtp_error(e: lettre::transport::smtp::Error) -> EngineError {
    let detail = e.to_string();
    let code = e.status().map(|c| c.to_string()).unwrap_or_default();
    let message = if code.starts_with("535") || code.starts_with("534") || code.starts_with("530") || detail.to_lowercase().contains("authentication") {
        "The mail server refused the login".to_owned()
    } else if e.is_permanent() || e.is_transient() {
        "The mail server refused the message".to_owned()
    } else if detail.to_lowercase().contains("certificate") || detail.to_lowercase().contains("tls") {
        "The mail server's certificate could not be verified (turn on 'Ignore SSL Issues' to accept it)".to_owned()
    } else if detail.to_lowercase().contains("refused") {
        "Connection refused".to_owned()
    } else if e.is_timeout() {
        "Connection timed out".to_owned()
    } else {
        "The email could not be sent".to_owned()
    };
    EngineError::node_with(message, detail)
}

/// The SMTP credential's connection test: connect, TLS, login.
pub(crate) fn test(env: &Env, credential: &Value) -> std::result::Result<String, String> {
    let transport = transport(env, credential, false).map_err(|e| e.to_string())?;
    match transport.test_connection() {
        Ok(true) => Ok("Connection successful!".into()),
        Ok(false) => Err("The mail server did not answer".into()),
        Err(e) => Err(smtp_error(e).to_string()),
    }
}
