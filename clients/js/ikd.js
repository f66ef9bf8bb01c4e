/**
 * ikd.js: the JavaScript client of ikd, one ES module for browsers and for
 * Node 18+ (no build step; the types are JSDoc, checked by editors).
 *
 * What it covers, and the contract it follows (proto/README.md for HTTP,
 * proto/STREAM.md for the WebSocket):
 *   - HTTP: solve, batch, chains (register, describe, forget), solvers,
 *     health. Every refusal becomes an IkdError carrying the wire error's
 *     code, message and JSON path (RFC 6901 pointer), plus the HTTP status.
 *   - Streams: one WebSocket carries many named streams. Each target gets
 *     the next seq of its stream; answers are delivered in seq order, and a
 *     target that ikd replaced by a newer one (conflation) is answered with
 *     that newer solution. Errors naming a seq reject that target's promise.
 *   - Reconnection: a connection that drops is re-opened with exponential
 *     backoff (with jitter) and every stream is opened again on the same
 *     chain and options; targets in flight when it dropped are rejected with
 *     code "connection_lost" (ikd never saw their answers go out).
 *   - Authentication: HTTP sends "Authorization: Bearer <token>". A browser
 *     WebSocket cannot send that header, so the stream upgrade carries the
 *     token in Sec-WebSocket-Protocol (see streamProtocols below); under
 *     Node the "ws" package may send the header instead.
 *
 * Under Node (no global WebSocket before Node 22) the "ws" package from npm
 * is loaded on first use; in browsers the global WebSocket is used. Nothing
 * here touches the DOM.
 */

/** The application subprotocol ikd selects when a client offers it. */
export const PROTOCOL = 'ikd.v1';

/** Prefix of the subprotocol that carries the bearer token, base64url-encoded
 * (without padding), as Kubernetes does for the same browser limitation. */
export const TOKEN_PROTOCOL_PREFIX = 'base64url.bearer.ikd.';

/**
 * An error answered by ikd (HTTP status >= 400 or a stream "error" message),
 * or a failure of the client itself (code "connection_lost",
 * "not_connected", "network", "bad_answer", "closed").
 */
export class IkdError extends Error {
  /**
   * @param {string} code the wire code (for example "invalid_request")
   * @param {string} message ikd's message
   * @param {{path?: string, status?: number, stream?: string, seq?: number,
   *          retryAfter?: number}} [more]
   */
  constructor(code, message, more = {}) {
    super(more.path ? `${code}: ${message} (at ${more.path})` : `${code}: ${message}`);
    this.name = 'IkdError';
    /** @type {string} */ this.code = code;
    /** @type {string} ikd's own wording */ this.detail = message;
    /** @type {string} JSON pointer into the request ("" for the whole) */
    this.path = more.path ?? '';
    /** @type {number|undefined} HTTP status (HTTP errors only) */
    this.status = more.status;
    /** @type {string|undefined} */ this.stream = more.stream;
    /** @type {number|undefined} */ this.seq = more.seq;
    /** @type {number|undefined} seconds, from Retry-After */
    this.retryAfter = more.retryAfter;
  }
}

/** base64url (RFC 4648 section 5, no padding) of a string's UTF-8 bytes. */
export function base64url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The subprotocols a client offers on the stream upgrade: the application
 * protocol (which ikd selects and echoes) and, with a token, the token
 * protocol (which ikd reads and never echoes), as proto/STREAM.md
 * ("Connecting") specifies.
 * @param {string} [token]
 * @returns {string[]}
 */
export function streamProtocols(token) {
  return token ? [PROTOCOL, TOKEN_PROTOCOL_PREFIX + base64url(token)] : [PROTOCOL];
}

/** @returns {string} the page's origin in a browser, else the default address */
function defaultBase() {
  const loc = /** @type {any} */ (globalThis).location;
  if (loc && /^https?:$/.test(loc.protocol)) return loc.origin;
  return 'http://127.0.0.1:8080';
}

let wsModule = null;
/** The WebSocket constructor: the global one, else the "ws" package. */
async function webSocketImpl() {
  if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket;
  if (!wsModule) {
    try {
      wsModule = (await import('ws')).default;
    } catch (e) {
      throw new IkdError('not_connected',
        'no WebSocket in this runtime: install the "ws" package (npm ci) or use Node 22+');
    }
  }
  return wsModule;
}

/** The wire error object of an answer body, or null. */
function wireError(body) {
  return body && typeof body === 'object' && body.error && typeof body.error.code === 'string'
    ? body.error : null;
}

