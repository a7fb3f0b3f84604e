//! The catalog's first use in a process: the bundled JSON inflated and
//! parsed (node descriptions, then credential types). Prints milliseconds;
//! run it a few times (`cargo bench -p engine --bench catalog`): each run is
//! one cold process.

use std::time::Instant;

fn main() {
    let t = Instant::now();
    let nodes = engine::catalog::all().len();
    let nodes_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let types = engine::catalog::credential_types::credential_types().len();
    let types_ms = t.elapsed().as_secs_f64() * 1e3;
    println!("catalog first use: {nodes} node descriptions {nodes_ms:.1} ms, {types} credential types {types_ms:.1} ms");
}
