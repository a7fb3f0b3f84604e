//! The hosted chat page (`GET <webhookId>/chat`, mode `hostedChat`): one
//! self-contained document, no third-party script. Its configuration
//! (texts, initial messages, where to post, streaming, authentication)
//! travels as a JSON data block; the script (`chat_page.js`) is inline and
//! allowed by its hash, so the page runs nothing else.

use crate::request::HttpReply;
use base64::Engine as _;
use engine::chat::ChatSpec;
use serde_json::json;
use sha2::{Digest, Sha256};

const SCRIPT: &str = include_str!("chat_page.js");

const STYLE: &str = "
:root { --chat--color-primary: #e74266; --chat--color-light: #f2f4f8; --chat--color-dark: #101330; }
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; background: var(--chat--color-light); color: var(--chat--color-dark); }
.chat-layout { max-width: 760px; margin: 0 auto; height: 100vh; display: flex; flex-direction: column; }
header { padding: 16px 20px; background: var(--chat--color-dark); color: #fff; }
header h1 { margin: 0; font-size: 22px; } header p { margin: 4px 0 0; opacity: .8; }
#messages { flex: 1; overflow-y: auto; padding: 16px 20px; display: flex; flex-direction: column; gap: 8px; }
.chat-message { max-width: 80%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; word-wrap: break-word; }
.chat-message-from-bot { background: #fff; align-self: flex-start; }
.chat-message-from-user { background: var(--chat--color-primary); color: #fff; align-self: flex-end; }
form, #auth { display: flex; gap: 8px; padding: 12px 20px; background: #fff; }
input[type=text], input[type=password] { flex: 1; padding: 8px; border: 1px solid #ccd; border-radius: 6px; }
button { padding: 8px 16px; border: 0; border-radius: 6px; background: var(--chat--color-primary); color: #fff; cursor: pointer; }
#welcome { margin: auto; text-align: center; }
";

/// The page's `Content-Security-Policy`: only its own script, requests to
/// its own origin and (when it streams) the streaming URL's origin.
fn csp(connect_to: Option<&str>) -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()));
    let connect = match connect_to {
        Some(o) => format!("'self' {o}"),
        None => "'self'".to_owned(),
    };
    format!("default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; connect-src {connect}; img-src data: https:; base-uri 'none'; form-action 'none'")
}

/// JSON safe inside a `<script>` element.
fn script_json(v: &serde_json::Value) -> String {
    v.to_string().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page for `spec`, posting to `webhook_url` (the streaming URL when it streams).
pub(crate) fn page(spec: &ChatSpec, webhook_url: &str, streaming: bool, load_previous: &str, authentication: &str) -> HttpReply {
    let p = &spec.page;
    let config = json!({
        "webhookUrl": webhook_url,
        "enableStreaming": streaming,
        "loadPreviousSession": load_previous,
        "authentication": authentication,
        "initialMessages": p.initial_messages,
        "showWelcomeScreen": p.show_welcome_screen,
        "allowFileUploads": p.allow_file_uploads,
        "allowedFilesMimeTypes": p.allowed_mime_types,
        "i18n": {"title": p.title, "subtitle": p.subtitle, "inputPlaceholder": p.input_placeholder, "getStarted": p.get_started},
    });
    // custom CSS is the workflow's own styling; it cannot close the style element
    let custom = p.custom_css.as_deref().unwrap_or_default().replace("</", "<\\/");
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{title}</title><style>{STYLE}</style><style>{custom}</style></head>\
<body><div class=\"chat-layout\"><header><h1 id=\"title\"></h1><p id=\"subtitle\"></p></header>\
<div id=\"welcome\" hidden><button id=\"get-started\" type=\"button\"></button></div>\
<div id=\"chat\" class=\"chat-layout\"><div id=\"messages\"></div>\
<div id=\"auth\" hidden><input id=\"auth-user\" type=\"text\" placeholder=\"User\" autocomplete=\"username\"><input id=\"auth-secret\" type=\"password\" placeholder=\"Key or password\" autocomplete=\"current-password\"></div>\
<form id=\"form\"><input id=\"input\" type=\"text\" autocomplete=\"off\"><input id=\"files\" type=\"file\" multiple hidden><button type=\"submit\">Send</button></form></div></div>\
<script id=\"chat-config\" type=\"application/json\">{config}</script><script>{SCRIPT}</script></body></html>\n",
        title = escape(&p.title),
        config = script_json(&config),
    );
    let stream_origin = streaming.then(|| url_origin(webhook_url)).flatten();
    HttpReply {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/html; charset=utf-8".into()),
            ("content-security-policy".into(), csp(stream_origin.as_deref())),
            ("x-content-type-options".into(), "nosniff".into()),
            ("cache-control".into(), "no-store".into()),
        ],
        body: html.into_bytes(),
    }
}

/// `scheme://host[:port]` of a URL.
fn url_origin(u: &str) -> Option<String> {
    let (scheme, rest) = u.split_once("://")?;
    let host = rest.split('/').next()?;
    Some(format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_carries_its_config_safely_and_allows_only_its_script() {
        let node: engine::Node = serde_json::from_value(json!({"name": "Chat", "type": engine::chat::CHAT_TRIGGER_TYPE, "typeVersion": 1.1,
            "parameters": {"public": true, "initialMessages": "Hello </script><script>alert(1)</script>", "options": {"title": "Help & <b>desk</b>"}}}))
        .unwrap();
        let spec = ChatSpec::of(&node).unwrap();
        let reply = page(&spec, "https://stream.example/stream/webhook/abc/chat", true, "memory", "none");
        let html = String::from_utf8(reply.body).unwrap();
        assert!(!html.contains("</script><script>alert(1)"), "the config cannot end its script element");
        assert!(html.contains("\\u003c/script\\u003e"));
        assert!(html.contains("<title>Help &amp; &lt;b&gt;desk&lt;/b&gt;</title>"));
        let csp = reply.headers.iter().find(|(n, _)| n == "content-security-policy").unwrap().1.clone();
        assert!(csp.contains("script-src 'sha256-") && csp.contains("connect-src 'self' https://stream.example"), "{csp}");
        assert!(html.contains("\"enableStreaming\":true"));
    }
}
