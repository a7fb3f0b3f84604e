//! What the agent reads from the outside world, behind the guarded client
//! (`outbound`): web search, a page or PDF as readable text, and the
//! models.dev catalog. One [`Research`] per process: its caches are shared by
//! every run the process serves. The agent's tools are front doors to it.

mod cache;
pub mod extract;
pub mod fetch;
pub mod models;
pub mod search;

use std::sync::Arc;
use std::time::Duration;

pub use fetch::{FetchQuery, Page};
pub use models::{Catalog, ModelQuery, ModelSearch};
pub use search::{Provider, SearchHit, SearchQuery, SearchResults};

/// What the model reads when a call fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Invalid(String),
    /// The URL is not allowed by the SSRF guard.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unreachable(String),
    #[error("{0}")]
    Provider(String),
    #[error("{0}")]
    Unreadable(String),
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    fn from_fetch(e: outbound::FetchError, what: &str) -> Error {
        use outbound::FetchError as F;
        match e {
            F::Refused(r) => Error::Refused(format!("{r} (private, loopback and link-local addresses and hosts outside the allow-list cannot be fetched)")),
            F::Cancelled => Error::Cancelled,
            F::InvalidUrl(m) => Error::Invalid(m),
            other => Error::Unreachable(format!("{what}: {other}")),
        }
    }
}

/// The knobs (from the process's configuration).
#[derive(Debug, Clone)]
pub struct Settings {
    pub search: Provider,
}

pub struct Research {
    client: outbound::Client,
    settings: Settings,
    search_cache: cache::TtlCache<SearchResults>,
    page_cache: cache::TtlCache<Page>,
}

/// 15 minutes, 100 entries (the spec's web-search cache; pages alike).
const CACHE_TTL: Duration = Duration::from_secs(15 * 60);
const CACHE_ENTRIES: usize = 100;

impl Research {
    pub fn new(client: outbound::Client, settings: Settings) -> Arc<Research> {
        Arc::new(Research {
            client,
            settings,
            search_cache: cache::TtlCache::new(CACHE_ENTRIES, CACHE_TTL),
            page_cache: cache::TtlCache::new(CACHE_ENTRIES, CACHE_TTL),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}