/**
 * @typedef {object} ClientOptions
 * @property {string} [token] bearer token (ikd started with --token)
 * @property {typeof fetch} [fetch] fetch implementation (default: the global one)
 * @property {any} [WebSocket] WebSocket constructor (default: global, else "ws")
 * @property {'auto'|'protocol'|'header'} [streamAuth] how the stream upgrade
 *   carries the token: "protocol" (Sec-WebSocket-Protocol, the only way a
 *   browser has), "header" (Authorization; needs a WebSocket that takes
 *   headers, such as "ws"), "auto" (default): "protocol"
 */

/** A client of one ikd (one base URL). Cheap to create; holds no socket. */
export class Ikd {
  /**
   * @param {string} [base] ikd's address, "http://host:port" (default: the
   *   page's origin in a browser, http://127.0.0.1:8080 elsewhere)
   * @param {ClientOptions} [opts]
   */
  constructor(base, opts = {}) {
    this.base = (base || defaultBase()).replace(/\/+$/, '');
    this.token = opts.token || '';
    this.fetchImpl = opts.fetch || globalThis.fetch?.bind(globalThis);
    this.WebSocketImpl = opts.WebSocket || null;
    this.streamAuth = opts.streamAuth || 'auto';
  }

  /**
   * One HTTP exchange: JSON in, JSON out; an answer >= 400 throws IkdError.
   * @param {string} method
   * @param {string} path
   * @param {any} [body]
   * @param {{signal?: AbortSignal}} [opts]
   */
  async request(method, path, body, opts = {}) {
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let resp;
    try {
      resp = await this.fetchImpl(this.base + path, {
        method, headers, signal: opts.signal,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
    } catch (e) {
      if (e && e.name === 'AbortError') throw e;
      throw new IkdError('network', `${method} ${path}: ${e && e.message ? e.message : e}`);
    }
    const text = await resp.text();
    let parsed = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (resp.ok) throw new IkdError('bad_answer', `${method} ${path}: the answer is not JSON`, { status: resp.status });
      }
    }
    if (!resp.ok) {
      const err = wireError(parsed);
      const ra = resp.headers.get('Retry-After');
      throw new IkdError(err ? err.code : `http_${resp.status}`,
        err ? err.message : `${method} ${path} answered ${resp.status}`,
        { path: err ? err.path : '', status: resp.status, retryAfter: ra ? Number(ra) : undefined });
    }
    return parsed;
  }

  /** POST /v1/solve: one chain (or chain_id), one target. */
  solve(req, opts) { return this.request('POST', '/v1/solve', req, opts); }
  /** POST /v1/solve/batch: one chain, many targets; results in order. */
  batch(req, opts) { return this.request('POST', '/v1/solve/batch', req, opts); }
  /** POST /v1/chains: registers a chain; resolves to its description with `id`. */
  registerChain(chain, opts) { return this.request('POST', '/v1/chains', chain, opts); }
  /** GET /v1/chains/{id}. */
  getChain(id, opts) { return this.request('GET', `/v1/chains/${encodeURIComponent(id)}`, undefined, opts); }
  /** DELETE /v1/chains/{id}. */
  deleteChain(id, opts) { return this.request('DELETE', `/v1/chains/${encodeURIComponent(id)}`, undefined, opts); }
  /** GET /v1/solvers: solvers, options and limits. */
  solvers(opts) { return this.request('GET', '/v1/solvers', undefined, opts); }
  /** GET /readyz: resolves to {status: "ready"} or throws (503 while shutting down). */
  ready(opts) { return this.request('GET', '/readyz', undefined, opts); }

  /**
   * Opens a WebSocket connection for streams (and keeps it open, reconnecting).
   * @param {ConnectOptions} [opts]
   * @returns {IkdConnection}
   */
  connect(opts) { return new IkdConnection(this, opts); }

  /** ws:// or wss:// address of the stream endpoint. */
  streamUrl() { return this.base.replace(/^http/, 'ws') + '/v1/stream'; }
}

/**
 * @typedef {object} ConnectOptions
 * @property {boolean} [reconnect] re-open after a drop (default true)
 * @property {number} [minDelayMs] first backoff delay (default 100)
 * @property {number} [maxDelayMs] backoff ceiling (default 5000)
 * @property {number} [maxAttempts] reconnection attempts in a row before
 *   giving up (default Infinity)
 */

/**
 * @typedef {object} Solution
 * @property {number} seq the seq ikd answered (the target's own, or a newer
 *   one that replaced it)
 * @property {number} requested the seq of the target this promise was for
 * @property {number} skipped targets ikd dropped since the previous solution
 * @property {number} [index] path sample index
 * @property {number} [count] path sample count
 * @property {any} result the per-target members of a solve's answer
 * @property {number} rttMs milliseconds from sending the seq to its answer
 */

