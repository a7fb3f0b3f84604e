//! What an OAuth token may do on the MCP server: three scopes, each a set
//! of tools (the `tools!` table names each tool's scope). An API key
//! carries them all.

use std::fmt;

/// One scope, as OAuth clients request it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// search and get tools: workflows, executions, credentials (metadata), nodes, data tables
    Read,
    /// run workflows: `execute_workflow`, `test_workflow`
    Execute,
    /// create, update, archive, publish workflows; create and change data tables and rows
    Write,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Execute, Scope::Write];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "mcp:read",
            Scope::Execute => "mcp:execute",
            Scope::Write => "mcp:write",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|sc| sc.as_str() == s)
    }

    /// What the consent page tells the person.
    pub fn description(self) -> &'static str {
        match self {
            Scope::Read => "Read your workflows, executions, projects, folders, data tables and credential names (never secrets)",
            Scope::Execute => "Run and test your workflows",
            Scope::Write => "Create, change, publish and archive workflows; create and change data tables and their rows",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub const fn none() -> Scopes {
        Scopes(0)
    }

    /// Everything: what an API key may do.
    pub fn all() -> Scopes {
        Scope::ALL.into_iter().collect()
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn insert(&mut self, scope: Scope) {
        self.0 |= scope.bit();
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// Parses a space-separated scope string (RFC 6749 §3.3). Unknown
    /// scopes are returned as the error, so the caller can name them.
    pub fn parse(s: &str) -> Result<Scopes, String> {
        let mut out = Scopes::none();
        for part in s.split(' ').filter(|p| !p.is_empty()) {
            out.insert(Scope::parse(part).ok_or_else(|| part.to_owned())?);
        }
        Ok(out)
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        let mut out = Scopes::none();
        for s in iter {
            out.insert(s);
        }
        out
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<&str> = self.iter().map(Scope::as_str).collect();
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_space_separated_scopes() {
        let s = Scopes::parse("mcp:write  mcp:read").unwrap();
        assert!(s.contains(Scope::Read) && s.contains(Scope::Write) && !s.contains(Scope::Execute));
        assert_eq!(s.to_string(), "mcp:read mcp:write");
        assert_eq!(Scopes::parse("mcp:read admin").unwrap_err(), "admin");
        assert!(Scopes::parse("").unwrap().is_empty());
        assert_eq!(Scopes::all().to_string(), "mcp:read mcp:execute mcp:write");
    }
}
