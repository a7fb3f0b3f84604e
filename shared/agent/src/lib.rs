//! The agent runtime: the run loop as a chain of short steps (checkpoint,
//! one streamed model call, tool calls, next step), model providers behind
//! one trait, the tool registry and the tools of `spec/instance-ai-tools.md`.
