/**
 * test_js_client.mjs: clients/js/ikd.js against the real daemon, started
 * with --token (tests/clients/ikd_daemon.mjs), under Node's test runner.
 *
 * Covered: solve and batch on seed 000's planar arm, each answer checked by
 * forward kinematics; chains registered, described, solved by chain_id and
 * forgotten; refusals as IkdError with code, JSON path and HTTP status
 * (invalid value, unknown chain, missing token); streams over the
 * Sec-WebSocket-Protocol token (as a browser sends it) and over the
 * Authorization header: answers in seq order, every target answered by its
 * own solution or a newer one, each two-bone answer checked by geometry
 * (bone lengths kept, the foot on the target); per-seq and open errors
 * with their paths while the stream goes on; a path; a wrong token; and
 * reconnection: the daemon stops, a new one starts on the same port, the
 * client reconnects with backoff and reopens its streams; and gives up
 * after maxAttempts when nothing comes back. The shell snippet of
 * clients/js/README.md runs as written (its own daemon on a free port, by
 * IKD_LISTEN, which "ikd probe" reads too), and stops that daemon.
 *
 * Issue 26 and the package: ticks (one item per target in order, errors in
 * their places, many ticks in flight, a tick refused whole), ikd's
 * unknown_type error and messages this client does not know reaching the
 * caller as events (console.warn when nobody listens), a stream solved
 * 10,000 times without reading keeping the heap flat, chains registered
 * again when ikd forgot them (HTTP, a stream's open, a reopening after a
 * reconnection), HTTP retries on 503 with Retry-After, and TLS (https and
 * wss through a TLS front with a private CA, refused with another CA).
 * A stream's scene (issue 21): given at open, replaced by setScene (each
 * answer's min_distance against the test's own sphere distances), a
 * refused scene an error event with its path while the stream keeps its
 * own.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Ikd, IkdError, JsonCodec, BinaryCodec, streamProtocols, base64url } from '../../clients/js/ikd.js';
import { start, IKD_BIN, IKD_DATA } from './ikd_daemon.mjs';

/** every test is bounded: a hang is a failure, not a stuck suite */
const LIMIT = { timeout: 30000 };
const TOKEN = 'js-client/te+st=';
const PLANAR = { kind: 'planar', lengths: [1.0, 0.8] };
const LEG = { kind: 'bones', positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };
/** p, or a failure naming what did not come within ms. */
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms).unref())]);
const dist = (a, b) => Math.hypot(...a.map((v, i) => v - b[i]));

let daemon;
let ikd;
before(async () => {
  daemon = await start(['--token', TOKEN]);
  ikd = new Ikd(daemon.base, { token: TOKEN });
});
after(async () => {
  if (daemon) assert.equal(await daemon.stop(), 0, daemon.log());
});

/** Forward kinematics of the planar arm: the tip of joints q. */
function planarTip(lengths, q) {
  let a = 0, x = 0, y = 0;
  lengths.forEach((l, i) => { a += q[i]; x += l * Math.cos(a); y += l * Math.sin(a); });
  return [x, y];
}

/** A two-bone answer keeps the hip, both bone lengths, and puts the foot on the target. */
function checkLeg(result, target) {
  const [hip, knee, foot] = result.positions;
  assert.ok(dist(hip, LEG.positions[0]) < 1e-9, 'the hip stays');
  assert.ok(Math.abs(dist(hip, knee) - dist(LEG.positions[0], LEG.positions[1])) < 1e-9, 'thigh length kept');
  assert.ok(Math.abs(dist(knee, foot) - dist(LEG.positions[1], LEG.positions[2])) < 1e-9, 'shin length kept');
  assert.ok(dist(foot, target) < 1e-9, `foot ${foot} on target ${target}`);
}

test('the token protocol is base64url without padding, next to ikd.v1', LIMIT, () => {
  assert.deepEqual(streamProtocols('s3cret'), ['ikd.v1', 'base64url.bearer.ikd.czNjcmV0']);
  assert.deepEqual(streamProtocols(''), ['ikd.v1']);
  assert.equal(base64url('\u00ff\u00fe?>'), 'w7_Dvj8-');
});

test('solve: the answer puts the planar tip on the target', LIMIT, async () => {
  const r = await ikd.solve({ chain: PLANAR, target: { position: [1.2, 0.6] } });
  assert.equal(r.status, 'success');
  assert.equal(r.solver, 'two_link');
  assert.ok(dist(planarTip(PLANAR.lengths, r.joints), [1.2, 0.6]) < 1e-9);
});

