//! One module per function; each exposes a plain async `handle`.

pub mod cancel;
pub mod chat;
pub mod confirm;
pub mod events;
pub mod executor;
pub mod gateway;
pub mod health;
pub mod mcp;
pub mod step;
pub mod sweep;
pub mod threads;

use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};

/// Authenticates, then answers that the route is not built yet: an honest
/// 501 in the JSON error shape until its issue lands.
pub(crate) async fn not_yet(app: &App, req: &Request, what: &str) -> Response<Body> {
    match crate::auth::authenticate(app, req.headers()).await {
        Err(e) => e.into_response(),
        Ok(_) => ApiError::NotSupported(format!("{what} is not supported yet")).into_response(),
    }
}
