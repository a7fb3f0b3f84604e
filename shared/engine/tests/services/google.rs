//! A local stand-in for Google's APIs as their references document them:
//! OAuth 2.0's token endpoint (refresh tokens, the JWT bearer grant of a
//! service account, RFC 6749 error bodies), Sheets v4 (values with their
//! A1 ranges, grid limits, `batchUpdate` requests), Gmail v1 (messages as
//! MIME, labels, page tokens) and Drive v3 (multipart uploads, media,
//! search with page tokens, permissions). Errors are Google's
//! `{"error": {"code", "message", "status"}}`; every request needs a
//! bearer token the token endpoint issued and that is still valid.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use engine::host::CredentialsProvider;
use engine::{Engine, EngineSettings, Host};
use serde_json::{json, Value};

use crate::support::{serve, Reply, Seen, Server};

pub const CLIENT_ID: &str = "client-1.apps.googleusercontent.com";
pub const CLIENT_SECRET: &str = "client-secret-1";
pub const SPREADSHEET: &str = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
pub const SA_EMAIL: &str = "robot@project.iam.gserviceaccount.com";

/// One sheet of the spreadsheet.
#[derive(Clone)]
pub struct Tab {
    pub id: i64,
    pub title: String,
    pub rows: Vec<Vec<Value>>,
    pub row_count: usize,
}

#[derive(Clone, Default)]
pub struct Message {
    pub id: String,
    pub thread_id: String,
    pub labels: Vec<String>,
    pub headers: Vec<(String, String)>,
}

#[derive(Clone, Default)]
pub struct File {
    pub id: String,
    pub name: String,
    pub mime: String,
    pub content: Vec<u8>,
    pub parents: Vec<String>,
    pub trashed: bool,
    pub permissions: Vec<Value>,
}

#[derive(Default)]
pub struct State {
    /// Access tokens that are valid, and refresh tokens with the access token they last issued.
    pub access: Vec<String>,
    pub refresh: BTreeMap<String, String>,
    pub issued: usize,
    /// Seconds the issued access tokens live.
    pub expires_in: i64,
    pub tabs: Vec<Tab>,
    pub messages: Vec<Message>,
    pub labels: Vec<Value>,
    pub files: Vec<File>,
    /// The service account's public key (PEM) its assertions are verified with.
    pub sa_public_key: Option<String>,
    pub assertions: Vec<Value>,
    /// Every API request is answered 401 (a token the API no longer accepts).
    pub deny: bool,
}

pub struct Google {
    pub server: Server,
    pub state: Arc<Mutex<State>>,
}

fn error(status: u16, message: &str, code: &str) -> Reply {
    Reply::json(status, json!({"error": {"code": status, "message": message, "status": code}}))
}

fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

fn form(body: &[u8]) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

impl State {
    fn tab(&mut self, name: &str) -> Option<&mut Tab> {
        let name = name.trim_matches('\'');
        self.tabs.iter_mut().find(|t| t.title == name)
    }

    fn issue(&mut self) -> (String, String) {
        self.issued += 1;
        let access = format!("ya29.access-{}", self.issued);
        let refresh = format!("1//refresh-{}", self.issued);
        self.access.push(access.clone());
        self.refresh.insert(refresh.clone(), access.clone());
        (access, refresh)
    }

