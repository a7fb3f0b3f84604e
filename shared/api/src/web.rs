//! The web page's assets, embedded in the binary (`shared/api/web/`): plain
//! ES modules and one stylesheet, no build step. At first use each asset
//! gets a content-hashed name (`app.3f2a9c01be.js`) so it can be cached for
//! a year; a module's imports are rewritten to the hashed names of the
//! modules it imports, which are hashed first (so a change anywhere renames
//! every module that depends on it). `index.html` is the only unhashed file
//! and is never cached. Compressible assets are gzipped once.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::sync::LazyLock;

struct Source {
    name: &'static str,
    content_type: &'static str,
    text: &'static str,
}

macro_rules! source {
    ($name:literal, $ct:expr) => {
        Source { name: $name, content_type: $ct, text: include_str!(concat!("../web/", $name)) }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// In dependency order: a module comes after every module it imports.
const SOURCES: &[Source] = &[
    source!("styles.css", "text/css; charset=utf-8"),
    source!("favicon.svg", "image/svg+xml"),
    source!("markdown.js", JS),
    source!("dom.js", JS),
    source!("format.js", JS),
    source!("attachments.js", JS),
    source!("state.js", JS),
    source!("api.js", JS),
    source!("sse.js", JS),
    source!("credentials.js", JS),
    source!("cards.js", JS),
    source!("render.js", JS),
    source!("app.js", JS),
];

const INDEX: &str = include_str!("../web/index.html");

/// One servable asset.
pub struct Asset {
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// The gzipped body, when that is smaller.
    pub gzip: Option<Vec<u8>>,
    /// A strong validator: the content hash.
    pub etag: String,
}

/// Every asset under its hashed name, and the page that links them.
pub struct Site {
    assets: HashMap<String, Asset>,
    /// Source name → `/assets/<hashed name>`.
    urls: HashMap<&'static str, String>,
}

pub static SITE: LazyLock<Site> = LazyLock::new(Site::build);

fn hashed_name(name: &str, digest: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.{digest}.{ext}"),
        None => format!("{name}.{digest}"),
    }
}

fn gzip(body: &[u8]) -> Option<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(body).ok()?;
    let out = enc.finish().ok()?;
    (out.len() < body.len()).then_some(out)
}

/// HTML-escapes an attribute value.
fn attr(v: &str) -> String {
    v.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}

/// `scheme://host[:port]` of a URL (the CSP's `connect-src` entry).
fn origin_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let end = rest.find('/').map_or(url.len(), |i| url.len() - rest.len() + i);
    Some(&url[..end])
}

impl Site {
    fn build() -> Site {
        let mut assets = HashMap::new();
        let mut urls: HashMap<&'static str, String> = HashMap::new();
        let mut hashed: Vec<(&'static str, String)> = Vec::new();
        for src in SOURCES {
            let mut text = src.text.to_owned();
            if src.content_type == JS {
                for (dep, dep_hashed) in &hashed {
                    for q in ['\'', '"'] {
                        text = text.replace(&format!("{q}./{dep}{q}"), &format!("{q}./{dep_hashed}{q}"));
                    }
                }
            }
            let digest = hex::encode(Sha256::digest(text.as_bytes()));
            let name = hashed_name(src.name, &digest[..10]);
            urls.insert(src.name, format!("/assets/{name}"));
            hashed.push((src.name, name.clone()));
            let body = text.into_bytes();
            let gzip = gzip(&body);
            assets.insert(name, Asset { content_type: src.content_type, body, gzip, etag: format!("\"{}\"", &digest[..32]) });
        }
        Site { assets, urls }
    }

    /// An asset by its hashed file name (the `{asset}` of `/assets/{asset}`).
    pub fn asset(&self, file: &str) -> Option<&Asset> {
        self.assets.get(file)
    }

    /// `/assets/<hashed name>` of a source file.
    pub fn url(&self, name: &str) -> Option<&str> {
        self.urls.get(name).map(String::as_str)
    }

    /// The page. `events_url` is where the SSE endpoint lives when it is not
    /// the page's own origin (the Function URL in AWS).
    pub fn index_html(&self, events_url: Option<&str>) -> String {
        let url = |n: &str| self.url(n).unwrap_or_default().to_owned();
        let preloads: String = SOURCES
            .iter()
            .filter(|s| s.content_type == JS && s.name != "app.js")
            .map(|s| format!("    <link rel=\"modulepreload\" href=\"{}\">\n", url(s.name)))
            .collect();
        INDEX
            .replace("%STYLES%", &url("styles.css"))
            .replace("%FAVICON%", &url("favicon.svg"))
            .replace("%APP%", &url("app.js"))
            .replace("    %PRELOADS%\n", &preloads)
            .replace("%EVENTS_URL%", &attr(events_url.unwrap_or_default()))
    }

    /// The page's Content-Security-Policy: its own scripts and styles only,
    /// no inline code, no frames; connections to its origin and the SSE
    /// endpoint's.
    pub fn csp(events_url: Option<&str>) -> String {
        let connect = match events_url.and_then(origin_of) {
            Some(o) => format!("'self' {o}"),
            None => "'self'".to_owned(),
        };
        format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; \
             connect-src {connect}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_import_points_at_a_hashed_module() {
        let site = &*SITE;
        for src in SOURCES.iter().filter(|s| s.content_type == JS) {
            let file = site.url(src.name).unwrap().trim_start_matches("/assets/");
            let text = std::str::from_utf8(&site.asset(file).unwrap().body).unwrap();
            for line in text.lines().filter(|l| l.trim_start().starts_with("import ")) {
                let spec = line.rsplit_once("from ").map_or(line, |(_, s)| s).trim().trim_end_matches(';');
                let spec = spec.trim_matches(|c| c == '\'' || c == '"').trim_start_matches("./");
                assert!(site.asset(spec).is_some(), "{}: import {spec:?} is not a hashed asset (list it before its importer)", src.name);
            }
        }
    }

    #[test]
    fn the_page_links_hashed_assets_and_the_csp_names_the_events_origin() {
        let site = &*SITE;
        let html = site.index_html(Some("https://abc.lambda-url.us-east-1.on.aws/"));
        assert!(html.contains(site.url("app.js").unwrap()) && html.contains(site.url("styles.css").unwrap()));
        assert!(!html.contains('%'), "a placeholder was left: {html}");
        assert!(html.contains("content=\"https://abc.lambda-url.us-east-1.on.aws/\""));
        let csp = Site::csp(Some("https://abc.lambda-url.us-east-1.on.aws/"));
        assert!(csp.contains("connect-src 'self' https://abc.lambda-url.us-east-1.on.aws;"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        assert!(Site::csp(None).contains("connect-src 'self';"));
        assert!(site.index_html(Some("\"><script>")).contains("&quot;&gt;&lt;script&gt;"));
    }
}
