//! Connecting an OAuth2 credential: the provider's authorization URL and
//! the code exchange need the credential's client id and secret, so they
//! are made here, where secrets are decrypted (as for a connection test).
//! The URL is only built (no request): the caller's process does it. The
//! exchange goes through the engine's guarded client with the run's SSRF
//! policy, so it is a job (`jobs`): the executor function makes it and
//! stores the tokens, encrypted; the other functions link no HTTP client.

use crate::error::Result;
use crate::host;
use crate::jobs::CodeGrant;
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

    /// Exchanges the callback's code (with the connect's PKCE verifier)
    /// and stores the tokens for `credential`, bound to `user`. `Ok(Err)`:
    /// what the provider refused, scrubbed of the secret; nothing is logged
    /// of the grant or the tokens.
    pub(crate) async fn oauth_connect_here(&self, credential: &Credential, user: &UserId, grant: CodeGrant) -> Result<std::result::Result<(), String>> {
        // delivered again after the tokens were stored (the answer was not):
        // done; a second exchange of the code would be refused
        if self.data().credentials.connected_with(&credential.id, user, &grant.code).await? {
            tracing::info!(credentialId = %credential.id, "credential already connected with this code");
            return Ok(Ok(()));
        }
        let secret = self.data().credentials.decrypt_secret(&credential.id).await?;
        let secrets = host::Secrets::default();
        secrets.remember(secret.expose());
        let mut settings = EngineSettings::default();
        self.settings().apply_http(&mut settings);
        let (kind, data, code) = (credential.kind.clone(), secret.expose().clone(), grant.code.clone());
        // the engine's client blocks: a blocking thread
        let exchanged = tokio::task::spawn_blocking(move || {
            Engine::new(settings, engine::Host::default()).oauth2_exchange_code(&kind, &data, &grant.code, &grant.verifier, &grant.redirect_uri)
        })
        .await
        .map_err(|e| ExecutionError::Engine(format!("the token exchange stopped: {e}")))?;
        let tokens = match exchanged {
            Ok(tokens) => tokens,
            Err(refused) => return Ok(Err(secrets.scrub_str(&refused))),
        };
        self.data().credentials.connect(&credential.id, user, &code, &SecretData::new(tokens)).await?;
        tracing::info!(credentialId = %credential.id, "credential connected");
        Ok(Ok(()))
    }
}
