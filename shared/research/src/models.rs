//! `searchModels`: the models.dev catalog (`{provider: {models: {id: {…}}}}`)
//! fetched through the guarded client, shared by every caller of the process
//! for an hour. A refresh has five seconds; when it fails, a snapshot younger
//! than a day is served as `freshness: "stale"`, an older one never. The
//! refresh runs as its own task: a caller that is cancelled stops waiting,
//! the refresh goes on for the others.

use futures::future::{BoxFuture, FutureExt, Shared};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

use crate::Error;

pub const DEFAULT_CATALOG_URL: &str = "https://models.dev/api.json";
pub const MAX_LIMIT: usize = 10;
const FRESH_FOR: Duration = Duration::from_secs(3600);
const STALE_UNTIL: Duration = Duration::from_secs(24 * 3600);
const REFRESH_DEADLINE: Duration = Duration::from_secs(5);
/// The whole catalog is a few MB.
const MAX_CATALOG_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelQuery {
    pub provider: String,
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pricing {
    /// USD per million tokens, as the catalog gives them.
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    pub name: Option<String>,
    /// A valid ISO date (`YYYY-MM-DD`), else `null`.
    pub release_date: Option<String>,
    pub last_updated: Option<String>,
    pub knowledge: Option<String>,
    pub reasoning: Option<bool>,
    pub tool_call: Option<bool>,
    pub attachment: Option<bool>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub input_modalities: Vec<String>,
    pub output_modalities: Vec<String>,
    pub open_weights: Option<bool>,
    /// The catalog's status (`alpha`, `beta`: previews stay eligible).
    pub status: Option<String>,
    pub pricing: Pricing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    UnknownProvider,
    NoMatchingModels,
    CatalogUnavailable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    Fresh,
    Stale,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSearch {
    pub status: Status,
    pub provider: String,
    pub models: Vec<Model>,
    pub has_more: bool,
    pub source: String,
    /// When the snapshot answered from was fetched (RFC 3339), if any.
    pub fetched_at: Option<String>,
    pub freshness: Option<Freshness>,
    pub credential_access: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// HTTP requests this call made (0 when the cache answered).
    #[serde(skip)]
    pub requests: u32,
}

/// One fetched catalog.
#[derive(Debug)]
struct Snapshot {
    providers: HashMap<String, Vec<Model>>,
    at: Instant,
    fetched_at: String,
}

type Refresh = Shared<BoxFuture<'static, Result<Arc<Snapshot>, String>>>;

pub struct Catalog {
    client: outbound::Client,
    url: url::Url,
    state: Mutex<(Option<Arc<Snapshot>>, Option<Refresh>)>,
}

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t).format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// `YYYY-MM-DD` (or `YYYY-MM`), checked; anything else is no date.
fn iso_date(v: Option<&Value>) -> Option<String> {
    let s = v?.as_str()?.trim();
    let parts: Vec<&str> = s.split('-').collect();
    let ok = match parts.as_slice() {
        [y, m] | [y, m, _] if y.len() == 4 && m.len() == 2 => {
            let (Ok(y), Ok(m)) = (y.parse::<u32>(), m.parse::<u32>()) else { return None };
            let d_ok = parts.get(2).is_none_or(|d| d.len() == 2 && d.parse::<u32>().is_ok_and(|d| (1..=31).contains(&d)));
            (1900..=2200).contains(&y) && (1..=12).contains(&m) && d_ok
        }
        _ => false,
    };
    ok.then(|| s.to_owned())
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(|x| x.as_str().map(str::to_ascii_lowercase)).collect()
}

fn parse_model(id: &str, m: &Value) -> Model {
    let f = |p: &str| m.pointer(p).and_then(Value::as_f64);
    let b = |k: &str| m.get(k).and_then(Value::as_bool);
    Model {
        id: m.get("id").and_then(Value::as_str).unwrap_or(id).to_owned(),
        name: m.get("name").and_then(Value::as_str).map(str::to_owned),
        release_date: iso_date(m.get("release_date")),
        last_updated: iso_date(m.get("last_updated")),
        knowledge: m.get("knowledge").and_then(Value::as_str).map(str::to_owned),
        reasoning: b("reasoning"),
        tool_call: b("tool_call"),
        attachment: b("attachment"),
        context_window: m.pointer("/limit/context").and_then(Value::as_u64),
        max_output_tokens: m.pointer("/limit/output").and_then(Value::as_u64),
        input_modalities: strings(m.pointer("/modalities/input")),
        output_modalities: strings(m.pointer("/modalities/output")),
        open_weights: b("open_weights"),
        status: m.get("status").and_then(Value::as_str).map(str::to_owned),
        pricing: Pricing { input: f("/cost/input"), output: f("/cost/output"), cache_read: f("/cost/cache_read"), cache_write: f("/cost/cache_write") },
    }
}

fn parse_catalog(body: &[u8]) -> Result<HashMap<String, Vec<Model>>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the catalog is not JSON: {e}"))?;
    let providers = v.as_object().ok_or("the catalog is not an object of providers")?;
    let mut out = HashMap::new();
    for (pid, p) in providers {
        let Some(models) = p.get("models").and_then(Value::as_object) else { continue };
        out.insert(pid.to_ascii_lowercase(), models.iter().map(|(id, m)| parse_model(id, m)).collect());
    }
    if out.is_empty() {
        return Err("the catalog lists no providers".into());
    }
    Ok(out)
}

