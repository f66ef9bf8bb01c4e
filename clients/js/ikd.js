/**
 * ikd.js: the JavaScript client of ikd, one ES module for browsers and for
 * Node 18+ (no build step; its types are in ikd.d.ts, checked by tsc in
 * the tests). Packaged by package.json next to it (npm pack).
 *
 * What it covers, and the contract it follows (proto/README.md for HTTP,
 * proto/STREAM.md for the WebSocket):
 *   - HTTP: solve, batch, chains (register, describe, forget), solvers,
 *     health. Every refusal becomes an IkdError carrying the wire error's
 *     code, message and JSON path (RFC 6901 pointer), plus the HTTP status.
 *   - Retries: every ikd endpoint is safe to repeat, so a request that
 *     could not reach ikd, or got 502, 503 or 504, is sent again (retries,
 *     default 3) after an exponential backoff with jitter (backoffMs,
 *     default 50, doubling to maxBackoffMs, default 2000) or the answer's
 *     Retry-After. Refusals of the request itself are not retried.
 *   - Re-registration: chains registered through this client are
 *     remembered by id (the last keepChains, default 256); when ikd answers
 *     unknown_chain for one of them (a restarted ikd, another replica), on
 *     HTTP or when a stream opens, the chain is registered again and the
 *     request repeated once.
 *   - Streams: one WebSocket carries many named streams. Each target gets
 *     the next seq of its stream; answers are delivered in seq order, and a
 *     target that ikd replaced by a newer one (conflation) is answered with
 *     that newer solution. Errors naming a seq reject that target's promise.
 *   - Ticks: conn.tick() sends one "tick" message with targets for many
 *     streams and resolves with its tick_solution, one item per target in
 *     order (a solution, or that target's error). The encoding goes through
 *     the connection's codec: BinaryCodec by default (a tick of positions
 *     and orientations as one binary message of doubles, answered in
 *     binary, for game servers: no JSON to write or parse), which sends
 *     any other tick as JSON; JsonCodec for JSON always.
 *   - Events, never silence: connection-level errors (unknown_type, a tick
 *     refused whole, errors of targets sent with send()) are "error"
 *     events; messages this client does not know are "message" events (or
 *     "error" events with code unexpected_message when nobody listens); an
 *     "error" nobody listens to is written to console.warn.
 *   - Memory: nothing queues. Promises exist only for answers someone
 *     waits for, and ikd answers every target (or the connection fails
 *     them); stream.latest holds the newest answer (latest wins); send()
 *     and sendTick() make no promise at all, for loops that only read
 *     latest or listen.
 *   - Liveness: the upgrade must end within connectTimeoutMs (default
 *     10000, as the C client's); a connection silent for half of
 *     idleTimeoutMs (default 30000, as the C client's) is pinged, and one
 *     silent for all of it (a peer gone without a FIN) is dropped with an
 *     "error" event of code "timeout", then re-opened like any loss. Pings
 *     need the "ws" package (preferred under Node when installed): a
 *     browser's WebSocket cannot send them.
 *   - Bounds: an HTTP answer's body is refused as "bad_answer" past
 *     maxAnswer bytes (default 256 MiB, as the other clients), as it
 *     arrives: nothing past the bound is held; a stream message past
 *     maxMessage (default 16 MiB, as the other clients; the ws package's)
 *     drops the connection, like any loss; a send that would leave more
 *     than maxSendQueue bytes (default 8 MiB, as the C client's) waiting
 *     to be written (a server that does not read) is refused with code
 *     "send_queue_full" (send() and sendTick() return -1).
 *   - Reconnection: a connection that drops is re-opened with exponential
 *     backoff (with jitter) and every stream is opened again on the same
 *     chain, options and scene (the newest setScene's); targets in flight when it dropped are rejected with
 *     code "connection_lost" (ikd never saw their answers go out).
 *   - Authentication: HTTP sends "Authorization: Bearer <token>". A browser
 *     WebSocket cannot send that header, so the stream upgrade carries the
 *     token in Sec-WebSocket-Protocol (see streamProtocols below); under
 *     Node the "ws" package may send the header instead.
 *   - TLS: an https:// base means wss:// streams. In a browser the browser
 *     checks certificates; under Node the option `ca` (PEM text) trusts a
 *     private CA, for HTTP (node:https) and for streams (the "ws" package).
 *
 * Under Node (no global WebSocket before Node 22) the "ws" package from npm
 * is loaded on first use; in browsers the global WebSocket is used. Nothing
 * here touches the DOM.
 */

/** The version of this client (the ikd release it speaks to). */
export const VERSION = '0.2.0';

/** The application subprotocol ikd selects when a client offers it. */
export const PROTOCOL = 'ikd.v1';

/** Prefix of the subprotocol that carries the bearer token, base64url-encoded
 * (without padding), as Kubernetes does for the same browser limitation. */
export const TOKEN_PROTOCOL_PREFIX = 'base64url.bearer.ikd.';

/** HTTP statuses that say "not now" rather than "not this request". */
export const RETRY_STATUSES = [502, 503, 504];

/**
 * An error answered by ikd (HTTP status >= 400 or a stream "error" message),
 * or a failure of the client itself (code "connection_lost",
 * "not_connected", "network", "bad_answer", "closed", "unexpected_message").
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
    this.code = code;
    this.detail = message;
    this.path = more.path ?? '';
    this.status = more.status;
    this.stream = more.stream;
    this.seq = more.seq;
    this.retryAfter = more.retryAfter;
  }
}

/** Ticks in flight remembered to check their answers (the C client's bound). */
const TICKS_KEPT = 64;

/** The IkdError of a message or tick item holding an "error" object. */
function errorOf(obj, stream) {
  const e = obj.error || {};
  return new IkdError(e.code || 'internal', e.message || 'error',
    { path: e.path, stream: obj.stream ?? stream, seq: obj.seq });
}

/** A message's seq when it is one (an integer), else undefined: a seq this
 * client cannot read answers nothing (a missing one, "1" or NaN compared
 * with the seqs waiting would answer them all). */
const seqOf = (v) => (Number.isSafeInteger(v) ? v : undefined);

/** Why a decoded tick_solution cannot be read (at most max entries, each
 * an object, with a string stream when it has one and an integer seq: only
 * an error entry may lack it, as that of a target whose name ikd could not
 * read), or null when it can. */
function tickRefusal(msg, max) {
  if (seqOf(msg.seq) === undefined) return 'a tick answer without a seq this client can read';
  const items = msg.solutions;
  if (!Array.isArray(items)) return 'a tick answer without its list of solutions';
  if (items.length > max) return `a tick answer of more than ${max} entries (maxStreams)`;
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    if (!it || typeof it !== 'object' || (it.stream !== undefined && typeof it.stream !== 'string') ||
        ((it.seq !== undefined || it.error === undefined) && seqOf(it.seq) === undefined)) return `tick answer entry ${i} cannot be read`;
  }
  return null;
}

