/**
 * test_js_hostile.mjs: clients/js/ikd.js against servers that are not ikd
 * and do not keep ikd's promises (a scripted WebSocket server of the "ws"
 * package, a node:http server), without a daemon, under Node's test runner.
 *
 * Covered: seqs the client cannot read (none, "1", 1.5, true, [1], a
 * binary NaN) answer nothing and are "bad_answer" error events; a tick
 * answer of entries that are not objects, or of more entries than
 * maxStreams (JSON and binary), fails the tick it names; none of them ends
 * the process or the connection. HTTP answers of another count of results
 * than the targets sent (solve, batch) are refused as "bad_answer"; a
 * server that never answers, or trickles its answer without end, rejects
 * the request with "timeout" at timeoutMs; a server that upgrades each
 * connection and closes it at once is redialled with a growing backoff;
 * a peer gone silent is pinged and dropped at idleTimeoutMs, then
 * redialled; an upgrade answer that never ends fails at connectTimeoutMs;
 * an HTTP answer past maxAnswer is refused as it arrives; a tick answer's
 * solution entry of a seq not an integer or none fails its tick; a stream
 * whose close was sent when the connection dropped is closed, not opened
 * again, and a closed connection refuses to open streams; a message past
 * maxMessage drops the connection unread; a stream closed twice at once
 * resolves both calls; a server that does not read has sends past
 * maxSendQueue refused; an answer of a seq never sent answers nothing; a
 * binary tick answer entry larger than its size fails its tick; on a tree
 * stream, a path sample after its path_end, a path_end of a seq never
 * sent and a solution older than one answered are "bad_answer" error
 * events, reaching no listener; a tick answer of another count of items
 * than the tick's targets, or naming other streams at their places, fails
 * that tick.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ikd, IkdError, JsonCodec, BinaryCodec } from '../../clients/js/ikd.js';

const LIMIT = { timeout: 30000 };
const LEG = { kind: 'bones', positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };
const RESULT = '{"status":"success","joints":[0.25,-0.5]}';
const BOGUS = ['', '"seq":"1",', '"seq":1.5,', '"seq":true,'];

/** A binary tick answer's head (proto/STREAM.md, "Binary ticks"): n
 * entries announced, none written. */
function binaryHead(n, seq) {
  const b = Buffer.alloc(24);
  b.write('IKDS', 0, 'ascii');
  b.writeUInt16LE(1, 4);
  b.writeUInt32LE(n, 8);
  b.writeDoubleLE(seq, 16);
  return b;
}

/** What the scripted server sends for a message of type and seq. */
const REPLIES = {
  'tick 1': [...BOGUS.map((b) => `{"type":"tick_solution",${b}"solutions":[]}`),
    `{"type":"tick_solution","seq":1,"solutions":[{"stream":"s","seq":1,"result":${RESULT}}]}`],
  'tick 2': ['{"type":"tick_solution","seq":2,"solutions":[null]}'],
  'tick 3': [`{"type":"tick_solution","seq":3,"solutions":[${Array(3).fill(`{"stream":"s","seq":3,"result":${RESULT}}`)}]}`],
  'tick 4': [binaryHead(3, 4)],
  'tick 5': [binaryHead(0, NaN), `{"type":"tick_solution","seq":5,"solutions":[{"stream":"s","seq":5,"result":${RESULT}}]}`],
  'open undefined': ['{"type":"opened","stream":"s"}'],
  'target 1': [...BOGUS.map((b) => `{"type":"solution","stream":"s",${b}"result":${RESULT}}`),
    '{"type":"error","stream":"s","seq":[1],"error":{"code":"x","message":"x"}}',
    `{"type":"solution","stream":"s","seq":1,"result":${RESULT}}`],
};

/** Ticks sent as JSON (the server reads them so), answers read in both forms. */
class JsonTicks extends BinaryCodec {
  encodeTick(seq, targets) { return JsonCodec.prototype.encodeTick.call(this, seq, targets); }
}