test('batch: every result in order, each checked by forward kinematics', LIMIT, async () => {
  const targets = Array.from({ length: 40 }, (_, i) => {
    const a = (i / 40) * Math.PI, d = 0.5 + (i % 7) * 0.15;
    return { position: [d * Math.cos(a), d * Math.sin(a)] };
  });
  const r = await ikd.batch({ chain: PLANAR, targets });
  assert.equal(r.count, 40);
  assert.equal(r.results.length, 40);
  r.results.forEach((res, i) => {
    assert.equal(res.status, 'success');
    assert.ok(dist(planarTip(PLANAR.lengths, res.joints), targets[i].position) < 1e-9, `target ${i}`);
  });
});

test('chains: register, describe, solve by id, forget', LIMIT, async () => {
  const urdf = readFileSync(`${IKD_DATA}/robots/kuka_iiwa14_r820.urdf`, 'utf8');
  const desc = await ikd.registerChain({ kind: 'urdf', urdf, base: 'base_link', tip: 'tool0' });
  assert.match(desc.id, /^[0-9a-f]{32}$/);
  assert.equal(desc.dof, 7);
  const again = await ikd.getChain(desc.id);
  assert.deepEqual(again.joint_names, desc.joint_names);
  const r = await ikd.solve({ chain_id: desc.id, target: { position: [0.4, 0.2, 0.6] } });
  assert.equal(r.status, 'success');
  assert.equal(r.joints.length, 7);
  r.joints.forEach((q, i) => {
    assert.ok(q >= desc.joints[i].lower - 1e-9 && q <= desc.joints[i].upper + 1e-9, `joint ${i} within limits`);
  });
  assert.equal(await ikd.deleteChain(desc.id), null);
  await assert.rejects(ikd.getChain(desc.id), (e) => e instanceof IkdError && e.code === 'unknown_chain' && e.status === 404);
});

test('refusals are IkdErrors with code, JSON path and status', LIMIT, async () => {
  await assert.rejects(ikd.solve({ chain: PLANAR, target: { position: [1, 'x'] } }), (e) => {
    assert.ok(e instanceof IkdError);
    assert.equal(e.code, 'invalid_request');
    assert.equal(e.path, '/target/position/1');
    assert.equal(e.status, 400);
    assert.match(e.message, /target\.position\[1\]/);
    return true;
  });
  await assert.rejects(ikd.solve({ chain_id: '0123456789abcdef0123456789abcdef', target: { position: [1, 0, 0] } }),
    (e) => e.code === 'unknown_chain' && e.status === 404);
  const anonymous = new Ikd(daemon.base);
  await assert.rejects(anonymous.solvers(), (e) => e.code === 'unauthorized' && e.status === 401);
  const nowhere = new Ikd('http://127.0.0.1:9');
  await assert.rejects(nowhere.solvers(), (e) => e.code === 'network');
});

async function streamInOrder(auth) {
  const conn = new Ikd(daemon.base, { token: TOKEN, streamAuth: auth }).connect();
  try {
    await conn.ready();
    const leg = await conn.open('left_leg', { chain: LEG, options: { solver: 'two_bone' } });
    assert.match(leg.chainId, /^[0-9a-f]{32}$/);
    const seen = [];
    leg.onSolution((s) => { seen.push(s.seq); checkLeg(s.result, targets[s.seq - 1]); });
    const targets = Array.from({ length: 60 }, (_, i) => [0.2 + 0.002 * i, 0.1 - 0.001 * i, 0.25 + 0.003 * i]);
    const answers = await Promise.all(targets.map((p) => leg.target({ position: p, pole: [1, 0, 0.5] })));
    answers.forEach((a, i) => {
      assert.equal(a.requested, i + 1);
      assert.ok(a.seq >= a.requested, 'answered by its own solution or a newer one');
      checkLeg(a.result, targets[a.seq - 1]);
    });
    assert.equal(answers[59].seq, 60, 'the last target is always solved');
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], 'solutions in seq order');
    const skipped = answers.filter((a) => a.seq === a.requested).reduce((n, a) => n + a.skipped, 0);
    assert.equal(seen.length + skipped, 60, 'every target answered or counted as skipped');
    await leg.close();
  } finally {
    await conn.close();
  }
  assert.equal(conn.state, 'closed');
}

test('stream with the token as a subprotocol (as browsers send it): ordered answers', LIMIT, () => streamInOrder('protocol'));
test('stream with the token in the Authorization header', LIMIT, () => streamInOrder('header'));

