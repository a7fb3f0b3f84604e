// Fetch a web page, extract its links with CSS selectors and keep the first ten distinct ones.
// techniques: data_extraction, find_research
import { workflow, node, trigger } from '@n8n/workflow-sdk';

const start = trigger({ type: 'n8n-nodes-base.manualTrigger', version: 1, config: { name: 'Start' } });

// The page body arrives as text in `data`; outbound calls pass the SSRF guard (public hosts only by default).
const fetchPage = node({
  type: 'n8n-nodes-base.httpRequest',
  version: 4.2,
  config: { name: 'Fetch page', parameters: { method: 'GET', url: 'https://example.com/blog' } },
});

const extract = node({
  type: 'n8n-nodes-base.html',
  version: 1.2,
  config: {
    name: 'Extract links',
    parameters: {
      operation: 'extractHtmlContent',
      sourceData: 'json',
      dataPropertyName: 'data',
      extractionValues: {
        values: [{ key: 'links', cssSelector: 'a', returnValue: 'attribute', attribute: 'href', returnArray: true }],
      },
    },
  },
});

const perLink = node({
  type: 'n8n-nodes-base.splitOut',
  version: 1,
  config: { name: 'One item per link', parameters: { fieldToSplitOut: 'links' } },
});

const distinct = node({
  type: 'n8n-nodes-base.removeDuplicates',
  version: 2,
  config: { name: 'Distinct links', parameters: { compare: 'allFields' } },
});

const firstTen = node({ type: 'n8n-nodes-base.limit', version: 1, config: { name: 'First ten', parameters: { maxItems: 10 } } });

export default workflow('page-links', 'Collect page links').add(start).to(fetchPage).to(extract).to(perLink).to(distinct).to(firstTen);
