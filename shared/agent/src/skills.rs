//! The system prompt and the skills, written as markdown in `prompts/` and
//! `skills/` and compiled in. The prompt lists every skill by name and
//! description; the model loads a skill's full text with `load_skill` when
//! a task needs it (the spec's "loads the `workflow-builder` skill"), so the
//! guidance costs tokens only in runs that use it.

use crate::bundled::{PROMPTS, SKILLS};
use std::sync::LazyLock;

/// One skill: `skills/<name>.md` with a `name`/`description` front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The markdown after the front matter.
    pub body: String,
}

/// Splits `---\nkey: value\n---\nbody`; `None` without front matter.
fn parse(text: &str) -> Option<Skill> {
    let rest = text.strip_prefix("---\n")?;
    let (head, body) = rest.split_once("\n---\n")?;
    let field = |key: &str| {
        head.lines().find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(':')).map(|v| v.trim().to_owned()))
    };
    Some(Skill { name: field("name")?, description: field("description")?, body: body.trim_start().to_owned() })
}

static ALL: LazyLock<Vec<Skill>> = LazyLock::new(|| {
    SKILLS
        .iter()
        .filter(|(path, _)| path.ends_with(".md"))
        .map(|(path, text)| parse(text).unwrap_or_else(|| panic!("skills/{path} needs a name/description front matter")))
        .collect()
});

pub fn all() -> &'static [Skill] {
    &ALL
}

pub fn get(name: &str) -> Option<&'static Skill> {
    ALL.iter().find(|s| s.name == name)
}

/// `prompts/system.md` followed by the list of skills.
pub fn system_prompt() -> String {
    let base = PROMPTS.iter().find(|(p, _)| *p == "system.md").map(|(_, t)| *t).unwrap_or_default();
    let mut out = base.trim_end().to_owned();
    out.push_str("\n\nSkills (call `load_skill` with the name before a task the skill covers):\n");
    for s in all() {
        out.push_str(&format!("- {}: {}\n", s.name, s.description));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_skill_parses_and_the_prompt_lists_them() {
        let names: Vec<&str> = all().iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"workflow-builder") && names.contains(&"debugging-executions"), "{names:?}");
        for s in all() {
            assert!(!s.description.is_empty() && s.body.starts_with('#'), "{}", s.name);
        }
        let prompt = system_prompt();
        assert!(prompt.contains("untrusted_data"), "the prompt tells the model how outside data is marked");
        for s in all() {
            assert!(prompt.contains(&format!("- {}: {}", s.name, s.description)));
        }
    }

    #[test]
    fn front_matter_is_required() {
        assert!(parse("# no front matter").is_none());
        let s = parse("---\nname: x\ndescription: does x\n---\n# X\nbody").unwrap();
        assert_eq!((s.name.as_str(), s.description.as_str(), s.body.as_str()), ("x", "does x", "# X\nbody"));
    }
}
