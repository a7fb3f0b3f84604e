//! The JSON-RPC methods and the per-process server state.

use crate::error::McpError;
use crate::ratelimit::RateLimiter;
use crate::scopes::Scopes;
use crate::tools;
use crate::transport::{self, INSUFFICIENT_SCOPE, INVALID_PARAMS, METHOD_NOT_FOUND};
use protocol::UserId;
use serde_json::{json, Value};
use instance::Instance;
use store::deployment::TableId;
use std::time::Duration;
use store::{AwsClients, Config};

/// Built once per process (Lambda init) and shared by every request.
#[derive(Clone, Debug)]
pub struct McpServer {
    /// The domain layer the tools call (shared with the agent's tools).
    pub instance: Instance,
    pub limiter: RateLimiter,
    pub config: Config,
}

/// Who is calling and from where, for one HTTP request.
#[derive(Clone, Debug)]
pub struct RequestCtx {
    pub user: UserId,
    /// What the caller may do: `tools/list` shows only these tools.
    pub scopes: Scopes,
    /// `scheme://host` the client called; workflow links are built on it.
    pub base_url: String,
}

impl McpServer {
    pub async fn new(clients: &AwsClients, config: &Config) -> Result<McpServer, McpError> {
        let instance = Instance::new(clients, config).await?;
        // The counters live in the Executions table: the MCP function may
        // write it and it has a TTL attribute, so old windows expire.
        let table = config.table(TableId::Executions).map_err(|e| McpError::Internal(e.to_string()))?;
        let limiter = RateLimiter::new(clients.dynamo.clone(), table.to_owned());
        Ok(McpServer { instance, limiter, config: config.clone() })
    }

    /// How long `execute_workflow` and `test_workflow` wait for their run
    /// (`INSTANCE_AI_MCP_EXECUTION_WAIT_SECS`: behind API Gateway, an answer
    /// after 30 s never reaches the client).
    pub fn execution_wait(&self) -> Duration {
        Duration::from_secs(self.config.mcp_execution_wait_secs)
    }

    /// One JSON-RPC request. `Err((code, message, data))` is a protocol
    /// error; tool failures are results with `isError: true`.
    pub async fn dispatch(&self, ctx: &RequestCtx, method: &str, params: Value) -> Result<Value, (i64, String, Value)> {
        match method {
            "initialize" => {
                let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or(transport::DEFAULT_VERSION);
                let version = transport::SUPPORTED_VERSIONS
                    .iter()
                    .find(|v| **v == requested)
                    .copied()
                    .unwrap_or(transport::SUPPORTED_VERSIONS[0]);
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "instance-ai", "title": "Instance AI MCP server", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "Workflow automation tools. Before building a workflow call get_sdk_reference, search_nodes and get_node_types; validate_workflow before create_workflow_from_code."
                }))
            }
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools::list_for(ctx.scopes)})),
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str) else {
                    return Err((INVALID_PARAMS, "tools/call needs params.name (a string)".into(), Value::Null));
                };
                if let Some(needed) = tools::scope_of(name).filter(|s| !ctx.scopes.contains(*s)) {
                    return Err((
                        INSUFFICIENT_SCOPE,
                        format!(
                            "{name} needs the {} scope; this connection was granted {}. Reconnect and approve {} to use it.",
                            needed.as_str(),
                            if ctx.scopes.is_empty() { "no scopes".to_owned() } else { ctx.scopes.to_string() },
                            needed.as_str()
                        ),
                        json!({"requiredScope": needed.as_str()}),
                    ));
                }
                let args = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
                Ok(self.call_tool(ctx, name, args).await)
            }
            other => Err((METHOD_NOT_FOUND, format!("Method not found: {other}"), Value::Null)),
        }
    }

    /// A tool call as an MCP `CallToolResult`.
    pub async fn call_tool(&self, ctx: &RequestCtx, name: &str, args: Value) -> Value {
        let tcx = tools::Ctx { server: self, user: ctx.user.clone(), base_url: ctx.base_url.clone() };
        match tools::call(&tcx, name, args).await {
            Ok(out) => {
                let text = serde_json::to_string(&out).unwrap_or_default();
                json!({"content": [{"type": "text", "text": text}], "structuredContent": out, "isError": false})
            }
            Err(e) => {
                tracing::info!(tool = name, error = %e, "tool call failed");
                json!({"content": [{"type": "text", "text": e.message()}], "isError": true})
            }
        }
    }
}
