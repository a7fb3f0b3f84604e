// The page: sign-in, the thread list, and one open thread at a time,
// opened in the spec's Frontend Flow order — messages (cursor =
// nextEventId - 1), then status, then the event stream from the cursor.

import { h, sync, createMemo } from './dom.js';
import { createApi } from './api.js';
import { connectEvents } from './sse.js';
import { createThread, loadSnapshot, loadStatus, applyEvent } from './state.js';
import { renderConversation } from './render.js';
import { relativeTime } from './format.js';
import { createPicker, describe, encode, messageFiles } from './attachments.js';

const KEY_STORAGE = 'instance-ai.key';
const root = document.getElementById('app');
const eventsBase = (document.querySelector('meta[name="instance-ai-events-url"]')?.content || '').replace(/\/$/, '');

const app = {
  key: localStorage.getItem(KEY_STORAGE) || '',
  threads: [],
  thread: null,
  stream: null,
  newThreads: new Set(),
  pending: null,
  sending: false,
  stopping: false,
  conn: 'idle',
  memo: createMemo(),
  openKeys: new Set(),
  decided: new Map(),
  epoch: 0,
  metrics: { sendAt: 0, firstEventMs: null, firstTextMs: null },
};
window.__instanceAi = app.metrics;

const api = createApi({ getKey: () => app.key, onUnauthorized: () => signOut('Your API key was not accepted. Sign in again.') });

// ---------------------------------------------------------------- sign-in

function signInView(message) {
  const input = h('input', { id: 'api-key', class: 'input input-lg', type: 'password', required: true, attrs: { autocomplete: 'current-password', spellcheck: 'false', placeholder: 'ia_…' } });
  const error = h('p', { class: 'form-error', attrs: { role: 'alert', id: 'signin-error' }, text: message || '' });
  error.hidden = !message;
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-lg', text: 'Sign in' });
  const form = h('form', { class: 'signin-card', attrs: { 'aria-labelledby': 'signin-title' } },
    h('div', { class: 'brand brand-lg' }, logo(), h('span', { text: 'Instance AI' })),
    h('h1', { id: 'signin-title', class: 'signin-title', text: 'Sign in' }),
    h('p', { class: 'muted', text: 'Your assistant for building, running and fixing workflows. Sign in with an API key.' }),
    h('label', { class: 'label', attrs: { for: 'api-key' }, text: 'API key' }), input,
    error, submit,
    h('p', { class: 'hint', text: 'The key stays in this browser until you sign out.' }));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    app.key = key;
    try {
      const list = await createApi({ getKey: () => key, onUnauthorized: () => {} }).listThreads();
      localStorage.setItem(KEY_STORAGE, key);
      app.threads = list.threads;
      showShell();
    } catch (err) {
      app.key = '';
      error.textContent = err.status === 401 ? 'That key was not accepted. Check it and try again.' : err.message;
      error.hidden = false;
      submit.disabled = false;
      submit.textContent = 'Sign in';
      input.focus();
    }
  });
  sync(root, [h('div', { class: 'signin' }, form)]);
  input.focus();
}

function logo() {
  return h('span', { class: 'logo', attrs: { 'aria-hidden': 'true' } });
}

function signOut(message) {
  if (app.stream) app.stream.close();
  app.stream = null;
  app.thread = null;
  app.key = '';
  app.threads = [];
  localStorage.removeItem(KEY_STORAGE);
  app.memo.clear();
  signInView(message);
}

// ---------------------------------------------------------------- shell

const ui = {};

