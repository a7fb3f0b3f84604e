// Cards for `confirmation-request`: approval, questions, plan review,
// free text, domain access, credentials and workflow setup. Each is built
// from the event's fields alone (data-driven), answers through
// `POST /instance-ai/confirm/:requestId`, and keeps what the user typed
// while the conversation around it streams.

import { h } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { approvalTitle, pretty, clip } from './format.js';
import { credentialPicker } from './credentials.js';

const SEVERITY_LABEL = { destructive: 'Destructive', warning: 'Needs approval', info: 'For your review' };

/** The card for a pending request; `ctx` = {api, decide(requestId, body, summary) → Promise}. */
export function confirmationCard(req, ctx) {
  const kind = req.domainAccess ? 'domain' : req.credentialRequests && req.credentialRequests.length ? 'credentials'
    : req.setupRequests && req.setupRequests.length ? 'setup' : req.inputType || 'approval';
  const build = { questions, 'plan-review': planReview, text: textInput, domain: domainAccess, credentials, setup }[kind] || approval;
  const titleId = `card-${req.requestId}-title`;
  const errorLine = h('p', { class: 'card-error', attrs: { role: 'alert' } });
  errorLine.hidden = true;
  const card = h('section', {
    class: `card card-${kind} sev-${req.severity || 'info'}`,
    attrs: { 'aria-labelledby': titleId, 'data-request-id': req.requestId, 'data-card': kind },
  });
  // Sends a decision; buttons stay disabled while it is in flight.
  async function send(body, summary) {
    const buttons = card.querySelectorAll('button, input, textarea, select');
    buttons.forEach((b) => { b.disabled = true; });
    errorLine.hidden = true;
    try {
      await ctx.decide(req.requestId, body, summary);
    } catch (e) {
      buttons.forEach((b) => { b.disabled = false; });
      errorLine.textContent = e.status === 409 ? 'This request was already answered (perhaps in another tab).' : e.message;
      errorLine.hidden = false;
    }
  }
  const parts = build(req, send, ctx, titleId);
  card.append(...parts.flat(Infinity).filter(Boolean), errorLine);
  return card;
}

/** What a settled request shows instead of its card. */
export function decidedNote(summary) {
  return h('p', { class: 'decided', attrs: { role: 'status' } }, h('span', { class: 'decided-dot', attrs: { 'aria-hidden': 'true' } }), summary);
}

function header(req, titleId, title, badge) {
  return h('header', { class: 'card-head' },
    h('span', { class: 'badge', text: badge || SEVERITY_LABEL[req.severity] || 'Needs your input' }),
    h('h3', { id: titleId, class: 'card-title', text: title }));
}

function actions(...buttons) {
  return h('div', { class: 'card-actions' }, buttons);
}

function button(text, cls, onClick, attrs) {
  return h('button', { type: 'button', class: `btn ${cls || ''}`, text, on: { click: onClick }, attrs });
}

// ---------------------------------------------------------------- approval

function approval(req, send, ctx, titleId) {
  const reason = h('textarea', { class: 'input', rows: 2, attrs: { 'aria-label': 'Why are you denying this? (optional)', placeholder: 'Tell the assistant why (optional)' } });
  const denyBox = h('div', { class: 'deny-box' }, reason,
    actions(button('Send denial', 'btn-danger', () => send({ approved: false, ...(reason.value.trim() ? { userInput: reason.value.trim() } : {}) }, 'You denied this.')),
      button('Cancel', 'btn-ghost', () => { denyBox.hidden = true; row.hidden = false; })));
  denyBox.hidden = true;
  const row = actions(
    button('Approve', 'btn-primary', () => send({ approved: true }, 'You approved this.')),
    button('Always allow for this session', 'btn-secondary', () => send({ approved: true, scope: 'session' }, 'You approved this for the rest of the session.')),
    button('Deny', 'btn-ghost', () => { row.hidden = true; denyBox.hidden = false; reason.focus(); }),
  );
  return [
    header(req, titleId, approvalTitle(req)),
    req.message ? h('p', { class: 'card-text', text: req.message }) : null,
    req.approvalDetails ? details(req.approvalDetails) : null,
    argsDisclosure(req.args),
    row, denyBox,
  ];
}

function argsDisclosure(args) {
  if (!args || !Object.keys(args).length) return null;
  return h('details', { class: 'card-args' }, h('summary', { text: 'Show the request' }), h('pre', { class: 'code', text: pretty(args) }));
}