test('stream errors name the seq and path, and the stream goes on', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    await assert.rejects(conn.open('bad', { chain: { kind: 'bones', positions: [[0, 0, 1], [0, 0, 1]] } }),
      (e) => e instanceof IkdError && e.code === 'invalid_chain' && e.path === '/chain/positions/1');
    const leg = await conn.open('bad', { chain: LEG });
    await assert.rejects(leg.target({ position: [0.2, 0.1, 2.5e9] }),
      (e) => e.code === 'invalid_request' && e.path === '/target/position/2' && e.seq === 1 && e.stream === 'bad');
    const ok = await leg.target({ position: [0.2, 0.1, 0.25] });
    assert.equal(ok.seq, 2);
    checkLeg(ok.result, [0.2, 0.1, 0.25]);
    const samples = [];
    const end = await leg.path([{ position: [0.2, 0.1, 0.25] }, { position: [0.15, 0.05, 0.3] }],
      { rate_hz: 100, duration_s: 0.1 }, (s) => samples.push(s));
    assert.equal(end.completed, true);
    assert.equal(end.sent, samples.length);
    assert.equal(samples.at(-1).index, end.count - 1);
    checkLeg(samples.at(-1).result, [0.15, 0.05, 0.3]);
  } finally {
    await conn.close();
  }
});

test('a stream\'s scene: given at open, replaced by setScene, kept when refused', LIMIT, async () => {
  /* one joint about z, spheres on its link out to a tool 0.5 along x */
  const arm = {
    kind: 'joints',
    joints: [
      { name: 'pan', type: 'revolute', axis: [0, 0, 1], limits: { lower: -3, upper: 3 } },
      { name: 'tool', type: 'fixed', origin: { xyz: [0.5, 0, 0] } },
    ],
    collision_spheres: { pan: [[0.25, 0, 0, 0.05], [0.5, 0, 0, 0.05]] },
  };
  /* clearance of the arm turned to +y (spheres at (0, 0.25, 0) and (0, 0.5, 0)) from a sphere obstacle */
  const clear = (o) => Math.min(...[0.25, 0.5].map((y) => dist([0, y, 0], o.position))) - 0.05 - o.radius;
  const far = { name: 'far', radius: 0.1, position: [-1, 0, 0] };
  const near = { name: 'near', radius: 0.1, position: [0, 0.5, 0.2] };
  const conn = ikd.connect();
  const errors = [];
  conn.on('error', (e) => errors.push(e));
  try {
    await conn.ready();
    const s = await conn.open('scene', { chain: arm, scene: { spheres: [far] } });
    const a = await s.target({ position: [0, 0.5, 0] });
    assert.equal(a.result.status, 'success');
    assert.ok(Math.abs(a.result.min_distance - clear(far)) < 1e-6, `the scene of the open (${a.result.min_distance} vs ${clear(far)})`);
    assert.equal(s.setScene({ spheres: [near] }), true);
    const b = await s.target({ position: [0, 0.5, 0] });
    assert.ok(Math.abs(b.result.min_distance - clear(near)) < 1e-6, `the scene of setScene (${b.result.min_distance} vs ${clear(near)})`);
    s.setScene({ spheres: [{ radius: -1, position: [0, 0, 0] }] });
    const c = await s.target({ position: [0, 0.5, 0] });
    assert.ok(errors.some((e) => e.code === 'invalid_request' && e.path.startsWith('/scene/spheres/0')), JSON.stringify(errors));
    assert.ok(Math.abs(c.result.min_distance - clear(near)) < 1e-6, 'a refused scene leaves the stream\'s own');
    await s.close();
    assert.equal(s.setScene({}), false, 'a closed stream sends no scene');
  } finally {
    await conn.close();
  }
});

test('targets replaced by a path are answered by it, never left waiting', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    const leg = await conn.open('mixed', { chain: LEG });
    for (let round = 0; round < 5; round++) {
      const targets = Array.from({ length: 30 }, (_, i) => leg.target({ position: [0.2, 0.1, 0.25 + 0.001 * i] }));
      const end = leg.path([{ position: [0.2, 0.1, 0.25] }, { position: [0.15, 0.05, 0.3] }], { rate_hz: 200, duration_s: 0.02 });
      const settled = await Promise.race([
        Promise.all(targets).then((a) => a),
        new Promise((resolve) => setTimeout(() => resolve(null), 5000)),
      ]);
      assert.ok(settled, `round ${round}: every target before the path is answered`);
      settled.forEach((a) => assert.ok(a.seq >= a.requested));
      assert.equal((await end).completed, true);
    }
  } finally {
    await conn.close();
  }
});

