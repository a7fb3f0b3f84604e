//! The `mcp` Lambda: API Gateway HTTP API → [`api::handlers::mcp::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Mcp).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::mcp::handle(app, req)).await
}
