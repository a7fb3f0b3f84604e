//! JWT (`n8n-nodes-base.jwt`, v1): sign, decode and verify tokens with the
//! `jwtAuth` credential (a passphrase for HS256/384/512, PEM keys for
//! RS256/384/512), with the `jsonwebtoken` package's claims handling and
//! error texts. PS* and ES* algorithms are refused clearly.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::binary::each_item;
use super::{NodeContext, NodeOutput};
use crate::error::{EngineError, Result};

const B64URL: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let creds = credential(ctx)?;
    let out = each_item(ctx, &input, |ctx, _item, i, out| {
        let op = ctx.param_str("operation", i, "sign")?;
        let alg = match ctx.param_str("options.algorithm", i, "")? {
            a if a.is_empty() => creds.get("algorithm").and_then(Value::as_str).unwrap_or("HS256").to_string(),
            a => a,
        };
        let json = match op.as_str() {
            "sign" => json!({ "token": sign(ctx, i, &creds, &alg)? }),
            "decode" => {
                let token = ctx.param_str("token", i, "")?;
                let (header, payload, signature) = split(&token)?;
                if ctx.param_bool("options.complete", i, false)? {
                    json!({ "header": header, "payload": payload, "signature": signature })
                } else {
                    payload
                }
            }
            "verify" => verify(ctx, i, &creds, &alg)?,
            other => return Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
        };
        out.push(crate::data::item_from(json, i));
        Ok(())
    })?;
    Ok(NodeOutput::one(out))
}

fn credential(ctx: &NodeContext<'_>) -> Result<Value> {
    let reference = ctx.node.credentials.as_ref().and_then(|c| c.get("jwtAuth")).cloned().unwrap_or(Value::Null);
    let provider = ctx.env.host.credentials.clone().ok_or_else(|| EngineError::Host("no credentials provider configured".into()))?;
    provider.get("jwtAuth", &reference).map_err(|e| EngineError::node(format!("Node does not have credentials of type jwtAuth: {e}")))
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

fn sign(ctx: &mut NodeContext<'_>, i: usize, creds: &Value, alg: &str) -> Result<String> {
    let mut payload = if ctx.param_bool("useJson", i, false)? {
        match ctx.param("claimsJson", i, json!({}))? {
            Value::String(s) => serde_json::from_str(&s).map_err(|_| EngineError::node("Claims (JSON) must be a valid JSON object"))?,
            v => v,
        }
    } else {
        claims(ctx.param("claims", i, json!({}))?)
    };
    let Value::Object(p) = &mut payload else { return Err(EngineError::node("Claims must be an object")) };
    let iat = now_secs();
    if !p.contains_key("iat") {
        p.insert("iat".into(), json!(iat));
    }
    // jsonwebtoken turns the relative `expiresIn` / `notBefore` into timestamps
    for k in ["exp", "nbf"] {
        if p.shift_remove(&format!("__relative_{k}")).is_some() {
            let secs = p.get(k).and_then(Value::as_f64).unwrap_or(0.0) as i64;
            p.insert(k.into(), json!(iat + secs));
        }
    }
    let mut header = Map::new();
    header.insert("alg".into(), json!(alg));
    header.insert("typ".into(), json!("JWT"));
    let kid = ctx.param_str("options.kid", i, "")?;
    if !kid.is_empty() {
        header.insert("kid".into(), json!(kid));
    }
    let input = format!(
        "{}.{}",
        B64URL.encode(serde_json::to_vec(&header).map_err(|e| EngineError::node(e.to_string()))?),
        B64URL.encode(serde_json::to_vec(&payload).map_err(|e| EngineError::node(e.to_string()))?)
    );
    let sig = signature(alg, creds, input.as_bytes())?;
    Ok(format!("{input}.{}", B64URL.encode(sig)))
}

/// The node's claims collection → a payload (`audience` → `aud`, …; the
/// relative `expiresIn` / `notBefore` seconds are marked for `sign`).
fn claims(c: Value) -> Value {
    let mut p = Map::new();
    for (k, v) in c.as_object().into_iter().flatten() {
        let (key, v) = match k.as_str() {
            "audience" => ("aud", audience(v)),
            "issuer" => ("iss", v.clone()),
            "jwtid" => ("jti", v.clone()),
            "subject" => ("sub", v.clone()),
            "expiresIn" => {
                p.insert("__relative_exp".into(), Value::Bool(true));
                ("exp", v.clone())
            }
            "notBefore" => {
                p.insert("__relative_nbf".into(), Value::Bool(true));
                ("nbf", v.clone())
            }
            other => (other, v.clone()),
        };
        p.insert(key.into(), v);
    }
    Value::Object(p)
}

fn audience(v: &Value) -> Value {
    match v {
        Value::String(s) if s.contains(',') => Value::Array(s.split(',').map(|x| json!(x.trim())).collect()),
        other => other.clone(),
    }
}

fn secret(creds: &Value) -> Vec<u8> {
    creds.get("secret").and_then(Value::as_str).unwrap_or("").as_bytes().to_vec()
}

fn pem<'c>(creds: &'c Value, key: &str) -> Result<&'c str> {
    creds.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).ok_or_else(|| EngineError::node(format!("The credential has no {key}")))
}

