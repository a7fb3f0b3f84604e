//! Which redirect URIs a client may register and how an authorization
//! request's URI must match one (OAuth 2.1 §2.3.1, RFC 8252 §7.3 and §8.3):
//! `https` anywhere, or `http` on a loopback address for native apps,
//! whose port may change from one request to the next. No fragments, no
//! custom schemes.

use url::{Host, Url};

/// Checks a URI offered at registration; the error says what is wrong.
pub fn check(uri: &str) -> Result<Url, String> {
    if uri.len() > 2000 {
        return Err("a redirect URI must be at most 2000 characters".into());
    }
    let url = Url::parse(uri).map_err(|e| format!("redirect URI {uri:?} is not an absolute URL ({e})"))?;
    if url.fragment().is_some() {
        return Err(format!("redirect URI {uri:?} must not have a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("redirect URI {uri:?} must not carry credentials"));
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        _ => Err(format!(
            "redirect URI {uri:?} must use https, or http on a loopback address (127.0.0.1, [::1] or localhost) for apps on the user's machine"
        )),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Whether `requested` (from an authorization request) is `registered`:
/// the same string, or for loopback `http` URIs the same but for the port.
pub fn matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Ok(mut a), Ok(mut b)) = (Url::parse(registered), Url::parse(requested)) else { return false };
    if a.scheme() != "http" || b.scheme() != "http" || !is_loopback(&a) || !is_loopback(&b) {
        return false;
    }
    // Ports are the only thing allowed to differ.
    if a.set_port(None).is_err() || b.set_port(None).is_err() {
        return false;
    }
    a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_accepts_https_and_loopback_only() {
        for ok in ["https://claude.ai/api/mcp/auth_callback", "http://127.0.0.1:33418/callback", "http://localhost:8080/cb", "http://[::1]/cb"] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("http://example.com/cb", "https"),
            ("https://example.com/cb#frag", "fragment"),
            ("com.example.app:/callback", "https"),
            ("javascript:alert(1)", "https"),
            ("/relative", "absolute"),
            ("https://user:pw@example.com/cb", "credentials"),
            ("http://127.0.0.1.evil.example/cb", "https"),
        ] {
            let err = check(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn loopback_ports_may_vary_nothing_else() {
        assert!(matches("https://app.example/cb", "https://app.example/cb"));
        assert!(!matches("https://app.example/cb", "https://app.example/cb2"));
        assert!(!matches("https://app.example:8443/cb", "https://app.example:9443/cb"));
        assert!(matches("http://127.0.0.1:1000/callback", "http://127.0.0.1:2000/callback"));
        assert!(matches("http://127.0.0.1/callback", "http://127.0.0.1:2000/callback"));
        assert!(!matches("http://127.0.0.1:1000/callback", "http://127.0.0.1:1000/other"));
        assert!(!matches("http://127.0.0.1:1000/callback", "http://localhost:1000/callback"));
        assert!(!matches("http://127.0.0.1:1000/cb", "http://127.0.0.1:1000/cb?x=1"));
    }
}