/** The answer of a solve (count undefined) or of a batch of count targets
 * as the protocol says it is, else IkdError "bad_answer": a solve is
 * answered by one result (an object with a "status"), a batch by one result
 * per target in order (a caller pairs results[i] with targets[i]). */
function checkedAnswer(answer, count) {
  if (count === undefined) {
    if (!answer || typeof answer !== 'object' || typeof answer.status !== 'string') throw new IkdError('bad_answer', 'a solve answer without a status');
  } else {
    const n = answer && Array.isArray(answer.results) ? answer.results.length : 'no';
    if (n !== count) throw new IkdError('bad_answer', `a batch answer of ${n} results for ${count} targets`);
  }
  return answer;
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
/** The WebSocket constructor: the global one (unless the package is
 * needed, for headers or a CA), else the "ws" package. */
async function webSocketImpl(needPackage) {
  if (!needPackage && typeof globalThis.WebSocket === 'function') return globalThis.WebSocket;
  if (!wsModule) {
    try {
      wsModule = (await import('ws')).default;
    } catch (e) {
      if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket;
      throw new IkdError('not_connected',
        'no WebSocket in this runtime: install the "ws" package (npm install ws) or use Node 22+');
    }
  }
  return wsModule;
}

/** The wire error object of an answer body, or null. */
function wireError(body) {
  return body && typeof body === 'object' && body.error && typeof body.error.code === 'string'
    ? body.error : null;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = globalThis.performance ? () => globalThis.performance.now() : () => Date.now();

/** IkdError "bad_answer" for an answer past maxAnswer bytes. */
const tooLarge = (method, path, max) =>
  new IkdError('bad_answer', `${method} ${path}: the answer is larger than maxAnswer (${max} bytes)`);

/**
 * fetch's subset this client uses, over node:https with a CA of the
 * caller's (Node's fetch has no CA option); a body past max bytes is
 * refused as it arrives (tooLarge()).
 */
async function httpsWithCa(url, init, ca, max, refusal) {
  const https = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: init.method, headers: init.headers, ca, signal: init.signal }, (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (c) => {
        size += c.length;
        if (size > max) {
          req.destroy();
          reject(refusal());
          return;
        }
        chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode || 0;
        resolve({
          ok: status >= 200 && status < 300,
          status,
          headers: { get: (k) => { const v = res.headers[k.toLowerCase()]; return v === undefined ? null : String(v); } },
          text: async () => body,
        });
      });
    });
    req.on('error', reject);
    /* aborted once the answer has begun: its body is given up too */
    init.signal?.addEventListener('abort', () => { req.destroy(); reject(init.signal.reason); }, { once: true });
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
}

/**
 * A fetch answer's body as text, refused (refusal()) once it passes max
 * bytes: a declared length at once, an undeclared one as it arrives,
 * nothing past the bound held. An answer without a readable body (a
 * caller's fetch) is read whole, then measured.
 */
async function boundedText(resp, max, refusal) {
  const declared = Number(resp.headers.get('Content-Length'));
  const body = resp.body;
  if (declared > max) {
    body?.cancel?.().catch(() => {});
    throw refusal();
  }
  if (!body || typeof body.getReader !== 'function') {
    const text = await resp.text();
    if (text.length > max || (text.length * 3 > max && new TextEncoder().encode(text).length > max)) throw refusal();
    return text;
  }
  const reader = body.getReader();
  const dec = new TextDecoder();
  let text = '', size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text + dec.decode();
    size += value.byteLength;
    if (size > max) {
      reader.cancel().catch(() => {});
      throw refusal();
    }
    text += dec.decode(value, { stream: true });
  }
}

/** The JSON text form of ticks (proto/STREAM.md, "tick, tick_solution").
 * A connection encodes ticks and decodes tick_solutions through its codec
 * only, so that another form (binary) can come in behind the same API. */
export class JsonCodec {
  /**
   * @param {number} seq the tick's seq
   * @param {Array<{stream: string, target: any, seq?: number, seed?: any}>} targets
   * @returns {string}
   */
  encodeTick(seq, targets) {
    return JSON.stringify({ type: 'tick', seq, targets });
  }

  /**
   * The decoded tick_solution message becomes the TickSolution in place:
   * each item keeps ikd's members, an item's error becomes an IkdError.
   * @param {any} msg
   */
  decodeTick(msg) {
    const items = msg.solutions;
    for (const it of items) if (it.error) it.error = errorOf(it);
    return { seq: msg.seq, requested: msg.seq, skipped: msg.skipped ?? 0, solutions: items };
  }
}

/* The binary tick form's places (proto/STREAM.md, "Binary ticks"). */
const TICK_MEMBERS = ['joints', 'positions', 'rotations', 'local_rotations', 'tip',
  'position_error', 'orientation_error', 'max_joint_step', 'time_ms'];
const STATUS_OF_CODE = new Map([[1, 'success'], [-31, 'no_ik_solution'], [-6, 'timed_out'],
  [-16, 'invalid_goal_constraints']]);

/** Whether target t fits a binary tick: {position: [x, y(, z)]} and, when
 * orient, an orientation [x, y, z, w]; numbers only, nothing else. */
function binaryTarget(t, orient) {
  if (!t || typeof t !== 'object') return false;
  const p = t.position, q = t.orientation;
  let keys = 1;
  if (!Array.isArray(p) || (p.length !== 3 && p.length !== 2)) return false;
  for (let k = 0; k < p.length; k++) if (typeof p[k] !== 'number') return false;
  if (orient) {
    if (!Array.isArray(q) || q.length !== 4) return false;
    for (let k = 0; k < 4; k++) if (typeof q[k] !== 'number') return false;
    keys++;
  } else if (q !== undefined) {
    return false;
  }
  for (const k in t) if (--keys < 0 || (k !== 'position' && k !== 'orientation')) return false;
  return true;
}

/** n doubles at offset `at` of view v, as arrays of `per` (per 1: numbers). */
function doublesOf(v, at, n, per) {
  if (per === 1) {
    const out = new Array(n);
    for (let k = 0; k < n; k++) out[k] = v.getFloat64(at + 8 * k, true);
    return out;
  }
  const out = new Array(n / per);
  for (let r = 0; r < out.length; r++) {
    const row = new Array(per);
    for (let k = 0; k < per; k++) row[k] = v.getFloat64(at + 8 * (r * per + k), true);
    out[r] = row;
  }
  return out;
}

/** ASCII text of n bytes at offset `at`. */
function asciiOf(bytes, at, n) {
  let s = '';
  for (let k = 0; k < n; k++) s += String.fromCharCode(bytes[at + k]);
  return s;
}

/**
 * The binary form of ticks (proto/STREAM.md, "Binary ticks"): a tick whose
 * targets are all {position, orientation?} (no seed, no other member; an
 * orientation on every target or on none) goes as one binary message of
 * doubles, and ikd answers it in binary, decoded here into the same
 * TickSolution as the JSON form's, with these differences: numbers at full
 * precision (options.digits does not apply), `status` from the MoveIt
 * `code`, and no `reason`, `cause` or `solutions` (words and lists stay
 * JSON's). Any other tick is sent as JSON (JsonCodec), so every tick works.
 */
