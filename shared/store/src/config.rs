//! One typed configuration, read from environment variables once at start.
//!
//! Every variable is listed in [`VARIABLES`] (the README's table is generated
//! from the same list and a test keeps them equal). A malformed value fails
//! at start with a message naming the variable; a resource a function needs
//! but was not given fails when the function is built (see
//! [`Config::require`]), not on the first request.

use crate::deployment::{FunctionDef, QueueId, TableId, QUEUES, TABLES};
use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {name} is not set ({purpose})")]
    Missing { name: &'static str, purpose: &'static str },
    #[error("environment variable {name} is malformed: {reason}")]
    Malformed { name: &'static str, reason: String },
}

/// A documented environment variable.
pub struct Variable {
    pub name: &'static str,
    pub purpose: &'static str,
    pub default: Option<&'static str>,
}

/// Knobs beyond the per-resource names (those come from the deployment
/// definition: `EVENTS_TABLE`, `STEPS_QUEUE_URL`, ...).
pub const VARIABLES: &[Variable] = &[
    Variable { name: "AWS_REGION", purpose: "AWS region of DynamoDB and SQS (set by Lambda; `us-east-1` locally)", default: None },
    Variable { name: "AWS_ENDPOINT_URL", purpose: "endpoint for every AWS SDK client; points at moto_server locally, unset in AWS", default: None },
    Variable { name: "WS_MANAGEMENT_URL", purpose: "API Gateway Management API endpoint for pushing WebSocket frames (`https://{api}.execute-api.{region}.amazonaws.com/{stage}` in AWS, the local cloud's URL locally)", default: None },
    Variable { name: "WS_API_URL", purpose: "WebSocket API URL the events function subscribes to a thread through, as a browser does, so SSE gets live frames pushed (`wss://{api}.execute-api.{region}.amazonaws.com/{stage}` in AWS, set by the template; the local cloud's `ws://…/ws` locally)", default: None },
    Variable { name: "INSTANCE_AI_MODEL", purpose: "model provider: `anthropic:<model>`, `openai:<model>`, `openai-compatible:<base-url>:<model>`, `bedrock:<model-id>` or `scripted:<path>`", default: None },
    Variable { name: "INSTANCE_AI_MAX_STEPS", purpose: "maximum agent steps (model calls) per run", default: Some("50") },
    Variable { name: "INSTANCE_AI_STEP_LEASE_SECS", purpose: "how long a queued or running agent step may go silent before the sweep finishes its run as interrupted", default: Some("960") },
    Variable { name: "INSTANCE_AI_STEP_BUDGET_SECS", purpose: "wall time one agent step may use before it checkpoints and re-enqueues itself (below the step function's 900 s limit)", default: Some("600") },
    Variable { name: "INSTANCE_AI_CONFIRMATION_TIMEOUT_SECS", purpose: "deny a pending confirmation request after this many seconds (unset: wait for the user forever)", default: None },
    Variable { name: "INSTANCE_AI_LOCAL_DATA_KEY", purpose: "base64 of 32 bytes: the key that encrypts credential secrets in development (use KMS in AWS)", default: None },
    Variable { name: "INSTANCE_AI_KMS_KEY_ID", purpose: "KMS key id/ARN for credential envelope encryption in AWS", default: None },
    Variable { name: "INSTANCE_AI_BOOTSTRAP_KEYS", purpose: "`user:key,user:key` pairs seeded as API keys when the local cloud starts", default: None },
    Variable { name: "INSTANCE_AI_PORT", purpose: "port of the local cloud (HTTP, SSE, WebSocket, @connections)", default: Some("8787") },
    Variable { name: "INSTANCE_AI_HTTP_ALLOWED_HOSTS", purpose: "comma-separated host names or IPs that HTTP Request nodes may call (unset: any public host)", default: None },
    Variable { name: "INSTANCE_AI_SERVICE_ORIGIN_OVERRIDES", purpose: "comma-separated `origin=replacement` pairs: requests of workflow nodes (and OAuth2 token exchanges) to that origin go to the replacement instead — local stand-ins of a service in development and tests (`https://sheets.googleapis.com=http://127.0.0.1:9001`); unset: none", default: None },
    Variable { name: "INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK", purpose: "`true` lets HTTP Request nodes reach private, loopback and link-local addresses (only the allowed hosts when those are set); off, the SSRF guard refuses them", default: Some("false") },
    Variable { name: "INSTANCE_AI_EXECUTION_PROGRESS_MS", purpose: "a running execution's run data is stored at most once per this many milliseconds as nodes finish (`0`: only when it ends or waits)", default: Some("1000") },
    Variable { name: "INSTANCE_AI_ALLOWED_ORIGINS", purpose: "comma-separated browser origins allowed to call `/mcp` (requests without `Origin` are always allowed)", default: None },
    Variable { name: "INSTANCE_AI_WEB_ORIGIN", purpose: "comma-separated origins of the web page (`https://{api}.execute-api.{region}.amazonaws.com`, `*` for any) that may read the SSE endpoint across origins (CORS); unset: same origin only", default: None },
    Variable { name: "INSTANCE_AI_EVENTS_URL", purpose: "base URL of the events function's streaming Function URL (set by the template): where the web page reads SSE and a hosted chat page posts streaming messages (`/stream/webhook/…`); unset: the page's own origin", default: None },
    Variable { name: "INSTANCE_AI_APPROVAL_POLICY", purpose: "admin policy per gated agent action, comma-separated `action=mode` (`mode`: `require_approval`, `always_allow` or `blocked`; `*=mode` sets the default; actions are listed in `agent::tools::policy::ACTIONS`, e.g. `workflows.publish=blocked,runWorkflow=always_allow`)", default: Some("*=require_approval") },
    Variable { name: "INSTANCE_AI_ALLOW_SENDING_PARAMETER_VALUES", purpose: "`false` keeps execution data from the assistant: the `executions` tool and `nodes(execute)` then return no item values, no node input and no error details that came from outside (n8n's `N8N_AI_ALLOW_SENDING_PARAMETER_VALUES`)", default: Some("true") },
    Variable { name: "INSTANCE_AI_EXECUTION_INLINE_WAIT_MS", purpose: "how long the agent's `executions` run/run-step wait inline for an execution before the chain parks on it (no step runs while parked; the executor's completion resumes it)", default: Some("2000") },
    Variable { name: "INSTANCE_AI_LOG_FORMAT", purpose: "`json` (default in Lambda) or `text`", default: Some("json") },
    Variable { name: "RUST_LOG", purpose: "log filter (`info`, `store=debug`, ...)", default: Some("info") },
    Variable { name: "INSTANCE_AI_PUBLIC_URL", purpose: "base URL webhooks, forms and Wait resume URLs are served under (`$execution.resumeUrl` = `<url>/webhook-waiting/<id>`); set by the template for the executor (the HTTP API's URL, or the `PublicUrl` parameter), the local cloud's URL locally; also the OAuth issuer, and with `/mcp` the resource OAuth tokens are bound to; functions use the request's own origin (`Host`, `X-Forwarded-Proto`) when unset", default: None },
    Variable { name: "INSTANCE_AI_EXECUTION_RETENTION_DAYS", purpose: "days a finished execution is kept before DynamoDB's TTL removes it with its run data (`0`: keep forever); a waiting execution never expires while it waits", default: Some("14") },
    Variable { name: "INSTANCE_AI_WEBHOOK_MAX_BODY_BYTES", purpose: "largest webhook or form request body accepted (413 beyond, nothing runs); under API Gateway's 6 MB Lambda payload once base64-encoded", default: Some("4194304") },
    Variable { name: "INSTANCE_AI_WEBHOOK_RESPONSE_WAIT_SECS", purpose: "how long a webhook call waits for a `lastNode` or Respond to Webhook answer before it gets `202` with the execution id (the run goes on); below API Gateway's 30 s", default: Some("25") },
    Variable { name: "INSTANCE_AI_MCP_EXECUTION_WAIT_SECS", purpose: "how long the MCP tools `execute_workflow` and `test_workflow` wait for the execution before they answer `running` with its id (the run goes on; `get_execution` follows it); below API Gateway's 30 s", default: Some("25") },
    Variable { name: "SCHEDULER_GROUP", purpose: "EventBridge Scheduler schedule group that holds the schedules of published Schedule Trigger workflows", default: None },
    Variable { name: "SCHEDULER_ROLE_ARN", purpose: "IAM role EventBridge Scheduler assumes to send a schedule's tick to the Runs queue", default: None },
    Variable { name: "SWEEP_SCHEDULE", purpose: "name of the sweep's EventBridge Scheduler schedule (default group, every minute): enabled while runs or executions hold leases or waits, disabled by the sweep when none are left, so an idle deployment invokes nothing", default: None },
    Variable { name: "RUNS_QUEUE_ARN", purpose: "ARN of the Runs queue, the target of every schedule", default: None },
    Variable { name: "INSTANCE_AI_OAUTH_ACCESS_TOKEN_SECS", purpose: "lifetime of an OAuth access token for `/mcp` (short: a client refreshes it)", default: Some("900") },
    Variable { name: "INSTANCE_AI_OAUTH_REFRESH_TOKEN_SECS", purpose: "how long an OAuth refresh token (rotated at each use) stays valid unused", default: Some("2592000") },
    Variable { name: "INSTANCE_AI_BRAVE_SEARCH_API_KEY", purpose: "API key of Brave's Web Search API: the agent's `research(web-search)` uses Brave when it is set (a secret: give it to the step function only)", default: None },
    Variable { name: "INSTANCE_AI_BRAVE_SEARCH_URL", purpose: "endpoint of Brave's Web Search API (a compatible stand-in for tests)", default: Some("https://api.search.brave.com/res/v1/web/search") },
    Variable { name: "INSTANCE_AI_SEARXNG_URL", purpose: "base URL of a SearXNG instance (with its JSON format enabled) that `research(web-search)` uses when no Brave key is set; neither set: web search returns no results", default: None },
    Variable { name: "INSTANCE_AI_MCP_SERVERS", purpose: "the external MCP servers users may connect to the agent (`mcp-servers`): a JSON array of `{slug, title, description, url, transport?: \"httpStreamable\"|\"sse\", credentialType?: \"httpBearerAuth\"|\"httpHeaderAuth\", tools?: [names]}`; reached through the SSRF guard (`INSTANCE_AI_HTTP_*`)", default: None },
    Variable { name: "INSTANCE_AI_MODELS_CATALOG_URL", purpose: "the models.dev-shaped catalog `searchModels` reads (fetched through the SSRF guard, cached for an hour)", default: Some("https://models.dev/api.json") },
];

