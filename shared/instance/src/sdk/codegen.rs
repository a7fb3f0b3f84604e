//! n8n workflow JSON → workflow SDK code (`workflows(action="get-as-code")`):
//! the inverse of [`super::evaluate`]. One `const` per node (in the
//! workflow's node order), `.add()` of every node, then one `.connect()` per
//! connection in JSON order, so evaluating the code gives back the same
//! nodes and connections, and generating code from that gives the same code.
//! Multi-line strings (Code node sources) become template literals so they
//! stay editable; expressions become `expr('…')`.

use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt::Write;

/// Node fields that go into `config` besides `name` and `parameters`, in
/// output order (the SDK passes exactly these through).
const CONFIG_FIELDS: &[&str] = &[
    "id",
    "webhookId",
    "position",
    "credentials",
    "disabled",
    "notes",
    "alwaysOutputData",
    "executeOnce",
    "retryOnFail",
    "maxTries",
    "waitBetweenTries",
    "onError",
    "continueOnFail",
    "notesInFlow",
    "color",
];

/// Node fields that are not carried (derived or editor-only state).
const DROPPED_FIELDS: &[&str] = &["typeVersion", "type", "name", "parameters", "extendsCredential"];

const RESERVED: &[&str] = &[
    "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do", "else", "enum", "export",
    "extends", "false", "finally", "for", "function", "if", "import", "in", "instanceof", "new", "null", "return", "super",
    "switch", "this", "throw", "true", "try", "typeof", "var", "void", "while", "with", "yield", "let", "static", "await",
    "implements", "interface", "package", "private", "protected", "public", "arguments", "eval", "undefined", "NaN",
    "Infinity", "as", "type", "declare", "namespace", "module", "satisfies", "readonly", "abstract", "workflow", "node",
    "trigger", "ifElse", "switchCase", "merge", "expr", "__sdk", "__exports", "__wf", "JSON", "Object", "Array", "Math",
];

/// Object keys the TypeScript stripper could misread unquoted.
const QUOTED_KEYS: &[&str] = &["as", "satisfies", "interface", "declare", "enum", "namespace", "implements", "readonly", "abstract"];

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A camelCase identifier from a node name, unique among `taken`.
fn var_name(node_name: &str, taken: &mut HashSet<String>) -> String {
    let mut out = String::new();
    for (i, word) in node_name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).enumerate() {
        let mut cs = word.chars();
        let Some(first) = cs.next() else { continue };
        if i == 0 {
            out.push(first.to_ascii_lowercase());
        } else {
            out.push(first.to_ascii_uppercase());
        }
        out.extend(cs);
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'n');
    }
    if RESERVED.contains(&out.as_str()) {
        out.push_str("Node");
    }
    let mut candidate = out.clone();
    let mut k = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{out}{k}");
        k += 1;
    }
    candidate
}

fn string_literal(s: &str) -> String {
    // Multi-line text reads better (and edits safer) as a template literal;
    // CR would be normalised to LF inside one, and other control characters
    // are clearer escaped, so those stay JSON strings.
    let template_safe = s.contains('\n') && s.chars().all(|c| c == '\n' || c == '\t' || !c.is_control());
    if template_safe {
        let escaped = s.replace('\\', "\\\\").replace('`', "\\`").replace("${", "\\${");
        return format!("`{escaped}`");
    }
    serde_json::to_string(s).unwrap_or_default()
}