function showShell() {
  ui.threadList = h('ul', { class: 'threads', attrs: { role: 'list' } });
  ui.title = h('h1', { class: 'thread-title', text: 'New conversation' });
  ui.conn = h('span', { class: 'conn', attrs: { role: 'status', 'aria-live': 'polite' } });
  ui.banner = h('div', { class: 'banner', attrs: { role: 'alert' } });
  ui.banner.hidden = true;
  ui.conversation = h('div', { class: 'conversation', attrs: { role: 'log', 'aria-label': 'Conversation', 'aria-live': 'off' } });
  ui.empty = h('div', { class: 'empty' },
    h('h2', { text: 'What should we automate?' }),
    h('p', { class: 'muted', text: 'Ask for a workflow, a fix, a run or a data table. The assistant shows each step it takes and asks before it changes anything important.' }));
  ui.scroller = h('div', { class: 'scroller' }, h('div', { class: 'column' }, ui.empty, ui.conversation));
  ui.input = h('textarea', { id: 'message', class: 'composer-input', rows: 1, attrs: { placeholder: 'Message Instance AI…', 'aria-label': 'Message' } });
  ui.send = h('button', { type: 'submit', class: 'btn btn-primary send', text: 'Send' });
  ui.stop = h('button', { type: 'button', class: 'btn btn-stop stop', text: 'Stop', attrs: { 'aria-label': 'Stop the response' } });
  ui.stop.hidden = true;
  ui.picker = createPicker(() => ui.picker.render());
  ui.composer = h('form', { class: 'composer', attrs: { 'aria-label': 'Send a message' } },
    h('div', { class: 'composer-box' }, ui.picker.chips, h('div', { class: 'composer-row' }, ui.picker.button, ui.picker.input, ui.input, ui.send, ui.stop)));
  ui.menu = h('button', { type: 'button', class: 'btn btn-ghost menu', attrs: { 'aria-label': 'Show conversations', 'aria-expanded': 'false', 'aria-controls': 'sidebar' } }, h('span', { class: 'menu-icon', attrs: { 'aria-hidden': 'true' } }));
  ui.sidebar = h('aside', { id: 'sidebar', class: 'sidebar', attrs: { 'aria-label': 'Conversations' } },
    h('div', { class: 'brand' }, logo(), h('span', { text: 'Instance AI' })),
    h('button', { type: 'button', class: 'btn btn-secondary new-thread', text: 'New conversation', on: { click: () => newThread() } }),
    h('nav', { class: 'thread-nav', attrs: { 'aria-label': 'Your conversations' } }, ui.threadList),
    h('div', { class: 'sidebar-foot' }, h('button', { type: 'button', class: 'btn btn-ghost signout', text: 'Sign out', on: { click: () => signOut() } })));
  ui.scrim = h('div', { class: 'scrim', on: { click: () => drawer(false) } });
  ui.shell = h('div', { class: 'shell' }, ui.sidebar, ui.scrim,
    h('main', { class: 'main' }, h('header', { class: 'topbar' }, ui.menu, ui.title, ui.conn), ui.banner, ui.scroller, ui.composer));
  ui.announcer = h('div', { class: 'sr-only', attrs: { 'aria-live': 'polite', role: 'status' } });
  sync(root, [ui.shell, ui.announcer]);

  ui.menu.addEventListener('click', () => drawer(!ui.shell.classList.contains('drawer-open')));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape') drawer(false); });
  ui.composer.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  ui.input.addEventListener('input', autosize);
  ui.stop.addEventListener('click', stop);
  window.addEventListener('hashchange', route);
  renderThreads();
  route();
  refreshThreads();
}

function drawer(open) {
  if (!ui.shell) return;
  ui.shell.classList.toggle('drawer-open', open);
  ui.menu.setAttribute('aria-expanded', String(open));
  if (open) ui.sidebar.querySelector('.new-thread').focus();
}

function autosize() {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight, 200)}px`;
}

function banner(text) {
  ui.banner.textContent = text || '';
  ui.banner.hidden = !text;
}

function announce(text) {
  ui.announcer.textContent = '';
  setTimeout(() => { ui.announcer.textContent = text; }, 30);
}

async function refreshThreads() {
  try {
    const list = await api.listThreads();
    app.threads = list.threads;
    renderThreads();
  } catch (e) {
    if (e.status !== 401) banner(`Could not load your conversations: ${e.message}`);
  }
}

function renderThreads() {
  const current = app.thread && app.thread.threadId;
  const items = app.threads;
  if (!items.length) {
    sync(ui.threadList, [h('li', { class: 'threads-empty muted', text: 'No conversations yet.' })]);
    return;
  }
  sync(ui.threadList, items.map((t) => {
    const title = (app.thread && app.thread.threadId === t.threadId && displayTitle(app.thread)) || t.title || t.preview || 'New conversation';
    const a = h('a', { class: 'thread-link', href: `#/t/${encodeURIComponent(t.threadId)}`, attrs: { 'aria-current': t.threadId === current ? 'page' : false } },
      h('span', { class: 'thread-name', text: title }),
      h('span', { class: 'thread-meta' }, t.hasActiveRun ? h('span', { class: 'live-dot', attrs: { 'aria-label': 'running' } }) : null, relativeTime(t.lastActivityAt)));
    a.addEventListener('click', () => drawer(false));
    return h('li', null, a);
  }));
}