const CONNECTION_EVENTS = ['state', 'error', 'reopen'];

/**
 * One WebSocket to ikd carrying many streams. Events (conn.on(name, fn)):
 *   "state" (state string), "error" (IkdError not tied to a stream or seq),
 *   "reopen" (after a reconnection re-opened every stream).
 */
export class IkdConnection {
  /**
   * @param {Ikd} ikd
   * @param {ConnectOptions} [opts]
   */
  constructor(ikd, opts = {}) {
    this.ikd = ikd;
    this.reconnect = opts.reconnect !== false;
    this.minDelayMs = opts.minDelayMs ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 5000;
    this.maxAttempts = opts.maxAttempts ?? Infinity;
    /** @type {'connecting'|'open'|'reconnecting'|'closed'} */
    this.state = 'connecting';
    /** @type {Map<string, IkdStream>} */
    this.streams = new Map();
    this.listeners = Object.fromEntries(CONNECTION_EVENTS.map((e) => [e, new Set()]));
    this.attempts = 0;
    this.reconnects = 0;
    this.ws = null;
    this.timer = null;
    this.userClosed = false;
    this.waiters = [];
    this.reopening = null;
    this.dial();
  }

  /** @param {'state'|'error'|'reopen'} name @param {Function} fn */
  on(name, fn) { this.listeners[name].add(fn); return () => this.listeners[name].delete(fn); }

  emit(name, ...args) {
    for (const fn of this.listeners[name]) {
      try { fn(...args); } catch (e) { setTimeout(() => { throw e; }); }
    }
  }

  setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.emit('state', s);
    if (s === 'open' || s === 'closed') {
      const w = this.waiters;
      this.waiters = [];
      for (const [resolve, reject] of w) s === 'open' ? resolve() : reject(new IkdError('closed', 'the connection is closed'));
    }
  }

  /** Resolves once the socket is open (rejects if the connection gives up). */
  ready() {
    if (this.state === 'open') return Promise.resolve();
    if (this.state === 'closed') return Promise.reject(new IkdError('closed', 'the connection is closed'));
    return new Promise((resolve, reject) => this.waiters.push([resolve, reject]));
  }

  async dial() {
    let WS;
    try {
      WS = this.ikd.WebSocketImpl || await webSocketImpl();
    } catch (e) {
      this.emit('error', e);
      this.setState('closed');
      return;
    }
    if (this.userClosed) return;
    const token = this.ikd.token;
    let ws;
    try {
      if (token && this.ikd.streamAuth === 'header') {
        ws = new WS(this.ikd.streamUrl(), [PROTOCOL], { headers: { Authorization: `Bearer ${token}` } });
      } else {
        ws = new WS(this.ikd.streamUrl(), streamProtocols(token));
      }
    } catch (e) {
      /* a malformed address or a refused scheme: nothing to retry */
      for (const s of this.streams.values()) s.ended(new IkdError('closed', `cannot open a WebSocket: ${e.message}`));
      this.streams.clear();
      this.emit('error', new IkdError('not_connected', `cannot open a WebSocket to ${this.ikd.streamUrl()}: ${e.message}`));
      this.setState('closed');
      return;
    }
    this.ws = ws;
    ws.onopen = () => {
      if (ws !== this.ws) return;
      this.attempts = 0;
      const again = this.reconnects > 0;
      this.setState('open');
      if (again) this.reopening = new Set([...this.streams.values()].filter((s) => !s.openWaiter).map((s) => s.name));
      for (const s of this.streams.values()) s.sendOpen();
      if (again) this.reopened(null);
    };
    ws.onmessage = (ev) => { if (ws === this.ws) this.receive(ev.data); };
    ws.onerror = () => {}; /* onclose follows and decides */
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      for (const s of this.streams.values()) s.dropped();
      if (this.userClosed || !this.reconnect || this.attempts >= this.maxAttempts) {
        for (const s of this.streams.values()) s.ended(new IkdError('closed', `the connection closed (${ev.code})`));
        this.streams.clear();
        this.setState('closed');
        return;
      }
      const delay = Math.min(this.maxDelayMs, this.minDelayMs * 2 ** this.attempts);
      this.attempts++;
      this.reconnects++;
      this.setState('reconnecting');
      this.timer = setTimeout(() => { this.timer = null; this.dial(); }, delay * (0.5 + Math.random() / 2));
    };
  }

  /** A stream answered its reopening (name), or none is left (null): emits
   * "reopen" once every stream that was open before the drop is open again
   * or has failed to reopen. */
  reopened(name) {
    if (!this.reopening) return;
    if (name !== null) this.reopening.delete(name);
    if (this.reopening.size === 0) {
      this.reopening = null;
      this.emit('reopen');
    }
  }

  /** Sends one message object; false when the socket is not open. */
  send(msg) {
    if (!this.ws || this.state !== 'open') return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  receive(data) {
    let msg;
    try {
      msg = JSON.parse(typeof data === 'string' ? data : String(data));
    } catch {
      this.emit('error', new IkdError('bad_answer', 'ikd sent a message that is not JSON'));
      return;
    }
    const s = typeof msg.stream === 'string' ? this.streams.get(msg.stream) : undefined;
    if (s && s.handle(msg)) return;
    if (msg.type === 'error') {
      const e = msg.error || {};
      this.emit('error', new IkdError(e.code || 'internal', e.message || 'error', { path: e.path, stream: msg.stream, seq: msg.seq }));
    }
  }

  /**
   * Opens a named stream on a chain. Resolves when ikd answers "opened";
   * rejects with the IkdError that answered the open (its path points into
   * the open message, for example "/chain/positions/1").
   * @param {string} name 1 to 64 characters of A-Z a-z 0-9 _ . : -
   * @param {{chain?: any, chain_id?: string, options?: any}} spec
   * @returns {Promise<IkdStream>}
   */
  open(name, spec) {
    if (this.streams.has(name)) return Promise.reject(new IkdError('stream_exists', `stream "${name}" is already open on this connection`, { stream: name }));
    const s = new IkdStream(this, name, spec);
    this.streams.set(name, s);
    const p = s.opening();
    if (this.state === 'open') s.sendOpen();
    return p;
  }

  /** Closes every stream and the socket; no reconnection afterwards. */
  close() {
    this.userClosed = true;
    if (this.timer) { clearTimeout(this.timer); this.timer = null; }
    if (!this.ws) {
      for (const s of this.streams.values()) s.ended(new IkdError('closed', 'the connection was closed'));
      this.streams.clear();
      this.setState('closed');
      return Promise.resolve();
    }
    const ws = this.ws;
    return new Promise((resolve) => {
      const prev = ws.onclose;
      ws.onclose = (ev) => { prev(ev); resolve(); };
      ws.close(1000);
    });
  }
}

