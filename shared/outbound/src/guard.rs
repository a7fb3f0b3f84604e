//! The SSRF guard: which URLs and addresses an outbound request may reach.
//! Private, loopback, link-local and other non-public addresses are refused
//! unless the policy allows them; an allow-list of hosts, when set, is all
//! that is reachable.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// True for addresses a request must not reach by default.
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1])) // carrier-grade NAT
                || (o[0] == 198 && (o[1] == 18 || o[1] == 19)) // benchmarking
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden_ip(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link local
                || (s[0] == 0x64 && s[1] == 0xff9b) // NAT64 can embed private v4
        }
    }
}

/// Where requests may go (`INSTANCE_AI_HTTP_ALLOWED_HOSTS`,
/// `INSTANCE_AI_HTTP_ALLOW_PRIVATE_NETWORK`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Private, loopback and link-local addresses may be reached (only the
    /// allowed hosts when those are set).
    pub allow_private: bool,
    /// If non-empty, the only hosts (names or IP literals) that may be called.
    pub allowed_hosts: Vec<String>,
}

/// Why a URL may not be requested.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("Unsupported URL scheme '{0}'")]
    Scheme(String),
    /// The host is not allowed, or names a non-public address.
    #[error("request to {0} refused: the address is not allowed")]
    Forbidden(String),
    /// The name resolves to no address.
    #[error("the host {0} cannot be found")]
    Unresolved(String),
}

/// The text the guarded resolver's refusal carries, so callers can tell it
/// from other connection errors.
pub const RESOLVE_REFUSAL: &str = "refused: it resolves";

/// `scheme://host:port` of a URL, for messages: the path and query may carry
/// secrets (query-auth keys) that logs and tool output must not show.
pub fn origin(url: &url::Url) -> String {
    match url.origin() {
        o @ url::Origin::Tuple(..) => o.ascii_serialization(),
        url::Origin::Opaque(_) => url.host_str().unwrap_or_default().to_owned(),
    }
}

impl Policy {
    /// Checks the URL as written (scheme, host list, IP literals, `localhost`).
    /// Names are checked again on connect by [`GuardedResolver`].
    pub fn check(&self, url: &url::Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().to_owned()));
        }
        let host = url.host_str().unwrap_or("");
        if !self.allowed_hosts.is_empty() && !self.allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Err(Refusal::Forbidden(origin(url)));
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
            _ => None,
        };
        if let Some(ip) = ip {
            if !self.allow_private && is_forbidden_ip(ip) {
                return Err(Refusal::Forbidden(origin(url)));
            }
        }
        if !self.allow_private && (host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost")) {
            return Err(Refusal::Forbidden(origin(url)));
        }
        Ok(())
    }
}

impl Policy {
    /// The checked addresses of `host` for a connection that is not HTTP (a
    /// database, a mail server): the host list, then every address the name
    /// resolves to. The caller connects to these addresses, never to the
    /// name again, so a second DNS answer cannot slip past the check.
    pub fn resolve(&self, resolver: &dyn Resolver, host: &str, port: u16) -> Result<Vec<IpAddr>, Refusal> {
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let shown = format!("{host}:{port}");
        if !self.allowed_hosts.is_empty() && !self.allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Err(Refusal::Forbidden(shown));
        }
        if !self.allow_private && (host.eq_ignore_ascii_case("localhost") || host.ends_with(".localhost")) {
            return Err(Refusal::Forbidden(shown));
        }
        let ips = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => resolver.resolve(host, port).map_err(|_| Refusal::Unresolved(host.to_owned()))?,
        };
        if ips.is_empty() {
            return Err(Refusal::Unresolved(host.to_owned()));
        }
        if !self.allow_private && ips.iter().any(|ip| is_forbidden_ip(*ip)) {
            return Err(Refusal::Forbidden(shown));
        }
        Ok(ips)
    }
}

/// Name resolution, injectable so tests never use real DNS.
pub trait Resolver: Send + Sync {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>>;
}

/// The system resolver.
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        use std::net::ToSocketAddrs;
        Ok((host, port).to_socket_addrs()?.map(|a| a.ip()).collect())
    }
}

/// Resolver that refuses forbidden addresses; reqwest calls it on connect,
/// so the checked addresses are the ones connected to (no DNS rebinding gap).
pub struct GuardedResolver {
    pub inner: Arc<dyn Resolver>,
    pub allow_private: bool,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let inner = self.inner.clone();
        let allow = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let ips = inner.resolve(&host, 0).map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            if ips.is_empty() {
                return Err(format!("no addresses for {host}").into());
            }
            if !allow {
                if let Some(bad) = ips.iter().find(|ip| is_forbidden_ip(**ip)) {
                    return Err(format!("request to {host} {RESOLVE_REFUSAL} to the non-public address {bad}").into());
                }
            }
            let addrs: Vec<SocketAddr> = ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn private_and_loopback_literals_are_refused_by_default() {
        let p = Policy::default();
        for u in ["http://127.0.0.1/", "http://10.0.0.1/", "http://169.254.169.254/latest", "http://[::1]/", "http://localhost:8080/", "http://[::ffff:192.168.0.1]/"] {
            assert!(matches!(p.check(&url(u)), Err(Refusal::Forbidden(_))), "{u}");
        }
        assert_eq!(p.check(&url("https://example.com/a")), Ok(()));
        assert_eq!(p.check(&url("file:///etc/passwd")), Err(Refusal::Scheme("file".into())));
    }

    struct Fixed(Vec<IpAddr>);
    impl Resolver for Fixed {
        fn resolve(&self, _host: &str, _port: u16) -> std::io::Result<Vec<IpAddr>> {
            Ok(self.0.clone())
        }
    }

    #[test]
    fn hosts_of_other_protocols_are_checked_at_every_address() {
        let public = Fixed(vec!["93.184.216.34".parse().unwrap()]);
        let rebinding = Fixed(vec!["93.184.216.34".parse().unwrap(), "10.0.0.5".parse().unwrap()]);
        let p = Policy::default();
        assert_eq!(p.resolve(&public, "db.example.com", 5432), Ok(vec!["93.184.216.34".parse().unwrap()]));
        assert_eq!(p.resolve(&rebinding, "db.example.com", 5432), Err(Refusal::Forbidden("db.example.com:5432".into())));
        assert!(p.resolve(&public, "127.0.0.1", 25).is_err());
        assert!(p.resolve(&public, "localhost", 25).is_err());
        assert!(matches!(p.resolve(&Fixed(vec![]), "nowhere.example", 25), Err(Refusal::Unresolved(_))));
        let local = Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] };
        assert_eq!(local.resolve(&public, "127.0.0.1", 25), Ok(vec!["127.0.0.1".parse().unwrap()]));
        assert!(local.resolve(&public, "db.example.com", 25).is_err());
    }

    #[test]
    fn an_allow_list_is_all_that_is_reachable() {
        let p = Policy { allow_private: true, allowed_hosts: vec!["127.0.0.1".into()] };
        assert_eq!(p.check(&url("http://127.0.0.1:9/x")), Ok(()));
        assert!(p.check(&url("http://10.0.0.1/")).is_err());
        assert!(p.check(&url("https://example.com/")).is_err());
    }
}
