//! Chat models the engine holds no client for: the AWS Bedrock Chat Model
//! (`lmChatAwsBedrock`) on the `models` crate's Bedrock provider (the
//! agent's own, ConverseStream through the AWS SDK), built from the node's
//! `aws` credential. The engine drives the provider like its own (on the
//! execution's runtime: streaming, timeout, cancel) and records every call.

use engine::host::ChatModelProvider;
use engine::nodes::ai::model::{ModelSetup, BEDROCK};
use models::bedrock::{BedrockOptions, BedrockProvider};
use models::{ModelProvider, RetryPolicy};
use serde_json::Value;

pub(crate) struct HostModels;

impl ChatModelProvider for HostModels {
    fn provider(&self, setup: &ModelSetup) -> Option<Result<Box<dyn ModelProvider>, String>> {
        (setup.node_type == BEDROCK).then(|| bedrock(setup))
    }
}

fn field<'a>(c: &'a Value, k: &str) -> Option<&'a str> {
    c.get(k).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// A Bedrock client for the node: the credential's keys and region, the
/// endpoint the engine resolved (its origin overrides and the credential's
/// `bedrockRuntimeEndpoint` applied), the SDK's retries off (the node's
/// `maxRetries` is the one retry layer).
fn bedrock(setup: &ModelSetup) -> Result<Box<dyn ModelProvider>, String> {
    use aws_sdk_bedrockruntime::config::{BehaviorVersion, Credentials, Region};
    for option in ["latency", "guardrail"] {
        if setup.options.get(option).is_some_and(|v| !v.is_null() && v != "standard" && v != &serde_json::json!({})) {
            return Err(format!("AWS Bedrock Chat Model: the \"{option}\" option is not supported on this instance"));
        }
    }
    let c = setup.credential.as_ref().ok_or("AWS Bedrock Chat Model: no AWS credential")?;
    let (Some(key), Some(secret)) = (field(c, "accessKeyId"), field(c, "secretAccessKey")) else {
        return Err("AWS Bedrock Chat Model: the AWS credential needs an access key ID and a secret access key".into());
    };
    let temporary = c.get("temporaryCredentials").and_then(Value::as_bool).unwrap_or(false);
    let token = field(c, "sessionToken").filter(|_| temporary).map(str::to_owned);
    let endpoint = setup.endpoint.clone().ok_or("AWS Bedrock Chat Model: no endpoint")?;
    // the region the engine put in the endpoint's host (an inference profile ARN's wins)
    let region = endpoint
        .split("bedrock-runtime.")
        .nth(1)
        .and_then(|r| r.split('.').next())
        .map(str::to_owned)
        .or_else(|| field(c, "region").map(str::to_owned))
        .unwrap_or_else(|| "us-east-1".into());
    let config = aws_sdk_bedrockruntime::config::Builder::new()
        .behavior_version(BehaviorVersion::latest())
        .http_client(store::aws::https_client())
        .region(Region::new(region))
        .credentials_provider(Credentials::new(key, secret, token, None, "n8n-aws-credential"))
        .endpoint_url(endpoint)
        .retry_config(aws_sdk_bedrockruntime::config::retry::RetryConfig::disabled())
        .build();
    let additional_fields = match setup.options.get("additionalModelRequestFields") {
        Some(Value::String(s)) if !s.trim().is_empty() && s.trim() != "{}" => {
            Some(serde_json::from_str::<Value>(s).map_err(|_| "Additional Model Request Fields must be valid JSON".to_owned())?)
        }
        Some(Value::Object(o)) if !o.is_empty() => Some(Value::Object(o.clone())),
        _ => None,
    };
    let options = BedrockOptions {
        max_tokens: setup.max_tokens.map(|m| m.clamp(1, u32::MAX as i64) as u32),
        thinking_budget: None,
        temperature: setup.temperature.map(|t| t as f32),
        top_p: setup.top_p.map(|p| p as f32),
        additional_fields,
        retry: RetryPolicy { max_retries: setup.max_retries, ..RetryPolicy::default() },
    };
    Ok(Box::new(BedrockProvider::new(aws_sdk_bedrockruntime::Client::from_conf(config), setup.model.clone(), options)))
}
