//! The `step` Lambda: SQS batches → [`api::handlers::step::handle`].

use api::{App, FunctionId};

#[tokio::main]
async fn main() -> Result<(), api::lambda::Error> {
    // The whole agent: model, tools, domain layer (the other agent
    // functions run on run control only, and link none of it).
    let app = App::init(FunctionId::Step).await?.with_agent(api::app::whole_agent);
    let app = &app;
    api::lambda::serve_sqs(move |batch| api::handlers::step::handle(app, batch)).await
}
