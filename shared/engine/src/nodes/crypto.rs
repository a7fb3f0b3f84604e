//! Crypto 1 and 2: hash, HMAC, RSA sign, random strings, as n8n's node over
//! Node's `crypto` module. Version 2 takes the HMAC secret and the signing key
//! from a `crypto` credential instead of parameters, defaults hashes to
//! SHA256 and reports failed items as `{error: {message, name, code}}`.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use md5::Md5;
use rand::RngCore;
use serde_json::{json, Map, Value};
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512, Sha512_224, Sha512_256};

use super::{binary, NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

/// An item's failure as the JavaScript error n8n would catch.
struct Failure {
    message: String,
    name: &'static str,
    code: Option<&'static str>,
}

impl Failure {
    fn error(message: impl Into<String>) -> Self {
        Failure { message: message.into(), name: "Error", code: None }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Self {
        let name = if matches!(e, EngineError::Node { .. }) { "NodeOperationError" } else { "Error" };
        Failure { message: e.to_string(), name, code: None }
    }
}

type Step<T> = std::result::Result<T, Failure>;

/// Digests Node's `createHash`/`createHmac` know (names are case-insensitive;
/// `RSA-` aliases as OpenSSL has them).
#[derive(Clone, Copy)]
enum Algo {
    Md4,
    Md5,
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Sha512_224,
    Sha512_256,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
}

impl Algo {
    fn parse(name: &str) -> Option<Algo> {
        let lower = name.trim().to_ascii_lowercase();
        let base = lower
            .strip_prefix("rsa-")
            .or_else(|| lower.strip_prefix("id-rsassa-pkcs1-v1_5-with-"))
            .or_else(|| lower.strip_suffix("withrsaencryption"))
            .unwrap_or(&lower);
        Some(match base {
            "md4" => Algo::Md4,
            "md5" => Algo::Md5,
            "sha1" | "sha1-2" => Algo::Sha1,
            "sha224" => Algo::Sha224,
            "sha256" => Algo::Sha256,
            "sha384" => Algo::Sha384,
            "sha512" => Algo::Sha512,
            "sha512-224" | "sha512/224" => Algo::Sha512_224,
            "sha512-256" | "sha512/256" => Algo::Sha512_256,
            "sha3-224" => Algo::Sha3_224,
            "sha3-256" => Algo::Sha3_256,
            "sha3-384" => Algo::Sha3_384,
            "sha3-512" => Algo::Sha3_512,
            _ => return None,
        })
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Algo::Md4 => md4::Md4::digest(data).to_vec(),
            Algo::Md5 => Md5::digest(data).to_vec(),
            Algo::Sha1 => Sha1::digest(data).to_vec(),
            Algo::Sha224 => Sha224::digest(data).to_vec(),
            Algo::Sha256 => Sha256::digest(data).to_vec(),
            Algo::Sha384 => Sha384::digest(data).to_vec(),
            Algo::Sha512 => Sha512::digest(data).to_vec(),
            Algo::Sha512_224 => Sha512_224::digest(data).to_vec(),
            Algo::Sha512_256 => Sha512_256::digest(data).to_vec(),
            Algo::Sha3_224 => sha3::Sha3_224::digest(data).to_vec(),
            Algo::Sha3_256 => sha3::Sha3_256::digest(data).to_vec(),
            Algo::Sha3_384 => sha3::Sha3_384::digest(data).to_vec(),
            Algo::Sha3_512 => sha3::Sha3_512::digest(data).to_vec(),
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        macro_rules! mac {
            ($h:ty) => {{
                // HMAC takes keys of any length; `new_from_slice` cannot fail.
                let mut m = match <Hmac<$h>>::new_from_slice(key) {
                    Ok(m) => m,
                    Err(_) => return vec![],
                };
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }};
        }
        match self {
            Algo::Md4 => mac!(md4::Md4),
            Algo::Md5 => mac!(Md5),
            Algo::Sha1 => mac!(Sha1),
            Algo::Sha224 => mac!(Sha224),
            Algo::Sha256 => mac!(Sha256),
            Algo::Sha384 => mac!(Sha384),
            Algo::Sha512 => mac!(Sha512),
            Algo::Sha512_224 => mac!(Sha512_224),
            Algo::Sha512_256 => mac!(Sha512_256),
            Algo::Sha3_224 => mac!(sha3::Sha3_224),
            Algo::Sha3_256 => mac!(sha3::Sha3_256),
            Algo::Sha3_384 => mac!(sha3::Sha3_384),
            Algo::Sha3_512 => mac!(sha3::Sha3_512),
        }
    }

    /// PKCS#1 v1.5 DigestInfo prefix (the DER before the digest).
    fn digest_info_prefix(self) -> Vec<u8> {
        let (oid, len): (&[u8], u8) = match self {
            Algo::Md4 => (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x04], 16),
            Algo::Md5 => (&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x02, 0x05], 16),
            Algo::Sha1 => (&[0x2b, 0x0e, 0x03, 0x02, 0x1a], 20),
            // 2.16.840.1.101.3.4.2.n
            nist => {
                let (n, len) = match nist {
                    Algo::Sha256 => (1, 32),
                    Algo::Sha384 => (2, 48),
                    Algo::Sha512 => (3, 64),
                    Algo::Sha224 => (4, 28),
                    Algo::Sha512_224 => (5, 28),
                    Algo::Sha512_256 => (6, 32),
                    Algo::Sha3_224 => (7, 28),
                    Algo::Sha3_256 => (8, 32),
                    Algo::Sha3_384 => (9, 48),
                    _ => (10, 64),
                };
                let mut p = vec![0x30, 0, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, n, 0x05, 0x00, 0x04, len];
                p[1] = (p.len() - 2) as u8 + len;
                return p;
            }
        };
        let mut p = vec![0x30, 0, 0x30, (oid.len() + 4) as u8, 0x06, oid.len() as u8];
        p.extend_from_slice(oid);
        p.extend_from_slice(&[0x05, 0x00, 0x04, len]);
        p[1] = (p.len() - 2) as u8 + len;
        p
    }
}

