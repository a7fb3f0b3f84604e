//! A small MCP client over the guarded outbound client (`outbound`): the
//! SSRF guard checks every URL and address, bodies are capped, each request
//! has a deadline and the caller's abort signal cancels it (the server is
//! told with `notifications/cancelled`).
//!
//! Transports: Streamable HTTP (2025-03-26 on: one POST per message, the
//! answer as JSON or as an SSE stream, `Mcp-Session-Id` kept) and the older
//! HTTP+SSE transport (2024-11-05: a GET event stream whose `endpoint`
//! event names where messages are POSTed; answers arrive on the stream).
//!
//! Why our own and not `rmcp`: its client features pull reqwest 0.13,
//! base64 0.23 and sha2 0.11 beside our versions, and its HTTP transports
//! bring their own client, outside the guard; three requests (initialize,
//! tools/list, tools/call) are a few hundred lines over the client we have.

mod session;
mod sse;

pub use session::{CallResult, Endpoint, Session, ToolInfo, Transport};

/// The protocol version this client asks for (the server may answer an older one).
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The largest answer read (JSON body, or all SSE events of one exchange).
pub const MAX_ANSWER_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The URL or an address is refused by the SSRF guard.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unreachable(String),
    /// The server answered, but not as MCP says (status, body, framing).
    #[error("{0}")]
    Protocol(String),
    /// A JSON-RPC error answer.
    #[error("the MCP server answered error {code}: {message}")]
    Rpc { code: i64, message: String },
    /// 401/403: the credentials were missing or refused.
    #[error("the MCP server refused the credentials ({0})")]
    Unauthorized(u16),
    #[error("no answer from the MCP server within {0} ms")]
    Timeout(u128),
    #[error("cancelled")]
    Cancelled,
}

impl McpError {
    fn from_fetch(e: outbound::FetchError) -> McpError {
        use outbound::FetchError as F;
        match e {
            F::Refused(r) => McpError::Refused(format!("{r} (private, loopback and link-local addresses and hosts outside the allow-list cannot be reached)")),
            F::Cancelled => McpError::Cancelled,
            F::Timeout { timeout, .. } => McpError::Timeout(timeout.as_millis()),
            other => McpError::Unreachable(other.to_string()),
        }
    }
}