test('answers it cannot read are refused, the tick they name fails, the reader goes on', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    for (const r of REPLIES[`${m.type} ${m.seq}`] || []) sock.send(r);
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false, codec: new JsonTicks(), maxStreams: 2 });
  try {
    await conn.ready();
    const errors = [];
    conn.on('error', (e) => errors.push(e));
    const target = { s: { position: [0, 0.3, 0.5] } };
    /* none, "1", 1.5 and true answer no tick (before, each answered tick 1) */
    const ts = await conn.tick(target);
    assert.deepEqual([ts.seq, ts.solutions.length], [1, 1]);
    assert.deepEqual(errors.map((e) => [e.code, e.seq]), Array(4).fill(['bad_answer', undefined]));
    /* an entry null (before: a TypeError that ended the process), three
     * entries past maxStreams 2, in JSON and in binary */
    for (const seq of [2, 3, 4]) {
      await assert.rejects(conn.tick(target), (e) => e instanceof IkdError && e.code === 'bad_answer' && e.seq === seq);
    }
    /* a binary answer of seq NaN answers no tick (before, every tick waiting) */
    assert.equal((await conn.tick(target)).seq, 5);
    assert.equal(errors.length, 5);
    /* a stream's answers of seqs it cannot read answer no target */
    errors.length = 0;
    const s = await conn.open('s', { chain: LEG });
    const sol = await s.target({ position: [0, 0.3, 0.5] });
    assert.deepEqual([sol.seq, sol.result.joints], [1, [0.25, -0.5]]);
    assert.deepEqual(errors.map((e) => e.code), Array(5).fill('bad_answer'));
    assert.equal(conn.state, 'open');
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('an HTTP answer of another count of results than the targets sent is refused', LIMIT, async () => {
  const { createServer } = await import('node:http');
  const answers = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(answers.shift());
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const ikd = new Ikd(`http://127.0.0.1:${server.address().port}`, { retries: 0 });
  const targets = [{ position: [0, 0.3, 0.5] }, { position: [0, 0.2, 0.5] }];
  try {
    answers.push(RESULT, `{"results":[${RESULT},${RESULT}]}`);
    assert.equal((await ikd.solve({ chain: LEG, target: targets[0] })).status, 'success');
    assert.equal((await ikd.batch({ chain: LEG, targets })).results.length, 2);
    const bad = [['{"results":[]}', false], ['[]', false], ['{"results":[]}', true],
      [`{"results":[${RESULT}]}`, true], [`{"results":[${RESULT},${RESULT},${RESULT}]}`, true]];
    for (const [answer, batch] of bad) {
      answers.push(answer);
      await assert.rejects(batch ? ikd.batch({ chain: LEG, targets }) : ikd.solve({ chain: LEG, target: targets[0] }),
        (e) => e instanceof IkdError && e.code === 'bad_answer', answer);
    }
  } finally {
    await new Promise((ok) => server.close(ok));
  }
});

test('an HTTP answer that never comes or never ends rejects with "timeout" at timeoutMs', LIMIT, async () => {
  const { createServer } = await import('node:http');
  const timers = new Set();
  const server = createServer((req, res) => {
    if (req.url === '/readyz') return; /* never answered */
    res.writeHead(200, { 'Content-Type': 'application/json' });
    timers.add(setInterval(() => res.write(' '), 50)); /* a byte every 50 ms, never ended */
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const ikd = new Ikd(`http://127.0.0.1:${server.address().port}`, { retries: 0, timeoutMs: 300 });
  try {
    for (const call of [() => ikd.ready(), () => ikd.solvers()]) {
      const t0 = Date.now();
      /* before: no timeout, the request waited as long as the server did */
      const p = call().then(() => 'answered', (e) => (e instanceof IkdError ? e.code : String(e)));
      const got = await Promise.race([p, new Promise((ok) => setTimeout(ok, 3000, 'still waiting after 3 s').unref())]);
      assert.equal(got, 'timeout');
      assert.ok(Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
    }
  } finally {
    for (const t of timers) clearInterval(t);
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  }
});

test('a server that closes each connection as soon as it is up is redialled with a growing backoff', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  const at = [];
  wss.on('connection', (sock) => { at.push(Date.now()); sock.close(1000); });
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ minDelayMs: 100, maxDelayMs: 5000 });
  try {
    while (at.length < 4) await new Promise((ok) => setTimeout(ok, 10));
    /* the third wait is 400 ms (jitter: 50% to 100%); before, each upgrade
     * started the backoff again: 100 ms at most */
    assert.ok(at[3] - at[2] >= 190, `redialled after ${at[3] - at[2]} ms`);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('a peer gone silent is pinged, then dropped at idleTimeoutMs and redialled; what waited is lost', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  /* answers the open, then nothing: no pong, no answer (a balancer that
   * lost the connection without a FIN) */
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1', autoPong: false });
  await new Promise((ok) => wss.on('listening', ok));
  let dials = 0, pings = 0;
  wss.on('connection', (sock) => {
    dials++;
    sock.on('ping', () => pings++);
    sock.on('message', (data) => { if (JSON.parse(String(data)).type === 'open') sock.send('{"type":"opened","stream":"s"}'); });
  });
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ idleTimeoutMs: 400, minDelayMs: 50 });
  const errors = [];
  conn.on('error', (e) => errors.push(e));
  try {
    const s = await conn.open('s', { chain: LEG });
    const t0 = Date.now();
    const lost = s.target({ position: [0, 0.3, 0.5] }).then(() => 'answered', (e) => e.code);
    /* before: no ping, and the target waited for ever on one connection */
    const got = await Promise.race([lost, new Promise((ok) => setTimeout(ok, 3000, 'still waiting after 3 s').unref())]);
    assert.equal(got, 'connection_lost');
    assert.ok(Date.now() - t0 >= 300, `dropped after ${Date.now() - t0} ms`);
    assert.ok(pings >= 1, 'no ping before the drop');
    assert.deepEqual(errors.map((e) => e.code), ['timeout']);
    while (dials < 2) await new Promise((ok) => setTimeout(ok, 10));
    await conn.ready();
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('an upgrade answer that never ends fails the dial at connectTimeoutMs', LIMIT, async () => {
  const { createServer } = await import('node:net');
  const socks = new Set();
  const server = createServer((sock) => {
    socks.add(sock);
    sock.on('error', () => {});
    /* the status line, then a header byte every 50 ms, never the blank line */
    sock.write('HTTP/1.1 101 Switching Protocols\r\nX-Slow: ');
    const t = setInterval(() => sock.write('x'), 50);
    sock.on('close', () => clearInterval(t));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const conn = new Ikd(`http://127.0.0.1:${server.address().port}`).connect({ reconnect: false, connectTimeoutMs: 300 });
  try {
    const t0 = Date.now();
    const got = await Promise.race([conn.ready().then(() => 'open', (e) => e.code),
      new Promise((ok) => setTimeout(ok, 3000, 'still connecting after 3 s').unref())]);
    assert.equal(got, 'closed');
    assert.ok(Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
  } finally {
    await conn.close();
    for (const s of socks) s.destroy();
    await new Promise((ok) => server.close(ok));
  }
});

test('an HTTP answer larger than maxAnswer is refused as it arrives, declared or not', LIMIT, async () => {
  const { createServer } = await import('node:http');
  const timers = new Set();
  let sent = 0;
  const server = createServer((req, res) => {
    res.on('error', () => {});
    if (req.url === '/v1/solvers') { /* declared: 2 MiB */
      const body = `{"pad":"${'x'.repeat(2 << 20)}"}`;
      res.writeHead(req.method === 'GET' ? 200 : 503, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    /* chunked, without end: 64 KiB every 5 ms */
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const chunk = Buffer.alloc(64 << 10, 0x20);
    timers.add(setInterval(() => { sent += chunk.length; res.write(chunk); }, 5));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const ikd = new Ikd(`http://127.0.0.1:${server.address().port}`, { retries: 0, timeoutMs: 5000, maxAnswer: 1 << 20 });
  try {
    await assert.rejects(ikd.solvers(), (e) => e instanceof IkdError && e.code === 'bad_answer' && /maxAnswer/.test(e.message));
    /* before: read on to the timeout, every byte held */
    const t0 = Date.now();
    await assert.rejects(ikd.ready(), (e) => e instanceof IkdError && e.code === 'bad_answer' && /maxAnswer/.test(e.message));
    assert.ok(Date.now() - t0 < 4000, `${Date.now() - t0} ms`);
    assert.ok(sent < 8 << 20, `${sent} bytes sent before the refusal`);
  } finally {
    for (const t of timers) clearInterval(t);
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  }
});

test('a tick answer entry of a solution whose seq is not an integer, or missing, answers no target and fails its tick', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  /* one success entry of stream "s", its seq 1.5, NaN, none or 1 */
  const answer = (tick, seq) => {
    const b = Buffer.concat([binaryHead(1, tick), Buffer.alloc(64)]);
    b.writeUInt32LE(64, 24); b[28] = 1; b[29] = 1; b[30] = seq === undefined ? 0 : 1;
    b.writeDoubleLE(seq ?? 0, 32); b.writeUInt32LE(16, 44); b.writeInt32LE(1, 64); b.write('s', 80, 'ascii');
    return b;
  };
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.type === 'open') sock.send('{"type":"opened","stream":"s"}');
    if (m.type === 'tick') sock.send([answer(1, 1.5), answer(2, NaN), answer(3), `{"type":"tick_solution","seq":4,"solutions":[{"stream":"s","result":${RESULT}}]}`, answer(5, 1)][m.seq - 1]);
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false, codec: new JsonTicks() });
  try {
    const s = await conn.open('s', { chain: LEG });
    let answered = 'no';
    s.target({ position: [0, 0.3, 0.5] }).then((sol) => { answered = `seq ${sol.seq}`; }, (e) => { answered = e.code; });
    /* before: each resolved the target of seq 1 with a solution of seq
     * 1.5, NaN or none (binary and JSON) */
    for (const tick of [1, 2, 3, 4]) {
      await assert.rejects(conn.tick([{ stream: 's', target: { position: [0, 0.3, 0.5] } }]),
        (e) => e instanceof IkdError && e.code === 'bad_answer' && e.seq === tick);
      assert.equal(answered, 'no');
    }
    /* an integer seq answers it */
    assert.equal((await conn.tick([{ stream: 's', target: { position: [0, 0.3, 0.5] } }])).seq, 5);
    assert.equal(answered, 'seq 1');
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('a stream whose close was sent when the connection dropped is closed, not opened again', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  const seen = [];
  wss.on('connection', (sock) => {
    const n = seen.push([]);
    sock.on('message', (data) => {
      const m = JSON.parse(String(data));
      seen[n - 1].push(m.type);
      if (m.type === 'open') sock.send('{"type":"opened","stream":"s"}');
      if (m.type === 'close') sock.terminate(); /* never answered */
    });
  });
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ minDelayMs: 20, maxDelayMs: 40 });
  try {
    const s = await conn.open('s', { chain: LEG });
    /* before: the close waited for ever, and the stream was opened again */
    const got = await Promise.race([s.close().then(() => 'closed'),
      new Promise((ok) => setTimeout(ok, 3000, 'still closing after 3 s').unref())]);
    assert.equal(got, 'closed');
    while (seen.length < 2) await new Promise((ok) => setTimeout(ok, 10));
    await new Promise((ok) => setTimeout(ok, 200));
    assert.deepEqual(seen, [['open', 'close'], []]);
    assert.equal(conn.streams.size, 0);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
  /* a closed connection refuses to open (before: a promise never settled) */
  await assert.rejects(conn.open('t', { chain: LEG }), (e) => e instanceof IkdError && e.code === 'not_connected');
});

test('a message larger than maxMessage drops the connection, unread', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  wss.on('connection', (sock) => sock.send(`{"type":"news","pad":"${'x'.repeat(2 << 20)}"}`));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false, maxMessage: 1 << 20 });
  const got = [];
  conn.on('message', (m) => got.push(m.type));
  try {
    await new Promise((ok) => conn.on('state', (st) => st === 'closed' && ok()));
    /* before: read whole (the ws package's own bound is 100 MiB) */
    assert.deepEqual(got, []);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('a stream closed twice at once: both calls resolve, one close is sent', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  let closes = 0;
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.type === 'open') sock.send('{"type":"opened","stream":"s"}');
    if (m.type === 'close' && ++closes === 1) setTimeout(() => sock.send('{"type":"closed","stream":"s"}'), 50);
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false });
  try {
    const s = await conn.open('s', { chain: LEG });
    /* before: the second call took the first's place, which never resolved */
    const both = Promise.all([s.close(), s.close()]).then(() => 'closed');
    assert.equal(await Promise.race([both, new Promise((ok) => setTimeout(ok, 3000, 'still closing after 3 s').unref())]), 'closed');
    assert.equal(closes, 1);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('a server that does not read: sends past maxSendQueue are refused, not buffered without end', LIMIT, async () => {
  const { createServer } = await import('node:net');
  const { createHash } = await import('node:crypto');
  const socks = new Set();
  const server = createServer((sock) => {
    socks.add(sock);
    sock.on('error', () => {});
    sock.once('data', (head) => {
      const key = /sec-websocket-key:\s*(\S+)/i.exec(String(head))[1];
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ikd.v1\r\n\r\n`);
      sock.pause(); /* reads nothing more */
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const conn = new Ikd(`http://127.0.0.1:${server.address().port}`).connect({ reconnect: false, maxSendQueue: 1 << 20 });
  try {
    await conn.ready();
    const big = [{ stream: 'x', target: { position: [0, 0.3, 0.5], pad: 'x'.repeat(64 << 10) } }];
    let sent = 0;
    /* 32 MB in all, more than the kernel's buffers hold; before, every one
     * was taken and held */
    while (sent < 512 && conn.sendTick(big) !== -1) {
      sent++;
      if (sent % 32 === 0) await new Promise((ok) => setTimeout(ok, 5)); /* the kernel takes what it can */
    }
    assert.ok(sent < 512, 'every send taken');
    assert.ok(conn.ws.bufferedAmount <= 1 << 20, `${conn.ws.bufferedAmount} bytes buffered`);
    await assert.rejects(conn.tick(big), (e) => e instanceof IkdError && e.code === 'send_queue_full' && /maxSendQueue/.test(e.message));
  } finally {
    for (const s of socks) s.destroy();
    await conn.close();
    await new Promise((ok) => server.close(ok));
  }
});

test('an answer to a seq never sent answers nothing: a bad_answer error event', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.type === 'open') sock.send('{"type":"opened","stream":"s"}');
    /* seq 9 answers no target and no tick sent; then the true answers */
    if (m.type === 'target') sock.send(`{"type":"solution","stream":"s","seq":9,"result":${RESULT}}`);
    if (m.type === 'tick') {
      sock.send(`{"type":"tick_solution","seq":9,"solutions":[{"stream":"s","seq":9,"result":${RESULT}}]}`);
      sock.send(`{"type":"tick_solution","seq":${m.seq},"solutions":[{"stream":"s","seq":2,"result":${RESULT}}]}`);
    }
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false, codec: new JsonTicks() });
  const errors = [];
  conn.on('error', (e) => errors.push(e.code));
  try {
    const s = await conn.open('s', { chain: LEG });
    let answered = 'no';
    s.target({ position: [0, 0.3, 0.5] }).then((sol) => { answered = `seq ${sol.seq}`; }, (e) => { answered = e.code; });
    /* before: the tick resolved with tick 9's solutions, the target with seq 9's */
    const ts = await conn.tick({ s: { position: [0, 0.3, 0.5] } });
    assert.deepEqual([ts.seq, ts.solutions[0].seq], [1, 2]);
    assert.equal(answered, 'seq 2');
    assert.deepEqual(errors, ['bad_answer', 'bad_answer']);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('a binary tick answer entry larger than its size fails its tick', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  /* a solution entry of seq 1 and `size` bytes, its joints (fields bit 0)
   * dof doubles, its record rec bytes */
  const answer = (tick, size, dof, rec) => {
    const b = Buffer.concat([binaryHead(1, tick), Buffer.alloc(size)]);
    b.writeUInt32LE(size, 24); b[28] = 1; b[30] = 1;
    b.writeDoubleLE(1, 32);
    if (size >= 64) { b.writeUInt32LE(rec, 44); b.writeUInt32LE(1, 48); b.writeUInt16LE(dof, 52); }
    return b;
  };
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    sock.send([answer(1, 24), answer(2, 64, 1000, 16), answer(3, 64, 1, 8)][m.seq - 1]);
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false, codec: new JsonTicks() });
  const errors = [];
  conn.on('error', (e) => errors.push(e));
  try {
    await conn.ready();
    /* before: a RangeError "error" event, and the tick waited (the third:
     * joints read from past the record) */
    for (const tick of [1, 2, 3]) {
      const got = await Promise.race([conn.tick([{ stream: 'x', target: { position: [0, 0.3, 0.5] } }]).then(() => 'answered', (e) => `${e.code} ${e.seq}`),
        new Promise((ok) => setTimeout(ok, 2000, 'still waiting after 2 s').unref())]);
      assert.equal(got, `bad_answer ${tick}`);
    }
    assert.deepEqual(errors, []);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('tree path answers that lie: a sample after its path_end, a path_end never sent, an older solution', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  const tree = (x) => `{"status":"success","joints":[${x},0.4,0.9,-0.2,1.2],"tips":[{"status":"success","position":[0.2,0.3,0.3]},{"status":"success","position":[0.4,-0.1,0.5]}]}`;
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.type === 'open') sock.send('{"type":"opened","stream":"arms"}');
    if (m.type === 'path') {
      for (const i of [0, 1]) sock.send(`{"type":"solution","stream":"arms","seq":${m.seq},"skipped":0,"index":${i},"count":2,"result":${tree(i)}}`);
      sock.send(`{"type":"path_end","stream":"arms","seq":${m.seq},"sent":2,"skipped":0,"count":2,"completed":true}`);
      /* the lies: a sample of the path ended, a path_end of a seq never sent */
      sock.send(`{"type":"solution","stream":"arms","seq":${m.seq},"skipped":0,"index":1,"count":2,"result":${tree(7)}}`);
      sock.send('{"type":"path_end","stream":"arms","seq":9,"sent":2,"skipped":0,"count":2,"completed":true}');
    }
    if (m.type === 'target') {
      sock.send(`{"type":"solution","stream":"arms","seq":${m.seq},"skipped":0,"result":${tree(m.seq)}}`);
      /* and an older one again */
      if (m.seq === 3) sock.send(`{"type":"solution","stream":"arms","seq":2,"skipped":0,"result":${tree(8)}}`);
    }
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false });
  const errors = [];
  conn.on('error', (e) => errors.push(e.code));
  try {
    const s = await conn.open('arms', { chain: LEG });
    const seen = [];
    s.onSolution((sol) => seen.push([sol.seq, sol.index, sol.result.joints[0]]));
    const samples = [];
    const end = await s.path([{ position: [0, 0.3, 0.5] }, { position: [0, 0.2, 0.5] }], {}, (x) => samples.push(x.index));
    assert.equal(end.seq, 1);
    assert.deepEqual(samples, [0, 1]);
    assert.equal((await s.target({ position: [0, 0.3, 0.5] })).seq, 2);
    assert.equal((await s.target({ position: [0, 0.3, 0.5] })).seq, 3);
    await new Promise((r) => setTimeout(r, 50));
    /* before: the sample after path_end reached the listeners and latest,
     * and the older solution was dropped without a word */
    assert.deepEqual(seen, [[1, 0, 0], [1, 1, 1], [2, undefined, 2], [3, undefined, 3]]);
    assert.deepEqual(errors, ['bad_answer', 'bad_answer', 'bad_answer']);
    assert.equal(s.latest.seq, 3);
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});

test('a tick answer of other targets than the tick\'s (count, streams at their places) fails that tick', LIMIT, async () => {
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((ok) => wss.on('listening', ok));
  const entry = (name, seq) => `{"stream":"${name}","seq":${seq},"skipped":0,"result":${RESULT}}`;
  /* the answer to tick seq: lies for ticks 1 to 4, the truth after */
  const answers = {
    1: (s) => [entry('a', s)],
    2: (s) => [entry('a', s), entry('b', s), entry('c', s)],
    3: (s) => [entry('b', s), entry('a', s)],
    4: (s) => [entry('a', s), entry('other', s)],
    5: (s) => [entry('a', s), `{"seq":${s},"error":{"code":"invalid_request","message":"x"}}`],
    6: (s) => [entry('a', s), entry('b', s)],
  };
  wss.on('connection', (sock) => sock.on('message', (data) => {
    const m = JSON.parse(String(data));
    if (m.type === 'tick') sock.send(`{"type":"tick_solution","seq":${m.seq},"skipped":0,"solutions":[${answers[m.seq](m.seq)}]}`);
  }));
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false, codec: new JsonTicks() });
  const events = [];
  conn.on('tick', (t) => events.push(t.seq));
  try {
    await conn.ready();
    const target = { a: { position: [0, 0.3, 0.5] }, b: { position: [0, 0.2, 0.5] } };
    for (let k = 1; k <= 4; k++) {
      /* before: each resolved as the tick's answer */
      await assert.rejects(conn.tick(target), (e) => e.code === 'bad_answer' && e.seq === k, `tick ${k}`);
    }
    assert.equal((await conn.tick(target)).solutions.length, 2, 'an entry without a stream matches any');
    const t6 = await conn.tick(target);
    assert.deepEqual(t6.solutions.map((x) => x.stream), ['a', 'b']);
    assert.deepEqual(events, [5, 6]);
    assert.equal(conn.sentTicks.length, 0, 'nothing kept of ticks answered');
  } finally {
    await conn.close();
    await new Promise((ok) => wss.close(ok));
  }
});