fn encode(bytes: &[u8], encoding: &str) -> Step<String> {
    Ok(match encoding {
        "hex" => hex::encode(bytes),
        "base64" => binary::B64.encode(bytes),
        "base64url" => base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes),
        "latin1" | "binary" => bytes.iter().map(|&b| b as char).collect(),
        other => return Err(Failure { message: format!("Unknown encoding: {other}"), name: "TypeError", code: Some("ERR_UNKNOWN_ENCODING") }),
    })
}

/// The bytes Node's `hash.update(value)` / `sign.write(value)` accept: a string
/// (UTF-8); anything else is Node's `ERR_INVALID_ARG_TYPE`.
fn text_bytes(value: &Value, argument: &str) -> Step<Vec<u8>> {
    let received = match value {
        Value::String(s) => return Ok(s.as_bytes().to_vec()),
        Value::Null => "Received null".to_string(),
        Value::Bool(b) => format!("Received type boolean ({b})"),
        Value::Number(n) => format!("Received type number ({})", super::js_string(&Value::Number(n.clone()))),
        Value::Array(_) => "Received an instance of Array".to_string(),
        Value::Object(_) => "Received an instance of Object".to_string(),
    };
    Err(Failure {
        message: format!("The \"{argument}\" argument must be of type string or an instance of Buffer, TypedArray, or DataView. {received}"),
        name: "TypeError",
        code: Some("ERR_INVALID_ARG_TYPE"),
    })
}