/// `claude-x-20250101` when the catalog also has `claude-x-latest`.
fn dated_snapshot_of_alias(id: &str, ids: &[&str]) -> bool {
    let Some((base, tail)) = id.rsplit_once('-') else { return false };
    let dated = (tail.len() == 8 && tail.chars().all(|c| c.is_ascii_digit()))
        || iso_date(Some(&Value::String(tail.to_owned()))).is_some()
        || {
            // `-2025-01-01`
            let mut p = id.rsplitn(4, '-');
            let (d, m, y) = (p.next(), p.next(), p.next());
            matches!((y, m, d), (Some(y), Some(m), Some(d)) if y.len() == 4 && m.len() == 2 && d.len() == 2 && [y, m, d].iter().all(|s| s.chars().all(|c| c.is_ascii_digit())))
        };
    if !dated {
        return false;
    }
    let base = if tail.len() == 2 { id.rsplitn(4, '-').nth(3).unwrap_or(base) } else { base };
    ids.contains(&format!("{base}-latest").as_str())
}

impl Catalog {
    pub fn new(client: outbound::Client, url: url::Url) -> Catalog {
        Catalog { client, url, state: Mutex::new((None, None)) }
    }

    fn refresh(&self) -> Refresh {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = &state.1 {
            return r.clone();
        }
        let (client, url) = (self.client.clone(), self.url.clone());
        let task = tokio::spawn(async move {
            let mut req = outbound::Request::get(url).header("accept", "application/json");
            req.timeout = REFRESH_DEADLINE;
            req.max_bytes = MAX_CATALOG_BYTES;
            // Not any caller's abort: the refresh is shared.
            let resp = client.get(req, &CancellationToken::new()).await.map_err(|e| e.to_string())?;
            if !resp.is_success() {
                return Err(format!("the catalog answered HTTP {}", resp.status));
            }
            if resp.truncated {
                return Err(format!("the catalog is larger than {MAX_CATALOG_BYTES} bytes"));
            }
            let providers = tokio::task::spawn_blocking(move || parse_catalog(&resp.body)).await.map_err(|e| e.to_string())??;
            Ok(Arc::new(Snapshot { providers, at: Instant::now(), fetched_at: rfc3339(SystemTime::now()) }))
        });
        let r: Refresh = async move { task.await.map_err(|e| format!("the catalog refresh failed: {e}"))? }.boxed().shared();
        state.1 = Some(r.clone());
        r
    }

    /// The snapshot to answer from, whether it is stale, and requests made.
    async fn snapshot(&self, abort: &CancellationToken) -> Result<(Option<(Arc<Snapshot>, Freshness)>, u32, Option<String>), Error> {
        let current = self.state.lock().unwrap_or_else(|p| p.into_inner()).0.clone();
        if let Some(s) = current.as_ref().filter(|s| s.at.elapsed() < FRESH_FOR) {
            return Ok((Some((s.clone(), Freshness::Fresh)), 0, None));
        }
        let refresh = self.refresh();
        let outcome = tokio::select! {
            r = refresh => r,
            _ = abort.cancelled() => return Err(Error::Cancelled),
        };
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1 = None;
        match outcome {
            Ok(fresh) => {
                state.0 = Some(fresh.clone());
                Ok((Some((fresh, Freshness::Fresh)), 1, None))
            }
            Err(why) => {
                tracing::warn!(error = %why, "the model catalog could not be refreshed");
                let stale = state.0.clone().filter(|s| s.at.elapsed() < STALE_UNTIL).map(|s| (s, Freshness::Stale));
                Ok((stale, 1, Some(why)))
            }
        }
    }

