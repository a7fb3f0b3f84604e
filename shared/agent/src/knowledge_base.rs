//! The read-only `knowledge-base/` tree every workspace has (spec,
//! "Knowledge Base"): `index.json` (the three sections), best-practice
//! guides per technique, template workflows written for this instance's
//! catalog, and reference material (the SDK reference and the node types,
//! generated from the code they document, so they cannot drift from it).
//! Built once per process from the files `build.rs` bundles.

use crate::bundled::KNOWLEDGE_BASE;
use serde_json::{json, Value};
use std::sync::LazyLock;

pub const KB_ROOT: &str = "knowledge-base";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KbFile {
    /// Workspace path, `knowledge-base/...`.
    pub path: String,
    pub content: String,
}

/// The technique guides, in index order: `(id, description)`. A technique
/// without a file under `best-practices/` is listed with `hasDocumentation: false`.
const TECHNIQUES: &[(&str, &str)] = &[
    ("scheduling", "Workflows that run on a timer or calendar (Schedule Trigger, cron)"),
    ("notification", "Sending alerts and messages to people or channels (HTTP Request to chat/email APIs)"),
    ("data_transformation", "Mapping, filtering, splitting, aggregating and reshaping items"),
    ("data_persistence", "Storing and reading records in data tables"),
    ("data_extraction", "Fetching JSON APIs and extracting content from web pages"),
    ("form_input", "Collecting input with hosted forms (Form Trigger)"),
    ("triage", "Routing items with If, Switch and Filter, and joining branches with Merge"),
    ("document_processing", "Reading, downloading and parsing files (binary data)"),
    ("find_research", "Calling search or data APIs in batches and gathering results"),
    ("chatbot", "Chat-triggered workflows answering a user's message"),
    ("content_generation", "Generating text through a model provider's HTTP API"),
];

/// Reference documents besides the bundled ones: `(file, id, description)`.
const REFERENCES: &[(&str, &str, &str)] = &[
    ("workflow-sdk.md", "workflow-sdk", "The workflow SDK: builder functions, connection patterns, expressions, rules"),
    ("node-types.md", "node-types", "Every node type of this instance: versions, parameters (TypeScript types), credentials, outputs"),
    ("trigger-input-data-shapes.md", "trigger-input-data-shapes", "What each trigger's first item looks like and what to pass as test input"),
    ("workflow-json.md", "workflow-json", "The n8n workflow JSON format build-workflow also accepts"),
];