fn hmac_sig(alg: &str, key: &[u8], data: &[u8]) -> Result<Vec<u8>> {
    macro_rules! mac {
        ($h:ty) => {{
            let mut m = Hmac::<$h>::new_from_slice(key).map_err(|e| EngineError::node(e.to_string()))?;
            m.update(data);
            m.finalize().into_bytes().to_vec()
        }};
    }
    Ok(match alg {
        "HS256" => mac!(Sha256),
        "HS384" => mac!(Sha384),
        "HS512" => mac!(Sha512),
        _ => return Err(EngineError::node("invalid algorithm")),
    })
}

fn private_key(creds: &Value) -> Result<rsa::RsaPrivateKey> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs8::DecodePrivateKey;
    let p = pem(creds, "privateKey")?;
    rsa::RsaPrivateKey::from_pkcs1_pem(p)
        .or_else(|_| rsa::RsaPrivateKey::from_pkcs8_pem(p))
        .map_err(|_| EngineError::node("secretOrPrivateKey must be an asymmetric key when using RS256"))
}

fn public_key(creds: &Value) -> Result<rsa::RsaPublicKey> {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::DecodePublicKey;
    let p = pem(creds, "publicKey")?;
    rsa::RsaPublicKey::from_public_key_pem(p)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(p))
        .map_err(|_| EngineError::node("secretOrPublicKey must be an asymmetric key when using RS256"))
}

fn digest(alg: &str, data: &[u8]) -> Vec<u8> {
    match &alg[2..] {
        "384" => Sha384::digest(data).to_vec(),
        "512" => Sha512::digest(data).to_vec(),
        _ => Sha256::digest(data).to_vec(),
    }
}

fn rsa_scheme(alg: &str) -> Result<rsa::Pkcs1v15Sign> {
    Ok(match alg {
        "RS256" => rsa::Pkcs1v15Sign::new::<Sha256>(),
        "RS384" => rsa::Pkcs1v15Sign::new::<Sha384>(),
        "RS512" => rsa::Pkcs1v15Sign::new::<Sha512>(),
        _ => return Err(EngineError::node("invalid algorithm")),
    })
}

fn unsupported(alg: &str) -> EngineError {
    EngineError::node(format!("The algorithm {alg} is not supported by this engine (use HS256/384/512 or RS256/384/512)"))
}

fn signature(alg: &str, creds: &Value, data: &[u8]) -> Result<Vec<u8>> {
    match alg {
        "HS256" | "HS384" | "HS512" => hmac_sig(alg, &secret(creds), data),
        "RS256" | "RS384" | "RS512" => {
            let key = private_key(creds)?;
            key.sign(rsa_scheme(alg)?, &digest(alg, data)).map_err(|e| EngineError::node(e.to_string()))
        }
        "PS256" | "PS384" | "PS512" | "ES256" | "ES384" | "ES512" => Err(unsupported(alg)),
        other => Err(EngineError::node(format!("\"{other}\" is not a valid algorithm"))),
    }
}

fn part(s: &str) -> Result<Value> {
    let bytes = B64URL.decode(s.trim_end_matches('=')).map_err(|_| EngineError::node("jwt malformed"))?;
    serde_json::from_slice(&bytes).map_err(|_| EngineError::node("jwt malformed"))
}

fn split(token: &str) -> Result<(Value, Value, String)> {
    let parts: Vec<&str> = token.split('.').collect();
    if token.is_empty() {
        return Err(EngineError::node("jwt must be provided"));
    }
    if parts.len() != 3 {
        return Err(EngineError::node("jwt malformed"));
    }
    Ok((part(parts[0])?, part(parts[1])?, parts[2].to_string()))
}

fn verify(ctx: &mut NodeContext<'_>, i: usize, creds: &Value, alg: &str) -> Result<Value> {
    let token = ctx.param_str("token", i, "")?;
    let (header, payload, sig) = split(&token)?;
    if header.get("alg").and_then(Value::as_str) != Some(alg) {
        return Err(EngineError::node("invalid algorithm"));
    }
    let signed = &token[..token.rfind('.').unwrap_or(0)];
    let sig = B64URL.decode(&sig).map_err(|_| EngineError::node("invalid signature"))?;
    let ok = match alg {
        "HS256" | "HS384" | "HS512" => {
            use subtle::ConstantTimeEq;
            bool::from(hmac_sig(alg, &secret(creds), signed.as_bytes())?.ct_eq(&sig))
        }
        "RS256" | "RS384" | "RS512" => {
            let key = public_key(creds)?;
            key.verify(rsa_scheme(alg)?, &digest(alg, signed.as_bytes()), &sig).is_ok()
        }
        _ => return Err(unsupported(alg)),
    };
    if !ok {
        return Err(EngineError::node("invalid signature"));
    }
    let tolerance = ctx.param_f64("options.clockTolerance", i, 0.0)? as i64;
    let now = now_secs();
    if !ctx.param_bool("options.ignoreNotBefore", i, false)? {
        if let Some(nbf) = payload.get("nbf").and_then(Value::as_i64) {
            if nbf > now + tolerance {
                return Err(EngineError::node("jwt not active"));
            }
        }
    }
    if !ctx.param_bool("options.ignoreExpiration", i, false)? {
        if let Some(exp) = payload.get("exp").and_then(Value::as_i64) {
            if now >= exp + tolerance {
                return Err(EngineError::node("jwt expired"));
            }
        }
    }
    Ok(if ctx.param_bool("options.complete", i, false)? {
        json!({ "header": header, "payload": payload, "signature": B64URL.encode(sig) })
    } else {
        payload
    })
}