/// The configuration of one process.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    pub region: String,
    pub endpoint_url: Option<String>,
    pub ws_management_url: Option<String>,
    /// The WebSocket API clients connect to (`ws://` or `wss://`).
    pub ws_api_url: Option<String>,
    pub model: Option<String>,
    pub max_steps: u32,
    pub step_lease_secs: u64,
    pub step_budget_secs: u64,
    pub confirmation_timeout_secs: Option<u64>,
    pub local_data_key: Option<[u8; 32]>,
    pub kms_key_id: Option<String>,
    pub bootstrap_keys: Vec<(String, String)>,
    pub port: u16,
    pub allowed_origins: Vec<String>,
    /// Origins of the web page allowed by CORS on the SSE endpoint (`*`: any).
    pub web_origins: Vec<String>,
    /// Base URL of the SSE endpoint the web page connects to (`None`: same origin).
    pub events_url: Option<String>,
    pub http_allowed_hosts: Vec<String>,
    pub http_allow_private_network: bool,
    /// `None`: progress of running executions is not stored.
    pub execution_progress_ms: Option<u64>,
    pub public_url: Option<String>,
    /// `None`: executions are kept forever.
    pub execution_retention_secs: Option<u64>,
    pub webhook_max_body_bytes: usize,
    pub webhook_response_wait_secs: u64,
    /// `INSTANCE_AI_MCP_EXECUTION_WAIT_SECS`: 1–28.
    pub mcp_execution_wait_secs: u64,
    /// Where published schedules live; `None` when not configured.
    pub scheduler: Option<SchedulerTarget>,
    pub log_json: bool,
    /// Every documented variable that is set, as given: knobs owned by one
    /// crate are parsed there (at init, naming the variable on error).
    raw: HashMap<&'static str, String>,
    tables: HashMap<TableId, String>,
    queues: HashMap<QueueId, String>,
}

