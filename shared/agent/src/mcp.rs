//! External MCP servers for the agent: the configured registry
//! (`INSTANCE_AI_MCP_SERVERS`), the user's connections (`store::data::
//! McpConnections`, auth as a credential id of the credential store) and
//! their tools as agent tools — named `mcp_<slug>__<tool>`, so they never
//! shadow a native tool, orchestrator only, deferred (`search_tools`), each
//! call through `mcp-client` over the guarded client, its result inside the
//! untrusted envelope, stopped (and the server told) when the run is.

use crate::error::AgentError;
use crate::runtime::Runtime;
use crate::tools::untrusted::{envelope, json_envelope};
use crate::tools::{Audience, Gate, Tool, ToolContext, ToolOutcome};
use futures::future::BoxFuture;
use mcp_client::{Endpoint, Session, Transport};
use protocol::events::{ConfirmationRequest, Severity};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use store::data::mcp_connections::McpToolSpec;
use store::Config;

pub const VARIABLE: &str = "INSTANCE_AI_MCP_SERVERS";
/// The admin policy action of every MCP tool call (n8n's `executeMcpTool`).
pub const CALL_POLICY: &str = "executeMcpTool";
/// The credential types a server's auth may use, and the headers they make.
pub const CREDENTIAL_TYPES: &[&str] = &["httpBearerAuth", "httpHeaderAuth"];
/// Deadline of one exchange with a server.
pub const TIMEOUT: Duration = Duration::from_secs(60);
const PREFIX: &str = "mcp_";

/// One server of the registry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerConfig {
    pub slug: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(deserialize_with = "parse_url")]
    pub url: url::Url,
    #[serde(default = "streamable")]
    pub transport: Transport,
    /// `httpBearerAuth` or `httpHeaderAuth`; none: the server needs no auth.
    #[serde(default)]
    pub credential_type: Option<String>,
    /// Tool names to show in `search` before the user connects.
    #[serde(default)]
    pub tools: Vec<String>,
}

fn parse_url<'de, D: serde::Deserializer<'de>>(d: D) -> Result<url::Url, D::Error> {
    let s = String::deserialize(d)?;
    url::Url::parse(s.trim()).map_err(serde::de::Error::custom)
}

fn streamable() -> Transport {
    Transport::StreamableHttp
}

/// The servers users may connect.
#[derive(Debug, Clone, Default)]
pub struct McpServers(Vec<ServerConfig>);

impl McpServers {
    pub fn from_config(config: &Config) -> Result<McpServers, AgentError> {
        match config.var(VARIABLE).map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(McpServers::default()),
            Some(raw) => McpServers::parse(raw).map_err(|e| AgentError::Invalid(format!("{VARIABLE} is malformed: {e}"))),
        }
    }

    pub fn parse(raw: &str) -> Result<McpServers, String> {
        let list: Vec<ServerConfig> = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        let mut seen = std::collections::HashSet::new();
        for s in &list {
            if s.slug.is_empty() || s.slug.len() > 40 || !s.slug.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
                return Err(format!("slug {:?} must be 1-40 characters of a-z, 0-9 and -", s.slug));
            }
            if !seen.insert(s.slug.clone()) {
                return Err(format!("slug {:?} appears twice", s.slug));
            }
            if let Some(t) = s.credential_type.as_deref().filter(|t| !CREDENTIAL_TYPES.contains(t)) {
                return Err(format!("{}: credentialType {t:?} is not one of {}", s.slug, CREDENTIAL_TYPES.join(", ")));
            }
            if !matches!(s.url.scheme(), "http" | "https") {
                return Err(format!("{}: the url must be http or https", s.slug));
            }
        }
        Ok(McpServers(list))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn all(&self) -> &[ServerConfig] {
        &self.0
    }

    pub fn get(&self, slug: &str) -> Option<&ServerConfig> {
        self.0.iter().find(|s| s.slug == slug)
    }
}

