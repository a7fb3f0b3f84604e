//! Credentials at work: a type's connection test (run as the HTTP Request
//! node would make the request, so the SSRF guard, auth application and
//! error messages are the node's own) and the OAuth2 client credentials
//! exchange the HTTP Request node and the test share.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::catalog::credential_types::{credential_type, resolve_credential_refs, CredentialTest, CredentialType};
use crate::data::ExecutionStatus;
use crate::error::{EngineError, Result};
use crate::nodes::http;
use crate::run::{Env, RunOptions};
use crate::{Engine, Graph};

/// How long a connection test may take.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(30);

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
            CredentialTest::OAuth2ClientCredentials => {
                let env = self.standalone_env(TEST_TIMEOUT);
                match oauth2_client_credentials_token(&env, &data) {
                    Ok(_) => TestOutcome::passed("Connection successful: the token URL issued an access token"),
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

/// RFC 6749 §4.4: exchanges the client id and secret for an access token at
/// `accessTokenUrl`, through the HTTP Request node's client (SSRF guard
/// included). The credentials travel as a Basic header or in the body, as
/// the credential's `authentication` says.
pub(crate) fn oauth2_client_credentials_token(env: &Env, data: &Value) -> Result<String> {
    let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default().trim().to_owned();
    let grant = data.get("grantType").and_then(Value::as_str).unwrap_or("clientCredentials");
    if grant != "clientCredentials" {
        return Err(EngineError::node(format!("OAuth2 grant type {grant:?} is not supported here; use client credentials")));
    }
    let token_url = s("accessTokenUrl");
    let url = url::Url::parse(&token_url).map_err(|_| EngineError::node("The OAuth2 credential has no valid Access Token URL"))?;
    let (id, secret) = (s("clientId"), s("clientSecret"));
    if id.is_empty() || secret.is_empty() {
        return Err(EngineError::node("The OAuth2 credential needs a Client ID and a Client Secret"));
    }
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", "client_credentials");
    let scope = s("scope");
    if !scope.is_empty() {
        form.append_pair("scope", &scope);
    }
    let mut headers = vec![
        ("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned()),
        ("accept".to_owned(), "application/json".to_owned()),
    ];
    if data.get("authentication").and_then(Value::as_str) == Some("body") {
        form.append_pair("client_id", &id);
        form.append_pair("client_secret", &secret);
    } else {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
        headers.push(("authorization".to_owned(), format!("Basic {basic}")));
    }
    let resp = http::send(
        env,
        &http::Request {
            method: reqwest::Method::POST,
            url,
            headers,
            body: Some(form.finish().into_bytes()),
            timeout: env.settings.http_timeout.min(TEST_TIMEOUT),
            // A token endpoint answers directly; a redirect is not followed with the secret.
            redirects: http::Redirects::NONE,
            insecure: false,
            digest: None,
        },
    )?;
    let body: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    if resp.status >= 400 {
        // RFC 6749 §5.2 error codes are meant to be shown; descriptions too.
        let code = body.get("error").and_then(Value::as_str).unwrap_or("request failed");
        let detail = body.get("error_description").and_then(Value::as_str).map(|d| format!(": {d}")).unwrap_or_default();
        return Err(EngineError::Node {
            message: format!("The token URL refused the client credentials ({code}{detail})"),
            description: None,
            http_code: Some(resp.status.to_string()),
        });
    }
    body.get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| EngineError::node("The token URL answered without an access_token"))
}