// ---------------------------------------------------------------- threads

/** The thread's title, or its first message until the server names it. */
function displayTitle(thread) {
  if (thread.title) return thread.title;
  const first = thread.runs.find((r) => r.user && r.user.content);
  return first ? first.user.content.split('\n')[0].slice(0, 60) : null;
}

function newThreadId() {
  const bytes = crypto.getRandomValues(new Uint8Array(9));
  return `t-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

function newThread() {
  const id = newThreadId();
  app.newThreads.add(id);
  location.hash = `#/t/${id}`;
  drawer(false);
}

function route() {
  const m = location.hash.match(/^#\/t\/([^/]+)$/);
  if (m) openThread(decodeURIComponent(m[1]));
  else newThread();
}

async function openThread(id) {
  if (app.thread && app.thread.threadId === id) return;
  if (app.stream) app.stream.close();
  app.stream = null;
  app.memo.clear();
  app.decided.clear();
  app.openKeys.clear();
  app.pending = null;
  banner('');
  const thread = createThread(id);
  app.thread = thread;
  ui.title.textContent = 'New conversation';
  render();
  renderThreads();
  // 1. messages: the snapshot, and the cursor nextEventId - 1.
  try {
    const page = await api.messages(id);
    if (app.thread !== thread) return;
    loadSnapshot(thread, page);
  } catch (e) {
    if (app.thread !== thread) return;
    if (e.status === 404) {
      if (!app.newThreads.has(id)) banner('This conversation does not exist, or it belongs to someone else.');
      setConn('idle');
      render();
      ui.input.focus();
      return;
    }
    banner(`Could not load this conversation: ${e.message}`);
    return;
  }
  thread.title = thread.title || (app.threads.find((t) => t.threadId === id) || {}).title || null;
  // 2. status: active run, background tasks.
  try {
    loadStatus(thread, await api.status(id));
  } catch (e) {
    if (app.thread !== thread) return;
    banner(`Could not load this conversation's status: ${e.message}`);
  }
  if (app.thread !== thread) return;
  render();
  scrollToEnd();
  // 3. the event stream from the cursor.
  connect(thread);
  ui.input.focus();
}

function connect(thread) {
  if (app.stream) app.stream.close();
  app.stream = connectEvents({
    url: `${eventsBase}/instance-ai/events/${encodeURIComponent(thread.threadId)}`,
    key: app.key,
    cursor: thread.cursor,
    onEvent: (ev, id) => {
      if (app.thread !== thread) return;
      if (!applyEvent(thread, ev, id)) return;
      onApplied(thread, ev);
    },
    onState: (s) => { if (app.thread === thread) setConn(s); },
    onUnauthorized: () => signOut('Your API key was not accepted. Sign in again.'),
    onNotFound: () => { if (app.thread === thread) setConn('idle'); },
  });
}

function setConn(s) {
  app.conn = s;
  const words = { connecting: 'Connecting…', open: 'Live', reconnecting: 'Reconnecting…', closed: '', idle: '' };
  ui.conn.textContent = words[s] || '';
  ui.conn.dataset.state = s;
}

function onApplied(thread, ev) {
  if (ev.type === 'run-start') { app.pending = null; renderThreads(); }
  if (app.metrics.sendAt && app.metrics.firstEventMs === null) {
    app.metrics.firstEventMs = performance.now() - app.metrics.sendAt;
  }
  if (app.metrics.sendAt && app.metrics.firstTextMs === null && (ev.type === 'text-delta' || ev.type === 'text-block')) {
    app.metrics.firstTextMs = performance.now() - app.metrics.sendAt;
  }
  if (ev.type === 'confirmation-request') announce('The assistant needs your answer.');
  if (ev.type === 'run-finish') {
    announce(ev.payload.status === 'completed' ? 'The assistant finished.' : 'The response ended.');
    refreshThreads();
  }
  if (ev.type === 'thread-title-updated') refreshThreads();
  if (ev.type === 'error') announce(`Error: ${ev.payload.content}`);
  schedule();
}

// ---------------------------------------------------------------- actions

async function send() {
  const thread = app.thread;
  const text = ui.input.value.trim();
  const files = ui.picker.files;
  if (!thread || app.sending) return;
  if (!text) { if (files.length) banner('Add a message to send with the files.'); return; }
  if (thread.activeRunId) { banner('A response is already in progress. Wait for it to finish, or press Stop.'); return; }
  app.sending = true;
  let attachments;
  try {
    attachments = files.length ? await encode(files) : undefined;
  } catch (e) {
    app.sending = false;
    banner(e.message);
    return;
  }
  banner('');
  app.pending = { text, files: describe(files) };
  ui.input.value = '';
  ui.picker.clear();
  autosize();
  app.metrics.sendAt = performance.now();
  app.metrics.firstEventMs = null;
  app.metrics.firstTextMs = null;
  app.metrics.firstRenderMs = undefined;
  render();
  scrollToEnd();
  try {
    const { runId } = await api.chat(thread.threadId, text, attachments);
    if (!thread.activeRunId) thread.activeRunId = runId;
    if (!app.stream) connect(thread);
    refreshThreads();
  } catch (e) {
    app.pending = null;
    ui.input.value = text;
    ui.picker.set(files);
    autosize();
    banner(e.message);
    // This tab missed the run that holds the thread: learn it, show Stop.
    if (e.status === 409) api.status(thread.threadId).then((s) => { loadStatus(thread, s); render(); }).catch(() => {});
  } finally {
    app.sending = false;
    render();
  }
}

async function stop() {
  const thread = app.thread;
  if (!thread) return;
  app.stopping = true;
  render();
  try {
    await api.cancel(thread.threadId);
    announce('Stopping the response.');
  } catch (e) {
    banner(`Could not stop: ${e.message}`);
  } finally {
    app.stopping = false;
    render();
  }
}

async function stopTask(taskId, button) {
  const thread = app.thread;
  if (button) { button.disabled = true; button.textContent = 'Stopping…'; }
  try {
    const out = await api.cancelTask(thread.threadId, taskId);
    announce(out.cancelled ? 'Stopping the background task.' : 'That task had already finished.');
  } catch (e) {
    if (button) { button.disabled = false; button.textContent = 'Stop'; }
    banner(`Could not stop the task: ${e.message}`);
  }
}

async function decide(requestId, body, summary) {
  await api.confirm(requestId, body);
  app.decided.set(requestId, summary);
  app.epoch++;
  schedule();
}

// ---------------------------------------------------------------- render

let frame = 0;
function schedule() {
  if (!frame) frame = requestAnimationFrame(() => { frame = 0; render(); });
}

const ctx = {
  api,
  memo: app.memo,
  openKeys: app.openKeys,
  decided: app.decided,
  decide,
  stopTask,
  get epoch() { return app.epoch; },
};

function render() {
  const thread = app.thread;
  if (!thread || !ui.conversation) return;
  const nearBottom = ui.scroller.scrollHeight - ui.scroller.scrollTop - ui.scroller.clientHeight < 120;
  renderConversation(ui.conversation, thread, ctx);
  if (app.pending) {
    ui.conversation.append(h('article', { class: 'turn is-pending' },
      h('div', { class: 'msg-user' }, messageFiles(app.pending.files), h('div', { class: 'bubble', text: app.pending.text })),
      h('div', { class: 'msg-assistant' }, h('div', { class: 'working' }, h('span', { class: 'pulse', attrs: { 'aria-hidden': 'true' } }), 'Sending…'))));
  }
  ui.empty.hidden = thread.runs.length > 0 || !!app.pending;
  const title = displayTitle(thread);
  ui.title.textContent = title || 'New conversation';
  document.title = title ? `${title} · Instance AI` : 'Instance AI';
  const running = !!thread.activeRunId;
  ui.send.hidden = running;
  ui.stop.hidden = !running;
  ui.stop.disabled = app.stopping;
  ui.stop.textContent = app.stopping ? 'Stopping…' : 'Stop';
  ui.send.disabled = app.sending;
  ui.picker.button.disabled = app.sending;
  if (nearBottom) scrollToEnd();
  if (app.metrics.sendAt && app.metrics.firstEventMs !== null && app.metrics.firstRenderMs === undefined) {
    app.metrics.firstRenderMs = performance.now() - app.metrics.sendAt;
  }
}

function scrollToEnd() {
  if (ui.scroller) ui.scroller.scrollTop = ui.scroller.scrollHeight;
}

// ---------------------------------------------------------------- start

if (app.key) {
  api.listThreads().then((list) => { app.threads = list.threads; showShell(); }).catch((e) => {
    if (e.status === 401) return; // signOut already showed the sign-in
    // Keep the key: the server may be down for a moment.
    showShell();
    banner(e.message);
  });
} else {
  signInView();
}