/// The agent tool name of a server's tool: `mcp_<slug>__<tool>`, within the
/// providers' `^[a-zA-Z0-9_-]{1,64}$`.
pub fn tool_name(slug: &str, tool: &str) -> String {
    let clean: String = tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let name = format!("{PREFIX}{}__{clean}", slug.replace('-', "_"));
    if name.len() <= 64 {
        return name;
    }
    // Long names keep their start and a hash of the whole, so two never meet.
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    format!("{}_{:08x}", &name[..55], h.finish() as u32)
}

pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The "always allow" key of an MCP tool call (by its agent name).
pub fn allow_key(name: &str) -> String {
    format!("mcp#{name}")
}

/// Headers a server's requests carry: the credential's secret, decrypted
/// for this request only.
pub async fn endpoint(ctx: &ToolContext<'_>, server: &ServerConfig, credential_id: Option<&str>) -> Result<Endpoint, String> {
    let mut headers = Vec::new();
    if let Some(kind) = &server.credential_type {
        let id = credential_id.ok_or_else(|| format!("{} needs a {kind} credential; none was chosen", server.title))?;
        let secret = ctx.instance()?.credential_secret_for_use(&ctx.caller(), id, kind).await.map_err(|e| e.message())?;
        let field = |f: &str| secret.expose().get(f).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| format!("credential {id} has no {f}"));
        match kind.as_str() {
            "httpBearerAuth" => headers.push(("authorization".to_owned(), format!("Bearer {}", field("token")?))),
            _ => headers.push((field("name")?, field("value")?)),
        }
    }
    Ok(Endpoint { url: server.url.clone(), transport: server.transport, headers, timeout: TIMEOUT })
}

/// Opens a session, lists the tools, closes it (what connecting stores).
pub async fn list_tools(ctx: &ToolContext<'_>, server: &ServerConfig, credential_id: Option<&str>) -> Result<Vec<McpToolSpec>, String> {
    let endpoint = endpoint(ctx, server, credential_id).await?;
    let mut session = Session::connect(ctx.rt.outbound.clone(), endpoint, &ctx.abort).await.map_err(|e| e.to_string())?;
    let listed = session.list_tools(&ctx.abort).await;
    session.close().await;
    Ok(listed
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|t| McpToolSpec { name: t.name, description: t.description, input_schema: t.input_schema })
        .collect())
}

/// The user's connected servers' tools as agent tools (servers no longer
/// configured are left out; a name a native tool has is never used).
pub async fn tools_for(rt: &Runtime, user: &protocol::UserId) -> Result<Vec<Arc<dyn Tool>>, AgentError> {
    if rt.mcp_servers.is_empty() {
        return Ok(Vec::new());
    }
    let mut out: Vec<Arc<dyn Tool>> = Vec::new();
    for c in rt.mcp_connections.list(user).await? {
        let Some(server) = rt.mcp_servers.get(&c.slug) else { continue };
        for t in c.tools {
            let name = tool_name(&c.slug, &t.name);
            if rt.tools.get(&name).is_some() || out.iter().any(|o| o.name() == name) {
                continue;
            }
            let description = crate::files::cut(&format!("[MCP server {}] {}", server.title, t.description), 1000).0;
            out.push(Arc::new(McpTool { name, description, schema: t.input_schema, slug: c.slug.clone(), tool: t.name, title: server.title.clone() }));
        }
    }
    Ok(out)
}

