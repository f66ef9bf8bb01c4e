/**
 * test_js_tree.mjs: clients/js/ikd.js against the real daemon
 * (tests/clients/ikd_daemon.mjs) as a robot controller or a game server
 * drives it, on what the other JS suites do not exercise: tree streams
 * (several tips over shared joints, proto/STREAM.md "Trees"), paths
 * streamed back on them, and ticks sent faster than ikd answers them.
 *
 *   - Ticks of a tree stream and a leg together (JSON, a tree target does
 *     not fit the binary form) alternating with ticks of the leg alone
 *     (binary): one item per target in order, the tree's answer with one
 *     tip per tip of the chain, every tip's pose the test's own forward
 *     kinematics of the joints answered, on its target.
 *   - A path of tree waypoints: every sample in order (index 0 .. count-1),
 *     each answered pose the FK of its joints, the last on the last
 *     waypoint, and path_end's counts agreeing with the samples seen.
 *   - 3,000 ticks sent with sendTick() without waiting (a numeric tree
 *     stream: ikd solves slower than they come): every answer's seq
 *     increasing and one the client sent, each item's seq its stream's
 *     next (past the targets it replaced), and every tick accounted for
 *     exactly once (each answer counts itself and the ticks it replaced:
 *     sum of 1 + skipped equals the ticks sent); the client holds no
 *     promise and nothing in its send queue afterwards.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { Ikd } from '../../clients/js/ikd.js';
import { start } from './ikd_daemon.mjs';

const LIMIT = { timeout: 60000 };
const LEG = { kind: 'bones', positions: [[0, 0, 1], [0.1, 0, 0.55], [0, 0, 0.1]] };
/* the two-armed robot of proto/STREAM.md, "Trees" */
const J = (name, parent, xyz, axis, lower, upper) => ({ name, ...(parent ? { parent } : {}), type: 'revolute', origin: { xyz }, axis, limits: { lower, upper } });
const ARMS = {
  kind: 'tree',
  joints: [
    J('waist', null, [0, 0, 0.4], [0, 0, 1], -1.5, 1.5),
    J('l_shoulder', 'waist', [0, 0.2, 0.3], [0, 1, 0], -2, 2),
    J('l_elbow', 'l_shoulder', [0.3, 0, 0], [0, 1, 0], 0, 2.5),
    { name: 'l_tool', parent: 'l_elbow', type: 'fixed', origin: { xyz: [0.25, 0, 0] } },
    J('r_shoulder', 'waist', [0, -0.2, 0.3], [0, 1, 0], -2, 2),
    J('r_elbow', 'r_shoulder', [0.3, 0, 0], [0, 1, 0], 0, 2.5),
    { name: 'r_tool', parent: 'r_elbow', type: 'fixed', origin: { xyz: [0.25, 0, 0] } },
  ],
  tips: ['l_tool', 'r_tool'],
};
const SEED = [0.3, 0.4, 0.9, -0.2, 1.2];

/* ---- the test's own forward kinematics of ARMS ---------------------------- */