export class BinaryCodec extends JsonCodec {
  /**
   * @param {number} seq the tick's seq
   * @param {Array<{stream: string, target: any, seq?: number, seed?: any}>} targets
   * @returns {string|ArrayBuffer}
   */
  encodeTick(seq, targets) {
    const n = targets.length;
    const orient = n > 0 && targets[0].target && targets[0].target.orientation !== undefined;
    let names = 0;
    for (let i = 0; i < n; i++) {
      const t = targets[i];
      if (t.seed !== undefined || !binaryTarget(t.target, orient) || typeof t.stream !== 'string' ||
          t.stream.length > 255) return super.encodeTick(seq, targets);
      names += 1 + t.stream.length;
    }
    if (n === 0) return super.encodeTick(seq, targets);
    const at = (24 + names + 7) & ~7, stride = orient ? 64 : 32;
    const buf = new ArrayBuffer(at + n * stride);
    const v = new DataView(buf), bytes = new Uint8Array(buf);
    bytes[0] = 73; bytes[1] = 75; bytes[2] = 68; bytes[3] = 84; /* IKDT */
    v.setUint16(4, 1, true);
    v.setUint16(6, orient ? 1 : 0, true);
    v.setUint32(8, n, true);
    v.setUint32(12, names, true);
    v.setFloat64(16, seq, true);
    let p = 24;
    for (let i = 0; i < n; i++) {
      const s = targets[i].stream;
      bytes[p++] = s.length;
      for (let k = 0; k < s.length; k++) {
        const c = s.charCodeAt(k);
        if (c > 127) return super.encodeTick(seq, targets); /* not a name: JSON says so */
        bytes[p++] = c;
      }
    }
    for (let i = 0, r = at; i < n; i++, r += stride) {
      const t = targets[i], pos = t.target.position;
      v.setFloat64(r, t.seq === undefined ? NaN : t.seq, true);
      v.setFloat64(r + 8, pos[0], true);
      v.setFloat64(r + 16, pos[1], true);
      v.setFloat64(r + 24, pos.length === 3 ? pos[2] : 0, true);
      if (orient) {
        const q = t.target.orientation;
        v.setFloat64(r + 32, q[0], true);
        v.setFloat64(r + 40, q[1], true);
        v.setFloat64(r + 48, q[2], true);
        v.setFloat64(r + 56, q[3], true);
      }
    }
    return buf;
  }

  /**
   * A binary message: its TickSolution when it is a binary tick's answer,
   * else null (not this form's); more than max entries is refused.
   * @param {ArrayBuffer|ArrayBufferView} data
   * @param {number} [max]
   */
  decodeBinary(data, max = Infinity) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
      : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const len = bytes.byteLength;
    if (len < 24 || bytes[0] !== 73 || bytes[1] !== 75 || bytes[2] !== 68 || bytes[3] !== 83) return null;
    const v = new DataView(bytes.buffer, bytes.byteOffset, len);
    if (v.getUint16(4, true) !== 1) return null;
    const n = v.getUint32(8, true), tickSeq = seqOf(v.getFloat64(16, true));
    if (n > max) throw new IkdError('bad_answer', `a tick answer of more than ${max} entries (maxStreams)`, { seq: tickSeq });
    const solutions = new Array(n);
    let at = 24;
    for (let i = 0; i < n; i++) {
      if (at + 24 > len) throw new IkdError('bad_answer', 'a binary tick answer ends early', { seq: tickSeq });
      const size = v.getUint32(at, true), kind = bytes[at + 4], lname = bytes[at + 5];
      if (size < 24 || at + size > len) throw new IkdError('bad_answer', 'a binary tick answer ends early', { seq: tickSeq });
      const item = {};
      if (bytes[at + 6] & 1) {
        /* as the JSON form's (tickRefusal): a seq that is not an integer
         * would answer every target of its stream waiting */
        item.seq = seqOf(v.getFloat64(at + 8, true));
        if (item.seq === undefined) throw new IkdError('bad_answer', `tick answer entry ${i} cannot be read`, { seq: tickSeq });
      } else if (kind !== 2) {
        throw new IkdError('bad_answer', `tick answer entry ${i} is a solution without a seq`, { seq: tickSeq });
      }
      /* nothing is read past the entry's size (a RangeError past the
       * message, another entry's bytes within it) */
      const past = () => new IkdError('bad_answer', `tick answer entry ${i} is larger than its size`, { seq: tickSeq });
      if (kind === 2) {
        const lc = v.getUint16(at + 16, true), lp = v.getUint16(at + 18, true), lm = v.getUint32(at + 20, true);
        if (24 + lname + lc + lp + lm > size) throw past();
        let x = at + 24;
        if (lname) item.stream = asciiOf(bytes, x, lname);
        x += lname;
        const code = asciiOf(bytes, x, lc);
        const path = new TextDecoder().decode(bytes.subarray(x + lc, x + lc + lp));
        const message = new TextDecoder().decode(bytes.subarray(x + lc + lp, x + lc + lp + lm));
        item.error = new IkdError(code, message, { path, stream: item.stream, seq: item.seq });
      } else {
        item.skipped = v.getUint32(at + 16, true);
        const rec = v.getUint32(at + 20, true);
        if (size < 56 || rec < 16 || 40 + rec + lname > size) throw past();
        const fields = v.getUint32(at + 24, true), dof = v.getUint16(at + 28, true);
        const npos = v.getUint16(at + 30, true), nrot = v.getUint16(at + 32, true);
        const dims = v.getUint16(at + 34, true);
        let r = at + 40;
        const code = v.getInt32(r, true), flags = v.getUint32(r + 4, true);
        const result = {
          status: STATUS_OF_CODE.get(code) ?? 'failure', code,
          iterations: v.getUint32(r + 8, true), restarts: v.getUint32(r + 12, true),
        };
        r += 16;
        const pose = flags & 1;
        const sizes = [dof, dims * npos, 4 * nrot, 4 * nrot, 7, 1, 1, 1, 1];
        const per = [1, dims, 4, 4, 1, 1, 1, 1, 1];
        const shown = [pose, pose, pose, pose, flags & 2, pose, flags & 4, flags & 8, 1];
        let need = 16;
        for (let m = 0; m < 9; m++) if (fields & (1 << m)) need += 8 * sizes[m];
        if (need > rec) throw past();
        for (let m = 0; m < 9; m++) {
          if (!(fields & (1 << m))) continue;
          const k = sizes[m];
          if (shown[m]) {
            if (m === 4) {
              result.tip = { position: doublesOf(v, r, 3, 1), orientation: doublesOf(v, r + 24, 4, 1) };
            } else if (k === 1 && m > 4) {
              result[TICK_MEMBERS[m]] = v.getFloat64(r, true);
            } else {
              result[TICK_MEMBERS[m]] = doublesOf(v, r, k, per[m]);
            }
          }
          r += 8 * k;
        }
        item.stream = asciiOf(bytes, at + 40 + rec, lname);
        item.result = result;
      }
      solutions[i] = item;
      at += size;
    }
    const seq = v.getFloat64(16, true);
    return { seq, requested: seq, skipped: v.getUint32(12, true), solutions };
  }
}

