//! The agent runtime: the run loop as a chain of short steps (checkpoint,
//! one streamed model call, tool calls, next step), model providers behind
//! one trait, the tool registry and the tools of `spec/instance-ai-tools.md`.

/// The model providers live in the `models` crate (shared with the workflow
/// engine's chat model nodes); `agent::model` is that crate.
pub use models as model;

pub mod background;
mod bundled;
pub mod checkpoint;
pub mod error;
pub mod files;
pub mod finish;
pub mod history;
pub mod knowledge_base;
pub mod mcp;
pub mod run;
pub mod runtime;
pub mod skills;
pub mod step;
pub mod sweep;
pub mod tools;
pub mod workspace;

pub use error::AgentError;
pub use runtime::{Runtime, StepMessage};
