//! Prints what the model is given besides the conversation: the system
//! prompt and every tool definition the orchestrator sees, as the JSON a
//! provider request carries, then their sizes on stderr. Pipe stdout into a
//! tokenizer to count tokens.
//!
//! cargo run -p agent --example tool_definitions > definitions.json

fn main() {
    let defs = agent::tools::Registry::standard().definitions(true, false);
    let tools: Vec<serde_json::Value> = defs
        .iter()
        .map(|d| serde_json::json!({"name": d.name, "description": d.description, "input_schema": d.input_schema}))
        .collect();
    let prompt = agent::skills::system_prompt();
    let out = serde_json::json!({"system": prompt, "tools": tools});
    println!("{}", serde_json::to_string(&out).expect("JSON"));
    let mut sizes: Vec<(String, usize)> = tools.iter().map(|t| (t["name"].as_str().unwrap_or_default().to_owned(), t.to_string().len())).collect();
    sizes.sort_by(|a, b| b.1.cmp(&a.1));
    let total: usize = sizes.iter().map(|(_, n)| n).sum();
    eprintln!("system prompt: {} bytes; {} tools: {total} bytes of JSON", prompt.len(), tools.len());
    for (name, n) in sizes {
        eprintln!("  {name:<24} {n:>6} bytes");
    }
}
