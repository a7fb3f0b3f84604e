//! The workflow engine: runs n8n workflow JSON (nodes, connections, items,
//! run data) with n8n's semantics and the core nodes. No AWS inside: the
//! executor function persists what it produces through the store.
//!
//! Codemap: `workflow` (model + graph), `data` (items, run data, execution
//! state), `run` (executor loop), `partial` (pin data, run-step, resolved
//! parameters), `expr` (DataProxy over run data), `nodes/*` (one node each),
//! `catalog` (node descriptions, credential types, search, TypeScript types),
//! `declarative` (service nodes described as data, n8n's routing),
//! `credentials` (connection tests), `oauth2` (OAuth2 grants, connect flow,
//! token refresh, service-account JWTs), `host` (traits the host implements:
//! credentials, sub-workflows, data tables, files, DNS), `stream` (chunks of
//! a streamed answer, n8n's `sendChunk`).

pub mod binary;
pub mod catalog;
pub mod chat;
pub mod credentials;
pub mod data;
pub mod declarative;
pub mod error;
pub mod expr;
pub mod form;
pub mod host;
pub mod nodes;
pub mod oauth2;
mod pack;
pub mod partial;
pub mod run;
pub mod schedule;
mod stack;
pub mod stream;
pub mod webhook;
pub mod workflow;

pub use data::{ExecutionState, ExecutionStatus, Item, Items, NodeError, OutputItems, RunData, TaskData};
pub use error::{EngineError, Result};
pub use host::Host;
pub use run::{CancelToken, Engine, EngineSettings, ProgressHook, RunOptions, RunStats};
pub use workflow::{Graph, Node, Workflow};
