//! Connecting an OAuth2 credential (authorization code with PKCE, RFC 6749
//! §4.1 + RFC 7636): the credential's owner starts it and is sent to the
//! provider with a `state` that is single-use, bound to them and the
//! credential, and expires; the provider sends the browser back to the
//! callback, which redeems the state, exchanges the code and stores the
//! tokens encrypted, bound to the user and the credential. Nothing here
//! returns a token.

use crate::{Caller, Instance, InstanceError};
use protocol::UserId;
use serde::Serialize;
use store::data::credentials::{Credential, OAuthConnection};

/// Where the person goes to connect.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectStart {
    pub authorization_url: String,
    /// Seconds the link stays valid.
    pub expires_in: u64,
}

/// Whether a credential is connected, as the REST API and the page show it
/// (for types a person connects; never a token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionStatus {
    pub connected: bool,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub connection: Option<OAuthConnection>,
}

/// The provider's answer at the callback (its query).
#[derive(Debug, Default)]
pub struct CallbackQuery {
    pub state: Option<String>,
    pub code: Option<String>,
    /// RFC 6749 §4.1.2.1: the person declined, or the provider refused.
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Instance {
    /// Starts `caller`'s connect of credential `id` (theirs to change;
    /// strangers get not-found): the provider's authorization URL, with the
    /// callback at `redirect_uri`.
    pub async fn start_oauth_connect(&self, caller: &Caller, id: &str, redirect_uri: &str) -> Result<ConnectStart, InstanceError> {
        let c = self.credential_for(caller, id, "credential:update").await?;
        if !engine::oauth2::may_connect(&c.kind) {
            return Err(InstanceError::Invalid(format!("credential {:?} is of type {}, which is not connected through an authorization page", c.name, c.kind)));
        }
        let (verifier, challenge) = engine::oauth2::pkce_pair();
        let state = self.data.credentials.begin_connect(id, &caller.user, &verifier, redirect_uri).await?;
        let authorization_url = self.executor.oauth_authorization_url(&c, redirect_uri, &state, &challenge).await.map_err(exec_error)?;
        tracing::info!(credentialId = %id, "credential connect started");
        Ok(ConnectStart { authorization_url, expires_in: store::data::credentials::CONNECT_SECS })
    }

    /// The provider's redirect: the state is redeemed (once, unexpired), the
    /// user who started it must still be able to change the credential, and
    /// the code is exchanged and the tokens stored for that user.
    pub async fn finish_oauth_connect(&self, q: &CallbackQuery) -> Result<Credential, InstanceError> {
        let state = q.state.as_deref().filter(|s| !s.is_empty()).ok_or_else(|| InstanceError::Invalid("the callback carries no state".into()))?;
        let pending = self
            .data
            .credentials
            .take_connect(state)
            .await?
            .ok_or_else(|| InstanceError::Invalid("this connect link is unknown, used or expired: start connecting the credential again".into()))?;
        let caller = Caller::new(UserId::from(pending.user_id.clone()));
        let c = self.credential_for(&caller, &pending.credential_id, "credential:update").await?;
        if let Some(error) = &q.error {
            // the codes are meant to be shown; the description too
            let detail = q.error_description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
            return Err(InstanceError::Invalid(format!("the provider did not authorize the connection ({error}{detail})")));
        }
        let code = q.code.as_deref().filter(|c| !c.is_empty()).ok_or_else(|| InstanceError::Invalid("the callback carries no code".into()))?;
        let verifier = pending.code_verifier.expose().as_str().unwrap_or_default().to_owned();
        // the exchange is the executor function's (it links the HTTP client)
        match self.executor.oauth_connect(&c, &caller.user, code, &verifier, &pending.redirect_uri, self.dispatch).await {
            Ok(()) => Ok(c),
            // the state is spent: only a new connect can finish
            Err(executions::ExecutionError::Unanswered(m)) => Err(InstanceError::Unavailable(format!("connecting the credential did not finish: {m} from its Connect link"))),
            // deleted while the code was exchanged: its secret or its row was
            // gone when the executor came to them (the tokens are dropped)
            Err(e) if self.data.credentials.get(&c.id).await?.is_none() => {
                tracing::info!(credentialId = %c.id, error = %e, "credential deleted while it was being connected");
                Err(InstanceError::NotFound(format!("credential {} was deleted while it was being connected", c.id)))
            }
            Err(e) => Err(exec_error(e)),
        }
    }

    /// The connection status of a credential of a type a person connects.
    pub(crate) async fn connection_status(&self, c: &Credential) -> Result<Option<ConnectionStatus>, InstanceError> {
        if !engine::oauth2::may_connect(&c.kind) {
            return Ok(None);
        }
        let connection = self.data.credentials.connection(&c.id).await?;
        Ok(Some(ConnectionStatus { connected: connection.is_some(), connection }))
    }
}

fn exec_error(e: executions::ExecutionError) -> InstanceError {
    match e {
        executions::ExecutionError::Invalid(m) => InstanceError::Invalid(m),
        executions::ExecutionError::NotFound(m) => InstanceError::NotFound(m),
        executions::ExecutionError::Store(s) => s.into(),
        other => InstanceError::Internal(other.to_string()),
    }
}
