// Receive orders on a webhook, route big orders and small orders differently, answer the caller.
// techniques: triage, data_transformation
import { workflow, node, trigger, ifElse, merge, expr } from '@n8n/workflow-sdk';

const hook = trigger({
  type: 'n8n-nodes-base.webhook',
  version: 2,
  config: { name: 'New order', parameters: { httpMethod: 'POST', path: 'orders', responseMode: 'responseNode' } },
});

// A webhook item is { headers, params, query, body }: posted fields live under body.
const prepare = node({
  type: 'n8n-nodes-base.set',
  version: 3.4,
  config: {
    name: 'Prepare order',
    parameters: {
      mode: 'manual',
      assignments: {
        assignments: [
          { name: 'orderId', value: expr('{{ $json.body.id }}'), type: 'string' },
          { name: 'total', value: expr('{{ Number($json.body.total) }}'), type: 'number' },
          { name: 'customer', value: expr('{{ $json.body.customer }}'), type: 'string' },
        ],
      },
    },
  },
});

const isBig = ifElse({
  version: 2.2,
  config: {
    name: 'Is big order',
    parameters: {
      conditions: {
        combinator: 'and',
        conditions: [{ leftValue: expr('{{ $json.total }}'), rightValue: 100, operator: { type: 'number', operation: 'gt' } }],
      },
    },
  },
});

const big = node({
  type: 'n8n-nodes-base.set',
  version: 3.4,
  config: {
    name: 'Mark for review',
    parameters: {
      includeOtherFields: true,
      assignments: { assignments: [{ name: 'queue', value: 'review', type: 'string' }] },
    },
  },
});

const small = node({
  type: 'n8n-nodes-base.set',
  version: 3.4,
  config: {
    name: 'Mark as automatic',
    parameters: {
      includeOtherFields: true,
      assignments: { assignments: [{ name: 'queue', value: 'automatic', type: 'string' }] },
    },
  },
});

// Both branches meet again before the single answer to the caller.
const join = merge({ version: 3, config: { name: 'Join branches', parameters: { mode: 'append' } } });

const answer = node({
  type: 'n8n-nodes-base.respondToWebhook',
  version: 1.1,
  config: { name: 'Answer caller', parameters: { respondWith: 'firstIncomingItem' } },
});

export default workflow('order-triage', 'Order triage')
  .add(hook)
  .to(prepare)
  .to(isBig.onTrue(big.to(join.input(0))).onFalse(small.to(join.input(1))))
  .add(join)
  .to(answer);
