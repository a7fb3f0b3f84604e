//! The `oauth` Lambda: API Gateway HTTP API → [`api::handlers::oauth::handle`]
//! (the MCP server's OAuth 2.1 authorization server).

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::OAuth).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::oauth::handle(app, req)).await
}