/// EventBridge Scheduler: the group schedules go in, the role it assumes,
/// the queue it sends ticks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerTarget {
    pub group: String,
    pub role_arn: String,
    pub queue_arn: String,
}

// Secrets (the data key, bootstrap keys) never reach a log line.
impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("region", &self.region)
            .field("endpoint_url", &self.endpoint_url)
            .field("ws_management_url", &self.ws_management_url)
            .field("ws_api_url", &self.ws_api_url)
            .field("model", &self.model)
            .field("max_steps", &self.max_steps)
            .field("step_lease_secs", &self.step_lease_secs)
            .field("step_budget_secs", &self.step_budget_secs)
            .field("confirmation_timeout_secs", &self.confirmation_timeout_secs)
            .field("local_data_key", &self.local_data_key.map(|_| "<set>"))
            .field("kms_key_id", &self.kms_key_id)
            .field("bootstrap_keys", &self.bootstrap_keys.len())
            .field("port", &self.port)
            .field("web_origins", &self.web_origins)
            .field("events_url", &self.events_url)
            .field("http_allowed_hosts", &self.http_allowed_hosts)
            .field("http_allow_private_network", &self.http_allow_private_network)
            .field("execution_progress_ms", &self.execution_progress_ms)
            .field("public_url", &self.public_url)
            .field("execution_retention_secs", &self.execution_retention_secs)
            .field("webhook_max_body_bytes", &self.webhook_max_body_bytes)
            .field("webhook_response_wait_secs", &self.webhook_response_wait_secs)
            .field("mcp_execution_wait_secs", &self.mcp_execution_wait_secs)
            .field("scheduler", &self.scheduler)
            .field("tables", &self.tables)
            .field("queues", &self.queues)
            .finish()
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads from any lookup (tests pass a map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION")).ok_or(ConfigError::Missing {
            name: "AWS_REGION",
            purpose: "the AWS region of DynamoDB and SQS",
        })?;
        let endpoint_url = get("AWS_ENDPOINT_URL").map(|v| parse_url("AWS_ENDPOINT_URL", v)).transpose()?;
        let ws_management_url =
            get("WS_MANAGEMENT_URL").map(|v| parse_url("WS_MANAGEMENT_URL", v)).transpose()?;
        let ws_api_url = get("WS_API_URL").map(|v| parse_ws_url("WS_API_URL", v)).transpose()?;
        let model = get("INSTANCE_AI_MODEL").map(|v| parse_model(v)).transpose()?;
        let max_steps = match get("INSTANCE_AI_MAX_STEPS") {
            None => 50,
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => return Err(malformed("INSTANCE_AI_MAX_STEPS", format!("expected a positive integer, got {v:?}"))),
            },
        };
        let secs = |name: &'static str| -> Result<Option<u64>, ConfigError> {
            get(name)
                .map(|v| match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(malformed(name, format!("expected a positive number of seconds, got {v:?}"))),
                })
                .transpose()
        };
        let step_lease_secs = secs("INSTANCE_AI_STEP_LEASE_SECS")?.unwrap_or(960);
        let step_budget_secs = secs("INSTANCE_AI_STEP_BUDGET_SECS")?.unwrap_or(600);
        let confirmation_timeout_secs = secs("INSTANCE_AI_CONFIRMATION_TIMEOUT_SECS")?;
        let local_data_key = get("INSTANCE_AI_LOCAL_DATA_KEY").map(parse_data_key).transpose()?;
        let kms_key_id = get("INSTANCE_AI_KMS_KEY_ID");
        let bootstrap_keys =
            get("INSTANCE_AI_BOOTSTRAP_KEYS").map(|v| parse_bootstrap_keys(&v)).transpose()?.unwrap_or_default();
        let port = match get("INSTANCE_AI_PORT") {
            None => 8787,
            Some(v) => v
                .trim()
                .parse::<u16>()
                .map_err(|_| malformed("INSTANCE_AI_PORT", format!("expected a port number, got {v:?}")))?,
        };
        let allowed_origins = get("INSTANCE_AI_ALLOWED_ORIGINS")
            .map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        let web_origins: Vec<String> = get("INSTANCE_AI_WEB_ORIGIN")
            .map(|v| v.split(',').map(|s| s.trim().trim_end_matches('/').to_owned()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        if let Some(bad) = web_origins.iter().find(|o| o.as_str() != "*" && !(o.starts_with("http://") || o.starts_with("https://"))) {
            return Err(malformed("INSTANCE_AI_WEB_ORIGIN", format!("expected origins like https://app.example.com or *, got {bad:?}")));
        }
        let events_url = get("INSTANCE_AI_EVENTS_URL")
            .map(|v| parse_url("INSTANCE_AI_EVENTS_URL", v).map(|u| u.trim_end_matches('/').to_owned()))
            .transpose()?;
        let http_allowed_hosts = get("INSTANCE_AI_HTTP_ALLOWED_HOSTS")
            .map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
            .unwrap_or_default();
        let http_allow_private_network = match get("INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK").as_deref().map(str::trim) {
            None | Some("false") | Some("0") => false,
            Some("true") | Some("1") => true,
            Some(other) => {
                return Err(malformed("INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK", format!("expected true or false, got {other:?}")))
            }
        };
        let execution_progress_ms = match get("INSTANCE_AI_EXECUTION_PROGRESS_MS") {
            None => Some(1000),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(0) => None,
                Ok(n) => Some(n),
                Err(_) => {
                    return Err(malformed("INSTANCE_AI_EXECUTION_PROGRESS_MS", format!("expected a number of milliseconds, got {v:?}")))
                }
            },
        };
        let log_json = match get("INSTANCE_AI_LOG_FORMAT").as_deref() {
            None | Some("json") => true,
            Some("text") => false,
            Some(other) => return Err(malformed("INSTANCE_AI_LOG_FORMAT", format!("expected json or text, got {other:?}"))),
        };
        let public_url = get("INSTANCE_AI_PUBLIC_URL")
            .map(|v| parse_url("INSTANCE_AI_PUBLIC_URL", v).map(|u| u.trim_end_matches('/').to_owned()))
            .transpose()?;
        let count = |name: &'static str, default: u64| -> Result<u64, ConfigError> {
            match get(name) {
                None => Ok(default),
                Some(v) => v.trim().parse::<u64>().map_err(|_| malformed(name, format!("expected a whole number, got {v:?}"))),
            }
        };
        let execution_retention_secs = match count("INSTANCE_AI_EXECUTION_RETENTION_DAYS", 14)? {
            0 => None,
            days => Some(days * 86_400),
        };
        let webhook_max_body_bytes = count("INSTANCE_AI_WEBHOOK_MAX_BODY_BYTES", 4 * 1024 * 1024)? as usize;
        // a wait an answer must end below API Gateway's 30 s
        let gateway_wait = |name: &'static str| match count(name, 25)? {
            n @ 1..=28 => Ok(n),
            n => Err(malformed(name, format!("expected 1 to 28 seconds (API Gateway gives up on a request at 30), got {n}"))),
        };
        let webhook_response_wait_secs = gateway_wait("INSTANCE_AI_WEBHOOK_RESPONSE_WAIT_SECS")?;
        let mcp_execution_wait_secs = gateway_wait("INSTANCE_AI_MCP_EXECUTION_WAIT_SECS")?;
        let scheduler = match (get("SCHEDULER_GROUP"), get("SCHEDULER_ROLE_ARN"), get("RUNS_QUEUE_ARN")) {
            (Some(group), Some(role_arn), Some(queue_arn)) => Some(SchedulerTarget { group, role_arn, queue_arn }),
            (None, None, None) => None,
            _ => {
                return Err(malformed(
                    "SCHEDULER_GROUP",
                    "SCHEDULER_GROUP, SCHEDULER_ROLE_ARN and RUNS_QUEUE_ARN are set together".into(),
                ))
            }
        };
        let raw = VARIABLES.iter().filter_map(|v| get(v.name).map(|value| (v.name, value))).collect();
        let tables = TABLES.iter().filter_map(|t| get(t.env).map(|v| (t.id, v))).collect();
        let mut queues = HashMap::new();
        for q in QUEUES {
            if let Some(v) = get(q.env) {
                queues.insert(q.id, parse_url(q.env, v)?);
            }
        }
        Ok(Config {
            region,
            endpoint_url,
            ws_management_url,
            ws_api_url,
            model,
            max_steps,
            step_lease_secs,
            step_budget_secs,
            confirmation_timeout_secs,
            local_data_key,
            kms_key_id,
            bootstrap_keys,
            port,
            allowed_origins,
            web_origins,
            events_url,
            http_allowed_hosts,
            http_allow_private_network,
            execution_progress_ms,
            public_url,
            execution_retention_secs,
            webhook_max_body_bytes,
            webhook_response_wait_secs,
            mcp_execution_wait_secs,
            scheduler,
            log_json,
            raw,
            tables,
            queues,
        })
    }

    /// The value of a documented variable (`None` when unset or blank). A
    /// crate that owns a knob parses it at init and reports a malformed value
    /// with [`ConfigError::Malformed`]; the name must be in [`VARIABLES`].
    pub fn var(&self, name: &str) -> Option<&str> {
        debug_assert!(VARIABLES.iter().any(|v| v.name == name), "{name} is not in config::VARIABLES");
        self.raw.get(name).map(String::as_str)
    }

    /// Sets a documented variable (tests, the local cloud).
    pub fn set_var(&mut self, name: &str, value: impl Into<String>) {
        if let Some(v) = VARIABLES.iter().find(|v| v.name == name) {
            self.raw.insert(v.name, value.into());
        }
    }

    /// Checks that every resource `function` uses is configured, so a
    /// misconfigured function fails at init naming the variable.
    pub fn require(&self, function: &FunctionDef) -> Result<(), ConfigError> {
        for access in function.tables {
            self.table(access.table)?;
        }
        for q in function.sends_to.iter().chain(function.consumes).chain(function.inspects) {
            self.queue_url(*q)?;
        }
        if crate::deployment::SCHEDULE_MANAGERS.contains(&function.id) && self.scheduler.is_none() {
            return Err(ConfigError::Missing {
                name: "SCHEDULER_GROUP",
                purpose: "the EventBridge Scheduler group of published schedules",
            });
        }
        if function.manages_connections && self.ws_management_url.is_none() {
            return Err(ConfigError::Missing {
                name: "WS_MANAGEMENT_URL",
                purpose: "the API Gateway Management API endpoint",
            });
        }
        if crate::deployment::SWEEP_ARMERS.contains(&function.id) && self.var(crate::sweep_schedule::VARIABLE).is_none() {
            return Err(ConfigError::Missing { name: "SWEEP_SCHEDULE", purpose: "the sweep's schedule, turned on when work appears" });
        }
        if crate::deployment::WS_CLIENT_FUNCTIONS.contains(&function.id) && self.ws_api_url.is_none() {
            return Err(ConfigError::Missing { name: "WS_API_URL", purpose: "the WebSocket API the function subscribes through" });
        }
        Ok(())
    }

    pub fn table(&self, id: TableId) -> Result<&str, ConfigError> {
        self.tables.get(&id).map(String::as_str).ok_or_else(|| {
            let def = id.def();
            ConfigError::Missing { name: def.env, purpose: def.purpose }
        })
    }

    pub fn queue_url(&self, id: QueueId) -> Result<&str, ConfigError> {
        self.queues.get(&id).map(String::as_str).ok_or_else(|| {
            let def = id.def();
            ConfigError::Missing { name: def.env, purpose: def.purpose }
        })
    }

    /// Sets a table name (the local cloud and tests derive names from a prefix).
    pub fn set_table(&mut self, id: TableId, name: impl Into<String>) {
        self.tables.insert(id, name.into());
    }

    pub fn set_queue_url(&mut self, id: QueueId, url: impl Into<String>) {
        self.queues.insert(id, url.into());
    }
}

