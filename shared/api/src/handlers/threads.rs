//! The caller's threads and session restore, folded from the event log:
//!
//! - `GET /instance-ai/threads[?limit=N&before=<cursor>]` → the caller's
//!   threads (title, created, last activity, whether a run is active), most
//!   recently active first; `limit` default 50, at most 200; `nextBefore`
//!   pages on. Only the owner's own list is ever read.
//! - `GET /instance-ai/threads/{threadId}/messages[?limit=N&before=<runId>]`
//!   → rich messages (the user's text from `run-start.payload.message`, the
//!   agent's text, reasoning, tool calls with results, the agent tree of each
//!   run) and `nextEventId` (connect SSE with `lastEventId = nextEventId - 1`).
//!   Pages are runs, newest last: `limit` runs (default 50, at most 200)
//!   before `before`; `nextBefore` names the oldest run returned when older
//!   ones exist.
//! - `GET /instance-ai/threads/{threadId}/status` → `{hasActiveRun,
//!   isSuspended, backgroundTasks}`.
//!
//! A stranger's thread is 404, the same as a missing one. The function also
//! serves the saved preferences (`handlers::preferences`).

use crate::http_util::{json, path_param, query_param};
use crate::{ApiError, App};
use lambda_http::{Body, Request, Response};
use protocol::ids::ThreadId;
use protocol::session::{fold_runs, fold_status, MessagesPage};
use store::deployment::TableId;
use store::{EventLog, Threads};

const DEFAULT_RUNS: usize = 50;
const MAX_RUNS: usize = 200;
const DEFAULT_THREADS: u32 = 50;
const MAX_THREADS: u32 = 200;

pub async fn handle(app: &App, req: Request) -> Response<Body> {
    match route(app, &req).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

enum View {
    Messages,
    Status,
}

/// `limit` of a list: `default` when absent, else 1..=`max`.
fn limit_param(req: &Request, default: usize, max: usize) -> Result<usize, ApiError> {
    match query_param(req, "limit") {
        None => Ok(default),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| ApiError::BadRequest(format!("limit must be 1..={max}"))),
    }
}

async fn list(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let limit = limit_param(req, DEFAULT_THREADS as usize, MAX_THREADS as usize)? as u32;
    let before = query_param(req, "before");
    if before.as_deref().is_some_and(|b| b.len() > 200) {
        return Err(ApiError::BadRequest("`before` is not a cursor this endpoint returned".into()));
    }
    let internal = |e: store::config::ConfigError| ApiError::Internal(e.to_string());
    let threads = Threads::new(app.clients.dynamo.clone(), app.config.table(TableId::Agent).map_err(internal)?);
    Ok(json(200, &threads.list(&user, limit, before.as_deref()).await?))
}

async fn route(app: &App, req: &Request) -> Result<Response<Body>, ApiError> {
    let path = req.uri().path().trim_end_matches('/').to_owned();
    // The saved preferences' card, beside the threads it shapes.
    if path == super::preferences::PATH || path.starts_with(&format!("{}/", super::preferences::PATH)) {
        return super::preferences::route(app, req).await;
    }
    if path == "/instance-ai/threads" {
        if req.method() != http::Method::GET {
            return Err(ApiError::MethodNotAllowed("use GET".into()));
        }
        return list(app, req).await;
    }
    let view = if path.ends_with("/messages") {
        View::Messages
    } else if path.ends_with("/status") {
        View::Status
    } else {
        return Err(ApiError::NotFound("no such route".into()));
    };
    if req.method() != http::Method::GET {
        return Err(ApiError::MethodNotAllowed("use GET".into()));
    }
    let user = crate::auth::authenticate(app, req.headers()).await?;
    let raw = path_param(req, "threadId")
        .or_else(|| {
            // Callers that do not fill path parameters: /instance-ai/threads/{id}/<view>.
            let rest = path.strip_prefix("/instance-ai/threads/")?;
            rest.split('/').next().map(str::to_owned)
        })
        .ok_or_else(|| ApiError::NotFound("thread not found".into()))?;
    if !protocol::ids::is_valid_path_id(&raw) {
        return Err(ApiError::NotFound("thread not found".into()));
    }
    let thread = ThreadId(raw);
    let internal = |e: store::config::ConfigError| ApiError::Internal(e.to_string());
    Threads::new(app.clients.dynamo.clone(), app.config.table(TableId::Agent).map_err(internal)?)
        .check_owner(&thread, &user)
        .await?;
    let log = EventLog::from_config(app.clients.dynamo.clone(), &app.config).map_err(|e| ApiError::Internal(e.to_string()))?;
    // The whole log is folded: runs span arbitrary id ranges (a background
    // task can finish long after its run), so a page of runs needs them all.
    let events = log.read_all_after(&thread, 0).await?;
    let next_event_id = events.last().map_or(0, |e| e.seq) + 1;
    match view {
        View::Status => Ok(json(200, &fold_status(&events))),
        View::Messages => {
            let limit = limit_param(req, DEFAULT_RUNS, MAX_RUNS)?;
            let mut runs = fold_runs(&events);
            if let Some(before) = query_param(req, "before") {
                let at = runs
                    .iter()
                    .position(|r| r.run_id == before)
                    .ok_or_else(|| ApiError::BadRequest(format!("unknown run {before:?} in `before`")))?;
                runs.truncate(at);
            }
            let skip = runs.len().saturating_sub(limit);
            let next_before = (skip > 0).then(|| runs[skip].run_id.clone());
            let messages = runs
                .into_iter()
                .skip(skip)
                .flat_map(|r| r.user.into_iter().chain(std::iter::once(r.assistant)))
                .collect();
            Ok(json(200, &MessagesPage { thread_id: thread.0, messages, next_event_id, next_before }))
        }
    }
}
