//! Bundles the node descriptions in `src/catalog/nodes/*.json` and the
//! credential types in `src/catalog/credentials/*.json` (one file each, so
//! nodes and credential types are added without touching a shared list).
//!
//! Each kind is one deflated blob in `OUT_DIR` with a Rust index of its files
//! (`catalog::bundle` inflates it on first use). Deflated, the ~1 MB of JSON
//! takes ~120 KB in each function that links the catalog (#21: binary size).
//!
//! Checkouts at different paths that share a target dir share `OUT_DIR`: a
//! checkout whose files are older than the last run (anywhere) does not run
//! this again. The catalog tests compare the blob with the checkout's files,
//! so a stale blob fails them instead of passing unnoticed.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Deflates every `.json` file in `dir` (sorted by file name) into
/// `OUT_DIR/<blob>`, and writes `pub(crate) const <constant>: Bundle` naming
/// each file's length in the inflated text to `OUT_DIR/<index>`.
fn bundle(dir: &str, what: &str, constant: &str, blob: &str, index: &str) {
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let dir = Path::new(dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} exists: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    files.sort();
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    let mut rs = format!("/// Every bundled {what}: the deflated text of all files, and each file's name and length in it.\npub(crate) const {constant}: crate::catalog::Bundle = crate::catalog::Bundle {{\n    deflated: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{blob}\")),\n    files: &[\n");
    for f in &files {
        let path = dir.join(f);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{} is readable: {e}", path.display()));
        deflate.write_all(&text).expect("deflate to memory");
        writeln!(rs, "        ({f:?}, {}),", text.len()).expect("write to string");
    }
    rs.push_str("    ],\n};\n");
    let deflated = deflate.finish().expect("deflate to memory");
    std::fs::write(Path::new(&out_dir).join(blob), deflated).unwrap_or_else(|e| panic!("write {blob}: {e}"));
    std::fs::write(Path::new(&out_dir).join(index), rs).unwrap_or_else(|e| panic!("write {index}: {e}"));
}

fn main() {
    bundle("src/catalog/nodes", "node description", "NODES", "catalog_nodes.deflate", "catalog_files.rs");
    bundle("src/catalog/credentials", "credential type", "CREDENTIALS", "credential_types.deflate", "credential_files.rs");
}
