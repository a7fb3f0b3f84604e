// Collect sign-ups with a hosted form, normalise the fields and store each one as a data table row.
// techniques: form_input, data_persistence
import { workflow, node, trigger, expr } from '@n8n/workflow-sdk';

const form = trigger({
  type: 'n8n-nodes-base.formTrigger',
  version: 2.2,
  config: {
    name: 'Sign-up form',
    parameters: {
      formTitle: 'Join the beta',
      formDescription: 'Leave your name and email and we will be in touch.',
      formFields: {
        values: [
          { fieldLabel: 'Name', fieldType: 'text', requiredField: true },
          { fieldLabel: 'Email', fieldType: 'email', requiredField: true },
        ],
      },
    },
  },
});

// Form fields arrive under their labels; map them to the table's column names.
const normalise = node({
  type: 'n8n-nodes-base.set',
  version: 3.4,
  config: {
    name: 'Normalise fields',
    parameters: {
      assignments: {
        assignments: [
          { name: 'name', value: expr('{{ $json.Name.trim() }}'), type: 'string' },
          { name: 'email', value: expr('{{ $json.Email.trim().toLowerCase() }}'), type: 'string' },
          { name: 'signed_up_at', value: expr('{{ $json.submittedAt }}'), type: 'string' },
        ],
      },
    },
  },
});

// Create the table first (columns name, email, signed_up_at) and put its id here.
const store = node({
  type: 'n8n-nodes-base.dataTable',
  version: 1,
  config: {
    name: 'Store sign-up',
    parameters: {
      resource: 'row',
      operation: 'insert',
      dataTableId: { __rl: true, mode: 'id', value: 'signups-table-id' },
      columns: { mappingMode: 'autoMapInputData', value: null },
    },
  },
});

export default workflow('beta-signups', 'Store beta sign-ups').add(form).to(normalise).to(store);
