//! The `threads` Lambda: API Gateway HTTP API → [`api::handlers::threads::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Threads).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::threads::handle(app, req)).await
}
