//! Evaluation configs: a workflow's start node, end node, a data table
//! dataset and judged metrics (`eval-config`). Every write is checked
//! against what it names: both nodes exist in the workflow, the table is
//! one the caller can read in the workflow's project, each metric's
//! credential is theirs to use there (and of the provider's type when a
//! provider is named). Running an evaluation is not built yet.

use crate::credentials::usable_in;
use crate::data_tables::TableRef;
use crate::{Caller, Instance, InstanceError};
use store::data::eval_configs::{EvalConfig, EvalConfigInput, EvalMetric};
use store::data::workflows::WorkflowMeta;

/// Metric presets: an LLM judges the answer (`correctness` against the
/// expected answer, `helpfulness` for the user's query, `custom` by its prompt).
pub const PRESETS: &[&str] = &["correctness", "helpfulness", "custom"];
pub const OUTPUT_TYPES: &[&str] = &["numeric", "boolean"];
pub const MAX_METRICS: usize = 10;
pub const MAX_CONFIGS: usize = 50;

/// The credential type a judge model's provider uses.
fn provider_credential(provider: &str) -> Option<&'static str> {
    Some(match provider {
        "openai" => "openAiApi",
        "anthropic" => "anthropicApi",
        "google" => "googlePalmApi",
        "mistral" => "mistralCloudApi",
        "groq" => "groqApi",
        "openrouter" => "openRouterApi",
        "ollama" => "ollamaApi",
        "azure-openai" => "azureOpenAiApi",
        "aws-bedrock" => "aws",
        _ => return None,
    })
}

fn invalid(m: impl Into<String>) -> InstanceError {
    InstanceError::Invalid(m.into())
}

impl Instance {
    pub async fn list_eval_configs(&self, caller: &Caller, workflow_id: &str) -> Result<Vec<EvalConfig>, InstanceError> {
        self.workflow_access(caller, workflow_id, "workflow:read").await?;
        Ok(self.data.eval_configs.list(workflow_id).await?)
    }

    pub async fn get_eval_config(&self, caller: &Caller, workflow_id: &str, id: &str) -> Result<EvalConfig, InstanceError> {
        self.workflow_access(caller, workflow_id, "workflow:read").await?;
        self.data.eval_configs.get(workflow_id, id).await?.ok_or_else(|| InstanceError::NotFound(format!("evaluation config {id} of workflow {workflow_id}")))
    }

    pub async fn create_eval_config(&self, caller: &Caller, workflow_id: &str, input: EvalConfigInput) -> Result<EvalConfig, InstanceError> {
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let existing = self.data.eval_configs.list(workflow_id).await?;
        if existing.len() >= MAX_CONFIGS {
            return Err(invalid(format!("workflow {workflow_id} has {MAX_CONFIGS} evaluation configs already")));
        }
        self.check_eval_config(caller, &meta, &input, &existing, None).await?;
        let now = store::data::db::now_iso();
        let config = EvalConfig { id: store::data::db::new_id(), workflow_id: workflow_id.to_owned(), input, created_at: now.clone(), updated_at: now };
        self.data.eval_configs.put(&config).await?;
        tracing::info!(workflowId = %workflow_id, configId = %config.id, "evaluation config created");
        Ok(config)
    }

    /// Replaces a config whole.
    pub async fn update_eval_config(&self, caller: &Caller, workflow_id: &str, id: &str, input: EvalConfigInput) -> Result<EvalConfig, InstanceError> {
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let existing = self.data.eval_configs.list(workflow_id).await?;
        let Some(old) = existing.iter().find(|c| c.id == id).cloned() else {
            return Err(InstanceError::NotFound(format!("evaluation config {id} of workflow {workflow_id}")));
        };
        self.check_eval_config(caller, &meta, &input, &existing, Some(id)).await?;
        let config = EvalConfig { input, updated_at: store::data::db::now_iso(), ..old };
        self.data.eval_configs.put(&config).await?;
        Ok(config)
    }

    /// Checks a create (`replacing` none) or update without writing: a front
    /// door refuses a bad config before it asks anyone to approve it.
    pub async fn validate_eval_config(&self, caller: &Caller, workflow_id: &str, input: &EvalConfigInput, replacing: Option<&str>) -> Result<(), InstanceError> {
        let (meta, _) = self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let existing = self.data.eval_configs.list(workflow_id).await?;
        if let Some(id) = replacing.filter(|id| !existing.iter().any(|c| c.id == *id)) {
            return Err(InstanceError::NotFound(format!("evaluation config {id} of workflow {workflow_id}")));
        }
        self.check_eval_config(caller, &meta, input, &existing, replacing).await
    }

