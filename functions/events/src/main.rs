//! The `events` Lambda: SSE over a streaming Function URL → [`api::handlers::events::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Events).await?;
    let app = &app;
    api::lambda::serve_streaming(move |req| api::handlers::events::handle(app, req)).await
}
