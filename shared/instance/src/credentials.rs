//! Credentials: metadata operations for the agent, MCP and the REST API,
//! the write-only secret operations the person uses (create, replace,
//! rename, delete), connection tests and the credential-type catalog.
//!
//! Secrets go in through [`NewCredentialInput::data`] / [`CredentialPatch::data`]
//! and never come back: every type returned here is metadata (the store's
//! types have no secret field), and a test's message is scrubbed by the
//! executor. Strangers get not-found; a reader who may not change a
//! credential gets forbidden.

use crate::{Caller, Instance, InstanceError};
use engine::catalog::credential_types::{self, CredentialType};
use engine::catalog::NodeProperty;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::data::credentials::{Credential, CredentialList, CredentialQuery, NewCredential, SecretData};

pub use engine::credentials::TestOutcome;

/// The largest credential data accepted (JSON bytes): keys, tokens and PEM
/// files fit; anything bigger is a mistake.
pub const MAX_DATA_BYTES: usize = 32 * 1024;

/// A credential, and what the caller may do with it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CredentialDetail {
    #[serde(flatten)]
    pub credential: Credential,
    pub scopes: Vec<String>,
    /// Node types that can use it.
    pub nodes_with_access: Vec<NodeAccess>,
    /// For a type a person connects (OAuth2 authorization code): whether it
    /// is connected, since when, by whom. Never a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oauth: Option<crate::credential_connect::ConnectionStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeAccess {
    pub node_type: String,
}

/// A credential a person creates: its secret data goes straight to the
/// encrypted store.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewCredentialInput {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// The type's fields (`credential-types` lists them).
    pub data: Value,
    #[serde(default)]
    pub description: Option<String>,
    /// Defaults to the caller's project (personal unless bound).
    #[serde(default)]
    pub project_id: Option<String>,
}

impl std::fmt::Debug for NewCredentialInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewCredentialInput").field("name", &self.name).field("type", &self.kind).finish_non_exhaustive()
    }
}

/// A change: any of name, description, data (the secret, replaced whole).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialPatch {
    #[serde(default)]
    pub name: Option<String>,
    /// `null` clears it.
    #[serde(default, with = "double_option")]
    pub description: Option<Option<String>>,
    #[serde(default)]
    pub data: Option<Value>,
}

impl std::fmt::Debug for CredentialPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialPatch")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("data", &self.data.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// `"description": null` is "clear it", an absent field is "keep it".
mod double_option {
    use serde::{Deserialize, Deserializer};
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
        Option::<String>::deserialize(d).map(Some)
    }
}

/// A credential type as a form: what the page renders and `search-types` lists.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialTypeInfo {
    #[serde(rename = "type")]
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub generic_auth: bool,
    pub testable: bool,
    /// Saved, the credential is connected through the provider's
    /// authorization page (`GET …/credentials/{id}/oauth2/auth`).
    pub connect: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    pub fields: Vec<CredentialField>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialField {
    pub name: String,
    pub display_name: String,
    /// string, options, boolean, number, json
    #[serde(rename = "type")]
    pub kind: String,
    pub required: bool,
    /// A secret: shown as a password input, never displayed again.
    pub password: bool,
    pub default: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_options: Option<Value>,
}

impl CredentialTypeInfo {
    pub fn of(t: &CredentialType) -> Self {
        CredentialTypeInfo {
            name: t.name.clone(),
            display_name: t.display_name.clone(),
            description: t.description.clone(),
            generic_auth: t.generic_auth,
            testable: t.test.is_some(),
            connect: engine::oauth2::may_connect(&t.name),
            documentation_url: t.documentation_url.clone(),
            // a hidden field is the type's own (a service's URLs and scopes)
            fields: t.properties.iter().filter(|p| p.prop_type != "hidden").map(field).collect(),
        }
    }
}

fn field(p: &NodeProperty) -> CredentialField {
    CredentialField {
        name: p.name.clone(),
        display_name: p.display_name.clone(),
        kind: p.prop_type.clone(),
        required: p.required,
        password: p.type_options.as_ref().and_then(|o| o.get("password")).and_then(Value::as_bool).unwrap_or(false),
        default: p.default.clone(),
        description: p.description.clone(),
        options: p.options.clone(),
        display_options: p.display_options.clone(),
    }
}

/// The credential type, or a clear error naming where to look.
pub fn credential_type(name: &str) -> Result<&'static CredentialType, InstanceError> {
    credential_types::credential_type(name).ok_or_else(|| {
        InstanceError::Invalid(format!("unknown credential type {name:?}; search the types (credentials search-types) for the right one"))
    })
}

