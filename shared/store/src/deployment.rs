//! The deployment, as data: every table, queue, function, route and schedule.
//!
//! This is the single definition the rest agrees with: the local cloud
//! creates tables and queues and wires routes and pollers from it,
//! `Config::require` checks a function's variables against it, and a test
//! holds `infra/template.yaml` to it (resources, routes, event sources,
//! environment variables and IAM grants), so the two cannot drift.

/// DynamoDB tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableId {
    ApiKeys,
    Events,
    Connections,
    Agent,
    Instance,
    Executions,
    DataRows,
    OAuth,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    S,
    N,
}

#[derive(Debug)]
pub struct TableDef {
    pub id: TableId,
    /// CloudFormation logical id in `infra/template.yaml`.
    pub logical_id: &'static str,
    /// Environment variable carrying the table name.
    pub env: &'static str,
    /// Name suffix used locally (`<prefix>-<suffix>`).
    pub local_suffix: &'static str,
    pub purpose: &'static str,
    pub partition_key: (&'static str, KeyType),
    pub sort_key: Option<(&'static str, KeyType)>,
    /// Global secondary indexes: (name, partition key, sort key), all S, projection ALL.
    pub indexes: &'static [(&'static str, &'static str, &'static str)],
    pub ttl_attribute: Option<&'static str>,
}

const GSI1: &[(&str, &str, &str)] = &[("gsi1", "gsi1pk", "gsi1sk")];

pub const TABLES: &[TableDef] = &[
    TableDef {
        id: TableId::ApiKeys,
        logical_id: "ApiKeysTable",
        env: "API_KEYS_TABLE",
        local_suffix: "api-keys",
        purpose: "API keys as SHA-256 hashes with their owner",
        partition_key: ("keyHash", KeyType::S),
        sort_key: None,
        indexes: &[],
        ttl_attribute: None,
    },
    TableDef {
        id: TableId::Events,
        logical_id: "EventsTable",
        env: "EVENTS_TABLE",
        local_suffix: "events",
        purpose: "the durable event log, (threadId, seq)",
        partition_key: ("threadId", KeyType::S),
        sort_key: Some(("seq", KeyType::N)),
        indexes: &[],
        ttl_attribute: None,
    },
    TableDef {
        id: TableId::Connections,
        logical_id: "ConnectionsTable",
        env: "CONNECTIONS_TABLE",
        local_suffix: "connections",
        purpose: "WebSocket connections and thread subscriptions",
        partition_key: ("pk", KeyType::S),
        sort_key: Some(("sk", KeyType::S)),
        indexes: GSI1,
        ttl_attribute: Some("expiresAt"),
    },
    TableDef {
        id: TableId::Agent,
        logical_id: "AgentTable",
        env: "AGENT_TABLE",
        local_suffix: "agent",
        purpose: "threads, runs, step claims, suspensions, preferences, workspace files",
        partition_key: ("pk", KeyType::S),
        sort_key: Some(("sk", KeyType::S)),
        indexes: GSI1,
        ttl_attribute: Some("expiresAt"),
    },
    TableDef {
        id: TableId::Instance,
        logical_id: "InstanceTable",
        env: "INSTANCE_TABLE",
        local_suffix: "instance",
        purpose: "users, projects, folders, tags, workflows and versions, credentials, data table definitions",
        partition_key: ("pk", KeyType::S),
        sort_key: Some(("sk", KeyType::S)),
        indexes: GSI1,
        ttl_attribute: None,
    },
    TableDef {
        id: TableId::Executions,
        logical_id: "ExecutionsTable",
        env: "EXECUTIONS_TABLE",
        local_suffix: "executions",
        purpose: "workflow executions and their run data (chunked)",
        partition_key: ("pk", KeyType::S),
        sort_key: Some(("sk", KeyType::S)),
        indexes: GSI1,
        ttl_attribute: Some("expiresAt"),
    },
    TableDef {
        id: TableId::DataRows,
        logical_id: "DataRowsTable",
        env: "DATA_ROWS_TABLE",
        local_suffix: "data-rows",
        purpose: "rows of data tables",
        partition_key: ("pk", KeyType::S),
        sort_key: Some(("sk", KeyType::S)),
        indexes: &[],
        ttl_attribute: None,
    },
    TableDef {
        id: TableId::OAuth,
        logical_id: "OAuthTable",
        env: "OAUTH_TABLE",
        local_suffix: "oauth",
        purpose: "OAuth clients, authorization codes, grants and tokens (codes and tokens as SHA-256 hashes)",
        partition_key: ("pk", KeyType::S),
        sort_key: Some(("sk", KeyType::S)),
        indexes: &[],
        ttl_attribute: Some("expiresAt"),
    },
];

