//! Node catalog: each implemented node's description as data (properties,
//! defaults, options, displayOptions, credentials, inputs/outputs), with
//! list / describe / search and TypeScript type generation; the credential
//! types nodes accept ([`credential_types`]).

pub mod credential_types;
mod typescript;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use typescript::typescript;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeProperty {
    pub display_name: String,
    pub name: String,
    #[serde(rename = "type")]
    pub prop_type: String,
    #[serde(default)]
    pub default: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Option values (`{name, value}`), or nested properties for collections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_options: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_options: Option<Value>,
    /// A resource locator's modes (`list` with its `searchListMethod`, `id`, `url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Value>,
    /// How a declarative node sends this property (n8n's `routing`: `request`,
    /// `send`, `output`, `operations`); run by [`crate::declarative`]. Not shown
    /// to agents: it is how the node works, not what to set.
    #[serde(default, skip_serializing)]
    pub routing: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeDescription {
    /// Full type name, e.g. `n8n-nodes-base.set`.
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub group: Vec<String>,
    /// One version or a list of supported versions.
    pub version: Value,
    pub defaults: Value,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_names: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_outputs: Option<String>,
    pub properties: Vec<NodeProperty>,
    #[serde(default)]
    pub credentials: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex: Option<Value>,
    /// Guidance for an agent building with the node (`{message}`), shown as
    /// `@builderHint` in search results and type definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder_hint: Option<Value>,
    /// A declarative service node's request defaults (n8n's `requestDefaults`:
    /// `baseURL`, `method`, `headers`, `qs`); its presence makes the node run on
    /// [`crate::declarative`].
    #[serde(default, skip_serializing)]
    pub request_defaults: Option<Value>,
    /// Routing applied to every request of the node before its properties'
    /// (our addition: a service's error bodies and response renames, said once).
    #[serde(default, skip_serializing)]
    pub routing_defaults: Option<Value>,
}

impl NodeDescription {
    pub fn versions(&self) -> Vec<f64> {
        match &self.version {
            Value::Array(a) => a.iter().filter_map(|v| v.as_f64()).collect(),
            v => v.as_f64().into_iter().collect(),
        }
    }
    pub fn latest_version(&self) -> f64 {
        self.versions().into_iter().fold(1.0, f64::max)
    }
    /// Whether the node runs on the declarative runtime.
    pub fn is_declarative(&self) -> bool {
        self.request_defaults.is_some()
    }
    pub fn is_trigger(&self) -> bool {
        self.group.iter().any(|g| g == "trigger")
    }
    fn aliases(&self) -> Vec<String> {
        self.codex
            .as_ref()
            .and_then(|c| c.get("alias"))
            .and_then(|a| a.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }
}

/// Short form for listings and search results.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    pub name: String,
    pub display_name: String,
    pub description: String,
    pub group: Vec<String>,
    pub version: f64,
    pub is_trigger: bool,
}

fn summary(d: &NodeDescription) -> NodeSummary {
    NodeSummary {
        name: d.name.clone(),
        display_name: d.display_name.clone(),
        description: d.description.clone(),
        group: d.group.clone(),
        version: d.latest_version(),
        is_trigger: d.is_trigger(),
    }
}

/// One file of a [`Bundle`], as `build.rs` read it.
pub(crate) struct BundledFile {
    pub(crate) file: &'static str,
    /// Where it is in the bundle's blob, deflated on its own.
    pub(crate) deflated: std::ops::Range<usize>,
    /// Its length inflated.
    pub(crate) len: usize,
    /// The type it describes (its `name`).
    pub(crate) name: &'static str,
    /// A node description's `version`s (none for a credential type).
    pub(crate) versions: &'static [f64],
}

/// JSON files bundled by `build.rs`, each deflated (a seventh of the size
/// in every binary that links the catalog) and inflated when it is read.
pub(crate) struct Bundle {
    blob: &'static [u8],
    /// Sorted by file name.
    files: &'static [BundledFile],
}

impl Bundle {
    /// The JSON text of the `i`th file. `build.rs` wrote the blob and the
    /// index together; a mismatch is a broken build that
    /// `tests::the_bundles_hold_the_files` reports.
    fn json(&self, i: usize) -> Option<String> {
        use std::io::Read;
        let f = self.files.get(i)?;
        let mut text = String::with_capacity(f.len);
        flate2::read::DeflateDecoder::new(self.blob.get(f.deflated.clone())?).read_to_string(&mut text).ok()?;
        Some(text)
    }

    /// Each file's name and JSON text (callers parse once and keep the
    /// parsed form).
    pub(crate) fn files(&self) -> Vec<(&'static str, String)> {
        (0..self.files.len()).filter_map(|i| Some((self.files[i].file, self.json(i)?))).collect()
    }
}

mod files {
    include!(concat!(env!("OUT_DIR"), "/catalog_files.rs"));
}

/// The `i`th bundled description, inflated and parsed on first use (a run
/// checks its nodes' versions from the index and reads no description; a
/// validation reads its nodes' only). A malformed file is a build mistake
/// that `tests::every_file_parses` reports.
fn parsed(i: usize) -> Option<&'static NodeDescription> {
    static PARSED: OnceLock<Vec<OnceLock<Option<NodeDescription>>>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| files::NODES.files.iter().map(|_| OnceLock::new()).collect());
    parsed.get(i)?.get_or_init(|| files::NODES.json(i).and_then(|json| serde_json::from_str(&json).ok())).as_ref()
}

