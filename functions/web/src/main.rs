//! The `web` Lambda: API Gateway HTTP API → [`api::handlers::web::handle`] (the page and its assets).

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Web).await?;
    let app = &app;
    api::lambda::serve_http(move |req| api::handlers::web::handle(app, req)).await
}
