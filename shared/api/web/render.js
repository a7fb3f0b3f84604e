// The conversation view: each run as the user's message and the agent
// activity tree of the spec's "Frontend Rendering" — reasoning (folded),
// tool calls (pending, args, result, error, interrupted), background agents
// as collapsible children with their own stop button, the checklist, cards,
// errors and the final text as Markdown. Elements are memoized by key and
// version, so streaming rebuilds only the part that changed.

import { h, sync, srOnly } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { toolLabel, pretty, resultSummary, finishReason, TASK_STATUS } from './format.js';
import { confirmationCard, decidedNote } from './cards.js';
import { messageFiles } from './attachments.js';

const STATE_WORDS = { pending: 'Running', done: 'Done', error: 'Failed', interrupted: 'Interrupted', 'awaiting-confirmation': 'Waiting for you', cancelled: 'Cancelled' };

export function renderConversation(container, thread, ctx) {
  const turns = thread.runs.map((run) => ctx.memo.get(`run:${run.runId}`, `${run.version}:${ctx.epoch}:${thread.statusLine && thread.statusLine.runId === run.runId ? thread.statusLine.message : ''}`, (old) => turn(run, thread, ctx, old)));
  sync(container, turns);
}

function turn(run, thread, ctx, old) {
  const el = old || h('article', { class: 'turn', dataset: { runId: run.runId } });
  const user = run.user && run.user.content
    ? ctx.memo.get(`user:${run.runId}`, `${run.user.content}:${JSON.stringify(run.user.attachments || [])}`,
      () => h('div', { class: 'msg-user' }, srOnly('You said: '), messageFiles(run.user.attachments), h('div', { class: 'bubble', text: run.user.content })))
    : null;
  const active = run.status === 'active';
  const body = run.root ? agentBody(run, run.root, ctx, true) : [];
  const footer = [];
  if (active) {
    const status = thread.statusLine && thread.statusLine.runId === run.runId ? thread.statusLine.message : null;
    const waiting = run.root && run.root.toolCalls.some((t) => t.state === 'awaiting-confirmation' && !ctx.decided.has(t.confirmation && t.confirmation.requestId));
    footer.push(h('div', { class: 'working', attrs: { role: 'status' } },
      h('span', { class: 'pulse', attrs: { 'aria-hidden': 'true' } }),
      status || (waiting ? 'Waiting for your answer' : 'Working…')));
  } else if (run.status !== 'completed') {
    // An error event already said why: do not repeat it.
    const said = run.root && run.root.errors.some((e) => run.reason && run.reason.includes(e));
    footer.push(h('div', { class: `finish finish-${run.status}`, attrs: { role: 'status' } }, finishReason(run.status, said ? null : run.reason)));
  }
  const assistant = h('div', { class: 'msg-assistant' }, srOnly('Assistant: '), body, footer);
  sync(el, [user, assistant]);
  el.classList.toggle('is-active', active);
  return el;
}

// One agent's timeline in order, then its errors.
function agentBody(run, node, ctx, isRoot) {
  const out = [];
  node.timeline.forEach((entry, i) => {
    const key = `${run.runId}:${node.agentId}:${i}`;
    if (entry.type === 'text') {
      if (entry.content) out.push(ctx.memo.get(`text:${key}`, entry.content, () => h('div', { class: 'md' }, renderMarkdown(entry.content))));
    } else if (entry.type === 'reasoning') {
      if (entry.content) out.push(ctx.memo.get(`reason:${key}`, entry.content, () => reasoning(entry.content, `reason:${key}`, ctx)));
    } else if (entry.type === 'tool-call') {
      const t = node.toolCalls.find((c) => c.toolCallId === entry.toolCallId);
      if (t) out.push(...toolEntry(run, t, ctx));
    } else if (entry.type === 'child') {
      const child = run.agents.get(entry.agentId);
      if (child) out.push(subagent(run, child, ctx));
    } else if (entry.type === 'tasks' && run.tasks) {
      out.push(ctx.memo.get(`tasks:${run.runId}`, JSON.stringify(run.tasks), () => checklist(run.tasks)));
    }
  });
  for (const [k, e] of node.errors.entries()) {
    out.push(ctx.memo.get(`err:${run.runId}:${node.agentId}:${k}`, e, () => h('div', { class: 'callout callout-error', attrs: { role: 'alert' } }, h('strong', { text: 'Error: ' }), e)));
  }
  // The result, unless it only repeats the agent's own last words.
  const last = [...node.timeline].reverse().find((t) => t.type === 'text');
  if (!isRoot && (node.error || node.result) && node.status !== 'active' && (node.error || node.result).trim() !== (last ? last.content.trim() : '')) {
    out.push(h('div', { class: `agent-result ${node.error ? 'is-error' : ''}` }, renderMarkdown(node.error || node.result)));
  }
  return out;
}

function details(cls, key, ctx, summary, ...body) {
  const d = h('details', { class: cls, open: ctx.openKeys.has(key) });
  const head = h('summary', null, summary);
  remember(d, head, (open) => { if (open) ctx.openKeys.add(key); else ctx.openKeys.delete(key); });
  d.append(head, ...body.flat().filter(Boolean));
  return d;
}

// Records a person's open/close as they click (or press Enter on) the
// summary: the `toggle` event comes a task later, and a render in between
// would rebuild the element from the old state and undo the click.
function remember(d, summary, record) {
  summary.addEventListener('click', () => record(!d.open));
  d.addEventListener('toggle', () => record(d.open));
}

