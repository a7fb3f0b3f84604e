// Route incoming support tickets by priority with a Switch (one output per rule plus a fallback).
// techniques: triage
import { workflow, node, trigger, switchCase, expr } from '@n8n/workflow-sdk';

const hook = trigger({
  type: 'n8n-nodes-base.webhook',
  version: 2,
  config: { name: 'New ticket', parameters: { httpMethod: 'POST', path: 'tickets' } },
});

const rule = (value: string) => ({
  conditions: {
    combinator: 'and',
    conditions: [{ leftValue: expr('{{ $json.body.priority }}'), rightValue: value, operator: { type: 'string', operation: 'equals' } }],
  },
});

// Outputs follow the rules: 0 = urgent, 1 = normal, 2 = the fallback ("extra") output.
const byPriority = switchCase({
  version: 3.2,
  config: {
    name: 'By priority',
    parameters: {
      mode: 'rules',
      rules: { values: [rule('urgent'), rule('normal')] },
      options: { fallbackOutput: 'extra' },
    },
  },
});

const label = (name: string, queue: string) =>
  node({
    type: 'n8n-nodes-base.set',
    version: 3.4,
    config: { name, parameters: { includeOtherFields: true, assignments: { assignments: [{ name: 'queue', value: queue, type: 'string' }] } } },
  });

export default workflow('ticket-router', 'Route tickets by priority')
  .add(hook)
  .to(byPriority.onCase(0, label('Urgent queue', 'urgent')).onCase(1, label('Normal queue', 'normal')).onCase(2, label('Triage by hand', 'manual')));