/** A client of one ikd (one base URL). Cheap to create; holds no socket. */
export class Ikd {
  /**
   * @param {string} [base] ikd's address, "http://host:port" or
   *   "https://host:port" (default: the page's origin in a browser,
   *   http://127.0.0.1:8080 elsewhere)
   * @param {object} [opts] ClientOptions (ikd.d.ts)
   */
  constructor(base, opts = {}) {
    this.base = (base || defaultBase()).replace(/\/+$/, '');
    this.token = opts.token || '';
    this.ca = opts.ca;
    this.fetchImpl = opts.fetch || globalThis.fetch?.bind(globalThis);
    this.WebSocketImpl = opts.WebSocket || null;
    this.streamAuth = opts.streamAuth || 'auto';
    this.retries = opts.retries ?? 3;
    this.backoffMs = opts.backoffMs ?? 50;
    this.maxBackoffMs = opts.maxBackoffMs ?? 2000;
    this.keepChains = opts.keepChains ?? 256;
    /** each exchange, answer read whole (ms; 0: none) */
    this.timeoutMs = opts.timeoutMs ?? 30000;
    /** bytes of one answer's body at most (as the other clients) */
    this.maxAnswer = opts.maxAnswer ?? 256 * 1024 * 1024;
    /** @type {Map<string, any>} chains registered here, by id (oldest first) */
    this.chains = new Map();
    this.reregistered = 0;
  }

  /** One exchange, no retry, its answer read whole within timeoutMs. */
  async exchange(method, path, body, opts) {
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    /* the caller's signal and the timeout abort one signal */
    const ac = new AbortController();
    const outer = opts.signal;
    const forward = () => ac.abort(outer.reason);
    if (outer?.aborted) forward();
    else outer?.addEventListener('abort', forward, { once: true });
    let timedOut = false;
    const timer = this.timeoutMs > 0 && Number.isFinite(this.timeoutMs)
      ? setTimeout(() => { timedOut = true; ac.abort(); }, this.timeoutMs) : null;
    const init = { method, headers, signal: ac.signal, body };
    const refusal = () => tooLarge(method, path, this.maxAnswer);
    let resp, text;
    try {
      if (this.ca && this.base.startsWith('https:')) {
        resp = await httpsWithCa(this.base + path, init, this.ca, this.maxAnswer, refusal);
        text = await resp.text();
      } else {
        resp = await this.fetchImpl(this.base + path, init);
        text = await boundedText(resp, this.maxAnswer, refusal);
      }
    } catch (e) {
      if (timedOut) throw new IkdError('timeout', `${method} ${path}: no answer within ${this.timeoutMs} ms`);
      if (e instanceof IkdError || (e && e.name === 'AbortError')) throw e;
      const cause = e && e.cause && e.cause.message ? ` (${e.cause.message})` : '';
      throw new IkdError('network', `${method} ${path}: ${e && e.message ? e.message : e}${cause}`);
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', forward);
    }
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

  /**
   * One HTTP request with retries: JSON in, JSON out; an answer >= 400
   * throws IkdError (after the retries, for 502, 503 and 504).
   * @param {string} method
   * @param {string} path
   * @param {any} [body]
   * @param {{signal?: AbortSignal}} [opts]
   */
  async request(method, path, body, opts = {}) {
    const text = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.exchange(method, path, text, opts);
      } catch (e) {
        const again = e instanceof IkdError && (e.code === 'network' || RETRY_STATUSES.includes(e.status));
        if (!again || attempt >= this.retries || opts.signal?.aborted) throw e;
        let ms = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt) * (0.5 + Math.random() / 2);
        if (e.retryAfter !== undefined && Number.isFinite(e.retryAfter)) ms = Math.min(this.maxBackoffMs, Math.max(ms, e.retryAfter * 1000));
        await sleep(ms);
      }
    }
  }

  /** request(), re-registering a chain this client holds on unknown_chain. */
  async call(method, path, body, opts) {
    try {
      return await this.request(method, path, body, opts);
    } catch (e) {
      const id = body && typeof body === 'object' ? body.chain_id : undefined;
      if (!(e instanceof IkdError) || e.code !== 'unknown_chain' || !id || !(await this.reregister(id, opts))) throw e;
    }
    return this.request(method, path, body, opts);
  }

  /** Registers a held chain again; false when this client does not hold it. */
  async reregister(id, opts) {
    const chain = this.chains.get(id);
    if (chain === undefined) return false;
    const desc = await this.request('POST', '/v1/chains', chain, opts);
    this.reregistered++;
    return !!desc && desc.id === id;
  }

  /** POST /v1/solve: one chain (or chain_id), one target. */
  async solve(req, opts) { return checkedAnswer(await this.call('POST', '/v1/solve', req, opts)); }
  /** POST /v1/solve/batch: one chain, many targets; results in order (one
   * per target, else IkdError "bad_answer"). */
  async batch(req, opts) {
    const count = Array.isArray(req?.targets) ? req.targets.length : undefined;
    const answer = await this.call('POST', '/v1/solve/batch', req, opts);
    return count === undefined ? answer : checkedAnswer(answer, count);
  }
  /** POST /v1/chains: registers a chain (remembered for re-registration). */
  async registerChain(chain, opts) {
    const desc = await this.request('POST', '/v1/chains', chain, opts);
    if (desc && typeof desc.id === 'string') {
      this.chains.delete(desc.id);
      this.chains.set(desc.id, chain);
      while (this.chains.size > this.keepChains) this.chains.delete(this.chains.keys().next().value);
    }
    return desc;
  }
  /** GET /v1/chains/{id}. */
  getChain(id, opts) { return this.request('GET', `/v1/chains/${encodeURIComponent(id)}`, undefined, opts); }
  /** DELETE /v1/chains/{id} (and this client forgets it). */
  deleteChain(id, opts) {
    this.chains.delete(id);
    return this.request('DELETE', `/v1/chains/${encodeURIComponent(id)}`, undefined, opts);
  }
  /** GET /v1/solvers: solvers, options and limits. */
  solvers(opts) { return this.request('GET', '/v1/solvers', undefined, opts); }
  /** GET /readyz: resolves to {status: "ready"} or throws (503 while shutting down). */
  ready(opts) { return this.request('GET', '/readyz', undefined, opts); }

  /**
   * Opens a WebSocket connection for streams (and keeps it open, reconnecting).
   * @param {object} [opts] ConnectOptions (ikd.d.ts)
   * @returns {IkdConnection}
   */
  connect(opts) { return new IkdConnection(this, opts); }

  /** ws:// or wss:// address of the stream endpoint. */
  streamUrl() { return this.base.replace(/^http/, 'ws') + '/v1/stream'; }
}

const CONNECTION_EVENTS = ['state', 'error', 'reopen', 'message', 'tick'];

/**
 * One WebSocket to ikd carrying many streams. Events (conn.on(name, fn)):
 *   "state" (state string), "error" (IkdError not tied to a waiting call),
 *   "reopen" (after a reconnection re-opened every stream), "message" (a
 *   message this client does not know), "tick" (every TickSolution).
 */
