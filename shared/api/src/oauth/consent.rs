//! The consent page: plain server-rendered HTML whose form works without
//! JavaScript. The person signs in with an API key; a small script fills
//! the key the web page keeps in this browser (`localStorage`, same
//! origin), so a signed-in person only approves. The form is
//! CSRF-protected by a double-submit token (cookie + hidden field, checked
//! in `authorize::decide`), may not be framed, and runs under a CSP that
//! allows only its own nonce'd script and style and a form post to us or
//! to the client's redirect URI.

use super::authorize::AuthorizationRequest;
use http::header::{self, HeaderValue};
use lambda_http::{Body, Response};
use mcp_server::scopes::Scope;
use crate::http_util::html_escape as escape;

/// Where the web page keeps its key (`shared/api/web/app.js`, `KEY_STORAGE`).
pub const WEB_KEY_STORAGE: &str = "instance-ai.key";
/// The CSRF cookie; scoped to the form's path, never sent cross-site.
pub const CSRF_COOKIE: &str = "ia_oauth_csrf";

const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1f}\
h1{font-size:1.4rem}.box{border:1px solid #d0d0d7;border-radius:8px;padding:1rem 1.25rem;margin:1rem 0}\
label{display:block;margin:.4rem 0}.muted{color:#5b5b66;font-size:.9rem}.error{color:#a00;font-weight:600}\
input[type=password]{width:100%;padding:.4rem;font:inherit;box-sizing:border-box}\
button{font:inherit;padding:.5rem 1.1rem;margin-right:.5rem;border-radius:6px;border:1px solid #888;cursor:pointer}\
button.primary{background:#2f5bea;color:#fff;border-color:#2f5bea}code{word-break:break-all}";

/// What the consent form shows; `error` is the message of a failed attempt.
pub struct View<'a> {
    pub request: &'a AuthorizationRequest,
    /// The raw parameters to carry through the form.
    pub carried: &'a [(&'static str, String)],
    pub csrf: &'a str,
    pub nonce: &'a str,
    pub error: Option<&'a str>,
}

pub fn page(v: &View<'_>) -> String {
    let r = v.request;
    let name = r.client.client_name.as_deref().unwrap_or("An unnamed application");
    let redirect_origin = url::Url::parse(&r.redirect_uri).map(|u| u.origin().ascii_serialization()).unwrap_or_default();
    let mut hidden = String::new();
    for (k, val) in v.carried {
        hidden.push_str(&format!("<input type=\"hidden\" name=\"{k}\" value=\"{}\">\n", escape(val)));
    }
    hidden.push_str(&format!("<input type=\"hidden\" name=\"csrf\" value=\"{}\">\n", escape(v.csrf)));
    let mut scopes = String::new();
    for s in Scope::ALL.into_iter().filter(|s| r.scopes.contains(*s)) {
        scopes.push_str(&format!(
            "<label><input type=\"checkbox\" name=\"scope_choice\" value=\"{id}\" checked> <strong>{id}</strong> — {desc}</label>\n",
            id = s.as_str(),
            desc = escape(s.description())
        ));
    }
    let error = v.error.map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(e))).unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Connect {name_e} to Instance AI</title><style nonce="{nonce}">{STYLE}</style></head>
<body><main>
<h1>Connect <em>{name_e}</em> to Instance AI?</h1>
{error}
<form method="post" action="/authorize">
{hidden}
<div class="box">
<p><strong>{name_e}</strong> asks to use your Instance AI tools through MCP. It will be able to:</p>
{scopes}
<p class="muted">Untick what you do not want to grant. Afterwards you are sent back to <code>{redirect_e}</code>.
Only approve if you started this connection yourself.</p>
<p class="muted">Client id <code>{client_id}</code> · tokens for <code>{resource}</code></p>
</div>
<div class="box">
<p id="signed-in" hidden>Signed in with the API key saved in this browser. <button type="button" id="use-other">Use another key</button></p>
<div id="key-field"><label for="api_key">Sign in: your Instance AI API key</label>
<input type="password" id="api_key" name="api_key" autocomplete="current-password" spellcheck="false"></div>
</div>
<button type="submit" name="decision" value="approve" class="primary">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>
</main>
<script nonce="{nonce}">
(function () {{
  var key = null;
  try {{ key = localStorage.getItem({storage}); }} catch (e) {{}}
  var field = document.getElementById('api_key');
  var box = document.getElementById('key-field');
  var note = document.getElementById('signed-in');
  if (key && !field.value) {{ field.value = key; box.hidden = true; note.hidden = false; }}
  document.getElementById('use-other').addEventListener('click', function () {{
    field.value = ''; box.hidden = false; note.hidden = true; field.focus();
  }});
}})();
</script>
</body></html>
"#,
        name_e = escape(name),
        nonce = v.nonce,
        redirect_e = escape(&redirect_origin),
        client_id = escape(&r.client.client_id),
        resource = escape(&r.resource),
        storage = serde_json::to_string(WEB_KEY_STORAGE).unwrap_or_default(),
    )
}

/// A page for what cannot be sent back to the client (an unknown client,
/// an unregistered redirect URI, an expired form).
pub fn error_page(message: &str, nonce: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Cannot connect to Instance AI</title><style nonce="{nonce}">{STYLE}</style></head>
<body><main><h1>This connection cannot go on</h1><p class="error" role="alert">{}</p>
<p class="muted">Start the connection again from your MCP client.</p></main></body></html>
"#,
        escape(message)
    )
}

/// An HTML response with the page's security headers. `form_target`: the
/// redirect URI the form's answer may send the browser to (CSP
/// `form-action` also governs that redirect).
pub fn html(status: u16, body: String, nonce: &str, form_target: Option<&str>) -> Response<Body> {
    let form_action = match form_target {
        Some(t) => format!("'self' {}", t.replace([';', ',', ' ', '\''], "")),
        None => "'self'".into(),
    };
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
    );
    let mut resp = Response::new(Body::Text(body));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
    // `Origin: null` on the form post, which `authorize::decide` refuses.
    // Nothing leaves for another origin either way.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if let Ok(v) = HeaderValue::from_str(&csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}
