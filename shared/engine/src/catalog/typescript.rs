//! TypeScript parameter types for a node, as a discriminated union over its
//! `resource` / `operation` / `mode` options (what an agent writing workflow
//! code needs to fill parameters correctly).

use serde_json::Value;

use super::{describe, NodeProperty};

const DISCRIMINATORS: [&str; 3] = ["resource", "operation", "mode"];

fn pascal(s: &str) -> String {
    s.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\'', "\\'")),
        other => other.to_string(),
    }
}

fn option_values(p: &NodeProperty) -> Vec<Value> {
    p.options.iter().flatten().filter_map(|o| o.get("value").cloned()).collect()
}

fn ts_type(p: &NodeProperty) -> String {
    match p.prop_type.as_str() {
        "string" | "dateTime" | "color" => "string".into(),
        "number" => "number".into(),
        "boolean" => "boolean".into(),
        "options" => {
            let v = option_values(p);
            if v.is_empty() { "string".into() } else { v.iter().map(literal).collect::<Vec<_>>().join(" | ") }
        }
        "multiOptions" => {
            let v = option_values(p);
            if v.is_empty() { "string[]".into() } else { format!("Array<{}>", v.iter().map(literal).collect::<Vec<_>>().join(" | ")) }
        }
        "json" => "string | Record<string, unknown> | unknown[]".into(),
        "filter" => "FilterValue".into(),
        "assignmentCollection" => "AssignmentCollectionValue".into(),
        "resourceLocator" => "ResourceLocatorValue | string".into(),
        "resourceMapper" => "{ mappingMode: 'defineBelow' | 'autoMapInputData'; value: Record<string, unknown> | null }".into(),
        "collection" => {
            let nested: Vec<String> = p
                .options
                .iter()
                .flatten()
                .filter_map(|o| serde_json::from_value::<NodeProperty>(o.clone()).ok())
                .map(|n| format!("{}?: {}", n.name, ts_type(&n)))
                .collect();
            if nested.is_empty() { "Record<string, unknown>".into() } else { format!("{{ {} }}", nested.join("; ")) }
        }
        _ => "Record<string, unknown>".into(),
    }
}

/// Does `p` show for this combination of discriminator values, in version
/// `version` (the types describe the latest version; `@version` limits a
/// property to the versions it belongs to)?
fn shows(p: &NodeProperty, combo: &[(String, Value)], version: f64) -> bool {
    let Some(show) = p.display_options.as_ref().and_then(|d| d.get("show")).and_then(|s| s.as_object()) else { return true };
    for (key, allowed) in show {
        if key == "@version" {
            if !allowed.as_array().is_some_and(|a| a.iter().any(|x| x.as_f64() == Some(version))) {
                return false;
            }
            continue;
        }
        let Some((_, v)) = combo.iter().find(|(k, _)| k == key) else { continue };
        if !allowed.as_array().is_some_and(|a| a.contains(v)) {
            return false;
        }
    }
    true
}

/// `export type <Node>Parameters = ...` for a node type, or `None` if unknown.
pub fn typescript(node_type: &str) -> Option<String> {
    let d = describe(node_type)?;
    let base = pascal(&d.display_name);
    let mut out = String::new();
    out.push_str("type FilterValue = { conditions: Array<{ leftValue: unknown; rightValue: unknown; operator: { type: string; operation: string; singleValue?: boolean } }>; combinator: 'and' | 'or'; options?: { caseSensitive?: boolean; typeValidation?: 'strict' | 'loose' } };\n");
    out.push_str("type AssignmentCollectionValue = { assignments: Array<{ id?: string; name: string; value: unknown; type: 'string' | 'number' | 'boolean' | 'array' | 'object' }> };\n");
    out.push_str("type ResourceLocatorValue = { __rl: true; mode: string; value: string };\n\n");
    out.push_str(&format!("/** {} — {} (`{}`, version {}) */\n", d.display_name, d.description, d.name, d.latest_version()));
    // Discriminators that are top-level options (shown unconditionally or under other discriminators).
    let latest = d.latest_version();
    let discs: Vec<&NodeProperty> = DISCRIMINATORS
        .iter()
        .filter_map(|n| d.properties.iter().find(|p| p.name == *n && p.prop_type == "options" && shows(p, &[], latest)))
        .collect();
    let mut combos: Vec<Vec<(String, Value)>> = vec![vec![]];
    for disc in &discs {
        let mut next = vec![];
        for c in &combos {
            if !shows(disc, c, latest) {
                next.push(c.clone());
                continue;
            }
            for v in option_values(disc) {
                let mut c2 = c.clone();
                c2.push((disc.name.clone(), v));
                next.push(c2);
            }
        }
        combos = next;
    }
    let mut variants = vec![];
    for combo in &combos {
        let mut fields = vec![];
        for (k, v) in combo {
            let optional = d.properties.iter().find(|p| &p.name == k).is_some_and(|p| &p.default == v);
            fields.push(format!("  {k}{}: {};", if optional { "?" } else { "" }, literal(v)));
        }
        let mut seen: Vec<&str> = vec![];
        for p in &d.properties {
            // a name described per version appears once (the first description wins)
            if combo.iter().any(|(k, _)| k == &p.name) || !shows(p, combo, latest) || seen.contains(&p.name.as_str()) {
                continue;
            }
            seen.push(&p.name);
            let doc = p.description.as_ref().map(|s| format!("  /** {s} */\n")).unwrap_or_default();
            fields.push(format!("{doc}  {}{}: {};", p.name, if p.required { "" } else { "?" }, ts_type(p)));
        }
        variants.push(format!("{{\n{}\n}}", fields.join("\n")));
    }
    out.push_str(&format!("export type {base}Parameters =\n  | {};\n", variants.join("\n  | ")));
    out.push_str(&format!(
        "\nexport interface {base}Node {{\n  type: '{}';\n  typeVersion: {};\n  parameters: {base}Parameters;\n}}\n",
        d.name,
        d.versions().iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" | ")
    ));
    Some(out)
}