function reasoning(text, key, ctx) {
  return details('reasoning', key, ctx, [h('span', { class: 'reasoning-label', text: 'Thinking' }), h('span', { class: 'reasoning-peek', text: text.split('\n')[0].slice(0, 90) })],
    h('div', { class: 'reasoning-text' }, renderMarkdown(text)));
}

function toolEntry(run, t, ctx) {
  const version = `${t.state}:${t.toolName}:${JSON.stringify(t.args)}:${t.error || ''}:${t.result === undefined ? '' : JSON.stringify(t.result)}`;
  const row = ctx.memo.get(`tool:${run.runId}:${t.toolCallId}`, version, () => toolRow(run, t, ctx));
  const out = [row];
  const req = t.confirmation;
  if (req) {
    const decided = ctx.decided.get(req.requestId);
    if (t.state === 'awaiting-confirmation' && !decided) {
      out.push(ctx.memo.get(`card:${req.requestId}`, 'open', () => confirmationCard(req, ctx)));
    } else {
      const summary = decided || settledSummary(req, t);
      if (summary) out.push(ctx.memo.get(`card:${req.requestId}`, `done:${summary}`, () => decidedNote(summary)));
    }
  }
  return out;
}

// What a request settled before this page saw the decision reads as.
function settledSummary(req, t) {
  if (t.state !== 'done') return t.state === 'error' || t.state === 'interrupted' ? 'This request did not complete.' : null;
  const r = t.result || {};
  if (r.answered === false) return 'You skipped the question.';
  if (r.denied || r.approved === false) return req.inputType === 'plan-review' ? 'You asked for changes to the plan.' : 'You denied this.';
  if (req.inputType === 'questions' || req.inputType === 'text') return 'You answered.';
  if (req.inputType === 'plan-review') return 'You approved the plan.';
  return 'You approved this.';
}

function toolRow(run, t, ctx) {
  const label = toolLabel(t.toolName, t.args);
  const summary = t.state === 'done' ? resultSummary(t.result) : t.state === 'error' || t.state === 'interrupted' ? t.error : '';
  const icon = h('span', { class: `tool-icon state-${t.state}`, attrs: { 'aria-hidden': 'true' } });
  const head = [icon, h('span', { class: 'tool-name', text: label }),
    summary ? h('span', { class: 'tool-summary', text: `— ${summary}` }) : null,
    srOnly(`, ${STATE_WORDS[t.state] || t.state}`)];
  const args = t.args && Object.keys(t.args).length ? [h('div', { class: 'kv-label', text: 'Arguments' }), h('pre', { class: 'code', text: pretty(t.args) })] : [h('p', { class: 'muted small', text: t.isLoading ? 'Preparing the call…' : 'No arguments.' })];
  const outcome = t.state === 'done' ? [h('div', { class: 'kv-label', text: 'Result' }), h('pre', { class: 'code', text: pretty(t.result) })]
    : t.error ? [h('div', { class: 'kv-label', text: t.state === 'interrupted' ? 'Interrupted' : 'Error' }), h('pre', { class: 'code code-error', text: t.error })] : [];
  const row = details(`tool tool-${t.state}`, `tool:${run.runId}:${t.toolCallId}`, ctx, head, h('div', { class: 'tool-body' }, args, outcome));
  row.dataset.toolCallId = t.toolCallId;
  row.dataset.state = t.state;
  return row;
}

function subagent(run, node, ctx) {
  const key = `agent:${run.runId}:${node.agentId}`;
  const open = !ctx.openKeys.has(`${key}:closed`);
  const title = node.title || node.role || 'Background task';
  const statusWord = { active: 'Running', completed: 'Done', cancelled: 'Stopped', error: 'Failed' }[node.status] || node.status;
  const stop = node.status === 'active' && node.taskId
    ? h('button', { type: 'button', class: 'btn btn-small btn-ghost stop-task', text: 'Stop', attrs: { 'aria-label': `Stop background task ${title}` },
      on: { click: (e) => { e.preventDefault(); e.stopPropagation(); ctx.stopTask(node.taskId, e.currentTarget); } } })
    : null;
  const d = h('details', { class: `subagent status-${node.status}`, open, dataset: { agentId: node.agentId, taskId: node.taskId || '' } });
  const head = h('summary', null, h('span', { class: `agent-dot status-${node.status}`, attrs: { 'aria-hidden': 'true' } }),
    h('span', { class: 'agent-head' }, h('span', { class: 'agent-kind', text: 'Background task' }), h('span', { class: 'agent-title', text: title })),
    h('span', { class: `status-pill status-${node.status}`, text: statusWord }), stop);
  remember(d, head, (isOpen) => { if (isOpen) ctx.openKeys.delete(`${key}:closed`); else ctx.openKeys.add(`${key}:closed`); });
  d.append(head, h('div', { class: 'subagent-body' }, agentBody(run, node, ctx, false)));
  return d;
}

function checklist(tasks) {
  const done = tasks.filter((t) => t.status === 'done' || t.status === 'completed').length;
  return h('section', { class: 'checklist', attrs: { 'aria-label': 'Task checklist' } },
    h('header', { class: 'checklist-head' }, h('span', { text: 'Tasks' }), h('span', { class: 'muted', text: `${done} of ${tasks.length} done` })),
    h('ul', null, tasks.map((t) => h('li', { class: `task status-${t.status}` },
      h('span', { class: `task-mark status-${t.status}`, attrs: { 'aria-hidden': 'true' } }),
      h('span', { class: 'task-text', text: t.description }),
      srOnly(` (${TASK_STATUS[t.status] || t.status})`),
      t.detail ? h('span', { class: 'muted small', text: ` ${t.detail}` }) : null))));
}
