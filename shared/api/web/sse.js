// The event stream of one thread over fetch (EventSource cannot send the
// bearer header). Frames are parsed as SSE; the reconnect cursor is the max
// id seen, sent as `Last-Event-ID` when the stream drops or the server ends
// it (the `retry:` hint says when). The first connection carries the
// snapshot's cursor as `?lastEventId=` (the spec's Frontend Flow).

export function connectEvents({ url, key, cursor, onEvent, onState, onUnauthorized, onNotFound }) {
  let lastId = cursor;
  let retryMs = 1000;
  let failures = 0;
  let closed = false;
  let controller = null;
  let first = true;

  async function run() {
    while (!closed) {
      controller = new AbortController();
      onState(first ? 'connecting' : 'reconnecting');
      try {
        const target = first ? `${url}?lastEventId=${lastId}` : url;
        const headers = { Authorization: `Bearer ${key}`, Accept: 'text/event-stream' };
        if (!first) headers['Last-Event-ID'] = String(lastId);
        const resp = await fetch(target, { headers, signal: controller.signal, cache: 'no-store' });
        if (resp.status === 401) { onUnauthorized(); return; }
        if (resp.status === 404) { onNotFound(); return; }
        if (!resp.ok || !resp.body) throw new Error(`events answered ${resp.status}`);
        first = false;
        failures = 0;
        onState('open');
        await read(resp.body);
      } catch (e) {
        if (closed) return;
        failures++;
      }
      first = false;
      if (closed) return;
      onState('reconnecting');
      // The server's hint, backing off while it keeps failing.
      await sleep(Math.min(15000, retryMs * Math.max(1, 2 ** Math.min(failures, 4) / 2)));
    }
  }

  async function read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let id = null;
    let data = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          if (data.length) dispatch(id, data.join('\n'));
          id = null;
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let v = colon < 0 ? '' : line.slice(colon + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'data') data.push(v);
        else if (field === 'id') id = v;
        else if (field === 'retry' && /^\d+$/.test(v)) retryMs = Number(v);
      }
    }
  }

  function dispatch(rawId, data) {
    let ev;
    try { ev = JSON.parse(data); } catch { return; }
    const id = rawId !== null && /^\d+$/.test(rawId) ? Number(rawId) : null;
    if (id !== null && id > lastId) lastId = id;
    onEvent(ev, id);
  }

  run();
  return {
    close() { closed = true; if (controller) controller.abort(); onState('closed'); },
    get cursor() { return lastId; },
  };
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }
