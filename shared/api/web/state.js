// The conversation of one thread as data, and the reducer that folds
// protocol events into it. The shapes are those of the session-restore
// endpoint (`GET …/messages`: messages with agent trees), so a snapshot and
// live events land in the same structure. No DOM here.

export function createThread(threadId) {
  return {
    threadId,
    title: null,
    runs: [],
    byRun: new Map(),
    // Everything up to `floor` is in the snapshot; `seen` drops replay overlap.
    floor: 0,
    cursor: 0,
    seen: new Set(),
    activeRunId: null,
    statusLine: null,
    backgroundTasks: [],
    version: 0,
  };
}

function newNode(agentId, role) {
  return {
    agentId, role, status: 'active', taskId: null, title: null,
    textContent: '', reasoning: '', toolCalls: [], timeline: [],
    result: null, error: null, errors: [], children: [],
  };
}

function ensureRun(thread, runId) {
  let run = thread.byRun.get(runId);
  if (!run) {
    run = { runId, user: null, root: null, agents: new Map(), status: 'active', reason: null, tasks: null, setup: null, version: 0 };
    thread.byRun.set(runId, run);
    thread.runs.push(run);
  }
  return run;
}

function indexTree(run, node) {
  node.errors = node.errors || [];
  node.children = node.children || [];
  node.timeline = node.timeline || [];
  node.toolCalls = node.toolCalls || [];
  run.agents.set(node.agentId, node);
  for (const c of node.children) indexTree(run, c);
}

/** Loads `GET …/messages` (oldest run first); the SSE cursor becomes `nextEventId - 1`. */
export function loadSnapshot(thread, page) {
  let pendingUser = null;
  for (const m of page.messages || []) {
    if (m.role === 'user') { pendingUser = m; continue; }
    const run = ensureRun(thread, m.runId);
    if (pendingUser && pendingUser.runId === m.runId) run.user = { id: pendingUser.id, content: pendingUser.content, createdAt: pendingUser.createdAt, attachments: pendingUser.attachments || [] };
    pendingUser = null;
    if (m.agentTree) { run.root = m.agentTree; indexTree(run, run.root); }
    run.status = m.status || (m.isStreaming ? 'active' : 'completed');
    run.tasks = m.tasks || null;
    if (run.tasks && run.root && !run.root.timeline.some((t) => t.type === 'tasks')) {
      // Place the checklist after the call that made it, as it appeared live.
      const at = run.root.timeline.findIndex((t) => t.type === 'tool-call' && /^(create-tasks|task-control)$/.test((run.root.toolCalls.find((c) => c.toolCallId === t.toolCallId) || {}).toolName));
      run.root.timeline.splice(at < 0 ? run.root.timeline.length : at + 1, 0, { type: 'tasks' });
    }
    if (run.status === 'active') thread.activeRunId = m.runId;
    run.version++;
  }
  thread.floor = Math.max(0, (page.nextEventId || 1) - 1);
  thread.cursor = thread.floor;
  thread.version++;
}

/** Loads `GET …/status`: the active run and the running background tasks. */
export function loadStatus(thread, status) {
  if (!status.hasActiveRun) thread.activeRunId = null;
  else if (!thread.activeRunId) {
    const active = [...thread.runs].reverse().find((r) => r.status === 'active');
    thread.activeRunId = active ? active.runId : 'unknown';
  }
  thread.backgroundTasks = status.backgroundTasks || [];
  thread.version++;
}

function agent(run, agentId) {
  let node = run.agents.get(agentId);
  if (!node) {
    node = newNode(agentId, run.root ? 'agent' : 'orchestrator');
    run.agents.set(agentId, node);
    if (!run.root) run.root = node;
    else { run.root.children.push(node); run.root.timeline.push({ type: 'child', agentId }); }
  }
  return node;
}

function tool(node, id, name) {
  let t = node.toolCalls.find((c) => c.toolCallId === id);
  if (!t) {
    t = { toolCallId: id, toolName: name || '', args: {}, result: undefined, error: null, isLoading: true, state: 'pending', confirmation: null };
    node.toolCalls.push(t);
    node.timeline.push({ type: 'tool-call', toolCallId: id });
  } else if (name && !t.toolName) t.toolName = name;
  return t;
}

// One streamed segment (text or reasoning) of a response, keyed by its
// responseId: deltas append, the block REPLACES, so a reconnect or reload
// mid-answer never shows text twice.
function segment(node, kind, responseId) {
  if (responseId) {
    const hit = node.timeline.find((t) => t.type === kind && t.responseId === responseId);
    if (hit) return hit;
  }
  const e = { type: kind, content: '', responseId: responseId || null, closed: false };
  node.timeline.push(e);
  return e;
}

function recomputeText(node) {
  node.textContent = node.timeline.filter((t) => t.type === 'text').map((t) => t.content).join('');
  node.reasoning = node.timeline.filter((t) => t.type === 'reasoning').map((t) => t.content).join('');
}