fn malformed(name: &'static str, reason: String) -> ConfigError {
    ConfigError::Malformed { name, reason }
}

fn parse_url(name: &'static str, v: String) -> Result<String, ConfigError> {
    let v = v.trim().to_owned();
    if v.starts_with("http://") || v.starts_with("https://") {
        Ok(v)
    } else {
        Err(malformed(name, format!("expected an http(s) URL, got {v:?}")))
    }
}

fn parse_ws_url(name: &'static str, v: String) -> Result<String, ConfigError> {
    let v = v.trim().to_owned();
    if v.starts_with("ws://") || v.starts_with("wss://") {
        Ok(v)
    } else {
        Err(malformed(name, format!("expected a ws(s) URL, got {v:?}")))
    }
}

fn parse_model(v: String) -> Result<String, ConfigError> {
    const PROVIDERS: &[&str] = &["anthropic:", "openai:", "openai-compatible:", "bedrock:", "scripted:"];
    let v = v.trim().to_owned();
    match PROVIDERS.iter().find(|p| v.starts_with(**p)) {
        Some(p) if v.len() > p.len() => Ok(v),
        _ => Err(malformed(
            "INSTANCE_AI_MODEL",
            format!("expected <provider>:<model> with provider one of anthropic, openai, openai-compatible, bedrock, scripted; got {v:?}"),
        )),
    }
}