test('a path solution answers older targets still waiting (scripted server)', LIMIT, async () => {
  /* ikd answers waiting targets before a path today; the client must not
   * depend on it: a solution with seq S answers every older target */
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (p) => (p.has('ikd.v1') ? 'ikd.v1' : false) });
  await new Promise((resolve) => wss.on('listening', resolve));
  wss.on('connection', (sock) => {
    sock.on('message', (data) => {
      const m = JSON.parse(String(data));
      const result = { status: 'success', code: 1, reason: 'ok', positions: [] };
      if (m.type === 'open') sock.send(JSON.stringify({ type: 'opened', stream: m.stream, chain_id: '0'.repeat(32) }));
      if (m.type === 'path') {
        for (let i = 0; i < 2; i++) sock.send(JSON.stringify({ type: 'solution', stream: m.stream, seq: m.seq, skipped: i ? 0 : 2, index: i, count: 2, result }));
        sock.send(JSON.stringify({ type: 'path_end', stream: m.stream, seq: m.seq, sent: 2, count: 2, completed: true }));
      }
    });
  });
  const conn = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false });
  try {
    await conn.ready();
    const s = await conn.open('scripted', { chain: LEG });
    const t1 = s.target({ position: [0, 0, 0] });
    const t2 = s.target({ position: [0, 0, 0] });
    const samples = [];
    const end = await s.path([{ position: [0, 0, 0] }, { position: [0, 0, 1] }], {}, (x) => samples.push(x.index));
    assert.equal(end.completed, true);
    assert.deepEqual(samples, [0, 1]);
    const [a1, a2] = await within(Promise.all([t1, t2]), 3000, 'the targets before the path');
    assert.deepEqual([a1.requested, a1.seq, a2.requested, a2.seq], [1, 3, 2, 3]);
  } finally {
    await conn.close();
    await new Promise((resolve) => wss.close(resolve));
  }
});

test('a wrong token gets no stream', LIMIT, async () => {
  const conn = new Ikd(daemon.base, { token: 'wrong' }).connect({ reconnect: false });
  await assert.rejects(conn.ready(), (e) => e.code === 'closed');
  assert.equal(conn.state, 'closed');
});

test('reconnection: backoff, streams reopened on the new daemon; giving up after maxAttempts', LIMIT, async () => {
  const first = await start(['--token', TOKEN]);
  let second;
  const client = new Ikd(first.base, { token: TOKEN });
  const conn = client.connect({ minDelayMs: 50, maxDelayMs: 400 });
  try {
    await conn.ready();
    const leg = await conn.open('leg', { chain: LEG });
    checkLeg((await leg.target({ position: [0.2, 0.1, 0.25] })).result, [0.2, 0.1, 0.25]);
    /* a stream on a registered chain: the new daemon does not know it, and
     * the client registers it again when the stream reopens */
    const desc = await client.registerChain(PLANAR);
    const arm = await conn.open('arm', { chain_id: desc.id });
    const states = [];
    conn.on('state', (s) => states.push(s));
    const reopened = new Promise((resolve) => conn.on('reopen', resolve));
    assert.equal(await first.stop(), 0);
    await assert.rejects(leg.target({ position: [0.2, 0.1, 0.3] }), (e) => e.code === 'not_connected');
    second = await start(['--token', TOKEN, '--listen', `127.0.0.1:${first.port}`]);
    await reopened;
    assert.ok(states.includes('reconnecting'));
    assert.equal(conn.state, 'open');
    assert.ok(leg.isOpen, 'the stream was opened again');
    const a = await leg.target({ position: [0.15, 0.05, 0.3] });
    assert.equal(a.seq, 2, 'seqs go on after a reconnection');
    checkLeg(a.result, [0.15, 0.05, 0.3]);
    assert.ok(arm.isOpen, 'the stream on a registered chain was opened again');
    assert.equal(client.reregistered, 1);
    const b = await arm.target({ position: [1.2, 0.6] });
    assert.ok(dist(planarTip(PLANAR.lengths, b.result.joints), [1.2, 0.6]) < 1e-9);
  } finally {
    await conn.close();
    if (second) assert.equal(await second.stop(), 0);
  }
  const bad = new Ikd('http://127.0.0.1:notaport').connect();
  const errors = [];
  bad.on('error', (e) => errors.push(e.code));
  await assert.rejects(bad.ready(), (e) => e.code === 'closed');
  assert.deepEqual(errors, ['not_connected']);
  const lost = new Ikd(daemon.base.replace(/:\d+$/, ':9'), { token: TOKEN }).connect({ minDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 });
  await assert.rejects(lost.ready(), (e) => e.code === 'closed');
  assert.equal(lost.reconnects, 3);
});

