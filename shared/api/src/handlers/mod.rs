//! One module per function; each exposes a plain async `handle` (the
//! events function also serves `stream`: the streaming webhook URLs). A
//! handler that needs a heavy crate is compiled only with its feature.

#[cfg(feature = "agent")]
pub mod cancel;
#[cfg(feature = "agent")]
pub mod chat;
#[cfg(feature = "agent")]
pub mod confirm;
#[cfg(feature = "instance")]
pub mod credentials;
#[cfg(feature = "events")]
pub mod events;
#[cfg(feature = "executions")]
pub mod executor;
pub mod gateway;
pub mod health;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod oauth;
pub mod preferences;
#[cfg(feature = "step")]
pub mod step;
#[cfg(feature = "events")]
pub mod stream;
#[cfg(feature = "agent")]
pub mod sweep;
pub mod threads;
pub mod web;
#[cfg(feature = "triggers")]
pub mod webhook;