export class IkdConnection {
  /**
   * @param {Ikd} ikd
   * @param {object} [opts] ConnectOptions (ikd.d.ts)
   */
  constructor(ikd, opts = {}) {
    this.ikd = ikd;
    this.reconnect = opts.reconnect !== false;
    this.minDelayMs = opts.minDelayMs ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 5000;
    this.maxAttempts = opts.maxAttempts ?? Infinity;
    /* ticks: binary where they fit (BinaryCodec), else JSON */
    this.codec = opts.codec || new BinaryCodec();
    /** targets in a tick at most (ikd's --max-streams): a tick answer of
     * more entries is refused */
    this.maxStreams = opts.maxStreams ?? 1024;
    /** bytes waiting to be written at most (the C client's max_send_queue):
     * a send past it is refused, "send_queue_full" */
    this.maxSendQueue = opts.maxSendQueue ?? 8 * 1024 * 1024;
    /** bytes of one message from ikd at most, as the other clients (the ws
     * package drops the connection, 1009, past it; a browser sets its own) */
    this.maxMessage = opts.maxMessage ?? 16 * 1024 * 1024;
    /** the TCP, TLS and upgrade handshakes together (ms; 0: no bound) */
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10000;
    /** silent for half of this (ms): a ping; for all of it: the connection
     * is dropped and dialled again (0: never). Only where the socket can
     * ping (the "ws" package): a browser's WebSocket cannot. */
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 30000;
    this.lastRecv = 0;
    this.pingOut = false;
    /** the upgrade's deadline, then the idle watch */
    this.watchTimer = null;
    /** why this client gave the socket up, for what it fails */
    this.lostWhy = undefined;
    /** @type {'connecting'|'open'|'reconnecting'|'closed'} */
    this.state = 'connecting';
    /** @type {Map<string, IkdStream>} */
    this.streams = new Map();
    this.listeners = Object.fromEntries(CONNECTION_EVENTS.map((e) => [e, new Set()]));
    this.attempts = 0;
    /* the backoff's step: back to 0 only after a connection that lasted
     * maxDelayMs, so that a server that drops each connection as soon as
     * it is up is not redialled every minDelayMs */
    this.backoffStep = 0;
    this.openedAt = undefined;
    this.reconnects = 0;
    this.ws = null;
    this.timer = null;
    this.userClosed = false;
    this.waiters = [];
    this.reopening = null;
    this.tickSeq = 0;
    /** @type {Map<number, {resolve: Function, reject: Function}>} */
    this.ticks = new Map();
    /** the last TICKS_KEPT ticks sent and not yet answered, {seq, streams},
     * oldest first: an answer is checked against its tick's targets */
    this.sentTicks = [];
    this.latestTick = undefined;
    this.unheardErrors = 0;
    this.dial();
  }

  /** @param {string} name @param {Function} fn */
  on(name, fn) { this.listeners[name].add(fn); return () => this.listeners[name].delete(fn); }

  emit(name, ...args) {
    const set = this.listeners[name];
    if (name === 'error' && set.size === 0) {
      this.unheardErrors++;
      console.warn(`ikd: ${args[0] && args[0].message}`);
      return;
    }
    for (const fn of set) {
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
    const token = this.ikd.token;
    const header = !!token && this.ikd.streamAuth === 'header';
    const ca = this.ikd.ca && this.ikd.base.startsWith('https:') ? this.ikd.ca : undefined;
    let WS;
    try {
      /* under Node, the package where it is installed: it can ping */
      WS = this.ikd.WebSocketImpl || await webSocketImpl(header || !!ca || (this.idleTimeoutMs > 0 && !!globalThis.process?.versions?.node));
    } catch (e) {
      this.emit('error', e);
      this.setState('closed');
      return;
    }
    if (this.userClosed) return;
    let ws;
    try {
      if (header || ca || (wsModule && WS === wsModule)) {
        /* the ws package's options (a browser's WebSocket takes none) */
        const options = { maxPayload: this.maxMessage };
        if (header) options.headers = { Authorization: `Bearer ${token}` };
        if (ca) options.ca = ca;
        ws = new WS(this.ikd.streamUrl(), header ? [PROTOCOL] : streamProtocols(token), options);
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
    if (ws.binaryType === 'blob') ws.binaryType = 'arraybuffer'; /* a browser's */
    if (this.connectTimeoutMs > 0) {
      this.watchTimer = setTimeout(() => this.lose(ws, `no WebSocket upgrade within ${this.connectTimeoutMs} ms`), this.connectTimeoutMs);
    }
    ws.onopen = () => {
      if (ws !== this.ws) return;
      clearTimeout(this.watchTimer);
      this.watchTimer = null;
      this.heard();
      if (this.idleTimeoutMs > 0 && typeof ws.ping === 'function') {
        if (typeof ws.on === 'function') ws.on('pong', () => this.heard()).on('ping', () => this.heard());
        this.watch(ws);
      }
      this.attempts = 0;
      this.openedAt = now();
      const again = this.reconnects > 0;
      this.setState('open');
      if (again) this.reopening = new Set([...this.streams.values()].filter((s) => !s.openWaiter).map((s) => s.name));
      for (const s of this.streams.values()) s.sendOpen();
      if (again) this.reopened(null);
    };
    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      this.lastRecv = now();
      this.pingOut = false;
      this.receive(ev.data);
    };
    ws.onerror = () => {}; /* onclose follows and decides */
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      clearTimeout(this.watchTimer);
      this.watchTimer = null;
      const why = this.lostWhy;
      this.lostWhy = undefined;
      const lost = new IkdError('connection_lost', `the connection dropped before the answer${why ? ` (${why})` : ''}`);
      for (const t of this.ticks.values()) t.reject(lost);
      this.ticks.clear();
      this.sentTicks = [];
      for (const s of this.streams.values()) s.dropped();
      if (this.userClosed || !this.reconnect || this.attempts >= this.maxAttempts) {
        for (const s of this.streams.values()) s.ended(new IkdError('closed', `the connection closed (${ev.code})`));
        this.streams.clear();
        this.setState('closed');
        return;
      }
      if (this.openedAt !== undefined && now() - this.openedAt >= this.maxDelayMs) this.backoffStep = 0;
      this.openedAt = undefined;
      const delay = Math.min(this.maxDelayMs, this.minDelayMs * 2 ** this.backoffStep);
      this.backoffStep = Math.min(this.backoffStep + 1, 30);
      this.attempts++;
      this.reconnects++;
      this.setState('reconnecting');
      this.timer = setTimeout(() => { this.timer = null; this.dial(); }, delay * (0.5 + Math.random() / 2));
    };
  }

  /** Something came from ikd: it is alive. */
  heard() {
    this.lastRecv = now();
    this.pingOut = false;
  }

  /** The idle watch of socket ws (as the C client's): silent for half of
   * idleTimeoutMs, a ping; silent for all of it, the connection is lost. */
  watch(ws) {
    if (ws !== this.ws) return;
    const idle = this.idleTimeoutMs, silent = now() - this.lastRecv;
    if (silent >= idle) {
      this.lose(ws, `ikd was silent for ${idle} ms`);
      return;
    }
    if (!this.pingOut && silent >= idle / 2) {
      try { ws.ping(); } catch { /* closing: onclose decides */ }
      this.pingOut = true;
    }
    const at = this.lastRecv + (this.pingOut ? idle : idle / 2);
    this.watchTimer = setTimeout(() => this.watch(ws), Math.max(1, at - now()));
  }

  /** Gives socket ws up (why: an "error" event, code "timeout", and the
   * words of what it fails): its onclose fails what waits and redials. */
  lose(ws, why) {
    this.watchTimer = null;
    if (ws !== this.ws) return;
    this.lostWhy = why;
    if (!this.userClosed) this.emit('error', new IkdError('timeout', why));
    if (typeof ws.terminate === 'function') ws.terminate();
    else ws.close();
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
    return this.sendText(JSON.stringify(msg));
  }

  /** Why data (a message's text or bytes) cannot be sent now, an
   * IkdError, or null: the socket is not open ("not_connected"), or the
   * bytes waiting to be written would pass maxSendQueue with it
   * ("send_queue_full"; "message_too_large" for one larger than it), as
   * the C client's max_send_queue: a server that does not read holds the
   * client to that. */
  sendRefusal(data) {
    if (!this.ws || this.state !== 'open') return new IkdError('not_connected', `the connection is ${this.state}`);
    const n = typeof data === 'string' ? data.length : data.byteLength, max = this.maxSendQueue;
    if (n > max) return new IkdError('message_too_large', `a message of ${n} bytes is larger than maxSendQueue (${max})`);
    const queued = this.ws.bufferedAmount || 0;
    if (queued + n > max) return new IkdError('send_queue_full', `${queued} bytes waiting to be written and this message's ${n} would pass maxSendQueue (${max})`);
    return null;
  }

  /** Sends one message's text (or a binary message's bytes) as it is;
   * false when it cannot (sendRefusal). */
  sendText(text) {
    if (this.sendRefusal(text)) return false;
    this.ws.send(text);
    return true;
  }

  /** A message nobody here handles: "message" listeners, else an error. */
  unexpected(msg) {
    if (this.listeners.message.size > 0) {
      this.emit('message', msg);
      return;
    }
    const what = msg && typeof msg === 'object' && !ArrayBuffer.isView(msg) && !(msg instanceof ArrayBuffer)
      ? `type ${JSON.stringify(msg.type)}${msg.stream !== undefined ? ` for stream ${JSON.stringify(msg.stream)}` : ''}`
      : 'a binary frame';
    this.emit('error', new IkdError('unexpected_message', `ikd sent a message this client does not handle: ${what}`));
  }

  receive(data) {
    if (typeof data !== 'string') {
      let ts = null;
      try {
        ts = this.codec.decodeBinary ? this.codec.decodeBinary(data, this.maxStreams) : null;
      } catch (e) {
        this.tickRefused(e);
        return;
      }
      if (ts && seqOf(ts.seq) === undefined) this.emit('error', new IkdError('bad_answer', 'a tick answer without a seq this client can read'));
      else if (ts) this.tickAnswer(ts);
      else this.unexpected(data);
      return;
    }
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      this.emit('error', new IkdError('bad_answer', 'ikd sent a message that is not JSON'));
      return;
    }
    if (!msg || typeof msg !== 'object') {
      this.unexpected(msg);
      return;
    }
    try {
      this.dispatch(msg);
    } catch (e) {
      /* members of the wrong kind: this message is refused, the reader goes
       * on (an exception out of here would end the process) */
      this.emit('error', new IkdError('bad_answer', `ikd sent a ${JSON.stringify(msg.type)} message this client cannot read: ${e && e.message}`));
    }
  }

