//! Model provider tests: one binary (link time matters on 2 cores).
//! HTTP providers run against a local axum server on 127.0.0.1 that replays
//! recorded streams from `tests/fixtures/`; nothing leaves the machine.

mod anthropic;
mod bedrock;
mod common;
mod config;
mod openai;
mod scripted;
