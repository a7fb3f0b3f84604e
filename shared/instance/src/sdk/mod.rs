//! Workflow code → n8n workflow JSON. Code is TypeScript or JavaScript
//! written against our SDK (`sdk.js`, documented in `reference.md`): types
//! are stripped ([`ts`]), the SDK is prepended, and the script runs in the
//! expression crate's sandbox (time and memory limits, no host access).
//! Plain workflow JSON is accepted as is.

pub mod codegen;
pub mod ts;

use serde_json::Value;

const SDK_JS: &str = include_str!("sdk.js");
pub const REFERENCE: &str = include_str!("reference.md");
/// Largest code we evaluate: it goes to the executor's sandbox in one queue
/// message (at most 256 KB, with the SDK and JSON escaping beside it).
pub const MAX_CODE: usize = 192 * 1024;

/// What workflow code asks for: workflow JSON as it is, or a script for the
/// sandbox (`executions::compile_workflow_here` reads its result).
#[derive(Debug)]
pub enum Prepared {
    Workflow(Value),
    Script(String),
}

/// Reads workflow code (or workflow JSON). `Err` carries a message for the
/// model: what is wrong and, where known, where.
pub fn prepare(code: &str) -> Result<Prepared, String> {
    if code.len() > MAX_CODE {
        return Err(format!("the code is {} bytes; the limit is {MAX_CODE}", code.len()));
    }
    let trimmed = code.trim();
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
            return if v.get("nodes").is_some_and(Value::is_array) {
                Ok(Prepared::Workflow(v))
            } else {
                Err("workflow JSON must be an object with a `nodes` array and `connections`".into())
            };
        }
    }
    let js = ts::strip(code).map_err(|e| format!("cannot read the code: {e}"))?;
    Ok(Prepared::Script(format!(
        "{SDK_JS}\nconst __exports = {{}};\nconst module = {{ exports: {{}} }};\n{{\n{js}\n}}\n\
         const __wf = __exports.default !== undefined ? __exports.default : (module.exports.default !== undefined ? module.exports.default : module.exports);\n\
         if (__sdk.isWorkflow(__wf)) return [{{ json: {{ workflow: JSON.stringify(__wf.toJSON()) }} }}];\n\
         if (__wf && typeof __wf === 'object' && Array.isArray(__wf.nodes)) return [{{ json: {{ workflow: JSON.stringify(__wf) }} }}];\n\
         throw new Error('the code must end with `export default workflow(...)...` (the workflow builder); nothing was exported');\n"
    )))
}

/// Evaluates workflow code in this process's sandbox (tests; the MCP
/// server and the agent send the script to the executor: `Instance::compile`).
pub fn evaluate(code: &str) -> Result<Value, String> {
    match prepare(code)? {
        Prepared::Workflow(wf) => Ok(wf),
        Prepared::Script(script) => executions::compile_workflow_here(&script).map(|c| c.workflow),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const EXAMPLE: &str = r#"
import { workflow, node, trigger, ifElse, expr } from '@n8n/workflow-sdk';

const hook = trigger({ type: 'n8n-nodes-base.webhook', version: 2, config: { name: 'Webhook', parameters: { httpMethod: 'POST', path: 'orders' } } });
const prepare = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Prepare', parameters: {
  mode: 'manual',
  assignments: { assignments: [{ name: 'total', value: expr('{{ $json.body.total }}'), type: 'number' }] },
} } });
const big: any = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Big order', parameters: { assignments: { assignments: [{ name: 'size', value: 'big', type: 'string' }] } } } });
const small = node({ type: 'n8n-nodes-base.set', version: 3.4, config: { name: 'Small order', parameters: { assignments: { assignments: [{ name: 'size', value: 'small', type: 'string' }] } } } });
const check = ifElse({ version: 2.2, config: { name: 'Is big', parameters: { conditions: {
  combinator: 'and',
  conditions: [{ leftValue: expr('{{ $json.total }}'), rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
} } } });

export default workflow('orders', 'Order triage')
  .add(hook)
  .to(prepare)
  .to(check.onTrue(big).onFalse(small));
"#;

    #[test]
    fn builds_branching_workflow_json() {
        let wf = evaluate(EXAMPLE).unwrap();
        assert_eq!(wf["name"], "Order triage");
        let names: Vec<&str> = wf["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Webhook", "Prepare", "Is big", "Big order", "Small order"]);
        assert_eq!(wf["connections"]["Webhook"]["main"][0][0]["node"], "Prepare");
        assert_eq!(wf["connections"]["Is big"]["main"][0][0]["node"], "Big order");
        assert_eq!(wf["connections"]["Is big"]["main"][1][0]["node"], "Small order");
        assert_eq!(wf["nodes"][1]["parameters"]["assignments"]["assignments"][0]["value"], "={{ $json.body.total }}");
        let report = crate::validate::validate_with_expressions(&wf);
        assert!(!report.has_errors(), "{:?}", report.errors());
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = evaluate("export default workflow('x', 'y').to(node({ type: 'n8n-nodes-base.set', version: 1 }));").unwrap_err();
        assert!(e.contains("nothing to connect from"), "{e}");
        let e = evaluate("const a = ;").unwrap_err();
        assert!(e.contains("syntax") || e.contains("error"), "{e}");
        let e = evaluate("const x = 1;").unwrap_err();
        assert!(e.contains("export default"), "{e}");
        let e = evaluate("while (true) {}").unwrap_err();
        assert!(e.contains("longer than"), "{e}");
    }
}
