//! the MCP server.

use crate::App;
use lambda_http::{Body, Request, Response};

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    super::not_yet(app, &req, "the MCP server").await
}