test('clients/js/example.mjs runs as its README says', LIMIT, async () => {
  const { execFile } = await import('node:child_process');
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['clients/js/example.mjs'], {
      env: { ...process.env, IKD_URL: daemon.base, IKD_TOKEN: TOKEN }, timeout: 20000,
    }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)));
  });
  assert.match(out, /^solve: success knee at 0\.335 0\.023 0\.684$/m);
  assert.match(out, /^batch: success, no_ik_solution$/m);
  assert.match(out, /^error: invalid_request at \/target\/position$/m);
  for (let seq = 1; seq <= 10; seq++) assert.match(out, new RegExp(`^stream: seq ${seq} success in \\d+\\.\\d\\d ms$`, 'm'));
  assert.match(out, /^tick: left_leg success, right_leg success$/m);
});

test('the README\'s shell snippet runs as written and stops its daemon', LIMIT, async () => {
  const { spawn } = await import('node:child_process');
  const { createServer } = await import('node:net');
  const readme = readFileSync('clients/js/README.md', 'utf8');
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```\n/gm)].map((m) => m[1]);
  assert.equal(blocks.length, 1);
  const port = await new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
  });
  let script = blocks[0].replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
  if (resolve(IKD_BIN) !== resolve('build/ikd')) script = script.replaceAll('./build/ikd', resolve(IKD_BIN));
  const child = spawn('sh', ['-e', '-c', script], {
    env: { ...process.env, IKD_LISTEN: `127.0.0.1:${port}` }, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const alive = () => { try { process.kill(-child.pid, 0); return true; } catch { return false; } };
  try {
    const code = await within(new Promise((ok) => child.on('exit', ok)), 20000, 'the snippet');
    assert.equal(code, 0, out + err);
    // its "kill $!" stops the daemon it started (which drains first)
    for (let i = 0; i < 100 && alive(); i++) await new Promise((ok) => setTimeout(ok, 100));
    assert.ok(!alive(), 'the snippet left its daemon running');
  } finally {
    if (alive()) process.kill(-child.pid, 'SIGKILL');
  }
  assert.match(out, /^solve: success knee at 0\.335 0\.023 0\.684$/m);
  assert.match(out, /^batch: success, no_ik_solution$/m);
  assert.match(out, /^error: invalid_request at \/target\/position$/m);
  assert.match(out, /^stream: seq 10 success in \d+\.\d\d ms$/m);
});

/* ---- ticks, events, bounded memory, re-registration, retries, TLS ------ */

test('a tick_solution reaches the caller: one item per target in order, per-stream errors', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    const c1 = await conn.open('c1', { chain: LEG });
    const c2 = await conn.open('c2', { chain: LEG, options: { solver: 'two_bone' } });
    const ticks = [];
    conn.on('tick', (t) => ticks.push(t.seq));
    const a = [0.2, 0.1, 0.25], b = [0.15, -0.05, 0.3];
    const t1 = await conn.tick({ c1: { position: a }, c2: { position: b } });
    assert.equal(t1.seq, 1);
    assert.equal(t1.requested, 1);
    assert.deepEqual(t1.solutions.map((s) => s.stream), ['c1', 'c2']);
    checkLeg(t1.solutions[0].result, a);
    checkLeg(t1.solutions[1].result, b);
    assert.equal(c1.latest.seq, 1, 'a tick item is its stream\'s latest answer');
    checkLeg(c1.latest.result, a);
    /* errors in their places: a bad orientation, a stream that is not open */
    const t2 = await conn.tick([
      { stream: 'c2', target: { position: a } },
      { stream: 'c1', target: { position: b, orientation: [0, 0, 0, 2] } },
      { stream: 'c3', target: { position: b } },
    ]);
    assert.equal(t2.seq, 2);
    checkLeg(t2.solutions[0].result, a);
    assert.ok(t2.solutions[1].error instanceof IkdError);
    assert.deepEqual([t2.solutions[1].error.code, t2.solutions[1].error.path, t2.solutions[1].error.stream],
      ['invalid_request', '/targets/1/target/orientation', 'c1']);
    assert.deepEqual([t2.solutions[2].error.code, t2.solutions[2].error.path], ['unknown_stream', '/targets/2/stream']);
    /* a target() after ticks takes its stream's next seq, and a stream
     * that joins late has seqs of its own in the tick */
    const next = await c1.target({ position: b });
    assert.equal(next.seq, 3);
    checkLeg(next.result, b);
    const c3 = await conn.open('c3', { chain: LEG });
    const t3 = await conn.tick({ c1: { position: a }, c3: { position: b } });
    assert.deepEqual(t3.solutions.map((s) => [s.stream, s.seq]), [['c1', 4], ['c3', 1]]);
    checkLeg(t3.solutions[1].result, b);
    assert.equal(c3.latest.seq, 1);
    /* many ticks in flight: each resolves with its own answer or the newer
     * one that replaced it, the last with its own */
    const many = Array.from({ length: 20 }, (_, i) => conn.tick({ c1: { position: [0.2, 0.1, 0.25 + 0.002 * i] }, c2: { position: b } }));
    const done = await within(Promise.all(many), 10000, 'twenty ticks in flight');
    done.forEach((t, i) => { assert.equal(t.requested, 4 + i); assert.ok(t.seq >= t.requested); });
    assert.equal(done.at(-1).seq, 23);
    checkLeg(done.at(-1).solutions[0].result, [0.2, 0.1, 0.25 + 0.002 * 19]);
    assert.equal(ticks.at(-1), 23, 'the "tick" event saw the last tick');
    /* a name ikd cannot read: its entry names no stream (an error in its
     * place, not a tick refused as bad_answer) */
    const t2b = await conn.tick([{ stream: 'x'.repeat(300), target: { position: a } }]);
    assert.deepEqual([t2b.seq, t2b.solutions[0].error.code, t2b.solutions[0].error.path], [24, 'invalid_request', '/targets/0/stream']);
  } finally {
    await conn.close();
  }
});

test('binary ticks (the default form): the JSON form\'s answers and errors, JSON where binary cannot say it', LIMIT, async () => {
  const conn = ikd.connect();
  const connJ = ikd.connect({ codec: new JsonCodec() });
  try {
    await Promise.all([conn.ready(), connJ.ready()]);
    assert.ok(conn.codec instanceof BinaryCodec);
    /* the frames sent: binary for a tick of positions, JSON otherwise */
    const sent = [];
    const send = conn.ws.send.bind(conn.ws);
    conn.ws.send = (d) => { sent.push(typeof d === 'string' ? 'json' : 'binary'); send(d); };
    for (const c of [conn, connJ]) {
      await c.open('c1', { chain: LEG });
      await c.open('c2', { chain: LEG, options: { solver: 'two_bone' } });
      await c.open('c3', { chain: LEG });
    }
    sent.length = 0; /* the opens */
    const a = [0.2, 0.1, 0.25], b = [0.15, -0.05, 0.3];
    const tick = [
      { stream: 'c1', target: { position: a } },
      { stream: 'nope', target: { position: a } },
      { stream: 'c3', target: { position: [0.2, 2.5e9, 0.3] } },
      { stream: 'c2', target: { position: b } },
    ];
    const [tb, tj] = await within(Promise.all([conn.tick(tick), connJ.tick(tick)]), 10000, 'the two ticks');
    assert.deepEqual(sent, ['binary']);
    assert.equal(tb.seq, tj.seq);
    assert.equal(tb.solutions.length, 4);
    checkLeg(tb.solutions[0].result, a);
    checkLeg(tb.solutions[3].result, b);
    for (let i = 0; i < 4; i++) {
      const x = tb.solutions[i], y = tj.solutions[i];
      assert.equal(x.stream, y.stream);
      assert.equal(x.seq, y.seq);
      if (y.error) {
        assert.ok(x.error instanceof IkdError, `item ${i} is an error`);
        assert.deepEqual([x.error.code, x.error.path, x.error.detail, x.error.stream],
          [y.error.code, y.error.path, y.error.detail, y.error.stream]);
        continue;
      }
      assert.equal(x.skipped, y.skipped);
      for (const k of ['status', 'code', 'iterations', 'joints', 'positions', 'rotations', 'local_rotations', 'position_error'])
        assert.deepEqual(x.result[k], y.result[k], `item ${i}: ${k}`);
    }
    assert.deepEqual([tb.solutions[1].error.code, tb.solutions[1].error.path], ['unknown_stream', '/targets/1/stream']);
    assert.deepEqual([tb.solutions[2].error.code, tb.solutions[2].error.path], ['invalid_request', '/targets/2/target/position/1']);
    /* a stream twice: the second refused at its place */
    const t2 = await conn.tick([{ stream: 'c1', target: { position: b } },
      { stream: 'c2', target: { position: a } }, { stream: 'c1', target: { position: a } }]);
    assert.deepEqual(sent, ['binary', 'binary']);
    assert.equal(t2.solutions[2].error.path, '/targets/2/stream');
    /* a seed, or an orientation on some targets only: sent as JSON */
    const t3 = await conn.tick([{ stream: 'c1', target: { position: b } },
      { stream: 'c2', target: { position: a, orientation: [0, 0, 0, 1] } }]);
    assert.deepEqual(sent, ['binary', 'binary', 'json']);
    checkLeg(t3.solutions[0].result, b);
    assert.equal(conn.codec.encodeTick(1, [{ stream: 'c1', target: { position: a }, seed: [0, 0, 0, 1] }]).constructor, String);
    assert.equal(conn.codec.encodeTick(1, [{ stream: 'c1', target: { position: a, up: [0, 0, 1] } }]).constructor, String);
    /* a stream's latest is the binary item too */
    assert.equal(conn.streams.get('c1').latest.seq, t3.solutions[0].seq);
  } finally {
    await conn.close();
    await connJ.close();
  }
});

test('a tick refused whole rejects its promise with the error', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    await conn.open('c1', { chain: LEG });
    await assert.rejects(within(conn.tick([]), 5000, 'an empty tick'),
      (e) => e instanceof IkdError && e.code === 'invalid_request' && e.path === '/targets' && e.seq === 1);
  } finally {
    await conn.close();
  }
});

test('an unknown_type error and unknown messages reach the caller, never dropped', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    const errors = [];
    conn.on('error', (e) => errors.push(e));
    assert.ok(conn.send({ type: 'bogus' }));
    const leg = await conn.open('leg', { chain: LEG });
    /* an error of a target sent without a promise reaches the event too */
    leg.send({ position: [0.2, 0.1, 2.5e9] });
    await within((async () => { while (errors.length < 2) await new Promise((ok) => setTimeout(ok, 5)); })(), 5000, 'two errors');
    assert.equal(errors[0].code, 'unknown_type');
    assert.deepEqual([errors[1].code, errors[1].path, errors[1].stream, errors[1].seq], ['invalid_request', '/target/position/2', 'leg', 1]);
  } finally {
    await conn.close();
  }
  /* a scripted server sends a type this client does not know, and a binary
   * frame: "message" events when listened to, "error" events otherwise */
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => 'ikd.v1' });
  await new Promise((resolve) => wss.on('listening', resolve));
  wss.on('connection', (sock) => sock.on('message', () => {
    sock.send(JSON.stringify({ type: 'novelty', stream: 'x' }));
    sock.send(Buffer.from([1, 2, 3]));
  }));
  const scripted = new Ikd(`http://127.0.0.1:${wss.address().port}`).connect({ reconnect: false });
  try {
    await scripted.ready();
    const errors = [];
    const off = scripted.on('error', (e) => errors.push(e.code));
    scripted.send({ type: 'hello' });
    await within((async () => { while (errors.length < 2) await new Promise((ok) => setTimeout(ok, 5)); })(), 3000, 'two unexpected messages');
    assert.deepEqual(errors, ['unexpected_message', 'unexpected_message']);
    off();
    const messages = [];
    scripted.on('message', (m) => messages.push(m));
    scripted.send({ type: 'hello' });
    await within((async () => { while (messages.length < 2) await new Promise((ok) => setTimeout(ok, 5)); })(), 3000, 'two messages');
    assert.equal(messages[0].type, 'novelty');
    assert.ok(!(typeof messages[1] === 'string'));
    /* an error with nobody listening is written to console.warn and counted */
    const warn = console.warn;
    const warned = [];
    console.warn = (m) => warned.push(m);
    try {
      scripted.listeners.message.clear();
      scripted.send({ type: 'hello' });
      await within((async () => { while (warned.length < 2) await new Promise((ok) => setTimeout(ok, 5)); })(), 3000, 'two warnings');
    } finally {
      console.warn = warn;
    }
    assert.match(warned[0], /unexpected_message/);
    assert.equal(scripted.unheardErrors, 2);
  } finally {
    await scripted.close();
    await new Promise((resolve) => wss.close(resolve));
  }
});

