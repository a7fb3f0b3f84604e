//! Workflow JSON against the node catalog: node types and versions,
//! parameters (required, option values, value types, shown by
//! displayOptions), connections (ends, output and input indexes, a Switch
//! without connected outputs), expression syntax, credentials a node needs,
//! and no hard-coded secrets in HTTP auth headers. Every finding carries a
//! code, the node and parameter it concerns, and the canvas category
//! (`workflows(action="validate")` filters by category).

use crate::catalog;
use engine::catalog::{NodeDescription, NodeProperty};
use engine::declarative::display::version_matches;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The canvas issue categories (`ignoreIssues`), plus `workflow` for the
/// structure itself (names, connections), which nothing can ignore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Category {
    Parameters,
    Credentials,
    Input,
    Execution,
    TypeUnknown,
    AiGateway,
    ChatModel,
    Workflow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Blocks a save.
    Error,
    Warning,
}

/// One finding: what is wrong, where.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter_path: Option<String>,
    pub category: Category,
    #[serde(skip)]
    #[schemars(skip)]
    pub severity: Severity,
}

/// A non-blocking finding.
pub type Warning = Finding;

impl Finding {
    /// The finding as one sentence naming node and parameter.
    pub fn sentence(&self) -> String {
        match (&self.node_name, &self.parameter_path) {
            (Some(n), Some(p)) => format!("node {n:?}, parameter {p}: {}", self.message),
            (Some(n), None) => format!("node {n:?}: {}", self.message),
            _ => self.message.clone(),
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Report {
    pub findings: Vec<Finding>,
}

impl Report {
    fn push(&mut self, severity: Severity, code: &str, category: Category, node: Option<&str>, path: Option<&str>, msg: impl Into<String>) {
        self.findings.push(Finding {
            code: code.into(),
            message: msg.into(),
            node_name: node.map(str::to_owned),
            parameter_path: path.map(str::to_owned),
            category,
            severity,
        });
    }

    fn error(&mut self, code: &str, category: Category, node: Option<&str>, path: Option<&str>, msg: impl Into<String>) {
        self.push(Severity::Error, code, category, node, path, msg);
    }

    fn warn(&mut self, code: &str, category: Category, node: Option<&str>, path: Option<&str>, msg: impl Into<String>) {
        self.push(Severity::Warning, code, category, node, path, msg);
    }

    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// The blocking findings as sentences.
    pub fn errors(&self) -> Vec<String> {
        self.findings.iter().filter(|f| f.severity == Severity::Error).map(Finding::sentence).collect()
    }

    pub fn warnings(&self) -> Vec<Warning> {
        self.findings.iter().filter(|f| f.severity == Severity::Warning).cloned().collect()
    }
}

/// Header names whose literal values are secrets.
pub(crate) const SECRET_HEADERS: &[&str] =
    &["authorization", "proxy-authorization", "x-api-key", "api-key", "apikey", "x-auth-token", "x-access-token", "private-token", "x-token"];

/// Validates n8n workflow JSON: structure, node types and versions,
/// parameters, credentials, connections and references.
pub fn validate(wf: &Value) -> Report {
    check(wf, |_, _, _| {})
}

/// Every expression (`=…`) in the parameters of the nodes [`validate`]
/// checks, each once.
pub fn expressions(wf: &Value) -> Vec<String> {
    let mut found = BTreeSet::new();
    check(wf, |_, _, params| expression::each_expression(params, "", &mut |_, text| { found.insert(text.to_owned()); }));
    found.into_iter().collect()
}

/// [`validate`], plus an `INVALID_EXPRESSION` error for each expression
/// that does not parse: `syntax_errors` says why, by the expression's text
/// (one that is not there parses). The verdicts come from a JavaScript
/// sandbox: the executor function's (`Instance::validate_with_expressions`,
/// `Instance::compile`), so the functions that validate link none, or this
/// process's ([`validate_with_expressions`]).
pub fn validate_syntax(wf: &Value, syntax_errors: &BTreeMap<String, String>) -> Report {
    check(wf, |r, node, params| {
        expression::each_expression(params, "", &mut |path, text| {
            if let Some(message) = syntax_errors.get(text) {
                r.error("INVALID_EXPRESSION", Category::Parameters, Some(node), Some(if path.is_empty() { "/" } else { path }), format!("expression {text:?} does not parse: {message}"));
            }
        })
    })
}

/// [`validate_syntax`] with this process's sandbox (tests: the functions ask the executor).
pub fn validate_with_expressions(wf: &Value) -> Report {
    let mut evaluator = expression::Evaluator::new(expression::Limits::default()).ok();
    let errors = expressions(wf).into_iter().filter_map(|e| evaluator.as_mut().and_then(|ev| ev.syntax_error(&e)).map(|m| (e, m))).collect();
    validate_syntax(wf, &errors)
}

/// The checks, with `expressions` checking each node's parameters'
/// expressions (generic, so [`validate`] references no sandbox code).
fn check(wf: &Value, mut expressions: impl FnMut(&mut Report, &str, &Value)) -> Report {
    let mut r = Report::default();
    let Some(nodes) = wf.get("nodes").and_then(Value::as_array) else {
        r.error("INVALID_WORKFLOW", Category::Workflow, None, None, "the workflow has no `nodes` array");
        return r;
    };
    if nodes.is_empty() {
        r.error("NO_NODES", Category::Workflow, None, None, "the workflow has no nodes");
    }
    let mut by_name: HashMap<String, &Value> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let Some(name) = node.get("name").and_then(Value::as_str).filter(|n| !n.trim().is_empty()) else {
            r.error("MISSING_NODE_NAME", Category::Workflow, None, None, format!("node {i} has no name"));
            continue;
        };
        if by_name.insert(name.to_owned(), node).is_some() {
            r.error("DUPLICATE_NODE_NAME", Category::Workflow, Some(name), None, "the name is used by two nodes; node names must be unique");
        }
        let Some(ty) = node.get("type").and_then(Value::as_str) else {
            r.error("MISSING_NODE_TYPE", Category::TypeUnknown, Some(name), None, "no `type` (e.g. \"n8n-nodes-base.set\")");
            continue;
        };
        if ty == "n8n-nodes-base.stickyNote" {
            continue;
        }
        let Some(desc) = catalog::describe_exact(ty) else {
            r.error("UNKNOWN_NODE_TYPE", Category::TypeUnknown, Some(name), None, format!("unknown node type {ty:?}; only the node types of this instance exist (search them with search_nodes / knowledge-base/reference/node-types.md)"));
            continue;
        };
        match node.get("typeVersion").and_then(Value::as_f64) {
            None => r.error("INVALID_TYPE_VERSION", Category::TypeUnknown, Some(name), None, format!("no numeric `typeVersion`; {ty} supports {}", versions(desc))),
            Some(v) if !desc.versions().contains(&v) => {
                r.error("INVALID_TYPE_VERSION", Category::TypeUnknown, Some(name), None, format!("typeVersion {v} is not supported by {ty}; supported: {}", versions(desc)))
            }
            Some(_) => {}
        }
        if !node.get("position").is_some_and(|p| p.as_array().is_some_and(|a| a.len() == 2 && a.iter().all(Value::is_number))) {
            r.warn("MISSING_POSITION", Category::Workflow, Some(name), None, "no [x, y] position; the editor will place the node");
        }
        let params = node.get("parameters").cloned().unwrap_or_else(|| Value::Object(Map::new()));
        let Some(pmap) = params.as_object() else {
            r.error("INVALID_PARAMETER", Category::Parameters, Some(name), Some("parameters"), "must be an object");
            continue;
        };
        check_parameters(&mut r, name, desc, pmap, node.get("typeVersion").and_then(Value::as_f64));
        // the version itself is judged above
        let disabled = node.get("disabled").and_then(Value::as_bool).unwrap_or(false);
        let version = node.get("typeVersion").and_then(Value::as_f64).filter(|v| !disabled && desc.versions().contains(v));
        if let Some(message) = version.and_then(|v| engine::nodes::unsupported::refusal(ty, v, &params)) {
            r.error("UNSUPPORTED_PARAMETER", Category::Parameters, Some(name), None, message);
        }
        if ty == "n8n-nodes-base.httpRequest" {
            check_secret_headers(&mut r, name, &params);
        }
        expressions(&mut r, name, &params);
        check_credentials(&mut r, name, node, desc);
        if let Some(creds) = node.get("credentials") {
            if !creds.is_object() {
                r.error("INVALID_CREDENTIALS", Category::Credentials, Some(name), Some("credentials"), "must be an object {credentialType: {id, name}}");
            }
        }
    }
    check_connections(&mut r, wf.get("connections"), &by_name);
    let names: HashSet<String> = by_name.keys().cloned().collect();
    for node in nodes {
        let name = node.get("name").and_then(Value::as_str).unwrap_or_default();
        if let Some(p) = node.get("parameters") {
            check_references(&mut r, &names, name, "", p);
        }
    }
    let has_trigger = nodes.iter().any(|n| {
        n.get("type").and_then(Value::as_str).is_some_and(engine::workflow::is_trigger_type)
            && !n.get("disabled").and_then(Value::as_bool).unwrap_or(false)
    });
    if !has_trigger && !nodes.is_empty() {
        r.warn("NO_TRIGGER", Category::Workflow, None, None, "the workflow has no enabled trigger node; it can only run manually from its first node");
    }
    r
}

fn versions(d: &NodeDescription) -> String {
    d.versions().iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")
}

/// Is `p` a property of this `typeVersion` (its `@version` conditions only)?
fn for_version(p: &NodeProperty, version: Option<f64>) -> bool {
    let (Some(v), Some(opts)) = (version, p.display_options.as_ref()) else { return true };
    let show = opts.pointer("/show/@version").is_none_or(|c| version_matches(c, v));
    let hide = opts.pointer("/hide/@version").is_some_and(|c| version_matches(c, v));
    show && !hide
}

/// Does `p` show, given the node's parameters (defaults fill the gaps) and
/// its `typeVersion` (for `@version` conditions)?
fn shown(p: &NodeProperty, params: &Map<String, Value>, all: &[NodeProperty], version: Option<f64>) -> bool {
    displayed(p.display_options.as_ref(), params, all, version)
}

/// Do these `displayOptions` hold for the node's parameters (and version)?
/// Also for entries of a node's `credentials` list.
pub fn displayed(opts: Option<&Value>, params: &Map<String, Value>, all: &[NodeProperty], version: Option<f64>) -> bool {
    let Some(opts) = opts else { return true };
    let value_of = |k: &str| params.get(k).cloned().or_else(|| all.iter().find(|x| x.name == k && for_version(x, version)).map(|x| x.default.clone()));
    if let Some(show) = opts.get("show").and_then(Value::as_object) {
        for (k, allowed) in show {
            if k == "@version" {
                if version.is_some_and(|v| !version_matches(allowed, v)) {
                    return false;
                }
                continue;
            }
            if k.starts_with('@') {
                continue;
            }
            let v = value_of(k).unwrap_or(Value::Null);
            if !allowed.as_array().is_some_and(|a| a.contains(&v)) {
                return false;
            }
        }
    }
    if let Some(hide) = opts.get("hide").and_then(Value::as_object) {
        for (k, denied) in hide {
            if k == "@version" {
                if version.is_some_and(|v| version_matches(denied, v)) {
                    return false;
                }
                continue;
            }
            let v = value_of(k).unwrap_or(Value::Null);
            if denied.as_array().is_some_and(|a| a.contains(&v)) {
                return false;
            }
        }
    }
    true
}

fn is_expr(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.starts_with('='))
}

fn check_parameters(r: &mut Report, node: &str, d: &NodeDescription, params: &Map<String, Value>, version: Option<f64>) {
    let known: HashSet<&str> = d.properties.iter().map(|p| p.name.as_str()).collect();
    for k in params.keys() {
        if !known.contains(k.as_str()) {
            r.warn(
                "UNKNOWN_PARAMETER",
                Category::Parameters,
                Some(node),
                Some(k),
                format!("{} has no parameter {k:?}; it is ignored (get_node_types lists the parameters)", d.name),
            );
        }
    }
    for (param, message) in parameter_errors(d, params, version) {
        r.error("INVALID_PARAMETER", Category::Parameters, Some(node), Some(&param), message);
    }
}

/// The node's parameter problems, as `(parameter, message)`: a shown
/// required parameter left empty, a value of the wrong type or not among
/// the options. Expressions are not judged (their value is known at run time).
pub fn parameter_errors(d: &NodeDescription, params: &Map<String, Value>, version: Option<f64>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in &d.properties {
        if !shown(p, params, &d.properties, version) {
            continue;
        }
        let v = params.get(&p.name);
        // n8n fills an absent parameter with its default, so only an empty value is missing.
        let empty = match v.or(Some(&p.default)) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            _ => false,
        };
        if p.required && empty {
            out.push((p.name.clone(), format!("is required ({})", p.display_name)));
            continue;
        }
        let Some(v) = v else { continue };
        if is_expr(v) {
            continue;
        }
        let problem = match p.prop_type.as_str() {
            "boolean" if !v.is_boolean() => Some(format!("must be a boolean, got {v}")),
            "number" if !v.is_number() => Some(format!("must be a number, got {v}")),
            "string" if !v.is_string() && !v.is_number() => Some(format!("must be a string, got {v}")),
            "options" => {
                let allowed: Vec<&Value> = p.options.iter().flatten().filter_map(|o| o.get("value")).collect();
                (!allowed.is_empty() && !allowed.contains(&v)).then(|| {
                    let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
                    format!("{v} is not an option; use one of {}", list.join(", "))
                })
            }
            // n8n keeps a multiple-values collection (GitHub's labels) as a list of entries
            "collection" if v.is_array() && p.type_options.as_ref().and_then(|t| t.get("multipleValues")).and_then(Value::as_bool) == Some(true) => None,
            "collection" | "fixedCollection" | "filter" | "assignmentCollection" if !v.is_object() => {
                Some(format!("must be an object, got {v}"))
            }
            _ => None,
        };
        if let Some(m) = problem {
            out.push((p.name.clone(), m));
        }
    }
    out
}

