//! Google's services on the declarative runtime: what their descriptions
//! (`catalog/nodes/googleSheets.json`, `gmail.json`, `googleDrive.json`)
//! cannot say as routing, as code over [`Call`] (parameters, the selected
//! credential — OAuth2 connected or a service account — and requests made
//! as routing makes them).

pub mod gmail;
pub mod drive;
pub mod mime;
pub mod sheets;

use serde_json::{Map, Value};

use crate::data::Item;
use crate::declarative::{Call, Run, ServiceRequest};
use crate::error::{EngineError, Result};
use crate::nodes::http::{self, Response};
use crate::nodes::js_string;

/// The code of `name` (`googleSheets.append`, …).
pub(crate) fn code(name: &str) -> Option<Run> {
    let (service, op) = name.split_once('.')?;
    match service {
        "googleSheets" => sheets::code(op),
        "gmail" => gmail::code(op),
        "googleDrive" => drive::code(op),
        _ => None,
    }
}

/// Google's error body (`{"error": {"code", "message", "status"}}`) as the
/// node's error: n8n's API error with Google's message as its description
/// (a 400's message is Google's own: it says which parameter is wrong).
pub(crate) fn api_error(resp: &Response) -> EngineError {
    let base = http::api_error(resp);
    let body: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
    let message = body.pointer("/error/message").and_then(Value::as_str).or_else(|| body.get("error_description").and_then(Value::as_str));
    match (base, message) {
        (EngineError::Node { http_code, .. }, Some(m)) if resp.status == 400 => EngineError::Node { message: m.to_owned(), description: None, http_code },
        (EngineError::Node { message, http_code, .. }, Some(m)) => EngineError::Node { message, description: Some(m.to_owned()), http_code },
        (e, _) => e,
    }
}

/// A parameter as a string (`""` when unset).
pub(crate) fn text(p: &Map<String, Value>, name: &str) -> String {
    p.get(name).filter(|v| !v.is_null()).map(js_string).unwrap_or_default()
}

/// A dotted path into the parameters (`options.cellFormat`).
pub(crate) fn at<'p>(p: &'p Map<String, Value>, path: &str) -> Option<&'p Value> {
    let mut parts = path.split('.');
    let mut cur = p.get(parts.next()?)?;
    for part in parts {
        cur = cur.get(part)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// A resource locator's mode and (extracted) value; a plain value is an id.
pub(crate) fn locator(p: &Map<String, Value>, name: &str) -> (String, String) {
    match p.get(name) {
        Some(v) if v.get("__rl").is_some() => (v.get("mode").map(js_string).unwrap_or_default(), v.get("value").filter(|x| !x.is_null()).map(js_string).unwrap_or_default()),
        Some(v) if !v.is_null() => ("id".into(), js_string(v)),
        _ => (String::new(), String::new()),
    }
}

/// Runs `f` per input item: its items paired to the input item; under
/// "continue on fail" a failed item becomes `{error}` and the rest run on.
pub(crate) fn per_item(call: &mut Call<'_, '_>, mut f: impl FnMut(&mut Call<'_, '_>, usize) -> Result<Vec<Item>>) -> Result<Vec<Item>> {
    let mut out = vec![];
    for i in 0..call.items().len() {
        match f(call, i) {
            Ok(items) => out.extend(items.into_iter().map(|it| Item { paired_item: Some(crate::data::paired_ref(i, 0)), ..it })),
            Err(EngineError::Canceled) => return Err(EngineError::Canceled),
            Err(e) if call.continue_on_fail() => out.push(crate::data::item_from(serde_json::json!({"error": http::error_json(&e, None)}), i)),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// A list's entries (`entries` of each answer): every page with `all`
/// (pages of 100, Google's `pageToken`/`nextPageToken`), else one page of
/// `limit`; `size` names the page size parameter (`maxResults`, `pageSize`).
pub(crate) fn list(call: &mut Call<'_, '_>, path: &str, qs: &Map<String, Value>, size: &str, entries: &str, all: bool, limit: Value) -> Result<Vec<Value>> {
    let mut out = vec![];
    let mut page: Option<String> = None;
    loop {
        let mut r = ServiceRequest::new(reqwest::Method::GET, path);
        r.qs = qs.clone();
        r.qs.insert(size.into(), if all { serde_json::json!(100) } else { limit.clone() });
        if let Some(t) = &page {
            r.qs.insert("pageToken".into(), serde_json::json!(t));
        }
        let answer = call.json(r)?;
        out.extend(answer.get(entries).and_then(Value::as_array).cloned().unwrap_or_default());
        page = answer.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty() && all).map(str::to_owned);
        if page.is_none() {
            return Ok(out);
        }
    }
}

/// A whole-number parameter (a number, or text of one), at least 1.
pub(crate) fn count(p: &Map<String, Value>, name: &str, default: u64) -> usize {
    p.get(name).and_then(|v| v.as_u64().or_else(|| js_string(v).trim().parse().ok())).unwrap_or(default).max(1) as usize
}

/// An item of `json`.
pub(crate) fn item(json: Value) -> Item {
    Item { json: http::not_null(json).into(), binary: None, paired_item: None }
}

/// JavaScript's `encodeURIComponent`.
pub(crate) fn encode_component(s: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'!').remove(b'~').remove(b'*').remove(b'\'').remove(b'(').remove(b')');
    percent_encoding::utf8_percent_encode(s, KEEP).to_string()
}