impl TableId {
    pub fn def(self) -> &'static TableDef {
        TABLES.iter().find(|t| t.id == self).expect("every TableId has a TableDef")
    }
}

/// SQS queues; each has a dead-letter queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueId {
    Steps,
    Runs,
}

#[derive(Debug)]
pub struct QueueDef {
    pub id: QueueId,
    pub logical_id: &'static str,
    pub dlq_logical_id: &'static str,
    pub env: &'static str,
    pub local_suffix: &'static str,
    pub purpose: &'static str,
    /// Must exceed the consumer's timeout, or a slow message is delivered twice.
    pub visibility_timeout_secs: u32,
    pub max_receive_count: u32,
    pub batch_size: u32,
    pub consumer: FunctionId,
}

pub const QUEUES: &[QueueDef] = &[
    QueueDef {
        id: QueueId::Steps,
        logical_id: "StepsQueue",
        dlq_logical_id: "StepsDeadLetterQueue",
        env: "STEPS_QUEUE_URL",
        local_suffix: "steps",
        purpose: "agent steps: one message per model turn or resume",
        visibility_timeout_secs: 960,
        max_receive_count: 3,
        batch_size: 1,
        consumer: FunctionId::Step,
    },
    QueueDef {
        id: QueueId::Runs,
        logical_id: "RunsQueue",
        dlq_logical_id: "RunsDeadLetterQueue",
        env: "RUNS_QUEUE_URL",
        local_suffix: "runs",
        purpose: "workflow executions to run on the engine",
        visibility_timeout_secs: 960,
        max_receive_count: 3,
        batch_size: 1,
        consumer: FunctionId::Executor,
    },
];

impl QueueId {
    pub fn def(self) -> &'static QueueDef {
        QUEUES.iter().find(|q| q.id == self).expect("every QueueId has a QueueDef")
    }
}

/// Lambda functions, one binary crate each under `functions/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FunctionId {
    Health,
    Chat,
    Confirm,
    Cancel,
    Threads,
    Events,
    Gateway,
    Mcp,
    Step,
    Executor,
    Sweep,
    Webhook,
    Web,
    Credentials,
    OAuth,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    ReadWrite,
}

#[derive(Debug, Clone, Copy)]
pub struct TableAccess {
    pub table: TableId,
    pub access: Access,
}

const fn r(table: TableId) -> TableAccess {
    TableAccess { table, access: Access::Read }
}
const fn rw(table: TableId) -> TableAccess {
    TableAccess { table, access: Access::ReadWrite }
}

#[derive(Debug)]
pub struct FunctionDef {
    pub id: FunctionId,
    pub logical_id: &'static str,
    /// Cargo package under `functions/`.
    pub package: &'static str,
    pub timeout_secs: u32,
    pub memory_mb: u32,
    /// Tables and the access it needs: the IAM grants, nothing more.
    pub tables: &'static [TableAccess],
    pub sends_to: &'static [QueueId],
    pub consumes: &'static [QueueId],
    /// Queues it only inspects (GetQueueAttributes), e.g. the health check.
    pub inspects: &'static [QueueId],
    /// Posts to WebSocket connections through the Management API.
    pub manages_connections: bool,
    /// Encrypts or decrypts credential secrets (KMS data keys).
    pub uses_kms: bool,
    /// Calls the model provider (gets `INSTANCE_AI_MODEL`).
    pub calls_model: bool,
}

use TableId::*;