fn check_secret_headers(r: &mut Report, node: &str, params: &Value) {
    let Some(list) = params.pointer("/headerParameters/parameters").and_then(Value::as_array) else { return };
    for (i, h) in list.iter().enumerate() {
        let name = h.get("name").and_then(Value::as_str).unwrap_or_default().to_lowercase();
        let value = h.get("value").and_then(Value::as_str).unwrap_or_default();
        if SECRET_HEADERS.contains(&name.as_str()) && !value.trim().is_empty() && !value.starts_with('=') {
            r.error(
                "HARDCODED_CREDENTIALS",
                Category::Credentials,
                Some(node),
                Some(&format!("headerParameters.parameters[{i}].value")),
                format!(
                    "hard-coded secret in the {name:?} header; store it in a credential instead (authentication: \"genericCredentialType\", genericAuthType: \"httpHeaderAuth\")"
                ),
            );
        }
    }
}

/// Node names an expression refers to: `$('Name')`, `$("Name")`, `$node["Name"]`.
fn referenced_nodes(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for open in ["$('", "$(\"", "$node['", "$node[\""] {
        let quote = open.chars().last().unwrap_or('\'');
        let mut rest = expr;
        while let Some(i) = rest.find(open) {
            rest = &rest[i + open.len()..];
            if let Some(end) = rest.find(quote) {
                out.push(rest[..end].to_owned());
                rest = &rest[end..];
            }
        }
    }
    out
}

