//! Credential types as data: each type's fields (the form a person fills
//! in), whether it is a generic HTTP auth type, and how it is tested. One
//! file per type in `catalog/credentials/`, collected by `build.rs` like the
//! node descriptions, so a service node and its credential type arrive
//! together without touching a shared list.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{NodeDescription, NodeProperty};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CredentialType {
    /// Type name, e.g. `httpHeaderAuth` (the key in a node's `credentials`).
    pub name: String,
    pub display_name: String,
    pub description: String,
    /// Generic HTTP auth (header, query, basic, bearer, custom, OAuth2): the
    /// type alone does not say which service a credential is for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generic_auth: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// The fields of the credential's (secret) data.
    pub properties: Vec<NodeProperty>,
    /// How `credentials(test)` checks a credential of this type; `None`: it
    /// has no connection test (keys a node uses locally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<CredentialTest>,
    /// How a service node (or HTTP Request with this predefined type) puts
    /// the credential on a request (n8n's `authenticate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authenticate: Option<Authenticate>,
}

/// n8n's `IAuthenticateGeneric`: values are templates over the credential's
/// own fields (`=Bearer {{$credentials.accessToken}}`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Authenticate {
    Generic {
        #[serde(default)]
        properties: AuthenticateProperties,
    },
    /// RFC 7523: a JWT the credential signs with its private key is
    /// exchanged at `tokenUrl` for an access token, sent as a bearer token
    /// (a service account). The scopes are the node's (its description's
    /// credential entry names them); `testScopes` are the connection test's.
    #[serde(rename_all = "camelCase")]
    JwtBearer {
        token_url: String,
        #[serde(default)]
        test_scopes: Vec<String>,
    },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AuthenticateProperties {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub headers: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub qs: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub body: Map<String, Value>,
    /// HTTP basic auth (`{username, password}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<BasicAuth>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BasicAuth {
    pub username: String,
    pub password: String,
}

/// A credential applied to a request: what [`Authenticate`] resolved to.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct AppliedAuth {
    pub headers: Vec<(String, String)>,
    pub qs: Map<String, Value>,
    pub body: Map<String, Value>,
}

impl Authenticate {
    /// Resolves the templates against the credential's data.
    pub fn apply(&self, data: &Value) -> Result<AppliedAuth, String> {
        let Authenticate::Generic { properties: p } = self else {
            return Err("this credential is exchanged for a token first (a service account); apply it with the token".into());
        };
        let mut out = AppliedAuth::default();
        for (k, v) in &p.headers {
            out.headers.push((k.clone(), resolve_credential_refs(v, data)?));
        }
        for (k, v) in &p.qs {
            out.qs.insert(k.clone(), Value::String(resolve_credential_refs(v, data)?));
        }
        for (k, v) in &p.body {
            out.body.insert(k.clone(), Value::String(resolve_credential_refs(v, data)?));
        }
        if let Some(basic) = &p.auth {
            use base64::Engine as _;
            let user = resolve_credential_refs(&Value::String(basic.username.clone()), data)?;
            let pass = resolve_credential_refs(&Value::String(basic.password.clone()), data)?;
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            out.headers.push(("authorization".into(), format!("Basic {token}")));
        }
        Ok(out)
    }
}

/// A type's connection test.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum CredentialTest {
    /// One HTTP request with the credential applied as the HTTP Request
    /// node applies it; a 2xx answer passes.
    Request { request: Box<TestRequest> },
    /// The OAuth2 client credentials exchange at the type's token URL; an
    /// access token in the answer passes.
    /// A credential a person connects passes when it holds the provider's
    /// token (`oauth2` in a file).
    #[serde(rename = "oauth2ClientCredentials", alias = "oauth2")]
    OAuth2ClientCredentials,
    /// A connection with the credential over the service's own protocol
    /// (SMTP, a database): connected and logged in passes.
    Connection,
    /// The type's JWT bearer exchange (its `authenticate`) with its test scopes.
    JwtBearer,
}