pub const FUNCTIONS: &[FunctionDef] = &[
    FunctionDef {
        id: FunctionId::Health,
        logical_id: "HealthFunction",
        package: "health",
        timeout_secs: 10,
        memory_mb: 128,
        tables: &[r(ApiKeys)],
        sends_to: &[],
        consumes: &[],
        inspects: &[QueueId::Steps],
        manages_connections: false,
        uses_kms: false,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Chat,
        logical_id: "ChatFunction",
        package: "chat",
        timeout_secs: 15,
        memory_mb: 256,
        // Instance: the project a thread's first message binds (membership).
        tables: &[r(ApiKeys), rw(Agent), rw(Events), rw(Connections), r(Instance)],
        sends_to: &[QueueId::Steps],
        consumes: &[],
        inspects: &[],
        manages_connections: true,
        uses_kms: false,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Confirm,
        logical_id: "ConfirmFunction",
        package: "confirm",
        timeout_secs: 15,
        memory_mb: 256,
        tables: &[r(ApiKeys), rw(Agent), rw(Events), rw(Connections)],
        sends_to: &[QueueId::Steps],
        consumes: &[],
        inspects: &[],
        manages_connections: true,
        uses_kms: false,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Cancel,
        logical_id: "CancelFunction",
        package: "cancel",
        timeout_secs: 15,
        memory_mb: 256,
        // Executions: a run parked on an execution is cancelled with it.
        tables: &[r(ApiKeys), rw(Agent), rw(Events), rw(Connections), rw(Executions)],
        sends_to: &[QueueId::Steps],
        consumes: &[],
        inspects: &[],
        manages_connections: true,
        uses_kms: false,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Threads,
        logical_id: "ThreadsFunction",
        package: "threads",
        timeout_secs: 15,
        memory_mb: 256,
        // Agent read-write: the saved preferences' edits and deletes.
        tables: &[r(ApiKeys), rw(Agent), r(Events)],
        sends_to: &[],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: false,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Events,
        logical_id: "EventsFunction",
        package: "events",
        timeout_secs: 900,
        memory_mb: 256,
        // Instance/Executions/Runs/KMS: the streaming webhook URLs
        // (`/stream/…`) start executions and read their streamed answers.
        tables: &[r(ApiKeys), r(Agent), r(Events), r(Instance), rw(Executions)],
        sends_to: &[QueueId::Runs],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: true,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Gateway,
        logical_id: "GatewayFunction",
        package: "gateway",
        timeout_secs: 30,
        memory_mb: 256,
        tables: &[r(ApiKeys), r(Agent), r(Events), rw(Connections)],
        sends_to: &[],
        consumes: &[],
        inspects: &[],
        manages_connections: true,
        uses_kms: false,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Mcp,
        logical_id: "McpFunction",
        package: "mcp",
        // behind the HTTP API: nothing answers a client after 30 s
        timeout_secs: 30,
        memory_mb: 1024,
        tables: &[r(ApiKeys), rw(Instance), rw(Executions), rw(DataRows), r(OAuth)],
        sends_to: &[QueueId::Runs],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: true,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Step,
        logical_id: "StepFunction",
        package: "step",
        timeout_secs: 900,
        memory_mb: 1024,
        tables: &[rw(Agent), rw(Events), rw(Connections), rw(Instance), rw(Executions), rw(DataRows)],
        sends_to: &[QueueId::Steps, QueueId::Runs],
        consumes: &[QueueId::Steps],
        inspects: &[],
        manages_connections: true,
        uses_kms: true,
        calls_model: true,
    },
    FunctionDef {
        id: FunctionId::Executor,
        logical_id: "ExecutorFunction",
        package: "executor",
        timeout_secs: 900,
        memory_mb: 1024,
        tables: &[rw(Instance), rw(Executions), rw(DataRows)],
        // Steps: a settled execution wakes the agent chain parked on it.
        sends_to: &[QueueId::Runs, QueueId::Steps],
        consumes: &[QueueId::Runs],
        inspects: &[],
        manages_connections: false,
        uses_kms: true,
        calls_model: false,
    },
    FunctionDef {
        id: FunctionId::Sweep,
        logical_id: "SweepFunction",
        package: "sweep",
        timeout_secs: 300,
        memory_mb: 256,
        tables: &[rw(Agent), rw(Events), rw(Connections), rw(Executions)],
        // Steps: an expired confirmation is resumed as denied.
        sends_to: &[QueueId::Steps, QueueId::Runs],
        consumes: &[],
        inspects: &[],
        manages_connections: true,
        uses_kms: false,
        calls_model: false,
    },
    // Webhooks, forms and Wait resumes: public routes, authenticated by
    // the workflow's own node settings (no API key). Starts executions on
    // the Runs queue and waits for their answer below API Gateway's 30 s.
    FunctionDef {
        id: FunctionId::Webhook,
        logical_id: "WebhookFunction",
        package: "webhook",
        timeout_secs: 30,
        memory_mb: 512,
        // ApiKeys: a Chat Trigger's `n8nUserAuth` takes an API key.
        tables: &[r(ApiKeys), r(Instance), rw(Executions)],
        sends_to: &[QueueId::Runs],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: true,
        calls_model: false,
    },
    // The web page: static assets embedded in the binary, no table.
    FunctionDef {
        id: FunctionId::Web,
        logical_id: "WebFunction",
        package: "web",
        timeout_secs: 5,
        memory_mb: 128,
        tables: &[],
        sends_to: &[],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: false,
        calls_model: false,
    },
    // The REST API where a person types a secret (the page's credential cards, curl).
    FunctionDef {
        id: FunctionId::Credentials,
        logical_id: "CredentialsFunction",
        package: "credentials",
        timeout_secs: 60,
        memory_mb: 512,
        // A connection test goes to the executor over the Runs queue and its
        // answer is read from Executions (`executions::jobs`). Agent (read)
        // only because the instance's repositories are built whole.
        tables: &[r(ApiKeys), rw(Instance), r(Executions), r(DataRows), r(Agent)],
        sends_to: &[QueueId::Runs],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: true,
        calls_model: false,
    },
    // The OAuth 2.1 authorization server of the MCP server: metadata,
    // registration, consent (signed in with an API key), tokens, revocation.
    FunctionDef {
        id: FunctionId::OAuth,
        logical_id: "OAuthFunction",
        package: "oauth",
        timeout_secs: 10,
        memory_mb: 256,
        tables: &[r(ApiKeys), rw(OAuth)],
        sends_to: &[],
        consumes: &[],
        inspects: &[],
        manages_connections: false,
        uses_kms: false,
        calls_model: false,
    },
];

