//! `research(action="fetch-url")`: one guarded GET, the body routed by its
//! type (HTML → main content as Markdown, PDF → text, text and Markdown as
//! they are), cut to `maxContentLength` characters, flagged where it tries to
//! instruct the model, and cached for 15 minutes.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::extract::{self, Kind};
use crate::{Error, Research};

pub const DEFAULT_MAX_CONTENT: usize = 30_000;
pub const MAX_CONTENT: usize = 100_000;
const TIMEOUT: Duration = Duration::from_secs(20);
/// Pages beyond this are read only this far (HTML, text); a PDF must fit.
const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FetchQuery {
    pub url: String,
    #[serde(default)]
    pub max_content_length: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub url: String,
    pub final_url: String,
    pub title: String,
    pub content: String,
    pub truncated: bool,
    /// Characters of the whole extracted content (before truncation).
    pub content_length: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub safety_flags: Vec<String>,
    /// `html`, `pdf` or `text`.
    pub content_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_count: Option<usize>,
    /// Answered from the 15-minute cache (no request made).
    pub cached: bool,
}

impl Research {
    pub async fn fetch_url(&self, q: FetchQuery, abort: &CancellationToken) -> Result<Page, Error> {
        let max = q.max_content_length.unwrap_or(DEFAULT_MAX_CONTENT);
        if !(1..=MAX_CONTENT).contains(&max) {
            return Err(Error::Invalid(format!("maxContentLength must be between 1 and {MAX_CONTENT}, got {max}")));
        }
        let url = url::Url::parse(q.url.trim()).map_err(|e| Error::Invalid(format!("url is not an absolute URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::Invalid(format!("only http and https URLs can be fetched, not {}:", url.scheme())));
        }
        let key = format!("{max} {url}");
        if let Some(mut page) = self.page_cache.get(&key) {
            page.cached = true;
            return Ok(page);
        }
        let mut req = outbound::Request::get(url.clone())
            .header("accept", "text/html,application/xhtml+xml,application/pdf,text/plain,text/markdown;q=0.9,*/*;q=0.5");
        req.timeout = TIMEOUT;
        req.max_bytes = MAX_BODY_BYTES;
        let resp = self.client.get(req, abort).await.map_err(|e| Error::from_fetch(e, "the page"))?;
        if !resp.is_success() {
            return Err(Error::Provider(format!("{} answered HTTP {}", outbound::guard::origin(&resp.final_url), resp.status)));
        }
        let ct = resp.content_type.as_deref();
        let kind = extract::kind(ct, &resp.body).ok_or_else(|| Error::Unreadable(format!("content type {} is not a page, a PDF or text", ct.unwrap_or("(none)"))))?;
        let final_url = resp.final_url.to_string();
        let (title, content, page_count) = match kind {
            Kind::Html => {
                let e = extract::html(&extract::decode(ct, &resp.body), &final_url)?;
                (e.title, e.content, None)
            }
            Kind::Pdf => {
                if resp.truncated {
                    return Err(Error::Unreadable(format!("the PDF is larger than {} MB", MAX_BODY_BYTES / 1024 / 1024)));
                }
                let body = resp.body.clone();
                let (text, pages, title) = tokio::task::spawn_blocking(move || extract::pdf(&body).map(|(t, n)| (t, n, extract::pdf_title(&body))))
                    .await
                    .map_err(|e| Error::Unreadable(format!("PDF extraction failed: {e}")))??;
                let title = title.unwrap_or_else(|| resp.final_url.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default().to_owned());
                (title, text, Some(pages))
            }
            Kind::Text => {
                let text = extract::decode(ct, &resp.body);
                let title = text.lines().find_map(|l| l.strip_prefix("# ")).map(|t| t.trim().to_owned()).unwrap_or_default();
                (title, text, None)
            }
        };
        let content_length = content.chars().count();
        let truncated = content_length > max || resp.truncated;
        let content: String = if content_length > max { content.chars().take(max).collect() } else { content };
        let safety_flags = extract::safety_flags(&format!("{title}\n{content}"));
        let page = Page {
            url: url.to_string(),
            final_url,
            title,
            content,
            truncated,
            content_length,
            safety_flags,
            content_type: match kind {
                Kind::Html => "html",
                Kind::Pdf => "pdf",
                Kind::Text => "text",
            },
            page_count,
            cached: false,
        };
        self.page_cache.put(key, page.clone());
        Ok(page)
    }
}
