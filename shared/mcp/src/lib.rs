//! The instance-level MCP server: Streamable HTTP transport (stateless
//! JSON-RPC) and the tools of `spec/mcp-server-tools.md`.
//!
//! Codemap: [`transport`] (HTTP checks: method, Origin, protocol version;
//! JSON-RPC framing), [`server`] (the JSON-RPC methods and the per-process
//! [`McpServer`]), [`scopes`] (what an OAuth token may call), [`tools`] (one module per tool family, schemas derived
//! from the argument/output types), [`ratelimit`]. The operations the tools
//! call live in the `instance` crate (the domain layer the agent's tools
//! share); a tool maps arguments and shapes output.

pub mod error;
pub mod ratelimit;
pub mod schema;
pub mod scopes;
pub mod server;
pub mod tools;
pub mod transport;

pub use error::McpError;
pub use server::McpServer;
