//! The catalog's first use in a process, in the order a cold function meets
//! it: a run's version check (the bundle's index only), one description
//! (the bundle inflated, one file parsed), a second one, every description
//! (what search and listing need), the credential types. Prints milliseconds;
//! run it a few times (`cargo bench -p engine --bench catalog`): each run is
//! one cold process.

use std::time::Instant;

fn ms<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64() * 1e3)
}

fn main() {
    use engine::catalog;
    let (v, versions_ms) = ms(|| catalog::versions("n8n-nodes-base.set").map_or(0, <[f64]>::len));
    let (_, first_ms) = ms(|| catalog::describe_exact("n8n-nodes-base.set").is_some());
    let (_, second_ms) = ms(|| catalog::describe_exact("n8n-nodes-base.httpRequest").is_some());
    let (nodes, all_ms) = ms(|| catalog::all().len());
    let (types, types_ms) = ms(|| catalog::credential_types::credential_types().len());
    println!(
        "catalog first use: versions of Set ({v}) {versions_ms:.3} ms; Set's description {first_ms:.1} ms, HTTP Request's {second_ms:.1} ms; all {nodes} descriptions {all_ms:.1} ms; {types} credential types {types_ms:.1} ms"
    );
}
