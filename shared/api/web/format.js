// Words and labels: how tool calls, times, statuses and errors read.

export function relativeTime(ms, now = Date.now()) {
  if (!ms) return '';
  const s = Math.round((now - ms) / 1000);
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const hours = Math.round(m / 60);
  if (hours < 24) return `${hours} h ago`;
  const d = new Date(ms);
  return d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

export function pretty(value) {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  try { return JSON.stringify(value, null, 2); } catch { return String(value); }
}

/** `workflows · list`: the tool and, for action-based tools, its action. */
export function toolLabel(name, args) {
  const action = args && typeof args.action === 'string' ? args.action : '';
  return action ? `${name} · ${action}` : (name || 'tool');
}

/** A one-line summary of a tool result, shown next to a finished call. */
export function resultSummary(result) {
  if (result === null || result === undefined) return '';
  if (typeof result === 'string') return clip(result, 80);
  if (Array.isArray(result)) return `${result.length} item${result.length === 1 ? '' : 's'}`;
  if (typeof result === 'object') {
    if (result.denied) return 'denied';
    for (const [k, v] of Object.entries(result)) {
      if (Array.isArray(v)) return `${v.length} ${k}`;
    }
    if (typeof result.result === 'string') return clip(result.result, 80);
    if (typeof result.message === 'string') return clip(result.message, 80);
  }
  return '';
}

export function clip(s, n) {
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

const IMPERATIVE = {
  'workflows.delete': 'archive', 'workflows.archive': 'archive', 'workflows.update': 'edit', 'workflows.publish': 'publish',
  'workflows.unpublish': 'unpublish', 'workflows.unarchive': 'restore', 'workflows.setup': 'set up',
  'build-workflow': 'edit', 'executions.run': 'run', 'executions.stop': 'stop',
  'credentials.delete': 'delete', 'credentials.setup': 'connect',
  'data-tables.delete': 'delete', 'data-tables.insert-rows': 'add rows to', 'data-tables.update-rows': 'update rows in',
  'data-tables.delete-rows': 'delete rows from', 'data-tables.add-column': 'add a column to', 'data-tables.delete-column': 'delete a column from',
  'data-tables.rename-column': 'rename a column in', 'data-tables.create': 'create',
};

/** The approval card's title (spec "Approval copy"): the asset by name, never by id. */
export function approvalTitle(req) {
  const action = req.args && req.args.action;
  const verb = IMPERATIVE[action ? `${req.toolName}.${action}` : req.toolName];
  if (req.resourceName) return `Assistant wants to ${verb || 'use ' + req.toolName + ' on'} ${req.resourceName}`;
  if (verb) return `Assistant wants to ${verb} ${action === 'create' ? 'something new' : 'this ' + req.toolName.replace(/s$/, '')}`;
  return `Assistant wants to use ${toolLabel(req.toolName, req.args)}`;
}

export const RUN_STATUS_WORDS = {
  completed: 'Done',
  cancelled: 'Stopped',
  error: 'Failed',
  interrupted: 'Interrupted',
};

/** A run-finish reason in words. */
export function finishReason(status, reason) {
  if (status === 'cancelled') return reason === 'user_cancelled' || !reason ? 'You stopped this response.' : `Stopped: ${reason}`;
  if (status === 'interrupted') return 'The assistant was interrupted (its process restarted). Anything it was doing may not have finished — check before retrying.';
  if (status === 'error') return reason ? `The assistant could not finish: ${reason}` : 'The assistant could not finish.';
  return '';
}

export const TASK_STATUS = {
  todo: 'To do', pending: 'To do', in_progress: 'In progress', done: 'Done', completed: 'Done', failed: 'Failed', cancelled: 'Cancelled',
};