fn check_references(r: &mut Report, names: &HashSet<String>, node: &str, path: &str, v: &Value) {
    match v {
        Value::String(s) if s.starts_with('=') => {
            for n in referenced_nodes(s) {
                if !names.contains(&n) {
                    r.warn(
                        "UNKNOWN_NODE_REFERENCE",
                        Category::Parameters,
                        Some(node),
                        Some(if path.is_empty() { "/" } else { path }),
                        format!("the expression refers to node {n:?}, which is not in the workflow"),
                    );
                }
            }
        }
        Value::Object(m) => m.iter().for_each(|(k, x)| check_references(r, names, node, &format!("{path}/{k}"), x)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| check_references(r, names, node, &format!("{path}/{i}"), x)),
        _ => {}
    }
}

fn enabled(node: &Value) -> bool {
    !node.get("disabled").and_then(Value::as_bool).unwrap_or(false)
}

/// Whether a node's entry in `connections` has any main target.
pub fn has_main_outputs(by_type: Option<&Value>) -> bool {
    by_type
        .and_then(|b| b.get("main"))
        .and_then(Value::as_array)
        .is_some_and(|outs| outs.iter().any(|o| o.as_array().is_some_and(|a| !a.is_empty())))
}

/// The credential types a node needs with its current parameters: HTTP
/// Request's chosen auth type, or a description's required credentials.
pub fn needed_credentials(node: &Value, d: &NodeDescription) -> Vec<String> {
    let none = Map::new();
    let params = node.get("parameters").and_then(Value::as_object).unwrap_or(&none);
    let version = node.get("typeVersion").and_then(Value::as_f64).unwrap_or_else(|| d.latest_version());
    slots(d, params, version).into_iter().filter(|(_, required)| *required).map(|(t, _)| t).collect()
}

