//! Gmail (API v1, https://developers.google.com/gmail/api/reference/rest):
//! what its description cannot say as routing — a message built as MIME
//! and sent as `raw`, a reply threaded to its message, messages listed then
//! fetched one by one, and n8n's simplified output (labels by name,
//! headers as fields).

use serde_json::{json, Map, Value};

use super::mime::{Attachment, Email};
use super::{at, item, list, per_item, text};
use crate::data::Item;
use crate::declarative::{Call, Run, ServiceRequest};
use crate::error::{EngineError, Result};
use crate::nodes::http::Response;
use crate::nodes::js_string;
use reqwest::Method;

const METADATA_HEADERS: [&str; 5] = ["From", "To", "Cc", "Bcc", "Subject"];

pub(crate) fn code(op: &str) -> Option<Run> {
    Some(match op {
        "send" => send,
        "reply" => reply,
        "get" => get,
        "getAll" => get_all,
        _ => return None,
    })
}

/// Gmail's errors as n8n's Gmail node words them (a 404 is "Message not found").
fn api_error(resp: &Response) -> EngineError {
    match super::api_error(resp) {
        EngineError::Node { description, http_code, .. } if resp.status == 404 => EngineError::Node { message: "Message not found".into(), description, http_code },
        e => e,
    }
}

fn start(call: &mut Call<'_, '_>) {
    call.api_error = api_error;
}

/// n8n's `prepareEmailsInput`: each address checked, written `<a@b>` unless
/// it already has a name.
fn emails(input: &str, field: &str) -> Result<String> {
    let mut out = String::new();
    for entry in input.split(',') {
        let e = entry.trim();
        if !e.contains('@') {
            return Err(EngineError::node_with("Invalid email address", format!("The email address '{e}' in the '{field}' field isn't valid")));
        }
        if e.contains('<') && e.contains('>') {
            out.push_str(&format!("{e},"));
        } else {
            out.push_str(&format!("<{e}>, "));
        }
    }
    Ok(out)
}

/// The message body from `emailType` and `message`, with n8n's
/// attribution line when the option asks for it.
fn body(p: &Map<String, Value>) -> (String, String) {
    let message = text(p, "message").trim().to_owned();
    let attribution = at(p, "options.appendAttribution").and_then(Value::as_bool).unwrap_or(false);
    if text(p, "emailType") == "text" {
        let t = if attribution { format!("{message}\n\n---\nThis email was sent automatically with n8n\nhttps://n8n.io") } else { message };
        (t, String::new())
    } else {
        let h = if attribution { format!("{message}<br><br>---<br><em>This email was sent automatically with <a href=\"https://n8n.io\" target=\"_blank\">n8n</a></em>") } else { message };
        (String::new(), h)
    }
}

/// The CC and BCC options' addresses.
fn copies(p: &Map<String, Value>) -> Result<(String, String)> {
    let list = |path: &str, field: &str| at(p, path).map(js_string).filter(|v| !v.is_empty()).map(|v| emails(&v, field)).transpose().map(Option::unwrap_or_default);
    Ok((list("options.ccList", "CC")?, list("options.bccList", "BCC")?))
}

/// The attachments `options.attachmentsUi` names (binary fields of the item, comma-separated).
fn attachments(call: &Call<'_, '_>, p: &Map<String, Value>, i: usize) -> Result<Vec<Attachment>> {
    let items = call.items();
    let mut out = vec![];
    for entry in at(p, "options.attachmentsUi.attachmentsBinary").and_then(Value::as_array).into_iter().flatten() {
        for name in entry.get("property").map(js_string).unwrap_or_default().split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let binary = items[i].binary.as_ref().and_then(|b| b.get(name)).ok_or_else(|| {
                EngineError::node_with("Attachment not found", format!("The input field '{name}' doesn't contain an attachment. Please make sure you specify a field containing binary data"))
            })?;
            out.push(Attachment {
                name: binary.get("fileName").and_then(Value::as_str).unwrap_or("unknown").to_owned(),
                content_type: binary.get("mimeType").and_then(Value::as_str).unwrap_or("application/octet-stream").to_owned(),
                bytes: crate::binary::bytes_of(binary).map_err(EngineError::node)?,
            });
        }
    }
    Ok(out)
}

fn profile_address(call: &mut Call<'_, '_>) -> Result<String> {
    let profile = call.json(ServiceRequest::new(Method::GET, "/gmail/v1/users/me/profile"))?;
    Ok(profile.get("emailAddress").map(js_string).unwrap_or_default())
}

/// Send: the message built as MIME and sent as `raw` (the sender's address
/// read from the profile when a sender name is set).
fn send(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let to = emails(&text(&p, "sendTo"), "To")?;
        let (cc, bcc) = copies(&p)?;
        let files = attachments(call, &p, i)?;
        let sender = at(&p, "options.senderName").map(js_string).unwrap_or_default();
        let from = if sender.is_empty() { String::new() } else { format!("{sender} <{}>", profile_address(call)?) };
        let (text_body, html) = body(&p);
        let email = Email {
            from,
            to,
            cc,
            bcc,
            reply_to: at(&p, "options.replyTo").map(js_string).unwrap_or_default(),
            subject: text(&p, "subject"),
            text: text_body,
            html,
            attachments: files,
            ..Email::default()
        };
        let sent = call.json(ServiceRequest::new(Method::POST, "/gmail/v1/users/me/messages/send").json(json!({"raw": email.raw()?})))?;
        Ok(vec![item(sent)])
    })
}