  dispatch(msg) {
    if (msg.type === 'tick_solution') {
      this.tickSolution(msg);
      return;
    }
    const s = typeof msg.stream === 'string' ? this.streams.get(msg.stream) : undefined;
    if (s && s.handle(msg)) return;
    if (msg.type === 'error') {
      const err = errorOf(msg);
      const t = msg.stream === undefined ? this.ticks.get(msg.seq) : undefined;
      if (t) {
        this.ticks.delete(msg.seq);
        t.reject(err);
      } else {
        this.emit('error', err);
      }
      return;
    }
    this.unexpected(msg);
  }

  /**
   * Opens a named stream on a chain. Resolves when ikd answers "opened";
   * rejects with the IkdError that answered the open (its path points into
   * the open message, for example "/chain/positions/1").
   * @param {string} name 1 to 64 characters of A-Z a-z 0-9 _ . : -
   * @param {{chain?: any, chain_id?: string, options?: any, seed?: any, scene?: any}} spec
   *   scene: obstacles for a chain with a collision model (proto/README.md, "Collisions")
   * @returns {Promise<IkdStream>}
   */
  open(name, spec) {
    if (this.state === 'closed') return Promise.reject(new IkdError('not_connected', 'the connection is closed'));
    if (this.streams.has(name)) return Promise.reject(new IkdError('stream_exists', `stream "${name}" is already open on this connection`, { stream: name }));
    const s = new IkdStream(this, name, spec);
    this.streams.set(name, s);
    const p = s.opening();
    if (this.state === 'open') s.sendOpen();
    return p;
  }

  /** The tick message's targets: each stream's target takes its stream's
   * next seq, written only when it is not the tick's own. */
  tickTargets(targets) {
    const seq = ++this.tickSeq;
    const list = [];
    const add = (stream, target, seed) => {
      const s = this.streams.get(stream);
      const t = { stream, target };
      if (s) {
        s.seq++;
        if (s.seq !== seq) t.seq = s.seq;
      }
      if (seed !== undefined) t.seed = seed;
      list.push(t);
    };
    if (Array.isArray(targets)) {
      for (const t of targets) add(t.stream, t.target, t.seed);
    } else if (targets instanceof Map) {
      for (const [k, v] of targets) add(k, v);
    } else {
      for (const k of Object.keys(targets)) add(k, targets[k]);
    }
    return { seq, list };
  }

  /**
   * Sends one tick: targets for many streams in one message. Resolves with
   * its TickSolution, one item per target in order (`result`, or `error`
   * for a target ikd refused); rejects when ikd refuses the tick whole.
   * @param {any} targets [{stream, target, seed?}], a Map or an object of
   *   stream name -> target
   * @returns {Promise<any>}
   */
  tick(targets) {
    if (this.state !== 'open') return Promise.reject(new IkdError('not_connected', `the connection is ${this.state}`));
    const { seq, list } = this.tickTargets(targets);
    const data = this.codec.encodeTick(seq, list);
    const refused = this.sendRefusal(data);
    if (refused) return Promise.reject(refused);
    return new Promise((resolve, reject) => {
      this.ticks.set(seq, { resolve, reject });
      this.sendText(data);
      this.keepTick(seq, list);
    });
  }

