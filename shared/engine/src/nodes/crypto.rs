//! Crypto v1: hash, HMAC, RSA sign, generate random values.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use md5::Md5;
use serde_json::{json, Value};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::{set_path, NodeContext, NodeOutput};
use crate::data::{item_from, Item};
use crate::error::{EngineError, Result};

fn hash(ty: &str, data: &[u8]) -> Result<Vec<u8>> {
    Ok(match ty {
        "MD5" => Md5::digest(data).to_vec(),
        "SHA1" => Sha1::digest(data).to_vec(),
        "SHA256" => Sha256::digest(data).to_vec(),
        "SHA384" => Sha384::digest(data).to_vec(),
        "SHA512" => Sha512::digest(data).to_vec(),
        "SHA3-256" => sha3::Sha3_256::digest(data).to_vec(),
        "SHA3-384" => sha3::Sha3_384::digest(data).to_vec(),
        "SHA3-512" => sha3::Sha3_512::digest(data).to_vec(),
        other => return Err(EngineError::node(format!("Unsupported hash type '{other}'"))),
    })
}

fn hmac(ty: &str, key: &[u8], data: &[u8]) -> Result<Vec<u8>> {
    macro_rules! mac {
        ($h:ty) => {{
            let mut m = <Hmac<$h>>::new_from_slice(key).map_err(|e| EngineError::node(e.to_string()))?;
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }};
    }
    Ok(match ty {
        "MD5" => mac!(Md5),
        "SHA1" => mac!(Sha1),
        "SHA256" => mac!(Sha256),
        "SHA384" => mac!(Sha384),
        "SHA512" => mac!(Sha512),
        "SHA3-256" => mac!(sha3::Sha3_256),
        "SHA3-384" => mac!(sha3::Sha3_384),
        "SHA3-512" => mac!(sha3::Sha3_512),
        other => return Err(EngineError::node(format!("Unsupported HMAC type '{other}'"))),
    })
}

fn sign(algorithm: &str, pem: &str, data: &[u8]) -> Result<Vec<u8>> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    use rsa::{Pkcs1v15Sign, RsaPrivateKey};
    let key = RsaPrivateKey::from_pkcs1_pem(pem)
        .or_else(|_| RsaPrivateKey::from_pkcs8_pem(pem))
        .map_err(|e| EngineError::node(format!("Invalid private key: {e}")))?;
    let digest = algorithm.trim_start_matches("RSA-").to_ascii_uppercase();
    let (scheme, hashed) = match digest.as_str() {
        "MD4" => (Pkcs1v15Sign::new::<md4::Md4>(), md4::Md4::digest(data).to_vec()),
        "MD5" => (Pkcs1v15Sign::new::<Md5>(), Md5::digest(data).to_vec()),
        "SHA1" => (Pkcs1v15Sign::new::<Sha1>(), Sha1::digest(data).to_vec()),
        "SHA256" => (Pkcs1v15Sign::new::<Sha256>(), Sha256::digest(data).to_vec()),
        "SHA384" => (Pkcs1v15Sign::new::<Sha384>(), Sha384::digest(data).to_vec()),
        "SHA512" => (Pkcs1v15Sign::new::<Sha512>(), Sha512::digest(data).to_vec()),
        other => return Err(EngineError::node(format!("Unsupported signing algorithm '{other}'"))),
    };
    key.sign(scheme, &hashed).map_err(|e| EngineError::node(format!("Signing failed: {e}")))
}

fn encode(bytes: &[u8], enc: &str) -> String {
    if enc == "base64" {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    } else {
        hex::encode(bytes)
    }
}

fn binary_bytes(item: &Item, prop: &str) -> Result<Vec<u8>> {
    let data = item
        .binary
        .as_ref()
        .and_then(|b| b.get(prop))
        .and_then(|b| b.get("data"))
        .and_then(|d| d.as_str())
        .ok_or_else(|| EngineError::node(format!("This operation expects the node's input data to contain a binary file '{prop}', but none was found")))?;
    base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| EngineError::node(e.to_string()))
}

fn one(ctx: &mut NodeContext<'_>, item: &Item, i: usize) -> Result<Item> {
    let action = ctx.param_str("action", i, "hash")?;
    let prop = ctx.param_str("dataPropertyName", i, "data")?;
    let binary = ctx.param_bool("binaryData", i, false)?;
    let input: Vec<u8> = if action == "generate" {
        vec![]
    } else if binary {
        let bp = ctx.param_str("binaryPropertyName", i, "data")?;
        binary_bytes(item, &bp)?
    } else {
        super::js_string(&ctx.param("value", i, json!(""))?).into_bytes()
    };
    let result = match action.as_str() {
        "hash" => encode(&hash(&ctx.param_str("type", i, "MD5")?, &input)?, &ctx.param_str("encoding", i, "hex")?),
        "hmac" => {
            let secret = ctx.param_str("secret", i, "")?;
            encode(&hmac(&ctx.param_str("type", i, "MD5")?, secret.as_bytes(), &input)?, &ctx.param_str("encoding", i, "hex")?)
        }
        "sign" => {
            let sig = sign(&ctx.param_str("algorithm", i, "RSA-SHA256")?, &ctx.param_str("privateKey", i, "")?, &input)?;
            encode(&sig, &ctx.param_str("encoding", i, "hex")?)
        }
        "generate" => {
            let ty = ctx.param_str("encodingType", i, "uuid")?;
            let len = ctx.param_f64("stringLength", i, 32.0)?.max(0.0) as usize;
            let mut bytes = vec![];
            while bytes.len() < len {
                bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
            }
            match ty.as_str() {
                "uuid" => uuid::Uuid::new_v4().to_string(),
                "hex" => hex::encode(&bytes)[..len].to_string(),
                "base64" => base64::engine::general_purpose::STANDARD.encode(&bytes)[..len].to_string(),
                _ => bytes.iter().map(|b| (b'!' + b % 94) as char).take(len).collect(),
            }
        }
        other => return Err(EngineError::node(format!("The action '{other}' is not supported"))),
    };
    let mut json = if item.json.is_object() { item.json.object_with_room(1) } else { json!({}) };
    set_path(&mut json, &prop, Value::String(result));
    let mut out = item_from(json, i);
    out.binary = item.binary.clone();
    Ok(out)
}

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let mut out = vec![];
    for (i, item) in input.iter().enumerate() {
        match one(ctx, item, i) {
            Ok(it) => out.push(it),
            Err(e) if ctx.continue_on_fail() => ctx.error_item(&mut out, &e, i),
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}