fn sign(algorithm: &str, pem: &str, data: &[u8]) -> Step<Vec<u8>> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    use rsa::{Pkcs1v15Sign, RsaPrivateKey};
    let algo = Algo::parse(algorithm).ok_or_else(|| Failure::error(format!("Invalid digest: {algorithm}")))?;
    if pem.contains("BEGIN EC PRIVATE KEY") || pem.contains("BEGIN ENCRYPTED PRIVATE KEY") {
        return Err(Failure::error("Only unencrypted RSA private keys are supported for signing"));
    }
    let key = RsaPrivateKey::from_pkcs1_pem(pem)
        .or_else(|_| RsaPrivateKey::from_pkcs8_pem(pem))
        .map_err(|e| Failure::error(format!("Invalid private key (RSA, PEM expected): {e}")))?;
    let hashed = algo.digest(data);
    let scheme = Pkcs1v15Sign { hash_len: Some(hashed.len()), prefix: algo.digest_info_prefix().into_boxed_slice() };
    key.sign(scheme, &hashed).map_err(|e| Failure::error(format!("Signing failed: {e}")))
}

/// `randomBytes(n).toString(encoding)`, then n8n's trimming to `n` characters.
fn generate(encoding: &str, length: f64) -> Step<String> {
    if encoding == "uuid" {
        return Ok(uuid::Uuid::new_v4().to_string());
    }
    if !(0.0..=2_147_483_647.0).contains(&length) {
        return Err(Failure {
            message: format!("The value of \"size\" is out of range. It must be >= 0 && <= 2147483647. Received {}", super::js_string(&json!(length))),
            name: "RangeError",
            code: Some("ERR_OUT_OF_RANGE"),
        });
    }
    let n = length as usize;
    let mut bytes = vec![0u8; n];
    rand::rng().fill_bytes(&mut bytes);
    let text = match encoding {
        // Node's ascii decoding drops the high bit.
        "ascii" => bytes.iter().map(|b| (b & 0x7f) as char).collect(),
        "base64" => binary::B64.encode(&bytes).chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').collect(),
        other => encode(&bytes, other)?,
    };
    Ok(text.chars().take(n).collect())
}

/// The node's parameters that hold for the whole run.
struct Run {
    action: String,
    version: f64,
    hmac_secret: String,
    sign_key: String,
}

