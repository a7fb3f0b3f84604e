// Files attached to the next message: the composer's picker and chips, the
// encoding the chat POST takes (`{type: "file", fileName, mimeType, data}`,
// data in base64) and the chips shown on a sent message. The server checks
// the limits and names what it refuses (count, total size); the page only
// stops a body the transport could not carry to the server at all.

import { h } from './dom.js';

/** The chat request is a Lambda payload: a larger body never reaches the server, so its own error could not come back. */
const MAX_BODY_BYTES = 6 * 1000 * 1000;

export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** A chip naming one file: `name · size`, with a remove button when `onRemove` is given. */
export function fileChip(file, onRemove) {
  const name = file.fileName || file.name;
  return h('li', { class: 'file-chip', attrs: { title: `${name} (${file.mimeType || file.type || 'unknown type'})` } },
    h('span', { class: 'file-icon', attrs: { 'aria-hidden': 'true' } }),
    h('span', { class: 'file-name', text: name }),
    h('span', { class: 'file-size', text: formatBytes(file.size) }),
    onRemove ? h('button', { type: 'button', class: 'file-remove', text: '×', attrs: { 'aria-label': `Remove ${name}` }, on: { click: onRemove } }) : null);
}

/** The chips of a sent message (metadata only: `{fileName, mimeType, size}`). */
export function messageFiles(files) {
  if (!files || !files.length) return null;
  return h('ul', { class: 'file-chips msg-files', attrs: { 'aria-label': 'Attached files' } }, files.map((f) => fileChip(f)));
}

/**
 * The composer's pending files. `changed()` is called whenever the list
 * changes, so the page can re-render the chips.
 */
export function createPicker(changed) {
  let files = [];
  const input = h('input', { type: 'file', class: 'sr-only', multiple: true, tabIndex: -1, attrs: { 'aria-label': 'Choose files to attach' } });
  const button = h('button', { type: 'button', class: 'btn btn-ghost attach', attrs: { 'aria-label': 'Attach files', title: 'Attach files' } },
    h('span', { class: 'attach-icon', attrs: { 'aria-hidden': 'true' } }));
  const chips = h('ul', { class: 'file-chips composer-files', attrs: { 'aria-label': 'Files to send' } });
  chips.hidden = true;
  button.addEventListener('click', () => input.click());
  input.addEventListener('change', () => {
    files = files.concat([...input.files]);
    input.value = '';
    changed();
  });

  function render() {
    chips.replaceChildren(...files.map((f, i) => fileChip(f, () => { files.splice(i, 1); changed(); button.focus(); })));
    chips.hidden = !files.length;
  }

  return {
    input, button, chips, render,
    get files() { return files.slice(); },
    /** Replaces the list (a failed send puts its files back). */
    set(list) { files = list.slice(); changed(); },
    clear() { files = []; changed(); },
  };
}

/** Metadata of files, as the server shows them on the message. */
export function describe(files) {
  return files.map((f) => ({ fileName: f.name, mimeType: f.type || 'application/octet-stream', size: f.size }));
}

/** The chat request's `attachments`; throws an Error a person can read when the body could not be carried. */
export async function encode(files) {
  const base64 = Math.ceil(files.reduce((n, f) => n + f.size, 0) / 3) * 4;
  if (base64 > MAX_BODY_BYTES) {
    throw new Error(`These files are too large to send together (${formatBytes(files.reduce((n, f) => n + f.size, 0))}). Remove some and try again.`);
  }
  return Promise.all(files.map(async (f) => ({
    type: 'file',
    fileName: f.name,
    mimeType: f.type || 'application/octet-stream',
    data: await readBase64(f),
  })));
}

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    // A data URL: the base64 is what follows the comma.
    reader.onload = () => { const url = String(reader.result); const comma = url.indexOf(','); resolve(comma < 0 ? '' : url.slice(comma + 1)); };
    reader.onerror = () => reject(new Error(`Could not read ${file.name}.`));
    reader.readAsDataURL(file);
  });
}