    pub async fn delete_eval_config(&self, caller: &Caller, workflow_id: &str, id: &str) -> Result<EvalConfig, InstanceError> {
        self.workflow_access(caller, workflow_id, "workflow:update").await?;
        let config = self.data.eval_configs.get(workflow_id, id).await?.ok_or_else(|| InstanceError::NotFound(format!("evaluation config {id} of workflow {workflow_id}")))?;
        self.data.eval_configs.delete(workflow_id, id).await?;
        Ok(config)
    }

    async fn check_eval_config(&self, caller: &Caller, meta: &WorkflowMeta, input: &EvalConfigInput, existing: &[EvalConfig], replacing: Option<&str>) -> Result<(), InstanceError> {
        let name = input.name.trim();
        if name.is_empty() || name.chars().count() > 128 {
            return Err(invalid("name must be 1-128 characters"));
        }
        if existing.iter().any(|c| Some(c.id.as_str()) != replacing && c.input.name.trim().eq_ignore_ascii_case(name)) {
            return Err(InstanceError::Conflict(format!("workflow {} already has an evaluation config named {name:?}", meta.id)));
        }
        let workflow = self.data.workflows.get(&meta.id).await?.ok_or_else(|| InstanceError::NotFound(format!("workflow {}", meta.id)))?;
        let nodes: Vec<&str> = workflow.body.nodes.as_array().into_iter().flatten().filter_map(|n| n.get("name").and_then(|v| v.as_str())).collect();
        for (field, node) in [("startNodeName", &input.start_node_name), ("endNodeName", &input.end_node_name)] {
            if !nodes.contains(&node.as_str()) {
                return Err(invalid(format!("{field}: workflow {:?} has no node named {node:?} (nodes: {})", meta.name, nodes.join(", "))));
            }
        }
        let table = self.data_table(caller, TableRef::new(&input.data_table_id, Some(&meta.project_id)), "dataTable:read").await.map_err(|e| match e {
            InstanceError::NotFound(_) => invalid(format!("dataTableId: no data table {:?} in the workflow's project", input.data_table_id)),
            other => other,
        })?;
        if table.columns.is_empty() {
            return Err(invalid(format!("dataTableId: data table {:?} has no columns to use as a dataset", table.name)));
        }
        if input.metrics.is_empty() || input.metrics.len() > MAX_METRICS {
            return Err(invalid(format!("metrics: give 1-{MAX_METRICS} metrics")));
        }
        for (i, m) in input.metrics.iter().enumerate() {
            self.check_metric(caller, meta, m).await.map_err(|e| match e {
                InstanceError::Invalid(msg) => invalid(format!("metrics[{i}] ({}): {msg}", m.name)),
                other => other,
            })?;
        }
        Ok(())
    }

    async fn check_metric(&self, caller: &Caller, meta: &WorkflowMeta, m: &EvalMetric) -> Result<(), InstanceError> {
        for (field, v) in [("name", &m.name), ("model", &m.model), ("actualAnswer", &m.actual_answer), ("credentialId", &m.credential_id)] {
            if v.trim().is_empty() {
                return Err(invalid(format!("{field} must not be empty")));
            }
        }
        if !PRESETS.contains(&m.preset.as_str()) {
            return Err(invalid(format!("preset {:?} is not one of {}", m.preset, PRESETS.join(", "))));
        }
        let needs = match m.preset.as_str() {
            "correctness" => ("expectedAnswer", &m.expected_answer),
            "helpfulness" => ("userQuery", &m.user_query),
            _ => ("prompt", &m.prompt),
        };
        if needs.1.as_deref().is_none_or(|v| v.trim().is_empty()) {
            return Err(invalid(format!("the {} preset needs {}", m.preset, needs.0)));
        }
        if let Some(t) = m.output_type.as_deref().filter(|t| !OUTPUT_TYPES.contains(t)) {
            return Err(invalid(format!("outputType {t:?} is not one of {}", OUTPUT_TYPES.join(", "))));
        }
        let credential = self.get_credential(caller, &m.credential_id).await.map_err(|e| match e {
            InstanceError::NotFound(_) => invalid(format!("credentialId: no credential {:?} of yours", m.credential_id)),
            other => other,
        })?;
        if !usable_in(&credential.credential, &meta.project_id) {
            return Err(invalid(format!("credentialId: credential {:?} cannot be used in the workflow's project", credential.credential.name)));
        }
        if let Some(p) = m.provider.as_deref() {
            let want = provider_credential(p).ok_or_else(|| invalid(format!("provider {p:?} is not a known model provider")))?;
            if credential.credential.kind != want {
                return Err(invalid(format!("credentialId: credential {:?} is of type {}, the {p} provider needs {want}", credential.credential.name, credential.credential.kind)));
            }
        }
        Ok(())
    }
}