/** One named stream of a connection. */
export class IkdStream {
  /**
   * @param {IkdConnection} conn
   * @param {string} name
   * @param {{chain?: any, chain_id?: string, options?: any}} spec
   */
  constructor(conn, name, spec) {
    this.conn = conn;
    this.name = name;
    this.spec = spec;
    /** @type {string|undefined} the chain's id, from "opened" */
    this.chainId = undefined;
    this.seq = 0;
    this.delivered = 0;
    /** @type {Map<number, {resolve: Function, reject: Function, t0: number}>} */
    this.pending = new Map();
    this.paths = new Map();
    this.listeners = new Set();
    this.isOpen = false;
    this.openWaiter = null;
    this.closeWaiter = null;
  }

  opening() {
    return new Promise((resolve, reject) => { this.openWaiter = { resolve, reject }; });
  }

  sendOpen() {
    const msg = { type: 'open', stream: this.name };
    if (this.spec.chain !== undefined) msg.chain = this.spec.chain;
    if (this.spec.chain_id !== undefined) msg.chain_id = this.spec.chain_id;
    if (this.spec.options !== undefined) msg.options = this.spec.options;
    this.conn.send(msg);
  }

  /**
   * Calls fn(solution) for every solution of this stream, in seq order
   * (targets and path samples). Returns a function that unsubscribes.
   * @param {(s: Solution) => void} fn
   */
  onSolution(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  /**
   * Sends a target with the stream's next seq. Resolves with its solution,
   * or with the newer solution that replaced it when ikd conflated targets.
   * Rejects with the IkdError ikd answered for this seq (path into the
   * message, such as "/target/position/2"), or "not_connected" /
   * "connection_lost".
   * @param {any} target
   * @returns {Promise<Solution>}
   */
  target(target) {
    if (!this.isOpen || this.conn.state !== 'open') {
      return Promise.reject(new IkdError('not_connected', `stream "${this.name}" is not open`, { stream: this.name }));
    }
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject, t0: now() });
      this.conn.send({ type: 'target', stream: this.name, seq, target });
    });
  }

  /**
   * Sends a path of waypoints; onSample gets each sample's solution.
   * Resolves with the "path_end" message.
   * @param {any[]} waypoints
   * @param {{rate_hz?: number, duration_s?: number}} [timing]
   * @param {(s: Solution) => void} [onSample]
   */
  path(waypoints, timing = {}, onSample) {
    if (!this.isOpen || this.conn.state !== 'open') {
      return Promise.reject(new IkdError('not_connected', `stream "${this.name}" is not open`, { stream: this.name }));
    }
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.paths.set(seq, { resolve, reject, onSample, t0: now() });
      this.conn.send({ type: 'path', stream: this.name, seq, waypoints, ...timing });
    });
  }

  /** Closes the stream (a waiting target is still answered first). */
  close() {
    if (!this.isOpen) {
      this.conn.streams.delete(this.name);
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.closeWaiter = resolve;
      this.conn.send({ type: 'close', stream: this.name });
    });
  }

  /** Handles a message for this stream; false if it is not one of ours. */
  handle(msg) {
    switch (msg.type) {
      case 'opened':
        this.isOpen = true;
        this.chainId = msg.chain_id;
        if (this.openWaiter) { this.openWaiter.resolve(this); this.openWaiter = null; }
        this.conn.reopened(this.name);
        return true;
      case 'solution':
        this.solution(msg);
        return true;
      case 'path_end': {
        const p = this.paths.get(msg.seq);
        if (p) { this.paths.delete(msg.seq); p.resolve(msg); }
        return true;
      }
      case 'closed':
        this.isOpen = false;
        this.conn.streams.delete(this.name);
        this.ended(new IkdError('closed', `stream "${this.name}" was closed`, { stream: this.name }));
        if (this.closeWaiter) { this.closeWaiter(); this.closeWaiter = null; }
        return true;
      case 'error': {
        const e = msg.error || {};
        const err = new IkdError(e.code || 'internal', e.message || 'error', { path: e.path, stream: this.name, seq: msg.seq });
        if (typeof msg.seq === 'number' && this.pending.has(msg.seq)) {
          this.pending.get(msg.seq).reject(err);
          this.pending.delete(msg.seq);
          return true;
        }
        if (typeof msg.seq === 'number' && this.paths.has(msg.seq)) {
          this.paths.get(msg.seq).reject(err);
          this.paths.delete(msg.seq);
          return true;
        }
        if (!this.isOpen && msg.seq === undefined) {
          /* the open was refused: a first open rejects its promise; a
           * reopening after a reconnection (say, a chain_id the new
           * daemon does not know) ends the stream and tells the connection */
          this.conn.streams.delete(this.name);
          if (this.openWaiter) {
            this.openWaiter.reject(err);
            this.openWaiter = null;
          } else {
            this.ended(err);
            this.conn.emit('error', err);
          }
          this.conn.reopened(this.name);
          return true;
        }
        return false;
      }
      default:
        return false;
    }
  }

  solution(msg) {
    if (msg.seq < this.delivered) return; /* never deliver out of order */
    const t = now();
    const base = { seq: msg.seq, skipped: msg.skipped ?? 0, result: msg.result };
    if (msg.index !== undefined) { base.index = msg.index; base.count = msg.count; }
    let rtt = 0;
    /* this seq and every older target still waiting are answered by it
     * (ikd replaced those by newer ones: a target or a path) */
    for (const [seq, p] of this.pending) {
      if (seq > msg.seq) break;
      if (seq === msg.seq) rtt = t - p.t0;
      p.resolve({ ...base, requested: seq, rttMs: t - p.t0 });
      this.pending.delete(seq);
    }
    const path = this.paths.get(msg.seq);
    if (path) {
      rtt = t - path.t0;
      if (path.onSample) path.onSample({ ...base, requested: msg.seq, rttMs: rtt });
    }
    this.delivered = msg.seq;
    for (const fn of this.listeners) {
      try { fn({ ...base, requested: msg.seq, rttMs: rtt }); } catch (e) { setTimeout(() => { throw e; }); }
    }
  }

  /** The socket dropped: in-flight work is lost; the stream will reopen. */
  dropped() {
    this.isOpen = false;
    const err = new IkdError('connection_lost', 'the connection dropped before the answer', { stream: this.name });
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const p of this.paths.values()) p.reject(err);
    this.paths.clear();
  }

  /** The stream is gone for good. */
  ended(err) {
    this.isOpen = false;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const p of this.paths.values()) p.reject(err);
    this.paths.clear();
    if (this.openWaiter) { this.openWaiter.reject(err); this.openWaiter = null; }
    if (this.closeWaiter) { this.closeWaiter(); this.closeWaiter = null; }
  }
}

function now() {
  return globalThis.performance ? globalThis.performance.now() : Date.now();
}
