// The hosted chat page of a Chat Trigger: speaks the @n8n/chat protocol
// (loadPreviousSession, sendMessage; JSON answers or a stream of JSON
// lines). Text is only ever set with textContent: nothing the workflow
// answers is parsed as HTML.
(function () {
  'use strict';
  const cfg = JSON.parse(document.getElementById('chat-config').textContent);
  const $ = (id) => document.getElementById(id);
  const list = $('messages');
  const storageKey = 'n8n-chat/sessionId/' + cfg.webhookUrl;
  let sessionId = localStorage.getItem(storageKey);
  if (!sessionId) {
    sessionId = crypto.randomUUID();
    localStorage.setItem(storageKey, sessionId);
  }

  function bubble(who, text) {
    const el = document.createElement('div');
    el.className = 'chat-message chat-message-from-' + who;
    el.textContent = text;
    list.appendChild(el);
    list.scrollTop = list.scrollHeight;
    return el;
  }

  function headers(json) {
    const h = {};
    if (json) h['Content-Type'] = 'application/json';
    const secret = $('auth-secret') ? $('auth-secret').value : '';
    if (cfg.authentication === 'n8nUserAuth' && secret) h['Authorization'] = 'Bearer ' + secret;
    if (cfg.authentication === 'basicAuth' && secret) {
      h['Authorization'] = 'Basic ' + btoa($('auth-user').value + ':' + secret);
    }
    return h;
  }

  function textOf(answer) {
    const one = Array.isArray(answer) ? answer[0] : answer;
    if (one == null) return '';
    if (typeof one === 'string') return one;
    const t = one.output ?? one.text ?? one.message ?? '';
    return typeof t === 'string' ? t : JSON.stringify(t);
  }

  async function loadPrevious() {
    if (cfg.loadPreviousSession === 'notSupported') return;
    const res = await fetch(cfg.webhookUrl, {
      method: 'POST',
      headers: headers(true),
      body: JSON.stringify({ action: 'loadPreviousSession', sessionId, metadata: {} }),
    });
    if (!res.ok) return;
    const answer = await res.json();
    for (const m of answer.data || []) {
      const human = Array.isArray(m.id) && m.id.join('.').includes('HumanMessage');
      bubble(human ? 'user' : 'bot', (m.kwargs && m.kwargs.content) || '');
    }
  }

  async function readStream(res) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const open = new Map();
    let pending = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      pending += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (!line) continue;
        let chunk;
        try { chunk = JSON.parse(line); } catch (e) { continue; }
        const md = chunk.metadata || {};
        const key = md.nodeId + ':' + md.runIndex + ':' + md.itemIndex;
        if (chunk.type === 'begin') open.set(key, bubble('bot', ''));
        else if (chunk.type === 'item') {
          const el = open.get(key) || bubble('bot', '');
          open.set(key, el);
          el.textContent += chunk.content || '';
          list.scrollTop = list.scrollHeight;
        } else if (chunk.type === 'error') bubble('bot', 'Error: ' + (chunk.content || 'the workflow failed'));
      }
    }
  }

  async function send(text, files) {
    bubble('user', text);
    let body;
    let h;
    if (files && files.length) {
      body = new FormData();
      body.append('action', 'sendMessage');
      body.append('sessionId', sessionId);
      body.append('chatInput', text);
      for (const f of files) body.append('files', f, f.name);
      h = headers(false);
    } else {
      body = JSON.stringify({ action: 'sendMessage', sessionId, chatInput: text, metadata: {} });
      h = headers(true);
    }
    const res = await fetch(cfg.webhookUrl, { method: 'POST', headers: h, body });
    if (!res.ok) {
      bubble('bot', 'Error: ' + res.status + ' ' + (await res.text()));
      return;
    }
    if (cfg.enableStreaming) return readStream(res);
    bubble('bot', textOf(await res.json()));
  }

  function start() {
    $('welcome').hidden = true;
    $('chat').hidden = false;
    for (const m of cfg.initialMessages) bubble('bot', m);
    loadPrevious().catch((e) => bubble('bot', 'Error: ' + e.message));
  }

  $('title').textContent = cfg.i18n.title;
  $('subtitle').textContent = cfg.i18n.subtitle;
  $('input').placeholder = cfg.i18n.inputPlaceholder;
  $('get-started').textContent = cfg.i18n.getStarted;
  $('get-started').addEventListener('click', start);
  if (cfg.allowFileUploads) {
    $('files').hidden = false;
    if (cfg.allowedFilesMimeTypes && cfg.allowedFilesMimeTypes !== '*') $('files').accept = cfg.allowedFilesMimeTypes;
  }
  if (cfg.authentication !== 'none') $('auth').hidden = false;
  if (cfg.authentication !== 'basicAuth') $('auth-user').hidden = true;
  $('form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = $('input').value.trim();
    if (!text) return;
    const files = cfg.allowFileUploads ? Array.from($('files').files) : [];
    $('input').value = '';
    $('files').value = '';
    send(text, files).catch((e) => bubble('bot', 'Error: ' + e.message));
  });
  if (cfg.showWelcomeScreen) {
    $('welcome').hidden = false;
    $('chat').hidden = true;
  } else start();
})();
