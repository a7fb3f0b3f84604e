//! Collects the node descriptions in `src/catalog/nodes/*.json` (one file per
//! node type, so nodes are added without touching a shared list).

use std::fmt::Write;
use std::path::Path;

fn main() {
    let dir = Path::new("src/catalog/nodes");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("src/catalog/nodes exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut out = String::from("/// `(file name, JSON)` of every bundled node description, sorted by file name.\npub(crate) const FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}/{f}", dir.display());
        let path = std::fs::canonicalize(dir.join(f)).expect("node description path");
        writeln!(out, "    ({f:?}, include_str!({:?})),", path.display().to_string()).expect("write to string");
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("catalog_files.rs");
    std::fs::write(dest, out).expect("write catalog_files.rs");
}