// approvalDetails: previews as tables, everything else as label/value rows.
function details(d) {
  if (Array.isArray(d)) return table(d);
  if (typeof d !== 'object' || d === null) return h('p', { class: 'card-text', text: String(d) });
  const rows = [];
  for (const [k, v] of Object.entries(d)) {
    if (Array.isArray(v) && v.length && typeof v[0] === 'object') rows.push(h('div', { class: 'detail-block' }, h('div', { class: 'detail-key', text: label(k) }), table(v)));
    else if (v !== null && v !== undefined && v !== '') rows.push(h('div', { class: 'detail-row' }, h('span', { class: 'detail-key', text: label(k) }), h('span', { class: 'detail-value', text: typeof v === 'object' ? clip(pretty(v), 400) : String(v) })));
  }
  return h('div', { class: 'details' }, rows);
}

function label(key) {
  return key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[-_]/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

function table(rows) {
  const cols = [...new Set(rows.flatMap((r) => (r && typeof r === 'object' ? Object.keys(r) : ['value'])))];
  return h('div', { class: 'table-scroll' }, h('table', { class: 'preview' },
    h('thead', null, h('tr', null, cols.map((c) => h('th', { attrs: { scope: 'col' }, text: c })))),
    h('tbody', null, rows.map((r) => h('tr', null, cols.map((c) => {
      const v = r && typeof r === 'object' ? r[c] : r;
      return h('td', { text: v === undefined ? '' : clip(typeof v === 'string' ? v : JSON.stringify(v), 100) });
    }))))));
}

// ---------------------------------------------------------------- questions

let qseq = 0;

function questions(req, send, ctx, titleId) {
  const qs = req.questions || [];
  const readers = [];
  const fields = qs.map((q) => {
    const name = `q-${++qseq}`;
    const legend = h('legend', { class: 'q-label', text: q.question });
    if (q.type === 'text') {
      const area = h('textarea', { class: 'input', rows: 2, attrs: { 'aria-label': q.question } });
      readers.push(() => (area.value.trim() ? { questionId: q.id, answer: area.value.trim() } : null));
      return h('fieldset', { class: 'q' }, legend, area);
    }
    const multi = q.type === 'multi';
    const other = h('input', { class: 'input other-text', attrs: { 'aria-label': 'Your own answer', placeholder: 'Type your own answer' } });
    const choices = (q.options || []).map((opt) => h('label', { class: 'choice' },
      h('input', { type: multi ? 'checkbox' : 'radio', name, value: opt }), h('span', { text: opt })));
    const otherChoice = h('input', { type: multi ? 'checkbox' : 'radio', name, value: '__other__', attrs: { 'aria-label': 'Something else' } });
    other.addEventListener('input', () => { if (other.value) otherChoice.checked = true; });
    const otherRow = h('label', { class: 'choice choice-other' }, otherChoice, h('span', { text: 'Something else:' }), other);
    readers.push(() => {
      const picked = [...document.getElementsByName(name)].filter((i) => i.checked).map((i) => (i.value === '__other__' ? other.value.trim() : i.value)).filter(Boolean);
      if (!picked.length) return null;
      return { questionId: q.id, answer: multi ? picked : picked[0] };
    });
    return h('fieldset', { class: 'q' }, legend, h('div', { class: 'choices', attrs: { role: multi ? 'group' : 'radiogroup', 'aria-label': q.question } }, choices, otherRow));
  });
  const submit = () => {
    const answers = readers.map((r) => r()).filter(Boolean);
    if (!answers.length) { hint.hidden = false; return; }
    send({ approved: true, answers }, `You answered: ${answers.map((a) => (Array.isArray(a.answer) ? a.answer.join(', ') : a.answer)).join('; ')}`);
  };
  const hint = h('p', { class: 'hint', text: 'Pick or type an answer first, or skip.' });
  hint.hidden = true;
  return [
    header(req, titleId, req.introMessage || 'The assistant has a question', 'Question'),
    fields,
    hint,
    actions(button('Send answers', 'btn-primary', submit), button('Skip', 'btn-ghost', () => send({ approved: false }, 'You skipped the question.'))),
  ];
}

// ---------------------------------------------------------------- plan review

function planReview(req, send, ctx, titleId) {
  const items = (req.tasks && req.tasks.tasks) || [];
  // Dependencies come from the plan itself (the tool's arguments) when present.
  const planned = new Map(((req.args && req.args.tasks) || (req.planItems || [])).map((t) => [t.id, t]));
  const titleOf = (id) => (items.find((t) => t.id === id) || planned.get(id) || { description: id }).description || planned.get(id)?.title || id;
  const feedback = h('textarea', { class: 'input', rows: 3, attrs: { 'aria-label': 'What should change in the plan?', placeholder: 'What should change?' } });
  const changeBox = h('div', { class: 'deny-box' }, feedback,
    actions(button('Send feedback', 'btn-primary', () => {
      if (!feedback.value.trim()) { feedback.focus(); return; }
      send({ approved: false, userInput: feedback.value.trim() }, 'You asked for changes to the plan.');
    }), button('Cancel', 'btn-ghost', () => { changeBox.hidden = true; row.hidden = false; })));
  changeBox.hidden = true;
  const row = actions(
    button('Approve plan', 'btn-primary', () => send({ approved: true }, 'You approved the plan.')),
    button('Request changes', 'btn-secondary', () => { row.hidden = true; changeBox.hidden = false; feedback.focus(); }),
  );
  return [
    header(req, titleId, 'Review the plan', 'Plan'),
    req.introMessage ? h('div', { class: 'card-text md' }, renderMarkdown(req.introMessage)) : null,
    h('ol', { class: 'plan' }, items.map((t) => {
      const p = planned.get(t.id) || {};
      const deps = p.deps || [];
      return h('li', { class: 'plan-item' },
        h('div', { class: 'plan-title' }, h('span', { text: t.description || p.title || t.id }), p.kind ? h('span', { class: 'chip', text: p.kind === 'checkpoint' ? 'check' : 'build' }) : null),
        deps.length ? h('div', { class: 'plan-deps', text: `After: ${deps.map(titleOf).join(', ')}` }) : null);
    })),
    row, changeBox,
  ];
}

// ---------------------------------------------------------------- free text

function textInput(req, send, ctx, titleId) {
  const area = h('textarea', { class: 'input', rows: 3, attrs: { 'aria-label': req.message || 'Your answer' } });
  return [
    header(req, titleId, req.introMessage || req.message || 'The assistant needs your input', 'Question'),
    area,
    actions(button('Send', 'btn-primary', () => send({ approved: true, userInput: area.value }, 'You answered.')),
      button('Dismiss', 'btn-ghost', () => send({ approved: false }, 'You dismissed the request.'))),
  ];
}

// ---------------------------------------------------------------- domain access

function domainAccess(req, send, ctx, titleId) {
  const { host, url } = req.domainAccess;
  return [
    header(req, titleId, `Allow the assistant to reach ${host}?`, 'Web access'),
    h('p', { class: 'card-text' }, 'It wants to fetch ', h('code', { class: 'url', text: url })),
    req.message ? h('p', { class: 'card-text muted', text: req.message }) : null,
    actions(
      button('Allow once', 'btn-primary', () => send({ approved: true }, `You allowed ${host} once.`)),
      button(`Always allow ${host}`, 'btn-secondary', () => send({ approved: true, scope: 'session' }, `You allowed ${host} for this session.`)),
      button('Deny', 'btn-ghost', () => send({ approved: false }, `You denied access to ${host}.`)),
    ),
  ];
}

// ---------------------------------------------------------------- credentials + setup

function credentials(req, send, ctx, titleId) {
  const chosen = {};
  return [
    header(req, titleId, req.message || 'Connect the accounts this needs', 'Credentials'),
    req.credentialRequests.map((r) => credentialPicker(ctx.api, r, (id) => { chosen[r.credentialType] = id; })),
    actions(
      button('Continue', 'btn-primary', () => send({ approved: true, answers: { credentials: chosen } }, 'You chose the credentials.')),
      button('Skip for now', 'btn-ghost', () => send({ approved: false }, 'You skipped credential setup.')),
    ),
  ];
}

function setup(req, send, ctx, titleId) {
  const chosen = {};
  const rows = req.setupRequests.map((s) => {
    const node = s.node || {};
    const credType = s.credentialType || (s.credentialRequest && s.credentialRequest.credentialType);
    const issues = s.parameterIssues || s.issues || [];
    return h('li', { class: 'setup-item' },
      h('div', { class: 'setup-node' }, h('strong', { text: node.name || s.nodeName || 'Node' }), node.type ? h('span', { class: 'muted', text: ` ${node.type}` }) : null, s.isTrigger ? h('span', { class: 'chip', text: 'trigger' }) : null),
      (Array.isArray(issues) ? issues : Object.values(issues)).map((i) => h('p', { class: 'hint', text: typeof i === 'string' ? i : pretty(i) })),
      credType ? credentialPicker(ctx.api, { credentialType: credType, existingCredentials: s.existingCredentials || [] }, (id) => { chosen[credType] = id; }) : null);
  });
  return [
    header(req, titleId, req.message || 'Finish setting up the workflow', 'Setup'),
    h('ul', { class: 'setup' }, rows),
    actions(
      button('Continue', 'btn-primary', () => send({ approved: true, answers: { credentials: chosen } }, 'You finished the setup.')),
      button('Skip for now', 'btn-ghost', () => send({ approved: false }, 'You skipped the setup.')),
    ),
  ];
}
