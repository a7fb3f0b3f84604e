// Every morning fetch records from a JSON API, keep the open ones and post one digest to a notification URL.
// techniques: scheduling, notification, data_transformation
import { workflow, node, trigger, expr } from '@n8n/workflow-sdk';

const every = trigger({
  type: 'n8n-nodes-base.scheduleTrigger',
  version: 1.2,
  config: { name: 'Every morning', parameters: { rule: { interval: [{ field: 'cronExpression', expression: '0 8 * * 1-5' }] } } },
});

// Replace the URL with the API the user named; add a credential for its auth (never a literal token).
const fetchTickets = node({
  type: 'n8n-nodes-base.httpRequest',
  version: 4.2,
  config: { name: 'Fetch tickets', parameters: { method: 'GET', url: 'https://api.example.com/tickets' } },
});

// The API answers { tickets: [...] }: one item per ticket from here on.
const perTicket = node({
  type: 'n8n-nodes-base.splitOut',
  version: 1,
  config: { name: 'One item per ticket', parameters: { fieldToSplitOut: 'tickets' } },
});

const openOnly = node({
  type: 'n8n-nodes-base.filter',
  version: 2.2,
  config: {
    name: 'Keep open tickets',
    parameters: {
      conditions: {
        combinator: 'and',
        conditions: [{ leftValue: expr('{{ $json.status }}'), rightValue: 'open', operator: { type: 'string', operation: 'equals' } }],
      },
    },
  },
});

// Many items in, one item out: the digest is sent once, not once per ticket.
const collect = node({
  type: 'n8n-nodes-base.aggregate',
  version: 1,
  config: { name: 'Collect titles', parameters: { aggregate: 'aggregateIndividualFields', fieldsToAggregate: { fieldToAggregate: [{ fieldToAggregate: 'title' }] } } },
});

const notify = node({
  type: 'n8n-nodes-base.httpRequest',
  version: 4.2,
  config: {
    name: 'Post digest',
    parameters: {
      method: 'POST',
      url: 'https://hooks.example.com/digest',
      sendBody: true,
      contentType: 'json',
      specifyBody: 'json',
      jsonBody: expr('{{ JSON.stringify({ text: "Open tickets: " + $json.title.join(", ") }) }}'),
    },
  },
});

export default workflow('ticket-digest', 'Morning ticket digest')
  .add(every)
  .to(fetchTickets)
  .to(perTicket)
  .to(openOnly)
  .to(collect)
  .to(notify);