/// Values may reference the credential's own fields: `={{$credentials.testUrl}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TestRequest {
    #[serde(default = "get")]
    pub method: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub headers: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub qs: Map<String, Value>,
    /// Checks on a 2xx answer (n8n's credential test `rules`), for services
    /// that answer failures with 200 (Slack's `{ok:false,error}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<TestRule>,
}

/// n8n's `ICredentialTestRequest` rules.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", content = "properties", rename_all = "camelCase")]
pub enum TestRule {
    /// The test fails with `message` when the body's `key` (a dotted path) equals `value`.
    ResponseSuccessBody { key: String, value: Value, message: String },
}

impl TestRule {
    /// The failure message when the rule refuses `body`.
    pub fn refuses(&self, body: &Value) -> Option<&str> {
        match self {
            TestRule::ResponseSuccessBody { key, value, message } => (crate::nodes::get_path(body, key) == Some(value)).then_some(message.as_str()),
        }
    }
}

fn get() -> String {
    "GET".into()
}

pub(super) mod files {
    include!(concat!(env!("OUT_DIR"), "/credential_files.rs"));
}

/// Every credential type (parsed once from the bundled files), by name.
pub fn credential_types() -> &'static [CredentialType] {
    static TYPES: OnceLock<Vec<CredentialType>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let mut all: Vec<CredentialType> = files::CREDENTIALS
            .files()
            .into_iter()
            // A malformed file is a build mistake that `tests::every_file_parses` reports.
            .filter_map(|(_, json)| serde_json::from_str(&json).ok())
            .collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    })
}

pub fn credential_type(name: &str) -> Option<&'static CredentialType> {
    credential_types().iter().find(|t| t.name == name)
}

/// Ranked search over names, display names and descriptions; service types
/// rank above generic ones at equal relevance (a dedicated type is almost
/// always the better choice). An empty query lists every type.
pub fn search_credential_types(query: &str) -> Vec<&'static CredentialType> {
    let q = query.trim().to_lowercase();
    let terms: Vec<&str> = q.split_whitespace().collect();
    let mut scored: Vec<(u32, &CredentialType)> = credential_types()
        .iter()
        .filter_map(|t| {
            let name = t.name.to_lowercase();
            let display = t.display_name.to_lowercase();
            let desc = t.description.to_lowercase();
            let mut score = 0;
            for term in &terms {
                let s = if name == *term || display == *term {
                    100
                } else if name.contains(term) || display.contains(term) {
                    40
                } else if desc.contains(term) {
                    5
                } else {
                    return None;
                };
                score += s;
            }
            Some((score + u32::from(!t.generic_auth), t))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().map(|(_, t)| t).collect()
}

/// Node types that accept credentials of `cred_type` (their description
/// lists it), in catalog order.
pub fn nodes_accepting(cred_type: &str) -> Vec<&'static NodeDescription> {
    super::all()
        .iter()
        .copied()
        .filter(|d| d.credentials.iter().any(|c| c.get("name").and_then(Value::as_str) == Some(cred_type)))
        .collect()
}

impl CredentialType {
    /// Whether a field is shown for these data (its `displayOptions.show`
    /// conditions hold against the other fields, defaults filled in).
    fn shown(&self, p: &NodeProperty, data: &Map<String, Value>) -> bool {
        let Some(show) = p.display_options.as_ref().and_then(|d| d.get("show")).and_then(Value::as_object) else {
            return true;
        };
        show.iter().all(|(field, allowed)| {
            let value = data
                .get(field)
                .cloned()
                .or_else(|| self.properties.iter().find(|q| &q.name == field).map(|q| q.default.clone()))
                .unwrap_or(Value::Null);
            allowed.as_array().is_some_and(|a| a.contains(&value))
        })
    }

