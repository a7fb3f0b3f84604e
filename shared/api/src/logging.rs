//! `tracing` output: JSON lines in Lambda (CloudWatch parses them), text locally.

use tracing_subscriber::EnvFilter;

pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    // `try_init`: a second call (tests, the local cloud) keeps the first subscriber.
    let _ = if json {
        builder.json().flatten_event(true).with_current_span(true).without_time().try_init()
    } else {
        builder.try_init()
    };
}
