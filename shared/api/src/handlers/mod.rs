//! One module per function; each exposes a plain async `handle`.

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
pub mod sweep;
pub mod threads;
pub mod web;
pub mod webhook;