/// The credential slots a node has with these parameters (shown by the
/// slot's `displayOptions` in this version), required or not.
pub fn credential_slots(d: &NodeDescription, params: &Map<String, Value>, version: f64) -> Vec<String> {
    slots(d, params, version).into_iter().map(|(t, _)| t).collect()
}

fn slots(d: &NodeDescription, params: &Map<String, Value>, version: f64) -> Vec<(String, bool)> {
    let str_param = |name: &str| {
        params
            .get(name)
            .or_else(|| d.properties.iter().find(|p| p.name == name).map(|p| &p.default))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty() && !s.starts_with('='))
    };
    // HTTP Request: the type is a parameter, chosen with `authentication`.
    if d.properties.iter().any(|p| p.name == "genericAuthType" || p.name == "nodeCredentialType") {
        let field = match str_param("authentication") {
            Some("genericCredentialType") => "genericAuthType",
            Some("predefinedCredentialType") => "nodeCredentialType",
            _ => return Vec::new(),
        };
        return str_param(field).map(|t| vec![(t.to_owned(), true)]).unwrap_or_default();
    }
    let mut out: Vec<(String, bool)> = Vec::new();
    for c in d.credentials.iter().filter(|c| displayed(c.get("displayOptions"), params, &d.properties, Some(version))) {
        let Some(name) = c.get("name").and_then(Value::as_str) else { continue };
        let required = c.get("required").and_then(Value::as_bool).unwrap_or(false);
        match out.iter_mut().find(|(t, _)| t == name) {
            Some(slot) => slot.1 |= required,
            None => out.push((name.to_owned(), required)),
        }
    }
    out
}

fn check_credentials(r: &mut Report, name: &str, node: &Value, d: &NodeDescription) {
    let have = node.get("credentials").and_then(Value::as_object);
    for ty in needed_credentials(node, d) {
        if !have.is_some_and(|c| c.contains_key(&ty)) {
            r.warn(
                "MISSING_CREDENTIALS",
                Category::Credentials,
                Some(name),
                Some(&format!("credentials.{ty}")),
                format!("needs a {ty} credential; select one the user created (credentials are never written into parameters)"),
            );
        }
    }
}

