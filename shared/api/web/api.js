// The REST API, with every failure turned into an ApiError whose message
// a person can read. A 401 anywhere signs the user out.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const WORDS = {
  409: 'A response is already in progress in this conversation. Wait for it to finish, or press Stop.',
  413: 'That message is too large to send.',
  429: 'Too many requests right now. Wait a moment and try again.',
  503: 'The service is temporarily unavailable. Try again in a moment.',
};

export function createApi({ base = '', getKey, onUnauthorized }) {
  async function request(method, path, body) {
    let resp;
    try {
      resp = await fetch(base + path, {
        method,
        headers: {
          Authorization: `Bearer ${getKey()}`,
          Accept: 'application/json',
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        cache: 'no-store',
      });
    } catch {
      throw new ApiError(0, 'network', "Can't reach the server. Check your connection and try again.");
    }
    let data = null;
    const text = await resp.text();
    if (text) {
      try { data = JSON.parse(text); } catch { data = null; }
    }
    if (resp.ok) return data;
    const err = data && data.error ? data.error : {};
    if (resp.status === 401) {
      onUnauthorized();
      throw new ApiError(401, 'unauthorized', 'Your API key was not accepted. Sign in again.');
    }
    // A 413 from this server names what was too large (the files); keep its words.
    const message = (resp.status === 413 && err.message) || WORDS[resp.status] || err.message || `The server answered ${resp.status}.`;
    throw new ApiError(resp.status, err.code || String(resp.status), resp.status >= 500 && resp.status !== 503
      ? `Something went wrong on the server (${resp.status}). Try again.` : message);
  }

  const enc = encodeURIComponent;
  return {
    request,
    listThreads: (before) => request('GET', `/instance-ai/threads${before ? `?before=${enc(before)}` : ''}`),
    messages: (t) => request('GET', `/instance-ai/threads/${enc(t)}/messages`),
    status: (t) => request('GET', `/instance-ai/threads/${enc(t)}/status`),
    chat: (t, message, attachments) => request('POST', `/instance-ai/chat/${enc(t)}`, attachments && attachments.length ? { message, attachments } : { message }),
    confirm: (requestId, body) => request('POST', `/instance-ai/confirm/${enc(requestId)}`, body),
    cancel: (t) => request('POST', `/instance-ai/chat/${enc(t)}/cancel`, {}),
    cancelTask: (t, taskId) => request('POST', `/instance-ai/chat/${enc(t)}/tasks/${enc(taskId)}/cancel`, {}),
  };
}