const mul = (A, B) => A.map((r) => [0, 1, 2].map((j) => r[0] * B[0][j] + r[1] * B[1][j] + r[2] * B[2][j]));
const apply = (A, v) => A.map((r) => r[0] * v[0] + r[1] * v[1] + r[2] * v[2]);
/** rotation by q about the unit axis a (Rodrigues) */
function rot(a, q) {
  const [x, y, z] = a, c = Math.cos(q), s = Math.sin(q), t = 1 - c;
  return [[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
    [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
    [t * x * z - s * y, t * y * z + s * x, t * z * z + c]];
}
/** Each tip's position for joints q (in the order of the movable joints). */
function armsTips(q) {
  const frames = {};
  let k = 0;
  for (const j of ARMS.joints) {
    const p = j.parent ? frames[j.parent] : { R: [[1, 0, 0], [0, 1, 0], [0, 0, 1]], p: [0, 0, 0] };
    const o = apply(p.R, j.origin.xyz);
    const pos = [p.p[0] + o[0], p.p[1] + o[1], p.p[2] + o[2]];
    frames[j.name] = { R: j.type === 'fixed' ? p.R : mul(p.R, rot(j.axis, q[k++])), p: pos };
  }
  assert.equal(k, q.length, 'one joint value per movable joint');
  return ARMS.tips.map((n) => frames[n].p);
}
const dist = (a, b) => Math.hypot(...a.map((v, i) => v - b[i]));

/** A tree answer: as many tips as the chain, each the FK of the joints,
 * each on its target when success. */
function checkTree(result, targets, what) {
  assert.equal(result.joints.length, 5, `${what}: joints`);
  assert.equal(result.tips.length, 2, `${what}: one tip per tip of the chain`);
  const fk = armsTips(result.joints);
  result.tips.forEach((t, i) => {
    assert.ok(dist(t.position, fk[i]) < 1e-6, `${what}: tip ${i} ${t.position} is not the FK of the joints ${fk[i]}`);
  });
  /* a claim of success is checked: each tip targeted on its target; a
   * failure's claimed error is the FK's distance to the target */
  ARMS.tips.forEach((n, i) => {
    if (!targets[n]) return;
    const d = dist(fk[i], targets[n].position);
    if (result.status === 'success') assert.ok(d < 1e-3, `${what}: ${n} off its target by ${d}`);
    else assert.ok(Math.abs(result.tips[i].position_error - d) < 1e-6, `${what}: ${n} claims ${result.tips[i].position_error}, is ${d} away`);
  });
  return result.status === 'success';
}
function checkLeg(result, target, what) {
  assert.equal(result.status, 'success', what);
  const p = result.positions;
  assert.ok(Math.abs(dist(p[0], p[1]) - dist(LEG.positions[0], LEG.positions[1])) < 1e-6, `${what}: thigh`);
  assert.ok(Math.abs(dist(p[1], p[2]) - dist(LEG.positions[1], LEG.positions[2])) < 1e-6, `${what}: shin`);
  assert.ok(dist(p[2], target) < 1e-6, `${what}: foot off its target`);
}
/** Reachable tips: the FK of joints near the seed, moving with i; with
 * the left tip alone, only the left arm's joints move from step i - 1 (a
 * tip not targeted holds its pose). */
const treeJoints = (i) => SEED.map((v, k) => v + 0.02 * Math.sin(0.1 * i + k));
function treeTarget(i, which = ['l_tool', 'r_tool']) {
  let q = treeJoints(i);
  if (which.length === 1) q = treeJoints(i - 1).map((v, k) => (k === 1 || k === 2 ? q[k] : v));
  const fk = armsTips(q);
  const t = {};
  ARMS.tips.forEach((n, k) => { if (which.includes(n)) t[n] = { position: fk[k] }; });
  return t;
}
const legTarget = (i) => [0.2, 0.1 + 0.001 * (i % 50), 0.25];

let daemon;
let ikd;
before(async () => {
  daemon = await start([]);
  ikd = new Ikd(daemon.base);
});
after(async () => {
  if (daemon) assert.equal(await daemon.stop(), 0, daemon.log());
});

test('ticks of a tree stream and a leg: tips by FK, items in order, binary and JSON ticks mixed', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    await conn.open('arms', { chain: ARMS, seed: SEED });
    await conn.open('leg', { chain: LEG, options: { solver: 'two_bone' } });
    let binary = 0;
    const failed = [];
    conn.on('tick', (t) => { if (t.solutions.length === 1) binary++; });
    for (let i = 0; i < 40; i++) {
      const tips = treeTarget(i, i % 3 === 2 ? ['l_tool'] : ['l_tool', 'r_tool']);
      const t = await conn.tick([{ stream: 'arms', target: { tips } }, { stream: 'leg', target: { position: legTarget(i) } }]);
      assert.equal(t.requested, t.seq, 'no tick replaced: each was awaited');
      assert.deepEqual(t.solutions.map((s) => s.stream), ['arms', 'leg']);
      /* each target takes its stream's next seq */
      assert.deepEqual(t.solutions.map((s) => s.seq), [i + 1, 2 * i + 1]);
      if (!checkTree(t.solutions[0].result, tips, `tick ${t.seq}`)) failed.push(t.seq);
      checkLeg(t.solutions[1].result, legTarget(i), `tick ${t.seq}`);
      const l = await conn.tick({ leg: { position: legTarget(i + 1) } }); /* binary */
      assert.equal(l.solutions[0].seq, 2 * i + 2);
      checkLeg(l.solutions[0].result, legTarget(i + 1), `leg tick ${l.seq}`);
    }
    assert.equal(binary, 40);
    /* the targets are the FK of joints 0.02 rad from the previous ones */
    assert.deepEqual(failed, [], 'tree ticks not solved');
    assert.equal(conn.ticks.size, 0, 'no tick left waiting');
  } finally {
    conn.close();
  }
});