    pub async fn search(&self, q: ModelQuery, abort: &CancellationToken) -> Result<ModelSearch, Error> {
        let provider = q.provider.trim().to_ascii_lowercase();
        if provider.is_empty() {
            return Err(Error::Invalid("provider must not be empty".into()));
        }
        let query = q.query.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_lowercase);
        if query.as_ref().is_some_and(|s| s.chars().count() > 100) {
            return Err(Error::Invalid("query is longer than 100 characters".into()));
        }
        let limit = q.limit.unwrap_or(MAX_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(Error::Invalid(format!("limit must be between 1 and {MAX_LIMIT}, got {limit}")));
        }
        let (snapshot, requests, why) = self.snapshot(abort).await?;
        let mut out = ModelSearch {
            status: Status::CatalogUnavailable,
            provider: provider.clone(),
            models: Vec::new(),
            has_more: false,
            source: self.url.to_string(),
            fetched_at: None,
            freshness: None,
            credential_access: "not_checked",
            message: None,
            requests,
        };
        let Some((snap, freshness)) = snapshot else {
            out.message = Some(format!("The model catalog is unavailable ({}); no snapshot younger than 24 hours exists.", why.unwrap_or_default()));
            return Ok(out);
        };
        out.fetched_at = Some(snap.fetched_at.clone());
        out.freshness = Some(freshness);
        let Some(models) = snap.providers.get(&provider) else {
            out.status = Status::UnknownProvider;
            let mut known: Vec<&String> = snap.providers.keys().collect();
            known.sort();
            out.message = Some(format!("{provider:?} is not a catalog provider ID. Some are: {}", known.iter().take(25).map(|k| k.as_str()).collect::<Vec<_>>().join(", ")));
            return Ok(out);
        };
        let ids: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
        let mut eligible: Vec<&Model> = models
            .iter()
            .filter(|m| m.status.as_deref() != Some("deprecated"))
            .filter(|m| m.input_modalities.iter().any(|x| x == "text") && m.output_modalities.iter().any(|x| x == "text"))
            .filter(|m| !dated_snapshot_of_alias(&m.id, &ids))
            .filter(|m| query.as_ref().is_none_or(|q| m.id.to_lowercase().contains(q) || m.name.as_deref().is_some_and(|n| n.to_lowercase().contains(q))))
            .collect();
        // Newest first; missing dates last; then by id.
        eligible.sort_by(|a, b| match (&a.release_date, &b.release_date) {
            (Some(x), Some(y)) => y.cmp(x).then_with(|| a.id.cmp(&b.id)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.id.cmp(&b.id),
        });
        out.has_more = eligible.len() > limit;
        out.models = eligible.into_iter().take(limit).cloned().collect();
        out.status = if out.models.is_empty() { Status::NoMatchingModels } else { Status::Ok };
        Ok(out)
    }

    /// Tests: make the snapshot look `age` old.
    #[doc(hidden)]
    pub fn age_snapshot(&self, age: Duration) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = state.0.take() {
            let at = Instant::now().checked_sub(age).unwrap_or(s.at);
            state.0 = Some(Arc::new(Snapshot { providers: s.providers.clone(), at, fetched_at: s.fetched_at.clone() }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_aliases_and_timestamps() {
        assert_eq!(iso_date(Some(&Value::from("2025-02-24"))).as_deref(), Some("2025-02-24"));
        assert_eq!(iso_date(Some(&Value::from("soon"))), None);
        assert_eq!(iso_date(Some(&Value::from("2025-13-01"))), None);
        let ids = ["claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", "gpt-4o-2024-08-06", "gpt-4o"];
        assert!(dated_snapshot_of_alias("claude-3-5-sonnet-20241022", &ids));
        assert!(!dated_snapshot_of_alias("gpt-4o-2024-08-06", &ids), "no gpt-4o-latest alias");
        assert!(!dated_snapshot_of_alias("claude-3-5-sonnet-latest", &ids));
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_547_200)), "2025-12-01T00:00:00Z");
    }
}
