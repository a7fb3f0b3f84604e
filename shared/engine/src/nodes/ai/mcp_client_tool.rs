//! MCP Client Tool (`@n8n/n8n-nodes-langchain.mcpClientTool`, versions 1,
//! 1.1, 1.2 and 2): a tool sub-node that offers an MCP server's tools to
//! the AI Agent — all of them, the selected ones, or all but some — and
//! calls them, over `mcp-client` (Streamable HTTP or the older HTTP+SSE
//! transport; v1 is SSE only) behind the engine's SSRF guard, with the
//! node's credential as headers. The run's cancel and deadline stop a call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_client::{Endpoint, Session, ToolInfo, Transport};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::model::ToolSpec;
use crate::error::{EngineError, Result};
use crate::nodes::NodeContext;

/// The server's tools this node offers, with the name each has on the server.
pub fn supply(ctx: &mut NodeContext<'_>, item: usize) -> Result<Vec<ToolSpec>> {
    let endpoint = endpoint(ctx, item)?;
    let tools = with_session(ctx, endpoint, |s, abort| Box::pin(async move { s.list_tools(&abort).await }))?;
    let mode = ctx.param_str("include", item, "all")?;
    let names = |ctx: &mut NodeContext<'_>, key: &str| -> Result<Vec<String>> {
        Ok(match ctx.param(key, item, Value::Array(vec![]))? {
            Value::Array(a) => a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            Value::String(s) => s.split(',').map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect(),
            _ => vec![],
        })
    };
    let chosen: Vec<ToolInfo> = match mode.as_str() {
        "selected" => {
            let keep = names(ctx, "includeTools")?;
            tools.into_iter().filter(|t| keep.contains(&t.name)).collect()
        }
        "except" => {
            let drop = names(ctx, "excludeTools")?;
            tools.into_iter().filter(|t| !drop.contains(&t.name)).collect()
        }
        _ => tools,
    };
    if chosen.is_empty() {
        return Err(EngineError::node_with("MCP Server returned no tools", "Connected successfully to your MCP server but it returned an empty list of tools."));
    }
    Ok(chosen
        .into_iter()
        .map(|t| {
            let parameters = if t.input_schema.get("type").and_then(Value::as_str) == Some("object") { t.input_schema } else { serde_json::json!({"type": "object", "properties": {}}) };
            let description = if t.description.is_empty() { format!("Call the MCP tool {}", t.name) } else { t.description };
            ToolSpec { name: t.name, description, parameters }
        })
        .collect())
}

/// Calls the server's tool `name` with the model's arguments; its text answer.
pub fn call(ctx: &mut NodeContext<'_>, name: &str, args: &Value, item: usize) -> Result<String> {
    let endpoint = endpoint(ctx, item)?;
    let (name, args) = (name.to_owned(), args.clone());
    let result = with_session(ctx, endpoint, move |s, abort| Box::pin(async move { s.call_tool(&name, args, &abort).await }))?;
    let text = result.text();
    if result.is_error {
        return Err(EngineError::node(if text.is_empty() { "The MCP tool failed".to_owned() } else { text }));
    }
    Ok(match result.structured_content {
        Some(s) if text.is_empty() => s.to_string(),
        _ => text,
    })
}

