//! The instance-level MCP server: Streamable HTTP transport (stateless
//! JSON-RPC) and the tools of `spec/mcp-server-tools.md`.
//!
//! Codemap: [`transport`] (HTTP checks: method, Origin, protocol version;
//! JSON-RPC framing), [`server`] (the JSON-RPC methods and the per-process
//! [`McpServer`]), [`tools`] (one module per tool family, schemas derived
//! from the argument/output types), [`sdk`] (our workflow SDK: TypeScript
//! stripping, evaluation in the expression sandbox), [`validate`] (workflow
//! JSON against the node catalog), [`ops`] (update_workflow's partial
//! operations), [`runner`] (executions on the engine), [`ratelimit`].

pub mod catalog;
pub mod error;
pub mod ops;
pub mod ratelimit;
pub mod runner;
pub mod schema;
pub mod sdk;
pub mod server;
pub mod tools;
pub mod transport;
pub mod validate;

pub use error::McpError;
pub use server::McpServer;