impl FunctionId {
    pub fn def(self) -> &'static FunctionDef {
        FUNCTIONS.iter().find(|f| f.id == self).expect("every FunctionId has a FunctionDef")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Head,
    Patch,
    Delete,
    /// Every method (webhooks: the node decides which it answers).
    Any,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Head => "HEAD",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Any => "ANY",
        }
    }

    pub fn matches(self, method: &str) -> bool {
        self == Method::Any || self.as_str() == method
    }
}

/// Where a route is served in AWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// The HTTP API (buffered responses).
    HttpApi,
    /// The function's URL with `InvokeMode: RESPONSE_STREAM` (SSE): HTTP
    /// APIs cannot stream a Lambda response.
    StreamingUrl,
}

#[derive(Debug)]
pub struct RouteDef {
    pub method: Method,
    /// API Gateway path syntax: `/instance-ai/chat/{threadId}`.
    pub path: &'static str,
    pub function: FunctionId,
    pub edge: Edge,
}

pub const ROUTES: &[RouteDef] = &[
    RouteDef { method: Method::Get, path: "/healthz", function: FunctionId::Health, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/instance-ai/chat/{threadId}", function: FunctionId::Chat, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/instance-ai/chat/{threadId}/cancel", function: FunctionId::Cancel, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/instance-ai/confirm/{requestId}", function: FunctionId::Confirm, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/threads/{threadId}/messages", function: FunctionId::Threads, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/threads/{threadId}/status", function: FunctionId::Threads, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/mcp", function: FunctionId::Mcp, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/mcp", function: FunctionId::Mcp, edge: Edge::HttpApi },
    RouteDef { method: Method::Head, path: "/mcp", function: FunctionId::Mcp, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/events/{threadId}", function: FunctionId::Events, edge: Edge::StreamingUrl },
    // The streaming twin of the webhook URLs: `/stream/webhook[-test]/…`
    // answers a streaming Chat Trigger (or Webhook) line by line.
    RouteDef { method: Method::Post, path: "/stream/{proxy+}", function: FunctionId::Events, edge: Edge::StreamingUrl },
    RouteDef { method: Method::Get, path: "/instance-ai/threads", function: FunctionId::Threads, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/instance-ai/chat/{threadId}/tasks/{taskId}/cancel", function: FunctionId::Cancel, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/", function: FunctionId::Web, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/assets/{asset}", function: FunctionId::Web, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/credentials", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/instance-ai/credentials", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/credentials/{credentialId}", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Patch, path: "/instance-ai/credentials/{credentialId}", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Delete, path: "/instance-ai/credentials/{credentialId}", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/instance-ai/credentials/{credentialId}/test", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/credential-types", function: FunctionId::Credentials, edge: Edge::HttpApi },
    // Connecting an OAuth2 credential: the owner's start (API key), the provider's callback (the single-use state).
    RouteDef { method: Method::Get, path: "/instance-ai/credentials/{credentialId}/oauth2/auth", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/oauth2/callback", function: FunctionId::Credentials, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/instance-ai/preferences", function: FunctionId::Threads, edge: Edge::HttpApi },
    RouteDef { method: Method::Patch, path: "/instance-ai/preferences/{preferenceId}", function: FunctionId::Threads, edge: Edge::HttpApi },
    RouteDef { method: Method::Delete, path: "/instance-ai/preferences/{preferenceId}", function: FunctionId::Threads, edge: Edge::HttpApi },
    // n8n's URL spaces: production and test webhooks, forms, and the resume
    // URLs of waiting executions (`{proxy+}` is the rest of the path).
    RouteDef { method: Method::Any, path: "/webhook/{proxy+}", function: FunctionId::Webhook, edge: Edge::HttpApi },
    RouteDef { method: Method::Any, path: "/webhook-test/{proxy+}", function: FunctionId::Webhook, edge: Edge::HttpApi },
    RouteDef { method: Method::Any, path: "/webhook-waiting/{proxy+}", function: FunctionId::Webhook, edge: Edge::HttpApi },
    RouteDef { method: Method::Any, path: "/form/{proxy+}", function: FunctionId::Webhook, edge: Edge::HttpApi },
    RouteDef { method: Method::Any, path: "/form-test/{proxy+}", function: FunctionId::Webhook, edge: Edge::HttpApi },
    RouteDef { method: Method::Any, path: "/form-waiting/{proxy+}", function: FunctionId::Webhook, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/.well-known/oauth-protected-resource", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/.well-known/oauth-protected-resource/mcp", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/.well-known/oauth-authorization-server", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/register", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Get, path: "/authorize", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/authorize", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/token", function: FunctionId::OAuth, edge: Edge::HttpApi },
    RouteDef { method: Method::Post, path: "/revoke", function: FunctionId::OAuth, edge: Edge::HttpApi },
];

/// WebSocket API route keys, all handled by the gateway function.
pub const WS_ROUTES: &[&str] = &["$connect", "$disconnect", "$default", "subscribe", "unsubscribe"];
pub const WS_FUNCTION: FunctionId = FunctionId::Gateway;

/// Scheduled invocations: (function, rate in seconds).
pub const SCHEDULES: &[(FunctionId, u32)] = &[(FunctionId::Sweep, 60)];

/// Functions that publish workflows, so create and delete the EventBridge
/// Scheduler schedules of their Schedule Triggers (`SCHEDULER_*`,
/// `RUNS_QUEUE_ARN`, `scheduler:*Schedule` and `iam:PassRole` on the
/// scheduler's role). The schedules send their ticks to the Runs queue.
pub const SCHEDULE_MANAGERS: &[FunctionId] = &[FunctionId::Mcp, FunctionId::Step];

/// Functions that write work the sweep watches (a run's first chain, an
/// execution's claim) and so turn its schedule on (`SWEEP_SCHEDULE`,
/// `scheduler:GetSchedule`/`UpdateSchedule` on it, `iam:PassRole` on its
/// role); the sweep turns it off when nothing is left
/// (`store::sweep_schedule`).
pub const SWEEP_ARMERS: &[FunctionId] = &[FunctionId::Chat, FunctionId::Executor, FunctionId::Webhook, FunctionId::Sweep];

/// Functions that subscribe to threads through the WebSocket API as a
/// client (`WS_API_URL`): the SSE endpoint gets live frames pushed.
pub const WS_CLIENT_FUNCTIONS: &[FunctionId] = &[FunctionId::Events];

/// Functions told the public base URL (`INSTANCE_AI_PUBLIC_URL`): the
/// executor evaluates `$execution.resumeUrl`. Functions behind the HTTP API
/// cannot reference its URL (a template cycle); they read the request's host.
pub const PUBLIC_URL_FUNCTIONS: &[FunctionId] = &[FunctionId::Executor];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_has_exactly_one_definition() {
        for t in TABLES {
            assert_eq!(TABLES.iter().filter(|o| o.id == t.id).count(), 1);
        }
        for f in FUNCTIONS {
            assert_eq!(FUNCTIONS.iter().filter(|o| o.id == f.id).count(), 1);
        }
    }

    #[test]
    fn queues_outlive_their_consumers() {
        for q in QUEUES {
            let consumer = q.consumer.def();
            assert!(consumer.consumes.contains(&q.id), "{:?} consumer does not declare it", q.id);
            assert!(q.visibility_timeout_secs >= consumer.timeout_secs, "{:?}: visibility below timeout", q.id);
        }
    }
}
