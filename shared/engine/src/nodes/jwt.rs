//! JWT (`n8n-nodes-base.jwt`, v1): sign, decode and verify tokens with the
//! `jwtAuth` credential (a passphrase for HS256/384/512, PEM keys for
//! RS256/384/512), with the `jsonwebtoken` package's claims handling and
//! error texts. PS* and ES* algorithms are refused clearly.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::{NodeContext, NodeOutput};
use crate::error::{EngineError, Result};

const B64URL: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// n8n's default for "Payload Claims (JSON)".
const DEFAULT_CLAIMS_JSON: &str = "{\n  \"my_field_1\": \"value 1\",\n  \"my_field_2\": \"value 2\"\n}\n";

pub fn execute(ctx: &mut NodeContext<'_>) -> Result<NodeOutput> {
    let input = ctx.input(0);
    let creds = ctx.credential("jwtAuth")?;
    let op = ctx.param_str("operation", 0, "sign")?;
    let mut out = Vec::with_capacity(input.len());
    for (i, item) in input.iter().enumerate() {
        match one(ctx, &op, &creds, i) {
            Ok(json) => out.push(crate::data::item_from(json, i)),
            // n8n keeps the input's json on a failed item
            Err(e) if ctx.continue_on_fail() => {
                ctx.error_items.push(out.len());
                out.push(crate::data::item_from(Value::clone(&item.json), i));
                let _ = e;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(NodeOutput::one(out))
}

fn one(ctx: &mut NodeContext<'_>, op: &str, creds: &Value, i: usize) -> Result<Value> {
    let alg = match ctx.param_str("options.algorithm", i, "")? {
        a if a.is_empty() => creds.get("algorithm").and_then(Value::as_str).unwrap_or("HS256").to_string(),
        a => a,
    };
    match op {
        "sign" => Ok(json!({ "token": sign(ctx, i, creds, &alg)? })),
        "decode" => {
            let token = token(ctx, i)?;
            // jsonwebtoken's decode gives null for what it cannot read
            Ok(match split(&token) {
                Ok((header, payload, signature)) if ctx.param_bool("options.complete", i, false)? => {
                    json!({ "header": header, "payload": payload, "signature": signature })
                }
                Ok((_, payload, _)) => json!({ "payload": payload }),
                Err(_) => json!({ "payload": null }),
            })
        }
        "verify" => verify(ctx, i, creds, &alg).map_err(|e| match e {
            EngineError::Node { message, .. } if message == "invalid signature" => EngineError::node_with(
                "The JWT token can't be verified",
                "Be sure that the provided JWT token is correctly encoded and matches the selected credentials",
            ),
            other => other,
        }),
        other => Err(EngineError::node(format!("The operation \"{other}\" is not supported!"))),
    }
}

fn token(ctx: &mut NodeContext<'_>, i: usize) -> Result<String> {
    let t = ctx.param_str("token", i, "")?;
    if t.is_empty() {
        return Err(EngineError::node_with("The JWT token was not provided", "Be sure to add a valid JWT token to the 'Token' parameter"));
    }
    Ok(t)
}

fn json_object(v: Value, what: &str) -> Result<Value> {
    let v = match v {
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => serde_json::from_str(&s).map_err(|_| EngineError::node(format!("{what} must be a valid JSON object")))?,
        v => v,
    };
    if v.is_object() {
        Ok(v)
    } else {
        Err(EngineError::node(format!("{what} must be a valid JSON object")))
    }
}

/// jsonwebtoken's `sign`: the payload as given (n8n passes its claims
/// collection through with its own key names) plus `iat`; header `alg`,
/// `typ`, `kid`, then the node's header claims.
fn sign(ctx: &mut NodeContext<'_>, i: usize, creds: &Value, alg: &str) -> Result<String> {
    let mut payload = if ctx.param_bool("useJson", i, false)? {
        json_object(ctx.param("claimsJson", i, json!(DEFAULT_CLAIMS_JSON))?, "Payload Claims (JSON)")?
    } else {
        json_object(ctx.param("claims", i, json!({}))?, "Payload Claims")?
    };
    if let Value::Object(p) = &mut payload {
        if !p.contains_key("iat") {
            p.insert("iat".into(), json!(ctx.now().timestamp()));
        }
    }
    let mut header = Map::new();
    header.insert("alg".into(), json!(alg));
    header.insert("typ".into(), json!("JWT"));
    let kid = ctx.param_str("options.kid", i, "")?;
    if !kid.is_empty() {
        header.insert("kid".into(), json!(kid));
    }
    if let Some(extra) = ctx.param_opt("headerClaims", i)? {
        if let Value::Object(m) = json_object(extra, "Header Claims (JSON)")? {
            header.extend(m);
        }
    }
    let input = format!(
        "{}.{}",
        B64URL.encode(serde_json::to_vec(&header).map_err(|e| EngineError::node(e.to_string()))?),
        B64URL.encode(serde_json::to_vec(&payload).map_err(|e| EngineError::node(e.to_string()))?)
    );
    let sig = signature(alg, creds, input.as_bytes())?;
    Ok(format!("{input}.{}", B64URL.encode(sig)))
}

fn secret(creds: &Value) -> Vec<u8> {
    creds.get("secret").and_then(Value::as_str).unwrap_or("").as_bytes().to_vec()
}

/// The credential's PEM key, re-wrapped as n8n's `formatPrivateKey` does for
/// keys pasted without their line breaks.
fn pem(creds: &Value, key: &str) -> Result<String> {
    let raw = creds.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty()).ok_or_else(|| EngineError::node(format!("The credential has no {key}")))?;
    Ok(format_private_key(raw))
}

/// n8n's `formatPrivateKey`: a PEM key pasted without its line breaks (or
/// with literal `\\n`) gets them back.
pub(crate) fn format_private_key(raw: &str) -> String {
    let raw = raw.trim().replace("\\n", "\n");
    let (Some(b), Some(e)) = (raw.find("-----BEGIN"), raw.rfind("-----END")) else { return raw };
    let header_end = raw[b + 10..].find("-----").map(|x| b + 10 + x + 5).unwrap_or(b);
    if header_end >= e {
        return raw;
    }
    let body: String = raw[header_end..e].chars().filter(|c| !c.is_whitespace()).collect();
    let lines: Vec<String> = body.as_bytes().chunks(64).map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    format!("{}\n{}\n{}", &raw[b..header_end], lines.join("\n"), raw[e..].trim())
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
    rsa::RsaPrivateKey::from_pkcs1_pem(&p)
        .or_else(|_| rsa::RsaPrivateKey::from_pkcs8_pem(&p))
        .map_err(|_| EngineError::node("secretOrPrivateKey must be an asymmetric key when using RS256"))
}

fn public_key(creds: &Value) -> Result<rsa::RsaPublicKey> {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::DecodePublicKey;
    let p = pem(creds, "publicKey")?;
    rsa::RsaPublicKey::from_public_key_pem(&p)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(&p))
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
    let token = token(ctx, i)?;
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
    let now = ctx.now().timestamp();
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
        json!({ "payload": payload })
    })
}

