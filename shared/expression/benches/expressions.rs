//! Prints evaluations per second for the native fast path and for QuickJS.
//! Run with `cargo bench -p expression`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use expression::{CodeMode, Evaluator, Limits, StaticData};
use serde_json::json;

/// CPU time of this thread (user + system), so figures hold on a busy
/// machine; falls back to wall time where /proc is unavailable.
fn cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn rate(label: &str, mut f: impl FnMut(usize)) {
    // warm up caches (parsed templates, compiled functions)
    for i in 0..100 {
        f(i);
    }
    let mut n = 0usize;
    let start = Instant::now();
    let cpu0 = cpu_secs();
    while start.elapsed() < Duration::from_millis(1500) {
        for _ in 0..100 {
            f(n);
            n += 1;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let secs = match (cpu0, cpu_secs()) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => wall,
    };
    println!("{label:<52} {:>12.0} evals/s  ({:.2} µs each, CPU time)", n as f64 / secs, secs * 1e6 / n as f64);
}

fn main() {
    let t = Instant::now();
    let mut ev = Evaluator::new(Limits::default()).expect("evaluator");
    println!("{:<52} {:>12.1} ms", "Evaluator::new, first (compiles Luxon + prelude)", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let n = 20;
    for _ in 0..n {
        black_box(Evaluator::new(Limits::default()).expect("evaluator"));
    }
    println!("{:<52} {:>12.1} ms", "Evaluator::new, later (loads cached bytecode)", t.elapsed().as_secs_f64() * 1e3 / n as f64);

    let items: Vec<StaticData> = (0..1000)
        .map(|i| StaticData::from_json(json!({"id": i, "name": format!("user{i}"), "score": i % 100, "tags": ["a", "b"], "doubled": (i % 100) * 2})))
        .collect();
    let d = |i: usize| &items[i % items.len()];

    rate("fast  ={{ $json.score * 2 }}", |i| {
        black_box(ev.evaluate("={{ $json.score * 2 }}", d(i)).expect("eval"));
    });
    rate("fast  ={{ $json.doubled }}", |i| {
        black_box(ev.evaluate("={{ $json.doubled }}", d(i)).expect("eval"));
    });
    rate("fast  =Hi {{ $json.name }} ({{ $json.score > 50 }})", |i| {
        black_box(ev.evaluate("=Hi {{ $json.name }} ({{ $json.score > 50 }})", d(i)).expect("eval"));
    });
    rate("js    ={{ $json.score * 2 }} (fast path off)", |i| {
        black_box(ev.evaluate_js("={{ $json.score * 2 }}", d(i)).expect("eval"));
    });
    rate("js    ={{ $json.name.toUpperCase() }}", |i| {
        black_box(ev.evaluate("={{ $json.name.toUpperCase() }}", d(i)).expect("eval"));
    });
    rate("js    ={{ $json.tags.includes('a') && $json.id > 3 }}", |i| {
        black_box(ev.evaluate("={{ $json.tags.includes('a') && $json.id > 3 }}", d(i)).expect("eval"));
    });
    rate("js    ={{ [1,2,3].sum() + $json.score.round(1) }}", |i| {
        black_box(ev.evaluate("={{ [1,2,3].sum() + $json.score.round(1) }}", d(i)).expect("eval"));
    });
    rate("js    ={{ $now.plus(1, 'day').toISODate() }}", |i| {
        black_box(ev.evaluate("={{ $now.plus(1, 'day').toISODate() }}", d(i)).expect("eval"));
    });
    if std::env::var_os("BENCH_DATES").is_some() {
        for e in ["={{ $now }}", "={{ DateTime.now().year }}", "={{ DateTime.fromMillis(0).year }}", "={{ DateTime.fromMillis(0).plus({days: 1}).year }}", "={{ DateTime.fromMillis(0).toISODate() }}", "={{ Duration.fromObject({days: 1}).days }}"] {
            rate(&format!("js    {e}"), |i| {
                black_box(ev.evaluate(e, d(i)).expect("eval"));
            });
        }
    }
    rate("code  each item: return {json: {x: $json.score + 1}}", |i| {
        black_box(ev.run_code("return {json: {x: $json.score + 1}}", CodeMode::EachItem, d(i)).expect("code"));
    });
    let gen = "const N = 100000;\nconst out = new Array(N);\nfor (let i = 0; i < N; i++) {\n  out[i] = { json: { id: i, name: 'user' + i, score: i % 100, tags: ['a', 'b'] } };\n}\nreturn out;";
    for _ in 0..2 {
        let (t, c) = (Instant::now(), cpu_secs());
        let out = ev.run_code(gen, CodeMode::AllItems, &StaticData::from_json(json!({}))).expect("code");
        black_box(out);
        let cpu = c.zip(cpu_secs()).map(|(a, b)| (b - a) * 1e3).unwrap_or(f64::NAN);
        println!("{:<52} {:>9.0} ms CPU ({:.0} ms wall)", "code  bench generator, 100k items", cpu, t.elapsed().as_secs_f64() * 1e3);
    }
    let all = StaticData::new((0..1000).map(|i| json!({"score": i})).collect());
    let t = Instant::now();
    let out = ev
        .run_code("return $input.all().map(i => ({json: {d: i.json.score * 2}}))", CodeMode::AllItems, &all)
        .expect("code");
    black_box(out);
    println!("{:<52} {:>12.2} ms", "code  all items, map over 1000 items", t.elapsed().as_secs_f64() * 1e3);
}
