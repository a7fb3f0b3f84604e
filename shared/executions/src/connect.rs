//! Connecting an OAuth2 credential: the provider's authorization URL and
//! the code exchange need the credential's client id and secret, so they
//! are made here, where secrets are decrypted (as for a connection test):
//! the exchange goes through the engine's guarded client with the run's SSRF
//! policy, and the tokens go straight to the store, encrypted.

use crate::error::Result;
use crate::host;
use crate::{ExecutionError, Executor};
use engine::{Engine, EngineSettings};
use protocol::UserId;
use store::data::credentials::{Credential, SecretData};

impl Executor {
    /// Where the person who starts a connect of `credential` is sent: its
    /// provider's authorization URL with `state` and the PKCE challenge.
    pub async fn oauth_authorization_url(&self, credential: &Credential, redirect_uri: &str, state: &str, code_challenge: &str) -> Result<String> {
        let secret = self.data().credentials.decrypt_secret(&credential.id).await?;
        Engine::oauth2_authorization_url(&credential.kind, secret.expose(), redirect_uri, state, code_challenge).map_err(ExecutionError::Invalid)
    }

    /// Exchanges the callback's `code` (with the connect's PKCE verifier)
    /// and stores the tokens for `credential`, bound to `user`. The error
    /// says what the provider refused, scrubbed of the secret.
    pub async fn oauth_connect(&self, credential: &Credential, user: &UserId, code: &str, verifier: &str, redirect_uri: &str) -> Result<()> {
        let secret = self.data().credentials.decrypt_secret(&credential.id).await?;
        let secrets = host::Secrets::default();
        secrets.remember(secret.expose());
        let mut settings = EngineSettings::default();
        self.settings().apply_http(&mut settings);
        let (kind, data) = (credential.kind.clone(), secret.expose().clone());
        let (code, verifier, redirect_uri) = (code.to_owned(), verifier.to_owned(), redirect_uri.to_owned());
        // the engine's client blocks: a blocking thread
        let tokens = tokio::task::spawn_blocking(move || Engine::new(settings, engine::Host::default()).oauth2_exchange_code(&kind, &data, &code, &verifier, &redirect_uri))
            .await
            .map_err(|e| ExecutionError::Engine(format!("the token exchange stopped: {e}")))?
            .map_err(|m| ExecutionError::Invalid(secrets.scrub_str(&m)))?;
        self.data().credentials.connect(&credential.id, user, &SecretData::new(tokens)).await?;
        tracing::info!(credentialId = %credential.id, "credential connected");
        Ok(())
    }
}
