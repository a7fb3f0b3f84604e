//! Bundles the node descriptions in `src/catalog/nodes/*.json` and the
//! credential types in `src/catalog/credentials/*.json` (one file each, so
//! nodes and credential types are added without touching a shared list).
//!
//! Each kind is one blob in `OUT_DIR`, every file deflated on its own, with a
//! Rust index of the files (`catalog::Bundle`). Deflated, the ~1 MB of JSON
//! takes ~150 KB in each function that links the catalog (#21: binary size).
//! The index names each file's type and versions, so finding a description
//! inflates and parses only its file, and checking a version none (one blob
//! deflated whole is 33 KB smaller, but costs ~7 ms to inflate before the
//! first description can be read).
//!
//! Checkouts at different paths that share a target dir share `OUT_DIR`: a
//! checkout whose files are older than the last run (anywhere) does not run
//! this again. The catalog tests compare the blob with the checkout's files,
//! so a stale blob fails them instead of passing unnoticed.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Deflates every `.json` file in `dir` (sorted by file name) into
/// `OUT_DIR/<blob>`, one after another, and writes `pub(crate) const
/// <constant>: Bundle` naming each file's place in the blob, its length
/// inflated, its `name` and its `version`s to `OUT_DIR/<index>`.
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
    let mut blob_bytes = Vec::new();
    let mut rs = format!("/// Every bundled {what}: the files deflated one after another, and where each is.\npub(crate) const {constant}: crate::catalog::Bundle = crate::catalog::Bundle {{\n    blob: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{blob}\")),\n    files: &[\n");
    for f in &files {
        let path = dir.join(f);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{} is readable: {e}", path.display()));
        let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        deflate.write_all(&text).expect("deflate to memory");
        let deflated = deflate.finish().expect("deflate to memory");
        let at = blob_bytes.len();
        blob_bytes.extend_from_slice(&deflated);
        let json: serde_json::Value = serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{} is JSON: {e}", path.display()));
        let name = json.get("name").and_then(|n| n.as_str()).unwrap_or_else(|| panic!("{} has a name", path.display()));
        let versions: Vec<String> = match json.get("version") {
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_f64()).map(|v| format!("{v:?}")).collect(),
            Some(v) => v.as_f64().map(|v| format!("{v:?}")).into_iter().collect(),
            None => vec![],
        };
        writeln!(rs, "        crate::catalog::BundledFile {{ file: {f:?}, deflated: {at}..{}, len: {}, name: {name:?}, versions: &[{}] }},", blob_bytes.len(), text.len(), versions.join(", ")).expect("write to string");
    }
    rs.push_str("    ],\n};\n");
    std::fs::write(Path::new(&out_dir).join(blob), blob_bytes).unwrap_or_else(|e| panic!("write {blob}: {e}"));
    std::fs::write(Path::new(&out_dir).join(index), rs).unwrap_or_else(|e| panic!("write {index}: {e}"));
}

fn main() {
    bundle("src/catalog/nodes", "node description", "NODES", "catalog_nodes.deflate", "catalog_files.rs");
    bundle("src/catalog/credentials", "credential type", "CREDENTIALS", "credential_types.deflate", "credential_files.rs");
}
