//! The `chat` Lambda: API Gateway HTTP API → [`api::handlers::chat::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Chat).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::chat::handle(app, req)).await
}
