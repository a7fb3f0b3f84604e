//! Credentials at work: a type's connection test (run as the HTTP Request
//! node would make the request, so the SSRF guard, auth application and
//! error messages are the node's own; OAuth2 grants through [`crate::oauth2`]),
//! and the OAuth2 connect flow's entry points for the host.

use std::time::Duration;

use serde_json::{json, Value};

use crate::catalog::credential_types::{credential_type, resolve_credential_refs, CredentialTest, CredentialType};
use crate::data::ExecutionStatus;
use crate::error::EngineError;
use crate::run::{Env, RunOptions};
use crate::{Engine, Graph};

/// How long a connection test may take: its answer, sent from the executor,
/// must reach a caller behind API Gateway's 30 s (`executions::jobs`).
pub const TEST_TIMEOUT: Duration = Duration::from_secs(20);

/// `{success, message}` of `credentials(action="test")`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TestOutcome {
    pub success: bool,
    pub message: String,
    /// False when nothing was tried (no test for the type, no test URL):
    /// the message says why; it is no verdict on the credential.
    #[serde(skip)]
    pub tested: bool,
}

impl TestOutcome {
    fn failed(message: impl Into<String>) -> Self {
        TestOutcome { success: false, message: message.into(), tested: true }
    }

    fn passed(message: impl Into<String>) -> Self {
        TestOutcome { success: true, message: message.into(), tested: true }
    }

    fn untestable(message: impl Into<String>) -> Self {
        TestOutcome { success: false, message: message.into(), tested: false }
    }
}

impl Engine {
    /// Tests the credential `reference` (`{id, name}`) of `cred_type`: its
    /// data comes from the host's credentials provider, as in a run.
    pub fn test_credential(&self, cred_type: &str, reference: &Value) -> TestOutcome {
        let Some(t) = credential_type(cred_type) else {
            return TestOutcome::untestable(format!("unknown credential type {cred_type:?}"));
        };
        let Some(test) = &t.test else {
            return TestOutcome::untestable(format!(
                "{} credentials have no connection test: the node that uses them works with the keys locally and calls no service",
                t.display_name
            ));
        };
        let Some(provider) = self.env_template.1.credentials.clone() else {
            return TestOutcome::failed("no credentials provider configured");
        };
        let data = match provider.get(cred_type, reference) {
            Ok(d) => d,
            Err(e) => return TestOutcome::failed(e),
        };
        match test {
            CredentialTest::Request { request } => match self.request_test(t, request, &data, reference) {
                Ok(o) => o,
                Err(e) => TestOutcome::failed(e),
            },
            CredentialTest::Connection => {
                let env = self.standalone_env(TEST_TIMEOUT);
                match crate::nodes::connection_test(&env, cred_type, &data) {
                    Ok(m) => TestOutcome::passed(m),
                    Err(m) => TestOutcome::failed(m),
                }
            }
            CredentialTest::OAuth2ClientCredentials => match crate::oauth2::Settings::of(cred_type, &data) {
                // a connected credential's tokens came from the provider itself
                Some(s) if s.connects() => match data.pointer("/oauthTokenData/access_token").and_then(Value::as_str) {
                    Some(t) if !t.is_empty() => TestOutcome::passed("Connected: the provider issued this credential's tokens"),
                    _ => TestOutcome::failed("Not connected yet: connect the credential (its Connect link) first"),
                },
                _ => {
                    let env = self.standalone_env(TEST_TIMEOUT);
                    match crate::oauth2::client_credentials_token(&env, &data) {
                        Ok(_) => TestOutcome::passed("Connection successful: the token URL issued an access token"),
                        Err(e) => TestOutcome::failed(message(&e)),
                    }
                }
            },
            CredentialTest::JwtBearer => {
                let env = self.standalone_env(TEST_TIMEOUT);
                let Some(crate::catalog::credential_types::Authenticate::JwtBearer { token_url, test_scopes }) = &t.authenticate else {
                    return TestOutcome::untestable(format!("{} has no token exchange to test", t.display_name));
                };
                match crate::oauth2::jwt_bearer_token(&env, token_url, &data, test_scopes) {
                    Ok(_) => TestOutcome::passed("Connection successful: the token URL accepted the signed assertion"),
                    Err(e) => TestOutcome::failed(message(&e)),
                }
            }
        }
    }

