//! The `gateway` Lambda: WebSocket API routes → [`api::handlers::gateway::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Gateway).await?;
    let app = &app;
    api::lambda::serve_websocket(move |event| api::handlers::gateway::handle(app, event)).await
}