  /** Remembers a tick sent (the last TICKS_KEPT), to check its answer. */
  keepTick(seq, list) {
    if (this.sentTicks.length === TICKS_KEPT) this.sentTicks.shift();
    this.sentTicks.push({ seq, streams: list.map((t) => t.stream) });
  }

  /** Why answer ts is not one item per target of its tick, in order (its
   * count, its items' streams; an item without a stream matches any), or
   * null. The ticks kept before it were replaced: they leave with it. An
   * answer to a tick no longer kept is not checked. */
  tickLies(ts) {
    while (this.sentTicks.length && this.sentTicks[0].seq < ts.seq) this.sentTicks.shift();
    if (!this.sentTicks.length || this.sentTicks[0].seq !== ts.seq) return null;
    const { streams } = this.sentTicks.shift();
    if (ts.solutions.length !== streams.length) return `a tick answer of ${ts.solutions.length} entries to a tick of ${streams.length} targets`;
    const i = ts.solutions.findIndex((it, k) => it.stream !== undefined && it.stream !== '' && it.stream !== streams[k]);
    return i < 0 ? null : `tick answer entry ${i} names stream ${JSON.stringify(ts.solutions[i].stream)}, the tick's target ${i} is ${JSON.stringify(streams[i])}`;
  }

  /** Sends a tick without a promise; returns its seq (answers: latestTick,
   * the "tick" event, the streams), or -1 when it cannot be sent (the
   * socket is not open, or maxSendQueue is reached). */
  sendTick(targets) {
    if (this.state !== 'open') return -1;
    const { seq, list } = this.tickTargets(targets);
    if (!this.sendText(this.codec.encodeTick(seq, list))) return -1;
    this.keepTick(seq, list);
    return seq;
  }

  tickSolution(msg) {
    const why = tickRefusal(msg, this.maxStreams);
    if (!why) {
      this.tickAnswer(this.codec.decodeTick(msg));
      return;
    }
    this.tickRefused(new IkdError('bad_answer', why, { seq: seqOf(msg.seq) }));
  }

  /** A tick answer that cannot be read fails the tick it names when its
   * seq could be read, else is an "error" event. */
  tickRefused(err) {
    const t = err instanceof IkdError && err.seq !== undefined ? this.ticks.get(err.seq) : undefined;
    if (t) {
      this.ticks.delete(err.seq);
      t.reject(err);
    } else {
      this.emit('error', err);
    }
  }

