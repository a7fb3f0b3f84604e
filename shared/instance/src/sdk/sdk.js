// The workflow SDK: a small builder whose result is n8n workflow JSON.
// Evaluated in the expression sandbox before the user's code; the names
// below are what `import { ... } from '@n8n/workflow-sdk'` would bring in.
const __sdk = (function () {
  'use strict';
  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  const fail = (msg) => { throw new Error(msg); };
  const NODE_SETTINGS = ['alwaysOutputData', 'executeOnce', 'retryOnFail', 'maxTries', 'waitBetweenTries', 'onError', 'continueOnFail', 'notesInFlow', 'color'];

  class NodeRef {
    constructor(spec, kind) {
      if (!isObj(spec)) fail(kind + '(): pass an object { type, version, config: { name, parameters } }');
      const cfg = isObj(spec.config) ? spec.config : spec;
      if (typeof spec.type !== 'string' || !spec.type) fail(kind + "(): `type` is required, e.g. 'n8n-nodes-base.set'");
      const version = spec.version !== undefined ? spec.version : spec.typeVersion;
      if (typeof version !== 'number') fail(kind + '(' + JSON.stringify(spec.type) + '): `version` must be a number, e.g. 1 or 3.4');
      this.type = spec.type;
      this.version = version;
      this.name = typeof cfg.name === 'string' && cfg.name ? cfg.name : null;
      this.parameters = cfg.parameters === undefined ? {} : cfg.parameters;
      if (!isObj(this.parameters)) fail('node ' + JSON.stringify(this.name || this.type) + ': `parameters` must be an object');
      this.credentials = cfg.credentials;
      this.position = cfg.position;
      this.disabled = cfg.disabled;
      this.notes = cfg.notes;
      this.id = cfg.id;
      this.webhookId = cfg.webhookId;
      // Node settings n8n keeps beside the parameters, passed through as given.
      this.settings = {};
      for (const k of NODE_SETTINGS) if (cfg[k] !== undefined) this.settings[k] = cfg[k];
      this.outputs = new Map(); // output index → targets
    }
    /** Connects this node's output 0 to `target`; returns a chain. */
    to(target) { return new Chain(this, this, []).to(target); }
    /** Connects output `index` to `target`; returns this node (for branches). */
    output(index, target) {
      if (!Number.isInteger(index) || index < 0) fail('output(index, target): index must be a non-negative integer');
      if (!this.outputs.has(index)) this.outputs.set(index, []);
      this.outputs.get(index).push(target);
      return this;
    }
    /** If node: the `true` branch (output 0). */
    onTrue(target) { return this.output(0, target); }
    /** If node: the `false` branch (output 1). */
    onFalse(target) { return this.output(1, target); }
    /** Switch node: the branch of rule `index` (outputs follow the rules; fallback is last). */
    onCase(index, target) { return this.output(index, target); }
    /** A reference to input `index` of this node (Merge: 0 or 1). */
    input(index) { return new InputRef(this, index); }
  }

  class InputRef {
    constructor(node, index) {
      if (!Number.isInteger(index) || index < 0) fail('input(index): index must be a non-negative integer');
      this.node = node;
      this.index = index;
    }
  }

  // head: where a connection into the chain lands; tail: where the next .to() leaves from.
  class Chain {
    constructor(head, tail, links) { this.head = head; this.tail = tail; this.links = links; }
    to(target) {
      const t = asTarget(target, 'to()');
      return new Chain(this.head, tailOf(t), this.links.concat([[this.tail, 0, t]]));
    }
  }

  function asTarget(t, where) {
    if (t instanceof NodeRef || t instanceof InputRef || t instanceof Chain) return t;
    if (Array.isArray(t)) { t.forEach((x) => asTarget(x, where)); return t; }
    return fail(where + ': expected a node (from node(), trigger(), ifElse(), switchCase(), merge()), node.input(i), a chain or an array of those; got ' + (t === undefined ? 'undefined' : JSON.stringify(t)));
  }
  function tailOf(t) {
    if (t instanceof NodeRef) return t;
    if (t instanceof InputRef) return t.node;
    if (t instanceof Chain) return t.tail;
    return null; // an array fans out: no single tail
  }

  class Workflow {
    constructor(id, name, settings) {
      this.id = id;
      this.name = name;
      this.settings = isObj(settings) ? settings : {};
      this.nodes = [];
      this.edges = []; // [fromNode, outputIndex, toNode, inputIndex]
      this.cursor = null;
    }
    register(t) {
      if (t instanceof NodeRef) {
        if (this.nodes.includes(t)) return;
        this.nodes.push(t);
        for (const [index, targets] of t.outputs) {
          for (const target of targets) this.link(t, index, asTarget(target, 'output()'));
        }
      } else if (t instanceof InputRef) {
        this.register(t.node);
      } else if (t instanceof Chain) {
        this.register(t.head);
        for (const [from, index, to] of t.links) {
          this.register(from);
          this.link(from, index, to);
        }
      } else if (Array.isArray(t)) {
        t.forEach((x) => this.register(x));
      }
    }
    link(from, index, to) {
      if (Array.isArray(to)) { to.forEach((x) => this.link(from, index, x)); return; }
      this.register(to);
      const head = to instanceof Chain ? to.head : to;
      const node = head instanceof InputRef ? head.node : head;
      const input = head instanceof InputRef ? head.index : 0;
      if (!this.edges.some((e) => e[0] === from && e[1] === index && e[2] === node && e[3] === input)) {
        this.edges.push([from, index, node, input]);
      }
    }
    /** Adds a node, chain or branch structure; later .to() continues from its tail. */
    add(target) {
      const t = asTarget(target, 'add()');
      this.register(t);
      this.cursor = tailOf(t);
      return this;
    }
    /** Connects the current node's output 0 to `target`. */
    to(target) {
      const t = asTarget(target, 'to()');
      if (!this.cursor) fail('to(): nothing to connect from; start with .add(trigger(...))');
      this.link(this.cursor, 0, t);
      this.cursor = tailOf(t);
      return this;
    }
    /** Explicit connection: output `fromOutput` of `from` to input `toInput` of `to`. */
    connect(from, fromOutput, to, toInput) {
      if (!(from instanceof NodeRef) || !(to instanceof NodeRef)) fail('connect(from, output, to, input): from and to must be nodes');
      this.register(from);
      this.link(from, fromOutput || 0, to.input(toInput || 0));
      return this;
    }
    toJSON() {
      const names = new Set();
      const nameOf = new Map();
      for (const n of this.nodes) {
        let name = n.name;
        if (!name) {
          const short = n.type.split('.').pop();
          const base = short.charAt(0).toUpperCase() + short.slice(1);
          name = base;
          for (let i = 1; names.has(name); i++) name = base + ' ' + i;
        } else if (names.has(name)) {
          fail('two different nodes are named ' + JSON.stringify(name) + '; node names must be unique');
        }
        names.add(name);
        nameOf.set(n, name);
      }
      // Layout: columns by distance from the nodes nothing leads into.
      const depth = new Map();
      const incoming = new Set(this.edges.map((e) => e[2]));
      const queue = this.nodes.filter((n) => !incoming.has(n));
      queue.forEach((n) => depth.set(n, 0));
      for (let i = 0; i < queue.length; i++) {
        const n = queue[i];
        for (const e of this.edges) {
          if (e[0] === n && !depth.has(e[2])) { depth.set(e[2], depth.get(n) + 1); queue.push(e[2]); }
        }
      }
      const rows = new Map();
      const nodes = this.nodes.map((n) => {
        const d = depth.has(n) ? depth.get(n) : 0;
        const row = rows.get(d) || 0;
        rows.set(d, row + 1);
        const out = {
          name: nameOf.get(n),
          type: n.type,
          typeVersion: n.version,
          position: Array.isArray(n.position) ? n.position : [d * 220, row * 180],
          parameters: n.parameters,
        };
        if (n.id) out.id = n.id;
        if (n.webhookId) out.webhookId = n.webhookId;
        if (n.credentials) out.credentials = n.credentials;
        if (n.disabled) out.disabled = true;
        if (n.notes) out.notes = n.notes;
        Object.assign(out, n.settings);
        return out;
      });
      const connections = {};
      for (const [from, index, to, input] of this.edges) {
        const src = nameOf.get(from);
        const main = (connections[src] = connections[src] || { main: [] }).main;
        while (main.length <= index) main.push([]);
        main[index].push({ node: nameOf.get(to), type: 'main', index: input });
      }
      const wf = { name: this.name, nodes, connections, settings: Object.assign({ executionOrder: 'v1' }, this.settings) };
      if (this.id) wf.id = this.id;
      return wf;
    }
  }

  return {
    workflow(id, name, settings) {
      if (typeof name !== 'string' || !name.trim()) fail("workflow(id, name): `name` must be a non-empty string, e.g. workflow('order-sync', 'Order sync')");
      return new Workflow(typeof id === 'string' ? id : '', name, settings);
    },
    node: (spec) => new NodeRef(spec, 'node'),
    trigger: (spec) => new NodeRef(spec, 'trigger'),
    ifElse: (spec) => new NodeRef(Object.assign({ type: 'n8n-nodes-base.if', version: 2.2 }, spec || {}), 'ifElse'),
    switchCase: (spec) => new NodeRef(Object.assign({ type: 'n8n-nodes-base.switch', version: 3.2 }, spec || {}), 'switchCase'),
    merge: (spec) => new NodeRef(Object.assign({ type: 'n8n-nodes-base.merge', version: 3 }, spec || {}), 'merge'),
    expr: (s) => {
      if (typeof s !== 'string') fail('expr(text): text must be a string such as "{{ $json.name }}"');
      return s.startsWith('=') ? s : '=' + s;
    },
    isWorkflow: (w) => w instanceof Workflow,
  };
})();
const { workflow, node, trigger, ifElse, switchCase, merge, expr } = __sdk;
