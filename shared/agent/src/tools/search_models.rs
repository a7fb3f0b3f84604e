//! `searchModels {provider, query?, limit ≤ 10}`: a front door to the
//! models.dev catalog (`research::Catalog`: guarded fetch, shared hour-long
//! cache, stale snapshot within a day). Catalog data is outside data: the
//! models list reaches the model inside the untrusted envelope.

use super::untrusted::json_envelope;
use super::{Tool, ToolContext, ToolOutcome};
use crate::error::AgentError;
use futures::future::BoxFuture;
use research::models::Status;
use research::ModelQuery;
use serde_json::{json, Value};
use store::Config;

pub struct SearchModels;

pub const CATALOG_URL_VARIABLE: &str = "INSTANCE_AI_MODELS_CATALOG_URL";

pub fn catalog_url(config: &Config) -> Result<url::Url, AgentError> {
    let raw = config.var(CATALOG_URL_VARIABLE).map(str::trim).unwrap_or(research::models::DEFAULT_CATALOG_URL);
    url::Url::parse(raw).map_err(|e| AgentError::Invalid(format!("{CATALOG_URL_VARIABLE} is malformed: {e}")))
}

impl Tool for SearchModels {
    fn name(&self) -> &'static str {
        "searchModels"
    }

    fn description(&self) -> &'static str {
        "Preliminary search of the public models.dev catalog when choosing a model for an AI node without a relevant \
credential: recent non-deprecated text-in/text-out models of one provider, newest first, with exact IDs, metadata and \
catalog pricing. If a provider credential is available, use nodes(action=\"explore-resources\") with it instead. Absence \
here does not make a model invalid; credentialAccess is always not_checked. Status: ok, unknown_provider, \
no_matching_models or catalog_unavailable; freshness: fresh, or stale when the catalog could not be refreshed."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "provider": {"type": "string", "minLength": 1, "maxLength": 100, "description": "Canonical catalog provider ID, such as openai, google, anthropic, openrouter, aws-bedrock or azure-openai (not a model family)"},
            "query": {"type": "string", "maxLength": 100, "description": "Case-insensitive substring of model IDs or names (e.g. claude with provider openrouter); blank: no filter"},
            "limit": {"type": "integer", "minimum": 1, "maximum": research::models::MAX_LIMIT, "description": "Max models. Default 10, max 10"}
        }, "required": ["provider"], "additionalProperties": false})
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let q: ModelQuery = match serde_json::from_value(args) {
                Ok(q) => q,
                Err(e) => return ToolOutcome::Failed(format!("invalid arguments: {e}")),
            };
            match ctx.rt.models.search(q, &ctx.abort).await {
                Ok(r) => {
                    let mut out = json!({
                        "status": r.status,
                        "provider": r.provider,
                        "hasMore": r.has_more,
                        "source": r.source,
                        "fetchedAt": r.fetched_at,
                        "freshness": r.freshness,
                        "credentialAccess": r.credential_access,
                        "modelCount": r.models.len(),
                        "models": if r.status == Status::Ok { Value::String(json_envelope("models.dev", &serde_json::to_value(&r.models).unwrap_or_default())) } else { json!([]) },
                    });
                    if let Some(m) = r.message {
                        out["message"] = json!(m);
                    }
                    ToolOutcome::Done(out)
                }
                Err(research::Error::Cancelled) => ToolOutcome::Failed("cancelled: the run was stopped".into()),
                Err(e) => ToolOutcome::Failed(e.to_string()),
            }
        })
    }
}
