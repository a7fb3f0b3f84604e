//! The `credentials` Lambda: API Gateway HTTP API → [`api::handlers::credentials::handle`]
//! (where a person creates, replaces, tests and deletes credential secrets).

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Credentials).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::credentials::handle(app, req)).await
}
