// Result checks of n8n's Code, Function and Function Item nodes, evaluated
// inside the wrapper that runs the user's code (see code.rs). Called with the
// wrapper's settings; returns the functions the wrapper uses. Failures are
// returned to the host as a trailing meta item, never thrown past the wrapper.
(function (firstLine, staticData, nodeName, customData) {
  const ITEM_KEYS = ['json', 'binary', 'pairedItem', 'error', 'metadata', 'index'];
  const isItemKey = (k) => ITEM_KEYS.indexOf(k) !== -1;
  const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
  const hasOwn = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

  // n8n's ValidationError: the message carries the item (and line) it is about
  class Failure {
    constructor(message, description, itemIndex, lineNumber) {
      let where = '';
      if (lineNumber !== undefined && itemIndex !== undefined) where = ` [line ${lineNumber}, for item ${itemIndex}]`;
      else if (lineNumber !== undefined) where = ` [line ${lineNumber}]`;
      else if (itemIndex !== undefined) where = ` [item ${itemIndex}]`;
      this.message = message + where;
      this.description = description;
    }
  }
  const notItems = () =>
    new Failure("Code doesn't return items properly", 'Please return an array of objects, one for each item you would like to output.');

  // the user's line an error was thrown at (QuickJS stack rows end in `expression:LINE`)
  function lineOf(e) {
    const stack = e !== null && typeof e === 'object' && typeof e.stack === 'string' ? e.stack : '';
    for (const row of stack.split('\n')) {
      const m = /expression:(\d+)/.exec(row);
      if (m) {
        const line = Number(m[1]) - firstLine + 1;
        if (line >= 1) return line;
      }
    }
    return undefined;
  }

  // n8n's ExecutionError: the message is the text after the last `:` of the
  // error's first `Error:` row, the part before it the description
  function executionFailure(e, itemIndex) {
    if (e instanceof Failure) return e;
    const line = lineOf(e);
    let where = '';
    if (line !== undefined) where = itemIndex === undefined ? ` [line ${line}]` : ` [line ${line}, for item ${itemIndex}]`;
    let head = '';
    if (e !== null && typeof e === 'object') {
      const name = e.name === undefined ? 'Error' : String(e.name);
      const message = e.message === undefined ? '' : String(e.message);
      head = message === '' ? name : `${name}: ${message}`;
    } else {
      head = JSON.stringify(e) === undefined ? String(e) : JSON.stringify(e);
    }
    const row = head.split('\n').find((l) => l.includes('Error:'));
    if (row === undefined) return { message: `Unknown error${where}`, description: null };
    const segments = row.split(':').map((s) => s.trim()).reverse();
    const details = segments[0];
    const type = segments[1];
    return {
      message: details ? `${details}${where}` : `Unknown error${where}`,
      description: type && type !== 'Error' ? type : null,
    };
  }

  // n8n-core's normalizeItems
  function normalize(data) {
    if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
      data = data.json ? [data] : [{ json: data }];
    }
    const withJson = (x) => typeof x === 'object' && x !== null && 'json' in x;
    const withBinary = (x) => typeof x === 'object' && x !== null && 'binary' in x;
    if (data.every(withJson)) return data;
    if (data.some(withJson)) throw new Failure('Inconsistent item format', 'Either every returned item or none has a `json` key.');
    if (data.every(withBinary)) {
      return data.map((x) => {
        const json = {};
        for (const k of Object.keys(x)) if (k !== 'binary') json[k] = x[k];
        return { json, binary: x.binary };
      });
    }
    if (data.some(withBinary)) throw new Failure('Inconsistent item format', 'Either every returned item or none has a `binary` key.');
    return data.map((x) => ({ json: x }));
  }

  function checkItem(item, index) {
    if (item.json === undefined || !isObject(item.json)) {
      throw new Failure("A 'json' property isn't an object", "In the returned data, every key named 'json' must point to an object.", index);
    }
    if (item.binary !== undefined && !isObject(item.binary)) {
      throw new Failure("A 'binary' property isn't an object", "In the returned data, every key named 'binary' must point to an object.", index);
    }
  }

  const validItem = (item) => isObject(item.json) && (item.binary === undefined || isObject(item.binary));

  function checkTopLevelKeys(item, index) {
    let reserved = null;
    let unknown = null; // the first (no list per item: this runs for every item)
    for (const k in item) {
      if (!hasOwn(item, k)) continue;
      if (isItemKey(k)) reserved = reserved === null ? k : reserved;
      else if (unknown === null) unknown = k;
    }
    if (unknown === null) return;
    if (reserved !== null) {
      throw new Failure(
        'Invalid output format',
        `An output item contains the reserved key <code>${reserved}</code>. To get around this, please wrap each item in an object, under a key called <code>json</code>.`,
        index,
      );
    }
    throw new Failure(`Unknown top-level item key: ${unknown}`, 'Access the properties of an item under `.json`, e.g. `item.json`', index);
  }

  // Code's standardizeOutput: class instances (not Date, not with toJSON) become JSON strings
  // Walked with a list of its own, depth first in n8n's order, not by
  // recursion: a deeply nested result would otherwise run out of stack here
  // before the host's reading refuses it clearly.
  function standardize(root, seen) {
    const keysOf = (o) => {
      const ks = [];
      for (const k in o) ks.push(k);
      return ks;
    };
    const stack = [{ obj: root, keys: keysOf(root), i: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.i === top.keys.length) {
        stack.pop();
        continue;
      }
      const obj = top.obj;
      const k = top.keys[top.i++];
      if (!hasOwn(obj, k)) continue;
      const v = obj[k];
      if (!isObject(v) || typeof v.toJSON === 'function') continue;
      let any = false;
      for (const _ in v) {
        any = true;
        break;
      }
      if (!any || seen.has(v)) continue;
      seen.add(v);
      const proto = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) {
        obj[k] = v;
        stack.push({ obj: v, keys: keysOf(v), i: 0 });
      } else {
        obj[k] = JSON.stringify(v);
      }
    }
    return root;
  }

  // $getWorkflowStaticData (only present when the code uses it)
  let staticUsed = false;
  function getStaticData(type) {
    if (staticData === null) throw new Error('Static data is not available here');
    staticUsed = true;
    if (type === 'global') {
      if (!isObject(staticData.global)) staticData.global = {};
      return staticData.global;
    }
    if (type === 'node') {
      const key = `node:${nodeName}`;
      if (!isObject(staticData[key])) staticData[key] = {};
      return staticData[key];
    }
    throw new Error(`The static data type "${type}" is not known. Only "global" and "node" are supported.`);
  }

  // $execution.customData (only present when the code uses it): reads see
  // this run's writes; the host checks and stores the writes, in order
  const customWrites = [];
  const customStore = customData === null ? null : Object.assign({}, customData);
  const customDataApi =
    customStore === null
      ? undefined
      : {
          set(key, value) {
            customWrites.push([key, value]);
            customStore[String(key)] = value === undefined || value === null ? value : String(value);
          },
          setAll(obj) {
            for (const [k, v] of Object.entries(obj || {})) this.set(k, v);
          },
          get(key) {
            return customStore[key];
          },
          getAll() {
            return Object.assign({}, customStore);
          },
        };

  const meta = (failure) => ({
    json: { __n8nCodeMeta: { failure, staticData: staticUsed ? staticData : undefined, customData: customWrites.length ? customWrites : undefined } },
  });

  // a run's items plus the trailing meta item the host reads
  function done(items) {
    items.push(meta(undefined));
    return items;
  }

  // `message`/`description` as the Code node reports them; `raw` (the thrown
  // message) and `line` for the legacy nodes' own formats
  function failed(e, itemIndex) {
    const f = executionFailure(e, itemIndex);
    const raw = e instanceof Failure ? e.message : e !== null && typeof e === 'object' && e.message !== undefined ? String(e.message) : String(e);
    return [meta({ message: f.message, description: f.description, raw, line: e instanceof Failure ? undefined : lineOf(e) })];
  }

  // Code, "Run Once for All Items"
  function codeAll(result) {
    if (result === null) return done([]);
    if (typeof result !== 'object') throw notItems();
    if (!Array.isArray(result) || !Object.isExtensible(result)) return checkedAll(result);
    // An array: the host checks its elements while reading them (sandbox.rs,
    // `__n8nCheck`) and calls this only when one is not plainly an item or
    // plainly an item's json, or needs standardizing; then n8n's checks decide.
    let out;
    try {
      out = done(result);
    } catch (e) {
      // an array that cannot grow (a fixed length): checked as it is
      return checkedAll(result);
    }
    out.__n8nCheck = () => {
      try {
        out.pop();
        return checkedAll(out);
      } catch (e) {
        return failed(e, undefined);
      }
    };
    return out;
  }

  // n8n's checks of a "Run Once for All Items" result (an object or an array)
  function checkedAll(result) {
    if (Array.isArray(result)) {
      let topLevel = false;
      for (const x of result) {
        if (!isObject(x)) throw notItems();
        if (!topLevel) for (const k in x) if (hasOwn(x, k) && isItemKey(k)) topLevel = true;
      }
      if (topLevel) result.forEach(checkTopLevelKeys);
    }
    const items = normalize(result);
    const finish = () => {
      const seen = new WeakSet();
      items.forEach((item, i) => {
        checkItem(item, i);
        standardize(item.json, seen);
      });
    };
    // an invalid item fails where n8n's checks fail (standardizing never makes one valid)
    if (!items.every(validItem)) finish();
    const out = done(items);
    // Standardizing changes only class instances without toJSON: the host
    // reads the result without it and calls this only when it meets one.
    out.__n8nStandardize = () => {
      try {
        const m = out.pop();
        finish();
        out.push(m);
        return out;
      } catch (e) {
        return failed(e, undefined);
      }
    };
    return out;
  }

  // Code, "Run Once for Each Item": the output item of input item `index`
  function codeEach(result, index) {
    if (result === null) return done([]);
    if (typeof result !== 'object') {
      throw new Failure("Code doesn't return an object", `Please return an object representing the output item. ('${result}' was returned instead.)`, index);
    }
    if (Array.isArray(result)) {
      const first = result.length > 0 ? `An array of ${typeof result[0]}s was returned.` : 'An empty array was returned.';
      throw new Failure(
        "Code doesn't return a single object",
        `${first} If you need to output multiple items, please use the 'Run Once for All Items' mode instead.`,
        index,
      );
    }
    const [item] = normalize([result]);
    checkItem(item, index);
    checkTopLevelKeys(item, index);
    const out = { json: standardize(item.json, new WeakSet()), pairedItem: { item: index } };
    if (item.binary) out.binary = item.binary;
    return done([out]);
  }

  // Function (legacy): items with `json` objects, Date & co. as their JSON form
  function functionAll(result) {
    let items = result;
    if (items !== undefined && items !== null) items = normalize(items);
    if (items === undefined || items === null) throw new Failure('No data got returned. Always return an Array of items!', null);
    if (!Array.isArray(items)) throw new Failure('Always an Array of items has to be returned!', null);
    for (const item of items) {
      if (item.json === undefined) throw new Failure('All returned items have to contain a property named "json"!', null);
      if (typeof item.json !== 'object') throw new Failure('The json-property has to be an object!', null);
      if (item.binary !== undefined && (Array.isArray(item.binary) || typeof item.binary !== 'object')) {
        throw new Failure('The binary-property has to be an object!', null);
      }
    }
    return done(items);
  }

  // Function Item (legacy): the returned object is the item's json
  function functionEach(result, index, binary) {
    if (result === undefined) throw new Failure('No data got returned. Always an object has to be returned!', null);
    const out = { json: result, pairedItem: { item: index } };
    if (binary) out.binary = binary;
    return done([out]);
  }

  return { failed, codeAll, codeEach, functionAll, functionEach, getStaticData, customData: customDataApi };
})
