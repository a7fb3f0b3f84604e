//! n8n's `displayOptions` at run time: which of a description's properties
//! (and credentials) apply to a node's parameters, and the parameter values
//! with the shown properties' defaults filled in.

use serde_json::{Map, Value};

use crate::catalog::NodeProperty;

/// Whether `display` (`{show, hide}`) holds for `values` at `version`.
pub fn shown(display: Option<&Value>, values: &Map<String, Value>, version: f64) -> bool {
    let Some(d) = display else { return true };
    let matches = |key: &str, allowed: &Value| -> bool {
        if key == "@version" {
            return version_matches(allowed, version);
        }
        let list = allowed.as_array().map(Vec::as_slice).unwrap_or_default();
        let v = values.get(key.trim_start_matches('/')).unwrap_or(&Value::Null);
        list.iter().any(|a| same(a, v))
    };
    let show = d.get("show").and_then(Value::as_object);
    let hide = d.get("hide").and_then(Value::as_object);
    show.is_none_or(|s| s.iter().all(|(k, a)| matches(k, a))) && hide.is_none_or(|h| !h.iter().any(|(k, a)| matches(k, a)))
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Whether a `@version` condition list holds: each entry a number or n8n's
/// `{_cnd: {gte: 2}}` (also `between: {from, to}`); one entry suffices.
/// Run time and workflow validation both judge versions by this.
pub fn version_matches(conditions: &Value, version: f64) -> bool {
    conditions.as_array().into_iter().flatten().any(|a| {
        let Some(cnd) = a.get("_cnd").and_then(Value::as_object) else { return a.as_f64() == Some(version) };
        cnd.iter().all(|(op, x)| {
            let n = x.as_f64().unwrap_or(f64::NAN);
            match op.as_str() {
                "gte" => version >= n,
                "gt" => version > n,
                "lte" => version <= n,
                "lt" => version < n,
                "eq" => version == n,
                "not" => version != n,
                "between" => {
                    let (from, to) = (x.get("from").and_then(Value::as_f64), x.get("to").and_then(Value::as_f64));
                    from.zip(to).is_some_and(|(f, t)| version >= f && version <= t)
                }
                _ => false,
            }
        })
    })
}

/// The node's (resolved) parameters plus the default of every property
/// they leave unset and that is shown, in description order (a property's
/// visibility depends on the ones before it: resource, then operation…).
pub fn with_defaults(properties: &[NodeProperty], params: &Value, version: f64) -> Map<String, Value> {
    let mut values = params.as_object().cloned().unwrap_or_default();
    for p in properties {
        if !values.contains_key(&p.name) && shown(p.display_options.as_ref(), &values, version) {
            values.insert(p.name.clone(), p.default.clone());
        }
    }
    values
}

/// Fills the defaults of each entry of a shown fixedCollection, as n8n
/// does when it reads parameters (an entry saved without a field that has
/// its default leaves it out). Expression defaults are left alone: they are
/// the editor's, not values.
pub fn with_nested_defaults(properties: &[NodeProperty], values: &mut Map<String, Value>, version: f64) {
    for p in properties.iter().filter(|p| p.prop_type == "fixedCollection") {
        if !shown(p.display_options.as_ref(), values, version) {
            continue;
        }
        let Some(groups) = values.get_mut(&p.name).and_then(Value::as_object_mut) else { continue };
        for option in p.options.iter().flatten() {
            let (Some(name), Some(fields)) = (option.get("name").and_then(Value::as_str), option.get("values").and_then(Value::as_array)) else { continue };
            let Some(group) = groups.get_mut(name) else { continue };
            let entries: Vec<&mut Value> = match group {
                Value::Array(a) => a.iter_mut().collect(),
                v @ Value::Object(_) => vec![v],
                _ => continue,
            };
            for entry in entries {
                let Some(e) = entry.as_object_mut() else { continue };
                for f in fields {
                    let (Some(key), Some(default)) = (f.get("name").and_then(Value::as_str), f.get("default")) else { continue };
                    if e.contains_key(key) || default.as_str().is_some_and(|d| d.starts_with('=')) {
                        continue;
                    }
                    if shown(f.get("displayOptions"), e, version) {
                        e.insert(key.to_owned(), default.clone());
                    }
                }
            }
        }
    }
}

/// The properties that apply, the first of each name (n8n repeats a name
/// with other displayOptions per operation).
pub fn shown_properties<'d>(properties: &'d [NodeProperty], values: &Map<String, Value>, version: f64) -> Vec<&'d NodeProperty> {
    let mut seen = std::collections::HashSet::new();
    properties.iter().filter(|p| shown(p.display_options.as_ref(), values, version) && seen.insert(p.name.as_str())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn show_hide_version_and_root_paths() {
        let v = json!({"resource": "message", "operation": "post", "n": 2}).as_object().cloned().unwrap();
        assert!(shown(Some(&json!({"show": {"resource": ["message"], "operation": ["post", "update"]}})), &v, 2.0));
        assert!(!shown(Some(&json!({"show": {"resource": ["channel"]}})), &v, 2.0));
        assert!(!shown(Some(&json!({"hide": {"operation": ["post"]}})), &v, 2.0));
        assert!(shown(Some(&json!({"show": {"/resource": ["message"], "n": [2.0]}})), &v, 2.0));
        assert!(shown(Some(&json!({"show": {"@version": [{"_cnd": {"gte": 2.1}}]}})), &v, 2.2));
        assert!(!shown(Some(&json!({"show": {"@version": [2]}})), &v, 2.2));
        assert!(shown(None, &v, 1.0));
    }
}