fn header<'h>(headers: &'h [Value], name: &str) -> Option<&'h str> {
    headers.iter().find(|h| h.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(name))).and_then(|h| h.get("value")).and_then(Value::as_str)
}

/// Reply: to the message's sender (and its other recipients unless Reply
/// to Sender Only), in its thread, with In-Reply-To and References set.
fn reply(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        let id = text(&p, "messageId");
        let (cc, bcc) = copies(&p)?;
        let files = attachments(call, &p, i)?;
        let original = call.json(ServiceRequest::new(Method::GET, format!("/gmail/v1/users/me/messages/{id}")).query("format", "metadata"))?;
        let headers = original.pointer("/payload/headers").and_then(Value::as_array).cloned().unwrap_or_default();
        let me = profile_address(call)?;
        let sender_only = at(&p, "options.replyToSenderOnly").and_then(Value::as_bool).unwrap_or(false);
        let mut to = String::new();
        for h in &headers {
            let name = h.get("name").and_then(Value::as_str).unwrap_or_default().to_ascii_lowercase();
            let value = h.get("value").and_then(Value::as_str).unwrap_or_default();
            if name == "from" {
                to.push_str(&if value.contains('<') && value.contains('>') { format!("{value}, ") } else { format!("<{value}>, ") });
            }
            if name == "to" && !sender_only {
                for e in value.split(',') {
                    // the account's own address is not replied to
                    if !me.is_empty() && e.contains(&me) {
                        continue;
                    }
                    to.push_str(&if e.contains('<') && e.contains('>') { format!("{e}, ") } else { format!("<{}>, ", e.trim()) });
                }
            }
        }
        let sender = at(&p, "options.senderName").map(js_string).unwrap_or_default();
        let (text_body, html) = body(&p);
        let email = Email {
            from: if sender.is_empty() { String::new() } else { format!("{sender} <{me}>") },
            to,
            cc,
            bcc,
            subject: header(&headers, "subject").unwrap_or_default().to_owned(),
            text: text_body,
            html,
            in_reply_to: header(&headers, "message-id").unwrap_or_default().to_owned(),
            attachments: files,
            ..Email::default()
        };
        let mut body = json!({"raw": email.raw()?});
        if let Some(t) = original.get("threadId") {
            body["threadId"] = t.clone();
        }
        Ok(vec![item(call.json(ServiceRequest::new(Method::POST, "/gmail/v1/users/me/messages/send").json(body))?)])
    })
}

/// A message fetched as metadata (the headers n8n simplifies).
fn metadata(call: &mut Call<'_, '_>, id: &str) -> Result<Value> {
    let mut r = ServiceRequest::new(Method::GET, format!("/gmail/v1/users/me/messages/{id}")).query("format", "metadata");
    r.qs.insert("metadataHeaders".into(), json!(METADATA_HEADERS));
    call.json(r)
}

fn unsupported_raw() -> EngineError {
    EngineError::node_with(
        "Gmail messages without Simplify (the parsed raw message) are not supported yet",
        "Turn Simplify on: the message's headers, labels and snippet are returned.",
    )
}

/// n8n's `simplifyOutput`: labels by id and name instead of `labelIds`,
/// the payload's headers as fields.
fn simplify(call: &mut Call<'_, '_>, messages: Vec<Value>) -> Result<Vec<Value>> {
    let labels = call.json(ServiceRequest::new(Method::GET, "/gmail/v1/users/me/labels"))?;
    let labels: Vec<Value> = labels.get("labels").and_then(Value::as_array).into_iter().flatten().map(|l| json!({"id": l.get("id"), "name": l.get("name")})).collect();
    Ok(messages
        .into_iter()
        .map(|mut m| {
            if let Some(o) = m.as_object_mut() {
                if let Some(ids) = o.remove("labelIds") {
                    let ids: Vec<&Value> = ids.as_array().map(|a| a.iter().collect()).unwrap_or_default();
                    o.insert("labels".into(), Value::Array(labels.iter().filter(|l| ids.contains(&&l["id"])).cloned().collect()));
                }
                let headers = o.get_mut("payload").and_then(Value::as_object_mut).and_then(|p| p.remove("headers"));
                for h in headers.as_ref().and_then(Value::as_array).into_iter().flatten() {
                    if let Some(name) = h.get("name").and_then(Value::as_str) {
                        o.insert(name.to_owned(), h.get("value").cloned().unwrap_or(Value::Null));
                    }
                }
            }
            unescape_snippet(m)
        })
        .collect())
}

