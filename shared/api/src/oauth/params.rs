//! Form and query parameters of the OAuth endpoints
//! (`application/x-www-form-urlencoded`).

use super::OAuthError;
use std::collections::HashMap;

/// Parameters by name. OAuth parameters must not repeat (RFC 6749 §3.1,
/// §3.2); the consent form's `scope` checkboxes are the one list, kept in
/// [`Params::scopes`].
#[derive(Debug, Default, Clone)]
pub struct Params {
    values: HashMap<String, String>,
    scope_choices: Vec<String>,
}

/// Largest form or query we parse (real ones are a few hundred bytes).
pub const MAX_FORM: usize = 16 * 1024;

impl Params {
    pub fn parse(encoded: &[u8]) -> Result<Params, OAuthError> {
        Self::parse_with_choices(encoded, false)
    }

    /// The consent form: `scope` may repeat (one per checked box).
    pub fn parse_form_with_choices(encoded: &[u8]) -> Result<Params, OAuthError> {
        Self::parse_with_choices(encoded, true)
    }

    fn parse_with_choices(encoded: &[u8], choices: bool) -> Result<Params, OAuthError> {
        if encoded.len() > MAX_FORM {
            return Err(OAuthError::InvalidRequest(format!("parameters exceed {MAX_FORM} bytes")));
        }
        let mut p = Params::default();
        for (k, v) in url::form_urlencoded::parse(encoded) {
            if choices && k == "scope_choice" {
                p.scope_choices.push(v.into_owned());
                continue;
            }
            if p.values.insert(k.clone().into_owned(), v.into_owned()).is_some() {
                return Err(OAuthError::InvalidRequest(format!("parameter {k} is given more than once")));
            }
        }
        Ok(p)
    }

    /// A parameter; an empty value counts as absent (RFC 6749 §3.1).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    pub fn require(&self, name: &str) -> Result<&str, OAuthError> {
        self.get(name).ok_or_else(|| OAuthError::InvalidRequest(format!("missing parameter {name}")))
    }

    /// The scopes ticked on the consent form.
    pub fn scope_choices(&self) -> &[String] {
        &self.scope_choices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_refused_but_scope_choices_collect() {
        let p = Params::parse(b"grant_type=refresh_token&refresh_token=a%2Bb&scope=").unwrap();
        assert_eq!(p.get("refresh_token"), Some("a+b"));
        assert_eq!(p.get("scope"), None);
        assert!(p.require("code").unwrap_err().to_string().contains("code"));
        assert!(Params::parse(b"code=a&code=b").is_err());
        let p = Params::parse_form_with_choices(b"scope_choice=mcp%3Aread&scope_choice=mcp%3Awrite").unwrap();
        assert_eq!(p.scope_choices(), ["mcp:read", "mcp:write"]);
    }
}
