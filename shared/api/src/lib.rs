//! The entrypoints: what each Lambda function does with its event. A
//! function's `main.rs` builds an [`App`] once and hands each event to a
//! plain async fn in [`handlers`]; the local cloud calls the very same fns.
//! Errors become HTTP answers in one place ([`error::ApiError`]).

pub mod app;
pub mod auth;
pub mod cors;
pub mod error;
pub mod handlers;
pub mod http_util;
pub mod lambda;
pub mod live_feed;
pub mod logging;
pub mod oauth;
pub mod sse;
pub mod web;

pub use app::App;
pub use error::ApiError;
pub use store::deployment::FunctionId;