test('a stream solved 10,000 times without reading keeps memory bounded', LIMIT, async () => {
  const v8 = await import('node:v8');
  const vm = await import('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const conn = ikd.connect();
  try {
    await conn.ready();
    const leg = await conn.open('mem', { chain: LEG });
    const heapAfter = async (n, from) => {
      /* sends without promises; every 50 targets one is awaited, so each
       * target is solved (one in flight at most would conflate nothing) */
      for (let i = from; i < n; i++) {
        const t = { position: [0.2, 0.1, 0.25 + 0.0001 * (i % 500)] };
        if (i % 50 === 49) await leg.target(t); else { leg.send(t); await new Promise(setImmediate); }
      }
      gc();
      return process.memoryUsage().heapUsed;
    };
    const h1 = await heapAfter(1000, 0);
    const h2 = await heapAfter(10000, 1000);
    assert.equal(leg.seq, 10000);
    assert.ok(leg.latest.seq > 9900, 'the latest answer is kept');
    assert.ok(h2 - h1 < 1 << 20, `heap grew ${h2 - h1} bytes over 9,000 answers`);
  } finally {
    await conn.close();
  }
});

test('re-registration: a chain ikd forgot is registered again, over HTTP and for a stream', LIMIT, async () => {
  const client = new Ikd(daemon.base, { token: TOKEN });
  const other = new Ikd(daemon.base, { token: TOKEN });
  const desc = await client.registerChain(PLANAR);
  await other.deleteChain(desc.id); /* ikd forgets it; this client still holds it */
  const r = await client.solve({ chain_id: desc.id, target: { position: [1.2, 0.6] } });
  assert.ok(dist(planarTip(PLANAR.lengths, r.joints), [1.2, 0.6]) < 1e-9);
  assert.equal(client.reregistered, 1);
  await other.deleteChain(desc.id);
  const conn = client.connect();
  try {
    await conn.ready();
    const s = await conn.open('by_id', { chain_id: desc.id });
    assert.equal(s.chainId, desc.id);
    const a = await s.target({ position: [1.0, 0.9] });
    assert.ok(dist(planarTip(PLANAR.lengths, a.result.joints), [1.0, 0.9]) < 1e-9);
    assert.equal(client.reregistered, 2);
  } finally {
    await conn.close();
  }
  /* a chain this client never registered is not guessed */
  await other.deleteChain(desc.id);
  await assert.rejects(new Ikd(daemon.base, { token: TOKEN }).solve({ chain_id: desc.id, target: { position: [1, 0] } }),
    (e) => e.code === 'unknown_chain');
});

test('retries: 503 with Retry-After is sent again; refusals and exhausted retries throw', LIMIT, async () => {
  const { createServer } = await import('node:http');
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    if (hits % 3 !== 0) {
      res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '0' });
      res.end(JSON.stringify({ error: { code: 'overloaded', message: 'busy', path: '' } }));
    } else {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"status":"ready"}');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    assert.deepEqual(await new Ikd(base, { backoffMs: 1 }).ready(), { status: 'ready' });
    assert.equal(hits, 3);
    await assert.rejects(new Ikd(base, { retries: 1, backoffMs: 1 }).ready(),
      (e) => e.code === 'overloaded' && e.status === 503 && e.retryAfter === 0);
    assert.equal(hits, 5);
  } finally {
    await new Promise((ok) => server.close(ok));
  }
  /* a refusal is not repeated */
  await assert.rejects(new Ikd(daemon.base).solvers(), (e) => e.code === 'unauthorized');
});