fn check_connections(r: &mut Report, conns: Option<&Value>, nodes: &HashMap<String, &Value>) {
    let none = Value::Object(Map::new());
    let Some(conns) = conns.unwrap_or(&none).as_object() else {
        r.error("INVALID_CONNECTION", Category::Workflow, None, None, "`connections` must be an object");
        return;
    };
    let mut has_parent: HashSet<&str> = HashSet::new();
    for (src, by_type) in conns {
        let Some(src_node) = nodes.get(src) else {
            r.error("INVALID_CONNECTION", Category::Workflow, None, None, format!("connection from {src:?}, which is not a node of the workflow"));
            continue;
        };
        let src_desc = src_node.get("type").and_then(Value::as_str).and_then(catalog::describe_exact);
        let src_params = src_node.get("parameters").cloned().unwrap_or(Value::Null);
        let Some(by_type) = by_type.as_object() else {
            r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, "connections must map a type (\"main\") to outputs");
            continue;
        };
        for (kind, outputs) in by_type {
            let Some(outputs) = outputs.as_array() else {
                r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connections.{kind} must be an array of outputs"));
                continue;
            };
            if kind == "main" {
                if let Some(d) = src_desc {
                    let version = src_node.get("typeVersion").and_then(Value::as_f64).unwrap_or(1.0);
                    let n = catalog::output_count(d, &src_params, version);
                    let used = outputs.iter().rposition(|o| o.as_array().is_some_and(|a| !a.is_empty())).map_or(0, |i| i + 1);
                    if used > n {
                        r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connects output {} but {} has {n} output(s)", used - 1, d.name));
                    }
                }
            }
            for output in outputs.iter().filter(|o| !o.is_null()) {
                for t in output.as_array().into_iter().flatten() {
                    let Some(target) = t.get("node").and_then(Value::as_str) else {
                        r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, "a connection has no target `node`");
                        continue;
                    };
                    let Some(tn) = nodes.get(target) else {
                        r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connects to {target:?}, which is not a node of the workflow"));
                        continue;
                    };
                    has_parent.insert(target);
                    let idx = t.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                    let t_desc = tn.get("type").and_then(Value::as_str).and_then(catalog::describe_exact);
                    if kind != "main" {
                        check_sub_node_connection(r, src, src_desc, kind, target, t_desc);
                    }
                    if let (Some(d), "main") = (t_desc, kind.as_str()) {
                        let inputs = catalog::input_count(d, tn.get("parameters").unwrap_or(&Value::Null));
                        if inputs == 0 {
                            r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connects into {target:?}, a trigger, which has no inputs"));
                        } else if idx >= inputs {
                            r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connects into input {idx} of {target:?}, which has {inputs} input(s)"));
                        }
                    }
                }
            }
        }
    }
    // A Switch exists to route: with no output connected, every item ends there.
    for (name, node) in nodes {
        let ty = node.get("type").and_then(Value::as_str).unwrap_or_default();
        if ty == "n8n-nodes-base.switch" && enabled(node) && !has_main_outputs(conns.get(name.as_str())) {
            r.error(
                "SWITCH_NO_OUTPUT_CONNECTIONS",
                Category::Workflow,
                Some(name),
                None,
                "no output of this Switch is connected; connect each rule's output (.onCase(i, …)) to the node that handles it",
            );
        }
    }
    for (name, node) in nodes {
        let ty = node.get("type").and_then(Value::as_str).unwrap_or_default();
        let desc = catalog::describe_exact(ty);
        // A sub-node has no main input: its root calls it over its own connection type.
        let sub_kind = desc.and_then(|d| d.outputs.iter().find(|o| o.as_str() != "main"));
        if let Some(kind) = sub_kind {
            let connected = conns.get(name.as_str()).and_then(|c| c.get(kind.as_str())).and_then(Value::as_array).is_some_and(|outs| outs.iter().any(|o| o.as_array().is_some_and(|a| !a.is_empty())));
            if !connected && enabled(node) {
                r.warn("DISCONNECTED_NODE", Category::Input, Some(name), None, format!("this sub-node is not connected to an AI node ({kind}); it will never run"));
            }
            continue;
        }
        if !engine::workflow::is_trigger_type(ty) && ty != "n8n-nodes-base.stickyNote" && !has_parent.contains(name.as_str()) {
            r.warn("DISCONNECTED_NODE", Category::Input, Some(name), None, "no connection leads into this node; it will never run");
        }
        // A root node that needs a chat model cannot run without one.
        if desc.is_some_and(|d| d.inputs.iter().any(|i| i == "ai_languageModel")) && enabled(node) && !sub_node_feeds(conns, nodes, "ai_languageModel", name) {
            r.error(
                "MISSING_SUB_NODE",
                Category::Workflow,
                Some(name),
                None,
                "no chat model is connected: connect a model sub-node (e.g. @n8n/n8n-nodes-langchain.lmChatOpenAi) to this node's ai_languageModel input",
            );
        }
    }
}

/// Is an enabled node connected into `root` over `kind`?
fn sub_node_feeds(conns: &Map<String, Value>, nodes: &HashMap<String, &Value>, kind: &str, root: &str) -> bool {
    conns.iter().any(|(src, by_type)| {
        nodes.get(src).is_some_and(|n| enabled(n))
            && by_type.get(kind).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_array).flatten().any(|t| t.get("node").and_then(Value::as_str) == Some(root))
    })
}

