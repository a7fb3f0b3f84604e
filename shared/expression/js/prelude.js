// n8n expression environment inside QuickJS: data globals backed by native
// host callbacks (`H`), the extension methods n8n adds to strings, numbers,
// arrays, objects, booleans and dates, and the Code node wrappers.
// Evaluated once per context; returns the handles the Rust side keeps.
(function (H, luxon, jmespath) {
  'use strict';
  const G = globalThis;
  const { DateTime, Duration, Interval, Settings } = luxon;

  // Luxon's DateTime#plus/minus convert a 9-unit Duration to milliseconds on
  // every call, which is slow in an interpreter. For whole values without
  // calendar units the conversion is a plain exact sum: same result, ~10x faster.
  const durationAs = Duration.prototype.as;
  const MS_PER = { weeks: 604800000, days: 86400000, hours: 3600000, minutes: 60000, seconds: 1000, milliseconds: 1 };
  Object.defineProperty(Duration.prototype, 'as', {
    configurable: true,
    writable: true,
    value: function as(unit) {
      if (unit === 'milliseconds' && this.isValid) {
        const v = this.values;
        let total = 0;
        let simple = true;
        for (const k in v) {
          const x = v[k];
          if (x === 0) continue;
          const f = MS_PER[k];
          if (f === undefined || !Number.isInteger(x)) {
            simple = false;
            break;
          }
          total += x * f;
        }
        if (simple && Number.isSafeInteger(total)) return total;
      }
      return durationAs.call(this, unit);
    },
  });

  // ------------------------------------------------------------ data access
  // Values read during one evaluation are cached so `$json.a + $json.b`
  // converts the item once; Rust bumps `state.gen` before every evaluation.
  const state = { gen: 0, seen: -1, cache: new Map() };
  function cached(key, f) {
    if (state.seen !== state.gen) {
      state.cache = new Map();
      state.seen = state.gen;
    }
    if (state.cache.has(key)) return state.cache.get(key);
    const v = f();
    state.cache.set(key, v);
    return v;
  }
  const inputAll = () => cached('input', () => H.inputAll());
  const currentItem = () =>
    cached('item', () => {
      const idx = H.itemIndex();
      if (state.cache.has('input')) return idx < 0 ? undefined : inputAll()[idx];
      return H.currentItem();
    });
  const currentIndex = () => {
    const i = H.itemIndex();
    return i < 0 ? 0 : i;
  };

  function def(name, get) {
    Object.defineProperty(G, name, { get, configurable: false, enumerable: false });
  }
  function defValue(name, value) {
    Object.defineProperty(G, name, { value, configurable: false, enumerable: false, writable: false });
  }

  def('$json', () => {
    const it = currentItem();
    return it === undefined || it === null ? undefined : it.json;
  });
  def('$binary', () => {
    const it = currentItem();
    return it && it.binary ? it.binary : {};
  });
  def('$itemIndex', () => H.itemIndex());
  // n8n's older names for the same data
  def('$data', () => G.$json);
  def('$position', () => H.itemIndex());
  def('$thisItemIndex', () => H.itemIndex());
  def('$thisRunIndex', () => H.runIndex());
  def('$thisItem', () => currentItem());
  def('$executionId', () => {
    const e = G.$execution;
    return e && e.id;
  });
  def('$resumeWebhookUrl', () => {
    const e = G.$execution;
    return e && e.resumeUrl;
  });
  def('$runIndex', () => H.runIndex());
  def('$parameter', () => cached('parameter', () => H.parameters()));
  def('$workflow', () => cached('workflow', () => H.workflow()));
  def('$execution', () => cached('execution', () => H.execution()));
  def('$vars', () => cached('vars', () => H.vars()));
  def('$now', () => DateTime.now());
  def('$today', () => DateTime.now().startOf('day'));
  def('$prevNode', () => cached('prevNode', () => H.prevNode()));
  def('$mode', () => {
    const e = G.$execution;
    return e && e.mode;
  });
  def('$env', () => {
    throw new Error('access to env vars denied');
  });

  function nodeOutput(name, branch, run) {
    const out = H.nodeOutput(String(name), branch === undefined ? 0 : Number(branch), run === undefined ? -1 : Number(run));
    if (out === null) throw new Error(`Node '${name}' hasn't been executed`);
    return out;
  }
  const nodeProxies = new Map();
  function nodeProxy(name) {
    const all = (branch, run) => cached('node:' + name + ':' + branch + ':' + run, () => nodeOutput(name, branch, run));
    // one item without copying the whole output (unless `all()` was read)
    const one = (branch, run, index) => {
      const key = 'node:' + name + ':' + branch + ':' + run;
      if (state.seen === state.gen && state.cache.has(key)) {
        const a = state.cache.get(key);
        return a[index < 0 ? a.length + index : index];
      }
      return cached('nodeItem:' + name + ':' + branch + ':' + run + ':' + index, () =>
        H.nodeItem(name, branch === undefined ? 0 : Number(branch), run === undefined ? -1 : Number(run), index),
      );
    };
    const proxy = {
      all,
      first: (branch, run) => one(branch, run, 0),
      last: (branch, run) => one(branch, run, -1),
      get item() {
        return cached('paired:' + name + ':' + currentIndex(), () => H.pairedItem(name, currentIndex()));
      },
      itemMatching: (i) => cached('paired:' + name + ':' + Number(i), () => H.pairedItem(name, Number(i))),
      pairedItem: (i) => {
        const idx = i === undefined ? currentIndex() : Number(i);
        return cached('paired:' + name + ':' + idx, () => H.pairedItem(name, idx));
      },
      get isExecuted() {
        return H.nodeOutput(name, 0, -1) !== null;
      },
      get params() {
        return cached('params:' + name, () => H.nodeParameters(name));
      },
      get context() {
        return H.nodeContext(name);
      },
    };
    return proxy;
  }
  defValue('$', function $(name) {
    if (typeof name !== 'string' || name === '') throw new Error('Node name must be a non-empty string');
    let p = nodeProxies.get(name);
    if (!p) {
      p = nodeProxy(name);
      nodeProxies.set(name, p);
    }
    return p;
  });

  // `$node["Name"].json`: the legacy accessor, item at the current index
  function legacyNode(name, index) {
    const item = () => {
      const i = index();
      return cached('nodeItem:' + name + ':undefined:undefined:' + i, () => H.nodeItem(name, 0, -1, i));
    };
    return {
      get json() {
        const it = item();
        return it ? it.json : undefined;
      },
      get data() {
        return this.json;
      },
      get binary() {
        const it = item();
        return it && it.binary ? it.binary : {};
      },
      get parameter() {
        return cached('params:' + name, () => H.nodeParameters(name));
      },
      get runIndex() {
        return 0;
      },
      get context() {
        return H.nodeContext(name);
      },
    };
  }
  function nodeMap(index) {
    return new Proxy(
      {},
      {
        get(_, name) {
          if (typeof name !== 'string') return undefined;
          return legacyNode(name, index);
        },
        has(_, name) {
          return typeof name === 'string' && H.nodeOutput(name, 0, -1) !== null;
        },
      },
    );
  }
  const $node = nodeMap(currentIndex);
  defValue('$node', $node);

  const $input = {
    all: () => inputAll(),
    first: () => inputAll()[0],
    last: () => {
      const a = inputAll();
      return a[a.length - 1];
    },
    get item() {
      return currentItem();
    },
    get params() {
      return G.$parameter;
    },
    get context() {
      return {};
    },
  };
  defValue('$input', $input);

  defValue('$items', function $items(name, output, run) {
    if (name === undefined) return inputAll();
    return nodeOutput(name, output, run);
  });
  defValue('$item', function $item(index) {
    const i = Number(index);
    return {
      get $json() {
        const it = inputAll()[i];
        return it ? it.json : undefined;
      },
      get $binary() {
        const it = inputAll()[i];
        return it && it.binary ? it.binary : {};
      },
      $node: nodeMap(() => i),
      $input,
      get $parameter() {
        return G.$parameter;
      },
    };
  });

  // n8n's ifEmpty: undefined, null, '', [] and objects without own keys (a JS Date too)
  const isEmptyValue = (v) =>
    v === undefined || v === null || v === '' || (typeof v === 'object' && Object.keys(v).length === 0);
  // n8n rewrites `$if(a, b, c)` to `a ? b : c` (a missing `c` is `false`)
  defValue('$if', function $if(cond, a, b) {
    if (arguments.length < 2) throw new ExtensionError('$if requires at least 2 parameters: test, value_if_true[, and value_if_false]');
    return cond ? a : arguments.length > 2 ? b : false;
  });
  defValue('$ifEmpty', function $ifEmpty(v, d) {
    if (arguments.length !== 2) throw new ExtensionError('expected two arguments (value, defaultValue) for this function');
    return isEmptyValue(v) ? d : v;
  });
  // n8n's `$jmespath(object, query)` (alias `$jmesPath`), on the jmespath library n8n uses
  function jmespathSearch(data, query) {
    if (typeof data !== 'object' || typeof query !== 'string') {
      throw new ExtensionError('expected two arguments (Object, string) for this function', 'ExpressionError');
    }
    return jmespath.search(data !== null && !Array.isArray(data) ? { ...data } : data, query);
  }
  defValue('$jmespath', jmespathSearch);
  // n8n's `$fromAI(key, description, type, default)`: the value an AI agent
  // chose for `key` when this node runs as a tool (the parser for tool
  // schemas is `expression::from_ai`)
  function fromAI(name, _description, _type = 'string', defaultValue) {
    if (!name || name === '') throw new ExtensionError("Add a key, e.g. $fromAI('placeholder_name')", 'ExpressionError');
    if (!/^[a-zA-Z0-9_-]{0,64}$/.test(name)) {
      throw new ExtensionError('Invalid parameter key, must be between 1 and 64 characters long and only contain lowercase letters, uppercase letters, numbers, underscores, and hyphens', 'ExpressionError');
    }
    const input = cached('fromAI', () => H.fromAIInput());
    if (!input) throw new ExtensionError('No execution data available', 'ExpressionError');
    const v = input[name];
    return v === undefined || v === null ? defaultValue : v;
  }
  defValue('$fromAI', fromAI);
  defValue('$fromai', fromAI);
  defValue('$fromAi', fromAI);
  defValue('$jmesPath', jmespathSearch);

  // ------------------------------------------------------------ extended functions
  function numberList(start, end) {
    const size = Math.abs(start - end) + 1;
    const arr = new Array(size);
    let cur = start;
    for (let i = 0; i < size; i++) arr[i] = start < end ? cur++ : cur--;
    return arr;
  }
  function zip(keys, values) {
    if (!Array.isArray(keys) || !Array.isArray(values)) throw new ExtensionError('keys and values must be arrays');
    if (keys.length !== values.length) throw new ExtensionError('keys and values not of equal length');
    const o = {};
    keys.forEach((k, i) => (o[k] = values[i]));
    return o;
  }
  const average = (...args) => arrAverage(args);
  const not = (v) => !v;
  function toPathSegment(input) {
    if (input === null || input === undefined) throw new ExtensionError('Invalid identifier: a value is required');
    const value = String(input);
    if (value === '' || value === '.' || value === '..') throw new ExtensionError(`Invalid identifier: "${value}" is not allowed`);
    return encodeURIComponent(value);
  }
  for (const [k, v] of Object.entries({ min: Math.min, max: Math.max, average, not, numberList, zip, toPathSegment, $min: Math.min, $max: Math.max, $average: average, $not: not })) {
    defValue(k, v);
  }
  defValue('DateTime', DateTime);
  defValue('Duration', Duration);
  defValue('Interval', Interval);

  // ------------------------------------------------------------ helpers
  class ExtensionError extends Error {
    constructor(message, name) {
      super(message);
      this.name = name || 'ExpressionExtensionError';
    }
  }
  function deepEqual(a, b) {
    if (a === b) return true;
    if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') {
      return typeof a === 'number' && typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b);
    }
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (a instanceof Date && b instanceof Date) return +a === +b;
    const ka = Object.keys(a), kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
  }
  // Extension methods live in per-type tables, not on the prototypes, so a
  // missing field named like one (`$json.values`) stays undefined as in n8n.
  // Calls `x.name(…)` of extension names are rewritten (Rust side) to
  // `x.__n8n_name(…)`, which dispatches like n8n's `extend()`.
  const TABLES = {
    string: Object.create(null), number: Object.create(null), boolean: Object.create(null),
    object: Object.create(null), array: Object.create(null), date: Object.create(null), jsdate: Object.create(null),
  };
  function extendProto(kind, methods) {
    Object.assign(TABLES[kind], methods);
  }
  const isObj = (v) => v !== null && typeof v === 'object';

  // ------------------------------------------------------------ strings
  const CURRENCY = /(\u004c\u0065\u006b|\u060b|\u0024|\u0192|\u20bc|\u0042\u0072|\u0042\u005a\u0024|\u0024\u0062|\u004b\u004d|\u0050|\u043b\u0432|\u0052\u0024|\u17db|\u00a5|\u20a1|\u006b\u006e|\u20b1|\u004b\u010d|\u006b\u0072|\u0052\u0044\u0024|\u00a3|\u20ac|\u00a2|\u0051|\u004c|\u0046\u0074|\u20b9|\u0052\u0070|\ufdfc|\u20aa|\u004a\u0024|\u20a9|\u20ad|\u0434\u0435\u043d|\u0052\u004d|\u20a8|\u20ae|\u004d\u0054|\u0043\u0024|\u20a6|\u0042\u002f\u002e|\u0047\u0073|\u0053\u002f\u002e|\u007a\u0142|\u006c\u0065\u0069|\u20bd|\u0414\u0438\u043d\u002e|\u0053|\u0052|\u0043\u0048\u0046|\u004e\u0054\u0024|\u0e3f|\u0054\u0054\u0024|\u20ba|\u20b4|\u0024\u0055|\u0042\u0073|\u20ab|\u005a\u0024)/gu;
  const HOST = '(?:(?:[-\\w]+\\.)+(?:[a-zA-Z]{2,}|xn--[a-zA-Z0-9]+)|localhost|\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3})';
  const DOMAIN_EXTRACT = new RegExp('^(?:(?:https?|ftp):\\/\\/)?(?:mailto:)?(?:\\/\\/)?((?:www\\.)?' + HOST + ')(?::\\d+)?(?:\\/[^\\s?]*)?(?:\\?[^\\s#]*)?(?:#[^\\s]*)?$', 'i');
  const DOMAIN = new RegExp('^(?:www\\.)?(' + HOST + ')(?::\\d+)?(?:\\/[^\\s?]*)?(?:\\?[^\\s#]*)?(?:#[^\\s]*)?$', 'i');
  const EMAIL = /(([^<>()\[\]\\.,;:\s@"]+(\.[^<>()\[\]\\.,;:\s@"]+)*)|(".+"))@(?<domain>(\[[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}])|(([a-zA-Z\-0-9]+\.)+[a-zA-Z]{2,}))/;
  const URL_TAIL = '(?::\\d+)?(?:\\/[^\\s?#]*)?(?:\\?[^\\s#]*)?(?=([^\\s]+#.*)?)#?[^\\s]*';
  const URL_EXACT = new RegExp('^(?:(?:https?|ftp):\\/\\/)(?:www\\.)?(' + HOST + ')' + URL_TAIL + '$', 'i');
  const URL_ANY = new RegExp('(?:(?:https?|ftp):\\/\\/)(?:www\\.)?(' + HOST + ')' + URL_TAIL, 'i');

  function strToDateTime(value, format) {
    try {
      if (format) {
        if (format === 'ms' || format === 's' || format === 'us' || format === 'excel') return numToDateTime(Number(value), format);
        return DateTime.fromFormat(value, format);
      }
      return parseDateTime(value);
    } catch (e) {
      throw new ExtensionError('cannot convert to Luxon DateTime');
    }
  }
  // n8n's tryToParseDateTime: ISO, HTTP, RFC 2822, SQL, then epoch milliseconds
  function parseDateTime(value) {
    if (DateTime.isDateTime(value)) return value;
    if (value instanceof Date) return DateTime.fromJSDate(value);
    const s = String(value).trim();
    const tries = [DateTime.fromISO, DateTime.fromHTTP, DateTime.fromRFC2822, DateTime.fromSQL];
    for (const f of tries) {
      const dt = f.call(DateTime, s, { setZone: true });
      if (dt.isValid) return dt;
    }
    if (/^-?\d+(\.\d+)?$/.test(s)) {
      const dt = DateTime.fromMillis(Number(s));
      if (dt.isValid) return dt;
    }
    const d = new Date(s);
    if (!Number.isNaN(+d)) return DateTime.fromJSDate(d);
    throw new Error('invalid date');
  }
  function numToDateTime(value, format = 'ms') {
    if (!['ms', 's', 'us', 'excel'].includes(format)) {
      throw new ExtensionError(`Unsupported format '${String(format)}'. toDateTime() supports 'ms', 's', 'us' and 'excel'.`);
    }
    // Excel: days since 1900, with its 1900 leap-year bug
    if (format === 'excel') return DateTime.fromSeconds((value - 25569) * 86400);
    if (format === 's') return DateTime.fromSeconds(value);
    if (format === 'us') return DateTime.fromMillis(value / 1000);
    return DateTime.fromMillis(value);
  }

  const SMALL_WORDS = new Set(['a', 'an', 'and', 'as', 'at', 'but', 'by', 'en', 'for', 'if', 'in', 'nor', 'of', 'on', 'or', 'per', 'the', 'to', 'v', 'vs', 'via']);
  function titleCase(s) {
    let first = true;
    return s.replace(/[^\s:\-–—]+|[:\-–—]/g, (w) => {
      if (/^[:\-–—]$/.test(w)) {
        if (w === ':') first = true;
        return w;
      }
      const isFirst = first;
      first = false;
      if (!isFirst && SMALL_WORDS.has(w.toLowerCase())) return w;
      if (/[A-Z]/.test(w.slice(1)) || /\w\.\w/.test(w)) return w;
      return w.charAt(0).toUpperCase() + w.slice(1);
    });
  }
  function sentenceCase(value) {
    const CHAR = /\p{L}/u, PUNC = /[!?.]/;
    let current = value.slice();
    let buffer = '';
    while (CHAR.test(current)) {
      const ci = current.search(CHAR);
      current = current.slice(0, ci) + current[ci].toLocaleUpperCase() + current.slice(ci + 1).toLocaleLowerCase();
      const pi = current.search(PUNC);
      if (pi === -1) {
        buffer += current;
        current = '';
        break;
      }
      buffer += current.slice(0, pi + 1);
      current = current.slice(pi + 1);
    }
    return buffer + current;
  }
  function removeMarkdown(value) {
    let out = value;
    try {
      out = out.replace(/^([\s\t]*)([*\-+]|\d\.)\s+/gm, '$1');
      out = out.replace(/\n={2,}/g, '\n').replace(/~~/g, '').replace(/`{3}.*\n/g, '');
      out = out
        .replace(/<[\w|\s|=|'|"|:|(|)|,|;|/|0-9|.|-]+[>|\\>]/g, '')
        .replace(/^[=-]{2,}\s*$/g, '')
        .replace(/\[\^.+?\](: .*?$)?/g, '')
        .replace(/\s{0,2}\[.*?\]: .*?$/g, '')
        .replace(/!\[.*?\][[(].*?[\])]/g, '')
        .replace(/\[(.*?)\][[(].*?[\])]/g, '$1')
        .replace(/>/g, '')
        .replace(/^\s{1,2}\[(.*?)\]: (\S+)( ".*?")?\s*$/g, '')
        .replace(/^#{1,6}\s*([^#]*)\s*(#{1,6})?/gm, '$1')
        .replace(/([*_]{1,3})(\S.*?\S)\1/g, '$2')
        .replace(/(`{3,})(.*?)\1/gm, '$2')
        .replace(/^-{3,}\s*$/g, '')
        .replace(/`(.+?)`/g, '$1')
        .replace(/\n{2,}/g, '\n\n');
    } catch (e) {
      return value;
    }
    return out;
  }
  function strToInt(value, radix) {
    const n = parseInt(value.replace(CURRENCY, ''), radix);
    if (Number.isNaN(n)) throw new ExtensionError('cannot convert to integer');
    return n;
  }
  function strToFloat(value) {
    if (value.includes(',')) throw new ExtensionError('cannot convert to float, expected . as decimal separator');
    const n = parseFloat(value.replace(CURRENCY, ''));
    if (Number.isNaN(n)) throw new ExtensionError('cannot convert to float');
    return n;
  }
  function isEmail(v) {
    return EMAIL.test(v) && !v.includes(' ');
  }
  function urlPath(v) {
    const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*([^?#]*)/.exec(v);
    if (!m) return undefined;
    return m[1] === '' ? '/' : m[1];
  }
  const SPECIAL = { 'ä': 'a', 'ö': 'o', 'ü': 'u', 'Ä': 'A', 'Ö': 'O', 'Ü': 'U', 'ß': 'ss', 'æ': 'ae', 'Æ': 'AE', 'ø': 'o', 'Ø': 'O', 'œ': 'oe', 'Œ': 'OE', 'ł': 'l', 'Ł': 'L', 'đ': 'd', 'Đ': 'D', 'þ': 'th', 'Þ': 'TH' };
  function replaceSpecialChars(v) {
    return v
      .normalize('NFD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^\u0000-\u007f]/g, (c) => (c in SPECIAL ? SPECIAL[c] : '?'));
  }

  extendProto('string', {
    hash(algorithm) {
      const alg = algorithm === undefined ? 'md5' : String(algorithm).toLowerCase();
      if (alg === 'base64') return H.base64Encode(String(this));
      const r = H.hash(alg, String(this));
      if (r === null) throw new ExtensionError(`Unknown algorithm ${alg}. Available algorithms are: md5,sha1,sha224,sha256,sha384,sha512,sha3, and Base64.`);
      return r;
    },
    isEmpty() { return String(this) === ''; },
    isNotEmpty() { return String(this) !== ''; },
    isBlank() { return String(this).trim() === ''; },
    isNotBlank() { return String(this).trim() !== ''; },
    length() { return String(this).length; },
    removeMarkdown() { return removeMarkdown(String(this)); },
    removeTags() { return String(this).replace(/<[^>]*>?/gm, ''); },
    toDate() {
      const s = String(this);
      const d = new Date(Date.parse(s));
      if (Number.isNaN(+d)) throw new ExtensionError('cannot convert to date');
      if (!/:/.test(s)) d.setHours(0, 0, 0);
      return d;
    },
    toDateTime(format) { return strToDateTime(String(this), format); },
    toBoolean() {
      const n = String(this).toLowerCase();
      return n.length > 0 && !['false', 'no', '0'].includes(n);
    },
    toNumber() {
      const n = Number(String(this).replace(CURRENCY, ''));
      if (Number.isNaN(n)) throw new ExtensionError('cannot convert to number');
      return n;
    },
    toFloat() { return strToFloat(String(this)); },
    toDecimalNumber() { return strToFloat(String(this)); },
    toInt(radix) { return strToInt(String(this), radix); },
    toWholeNumber(radix) { return strToInt(String(this), radix); },
    toSentenceCase() { return sentenceCase(String(this)); },
    toSnakeCase() {
      return String(this).toLocaleLowerCase().replace(/[ \-]/g, '_').replace(/[\u2000-\u206F\u2E00-\u2E7F\\'!"#$%&()*+,.\/:;<=>?@\[\]^`{|}~]/g, '');
    },
    toTitleCase() { return titleCase(String(this)); },
    urlDecode(entire) { return entire ? decodeURI(String(this)) : decodeURIComponent(String(this)); },
    urlEncode(entire) { return entire ? encodeURI(String(this)) : encodeURIComponent(String(this)); },
    quote(q = '"') {
      return q + String(this).replace(/\\/g, '\\\\').replace(new RegExp('\\' + q, 'g'), '\\' + q) + q;
    },
    replaceSpecialChars() { return replaceSpecialChars(String(this)); },
    isDomain() { return DOMAIN.test(String(this)); },
    isEmail() { return isEmail(String(this)); },
    isNumeric() {
      const v = String(this);
      if (v.includes(' ')) return false;
      return !Number.isNaN(Number(v)) && !Number.isNaN(parseFloat(v));
    },
    isUrl() { return URL_EXACT.test(String(this)); },
    extractEmail() {
      const m = EMAIL.exec(String(this));
      return m ? m[0] : undefined;
    },
    extractDomain() {
      const v = String(this);
      if (isEmail(v)) {
        const m = EMAIL.exec(v);
        return m ? m.groups.domain : undefined;
      }
      const m = v.match(DOMAIN_EXTRACT);
      return m ? m[1] : undefined;
    },
    extractUrl() {
      const m = URL_ANY.exec(String(this));
      return m ? m[0] : undefined;
    },
    extractUrlPath() { return urlPath(String(this)); },
    parseJson() {
      const v = String(this);
      try {
        return JSON.parse(v);
      } catch (e) {
        if (v.includes("'")) throw new ExtensionError("Parsing failed. Check you're using double quotes");
        throw new ExtensionError('Parsing failed');
      }
    },
    toJsonString() { return JSON.stringify(String(this)); },
    base64Encode() { return H.base64Encode(String(this)); },
    base64Decode() { return H.base64Decode(String(this)); },
  });

  // ------------------------------------------------------------ numbers
  extendProto('number', {
    ceil() { return Math.ceil(this); },
    floor() { return Math.floor(this); },
    round(decimals = 0) { return +Number(this).toFixed(decimals); },
    abs() { return Math.abs(this); },
    isEven() {
      if (!Number.isInteger(+this)) throw new ExtensionError('isEven() is only callable on integers');
      return this % 2 === 0;
    },
    isOdd() {
      if (!Number.isInteger(+this)) throw new ExtensionError('isOdd() is only callable on integers');
      return Math.abs(this) % 2 === 1;
    },
    isInteger() { return Number.isInteger(+this); },
    format(locales = 'en-US', options = {}) { return new Intl.NumberFormat(locales, options).format(+this); },
    toBoolean() { return +this !== 0; },
    toInt() { return Math.round(+this); },
    toFloat() { return +this; },
    toDateTime(format) { return numToDateTime(+this, format); },
  });

  // ------------------------------------------------------------ booleans
  extendProto('boolean', {
    toInt() { return this.valueOf() ? 1 : 0; },
    toFloat() { return this.valueOf() ? 1 : 0; },
    toNumber() { return this.valueOf() ? 1 : 0; },
    toBoolean() { return this.valueOf(); },
    toDateTime() { return undefined; },
  });

  // ------------------------------------------------------------ objects
  function objCompact(value) {
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === null || v === undefined || v === 'nil' || v === '') continue;
      if (typeof v === 'object') {
        if (Object.keys(v).length === 0) continue;
        Object.defineProperty(out, k, { value: objCompact(v), writable: true, enumerable: true, configurable: true });
      } else {
        Object.defineProperty(out, k, { value: v, writable: true, enumerable: true, configurable: true });
      }
    }
    return out;
  }
  function objMerge(value, other) {
    if (!other) return value;
    if (typeof other !== 'object') throw new ExtensionError('merge(): expected object arg');
    const out = { ...value };
    for (const [k, v] of Object.entries(other)) if (!(k in out)) out[k] = v;
    return out;
  }
  function formEncode(s) {
    return encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  }
  extendProto('object', {
    isEmpty() { return Object.keys(this).length === 0; },
    isNotEmpty() { return Object.keys(this).length > 0; },
    hasField(name) { return name in this; },
    removeField(name) {
      if (!(name in this)) return this;
      const out = { ...this };
      delete out[name];
      return out;
    },
    removeFieldsContaining(match) {
      if (typeof match !== 'string' || match === '') throw new ExtensionError('removeFieldsContaining(): expected non-empty string arg');
      const out = { ...this };
      for (const [k, v] of Object.entries(this)) if (typeof v === 'string' && v.includes(match)) delete out[k];
      return out;
    },
    keepFieldsContaining(match) {
      if (typeof match !== 'string' || match === '') throw new ExtensionError('argument of keepFieldsContaining must be a non-empty string');
      const out = { ...this };
      for (const [k, v] of Object.entries(this)) if (typeof v !== 'string' || !v.includes(match)) delete out[k];
      return out;
    },
    compact() { return objCompact(this); },
    urlEncode() {
      return Object.entries(this).map(([k, v]) => formEncode(String(k)) + '=' + formEncode(String(v))).join('&');
    },
    keys() { return Object.keys(this); },
    values() { return Object.values(this); },
    toJsonString() { return JSON.stringify(this); },
    toInt() { return undefined; },
    toFloat() { return undefined; },
    toBoolean() { return undefined; },
    toDateTime() { return undefined; },
  });

  // ------------------------------------------------------------ arrays
  function ensureNumbers(arr, fn) {
    if (arr.some((i) => typeof i !== 'number')) throw new ExtensionError(`${fn}(): all array elements must be numbers`);
  }
  function arrSum(arr) {
    ensureNumbers(arr, 'sum');
    return arr.reduce((p, c) => p + c, 0);
  }
  function arrAverage(arr) {
    ensureNumbers(arr, 'average');
    return arr.length === 0 ? 0 : arr.reduce((p, c) => p + c, 0) / arr.length;
  }
  function arrUnique(arr, fields) {
    const key = (v) => {
      if (fields.length > 0 && v && typeof v === 'object') {
        const o = {};
        for (const f of fields) o[f] = v[f];
        return o;
      }
      return v;
    };
    const out = [], keys = [];
    for (const v of arr) {
      const k = key(v);
      if (keys.findIndex((w) => deepEqual(w, k)) === -1) {
        keys.push(k);
        out.push(v);
      }
    }
    return out;
  }
  function arrCompact(arr) {
    return arr
      .filter((v) => {
        if (v && typeof v === 'object' && Object.keys(v).length === 0) return false;
        return v !== null && v !== undefined && v !== 'nil' && v !== '';
      })
      .map((v) => (isObj(v) ? objCompact(v) : v));
  }
  function chunk(arr, size) {
    if (typeof size !== 'number' || !(size > 0)) throw new ExtensionError('chunk(): expected non-zero numeric arg, e.g. .chunk(5)');
    const out = [];
    for (let i = 0; i < arr.length; i += size) out.push(arr.slice(i, i + size));
    return out;
  }
  function mergeAll(objects) {
    let merged = {};
    for (const o of objects) if (isObj(o) && !Array.isArray(o)) merged = objMerge(merged, o);
    return merged;
  }
  extendProto('array', {
    first() { return this[0]; },
    last() { return this[this.length - 1]; },
    isEmpty() { return this.length === 0; },
    isNotEmpty() { return this.length > 0; },
    pluck(...fields) {
      if (fields.length === 0) return this;
      return this.reduce((out, cur) => {
        if (isObj(cur)) {
          const p = [];
          Object.keys(cur).forEach((k) => fields.forEach((f) => { if (f === k) p.push(cur[k]); }));
          if (p.length > 0) out.push(p.length === 1 ? p[0] : p);
        }
        return out;
      }, []);
    },
    randomItem() { return this.length ? this[Math.floor(Math.random() * this.length)] : undefined; },
    unique(...fields) { return arrUnique(this, fields); },
    removeDuplicates(...fields) { return arrUnique(this, fields); },
    sum() { return arrSum(this); },
    min() { ensureNumbers(this, 'min'); return Math.min(...this); },
    max() { ensureNumbers(this, 'max'); return Math.max(...this); },
    average() { return arrAverage(this); },
    compact() { return arrCompact(this); },
    smartJoin(keyField, valueField) {
      if (!keyField || !valueField || typeof keyField !== 'string' || typeof valueField !== 'string') {
        throw new ExtensionError('smartJoin(): expected two string args, e.g. .smartJoin("name", "value")');
      }
      return this.reduce((o, v) => {
        if (isObj(v) && keyField in v && valueField in v) o[v[keyField]] = v[valueField];
        return o;
      }, {});
    },
    chunk(size) { return chunk(this, size); },
    renameKeys(...args) {
      if (args.length === 0 || args.length % 2 !== 0) throw new ExtensionError('renameKeys(): expected an even amount of args: from1, to1 [, from2, to2, ...]. e.g. .renameKeys("name", "title")');
      const pairs = chunk(args, 2);
      return this.map((v) => {
        if (!isObj(v)) return v;
        const o = { ...v };
        for (const [from, to] of pairs) {
          if (from in o) {
            o[to] = o[from];
            delete o[from];
          }
        }
        return o;
      });
    },
    merge(others) {
      if (others === undefined) return mergeAll(this);
      if (!Array.isArray(others)) throw new ExtensionError('merge(): expected array arg, e.g. .merge([{ id: 1, otherValue: 3 }])');
      const len = Math.max(this.length, others.length);
      let merged = {};
      for (let i = 0; i < len; i++) {
        if (this[i] !== undefined && typeof this[i] === 'object' && typeof others[i] === 'object') {
          merged = Object.assign(merged, others[i] ? objMerge(this[i], others[i]) : this[i]);
        }
      }
      return merged;
    },
    mergeIntoObject(others) {
      const list = others === undefined ? this : Array.isArray(others) ? this.concat(others) : this.concat([others]);
      return mergeAll(list);
    },
    union(others) {
      if (!Array.isArray(others)) throw new ExtensionError('union(): expected array arg, e.g. .union([1, 2, 3, 4])');
      const out = Array.from(this);
      for (const v of others) if (out.findIndex((w) => deepEqual(w, v)) === -1) out.push(v);
      return arrUnique(out, []);
    },
    difference(others) {
      if (!Array.isArray(others)) throw new ExtensionError('difference(): expected array arg, e.g. .difference([1, 2, 3, 4])');
      return arrUnique(this.filter((v) => others.findIndex((w) => deepEqual(w, v)) === -1), []);
    },
    intersection(others) {
      if (!Array.isArray(others)) throw new ExtensionError('intersection(): expected array arg, e.g. .intersection([1, 2, 3, 4])');
      const out = this.filter((v) => others.findIndex((w) => deepEqual(w, v)) !== -1);
      for (const v of others) if (this.findIndex((w) => deepEqual(w, v)) !== -1) out.push(v);
      return arrUnique(out, []);
    },
    append(...items) { return this.concat(items); },
    toJsonString() { return JSON.stringify(this); },
    toInt() { return undefined; },
    toFloat() { return undefined; },
    toBoolean() { return undefined; },
    toDateTime() { return undefined; },
  });

  // ------------------------------------------------------------ dates
  const DURATION_MAP = { day: 'days', month: 'months', year: 'years', week: 'weeks', hour: 'hours', minute: 'minutes', second: 'seconds', millisecond: 'milliseconds', ms: 'milliseconds', sec: 'seconds', secs: 'seconds', hr: 'hours', hrs: 'hours', min: 'minutes', mins: 'minutes', quarter: 'quarters' };
  const DURATION_UNITS = ['milliseconds', 'seconds', 'minutes', 'hours', 'days', 'weeks', 'months', 'quarters', 'years'];
  const DIFF_UNITS = new Set([...DURATION_UNITS, 'day', 'week', 'month', 'year', 'hour', 'minute', 'second', 'millisecond', 'weekNumber', 'yearDayNumber', 'weekday']);
  // n8n's convertToDateTime: strings through JS Date, undefined when invalid
  function looseDateTime(v) {
    if (typeof v === 'string') {
      const dt = DateTime.fromJSDate(new Date(v));
      return dt.isValid ? dt : undefined;
    }
    if (v instanceof Date) return DateTime.fromJSDate(v);
    if (DateTime.isDateTime(v)) return v;
    return undefined;
  }
  const UNIT_MAP = { days: 'day', months: 'month', years: 'year', hours: 'hour', minutes: 'minute', seconds: 'second', milliseconds: 'millisecond', weeks: 'week', quarters: 'quarter', hrs: 'hour', hr: 'hour', mins: 'minute', min: 'minute', secs: 'second', sec: 'second', ms: 'millisecond' };
  const toDT = (d) => (DateTime.isDateTime(d) ? d : d instanceof Date ? DateTime.fromJSDate(d) : parseDateTime(d));
  const dtPlus = DateTime.prototype.plus;
  const dtMinus = DateTime.prototype.minus;
  function durationArgs(args) {
    if (args.length === 1 || typeof args[0] !== 'number') return args[0];
    const [n = 0, unit = 'minutes'] = args;
    return { [DURATION_MAP[unit] || unit]: n };
  }
  const dateMethods = {
    plus(...args) { return dtPlus.call(this, durationArgs(args)); },
    minus(...args) { return dtMinus.call(this, durationArgs(args)); },
    format(fmt, opts) { return this.toFormat(fmt, { ...(opts || {}) }); },
    beginningOf(unit = 'week') { return this.startOf(UNIT_MAP[unit] || unit); },
    endOfMonth() { return this.endOf('month'); },
    extract(part = 'week') {
      if (part === 'yearDayNumber') return this.ordinal;
      if (part === 'week') part = 'weekNumber';
      return this.get(UNIT_MAP[part] || part);
    },
    isBetween(a, b) {
      if (arguments.length !== 2) throw new ExtensionError('isBetween(): expected exactly two args');
      const x = looseDateTime(a), y = looseDateTime(b);
      if (!x || !y) return undefined;
      if (x > y) return y < this && this < x;
      return y > this && this > x;
    },
    isDst() { return this.isInDST; },
    isInLast(n = 0, unit = 'minutes') {
      const now = DateTime.now();
      const past = dtMinus.call(now, { [DURATION_MAP[unit] || unit]: n });
      return past <= this && this <= now;
    },
    isWeekend() { return this.weekday === 6 || this.weekday === 7; },
    diffTo(other, unit = 'days') {
      let units = Array.isArray(unit) ? unit : [unit];
      if (units.length === 0) units = ['days'];
      const bad = units.find((u) => !DIFF_UNITS.has(u));
      if (bad !== undefined) {
        throw new ExtensionError(`Unsupported unit '${String(bad)}'. Supported: ${DURATION_UNITS.map((u) => `'${u}'`).join(', ')}.`);
      }
      const r = this.diff(toDT(other), units);
      return units.length > 1 ? r.toObject() : r.as(units[0]);
    },
    diffToNow(unit) { return dateMethods.diffTo.call(this, DateTime.now(), unit); },
    toDateTime() { return this; },
    toInt() { return this.toMillis(); },
    toFloat() { return this.toMillis(); },
    toBoolean() { return undefined; },
    // only null/undefined are empty (n8n)
    isEmpty() { return false; },
    isNotEmpty() { return true; },
  };
  extendProto('date', dateMethods);
  extendProto('jsdate', {
    toDateTime() { return DateTime.fromJSDate(this); },
    ...Object.fromEntries(
      Object.keys(dateMethods)
        .filter((k) => k !== 'toDateTime')
        .map((k) => [k, function (...args) {
          const r = dateMethods[k].apply(DateTime.fromJSDate(this), args);
          return DateTime.isDateTime(r) ? r.toJSDate() : r;
        }]),
    ),
  });

  // n8n's dispatch (`extend()`): the type's extension first, then a native
  // method of that name, then the generic isEmpty/isNotEmpty, else an error
  // naming the types that have the function. Deviation: objects that are not
  // plain (Map, Set, class instances, `$input`) prefer their own methods.
  const TYPE_NAMES = [['array', 'Array'], ['date', 'Date'], ['number', 'Number'], ['object', 'Object'], ['string', 'String'], ['boolean', 'Boolean']];
  const ISO_DATE = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}.\d{3}Z/;
  // a string that is exactly a JS Date's ISO form counts as a date (n8n's isDate)
  function isIsoDateString(v) {
    if (!v.length || !ISO_DATE.test(v)) return false;
    const d = new Date(v);
    return !Number.isNaN(d.valueOf()) && d.toISOString() === v;
  }
  // the receiver of a rewritten call when it is null/undefined (see `__n8n_v`)
  class Nullish {
    constructor(value) {
      this.value = value;
    }
  }
  const NULL = new Nullish(null), UNDEFINED = new Nullish(undefined);
  defValue('__n8n_v', (v) => (v === undefined ? UNDEFINED : v === null ? NULL : v));
  const GENERIC = { isEmpty: (v) => v === null || v === undefined || !v, isNotEmpty: (v) => !(v === null || v === undefined || !v) };
  function dispatch(self, name, args) {
    if (self instanceof Nullish) {
      const g = GENERIC[name];
      if (g) return g(self.value);
      throw new ExtensionError(`${name} can't be used on ${String(self.value)} value`);
    }
    let v = self instanceof String || self instanceof Number || self instanceof Boolean ? self.valueOf() : self;
    let table;
    if (Array.isArray(v)) table = TABLES.array;
    else if (typeof v === 'string' && name !== 'toDate' && name !== 'toDateTime' && isIsoDateString(v)) {
      v = new Date(v);
      table = TABLES.jsdate;
    } else if (typeof v === 'string') table = TABLES.string;
    else if (typeof v === 'number') table = TABLES.number;
    else if (DateTime.isDateTime(v)) table = TABLES.date;
    else if (v instanceof Date) table = TABLES.jsdate;
    else if (v !== null && typeof v === 'object') {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null && typeof v[name] === 'function') return v[name].apply(v, args);
      table = TABLES.object;
    } else if (typeof v === 'boolean') table = TABLES.boolean;
    const f = table && table[name];
    if (f) return f.apply(v, args);
    if (v && typeof v[name] === 'function') return v[name].apply(v, args);
    const g = GENERIC[name];
    if (g) return g(v);
    const have = TYPE_NAMES.filter(([k]) => name in TABLES[k] || (k === 'date' && name in TABLES.jsdate)).map(([, n]) => `"${n}"`);
    if (have.length === 0) throw new ExtensionError(`Unknown expression function: ${name}`);
    if (have.length === 1) throw new ExtensionError(`${name}() is only callable on type ${have[0]}`);
    const last = have.pop();
    throw new ExtensionError(`${name}() is only callable on types ${have.join(', ')}, and ${last}`);
  }
  const EXTENSION_NAMES = new Set();
  for (const t of Object.values(TABLES)) for (const k of Object.keys(t)) EXTENSION_NAMES.add(k);
  for (const name of EXTENSION_NAMES) {
    Object.defineProperty(Object.prototype, '__n8n_' + name, {
      value: function (...args) {
        return dispatch(this, name, args);
      },
      writable: false, configurable: false, enumerable: false,
    });
  }

  // ------------------------------------------------------------ console
  function show(v) {
    if (typeof v === 'string') return v;
    if (v === undefined) return 'undefined';
    if (typeof v === 'function') return '[Function' + (v.name ? ': ' + v.name : ' (anonymous)') + ']';
    if (typeof v === 'symbol' || typeof v === 'bigint') return String(v);
    if (v instanceof Error) return v.stack ? String(v) + '\n' + v.stack : String(v);
    try {
      const s = JSON.stringify(v);
      return s === undefined ? String(v) : s;
    } catch (e) {
      return String(v);
    }
  }
  const mkLog = (level) => (...args) => H.console(level, args.map(show).join(' '));
  defValue('console', Object.freeze({ log: mkLog('log'), info: mkLog('info'), warn: mkLog('warn'), error: mkLog('error'), debug: mkLog('debug'), trace: mkLog('trace') }));


  // A clock the host may freeze (tests): `Date.now()`, Luxon's `DateTime.now()`,
  // `$now` and `$today` read it. `new Date()` keeps the real clock.
  const realNow = Date.now;
  let frozenNow = null;
  Date.now = function now() {
    return frozenNow === null ? realNow() : frozenNow;
  };
  Settings.now = () => Date.now();
  const setNow = (ms) => {
    frozenNow = ms === null || ms === undefined ? null : Number(ms);
  };

  // ------------------------------------------------------------ timers
  // setTimeout & co. for Code node scripts, on the real clock. The host runs
  // the earliest due timer whenever a script waits with no other job left
  // (sleeping until it is due, within the time limit), like Node's event loop
  // with its microtasks between timers. Timers left when a script ends are dropped.
  const timers = (() => {
    let queue = [];
    let nextId = 1;
    const idOf = (t) => (t !== null && typeof t === 'object' ? t.id : t);
    const add = (fn, ms, args, repeat) => {
      if (typeof fn !== 'function') throw new TypeError('The "callback" argument must be of type function');
      const delay = Math.max(0, Number(ms) || 0);
      const id = nextId++;
      queue.push({ id, at: realNow() + delay, fn, args, every: repeat ? Math.max(1, delay) : 0 });
      return id;
    };
    const clear = (t) => {
      const id = idOf(t);
      queue = queue.filter((x) => x.id !== id);
    };
    defValue('setTimeout', (fn, ms, ...args) => add(fn, ms, args, false));
    defValue('setInterval', (fn, ms, ...args) => add(fn, ms, args, true));
    defValue('setImmediate', (fn, ...args) => add(fn, -1, args, false));
    defValue('clearTimeout', clear);
    defValue('clearInterval', clear);
    defValue('clearImmediate', clear);
    if (typeof G.queueMicrotask !== 'function') {
      defValue('queueMicrotask', (fn) => {
        Promise.resolve().then(fn);
      });
    }
    return {
      // ms until the earliest timer is due (0: now), -1 when none is set
      next() {
        let at = Infinity;
        for (const t of queue) if (t.at < at) at = t.at;
        return at === Infinity ? -1 : Math.max(0, at - realNow());
      },
      // runs the earliest due timer
      run() {
        let t = null;
        for (const x of queue) if (t === null || x.at < t.at) t = x;
        if (t === null || t.at > realNow()) return;
        if (t.every) t.at = realNow() + t.every;
        else queue = queue.filter((x) => x !== t);
        t.fn(...t.args);
      },
      reset() {
        queue = [];
      },
    };
  })();

  return { state, setNow, timers, setZone: (z) => { Intl.__setDefaultZone(z); Settings.defaultZone = z; } };
})
