//! Shared by the MCP end-to-end tests: running a Python client script of
//! `tests/mcp/` (with `$INSTANCE_AI_PYTHON`, default `python3`, which must
//! have `mcp` installed) and reading the JSON summary it prints last.

use serde_json::Value;

/// Runs `tests/mcp/<script>` with `env`; panics with its output unless it
/// succeeds, and returns its last JSON line.
pub async fn run_client_script(script: &str, env: &[(&str, String)]) -> Value {
    let python = std::env::var("INSTANCE_AI_PYTHON").unwrap_or_else(|_| "python3".into());
    let path = format!("{}/mcp/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new(&python)
        .arg(&path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .await
        .unwrap_or_else(|e| panic!("cannot run {python}: {e} (set INSTANCE_AI_PYTHON to a python with `mcp` installed)"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    stdout.lines().rev().find_map(|l| serde_json::from_str(l).ok()).expect("a JSON summary line")
}