fn parse_data_key(v: String) -> Result<[u8; 32], ConfigError> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .map_err(|e| malformed("INSTANCE_AI_LOCAL_DATA_KEY", format!("not base64: {e}")))?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| malformed("INSTANCE_AI_LOCAL_DATA_KEY", format!("expected 32 bytes, got {}", b.len())))
}

fn parse_bootstrap_keys(v: &str) -> Result<Vec<(String, String)>, ConfigError> {
    v.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once(':') {
            Some((user, key)) if protocol::ids::is_valid_path_id(user) && key.len() >= 8 => {
                Ok((user.to_owned(), key.to_owned()))
            }
            _ => Err(malformed(
                "INSTANCE_AI_BOOTSTRAP_KEYS",
                format!("expected user:key pairs (user id of [A-Za-z0-9_.:-], key of at least 8 characters); bad entry {:?}", pair.split(':').next().unwrap_or_default()),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn missing_region_names_the_variable() {
        let err = cfg(&[]).unwrap_err();
        assert!(err.to_string().contains("AWS_REGION"), "{err}");
    }

    #[test]
    fn malformed_values_name_their_variable() {
        for (name, value) in [
            ("INSTANCE_AI_MAX_STEPS", "zero"),
            ("INSTANCE_AI_PORT", "99999"),
            ("AWS_ENDPOINT_URL", "localhost:5000"),
            ("INSTANCE_AI_MODEL", "gpt-4"),
            ("INSTANCE_AI_LOCAL_DATA_KEY", "c2hvcnQ="),
            ("INSTANCE_AI_BOOTSTRAP_KEYS", "alice"),
            ("INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK", "yes"),
            ("INSTANCE_AI_EXECUTION_PROGRESS_MS", "soon"),
            ("STEPS_QUEUE_URL", "steps"),
            ("WS_API_URL", "https://example.com"),
        ] {
            let err = cfg(&[("AWS_REGION", "us-east-1"), (name, value)]).unwrap_err();
            assert!(err.to_string().contains(name), "{name}: {err}");
        }
    }

    #[test]
    fn parses_a_full_local_configuration() {
        let c = cfg(&[
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
            ("INSTANCE_AI_MODEL", "scripted:/tmp/script.json"),
            ("INSTANCE_AI_BOOTSTRAP_KEYS", "alice:alice-key-1,bob:bob-key-22"),
            ("INSTANCE_AI_LOCAL_DATA_KEY", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
            ("EVENTS_TABLE", "ia-events"),
        ])
        .unwrap();
        assert_eq!(c.bootstrap_keys, vec![("alice".into(), "alice-key-1".into()), ("bob".into(), "bob-key-22".into())]);
        assert_eq!(c.table(TableId::Events).unwrap(), "ia-events");
        assert_eq!(c.max_steps, 50);
        assert_eq!(c.port, 8787);
        assert!(c.http_allowed_hosts.is_empty() && !c.http_allow_private_network, "the SSRF guard is on by default");
        assert_eq!(c.execution_progress_ms, Some(1000));
        let missing = c.table(TableId::ApiKeys).unwrap_err();
        assert!(missing.to_string().contains("API_KEYS_TABLE"));
        // Debug output never carries secrets.
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("alice-key-1") && !dbg.contains("AAAA"), "{dbg}");
    }
}

#[cfg(test)]
mod http_and_progress_tests {
    use super::*;

    #[test]
    fn http_hosts_and_progress_are_read() {
        let map: HashMap<String, String> = [
            ("AWS_REGION", "us-east-1"),
            ("INSTANCE_AI_HTTP_ALLOWED_HOSTS", " api.example.com, 10.0.0.5 ,"),
            ("INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK", "true"),
            ("INSTANCE_AI_EXECUTION_PROGRESS_MS", "0"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = Config::from_lookup(|k| map.get(k).cloned()).unwrap();
        assert_eq!(c.http_allowed_hosts, ["api.example.com", "10.0.0.5"]);
        assert!(c.http_allow_private_network);
        assert_eq!(c.execution_progress_ms, None, "0 turns progress writes off");
    }
}
