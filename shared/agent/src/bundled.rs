//! The markdown and knowledge-base files compiled into the binary by
//! `build.rs` (`prompts/`, `skills/`, `knowledge-base/`), as
//! `(path relative to its directory, content)`, sorted by path.

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
