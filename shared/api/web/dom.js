// Small DOM helpers: element creation, keyed child reconciliation and a
// memo cache, so a streaming update rebuilds only what changed and never
// steals focus from a card the user is typing in.

/** h('button', {class: 'x', on: {click}, attrs: {'aria-label': '…'}}, ...children) */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === 'attrs') for (const [a, av] of Object.entries(v)) { if (av !== undefined && av !== null && av !== false) el.setAttribute(a, av === true ? '' : String(av)); }
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else el[k] = v;
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Makes `parent`'s children exactly `nodes`, moving only what is out of place. */
export function sync(parent, nodes) {
  const want = nodes.flat(Infinity).filter(Boolean);
  for (let i = 0; i < want.length; i++) {
    const cur = parent.childNodes[i];
    if (cur !== want[i]) parent.insertBefore(want[i], cur || null);
  }
  while (parent.childNodes.length > want.length) parent.lastChild.remove();
  return parent;
}

/** A cache of built elements: `get(key, version, build)` rebuilds only when the version changed. */
export function createMemo() {
  const cache = new Map();
  return {
    get(key, version, build) {
      const hit = cache.get(key);
      if (hit && hit.version === version) return hit.el;
      const el = build(hit ? hit.el : null);
      cache.set(key, { version, el });
      return el;
    },
    clear() { cache.clear(); },
  };
}

/** Visually hidden text for screen readers. */
export function srOnly(text) {
  return h('span', { class: 'sr-only', text });
}
