// A small Markdown renderer for the assistant's text. It builds DOM nodes
// with textContent only — no HTML string ever reaches the page — so model
// output cannot inject markup or script (sanitised by construction).
// Covers what chat answers use: paragraphs, headings, lists, code, quotes,
// tables, rules, emphasis, inline code and http(s)/mailto links.

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++;
      const code = el('code', null, body.join('\n'));
      if (fence[2]) code.dataset.lang = fence[2];
      frag.append(el('pre', null, code));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      const level = Math.min(6, heading[1].length + 2);
      frag.append(inline(el(`h${level}`), heading[2]));
      i++;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { frag.append(el('hr')); i++; continue; }
    if (/^\s*>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ''));
      const q = el('blockquote');
      q.append(renderMarkdown(body.join('\n')));
      frag.append(q);
      continue;
    }
    if (isTableStart(lines, i)) {
      const head = cells(lines[i]);
      i += 2;
      const table = el('table');
      const thead = el('thead', null, row('th', head));
      const tbody = el('tbody');
      while (i < lines.length && lines[i].includes('|') && lines[i].trim()) tbody.append(row('td', cells(lines[i++])));
      table.append(thead, tbody);
      frag.append(el('div', { class: 'table-scroll' }, table));
      continue;
    }
    const item = listItem(line);
    if (item) {
      const list = el(item.ordered ? 'ol' : 'ul');
      if (item.ordered && item.start !== 1) list.start = item.start;
      while (i < lines.length) {
        const it = listItem(lines[i]);
        if (!it || it.ordered !== item.ordered) {
          // A continuation line of the previous item.
          if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) {
            list.lastChild.append(document.createElement('br'));
            inline(list.lastChild, lines[i].trim());
            i++;
            continue;
          }
          break;
        }
        const li = el('li');
        const task = it.text.match(/^\[([ xX])\]\s+(.*)$/);
        if (task) {
          li.className = 'task';
          li.append(el('span', { class: task[1] === ' ' ? 'box' : 'box done', 'aria-hidden': 'true' }, task[1] === ' ' ? '☐' : '☑'));
          inline(li, task[2]);
        } else inline(li, it.text);
        list.append(li);
        i++;
      }
      frag.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) para.push(lines[i++]);
    const p = el('p');
    para.forEach((l, k) => {
      if (k) p.append(document.createElement('br'));
      inline(p, l.trim());
    });
    frag.append(p);
  }
  return frag;
}

function startsBlock(lines, i) {
  const l = lines[i];
  return /^\s*(```|~~~)/.test(l) || /^#{1,6}\s/.test(l) || /^\s*>/.test(l) || !!listItem(l) || isTableStart(lines, i);
}

function listItem(line) {
  let m = line.match(/^\s{0,3}[-*+]\s+(.*)$/);
  if (m) return { ordered: false, text: m[1] };
  m = line.match(/^\s{0,3}(\d{1,9})[.)]\s+(.*)$/);
  if (m) return { ordered: true, start: Number(m[1]), text: m[2] };
  return null;
}

function isTableStart(lines, i) {
  return lines[i].includes('|') && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[i + 1]);
}

function cells(line) {
  return line.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
}

function row(tag, values) {
  const tr = el('tr');
  for (const v of values) tr.append(inline(el(tag), v));
  return tr;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) e.append(c);
  return e;
}

// Inline spans, longest-match first: code, links, autolinks, bold, italic.
const INLINE = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\[([^\]\n]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|(\*\*|__)(?=\S)([\s\S]+?\S)\6|(\*|_)(?=\S)([\s\S]+?\S)\8(?![\w*])|~~(?=\S)([\s\S]+?\S)~~/g;

export function inline(parent, text) {
  let last = 0;
  text = String(text);
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1]) parent.append(el('code', null, m[2]));
    else if (m[3]) parent.append(link(m[4], m[3]));
    else if (m[5]) parent.append(link(m[5], m[5]));
    else if (m[6]) parent.append(inline(el('strong'), m[7]));
    else if (m[8]) {
      // `snake_case_words` are not emphasis.
      if (m[8] === '_' && /\w/.test(text[m.index - 1] || '')) { parent.append(m[0]); continue; }
      parent.append(inline(el('em'), m[9]));
    } else if (m[10]) parent.append(inline(el('del'), m[10]));
  }
  if (last < text.length) parent.append(text.slice(last));
  return parent;
}

function link(href, label) {
  if (!SAFE_URL.test(href)) return document.createTextNode(label === href ? href : `${label} (${href})`);
  const a = el('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank' });
  inline(a, label);
  return a;
}
