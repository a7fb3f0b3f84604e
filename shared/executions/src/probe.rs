//! Credential connection tests: the engine makes the type's test request
//! with the credential decrypted here, as the credential's own project would
//! use it in a run (same SSRF policy, same host), and the answer is scrubbed
//! of the secret before it leaves.

use crate::error::Result;
use crate::host;
use crate::{ExecutionError, Executor};
use engine::credentials::TestOutcome;
use engine::{Engine, EngineSettings};
use serde_json::json;
use store::data::credentials::Credential;
use store::data::executions::ExecutionMode;

impl Executor {
    /// Tests `credential` (metadata; the caller checked access). Never
    /// returns or logs its secret: the outcome's message is scrubbed of every
    /// value the test decrypted.
    pub(crate) async fn test_credential_here(&self, credential: &Credential) -> Result<TestOutcome> {
        let mut settings = EngineSettings::default();
        self.settings().apply_http(&mut settings);
        let secrets = host::Secrets::default();
        let host = host::credentials_only(host::Scope {
            data: self.data().clone(),
            handle: tokio::runtime::Handle::current(),
            project_id: credential.home_project_id.clone(),
            mode: ExecutionMode::Manual,
            secrets: secrets.clone(),
        });
        let (kind, reference) = (credential.kind.clone(), json!({"id": credential.id, "name": credential.name}));
        // The engine blocks (its HTTP client drives its own runtime, the
        // host's store calls block on this one): a blocking thread.
        let mut outcome = tokio::task::spawn_blocking(move || Engine::new(settings, host).test_credential(&kind, &reference))
            .await
            .map_err(|e| ExecutionError::Engine(format!("the connection test stopped: {e}")))?;
        outcome.message = secrets.scrub_str(&outcome.message);
        Ok(outcome)
    }
}
