//! The admin approval policy: for each gated action, whether the agent must
//! ask (`require_approval`, the default), may act without asking
//! (`always_allow`), or may not act at all (`blocked`: a structured refusal,
//! nothing suspends). Read once from `INSTANCE_AI_APPROVAL_POLICY`.
//!
//! Actions are named `<tool>.<action>` after the tool call they gate, except
//! where the spec names a shared one: `runWorkflow` covers every real
//! execution (`executions` run and run-step, `nodes` execute).

use std::collections::HashMap;
use store::config::ConfigError;

/// Every action a gate may name; the policy variable accepts only these (a
/// typo must not silently leave an action ungoverned). Tools add theirs here.
pub const ACTIONS: &[&str] = &[
    "runWorkflow",
    "build-workflow",
    "workflows.delete",
    "workflows.publish",
    "workflows.unpublish",
    "workflows.restore-version",
    "workflows.setup",
    "credentials.delete",
    "credentials.setup",
    "data-tables.create",
    "data-tables.delete",
    "data-tables.add-column",
    "data-tables.delete-column",
    "data-tables.rename-column",
    "data-tables.insert-rows",
    "data-tables.update-rows",
    "data-tables.delete-rows",
    "workspace.cleanup-test-executions",
    "workspace.create-folder",
    "workspace.delete-folder",
    "workspace.move-workflow-to-folder",
    "workspace.tag-workflow",
    "research.fetch-url",
    "research.web-search",
    "mcp-servers.connect",
    "executeMcpTool",
    "eval-config.create",
    "eval-config.update",
    "eval-config.delete",
    "save_user_preference",
];

pub const VARIABLE: &str = "INSTANCE_AI_APPROVAL_POLICY";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    RequireApproval,
    AlwaysAllow,
    Blocked,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "require_approval" => Mode::RequireApproval,
            "always_allow" => Mode::AlwaysAllow,
            "blocked" => Mode::Blocked,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    default: Mode,
    per_action: HashMap<String, Mode>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy { default: Mode::RequireApproval, per_action: HashMap::new() }
    }
}

impl Policy {
    /// Parses `action=mode,action=mode,*=mode`.
    pub fn parse(text: Option<&str>) -> Result<Policy, ConfigError> {
        let mut policy = Policy::default();
        let malformed = |reason: String| ConfigError::Malformed { name: VARIABLE, reason };
        for entry in text.unwrap_or_default().split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (action, mode) = entry
                .split_once('=')
                .ok_or_else(|| malformed(format!("{entry:?} is not `action=mode`")))?;
            let (action, mode) = (action.trim(), mode.trim());
            let mode = Mode::parse(mode).ok_or_else(|| {
                malformed(format!("{mode:?} (for {action}) is not require_approval, always_allow or blocked"))
            })?;
            if action == "*" {
                policy.default = mode;
            } else if ACTIONS.contains(&action) {
                policy.per_action.insert(action.to_owned(), mode);
            } else {
                return Err(malformed(format!("unknown action {action:?}; known actions: {}", ACTIONS.join(", "))));
            }
        }
        Ok(policy)
    }

    pub fn mode(&self, action: &str) -> Mode {
        self.per_action.get(action).copied().unwrap_or(self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_actions_and_a_default() {
        let p = Policy::parse(Some("workflows.publish=blocked, runWorkflow=always_allow")).unwrap();
        assert_eq!(p.mode("workflows.publish"), Mode::Blocked);
        assert_eq!(p.mode("runWorkflow"), Mode::AlwaysAllow);
        assert_eq!(p.mode("workflows.delete"), Mode::RequireApproval);
        let p = Policy::parse(Some("*=always_allow,workflows.delete=require_approval")).unwrap();
        assert_eq!(p.mode("workflows.publish"), Mode::AlwaysAllow);
        assert_eq!(p.mode("workflows.delete"), Mode::RequireApproval);
        assert_eq!(Policy::parse(None).unwrap(), Policy::default());
    }

    #[test]
    fn refuses_what_it_cannot_read_naming_the_variable() {
        for bad in ["workflows.publish", "workflows.publish=maybe", "workflow.publish=blocked"] {
            let e = Policy::parse(Some(bad)).unwrap_err().to_string();
            assert!(e.contains(VARIABLE), "{e}");
        }
    }
}
