//! The `sweep` Lambda: a scheduled event → [`api::handlers::sweep::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Sweep).await?;
    let app = &app;
    api::lambda::serve_scheduled(move || api::handlers::sweep::handle(app)).await
}
