//! The `step` Lambda: SQS batches → [`api::handlers::step::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    let app = App::init(FunctionId::Step).await?;
    let app = &app;
    api::lambda::serve_sqs(move |batch| api::handlers::step::handle(app, batch)).await
}