    /// Checks credential data against the type's fields: an object, no
    /// unknown field, every shown required field filled, values of the
    /// field's type and among its options. Messages name fields, never values.
    pub fn validate_data(&self, data: &Value) -> Result<(), String> {
        let Some(obj) = data.as_object() else {
            return Err(format!("{} data must be a JSON object of its fields", self.name));
        };
        for key in obj.keys() {
            if !self.properties.iter().any(|p| &p.name == key) {
                let known: Vec<&str> = self.properties.iter().map(|p| p.name.as_str()).collect();
                return Err(format!("{} has no field {key:?}; its fields are {}", self.name, known.join(", ")));
            }
        }
        for p in &self.properties {
            let v = obj.get(&p.name);
            if p.required && self.shown(p, obj) && v.is_none_or(|v| v.is_null() || v.as_str().is_some_and(|s| s.trim().is_empty())) {
                return Err(format!("{} needs the field {:?} ({})", self.name, p.name, p.display_name));
            }
            let Some(v) = v.filter(|v| !v.is_null()) else { continue };
            let ok = match p.prop_type.as_str() {
                "boolean" => v.is_boolean(),
                "number" => v.is_number(),
                "json" => v.is_object() || v.is_array() || v.as_str().is_some_and(|s| s.trim().is_empty() || serde_json::from_str::<Value>(s).is_ok()),
                "options" => p.options.iter().flatten().any(|o| o.get("value") == Some(v)),
                _ => v.is_string(),
            };
            if !ok {
                let expected = match p.prop_type.as_str() {
                    "options" => {
                        let values: Vec<String> = p.options.iter().flatten().filter_map(|o| o.get("value")).map(Value::to_string).collect();
                        format!("one of {}", values.join(", "))
                    }
                    "json" => "JSON (an object, or a string holding one)".into(),
                    other => format!("a {other}"),
                };
                return Err(format!("{} field {:?} must be {expected}", self.name, p.name));
            }
        }
        Ok(())
    }
}