/// A sub-node connection (`ai_tool`, …): the source must supply that kind and the target accept it.
fn check_sub_node_connection(r: &mut Report, src: &str, src_desc: Option<&NodeDescription>, kind: &str, target: &str, t_desc: Option<&NodeDescription>) {
    if let Some(d) = src_desc {
        if !d.outputs.iter().any(|o| o == kind) {
            r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connects over {kind}, but {} supplies {}", d.name, d.outputs.join(", ")));
            return;
        }
    }
    if let Some(d) = t_desc {
        if !d.inputs.iter().any(|i| i == kind) {
            r.error("INVALID_CONNECTION", Category::Workflow, Some(src), None, format!("connects into {target:?} over {kind}, which {} does not accept", d.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wf(nodes: Value, connections: Value) -> Value {
        json!({"nodes": nodes, "connections": connections})
    }

    #[test]
    fn flags_types_parameters_connections_and_secrets() {
        let w = wf(
            json!([
                {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"path": "x", "httpMethod": "POST"}},
                {"name": "Bogus", "type": "n8n-nodes-base.nope", "typeVersion": 1, "position": [0, 0]},
                {"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [0, 0], "parameters": {
                    "url": "https://api.example.com", "sendHeaders": true,
                    "headerParameters": {"parameters": [{"name": "Authorization", "value": "Bearer sk-123"}]}}},
                {"name": "Check", "type": "n8n-nodes-base.if", "typeVersion": 2.2, "position": [0, 0], "parameters": {"conditions": {}, "looseTypeValidation": "yes"}}
            ]),
            json!({"Hook": {"main": [[{"node": "Call", "type": "main", "index": 0}]]},
                   "Call": {"main": [[{"node": "Check", "type": "main", "index": 0}], [{"node": "Hook", "type": "main", "index": 0}]]}}),
        );
        let r = validate(&w);
        let all = r.errors().join("\n");
        assert!(all.contains("node \"Bogus\": unknown node type"), "{all}");
        assert!(all.contains("node \"Call\", parameter headerParameters.parameters[0].value: hard-coded secret"), "{all}");
        assert!(all.contains("node \"Check\", parameter looseTypeValidation: must be a boolean"), "{all}");
        assert!(all.contains("connects output 1"), "{all}");
        assert!(all.contains("a trigger, which has no inputs"), "{all}");
    }

    /// What the engine does not implement blocks the save: a version the
    /// catalog lacks, a parameter value on the engine's refusal list.
    #[test]
    fn unsupported_versions_and_values_are_errors() {
        let w = wf(
            json!([
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
                {"name": "Newer", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.5, "position": [0, 0], "parameters": {"url": "https://a.example"}},
                {"name": "Dav", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [0, 0], "parameters": {"url": "https://a.example", "method": "PROPFIND"}},
                {"name": "Seal", "type": "n8n-nodes-base.crypto", "typeVersion": 2, "position": [0, 0], "parameters": {"action": "encrypt"}}
            ]),
            json!({"Start": {"main": [[{"node": "Newer", "type": "main", "index": 0}, {"node": "Dav", "type": "main", "index": 0}, {"node": "Seal", "type": "main", "index": 0}]]}}),
        );
        let all = validate(&w).errors().join("\n");
        assert!(all.contains("node \"Newer\"") && all.contains("typeVersion 4.5 is not supported"), "{all}");
        assert!(all.contains("Not supported by this engine: WebDAV methods (n8n-nodes-base.httpRequest)"), "{all}");
        assert!(all.contains("Not supported by this engine: encryption and decryption (n8n-nodes-base.crypto)"), "{all}");
    }

    #[test]
    fn data_table_1_1_its_options_and_table_resource_validate() {
        let id = json!({"__rl": true, "mode": "name", "value": "t"});
        let w = wf(
            json!([
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
                {"name": "Make", "type": "n8n-nodes-base.dataTable", "typeVersion": 1.1, "position": [0, 0], "parameters": {
                    "resource": "table", "operation": "create", "tableName": "t",
                    "columns": {"column": [{"name": "a", "type": "number"}]}, "options": {"createIfNotExists": true}}},
                {"name": "Add", "type": "n8n-nodes-base.dataTable", "typeVersion": 1.1, "position": [0, 0], "parameters": {
                    "operation": "insert", "dataTableId": id, "columns": {"mappingMode": "autoMapInputData", "value": null}, "options": {"optimizeBulk": true}}},
                {"name": "Try", "type": "n8n-nodes-base.dataTable", "typeVersion": 1.1, "position": [0, 0], "parameters": {
                    "operation": "update", "dataTableId": id, "filters": {"conditions": [{"keyName": "a", "keyValue": 1}]},
                    "columns": {"mappingMode": "defineBelow", "value": {"a": 2}}, "options": {"dryRun": true}}},
                {"name": "Nameless", "type": "n8n-nodes-base.dataTable", "typeVersion": 1.1, "position": [0, 0], "parameters": {
                    "resource": "table", "operation": "create"}}
            ]),
            json!({"Start": {"main": [[{"node": "Make", "type": "main", "index": 0}, {"node": "Add", "type": "main", "index": 0},
                {"node": "Try", "type": "main", "index": 0}, {"node": "Nameless", "type": "main", "index": 0}]]}}),
        );
        let r = validate(&w);
        let all = r.errors().join("\n");
        assert!(!all.contains("\"Make\"") && !all.contains("\"Add\"") && !all.contains("\"Try\""), "{all}");
        assert!(all.contains("node \"Nameless\"") && all.contains("tableName"), "{all}");
        assert!(r.warnings().iter().all(|w| w.code != "UNKNOWN_PARAMETER"), "{:?}", r.warnings());
    }

    #[test]
    fn required_parameters_and_expression_syntax() {
        let w = wf(
            json!([
                {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {}},
                {"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [0, 0], "parameters": {}},
                {"name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [0, 0], "parameters": {
                    "assignments": {"assignments": [{"name": "a", "value": "={{ $json.x + }}", "type": "string"}]}}}
            ]),
            json!({"Hook": {"main": [[{"node": "Call", "type": "main", "index": 0}]]}, "Call": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}),
        );
        let r = validate_with_expressions(&w);
        let all = r.errors().join("\n");
        // An empty Webhook path is n8n's default (the node's webhookId serves); a URL is not optional.
        assert!(!all.contains("node \"Hook\""), "{all}");
        assert!(all.contains("node \"Call\", parameter url: is required"), "{all}");
        assert!(all.contains("node \"Set\", parameter /assignments/assignments/0/value: expression"), "{all}");
    }

    #[test]
    fn a_switch_without_outputs_blocks_and_http_auth_needs_its_credential() {
        let w = wf(
            json!([
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
                {"name": "Route", "type": "n8n-nodes-base.switch", "typeVersion": 3.2, "position": [0, 0], "parameters": {"rules": {"values": []}}},
                {"name": "Parked", "type": "n8n-nodes-base.switch", "typeVersion": 3.2, "position": [0, 0], "disabled": true, "parameters": {}},
                {"name": "Call", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2, "position": [0, 0], "parameters": {
                    "url": "https://api.example.com", "authentication": "genericCredentialType", "genericAuthType": "httpHeaderAuth"}}
            ]),
            json!({"Start": {"main": [[{"node": "Route", "type": "main", "index": 0}, {"node": "Parked", "type": "main", "index": 0}, {"node": "Call", "type": "main", "index": 0}]]}}),
        );
        let r = validate(&w);
        let switch: Vec<&Finding> = r.findings.iter().filter(|f| f.code == "SWITCH_NO_OUTPUT_CONNECTIONS").collect();
        assert_eq!(switch.len(), 1, "only the enabled Switch: {:?}", r.findings);
        assert_eq!((switch[0].node_name.as_deref(), switch[0].severity), (Some("Route"), Severity::Error));
        let creds: Vec<Finding> = r.warnings().into_iter().filter(|f| f.code == "MISSING_CREDENTIALS").collect();
        assert_eq!(creds.len(), 1, "{:?}", r.findings);
        assert_eq!((creds[0].category, creds[0].parameter_path.as_deref()), (Category::Credentials, Some("credentials.httpHeaderAuth")));
    }

    #[test]
    fn respond_to_webhook_has_its_response_output_on_1_3_and_on_request_from_1_4() {
        let outputs = |v: f64, params: Value| {
            let w = wf(
                json!([
                    {"name": "Hook", "type": "n8n-nodes-base.webhook", "typeVersion": 2, "position": [0, 0], "parameters": {"path": "p", "responseMode": "responseNode"}},
                    {"name": "Respond", "type": "n8n-nodes-base.respondToWebhook", "typeVersion": v, "position": [0, 0], "parameters": params},
                    {"name": "Sent", "type": "n8n-nodes-base.noOp", "typeVersion": 1, "position": [0, 0]}
                ]),
                json!({"Hook": {"main": [[{"node": "Respond", "type": "main", "index": 0}]]}, "Respond": {"main": [[], [{"node": "Sent", "type": "main", "index": 0}]]}}),
            );
            !validate(&w).findings.iter().any(|f| f.code == "INVALID_CONNECTION")
        };
        assert!(outputs(1.3, json!({})));
        assert!(outputs(1.4, json!({"enableResponseOutput": true})));
        assert!(outputs(1.5, json!({"enableResponseOutput": true})));
        assert!(!outputs(1.4, json!({})));
        assert!(!outputs(1.2, json!({"enableResponseOutput": true})));
    }

    #[test]
    fn parameters_are_checked_against_the_nodes_version() {
        let node = |name: &str, ty: &str, v: f64, params: Value| json!({"name": name, "type": ty, "typeVersion": v, "position": [0, 0], "parameters": params});
        let w = wf(
            json!([
                node("Start", "n8n-nodes-base.manualTrigger", 1.0, json!({})),
                node("Old", "n8n-nodes-base.dateTime", 1.0, json!({"action": "calculate", "value": "2024-01-01", "duration": 2, "timeUnit": "days"})),
                node("New", "n8n-nodes-base.dateTime", 2.0, json!({"operation": "addToDate", "magnitude": "={{ $now }}", "duration": 2, "timeUnit": "days"})),
                node("Mixed", "n8n-nodes-base.dateTime", 2.0, json!({"operation": "formatDate", "date": "2024-01-01", "format": "YYYY"})),
                node("Hash", "n8n-nodes-base.crypto", 2.0, json!({"action": "hash", "type": "SHA1", "value": "x"}))
            ]),
            json!({"Start": {"main": [[{"node": "Old", "type": "main", "index": 0}, {"node": "New", "type": "main", "index": 0},
                                       {"node": "Mixed", "type": "main", "index": 0}, {"node": "Hash", "type": "main", "index": 0}]]}}),
        );
        let r = validate(&w);
        let all = r.errors().join("\n");
        assert!(!all.contains("\"Old\"") && !all.contains("\"New\""), "{all}");
        // Version 2 formats with Luxon presets, and dropped SHA1.
        assert!(all.contains("node \"Mixed\", parameter format"), "{all}");
        assert!(all.contains("node \"Hash\", parameter type"), "{all}");
    }

    #[test]
    fn ai_sub_node_connections_are_accepted_and_a_root_without_a_model_is_flagged() {
        let nodes = json!([
            {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0], "parameters": {}},
            {"name": "Agent", "type": "@n8n/n8n-nodes-langchain.agent", "typeVersion": 1.7, "position": [200, 0], "parameters": {"promptType": "define", "text": "hi"}},
            {"name": "Model", "type": "@n8n/n8n-nodes-langchain.lmChatOpenAi", "typeVersion": 1.2, "position": [0, 200], "parameters": {"model": {"__rl": true, "value": "gpt-4o-mini", "mode": "list"}},
             "credentials": {"openAiApi": {"id": "1", "name": "OpenAI"}}},
            {"name": "Memory", "type": "@n8n/n8n-nodes-langchain.memoryBufferWindow", "typeVersion": 1.3, "position": [100, 200], "parameters": {}},
            {"name": "Calculator", "type": "@n8n/n8n-nodes-langchain.toolCalculator", "typeVersion": 1, "position": [200, 200], "parameters": {}}
        ]);
        let full = json!({
            "Start": {"main": [[{"node": "Agent", "type": "main", "index": 0}]]},
            "Model": {"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]},
            "Memory": {"ai_memory": [[{"node": "Agent", "type": "ai_memory", "index": 0}]]},
            "Calculator": {"ai_tool": [[{"node": "Agent", "type": "ai_tool", "index": 0}]]}
        });
        let r = validate_with_expressions(&wf(nodes.clone(), full.clone()));
        assert!(!r.has_errors(), "{:?}", r.errors());
        assert!(r.warnings().iter().all(|w| w.code != "DISCONNECTED_NODE"), "sub-nodes are connected through their root");

        let mut no_model = full.clone();
        no_model.as_object_mut().unwrap().remove("Model");
        let r = validate_with_expressions(&wf(nodes.clone(), no_model));
        let all = r.errors().join("\n");
        assert!(all.contains("no chat model is connected"), "{all}");
        assert!(r.warnings().iter().any(|w| w.code == "DISCONNECTED_NODE" && w.node_name.as_deref() == Some("Model")));

        let mut wrong = full;
        wrong["Calculator"] = json!({"ai_languageModel": [[{"node": "Agent", "type": "ai_languageModel", "index": 0}]]});
        let all = validate_with_expressions(&wf(nodes, wrong)).errors().join("\n");
        assert!(all.contains("connects over ai_languageModel, but @n8n/n8n-nodes-langchain.toolCalculator supplies ai_tool"), "{all}");
    }

    #[test]
    fn warns_about_references_to_missing_nodes() {
        let w = wf(
            json!([
                {"name": "Start", "type": "n8n-nodes-base.manualTrigger", "typeVersion": 1, "position": [0, 0]},
                {"name": "Set", "type": "n8n-nodes-base.set", "typeVersion": 3.4, "position": [0, 0], "parameters": {
                    "assignments": {"assignments": [{"name": "a", "value": "={{ $('Start').item.json.x }} {{ $(\"Gone\").first().json.y }}", "type": "string"}]}}}
            ]),
            json!({"Start": {"main": [[{"node": "Set", "type": "main", "index": 0}]]}}),
        );
        let r = validate(&w);
        let warnings = r.warnings();
        let refs: Vec<&Warning> = warnings.iter().filter(|w| w.code == "UNKNOWN_NODE_REFERENCE").collect();
        assert_eq!(refs.len(), 1, "{:?}", warnings);
        assert!(refs[0].message.contains("Gone"));
    }
}
