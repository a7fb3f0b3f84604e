//! One newtype per id, so a thread id is never passed where a run id belongs.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(s)
            }
        }
    };
}

id_type!(
    /// The owner of keys, threads, workflows.
    UserId
);
id_type!(
    /// A conversation; the unit of event ordering.
    ThreadId
);
id_type!(
    /// One user message → response cycle (`run_…`).
    RunId
);
id_type!(
    /// An agent inside a run (orchestrator or background agent).
    AgentId
);
id_type!(
    /// A WebSocket connection id assigned by API Gateway.
    ConnectionId
);

/// Validates an id that arrives in a path: non-empty, at most 128 characters of
/// `[A-Za-z0-9_.:-]`, so ids are safe inside DynamoDB keys and URLs.
pub fn is_valid_path_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}