/// Gmail escapes HTML in snippets; n8n unescapes them.
fn unescape_snippet(mut m: Value) -> Value {
    if let Some(s) = m.get("snippet").and_then(Value::as_str) {
        let u = s.replace("&lt;", "<").replace("&gt;", ">").replace("&#39;", "'").replace("&quot;", "\"").replace("&amp;", "&");
        m["snippet"] = json!(u);
    }
    m
}

/// Get: one message, simplified.
fn get(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        if p.get("simple").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported_raw());
        }
        let m = metadata(call, &text(&p, "messageId"))?;
        Ok(simplify(call, vec![m])?.into_iter().map(item).collect())
    })
}

/// Unix seconds of an ISO date, or of a timestamp in seconds or milliseconds.
fn timestamp(v: &Value, field: &str) -> Result<i64> {
    let s = js_string(v);
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s.trim()) {
        return Ok(t.timestamp());
    }
    if let Ok(d) = chrono::NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%dT%H:%M:%S").or_else(|_| chrono::NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default())) {
        return Ok(d.and_utc().timestamp());
    }
    if let Ok(n) = s.trim().parse::<f64>() {
        // fewer than 12 digits: seconds; more: milliseconds
        return Ok(if s.trim().len() < 12 { n as i64 } else { (n / 1000.0).floor() as i64 });
    }
    Err(EngineError::node_with(
        format!("Invalid date/time in '{field}' field"),
        format!("'{s}' isn't a valid date and time. If you're using an expression, be sure to set an ISO date string or a timestamp."),
    ))
}

/// n8n's `prepareQuery`: the filters as Gmail's query (`q`, `labelIds`,
/// `includeSpamTrash`).
fn query(filters: &Map<String, Value>) -> Result<Map<String, Value>> {
    let mut qs = Map::new();
    let mut q: Vec<String> = vec![];
    let s = |k: &str| filters.get(k).map(js_string).filter(|v| !v.is_empty());
    if let Some(v) = s("q") {
        q.push(v);
    }
    if let Some(v) = s("sender") {
        q.push(format!("from:{v}"));
    }
    if let Some(v) = s("readStatus").filter(|v| v != "both") {
        q.push(format!("is:{v}"));
    }
    if let Some(v) = filters.get("receivedAfter").filter(|v| !js_string(v).is_empty()) {
        q.push(format!("after:{}", timestamp(v, "Received After")?));
    }
    if let Some(v) = filters.get("receivedBefore").filter(|v| !js_string(v).is_empty()) {
        q.push(format!("before:{}", timestamp(v, "Received Before")?));
    }
    if !q.is_empty() {
        qs.insert("q".into(), json!(q.join(" ")));
    }
    if let Some(labels) = filters.get("labelIds").filter(|l| l.as_array().is_some_and(|a| !a.is_empty()) || l.as_str().is_some_and(|s| !s.is_empty())) {
        qs.insert("labelIds".into(), labels.clone());
    }
    if let Some(v) = filters.get("includeSpamTrash").and_then(Value::as_bool) {
        qs.insert("includeSpamTrash".into(), json!(v));
    }
    Ok(qs)
}

/// Get Many: the matching messages listed (pages of 100 with Return All,
/// else `limit`), then each fetched and simplified.
fn get_all(call: &mut Call<'_, '_>) -> Result<Vec<Item>> {
    start(call);
    per_item(call, |call, i| {
        let p = call.params(i)?;
        if p.get("simple").and_then(Value::as_bool) == Some(false) {
            return Err(unsupported_raw());
        }
        let qs = query(p.get("filters").and_then(Value::as_object).unwrap_or(&Map::new()))?;
        let all = p.get("returnAll").and_then(Value::as_bool).unwrap_or(false);
        let listed = list(call, "/gmail/v1/users/me/messages", &qs, "maxResults", "messages", all, p.get("limit").cloned().unwrap_or(json!(50)))?;
        let mut messages = vec![];
        for m in &listed {
            messages.push(metadata(call, &m.get("id").map(js_string).unwrap_or_default())?);
        }
        if messages.is_empty() {
            return Ok(vec![]);
        }
        Ok(simplify(call, messages)?.into_iter().map(item).collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_and_addresses_as_n8n_writes_them() {
        let f = json!({"q": "has:attachment", "sender": "ann@example.com", "readStatus": "unread", "receivedAfter": "2024-01-02T00:00:00Z", "labelIds": ["INBOX"], "includeSpamTrash": false});
        let qs = query(f.as_object().unwrap()).unwrap();
        assert_eq!(qs["q"], "has:attachment from:ann@example.com is:unread after:1704153600");
        assert_eq!(qs["labelIds"], json!(["INBOX"]));
        assert_eq!(query(json!({"readStatus": "both", "receivedBefore": "1704153600000"}).as_object().unwrap()).unwrap()["q"], "before:1704153600");
        assert!(query(json!({"receivedAfter": "yesterday"}).as_object().unwrap()).is_err());
        assert_eq!(emails("a@x.io, Bo <b@x.io>", "To").unwrap(), "<a@x.io>, Bo <b@x.io>,");
        assert!(emails("nobody", "To").is_err());
    }
}