fn one(ctx: &mut NodeContext<'_>, run: &Run, item: &Item, i: usize) -> Step<Item> {
    let property = ctx.param_str("dataPropertyName", i, "data")?;
    let value = ctx.param("value", i, json!(""))?;
    let default_type = if run.version >= 2.0 { "SHA256" } else { "MD5" };
    let mut binary_processed = false;
    let result = match run.action.as_str() {
        "generate" => {
            let encoding = ctx.param_str("encodingType", i, "uuid")?;
            let length = if encoding == "uuid" { 0.0 } else { ctx.param_f64("stringLength", i, 32.0)? };
            generate(&encoding, length)?
        }
        "hash" | "hmac" => {
            let ty = ctx.param_str("type", i, default_type)?;
            let encoding = ctx.param_str("encoding", i, "hex")?;
            let algo = Algo::parse(&ty).ok_or_else(|| {
                Failure::error(if run.action == "hash" { "Digest method not supported".to_string() } else { format!("Invalid digest: {ty}") })
            })?;
            let data = if ctx.param_bool("binaryData", i, false)? {
                let prop = ctx.param_str("binaryPropertyName", i, "data")?;
                binary_processed = true;
                binary::read(item, &prop, i)?.0
            } else {
                text_bytes(&value, "data")?
            };
            let bytes = if run.action == "hash" {
                algo.digest(&data)
            } else {
                let secret = if run.version >= 2.0 { run.hmac_secret.clone() } else { ctx.param_str("secret", i, "")? };
                algo.hmac(secret.as_bytes(), &data)
            };
            encode(&bytes, &encoding)?
        }
        "sign" => {
            let algorithm = ctx.param_str("algorithm", i, "")?;
            let encoding = ctx.param_str("encoding", i, "hex")?;
            let key = if run.version >= 2.0 { run.sign_key.clone() } else { ctx.param_str("privateKey", i, "")? };
            let data = text_bytes(&value, "chunk")?;
            encode(&sign(&algorithm, &key, &data)?, &encoding)?
        }
        other => return Err(Failure::error(format!("The action '{other}' is not supported"))),
    };
    // `set(item, ['json', name], value)`: the name is one key, dots and all.
    let mut json = match &*item.json {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let index_like = super::lodash::is_index(&property);
    json.insert(property, Value::String(result));
    let json = if index_like { super::lodash::js_order(json) } else { json };
    let mut out = item_from(Value::Object(json), i);
    if !binary_processed {
        out.binary = item.binary.clone();
    }
    Ok(out)
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let version = ctx.version();
    let action = ctx.param_str("action", 0, "hash")?;
    let mut run = Run { action, version, hmac_secret: String::new(), sign_key: String::new() };
    if version >= 2.0 && (run.action == "hmac" || run.action == "sign") {
        let creds = ctx.credential("crypto")?;
        let field = |k: &str| creds.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if run.action == "hmac" {
            run.hmac_secret = field("hmacSecret");
            if run.hmac_secret.is_empty() {
                return Err(EngineError::node("No HMAC secret set in credentials. Please add an HMAC secret to your Crypto credentials."));
            }
        } else {
            let raw = field("signPrivateKey");
            if raw.is_empty() {
                return Err(EngineError::node("No private key set in credentials. Please add a private key to your Crypto credentials."));
            }
            run.sign_key = super::jwt::format_private_key(&raw);
        }
    }
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        match one(ctx, &run, item, i) {
            Ok(it) => out.push(it),
            Err(f) if ctx.continue_on_fail() => {
                ctx.error_items.push(out.len());
                let error = if version >= 2.0 {
                    let mut e = Map::new();
                    e.insert("message".into(), json!(f.message));
                    e.insert("name".into(), json!(f.name));
                    if let Some(code) = f.code {
                        e.insert("code".into(), json!(code));
                    }
                    Value::Object(e)
                } else {
                    json!(f.message)
                };
                out.push(item_from(json!({ "error": error }), i));
            }
            Err(f) => return Err(EngineError::node(f.message)),
        }
    }
    Ok(NodeOutput::one(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_info_prefixes_match_rfc8017() {
        // RFC 8017 §9.2 note 1.
        assert_eq!(hex::encode(Algo::Sha256.digest_info_prefix()), "3031300d060960864801650304020105000420");
        assert_eq!(hex::encode(Algo::Sha512.digest_info_prefix()), "3051300d060960864801650304020305000440");
        assert_eq!(hex::encode(Algo::Sha1.digest_info_prefix()), "3021300906052b0e03021a05000414");
        assert_eq!(hex::encode(Algo::Md5.digest_info_prefix()), "3020300c06082a864886f70d020505000410");
    }

    #[test]
    fn every_catalog_algorithm_signs() {
        let d = crate::catalog::describe("n8n-nodes-base.crypto").expect("crypto in the catalog");
        let names: Vec<String> = d.properties.iter().filter(|p| p.name == "algorithm").flat_map(|p| p.options.iter().flatten()).filter_map(|o| o.get("value")?.as_str().map(String::from)).collect();
        assert!(names.len() > 20);
        for n in names {
            assert!(Algo::parse(&n).is_some(), "{n}");
        }
    }

    #[test]
    fn node_argument_errors() {
        let e = text_bytes(&json!(12), "data").err().map(|f| f.message).unwrap_or_default();
        assert_eq!(e, "The \"data\" argument must be of type string or an instance of Buffer, TypedArray, or DataView. Received type number (12)");
    }

    #[test]
    fn generated_strings_have_the_asked_length_and_alphabet() -> std::result::Result<(), String> {
        for enc in ["hex", "base64", "ascii"] {
            let s = generate(enc, 40.0).map_err(|f| f.message)?;
            // base64 of 40 bytes has 56 characters; n8n drops `+`, `/`, `=` and keeps 40.
            assert_eq!(s.chars().count(), 40, "{enc}");
            match enc {
                "hex" => assert!(s.chars().all(|c| c.is_ascii_hexdigit())),
                "base64" => assert!(s.chars().all(|c| c.is_ascii_alphanumeric())),
                _ => assert!(s.chars().all(|c| (c as u32) < 128)),
            }
        }
        Ok(())
    }
}