fn emit(out: &mut String, v: &Value, indent: usize) {
    let pad = "  ".repeat(indent);
    match v {
        Value::String(s) => match s.strip_prefix('=') {
            // `expr(x)` prefixes `=` unless x already starts with one, so
            // only strings with a single leading `=` take the expr form.
            Some(rest) if !rest.starts_with('=') => {
                out.push_str("expr(");
                out.push_str(&string_literal(rest));
                out.push(')');
            }
            _ => out.push_str(&string_literal(s)),
        },
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) && a.len() <= 8 => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                emit(out, x, indent);
            }
            out.push(']');
        }
        Value::Array(a) => {
            out.push_str("[\n");
            for x in a {
                out.push_str(&pad);
                out.push_str("  ");
                emit(out, x, indent + 1);
                out.push_str(",\n");
            }
            out.push_str(&pad);
            out.push(']');
        }
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Object(m) => {
            out.push_str("{\n");
            emit_entries(out, m.iter(), indent + 1);
            out.push_str(&pad);
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn emit_key(out: &mut String, k: &str) {
    if is_ident(k) && !QUOTED_KEYS.contains(&k) {
        out.push_str(k);
    } else {
        out.push_str(&serde_json::to_string(k).unwrap_or_default());
    }
}

fn emit_entries<'a>(out: &mut String, entries: impl Iterator<Item = (&'a String, &'a Value)>, indent: usize) {
    let pad = "  ".repeat(indent);
    for (k, v) in entries {
        out.push_str(&pad);
        emit_key(out, k);
        out.push_str(": ");
        emit(out, v, indent);
        out.push_str(",\n");
    }
}