/// The versions of `node_type` this engine runs, from the bundle's index
/// (nothing is inflated or parsed).
pub fn versions(node_type: &str) -> Option<&'static [f64]> {
    files::NODES.files.iter().find(|f| f.name == node_type).map(|f| f.versions)
}

/// All descriptions, one per node type: triggers first (the order `list`
/// and an empty search show), then the rest by file name.
pub fn all() -> &'static [&'static NodeDescription] {
    static CATALOG: OnceLock<Vec<&'static NodeDescription>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut all: Vec<&'static NodeDescription> = (0..files::NODES.files.len()).filter_map(parsed).collect();
        all.sort_by_key(|d| !d.is_trigger());
        all
    })
}

pub fn list() -> Vec<NodeSummary> {
    all().iter().map(|d| summary(d)).collect()
}

/// Description of exactly this node type (no short names).
pub fn describe_exact(node_type: &str) -> Option<&'static NodeDescription> {
    parsed(files::NODES.files.iter().position(|f| f.name == node_type)?)
}

/// Description of a node type; the short name (`set`) is accepted too.
pub fn describe(node_type: &str) -> Option<&'static NodeDescription> {
    let files = files::NODES.files;
    let i = files.iter().position(|f| f.name == node_type).or_else(|| files.iter().position(|f| f.name.rsplit('.').next() == Some(node_type)))?;
    parsed(i)
}

/// Ranked keyword search over names, display names, aliases and descriptions.
pub fn search(query: &str, limit: usize) -> Vec<NodeSummary> {
    if query.split_whitespace().next().is_none() {
        return list().into_iter().take(limit).collect();
    }
    search_scored(query).into_iter().take(limit).map(|(_, d)| summary(d)).collect()
}

/// Every match of a non-empty query with its relevance score, best first.
pub fn search_scored(query: &str) -> Vec<(u32, &'static NodeDescription)> {
    let q = query.to_lowercase();
    let terms: Vec<&str> = q.split_whitespace().collect();
    let mut scored: Vec<(u32, &NodeDescription)> = all()
        .iter()
        .copied()
        .filter_map(|d| {
            let name = d.name.to_lowercase();
            let display = d.display_name.to_lowercase();
            let desc = d.description.to_lowercase();
            let aliases: Vec<String> = d.aliases().iter().map(|a| a.to_lowercase()).collect();
            let mut score = 0;
            for t in &terms {
                let mut s = 0;
                if display == *t || name.rsplit('.').next() == Some(t) {
                    s += 100;
                } else if display.contains(t) || name.contains(t) {
                    s += 40;
                }
                if aliases.iter().any(|a| a == t) {
                    s += 30;
                } else if aliases.iter().any(|a| a.contains(t)) {
                    s += 10;
                }
                if desc.contains(t) {
                    s += 5;
                }
                if s == 0 {
                    return None;
                }
                score += s;
            }
            Some((score, d))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.display_name.cmp(&b.1.display_name)));
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_parses_and_names_its_node() {
        let files = files::NODES.files();
        for (file, json) in &files {
            let d: NodeDescription = serde_json::from_str(json).unwrap_or_else(|e| panic!("{file}: {e}"));
            let stem = file.trim_end_matches(".json");
            let short = d.name.rsplit('.').next().unwrap_or_default();
            assert!(stem.ends_with(short), "{file} holds {}", d.name);
            // the index build.rs wrote: what runs and lookups read without parsing
            assert_eq!(versions(&d.name), Some(&d.versions()[..]), "{file}");
            assert_eq!(describe_exact(&d.name), Some(&d), "{file}");
        }
        assert_eq!(all().len(), files.len());
    }

    /// The bundles are this checkout's files, byte for byte (a target dir
    /// shared with another checkout can hold a stale one: see `build.rs`).
    #[test]
    fn the_bundles_hold_the_files() {
        for (dir, bundle) in [("nodes", &files::NODES), ("credentials", &credential_types::files::CREDENTIALS)] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/catalog").join(dir);
            let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
                .expect("catalog dir")
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .filter(|n| n.ends_with(".json"))
                .collect();
            on_disk.sort();
            let bundled = bundle.files();
            let names: Vec<&str> = bundled.iter().map(|(n, _)| *n).collect();
            assert_eq!(names, on_disk, "{}: run `touch {}` and build again", dir.display(), dir.display());
            for (name, json) in bundled {
                let file = std::fs::read_to_string(dir.join(name)).expect("catalog file");
                assert!(json == file, "{name} in the bundle differs from {}", dir.display());
            }
        }
    }
}
