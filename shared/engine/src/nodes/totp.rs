//! TOTP (`n8n-nodes-base.totp`, v1): the current code of a `totpApi`
//! credential (RFC 6238 over HMAC-SHA1/256/512), as the OTPAuth library n8n
//! uses computes it.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};

use super::{NodeContext, NodeOutput};
use crate::error::{EngineError, Result};

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let creds = ctx.credential("totpApi")?;
    let label = creds.get("label").and_then(Value::as_str).unwrap_or("");
    if !label.contains(':') {
        return Err(EngineError::node("Malformed label - expected `issuer:username`"));
    }
    // one code for the whole run, from the first item's options (as n8n)
    let op = ctx.param_str("operation", 0, "generateSecret")?;
    let algorithm = match ctx.param_str("options.algorithm", 0, "")? {
        a if a.is_empty() => "SHA1".to_string(),
        a => a,
    };
    let digits = match ctx.param_f64("options.digits", 0, 0.0)? as u32 {
        0 => 6,
        d => d,
    };
    let period = match ctx.param_f64("options.period", 0, 0.0)? {
        p if p >= 1.0 => p,
        _ => 30.0,
    };
    let secret = base32(creds.get("secret").and_then(Value::as_str).unwrap_or(""))?;
    let now_ms = ctx.now().timestamp_millis();
    let token = code(&secret, &algorithm, digits, (now_ms as f64 / 1000.0 / period).floor() as u64)?;
    let remaining = (period * (1.0 - ((now_ms as f64 / 1000.0 / period) % 1.0))) as i64;
    let mut out = Vec::with_capacity(input.len());
    if op == "generateSecret" {
        for i in 0..input.len() {
            out.push(crate::data::item_from(json!({ "token": token, "secondsRemaining": remaining }), i));
        }
    }
    Ok(NodeOutput::one(out))
}

/// HOTP value for `counter` (RFC 4226 dynamic truncation), zero-padded.
pub fn code(secret: &[u8], algorithm: &str, digits: u32, counter: u64) -> Result<String> {
    macro_rules! mac {
        ($h:ty) => {{
            let mut m = Hmac::<$h>::new_from_slice(secret).map_err(|e| EngineError::node(e.to_string()))?;
            m.update(&counter.to_be_bytes());
            m.finalize().into_bytes().to_vec()
        }};
    }
    let h = match algorithm.to_ascii_uppercase().as_str() {
        "SHA1" => mac!(sha1::Sha1),
        "SHA224" => mac!(sha2::Sha224),
        "SHA256" => mac!(sha2::Sha256),
        "SHA384" => mac!(sha2::Sha384),
        "SHA512" => mac!(sha2::Sha512),
        "SHA3-224" => mac!(sha3::Sha3_224),
        "SHA3-256" => mac!(sha3::Sha3_256),
        "SHA3-384" => mac!(sha3::Sha3_384),
        "SHA3-512" => mac!(sha3::Sha3_512),
        other => return Err(EngineError::node(format!("Unsupported algorithm '{other}'"))),
    };
    let offset = (h[h.len() - 1] & 0xf) as usize;
    let bin = ((h[offset] as u32 & 0x7f) << 24) | ((h[offset + 1] as u32) << 16) | ((h[offset + 2] as u32) << 8) | h[offset + 3] as u32;
    let digits = digits.clamp(1, 10);
    let v = bin as u64 % 10u64.pow(digits);
    Ok(format!("{v:0width$}", width = digits as usize))
}

/// RFC 4648 base32 (case-insensitive; spaces, dashes and padding ignored).
pub fn base32(s: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let (mut buf, mut bits) = (0u64, 0u32);
    for c in s.chars().filter(|c| !matches!(c, ' ' | '-' | '=')) {
        let v = match c.to_ascii_uppercase() {
            c @ 'A'..='Z' => c as u64 - 'A' as u64,
            c @ '2'..='7' => c as u64 - '2' as u64 + 26,
            _ => return Err(EngineError::node("Invalid secret: not base32")),
        };
        buf = (buf << 5) | v;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6238_vectors() {
        // RFC 6238 appendix B, 8 digits, T = 59 s
        let s1 = b"12345678901234567890";
        assert_eq!(code(s1, "SHA1", 8, 59 / 30).unwrap(), "94287082");
        let s256 = b"12345678901234567890123456789012";
        assert_eq!(code(s256, "SHA256", 8, 59 / 30).unwrap(), "46119246");
        let s512 = b"1234567890123456789012345678901234567890123456789012345678901234";
        assert_eq!(code(s512, "SHA512", 8, 59 / 30).unwrap(), "90693936");
        assert_eq!(code(s1, "SHA1", 8, 1111111109 / 30).unwrap(), "07081804");
        assert_eq!(base32("GEZDGNBVGY3TQOJQ").unwrap(), b"1234567890");
        assert_eq!(base32("gezd gnbv gy3t qojq").unwrap(), b"1234567890");
        assert!(base32("not base32!").is_err());
    }
}
