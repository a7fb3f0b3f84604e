// Secret entry for credential and setup cards. The form is the credential
// type's own (its fields from `GET /instance-ai/credential-types`); the
// secret goes straight to the credentials REST API (`POST
// /instance-ai/credentials`) and never into the chat or the model's context:
// the card only tells the agent which credential to use. A server without
// that API (it answers 404) gets a plain key field and a clear message. An
// OAuth2 credential, once saved, is connected at the provider (Connect).

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

/**
 * Connects an OAuth2 credential: the provider's page opens in a new window
 * (opened at the click, so no popup blocker stops it) at the start route's
 * link; the provider sends the person back to the callback, which stores
 * the tokens. Nothing secret passes through this page.
 */
export async function connectCredential(api, id) {
  const w = window.open('', '_blank');
  try {
    const start = await api.request('GET', `/instance-ai/credentials/${encodeURIComponent(id)}/oauth2/auth`);
    if (w) {
      w.opener = null;
      w.location.href = start.authorizationUrl;
    } else {
      window.location.href = start.authorizationUrl;
    }
  } catch (e) {
    if (w) w.close();
    throw e;
  }
}

const types = new Map();

/** The type's form: its description, `null` when the server has no such type, `undefined` without the API. */
export function credentialType(api, type) {
  if (!types.has(type)) {
    types.set(type, api.request('GET', `/instance-ai/credential-types?query=${encodeURIComponent(type)}`)
      .then((r) => ((r && r.types) || []).find((t) => t.type === type) || null)
      .catch((e) => {
        types.delete(type);
        if (e.status === 404 || e.status === 405) return undefined;
        throw e;
      }));
  }
  return types.get(type);
}

const FALLBACK = [{ name: 'apiKey', displayName: 'API key or token', type: 'string', password: true, required: true }];

let seq = 0;

/** One input per field: secrets as password inputs, choices as a select. */
function fieldInput(id, f) {
  const attrs = { autocomplete: 'off', spellcheck: 'false', 'data-field': f.name };
  if (f.type === 'options' && Array.isArray(f.options)) {
    return h('select', { id, class: 'input', attrs },
      f.options.map((o) => h('option', { value: String(o.value), text: o.name || String(o.value), selected: o.value === f.default })));
  }
  if (f.type === 'boolean') return h('input', { id, type: 'checkbox', checked: f.default === true, attrs });
  if (f.type === 'json' && !f.password) return h('textarea', { id, class: 'input', attrs });
  return h('input', { id, class: 'input', type: f.password ? 'password' : 'text', attrs });
}

function fieldValue(el, f) {
  if (f.type === 'boolean') return el.checked;
  if (f.type === 'number') return el.value === '' ? '' : Number(el.value);
  return el.value;
}

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
  const nameInput = h('input', { id: `${id}-name`, class: 'input', value: request.suggestedName || `My ${type}`, attrs: { autocomplete: 'off' } });
  const save = h('button', { class: 'btn', type: 'button', text: 'Save credential' });
  const fieldsBox = h('div', { class: 'cred-fields' }, h('p', { class: 'hint', text: 'Loading the form…' }));
  let inputs = [];
  let typeInfo = null;
  function render(fields) {
    inputs = fields.map((f, k) => ({ f, el: fieldInput(`${id}-f${k}`, f) }));
    fieldsBox.replaceChildren(...inputs.flatMap(({ f, el }, k) => [
      h('label', { class: 'label', attrs: { for: `${id}-f${k}` }, text: f.displayName || f.name }), el,
      f.description ? h('p', { class: 'hint', text: f.description }) : null,
    ].filter(Boolean)));
  }
  credentialType(api, type).then((t) => {
    if (t === undefined) render(request.requiredFields && request.requiredFields.length
      ? request.requiredFields.map((f) => (typeof f === 'string' ? { name: f, displayName: f, password: true, required: true } : { password: true, ...f }))
      : FALLBACK);
    else if (t === null) {
      fieldsBox.replaceChildren(h('p', { class: 'hint', text: `This server has no ${type} credential type; pick a saved credential or ask the assistant for another type.` }));
      save.disabled = true;
    } else {
      typeInfo = t;
      render(t.fields || []);
    }
  }).catch((e) => show(e.message));
  const form = h('div', { class: 'cred-new' },
    h('label', { class: 'label', attrs: { for: `${id}-name` }, text: 'Credential name' }), nameInput,
    fieldsBox,
    h('p', { class: 'hint', text: 'The secret is stored encrypted and is never shown to the assistant.' }),
    save, message);
  save.addEventListener('click', async () => {
    const data = {};
    for (const { f, el } of inputs) {
      const v = fieldValue(el, f);
      if (v === '' || v === undefined) {
        if (f.required && !f.displayOptions) { show(`Fill in ${f.displayName || f.name} first.`); return; }
        continue;
      }
      data[f.name] = v;
    }
    save.disabled = true;
    save.textContent = 'Saving…';
    try {
      const saved = await saveCredential(api, { type, name: nameInput.value.trim() || type, data });
      for (const { el } of inputs) if (el.type === 'password' || el.tagName === 'TEXTAREA') el.value = '';
      save.textContent = 'Saved';
      message.hidden = true;
      onChosen(saved && saved.id);
      const grant = data.grantType;
      if (typeInfo && typeInfo.connect && saved && saved.id && (grant === undefined || grant === 'authorizationCode' || grant === 'pkce')) {
        // OAuth2: the account is connected at the provider
        const connect = h('button', { class: 'btn', type: 'button', text: 'Connect' });
        connect.addEventListener('click', () => connectCredential(api, saved.id).catch((e) => show(e.message)));
        form.append(h('p', { class: 'hint', text: 'Connect the account at the provider before the workflow runs.' }), connect);
      }
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