  /** A decoded TickSolution (either form) to the streams and the waiters;
   * one of a seq never sent answers nothing (it would answer every tick
   * waiting): an "error" event. */
  tickAnswer(ts) {
    if (ts.seq > this.tickSeq) {
      this.emit('error', new IkdError('bad_answer', `a tick answer of seq ${ts.seq}, never sent (the last sent is ${this.tickSeq})`));
      return;
    }
    const lie = this.tickLies(ts);
    if (lie) {
      this.tickRefused(new IkdError('bad_answer', lie, { seq: ts.seq }));
      return;
    }
    this.latestTick = ts;
    for (const it of ts.solutions) {
      const s = this.streams.get(it.stream);
      if (s) s.tickItem(it);
    }
    /* this tick, and every older one waiting (ikd replaced it by a newer
     * tick: its targets were dropped unsolved) */
    for (const [seq, t] of this.ticks) {
      if (seq > ts.seq) break;
      this.ticks.delete(seq);
      t.resolve(seq === ts.seq ? ts : { ...ts, requested: seq });
    }
    if (this.listeners.tick.size) this.emit('tick', ts);
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
   * @param {{chain?: any, chain_id?: string, options?: any, seed?: any, scene?: any}} spec
   */
  constructor(conn, name, spec) {
    this.conn = conn;
    this.name = name;
    this.spec = spec;
    /** @type {string|undefined} the chain's id, from "opened" */
    this.chainId = undefined;
    this.seq = 0;
    this.delivered = 0;
    /** the seq of the last path_end: no sample of that path comes after it
     * (an older target's solution may: ikd ends a path that never started
     * at once, while an older target is still being solved) */
    this.pathEnded = 0;
    /** the newest answer (a Solution or a tick item): latest wins */
    this.latest = undefined;
    /** @type {Map<number, {resolve: Function, reject: Function, t0: number}>} */
    this.pending = new Map();
    this.paths = new Map();
    this.listeners = new Set();
    this.isOpen = false;
    this.openWaiter = null;
    this.closeWaiter = null;
    /** @type {Promise<void>|null} the close() under way */
    this.closing = null;
    this.reregistering = false;
  }

  opening() {
    return new Promise((resolve, reject) => { this.openWaiter = { resolve, reject }; });
  }

  sendOpen() {
    const msg = { type: 'open', stream: this.name };
    if (this.spec.chain !== undefined) msg.chain = this.spec.chain;
    if (this.spec.chain_id !== undefined) msg.chain_id = this.spec.chain_id;
    if (this.spec.options !== undefined) msg.options = this.spec.options;
    if (this.spec.seed !== undefined) msg.seed = this.spec.seed;
    if (this.spec.scene !== undefined) msg.scene = this.spec.scene;
    this.conn.send(msg);
  }

  /**
   * Replaces the stream's scene (a "scene" message, proto/STREAM.md): the
   * targets sent after it are solved among these obstacles, a target
   * already waiting keeps the scene it was sent under. ikd does not answer
   * it; a refused scene is an "error" event of the connection (path under
   * "/scene") and the stream keeps its old one. The scene is kept for a
   * reopening after a reconnection. Returns false when the stream is not
   * open (the scene is still kept for its next opening).
   * @param {any} scene
   */
  setScene(scene) {
    this.spec = { ...this.spec, scene };
    if (!this.isOpen || this.conn.state !== 'open') return false;
    return this.conn.send({ type: 'scene', stream: this.name, scene });
  }

  /**
   * Calls fn(solution) for every solution of this stream, in seq order
   * (targets, path samples and tick items). Returns a function that
   * unsubscribes.
   * @param {(s: any) => void} fn
   */
  onSolution(fn) { this.listeners.add(fn); return () => this.listeners.delete(fn); }

  notOpen() {
    return new IkdError('not_connected', `stream "${this.name}" is not open`, { stream: this.name });
  }

  targetText(seq, target, seed) {
    const msg = { type: 'target', stream: this.name, seq, target };
    if (seed !== undefined) msg.seed = seed;
    return JSON.stringify(msg);
  }

  /**
   * Sends a target with the stream's next seq. Resolves with its solution,
   * or with the newer solution that replaced it when ikd conflated targets.
   * Rejects with the IkdError ikd answered for this seq (path into the
   * message, such as "/target/position/2"), or "not_connected" /
   * "connection_lost".
   * @param {any} target
   * @param {{seed?: any}} [opts]
   */
  target(target, opts) {
    if (!this.isOpen || this.conn.state !== 'open') return Promise.reject(this.notOpen());
    const seq = ++this.seq;
    const text = this.targetText(seq, target, opts?.seed);
    const refused = this.conn.sendRefusal(text);
    if (refused) return Promise.reject(Object.assign(refused, { stream: this.name, seq }));
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject, t0: now() });
      this.conn.sendText(text);
    });
  }

  /**
   * Sends a target and makes no promise: returns its seq (-1 when the
   * stream is not open, or maxSendQueue is reached). Its answer reaches
   * `latest` and onSolution; an error the connection's "error" event.
   * @param {any} target
   * @param {{seed?: any}} [opts]
   */
  send(target, opts) {
    if (!this.isOpen || this.conn.state !== 'open') return -1;
    const seq = ++this.seq;
    return this.conn.sendText(this.targetText(seq, target, opts?.seed)) ? seq : -1;
  }

  /**
   * Sends a path of waypoints; onSample gets each sample's solution.
   * Resolves with the "path_end" message.
   * @param {any[]} waypoints
   * @param {{rate_hz?: number, duration_s?: number}} [timing]
   * @param {(s: any) => void} [onSample]
   */
  path(waypoints, timing = {}, onSample) {
    if (!this.isOpen || this.conn.state !== 'open') return Promise.reject(this.notOpen());
    const seq = ++this.seq;
    const text = JSON.stringify({ type: 'path', stream: this.name, seq, waypoints, ...timing });
    const refused = this.conn.sendRefusal(text);
    if (refused) return Promise.reject(Object.assign(refused, { stream: this.name, seq }));
    return new Promise((resolve, reject) => {
      this.paths.set(seq, { resolve, reject, onSample, t0: now() });
      this.conn.sendText(text);
    });
  }

  /** Closes the stream (a waiting target is still answered first); a
   * second call while the first waits shares its promise. */
  close() {
    if (this.closing) return this.closing;
    if (!this.isOpen) {
      this.conn.streams.delete(this.name);
      return Promise.resolve();
    }
    this.closing = new Promise((resolve) => {
      this.closeWaiter = resolve;
      this.conn.send({ type: 'close', stream: this.name });
    });
    return this.closing;
  }

  /** Handles a message for this stream; false if it is not one of ours. */
  handle(msg) {
    if ((msg.type === 'solution' || msg.type === 'path_end' || (msg.type === 'error' && msg.seq !== undefined)) && seqOf(msg.seq) === undefined) {
      /* answers no target of this stream: never taken as any */
      this.conn.emit('error', new IkdError('bad_answer', `a ${JSON.stringify(msg.type)} message without a seq this client can read`, { stream: this.name }));
      return true;
    }
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
        if (msg.seq > this.seq) {
          this.conn.emit('error', new IkdError('bad_answer', `a path_end of seq ${msg.seq}, never sent (the last sent is ${this.seq})`, { stream: this.name }));
          return true;
        }
        this.pathEnded = Math.max(this.pathEnded, msg.seq);
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
        const err = errorOf(msg, this.name);
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
          this.openRefused(err);
          return true;
        }
        return false; /* the connection's "error" event (a send() target's error, say) */
      }
      default:
        return false;
    }
  }

  /** The open was refused: a chain_id this client registered that ikd no
   * longer knows is registered again and the open sent again (once); a
   * first open rejects its promise; a reopening after a reconnection (say,
   * a chain_id the new daemon does not know and this client never held)
   * ends the stream and tells the connection. */
  openRefused(err) {
    const id = this.spec.chain_id;
    if (err.code === 'unknown_chain' && id && !this.reregistering && this.conn.ikd.chains.has(id)) {
      this.reregistering = true;
      this.conn.ikd.reregister(id).then((ok) => {
        if (ok && this.conn.streams.get(this.name) === this && this.conn.state === 'open') this.sendOpen();
        else this.openFailed(err);
      }, () => this.openFailed(err));
      return;
    }
    this.openFailed(err);
  }

  openFailed(err) {
    this.reregistering = false;
    if (this.conn.streams.get(this.name) === this) this.conn.streams.delete(this.name);
    if (this.openWaiter) {
      this.openWaiter.reject(err);
      this.openWaiter = null;
    } else {
      this.ended(err);
      this.conn.emit('error', err);
    }
    this.conn.reopened(this.name);
  }

  /** A solution: the answer of its seq and of every older target still
   * waiting (ikd replaced those by newer ones: a target or a path). The
   * promise of its own seq, `latest` and the listeners share one object. */
  solution(msg) {
    const seq = msg.seq;
    if (seq < this.delivered) { /* ikd answers a stream in seq order: never delivered out of it */
      this.conn.emit('error', new IkdError('bad_answer', `a solution of seq ${seq} after that of seq ${this.delivered}`, { stream: this.name }));
      return;
    }
    if (seq > this.seq) { /* would answer every target waiting */
      this.conn.emit('error', new IkdError('bad_answer', `a solution of seq ${seq}, never sent (the last sent is ${this.seq})`, { stream: this.name }));
      return;
    }
    if (seq === this.pathEnded) { /* its path has ended: none of its samples comes after */
      this.conn.emit('error', new IkdError('bad_answer', `a solution of seq ${seq} after its path_end`, { stream: this.name }));
      return;
    }
    const t = now();
    const sol = { stream: this.name, seq, skipped: msg.skipped ?? 0, result: msg.result, requested: seq, rttMs: 0 };
    if (msg.index !== undefined) { sol.index = msg.index; sol.count = msg.count; }
    if (this.pending.size) {
      for (const [k, p] of this.pending) {
        if (k > seq) break;
        this.pending.delete(k);
        if (k === seq) {
          sol.rttMs = t - p.t0;
          p.resolve(sol);
        } else {
          p.resolve({ ...sol, requested: k, rttMs: t - p.t0 });
        }
      }
    }
    if (this.paths.size) {
      const path = this.paths.get(seq);
      if (path) {
        sol.rttMs = t - path.t0;
        if (path.onSample) path.onSample(sol);
      }
    }
    this.delivered = seq;
    this.latest = sol;
    for (const fn of this.listeners) {
      try { fn(sol); } catch (e) { setTimeout(() => { throw e; }); }
    }
  }

  /** A tick's item for this stream: its answer like a target's. */
  tickItem(it) {
    if (it.error) {
      const p = this.pending.get(it.seq);
      if (p) { this.pending.delete(it.seq); p.reject(it.error); }
      return;
    }
    if (this.pending.size === 0 && this.listeners.size === 0 && this.paths.size === 0) {
      /* the game-server case: nothing waits, the item is the answer */
      if (it.seq >= this.delivered && it.seq <= this.seq && it.seq !== this.pathEnded) { this.delivered = it.seq; this.latest = it; }
      return;
    }
    this.solution(it);
  }

  /** The socket dropped: in-flight work is lost; the stream will reopen,
   * unless its close was sent: then it is closed (ikd forgot it). */
  dropped() {
    if (this.closeWaiter) {
      if (this.conn.streams.get(this.name) === this) this.conn.streams.delete(this.name);
      this.ended(new IkdError('closed', `stream "${this.name}" was closed`, { stream: this.name }));
      return;
    }
    this.isOpen = false;
    this.reregistering = false;
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