    /// Runs the test request as a Manual Trigger → HTTP Request workflow.
    fn request_test(
        &self,
        t: &CredentialType,
        req: &crate::catalog::credential_types::TestRequest,
        data: &Value,
        reference: &Value,
    ) -> std::result::Result<TestOutcome, String> {
        let literal = |v: &Value| -> std::result::Result<String, String> {
            let s = resolve_credential_refs(v, data)?;
            // A leading `=` would make the node evaluate it as an expression.
            if s.starts_with('=') {
                return Err("a test request value must not start with '='".into());
            }
            Ok(s)
        };
        let url = literal(&Value::String(req.url.clone()))?;
        if url.trim().is_empty() {
            return Ok(TestOutcome::untestable(format!(
                "{} credentials are generic: the type alone does not say which service to call. Set its Test URL (a URL of the service that answers an authenticated GET) to test it",
                t.display_name
            )));
        }
        let pairs = |m: &serde_json::Map<String, Value>| -> std::result::Result<Vec<Value>, String> {
            m.iter().map(|(k, v)| Ok(json!({"name": k, "value": literal(v)?}))).collect()
        };
        let headers = pairs(&req.headers)?;
        let qs = pairs(&req.qs)?;
        let (auth, key) = if t.generic_auth { ("genericCredentialType", "genericAuthType") } else { ("predefinedCredentialType", "nodeCredentialType") };
        let mut parameters = json!({
            "method": req.method.to_uppercase(),
            "url": url.trim(),
            "authentication": auth,
            key: t.name,
            "sendHeaders": !headers.is_empty(),
            "headerParameters": {"parameters": headers},
            "sendQuery": !qs.is_empty(),
            "queryParameters": {"parameters": qs},
            "options": {"timeout": TEST_TIMEOUT.as_millis() as u64},
        });
        if !t.generic_auth {
            parameters["authentication"] = json!("predefinedCredentialType");
        }
        let workflow = json!({
            "name": "Connection test",
            "nodes": [
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "parameters": {}, "position": [0, 0]},
                {"name": "Connection test", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "parameters": parameters,
                 "credentials": {t.name.clone(): reference}, "position": [200, 0]}
            ],
            "connections": {"Start": {"main": [[{"node": "Connection test", "type": "main", "index": 0}]]}}
        });
        let graph = Graph::from_json(&workflow).map_err(|e| e.to_string())?;
        let (st, _) = self
            .run(&graph, RunOptions { timeout: Some(TEST_TIMEOUT), ..RunOptions::default() })
            .map_err(|e| e.to_string())?;
        let answer = st.node_output("Connection test", 0).and_then(|items| items.first().map(|i| Value::clone(&i.json))).unwrap_or(Value::Null);
        if let Some(refused) = req.rules.iter().find_map(|r| r.refuses(&answer)) {
            return Ok(TestOutcome::failed(refused));
        }
        Ok(match (st.status, st.error) {
            (ExecutionStatus::Success, _) => TestOutcome::passed("Connection successful"),
            (_, Some(e)) => TestOutcome::failed(match e.http_code {
                Some(code) => format!("{} (HTTP {code})", e.message),
                None => e.message,
            }),
            (status, None) => TestOutcome::failed(format!("the test request ended as {status:?}")),
        })
    }

    /// An environment for a request made outside a run.
    fn standalone_env(&self, timeout: Duration) -> Env {
        Env {
            settings: self.env_template.0.clone(),
            host: self.env_template.1.clone(),
            cancel: Default::default(),
            deadline: Some(std::time::Instant::now() + timeout),
            http: Default::default(),
            sql: Default::default(),
            stream: None,
        }
    }
}

/// The message of an engine error as a person reads it (no internals).
fn message(e: &EngineError) -> String {
    match e {
        EngineError::Node { message, http_code: Some(code), .. } => format!("{message} (HTTP {code})"),
        EngineError::Node { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

impl Engine {
    /// Where a person connects a credential of `cred_type` (its decrypted
    /// `data`): the provider's authorization URL with `state` and the PKCE
    /// challenge. The messages name fields, never values.
    pub fn oauth2_authorization_url(cred_type: &str, data: &Value, redirect_uri: &str, state: &str, code_challenge: &str) -> std::result::Result<String, String> {
        let s = crate::oauth2::Settings::of(cred_type, data).ok_or_else(|| format!("{cred_type} is not an OAuth2 credential type"))?;
        crate::oauth2::authorization_url(&s, redirect_uri, state, code_challenge).map_err(|e| message(&e))
    }

    /// The callback's code exchanged for token data (through the SSRF guard).
    pub fn oauth2_exchange_code(&self, cred_type: &str, data: &Value, code: &str, verifier: &str, redirect_uri: &str) -> std::result::Result<Value, String> {
        let s = crate::oauth2::Settings::of(cred_type, data).filter(crate::oauth2::Settings::connects).ok_or_else(|| format!("{cred_type} credentials are not connected through an authorization"))?;
        let env = self.standalone_env(TEST_TIMEOUT);
        crate::oauth2::exchange_code(&env, &s, code, verifier, redirect_uri).map_err(|e| message(&e))
    }
}
