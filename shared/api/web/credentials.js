// Secret entry for credential and setup cards. The secret goes straight to
// the credentials REST API (`POST /instance-ai/credentials`) and never into
// the chat or the model's context; the card only tells the agent which
// credential to use. Until that API exists on the server (it answers 404),
// the card says so instead of failing silently.

import { ApiError } from './api.js';
import { h } from './dom.js';

export const NOT_AVAILABLE =
  'Saving credentials from this page is not available on this server yet. Create the credential with the MCP server\u2019s tools, then press Continue.';

export async function saveCredential(api, { type, name, data }) {
  try {
    return await api.request('POST', '/instance-ai/credentials', { type, name, data });
  } catch (e) {
    if (e.status === 404 || e.status === 405) throw new ApiError(e.status, 'not_available', NOT_AVAILABLE);
    throw e;
  }
}

let seq = 0;

/**
 * One credential request: pick an existing credential of the type or enter
 * a new one. `onChosen(id)` gets the credential to use.
 */
export function credentialPicker(api, request, onChosen) {
  const type = request.credentialType || request.type || 'credential';
  const existing = request.existingCredentials || [];
  const id = `cred-${++seq}`;
  const message = h('p', { class: 'card-error', attrs: { role: 'alert' } });
  message.hidden = true;
  const fields = (request.requiredFields && request.requiredFields.length ? request.requiredFields : [{ name: 'apiKey', displayName: 'API key or token' }])
    .map((f) => (typeof f === 'string' ? { name: f, displayName: f } : f));
  const nameInput = h('input', { id: `${id}-name`, class: 'input', value: request.suggestedName || `My ${type}`, attrs: { autocomplete: 'off' } });
  const secretInputs = fields.map((f, k) => h('input', {
    id: `${id}-f${k}`, class: 'input', type: 'password', attrs: { autocomplete: 'off', spellcheck: 'false', 'data-field': f.name },
  }));
  const save = h('button', { class: 'btn', type: 'button', text: 'Save credential' });
  const form = h('div', { class: 'cred-new' },
    h('label', { class: 'label', attrs: { for: `${id}-name` }, text: 'Name' }), nameInput,
    fields.map((f, k) => [h('label', { class: 'label', attrs: { for: `${id}-f${k}` }, text: f.displayName || f.name }), secretInputs[k]]),
    h('p', { class: 'hint', text: 'The secret is stored encrypted and is never shown to the assistant.' }),
    save, message);
  save.addEventListener('click', async () => {
    const data = {};
    secretInputs.forEach((inp) => { data[inp.dataset.field] = inp.value; });
    if (Object.values(data).some((v) => !v)) { show('Fill in every field first.'); return; }
    save.disabled = true;
    save.textContent = 'Saving…';
    try {
      const saved = await saveCredential(api, { type, name: nameInput.value.trim() || type, data });
      secretInputs.forEach((inp) => { inp.value = ''; });
      save.textContent = 'Saved';
      onChosen(saved && saved.id);
    } catch (e) {
      save.disabled = false;
      save.textContent = 'Save credential';
      show(e.message);
    }
  });
  function show(text) { message.textContent = text; message.hidden = false; }

  const select = existing.length
    ? h('select', { id: `${id}-existing`, class: 'input', on: { change: (e) => onChosen(e.target.value || null) } },
      h('option', { value: '', text: 'Choose a saved credential…' }),
      existing.map((c) => h('option', { value: c.id, text: c.name || c.id })))
    : null;
  return h('div', { class: 'cred' },
    h('div', { class: 'cred-head' }, h('strong', { text: type }), request.reason ? h('span', { class: 'muted', text: ` — ${request.reason}` }) : null),
    select ? [h('label', { class: 'label', attrs: { for: `${id}-existing` }, text: 'Use a saved credential' }), select,
      h('p', { class: 'hint', text: 'or add a new one:' })] : null,
    form);
}
