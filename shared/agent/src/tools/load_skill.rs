//! `load_skill`: returns the full guidance of one skill (`crate::skills`).

use super::{Tool, ToolContext, ToolOutcome};
use crate::skills;
use futures::future::BoxFuture;
use serde_json::{json, Value};

pub struct LoadSkill;

impl Tool for LoadSkill {
    fn name(&self) -> &'static str {
        "load_skill"
    }

    fn description(&self) -> &'static str {
        "Load the full guidance of a skill (listed in the system prompt) before doing the task it covers."
    }

    fn input_schema(&self) -> Value {
        let names: Vec<&str> = skills::all().iter().map(|s| s.name.as_str()).collect();
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "enum": names, "description": "The skill's name"}},
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn run<'a>(&'a self, _ctx: &'a ToolContext<'a>, args: Value) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let name = args["name"].as_str().unwrap_or_default();
            match skills::get(name) {
                Some(s) => ToolOutcome::Done(json!({"name": s.name, "content": s.body})),
                None => ToolOutcome::Failed(format!(
                    "no skill named {name:?}; available: {}",
                    skills::all().iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                )),
            }
        })
    }
}
