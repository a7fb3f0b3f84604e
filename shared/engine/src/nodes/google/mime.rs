//! An email as an RFC 5322 message (MIME parts, RFC 2047 headers), built
//! with `mail-builder`, for Gmail's `raw` field (base64url).

use base64::Engine as _;
use mail_builder::headers::address::Address;
use mail_builder::MessageBuilder;

use crate::error::{EngineError, Result};

/// A file attached to an email.
pub(crate) struct Attachment {
    pub name: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// What a message is made of. Address lists are as the node writes them:
/// comma-separated, each `Name <address>` or `address`.
#[derive(Default)]
pub(crate) struct Email {
    pub from: String,
    pub to: String,
    pub cc: String,
    pub bcc: String,
    pub reply_to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    pub in_reply_to: String,
    pub attachments: Vec<Attachment>,
}

/// `Name <a@b>, c@d` as addresses (a name in quotes loses them).
fn addresses(list: &str) -> Option<Address<'static>> {
    let parsed: Vec<Address<'static>> = list
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| match (e.rfind('<'), e.rfind('>')) {
            (Some(open), Some(close)) if open < close => {
                let name = e[..open].trim().trim_matches('"').trim();
                Address::new_address((!name.is_empty()).then(|| name.to_owned()), e[open + 1..close].trim().to_owned())
            }
            _ => Address::new_address(None::<String>, e.to_owned()),
        })
        .collect();
    match parsed.len() {
        0 => None,
        1 => parsed.into_iter().next(),
        _ => Some(Address::new_list(parsed)),
    }
}

impl Email {
    /// The message's bytes (Bcc kept: Gmail delivers to the addresses the raw message names).
    pub fn build(self) -> Result<Vec<u8>> {
        let mut m = MessageBuilder::new().subject(self.subject);
        if let Some(a) = addresses(&self.from) {
            m = m.from(a);
        }
        if let Some(a) = addresses(&self.to) {
            m = m.to(a);
        }
        if let Some(a) = addresses(&self.cc) {
            m = m.cc(a);
        }
        if let Some(a) = addresses(&self.bcc) {
            m = m.bcc(a);
        }
        if let Some(a) = addresses(&self.reply_to) {
            m = m.reply_to(a);
        }
        let id = self.in_reply_to.trim().trim_start_matches('<').trim_end_matches('>').to_owned();
        if !id.is_empty() {
            m = m.in_reply_to(id.clone()).references(id);
        }
        if !self.text.is_empty() || self.html.is_empty() {
            m = m.text_body(self.text);
        }
        if !self.html.is_empty() {
            m = m.html_body(self.html);
        }
        for a in self.attachments {
            m = m.attachment(a.content_type, a.name, a.bytes);
        }
        m.write_to_vec().map_err(|e| EngineError::node(format!("Could not build the email: {e}")))
    }

    /// The message as Gmail's `raw`: base64url (padding kept, as n8n sends it).
    pub fn raw(self) -> Result<String> {
        Ok(base64::engine::general_purpose::URL_SAFE.encode(self.build()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_bodies_and_attachments() {
        let email = Email {
            from: "Ops Bot <ops@example.com>".into(),
            to: "<ann@example.com>, Bo Brown <bo@example.com>, ".into(),
            bcc: "<audit@example.com>".into(),
            subject: "Grüße".into(),
            html: "<p>Hi</p>".into(),
            in_reply_to: "<abc@mail.example.com>".into(),
            attachments: vec![Attachment { name: "r.txt".into(), content_type: "text/plain".into(), bytes: b"report".to_vec() }],
            ..Email::default()
        };
        let text = String::from_utf8(email.build().unwrap()).unwrap();
        assert!(text.contains("From: \"Ops Bot\" <ops@example.com>"), "{text}");
        assert!(text.contains("To: <ann@example.com>, \"Bo Brown\" <bo@example.com>"), "{text}");
        assert!(text.contains("Bcc: <audit@example.com>"), "{text}");
        assert!(text.contains("Subject: =?utf-8?"), "non-ASCII subjects are encoded: {text}");
        assert!(text.contains("In-Reply-To: <abc@mail.example.com>") && text.contains("References: <abc@mail.example.com>"), "{text}");
        assert!(text.contains("Content-Type: multipart/mixed") && text.contains("filename=\"r.txt\""), "{text}");
        assert!(text.contains("<p>Hi</p>"));
    }
}
