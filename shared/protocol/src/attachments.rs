//! Files attached to a chat message (`POST /instance-ai/chat/:threadId`,
//! `attachments`): n8n's `{type?: "file", fileName, mimeType, data}` with
//! the bytes in base64. Decoded and checked here, before anything is
//! stored, so an oversize or malformed attachment changes nothing.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// Attachments one message may carry.
pub const MAX_ATTACHMENTS: usize = 10;
/// Decoded bytes of all of a message's attachments together. The chat
/// request is a Lambda payload (6 MB): 4 MiB is about 5.6 MB in base64.
pub const MAX_ATTACHMENT_BYTES: usize = 4 * 1024 * 1024;
pub const MAX_FILE_NAME_CHARS: usize = 300;
pub const MAX_MIME_TYPE_CHARS: usize = 100;

/// One attachment as the client sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Attachment {
    /// `file` (the only kind this server reads); may be left out.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(alias = "name")]
    pub file_name: String,
    pub mime_type: String,
    /// The bytes in base64 (a `data:…;base64,` prefix is accepted).
    pub data: String,
}

/// What is kept and shown of an attachment besides its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachmentInfo {
    pub file_name: String,
    pub mime_type: String,
    /// Decoded size in bytes.
    pub size: u64,
}

/// An attachment checked and decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedAttachment {
    pub info: AttachmentInfo,
    pub bytes: Vec<u8>,
}

/// Why attachments were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachmentError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    TooLarge(String),
}

/// Checks and decodes a message's attachments (all or none).
pub fn decode_all(list: &[Attachment]) -> Result<Vec<DecodedAttachment>, AttachmentError> {
    if list.len() > MAX_ATTACHMENTS {
        return Err(AttachmentError::Invalid(format!("at most {MAX_ATTACHMENTS} attachments per message (got {})", list.len())));
    }
    let mut total = 0usize;
    let mut out = Vec::with_capacity(list.len());
    for (i, a) in list.iter().enumerate() {
        let at = |m: String| AttachmentError::Invalid(format!("attachments[{i}]: {m}"));
        if let Some(kind) = a.kind.as_deref().filter(|k| *k != "file") {
            return Err(at(format!("type {kind:?} is not supported; only \"file\" attachments are")));
        }
        let name = a.file_name.trim();
        if name.is_empty() || name.chars().count() > MAX_FILE_NAME_CHARS {
            return Err(at(format!("fileName must be 1-{MAX_FILE_NAME_CHARS} characters")));
        }
        let mime = a.mime_type.trim();
        if mime.chars().count() > MAX_MIME_TYPE_CHARS {
            return Err(at(format!("mimeType must be at most {MAX_MIME_TYPE_CHARS} characters")));
        }
        let data = match a.data.split_once(";base64,") {
            Some((prefix, rest)) if prefix.starts_with("data:") => rest,
            _ => a.data.as_str(),
        };
        // Refused before decoding: base64 is 4 characters per 3 bytes.
        if data.len() / 4 * 3 > MAX_ATTACHMENT_BYTES + 3 {
            return Err(too_large(i));
        }
        let cleaned: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&cleaned)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(cleaned.trim_end_matches('=')))
            .map_err(|e| at(format!("data is not valid base64 ({e})")))?;
        total += bytes.len();
        if total > MAX_ATTACHMENT_BYTES {
            return Err(too_large(i));
        }
        let info = AttachmentInfo { file_name: name.to_owned(), mime_type: mime.to_ascii_lowercase(), size: bytes.len() as u64 };
        out.push(DecodedAttachment { info, bytes });
    }
    Ok(out)
}

fn too_large(i: usize) -> AttachmentError {
    AttachmentError::TooLarge(format!(
        "attachments[{i}]: the message's attachments exceed {} MiB together",
        MAX_ATTACHMENT_BYTES / (1024 * 1024)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn att(name: &str, data: &str) -> Attachment {
        Attachment { kind: None, file_name: name.into(), mime_type: "Text/CSV".into(), data: data.into() }
    }

    #[test]
    fn attachments_decode_with_or_without_a_data_url_prefix() {
        let out = decode_all(&[att("a.csv", "YSxiCjEsMg=="), att("b.csv", "data:text/csv;base64,YSxiCjEsMg")]).unwrap();
        assert_eq!(out[0].bytes, b"a,b\n1,2");
        assert_eq!(out[1].bytes, b"a,b\n1,2");
        assert_eq!(out[0].info, AttachmentInfo { file_name: "a.csv".into(), mime_type: "text/csv".into(), size: 7 });
    }

    #[test]
    fn bad_base64_other_kinds_and_oversize_are_refused() {
        assert!(matches!(decode_all(&[att("a.csv", "not base64!")]), Err(AttachmentError::Invalid(m)) if m.contains("base64")));
        let mut wf = att("a", "YQ==");
        wf.kind = Some("workflow".into());
        assert!(matches!(decode_all(&[wf]), Err(AttachmentError::Invalid(m)) if m.contains("workflow")));
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; MAX_ATTACHMENT_BYTES / 2 + 1]);
        assert!(matches!(decode_all(&[att("a", &big), att("b", &big)]), Err(AttachmentError::TooLarge(m)) if m.contains("attachments[1]")));
        assert!(decode_all(&vec![att("a", "YQ=="); MAX_ATTACHMENTS + 1]).is_err());
        assert!(decode_all(&[att(" ", "YQ==")]).is_err());
    }
}