/// Whether a type alone identifies a service: a single stored credential of
/// a service type may be picked without asking; a generic HTTP auth type
/// never (one bearer token must not be attached to an arbitrary URL).
pub fn is_service_scoped(kind: &str) -> bool {
    credential_types::credential_type(kind).is_none_or(|t| !t.generic_auth)
}

/// Whether a workflow of `project_id` may use the credential at run time.
pub fn usable_in(c: &Credential, project_id: &str) -> bool {
    c.is_global || c.home_project_id == project_id || c.shared_with_project_ids.iter().any(|p| p == project_id)
}

/// `{id, name}` of a credential a person may pick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CredentialRef {
    pub id: String,
    pub name: String,
}

impl Instance {
    /// Credentials the caller can access (`credentials(list)`, MCP
    /// `list_credentials`, `GET /instance-ai/credentials`).
    pub async fn list_credentials(&self, caller: &Caller, q: &CredentialQuery) -> Result<CredentialList, InstanceError> {
        self.user(caller).await?;
        Ok(self.data.credentials.list(&caller.user, q).await?)
    }

    /// A credential the caller can see, with their scopes on it.
    async fn credential_access(&self, caller: &Caller, id: &str) -> Result<(Credential, Vec<String>), InstanceError> {
        self.user(caller).await?;
        self.data
            .credentials
            .get_for(&caller.user, id)
            .await?
            .ok_or_else(|| InstanceError::NotFound(format!("credential {id}")))
    }

    pub(crate) async fn credential_for(&self, caller: &Caller, id: &str, scope: &str) -> Result<Credential, InstanceError> {
        let (c, scopes) = self.credential_access(caller, id).await?;
        if !scopes.iter().any(|s| s == scope) {
            return Err(InstanceError::Forbidden(format!("you lack the permission {scope} on credential {id}")));
        }
        Ok(c)
    }

    /// Metadata with the full description and the node types that use it.
    pub async fn get_credential(&self, caller: &Caller, id: &str) -> Result<CredentialDetail, InstanceError> {
        let (credential, scopes) = self.credential_access(caller, id).await?;
        let nodes_with_access = credential_types::nodes_accepting(&credential.kind)
            .into_iter()
            .map(|d| NodeAccess { node_type: d.name.clone() })
            .collect();
        let oauth = self.connection_status(&credential).await?;
        Ok(CredentialDetail { credential, scopes, nodes_with_access, oauth })
    }

    /// Creates a credential from the person's data (validated against its type).
    pub async fn create_credential(&self, caller: &Caller, input: NewCredentialInput) -> Result<Credential, InstanceError> {
        let t = credential_type(input.kind.trim())?;
        check_data(t, &input.data)?;
        let project_id = match &input.project_id {
            Some(p) => {
                self.require_project(caller, p, "credential:create").await?;
                p.clone()
            }
            None => self.write_project(caller, "credential:create").await?,
        };
        let c = self
            .data
            .credentials
            .create(NewCredential {
                name: input.name,
                kind: t.name.clone(),
                description: input.description,
                project_id,
                is_managed: false,
                is_global: false,
                secret: SecretData::new(input.data),
            })
            .await?;
        tracing::info!(credentialId = %c.id, credentialType = %c.kind, "credential created");
        Ok(c)
    }

    /// Renames, re-describes and/or replaces the secret (whole: the old data
    /// is never read back to merge).
    pub async fn update_credential(&self, caller: &Caller, id: &str, patch: CredentialPatch) -> Result<Credential, InstanceError> {
        let c = self.credential_for(caller, id, "credential:update").await?;
        if patch.name.is_none() && patch.description.is_none() && patch.data.is_none() {
            return Err(InstanceError::Invalid("nothing to change: give name, description or data".into()));
        }
        if let Some(data) = patch.data {
            check_data(credential_type(&c.kind)?, &data)?;
            self.data.credentials.update_secret(id, SecretData::new(data)).await?;
            tracing::info!(credentialId = %id, "credential secret replaced");
        }
        if patch.name.is_none() && patch.description.is_none() {
            return Ok(self.data.credentials.get(id).await?.unwrap_or(c));
        }
        Ok(self.data.credentials.update_meta(id, patch.name.as_deref(), patch.description.as_ref().map(|d| d.as_deref())).await?)
    }

    /// Deletes a credential for good (its secret and shares with it).
    pub async fn delete_credential(&self, caller: &Caller, id: &str) -> Result<Credential, InstanceError> {
        let c = self.credential_for(caller, id, "credential:delete").await?;
        self.data.credentials.delete(id).await?;
        tracing::info!(credentialId = %id, "credential deleted");
        Ok(c)
    }

