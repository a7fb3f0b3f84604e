//! `eval-config` (6 actions): a front door to `instance::eval_configs`.
//! create, update and delete ask first (admin policy `eval-config.<action>`).
//! Running an evaluation is not built yet: the description says so.

use super::schema::action_variant as action;
use super::{resource_grant, Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use protocol::events::{ConfirmationRequest, Severity};
use serde_json::{json, Value};
use store::data::eval_configs::{EvalConfig, EvalConfigInput};

pub struct EvalConfigTool;

fn metric_schema() -> Value {
    let s = |d: &str| json!({"type": "string", "minLength": 1, "description": d});
    json!({"type": "object", "properties": {
        "name": s("Metric name"),
        "preset": {"type": "string", "enum": instance::eval_configs::PRESETS, "description": "correctness (needs expectedAnswer), helpfulness (needs userQuery) or custom (needs prompt)"},
        "credentialId": s("Credential of the judge model (credentials list)"),
        "model": s("Judge model id, e.g. gpt-4.1-mini"),
        "actualAnswer": s("Expression for the workflow's answer at the end node, e.g. {{ $json.output }}"),
        "provider": s("Judge model provider: openai, anthropic, google, mistral, groq, openrouter, ollama, azure-openai, aws-bedrock"),
        "outputType": {"type": "string", "enum": instance::eval_configs::OUTPUT_TYPES, "description": "Score as a number or pass/fail"},
        "userQuery": s("Expression for the user's question (a dataset column)"),
        "expectedAnswer": s("Expression for the expected answer (a dataset column)"),
        "prompt": s("The judge's instructions (custom preset)")
    }, "required": ["name", "preset", "credentialId", "model", "actualAnswer"], "additionalProperties": false, "description": "One judged metric"})
}

fn config_fields() -> Value {
    json!({
        "workflowId": {"type": "string", "minLength": 1, "description": "The workflow evaluated"},
        "name": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Config name"},
        "startNodeName": {"type": "string", "minLength": 1, "description": "Node each dataset row enters at"},
        "endNodeName": {"type": "string", "minLength": 1, "description": "Node whose output is judged"},
        "dataTableId": {"type": "string", "minLength": 1, "description": "Data table holding the dataset (one row per case)"},
        "metrics": {"type": "array", "minItems": 1, "maxItems": instance::eval_configs::MAX_METRICS, "items": metric_schema(), "description": "Judged metrics"}
    })
}

/// A config as `list`/`get` show it: the metrics without their expressions and prompts.
fn summary(c: &EvalConfig) -> Value {
    json!({
        "id": c.id, "name": c.input.name, "workflowId": c.workflow_id,
        "startNodeName": c.input.start_node_name, "endNodeName": c.input.end_node_name, "dataTableId": c.input.data_table_id,
        "metrics": c.input.metrics.iter().map(|m| json!({"name": m.name, "preset": m.preset, "model": m.model, "provider": m.provider})).collect::<Vec<_>>(),
        "createdAt": c.created_at, "updatedAt": c.updated_at,
    })
}

fn input_of(args: &Value) -> Result<EvalConfigInput, String> {
    let mut v = args.clone();
    if let Some(o) = v.as_object_mut() {
        for k in ["action", "workflowId", "configId"] {
            o.remove(k);
        }
    }
    serde_json::from_value(v).map_err(|e| format!("Invalid config: {e}"))
}

fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or_default()
}

impl Tool for EvalConfigTool {
    fn name(&self) -> &str {
        "eval-config"
    }

    fn description(&self) -> &str {
        "Evaluation configs of a workflow: a start node, an end node, a data table dataset and judged metrics (an LLM \
scores each answer). list, get (summary), describe (expressions, models, prompts), create, update (replaces the whole \
config: describe it first), delete; create, update and delete ask the user first. Configs are validated against the \
workflow's nodes and the data table. Running an evaluation is not supported yet: this tool only stores configs."
    }