fn endpoint(ctx: &mut NodeContext<'_>, item: usize) -> Result<Endpoint> {
    let v = ctx.version();
    let (url, transport) = if v < 1.1 {
        (ctx.param_str("sseEndpoint", item, "")?, Transport::Sse)
    } else {
        let t = match ctx.param_str("serverTransport", item, "sse")?.as_str() {
            "httpStreamable" => Transport::StreamableHttp,
            _ => Transport::Sse,
        };
        (ctx.param_str("endpointUrl", item, "")?, t)
    };
    let url = url::Url::parse(url.trim()).map_err(|_| EngineError::node("Could not connect to your MCP server. The provided URL is invalid."))?;
    let auth = ctx.param_str("authentication", item, "none")?;
    let cred_type = match auth.as_str() {
        "none" => None,
        "bearerAuth" => Some("httpBearerAuth".to_owned()),
        "headerAuth" => Some("httpHeaderAuth".to_owned()),
        "customAuth" => Some("httpCustomAuth".to_owned()),
        "genericCredentialType" => Some(ctx.param_str("genericAuthType", item, "")?),
        other => return Err(EngineError::node(format!("MCP Client Tool: the authentication {other:?} is not supported on this instance"))),
    };
    let mut headers = Vec::new();
    if let Some(t) = cred_type {
        let c = ctx.credential(&t)?;
        let field = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default().to_owned();
        match t.as_str() {
            "httpBearerAuth" => headers.push(("authorization".to_owned(), format!("Bearer {}", field("token")))),
            "httpHeaderAuth" => headers.push((field("name"), field("value"))),
            "httpBasicAuth" => {
                use base64::Engine as _;
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", field("user"), field("password")));
                headers.push(("authorization".to_owned(), format!("Basic {pair}")));
            }
            "httpCustomAuth" => {
                let json: Value = match c.get("json") {
                    Some(Value::String(s)) => serde_json::from_str(s).map_err(|e| EngineError::node(format!("The custom auth JSON is not valid JSON: {e}")))?,
                    Some(other) => other.clone(),
                    None => Value::Null,
                };
                for (k, v) in json.get("headers").and_then(Value::as_object).into_iter().flatten() {
                    headers.push((k.clone(), crate::nodes::js_string(v)));
                }
            }
            other => return Err(EngineError::node(format!("MCP Client Tool: the credential type {other} is not supported (use bearer, header, basic or custom auth)"))),
        }
    }
    let timeout = Duration::from_millis(ctx.param_f64("options.timeout", item, 60000.0)?.max(1.0) as u64);
    Ok(Endpoint { url, transport, headers, timeout })
}

type Step<'s, T> = std::pin::Pin<Box<dyn std::future::Future<Output = std::result::Result<T, mcp_client::McpError>> + 's>>;

/// Opens a session, runs `work`, closes it; on the engine's own runtime,
/// stopped by the execution's cancel and deadline.
fn with_session<T>(ctx: &mut NodeContext<'_>, endpoint: Endpoint, work: impl for<'s> FnOnce(&'s mut Session, CancellationToken) -> Step<'s, T>) -> Result<T> {
    let env = ctx.env;
    let policy = outbound::Policy { allow_private: env.settings.allow_private_network, allowed_hosts: env.settings.allowed_hosts.clone() };
    let client = outbound::Client::new(policy, Arc::clone(&env.host.resolver)).map_err(|e| EngineError::Host(format!("cannot build the MCP client: {e}")))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| EngineError::Host(format!("cannot start the MCP client's runtime: {e}")))?;
    let (cancel, deadline) = (env.cancel.clone(), env.deadline);
    let result = rt.block_on(async move {
        let abort = CancellationToken::new();
        // The cancel flag and deadline fire the abort token; the session
        // answers it itself (a call in flight tells the server).
        let watch = {
            let abort = abort.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if cancel.is_canceled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        abort.cancel();
                        return;
                    }
                }
            })
        };
        let out = async {
            let mut session = Session::connect(client, endpoint, &abort).await?;
            let out = work(&mut session, abort.clone()).await;
            session.close().await;
            out
        }
        .await;
        watch.abort();
        out
    });
    result.map_err(|e| match e {
        mcp_client::McpError::Cancelled if env.cancel.is_canceled() => EngineError::Canceled,
        mcp_client::McpError::Refused(m) => EngineError::node(m),
        mcp_client::McpError::Unauthorized(s) => EngineError::node_with("Could not connect to your MCP server", format!("the server refused the credentials ({s})")),
        other => EngineError::node_with("Could not connect to your MCP server", other.to_string()),
    })
}