    /// RFC 6749 §6 and RFC 7523: the token endpoint.
    fn token(&mut self, r: &Seen) -> Reply {
        let f = form(&r.body);
        match f.get("grant_type").map(String::as_str) {
            Some("refresh_token") => {
                if f.get("client_id").map(String::as_str) != Some(CLIENT_ID) || f.get("client_secret").map(String::as_str) != Some(CLIENT_SECRET) {
                    return Reply::json(401, json!({"error": "invalid_client", "error_description": "The OAuth client was not found."}));
                }
                let Some(old) = f.get("refresh_token").and_then(|t| self.refresh.get(t)).cloned() else {
                    return Reply::json(400, json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."}));
                };
                self.access.retain(|a| *a != old);
                self.issued += 1;
                let access = format!("ya29.access-{}", self.issued);
                self.access.push(access.clone());
                let refresh = f["refresh_token"].clone();
                self.refresh.insert(refresh, access.clone());
                Reply::json(200, json!({"access_token": access, "expires_in": self.expires_in, "scope": "https://www.googleapis.com/auth/spreadsheets", "token_type": "Bearer"}))
            }
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
                let assertion = f.get("assertion").cloned().unwrap_or_default();
                let Some(pem) = &self.sa_public_key else { return Reply::json(400, json!({"error": "invalid_grant"})) };
                let key = jsonwebtoken::DecodingKey::from_rsa_pem(pem.as_bytes()).unwrap();
                let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
                v.set_audience(&["https://oauth2.googleapis.com/token"]);
                match jsonwebtoken::decode::<Value>(&assertion, &key, &v) {
                    Ok(data) if data.claims["iss"] == SA_EMAIL => {
                        self.assertions.push(data.claims);
                        self.issued += 1;
                        let access = format!("ya29.sa-{}", self.issued);
                        self.access.push(access.clone());
                        Reply::json(200, json!({"access_token": access, "expires_in": 3599, "token_type": "Bearer"}))
                    }
                    _ => Reply::json(400, json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."})),
                }
            }
            _ => Reply::json(400, json!({"error": "unsupported_grant_type"})),
        }
    }

    fn authorized(&self, r: &Seen) -> bool {
        r.header("authorization").and_then(|h| h.strip_prefix("Bearer ")).is_some_and(|t| self.access.iter().any(|a| a == t))
    }
}

/// `'Sheet1'`, `Sheet1!2:3` or `Sheet1!A1:B2` → the tab's name and the 1-based rows (none: all).
fn parse_range(range: &str) -> (String, Option<(usize, Option<usize>)>) {
    let (name, cells) = match range.split_once('!') {
        Some((n, c)) => (n.trim_matches('\'').to_owned(), Some(c.to_owned())),
        None => (range.trim_matches('\'').to_owned(), None),
    };
    let rows = cells.map(|c| {
        let digits = |s: &str| s.trim_start_matches(|ch: char| ch.is_ascii_alphabetic()).parse::<usize>().ok();
        match c.split_once(':') {
            Some((a, b)) => (digits(a).unwrap_or(1), digits(b)),
            None => (digits(&c).unwrap_or(1), digits(&c)),
        }
    });
    (name, rows)
}

fn column_index(cell: &str) -> usize {
    cell.chars().take_while(char::is_ascii_alphabetic).fold(0, |n, c| n * 26 + (c.to_ascii_uppercase() as u8 - b'A') as usize + 1).max(1) - 1
}

/// Google trims trailing empty cells and rows.
fn trimmed(rows: &[Vec<Value>]) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            while r.last().is_some_and(|c| c == &json!("") || c.is_null()) {
                r.pop();
            }
            r
        })
        .collect();
    while out.last().is_some_and(Vec::is_empty) {
        out.pop();
    }
    out
}

