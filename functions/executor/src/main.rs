//! The `executor` Lambda: SQS batches → [`api::handlers::executor::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Executor).await?;
    let app = &app;
    api::lambda::serve_sqs(move |batch| api::handlers::executor::handle(app, batch)).await
}
