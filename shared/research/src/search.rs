//! `research(action="web-search")`: Brave's Web Search API when a key is
//! configured, else a SearXNG instance, else no provider (an empty result
//! list, as the spec says). `includeDomains` becomes `site:` operators and is
//! enforced on the answers too (a provider may ignore the operators).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::{Error, Research};

pub const DEFAULT_BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
pub const MAX_RESULTS: usize = 20;
pub const DEFAULT_RESULTS: usize = 5;
const TIMEOUT: Duration = Duration::from_secs(10);
/// A search answer is a few KB; anything this large is not one.
const MAX_ANSWER_BYTES: usize = 2 * 1024 * 1024;

/// Which provider answers searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provider {
    Brave { url: url::Url, api_key: String },
    SearXng { base: url::Url },
    None,
}

impl Provider {
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Brave { .. } => "brave",
            Provider::SearXng { .. } => "searxng",
            Provider::None => "none",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchQuery {
    pub query: String,
    #[serde(default)]
    pub max_results: Option<usize>,
    #[serde(default)]
    pub include_domains: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    pub snippet: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_date: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResults {
    pub query: String,
    pub results: Vec<SearchHit>,
    /// `brave`, `searxng` or `none`.
    pub provider: &'static str,
    /// Answered from the 15-minute cache (no request made).
    pub cached: bool,
}

/// `example.com`, from `https://www.Example.com/x`, `*.example.com` or `example.com`.
fn normalize_domain(d: &str) -> Option<String> {
    let d = d.trim().trim_start_matches("*.");
    let host = match url::Url::parse(d) {
        Ok(u) if u.host_str().is_some() => u.host_str().unwrap_or_default().to_owned(),
        _ => d.split('/').next().unwrap_or_default().to_owned(),
    };
    let host = host.to_ascii_lowercase();
    let host = host.trim_start_matches("www.").trim_end_matches('.');
    (!host.is_empty() && host.contains('.') && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))).then(|| host.to_owned())
}

fn in_domains(url: &str, domains: &[String]) -> bool {
    let Some(host) = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase)) else { return false };
    domains.iter().any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

impl Research {
    pub async fn web_search(&self, q: SearchQuery, abort: &CancellationToken) -> Result<SearchResults, Error> {
        let query = q.query.trim().to_owned();
        if query.is_empty() {
            return Err(Error::Invalid("query must not be empty".into()));
        }
        if query.chars().count() > 400 {
            return Err(Error::Invalid("query is longer than 400 characters".into()));
        }
        let max = q.max_results.unwrap_or(DEFAULT_RESULTS);
        if !(1..=MAX_RESULTS).contains(&max) {
            return Err(Error::Invalid(format!("maxResults must be between 1 and {MAX_RESULTS}, got {max}")));
        }
        let mut domains = Vec::new();
        for d in q.include_domains.iter().flatten() {
            let n = normalize_domain(d).ok_or_else(|| Error::Invalid(format!("includeDomains: '{d}' is not a domain name")))?;
            if !domains.contains(&n) {
                domains.push(n);
            }
        }
        let provider = &self.settings.search;
        if *provider == Provider::None {
            return Ok(SearchResults { query, results: Vec::new(), provider: provider.name(), cached: false });
        }
        let key = serde_json::json!([provider.name(), query, max, domains]).to_string();
        if let Some(mut hit) = self.search_cache.get(&key) {
            hit.cached = true;
            return Ok(hit);
        }
        let sent = if domains.is_empty() {
            query.clone()
        } else {
            let sites: Vec<String> = domains.iter().map(|d| format!("site:{d}")).collect();
            format!("{query} ({})", sites.join(" OR "))
        };
        let mut results = match provider {
            Provider::Brave { url, api_key } => self.brave(url, api_key, &sent, max, abort).await?,
            Provider::SearXng { base } => self.searxng(base, &sent, abort).await?,
            Provider::None => Vec::new(),
        };
        if !domains.is_empty() {
            results.retain(|r| in_domains(&r.url, &domains));
        }
        results.truncate(max);
        let out = SearchResults { query, results, provider: provider.name(), cached: false };
        self.search_cache.put(key, out.clone());
        Ok(out)
    }

    async fn answer(&self, req: outbound::Request, provider: &str, abort: &CancellationToken) -> Result<Value, Error> {
        let resp = self.client.get(req, abort).await.map_err(|e| Error::from_fetch(e, provider))?;
        if !resp.is_success() {
            return Err(Error::Provider(format!("{provider} answered HTTP {}", resp.status)));
        }
        if resp.truncated {
            return Err(Error::Provider(format!("{provider}'s answer is larger than {MAX_ANSWER_BYTES} bytes")));
        }
        serde_json::from_slice(&resp.body).map_err(|e| Error::Provider(format!("{provider}'s answer is not JSON: {e}")))
    }

    async fn brave(&self, endpoint: &url::Url, api_key: &str, query: &str, max: usize, abort: &CancellationToken) -> Result<Vec<SearchHit>, Error> {
        let mut url = endpoint.clone();
        url.query_pairs_mut().append_pair("q", query).append_pair("count", &max.to_string());
        let mut req = outbound::Request::get(url).header("accept", "application/json").header("x-subscription-token", api_key);
        req.timeout = TIMEOUT;
        req.max_bytes = MAX_ANSWER_BYTES;
        let v = self.answer(req, "Brave Search", abort).await?;
        Ok(hits(v.pointer("/web/results"), "description", "page_age"))
    }

    async fn searxng(&self, base: &url::Url, query: &str, abort: &CancellationToken) -> Result<Vec<SearchHit>, Error> {
        let mut url = base.join("search").map_err(|e| Error::Provider(format!("SearXNG URL: {e}")))?;
        url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
        let mut req = outbound::Request::get(url).header("accept", "application/json");
        req.timeout = TIMEOUT;
        req.max_bytes = MAX_ANSWER_BYTES;
        let v = self.answer(req, "SearXNG", abort).await?;
        Ok(hits(v.get("results"), "content", "publishedDate"))
    }
}

/// A provider's result list: `title` and `url` in both; the snippet and the
/// date under each provider's own names.
fn hits(list: Option<&Value>, snippet: &str, date: &str) -> Vec<SearchHit> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|h| {
            Some(SearchHit {
                title: text(h.get("title")),
                url: h.get("url")?.as_str()?.to_owned(),
                snippet: strip_tags(&text(h.get(snippet))),
                published_date: h.get(date).and_then(Value::as_str).map(str::to_owned),
            })
        })
        .collect()
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().trim().to_owned()
}

/// Brave marks matches with `<strong>`; snippets are plain text.
fn strip_tags(s: &str) -> String {
    static TAG: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| regex::Regex::new(r"</?[a-zA-Z][^>]{0,40}>").expect("valid pattern"));
    TAG.replace_all(s, "").replace("&amp;", "&").replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_normalized_and_matched_with_subdomains() {
        assert_eq!(normalize_domain("https://www.Example.com/docs").as_deref(), Some("example.com"));
        assert_eq!(normalize_domain("*.n8n.io").as_deref(), Some("n8n.io"));
        assert_eq!(normalize_domain("not a domain"), None);
        let d = vec!["example.com".to_owned()];
        assert!(in_domains("https://docs.example.com/a", &d));
        assert!(!in_domains("https://badexample.com/a", &d));
    }
}