/**
 * Applies one event. `id` is the SSE id (durable events) or null (live
 * frames). Returns false when the event was already seen (replay overlap).
 */
export function applyEvent(thread, ev, id) {
  if (id !== null && id !== undefined) {
    if (id <= thread.floor || thread.seen.has(id)) return false;
    thread.seen.add(id);
    if (id > thread.cursor) thread.cursor = id;
  }
  const p = ev.payload || {};
  if (ev.type === 'thread-title-updated') { thread.title = p.title; thread.version++; return true; }
  if (ev.type === 'status') {
    thread.statusLine = p.message ? { message: p.message, runId: ev.runId, agentId: ev.agentId } : null;
    thread.version++;
    return true;
  }
  if (ev.type === 'filesystem-request') return true;
  const run = ensureRun(thread, ev.runId);
  switch (ev.type) {
    case 'run-start': {
      run.user = { id: p.messageId, content: p.message || '', createdAt: ev.ts, attachments: p.attachments || [] };
      if (!run.root) { run.root = newNode(ev.agentId, 'orchestrator'); run.agents.set(ev.agentId, run.root); }
      run.status = 'active';
      thread.activeRunId = ev.runId;
      break;
    }
    case 'run-finish': {
      run.status = p.status;
      run.reason = p.reason || null;
      if (run.root && run.root.status === 'active') run.root.status = p.status === 'completed' ? 'completed' : p.status === 'cancelled' ? 'cancelled' : 'error';
      if (thread.activeRunId === ev.runId || thread.activeRunId === 'unknown') thread.activeRunId = null;
      if (thread.statusLine && thread.statusLine.runId === ev.runId) thread.statusLine = null;
      break;
    }
    case 'text-delta':
    case 'reasoning-delta':
    case 'text-block':
    case 'reasoning-block': {
      const node = agent(run, ev.agentId);
      const kind = ev.type.startsWith('text') ? 'text' : 'reasoning';
      const seg = segment(node, kind, ev.responseId);
      if (ev.type.endsWith('-block')) { seg.content = p.text; seg.closed = true; }
      else if (!seg.closed) seg.content += p.text;
      recomputeText(node);
      break;
    }
    case 'tool-input-start': tool(agent(run, ev.agentId), p.toolCallId, p.toolName); break;
    case 'tool-call': {
      const t = tool(agent(run, ev.agentId), p.toolCallId, p.toolName);
      t.toolName = p.toolName;
      t.args = p.args || {};
      break;
    }
    case 'tool-result': {
      const t = tool(agent(run, ev.agentId), p.toolCallId);
      Object.assign(t, { result: p.result, isLoading: false, state: 'done' });
      break;
    }
    case 'tool-error':
    case 'tool-interrupted': {
      const t = tool(agent(run, ev.agentId), p.toolCallId);
      Object.assign(t, { error: p.error, isLoading: false, state: ev.type === 'tool-error' ? 'error' : 'interrupted' });
      break;
    }
    case 'confirmation-request': {
      const t = tool(agent(run, ev.agentId), p.toolCallId, p.toolName);
      if (!t.args || !Object.keys(t.args).length) t.args = p.args || {};
      t.state = 'awaiting-confirmation';
      t.confirmation = p;
      break;
    }
    case 'agent-spawned': {
      const parent = agent(run, p.parentId);
      let node = run.agents.get(ev.agentId);
      if (!node) {
        node = newNode(ev.agentId, p.role);
        run.agents.set(ev.agentId, node);
        parent.children.push(node);
        parent.timeline.push({ type: 'child', agentId: ev.agentId });
      }
      node.taskId = p.taskId || node.taskId;
      node.title = p.title || node.title;
      node.goal = p.goal || null;
      break;
    }
    case 'agent-completed': {
      const node = agent(run, ev.agentId);
      node.result = p.result;
      node.error = p.error || null;
      node.status = p.status === 'cancelled' ? 'cancelled' : (p.status === 'error' || p.error) ? 'error' : 'completed';
      thread.backgroundTasks = thread.backgroundTasks.filter((t) => t.agentId !== ev.agentId);
      break;
    }
    case 'tasks-update': {
      const node = agent(run, ev.agentId);
      run.tasks = p.tasks;
      if (!node.timeline.some((t) => t.type === 'tasks')) node.timeline.push({ type: 'tasks' });
      break;
    }
    case 'setup-items': run.setup = p; break;
    case 'error': agent(run, ev.agentId).errors.push(p.content); break;
    default: return true;
  }
  run.version++;
  thread.version++;
  return true;
}

/** Running background agents of the thread (for per-task stop buttons). */
export function runningTasks(thread) {
  const out = [];
  for (const run of thread.runs) for (const node of run.agents.values()) {
    if (node.taskId && node.status === 'active' && node !== run.root) out.push({ taskId: node.taskId, agentId: node.agentId, title: node.title || node.role });
  }
  return out;
}