fn sheets(s: &mut State, r: &Seen, rest: &str) -> Reply {
    let Some(rest) = rest.strip_prefix(SPREADSHEET) else {
        if r.method == "POST" && rest.is_empty() {
            let b = r.json();
            let sheets: Vec<Value> = b["sheets"].as_array().cloned().unwrap_or_else(|| vec![json!({"properties": {"title": "Sheet1"}})]);
            return Reply::json(200, json!({"spreadsheetId": "1NewSpreadsheet", "properties": b["properties"], "sheets": sheets, "spreadsheetUrl": "https://docs.google.com/spreadsheets/d/1NewSpreadsheet/edit"}));
        }
        return error(404, "Requested entity was not found.", "NOT_FOUND");
    };
    let b = r.json();
    match (r.method.as_str(), rest) {
        ("GET", "") => {
            assert_eq!(r.query.get("fields").map(String::as_str), Some("sheets.properties"));
            let sheets: Vec<Value> = s.tabs.iter().enumerate().map(|(i, t)| json!({"properties": {"sheetId": t.id, "title": t.title, "index": i, "sheetType": "GRID", "gridProperties": {"rowCount": t.row_count, "columnCount": 26}}})).collect();
            Reply::json(200, json!({"sheets": sheets}))
        }
        ("POST", ":batchUpdate") => {
            let mut replies = vec![];
            for req in b["requests"].as_array().cloned().unwrap_or_default() {
                if let Some(a) = req.get("appendDimension") {
                    let Some(t) = s.tabs.iter_mut().find(|t| Some(t.id) == a["sheetId"].as_i64()) else { return error(400, "Invalid requests[0].appendDimension: No grid with id: 9", "INVALID_ARGUMENT") };
                    t.row_count += a["length"].as_u64().unwrap_or(0) as usize;
                    replies.push(json!({}));
                } else if let Some(add) = req.get("addSheet") {
                    let p = &add["properties"];
                    let id = p["sheetId"].as_i64().filter(|i| *i != 0).unwrap_or(1000 + s.tabs.len() as i64);
                    s.tabs.push(Tab { id, title: p["title"].as_str().unwrap_or_default().to_owned(), rows: vec![], row_count: 1000 });
                    let mut props = p.clone();
                    props["sheetId"] = json!(id);
                    props["index"] = json!(s.tabs.len() - 1);
                    props["sheetType"] = json!("GRID");
                    props["gridProperties"] = json!({"rowCount": 1000, "columnCount": 26});
                    replies.push(json!({"addSheet": {"properties": props}}));
                } else if let Some(d) = req.get("deleteSheet") {
                    s.tabs.retain(|t| Some(t.id) != d["sheetId"].as_i64());
                    replies.push(json!({}));
                } else if let Some(d) = req.get("deleteDimension") {
                    let range = &d["range"];
                    let Some(t) = s.tabs.iter_mut().find(|t| Some(t.id) == range["sheetId"].as_i64()) else { return error(400, "No grid", "INVALID_ARGUMENT") };
                    let (start, end) = (range["startIndex"].as_u64().unwrap_or(0) as usize, range["endIndex"].as_u64().unwrap_or(0) as usize);
                    if range["dimension"] == "ROWS" {
                        let end = end.min(t.rows.len());
                        if start < end {
                            t.rows.drain(start..end);
                        }
                    } else {
                        for row in t.rows.iter_mut() {
                            let end = end.min(row.len());
                            if start < end {
                                row.drain(start..end);
                            }
                        }
                    }
                    replies.push(json!({}));
                } else {
                    return error(400, "Invalid request", "INVALID_ARGUMENT");
                }
            }
            Reply::json(200, json!({"spreadsheetId": SPREADSHEET, "replies": replies}))
        }
        ("POST", "/values:batchUpdate") => {
            for d in b["data"].as_array().cloned().unwrap_or_default() {
                let range = d["range"].as_str().unwrap_or_default();
                let (name, cells) = range.split_once('!').unwrap_or((range, "A1"));
                let col = column_index(cells);
                let row: usize = cells.trim_start_matches(|c: char| c.is_ascii_alphabetic()).parse().unwrap_or(1);
                let Some(t) = s.tab(name) else { return error(400, &format!("Unable to parse range: {range}"), "INVALID_ARGUMENT") };
                while t.rows.len() < row {
                    t.rows.push(vec![]);
                }
                let r = &mut t.rows[row - 1];
                while r.len() <= col {
                    r.push(json!(""));
                }
                r[col] = d["values"][0][0].clone();
            }
            Reply::json(200, json!({"spreadsheetId": SPREADSHEET, "totalUpdatedCells": b["data"].as_array().map_or(0, Vec::len)}))
        }
        (method, path) if path.starts_with("/values/") => {
            let spec = &path["/values/".len()..];
            let (range, action) = match spec.rsplit_once(':') {
                Some((r, a)) if a == "append" || a == "clear" => (decode(r), a),
                _ => (decode(spec), ""),
            };
            let (name, rows) = parse_range(&range);
            let Some(t) = s.tab(&name) else { return error(400, &format!("Unable to parse range: {range}"), "INVALID_ARGUMENT") };
            match (method, action) {
                ("GET", "") => {
                    assert!(r.query.contains_key("valueRenderOption"), "values.get names its render option");
                    let all = trimmed(&t.rows);
                    let values: Vec<Vec<Value>> = match rows {
                        Some((from, to)) => all.iter().skip(from - 1).take(to.map_or(usize::MAX, |to| to + 1 - from)).cloned().collect(),
                        None => all,
                    };
                    let mut body = json!({"range": format!("{}!A1:Z{}", t.title, t.row_count), "majorDimension": "ROWS"});
                    if !values.is_empty() {
                        body["values"] = json!(values);
                    }
                    Reply::json(200, body)
                }
                ("PUT", "") | ("POST", "append") => {
                    assert!(matches!(r.query.get("valueInputOption").map(String::as_str), Some("RAW" | "USER_ENTERED")));
                    assert_eq!(b["range"].as_str(), Some(range.as_str()), "the body's range is the URL's");
                    let values: Vec<Vec<Value>> = serde_json::from_value(b["values"].clone()).unwrap_or_default();
                    let start = if action == "append" { trimmed(&t.rows).len() + 1 } else { rows.map_or(1, |r| r.0) };
                    let last = start + values.len() - 1;
                    // a write may run past the grid's last row (it grows), not start past it
                    if action != "append" && start > t.row_count {
                        return error(400, &format!("Range ('{}'!A{start}) exceeds grid limits. Max rows: {}, max columns: 26", t.title, t.row_count), "INVALID_ARGUMENT");
                    }
                    while t.rows.len() < last {
                        t.rows.push(vec![]);
                    }
                    t.row_count = t.row_count.max(last);
                    for (k, row) in values.iter().enumerate() {
                        t.rows[start - 1 + k] = row.iter().map(|v| if v.is_null() { json!("") } else { v.clone() }).collect();
                    }
                    let updated = json!({"spreadsheetId": SPREADSHEET, "updatedRange": format!("{}!A{start}:Z{last}", t.title), "updatedRows": values.len()});
                    Reply::json(200, if action == "append" { json!({"spreadsheetId": SPREADSHEET, "updates": updated}) } else { updated })
                }
                ("POST", "clear") => {
                    match rows {
                        Some((from, to)) => {
                            for row in t.rows.iter_mut().skip(from - 1).take(to.map_or(usize::MAX, |to| to + 1 - from)) {
                                row.clear();
                            }
                        }
                        None => t.rows.clear(),
                    }
                    Reply::json(200, json!({"spreadsheetId": SPREADSHEET, "clearedRange": range}))
                }
                _ => error(404, "Not found", "NOT_FOUND"),
            }
        }
        _ => error(404, "Requested entity was not found.", "NOT_FOUND"),
    }
}

