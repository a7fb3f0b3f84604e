//! The `cancel` Lambda: API Gateway HTTP API → [`api::handlers::cancel::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Cancel).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::cancel::handle(app, req)).await
}