    fn input_schema(&self) -> Value {
        let wf = json!({"workflowId": {"type": "string", "minLength": 1, "description": "The workflow"}});
        let wf_cfg = json!({
            "workflowId": {"type": "string", "minLength": 1, "description": "The workflow"},
            "configId": {"type": "string", "minLength": 1, "description": "Config id, from list"}
        });
        let mut update = config_fields();
        update["configId"] = json!({"type": "string", "minLength": 1, "description": "Config id, from list"});
        let required = ["workflowId", "name", "startNodeName", "endNodeName", "dataTableId", "metrics"];
        let mut update_required = required.to_vec();
        update_required.push("configId");
        json!({"oneOf": [
            action("list", "The workflow's evaluation configs", wf, &["workflowId"]),
            action("get", "One config, summarized", wf_cfg.clone(), &["workflowId", "configId"]),
            action("describe", "One config in full: metric expressions, models, prompts", wf_cfg.clone(), &["workflowId", "configId"]),
            action("create", "Create a config (asks the user)", config_fields(), &required),
            action("update", "Replace a config with all fields given (asks the user)", update, &update_required),
            action("delete", "Delete a config (asks the user)", wf_cfg, &["workflowId", "configId"]),
        ]})
    }

    fn gate<'a>(&'a self, ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        Box::pin(async move {
            let act = str_arg(args, "action");
            if !matches!(act, "create" | "update" | "delete") {
                return Ok(None);
            }
            let inst = ctx.instance()?;
            let workflow_id = str_arg(args, "workflowId");
            // The card names the workflow; one the caller cannot see is refused before asking.
            let (meta, _) = inst.workflow_access(&ctx.caller(), workflow_id, "workflow:update").await.map_err(|e| e.message())?;
            match act {
                "create" => inst.validate_eval_config(&ctx.caller(), workflow_id, &input_of(args)?, None).await.map_err(|e| e.message())?,
                "update" => inst.validate_eval_config(&ctx.caller(), workflow_id, &input_of(args)?, Some(str_arg(args, "configId"))).await.map_err(|e| e.message())?,
                _ => {
                    inst.get_eval_config(&ctx.caller(), workflow_id, str_arg(args, "configId")).await.map_err(|e| e.message())?;
                }
            }
            let (severity, message) = match act {
                "create" => (Severity::Info, format!("Create the evaluation config {:?} for {}?", str_arg(args, "name"), meta.name)),
                "update" => (Severity::Info, format!("Replace evaluation config {} of {}?", str_arg(args, "configId"), meta.name)),
                _ => (Severity::Destructive, format!("Delete evaluation config {} of {}?", str_arg(args, "configId"), meta.name)),
            };
            let mut request = ConfirmationRequest::approval("", "", "eval-config", args.as_object().cloned().unwrap_or_default(), severity, message);
            request.resource_name = Some(meta.name.clone());
            Ok(Some(Gate::permission(request, format!("eval-config.{act}"))))
        })
    }

    fn allow_key(&self, args: &Value) -> Option<String> {
        resource_grant("eval-config", args, &["workflowId"])
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let inst = match ctx.instance() {
                Ok(i) => i,
                Err(e) => return ToolOutcome::Failed(e),
            };
            let caller = ctx.caller();
            let (wf, id) = (str_arg(&args, "workflowId"), str_arg(&args, "configId"));
            let result = match str_arg(&args, "action") {
                "list" => inst.list_eval_configs(&caller, wf).await.map(|l| json!({"configs": l.iter().map(summary).collect::<Vec<_>>()})),
                "get" => inst.get_eval_config(&caller, wf, id).await.map(|c| json!({"config": summary(&c)})),
                "describe" => inst.get_eval_config(&caller, wf, id).await.map(|c| json!({"config": c})),
                "create" => match input_of(&args) {
                    Ok(input) => inst.create_eval_config(&caller, wf, input).await.map(|c| json!({"config": c})),
                    Err(e) => return ToolOutcome::Failed(e),
                },
                "update" => match input_of(&args) {
                    Ok(input) => inst.update_eval_config(&caller, wf, id, input).await.map(|c| json!({"config": c})),
                    Err(e) => return ToolOutcome::Failed(e),
                },
                "delete" => inst.delete_eval_config(&caller, wf, id).await.map(|_| json!({"success": true})),
                other => return ToolOutcome::Failed(format!("unknown eval-config action {other:?}")),
            };
            match result {
                Ok(v) => ToolOutcome::Done(v),
                Err(e) => ToolOutcome::Failed(e.message()),
            }
        })
    }
}
