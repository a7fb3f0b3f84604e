//! The README's configuration table lists every variable the code reads.

use store::config::VARIABLES;
use store::deployment::{QUEUES, TABLES};

#[test]
fn every_variable_is_documented_in_the_readme_table() {
    let readme = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let names = VARIABLES
        .iter()
        .map(|v| v.name)
        .chain(TABLES.iter().map(|t| t.env))
        .chain(QUEUES.iter().map(|q| q.env));
    for name in names {
        assert!(readme.contains(&format!("| `{name}` |")), "README's configuration table lacks {name}");
    }
}