/// One tool of a connected server.
pub struct McpTool {
    name: String,
    description: String,
    schema: Value,
    slug: String,
    tool: String,
    title: String,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        match &self.schema {
            Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("object") => self.schema.clone(),
            _ => json!({"type": "object", "properties": {}}),
        }
    }

    fn audience(&self) -> Audience {
        Audience::Orchestrator
    }

    /// The server checks its own arguments (its schema may use keywords our
    /// validator does not know); here only that they are an object.
    fn check_input(&self, args: &Value) -> Result<(), String> {
        if args.is_object() {
            Ok(())
        } else {
            Err("the arguments must be a JSON object".into())
        }
    }

    fn gate<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: &'a Value) -> BoxFuture<'a, Result<Option<Gate>, String>> {
        let args = args.as_object().cloned().unwrap_or_default();
        Box::pin(async move {
            let mut request = ConfirmationRequest::approval("", "", self.name.clone(), args, Severity::Info, format!("Run {} on the MCP server {}?", self.tool, self.title));
            request.resource_name = Some(self.title.clone());
            Ok(Some(Gate::permission(request, CALL_POLICY)))
        })
    }

    fn allow_key(&self, _args: &Value) -> Option<String> {
        Some(allow_key(&self.name))
    }

    /// The call answers Stop itself: the server is told the request is cancelled.
    fn handles_abort(&self) -> bool {
        true
    }

    fn run<'a>(&'a self, ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Some(server) = ctx.rt.mcp_servers.get(&self.slug) else {
                return ToolOutcome::Failed(format!("the MCP server {} is no longer configured", self.slug));
            };
            let conn = ctx.rt.mcp_connections.list(ctx.user_id).await.map_err(|e| e.to_string()).map(|l| l.into_iter().find(|c| c.slug == self.slug));
            let conn = match conn {
                Ok(Some(c)) => c,
                Ok(None) => return ToolOutcome::Failed(format!("the MCP server {} is not connected any more", self.title)),
                Err(e) => return ToolOutcome::Failed(e),
            };
            let endpoint = match endpoint(ctx, server, conn.credential_id.as_deref()).await {
                Ok(e) => e,
                Err(e) => return ToolOutcome::Failed(e),
            };
            let source = format!("mcp:{}", self.slug);
            let outcome = async {
                let mut session = Session::connect(ctx.rt.outbound.clone(), endpoint, &ctx.abort).await?;
                let result = session.call_tool(&self.tool, args, &ctx.abort).await;
                session.close().await;
                result
            }
            .await;
            match outcome {
                Ok(r) => {
                    let mut out = Map::new();
                    out.insert("server".into(), json!(self.slug));
                    out.insert("tool".into(), json!(self.tool));
                    out.insert("isError".into(), json!(r.is_error));
                    out.insert("content".into(), json!(envelope(&source, &r.text())));
                    if let Some(s) = &r.structured_content {
                        out.insert("structuredContent".into(), json!(json_envelope(&source, s)));
                    }
                    ToolOutcome::Done(Value::Object(out))
                }
                Err(mcp_client::McpError::Cancelled) => ToolOutcome::Done(json!({"cancelled": true, "message": "Cancelled by the user before the tool finished."})),
                Err(e) => ToolOutcome::Failed(format!("{} ({}): {e}", self.tool, self.title)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_safe_and_bounded() {
        assert_eq!(tool_name("orders-test", "lookup.order"), "mcp_orders_test__lookup_order");
        let long = tool_name("a", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert_ne!(long, tool_name("a", &format!("{}y", "x".repeat(99))));
        assert!(is_mcp_tool(&long));
    }

    #[test]
    fn the_registry_is_checked() {
        let ok = McpServers::parse(r#"[{"slug": "orders", "title": "Orders", "url": "https://mcp.example.com/mcp", "credentialType": "httpBearerAuth"}]"#).unwrap();
        assert_eq!(ok.get("orders").unwrap().transport, Transport::StreamableHttp);
        assert!(McpServers::parse(r#"[{"slug": "Bad Slug", "title": "x", "url": "https://a"}]"#).is_err());
        assert!(McpServers::parse(r#"[{"slug": "a", "title": "x", "url": "https://a", "credentialType": "oAuth2Api"}]"#).is_err());
        assert!(McpServers::parse(r#"[{"slug": "a", "title": "x", "url": "ftp://a"}]"#).is_err());
    }
}
