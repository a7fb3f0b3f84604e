//! The `confirm` Lambda: API Gateway HTTP API → [`api::handlers::confirm::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Confirm).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::confirm::handle(app, req)).await
}
