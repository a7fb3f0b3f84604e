//! The `webhook` Lambda: webhook, form and resume URLs (API Gateway HTTP
//! API, no API key) → [`api::handlers::webhook::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Webhook).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::webhook::handle(app, req)).await
}
