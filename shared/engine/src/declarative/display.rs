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
