//! list_credentials: metadata only (`instance::credentials`); the listing types carry no secret.

use super::{limit, Ctx};
use crate::error::McpError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use store::data::credentials::CredentialQuery;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListCredentialsArgs {
    /// Limit the number of results (max 200)
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// Filter credentials by name (partial match)
    pub query: Option<String>,
    /// Filter by credential type, e.g. "slackApi" (partial match)
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Only credentials belonging to this project
    pub project_id: Option<String>,
    /// Only credentials shared directly with you (excludes global ones). Defaults to false.
    pub only_shared_with_me: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
pub struct HomeProjectOut {
    pub id: String,
    pub name: String,
    /// personal or team
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialOut {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub scopes: Vec<String>,
    pub is_managed: bool,
    pub is_global: bool,
    pub home_project: Option<HomeProjectOut>,
}

#[derive(Serialize, JsonSchema)]
pub struct ListCredentialsOut {
    pub data: Vec<CredentialOut>,
    /// Number of credentials returned
    pub count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

pub async fn list_credentials(ctx: &Ctx<'_>, a: ListCredentialsArgs) -> Result<ListCredentialsOut, McpError> {
    let list = ctx
        .instance()
        .list_credentials(
            &ctx.caller(),
            &CredentialQuery {
                name: a.query,
                kind: a.kind,
                project_id: a.project_id,
                only_shared_with_me: a.only_shared_with_me.unwrap_or(false),
                limit: Some(limit(a.limit, 200, 50)?),
                offset: 0,
            },
        )
        .await?;
    let data: Vec<CredentialOut> = list
        .data
        .into_iter()
        .map(|c| CredentialOut {
            id: c.id,
            name: c.name,
            kind: c.kind,
            scopes: c.scopes,
            is_managed: c.is_managed,
            is_global: c.is_global,
            home_project: c.home_project.map(|h| HomeProjectOut { id: h.id, name: h.name, kind: h.kind.as_str().to_owned() }),
        })
        .collect();
    Ok(ListCredentialsOut { count: data.len() as u64, data, error: None })
}