/// Workflow JSON → SDK code. `Err` names what the SDK cannot express.
pub fn to_code(wf: &Value) -> Result<String, String> {
    let nodes = wf.get("nodes").and_then(Value::as_array).ok_or("the workflow has no `nodes` array")?;
    let mut taken: HashSet<String> = HashSet::new();
    let mut vars: Vec<(String, String)> = Vec::new(); // (node name, variable)
    let mut body = String::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = n.get("name").and_then(Value::as_str).ok_or(format!("node {i} has no name"))?;
        let ty = n.get("type").and_then(Value::as_str).ok_or(format!("node {name:?} has no type"))?;
        let version = n.get("typeVersion").filter(|v| v.is_number()).ok_or(format!("node {name:?} has no numeric typeVersion"))?;
        if let Some(extra) = n.as_object().and_then(|o| {
            o.keys().find(|k| !CONFIG_FIELDS.contains(&k.as_str()) && !DROPPED_FIELDS.contains(&k.as_str()))
        }) {
            return Err(format!("node {name:?} has the field {extra:?}, which the SDK does not carry"));
        }
        let var = var_name(name, &mut taken);
        let kind = if engine::workflow::is_trigger_type(ty) { "trigger" } else { "node" };
        let _ = writeln!(body, "const {var} = {kind}({{");
        let _ = writeln!(body, "  type: {},", serde_json::to_string(ty).unwrap_or_default());
        let _ = writeln!(body, "  version: {version},");
        body.push_str("  config: {\n");
        let mut config = Map::new();
        config.insert("name".into(), Value::String(name.to_owned()));
        config.insert("parameters".into(), n.get("parameters").cloned().unwrap_or_else(|| Value::Object(Map::new())));
        for f in CONFIG_FIELDS {
            if let Some(v) = n.get(*f) {
                config.insert((*f).into(), v.clone());
            }
        }
        emit_entries(&mut body, config.iter(), 2);
        body.push_str("  },\n});\n\n");
        vars.push((name.to_owned(), var));
    }
    let var_of = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());

    let mut links = String::new();
    if let Some(conns) = wf.get("connections").and_then(Value::as_object) {
        for (src, by_type) in conns {
            let from = var_of(src).ok_or(format!("a connection starts at {src:?}, which is not a node"))?;
            for (kind, outputs) in by_type.as_object().into_iter().flatten() {
                let outputs = outputs.as_array().map(Vec::as_slice).unwrap_or_default();
                if kind != "main" && outputs.iter().any(|o| o.as_array().is_some_and(|a| !a.is_empty())) {
                    return Err(format!("{src:?} has {kind:?} connections; the SDK expresses only main connections"));
                }
                if kind != "main" {
                    continue;
                }
                for (out_idx, targets) in outputs.iter().enumerate() {
                    for t in targets.as_array().into_iter().flatten() {
                        let target = t.get("node").and_then(Value::as_str).ok_or(format!("a connection of {src:?} has no target"))?;
                        let to = var_of(target).ok_or(format!("{src:?} connects to {target:?}, which is not a node"))?;
                        if t.get("type").and_then(Value::as_str).is_some_and(|k| k != "main") {
                            return Err(format!("{src:?} → {target:?} is not a main connection"));
                        }
                        let input = t.get("index").and_then(Value::as_u64).unwrap_or(0);
                        let _ = writeln!(links, "  .connect({from}, {out_idx}, {to}, {input})");
                    }
                }
            }
        }
    }

    let id = wf.get("id").and_then(Value::as_str).unwrap_or("");
    let name = wf.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty()).unwrap_or("My workflow");
    let mut head = format!("export default workflow({}, {}", string_literal(id), string_literal(name));
    // `executionOrder: "v1"` is what the SDK writes anyway.
    let settings = wf.get("settings").and_then(Value::as_object).map(|s| {
        let mut s = s.clone();
        if s.get("executionOrder").and_then(Value::as_str) == Some("v1") {
            s.remove("executionOrder");
        }
        s
    });
    if let Some(mut s) = settings.filter(|s| !s.is_empty()) {
        // Sorted: the sandbox does not keep the settings' key order, and the
        // same workflow must give the same code.
        s.sort_keys();
        head.push_str(", ");
        emit(&mut head, &Value::Object(s), 0);
    }
    head.push_str(")\n");
    let uses_expr = body.contains("expr(");
    let imports = if uses_expr { "workflow, node, trigger, expr" } else { "workflow, node, trigger" };
    let mut out = format!("import {{ {imports} }} from '@n8n/workflow-sdk';\n\n{body}{head}");
    for (_, var) in &vars {
        let _ = writeln!(out, "  .add({var})");
    }
    out.push_str(&links);
    // The chain ends where the statement does.
    let trimmed = out.trim_end().to_owned();
    Ok(format!("{trimmed};\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_become_unique_identifiers() {
        let mut taken = HashSet::new();
        assert_eq!(var_name("Fetch orders", &mut taken), "fetchOrders");
        assert_eq!(var_name("Fetch-orders!", &mut taken), "fetchOrders2");
        assert_eq!(var_name("1st step", &mut taken), "n1stStep");
        assert_eq!(var_name("If", &mut taken), "ifNode");
        assert_eq!(var_name("Привет", &mut taken), "n");
        assert_eq!(var_name("Merge", &mut taken), "mergeNode");
    }

    #[test]
    fn strings_pick_a_literal_that_survives() {
        assert_eq!(string_literal("a'b"), r#""a'b""#);
        assert_eq!(string_literal("x\ny ${z} `q` \\"), "`x\ny \\${z} \\`q\\` \\\\`");
        assert_eq!(string_literal("a\r\nb"), r#""a\r\nb""#);
        let mut out = String::new();
        emit(&mut out, &json!("={{ $json.a }}"), 0);
        assert_eq!(out, r#"expr("{{ $json.a }}")"#);
        let mut out = String::new();
        emit(&mut out, &json!("==x"), 0);
        assert_eq!(out, r#""==x""#);
    }

    #[test]
    fn round_trips_a_branching_workflow() {
        let wf = super::super::evaluate(super::super::tests::EXAMPLE).unwrap();
        let code = to_code(&wf).unwrap();
        let again = super::super::evaluate(&code).unwrap();
        assert_eq!(again["nodes"], wf["nodes"], "{code}");
        assert_eq!(again["connections"], wf["connections"], "{code}");
        assert_eq!(to_code(&again).unwrap(), code);
    }

    #[test]
    fn refuses_what_the_sdk_cannot_carry() {
        let ai = json!({"nodes": [{"name": "A", "type": "x.agent", "typeVersion": 1}, {"name": "M", "type": "x.model", "typeVersion": 1}],
            "connections": {"M": {"ai_languageModel": [[{"node": "A", "type": "ai_languageModel", "index": 0}]]}}});
        assert!(to_code(&ai).unwrap_err().contains("only main connections"));
        let odd = json!({"nodes": [{"name": "A", "type": "x.y", "typeVersion": 1, "mystery": true}], "connections": {}});
        assert!(to_code(&odd).unwrap_err().contains("mystery"));
    }
}
