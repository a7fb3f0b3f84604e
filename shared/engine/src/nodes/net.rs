//! Connections that are not HTTP (databases, mail servers) under the SSRF
//! guard HTTP Request uses: the host is checked against the allow-list and
//! resolved once through the host's resolver, every address is checked, and
//! the client connects to those addresses, never to the name again.

use std::net::SocketAddr;

use crate::error::{EngineError, Result};
use crate::run::Env;

/// The addresses `host:port` may be reached at.
pub(crate) fn checked_addrs(env: &Env, host: &str, port: u16) -> Result<Vec<SocketAddr>> {
    let policy = outbound::Policy { allow_private: env.settings.allow_private_network, allowed_hosts: env.settings.allowed_hosts.clone() };
    match policy.resolve(env.host.resolver.as_ref(), host, port) {
        Ok(ips) => Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, port)).collect()),
        Err(outbound::Refusal::Forbidden(what)) => Err(EngineError::Forbidden(what)),
        Err(outbound::Refusal::Unresolved(h)) => Err(EngineError::node_with("Host not found", format!("{h} has no address"))),
        Err(other) => Err(EngineError::node(other.to_string())),
    }
}

/// How long a connection may still take: `limit`, or less when the
/// execution's deadline comes first.
pub(crate) fn remaining(env: &Env, limit: std::time::Duration) -> std::time::Duration {
    match env.deadline {
        Some(d) => limit.min(d.saturating_duration_since(std::time::Instant::now())),
        None => limit,
    }
}
