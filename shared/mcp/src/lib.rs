//! The instance-level MCP server: Streamable HTTP transport (stateless
//! JSON-RPC) and the tools of `spec/mcp-server-tools.md`.
