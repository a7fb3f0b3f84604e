//! One module per function; each exposes a plain async `handle` (the
//! events function also serves `stream`: the streaming webhook URLs).

pub mod cancel;
pub mod chat;
pub mod confirm;
pub mod credentials;
pub mod events;
pub mod executor;
pub mod gateway;
pub mod health;
pub mod mcp;
pub mod oauth;
pub mod preferences;
pub mod step;
pub mod stream;
pub mod sweep;
pub mod threads;
pub mod web;
pub mod webhook;