test('a path of tree waypoints: every sample in order, each pose the FK of its joints', LIMIT, async () => {
  const conn = ikd.connect();
  try {
    await conn.ready();
    const s = await conn.open('arms', { chain: ARMS, seed: SEED });
    const wps = [0, 10, 20].map((i) => ({ tips: treeTarget(i) }));
    const samples = [];
    const end = await s.path(wps, { rate_hz: 100, duration_s: 0.3 }, (sol) => samples.push(sol));
    assert.ok(samples.length >= 2, `${samples.length} samples`);
    assert.equal(end.completed, true);
    assert.equal(end.sent, samples.length, 'path_end counts the samples seen');
    assert.equal(end.sent + end.skipped, end.count);
    let last = -1;
    for (const sol of samples) {
      assert.equal(sol.seq, end.seq);
      assert.ok(sol.index > last, `sample ${sol.index} after ${last}`);
      last = sol.index;
      assert.equal(sol.count, end.count);
      assert.equal(sol.result.tips.length, 2);
      const fk = armsTips(sol.result.joints);
      sol.result.tips.forEach((t, i) => assert.ok(dist(t.position, fk[i]) < 1e-6, `sample ${sol.index}: tip ${i} not the FK`));
    }
    assert.equal(last, end.count - 1, 'the last sample is always solved');
    assert.ok(checkTree(samples[samples.length - 1].result, wps[2].tips, 'the last sample'));
    assert.equal(s.paths.size, 0, 'nothing held for the path after path_end');
  } finally {
    conn.close();
  }
});

test('ticks faster than ikd answers: each accounted for exactly once, in order, nothing held', LIMIT, async () => {
  /* a small send queue: a tick sendTick refuses past it (-1) is not sent
   * and not counted (the loopback socket usually takes them all) */
  const conn = ikd.connect({ maxSendQueue: 16 * 1024 });
  try {
    await conn.ready();
    await conn.open('arms', { chain: ARMS, seed: SEED, options: { solver: 'numeric' } });
    await conn.open('leg', { chain: LEG, options: { solver: 'two_bone' } });
    const answers = [];
    conn.on('tick', (t) => answers.push({ seq: t.seq, skipped: t.skipped, items: t.solutions.map((s) => [s.stream, s.seq, s.skipped]) }));
    const N = 3000;
    let sent = 0;
    let lastSeq = 0;
    for (let i = 0; i < N; i++) {
      const seq = conn.sendTick([{ stream: 'arms', target: { tips: treeTarget(i) } }, { stream: 'leg', target: { position: legTarget(i) } }]);
      if (seq < 0) continue; /* send queue full: this tick was not sent */
      assert.ok(seq > lastSeq);
      lastSeq = seq;
      sent++;
      if (i % 500 === 499) await new Promise((r) => setImmediate(r));
    }
    assert.ok(sent > 0);
    /* the last tick is answered (never replaced: nothing comes after it) */
    const t0 = Date.now();
    while ((answers.length === 0 || answers[answers.length - 1].seq !== lastSeq) && Date.now() - t0 < 40000) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(answers[answers.length - 1].seq, lastSeq, 'the last tick sent is answered');
    let accounted = 0;
    let prev = 0;
    const streamSkips = { arms: 0, leg: 0 };
    const streamSeq = { arms: 0, leg: 0 };
    for (const a of answers) {
      assert.ok(a.seq > prev && a.seq <= lastSeq, `answer ${a.seq} after ${prev} (last sent ${lastSeq})`);
      prev = a.seq;
      accounted += 1 + a.skipped;
      assert.deepEqual(a.items.map((x) => x[0]), ['arms', 'leg']);
      for (const [name, seq, skipped] of a.items) {
        assert.ok(seq > streamSeq[name], `${name}: seq ${seq} after ${streamSeq[name]}`);
        assert.equal(seq - streamSeq[name], 1 + skipped, `${name}: seq ${seq} accounts for the targets before it`);
        streamSeq[name] = seq;
        streamSkips[name] += 1 + skipped;
      }
    }
    assert.equal(accounted, sent, `${answers.length} answers account for ${accounted} ticks of ${sent} sent`);
    assert.equal(streamSkips.arms, sent, 'each stream accounts for every target of it');
    assert.equal(streamSkips.leg, sent);
    assert.ok(answers.length < sent, `ikd conflated (${answers.length} answers to ${sent} ticks)`);
    assert.equal(conn.ticks.size, 0, 'sendTick holds no promise');
    /* the connection goes on: a tick awaited now is answered and right */
    const tips = treeTarget(7);
    const t = await conn.tick([{ stream: 'arms', target: { tips } }]);
    assert.ok(checkTree(t.solutions[0].result, tips, 'after the flood'));
  } finally {
    conn.close();
  }
});
