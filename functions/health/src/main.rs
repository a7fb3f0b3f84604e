//! The `health` Lambda: API Gateway HTTP API → [`api::handlers::health::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Health).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::health::handle(app, req)).await
}
