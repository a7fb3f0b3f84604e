//! The entrypoints: what each Lambda function does with its event. A
//! function's `main.rs` builds an [`App`] once and hands each event to a
//! plain async fn in [`handlers`]; the local cloud calls the very same fns.
//! Errors become HTTP answers in one place ([`error::ApiError`]). Handlers
//! that need a heavy crate (the agent, the domain layer, the MCP server,
//! triggers, the SSE live feed) are behind its feature (Cargo.toml).

/// Every function links this crate, so this is the allocator of every Lambda
/// function: the engine and the JSON layers allocate many small values, and
/// mimalloc serves them much faster than the system malloc (the engine bench,
/// which declares the same allocator, measures it). Built without asking
/// for transparent huge pages (the `no_thp` feature): where the kernel grants
/// them on request (THP `madvise` mode, as on the machine measured), the first touch of
/// each 2 MB region mimalloc reserves zeroed all of it: ~0.6 ms of every
/// init (README, Benchmarks); the engine bench runs as fast without them,
/// in less memory.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub mod app;
pub mod auth;
pub mod cors;
pub mod error;
pub mod handlers;
pub mod http_util;
pub mod lambda;
#[cfg(feature = "events")]
pub mod live_feed;
pub mod logging;
pub mod oauth;
#[cfg(feature = "events")]
pub mod sse;
pub mod web;

pub use app::App;
pub use error::ApiError;
pub use store::deployment::FunctionId;