/// The header of a template: `// <description>` then `// techniques: a, b`.
fn template_meta(source: &str) -> (String, Vec<String>) {
    let mut lines = source.lines().map(str::trim).filter_map(|l| l.strip_prefix("//")).map(str::trim);
    let description = lines.next().unwrap_or_default().to_owned();
    let techniques = lines
        .next()
        .and_then(|l| l.strip_prefix("techniques:"))
        .map(|t| t.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    (description, techniques)
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// The whole tree, given the two generated references.
fn build(sdk_reference: &str, node_types: &str) -> Vec<KbFile> {
    let mut files: Vec<KbFile> = KNOWLEDGE_BASE
        .iter()
        .map(|(path, content)| KbFile { path: format!("{KB_ROOT}/{path}"), content: (*content).to_owned() })
        .collect();
    let has = |files: &[KbFile], p: &str| files.iter().any(|f| f.path == format!("{KB_ROOT}/{p}"));

    let practices: Vec<Value> = TECHNIQUES
        .iter()
        .map(|(id, description)| {
            let file = format!("best-practices/{id}.md");
            if has(&files, &file) {
                json!({"id": id, "description": description, "hasDocumentation": true, "file": file})
            } else {
                json!({"id": id, "description": description, "hasDocumentation": false})
            }
        })
        .collect();
    let templates: Vec<Value> = KNOWLEDGE_BASE
        .iter()
        .filter_map(|(path, content)| {
            let name = path.strip_prefix("templates/")?.strip_suffix(".ts")?;
            let (description, techniques) = template_meta(content);
            Some(json!({"id": name, "description": description, "file": path, "techniques": techniques}))
        })
        .collect();
    files.push(KbFile {
        path: format!("{KB_ROOT}/reference/workflow-sdk.md"),
        content: format!(
            "{}\n\n> In chat, save workflow code with `build-workflow` from a workspace file (it validates); the node\n> types are in `node-types.md` beside this file. Tool names below are the MCP server's.\n",
            sdk_reference.trim_end()
        ),
    });
    files.push(KbFile { path: format!("{KB_ROOT}/reference/node-types.md"), content: node_types.to_owned() });
    let references: Vec<Value> = REFERENCES
        .iter()
        .map(|(file, id, description)| json!({"id": id, "description": description, "file": format!("reference/{file}")}))
        .collect();

    files.push(KbFile { path: format!("{KB_ROOT}/best-practices/index.json"), content: pretty(&json!({"entries": practices})) });
    files.push(KbFile { path: format!("{KB_ROOT}/templates/index.json"), content: pretty(&json!({"entries": templates})) });
    files.push(KbFile { path: format!("{KB_ROOT}/reference/index.json"), content: pretty(&json!({"entries": references})) });
    files.push(KbFile {
        path: format!("{KB_ROOT}/index.json"),
        content: pretty(&json!({
            "bestPractices": {"indexFile": "best-practices/index.json", "entries": practices},
            "templates": {"indexFile": "templates/index.json", "entries": templates},
            "reference": {"indexFile": "reference/index.json", "entries": references},
        })),
    });
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

static FILES: LazyLock<Vec<KbFile>> = LazyLock::new(|| build(instance::sdk::REFERENCE, &instance::catalog::reference_text()));

/// Every file of the tree, by path.
pub fn files() -> &'static [KbFile] {
    &FILES
}

pub fn get(path: &str) -> Option<&'static str> {
    FILES.iter().find(|f| f.path == path).map(|f| f.content.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(path: &str) -> Value {
        serde_json::from_str(get(&format!("{KB_ROOT}/{path}")).unwrap_or_else(|| panic!("{path} exists"))).unwrap()
    }

    #[test]
    fn every_index_entry_names_a_file_of_the_tree() {
        let root = index("index.json");
        for section in ["bestPractices", "templates", "reference"] {
            let sub = root[section]["indexFile"].as_str().unwrap();
            let entries = index(sub)["entries"].as_array().unwrap().clone();
            assert!(!entries.is_empty(), "{section}");
            for e in &entries {
                if let Some(file) = e["file"].as_str() {
                    assert!(get(&format!("{KB_ROOT}/{file}")).is_some(), "{section}: {file} is listed but missing");
                }
                assert!(!e["description"].as_str().unwrap_or_default().is_empty(), "{e}");
            }
        }
        let documented = index("best-practices/index.json")["entries"].as_array().unwrap().iter().filter(|e| e["hasDocumentation"] == true).count();
        assert!(documented >= 8, "{documented}");
        // Every template carries its description and techniques, and its techniques are known.
        for t in index("templates/index.json")["entries"].as_array().unwrap() {
            for tech in t["techniques"].as_array().unwrap() {
                assert!(TECHNIQUES.iter().any(|(id, _)| tech == id), "{tech} in {t}");
            }
        }
    }

    #[test]
    fn references_are_generated_from_the_code_they_describe() {
        let sdk = get("knowledge-base/reference/workflow-sdk.md").unwrap();
        assert!(sdk.starts_with(instance::sdk::REFERENCE.trim_end()));
        let nodes = get("knowledge-base/reference/node-types.md").unwrap();
        for ty in ["n8n-nodes-base.httpRequest", "n8n-nodes-base.switch", "n8n-nodes-base.dataTable", "n8n-nodes-base.formTrigger"] {
            assert!(nodes.contains(&format!("\"{ty}\"")), "{ty} missing from node-types.md");
        }
    }

    /// Every template compiles with our SDK and validates clean (no errors,
    /// no warnings) against the catalog.
    #[test]
    fn every_template_builds_and_validates_clean() {
        let templates: Vec<&KbFile> = files().iter().filter(|f| f.path.starts_with("knowledge-base/templates/") && f.path.ends_with(".ts")).collect();
        assert!(templates.len() >= 5, "{}", templates.len());
        for t in templates {
            let wf = instance::sdk::evaluate(&t.content).unwrap_or_else(|e| panic!("{}: {e}", t.path));
            let report = instance::validate::validate_with_expressions(&wf);
            assert!(report.findings.is_empty(), "{}: {:?}", t.path, report.findings);
        }
    }
}
