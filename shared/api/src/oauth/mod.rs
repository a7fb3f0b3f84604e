//! The MCP server's OAuth 2.1 authorization server (the `oauth` function):
//! protected resource metadata (RFC 9728) and authorization server metadata
//! (RFC 8414), dynamic client registration (RFC 7591), `/authorize` with
//! PKCE S256 and a consent page, `/token` (authorization code, refresh
//! with rotation) and revocation (RFC 7009). Tokens are bound to the MCP
//! resource (RFC 8707); `auth::authenticate_mcp` checks them on `/mcp`.
//!
//! Access tokens are opaque and looked up (hashed) in DynamoDB, not signed:
//! revocation is immediate, there is no signing key to keep and rotate,
//! and `/mcp` already pays one read per request for API keys. The records
//! live in `store::oauth`; errors take OAuth's JSON form in [`error`].

pub mod authorize;
pub mod client_auth;
pub mod consent;
pub mod error;
pub mod metadata;
pub mod params;
pub mod redirect_uri;
pub mod register;
pub mod revoke;
pub mod token;

pub use error::OAuthError;

use http::HeaderMap;
use store::config::ConfigError;
use store::oauth::Lifetimes;
use store::Config;

/// The authorization server's knobs, parsed once per request from the
/// configuration (and at init, so a malformed value stops the function).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `INSTANCE_AI_PUBLIC_URL`: the issuer and resource origin, if pinned.
    pub public_url: Option<String>,
    pub lifetimes: Lifetimes,
}

impl Settings {
    pub fn from_config(config: &Config) -> Result<Settings, ConfigError> {
        // Already a URL (`Config` parsed it); the issuer must be a bare origin,
        // or clients would look for metadata under a path we do not serve.
        let public_url = match config.public_url.as_deref() {
            None => None,
            Some(v) => {
                let url = url::Url::parse(v).map_err(|e| ConfigError::Malformed {
                    name: "INSTANCE_AI_PUBLIC_URL",
                    reason: format!("not a URL ({e}): {v:?}"),
                })?;
                if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() || url.path() != "/" || url.query().is_some() {
                    return Err(ConfigError::Malformed {
                        name: "INSTANCE_AI_PUBLIC_URL",
                        reason: format!("the OAuth issuer must be an origin like https://mcp.example.com (no path), got {v:?}"),
                    });
                }
                Some(url.origin().ascii_serialization())
            }
        };
        let secs = |name: &'static str, default: u64| -> Result<u64, ConfigError> {
            match config.var(name) {
                None => Ok(default),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(ConfigError::Malformed { name, reason: format!("expected a positive number of seconds, got {v:?}") }),
                },
            }
        };
        Ok(Settings {
            public_url,
            lifetimes: Lifetimes {
                access_secs: secs("INSTANCE_AI_OAUTH_ACCESS_TOKEN_SECS", 900)?,
                refresh_secs: secs("INSTANCE_AI_OAUTH_REFRESH_TOKEN_SECS", 30 * 24 * 3600)?,
            },
        })
    }

    /// The origin clients reach us at: the issuer, and with `/mcp` the resource.
    pub fn origin(&self, headers: &HeaderMap) -> String {
        self.public_url.clone().unwrap_or_else(|| mcp_server::transport::request_origin(headers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|n| if n == "AWS_REGION" { Some("us-east-1".into()) } else { vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()) }).unwrap()
    }

    #[test]
    fn settings_parse_and_name_a_malformed_variable() {
        let s = Settings::from_config(&cfg(&[])).unwrap();
        assert_eq!((s.public_url, s.lifetimes.access_secs, s.lifetimes.refresh_secs), (None, 900, 2_592_000));
        let s = Settings::from_config(&cfg(&[("INSTANCE_AI_PUBLIC_URL", "https://MCP.example.com/"), ("INSTANCE_AI_OAUTH_ACCESS_TOKEN_SECS", "60")])).unwrap();
        assert_eq!(s.public_url.as_deref(), Some("https://mcp.example.com"));
        assert_eq!(s.origin(&HeaderMap::new()), "https://mcp.example.com");
        assert_eq!(s.lifetimes.access_secs, 60);
        for (name, bad) in [("INSTANCE_AI_PUBLIC_URL", "https://x.example/mcp"), ("INSTANCE_AI_OAUTH_REFRESH_TOKEN_SECS", "0")] {
            match Settings::from_config(&cfg(&[(name, bad)])) {
                Err(ConfigError::Malformed { name: n, .. }) => assert_eq!(n, name),
                other => panic!("{name}={bad}: {other:?}"),
            }
        }
    }
}
