// Call an API once per item in small batches with a pause between batches, then collect every answer.
// techniques: data_transformation, find_research
import { workflow, node, trigger, expr } from '@n8n/workflow-sdk';

const start = trigger({ type: 'n8n-nodes-base.manualTrigger', version: 1, config: { name: 'Start' } });

// Stand-in input: replace with the node that produces the real items.
const ids = node({
  type: 'n8n-nodes-base.code',
  version: 2,
  config: {
    name: 'List ids',
    parameters: { mode: 'runOnceForAllItems', jsCode: 'return [1, 2, 3, 4, 5].map((id) => ({ json: { id } }));' },
  },
});

// Output 0 ("done") fires once with every item after the last batch; output 1 ("loop") per batch.
const batches = node({ type: 'n8n-nodes-base.splitInBatches', version: 3, config: { name: 'In batches of 2', parameters: { batchSize: 2 } } });

const call = node({
  type: 'n8n-nodes-base.httpRequest',
  version: 4.2,
  config: { name: 'Fetch record', parameters: { method: 'GET', url: expr('https://api.example.com/records/{{ $json.id }}') } },
});

const pause = node({
  type: 'n8n-nodes-base.wait',
  version: 1.1,
  config: { name: 'Pause', parameters: { resume: 'timeInterval', amount: 1, unit: 'seconds' } },
});

const collect = node({
  type: 'n8n-nodes-base.aggregate',
  version: 1,
  config: { name: 'Collect answers', parameters: { aggregate: 'aggregateAllItemData', destinationFieldName: 'records' } },
});

// The loop goes back into the batch node: call → pause → next batch.
export default workflow('batched-calls', 'Batched API calls')
  .add(start)
  .to(ids)
  .to(batches.output(0, collect).output(1, call.to(pause).to(batches)));
