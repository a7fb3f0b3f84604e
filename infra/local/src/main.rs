//! `local-cloud` — run the stack on this machine, or administer it.
//!
//! ```text
//! local-cloud [serve]            serve everything (HTTP, SSE, WebSocket, SQS consumers, schedules)
//! local-cloud create-key <user>  create an API key for <user> and print it once
//! local-cloud template           print infra/template.yaml, rendered from the deployment definition
//! ```

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match local_cloud::cli::run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("local-cloud: {message}");
            ExitCode::FAILURE
        }
    }
}