/// Resolves `$credentials` references in a test request value: a string
/// starting with `=` has each `{{ $credentials.<field> }}` replaced by that
/// field's value (`$credentials.<field> || 'fallback'` when it is empty);
/// anything else is taken literally. Other expressions are refused (a test
/// request is data, not code).
pub fn resolve_credential_refs(template: &Value, data: &Value) -> Result<String, String> {
    let text = match template {
        Value::String(s) => s.as_str(),
        other => return Ok(other.to_string()),
    };
    let Some(body) = text.strip_prefix('=') else { return Ok(text.to_owned()) };
    let mut out = String::new();
    let mut rest = body;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").ok_or("unclosed {{ in a test request")? + start;
        let inner = rest[start + 2..end].trim();
        let refused = || format!("a test request may only reference $credentials fields, not {inner:?}");
        let (reference, fallback) = match inner.split_once("||") {
            Some((r, f)) => {
                let f = f.trim();
                let quoted = f.len() >= 2 && ((f.starts_with('\'') && f.ends_with('\'')) || (f.starts_with('"') && f.ends_with('"')));
                (r.trim(), Some(if quoted { &f[1..f.len() - 1] } else { return Err(refused()) }))
            }
            None => (inner, None),
        };
        let field = reference.strip_prefix("$credentials.").filter(|f| f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).ok_or_else(refused)?;
        let value = match data.get(field) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        out.push_str(if value.is_empty() { fallback.unwrap_or("") } else { &value });
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_file_parses_and_names_its_type() {
        let files = files::CREDENTIALS.files();
        for (file, json) in &files {
            let t: CredentialType = serde_json::from_str(json).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(format!("{}.json", t.name), *file, "{file} holds {}", t.name);
            assert!(!t.properties.is_empty(), "{file} has no fields");
        }
        assert_eq!(credential_types().len(), files.len());
    }

    #[test]
    fn every_credential_a_node_accepts_has_a_type() {
        for d in super::super::all() {
            for c in &d.credentials {
                let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
                assert!(credential_type(name).is_some(), "{} accepts {name}, which has no file in catalog/credentials", d.name);
            }
        }
        for generic in ["httpHeaderAuth", "httpQueryAuth", "httpBasicAuth", "httpBearerAuth", "httpCustomAuth", "oAuth2Api"] {
            let t = credential_type(generic).unwrap();
            assert!(t.generic_auth && t.test.is_some(), "{generic}");
            assert!(nodes_accepting(generic).iter().any(|n| n.name == "n8n-nodes-base.httpRequest"), "{generic}");
        }
    }

    #[test]
    fn data_is_checked_against_the_fields_without_echoing_values() {
        let header = credential_type("httpHeaderAuth").unwrap();
        assert!(header.validate_data(&json!({"name": "X-Key", "value": "s3cr3t-value"})).is_ok());
        let e = header.validate_data(&json!({"name": "X-Key"})).unwrap_err();
        assert!(e.contains("\"value\""), "{e}");
        let e = header.validate_data(&json!({"name": "X-Key", "value": "s3cr3t-value", "token": "t0ken-value"})).unwrap_err();
        assert!(e.contains("no field \"token\"") && !e.contains("t0ken-value"), "{e}");
        assert!(header.validate_data(&json!({"name": "X-Key", "value": 5})).unwrap_err().contains("must be a string"));
        assert!(header.validate_data(&json!("x")).is_err());
        let oauth = credential_type("oAuth2Api").unwrap();
        let ok = json!({"accessTokenUrl": "https://a/token", "clientId": "id", "clientSecret": "sec"});
        assert!(oauth.validate_data(&ok).is_ok());
        let mut bad = ok.clone();
        bad["grantType"] = json!("password");
        assert!(oauth.validate_data(&bad).unwrap_err().contains("one of \"authorizationCode\", \"clientCredentials\", \"pkce\""));
        // a PKCE client has no secret, but an authorization URL
        let pkce = json!({"grantType": "pkce", "authUrl": "https://a/auth", "accessTokenUrl": "https://a/token", "clientId": "id"});
        assert!(oauth.validate_data(&pkce).is_ok());
        assert!(oauth.validate_data(&json!({"grantType": "pkce", "accessTokenUrl": "https://a/token", "clientId": "id"})).unwrap_err().contains("authUrl"));
        // A required field hidden by displayOptions is not required.
        let jwt = credential_type("jwtAuth").unwrap();
        assert!(jwt.validate_data(&json!({"keyType": "pemKey", "privateKey": "k"})).is_ok());
        let custom = credential_type("httpCustomAuth").unwrap();
        assert!(custom.validate_data(&json!({"json": "{\"headers\": {\"a\": \"b\"}}"})).is_ok());
        assert!(custom.validate_data(&json!({"json": "{not json"})).is_err());
    }

    #[test]
    fn search_ranks_names_first_and_services_before_generic_types() {
        let hits: Vec<&str> = search_credential_types("header").iter().map(|t| t.name.as_str()).collect();
        assert_eq!(hits.first(), Some(&"httpHeaderAuth"), "{hits:?}");
        let hits: Vec<&str> = search_credential_types("totp").iter().map(|t| t.name.as_str()).collect();
        assert_eq!(hits, ["totpApi"]);
        assert_eq!(search_credential_types("").len(), credential_types().len());
        assert!(search_credential_types("no such service").is_empty());
    }

    #[test]
    fn test_requests_reference_credential_fields_only() {
        let data = json!({"testUrl": "http://127.0.0.1:9/ping", "n": 3});
        assert_eq!(resolve_credential_refs(&json!("={{$credentials.testUrl}}"), &data).unwrap(), "http://127.0.0.1:9/ping");
        assert_eq!(resolve_credential_refs(&json!("=x{{ $credentials.n }}y"), &data).unwrap(), "x3y");
        assert_eq!(resolve_credential_refs(&json!("={{$credentials.missing}}"), &data).unwrap(), "");
        assert_eq!(resolve_credential_refs(&json!("literal"), &data).unwrap(), "literal");
        assert!(resolve_credential_refs(&json!("={{ $env.HOME }}"), &data).is_err());
        let fallback = json!("={{$credentials.url || 'https://api.openai.com/v1'}}/models");
        assert_eq!(resolve_credential_refs(&fallback, &json!({"url": ""})).unwrap(), "https://api.openai.com/v1/models");
        assert_eq!(resolve_credential_refs(&fallback, &json!({"url": "http://127.0.0.1:9/v1"})).unwrap(), "http://127.0.0.1:9/v1/models");
        assert!(resolve_credential_refs(&json!("={{$credentials.url || $env.X}}"), &data).is_err());
    }
}