    /// Runs the type's connection test with the stored secret.
    pub async fn test_credential(&self, caller: &Caller, id: &str) -> Result<TestOutcome, InstanceError> {
        let (c, _) = self.credential_access(caller, id).await?;
        self.executor.test_credential(&c, self.dispatch).await.map_err(crate::runner::job_error)
    }

    /// Credentials of exactly `kind` the caller can pick for a workflow of
    /// `project_id` (a credential the project cannot use would fail at run time).
    pub async fn usable_credentials(&self, caller: &Caller, project_id: &str, kind: &str) -> Result<Vec<CredentialRef>, InstanceError> {
        let q = CredentialQuery { kind: Some(kind.to_owned()), limit: Some(200), ..CredentialQuery::default() };
        let list = self.list_credentials(caller, &q).await?;
        let mut out = Vec::new();
        for row in list.data.into_iter().filter(|r| r.kind == kind) {
            if let Some(c) = self.data.credentials.get(&row.id).await? {
                if usable_in(&c, project_id) {
                    out.push(CredentialRef { id: c.id, name: c.name });
                }
            }
        }
        Ok(out)
    }

    /// The secret of a credential of type `kind` the caller may use, for a
    /// connection made on their behalf (an MCP server the agent calls). The
    /// secret goes into that request only: never into a result or a log.
    pub async fn credential_secret_for_use(&self, caller: &Caller, id: &str, kind: &str) -> Result<SecretData, InstanceError> {
        let (c, _) = self.credential_access(caller, id).await?;
        if c.kind != kind {
            return Err(InstanceError::Invalid(format!("credential {:?} is of type {}, not {kind}", c.name, c.kind)));
        }
        Ok(self.data.credentials.decrypt_secret(id).await?)
    }

    /// The credential `id` as a pick for `kind` in `project_id`: it must
    /// exist for the caller, be of that type and usable there.
    pub async fn pick_credential(&self, caller: &Caller, project_id: &str, kind: &str, id: &str) -> Result<CredentialRef, InstanceError> {
        let (c, _) = self.credential_access(caller, id).await?;
        if c.kind != kind {
            return Err(InstanceError::Invalid(format!("credential {:?} is of type {}, not {kind}", c.name, c.kind)));
        }
        if !usable_in(&c, project_id) {
            return Err(InstanceError::Invalid(format!(
                "credential {:?} belongs to another project and is not shared with this workflow's project",
                c.name
            )));
        }
        Ok(CredentialRef { id: c.id, name: c.name })
    }
}

fn check_data(t: &CredentialType, data: &Value) -> Result<(), InstanceError> {
    let size = serde_json::to_vec(data).map(|v| v.len()).unwrap_or(usize::MAX);
    if size > MAX_DATA_BYTES {
        return Err(InstanceError::Invalid(format!("credential data is {size} bytes; at most {MAX_DATA_BYTES}")));
    }
    t.validate_data(data).map_err(InstanceError::Invalid)
}

/// `search-types`: ranked matches of the catalog.
pub fn search_types(query: &str) -> Vec<CredentialTypeInfo> {
    credential_types::search_credential_types(query).into_iter().map(CredentialTypeInfo::of).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_tells_clearing_from_keeping_and_never_prints_data() {
        let p: CredentialPatch = serde_json::from_value(json!({"description": null, "data": {"token": "s3cret-token"}})).unwrap();
        assert_eq!(p.description, Some(None));
        assert!(!format!("{p:?}").contains("s3cret"));
        let p: CredentialPatch = serde_json::from_value(json!({"name": "n"})).unwrap();
        assert_eq!(p.description, None);
        let n: NewCredentialInput =
            serde_json::from_value(json!({"name": "n", "type": "httpBearerAuth", "data": {"token": "s3cret-token"}})).unwrap();
        assert!(!format!("{n:?}").contains("s3cret"));
        assert!(serde_json::from_value::<CredentialPatch>(json!({"secret": 1})).is_err());
    }

    #[test]
    fn generic_types_are_never_service_scoped() {
        assert!(!is_service_scoped("httpHeaderAuth") && !is_service_scoped("oAuth2Api"));
        assert!(is_service_scoped("totpApi") && is_service_scoped("slackApi"));
        let info = CredentialTypeInfo::of(credential_types::credential_type("httpHeaderAuth").unwrap());
        let value = info.fields.iter().find(|f| f.name == "value").unwrap();
        assert!(value.password && value.required);
        assert!(info.testable && info.generic_auth);
    }
}
