//! HTTP in and out of the webhook function, free of any Lambda type: the
//! `api` adapter maps API Gateway's request into [`HttpRequest`] and
//! [`HttpReply`] back. Bodies are parsed as n8n's body parser does
//! (JSON, form-urlencoded, text, multipart with files); a body that does
//! not parse is a 400 and nothing runs.

use crate::error::{Result, TriggerError};
use engine::webhook::{self, HttpResponse, IncomingRequest, RequestBody, UploadedFile};
use serde_json::{Map, Value};

/// A request as the edge received it.
#[derive(Debug, Clone, Default)]
pub struct HttpRequest {
    /// Upper case.
    pub method: String,
    /// The raw path (`/webhook/orders/42`), percent-encoded as sent.
    pub path: String,
    /// Decoded query pairs, in order.
    pub query: Vec<(String, String)>,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub source_ip: Option<String>,
    /// `https://<host>` of this request (webhook URLs are built on it when
    /// no public URL is configured).
    pub base_url: String,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// An answer for the edge.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpReply {
    pub status: u16,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(status: u16, value: &Value) -> Self {
        HttpReply {
            status,
            headers: vec![("content-type".into(), "application/json; charset=utf-8".into())],
            body: serde_json::to_vec(value).unwrap_or_default(),
        }
    }

    pub fn html(status: u16, page: String) -> Self {
        HttpReply {
            status,
            headers: vec![
                ("content-type".into(), "text/html; charset=utf-8".into()),
                // Plain pages: no script runs, forms post to this origin only.
                (
                    "content-security-policy".into(),
                    "default-src 'none'; style-src 'unsafe-inline'; img-src data: https:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'".into(),
                ),
                ("x-content-type-options".into(), "nosniff".into()),
            ],
            body: page.into_bytes(),
        }
    }

    /// Lets the page's forms also submit to `sources` (CSP sources such as
    /// an origin or `https:`): a browser checks `form-action` on the
    /// redirect that follows a submission too, so a form whose answer
    /// redirects elsewhere must name where.
    pub fn allow_form_action(mut self, sources: &[String]) -> Self {
        if sources.is_empty() {
            return self;
        }
        for (k, v) in self.headers.iter_mut() {
            if k == "content-security-policy" {
                *v = v.replace("form-action 'self'", &format!("form-action 'self' {}", sources.join(" ")));
            }
        }
        self
    }

    pub fn redirect(url: &str) -> Self {
        HttpReply { status: 303, headers: vec![("location".into(), url.to_owned())], body: Vec::new() }
    }
}

impl From<HttpResponse> for HttpReply {
    fn from(r: HttpResponse) -> Self {
        let mut headers: Vec<(String, String)> =
            r.headers.iter().map(|(n, v)| (n.to_ascii_lowercase(), v.clone())).collect();
        if !headers.iter().any(|(n, _)| n == "content-type") {
            if let Some(ct) = r.content_type() {
                headers.push(("content-type".into(), ct));
            }
        }
        // A response the workflow builds is the workflow's content: it runs
        // no script of ours' origin when it is HTML (n8n sandboxes it too).
        if headers.iter().any(|(n, v)| n == "content-type" && v.starts_with("text/html")) {
            headers.push(("content-security-policy".into(), "sandbox allow-forms allow-popups allow-modals".into()));
        }
        HttpReply { status: r.status, headers, body: r.body_bytes() }
    }
}

/// The URL spaces the webhook function serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Webhook,
    WebhookTest,
    WebhookWaiting,
    Form,
    FormTest,
    FormWaiting,
}

/// `/webhook/a/b` → (Webhook, `a/b`), the rest percent-decoded per segment.
pub fn split_space(path: &str) -> Result<(Space, String)> {
    let trimmed = path.trim_start_matches('/');
    let (head, rest) = trimmed.split_once('/').unwrap_or((trimmed, ""));
    let space = match head {
        "webhook" => Space::Webhook,
        "webhook-test" => Space::WebhookTest,
        "webhook-waiting" => Space::WebhookWaiting,
        "form" => Space::Form,
        "form-test" => Space::FormTest,
        "form-waiting" => Space::FormWaiting,
        _ => return Err(TriggerError::NotFound(format!("no webhook URL space at {path}"))),
    };
    let decoded: Vec<String> = rest
        .trim_matches('/')
        .split('/')
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    Ok((space, decoded.join("/")))
}

