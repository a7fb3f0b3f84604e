//! `tracing` output: JSON lines in Lambda (CloudWatch parses them), text locally.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// `RUST_LOG` as a list of `target=level` directives and a default level
/// (`info`, `store=debug,info`); unset or unreadable: `info`. A `Targets`
/// filter rather than `EnvFilter`, which would link a regex engine into
/// every function for span-field matching nobody uses here.
fn filter() -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO))
}

pub fn init(json: bool) {
    let registry = tracing_subscriber::registry().with(filter());
    let fmt = tracing_subscriber::fmt::layer().with_target(false);
    // `try_init`: a second call (tests, the local cloud) keeps the first subscriber.
    let _ = if json {
        registry.with(fmt.json().flatten_event(true).with_current_span(true).without_time()).try_init()
    } else {
        registry.with(fmt).try_init()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_log_directives_parse_as_targets() {
        let t: Targets = "store=debug,warn".parse().expect("directives");
        assert!(t.would_enable("store::data", &tracing::Level::DEBUG));
        assert!(!t.would_enable("api", &tracing::Level::INFO));
        assert!(t.would_enable("api", &tracing::Level::WARN));
    }
}