fn header_of(raw_mime: &str, name: &str) -> Option<String> {
    // unfolded headers of the message head
    let head = raw_mime.split("\r\n\r\n").next().unwrap_or_default().replace("\r\n ", " ").replace("\r\n\t", " ");
    head.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_owned()))
}

fn message_json(m: &Message, wanted: &[String]) -> Value {
    let headers: Vec<Value> = m.headers.iter().filter(|(k, _)| wanted.iter().any(|w| w.eq_ignore_ascii_case(k))).map(|(k, v)| json!({"name": k, "value": v})).collect();
    json!({"id": m.id, "threadId": m.thread_id, "labelIds": m.labels, "snippet": "Hi &amp; welcome", "payload": {"mimeType": "multipart/alternative", "headers": headers}, "sizeEstimate": 1234, "historyId": "99", "internalDate": "1704153600000"})
}

fn gmail(s: &mut State, r: &Seen, rest: &str) -> Reply {
    let b = r.json();
    match (r.method.as_str(), rest) {
        ("GET", "profile") => Reply::json(200, json!({"emailAddress": "me@example.com", "messagesTotal": s.messages.len(), "threadsTotal": 1, "historyId": "99"})),
        ("POST", "messages/send") => {
            let raw = b["raw"].as_str().unwrap_or_default();
            let Ok(bytes) = base64::engine::general_purpose::URL_SAFE.decode(raw) else { return error(400, "Invalid value for ByteString", "INVALID_ARGUMENT") };
            let mime = String::from_utf8_lossy(&bytes).into_owned();
            if header_of(&mime, "To").is_none() {
                return error(400, "Invalid To header", "INVALID_ARGUMENT");
            }
            let id = format!("18c{:05x}", s.messages.len() + 1);
            let thread_id = b["threadId"].as_str().map(str::to_owned).unwrap_or_else(|| id.clone());
            let headers = ["From", "To", "Cc", "Bcc", "Subject", "Message-ID", "In-Reply-To"].iter().filter_map(|h| header_of(&mime, h).map(|v| (h.to_string(), v))).collect();
            s.messages.push(Message { id: id.clone(), thread_id: thread_id.clone(), labels: vec!["SENT".into()], headers });
            Reply::json(200, json!({"id": id, "threadId": thread_id, "labelIds": ["SENT"]}))
        }
        ("GET", "messages") => {
            let q = r.query.get("q").cloned().unwrap_or_default();
            let label = r.query.get("labelIds").cloned();
            let matching: Vec<&Message> = s
                .messages
                .iter()
                .filter(|m| label.as_ref().is_none_or(|l| m.labels.contains(l)))
                .filter(|m| !q.contains("is:unread") || m.labels.iter().any(|l| l == "UNREAD"))
                .collect();
            let size: usize = r.query.get("maxResults").and_then(|v| v.parse().ok()).unwrap_or(100);
            let start: usize = r.query.get("pageToken").and_then(|t| t.strip_prefix("page-")).and_then(|v| v.parse().ok()).unwrap_or(0);
            let page: Vec<Value> = matching.iter().skip(start).take(size).map(|m| json!({"id": m.id, "threadId": m.thread_id})).collect();
            let mut body = json!({"resultSizeEstimate": matching.len()});
            if !page.is_empty() {
                body["messages"] = json!(page);
            }
            if start + size < matching.len() {
                body["nextPageToken"] = json!(format!("page-{}", start + size));
            }
            Reply::json(200, body)
        }
        ("GET", "labels") => Reply::json(200, json!({"labels": s.labels})),
        ("POST", "labels") => {
            if s.labels.iter().any(|l| l["name"] == b["name"]) {
                return error(409, "Label name exists or conflicts", "ALREADY_EXISTS");
            }
            let label = json!({"id": format!("Label_{}", s.labels.len() + 1), "name": b["name"], "messageListVisibility": b["messageListVisibility"], "labelListVisibility": b["labelListVisibility"], "type": "user"});
            s.labels.push(label.clone());
            Reply::json(200, label)
        }
        (m, path) if path.starts_with("labels/") => {
            let id = &path["labels/".len()..];
            let Some(pos) = s.labels.iter().position(|l| l["id"] == id) else { return error(404, "Requested entity was not found.", "NOT_FOUND") };
            match m {
                "DELETE" => {
                    s.labels.remove(pos);
                    Reply::empty(204)
                }
                _ => Reply::json(200, s.labels[pos].clone()),
            }
        }
        (m, path) if path.starts_with("messages/") => {
            let rest = &path["messages/".len()..];
            let (id, action) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(pos) = s.messages.iter().position(|x| x.id == id) else { return error(404, "Requested entity was not found.", "NOT_FOUND") };
            match (m, action) {
                ("GET", "") => {
                    assert_eq!(r.query.get("format").map(String::as_str), Some("metadata"));
                    let wanted: Vec<String> = url::form_urlencoded::parse(r.raw_query.as_bytes()).filter(|(k, _)| k == "metadataHeaders").map(|(_, v)| v.into_owned()).collect();
                    let wanted = if wanted.is_empty() { s.messages[pos].headers.iter().map(|(k, _)| k.clone()).collect() } else { wanted };
                    Reply::json(200, message_json(&s.messages[pos], &wanted))
                }
                ("DELETE", "") => {
                    s.messages.remove(pos);
                    Reply::empty(204)
                }
                ("POST", "modify") => {
                    let msg = &mut s.messages[pos];
                    for l in b["addLabelIds"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                        if !msg.labels.iter().any(|x| x == l) {
                            msg.labels.push(l.to_owned());
                        }
                    }
                    let remove: Vec<&str> = b["removeLabelIds"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                    msg.labels.retain(|l| !remove.contains(&l.as_str()));
                    Reply::json(200, json!({"id": msg.id, "threadId": msg.thread_id, "labelIds": msg.labels}))
                }
                _ => error(404, "Not found", "NOT_FOUND"),
            }
        }
        _ => error(404, "Not found", "NOT_FOUND"),
    }
}

fn file_json(f: &File) -> Value {
    json!({"kind": "drive#file", "id": f.id, "name": f.name, "mimeType": f.mime, "parents": f.parents, "trashed": f.trashed, "size": f.content.len().to_string()})
}

/// A `multipart/related` body's parts (headers, content).
fn related_parts(content_type: &str, body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let boundary = content_type.split("boundary=").nth(1).unwrap_or_default().trim_matches('"');
    let text = body.to_vec();
    let marker = format!("--{boundary}");
    let mut parts = vec![];
    let mut pos = 0;
    let find = |from: usize, needle: &[u8]| text[from..].windows(needle.len()).position(|w| w == needle).map(|p| p + from);
    while let Some(start) = find(pos, marker.as_bytes()) {
        let after = start + marker.len();
        if text[after..].starts_with(b"--") {
            break;
        }
        let head_end = find(after, b"\r\n\r\n").unwrap_or(text.len());
        let head = String::from_utf8_lossy(&text[after..head_end]).into_owned();
        let next = find(head_end, format!("\r\n{marker}").as_bytes()).unwrap_or(text.len());
        parts.push((head, text[head_end + 4..next].to_vec()));
        pos = next + 2;
    }
    parts
}

fn drive(s: &mut State, r: &Seen, path: &str) -> Reply {
    let b = r.json();
    match (r.method.as_str(), path) {
        ("POST", "/upload/drive/v3/files") => {
            assert_eq!(r.query.get("uploadType").map(String::as_str), Some("multipart"));
            let ct = r.header("content-type").unwrap_or_default();
            assert!(ct.starts_with("multipart/related; boundary="), "{ct}");
            let parts = related_parts(ct, &r.body);
            let [(meta_head, meta), (data_head, data)] = parts.as_slice() else { return error(400, "Multipart body must have 2 parts", "INVALID_ARGUMENT") };
            assert!(meta_head.contains("application/json"));
            let meta: Value = serde_json::from_slice(meta).unwrap();
            let mime = data_head.trim().strip_prefix("Content-Type: ").unwrap_or("application/octet-stream").to_owned();
            let f = File { id: format!("1file{}", s.files.len() + 1), name: meta["name"].as_str().unwrap_or("Untitled").into(), mime, content: data.clone(), parents: serde_json::from_value(meta["parents"].clone()).unwrap_or_default(), ..File::default() };
            s.files.push(f.clone());
            Reply::json(200, json!({"kind": "drive#file", "id": f.id, "name": f.name, "mimeType": f.mime}))
        }
        ("GET", "/drive/v3/files") => {
            let q = r.query.get("q").cloned().unwrap_or_default();
            let name_part = q.split("name contains '").nth(1).and_then(|x| x.split('\'').next()).map(str::to_owned);
            let matching: Vec<&File> = s
                .files
                .iter()
                .filter(|f| name_part.as_ref().is_none_or(|n| f.name.contains(n.as_str())))
                .filter(|f| !q.contains("trashed = false") || !f.trashed)
                .filter(|f| !q.contains("mimeType != 'application/vnd.google-apps.folder'") || f.mime != "application/vnd.google-apps.folder")
                .collect();
            let size: usize = r.query.get("pageSize").and_then(|v| v.parse().ok()).unwrap_or(100);
            let start: usize = r.query.get("pageToken").and_then(|t| t.strip_prefix("p")).and_then(|v| v.parse().ok()).unwrap_or(0);
            let fields = r.query.get("fields").cloned().unwrap_or_default();
            let page: Vec<Value> = matching
                .iter()
                .skip(start)
                .take(size)
                .map(|f| if fields.contains("files(*)") { file_json(f) } else { json!({"id": f.id, "name": f.name}) })
                .collect();
            let mut body = json!({"kind": "drive#fileList", "files": page});
            if start + size < matching.len() {
                body["nextPageToken"] = json!(format!("p{}", start + size));
            }
            Reply::json(200, body)
        }
        (m, p) if p.starts_with("/drive/v3/files/") => {
            let rest = &p["/drive/v3/files/".len()..];
            let (id, sub) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(pos) = s.files.iter().position(|f| f.id == id) else { return error(404, &format!("File not found: {id}."), "NOT_FOUND") };
            match (m, sub) {
                ("GET", "") if r.query.get("alt").map(String::as_str) == Some("media") => {
                    let f = &s.files[pos];
                    Reply { status: 200, headers: vec![("content-type", f.mime.clone())], body: f.content.clone() }
                }
                ("GET", "") => {
                    let f = &s.files[pos];
                    assert_eq!(r.query.get("fields").map(String::as_str), Some("mimeType,name"));
                    Reply::json(200, json!({"mimeType": f.mime, "name": f.name}))
                }
                ("GET", "export") => {
                    let f = &s.files[pos];
                    let to = r.query.get("mimeType").cloned().unwrap_or_default();
                    Reply { status: 200, headers: vec![("content-type", to.clone())], body: format!("exported {} as {to}", f.name).into_bytes() }
                }
                ("PATCH", "") => {
                    let f = &mut s.files[pos];
                    if let Some(n) = b["name"].as_str() {
                        f.name = n.to_owned();
                    }
                    if b["trashed"] == json!(true) {
                        f.trashed = true;
                    }
                    if let Some(p) = r.query.get("addParents") {
                        f.parents = vec![p.clone()];
                    }
                    let mut out = file_json(f);
                    if let Some(props) = b.get("properties") {
                        out["properties"] = props.clone();
                    }
                    out["originalFilename"] = b["originalFilename"].clone();
                    Reply::json(200, out)
                }
                ("DELETE", "") => {
                    s.files.remove(pos);
                    Reply::empty(204)
                }
                ("POST", "permissions") => {
                    if b["role"].as_str().is_none_or(str::is_empty) || b["type"].as_str().is_none_or(str::is_empty) {
                        return error(400, "The permission role field is required.", "INVALID_ARGUMENT");
                    }
                    let perm = json!({"kind": "drive#permission", "id": format!("perm{}", s.files[pos].permissions.len() + 1), "type": b["type"], "role": b["role"], "emailAddress": b["emailAddress"]});
                    s.files[pos].permissions.push(perm.clone());
                    Reply::json(200, perm)
                }
                _ => error(404, "Not found", "NOT_FOUND"),
            }
        }
        _ => error(404, "Not found", "NOT_FOUND"),
    }
}

impl Google {
    pub fn start() -> Google {
        let state: Arc<Mutex<State>> = Arc::new(Mutex::new(State { expires_in: 3599, ..State::default() }));
        let s = state.clone();
        let server = serve(move |r: &Seen| {
            let mut s = s.lock().unwrap();
            if r.path == "/token" && r.method == "POST" {
                return s.token(r);
            }
            if s.deny || !s.authorized(r) {
                return error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.", "UNAUTHENTICATED");
            }
            if let Some(rest) = r.path.strip_prefix("/v4/spreadsheets") {
                let rest = rest.strip_prefix('/').unwrap_or(rest).to_owned();
                return sheets(&mut s, r, &rest);
            }
            if let Some(rest) = r.path.strip_prefix("/gmail/v1/users/me/") {
                return gmail(&mut s, r, rest);
            }
            if r.path == "/drive/v3/files/".to_owned() + SPREADSHEET && r.method == "DELETE" {
                return Reply::empty(204);
            }
            drive(&mut s, r, &r.path.clone())
        });
        Google { server, state }
    }

    /// Issues a token pair, as a person's connect would have.
    pub fn connect(&self) -> (String, String) {
        self.state.lock().unwrap().issue()
    }

    /// Origins of Google's APIs and token endpoint, sent here.
    pub fn overrides(&self) -> Vec<(&'static str, String)> {
        ["https://sheets.googleapis.com", "https://www.googleapis.com", "https://oauth2.googleapis.com", "https://gmail.googleapis.com"].iter().map(|o| (*o, self.server.base.clone())).collect()
    }
}

/// A credentials provider that keeps what the engine refreshes.
#[derive(Clone, Default)]
pub struct Store(pub Arc<Mutex<BTreeMap<String, Value>>>);

impl CredentialsProvider for Store {
    fn get(&self, cred_type: &str, _reference: &Value) -> Result<Value, String> {
        self.0.lock().unwrap().get(cred_type).cloned().ok_or_else(|| format!("no {cred_type} credential"))
    }

    fn save_oauth_tokens(&self, cred_type: &str, _reference: &Value, replaced: &str, tokens: &Value) -> Result<(), String> {
        let mut all = self.0.lock().unwrap();
        let data = all.get_mut(cred_type).ok_or("no credential")?;
        if data.pointer("/oauthTokenData/access_token").and_then(Value::as_str) == Some(replaced) {
            data["oauthTokenData"] = tokens.clone();
        }
        Ok(())
    }
}

/// Credential data of a connected Google OAuth2 credential.
pub fn connected(access: &str, refresh: &str, expires_at: i64) -> Value {
    json!({"clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET, "oauthTokenData": {"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_at": expires_at}})
}

pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// An engine whose Google origins go to `g`, with `creds` by type.
pub fn engine_with(g: &Google, creds: &Store) -> Engine {
    let settings = EngineSettings {
        allow_private_network: true,
        origin_overrides: g.overrides().into_iter().map(|(a, b)| (a.to_owned(), b)).collect(),
        ..Default::default()
    };
    Engine::new(settings, Host { credentials: Some(Arc::new(creds.clone())), ..Default::default() })
}

/// A store with one connected credential of `cred_type`.
pub fn store_with(g: &Google, cred_type: &str) -> Store {
    let (access, refresh) = g.connect();
    let store = Store::default();
    store.0.lock().unwrap().insert(cred_type.to_owned(), connected(&access, &refresh, now() + 3000));
    store
}

pub fn access_token(store: &Store, cred_type: &str) -> String {
    store.0.lock().unwrap()[cred_type]["oauthTokenData"]["access_token"].as_str().unwrap().to_owned()
}

/// Requests of a kind, for counting.
pub fn count(seen: &[Seen], method: &str, path: &str) -> usize {
    seen.iter().filter(|r| r.method == method && r.path == path).count()
}

pub fn values_of(g: &Google, tab: &str) -> Vec<Vec<Value>> {
    trimmed(&g.state.lock().unwrap().tabs.iter().find(|t| t.title == tab).unwrap().rows)
}
