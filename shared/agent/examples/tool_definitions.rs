//! Prints what the model is given besides the conversation: the system
//! prompt and the tool definitions of the orchestrator's first model call
//! (the always-loaded tools; deferred ones come through `search_tools` /
//! `load_tool`), as the JSON a provider request carries, then their sizes
//! on stderr, beside what every tool loaded at once would weigh. Pipe
//! stdout into a tokenizer to count tokens; `--all` prints every tool.
//!
//! cargo run -p agent --example tool_definitions > definitions.json

use agent::tools::{Offer, Registry, Toolbox};

fn main() {
    let registry = Registry::standard();
    let offer = Offer { orchestrator: true, ..Offer::default() };
    let every = Offer { attachments: true, ..offer.clone() };
    let toolbox = Toolbox::new(&registry, Vec::new());
    let all: Vec<serde_json::Value> = toolbox
        .available(&every)
        .map(|t| serde_json::json!({"name": t.name(), "description": t.description(), "input_schema": t.input_schema()}))
        .collect();
    let loaded: Vec<serde_json::Value> = registry
        .definitions(&offer)
        .iter()
        .map(|d| serde_json::json!({"name": d.name, "description": d.description, "input_schema": d.input_schema}))
        .collect();
    let tools = if std::env::args().any(|a| a == "--all") { &all } else { &loaded };
    let prompt = agent::skills::system_prompt();
    let out = serde_json::json!({"system": prompt, "tools": tools});
    println!("{}", serde_json::to_string(&out).expect("JSON"));
    let size = |v: &[serde_json::Value]| v.iter().map(|t| t.to_string().len()).sum::<usize>();
    eprintln!(
        "system prompt: {} bytes; first call: {} tools, {} bytes of JSON; every tool loaded: {} tools, {} bytes",
        prompt.len(),
        loaded.len(),
        size(&loaded),
        all.len(),
        size(&all)
    );
    let mut sizes: Vec<(String, usize, bool)> = all
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap_or_default().to_owned();
            let deferred = !agent::tools::deferral::is_always_loaded(&name);
            (name, t.to_string().len(), deferred)
        })
        .collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1));
    for (name, n, deferred) in sizes {
        eprintln!("  {name:<28} {n:>6} bytes{}", if deferred { "  (deferred)" } else { "" });
    }
}