/// Parses the request into what the engine's webhook functions read.
pub async fn incoming(req: &HttpRequest, params: Map<String, Value>) -> Result<IncomingRequest> {
    let mut headers = Map::new();
    for (n, v) in &req.headers {
        match headers.get_mut(n) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(v);
            }
            _ => {
                headers.insert(n.clone(), Value::String(v.clone()));
            }
        }
    }
    let mut query = Map::new();
    for (k, v) in &req.query {
        webhook::add_repeated(&mut query, k.clone(), Value::String(v.clone()));
    }
    let content_type = webhook::content_type_of(&headers);
    let body = match content_type.as_deref() {
        Some("multipart/form-data") => multipart(req).await?,
        ct => webhook::parse_body(ct, &req.body).map_err(TriggerError::BadRequest)?,
    };
    Ok(IncomingRequest {
        method: req.method.clone(),
        headers,
        params,
        query,
        body,
        raw_body: req.body.clone(),
        source_ip: req.source_ip.clone(),
    })
}

/// `multipart/form-data`: fields (a repeated one becomes an array, as
/// n8n normalises them) and files; a file input left empty is skipped.
async fn multipart(req: &HttpRequest) -> Result<RequestBody> {
    let ct = req.header("content-type").unwrap_or_default();
    let boundary =
        multer::parse_boundary(ct).map_err(|e| TriggerError::BadRequest(format!("The submitted form data could not be parsed: {e}")))?;
    let body = bytes::Bytes::from(req.body.clone());
    let stream = futures::stream::once(async move { Ok::<_, std::convert::Infallible>(body) });
    let mut form = multer::Multipart::new(stream, boundary);
    let mut fields = Map::new();
    let mut files = Vec::new();
    let bad = |e: multer::Error| TriggerError::BadRequest(format!("The submitted form data could not be parsed: {e}"));
    while let Some(field) = form.next_field().await.map_err(bad)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let mime = field.content_type().map(|m| m.to_string());
        let data = field.bytes().await.map_err(bad)?;
        match file_name {
            Some(f) => {
                if f.is_empty() && data.is_empty() {
                    continue;
                }
                files.push(UploadedFile {
                    field: name,
                    file_name: Some(f),
                    mime_type: mime.unwrap_or_else(|| "application/octet-stream".into()),
                    data: data.to_vec(),
                });
            }
            None => webhook::add_repeated(&mut fields, name, Value::String(String::from_utf8_lossy(&data).into_owned())),
        }
    }
    Ok(RequestBody::Multipart { fields, files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_and_decoding() {
        let (s, rest) = split_space("/webhook/a%20b/c/").unwrap();
        assert_eq!((s, rest.as_str()), (Space::Webhook, "a b/c"));
        assert_eq!(split_space("/form-waiting/123").unwrap().0, Space::FormWaiting);
        assert!(split_space("/elsewhere/x").is_err());
    }

    #[test]
    fn form_action_names_the_sources_only_on_a_page_that_needs_them() {
        let csp = |r: &HttpReply| r.headers.iter().find(|(k, _)| k == "content-security-policy").map(|(_, v)| v.clone()).unwrap();
        let page = HttpReply::html(200, "<form></form>".into());
        let before = csp(&page);
        assert_eq!(csp(&page.clone().allow_form_action(&[])), before);
        let wider = page.allow_form_action(&["https://shop.example".into()]);
        assert!(csp(&wider).contains("form-action 'self' https://shop.example;"), "{}", csp(&wider));
        assert!(csp(&wider).contains("default-src 'none'"));
    }

    #[tokio::test]
    async fn multipart_fields_and_files() {
        let body = "--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n2\r\n--XX\r\nContent-Disposition: form-data; name=\"f\"; filename=\"x.txt\"\r\nContent-Type: text/plain\r\n\r\nhi\r\n--XX\r\nContent-Disposition: form-data; name=\"empty\"; filename=\"\"\r\nContent-Type: application/octet-stream\r\n\r\n\r\n--XX--\r\n";
        let req = HttpRequest {
            method: "POST".into(),
            headers: vec![("content-type".into(), "multipart/form-data; boundary=XX".into())],
            body: body.as_bytes().to_vec(),
            ..Default::default()
        };
        let inc = incoming(&req, Map::new()).await.unwrap();
        let RequestBody::Multipart { fields, files } = inc.body else { panic!("multipart") };
        assert_eq!(Value::Object(fields), serde_json::json!({"a": ["1", "2"]}));
        assert_eq!(files.len(), 1);
        assert_eq!((files[0].field.as_str(), files[0].data.as_slice()), ("f", b"hi".as_slice()));
    }
}