test('TLS: https and wss through a TLS front with the CA given; refused without it', LIMIT, async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { certs, tlsProxy } = await import('./tls_proxy.mjs');
  const dir = mkdtempSync(`${tmpdir()}/ikd-tls-`);
  const pem = certs(dir);
  const front = await tlsProxy(daemon.port, pem);
  try {
    const secure = new Ikd(front.base, { token: TOKEN, ca: pem.ca });
    assert.equal(secure.streamUrl(), `${front.base.replace('https', 'wss')}/v1/stream`);
    const r = await secure.solve({ chain: PLANAR, target: { position: [1.2, 0.6] } });
    assert.ok(dist(planarTip(PLANAR.lengths, r.joints), [1.2, 0.6]) < 1e-9);
    const conn = secure.connect({ reconnect: false });
    try {
      await conn.ready();
      const leg = await conn.open('tls', { chain: LEG });
      checkLeg((await leg.target({ position: [0.2, 0.1, 0.25] })).result, [0.2, 0.1, 0.25]);
      const t = await conn.tick({ tls: { position: [0.15, 0.05, 0.3] } });
      checkLeg(t.solutions[0].result, [0.15, 0.05, 0.3]);
    } finally {
      await conn.close();
    }
    await assert.rejects(new Ikd(front.base, { token: TOKEN, ca: pem.otherCa, retries: 0 }).solvers(),
      (e) => e instanceof IkdError && e.code === 'network');
    const refused = new Ikd(front.base, { token: TOKEN, ca: pem.otherCa }).connect({ reconnect: false });
    await assert.rejects(refused.ready(), (e) => e.code === 'closed');
  } finally {
    await front.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
