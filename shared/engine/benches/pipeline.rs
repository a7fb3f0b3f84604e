//! Benchmark: runs bench/pipeline-{1k,10k,100k}.json (the workflow n8n was
//! timed on) and prints items/s (engine run time only), peak memory (VmHWM of
//! a fresh child process per size) and expression evaluations per second.
//!
//! `cargo bench -p engine --bench pipeline` (BENCH_DIR overrides the folder).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use engine::{Engine, EngineSettings, ExecutionStatus, Graph, Host, RunOptions};

// The allocator the Lambda functions run with (declared in the api crate,
// which every function links): the bench must time what Lambda runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench_dir() -> PathBuf {
    std::env::var("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench"))
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0)
}

/// Child mode: one run of one file, one result line.
fn run_one(path: &Path, lean: bool) {
    let text = std::fs::read_to_string(path).expect("read bench workflow");
    let json: serde_json::Value = serde_json::from_str(&text).expect("parse bench workflow");
    let graph = Graph::from_json(&json).expect("valid workflow");
    let engine = Engine::new(EngineSettings { lean_run_data: lean, ..Default::default() }, Host::default());
    let t0 = Instant::now();
    let (state, stats) = engine.run(&graph, RunOptions::default()).expect("run");
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(state.status, ExecutionStatus::Success, "{:?}", state.error);
    let n = state.node_output("NoOp", 0).or_else(|| state.last_node_executed.as_deref().and_then(|l| state.node_output(l, 0))).map(|i| i.len()).unwrap_or(0);
    if std::env::var("BENCH_VERBOSE").is_ok() {
        for (name, runs) in &state.run_data {
            for r in runs {
                eprintln!("  {name:<14} {:>6} ms  {} items", r.execution_time, r.output(0).map(|o| o.len()).unwrap_or(0));
            }
        }
    }
    let hwm = vm_hwm_kb();
    println!(
        "RESULT items={n} secs={secs:.4} items_per_s={:.0} evals={} evals_per_s={:.0} peak_mb={:.1}",
        n as f64 / secs,
        stats.expression_evaluations,
        stats.expression_evaluations as f64 / secs,
        hwm as f64 / 1024.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        if let Some(p) = args.get(i + 1) {
            run_one(Path::new(p), args.iter().any(|a| a == "--lean"));
            return;
        }
    }
    let exe = std::env::current_exe().expect("own path");
    println!("{:<14} {:>10} {:>12} {:>14} {:>16} {:>10}", "size/run data", "items", "run s", "items/s", "expr evals/s", "peak MB");
    for (size, lean) in [("1k", false), ("10k", false), ("100k", false), ("1k", true), ("10k", true), ("100k", true)] {
        let label = format!("{size}/{}", if lean { "lean" } else { "full" });
        let path = bench_dir().join(format!("pipeline-{size}.json"));
        if !path.exists() {
            println!("{size:<8} missing {}", path.display());
            continue;
        }
        let mut cmd = Command::new(&exe);
        cmd.arg("--one").arg(&path);
        if lean {
            cmd.arg("--lean");
        }
        let out = cmd.output().expect("spawn child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let Some(line) = stdout.lines().find(|l| l.starts_with("RESULT")) else {
            println!("{label:<14} failed: {}", String::from_utf8_lossy(&out.stderr));
            continue;
        };
        let field = |k: &str| line.split_whitespace().find_map(|f| f.strip_prefix(&format!("{k}="))).unwrap_or("?").to_string();
        println!(
            "{label:<14} {:>10} {:>12} {:>14} {:>16} {:>10}",
            field("items"),
            field("secs"),
            field("items_per_s"),
            field("evals_per_s"),
            field("peak_mb")
        );
    }
}
