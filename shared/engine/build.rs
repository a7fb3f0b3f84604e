//! Collects the node descriptions in `src/catalog/nodes/*.json` and the
//! credential types in `src/catalog/credentials/*.json` (one file each, so
//! nodes and credential types are added without touching a shared list).

use std::fmt::Write;
use std::path::Path;

/// `(file name, JSON)` of every `.json` file in `dir`, sorted by file name, as a Rust const.
fn collect(dir: &str, constant: &str, what: &str, out: &mut String) {
    let dir = Path::new(dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} exists: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    writeln!(out, "/// `(file name, JSON)` of every bundled {what}, sorted by file name.\npub(crate) const {constant}: &[(&str, &str)] = &[").expect("write to string");
    for f in &files {
        println!("cargo:rerun-if-changed={}/{f}", dir.display());
        // Resolved when the crate compiles: the target dir is shared by checkouts at
        // different paths, and this script's output may be reused across them.
        let from_manifest = format!("/{}/{f}", dir.display());
        writeln!(out, "    ({f:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), {from_manifest:?}))),").expect("write to string");
    }
    out.push_str("];\n");
}

fn main() {
    // Checkouts at different paths that share a target dir share this
    // script's OUT_DIR too, and a checkout whose files are older than the
    // last run (anywhere) does not run it again: so the output names no
    // path (each entry resolves against the compiling checkout, above) and
    // is the same for every checkout of the same files.
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let mut nodes = String::new();
    collect("src/catalog/nodes", "FILES", "node description", &mut nodes);
    std::fs::write(Path::new(&out_dir).join("catalog_files.rs"), nodes).expect("write catalog_files.rs");
    let mut credentials = String::new();
    collect("src/catalog/credentials", "CREDENTIAL_FILES", "credential type", &mut credentials);
    std::fs::write(Path::new(&out_dir).join("credential_files.rs"), credentials).expect("write credential_files.rs");
}
